//! The soak (issue 18): constant load for half an hour under a mild fault schedule,
//! one row per minute of throughput, send-to-ack latency, resident memory, descriptors,
//! sockets and threads, then a flatness verdict and the whole run's exactly-once check by
//! Kafka's console consumer.
//!
//! The harness keeps nothing per record in memory while it measures, so that the
//! process's resident memory is the producer's (and the in-process proxy's): each
//! partition's waiter thread writes its outcomes to a file (8 bytes a record), which is
//! read back for the check after the last minute.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::checker::{check, record_key, record_partition, record_value, Expect, SendResult};
use crate::nemesis::{seed_from_env, Controller};
use crate::proxy::Proxy;
use crate::scenarios::{build, proxy_line, Report};
use crate::soak_stats::{flatness, quantile, MinuteRow, ProcessSample};
use crate::{Delivery, DeliveryReport, Factory, LogRecord, TestProducer};

use super::{
    create_topic, env_or_skip, fresh_topic, kafka_sh, parse_consumed, real_props, script,
    set_timeouts, skipped,
};

mod schedule;
pub use schedule::{draw_mild, short_name, started};

/// `request.timeout.ms`: the longer pauses and blackholes outlast it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// `delivery.timeout.ms`: every mild fault is far shorter.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(120);
const PARTITIONS: i32 = 6;
/// An outcome file's entry for an acknowledgement without an offset.
const NO_OFFSET: i64 = -1;
/// An outcome file's entry for anything else (kept aside, in memory: failures are rare).
const SEE_EXCEPTIONS: i64 = i64::MIN;

fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The current minute's tallies, filled by the waiter threads, emptied by the sampler.
#[derive(Default)]
struct Window {
    acked: u64,
    failed: u64,
    /// Send-to-ack latency of each acknowledgement, microseconds.
    latencies_us: Vec<u32>,
}

/// What a partition's waiter thread hands back.
struct Waited {
    partition: i32,
    count: u64,
    /// Record index → its result, for results the file cannot hold.
    exceptions: Vec<(u64, SendResult)>,
    error: Option<String>,
}

/// What the sender thread hands back once it has flushed, the waiters have finished and
/// the producer is closed.
struct Finished {
    sent: u64,
    /// Offered records not taken because `send` blocked (a full buffer) for over a second.
    shed: u64,
    send_time: Duration,
    flush_time: Duration,
    waited: Vec<Waited>,
    problems: Vec<String>,
}

/// The soak on `KACRAB_KAFKA_CLUSTER` (three nodes, `scripts/kafka.sh start-cluster`).
///
/// A fresh topic of 6 partitions (replication factor 3, `min.insync.replicas` 2); an
/// idempotent producer (`acks=all`, `request.timeout.ms` 10 s, `delivery.timeout.ms`
/// 120 s) bootstrapped through the lying proxy is offered a constant
/// `KACRAB_SOAK_RATE` records a second (default 5,000) of `KACRAB_SOAK_VALUE_BYTES`
/// (default 100), round-robin over the partitions, for `KACRAB_SOAK_MINUTES` (default
/// 30), while the nemesis plays a mild schedule (`draw_mild`) drawn from
/// `KACRAB_JEPSEN_SEED` (printed; `KACRAB_SOAK_PROCESS_FAULTS=0` leaves out its pauses
/// and kills, for a second soak on a cluster another one is pausing). Each minute prints a [`MinuteRow`]. Then the faults
/// heal, the producer flushes and closes, the rows are judged by
/// [`flatness`](crate::soak_stats::flatness), and Kafka's console consumer reads the
/// topic back for the exactly-once check of every record of the run (all acknowledged,
/// each once, in order, at its offset). `KACRAB_SOAK_OUT` names a file the table and the
/// verdict are also written to, row by row. The topic is deleted after a passing check.
pub fn real_soak(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_soak";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_CLUSTER", NAME, "start-cluster") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let minutes = env_u64("KACRAB_SOAK_MINUTES", 30).max(1) as u32;
    let rate = env_u64("KACRAB_SOAK_RATE", 5_000).max(1);
    let value_size = env_u64("KACRAB_SOAK_VALUE_BYTES", 100).max(16) as usize;
    let seed = seed_from_env();
    let mut schedule = draw_mild(
        seed,
        Duration::from_secs(u64::from(minutes) * 60),
        &[1, 2, 3],
        REQUEST_TIMEOUT,
    );
    // A second soak sharing the cluster with one that pauses and kills brokers leaves
    // the brokers to that one: two process tracks could take two nodes at once.
    if env_u64("KACRAB_SOAK_PROCESS_FAULTS", 1) == 0 {
        schedule.processes.clear();
    }
    let mut out = Output::open(std::env::var("KACRAB_SOAK_OUT").ok())?;
    out.line(&format!(
        "{NAME}: {minutes} min, {rate} records/s of {value_size} B over {PARTITIONS} \
         partitions (RF 3, acks=all, idempotent, request.timeout.ms {}, delivery.timeout.ms {}), \
         mild {schedule}",
        REQUEST_TIMEOUT.as_millis(),
        DELIVERY_TIMEOUT.as_millis()
    ));

    let topic = fresh_topic("kacrab-soak");
    create_topic(&bootstrap, &topic, PARTITIONS, 3).map_err(fail)?;
    script(&["wait-leaders", &bootstrap, &topic, "--timeout", "60"]).map_err(fail)?;
    let proxy = Arc::new(Proxy::with_limits(&bootstrap, 256).map_err(fail)?);
    let mut props = real_props(&proxy.bootstrap(), NAME);
    set_timeouts(&mut props, REQUEST_TIMEOUT, DELIVERY_TIMEOUT);
    let before = ProcessSample::now();
    let producer = build(factory, &props).map_err(fail)?;
    let files = OutcomeFiles::new(&topic)?;

    let window = Arc::new(Mutex::new(Window::default()));
    let sent = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    let load = Load {
        topic: topic.clone(),
        rate,
        value_size,
    };
    {
        let (window, sent, stop, files) = (
            Arc::clone(&window),
            Arc::clone(&sent),
            Arc::clone(&stop),
            files.clone(),
        );
        std::thread::Builder::new()
            .name("soak-sender".into())
            .spawn(move || {
                let r = run_load(producer, &load, &files, &window, &sent, &stop);
                let _ = done_tx.send(r);
            })
            .map_err(|e| fail(format!("spawn: {e}")))?;
    }
    let load_start = Instant::now();
    // The proxy knows the node ids once the producer's Metadata went through it.
    std::thread::sleep(Duration::from_secs(3));
    let controller = Controller::start(&schedule, Arc::clone(&proxy)).map_err(fail)?;

    out.line(&format!(
        "before the load: RSS {:.1} MiB, {} fds, {} TCP sockets, {} threads\n\n{}",
        before.rss_kib as f64 / 1024.0,
        before.fds,
        before.tcp_sockets,
        before.threads,
        MinuteRow::HEADER
    ));
    let mut rows = Vec::new();
    let (mut last_sent, mut last_dropped, mut reported) = (0, 0, 0);
    let mut scratch = Vec::new();
    for minute in 1..=minutes {
        let due = load_start + Duration::from_secs(u64::from(minute) * 60);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let (acked, failed) = {
            let mut w = window.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut scratch, &mut w.latencies_us);
            (std::mem::take(&mut w.acked), std::mem::take(&mut w.failed))
        };
        let now_sent = sent.load(Ordering::SeqCst);
        let dropped = proxy.stats().dropped;
        let log = controller.played_so_far().log;
        let begun = started(&log);
        let faults = begun[reported.min(begun.len())..]
            .iter()
            .filter_map(|&(track, i)| {
                let steps = if track == "link" {
                    &schedule.links
                } else {
                    &schedule.processes
                };
                steps.get(i).map(|st| short_name(&st.fault))
            })
            .collect();
        reported = begun.len();
        let row = MinuteRow {
            minute,
            sent: now_sent - last_sent,
            acked,
            failed,
            p50_us: quantile(&mut scratch, 0.50),
            p99_us: quantile(&mut scratch, 0.99),
            max_us: quantile(&mut scratch, 1.0),
            process: ProcessSample::now(),
            dropped: dropped - last_dropped,
            faults,
        };
        scratch.clear();
        (last_sent, last_dropped) = (now_sent, dropped);
        out.line(&row.to_string());
        rows.push(row);
    }

    let played = controller.stop();
    stop.store(true, Ordering::SeqCst);
    let finished = done_rx
        .recv_timeout(DELIVERY_TIMEOUT + Duration::from_secs(120))
        .map_err(|_| {
            fail(format!(
                "stuck: flush, a delivery or close did not finish within {:?} of the end \
                 ({} records sent)",
                DELIVERY_TIMEOUT + Duration::from_secs(120),
                sent.load(Ordering::SeqCst)
            ))
        })?;
    let verdict = flatness(&rows);
    let stats = proxy.stats();
    let mut notes = vec![
        format!("topic {topic}, seed {seed}"),
        format!(
            "{} records sent ({} offered records shed while send blocked); send {:.1?}, flush {:.1?}",
            finished.sent, finished.shed, finished.send_time, finished.flush_time
        ),
        format!("proxy: {}", proxy_line(&stats)),
    ];
    notes.extend(played.log.iter().cloned());
    out.line(&format!(
        "\nverdict ({}):\n  {}",
        if verdict.is_flat() {
            "flat"
        } else {
            "NOT FLAT"
        },
        verdict.lines.join("\n  ")
    ));

    let mut errors = finished.problems.clone();
    errors.extend(
        played
            .errors
            .iter()
            .map(|e| format!("fault controller: {e}")),
    );
    errors.extend(verdict.failures.iter().map(|f| format!("flatness: {f}")));
    let outcomes = files.read_back(finished.sent, &finished.waited)?;
    drop(files);
    let acked = outcomes.iter().filter(|o| o.is_ok()).count();
    let read_start = Instant::now();
    let mut logs = consume_to_file(&bootstrap, &topic, finished.sent, 30_000)?;
    if logs.values().map(Vec::len).sum::<usize>() < acked {
        logs = consume_to_file(&bootstrap, &topic, finished.sent, 90_000)?;
    }
    let read_time = read_start.elapsed();
    let checked = check(&outcomes, &logs, &Expect::strict(PARTITIONS, value_size));
    drop(logs);
    drop(outcomes);
    match &checked {
        Ok(t) => out.line(&format!(
            "exactly once (console consumer, read_uncommitted, {read_time:.1?}): {} sent, {} acked, \
             {} in the log, each once, in order, at its offset",
            t.records, t.acked, t.log_records
        )),
        Err(e) => {
            out.line(&format!("exactly-once check FAILED: {e}"));
            errors.insert(0, e.clone());
        }
    }
    if !errors.is_empty() {
        return Err(format!(
            "scenario {NAME} (seed {seed}, topic {topic} kept) failed:\n{}\n  {}",
            errors.join("\n"),
            notes.join("\n  ")
        ));
    }
    if let Err(e) = script(&["delete-topic", &bootstrap, &topic]) {
        notes.push(format!("deleting the topic: {e}"));
    }
    Ok(Report {
        scenario: NAME,
        skipped: false,
        summary: checked.expect("checked"),
        faults: (played.log.len() as u64) + stats.injected(),
        send_time: finished.send_time,
        flush_time: finished.flush_time,
        elapsed: start.elapsed(),
        notes,
    })
}

/// Stdout, and the `KACRAB_SOAK_OUT` file if named.
struct Output(Option<File>);

impl Output {
    fn open(path: Option<String>) -> Result<Self, String> {
        match path.filter(|p| !p.trim().is_empty()) {
            Some(p) => File::create(&p)
                .map(|f| Self(Some(f)))
                .map_err(|e| format!("KACRAB_SOAK_OUT={p}: {e}")),
            None => Ok(Self(None)),
        }
    }

    fn line(&mut self, text: &str) {
        println!("{text}");
        if let Some(f) = &mut self.0 {
            let _ = writeln!(f, "{text}").and_then(|()| f.flush());
        }
    }
}

struct Load {
    topic: String,
    rate: u64,
    value_size: usize,
}

/// The sender thread: paced sends until `stop`, then flush, then the waiters' ends, then
/// close.
fn run_load(
    producer: Box<dyn TestProducer>,
    load: &Load,
    files: &OutcomeFiles,
    window: &Arc<Mutex<Window>>,
    sent: &AtomicU64,
    stop: &AtomicBool,
) -> Finished {
    let mut problems = Vec::new();
    let mut senders = Vec::new();
    let mut waiters = Vec::new();
    for p in 0..PARTITIONS {
        let (tx, rx) = mpsc::channel::<(Instant, Delivery)>();
        let (window, path) = (Arc::clone(window), files.path(p));
        let spawned = std::thread::Builder::new()
            .name(format!("soak-wait-{p}"))
            .spawn(move || wait_partition(p, &rx, &path, &window));
        match spawned {
            Ok(h) => waiters.push(h),
            Err(e) => problems.push(format!("spawn waiter {p}: {e}")),
        }
        senders.push(tx);
    }
    let start = Instant::now();
    let (mut i, mut shed) = (0u64, 0u64);
    // At most a second of offered load is caught up after `send` blocked; the rest is
    // shed (counted), so the offered load stays constant rather than bursting.
    let backlog = load.rate;
    while !stop.load(Ordering::SeqCst) && problems.is_empty() {
        let target = (start.elapsed().as_secs_f64() * load.rate as f64) as u64;
        let mut due = target.saturating_sub(i + shed);
        if due > backlog {
            shed += due - backlog;
            due = backlog;
        }
        for _ in 0..due {
            let p = record_partition(i, PARTITIONS);
            let t0 = Instant::now();
            let d = producer.send(
                &load.topic,
                p,
                record_key(i, PARTITIONS),
                record_value(i, PARTITIONS, load.value_size),
            );
            if senders[p as usize].send((t0, d)).is_err() {
                problems.push(format!("the waiter of partition {p} is gone"));
                break;
            }
            i += 1;
            sent.store(i, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let send_time = start.elapsed();
    let t = Instant::now();
    if let Err(e) = producer.flush() {
        problems.push(format!("flush() failed: {e}"));
    }
    let flush_time = t.elapsed();
    drop(senders);
    let mut waited = Vec::new();
    for h in waiters {
        match h.join() {
            Ok(w) => waited.push(w),
            Err(_) => problems.push("a waiter thread panicked".into()),
        }
    }
    if let Err(e) = producer.close() {
        problems.push(format!("close() failed: {e}"));
    }
    Finished {
        sent: i,
        shed,
        send_time,
        flush_time,
        waited,
        problems,
    }
}

/// A partition's waiter: its deliveries in send order, each outcome into the window and
/// the partition's outcome file.
fn wait_partition(
    p: i32,
    rx: &mpsc::Receiver<(Instant, Delivery)>,
    path: &Path,
    window: &Mutex<Window>,
) -> Waited {
    let mut w = Waited {
        partition: p,
        count: 0,
        exceptions: Vec::new(),
        error: None,
    };
    let mut file = match File::create(path) {
        Ok(f) => BufWriter::new(f),
        Err(e) => {
            w.error = Some(format!("{}: {e}", path.display()));
            return w;
        }
    };
    for (t0, delivery) in rx {
        let result = delivery.wait();
        let latency = u32::try_from(t0.elapsed().as_micros()).unwrap_or(u32::MAX);
        {
            let mut win = window.lock().unwrap_or_else(|e| e.into_inner());
            if result.is_ok() {
                win.acked += 1;
                win.latencies_us.push(latency);
            } else {
                win.failed += 1;
            }
        }
        let entry = match &result {
            Ok(DeliveryReport {
                partition,
                offset: Some(o),
            }) if *partition == p && *o >= 0 => *o,
            Ok(DeliveryReport {
                partition,
                offset: None,
            }) if *partition == p => NO_OFFSET,
            _ => {
                let index = w.count * PARTITIONS as u64 + p as u64;
                w.exceptions.push((index, result));
                SEE_EXCEPTIONS
            }
        };
        if let Err(e) = file.write_all(&entry.to_le_bytes()) {
            w.error.get_or_insert(format!("{}: {e}", path.display()));
        }
        w.count += 1;
    }
    if let Err(e) = file.flush() {
        w.error.get_or_insert(format!("{}: {e}", path.display()));
    }
    w
}

/// One outcome file per partition, in a fresh directory under the temporary directory;
/// removed on drop of the last clone.
#[derive(Clone)]
struct OutcomeFiles(Arc<PathBuf>);

impl OutcomeFiles {
    fn new(topic: &str) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(topic);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Self(Arc::new(dir)))
    }

    fn path(&self, p: i32) -> PathBuf {
        self.0.join(format!("p{p}.outcomes"))
    }

    /// Every record's result, by record index.
    fn read_back(&self, sent: u64, waited: &[Waited]) -> Result<Vec<SendResult>, String> {
        let mut per_partition = Vec::new();
        let mut exceptions = HashMap::new();
        for w in waited {
            if let Some(e) = &w.error {
                return Err(format!("outcome file of partition {}: {e}", w.partition));
            }
            let mut bytes = Vec::new();
            File::open(self.path(w.partition))
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .map_err(|e| format!("reading outcomes of partition {}: {e}", w.partition))?;
            let entries: Vec<i64> = bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            if entries.len() as u64 != w.count {
                return Err(format!(
                    "partition {}: {} outcomes written, {} read back",
                    w.partition,
                    w.count,
                    entries.len()
                ));
            }
            per_partition.push(entries);
            exceptions.extend(w.exceptions.iter().cloned());
        }
        let mut outcomes = Vec::with_capacity(sent as usize);
        for i in 0..sent {
            let p = record_partition(i, PARTITIONS);
            let k = (i / PARTITIONS as u64) as usize;
            let entry = per_partition
                .get(p as usize)
                .and_then(|e| e.get(k))
                .copied()
                .ok_or_else(|| format!("record {i}: no outcome (partition {p}, #{k})"))?;
            outcomes.push(match entry {
                SEE_EXCEPTIONS => exceptions
                    .remove(&i)
                    .ok_or_else(|| format!("record {i}: its exception is missing"))?,
                NO_OFFSET => Ok(DeliveryReport {
                    partition: p,
                    offset: None,
                }),
                o => Ok(DeliveryReport {
                    partition: p,
                    offset: Some(o),
                }),
            });
        }
        Ok(outcomes)
    }
}

impl Drop for OutcomeFiles {
    fn drop(&mut self) {
        if Arc::strong_count(&self.0) == 1 {
            let _ = std::fs::remove_dir_all(&*self.0);
        }
    }
}

/// Reads `topic` from the beginning with the console consumer (read_uncommitted) into a
/// file beside the outcome files, then parses it a block of lines at a time: the run's
/// records are too many for one string.
fn consume_to_file(
    bootstrap: &str,
    topic: &str,
    sent: u64,
    idle_ms: u64,
) -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
    let path = std::env::temp_dir().join(format!("{topic}.consumed"));
    let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let output = Command::new("bash")
        .arg(kafka_sh())
        .args(["consume", bootstrap, topic, &(sent * 2 + 10).to_string()])
        .env("KACRAB_KAFKA_CONSUME_TIMEOUT_MS", idle_ms.to_string())
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("running {}: {e}", kafka_sh().display()))?;
    let result = if output.status.success() {
        parse_file(&path)
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        Err(format!(
            "scripts/kafka.sh consume {topic} failed ({}):\n{}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ))
    };
    let _ = std::fs::remove_file(&path);
    result
}

fn parse_file(path: &Path) -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
    let reader = BufReader::new(File::open(path).map_err(|e| format!("{}: {e}", path.display()))?);
    let mut logs: BTreeMap<i32, Vec<LogRecord>> = BTreeMap::new();
    let mut block = String::new();
    let mut lines = 0;
    let flush = |block: &mut String, logs: &mut BTreeMap<i32, Vec<LogRecord>>| {
        for (p, records) in parse_consumed(block)? {
            logs.entry(p).or_default().extend(records);
        }
        block.clear();
        Ok::<(), String>(())
    };
    for line in reader.lines() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        block.push_str(&line);
        block.push('\n');
        lines += 1;
        if lines % 100_000 == 0 {
            flush(&mut block, &mut logs)?;
        }
    }
    flush(&mut block, &mut logs)?;
    for log in logs.values_mut() {
        log.sort_by_key(|r| r.offset);
    }
    Ok(logs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DeliveryFailure;

    #[test]
    fn outcome_files_round_trip() {
        let files = OutcomeFiles::new(&fresh_topic("kacrab-soak-unit")).unwrap();
        let window = Mutex::new(Window::default());
        // Partition 1's records are 1, 7, 13: acked at 40, acked without an offset,
        // failed. Partition 0's: 0 and 6, acked at 0 and 1, the second reported in
        // partition 5 (kept as an exception, so the check sees the wrong partition).
        let deliveries = |v: Vec<SendResult>| {
            let (tx, rx) = mpsc::channel();
            for r in v {
                tx.send((Instant::now(), Delivery(Box::new(move || r))))
                    .unwrap();
            }
            rx
        };
        let ok = |partition, offset| Ok(DeliveryReport { partition, offset });
        let failed = Err(DeliveryFailure::new("timed out", true));
        let w1 = wait_partition(
            1,
            &deliveries(vec![ok(1, Some(40)), ok(1, None), failed.clone()]),
            &files.path(1),
            &window,
        );
        let w0 = wait_partition(
            0,
            &deliveries(vec![ok(0, Some(0)), ok(5, Some(1))]),
            &files.path(0),
            &window,
        );
        {
            let w = window.lock().unwrap();
            assert_eq!((w.acked, w.failed, w.latencies_us.len()), (4, 1, 4));
        }
        // Records 0..=1 and 6..=7 (partitions 2–5 sent nothing: only 8 records asked).
        let mut waited = vec![w0, w1];
        for p in 2..PARTITIONS {
            waited.push(wait_partition(
                p,
                &deliveries(vec![]),
                &files.path(p),
                &window,
            ));
        }
        let e = files.read_back(8, &waited).unwrap_err();
        assert!(e.contains("record 2: no outcome"), "{e}");
        let back = files.read_back(2, &waited).unwrap();
        assert_eq!(back, vec![ok(0, Some(0)), ok(1, Some(40))]);
        waited.truncate(2);
        for p in 2..PARTITIONS {
            let rx = deliveries(vec![ok(p, Some(0))]);
            waited.push(wait_partition(p, &rx, &files.path(p), &window));
        }
        let back = files.read_back(14, &waited).unwrap_err();
        assert!(back.contains("record 8: no outcome"), "{back}");
        let back = files.read_back(8, &waited).unwrap();
        assert_eq!(back[6], ok(5, Some(1)));
        assert_eq!(back[7], ok(1, None));
    }

    #[test]
    fn parses_a_consumed_file_in_blocks() {
        let path = std::env::temp_dir().join(fresh_topic("kacrab-soak-parse"));
        let mut text = String::new();
        for i in (0..250_000u64).rev() {
            text.push_str(&format!("{}\t{}\tk\tv\n", i % 2, i / 2));
        }
        std::fs::write(&path, text).unwrap();
        let logs = parse_file(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(logs[&0].len(), 125_000);
        assert_eq!(logs[&1].len(), 125_000);
        assert!(logs[&1].windows(2).all(|w| w[0].offset < w[1].offset));
    }
}
