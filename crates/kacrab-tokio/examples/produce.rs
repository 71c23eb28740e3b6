//! Produce N records to an existing topic with the Tokio producer, then print one summary
//! line.
//!
//! ```text
//! cargo run --release -p kacrab-tokio --example produce -- \
//!     --bootstrap HOST:PORT --topic T --partitions P --records N --size B \
//!     [--linger-ms L] [--batch-size S] [--max-outstanding M] [--threads T] \
//!     [--property key=value]...
//! ```
//!
//! Record `i` has key `i` in decimal ASCII and a value of `B` bytes starting with `i` in
//! decimal ASCII (padded with `.`), and goes to partition `i mod P`, so reading the topic
//! back checks exactly-once and order. The topic must exist: nothing is created.
//!
//! Sends are pipelined: the sending loop never waits for an acknowledgement, only for a
//! permit when `--max-outstanding` records (default 8192) are without an outcome. One
//! collector task per partition awaits that partition's outcomes in send order (the
//! order they arrive in) and records each record's send-to-acknowledgement latency.
//! `--threads 1` (the default) runs everything on a current-thread runtime; more threads
//! use a multi-thread runtime.
//!
//! Progress goes to stderr every second; the last stdout line is
//! `produce: records=N acked=A failed=F elapsed_ms=E records_per_s=R p50_ms=X p99_ms=Y`.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kacrab_tokio::{DeliveryFuture, Producer, ProducerRecord, Topic};
use tokio::sync::{mpsc, Semaphore};

struct Args {
    bootstrap: String,
    topic: String,
    partitions: i32,
    records: u64,
    size: usize,
    linger_ms: Option<String>,
    batch_size: Option<String>,
    max_outstanding: Option<usize>,
    threads: usize,
    properties: Vec<(String, String)>,
}

const USAGE: &str =
    "usage: produce --bootstrap HOST:PORT --topic T --partitions P --records N --size B \
    [--linger-ms L] [--batch-size S] [--max-outstanding M] [--threads T] [--property key=value]...";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        bootstrap: String::new(),
        topic: String::new(),
        partitions: 0,
        records: 0,
        size: 0,
        linger_ms: None,
        batch_size: None,
        max_outstanding: None,
        threads: 1,
        properties: Vec::new(),
    };
    let (mut bootstrap, mut topic, mut partitions, mut records, mut size) =
        (false, false, false, false, false);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        fn num<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, String> {
            v.parse().map_err(|_| format!("{flag}: not a number: {v}"))
        }
        match flag.as_str() {
            "--bootstrap" => (a.bootstrap, bootstrap) = (value()?, true),
            "--topic" => (a.topic, topic) = (value()?, true),
            "--partitions" => (a.partitions, partitions) = (num(&flag, value()?)?, true),
            "--records" => (a.records, records) = (num(&flag, value()?)?, true),
            "--size" => (a.size, size) = (num(&flag, value()?)?, true),
            "--linger-ms" => a.linger_ms = Some(value()?),
            "--batch-size" => a.batch_size = Some(value()?),
            "--max-outstanding" => a.max_outstanding = Some(num(&flag, value()?)?),
            "--threads" => a.threads = num(&flag, value()?)?,
            "--property" => {
                let kv = value()?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| format!("--property {kv}: expected key=value"))?;
                a.properties.push((k.to_owned(), v.to_owned()));
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if !(bootstrap && topic && partitions && records && size) {
        return Err("--bootstrap, --topic, --partitions, --records and --size are required".into());
    }
    if a.partitions < 1 {
        return Err("--partitions must be at least 1".into());
    }
    Ok(a)
}

/// `size` bytes starting with `i` in decimal ASCII, padded with `.`.
fn value(i: u64, size: usize) -> Bytes {
    let mut v = i.to_string().into_bytes();
    if v.len() < size {
        v.resize(size, b'.');
    }
    Bytes::from(v)
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

#[derive(Default)]
struct Tally {
    acked: AtomicU64,
    failed: AtomicU64,
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("produce: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("produce: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The sending loop runs as a task, on the runtime's threads, like everything else.
    runtime.block_on(async { tokio::spawn(run(args)).await.unwrap_or(ExitCode::FAILURE) })
}

async fn run(args: Args) -> ExitCode {
    let mut props: Vec<(&str, &str)> = vec![
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("client.id", "kacrab-tokio-produce"),
    ];
    if let Some(l) = &args.linger_ms {
        props.push(("linger.ms", l));
    }
    if let Some(b) = &args.batch_size {
        props.push(("batch.size", b));
    }
    props.extend(
        args.properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let producer = match Producer::from_properties(&props) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("produce: {e}");
            return ExitCode::from(2);
        }
    };
    // Enough to keep every connection's pipeline full on a local broker, few enough that
    // records do not queue for long (the latency measured is send-to-ack, queueing
    // included). Throughput is at most max-outstanding / ack latency: raise it for a
    // cluster whose acks take tens of milliseconds.
    let max_outstanding = args.max_outstanding.unwrap_or(8192).max(1);
    let permits = Arc::new(Semaphore::new(max_outstanding));
    let tally = Arc::new(Tally::default());

    // One collector per partition: a partition's outcomes arrive in send order.
    let per_partition = usize::try_from(args.records / args.partitions as u64 + 1).unwrap_or(0);
    let mut senders = Vec::new();
    let mut collectors = Vec::new();
    for _ in 0..args.partitions {
        let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, u64, DeliveryFuture)>();
        let permits = Arc::clone(&permits);
        let tally = Arc::clone(&tally);
        senders.push(tx);
        collectors.push(tokio::spawn(async move {
            let mut latencies: Vec<u32> = Vec::with_capacity(per_partition);
            let mut first_error: Option<String> = None;
            while let Some((sent_at, i, delivery)) = rx.recv().await {
                match delivery.await {
                    Ok(_) => {
                        latencies
                            .push(u32::try_from(sent_at.elapsed().as_micros()).unwrap_or(u32::MAX));
                        tally.acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        first_error.get_or_insert_with(|| format!("record {i}: {e}"));
                        tally.failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                permits.add_permits(1);
            }
            (latencies, first_error)
        }));
    }

    let progress = {
        let tally = Arc::clone(&tally);
        let records = args.records;
        tokio::spawn(async move {
            let start = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                let acked = tally.acked.load(Ordering::Relaxed);
                let failed = tally.failed.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64();
                eprintln!(
                    "produce: {:.0}s acked={acked}/{records} failed={failed} ({:.0} records/s)",
                    secs,
                    acked as f64 / secs
                );
            }
        })
    };

    let topic = Topic::new(&args.topic);
    let start = Instant::now();
    for i in 0..args.records {
        match permits.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_) => break,
        }
        let partition = (i % args.partitions as u64) as i32;
        let record = ProducerRecord::new(topic.clone(), partition, value(i, args.size))
            .with_key(i.to_string());
        let sent_at = Instant::now();
        let delivery = producer.send(record);
        let _ = senders[partition as usize].send((sent_at, i, delivery));
    }
    drop(senders);
    eprintln!(
        "produce: all {} records sent after {} ms, waiting for outcomes",
        args.records,
        start.elapsed().as_millis()
    );
    let mut latencies = Vec::with_capacity(usize::try_from(args.records).unwrap_or(0));
    let mut first_error = None;
    for c in collectors {
        if let Ok((l, e)) = c.await {
            latencies.extend(l);
            first_error = first_error.or(e);
        }
    }
    let elapsed = start.elapsed();
    producer.close().await;
    progress.abort();

    let acked = tally.acked.load(Ordering::Relaxed);
    let failed = tally.failed.load(Ordering::Relaxed);
    if let Some(e) = first_error {
        eprintln!("produce: first failure: {e}");
    }
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
