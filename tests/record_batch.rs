//! Property tests of the RecordBatch v2 codec against kafka-protocol's independent decoder.

use bytes::{Bytes, BytesMut};
use kacrab_idempotence::record::{
    decode_records, read_header, split, stamp, BatchBuilder, Compression, Header, Record,
    RECORD_BATCH_OVERHEAD,
};
use kacrab_idempotence::{ProducerIdAndEpoch, Sequence};
use kafka_protocol::records::{RecordBatchDecoder, TimestampType};
use proptest::collection::{btree_set, vec};
use proptest::prelude::*;

fn payload() -> impl Strategy<Value = Option<Bytes>> {
    proptest::option::of(vec(any::<u8>(), 0..300).prop_map(Bytes::from))
}

fn timestamp() -> impl Strategy<Value = i64> {
    // kafka-protocol adds the delta back without wrapping, so stay far from i64's ends while
    // still exercising negative deltas and ten-byte varlongs.
    prop_oneof![
        4 => 1_600_000_000_000i64..1_900_000_000_000,
        1 => Just(-1i64),
        1 => -(1i64 << 61)..(1i64 << 61),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    // Distinct, UTF-8 header keys: kafka-protocol keeps headers in a map keyed by string.
    let headers = btree_set("[a-z]{0,8}", 0..3).prop_flat_map(|keys| {
        let n = keys.len();
        (Just(keys), vec(payload(), n)).prop_map(|(keys, values)| {
            keys.into_iter()
                .zip(values)
                .map(|(k, value)| Header {
                    key: Bytes::from(k),
                    value,
                })
                .collect::<Vec<_>>()
        })
    });
    (payload(), payload(), headers, timestamp()).prop_map(|(key, value, headers, timestamp)| {
        Record {
            key,
            value,
            headers,
            timestamp,
        }
    })
}

fn records() -> impl Strategy<Value = Vec<Record>> {
    vec(record(), 1..50)
}

fn build(records: &[Record]) -> BytesMut {
    let mut builder = BatchBuilder::new(Compression::None, 16 * 1024);
    for r in records {
        builder.append(r);
    }
    builder.finish()
}

/// Decodes with kafka-protocol and checks every record against ours, plus the producer
/// fields each decoded record carries.
fn assert_oracle_decodes(
    batch: &[u8],
    records: &[Record],
    id: ProducerIdAndEpoch,
    base_sequence: i32,
    transactional: bool,
) -> Result<(), TestCaseError> {
    let mut buf = Bytes::copy_from_slice(batch);
    let set = RecordBatchDecoder::decode(&mut buf)
        .map_err(|e| TestCaseError::fail(format!("kafka-protocol rejected the batch: {e:#}")))?;
    prop_assert!(buf.is_empty(), "decoder left bytes");
    prop_assert_eq!(set.version, 2);
    prop_assert_eq!(set.records.len(), records.len());
    for (i, (theirs, ours)) in set.records.iter().zip(records).enumerate() {
        let i32_i = i32::try_from(i).unwrap();
        prop_assert_eq!(theirs.offset, i64::from(i32_i));
        prop_assert_eq!(theirs.sequence, base_sequence.wrapping_add(i32_i));
        prop_assert_eq!(theirs.producer_id, id.id.0);
        prop_assert_eq!(theirs.producer_epoch, id.epoch.0);
        prop_assert_eq!(theirs.transactional, transactional);
        prop_assert!(!theirs.control);
        prop_assert_eq!(theirs.partition_leader_epoch, -1);
        prop_assert_eq!(theirs.timestamp_type, TimestampType::Creation);
        prop_assert_eq!(theirs.timestamp, ours.timestamp);
        prop_assert_eq!(&theirs.key, &ours.key);
        prop_assert_eq!(&theirs.value, &ours.value);
        let headers: Vec<(Bytes, Option<Bytes>)> = theirs
            .headers
            .iter()
            .map(|(k, v)| (Bytes::copy_from_slice(k.as_bytes()), v.clone()))
            .collect();
        let expected: Vec<(Bytes, Option<Bytes>)> = ours
            .headers
            .iter()
            .map(|h| (h.key.clone(), h.value.clone()))
            .collect();
        prop_assert_eq!(headers, expected);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Unstamped batches decode with kafka-protocol to the same records; after `stamp` the
    /// producer fields match and the CRC (which the decoder checks) still verifies.
    #[test]
    fn kafka_protocol_decodes_what_we_write(
        records in records(),
        pid in 0i64..=i64::MAX,
        epoch in 0i16..=i16::MAX,
        seq in 0i32..=i32::MAX,
        transactional in any::<bool>(),
    ) {
        let mut batch = build(&records);
        assert_oracle_decodes(&batch, &records, ProducerIdAndEpoch::NONE, -1, false)?;
        prop_assert_eq!(decode_records(&batch).unwrap(), records.clone());

        let id = ProducerIdAndEpoch::new(pid, epoch);
        stamp(&mut batch, id, Sequence(seq), transactional).unwrap();
        assert_oracle_decodes(&batch, &records, id, seq, transactional)?;

        let mut buf = Bytes::copy_from_slice(&batch);
        let info = RecordBatchDecoder::decode_batch_info(&mut buf).unwrap();
        prop_assert_eq!(info.len(), 1);
        prop_assert_eq!(info[0].producer_id, pid);
        prop_assert_eq!(info[0].producer_epoch, epoch);
        prop_assert_eq!(info[0].base_sequence, seq);
        prop_assert_eq!(info[0].transactional, transactional);
        prop_assert_eq!(info[0].record_count, i32::try_from(records.len()).unwrap());
        prop_assert_eq!(info[0].min_timestamp, records[0].timestamp);

        let header = read_header(&batch).unwrap();
        prop_assert_eq!(header.producer_id, id.id);
        prop_assert_eq!(header.producer_epoch, id.epoch);
        prop_assert_eq!(header.base_sequence, seq);
        prop_assert_eq!(header.transactional, transactional);
        prop_assert_eq!(header.crc, crc32c::crc32c(&batch[21..]));
        prop_assert_eq!(header.max_timestamp, records.iter().map(|r| r.timestamp).max().unwrap());
        prop_assert_eq!(decode_records(&batch).unwrap(), records);
    }

    /// A record's leading fields are appended by one fixed-size copy when the buffer has
    /// room past them and byte for byte otherwise (the last records of an exactly sized
    /// buffer): both give the same bytes, which decode to the records (with a value long
    /// enough for a three-byte length now and then), and an exactly sized buffer never
    /// grows.
    #[test]
    fn exact_and_roomy_buffers_give_the_same_bytes(
        records in records(),
        big in proptest::option::of(0usize..40_000),
    ) {
        let mut records = records;
        if let Some(n) = big {
            records.insert(0, Record::from_value(Bytes::from(vec![7u8; n]), 1_700_000_000_000));
        }
        let mut roomy = BatchBuilder::new(Compression::None, 1 << 20);
        for r in &records {
            roomy.append(r);
        }
        let roomy = roomy.finish();
        let mut exact = BatchBuilder::new(Compression::None, roomy.len());
        for r in &records {
            exact.append(r);
        }
        let exact = exact.finish();
        prop_assert_eq!(&exact[..], &roomy[..]);
        prop_assert_eq!(exact.capacity(), roomy.len(), "the exact buffer grew");
        prop_assert_eq!(decode_records(&exact).unwrap(), records);
    }

    /// `size_in_bytes` is the finished length, bounded by the per-record estimates, and a
    /// builder filled through `has_room_for` never outgrows `batch_size` past its first record.
    #[test]
    fn sizes_are_exact_and_bounded(records in records(), batch_size in 0usize..8_000) {
        let mut builder = BatchBuilder::new(Compression::None, 0);
        let mut bound = RECORD_BATCH_OVERHEAD;
        for r in &records {
            bound += BatchBuilder::estimated_record_size(r);
            builder.append(r);
            prop_assert!(builder.size_in_bytes() <= bound);
        }
        let size = builder.size_in_bytes();
        prop_assert_eq!(builder.finish().len(), size);

        let mut builder = BatchBuilder::new(Compression::None, batch_size);
        let mut taken = 0;
        for r in &records {
            if !builder.has_room_for(r, batch_size) {
                break;
            }
            builder.append(r);
            taken += 1;
        }
        prop_assert!(taken >= 1);
        let batch = builder.finish();
        prop_assert!(taken == 1 || batch.len() <= batch_size);
        prop_assert_eq!(decode_records(&batch).unwrap(), records[..taken].to_vec());
    }

    /// Splitting keeps every record, in order, in unstamped batches no larger than the target
    /// (unless one record alone is larger), each of which kafka-protocol accepts.
    #[test]
    fn split_then_decode_is_the_original(
        records in records(),
        target in 0usize..4_000,
        stamped in any::<bool>(),
    ) {
        let mut batch = build(&records);
        if stamped {
            stamp(&mut batch, ProducerIdAndEpoch::new(7, 3), Sequence(40), true).unwrap();
        }
        let parts = split(&batch, target).unwrap();
        let mut joined = Vec::new();
        let mut seq = 0;
        for mut part in parts {
            let decoded = decode_records(&part).unwrap();
            prop_assert!(!decoded.is_empty());
            prop_assert!(decoded.len() == 1 || part.len() <= target);
            let header = read_header(&part).unwrap();
            prop_assert_eq!(header.base_sequence, -1);
            prop_assert!(!header.producer_id.is_valid());
            let id = ProducerIdAndEpoch::new(7, 3);
            stamp(&mut part, id, Sequence(seq), false).unwrap();
            assert_oracle_decodes(&part, &decoded, id, seq, false)?;
            seq += header.record_count;
            joined.extend(decoded);
        }
        prop_assert_eq!(joined, records);
    }

    /// Arbitrary bytes never panic the readers.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..400), target in 0usize..500) {
        let _ = read_header(&bytes);
        let _ = decode_records(&bytes);
        let _ = split(&bytes, target);
        let mut copy = bytes.clone();
        if stamp(&mut copy, ProducerIdAndEpoch::new(1, 1), Sequence(1), true).is_ok() {
            prop_assert!(read_header(&copy).is_ok());
        }
    }

    /// Valid batches with corrupted bytes (CRC fixed up by `stamp`, so the record decoder
    /// itself sees the damage) never panic, and anything still accepted round trips.
    #[test]
    fn corrupted_batches_never_panic(
        records in vec(record(), 1..8),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        target in 0usize..2_000,
    ) {
        let mut batch = build(&records).to_vec();
        for (at, byte) in edits {
            let at = at.index(batch.len());
            batch[at] = byte;
        }
        let _ = read_header(&batch);
        if stamp(&mut batch, ProducerIdAndEpoch::NONE, Sequence(-1), false).is_ok() {
            prop_assert!(read_header(&batch).is_ok());
            if let Ok(decoded) = decode_records(&batch) {
                prop_assert_eq!(decode_records(&build(&decoded)).unwrap(), decoded.clone());
                // A corrupted attribute byte can make it a control batch, which is never
                // split (a producer never sends one).
                if !read_header(&batch).unwrap().control {
                    let mut joined = Vec::new();
                    for part in split(&batch, target).unwrap() {
                        joined.extend(decode_records(&part).unwrap());
                    }
                    prop_assert_eq!(joined, decoded);
                }
            }
        }
    }
}
