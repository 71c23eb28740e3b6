//! Produce N records to an existing topic with the blocking producer, then print one
//! summary line anyone can compare with the Tokio adapter's.
//!
//! ```text
//! cargo run --release -p kacrab-blocking --example produce -- \
//!     --bootstrap HOST:PORT --topic T --partitions P --records N --size B
//! ```
//!
//! Record `i` has key `i` in decimal ASCII and a value of `B` bytes starting with `i` in
//! decimal ASCII (padded with `.`), and goes to partition `i mod P`, so reading the topic
//! back checks exactly-once and order. The topic must exist: nothing is created. Progress
//! goes to stderr; the last stdout line is
//! `produce: records=N acked=A failed=F elapsed_ms=E records_per_s=R p50_ms=X p99_ms=Y`
//! (send-to-acknowledgement latency percentiles). Sends pipeline: each record's outcome
//! arrives through a callback, not a wait per record.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kacrab_blocking::{Producer, ProducerRecord, Topic};

struct Args {
    bootstrap: String,
    topic: String,
    partitions: i32,
    records: u64,
    size: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut bootstrap = None;
    let mut topic = None;
    let mut partitions = None;
    let mut records = None;
    let mut size = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap" => bootstrap = Some(value()?),
            "--topic" => topic = Some(value()?),
            "--partitions" => {
                partitions = Some(value()?.parse().map_err(|e| format!("--partitions: {e}"))?)
            }
            "--records" => records = Some(value()?.parse().map_err(|e| format!("--records: {e}"))?),
            "--size" => size = Some(value()?.parse().map_err(|e| format!("--size: {e}"))?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let args = Args {
        bootstrap: bootstrap.ok_or("--bootstrap is required")?,
        topic: topic.ok_or("--topic is required")?,
        partitions: partitions.ok_or("--partitions is required")?,
        records: records.ok_or("--records is required")?,
        size: size.ok_or("--size is required")?,
    };
    if args.partitions < 1 {
        return Err("--partitions must be at least 1".into());
    }
    Ok(args)
}

/// `size` bytes starting with `i` in decimal ASCII, padded with `.`.
fn value(i: u64, size: usize) -> Vec<u8> {
    let mut v = i.to_string().into_bytes();
    if v.len() < size {
        v.resize(size, b'.');
    }
    v
}

#[derive(Default)]
struct Tally {
    acked: AtomicU64,
    failed: AtomicU64,
    /// Send-to-ack latencies of acknowledged records, in microseconds.
    latencies: Mutex<Vec<u32>>,
    first_error: Mutex<Option<String>>,
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("produce: {e}");
            eprintln!("usage: produce --bootstrap HOST:PORT --topic T --partitions P --records N --size B");
            return ExitCode::from(2);
        }
    };
    let producer = match Producer::from_properties(&[
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("client.id", "kacrab-blocking-produce"),
    ]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("produce: {e}");
            return ExitCode::from(2);
        }
    };

    let tally = Arc::new(Tally::default());
    tally
        .latencies
        .lock()
        .unwrap()
        .reserve(usize::try_from(args.records).unwrap_or(0));
    let topic = Topic::new(&args.topic);
    let start = Instant::now();
    let mut last_report = start;
    let mut refused = 0u64;
    for i in 0..args.records {
        let partition = (i % args.partitions as u64) as i32;
        let record = ProducerRecord::new(topic.clone(), partition, value(i, args.size))
            .with_key(i.to_string());
        let sent_at = Instant::now();
        let t = Arc::clone(&tally);
        let callback = move |outcome: Result<_, kacrab_blocking::ProduceError>| match outcome {
            Ok(_) => {
                let us = u32::try_from(sent_at.elapsed().as_micros()).unwrap_or(u32::MAX);
                t.latencies.lock().unwrap().push(us);
                t.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                t.first_error
                    .lock()
                    .unwrap()
                    .get_or_insert_with(|| format!("record {i}: {e}"));
                t.failed.fetch_add(1, Ordering::Relaxed);
            }
        };
        if let Err(e) = producer.send_with_callback(record, callback) {
            tally
                .first_error
                .lock()
                .unwrap()
                .get_or_insert_with(|| format!("record {i}: {e}"));
            refused += 1;
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            last_report = Instant::now();
            eprintln!(
                "produce: sent={} acked={} failed={} elapsed_ms={}",
                i + 1,
                tally.acked.load(Ordering::Relaxed),
                tally.failed.load(Ordering::Relaxed) + refused,
                start.elapsed().as_millis()
            );
        }
    }
    eprintln!(
        "produce: all {} records sent, waiting for acknowledgements",
        args.records
    );
    if let Err(e) = producer.close() {
        eprintln!("produce: close: {e}");
    }
    let elapsed = start.elapsed();
    eprintln!("produce: {:?}", producer.io_stats());

    let acked = tally.acked.load(Ordering::Relaxed);
    let failed = tally.failed.load(Ordering::Relaxed) + refused;
    if let Some(e) = tally.first_error.lock().unwrap().as_ref() {
        eprintln!("produce: first failure: {e}");
    }
    let mut latencies = std::mem::take(&mut *tally.latencies.lock().unwrap());
    latencies.sort_unstable();
    let secs = elapsed.as_secs_f64().max(1e-9);
    println!(
        "produce: records={} acked={} failed={} elapsed_ms={} records_per_s={:.0} p50_ms={:.1} p99_ms={:.1}",
        args.records,
        acked,
        failed,
        elapsed.as_millis(),
        args.records as f64 / secs,
        percentile_ms(&latencies, 50.0),
        percentile_ms(&latencies, 99.0),
    );
    if acked == args.records {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
