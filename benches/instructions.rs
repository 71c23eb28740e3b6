//! Instruction counts (Callgrind, through gungraun) for the paths `benches/core.rs` times:
//! deterministic figures that do not depend on the machine's load. Run with
//! `cargo bench --bench instructions`; it needs valgrind and the matching runner,
//! `cargo install gungraun-runner --version 0.20.0`. BENCHMARKS.md has the figures.
//!
//! Each benchmark runs once; its setup (building and warming the producer, queueing the
//! batches) and the drop of what it returns are not counted.

use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use gungraun::{library_benchmark, library_benchmark_group, main};
use kacrab_idempotence::record::{self, BatchBuilder, Compression};
use kacrab_idempotence::{
    Event, KafkaError, Metadata, NodeId, PartitionMetadata, PartitionResponse, ProduceResponse,
    Producer, ProducerConfig, ProducerIdAndEpoch, Record, Request, RequestId, Sequence, Timestamp,
    Topic, TopicPartition,
};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::records::{
    Compression as KpCompression, Record as KpRecord, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType,
};

const PID: ProducerIdAndEpoch = ProducerIdAndEpoch::new(4242, 0);
const NOW: Timestamp = Timestamp::ZERO;
/// Batches per `send_stamp_ack` run; divide its counts by this.
const CYCLES: usize = 100;

// ------------------------------------------------------------------ fixtures

fn partitions(n: usize) -> Vec<TopicPartition> {
    let topic = Topic::new("bench");
    (0..n)
        .map(|i| TopicPartition {
            topic: topic.clone(),
            partition: i32::try_from(i).unwrap(),
        })
        .collect()
}

fn config(batch_size: usize) -> ProducerConfig {
    let mut b = ProducerConfig::builder();
    b.linger(Duration::ZERO)
        .batch_size(batch_size)
        .retry_backoff(Duration::from_millis(1))
        .retry_backoff_max(Duration::from_millis(1));
    b.build().expect("valid config")
}

fn ok_all(tps: &[TopicPartition]) -> ProduceResponse {
    ProduceResponse::new(
        tps.iter()
            .map(|tp| PartitionResponse::ok(tp.clone(), 0))
            .collect(),
    )
    .with_throttle(Duration::ZERO)
}

fn small_record() -> Record {
    Record::from_value(Bytes::from_static(b"0123456789abcdef"), 1_700_000_000_000)
}

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
            delivered += usize::from(matches!(e, Event::Delivered { .. }));
            p.recycle_event(e);
        }
    }
    delivered
}

/// A producer with its id and its leaders, warmed by two records per partition.
fn ready(tps: &[TopicPartition], response: &ProduceResponse, batch_size: usize) -> Producer {
    let mut p = Producer::new(config(batch_size), NOW);
    let md = Metadata::new(
        tps.iter()
            .map(|tp| PartitionMetadata::new(tp.clone(), Some(NodeId(1)), 0))
            .collect(),
    );
    p.handle_metadata(None, &md, NOW).expect("metadata");
    let Some(Request::InitProducerId(r)) = p.poll_request(NOW) else {
        panic!("expected InitProducerId")
    };
    p.handle_producer_id(r.id, Ok(PID), NOW).expect("pid");
    while p.poll_event().is_some() {}
    for _ in 0..2 {
        for tp in tps {
            p.send(tp, &small_record(), NOW).expect("queued");
        }
        assert_eq!(drain_and_ack(&mut p, response, NOW), tps.len());
    }
    p
}

struct Fixture {
    p: Producer,
    tps: Vec<TopicPartition>,
    response: ProduceResponse,
    responses: Vec<ProduceResponse>,
}

fn steady(n: usize) -> Fixture {
    steady_with(n, 16_384)
}

fn steady_with(n: usize, batch_size: usize) -> Fixture {
    let tps = partitions(n);
    let response = ok_all(&tps);
    let responses: Vec<ProduceResponse> = tps
        .iter()
        .map(|tp| ok_all(std::slice::from_ref(tp)))
        .collect();
    let mut p = ready(&tps, &response, batch_size);
    // One more batch, so glibc consolidates the warm-up's freed chunks here (a one-off
    // million instructions) rather than in the first measured `send`.
    p.send(&tps[0], &small_record(), NOW).expect("queued");
    assert_eq!(drain_and_ack(&mut p, &responses[0], NOW), 1);
    Fixture {
        p,
        tps,
        response,
        responses,
    }
}

/// One batch queued on each of `n` partitions; `batch.size` 1 KiB as in `benches/core.rs`.
fn prequeued(n: usize) -> Fixture {
    let mut f = steady_with(n, 1024);
    for tp in &f.tps {
        f.p.send(tp, &small_record(), NOW).expect("queued");
    }
    f
}

// ------------------------------------------------------------------ stamp and ack

// `poll_request` until `None` (stamps N batches, one request), the answer, the N events.
#[library_benchmark]
#[benches::partitions(args = [1, 100, 10_000], setup = prequeued)]
fn stamp_ack_prequeued(mut f: Fixture) -> Fixture {
    let delivered = drain_and_ack(&mut f.p, &f.response, NOW);
    assert_eq!(delivered, f.tps.len());
    f
}

// 100 × (`send` → `poll_request` → `handle_produce_response` → `poll_event`), round
// robin over N partitions, one batch per request. Divide by 100.
#[library_benchmark]
#[benches::partitions(args = [1, 100, 10_000], setup = steady)]
fn send_stamp_ack_x100(mut f: Fixture) -> Fixture {
    let record = small_record();
    for i in 0..CYCLES {
        let k = i % f.tps.len();
        f.p.send(&f.tps[k], &record, NOW).expect("queued");
        let Some(request) = f.p.poll_request(NOW) else {
            unreachable!()
        };
        let Request::Produce(r) = &request else {
            unreachable!()
        };
        let id = r.id;
        f.p.recycle(request);
        f.p.handle_produce_response(id, &f.responses[k], NOW)
            .expect("known request");
        while let Some(e) = f.p.poll_event() {
            black_box(&e);
            f.p.recycle_event(e);
        }
    }
    f
}

// The one-batch path, call by call.
#[library_benchmark]
#[bench::one(setup = prequeued, args = (1))]
fn phase_poll_request(mut f: Fixture) -> (Fixture, Option<Request>) {
    let r = f.p.poll_request(NOW);
    (f, r)
}

fn answered_pending(n: usize) -> (Fixture, RequestId) {
    let mut f = prequeued(n);
    let Some(request) = f.p.poll_request(NOW) else {
        panic!("no request")
    };
    let Request::Produce(r) = &request else {
        panic!("no produce request")
    };
    let id = r.id;
    f.p.recycle(request);
    (f, id)
}

#[library_benchmark]
#[bench::one(setup = answered_pending, args = (1))]
fn phase_handle_produce_response((mut f, id): (Fixture, RequestId)) -> Fixture {
    f.p.handle_produce_response(id, &f.response, NOW)
        .expect("known");
    f
}

fn events_pending(n: usize) -> Fixture {
    let (mut f, id) = answered_pending(n);
    f.p.handle_produce_response(id, &f.response, NOW)
        .expect("known");
    f
}

#[library_benchmark]
#[bench::one(setup = events_pending, args = (1))]
fn phase_poll_event(mut f: Fixture) -> (Fixture, Option<Event>, Option<Event>) {
    let a = f.p.poll_event();
    let b = f.p.poll_event();
    (f, a, b)
}

// ------------------------------------------------------------------ restamp

fn kib_record(i: usize) -> Record {
    Record::from_value(
        Bytes::from(vec![(i % 251) as u8; 1000]),
        1_700_000_000_000 + i as i64,
    )
}

/// 5 batches of ~16 KiB in flight for one partition, each in its own request.
fn five_in_flight() -> (Fixture, Vec<RequestId>) {
    let mut f = steady(1);
    for i in 0..5 * 16 {
        f.p.send(&f.tps[0], &kib_record(i), NOW).expect("queued");
    }
    let mut ids = Vec::new();
    while let Some(Request::Produce(r)) = f.p.poll_request(NOW) {
        ids.push(r.id);
    }
    assert_eq!(ids.len(), 5);
    (f, ids)
}

// OUT_OF_ORDER_SEQUENCE_NUMBER on all 5, then the `poll_request` that bumps the epoch,
// rewrites the 5 batches (5 stamps, 5 CRCs over 16 KiB) and returns the first resend.
#[library_benchmark]
#[bench::five(setup = five_in_flight)]
fn epoch_bump_5_in_flight((mut f, ids): (Fixture, Vec<RequestId>)) -> (Fixture, Option<Request>) {
    let error = ProduceResponse::new(vec![PartitionResponse::error(
        f.tps[0].clone(),
        KafkaError::OutOfOrderSequenceNumber,
    )])
    .with_throttle(Duration::ZERO);
    for &id in &ids {
        f.p.handle_produce_response(id, &error, NOW).expect("known");
    }
    let resend = f.p.poll_request(NOW + Duration::from_millis(2));
    while let Some(e) = f.p.poll_event() {
        black_box(&e);
    }
    (f, resend)
}

fn five_batches() -> Vec<BytesMut> {
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

// `record::stamp` on 5 batches of ~16 KiB.
#[library_benchmark]
#[bench::five(setup = five_batches)]
fn stamp_5_batches_16k(mut batches: Vec<BytesMut>) -> Vec<BytesMut> {
    let mut seq = Sequence::ZERO;
    for b in &mut batches {
        record::stamp(black_box(b), PID, seq, false).expect("our batch");
        seq = seq.add(16);
    }
    batches
}

// ------------------------------------------------------------------ encode

struct Records {
    ours: Vec<Record>,
    theirs: Vec<KpRecord>,
    capacity: usize,
}

fn records(size: usize) -> Records {
    let ours: Vec<Record> = (0..100)
        .map(|i| Record {
            key: Some(Bytes::from(format!("key-{i:012}"))),
            value: Some(Bytes::from(vec![(i % 251) as u8; size])),
            headers: Vec::new(),
            timestamp: 1_700_000_000_000 + i as i64,
        })
        .collect();
    let theirs = ours
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
        .collect();
    let mut b = BatchBuilder::new(Compression::None, 0);
    for r in &ours {
        b.append(r);
    }
    let capacity = b.size_in_bytes();
    Records {
        ours,
        theirs,
        capacity,
    }
}

// Ours: build, finish (CRC), stamp (second CRC), as the producer does.
#[library_benchmark]
#[benches::value_size(args = [100, 1024], setup = records)]
fn encode_kacrab(r: Records) -> (Records, BytesMut) {
    let mut b = BatchBuilder::new(Compression::None, r.capacity);
    for rec in black_box(&r.ours) {
        b.append(rec);
    }
    let mut buf = b.finish();
    record::stamp(&mut buf, PID, Sequence::ZERO, false).expect("our batch");
    (r, buf)
}

// Ours as the target measures it: build and finish (one CRC), producer fields unset.
#[library_benchmark]
#[benches::value_size(args = [100, 1024], setup = records)]
fn encode_kacrab_finish(r: Records) -> (Records, BytesMut) {
    let mut b = BatchBuilder::new(Compression::None, r.capacity);
    for rec in black_box(&r.ours) {
        b.append(rec);
    }
    let buf = b.finish();
    (r, buf)
}

// The floor any encoder pays: keys and values copied into one buffer, one CRC-32C.
#[library_benchmark]
#[benches::value_size(args = [100, 1024], setup = records)]
fn encode_floor_copy_and_crc(r: Records) -> (Records, BytesMut, u32) {
    let mut buf = BytesMut::with_capacity(r.capacity);
    for rec in black_box(&r.ours) {
        buf.extend_from_slice(rec.key.as_deref().unwrap_or_default());
        buf.extend_from_slice(rec.value.as_deref().unwrap_or_default());
    }
    let crc = crc32c::crc32c(&buf);
    (r, buf, crc)
}

/// An open batch holding 50 of the records, and the 51st to append.
fn half_open(size: usize) -> (BatchBuilder, Record) {
    let r = records(size);
    let mut b = BatchBuilder::new(Compression::None, r.capacity);
    for rec in &r.ours[..50] {
        b.append(rec);
    }
    (b, r.ours[50].clone())
}

// Appending one record (16 B key, 100 B value) to an open batch with room for it.
#[library_benchmark]
#[benches::value_size(args = [100], setup = half_open)]
fn append_one_record((mut b, rec): (BatchBuilder, Record)) -> (BatchBuilder, Record) {
    b.append(black_box(&rec));
    (b, rec)
}

/// A producer with one partition whose open batch (`batch.size` 1 MiB, so 100 records
/// fit) already holds a record.
fn open_batch(_: usize) -> Fixture {
    let mut f = steady_with(1, 1 << 20);
    f.p.send(&f.tps[0], &small_record(), NOW).expect("queued");
    let _ = f.p.poll_timeout();
    f
}

// 100 × (`send` of a small record into the partition's open batch → `poll_timeout`), as
// a driver's loop does per send. Divide by 100.
#[library_benchmark]
#[benches::records(args = [100], setup = open_batch)]
fn send_into_open_batch_x100(mut f: Fixture) -> Fixture {
    let record = small_record();
    for _ in 0..CYCLES {
        f.p.send(&f.tps[0], &record, NOW).expect("queued");
        black_box(f.p.poll_timeout());
    }
    f
}

// kafka-protocol 0.18's `RecordBatchEncoder` on the same records (stamped in them).
#[library_benchmark]
#[benches::value_size(args = [100, 1024], setup = records)]
fn encode_kafka_protocol(r: Records) -> (Records, BytesMut) {
    let mut buf = BytesMut::with_capacity(r.capacity);
    let options = RecordEncodeOptions {
        version: 2,
        compression: KpCompression::None,
    };
    RecordBatchEncoder::encode(&mut buf, black_box(&r.theirs), &options).expect("encodes");
    (r, buf)
}

library_benchmark_group!(
    name = stamp_ack,
    benchmarks = [
        stamp_ack_prequeued,
        send_stamp_ack_x100,
        phase_poll_request,
        phase_handle_produce_response,
        phase_poll_event
    ]
);
library_benchmark_group!(
    name = restamp,
    benchmarks = [epoch_bump_5_in_flight, stamp_5_batches_16k]
);
library_benchmark_group!(
    name = encode,
    benchmarks = [
        encode_kacrab,
        encode_kacrab_finish,
        encode_floor_copy_and_crc,
        append_one_record,
        send_into_open_batch_x100,
        encode_kafka_protocol
    ]
);

main!(library_benchmark_groups = stamp_ack, restamp, encode);
