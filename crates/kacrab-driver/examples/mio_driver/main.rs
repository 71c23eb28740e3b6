//! Produce N records to an existing topic with the `mio` example driver (`driver.rs`),
//! then print the same summary line as the Tokio and blocking `produce` examples.
//!
//! ```text
//! cargo run --release -p kacrab-driver --example mio_driver -- \
//!     --bootstrap HOST:PORT --topic T --partitions P --records N --size B \
//!     [--linger-ms MS] [--batch-size BYTES] [--property KEY=VALUE]... [--stats]
//! ```
//!
//! Record `i` has key `i` in decimal ASCII and a value of `B` bytes starting with `i`
//! (padded with `.`), and goes to partition `i mod P`. The last stdout line is
//! `produce: records=N acked=A failed=F elapsed_ms=E records_per_s=R p50_ms=X p99_ms=Y`.

mod driver;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use driver::{Id, MioProducer};
use kacrab_driver::{Completion, ProducerRecord, SessionConfig, Topic};

struct Args {
    topic: String,
    partitions: u64,
    records: u64,
    size: usize,
    /// Kafka properties: `--bootstrap`, `--linger-ms`, `--batch-size` and `--property`.
    properties: Vec<(String, String)>,
    /// `--stats`: print the metrics snapshot at the end.
    stats: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut properties = vec![("client.id".to_owned(), "kacrab-mio-produce".to_owned())];
    let (mut topic, mut partitions, mut records, mut size) = (None, None, None, None);
    let mut stats = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--stats" {
            stats = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        let mut set = |k: &str, v: String| properties.push((k.to_owned(), v));
        match flag.as_str() {
            "--bootstrap" => set("bootstrap.servers", value),
            "--linger-ms" => set("linger.ms", value),
            "--batch-size" => set("batch.size", value),
            "--property" => {
                let (k, v) = value.split_once('=').ok_or("--property takes KEY=VALUE")?;
                set(k, v.to_owned());
            }
            "--topic" => topic = Some(value),
            "--partitions" => partitions = Some(number(&value)?.max(1)),
            "--records" => records = Some(number(&value)?),
            "--size" => size = Some(number(&value)? as usize),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Args {
        topic: topic.ok_or("--topic is required")?,
        partitions: partitions.ok_or("--partitions is required")?,
        records: records.ok_or("--records is required")?,
        size: size.ok_or("--size is required")?,
        properties,
        stats,
    })
}

/// Acknowledged and failed counts, send-to-ack latencies (µs), the first failure.
type Tally = Mutex<(u64, u64, Vec<u64>, Option<String>)>;

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("produce: {e}");
            eprintln!("usage: mio_driver --bootstrap HOST:PORT --topic T --partitions P --records N --size B [--linger-ms MS] [--batch-size BYTES] [--property KEY=VALUE]... [--stats]");
            return ExitCode::from(2);
        }
    };
    let props = args
        .properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let producer = match SessionConfig::from_properties(props) {
        Ok(config) => MioProducer::start(config).expect("start the mio loop"),
        Err(e) => {
            eprintln!("produce: {e}");
            return ExitCode::from(2);
        }
    };
    let tally: Arc<Tally> = Arc::default();
    let topic = Topic::new(&args.topic);
    let start = Instant::now();
    for i in 0..args.records {
        let mut value = i.to_string().into_bytes();
        value.resize(value.len().max(args.size), b'.');
        let partition = (i % args.partitions) as i32;
        let record = ProducerRecord::new(topic.clone(), partition, value).with_key(i.to_string());
        let (tally, sent_at) = (Arc::clone(&tally), Instant::now());
        producer.call(
            move |s, now| Id::Send(s.send(record, now)),
            move |done| {
                let mut t = tally.lock().unwrap();
                match done {
                    Completion::Record { outcome: Ok(_), .. } => {
                        t.0 += 1;
                        t.2.push(sent_at.elapsed().as_micros() as u64);
                    }
                    other => {
                        t.1 += 1;
                        t.3.get_or_insert_with(|| format!("record {i}: {other:?}"));
                    }
                }
            },
        );
    }
    eprintln!(
        "produce: all {} records sent, waiting for acknowledgements",
        args.records
    );
    if args.stats {
        // After a flush every record has its outcome: the snapshot covers the run.
        producer.call_wait(|s, now| Id::Op(s.flush(now)));
        if let Some(stats) = producer.metrics() {
            print!("{stats}");
        }
    }
    if !producer.close(None) {
        eprintln!("produce: the loop ended before the close completed");
    }
    let elapsed = start.elapsed();
    let (acked, _failed, mut latencies, first_error) = std::mem::take(&mut *tally.lock().unwrap());
    if let Some(e) = first_error {
        eprintln!("produce: first failure: {e}");
    }
    latencies.sort_unstable();
    let percentile_ms = |p: f64| {
        let rank = ((p / 100.0) * latencies.len() as f64).ceil() as usize;
        latencies
            .get(rank.clamp(1, latencies.len().max(1)) - 1)
            .map_or(0.0, |&us| us as f64 / 1000.0)
    };
    println!(
        "produce: records={} acked={acked} failed={} elapsed_ms={} records_per_s={:.0} p50_ms={:.1} p99_ms={:.1}",
        args.records,
        args.records - acked, // failed, or (if the loop died) never answered
        elapsed.as_millis(),
        args.records as f64 / elapsed.as_secs_f64().max(1e-9),
        percentile_ms(50.0),
        percentile_ms(99.0),
    );
    if acked == args.records {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
