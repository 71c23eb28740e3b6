//! The transactional scenarios against real Kafka: read_committed over commits and
//! aborts, fencing by a second producer with the same transactional id, and the
//! transaction coordinator's broker killed mid-commit. Every check reads the topic back
//! with Kafka's own console consumer.

use super::*;
use crate::TestProducer;

/// Java's `String.hashCode` (UTF-16 code units, wrapping 32-bit arithmetic).
pub(super) fn java_hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__transaction_state` partition of a transactional id, as Kafka's coordinator
/// computes it: `Utils.abs(transactionalId.hashCode()) % partitions` (`Utils.abs` maps
/// `Integer.MIN_VALUE` to 0).
pub(super) fn txn_state_partition(transactional_id: &str, partitions: i32) -> i32 {
    let h = java_hash_code(transactional_id);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

/// Properties of a transactional producer: the real scenarios' ones plus the id.
pub(crate) fn txn_props(
    bootstrap: &str,
    name: &str,
    transactional_id: &str,
) -> Vec<(String, String)> {
    let mut props = real_props(bootstrap, name);
    set_prop(&mut props, "transactional.id", transactional_id);
    props
}

/// What one transaction sent: `(partition, key)` in send order.
struct Txn {
    label: String,
    sent: Vec<(i32, String)>,
    acked: usize,
    failures: Vec<String>,
    /// Keys of records reported failed and not possibly written: no log may hold them.
    not_written: Vec<String>,
}

impl Txn {
    fn failed(&mut self, key: String, f: crate::DeliveryFailure) {
        if !f.possibly_written {
            self.not_written.push(key);
        }
        if self.failures.len() < 5 {
            self.failures.push(f.to_string());
        } else {
            self.failures.push(String::new());
        }
    }
}

/// The rule the adapters' `possibly_written` is held to: no record reported failed and
/// not possibly written (`keys`) is in `logs`. On a `read_committed` view it proves less
/// than on a `read_uncommitted` one (an aborted record is invisible either way).
fn check_not_written_absent(
    logs: &BTreeMap<i32, Vec<LogRecord>>,
    keys: &[&str],
) -> Result<(), String> {
    let keys: std::collections::BTreeSet<&str> = keys.iter().copied().collect();
    let found: Vec<String> = logs
        .iter()
        .flat_map(|(p, log)| log.iter().map(move |r| (p, r)))
        .filter(|(_, r)| std::str::from_utf8(&r.key).is_ok_and(|k| keys.contains(k)))
        .map(|(p, r)| format!("{}@p{p}:{}", String::from_utf8_lossy(&r.key), r.offset))
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} records reported failed and not possibly written are in the log: {:?}",
        found.len(),
        &found[..found.len().min(8)]
    ))
}

fn not_written<'a>(txns: &[&'a Txn]) -> Vec<&'a str> {
    txns.iter()
        .flat_map(|t| t.not_written.iter().map(String::as_str))
        .collect()
}

/// Sends `count` records of transaction `label` round-robin over `partitions` partitions
/// (keys `label-i`); with `wait`, blocks until every delivery has an outcome.
fn send_txn_records(
    producer: &dyn TestProducer,
    topic: &str,
    partitions: i32,
    label: &str,
    from: u64,
    count: u64,
    txn: &mut Txn,
) -> Vec<(String, crate::Delivery)> {
    let mut pending = Vec::with_capacity(count as usize);
    for i in from..from + count {
        let partition = (i % partitions as u64) as i32;
        let key = format!("{label}-{i}");
        let value = format!("{label}:{i}");
        txn.sent.push((partition, key.clone()));
        let d = producer.send(
            topic,
            partition,
            Bytes::from(key.clone()),
            Bytes::from(value),
        );
        pending.push((key, d));
    }
    pending
}

fn wait_deliveries(pending: Vec<(String, crate::Delivery)>, txn: &mut Txn) {
    for (key, d) in pending {
        match d.wait() {
            Ok(_) => txn.acked += 1,
            Err(f) => txn.failed(key, f),
        }
    }
}

fn new_txn(label: &str) -> Txn {
    Txn {
        label: label.to_string(),
        sent: Vec::new(),
        acked: 0,
        failures: Vec::new(),
        not_written: Vec::new(),
    }
}

fn failures_line(txn: &Txn) -> String {
    let shown: Vec<&str> = txn
        .failures
        .iter()
        .filter(|f| !f.is_empty())
        .map(String::as_str)
        .collect();
    format!(
        "{} of {} deliveries of {} failed: {shown:?}",
        txn.failures.len(),
        txn.sent.len(),
        txn.label
    )
}

/// Checks what a read_committed reader saw: every record of `committed` (in order) exactly
/// once per partition and nothing else; `either` transactions may be wholly present (then
/// in order, after the committed ones that precede them) or wholly absent.
fn check_committed(
    logs: &BTreeMap<i32, Vec<LogRecord>>,
    committed: &[&Txn],
    aborted: &[&Txn],
) -> Result<usize, String> {
    let mut expected: BTreeMap<i32, Vec<&str>> = BTreeMap::new();
    for txn in committed {
        for (p, k) in &txn.sent {
            expected.entry(*p).or_default().push(k.as_str());
        }
    }
    let aborted_keys: std::collections::BTreeSet<&str> = aborted
        .iter()
        .flat_map(|t| t.sent.iter().map(|(_, k)| k.as_str()))
        .collect();
    let mut problems = Vec::new();
    let mut in_log = 0;
    let partitions: std::collections::BTreeSet<i32> =
        expected.keys().chain(logs.keys()).copied().collect();
    for p in partitions {
        let want: &[&str] = expected.get(&p).map_or(&[], Vec::as_slice);
        let got: Vec<&str> = logs.get(&p).map_or(Vec::new(), |l| {
            l.iter()
                .map(|r| std::str::from_utf8(&r.key).unwrap_or("<non-utf8>"))
                .collect()
        });
        in_log += got.len();
        if got == want {
            continue;
        }
        let seen_aborted: Vec<&&str> = got.iter().filter(|k| aborted_keys.contains(**k)).collect();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for k in &got {
            *counts.entry(k).or_default() += 1;
        }
        let dups: Vec<&&str> = counts
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, _)| k)
            .collect();
        let missing: Vec<&&str> = want.iter().filter(|k| !counts.contains_key(**k)).collect();
        problems.push(format!(
            "partition {p}: expected {} committed records, read_committed saw {}: \
             {} of aborted transactions (first {:?}), {} duplicated (first {:?}), \
             {} missing (first {:?}){}",
            want.len(),
            got.len(),
            seen_aborted.len(),
            seen_aborted.iter().take(5).collect::<Vec<_>>(),
            dups.len(),
            dups.iter().take(5).collect::<Vec<_>>(),
            missing.len(),
            missing.iter().take(5).collect::<Vec<_>>(),
            if seen_aborted.is_empty() && dups.is_empty() && missing.is_empty() {
                " (out of order)"
            } else {
                ""
            }
        ));
    }
    if problems.is_empty() {
        Ok(in_log)
    } else {
        Err(problems.join("\n"))
    }
}

/// Fails the process if a scenario is stuck in one phase (a transactional call that never
/// returns would otherwise hang the test run); restarts a killed node first. The limit
/// per phase is overridable with `KACRAB_TESTKIT_TXN_STUCK_S`.
pub(super) struct Watchdog {
    phase: Arc<std::sync::Mutex<(String, Instant, Option<i32>)>>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl Watchdog {
    pub(super) fn start(name: &'static str, limit: Duration) -> Self {
        let limit = std::env::var("KACRAB_TESTKIT_TXN_STUCK_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(limit, Duration::from_secs);
        let phase = Arc::new(std::sync::Mutex::new((
            "start".to_string(),
            Instant::now(),
            None::<i32>,
        )));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, d) = (Arc::clone(&phase), Arc::clone(&done));
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            if d.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let (what, since, killed) = p.lock().unwrap().clone();
            if since.elapsed() > limit {
                eprintln!(
                    "scenario {name}: stuck in phase `{what}` for {:.1?} (limit {limit:?}); \
                     exiting the test process",
                    since.elapsed()
                );
                if let Some(n) = killed {
                    let _ = script(&["restart-node", &n.to_string()]);
                }
                std::process::exit(101);
            }
        });
        Watchdog { phase, done }
    }

    pub(super) fn phase(&self, what: impl Into<String>) {
        let mut g = self.phase.lock().unwrap();
        g.0 = what.into();
        g.1 = Instant::now();
    }

    pub(super) fn killed(&self, node: Option<i32>) {
        self.phase.lock().unwrap().2 = node;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn txn_report(
    name: &'static str,
    start: Instant,
    txns: &[&Txn],
    in_log: usize,
    notes: Vec<String>,
) -> Report {
    let sum = |f: fn(&Txn) -> usize| txns.iter().map(|t| f(t) as u64).sum::<u64>();
    Report {
        scenario: name,
        skipped: false,
        summary: crate::Tally {
            records: sum(|t| t.sent.len()),
            acked: sum(|t| t.acked),
            failed: sum(|t| t.failures.len()),
            failed_not_written: sum(|t| t.not_written.len()),
            log_records: in_log as u64,
            ..crate::Tally::default()
        },
        faults: 0,
        send_time: Duration::ZERO,
        flush_time: Duration::ZERO,
        elapsed: start.elapsed(),
        notes,
    }
}

/// Runs one transaction on `producer`: begin, send `count` records, wait for every
/// delivery (so the records are in the log), then commit or abort. Every step must
/// succeed.
fn whole_txn(
    producer: &dyn TestProducer,
    topic: &str,
    partitions: i32,
    label: &str,
    count: u64,
    commit: bool,
    dog: &Watchdog,
) -> Result<Txn, String> {
    let mut txn = new_txn(label);
    dog.phase(format!("begin {label}"));
    producer
        .begin_transaction()
        .map_err(|e| format!("begin_transaction ({label}): {e}"))?;
    dog.phase(format!("send {label}"));
    let pending = send_txn_records(producer, topic, partitions, label, 0, count, &mut txn);
    wait_deliveries(pending, &mut txn);
    if !txn.failures.is_empty() {
        return Err(failures_line(&txn));
    }
    if commit {
        dog.phase(format!("commit {label}"));
        producer
            .commit_transaction()
            .map_err(|e| format!("commit_transaction ({label}): {e}"))?;
    } else {
        dog.phase(format!("abort {label}"));
        producer
            .abort_transaction()
            .map_err(|e| format!("abort_transaction ({label}): {e}"))?;
    }
    Ok(txn)
}

/// (d) On `KACRAB_KAFKA_BOOTSTRAP`: one transactional producer commits a transaction of
/// 1,000 records, aborts one of 500 (after every delivery, so they are in the log), and
/// commits one of 300, over a fresh 3-partition topic. Kafka's console consumer with
/// `--isolation read_committed` must see exactly the 1,300 committed records, each once, in
/// send order per partition, and none of the aborted ones; a read_uncommitted reader must
/// see all 1,800 (the aborted ones were really written).
pub fn real_txn_read_committed(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_txn_read_committed";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let topic = fresh_topic("kacrab-txn-rc");
    create_topic(&bootstrap, &topic, 3, 1).map_err(fail)?;
    let txid = fresh_topic("kacrab-txid-rc");
    let producer = build(factory, &txn_props(&bootstrap, NAME, &txid)).map_err(fail)?;
    let run = ReadCommittedTxns::run(NAME, producer, &topic, 3).map_err(fail)?;
    let committed =
        consume_isolated(&bootstrap, &topic, 3_000, 8_000, "read_committed").map_err(fail)?;
    let all =
        consume_isolated(&bootstrap, &topic, 1_800, 8_000, "read_uncommitted").map_err(fail)?;
    let in_log = run
        .check(&committed, &all)
        .map_err(|e| fail(format!("(topic {topic}) {e}")))?;
    let mut report = run.report(NAME, start, in_log);
    report
        .notes
        .insert(0, format!("topic {topic}, transactional.id {txid}"));
    Ok(report)
}

/// The transactions of [`real_txn_read_committed`], which other scenarios run too (the
/// compression scenario, with zstd): one transactional producer commits 1,000 records,
/// aborts 500 (after every delivery, so they are in the log) and commits 300, round-robin
/// over partitions `0..partitions` of a topic.
pub(crate) struct ReadCommittedTxns {
    /// Commit 1,000, abort 500, commit 300.
    txns: [Txn; 3],
    init_time: Duration,
    txn_time: Duration,
}

impl ReadCommittedTxns {
    /// Records a read_uncommitted reader sees once the transactions ran.
    pub(crate) const WRITTEN: usize = 1_800;

    /// Runs the three transactions on `producer` (built with [`txn_props`]) and closes it;
    /// every step must succeed. A phase stuck for 180 s ends the test process.
    pub(crate) fn run(
        name: &'static str,
        producer: Box<dyn TestProducer>,
        topic: &str,
        partitions: i32,
    ) -> Result<Self, String> {
        let dog = Watchdog::start(name, Duration::from_secs(180));
        dog.phase("init_transactions");
        let t = Instant::now();
        producer
            .init_transactions()
            .map_err(|e| format!("init_transactions: {e}"))?;
        let init_time = t.elapsed();
        let t = Instant::now();
        let t1 = whole_txn(&*producer, topic, partitions, "c1", 1_000, true, &dog)?;
        let t2 = whole_txn(&*producer, topic, partitions, "a2", 500, false, &dog)?;
        let t3 = whole_txn(&*producer, topic, partitions, "c3", 300, true, &dog)?;
        let txn_time = t.elapsed();
        dog.phase("close");
        producer.close()?;
        Ok(Self {
            txns: [t1, t2, t3],
            init_time,
            txn_time,
        })
    }

    /// Checks the topic's partitions `0..partitions` as read back: `committed` (a
    /// read_committed view) holds exactly the 1,300 committed records, each once, in
    /// send order per partition, and none of the aborted ones; `all` (read_uncommitted)
    /// holds all 1,800 (the aborted ones were really written) and no record reported
    /// failed and not possibly written.
    pub(crate) fn check(
        &self,
        committed: &BTreeMap<i32, Vec<LogRecord>>,
        all: &BTreeMap<i32, Vec<LogRecord>>,
    ) -> Result<usize, String> {
        let [t1, t2, t3] = &self.txns;
        let in_log = check_committed(committed, &[t1, t3], &[t2])
            .map_err(|e| format!("read_committed:\n{e}"))?;
        check_not_written_absent(all, &not_written(&[t1, t2, t3]))
            .map_err(|e| format!("read_uncommitted: {e}"))?;
        let uncommitted: usize = all.values().map(Vec::len).sum();
        if uncommitted != Self::WRITTEN {
            return Err(format!(
                "read_uncommitted saw {uncommitted} records, expected all 1,800 \
                 (the aborted 500 must have been written)"
            ));
        }
        Ok(in_log)
    }

    /// The scenario's report; `in_log` is what [`ReadCommittedTxns::check`] returned
    /// (the records read_committed saw).
    pub(crate) fn report(&self, name: &'static str, start: Instant, in_log: usize) -> Report {
        let [t1, t2, t3] = &self.txns;
        let mut report = txn_report(name, start, &[t1, t2, t3], in_log, Vec::new());
        report.notes.push(format!(
            "init_transactions {:.2?}; commit 1,000 + abort 500 + commit 300 in {:.2?}; \
             read_committed saw {}, read_uncommitted {}",
            self.init_time,
            self.txn_time,
            in_log,
            Self::WRITTEN
        ));
        report
    }
}

/// (e) On `KACRAB_KAFKA_BOOTSTRAP`: producer A (transactional id X) opens a transaction
/// and writes 200 records (all delivered); producer B with the same X calls
/// init_transactions, which fences A and aborts its open transaction. A's commit must
/// fail (and so must a later send); B then commits 100 records. read_committed must show
/// exactly B's 100 and none of A's.
pub fn real_txn_fencing(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_txn_fencing";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let topic = fresh_topic("kacrab-txn-fence");
    create_topic(&bootstrap, &topic, 3, 1).map_err(fail)?;
    let txid = fresh_topic("kacrab-txid-fence");
    let dog = Watchdog::start(NAME, Duration::from_secs(180));
    let a = build(factory, &txn_props(&bootstrap, NAME, &txid)).map_err(fail)?;
    dog.phase("A init_transactions");
    a.init_transactions()
        .map_err(|e| fail(format!("A init_transactions: {e}")))?;
    dog.phase("A begin");
    a.begin_transaction()
        .map_err(|e| fail(format!("A begin_transaction: {e}")))?;
    let mut ta = new_txn("a");
    dog.phase("A send");
    let pending = send_txn_records(&*a, &topic, 3, "a", 0, 200, &mut ta);
    wait_deliveries(pending, &mut ta);
    if !ta.failures.is_empty() {
        return Err(fail(failures_line(&ta)));
    }
    let b = build(factory, &txn_props(&bootstrap, NAME, &txid)).map_err(fail)?;
    dog.phase("B init_transactions (fencing A)");
    let t = Instant::now();
    b.init_transactions()
        .map_err(|e| fail(format!("B init_transactions: {e}")))?;
    let fence_time = t.elapsed();
    dog.phase("A commit after fencing");
    let a_commit = a.commit_transaction();
    let Err(a_commit_err) = a_commit else {
        return Err(fail(format!(
            "A's commit_transaction succeeded after B (same transactional.id {txid}) \
             called init_transactions: A was not fenced"
        )));
    };
    dog.phase("A send after fencing");
    let a_send = a
        .send(
            &topic,
            0,
            Bytes::from_static(b"a-late"),
            Bytes::from_static(b"a:late"),
        )
        .wait();
    if let Ok(md) = a_send {
        return Err(fail(format!(
            "A's send after being fenced and failing to commit was acknowledged: {md:?}"
        )));
    }
    dog.phase("A abort after fencing");
    let a_abort = a.abort_transaction();
    let tb = whole_txn(&*b, &topic, 3, "b", 100, true, &dog).map_err(fail)?;
    dog.phase("close");
    let a_close = a.close();
    b.close().map_err(fail)?;
    dog.phase("consume");
    let committed =
        consume_isolated(&bootstrap, &topic, 1_000, 8_000, "read_committed").map_err(fail)?;
    let in_log = check_committed(&committed, &[&tb], &[&ta])
        .map_err(|e| fail(format!("(topic {topic}) read_committed:\n{e}")))?;
    let mut absent = not_written(&[&ta, &tb]);
    if let Err(f) = &a_send {
        if !f.possibly_written {
            absent.push("a-late");
        }
    }
    check_not_written_absent(&committed, &absent)
        .map_err(|e| fail(format!("(topic {topic}) read_committed: {e}")))?;
    Ok(txn_report(
        NAME,
        start,
        &[&ta, &tb],
        in_log,
        vec![
            format!("topic {topic}, transactional.id {txid}"),
            format!("B's init_transactions (fencing A) took {fence_time:.2?}"),
            format!("A's commit after fencing: {a_commit_err}"),
            format!("A's send after fencing: {}", a_send.unwrap_err()),
            format!("A's abort after fencing: {a_abort:?}"),
            format!("A's close: {a_close:?}"),
        ],
    ))
}

/// (f) On `KACRAB_KAFKA_CLUSTER` (three nodes, replication factor 3): a transactional
/// producer commits a first transaction of 300 records (which creates
/// `__transaction_state`); the node leading the id's `__transaction_state` partition
/// (`abs(hashCode(id)) % partitions`: its transaction coordinator) is SIGKILLed in the
/// middle of a second transaction of 1,000 (half sent before, in flight, half after), which
/// is then committed. The producer must end it cleanly: commit Ok, or a commit error
/// after which abort_transaction succeeds; if both fail, the error is reported in the notes
/// and a new producer with the same id takes over (init_transactions). A third transaction
/// of 300 is committed after. read_committed must show the committed transactions exactly
/// once, in order, and nothing of an aborted one (one whose outcome the producer could not
/// tell must be all or nothing). The node is restarted at the end, also on failure.
pub fn real_txn_coordinator_killed(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_txn_coordinator_killed";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_CLUSTER", NAME, "start-cluster") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let topic = fresh_topic("kacrab-txn-kill");
    create_topic(&bootstrap, &topic, 3, 3).map_err(fail)?;
    script(&["wait-leaders", &bootstrap, &topic, "--timeout", "60"]).map_err(fail)?;
    let txid = fresh_topic("kacrab-txid-kill");
    let dog = Watchdog::start(NAME, Duration::from_secs(240));
    let mut restart = Restart(None);
    let mut notes = vec![format!("topic {topic}, transactional.id {txid}")];

    let mut producer = build(factory, &txn_props(&bootstrap, NAME, &txid)).map_err(fail)?;
    dog.phase("init_transactions");
    producer
        .init_transactions()
        .map_err(|e| fail(format!("init_transactions: {e}")))?;
    let t1 = whole_txn(&*producer, &topic, 3, "c1", 300, true, &dog).map_err(fail)?;

    // The coordinator: the leader of the id's __transaction_state partition.
    dog.phase("find the coordinator");
    script(&[
        "wait-leaders",
        &bootstrap,
        "__transaction_state",
        "--timeout",
        "60",
    ])
    .map_err(fail)?;
    let state = leaders(&bootstrap, "__transaction_state").map_err(fail)?;
    let partitions = i32::try_from(state.len()).unwrap_or(50).max(1);
    let partition = txn_state_partition(&txid, partitions);
    let victim = *state.get(&partition).ok_or_else(|| {
        fail(format!(
            "no leader for __transaction_state partition {partition} in {state:?}"
        ))
    })?;
    if !(1..=3).contains(&victim) {
        return Err(fail(format!(
            "__transaction_state partition {partition} is led by node {victim}, not a script node"
        )));
    }
    let data_leaders = leaders(&bootstrap, &topic).map_err(fail)?;
    notes.push(format!(
        "coordinator: node {victim} (leader of __transaction_state partition {partition} of \
         {partitions}); data partition leaders before the kill {data_leaders:?}"
    ));

    // The second transaction, the coordinator killed in its middle.
    let mut t2 = new_txn("k2");
    dog.phase("begin k2");
    producer
        .begin_transaction()
        .map_err(|e| fail(format!("begin_transaction (k2): {e}")))?;
    dog.phase("send k2 (first half)");
    let mut pending = send_txn_records(&*producer, &topic, 3, "k2", 0, 500, &mut t2);
    // Let some of the first half reach the broker (registering partitions with the
    // coordinator), then kill with the rest in flight.
    let (first_key, first) = pending.remove(0);
    let first = first.wait();
    dog.phase(format!("kill node {victim}"));
    let t_kill = Instant::now();
    script(&["kill-node", &victim.to_string()]).map_err(fail)?;
    restart.0 = Some(victim);
    dog.killed(Some(victim));
    dog.phase("send k2 (second half)");
    pending.extend(send_txn_records(
        &*producer, &topic, 3, "k2", 500, 500, &mut t2,
    ));
    dog.phase("wait k2 deliveries");
    match first {
        Ok(_) => t2.acked += 1,
        Err(f) => t2.failed(first_key, f),
    }
    wait_deliveries(pending, &mut t2);
    let deliveries_time = t_kill.elapsed();
    if !t2.failures.is_empty() {
        notes.push(failures_line(&t2));
    }
    dog.phase("commit k2");
    let t = Instant::now();
    let commit = producer.commit_transaction();
    let commit_time = t.elapsed();
    // Some(true): committed; Some(false): aborted; None: the producer could not tell.
    let k2_outcome = match &commit {
        Ok(()) => {
            notes.push(format!(
                "k2: deliveries done {deliveries_time:.2?} after the kill; commit Ok in \
                 {commit_time:.2?}"
            ));
            Some(true)
        }
        Err(e) => {
            dog.phase("abort k2 after a failed commit");
            let t = Instant::now();
            let abort = producer.abort_transaction();
            let abort_time = t.elapsed();
            notes.push(format!(
                "k2: commit failed after {commit_time:.2?}: {e}; abort after {abort_time:.2?}: \
                 {abort:?}"
            ));
            println!("{NAME}: commit of k2 failed: {e}; abort: {abort:?}");
            if abort.is_ok() {
                Some(false)
            } else {
                None
            }
        }
    };
    if k2_outcome == Some(true) && !t2.failures.is_empty() {
        return Err(fail(format!(
            "commit_transaction succeeded although deliveries of the transaction failed: {}",
            failures_line(&t2)
        )));
    }
    if k2_outcome.is_none() {
        // The producer is in an error state: a new instance with the same id takes over,
        // which completes or aborts k2 on the coordinator.
        dog.phase("close the failed producer");
        let closed = producer.close();
        notes.push(format!("the failed producer's close: {closed:?}"));
        producer = build(factory, &txn_props(&bootstrap, NAME, &txid)).map_err(fail)?;
        dog.phase("init_transactions of the replacement producer");
        producer
            .init_transactions()
            .map_err(|e| fail(format!("replacement init_transactions: {e}")))?;
    }
    let t3 = whole_txn(&*producer, &topic, 3, "c3", 300, true, &dog).map_err(fail)?;
    dog.phase("close");
    producer.close().map_err(fail)?;
    dog.phase(format!("restart node {victim}"));
    restart.now().map_err(fail)?;
    dog.killed(None);

    dog.phase("consume");
    let logs =
        consume_isolated(&bootstrap, &topic, 5_000, 8_000, "read_committed").map_err(fail)?;
    let in_log = match k2_outcome {
        Some(true) => check_committed(&logs, &[&t1, &t2, &t3], &[]),
        Some(false) => check_committed(&logs, &[&t1, &t3], &[&t2]),
        None => check_committed(&logs, &[&t1, &t2, &t3], &[]).or_else(|with| {
            check_committed(&logs, &[&t1, &t3], &[&t2]).map_err(|without| {
                format!("neither all of k2 (\n{with}\n) nor none of it (\n{without}\n)")
            })
        }),
    }
    .map_err(|e| fail(format!("(topic {topic}) read_committed:\n{e}")))?;
    check_not_written_absent(&logs, &not_written(&[&t1, &t2, &t3]))
        .map_err(|e| fail(format!("(topic {topic}) read_committed: {e}")))?;
    let mut report = txn_report(NAME, start, &[&t1, &t2, &t3], in_log, notes);
    report.faults = 1;
    report.notes.push(format!(
        "k2 {}",
        match k2_outcome {
            Some(true) => "committed",
            Some(false) => "aborted",
            None => "outcome unknown to the producer",
        }
    ));
    Ok(report)
}
