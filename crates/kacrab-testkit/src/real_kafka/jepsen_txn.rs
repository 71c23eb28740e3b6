//! Transactions on a real three-node cluster under partitions, pauses and kills: a
//! consume-transform-produce loop through the lying proxy while the
//! [`nemesis`](crate::nemesis) plays a seeded schedule and the transaction
//! coordinator's broker is SIGKILLed in the middle of a commit; then Kafka's console
//! consumer reads the topic back at both isolation levels, Kafka's consumer-group tool
//! reads the group's committed offset, and [`check_transactions`] holds every
//! transaction's outcome to what they show.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::checker::{
    check_transactions, record_key, record_partition, txn_record_value, Expect, SendResult,
    TxnOutcome, TxnSent, TxnTally,
};
use crate::cluster::ApiKey;
use crate::nemesis::{seed_from_env, Controller, Plan, Schedule};
use crate::proxy::{Proxy, ProxyAction};
use crate::scenarios::{build, proxy_line, set_prop, Report};
use crate::trigger::{SplitMix64, Trigger};
use crate::{
    ConsumerGroupMetadata, Delivery, Factory, OffsetToCommit, TestProducer, TopicPartition,
    TxnCall, TxnError,
};

use super::jepsen::{env_u64, DELIVERY_TIMEOUT, REQUEST_TIMEOUT};
use super::txn::{txn_props, txn_state_partition, Watchdog};
use super::{consume_isolated, create_topic, env_or_skip, fresh_topic, leaders, script, skipped};

const PARTITIONS: i32 = 6;
const VALUE_SIZE: usize = 100;
/// `transaction.timeout.ms`: longer than any hold of the schedule plus a coordinator
/// failover, so the coordinator never aborts a transaction the producer still runs.
const TXN_TIMEOUT: Duration = Duration::from_secs(120);
/// Every transaction whose number is `ABORT_EVERY - 1` modulo this aborts on purpose.
const ABORT_EVERY: u64 = 7;

/// How one transaction ended, as the workload handles it.
enum Ended {
    Committed,
    /// Aborted on purpose, or after an abortable error (named).
    Aborted(Option<String>),
    /// Fenced or fatal (the call, the error): the producer cannot go on.
    Fatal(&'static str, TxnError),
}

/// The workload's state: the producer, what it sent, how each transaction ended.
struct Workload {
    producer: Box<dyn TestProducer>,
    topic: String,
    input: String,
    group: ConsumerGroupMetadata,
    per_txn: u64,
    txns: Vec<TxnSent>,
    results: Vec<SendResult>,
    /// When the last transaction began.
    began: Instant,
    /// The next input batch to process (the number committed so far).
    batch: u64,
    aborted_on_purpose: u64,
    /// Abortable errors met (each followed by an abort and a retry of the batch).
    abortable: Vec<String>,
}

impl Workload {
    /// Runs transaction `n` on the next input batch: begin, send its records, send the
    /// batch's offset, then commit (`commit` wraps the call: the coordinator kill) or,
    /// every `ABORT_EVERY`th, flush and abort on purpose. Java's contract: an abortable
    /// error is followed by `abort_transaction` and the batch is retried in the next
    /// transaction; anything else is fatal.
    fn transaction(
        &mut self,
        dog: &Watchdog,
        commit: &mut dyn FnMut(&dyn TestProducer) -> Result<(), TxnError>,
    ) -> Ended {
        let n = self.txns.len() as u64;
        let from = self.results.len() as u64;
        self.txns.push(TxnSent {
            number: n,
            batch: self.batch,
            records: from..from + self.per_txn,
            outcome: None,
        });
        dog.phase(format!("begin transaction {n}"));
        self.began = Instant::now();
        if let Err(e) = self.producer.transaction(TxnCall::Begin) {
            // Nothing sent.
            let txn = self.txns.last_mut().expect("pushed");
            txn.records = from..from;
            txn.outcome = Some(TxnOutcome::Unknown);
            return Ended::Fatal("begin_transaction", e);
        }
        dog.phase(format!("send transaction {n}"));
        let pending: Vec<Delivery> = (from..from + self.per_txn)
            .map(|i| {
                self.producer.send(
                    &self.topic,
                    record_partition(i, PARTITIONS),
                    record_key(i, PARTITIONS),
                    txn_record_value(i, PARTITIONS, VALUE_SIZE, n),
                )
            })
            .collect();
        let offsets = vec![OffsetToCommit::new(
            TopicPartition::new(self.input.as_str(), 0),
            self.batch as i64 + 1,
        )];
        dog.phase(format!("send_offsets_to_transaction {n}"));
        let mut ended = match self
            .producer
            .transaction(TxnCall::SendOffsets(offsets, self.group.clone()))
        {
            Err(e) => self.after_error("send_offsets_to_transaction", e, dog),
            Ok(()) if n % ABORT_EVERY == ABORT_EVERY - 1 => {
                // Every record in the log first, so the abort has something to hide.
                dog.phase(format!("flush transaction {n} (to abort)"));
                let _ = self.producer.flush();
                dog.phase(format!("abort transaction {n}"));
                match self.producer.transaction(TxnCall::Abort) {
                    Ok(()) => {
                        self.aborted_on_purpose += 1;
                        Ended::Aborted(None)
                    }
                    Err(e) => Ended::Fatal("abort_transaction", e),
                }
            }
            Ok(()) => {
                dog.phase(format!("commit transaction {n}"));
                match commit(&*self.producer) {
                    Ok(()) => Ended::Committed,
                    Err(e) => self.after_error("commit_transaction", e, dog),
                }
            }
        };
        dog.phase(format!("deliveries of transaction {n}"));
        self.results.extend(pending.into_iter().map(Delivery::wait));
        let outcome = match &mut ended {
            Ended::Committed => {
                self.batch += 1;
                TxnOutcome::Committed
            }
            Ended::Aborted(_) => TxnOutcome::Aborted,
            Ended::Fatal(..) => TxnOutcome::Unknown,
        };
        self.txns.last_mut().expect("pushed").outcome = Some(outcome);
        ended
    }

    /// An error of a call in an open transaction: abortable ones abort it.
    fn after_error(&mut self, call: &'static str, e: TxnError, dog: &Watchdog) -> Ended {
        let TxnError::Abortable(why) = &e else {
            return Ended::Fatal(call, e);
        };
        let n = self.txns.len() - 1;
        self.abortable
            .push(format!("transaction {n}: {call}: {why}"));
        dog.phase(format!("abort transaction {n} after {call} failed"));
        match self.producer.transaction(TxnCall::Abort) {
            Ok(()) => Ended::Aborted(Some(format!("{call}: {e}"))),
            Err(e) => Ended::Fatal("abort_transaction", e),
        }
    }
}

/// The coordinator kill of one commit: armed before the commit (a rule that drops the
/// response of the next EndTxn), fired by a thread as soon as the rule fires (the
/// EndTxn on its way to the coordinator, or applied there), the node restarted after
/// `down`.
struct CoordinatorKill {
    victim: i32,
    how_found: String,
    cancel: Arc<AtomicBool>,
    thread: JoinHandle<Result<KillTimes, String>>,
}

/// When the kill happened, from the commit call.
struct KillTimes {
    killed_at: Duration,
    restarted_at: Duration,
}

impl CoordinatorKill {
    /// The node coordinating `txid`: Kafka's `TransactionsCommand describe`, else the
    /// leader of its `__transaction_state` partition.
    fn coordinator(bootstrap: &str, txid: &str) -> Result<(i32, String), String> {
        if let Ok(out) = script(&["txn-coordinator", bootstrap, txid]) {
            if let Ok(node) = out.trim().parse::<i32>() {
                return Ok((node, "kafka-transactions.sh describe".into()));
            }
        }
        let state = leaders(bootstrap, "__transaction_state")?;
        let partitions = i32::try_from(state.len()).unwrap_or(50).max(1);
        let partition = txn_state_partition(txid, partitions);
        let node = *state.get(&partition).ok_or_else(|| {
            format!("no leader for __transaction_state partition {partition} in {state:?}")
        })?;
        Ok((
            node,
            format!("leader of __transaction_state partition {partition}"),
        ))
    }

    fn arm(
        bootstrap: &str,
        txid: &str,
        proxy: &Proxy,
        down: Duration,
        commit_called: Arc<std::sync::Mutex<Option<Instant>>>,
    ) -> Result<Self, String> {
        let (victim, how_found) = Self::coordinator(bootstrap, txid)?;
        if !(1..=3).contains(&victim) {
            return Err(format!(
                "the coordinator is node {victim}, not a script node"
            ));
        }
        let fired = proxy.inject(
            Some(ApiKey::EndTxn),
            Trigger::always().times(1),
            ProxyAction::DropResponse,
        );
        let cancel = Arc::new(AtomicBool::new(false));
        let (f, c) = (fired, Arc::clone(&cancel));
        let thread = std::thread::Builder::new()
            .name("coordinator-kill".into())
            .spawn(move || {
                while f.count() == 0 {
                    if c.load(Ordering::SeqCst) {
                        return Err("the transaction ended without an EndTxn".into());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                script(&["kill-node", &victim.to_string()])?;
                let since = || {
                    commit_called
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .map_or(Duration::ZERO, |t| t.elapsed())
                };
                let killed_at = since();
                std::thread::sleep(down);
                script(&["restart-node", &victim.to_string()])?;
                Ok(KillTimes {
                    killed_at,
                    restarted_at: since(),
                })
            })
            .map_err(|e| format!("spawn: {e}"))?;
        Ok(Self {
            victim,
            how_found,
            cancel,
            thread,
        })
    }

    /// Waits for the restart; the times, or why there was no kill.
    fn finish(self) -> Result<KillTimes, String> {
        self.cancel.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .unwrap_or_else(|_| Err("the kill thread panicked".into()))
    }
}

/// [`real_jepsen_txn`] for the driver of package `driver`, unless
/// `KACRAB_JEPSEN_TXN_DRIVERS` (comma-separated package names) is set and does not name
/// it: then it skips, saying so.
pub fn real_jepsen_txn_for(driver: &str, factory: Factory) -> Result<Report, String> {
    if let Ok(list) = std::env::var("KACRAB_JEPSEN_TXN_DRIVERS") {
        if !list.split(',').any(|d| d.trim() == driver) {
            println!("SKIPPED real_jepsen_txn for {driver}: KACRAB_JEPSEN_TXN_DRIVERS={list}");
            return Ok(skipped("real_jepsen_txn"));
        }
    }
    println!("real_jepsen_txn runs for {driver}");
    real_jepsen_txn(factory)
}

/// The transactional Jepsen-style run on `KACRAB_KAFKA_CLUSTER` (three nodes started by
/// `scripts/kafka.sh start-cluster`).
///
/// A fresh output topic of 6 partitions and a one-partition input topic (replication
/// factor 3, `min.insync.replicas` 2); a transactional producer (fresh
/// `transactional.id`, `request.timeout.ms` 5 s, `delivery.timeout.ms` 120 s,
/// `transaction.timeout.ms` 120 s) bootstrapped through the lying proxy runs
/// transactions for 40 s (`KACRAB_JEPSEN_TXN_SECONDS`): transaction `n` processes input
/// batch `b` (the batches committed so far): 60 records (`KACRAB_JEPSEN_TXN_RECORDS`)
/// round-robin over the partitions, each carrying its id and `n`, then
/// `send_offsets_to_transaction` of offset `b + 1` on the input partition for a fresh
/// group, then commit; every 7th transaction aborts on purpose (after a flush, so its
/// records are in the log). An abortable error aborts and retries the batch in the
/// next transaction (Java's contract); a fenced or fatal one ends the run and fails it
/// unless the transaction had been open longer than `transaction.timeout.ms` (the
/// coordinator then aborts it and bumps the epoch, `TransactionCoordinator`'s timeout
/// abort, which fences the producer). The same seeded schedule as
/// [`real_jepsen`](super::real_jepsen) plays meanwhile (`KACRAB_JEPSEN_SEED`), and once
/// per run, at a seed-drawn time, the transaction coordinator's broker (found with
/// `kafka-transactions.sh describe`) is SIGKILLed as the commit's EndTxn goes to it
/// (its response dropped by the proxy) and restarted a few seconds later, with the
/// schedule's pauses and kills held off meanwhile. After the heal, the console consumer
/// reads the topic with `read_committed` and `read_uncommitted`, the consumer-group
/// tool reads the group's offset, and [`check_transactions`] must pass.
pub fn real_jepsen_txn(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_jepsen_txn";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_CLUSTER", NAME, "start-cluster") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let seconds = env_u64("KACRAB_JEPSEN_TXN_SECONDS", 40).max(1);
    let per_txn = env_u64("KACRAB_JEPSEN_TXN_RECORDS", 60).max(1);
    let seed = seed_from_env();
    let duration = Duration::from_secs(seconds);
    let plan = Plan {
        duration,
        nodes: vec![1, 2, 3],
        max_hold: (DELIVERY_TIMEOUT - REQUEST_TIMEOUT) / 4,
        request_timeout: REQUEST_TIMEOUT,
        processes: true,
    };
    let schedule = Schedule::draw(seed, &plan);
    // The coordinator kill: when (between a quarter and a half of the run) and for how
    // long, from the same seed.
    let mut rng = SplitMix64(seed ^ 0xC0_0D1A_7012);
    let kill_after = duration.mul_f64(0.25 + rng.unit() / 4.0);
    let kill_down = Duration::from_millis(2_000 + rng.next_u64() % 4_000);
    println!(
        "{NAME}: {schedule}  and the transaction coordinator SIGKILLed mid-commit at the \
         first commit after {kill_after:.1?}, restarted {kill_down:.1?} later"
    );

    let topic = fresh_topic("kacrab-jepsen-txn");
    let input = format!("{topic}-in");
    create_topic(&bootstrap, &topic, PARTITIONS, 3).map_err(fail)?;
    create_topic(&bootstrap, &input, 1, 3).map_err(fail)?;
    script(&["wait-leaders", &bootstrap, &topic, "--timeout", "60"]).map_err(fail)?;
    let txid = fresh_topic("kacrab-jepsen-txid");
    let group = fresh_topic("kacrab-jepsen-group");
    let proxy = Arc::new(Proxy::with_limits(&bootstrap, 256).map_err(fail)?);
    let mut props = txn_props(&proxy.bootstrap(), NAME, &txid);
    for (k, v) in [
        ("request.timeout.ms", REQUEST_TIMEOUT),
        ("delivery.timeout.ms", DELIVERY_TIMEOUT),
        ("transaction.timeout.ms", TXN_TIMEOUT),
    ] {
        set_prop(&mut props, k, &v.as_millis().to_string());
    }
    let dog = Watchdog::start(NAME, Duration::from_secs(300));
    let mut w = Workload {
        producer: build(factory, &props).map_err(fail)?,
        topic: topic.clone(),
        input: input.clone(),
        group: ConsumerGroupMetadata::new(group.clone()),
        per_txn,
        txns: Vec::new(),
        results: Vec::new(),
        began: Instant::now(),
        batch: 0,
        aborted_on_purpose: 0,
        abortable: Vec::new(),
    };
    dog.phase("init_transactions");
    w.producer
        .transaction(TxnCall::Init)
        .map_err(|e| fail(format!("init_transactions: {e}")))?;
    // A first transaction without faults: the producer learns the brokers (the
    // controller needs their node ids from Metadata).
    let mut commit = |p: &dyn TestProducer| p.transaction(TxnCall::Commit);
    if let Ended::Fatal(call, e) = w.transaction(&dog, &mut commit) {
        return Err(fail(format!("the first transaction: {call}: {e} ({e:?})")));
    }

    let controller = Controller::start(&schedule, Arc::clone(&proxy)).map_err(fail)?;
    let run = Instant::now();
    let mut notes = Vec::new();
    let mut errors = Vec::new();
    let mut killed: Option<String> = None;
    // The process track's turn, kept a while after the restart so the node rejoins the
    // in-sync replicas before the schedule takes another one down.
    let mut turn: Option<(MutexGuard<'_, ()>, Option<Instant>)> = None;
    // The kill under way: the kill, the transaction, how long its commit took, how it
    // ended. Transactions go on while the node restarts.
    let mut pending: Option<(CoordinatorKill, u64, Option<Duration>, String)> = None;
    let mut fatal = None;
    // Ok: the kill as it happened mid-commit; Err: why it did not count.
    let judge = |k: CoordinatorKill, n: u64, took: Option<Duration>, how_ended: String| {
        let (victim, how) = (k.victim, k.how_found.clone());
        match (k.finish(), took) {
            (Ok(t), Some(took)) if t.killed_at < took => Ok(format!(
                "transaction {n}: coordinator node {victim} ({how}) SIGKILLed {:.2?} after \
                     the commit call, restarted at {:.1?}; the commit returned after \
                     {took:.2?}: {how_ended}",
                t.killed_at, t.restarted_at
            )),
            (Ok(t), took) => Err(format!(
                "transaction {n}: node {victim} killed at {:.2?}, not before the commit \
                 returned ({took:.2?}); another try follows",
                t.killed_at
            )),
            (Err(e), _) => Err(format!("transaction {n}: no coordinator kill: {e}")),
        }
    };
    // Past the run's time only to get the kill in (three times the time at most).
    while run.elapsed() < duration || (killed.is_none() && run.elapsed() < duration * 3) {
        if pending
            .as_ref()
            .is_some_and(|(k, ..)| k.thread.is_finished())
        {
            let (k, n, took, how_ended) = pending.take().expect("checked");
            match judge(k, n, took, how_ended) {
                Ok(k) => killed = Some(k),
                Err(e) => notes.push(e),
            }
            if let Some((_, until)) = &mut turn {
                *until = Some(Instant::now() + Duration::from_secs(6));
            }
        }
        if turn
            .as_ref()
            .is_some_and(|(_, until)| until.is_some_and(|u| Instant::now() >= u))
        {
            turn = None;
        }
        let n = w.txns.len() as u64;
        let kill_now = killed.is_none()
            && pending.is_none()
            && turn.is_none()
            && run.elapsed() >= kill_after
            && n % ABORT_EVERY != ABORT_EVERY - 1;
        let ended = if kill_now {
            dog.phase("wait for the process track's turn");
            let guard = controller.hold_processes();
            dog.phase("find the transaction coordinator");
            let called = Arc::new(std::sync::Mutex::new(None));
            let kill =
                match CoordinatorKill::arm(&bootstrap, &txid, &proxy, kill_down, called.clone()) {
                    Ok(kill) => kill,
                    Err(e) => {
                        notes.push(format!("transaction {n}: no coordinator kill: {e}"));
                        drop(guard);
                        continue;
                    }
                };
            let mut commit = |p: &dyn TestProducer| {
                *called.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                p.transaction(TxnCall::Commit)
            };
            let ended = w.transaction(&dog, &mut commit);
            let took = called
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .map(|t| t.elapsed());
            let how_ended = match &ended {
                Ended::Committed => "committed".to_string(),
                Ended::Aborted(why) => format!("aborted ({why:?})"),
                Ended::Fatal(call, e) => format!("{call}: {e}"),
            };
            pending = Some((kill, n, took, how_ended));
            turn = Some((guard, None));
            ended
        } else {
            let mut commit = |p: &dyn TestProducer| p.transaction(TxnCall::Commit);
            w.transaction(&dog, &mut commit)
        };
        if let Ended::Fatal(call, e) = ended {
            fatal = Some((n, call, e));
            break;
        }
        if w.txns.len() > 100_000 {
            break;
        }
    }
    if let Some((k, n, took, how_ended)) = pending.take() {
        dog.phase("wait for the coordinator's restart");
        match judge(k, n, took, how_ended) {
            Ok(k) => killed = Some(k),
            Err(e) => notes.push(e),
        }
    }
    drop(turn);
    let run_time = run.elapsed();
    let played = controller.stop();

    if let Some((n, call, e)) = &fatal {
        // Kafka excuses a fenced producer whose transaction outlived
        // transaction.timeout.ms: the coordinator aborted it and bumped the epoch.
        let open = w.began.elapsed();
        let excused = matches!(e, TxnError::ProducerFenced) && open > TXN_TIMEOUT;
        let line = format!("transaction {n}: {call} failed fatally: {e} ({e:?})");
        if excused {
            notes.push(format!(
                "{line} (excused: open past transaction.timeout.ms)"
            ));
        } else {
            errors.push(line);
        }
        // A new producer with the same id ends what the failed one left open.
        dog.phase("init_transactions of a replacement producer");
        match build(factory, &props) {
            Ok(p) => {
                if let Err(e) = p.transaction(TxnCall::Init) {
                    errors.push(format!("replacement init_transactions: {e}"));
                }
                let _ = p.close();
            }
            Err(e) => errors.push(format!("replacement producer: {e}")),
        }
    }
    dog.phase("close");
    let Workload {
        producer,
        txns,
        results,
        aborted_on_purpose,
        abortable,
        ..
    } = w;
    if let Err(e) = producer.close() {
        errors.push(format!("close: {e}"));
    }
    if killed.is_none() {
        errors.push("the transaction coordinator was never killed mid-commit".into());
    }

    let sent = results.len() as u64;
    let read_start = Instant::now();
    dog.phase("read back");
    let committed_records: usize = txns
        .iter()
        .filter(|t| t.outcome == Some(TxnOutcome::Committed))
        .map(|t| t.records.clone().count())
        .sum();
    let read = |isolation: &str, want: usize| {
        let once = |idle| consume_isolated(&bootstrap, &topic, sent * 2 + 10, idle, isolation);
        let logs = once(6_000)?;
        if logs.values().map(Vec::len).sum::<usize>() < want {
            return once(30_000);
        }
        Ok::<_, String>(logs)
    };
    let acked = results.iter().filter(|r| r.is_ok()).count();
    let rc = read("read_committed", committed_records).map_err(fail)?;
    let ru = read("read_uncommitted", acked).map_err(fail)?;
    dog.phase("group offsets");
    let group_offset = match script(&["group-offsets", &bootstrap, &group]) {
        Ok(out) => out
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f.len() == 3 && f[0] == input && f[1] == "0").then(|| f[2].parse::<i64>().ok())?
            })
            .next(),
        // No offset was ever committed, so the group does not exist; the check then
        // requires that no transaction committed.
        Err(e) if e.contains("GroupIdNotFoundException") => None,
        Err(e) => return Err(fail(e)),
    };
    let read_time = read_start.elapsed();
    let expect = Expect::strict(PARTITIONS, VALUE_SIZE);
    let tally: Option<TxnTally> =
        match check_transactions(&results, &txns, &rc, &ru, &expect, group_offset) {
            Ok(t) => Some(t),
            Err(e) => {
                errors.push(e);
                None
            }
        };
    errors.extend(
        played
            .errors
            .iter()
            .map(|e| format!("fault controller: {e}")),
    );
    let stats = proxy.stats();
    let mut lines = vec![
        format!(
            "topic {topic}, input {input}, transactional.id {txid}, group {group}, seed {seed}"
        ),
        format!(
            "{} transactions ({} aborted on purpose, {} aborted after an abortable error), \
             {sent} records; group offset {group_offset:?}",
            txns.len(),
            aborted_on_purpose,
            abortable.len()
        ),
        format!(
            "total {:.1?}: transactions {run_time:.1?}, both reads and the group {read_time:.1?}",
            start.elapsed()
        ),
        format!("proxy: {}", proxy_line(&stats)),
    ];
    if let Some(k) = &killed {
        lines.push(k.clone());
    }
    lines.extend(abortable.iter().take(10).cloned());
    lines.extend(notes);
    lines.extend(played.log.iter().cloned());
    drop(dog);
    if !errors.is_empty() {
        return Err(format!(
            "scenario {NAME} (seed {seed}, repeat with KACRAB_JEPSEN_SEED={seed}) failed:\n{}\n  {}",
            errors.join("\n"),
            lines.join("\n  ")
        ));
    }
    let t = tally.expect("checked");
    lines.insert(
        1,
        format!(
            "checked: {} committed, {} aborted, {} unknown; read_committed {} records \
             (committed {}), read_uncommitted {}",
            t.committed,
            t.aborted,
            t.unknown,
            t.read_committed,
            t.committed_records,
            t.uncommitted.log_records
        ),
    );
    Ok(Report {
        scenario: NAME,
        skipped: false,
        summary: t.uncommitted,
        faults: (schedule.links.len() + schedule.processes.len()) as u64 + stats.injected(),
        send_time: run_time,
        flush_time: Duration::ZERO,
        elapsed: start.elapsed(),
        notes: lines,
    })
}
