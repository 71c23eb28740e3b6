//! librdkafka's producer (through the rdkafka crate) with the command line, the load and
//! the summary line of kacrab's produce examples, so `scripts/bench_vs_peers.sh` reads
//! every client the same way:
//!
//! ```text
//! rdkafka-peer --bootstrap HOST:PORT --topic T --partitions P --records N --record-size B
//!     [--throughput R] [--property key=value]... [--config FILE]
//! ```
//!
//! Record `i`: key `i`, value `i` padded with `.` to `B` bytes, partition `i mod P`.
//! Idempotence on and acks=all (librdkafka's default for `enable.idempotence` is off), every
//! other setting librdkafka's default unless a `--property` says otherwise. A
//! `ThreadedProducer` serves the delivery reports on its own thread; latency is from the
//! send call (before any wait for queue room) to the delivery report. The last stdout line
//! is `produce: records=N acked=A failed=F elapsed_ms=E records_per_s=R p50_ms=X p99_ms=Y`.

#[path = "../../../../examples/support/produce_cli.rs"]
mod produce_cli;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use produce_cli::Args;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

/// Outcomes, filled by the delivery reports.
struct Tally {
    start: Instant,
    acked: AtomicU64,
    failed: AtomicU64,
    latencies_us: Mutex<Vec<u32>>,
    first_error: Mutex<Option<String>>,
}

impl ClientContext for Tally {}

impl ProducerContext for Tally {
    /// When the record was sent: nanoseconds since `start`.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_ns: usize) {
        match result {
            Ok(_) => {
                let now = self.start.elapsed().as_nanos() as u64;
                let us = now.saturating_sub(sent_ns as u64) / 1000;
                self.latencies_us
                    .lock()
                    .unwrap()
                    .push(u32::try_from(us).unwrap_or(u32::MAX));
                self.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                self.first_error
                    .lock()
                    .unwrap()
                    .get_or_insert_with(|| e.to_string());
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn main() {
    let args = match Args::from_env() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}");
            }
            eprintln!("{}", produce_cli::USAGE);
            std::process::exit(2);
        }
    };
    let mut config = ClientConfig::new();
    config.set("enable.idempotence", "true").set("acks", "all");
    for (k, v) in args.producer_properties("rdkafka-peer") {
        config.set(k, v);
    }
    let (_, version) = rdkafka::util::get_rdkafka_version();
    eprintln!("librdkafka {version}");
    let tally = Tally {
        start: Instant::now(),
        acked: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        latencies_us: Mutex::new(Vec::with_capacity(
            usize::try_from(args.records).unwrap_or(0),
        )),
        first_error: Mutex::new(None),
    };
    let producer: ThreadedProducer<Tally> = config
        .create_with_context(tally)
        .unwrap_or_else(|e| panic!("creating the producer: {e}"));
    let tally = producer.context();

    let start = Instant::now();
    let mut last_progress = (Duration::ZERO, 0u64);
    for i in 0..args.records {
        if let Some(after) = args.send_after(i) {
            std::thread::sleep((start + after).saturating_duration_since(Instant::now()));
        }
        let key = Args::key(i);
        let value = args.value(i);
        let sent_ns = tally.start.elapsed().as_nanos() as usize;
        let mut record = BaseRecord::with_opaque_to(&args.topic, sent_ns)
            .key(key.as_bytes())
            .payload(&value)
            .partition(args.partition(i));
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    // As librdkafka's own rdkafka_performance: serve reports, then retry.
                    producer.poll(Duration::from_millis(10));
                    record = back;
                }
                Err((e, _)) => {
                    eprintln!("send {i}: {e}");
                    tally.failed.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
        let elapsed = start.elapsed();
        if elapsed >= last_progress.0 + Duration::from_secs(1) {
            let acked = tally.acked.load(Ordering::Relaxed);
            eprintln!(
                "{}",
                produce_cli::progress(
                    elapsed,
                    args.records,
                    acked,
                    tally.failed.load(Ordering::Relaxed),
                    Some(last_progress)
                )
            );
            last_progress = (elapsed, acked);
        }
    }
    if let Err(e) = producer.flush(Duration::from_secs(300)) {
        eprintln!("flush: {e}");
    }
    let elapsed = start.elapsed();
    let acked = tally.acked.load(Ordering::Relaxed);
    let failed = tally.failed.load(Ordering::Relaxed);
    if let Some(e) = tally.first_error.lock().unwrap().as_ref() {
        eprintln!("first failure: {e}");
    }
    let mut latencies = std::mem::take(&mut *tally.latencies_us.lock().unwrap());
    println!(
        "{}",
        produce_cli::summary(args.records, acked, failed, elapsed, &mut latencies)
    );
    if acked != args.records {
        std::process::exit(1);
    }
}
