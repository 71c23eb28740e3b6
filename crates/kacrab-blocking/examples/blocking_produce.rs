//! Produce N records to an existing topic with the blocking producer, then print the
//! summary line the Tokio example prints too.
//!
//! ```text
//! cargo run --release -p kacrab-blocking --example blocking_produce -- \
//!     --bootstrap HOST:PORT --topic T --partitions P --records N --record-size B \
//!     [--linger-ms L] [--batch-size S] [--threads T] \
//!     [--property key=value]...
//! ```
//!
//! The flags, the load and the summary line are the shared ones of
//! `examples/support/produce_cli.rs`. Sends pipeline: each record's outcome arrives
//! through a callback (on the producer's I/O thread), and a sending thread waits only
//! while the producer's `buffer.memory` is full (its `send` blocks, as Java's does). `--threads T` starts T
//! sending threads; thread t sends, in order, the records of the partitions p with
//! p mod T = t, so each partition's records are still sent in order.

#[path = "../../../examples/support/produce_cli.rs"]
mod produce_cli;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kacrab_blocking::{ProduceError, Producer, ProducerRecord, RecordMetadata, Topic};
use produce_cli::Args;

/// What the callbacks report.
#[derive(Default)]
struct Tally {
    acked: AtomicU64,
    failed: AtomicU64,
    /// Failed records that may be in the log anyway (`ProduceError::possibly_written`).
    possibly_written: AtomicU64,
    /// Send-to-ack latencies of acknowledged records, in microseconds.
    latencies: Mutex<Vec<u32>>,
    /// The first accepted record's failure: why the producer gave up.
    first_error: Mutex<Option<String>>,
    /// The first refused send (after the producer stopped, it only says so).
    first_refusal: Mutex<Option<String>>,
}

impl Tally {
    fn outcome(&self, i: u64, sent_at: Instant, outcome: Result<RecordMetadata, ProduceError>) {
        match outcome {
            Ok(_) => {
                let us = u32::try_from(sent_at.elapsed().as_micros()).unwrap_or(u32::MAX);
                self.latencies.lock().unwrap().push(us);
                self.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                if e.possibly_written() {
                    self.possibly_written.fetch_add(1, Ordering::Relaxed);
                }
                self.first_error
                    .lock()
                    .unwrap()
                    .get_or_insert_with(|| format!("record {i}: {e}"));
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn refused(&self, error: String) {
        self.first_refusal.lock().unwrap().get_or_insert(error);
        self.failed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends thread `t`'s records: those of the partitions p with p mod `threads` = t.
fn send_loop(producer: &Producer, args: &Args, t: usize, tally: &Arc<Tally>, start: Instant) {
    let topic = Topic::new(&args.topic);
    for i in 0..args.records {
        let partition = args.partition(i);
        if partition as usize % args.threads != t {
            continue;
        }
        if let Some(after) = args.send_after(i) {
            thread::sleep((start + after).saturating_duration_since(Instant::now()));
        }
        let record =
            ProducerRecord::new(topic.clone(), partition, args.value(i)).with_key(Args::key(i));
        let sent_at = Instant::now();
        let tl = Arc::clone(tally);
        let callback = move |outcome| tl.outcome(i, sent_at, outcome);
        if let Err(e) = producer.send_with_callback(record, callback) {
            tally.refused(format!("record {i}: {e}"));
        }
    }
}

fn main() -> ExitCode {
    let args = match Args::from_env() {
        Ok(a) => Arc::new(a),
        Err(e) => {
            if !e.is_empty() {
                eprintln!("produce: {e}");
            }
            eprintln!("{}", produce_cli::USAGE);
            return ExitCode::from(2);
        }
    };
    let producer =
        match Producer::from_properties(&args.producer_properties("kacrab-blocking-produce")) {
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

    let start = Instant::now();
    let senders: Vec<_> = (0..args.threads)
        .map(|t| {
            let (producer, args, tally) = (producer.clone(), Arc::clone(&args), Arc::clone(&tally));
            thread::spawn(move || send_loop(&producer, &args, t, &tally, start))
        })
        .collect();
    // Progress every second until `stop` is dropped.
    let (stop, stopped) = mpsc::channel::<()>();
    let progress = {
        let (tally, records) = (Arc::clone(&tally), args.records);
        thread::spawn(move || {
            let mut last = None;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_secs(1))
            {
                let acked = tally.acked.load(Ordering::Relaxed);
                let failed = tally.failed.load(Ordering::Relaxed);
                let elapsed = start.elapsed();
                eprintln!(
                    "{}",
                    produce_cli::progress(elapsed, records, acked, failed, last)
                );
                last = Some((elapsed, acked));
            }
        })
    };
    for s in senders {
        let _ = s.join();
    }
    if let Err(e) = producer.flush() {
        eprintln!("produce: flush: {e}");
    }
    let elapsed = start.elapsed();
    drop(stop);
    let _ = progress.join();
    // Every record has its outcome: the snapshot covers the whole run.
    let stats = if args.stats { producer.metrics() } else { None };
    if let Err(e) = producer.close() {
        eprintln!("produce: close: {e}");
    }
    eprintln!("produce: {:?}", producer.io_stats());
    if let Some(stats) = stats {
        print!("{stats}");
    }

    let acked = tally.acked.load(Ordering::Relaxed);
    let failed = tally.failed.load(Ordering::Relaxed);
    let (first_error, first_refusal) = (
        tally.first_error.lock().unwrap().clone(),
        tally.first_refusal.lock().unwrap().clone(),
    );
    if let Some(e) = first_refusal.as_ref().filter(|_| first_error.is_some()) {
        eprintln!("produce: first refused send: {e}");
    }
    if let Some(e) = first_error.or(first_refusal) {
        eprintln!("produce: first failure: {e}");
        eprintln!(
            "produce: failed records possibly written: {}",
            tally.possibly_written.load(Ordering::Relaxed)
        );
    }
    let mut latencies = std::mem::take(&mut *tally.latencies.lock().unwrap());
    println!(
        "{}",
        produce_cli::summary(args.records, acked, failed, elapsed, &mut latencies)
    );
    if acked == args.records {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
