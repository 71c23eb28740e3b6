//! Differences from Java's producer found by the differential conformance harness
//! (`crates/kacrab-conformance`, issue 15) that were not documented departures but core
//! bugs, now fixed. Each test states Java's rule and failed on the core before its fix.
//! Minimal traces: `docs/design.md`, "Differential conformance against Java".

use bytes::Bytes;
use kacrab_idempotence::*;

fn producer(batch_size: u32, linger_ms: u32) -> Producer {
    let mut b = ProducerConfig::builder();
    b.set("batch.size", &batch_size.to_string()).unwrap();
    b.set("linger.ms", &linger_ms.to_string()).unwrap();
    Producer::new(b.build().unwrap(), Timestamp::ZERO)
}

/// Drains every request at `now`, answering InitProducerId and Metadata (every partition
/// of `t` led by node 0); returns the Produce requests, each as (partition, record count).
fn produce_requests(p: &mut Producer, partitions: i32, now: Timestamp) -> Vec<Vec<(i32, i32)>> {
    let mut out = Vec::new();
    while let Some(r) = p.poll_request(now) {
        match r {
            Request::InitProducerId(r) => {
                p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(1000, 0)), now)
                    .unwrap();
            }
            Request::Metadata(r) => {
                let md = Metadata::new(
                    (0..partitions)
                        .map(|i| {
                            PartitionMetadata::new(TopicPartition::new("t", i), Some(NodeId(0)), 0)
                        })
                        .collect(),
                );
                p.handle_metadata(Some(r.id), &md, now).unwrap();
            }
            Request::Produce(r) => out.push(
                r.batches
                    .iter()
                    .map(|b| {
                        let h = record::read_header(&b.data).unwrap();
                        (b.partition.partition, h.record_count)
                    })
                    .collect(),
            ),
            _ => {}
        }
    }
    out
}

/// Java sizes a batch's buffer as `max(batch.size, estimateSizeInBytesUpperBound(first
/// record))` (`RecordAccumulator.append`) and `MemoryRecordsBuilder.hasRoomFor` checks
/// against that buffer, so a record larger than `batch.size` leaves room for a small one
/// behind it until linger makes the batch ready. The core closed such a batch at once.
/// The second record (8 value bytes, 15 encoded) fits only under Java's exact bound
/// (61 + 21 + 1 + 2 + 300 + 1 = 386 bytes; the batch holds 370): a bound taken from
/// the core's record-size estimate (382) would not take it.
#[test]
fn a_batch_opened_by_a_record_larger_than_batch_size_takes_small_records_like_java() {
    let mut p = producer(200, 10);
    let tp = TopicPartition::new("t", 0);
    let t0 = Timestamp::ZERO;
    p.send(&tp, &Record::from_value(Bytes::from(vec![0u8; 300]), 0), t0)
        .unwrap();
    p.send(&tp, &Record::from_value(Bytes::from(vec![0u8; 8]), 0), t0)
        .unwrap();
    let mut sent = produce_requests(&mut p, 1, t0);
    sent.extend(produce_requests(&mut p, 1, Timestamp::from_millis(10)));
    assert_eq!(
        sent,
        vec![vec![(0, 2)]],
        "Java sends one batch of both records"
    );
}

/// Java's `RecordAccumulator.drain` takes the first batch of every partition led by a
/// node that has a ready batch, whether that partition's linger has passed or not; the
/// core sends only batches that are ready themselves.
#[test]
fn a_ready_node_takes_the_lingering_batches_of_its_other_partitions_like_java() {
    let mut p = producer(500, 10);
    let t0 = Timestamp::ZERO;
    let (p0, p1) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
    // p0: a full batch (the second record does not fit); p1: one lingering record.
    p.send(&p0, &Record::from_value(Bytes::from(vec![0u8; 300]), 0), t0)
        .unwrap();
    p.send(&p1, &Record::from_value(Bytes::from(vec![0u8; 50]), 0), t0)
        .unwrap();
    p.send(&p0, &Record::from_value(Bytes::from(vec![0u8; 300]), 0), t0)
        .unwrap();
    let sent = produce_requests(&mut p, 2, t0);
    assert_eq!(
        sent.first(),
        Some(&vec![(0, 1), (1, 1)]),
        "Java's first request carries p0's full batch and p1's lingering one"
    );
}

/// Metadata leading partition `i` of `t` by node `leaders[i]`, at leader epoch `epoch`.
fn led_by(leaders: &[i32], epoch: i32) -> Metadata {
    Metadata::new(
        leaders
            .iter()
            .enumerate()
            .map(|(i, n)| {
                PartitionMetadata::new(
                    TopicPartition::new("t", i32::try_from(i).unwrap()),
                    Some(NodeId(*n)),
                    epoch,
                )
            })
            .collect(),
    )
}

/// Drains every request at `now` (InitProducerId and Metadata answered, partitions led
/// as `leaders` says); returns the Produce requests as (node, [(partition, records)]).
fn produce_requests_led(
    p: &mut Producer,
    leaders: &[i32],
    epoch: i32,
    now: Timestamp,
) -> Vec<(i32, Vec<(i32, i32)>)> {
    let mut out = Vec::new();
    while let Some(r) = p.poll_request(now) {
        match r {
            Request::InitProducerId(r) => {
                p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(1000, 0)), now)
                    .unwrap();
            }
            Request::Metadata(r) => {
                p.handle_metadata(Some(r.id), &led_by(leaders, epoch), now)
                    .unwrap();
            }
            Request::Produce(r) => out.push((
                r.node.0,
                r.batches
                    .iter()
                    .map(|b| {
                        let h = record::read_header(&b.data).unwrap();
                        (b.partition.partition, h.record_count)
                    })
                    .collect(),
            )),
            _ => {}
        }
    }
    out
}

/// With `max.in.flight.requests.per.connection` 1 Java's Sender mutes every partition it
/// drains until its answer (`Sender.sendProducerData`, `RecordAccumulator.mutePartition`),
/// and `RecordAccumulator.batchReady` lets only an unmuted partition make its leader
/// ready: a partition with a batch on the wire does not carry another partition's
/// lingering batch along. The core let it (found by the harness: `conformance/traces/
/// muted_partition_makes_no_node_ready.jsonl`).
#[test]
fn a_partition_with_a_batch_on_the_wire_makes_no_node_ready_at_max_in_flight_one() {
    let mut b = ProducerConfig::builder();
    b.set("batch.size", "500").unwrap();
    b.set("linger.ms", "10").unwrap();
    b.set("max.in.flight.requests.per.connection", "1").unwrap();
    let mut p = Producer::new(b.build().unwrap(), Timestamp::ZERO);
    let t0 = Timestamp::ZERO;
    let (p0, p1) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
    let big = || Record::from_value(Bytes::from(vec![0u8; 300]), 0);
    // p1 (node 1): a full batch goes at once, a second full one waits behind it.
    for _ in 0..3 {
        p.send(&p1, &big(), t0).unwrap();
    }
    let first = produce_requests_led(&mut p, &[0, 1], 0, t0);
    assert_eq!(first, vec![(1, vec![(1, 1)])]);
    // p1 moves to node 0 with its first batch still on the wire to node 1; p0 gets a
    // lingering record on node 0.
    p.handle_metadata(None, &led_by(&[0, 0], 1), t0).unwrap();
    p.send(&p0, &Record::from_value(Bytes::from(vec![0u8; 10]), 0), t0)
        .unwrap();
    assert_eq!(
        produce_requests_led(&mut p, &[0, 0], 1, t0),
        vec![],
        "node 0 is not ready: p1 is muted and p0 lingers"
    );
    assert_eq!(
        produce_requests_led(&mut p, &[0, 0], 1, Timestamp::from_millis(10)),
        vec![(0, vec![(0, 1)])],
        "p0's batch goes when its linger is over"
    );
}
