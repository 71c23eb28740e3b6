//! Batch sizing with compression, through the core's `Producer`: a compressed batch is
//! full by its *estimated* compressed size (Java's `CompressionRatioEstimator`), so once
//! the per-topic estimate has learned the ratio, batches come close to `batch.size` on the
//! wire instead of a fraction of it; and a MESSAGE_TOO_LARGE split recompresses.

use bytes::Bytes;
use kacrab_compression::compression;
use kacrab_idempotence::compression::Codec;
use kacrab_idempotence::record::{self, read_header};
use kacrab_idempotence::*;

const BATCH_SIZE: usize = 16_384;

fn json(i: u64) -> Bytes {
    Bytes::from(format!(
        r#"{{"seq":{i},"level":"INFO","service":"checkout","msg":"request {} completed in {} ms"}}"#,
        i % 977,
        i % 131
    ))
}

/// Sends `n` records to one partition and answers every produce with success (or, for
/// the first produce, with `first_error`); returns each produced batch's bytes.
fn run(codec: Codec, n: u64, first_error: Option<KafkaError>) -> (Vec<Bytes>, Stats, usize) {
    let config = ProducerConfig::builder()
        .compression(compression(codec, None).unwrap())
        .batch_size(BATCH_SIZE)
        .linger(core::time::Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut now = Timestamp::ZERO;
    let mut producer = Producer::new(config, now);
    let tp = TopicPartition::new("logs", 0);
    for i in 0..n {
        producer
            .send(&tp, &Record::from_value(json(i), 0), now)
            .expect("queued");
    }
    producer.flush();
    let mut batches = Vec::new();
    let mut offset = 0i64;
    let mut error = first_error;
    let mut delivered = 0;
    while !producer.is_idle() {
        while let Some(request) = producer.poll_request(now) {
            match request {
                Request::InitProducerId(r) => {
                    producer
                        .handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(7, 0)), now)
                        .unwrap();
                }
                Request::Metadata(r) => {
                    let partitions = vec![PartitionMetadata::new(tp.clone(), Some(NodeId(1)), 0)];
                    let md = Metadata::new(partitions);
                    producer.handle_metadata(Some(r.id), &md, now).unwrap();
                }
                Request::Produce(r) => {
                    let mut response = ProduceResponse::default();
                    for batch in &r.batches {
                        let count = read_header(&batch.data).unwrap().record_count;
                        let answer = match error.take() {
                            Some(e) => PartitionResponse::error(batch.partition.clone(), e),
                            None => {
                                batches.push(batch.data.clone());
                                let ok = PartitionResponse::ok(batch.partition.clone(), offset);
                                offset += i64::from(count);
                                ok
                            }
                        };
                        response.partitions.push(answer);
                    }
                    producer
                        .handle_produce_response(r.id, &response, now)
                        .unwrap();
                }
                Request::CloseConnection { .. } => {}
                _ => unreachable!(),
            }
        }
        while let Some(event) = producer.poll_event() {
            if let Event::Delivered { records, .. } = event {
                delivered += records.len();
            }
        }
        if let Some(deadline) = producer.poll_timeout() {
            now = now.max(deadline);
            producer.handle_timeout(now);
        }
    }
    (batches, producer.stats(), delivered)
}

/// Without the estimate, a batch of 16 KiB of uncompressed JSON compresses to a few KiB:
/// the estimate must grow batches until their compressed size nears batch.size.
#[test]
fn compressed_batches_fill_up_to_batch_size_by_the_estimated_ratio() {
    for codec in Codec::ALL {
        let (batches, _, delivered) = run(codec, 200_000, None);
        assert_eq!(delivered, 200_000);
        let compression = compression(codec, None).unwrap();
        let mut decoded = 0u64;
        for b in &batches {
            for r in record::decode_records_with(b, &compression).unwrap() {
                assert_eq!(r.value, Some(json(decoded)), "{codec}: record {decoded}");
                decoded += 1;
            }
        }
        // The estimate starts at 1.0 and improves by 0.005 per batch (Java's step), so it
        // takes some 180 batches to learn a ratio of 0.1: judge the last tenth of the
        // batches, all but the final partial one.
        let settled = &batches[batches.len() * 9 / 10..batches.len() - 1];
        let smallest = settled.iter().map(Bytes::len).min().unwrap();
        let largest = settled.iter().map(Bytes::len).max().unwrap();
        assert!(
            smallest >= BATCH_SIZE / 2,
            "{codec}: settled compressed batches of {smallest} bytes, far below batch.size \
             ({} batches)",
            batches.len()
        );
        assert!(
            largest <= BATCH_SIZE * 3 / 2,
            "{codec}: a batch of {largest} bytes"
        );
    }
}

/// A compressed batch refused with MESSAGE_TOO_LARGE is split; the pieces are compressed
/// with the same codec, get consecutive sequences, and deliver every record once, in order.
#[test]
fn a_compressed_batch_split_after_message_too_large_is_recompressed() {
    for codec in Codec::ALL {
        let (mut batches, stats, delivered) = run(codec, 500, Some(KafkaError::MessageTooLarge));
        assert_eq!(delivered, 500, "{codec}");
        assert!(stats.splits >= 1, "{codec}: no split");
        let compression = compression(codec, None).unwrap();
        // This toy broker accepts later batches while the split pieces wait: put them in
        // sequence order, which must be gap-free from 0 and match the send order.
        batches.sort_by_key(|b| read_header(b).unwrap().base_sequence);
        let mut next = 0u64;
        let mut seq = 0;
        for b in &batches {
            assert_eq!(
                b[22] & 0x07,
                codec.attribute_bits() as u8,
                "{codec}: codec bits"
            );
            let h = read_header(b).unwrap();
            assert_eq!(h.base_sequence, seq, "{codec}: sequences of the pieces");
            seq += h.record_count;
            for r in record::decode_records_with(b, &compression).unwrap() {
                assert_eq!(r.value, Some(json(next)));
                next += 1;
            }
        }
        assert_eq!(next, 500);
    }
}
