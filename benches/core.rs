//! Benchmarks of the core (issue 2, item 11), measured with divan and its allocation
//! profiler. Run with `cargo bench --bench core`; BENCHMARKS.md has the figures.
//!
//! * `stamp_ack`: a producer with a producer id and known leaders; per batch of one
//!   small record, the driver's calls on the steady-state path. Two shapes:
//!   - `send_stamp_ack`: `send` → `poll_request` (stamps) → `handle_produce_response`
//!     OK → `poll_event`, one batch per request, round robin over N partitions;
//!   - `prequeued`: one batch queued on each of N partitions before the timed section,
//!     then `poll_request` until `None`, every answer, every event (`send` excluded).
//!     All partitions share one leader, so the batches travel in as few requests as
//!     `max.request.size` allows (one, here): divide the time by N for a batch.
//! * `restamp`: the epoch bump after OUT_OF_ORDER_SEQUENCE_NUMBER with 5 batches of
//!   16 KiB in flight, and `record::stamp` alone on 5 such batches.
//! * `encode`: a RecordBatch of 100 records of 100 B or 1 KiB, ours (`BatchBuilder`)
//!   against kafka-protocol's `RecordBatchEncoder`, on the same records.
//!
//! Every fixture is checked once before divan starts (`sanity_checks`), so each
//! benchmark measures what its name says.

use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use divan::counter::{BytesCount, ItemsCount};
use divan::{AllocProfiler, Bencher};
use kacrab_idempotence::record::{self, BatchBuilder, Compression};
use kacrab_idempotence::{
    KafkaError, Metadata, NodeId, PartitionMetadata, PartitionResponse, ProduceResponse, Producer,
    ProducerConfig, ProducerIdAndEpoch, Record, Request, Sequence, Timestamp, Topic,
    TopicPartition,
};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    sanity_checks();
    divan::main();
}

const PID: ProducerIdAndEpoch = ProducerIdAndEpoch::new(4242, 0);
const LEADER: NodeId = NodeId(1);
const PARTITIONS: &[usize] = &[1, 100, 10_000];
/// `batch.size` of the prequeued benchmark. It only sizes the buffer `send` allocates for
/// each batch; with Kafka's 16 KiB, one timed iteration at 10,000 partitions frees 160 MB,
/// and glibc's trimming and the page faults that follow swamp the core's work (2 to 19 ms
/// for the same work). 1 KiB keeps that out of the figure.
const PREQUEUED_BATCH_SIZE: usize = 1024;

/// Partitions of one topic sharing one `Topic` allocation, as a real driver has them.
fn partitions(n: usize) -> Vec<TopicPartition> {
    let topic = Topic::new("bench");
    (0..n)
        .map(|i| TopicPartition {
            topic: topic.clone(),
            partition: i32::try_from(i).unwrap(),
        })
        .collect()
}

/// Idempotence on (the default), linger 0, Kafka's other defaults; retry backoff 1 ms so
/// the restamp benchmark can resend right after the bump.
fn config(batch_size: usize) -> ProducerConfig {
    let mut b = ProducerConfig::builder();
    b.linger(Duration::ZERO)
        .batch_size(batch_size)
        .retry_backoff(Duration::from_millis(1))
        .retry_backoff_max(Duration::from_millis(1));
    b.build().expect("valid config")
}

/// A producer whose id is assigned and whose partitions' leaders are known.
fn ready_producer(config: ProducerConfig, tps: &[TopicPartition], now: Timestamp) -> Producer {
    let mut p = Producer::new(config, now);
    let md = Metadata::new(
        tps.iter()
            .map(|tp| PartitionMetadata::new(tp.clone(), Some(LEADER), 0))
            .collect(),
    );
    p.handle_metadata(None, &md, now)
        .expect("bootstrap metadata");
    match p.poll_request(now) {
        Some(Request::InitProducerId(r)) => p.handle_producer_id(r.id, Ok(PID), now).expect("pid"),
        other => panic!("expected InitProducerId, got {other:?}"),
    }
    while p.poll_event().is_some() {}
    assert!(p.poll_request(now).is_none());
    p
}

/// One small record: a 16-byte value, no key, no headers.
fn small_record() -> Record {
    Record::from_value(Bytes::from_static(b"0123456789abcdef"), 1_700_000_000_000)
}

/// A success for every partition, in partition order (the order the drain uses here).
fn ok_all(tps: &[TopicPartition]) -> ProduceResponse {
    ProduceResponse::new(
        tps.iter()
            .map(|tp| PartitionResponse::ok(tp.clone(), 0))
            .collect(),
    )
    .with_throttle(Duration::ZERO)
}

/// Drains every request, answers each with `response`, drains every event. Returns the
/// number of `Delivered` events.
fn drain_and_ack(p: &mut Producer, response: &ProduceResponse, now: Timestamp) -> usize {
    let mut delivered = 0;
    while let Some(request) = p.poll_request(now) {
        let Request::Produce(r) = &request else {
            panic!("unexpected {request:?}")
        };
        let id = r.id;
        // As a driver does: the request is written and handed back before its answer.
        p.recycle(request);
        p.handle_produce_response(id, response, now)
            .expect("known request");
        while let Some(e) = p.poll_event() {
            delivered += usize::from(matches!(e, kacrab_idempotence::Event::Delivered { .. }));
            p.recycle_event(e);
        }
    }
    delivered
}

/// One record to each partition, then everything drained and acknowledged: brings every
/// queue, the slab, the event queue and the outstanding list to their steady capacity.
fn warm_up(p: &mut Producer, tps: &[TopicPartition], response: &ProduceResponse, now: Timestamp) {
    let record = small_record();
    for _ in 0..2 {
        for tp in tps {
            p.send(tp, &record, now).expect("queued");
        }
        assert_eq!(drain_and_ack(p, response, now), tps.len());
    }
}

mod stamp_ack {
    use super::*;

    /// Per batch: `send` → `poll_request` (stamp) → `handle_produce_response` OK →
    /// `poll_event` until `None`. One batch per request; partition `i % N`.
    #[divan::bench(args = PARTITIONS, sample_count = 500, sample_size = 64)]
    fn send_stamp_ack(bencher: Bencher, n: usize) {
        let now = Timestamp::ZERO;
        let tps = partitions(n);
        let mut p = ready_producer(config(16_384), &tps, now);
        let responses: Vec<ProduceResponse> = tps
            .iter()
            .map(|tp| ok_all(std::slice::from_ref(tp)))
            .collect();
        warm_up(&mut p, &tps, &ok_all(&tps), now);
        let record = small_record();
        let mut i = 0usize;
        bencher.counter(ItemsCount::new(1usize)).bench_local(|| {
            let k = i % n;
            i += 1;
            p.send(&tps[k], &record, now).expect("queued");
            let Some(request) = p.poll_request(now) else {
                unreachable!()
            };
            let Request::Produce(r) = &request else {
                unreachable!()
            };
            let id = r.id;
            // As a driver does: written and handed back before the answer comes.
            p.recycle(request);
            p.handle_produce_response(id, &responses[k], now)
                .expect("known request");
            while let Some(e) = p.poll_event() {
                p.recycle_event(black_box(e));
            }
        });
        assert!(p.is_idle());
    }

    /// One batch queued on each of N partitions (not timed), then timed: `poll_request`
    /// until `None` (stamps every batch), the answers, every event. Time per batch is
    /// the reported time divided by N.
    #[divan::bench(args = PARTITIONS, sample_count = 100)]
    fn prequeued(bencher: Bencher, n: usize) {
        let now = Timestamp::ZERO;
        let tps = partitions(n);
        let response = ok_all(&tps);
        let record = small_record();
        bencher
            .counter(ItemsCount::new(n))
            .with_inputs(|| {
                let mut p = ready_producer(config(PREQUEUED_BATCH_SIZE), &tps, now);
                warm_up(&mut p, &tps, &response, now);
                for tp in &tps {
                    p.send(tp, &record, now).expect("queued");
                }
                p
            })
            .bench_local_values(|mut p| {
                let delivered = drain_and_ack(&mut p, &response, now);
                debug_assert_eq!(delivered, n);
                p
            });
    }
}

/// The prequeued path of one batch (N = 1) split by call, each timed on its own: what
/// the driver's three steps cost. Outputs (the request, the event) are dropped untimed.
mod phases {
    use super::*;

    fn one_queued(tps: &[TopicPartition], response: &ProduceResponse) -> Producer {
        let now = Timestamp::ZERO;
        let mut p = ready_producer(config(16_384), tps, now);
        warm_up(&mut p, tps, response, now);
        p.send(&tps[0], &small_record(), now).expect("queued");
        p
    }

    /// `poll_request`: the drain, the stamp (header + CRC), the request.
    #[divan::bench(sample_count = 500)]
    fn poll_request(bencher: Bencher) {
        let tps = partitions(1);
        let response = ok_all(&tps);
        bencher
            .with_inputs(|| one_queued(&tps, &response))
            .bench_local_refs(|p| p.poll_request(Timestamp::ZERO));
    }

    /// `handle_produce_response` (OK) for a request of one batch the driver has dropped.
    #[divan::bench(sample_count = 500)]
    fn handle_produce_response(bencher: Bencher) {
        let tps = partitions(1);
        let response = ok_all(&tps);
        bencher
            .with_inputs(|| {
                let mut p = one_queued(&tps, &response);
                let Some(Request::Produce(r)) = p.poll_request(Timestamp::ZERO) else {
                    panic!()
                };
                (p, r.id)
            })
            .bench_local_refs(|(p, id)| {
                p.handle_produce_response(*id, &response, Timestamp::ZERO)
                    .expect("known")
            });
    }

    /// `poll_event` until `None` after the ack (one `Delivered`).
    #[divan::bench(sample_count = 500)]
    fn poll_event(bencher: Bencher) {
        let tps = partitions(1);
        let response = ok_all(&tps);
        bencher
            .with_inputs(|| {
                let mut p = one_queued(&tps, &response);
                let Some(Request::Produce(r)) = p.poll_request(Timestamp::ZERO) else {
                    panic!()
                };
                p.handle_produce_response(r.id, &response, Timestamp::ZERO)
                    .expect("known");
                p
            })
            .bench_local_refs(|p| (p.poll_event(), p.poll_event()));
    }

    /// `poll_request` when there is nothing to send (the driver's last call of a drain).
    #[divan::bench(sample_count = 500)]
    fn poll_request_idle(bencher: Bencher) {
        let tps = partitions(1);
        let response = ok_all(&tps);
        let now = Timestamp::ZERO;
        let mut p = ready_producer(config(16_384), &tps, now);
        warm_up(&mut p, &tps, &response, now);
        bencher.bench_local(|| p.poll_request(now));
    }
}

mod restamp {
    use super::*;

    /// 1 KiB values: 16 of them fill a 16 KiB batch.
    fn kib_record(i: usize) -> Record {
        Record::from_value(
            Bytes::from(vec![(i % 251) as u8; 1000]),
            1_700_000_000_000 + i as i64,
        )
    }

    pub(crate) struct InFlight {
        pub(crate) p: Producer,
        pub(crate) tp: TopicPartition,
        pub(crate) requests: Vec<kacrab_idempotence::RequestId>,
        pub(crate) now: Timestamp,
    }

    /// A producer with 5 batches of ~16 KiB for one partition, each in its own
    /// outstanding request (the driver has written them and dropped its copy).
    pub(crate) fn five_in_flight() -> InFlight {
        let now = Timestamp::ZERO;
        let tps = partitions(1);
        let mut p = ready_producer(config(16_384), &tps, now);
        warm_up(&mut p, &tps, &ok_all(&tps), now);
        let mut sent = 0;
        // 16 records of ~1 KiB fill a batch; the 17th opens the next.
        while sent < 5 * 16 {
            p.send(&tps[0], &kib_record(sent), now).expect("queued");
            sent += 1;
        }
        let mut requests = Vec::new();
        while let Some(request) = p.poll_request(now) {
            let Request::Produce(r) = request else {
                panic!("unexpected {request:?}")
            };
            assert_eq!(r.batches.len(), 1);
            assert!(
                r.batches[0].data.len() > 16_000,
                "batch of {} bytes",
                r.batches[0].data.len()
            );
            requests.push(r.id);
        }
        assert_eq!(requests.len(), 5);
        InFlight {
            p,
            tp: tps[0].clone(),
            requests,
            now,
        }
    }

    /// The recovery step up to the first resend: OUT_OF_ORDER_SEQUENCE_NUMBER for the
    /// first batch (the next expected one: it asks for a bump) and for the 4 behind it
    /// (retried without one); then `poll_request`, which bumps the epoch, rewrites the
    /// 5 batches in place (5 stamps, 5 CRCs over 16 KiB) and returns the first resend;
    /// then the `ProducerIdChanged` event.
    pub(crate) fn recover_to_first_resend(s: &mut InFlight) -> Request {
        let error = ProduceResponse::new(vec![PartitionResponse::error(
            s.tp.clone(),
            KafkaError::OutOfOrderSequenceNumber,
        )])
        .with_throttle(Duration::ZERO);
        for &id in &s.requests {
            s.p.handle_produce_response(id, &error, s.now)
                .expect("known request");
        }
        let later = s.now + Duration::from_millis(2);
        let resend = s.p.poll_request(later).expect("resend after the bump");
        while let Some(e) = s.p.poll_event() {
            let _ = black_box(e);
        }
        resend
    }

    /// From the first OUT_OF_ORDER_SEQUENCE_NUMBER to all 5 batches delivered under the
    /// new epoch: the step above, then 5 resends acknowledged one after the other (only
    /// the lowest in-flight sequence may be resent).
    pub(crate) fn recover_to_all_delivered(s: &mut InFlight) -> usize {
        let mut request = recover_to_first_resend(s);
        let later = s.now + Duration::from_millis(2);
        let ok = ok_all(std::slice::from_ref(&s.tp));
        let mut delivered = 0;
        loop {
            let Request::Produce(r) = request else {
                panic!("unexpected {request:?}")
            };
            s.p.handle_produce_response(r.id, &ok, later)
                .expect("known request");
            drop(r);
            while let Some(e) = s.p.poll_event() {
                delivered += 1;
                let _ = black_box(e);
            }
            match s.p.poll_request(later) {
                Some(next) => request = next,
                None => break,
            }
        }
        delivered
    }

    #[divan::bench(sample_count = 500)]
    fn epoch_bump_5_in_flight_to_first_resend(bencher: Bencher) {
        bencher
            .counter(ItemsCount::new(5usize))
            .with_inputs(five_in_flight)
            .bench_local_refs(recover_to_first_resend);
    }

    #[divan::bench(sample_count = 500)]
    fn epoch_bump_5_in_flight_to_all_delivered(bencher: Bencher) {
        bencher
            .counter(ItemsCount::new(5usize))
            .with_inputs(five_in_flight)
            .bench_local_refs(recover_to_all_delivered);
    }

    /// Five encoded batches of 16 KiB (16 records of 1000-byte values), unstamped.
    pub(crate) fn five_batches() -> Vec<BytesMut> {
        (0..5)
            .map(|b| {
                let mut builder = BatchBuilder::new(Compression::None, 16_384);
                for i in 0..16 {
                    builder.append(&kib_record(b * 16 + i));
                }
                builder.finish()
            })
            .collect()
    }

    /// `record::stamp` alone on 5 batches of ~16 KiB: 14 header bytes and a CRC-32C each.
    #[divan::bench(sample_count = 500)]
    fn stamp_5_batches_16k(bencher: Bencher) {
        let mut batches = five_batches();
        let bytes: usize = batches.iter().map(BytesMut::len).sum();
        let mut epoch = 0i16;
        bencher.counter(BytesCount::new(bytes)).bench_local(|| {
            epoch = epoch.wrapping_add(1) & 0x7fff;
            let id = ProducerIdAndEpoch::new(4242, epoch);
            let mut seq = Sequence::ZERO;
            for b in &mut batches {
                record::stamp(black_box(b), id, seq, false).expect("our batch");
                seq = seq.add(16);
            }
        });
    }
}

mod encode {
    use super::*;
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::records::{
        Compression as KpCompression, Record as KpRecord, RecordBatchEncoder, RecordEncodeOptions,
        TimestampType,
    };

    pub(crate) const RECORDS: usize = 100;
    pub(crate) const SIZES: &[usize] = &[100, 1024];

    /// 100 records with a 16-byte key, a `size`-byte value, no headers, and timestamps
    /// one millisecond apart.
    pub(crate) fn records(size: usize) -> Vec<Record> {
        (0..RECORDS)
            .map(|i| Record {
                key: Some(Bytes::from(format!("key-{i:012}"))),
                value: Some(Bytes::from(vec![(i % 251) as u8; size])),
                headers: Vec::new(),
                timestamp: 1_700_000_000_000 + i as i64,
            })
            .collect()
    }

    /// The same records for kafka-protocol, stamped with (4242, 0) and sequences from 0,
    /// as a producer sends them.
    pub(crate) fn kp_records(records: &[Record]) -> Vec<KpRecord> {
        records
            .iter()
            .enumerate()
            .map(|(i, r)| KpRecord {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: PID.id.0,
                producer_epoch: PID.epoch.0,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: i as i32,
                timestamp: r.timestamp,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: IndexMap::new(),
            })
            .collect()
    }

    /// Exact size of the encoded batch, so both encoders get a buffer that never grows.
    pub(crate) fn capacity(records: &[Record]) -> usize {
        let mut b = BatchBuilder::new(Compression::None, 0);
        for r in records {
            b.append(r);
        }
        b.size_in_bytes()
    }

    /// Ours: build and finish (CRC), producer fields unset.
    pub(crate) fn ours(records: &[Record], capacity: usize) -> BytesMut {
        let mut b = BatchBuilder::new(Compression::None, capacity);
        for r in records {
            b.append(r);
        }
        b.finish()
    }

    /// Ours as the producer does it: build, finish, then stamp (a second CRC).
    pub(crate) fn ours_stamped(records: &[Record], capacity: usize) -> BytesMut {
        let mut buf = ours(records, capacity);
        record::stamp(&mut buf, PID, Sequence::ZERO, false).expect("our batch");
        buf
    }

    pub(crate) fn kafka_protocol(records: &[KpRecord], capacity: usize) -> BytesMut {
        let mut buf = BytesMut::with_capacity(capacity);
        let options = RecordEncodeOptions {
            version: 2,
            compression: KpCompression::None,
        };
        RecordBatchEncoder::encode(&mut buf, records, &options).expect("encodes");
        buf
    }

    fn total_bytes(records: &[Record]) -> usize {
        capacity(records)
    }

    /// The floor any encoder pays: the keys and values copied into one buffer of the
    /// batch's size, then one CRC-32C over it. No framing at all.
    #[divan::bench(args = SIZES, sample_count = 500)]
    fn floor_copy_and_crc(bencher: Bencher, size: usize) {
        let records = records(size);
        let cap = capacity(&records);
        bencher
            .counter(BytesCount::new(total_bytes(&records)))
            .bench_local(|| {
                let mut buf = BytesMut::with_capacity(cap);
                for r in black_box(&records) {
                    buf.extend_from_slice(r.key.as_deref().unwrap_or_default());
                    buf.extend_from_slice(r.value.as_deref().unwrap_or_default());
                }
                let crc = crc32c::crc32c(&buf);
                (buf, crc)
            });
    }

    #[divan::bench(args = SIZES, sample_count = 500)]
    fn kacrab_build(bencher: Bencher, size: usize) {
        let records = records(size);
        let cap = capacity(&records);
        bencher
            .counter(BytesCount::new(total_bytes(&records)))
            .bench_local(|| ours(black_box(&records), cap));
    }

    #[divan::bench(args = SIZES, sample_count = 500)]
    fn kacrab_build_and_stamp(bencher: Bencher, size: usize) {
        let records = records(size);
        let cap = capacity(&records);
        bencher
            .counter(BytesCount::new(total_bytes(&records)))
            .bench_local(|| ours_stamped(black_box(&records), cap));
    }

    #[divan::bench(args = SIZES, sample_count = 500)]
    fn kafka_protocol_encoder(bencher: Bencher, size: usize) {
        let records = records(size);
        let cap = capacity(&records);
        let kp = kp_records(&records);
        bencher
            .counter(BytesCount::new(total_bytes(&records)))
            .bench_local(|| kafka_protocol(black_box(&kp), cap));
    }
}

/// Checks, once, that every fixture does what its benchmark claims.
fn sanity_checks() {
    // stamp_ack::prequeued: all N batches in one request, answered in partition order (the request rotated).
    for &n in PARTITIONS {
        let now = Timestamp::ZERO;
        let tps = partitions(n);
        let response = ok_all(&tps);
        let mut p = ready_producer(config(PREQUEUED_BATCH_SIZE), &tps, now);
        warm_up(&mut p, &tps, &response, now);
        for tp in &tps {
            p.send(tp, &small_record(), now).unwrap();
        }
        let Some(Request::Produce(r)) = p.poll_request(now) else {
            panic!("no request")
        };
        assert_eq!(
            r.batches.len(),
            n,
            "one request carries every partition's batch"
        );
        // The drain's round robin starts where the warm-up left it, so the request lists
        // the partitions rotated; the answer (in partition order) then matches after one
        // scan (`handle_produce_response` follows the previous answer's position).
        let first = tps
            .iter()
            .position(|tp| tp == &r.batches[0].partition)
            .unwrap();
        assert!(
            r.batches
                .iter()
                .enumerate()
                .all(|(i, b)| b.partition == tps[(first + i) % n]),
            "request order: the partitions rotated"
        );
        let h = record::read_header(&r.batches[0].data).unwrap();
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (PID.id, PID.epoch, 2)
        );
        p.handle_produce_response(r.id, &response, now).unwrap();
        assert!(p.poll_request(now).is_none());
        let mut delivered = 0;
        while p.poll_event().is_some() {
            delivered += 1;
        }
        assert_eq!(delivered, n);
        assert!(p.is_idle());
    }

    // restamp: the bump rewrites all 5 batches, the resend is the first one under the
    // new epoch at sequence 0, and everything is then delivered.
    let mut s = restamp::five_in_flight();
    let Request::Produce(r) = restamp::recover_to_first_resend(&mut s) else {
        panic!()
    };
    let h = record::read_header(&r.batches[0].data).unwrap();
    assert_eq!(h.producer_epoch.0, 1);
    assert_eq!(h.base_sequence, 0);
    assert_eq!(s.p.stats().epoch_bumps, 1);
    assert_eq!(s.p.sequence_state(&s.tp).unwrap().in_flight_batches, 5);
    assert_eq!(
        s.p.sequence_state(&s.tp).unwrap().next_sequence,
        Sequence(80)
    );
    let mut s = restamp::five_in_flight();
    assert_eq!(restamp::recover_to_all_delivered(&mut s), 5);
    assert!(s.p.is_idle());
    assert_eq!(s.p.stats().epoch_bumps, 1);

    // encode: both encoders produce the same bytes (ours stamped), to the byte.
    for &size in encode::SIZES {
        let records = encode::records(size);
        let cap = encode::capacity(&records);
        let ours = encode::ours_stamped(&records, cap);
        let theirs = encode::kafka_protocol(&encode::kp_records(&records), cap);
        assert_eq!(ours.len(), cap);
        assert_eq!(
            &ours[..],
            &theirs[..],
            "identical batches for {size}-byte records"
        );
    }
}
