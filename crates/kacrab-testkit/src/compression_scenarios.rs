//! Compression scenarios: every codec (`compression.type` gzip, snappy, lz4, zstd) through
//! krafka's FakeBroker and through real Kafka, whose broker validates each compressed
//! batch (a wrong framing is refused with CORRUPT_MESSAGE) and whose own console consumer
//! reads the records back; and, on real Kafka, a transaction written with zstd.
//!
//! The scenarios wrap the adapter's factory so that the compression key is the last
//! property it sees; everything else is the plain scenario's.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::burst::{self, Burst, BurstResult, Step};
use crate::checker::{check, Expect, LogRecord};
use crate::real_kafka::{
    consume_isolated, consume_whole, create_topic, env_or_skip, fresh_topic, real_props, records,
    skipped, txn_props, ReadCommittedTxns,
};
use crate::scenarios::{build, run_fake, Report, Shape};
use crate::{Delivery, DeliveryReport, Factory, Tally, TestProducer};

/// Every codec's `compression.type` value.
pub const CODECS: [&str; 4] = ["gzip", "snappy", "lz4", "zstd"];

/// What a factory returns.
type Built = Result<Box<dyn TestProducer>, String>;

/// `factory` with `compression.type=codec` appended to its properties.
fn compressed<'a>(
    factory: Factory<'a>,
    codec: &'static str,
) -> impl Fn(&[(&str, &str)]) -> Built + 'a {
    move |props: &[(&str, &str)]| {
        let mut props = props.to_vec();
        props.push(("compression.type", codec));
        factory(&props)
    }
}

/// On krafka's FakeBroker (three nodes, six partitions): the fault-free burst once per
/// codec, every record acknowledged and in the fake log exactly once, in order.
pub fn fake_compression_every_codec(factory: Factory) -> Result<Report, String> {
    let mut last = None;
    let mut notes = Vec::new();
    for codec in CODECS {
        let shape = Shape {
            min_faults: 0,
            records: 3_000,
            props: vec![("compression.type", codec)],
            ..Shape::default()
        };
        let report = run_fake(
            "fake_compression_every_codec",
            factory,
            shape,
            |_| Ok(()),
            |_, _| Ok(Step::Continue),
        )
        .map_err(|e| format!("compression.type={codec}: {e}"))?;
        notes.push(format!("{codec}: {:?}", report.summary));
        last = Some(report);
    }
    let mut report = last.expect("four codecs ran");
    report.notes.extend(notes);
    Ok(report)
}

/// Partitions per codec in [`real_compression_every_codec`]'s topic.
const CODEC_PARTITIONS: i32 = 3;

/// Real Kafka (`KACRAB_KAFKA_BOOTSTRAP`), every codec on one fresh topic of 12
/// partitions, read back once by Kafka's console consumer, and a zstd transaction
/// alongside on a 3-partition topic of its own (two topics and three reads instead of five
/// topics and six reads, the two topics created, written and read at the same time: the
/// real broker's fixed costs, a topic creation and a consumer's start, group join and idle
/// wait, were what the scenarios' time was made of):
///
/// * partitions 0-2 gzip, 3-5 snappy, 6-8 lz4, 9-11 zstd: one idempotent producer per
///   codec, 20,000 records (`KACRAB_REAL_RECORDS`) of 200 bytes each, all four at once.
///   The broker validates every compressed batch (a wrong framing fails with
///   CORRUPT_MESSAGE); the consumer must see each codec's records acknowledged, exactly
///   once, in order per partition, at the offsets reported;
/// * [`real_txn_read_committed`](crate::real_kafka::real_txn_read_committed)'s
///   transactions (commit 1,000, abort 500, commit 300) with zstd: read_committed sees
///   exactly the committed 1,300, read_uncommitted all 1,800.
pub fn real_compression_every_codec(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_compression_every_codec";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let topic = fresh_topic("kacrab-codecs");
    let txn_topic = fresh_topic("kacrab-txn-zstd");
    let partitions = CODEC_PARTITIONS * CODECS.len() as i32;
    std::thread::scope(|s| {
        let txn = s.spawn(|| create_topic(&bootstrap, &txn_topic, CODEC_PARTITIONS, 1));
        let codecs = create_topic(&bootstrap, &topic, partitions, 1);
        codecs.and(txn.join().expect("the topic thread panicked"))
    })
    .map_err(fail)?;
    let created = start.elapsed();
    let spec = Burst {
        topic: topic.clone(),
        partitions: CODEC_PARTITIONS,
        records: records(20_000),
        value_size: 200,
        chunk: 5_000,
        pause: Duration::ZERO,
        deadline: Duration::from_secs(300),
    };
    // The factory is not Sync: every producer is built here, then driven on its own
    // thread.
    let mut codec_producers = Vec::new();
    for (c, codec) in CODECS.into_iter().enumerate() {
        let props = real_props(&bootstrap, &format!("{NAME}-{codec}"));
        let producer = build(&compressed(factory, codec), &props)
            .map_err(|e| fail(format!("compression.type={codec}: {e}")))?;
        let base = CODEC_PARTITIONS * c as i32;
        codec_producers.push((codec, Shifted::boxed(producer, base)));
    }
    let txid = fresh_topic("kacrab-txid-zstd");
    let txn_producer = build(
        &compressed(factory, "zstd"),
        &txn_props(&bootstrap, NAME, &txid),
    )
    .map_err(|e| fail(format!("transactional zstd: {e}")))?;

    // The transactions run, and their topic is read, while the codecs' producers write
    // and their topic is read.
    let scope = std::thread::scope(|s| {
        let (bootstrap, txn_topic) = (&bootstrap, &txn_topic);
        let txns = s.spawn(move || {
            let run = ReadCommittedTxns::run(NAME, txn_producer, txn_topic, CODEC_PARTITIONS)?;
            let committed = consume_isolated(bootstrap, txn_topic, 3_000, 8_000, "read_committed")?;
            let all = consume_isolated(bootstrap, txn_topic, 1_800, 8_000, "read_uncommitted")?;
            Ok::<_, String>((run, committed, all))
        });
        let codecs = write_and_read_codecs(bootstrap, codec_producers, &spec);
        let txns = txns.join().expect("the transaction thread panicked");
        (codecs, txns)
    });
    let (results, all, produced) = scope.0.map_err(fail)?;
    let consumed = start.elapsed();
    let (txns, txn_committed, txn_all) = scope
        .1
        .map_err(|e| fail(format!("zstd transactions (topic {txn_topic}): {e}")))?;
    let send_time = results
        .iter()
        .map(|(_, r)| r.send_time)
        .max()
        .unwrap_or_default();
    let flush_time = results
        .iter()
        .map(|(_, r)| r.flush_time)
        .max()
        .unwrap_or_default();
    let mut errors = Vec::new();
    let mut summary = Tally::default();
    let mut notes = vec![
        format!("topics {topic} (codecs), {txn_topic} (transactional.id {txid})"),
        format!(
            "topics created at {created:.1?}, codecs written at {:.1?}, read back at {consumed:.1?}",
            produced - start
        ),
    ];
    let expect = Expect::strict(CODEC_PARTITIONS, spec.value_size);
    for (c, (codec, result)) in results.iter().enumerate() {
        let logs = partitions_from(&all, CODEC_PARTITIONS * c as i32, CODEC_PARTITIONS);
        let mut problems = Vec::new();
        match check(&result.outcomes, &logs, &expect) {
            Ok(t) => {
                notes.push(format!("{codec}: {t:?}"));
                add(&mut summary, &t);
            }
            Err(e) => problems.push(e),
        }
        problems.extend(result.problems.iter().cloned());
        if !problems.is_empty() {
            errors.push(format!(
                "compression.type={codec} (partitions {}..{}):\n{}",
                CODEC_PARTITIONS * c as i32,
                CODEC_PARTITIONS * (c as i32 + 1),
                problems.join("\n")
            ));
        }
    }
    let txn_in_log = txns.check(&txn_committed, &txn_all);
    if let Err(e) = &txn_in_log {
        errors.push(format!("zstd transactions (topic {txn_topic}): {e}"));
    }
    if !errors.is_empty() {
        return Err(format!(
            "scenario {NAME} (topic {topic}) failed:\n{}",
            errors.join("\n")
        ));
    }
    let txn_report = txns.report(NAME, start, txn_in_log.unwrap_or_default());
    add(&mut summary, &txn_report.summary);
    notes.push(format!("zstd transactions: {:?}", txn_report.summary));
    notes.extend(txn_report.notes);
    Ok(Report {
        scenario: NAME,
        skipped: false,
        summary,
        faults: 0,
        send_time,
        flush_time,
        elapsed: start.elapsed(),
        notes,
    })
}

/// Runs every codec's burst at once (each producer on its own partitions of
/// `spec.topic`), then reads the topic back with the console consumer: the bursts' results,
/// the logs, and when the bursts ended.
#[allow(clippy::type_complexity)]
fn write_and_read_codecs(
    bootstrap: &str,
    producers: Vec<(&'static str, Box<dyn TestProducer>)>,
    spec: &Burst,
) -> Result<(Vec<(&'static str, BurstResult)>, Logs, Instant), String> {
    let bursts = std::thread::scope(|s| {
        let bursts: Vec<_> = producers
            .into_iter()
            .map(|(codec, producer)| {
                (
                    codec,
                    s.spawn(move || burst::run(producer, spec, |_, _| Ok(Step::Continue))),
                )
            })
            .collect();
        bursts
            .into_iter()
            .map(|(codec, h)| (codec, h.join().expect("a burst thread panicked")))
            .collect::<Vec<_>>()
    });
    let produced = Instant::now();
    let mut results = Vec::new();
    for (codec, burst) in bursts {
        results.push((codec, burst.map_err(|e| format!("{codec}: {e}"))?));
    }
    // The whole log, duplicates included (`consume_whole`: no transaction writes to
    // this topic).
    let acked: usize = results
        .iter()
        .map(|(_, r)| r.outcomes.iter().filter(|o| o.is_ok()).count())
        .sum();
    let logs = consume_whole(bootstrap, &spec.topic, "read_uncommitted", acked)?;
    Ok((results, logs, produced))
}

/// A topic's logs by partition, as the console consumer read them.
type Logs = BTreeMap<i32, Vec<LogRecord>>;

/// Partitions `base..base + count` of `logs`, renumbered from 0.
fn partitions_from(logs: &Logs, base: i32, count: i32) -> Logs {
    logs.range(base..base + count)
        .map(|(p, log)| (p - base, log.clone()))
        .collect()
}

/// Adds `t`'s counts to `sum`.
fn add(sum: &mut Tally, t: &Tally) {
    sum.records += t.records;
    sum.acked += t.acked;
    sum.failed += t.failed;
    sum.failed_not_written += t.failed_not_written;
    sum.pending += t.pending;
    sum.duplicates += t.duplicates;
    sum.reordered += t.reordered;
    sum.lost += t.lost;
    sum.failed_in_log += t.failed_in_log;
    sum.log_records += t.log_records;
}

/// A producer that writes partition `p` of the scenario as partition `base + p` of the
/// topic (and reports it back as `p`), so that several producers share one topic, each
/// on its own partitions, while the bursts and their checks stay the plain ones.
struct Shifted {
    inner: Box<dyn TestProducer>,
    base: i32,
}

impl Shifted {
    fn boxed(inner: Box<dyn TestProducer>, base: i32) -> Box<dyn TestProducer> {
        Box::new(Self { inner, base })
    }
}

impl TestProducer for Shifted {
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery {
        let delivery = self.inner.send(topic, partition + self.base, key, value);
        let base = self.base;
        Delivery(Box::new(move || {
            delivery.wait().map(|report| DeliveryReport {
                partition: report.partition - base,
                ..report
            })
        }))
    }
    fn flush(&self) -> Result<(), String> {
        self.inner.flush()
    }
    fn close(self: Box<Self>) -> Result<(), String> {
        self.inner.close()
    }
    fn transaction(&self, call: crate::TxnCall) -> Result<(), crate::TxnError> {
        self.inner.transaction(call)
    }
}
