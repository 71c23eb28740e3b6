//! Compression scenarios: every codec (`compression.type` gzip, snappy, lz4, zstd) through
//! krafka's FakeBroker and through real Kafka, whose broker validates each compressed
//! batch (a wrong framing is refused with CORRUPT_MESSAGE) and whose own console consumer
//! reads the records back; and a transaction written with zstd.
//!
//! The scenarios wrap the adapter's factory so that the compression key is the last
//! property it sees; everything else is the plain scenario's.

use std::time::Duration;

use crate::burst::{Burst, Step};
use crate::real_kafka::{
    create_topic, env_or_skip, fresh_topic, produce_and_verify, real_txn_read_committed, records,
    skipped,
};
use crate::scenarios::{run_fake, Report, Shape};
use crate::{Factory, TestProducer};

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

/// One codec on `KACRAB_KAFKA_BOOTSTRAP`: 20,000 records (`KACRAB_REAL_RECORDS`) of 200
/// bytes to a fresh 3-partition topic, read back by Kafka's console consumer: every
/// record acknowledged, exactly once, in order per partition, at the offsets reported.
fn real_codec(name: &'static str, codec: &'static str, factory: Factory) -> Result<Report, String> {
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", name, "start-single") else {
        return Ok(skipped(name));
    };
    let topic = fresh_topic(&format!("kacrab-{codec}"));
    create_topic(&bootstrap, &topic, 3, 1)?;
    let spec = Burst {
        topic,
        partitions: 3,
        records: records(20_000),
        value_size: 200,
        chunk: 5_000,
        pause: Duration::ZERO,
        deadline: Duration::from_secs(300),
    };
    let factory = compressed(factory, codec);
    let mut report = produce_and_verify(
        name,
        &factory,
        &bootstrap,
        &bootstrap,
        spec,
        |_, _| Ok(Step::Continue),
        || Ok(()),
    )?;
    report.notes.push(format!("compression.type={codec}"));
    Ok(report)
}

/// Real Kafka, gzip: 20,000 records to a fresh topic, read back by Kafka's
/// console consumer exactly once and in order per partition.
pub fn real_compression_gzip(factory: Factory) -> Result<Report, String> {
    real_codec("real_compression_gzip", "gzip", factory)
}

/// Real Kafka, snappy (snappy-java's stream): 20,000 records to a fresh topic, read back by Kafka's
/// console consumer exactly once and in order per partition.
pub fn real_compression_snappy(factory: Factory) -> Result<Report, String> {
    real_codec("real_compression_snappy", "snappy", factory)
}

/// Real Kafka, lz4 (Kafka's LZ4 frame): 20,000 records to a fresh topic, read back by Kafka's
/// console consumer exactly once and in order per partition.
pub fn real_compression_lz4(factory: Factory) -> Result<Report, String> {
    real_codec("real_compression_lz4", "lz4", factory)
}

/// Real Kafka, zstd: 20,000 records to a fresh topic, read back by Kafka's
/// console consumer exactly once and in order per partition.
pub fn real_compression_zstd(factory: Factory) -> Result<Report, String> {
    real_codec("real_compression_zstd", "zstd", factory)
}

/// `real_txn_read_committed` with `compression.type=zstd`: commit 1,000, abort 500,
/// commit 300; read_committed sees exactly the committed 1,300, read_uncommitted all.
pub fn real_txn_zstd(factory: Factory) -> Result<Report, String> {
    let factory = compressed(factory, "zstd");
    let mut report = real_txn_read_committed(&factory)?;
    report.notes.push("compression.type=zstd".into());
    Ok(report)
}
