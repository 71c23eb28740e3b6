//! Produce N records to an existing topic with the Tokio producer, then print the summary
//! line the blocking example prints too.
//!
//! ```text
//! cargo run --release -p kacrab-tokio --example tokio_produce -- \
//!     --bootstrap HOST:PORT --topic T --partitions P --records N --record-size B \
//!     [--linger-ms L] [--batch-size S] [--threads T] \
//!     [--property key=value]...
//! ```
//!
//! The flags, the load and the summary line are the shared ones of
//! `examples/support/produce_cli.rs`. Sends are pipelined: the sending loop never waits
//! for an acknowledgement, only for the producer to take each record in (`send`'s first
//! stage, which waits while `buffer.memory` is full: the producer bounds its memory, the
//! example has no limit of its own). One collector task per partition awaits that partition's outcomes in send
//! order (the order they arrive in) and records each record's send-to-acknowledgement
//! latency. `--threads 1` (the default) runs everything on a current-thread runtime; more
//! threads use a multi-thread runtime.
//!
//! Built with `--features tracing`, the session's logs go to stderr, filtered by
//! `RUST_LOG` (`RUST_LOG=kacrab_driver=debug`): a run that stalls then shows what the
//! session waited for (metadata, a connection, a coordinator).

#[path = "../../../examples/support/produce_cli.rs"]
mod produce_cli;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kacrab_tokio::{DeliveryFuture, Producer, ProducerRecord, Topic};
use produce_cli::Args;
use tokio::sync::mpsc;

#[derive(Default)]
struct Tally {
    acked: AtomicU64,
    failed: AtomicU64,
    /// Failed records that may be in the log anyway (`ProduceError::possibly_written`).
    possibly_written: AtomicU64,
}

fn main() -> ExitCode {
    #[cfg(feature = "tracing")]
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = match Args::from_env() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("produce: {e}");
            }
            eprintln!("{}", produce_cli::USAGE);
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
    let producer =
        match Producer::from_properties(&args.producer_properties("kacrab-tokio-produce")) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("produce: {e}");
                return ExitCode::from(2);
            }
        };
    let tally = Arc::new(Tally::default());

    // One collector per partition: a partition's outcomes arrive in send order.
    let per_partition = usize::try_from(args.records / args.partitions as u64 + 1).unwrap_or(0);
    let mut senders = Vec::new();
    let mut collectors = Vec::new();
    for _ in 0..args.partitions {
        // Holds the futures of records the producer took in: bounded by `buffer.memory`.
        let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, u64, DeliveryFuture)>();
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
                        if e.possibly_written() {
                            tally.possibly_written.fetch_add(1, Ordering::Relaxed);
                        }
                        first_error.get_or_insert_with(|| format!("record {i}: {e}"));
                        tally.failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            (latencies, first_error)
        }));
    }

    let start = Instant::now();
    let progress = {
        let tally = Arc::clone(&tally);
        let records = args.records;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            let mut last = None;
            loop {
                tick.tick().await;
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

    let topic = Topic::new(&args.topic);
    let mut first_refusal = None;
    for i in 0..args.records {
        if let Some(after) = args.send_after(i) {
            tokio::time::sleep_until((start + after).into()).await;
        }
        let partition = args.partition(i);
        let record =
            ProducerRecord::new(topic.clone(), partition, args.value(i)).with_key(Args::key(i));
        let sent_at = Instant::now();
        match producer.send(record).await {
            Ok(delivery) => {
                let _ = senders[partition as usize].send((sent_at, i, delivery));
            }
            Err(e) => {
                first_refusal.get_or_insert_with(|| format!("record {i}: {e}"));
                tally.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    drop(senders);
    eprintln!(
        "produce: all {} records sent after {} ms, waiting for outcomes",
        args.records,
        start.elapsed().as_millis()
    );
    let mut latencies = Vec::with_capacity(usize::try_from(args.records).unwrap_or(0));
    // An accepted record's failure says why the producer gave up (say, the broker and
    // the cause of a failed connection); a refused send after that only says the
    // producer had stopped, so it is reported second.
    let mut first_error = None;
    for c in collectors {
        if let Ok((l, e)) = c.await {
            latencies.extend(l);
            first_error = first_error.or(e);
        }
    }
    let elapsed = start.elapsed();
    // Every record has its outcome: the snapshot covers the whole run.
    let stats = if args.stats {
        producer.metrics().await
    } else {
        None
    };
    producer.close().await;
    progress.abort();
    if let Some(stats) = stats {
        print!("{stats}");
    }

    let acked = tally.acked.load(Ordering::Relaxed);
    let failed = tally.failed.load(Ordering::Relaxed);
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
