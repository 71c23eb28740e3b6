//! The command line and the summary line both `produce` examples share (kacrab-tokio's and
//! kacrab-blocking's), so their runs compare flag for flag and line for line. Included by
//! each with `#[path = "../../../examples/support/produce_cli.rs"] mod produce_cli;`.
//!
//! ```text
//! produce --bootstrap HOST:PORT --topic T --partitions P --records N --record-size B
//!     [--linger-ms L] [--batch-size S] [--threads T]
//!     [--compression none|gzip|snappy|lz4|zstd] [--payload dots|json]
//!     [--config producer.properties] [--property key=value]... [--throughput R]
//!     [--stats]
//! ```
//!
//! Record `i` has key `i` in decimal ASCII and a value of `B` bytes starting with `i` in
//! decimal ASCII (padded with `.`), and goes to partition `i mod P`, so reading the topic
//! back checks exactly-once and order. The topic must exist: nothing is created.
//! `--linger-ms` and `--batch-size` set `linger.ms` and `batch.size`; `--property` sets any
//! Kafka key (repeatable; a later one wins, also over the flags); `--config FILE` reads
//! keys from a Java properties file (`key=value` lines, `#`/`!` comments; the file a
//! Java client takes, e.g. `security.protocol`, `sasl.jaas.config`, `ssl.*`), in place
//! of the flag: what follows it overrides it. The producer bounds the records without
//! an outcome by itself: a send waits while `buffer.memory` (set it with
//! `--property buffer.memory=B`) is full. `--threads` (default 1) is the Tokio
//! runtime's worker threads, or the blocking example's sending
//! threads (each sends the records of its own partitions, in order). `--size` is an alias
//! of `--record-size`. `--compression C` sets `compression.type`. `--payload json` makes
//! each value a JSON log line instead (deterministic in `i`: sequence number, timestamp,
//! level, service, request id and a message drawn from a fixed vocabulary, padded or cut
//! to `B` bytes), which compresses like real logs; the default `dots` compresses far
//! better than anything real. `--throughput R` sends at most R records per second
//! (as Kafka's ProducerPerformance `--throughput`; record `i` goes no earlier than
//! `i / R` seconds after the start), so a run lasts as long as a test needs, e.g. past
//! a SASL session lifetime.
//!
//! Progress goes to stderr every second (acknowledged and failed records, and the rates
//! since the previous line and since the start); with `--stats` the producer's metrics
//! snapshot (Kafka's names, one `group:name{tags} value` line each) goes to stdout before
//! the summary. The last stdout line is
//! `produce: records=N acked=A failed=F elapsed_ms=E records_per_s=R p50_ms=X p99_ms=Y`
//! (elapsed from the first send until every record has an outcome; send-to-acknowledgement
//! latency percentiles of the acknowledged records).

#![allow(dead_code)]

use std::io::Write;
use std::time::Duration;

/// The usage line.
pub const USAGE: &str = "usage: produce --bootstrap HOST:PORT --topic T --partitions P \
    --records N --record-size B [--linger-ms L] [--batch-size S] [--threads T] \
    [--compression C] [--payload dots|json] [--config FILE] [--property key=value]... \
    [--throughput R] [--stats]";

/// What each record's value looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// `i` in decimal, padded with `.`.
    Dots,
    /// A JSON log line, deterministic in `i`.
    Json,
}

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// `--bootstrap`: `bootstrap.servers`.
    pub bootstrap: String,
    /// `--topic`.
    pub topic: String,
    /// `--partitions`: at least 1.
    pub partitions: i32,
    /// `--records`.
    pub records: u64,
    /// `--record-size`: bytes per value.
    pub record_size: usize,
    /// `--threads`: at least 1.
    pub threads: usize,
    /// Kafka properties from `--linger-ms`, `--batch-size`, `--compression` and
    /// `--property`, in order.
    pub properties: Vec<(String, String)>,
    /// `--stats`: print the metrics snapshot at the end.
    pub stats: bool,
    /// `--payload`.
    pub payload: Payload,
    /// `--throughput`: records per second at most; `None` sends as fast as the
    /// producer takes them.
    pub throughput: Option<u64>,
}

impl Args {
    /// The process's command line; on `Err`, the message to print before the usage
    /// (empty for `--help`).
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::args().skip(1))
    }

    /// Parses flags (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut bootstrap = None;
        let mut topic = None;
        let mut partitions = None;
        let mut records = None;
        let mut record_size = None;
        let mut threads = 1;
        let mut properties = Vec::new();
        let mut stats = false;
        let mut payload = Payload::Dots;
        let mut throughput = None;
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            if flag == "-h" || flag == "--help" {
                return Err(String::new());
            }
            if flag == "--stats" {
                stats = true;
                continue;
            }
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--bootstrap" => bootstrap = Some(value),
                "--topic" => topic = Some(value),
                "--partitions" => partitions = Some(number(&flag, &value)?),
                "--records" => records = Some(number(&flag, &value)?),
                "--record-size" | "--size" => record_size = Some(number(&flag, &value)?),
                "--max-outstanding" => {
                    return Err(format!(
                        "--max-outstanding {value}: removed; the producer bounds its memory \
                         with buffer.memory (--property buffer.memory=BYTES)"
                    ))
                }
                "--threads" => threads = number(&flag, &value)?,
                "--throughput" => {
                    // Kafka's tool takes -1 for "unlimited": any rate below 1 is.
                    let rate: i64 = number(&flag, &value)?;
                    throughput = u64::try_from(rate).ok().filter(|&r| r > 0);
                }
                "--linger-ms" => properties.push(("linger.ms".to_owned(), value)),
                "--batch-size" => properties.push(("batch.size".to_owned(), value)),
                "--compression" => properties.push(("compression.type".to_owned(), value)),
                "--payload" => {
                    payload = match value.as_str() {
                        "dots" => Payload::Dots,
                        "json" => Payload::Json,
                        _ => return Err(format!("--payload {value}: expected dots or json")),
                    }
                }
                "--property" => {
                    let (k, v) = value
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| format!("--property {value}: expected key=value"))?;
                    properties.push((k.to_owned(), v.to_owned()));
                }
                "--config" => properties.extend(read_properties_file(&value)?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        let missing = |name: &str| format!("{name} is required");
        let args = Self {
            bootstrap: bootstrap.ok_or_else(|| missing("--bootstrap"))?,
            topic: topic.ok_or_else(|| missing("--topic"))?,
            partitions: partitions.ok_or_else(|| missing("--partitions"))?,
            records: records.ok_or_else(|| missing("--records"))?,
            record_size: record_size.ok_or_else(|| missing("--record-size"))?,
            threads,
            properties,
            stats,
            throughput,
            payload,
        };
        if args.partitions < 1 {
            return Err("--partitions must be at least 1".into());
        }
        if args.threads < 1 {
            return Err("--threads must be at least 1".into());
        }
        Ok(args)
    }

    /// The producer's properties: `bootstrap.servers`, `client.id`, then the flags'.
    pub fn producer_properties<'a>(&'a self, client_id: &'a str) -> Vec<(&'a str, &'a str)> {
        let mut props = vec![
            ("bootstrap.servers", self.bootstrap.as_str()),
            ("client.id", client_id),
        ];
        props.extend(
            self.properties
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        props
    }

    /// How long after the start record `i` may be sent (`--throughput`), if paced.
    pub fn send_after(&self, i: u64) -> Option<Duration> {
        let rate = self.throughput?;
        Some(Duration::from_nanos(
            u64::try_from(u128::from(i) * 1_000_000_000 / u128::from(rate)).unwrap_or(u64::MAX),
        ))
    }

    /// Record `i`'s partition.
    pub fn partition(&self, i: u64) -> i32 {
        (i % self.partitions as u64) as i32
    }

    /// Record `i`'s key.
    pub fn key(i: u64) -> String {
        i.to_string()
    }

    /// Record `i`'s value: `record_size` bytes starting with `i` in decimal ASCII, padded
    /// with `.`.
    pub fn value(&self, i: u64) -> Vec<u8> {
        if self.payload == Payload::Json {
            return json_log_line(i, self.record_size);
        }
        // One allocation of the final size: growing `i.to_string()` to `record_size` was
        // a `realloc` per record, which cost the most of all the example's own work once
        // hundreds of thousands of records were in flight (a fragmented heap, BENCHMARKS.md
        // "Why kacrab-tokio was bimodal").
        let mut v = Vec::with_capacity(self.record_size.max(20));
        let _ = write!(v, "{i}");
        if v.len() < self.record_size {
            v.resize(self.record_size, b'.');
        }
        v
    }
}

/// Record `i`'s JSON log line, `size` bytes: the fields vary with `i` through a fixed
/// 64-bit mix (no randomness, so every run and every client sends the same bytes).
pub fn json_log_line(i: u64, size: usize) -> Vec<u8> {
    const LEVELS: [&str; 4] = ["INFO", "INFO", "WARN", "DEBUG"];
    const SERVICES: [&str; 5] = ["checkout", "payments", "search", "auth", "inventory"];
    const WORDS: [&str; 16] = [
        "request",
        "completed",
        "user",
        "cart",
        "timeout",
        "retrying",
        "upstream",
        "cache",
        "miss",
        "hit",
        "order",
        "created",
        "latency",
        "exceeded",
        "session",
        "refreshed",
    ];
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = || {
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 29;
        x
    };
    let mut msg = String::new();
    while msg.len() < size {
        if !msg.is_empty() {
            msg.push(' ');
        }
        msg.push_str(WORDS[(next() % 16) as usize]);
    }
    let line = format!(
        r#"{{"seq":{i},"ts":"2026-12-01T12:{:02}:{:02}.{:03}Z","level":"{}","service":"{}","host":"node-{:02}","request_id":"{:016x}","duration_ms":{},"msg":"{msg}"}}"#,
        (i / 60_000) % 60,
        (i / 1000) % 60,
        i % 1000,
        LEVELS[(next() % 4) as usize],
        SERVICES[(next() % 5) as usize],
        next() % 12,
        next(),
        next() % 2_000,
    );
    let mut v = line.into_bytes();
    v.truncate(size);
    v
}

/// A progress line for stderr: the counts, the overall rate, and the rate since the
/// previous line (`last`: its elapsed time and acknowledged count; `None` for the first).
pub fn progress(
    elapsed: Duration,
    records: u64,
    acked: u64,
    failed: u64,
    last: Option<(Duration, u64)>,
) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let (since, before) = last.unwrap_or((Duration::ZERO, 0));
    let window = elapsed.saturating_sub(since).as_secs_f64().max(1e-9);
    format!(
        "produce: {:.0}s acked={acked}/{records} failed={failed} ({:.0} records/s now, {:.0} records/s overall)",
        secs,
        acked.saturating_sub(before) as f64 / window,
        acked as f64 / secs
    )
}

/// The summary line; `latencies_us` are the acknowledged records' send-to-ack latencies
/// in microseconds, in any order.
pub fn summary(
    records: u64,
    acked: u64,
    failed: u64,
    elapsed: Duration,
    latencies_us: &mut [u32],
) -> String {
    latencies_us.sort_unstable();
    let secs = elapsed.as_secs_f64().max(1e-9);
    format!(
        "produce: records={records} acked={acked} failed={failed} elapsed_ms={} \
         records_per_s={:.0} p50_ms={:.1} p99_ms={:.1}",
        elapsed.as_millis(),
        records as f64 / secs,
        percentile_ms(latencies_us, 50.0),
        percentile_ms(latencies_us, 99.0),
    )
}

/// The `p`th percentile of `sorted` microseconds, in milliseconds (nearest rank).
fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

/// The `key=value` pairs of a Java properties file, in order (see
/// [`parse_properties`]).
pub fn read_properties_file(path: &str) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config {path}: {e}"))?;
    parse_properties(&text).map_err(|e| format!("--config {path}: {e}"))
}

/// Parses the subset of `java.util.Properties`' format a client configuration uses:
/// one `key=value` (or `key: value`) per line, blank lines and lines starting with `#`
/// or `!` skipped, whitespace around the key and before the value dropped, a trailing
/// `\` continuing the value on the next line (its leading whitespace dropped). Other
/// escapes are kept as written.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let mut logical = line.to_owned();
        while logical.ends_with('\\') {
            logical.pop();
            match lines.next() {
                Some((_, more)) => logical.push_str(more.trim_start()),
                None => break,
            }
        }
        let sep = logical
            .find(['=', ':'])
            .ok_or_else(|| format!("line {}: expected key=value", n + 1))?;
        let key = logical[..sep].trim();
        if key.is_empty() {
            return Err(format!("line {}: empty key", n + 1));
        }
        out.push((key.to_owned(), logical[sep + 1..].trim_start().to_owned()));
    }
    Ok(out)
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: not a number: {value}"))
}
