//! The core driven by hand: a single-threaded event loop against an in-process toy broker,
//! showing every `handle_*` and `poll_*` call a real driver makes. Copy this loop, put
//! sockets and a clock where the toy network and the fake time are, and you have a driver.
//!
//! ```text
//! cargo run -p kacrab-examples --example custom_event_loop
//! ```
//!
//! The toy broker keeps one log per partition and Kafka's duplicate check: a batch whose
//! sequence it already appended is answered with its first offset, not appended again.
//! Two faults show why that matters: one Produce is applied but its connection drops
//! before the answer, and one answer is simply lost, so the core's request timeout fires.
//! Both retries keep their sequences, and every record lands exactly once, in order.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use kacrab_idempotence::record::{decode_records, read_header};
use kacrab_idempotence::*;

/// One partition of the toy broker: the keys in the log, and the producer state
/// Kafka keeps per partition (next sequence, offsets of appended batches by sequence).
#[derive(Default)]
struct Log {
    keys: Vec<Bytes>,
    producer: i64,
    next_sequence: i32,
    batches: BTreeMap<i32, i64>,
}

/// Applies one batch and answers for it, as a partition leader does.
fn append(logs: &mut BTreeMap<TopicPartition, Log>, batch: &ProduceBatch) -> PartitionResponse {
    let header = read_header(&batch.data).expect("the core writes valid batches");
    let (tp, log) = (
        batch.partition.clone(),
        logs.entry(batch.partition.clone()).or_default(),
    );
    if header.producer_id.0 != log.producer {
        (log.producer, log.next_sequence, log.batches) = (header.producer_id.0, 0, BTreeMap::new());
    }
    if let Some(&offset) = log.batches.get(&header.base_sequence) {
        return PartitionResponse::ok(tp, offset); // a retry of a batch already in the log
    }
    if header.base_sequence != log.next_sequence {
        return PartitionResponse::error(tp, KafkaError::OutOfOrderSequenceNumber);
    }
    let offset = log.keys.len() as i64;
    let records = decode_records(&batch.data).expect("valid batch");
    log.keys
        .extend(records.into_iter().map(|r| r.key.unwrap_or_default()));
    log.batches.insert(header.base_sequence, offset);
    log.next_sequence += header.record_count;
    PartitionResponse::ok(tp, offset)
}

macro_rules! say {
    ($now:expr, $($fmt:tt)*) => { println!("{:>5} ms  {}", $now.as_millis(), format!($($fmt)*)) };
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = ProducerConfig::builder()
        .request_timeout(Duration::from_secs(1))
        .build()?;
    let mut now = Timestamp::ZERO; // the clock is ours: time moves when the loop moves it
    let mut producer = Producer::new(config, now);
    let mut logs = BTreeMap::new();
    let mut next_producer_id = 0;
    // The "network": requests in flight, each with the time its answer arrives.
    let mut network: VecDeque<(Timestamp, Request)> = VecDeque::new();
    let (mut sent, mut produce_requests) = (0u64, 0);

    loop {
        // 0. The application: `send` queues a record (one every 2 ms here); `close` says
        //    no more will come, and everything queued still goes out.
        while sent < 30 && now >= Timestamp::from_millis(2 * sent) {
            let record = Record::new(Some(Bytes::from(sent.to_string())), Some("v".into()), 0);
            producer.send(
                &TopicPartition::new("events", (sent % 3) as i32),
                &record,
                now,
            )?;
            sent += 1;
            if sent == 30 {
                producer.close();
            }
        }
        // 1. poll_request until None: what the core wants on the wire, in order.
        while let Some(request) = producer.poll_request(now) {
            if let Request::CloseConnection { node } = request {
                // A request timed out: the core already failed everything on that
                // connection as possibly written. Drop the answers still "in the socket".
                say!(now, "close the connection to {node:?}");
                network.retain(|(_, r)| !matches!(r, Request::Produce(p) if p.node == node));
            } else {
                network.push_back((now + Duration::from_millis(1), request));
            }
        }
        // 2. poll_event until None: what the application learns.
        while let Some(event) = producer.poll_event() {
            match event {
                Event::Delivered {
                    partition,
                    records,
                    base_offset,
                    ..
                } => {
                    say!(
                        now,
                        "{partition}: {} delivered at {base_offset:?}",
                        records.len()
                    );
                }
                other => say!(now, "{other:?}"),
            }
        }
        if producer.is_closed() {
            break;
        }
        // 3. poll_timeout: sleep until the core's deadline, the next answer or the next
        //    application call, whichever is first (a real driver blocks in poll(2) here).
        let next_answer = network.front().map(|(at, _)| *at);
        let next_send = (sent < 30).then(|| Timestamp::from_millis(2 * sent));
        let wake = [producer.poll_timeout(), next_answer, next_send]
            .into_iter()
            .flatten()
            .min();
        now = now.max(wake.expect("an open producer always waits for something"));

        // 4. handle_*: feed back every answer that arrived, with the id of its request.
        while network.front().is_some_and(|(at, _)| *at <= now) {
            match network.pop_front().expect("checked").1 {
                Request::InitProducerId(r) => {
                    next_producer_id += 1;
                    let id = ProducerIdAndEpoch::new(next_producer_id, 0);
                    producer.handle_producer_id(r.id, Ok(id), now)?;
                }
                Request::Metadata(r) => {
                    let leader = |p| {
                        PartitionMetadata::new(
                            TopicPartition::new(r.topics[0].as_str(), p),
                            Some(NodeId(1)),
                            0,
                        )
                    };
                    let metadata = Metadata::new((0..3).map(leader).collect());
                    producer.handle_metadata(Some(r.id), &metadata, now)?;
                }
                Request::Produce(r) => {
                    let partitions = r.batches.iter().map(|b| append(&mut logs, b)).collect();
                    let response = ProduceResponse::new(partitions).with_throttle(Duration::ZERO);
                    produce_requests += 1;
                    if produce_requests == 2 {
                        say!(now, "request {} applied, then its connection dropped", r.id);
                        producer.handle_request_failed(r.id, RequestFailure::Disconnected, now)?;
                    } else if produce_requests == 4 {
                        say!(now, "request {} applied, its answer lost", r.id);
                    } else {
                        producer.handle_produce_response(r.id, &response, now)?;
                    }
                }
                Request::CloseConnection { .. } => unreachable!("never put on the network"),
                // Only a producer with a transactional.id asks for these.
                other => unreachable!("not transactional: {other:?}"),
            }
        }
        // 5. handle_timeout once the clock reached the core's deadline.
        if producer
            .poll_timeout()
            .is_some_and(|deadline| deadline <= now)
        {
            producer.handle_timeout(now);
        }
    }

    println!("{:?}", producer.stats());
    for (partition, log) in &logs {
        let keys: Vec<String> = log
            .keys
            .iter()
            .map(|k| String::from_utf8_lossy(k).into())
            .collect();
        let sent: Vec<String> = (0..30)
            .filter(|i| i % 3 == partition.partition)
            .map(|i| i.to_string())
            .collect();
        assert_eq!(
            keys, sent,
            "{partition}: every record exactly once, in send order"
        );
        println!("{partition}: {}", keys.join(" "));
    }
    println!("every record exactly once, in send order");
    Ok(())
}
