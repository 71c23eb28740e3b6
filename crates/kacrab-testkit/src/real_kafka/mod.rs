//! Scenarios against real Apache Kafka, started by `scripts/kafka.sh` (see
//! docs/real-kafka.md). Each one skips — prints why and returns a skipped [`Report`] —
//! unless its environment variable names the brokers:
//!
//! * `KACRAB_KAFKA_BOOTSTRAP` (`scripts/kafka.sh start-single`): [`real_exactly_once`],
//!   [`real_proxy_drops`], [`real_txn_read_committed`], [`real_txn_fencing`],
//!   [`real_blackhole_within_budget`], [`real_kernel_blackhole`] (root and `iptables`
//!   too);
//! * `KACRAB_KAFKA_CLUSTER` (`scripts/kafka.sh start-cluster`): [`real_leader_kill`],
//!   [`real_txn_coordinator_killed`], [`real_jepsen`], [`real_jepsen_txn`].
//!
//! Topics are created fresh (unique names) with `scripts/kafka.sh create-topic`, and read
//! back with Kafka's own console consumer (`scripts/kafka.sh consume`), so what is checked
//! is what an independent consumer sees. `KACRAB_REAL_RECORDS` overrides the record count.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::burst::{self, Burst, Step};
use crate::checker::{check, Expect, LogRecord};
use crate::cluster::ApiKey;
use crate::proxy::{Blackhole, Link, Proxy, ProxyAction, Target};
use crate::scenarios::{base_props, build, proxy_line, set_prop, Report};
use crate::trigger::Trigger;
use crate::Factory;

mod jepsen;
mod jepsen_txn;
mod kernel;
mod soak;
mod txn;
pub use jepsen::real_jepsen;
pub use jepsen_txn::{real_jepsen_txn, real_jepsen_txn_for};
pub use kernel::real_kernel_blackhole;
pub use soak::real_soak;
pub use txn::{real_txn_coordinator_killed, real_txn_fencing, real_txn_read_committed};
pub(crate) use txn::{txn_props, ReadCommittedTxns};

/// The repository's `scripts/kafka.sh`, found from this crate's manifest directory.
pub fn kafka_sh() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh")
}

/// Runs `scripts/kafka.sh args...`; returns its stdout, or its stderr tail on failure.
pub fn script(args: &[&str]) -> Result<String, String> {
    script_env(args, &[])
}

fn script_env(args: &[&str], env: &[(&str, &str)]) -> Result<String, String> {
    let mut cmd = Command::new("bash");
    cmd.arg(kafka_sh()).args(args).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running {}: {e}", kafka_sh().display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "scripts/kafka.sh {} failed ({}):\n{}",
        args.join(" "),
        out.status,
        tail.join("\n")
    ))
}

/// A topic name no earlier run used.
pub(crate) fn fresh_topic(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )
}

/// Creates `topic` with `partitions` partitions and replication factor `rf`.
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32, rf: i32) -> Result<(), String> {
    script(&[
        "create-topic",
        bootstrap,
        topic,
        &partitions.to_string(),
        &rf.to_string(),
    ])
    .map(|_| ())
}

/// Partition → leader node id, from `scripts/kafka.sh describe-topic`.
pub fn leaders(bootstrap: &str, topic: &str) -> Result<BTreeMap<i32, i32>, String> {
    let out = script(&["describe-topic", bootstrap, topic])?;
    Ok(parse_leaders(&out))
}

fn parse_leaders(describe: &str) -> BTreeMap<i32, i32> {
    let field = |line: &str, name: &str| -> Option<i32> {
        let rest = &line[line.find(name)? + name.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    describe
        .lines()
        .filter_map(|l| Some((field(l, "Partition:")?, field(l, "Leader:")?)))
        .collect()
}

/// Reads `topic` from the beginning with Kafka's console consumer at an isolation level
/// (`read_committed` hides aborted and open transactions, `read_uncommitted` shows
/// every data record) until it has been idle for `idle_ms` or has read `max` records;
/// returns each partition's records.
pub fn consume_isolated(
    bootstrap: &str,
    topic: &str,
    max: u64,
    idle_ms: u64,
    isolation: &str,
) -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
    let read = |idle_ms: u64| -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
        let idle = idle_ms.to_string();
        let out = script_env(
            &[
                "consume",
                bootstrap,
                topic,
                &max.to_string(),
                "--isolation",
                isolation,
            ],
            &[("KACRAB_KAFKA_CONSUME_TIMEOUT_MS", &idle)],
        )?;
        parse_consumed(&out)
    };
    let logs = read(idle_ms)?;
    // The console consumer's idle clock runs while it joins its group; on a loaded
    // machine that alone can outlast a short idle timeout and read nothing. An empty read
    // is repeated once with a long timeout (a topic that is really empty stays empty).
    if logs.values().all(Vec::is_empty) {
        return read(idle_ms.max(30_000));
    }
    Ok(logs)
}

/// Every record of `topic`, a topic no transaction wrote to, read with Kafka's console
/// consumer at `isolation`, for a run that had `acked` records acknowledged.
///
/// Kafka's GetOffsetShell first gives each partition's end offset. With no control
/// records in the log the offsets count the records, so the consumer is asked for
/// exactly that many and stops once it has them, instead of after an idle timeout
/// (which every read used to wait out). That read is kept only if it holds each
/// partition's offsets from 0 to its end, each once, and the end offsets are the same
/// when asked again after the read; otherwise (a write landed meanwhile, or the topic
/// is empty) the topic is read as before: until the consumer has
/// been idle for 8 s, asking for more than the offsets count so that nothing is cut
/// off, and once more with 30 s if that read is short of `acked`.
pub fn consume_whole(
    bootstrap: &str,
    topic: &str,
    isolation: &str,
    acked: usize,
) -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
    let ends = partition_end_offsets(bootstrap, topic)?;
    let total: i64 = ends.values().sum();
    if total > 0 {
        // The idle timeout only ends a read that falls short, which the check below
        // then refuses.
        let logs = consume_isolated(bootstrap, topic, total as u64, 30_000, isolation)?;
        // The end offsets asked again after the read: a write that landed (or a high
        // watermark that moved) meanwhile would be cut off, so the read then falls back.
        if reads_to_the_end(&logs, &ends) && partition_end_offsets(bootstrap, topic)? == ends {
            return Ok(logs);
        }
    }
    let max = 2 * (total.max(0) as u64).max(acked as u64) + 10;
    let logs = consume_isolated(bootstrap, topic, max, 8_000, isolation)?;
    if logs.values().map(Vec::len).sum::<usize>() < acked {
        return consume_isolated(bootstrap, topic, max, 30_000, isolation);
    }
    Ok(logs)
}

/// Each partition's end offset of `topic` (Kafka's GetOffsetShell, latest offsets).
pub fn partition_end_offsets(bootstrap: &str, topic: &str) -> Result<BTreeMap<i32, i64>, String> {
    let out = script(&["partition-end-offsets", bootstrap, topic])?;
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            match (f.next().map(str::parse), f.next().map(str::parse)) {
                (Some(Ok(p)), Some(Ok(o))) => Ok((p, o)),
                _ => Err(format!("unexpected GetOffsetShell line {l:?}")),
            }
        })
        .collect()
}

/// Whether `logs` holds, for every partition of `ends`, exactly the offsets from 0 to
/// its end offset, each once (the records of a topic that has only data records).
fn reads_to_the_end(logs: &BTreeMap<i32, Vec<LogRecord>>, ends: &BTreeMap<i32, i64>) -> bool {
    logs.keys().all(|p| ends.contains_key(p))
        && ends.iter().all(|(p, &end)| {
            let read = logs.get(p).map_or(&[][..], Vec::as_slice);
            read.len() as i64 == end && read.iter().zip(0..).all(|(r, o)| r.offset == o)
        })
}

fn parse_consumed(out: &str) -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
    let mut logs: BTreeMap<i32, Vec<LogRecord>> = BTreeMap::new();
    for line in out.lines().filter(|l| !l.is_empty()) {
        let mut f = line.splitn(4, '\t');
        let (Some(p), Some(o), Some(k), Some(v)) = (f.next(), f.next(), f.next(), f.next()) else {
            return Err(format!("unexpected consumer line {line:?}"));
        };
        let (Ok(p), Ok(offset)) = (p.parse::<i32>(), o.parse::<i64>()) else {
            return Err(format!("unexpected consumer line {line:?}"));
        };
        logs.entry(p).or_default().push(LogRecord {
            offset,
            key: Bytes::from(k.to_string()),
            value: Bytes::from(v.to_string()),
            producer_id: -1,
        });
    }
    for log in logs.values_mut() {
        log.sort_by_key(|r| r.offset);
    }
    Ok(logs)
}

pub(crate) fn env_or_skip(var: &str, name: &'static str, how: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
        _ => {
            println!(
                "SKIPPED {name}: {var} is not set; start Kafka with `scripts/kafka.sh {how}` \
                 and export the {var}=... line it prints"
            );
            None
        }
    }
}

pub(crate) fn skipped(name: &'static str) -> Report {
    Report {
        scenario: name,
        skipped: true,
        ..Report::default()
    }
}

pub(crate) fn records(default: u64) -> u64 {
    std::env::var("KACRAB_REAL_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub(crate) fn real_props(bootstrap: &str, name: &str) -> Vec<(String, String)> {
    let mut props = base_props(bootstrap, &format!("testkit-{name}"));
    set_prop(&mut props, "request.timeout.ms", "30000");
    set_prop(&mut props, "delivery.timeout.ms", "180000");
    set_prop(&mut props, "retry.backoff.ms", "100");
    set_prop(&mut props, "retry.backoff.max.ms", "1000");
    props
}

/// Sends the burst, reads the topic back with the console consumer, checks (every send
/// acknowledged, each record once, in order, offsets as reported).
pub(crate) fn produce_and_verify(
    name: &'static str,
    factory: Factory,
    bootstrap_for_producer: &str,
    bootstrap_for_consumer: &str,
    burst_spec: Burst,
    hook: impl FnMut(u64, u64) -> Result<Step, String> + Send + 'static,
    after_flush: impl FnOnce() -> Result<(), String>,
) -> Result<Report, String> {
    produce_and_verify_with(
        name,
        factory,
        bootstrap_for_producer,
        bootstrap_for_consumer,
        burst_spec,
        &[],
        hook,
        after_flush,
    )
}

/// [`produce_and_verify`] with property overrides on top of [`real_props`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn produce_and_verify_with(
    name: &'static str,
    factory: Factory,
    bootstrap_for_producer: &str,
    bootstrap_for_consumer: &str,
    burst_spec: Burst,
    overrides: &[(&str, &str)],
    hook: impl FnMut(u64, u64) -> Result<Step, String> + Send + 'static,
    after_flush: impl FnOnce() -> Result<(), String>,
) -> Result<Report, String> {
    let start = Instant::now();
    let fail = |e: String| format!("scenario {name}: {e}");
    let mut props = real_props(bootstrap_for_producer, name);
    for (k, v) in overrides {
        set_prop(&mut props, k, v);
    }
    let producer = build(factory, &props).map_err(fail)?;
    let result = burst::run(producer, &burst_spec, hook).map_err(fail)?;
    after_flush().map_err(fail)?;
    // The whole log, duplicates included: bounded by its end offsets, or by idleness
    // when those do not bound it (`consume_whole`).
    let acked = result.outcomes.iter().filter(|o| o.is_ok()).count();
    let logs = consume_whole(
        bootstrap_for_consumer,
        &burst_spec.topic,
        "read_uncommitted",
        acked,
    )
    .map_err(fail)?;
    let expect = Expect::strict(burst_spec.partitions, burst_spec.value_size);
    let checked = check(&result.outcomes, &logs, &expect);
    let mut errors: Vec<String> = result.problems.clone();
    if let Err(e) = &checked {
        errors.insert(0, e.clone());
    }
    if !errors.is_empty() {
        return Err(format!(
            "scenario {name} (topic {}) failed:\n{}",
            burst_spec.topic,
            errors.join("\n")
        ));
    }
    Ok(Report {
        scenario: name,
        skipped: false,
        summary: checked.expect("checked"),
        faults: 0,
        send_time: result.send_time,
        flush_time: result.flush_time,
        elapsed: start.elapsed(),
        notes: vec![format!("topic {}", burst_spec.topic)],
    })
}

/// (a) 100,000 records (`KACRAB_REAL_RECORDS`) of 100 bytes to a fresh 6-partition topic
/// on `KACRAB_KAFKA_BOOTSTRAP`, read back by Kafka's console consumer: every record
/// acknowledged, exactly once, in order per partition, at the offsets reported.
pub fn real_exactly_once(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_exactly_once";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let topic = fresh_topic("kacrab-eo");
    create_topic(&bootstrap, &topic, 6, 1)?;
    let spec = Burst {
        topic,
        partitions: 6,
        records: records(100_000),
        value_size: 100,
        chunk: 5_000,
        pause: Duration::ZERO,
        deadline: Duration::from_secs(300),
    };
    produce_and_verify(
        NAME,
        factory,
        &bootstrap,
        &bootstrap,
        spec,
        |_, _| Ok(Step::Continue),
        || Ok(()),
    )
}

/// Restarts a killed cluster node when dropped, so a failing scenario leaves the cluster
/// whole.
struct Restart(Option<i32>);

impl Restart {
    fn now(&mut self) -> Result<(), String> {
        match self.0.take() {
            Some(n) => script(&["restart-node", &n.to_string()]).map(|_| ()),
            None => Ok(()),
        }
    }
}

impl Drop for Restart {
    fn drop(&mut self) {
        if let Err(e) = self.now() {
            eprintln!("{e}");
        }
    }
}

/// (b) The seed's scenario on `KACRAB_KAFKA_CLUSTER` (three nodes): a fresh 6-partition
/// topic with replication factor 3, a paced burst (60,000 records, `KACRAB_REAL_RECORDS`),
/// and the leader of partition 0 (and of whatever else it leads) SIGKILLed a third of the
/// way in. Every partition must be fully delivered with no duplicate; the node is
/// restarted at the end.
pub fn real_leader_kill(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_leader_kill";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_CLUSTER", NAME, "start-cluster") else {
        return Ok(skipped(NAME));
    };
    let topic = fresh_topic("kacrab-kill");
    create_topic(&bootstrap, &topic, 6, 3)?;
    script(&["wait-leaders", &bootstrap, &topic, "--timeout", "60"])?;
    let before = leaders(&bootstrap, &topic)?;
    let victim = *before
        .get(&0)
        .ok_or_else(|| format!("no leader for partition 0 of {topic} in {before:?}"))?;
    if !(1..=3).contains(&victim) {
        return Err(format!(
            "partition 0 of {topic} is led by node {victim}, not a script node"
        ));
    }
    let led: Vec<i32> = before
        .iter()
        .filter(|(_, l)| **l == victim)
        .map(|(p, _)| *p)
        .collect();
    let total = records(60_000);
    let chunks = 60;
    let spec = Burst {
        topic: topic.clone(),
        partitions: 6,
        records: total,
        value_size: 100,
        chunk: (total / chunks).max(1),
        pause: Duration::from_millis(50),
        deadline: Duration::from_secs(300),
    };
    let restart = Arc::new(std::sync::Mutex::new(Restart(None)));
    let r_hook = Arc::clone(&restart);
    let hook = move |k: u64, _| {
        if k == chunks / 3 {
            script(&["kill-node", &victim.to_string()])?;
            r_hook.lock().unwrap().0 = Some(victim);
        }
        Ok(Step::Continue)
    };
    let r_after = Arc::clone(&restart);
    let after = move || r_after.lock().unwrap().now();
    let mut report = produce_and_verify(NAME, factory, &bootstrap, &bootstrap, spec, hook, after)?;
    report.faults = 1;
    report
        .notes
        .push(format!("killed node {victim} (leader of partitions {led:?}) after a third of the burst, restarted it after flush"));
    Ok(report)
}

/// (c) The lying proxy in front of `KACRAB_KAFKA_BOOTSTRAP`: every 4th Produce is
/// forwarded, written, and its response dropped with the connection, until at least 100
/// responses were dropped (the burst continues until then, 400,000 records at most). Then
/// the topic is read back directly from the broker: no duplicate, no loss.
pub fn real_proxy_drops(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_proxy_drops";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let topic = fresh_topic("kacrab-proxy");
    create_topic(&bootstrap, &topic, 6, 1)?;
    let proxy = Arc::new(Proxy::start(&bootstrap)?);
    const TARGET: u64 = 100;
    let _rule = proxy.inject(
        Some(ApiKey::Produce),
        Trigger::every(4).after(2),
        ProxyAction::DropResponse,
    );
    let spec = Burst {
        topic,
        partitions: 6,
        records: records(400_000),
        value_size: 100,
        chunk: 300,
        pause: Duration::from_millis(5),
        deadline: Duration::from_secs(300),
    };
    let p_hook = Arc::clone(&proxy);
    // Stop on responses actually dropped, not on the rule's firings: a firing on a
    // connection an earlier drop already closed drops nothing.
    let hook = move |_, sent: u64| {
        if p_hook.stats().dropped >= TARGET && sent >= 20_000 {
            p_hook.clear_rules();
            return Ok(Step::Stop);
        }
        Ok(Step::Continue)
    };
    let mut report = produce_and_verify(
        NAME,
        factory,
        &proxy.bootstrap(),
        &bootstrap,
        spec,
        hook,
        || Ok(()),
    )?;
    let stats = proxy.stats();
    report.faults = stats.injected();
    report.notes.push(format!("proxy: {}", proxy_line(&stats)));
    if stats.dropped < TARGET {
        return Err(format!(
            "scenario {NAME}: the proxy dropped only {} responses (at least {TARGET} required)\n  {report}",
            stats.dropped
        ));
    }
    Ok(report)
}

/// (d) Liveness behind blackholes, as a new user meets it: Kafka's default timeouts
/// (`request.timeout.ms` 30 s, `delivery.timeout.ms` 120 s; `KACRAB_REAL_BLACKHOLE_SCALE`
/// divides all three times: default 4, so 10 s blackholes under 7.5 s and 30 s; 1 for
/// Kafka's own defaults), 50,000 records (`KACRAB_REAL_RECORDS`) queued as
/// fast as the producer takes them (one chunk of 1,000 at a time) into a fresh 6-partition topic on
/// `KACRAB_KAFKA_BOOTSTRAP` through the lying proxy, which blackholes the broker both
/// ways for 40 s after the 5th and the 30th chunk (its connections held open, new ones
/// too; the blackholes may overlap into one longer than 40 s when the sends outrun them). Each blackhole is
/// shorter than `delivery.timeout.ms` − `request.timeout.ms`, so every record must be
/// acknowledged once it heals, exactly once, in order (read back by the console consumer).
pub fn real_blackhole_within_budget(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_blackhole_within_budget";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let scale = std::env::var("KACRAB_REAL_BLACKHOLE_SCALE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(4);
    let topic = fresh_topic("kacrab-blackhole");
    create_topic(&bootstrap, &topic, 6, 1)?;
    let proxy = Arc::new(Proxy::start(&bootstrap)?);
    let hold = Duration::from_millis(40_000 / scale);
    let total = records(50_000);
    let chunks = 50;
    let spec = Burst {
        topic,
        partitions: 6,
        records: total,
        value_size: 100,
        chunk: (total / chunks).max(1),
        pause: Duration::ZERO,
        deadline: Duration::from_secs(400),
    };
    let p_hook = Arc::clone(&proxy);
    let hook = move |k: u64, _| {
        if k == 5 || k == 30 {
            p_hook.set_link(Target::All, Link::blackhole(Blackhole::Both))?;
            let p = Arc::clone(&p_hook);
            std::thread::spawn(move || {
                std::thread::sleep(hold);
                p.heal_all();
            });
        }
        Ok(Step::Continue)
    };
    let rt = (30_000 / scale).to_string();
    let dt = (120_000 / scale).to_string();
    let props = [
        ("request.timeout.ms", rt.as_str()),
        ("delivery.timeout.ms", dt.as_str()),
    ];
    let mut report = produce_and_verify_with(
        NAME,
        factory,
        &proxy.bootstrap(),
        &bootstrap,
        spec,
        &props,
        hook,
        || Ok(()),
    )?;
    let stats = proxy.stats();
    report.faults = 2;
    report.notes.push(format!(
        "two {hold:?} blackholes (request.timeout.ms {rt}, delivery.timeout.ms {dt}); proxy: {}",
        proxy_line(&stats)
    ));
    Ok(report)
}

/// Sets `request.timeout.ms` and `delivery.timeout.ms` in `props`.
pub(crate) fn set_timeouts(
    props: &mut Vec<(String, String)>,
    request: std::time::Duration,
    delivery: std::time::Duration,
) {
    crate::scenarios::set_prop(
        props,
        "request.timeout.ms",
        &request.as_millis().to_string(),
    );
    crate::scenarios::set_prop(
        props,
        "delivery.timeout.ms",
        &delivery.as_millis().to_string(),
    );
}

#[cfg(test)]
mod tests {
    use super::txn::{java_hash_code, txn_state_partition};
    use super::*;

    #[test]
    fn parses_describe_output() {
        let out = "Topic: t\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: \n\
                   \tTopic: t\tPartition: 0\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: \n\
                   \tTopic: t\tPartition: 1\tLeader: none\tReplicas: 3,1,2\tIsr: 3\n";
        assert_eq!(parse_leaders(out), BTreeMap::from([(0, 2)]));
    }

    #[test]
    fn parses_consumer_output() {
        let logs = parse_consumed("1\t0\t1:0\t1:0.\n0\t1\t6\t6\tx\n0\t0\t0:0\t0:0.\n").unwrap();
        assert_eq!(logs[&0][0], LogRecord::of(0, 0, 0, 4));
        assert_eq!(&logs[&0][1].value[..], b"6\tx");
        assert_eq!(logs[&1].len(), 1);
        assert!(parse_consumed("garbage\n").is_err());
    }

    #[test]
    fn java_string_hash_code() {
        // Values from Java's String.hashCode.
        assert_eq!(java_hash_code(""), 0);
        assert_eq!(java_hash_code("a"), 97);
        assert_eq!(java_hash_code("hello"), 99_162_322);
        assert_eq!(java_hash_code("polygenelubricants"), i32::MIN);
        assert_eq!(txn_state_partition("polygenelubricants", 50), 0);
        assert_eq!(txn_state_partition("hello", 50), 99_162_322 % 50);
    }

    /// A read bounded by the end offsets is kept only when it is the whole log.
    #[test]
    fn a_bounded_read_is_kept_only_when_it_reaches_every_end_once() {
        let read = |offsets: &[(i32, &[i64])]| -> BTreeMap<i32, Vec<LogRecord>> {
            offsets
                .iter()
                .map(|&(p, os)| {
                    let records = os
                        .iter()
                        .map(|&offset| LogRecord {
                            offset,
                            key: Bytes::new(),
                            value: Bytes::new(),
                            producer_id: -1,
                        })
                        .collect();
                    (p, records)
                })
                .collect()
        };
        let ends = BTreeMap::from([(0, 3), (1, 2), (2, 0)]);
        assert!(reads_to_the_end(
            &read(&[(0, &[0, 1, 2]), (1, &[0, 1])]),
            &ends
        ));
        // A partition short of its end: the consumer stopped on another's records.
        assert!(!reads_to_the_end(
            &read(&[(0, &[0, 1]), (1, &[0, 1])]),
            &ends
        ));
        assert!(!reads_to_the_end(&read(&[(0, &[0, 1, 2])]), &ends));
        // The right count, but one offset twice and one missing.
        assert!(!reads_to_the_end(
            &read(&[(0, &[0, 1, 1]), (1, &[0, 1])]),
            &ends
        ));
        // Records of a partition GetOffsetShell did not list.
        assert!(!reads_to_the_end(
            &read(&[(0, &[0, 1, 2]), (1, &[0, 1]), (3, &[0])]),
            &ends
        ));
    }

    #[test]
    fn finds_the_script() {
        assert!(kafka_sh().exists(), "{}", kafka_sh().display());
    }
}
