//! Every codec's batches, decoded by an independent implementation (kafka-protocol's
//! decoder with its own gzip/snappy/lz4/zstd support), after a stamp, a restamp and a
//! split: what the core writes is what a Kafka reader reads.

use bytes::Bytes;
use kacrab_compression::{compression, LevelRange};
use kacrab_idempotence::compression::{Codec, Compression};
use kacrab_idempotence::record::{
    decode_records_with, read_header, split_with, stamp, BatchBuilder, Header, Record,
};
use kacrab_idempotence::{ProducerIdAndEpoch, Sequence};
use kafka_protocol::records::{Compression as KpCompression, RecordBatchDecoder};
use proptest::collection::vec;
use proptest::prelude::*;

fn kp_codec(codec: Codec) -> KpCompression {
    match codec {
        Codec::Gzip => KpCompression::Gzip,
        Codec::Snappy => KpCompression::Snappy,
        Codec::Lz4 => KpCompression::Lz4,
        Codec::Zstd => KpCompression::Zstd,
    }
}

/// A value that compresses like a JSON log line, or random bytes (which do not).
fn value() -> impl Strategy<Value = Option<Bytes>> {
    prop_oneof![
        4 => (0u32..100_000, 0usize..4, "[a-z ]{0,80}").prop_map(|(n, level, msg)| {
            let level = ["debug", "info", "warn", "error"][level];
            Some(Bytes::from(format!(
                r#"{{"ts":{n},"level":"{level}","service":"checkout","msg":"{msg}"}}"#
            )))
        }),
        1 => vec(any::<u8>(), 0..400).prop_map(|v| Some(Bytes::from(v))),
        1 => Just(None),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (
        proptest::option::of(vec(any::<u8>(), 0..20).prop_map(Bytes::from)),
        value(),
        vec(
            proptest::option::of(vec(any::<u8>(), 0..10).prop_map(Bytes::from)),
            0..3,
        ),
        1_600_000_000_000i64..1_900_000_000_000,
    )
        .prop_map(|(key, value, header_values, timestamp)| Record {
            key,
            value,
            // kafka-protocol keeps headers in a map keyed by UTF-8 strings: distinct keys.
            headers: header_values
                .into_iter()
                .enumerate()
                .map(|(i, value)| Header {
                    key: Bytes::from(format!("h{i}")),
                    value,
                })
                .collect(),
            timestamp,
        })
}

fn codec_and_level() -> impl Strategy<Value = (Codec, Option<i32>)> {
    prop_oneof![
        Just((Codec::Gzip, None)),
        (1..=9i32).prop_map(|l| (Codec::Gzip, Some(l))),
        Just((Codec::Snappy, None)),
        Just((Codec::Lz4, None)),
        (1..=17i32).prop_map(|l| (Codec::Lz4, Some(l))),
        Just((Codec::Zstd, None)),
        (-5..=19i32).prop_map(|l| (Codec::Zstd, Some(l))),
    ]
}

fn build(compression: &Compression, records: &[Record]) -> bytes::BytesMut {
    let mut b = BatchBuilder::new(compression.clone(), 16_384);
    for r in records {
        b.append(r);
    }
    b.finish()
}

/// kafka-protocol's reading of `batch` matches `records` and the stamp.
fn assert_kafka_reads(
    batch: &[u8],
    codec: Codec,
    records: &[Record],
    id: ProducerIdAndEpoch,
    base_sequence: i32,
    transactional: bool,
) -> Result<(), TestCaseError> {
    let mut buf = Bytes::copy_from_slice(batch);
    let set = RecordBatchDecoder::decode(&mut buf)
        .map_err(|e| TestCaseError::fail(format!("kafka-protocol rejected the batch: {e:#}")))?;
    prop_assert!(buf.is_empty(), "decoder left bytes");
    prop_assert_eq!(set.compression, kp_codec(codec));
    prop_assert_eq!(set.records.len(), records.len());
    for (i, (theirs, ours)) in set.records.iter().zip(records).enumerate() {
        let i = i32::try_from(i).unwrap();
        prop_assert_eq!(theirs.offset, i64::from(i));
        prop_assert_eq!(theirs.sequence, base_sequence.wrapping_add(i));
        prop_assert_eq!(theirs.producer_id, id.id.0);
        prop_assert_eq!(theirs.producer_epoch, id.epoch.0);
        prop_assert_eq!(theirs.transactional, transactional);
        prop_assert_eq!(theirs.timestamp, ours.timestamp);
        prop_assert_eq!(&theirs.key, &ours.key);
        prop_assert_eq!(&theirs.value, &ours.value);
        prop_assert_eq!(theirs.headers.len(), ours.headers.len());
        for h in &ours.headers {
            let key = std::str::from_utf8(&h.key).unwrap();
            let found = theirs.headers.iter().find(|(k, _)| k.as_str() == key);
            prop_assert_eq!(found.map(|(_, v)| v.clone()), Some(h.value.clone()));
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Every codec's batch, stamped and then restamped (an epoch bump), is read by
    /// kafka-protocol with the right codec, records and producer fields; the restamp
    /// changes only header bytes and keeps the CRC right.
    #[test]
    fn every_codec_decodes_with_kafka_protocol(
        (codec, level) in codec_and_level(),
        records in vec(record(), 1..40),
        pid in 0i64..i64::MAX, epoch in 0i16..i16::MAX, seq in 0i32..i32::MAX,
        transactional in any::<bool>(),
    ) {
        let compression = compression(codec, level).unwrap();
        let mut batch = build(&compression, &records);
        prop_assert_eq!(read_header(&batch).unwrap().record_count as usize, records.len());
        let first = ProducerIdAndEpoch::new(pid, epoch);
        stamp(&mut batch, first, Sequence(seq), transactional).unwrap();
        assert_kafka_reads(&batch, codec, &records, first, seq, transactional)?;

        let records_section = batch[61..].to_vec();
        let bumped = ProducerIdAndEpoch::new(pid, epoch.wrapping_add(1).max(0));
        stamp(&mut batch, bumped, Sequence(0), transactional).unwrap();
        prop_assert_eq!(&batch[61..], &records_section[..], "a restamp touched the records");
        read_header(&batch).unwrap();
        assert_kafka_reads(&batch, codec, &records, bumped, 0, transactional)?;
        prop_assert_eq!(decode_records_with(&batch, &compression).unwrap(), records);
    }

    /// A compressed batch split in pieces of about half its size: every piece is
    /// compressed with the same codec, kafka-protocol reads each, and together they hold
    /// the records in order.
    #[test]
    fn compressed_split_pieces_decode_in_order(
        (codec, level) in codec_and_level(),
        records in vec(record(), 2..120),
    ) {
        let compression = compression(codec, level).unwrap();
        let batch = build(&compression, &records);
        let target = (batch.len() / 2).max(1);
        let pieces = split_with(&batch, target, &compression).unwrap();
        prop_assert!(!pieces.is_empty());
        let mut joined = Vec::new();
        let mut seq = 0i32;
        for mut piece in pieces {
            let n = read_header(&piece).unwrap().record_count;
            let id = ProducerIdAndEpoch::new(9, 1);
            stamp(&mut piece, id, Sequence(seq), false).unwrap();
            let part = &records[joined.len()..joined.len() + n as usize];
            assert_kafka_reads(&piece, codec, part, id, seq, false)?;
            joined.extend(decode_records_with(&piece, &compression).unwrap());
            seq += n;
        }
        prop_assert_eq!(joined, records);
    }
}

/// Kafka's level ranges are enforced when the compression is built.
#[test]
fn out_of_range_levels_are_refused() {
    assert!(compression(Codec::Gzip, Some(0)).is_err());
    assert!(compression(Codec::Gzip, Some(-1)).is_ok());
    assert!(compression(Codec::Lz4, Some(18)).is_err());
    assert!(compression(Codec::Zstd, Some(LevelRange::ZSTD.max + 1)).is_err());
    assert!(
        compression(Codec::Snappy, Some(12345)).is_ok(),
        "snappy has no level"
    );
}

/// The snappy stream is snappy-java's, not the official framing format: Kafka's Java
/// consumer reads it with `SnappyInputStream`, which takes headerless input as one raw
/// block and would misread a framing-format stream.
#[test]
fn snappy_writes_the_snappy_java_header_and_big_endian_block_lengths() {
    let compression = compression(Codec::Snappy, None).unwrap();
    let records: Vec<Record> = (0..2000)
        .map(|i| Record::from_value(Bytes::from(format!("{{\"n\":{i},\"msg\":\"hello\"}}")), 0))
        .collect();
    let batch = build(&compression, &records);
    let body = &batch[61..];
    assert_eq!(
        &body[..16],
        b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    );
    let first_len = u32::from_be_bytes(body[16..20].try_into().unwrap()) as usize;
    assert!(
        first_len < body.len() - 20,
        "more than one 32 KiB block expected"
    );
}

/// The lz4 frame's descriptor is the one Kafka's `Lz4BlockOutputStream` writes: version 1,
/// independent blocks, no checksums, no content size (FLG 0x60), 64 KiB blocks (BD 0x40).
#[test]
fn lz4_frame_descriptor_is_kafkas() {
    let compression = compression(Codec::Lz4, None).unwrap();
    let batch = build(
        &compression,
        &[Record::from_value(Bytes::from_static(b"x"), 0)],
    );
    let body = &batch[61..];
    assert_eq!(&body[..4], &0x184D_2204u32.to_le_bytes());
    assert_eq!(body[4], 0x60, "FLG");
    assert_eq!(body[5], 0x40, "BD");
}
