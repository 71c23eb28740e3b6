//! The `consume_transform_produce` example against real Kafka, SIGKILLed and restarted:
//! nothing lost, nothing duplicated for a `read_committed` reader. Skips (and passes)
//! unless `KACRAB_KAFKA_BOOTSTRAP` names a running broker; see docs/real-kafka.md.
//!
//! The example runs as a child process: this test binary started again with
//! `KACRAB_CTP_CHILD` set, which runs the example's `run` (the file is compiled in
//! below) instead of the test.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kacrab_testkit::real_kafka::{consume_isolated, create_topic};
use kacrab_tokio::{Producer, ProducerRecord};

#[path = "../examples/consume_transform_produce.rs"]
#[allow(dead_code)] // the example's own `main`: the child calls `run` directly
mod example;

/// Set in the child's environment: run the example with the arguments in
/// [`CHILD_ARGS`], not the test.
const CHILD: &str = "KACRAB_CTP_CHILD";
/// The child's command line, one argument a line.
const CHILD_ARGS: &str = "KACRAB_CTP_ARGS";
const TEST_NAME: &str = "crash_and_restart_lose_and_duplicate_nothing";
const INPUT_RECORDS: usize = 2_000;
const PARTITIONS: i32 = 3;
/// How long one child run may take before the test gives up on it.
const RUN_DEADLINE: Duration = Duration::from_secs(120);
/// The last run stops after this long with its partitions assigned and nothing to read:
/// long enough that a slow fetch on a loaded machine is not taken for the end of input.
const LAST_RUN_IDLE_SECS: u64 = 10;
/// A killed run's successor gets the partitions at once, as a static member (KIP-345);
/// a dynamic one waits for the dead member's session to expire (45 s by default), and a
/// few transactions take well under a second here.
const RESTART_WITHIN: Duration = Duration::from_secs(30);

/// A consume-transform-produce loop (krafka's consumer, read_committed, auto-commit off;
/// kacrab's transactional producer committing the input offsets with
/// `send_offsets_to_transaction` and the consumer's `ConsumerGroupMetadata`) is
/// SIGKILLed three times, each time restarted with the same `transactional.id`, group
/// and static member id, then left to finish; every input record's output must then
/// be in the output topic exactly once under read_committed, and the outputs of one
/// input partition in input order.
///
/// The kills land after a commit (`committed txn 3`), between `send_offsets_to_transaction`
/// and the end of `commit_transaction` (`committing txn 2`), and inside a transaction
/// whose records are all in the log (`sent txn 2`): the output read without isolation
/// must hold more records than the input, the aborted ones. Each restart reaches its
/// kill within [`RESTART_WITHIN`]: the consumer is a static member (KIP-345), so it
/// takes the dead instance's place at once. What makes the restart exact: the restarted producer's
/// `InitProducerId` fences the dead one's epoch and completes the transaction it left
/// open (Kafka's `TransactionCoordinator.handleInitProducerId`, KIP-98); the offsets
/// were written to `__consumer_offsets` by `TxnOffsetCommit` in that same transaction
/// (`TransactionManager.sendOffsetsToTransaction`, KIP-447), so they move exactly when
/// the output becomes visible; the restarted consumer's `OffsetFetch` asks for stable
/// offsets (`requireStable`, KIP-447: Java's `ConsumerCoordinator.sendOffsetFetchRequest`
/// always does, krafka under read_committed).
///
/// The check can fail: the loop committing its offsets itself after
/// `commit_transaction` (`consumer.commit()`, no `send_offsets_to_transaction`) failed
/// it, a 100-record batch twice: the kill after `committed txn 3` lands between the two
/// commits, and the restart reads the batch again. One with auto-commit on loses the batches whose offsets
/// were committed before their transaction was aborted.
#[test]
fn crash_and_restart_lose_and_duplicate_nothing() {
    if std::env::var_os(CHILD).is_some() {
        run_as_child();
    }
    let bootstrap = match std::env::var("KACRAB_KAFKA_BOOTSTRAP") {
        Ok(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => {
            println!(
                "SKIPPED {TEST_NAME}: KACRAB_KAFKA_BOOTSTRAP is not set; start Kafka with \
                 `scripts/kafka.sh start-single` and export the KACRAB_KAFKA_BOOTSTRAP=... \
                 line it prints"
            );
            return;
        }
    };
    let suffix = unique_suffix();
    let input = format!("ctp-in-{suffix}");
    let output = format!("ctp-out-{suffix}");
    let group = format!("ctp-group-{suffix}");
    let transactional_id = format!("ctp-txn-{suffix}");
    for topic in [&input, &output] {
        create_topic(&bootstrap, topic, PARTITIONS, 1).expect("create topic");
    }
    let inputs = produce_input(&bootstrap, &input);

    let args = [
        bootstrap.as_str(),
        &input,
        &output,
        &group,
        &transactional_id,
    ];
    for (n, trigger) in [
        (1, "committed txn 3:"),
        (2, "committing txn 2"),
        (3, "sent txn 2:"),
    ] {
        let run = ChildRun::start(&args, None);
        let started = run.started;
        let lines = run.kill_on(trigger);
        let lived = started.elapsed();
        println!(
            "{TEST_NAME}: run {n} SIGKILLed on {trigger:?} {lived:?} after its start, after {} lines",
            lines.len()
        );
        assert!(
            lived < RESTART_WITHIN,
            "run {n} took {lived:?} to reach {trigger:?}: a restart waited for the dead \
             member's session to expire (is the consumer a static member?)"
        );
    }
    let (status, lines) = ChildRun::start(&args, Some(LAST_RUN_IDLE_SECS)).finish();
    assert!(
        status.success(),
        "the last run failed ({status}); its stdout:\n{}",
        lines.join("\n")
    );
    println!(
        "{TEST_NAME}: the last run ended by itself after {} transactions",
        lines
            .iter()
            .filter(|l| l.starts_with("committed txn"))
            .count()
    );

    let committed = consume_isolated(
        &bootstrap,
        &output,
        2 * INPUT_RECORDS as u64,
        5_000,
        "read_committed",
    )
    .expect("read the output with read_committed");
    let written: usize = consume_isolated(
        &bootstrap,
        &output,
        10 * INPUT_RECORDS as u64,
        5_000,
        "read_uncommitted",
    )
    .expect("read the output with read_uncommitted")
    .values()
    .map(Vec::len)
    .sum();
    println!(
        "{TEST_NAME}: {written} output records written, {} of them committed",
        committed.values().map(Vec::len).sum::<usize>()
    );
    assert!(
        written > INPUT_RECORDS,
        "{written} output records in the log: the kill on \"sent txn 2:\" left no \
         aborted transaction behind"
    );
    check_exactly_once(&inputs, &input, &committed);
}

/// Each input partition's offsets and values: what the loop must turn into output.
type Inputs = BTreeMap<(i32, i64), String>;

/// Produces `INPUT_RECORDS` records (`record-<i>`, spread over the partitions) with an
/// idempotent producer; returns each one's partition and offset.
fn produce_input(bootstrap: &str, topic: &str) -> Inputs {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    runtime.block_on(async {
        let producer =
            Producer::from_properties(&[("bootstrap.servers", bootstrap)]).expect("input producer");
        let mut deliveries = Vec::with_capacity(INPUT_RECORDS);
        for i in 0..INPUT_RECORDS {
            let value = format!("record-{i}");
            let partition = i as i32 % PARTITIONS;
            let record =
                ProducerRecord::new(topic, partition, value.clone()).with_key(format!("k{i}"));
            deliveries.push((value, producer.send(record).await.expect("send input")));
        }
        let mut inputs = Inputs::new();
        for (value, delivery) in deliveries {
            let meta = delivery.await.expect("input record delivered");
            let offset = meta.offset.expect("acks=all returns the offset");
            inputs.insert((meta.partition, offset), value);
        }
        producer.close().await;
        inputs
    })
}

/// Every input record's output exactly once, with the uppercased input value, and the
/// outputs of one input partition in input-offset order within each output partition.
fn check_exactly_once(
    inputs: &Inputs,
    input_topic: &str,
    committed: &BTreeMap<i32, Vec<kacrab_testkit::LogRecord>>,
) {
    let mut seen: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (out_partition, log) in committed {
        let mut last: BTreeMap<i32, i64> = BTreeMap::new();
        for record in log {
            let value = String::from_utf8_lossy(&record.value);
            let Some((upper, in_partition, in_offset)) = parse_output(&value, input_topic) else {
                problems.push(format!("unexpected output value {value:?}"));
                continue;
            };
            let source = (in_partition, in_offset);
            *seen.entry(source).or_default() += 1;
            match inputs.get(&source) {
                Some(v) if v.to_ascii_uppercase() == upper => {}
                Some(v) => problems.push(format!("{value:?} is not the uppercase of {v:?}")),
                None => problems.push(format!("{value:?} names no input record")),
            }
            if let Some(prev) = last.insert(in_partition, in_offset) {
                if prev >= in_offset {
                    problems.push(format!(
                        "output partition {out_partition}: input {in_partition}@{in_offset} \
                         after {in_partition}@{prev}"
                    ));
                }
            }
        }
    }
    let missing: Vec<_> = inputs.keys().filter(|k| !seen.contains_key(k)).collect();
    let duplicated: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{} input records have no committed output, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    if !duplicated.is_empty() {
        problems.push(format!(
            "{} input records have more than one committed output, e.g. {:?}",
            duplicated.len(),
            &duplicated[..duplicated.len().min(10)]
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `UPPER <- topic-partition@offset` → (UPPER, partition, offset).
fn parse_output(value: &str, input_topic: &str) -> Option<(String, i32, i64)> {
    let (upper, source) = value.rsplit_once(" <- ")?;
    let (topic_partition, offset) = source.rsplit_once('@')?;
    let (topic, partition) = topic_partition.rsplit_once('-')?;
    (topic == input_topic).then_some(())?;
    Some((
        upper.to_string(),
        partition.parse().ok()?,
        offset.parse().ok()?,
    ))
}

/// A name part no earlier run used.
fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{}", std::process::id(), nanos % 1_000_000_000_000)
}

/// The child side: runs the example with the arguments the parent passed, then exits
/// with its outcome (the test harness never sees this process's test end).
fn run_as_child() -> ! {
    let args = std::env::var(CHILD_ARGS).expect("the parent passes the arguments");
    let args = example::Args::parse(args.lines().map(str::to_owned)).expect("valid arguments");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let code = match runtime.block_on(example::run(&args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("consume_transform_produce: {e}");
            1
        }
    };
    std::process::exit(code)
}

/// One run of the loop as a child process, its stdout read line by line.
struct ChildRun {
    child: Child,
    lines: mpsc::Receiver<String>,
    started: Instant,
}

impl ChildRun {
    fn start(args: &[&str], stop_after_idle_secs: Option<u64>) -> Self {
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        args.extend(stop_after_idle_secs.map(|s| s.to_string()));
        let exe = std::env::current_exe().expect("this test binary");
        let mut child = Command::new(exe)
            // --nocapture: the harness would otherwise hold the child's lines until
            // its test ends, which it never does.
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env(CHILD_ARGS, args.join("\n"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the child");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            started: Instant::now(),
        }
    }

    /// The next stdout line, or `None` at its end; panics (killing the child) past the
    /// deadline.
    fn next_line(&mut self, seen: &[String]) -> Option<String> {
        let left = RUN_DEADLINE.saturating_sub(self.started.elapsed());
        match self.lines.recv_timeout(left) {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                panic!(
                    "the child ran past {RUN_DEADLINE:?}; its stdout:\n{}",
                    seen.join("\n")
                );
            }
        }
    }

    /// SIGKILLs the child as soon as it prints a line starting with `trigger`; panics if
    /// it ends first. Returns the lines it printed.
    fn kill_on(mut self, trigger: &str) -> Vec<String> {
        let mut seen = Vec::new();
        while let Some(line) = self.next_line(&seen) {
            let hit = line.starts_with(trigger);
            seen.push(line);
            if hit {
                self.child.kill().expect("SIGKILL the child"); // Child::kill is SIGKILL on Unix
                let _ = self.child.wait();
                return seen;
            }
        }
        let status = self.child.wait().expect("wait for the child");
        panic!(
            "the child ended ({status}) before printing {trigger:?}; its stdout:\n{}",
            seen.join("\n")
        );
    }

    /// Waits for the child to end by itself; returns its status and lines.
    fn finish(mut self) -> (ExitStatus, Vec<String>) {
        let mut seen = Vec::new();
        while let Some(line) = self.next_line(&seen) {
            seen.push(line);
        }
        (self.child.wait().expect("wait for the child"), seen)
    }
}
