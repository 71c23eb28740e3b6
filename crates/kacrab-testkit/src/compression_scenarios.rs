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

use crate::burst::{self, Burst, Step};
use crate::checker::{check, Expect, LogRecord};
use crate::real_kafka::{
    consume_isolated, create_topic, env_or_skip, fresh_topic, real_props, records, skipped,
    txn_props, ReadCommittedTxns,
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

/// Real Kafka (`KACRAB_KAFKA_BOOTSTRAP`), every codec and a zstd transaction on one
/// fresh topic of 15 partitions, read back once per isolation level by Kafka's console
/// consumer (one topic and two reads instead of five topics and six reads: the real
/// broker's fixed costs, a topic creation and a consumer's start, group join and idle
/// wait, are what the scenario's time was made of):
///
/// * partitions 0-2 gzip, 3-5 snappy, 6-8 lz4, 9-11 zstd: one idempotent producer per
///   codec, 20,000 records (`KACRAB_REAL_RECORDS`) of 200 bytes each, all four at
///   once. The broker validates every compressed batch (a wrong framing fails with
///   CORRUPT_MESSAGE); the read_uncommitted view must hold each codec's records
///   acknowledged, exactly once, in order per partition, at the offsets reported;
/// * partitions 12-14: [`real_txn_read_committed`](crate::real_kafka::real_txn_read_committed)'s
///   transactions (commit 1,000, abort 500, commit 300) with zstd, alongside: the
///   read_committed view must hold exactly the committed 1,300 there, read_uncommitted
///   all 1,800.
pub fn real_compression_every_codec(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_compression_every_codec";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let topic = fresh_topic("kacrab-codecs");
    let txn_base = CODEC_PARTITIONS * CODECS.len() as i32;
    create_topic(&bootstrap, &topic, txn_base + CODEC_PARTITIONS, 1).map_err(fail)?;
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
    let txn_producer = Shifted::boxed(txn_producer, txn_base);

    let (bursts, txns) = std::thread::scope(|s| {
        let bursts: Vec<_> = codec_producers
            .into_iter()
            .map(|(codec, producer)| {
                let spec = &spec;
                let burst = s.spawn(move || burst::run(producer, spec, |_, _| Ok(Step::Continue)));
                (codec, burst)
            })
            .collect();
        let topic = &topic;
        let txns =
            s.spawn(move || ReadCommittedTxns::run(NAME, txn_producer, topic, CODEC_PARTITIONS));
        let bursts: Vec<_> = bursts
            .into_iter()
            .map(|(codec, h)| (codec, h.join().expect("a burst thread panicked")))
            .collect();
        (
            bursts,
            txns.join().expect("the transaction thread panicked"),
        )
    });
    let mut results = Vec::new();
    for (codec, burst) in bursts {
        results.push((codec, burst.map_err(|e| fail(format!("{codec}: {e}")))?));
    }
    let txns = txns.map_err(|e| fail(format!("zstd transactions: {e}")))?;
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

    let produced = start.elapsed();
    // Both views at once. Ask for more than was written so that duplicates are read
    // too; a read that comes back short is repeated once with a long idle timeout (see
    // `produce_and_verify`).
    let acked: usize = results
        .iter()
        .map(|(_, r)| r.outcomes.iter().filter(|o| o.is_ok()).count())
        .sum();
    let sent: usize = results.iter().map(|(_, r)| r.outcomes.len()).sum();
    let max = (2 * (sent + ReadCommittedTxns::WRITTEN) + 10) as u64;
    let read = |isolation: &str, want: usize| -> Result<Logs, String> {
        let total = |l: &Logs| l.values().map(Vec::len).sum::<usize>();
        let logs = consume_isolated(&bootstrap, &topic, max, 8_000, isolation)?;
        if total(&logs) >= want {
            return Ok(logs);
        }
        consume_isolated(&bootstrap, &topic, max, 30_000, isolation)
    };
    let (all, committed) = std::thread::scope(|s| {
        let committed = s.spawn(|| read("read_committed", acked + ReadCommittedTxns::COMMITTED));
        let all = read("read_uncommitted", acked + ReadCommittedTxns::WRITTEN);
        (all, committed.join().expect("the consumer thread panicked"))
    });
    let (all, committed) = (all.map_err(fail)?, committed.map_err(fail)?);
    let consumed = start.elapsed();

    let mut errors = Vec::new();
    let mut summary = Tally::default();
    let mut notes = vec![
        format!("topic {topic}, transactional.id {txid}"),
        format!(
            "topic created at {created:.1?}, produced at {produced:.1?}, read back at {consumed:.1?}"
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
    let txn_in_log = txns.check(
        &partitions_from(&committed, txn_base, CODEC_PARTITIONS),
        &partitions_from(&all, txn_base, CODEC_PARTITIONS),
    );
    match &txn_in_log {
        Ok(_) => {}
        Err(e) => errors.push(format!(
            "zstd transactions (partitions {txn_base}..{}): {e}",
            txn_base + CODEC_PARTITIONS
        )),
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
    fn init_transactions(&self) -> Result<(), String> {
        self.inner.init_transactions()
    }
    fn begin_transaction(&self) -> Result<(), String> {
        self.inner.begin_transaction()
    }
    fn commit_transaction(&self) -> Result<(), String> {
        self.inner.commit_transaction()
    }
    fn abort_transaction(&self) -> Result<(), String> {
        self.inner.abort_transaction()
    }
}
