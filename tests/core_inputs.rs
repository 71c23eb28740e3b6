//! The core never panics on broker input, and its invariants hold, whatever the broker
//! and the network say: random answers (any error code, any offset, any leader hint,
//! partitions the request did not carry, partitions left out), random failures, random
//! metadata and random time, after random sends. This is not a model of Kafka (the
//! simulator is); it is the adversary.

use std::time::Duration;

use bytes::Bytes;
use kacrab_idempotence::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Input {
    Send {
        partition: i32,
        size: usize,
    },
    Answer {
        pick: usize,
        error: i16,
        offset: i64,
        log_start: i64,
        hint: Option<(i32, i32)>,
        drop_one: bool,
        extra: bool,
        /// KIP-467 per-record error indices (any, in or out of the batch).
        record_errors: Vec<i32>,
    },
    Fail {
        pick: usize,
        written: bool,
    },
    Metadata {
        partition: i32,
        leader: Option<i32>,
        epoch: i32,
        /// Names an outstanding Produce request's id instead of none (a driver's mix-up).
        wrong_id: Option<usize>,
    },
    Advance {
        ms: u64,
    },
    Flush,
    Close,
}

fn input() -> impl Strategy<Value = Input> {
    let codes = prop_oneof![
        Just(0i16),
        Just(6),
        Just(7),
        Just(10),
        Just(19),
        Just(20),
        Just(29),
        Just(31),
        Just(35),
        Just(43),
        Just(45),
        Just(46),
        Just(47),
        Just(59),
        Just(87),
        Just(-1),
        any::<i16>(),
    ];
    prop_oneof![
        4 => (0..4i32, 0..3000usize).prop_map(|(partition, size)| Input::Send { partition, size }),
        4 => (any::<usize>(), codes, prop_oneof![Just(0i64), 0..1000i64, any::<i64>()], prop_oneof![Just(-1i64), 0..2000i64],
              proptest::option::of((0..4i32, -1..5i32)), any::<bool>(), any::<bool>(), proptest::collection::vec(-2..40i32, 0..4))
            .prop_map(|(pick, error, offset, log_start, hint, drop_one, extra, record_errors)| Input::Answer { pick, error, offset, log_start, hint, drop_one, extra, record_errors }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(pick, written)| Input::Fail { pick, written }),
        1 => (0..4i32, proptest::option::of(0..4i32), -1..5i32, proptest::option::of(any::<usize>()))
            .prop_map(|(partition, leader, epoch, wrong_id)| Input::Metadata { partition, leader, epoch, wrong_id }),
        2 => (0..3000u64).prop_map(|ms| Input::Advance { ms }),
        1 => Just(Input::Flush),
        1 => Just(Input::Close),
    ]
}

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn run(inputs: Vec<Input>, max_in_flight: u32, idempotence: bool) {
    let mut cfg = ProducerConfig::builder();
    cfg.enable_idempotence(idempotence)
        .max_in_flight_requests_per_connection(max_in_flight)
        .linger(Duration::from_millis(5))
        .batch_size(4096)
        .request_timeout(Duration::from_millis(1000))
        .delivery_timeout(Duration::from_millis(5000))
        .retry_backoff(Duration::from_millis(10))
        .retry_backoff_max(Duration::from_millis(100));
    let mut now = Timestamp::ZERO;
    let mut p = Producer::new(cfg.build().unwrap(), now);
    let mut outstanding: Vec<ProduceRequest> = Vec::new();
    let mut sent: u64 = 0;
    let mut outcomes: std::collections::HashMap<RecordId, u32> = Default::default();
    let pump = |p: &mut Producer,
                now: Timestamp,
                outstanding: &mut Vec<ProduceRequest>,
                outcomes: &mut std::collections::HashMap<RecordId, u32>| {
        while let Some(r) = p.poll_request(now) {
            match r {
                Request::Produce(r) => outstanding.push(r),
                Request::InitProducerId(r) => {
                    let _ = p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(1, 0)), now);
                }
                Request::Metadata(r) => {
                    let partitions = (0..4)
                        .map(|i| PartitionMetadata::new(tp(i), Some(NodeId(i % 2)), 0))
                        .collect();
                    let _ = p.handle_metadata(Some(r.id), &Metadata::new(partitions), now);
                }
                Request::CloseConnection { node } => outstanding.retain(|o| o.node != node),
                other => panic!("transactional request from an idempotent producer: {other:?}"),
            }
        }
        while let Some(e) = p.poll_event() {
            if let Event::Delivered { records, .. } | Event::Failed { records, .. } = e {
                for r in records {
                    *outcomes.entry(r).or_default() += 1;
                }
            }
        }
        p.assert_invariants();
    };
    for input in inputs {
        match input {
            Input::Send { partition, size } => {
                let record = record::Record::from_value(Bytes::from(vec![b'x'; size]), 0);
                if p.send(&tp(partition), &record, now).is_ok() {
                    sent += 1;
                }
            }
            Input::Answer {
                pick,
                error,
                offset,
                log_start,
                hint,
                drop_one,
                extra,
                record_errors,
            } => {
                if outstanding.is_empty() {
                    continue;
                }
                let r = outstanding.remove(pick % outstanding.len());
                let mut partitions: Vec<PartitionResponse> = r
                    .batches
                    .iter()
                    .map(|b| {
                        PartitionResponse::error(b.partition.clone(), KafkaError::from_code(error))
                            .with_base_offset(offset)
                            .with_log_start_offset(log_start)
                            .with_log_append_time(offset.wrapping_add(7))
                            .with_current_leader(hint.map(|(l, e)| LeaderHint::new(NodeId(l), e)))
                            .with_record_errors(
                                record_errors
                                    .iter()
                                    .map(|&i| RecordError::new(i, Some(format!("record {i}"))))
                                    .collect(),
                            )
                            .with_error_message(Some("the broker says".to_owned()))
                    })
                    .collect();
                if drop_one && !partitions.is_empty() {
                    partitions.remove(0);
                }
                if extra {
                    partitions.push(PartitionResponse::ok(tp(99), 5));
                }
                let _ = p.handle_produce_response(
                    r.id,
                    &ProduceResponse::new(partitions)
                        .with_throttle(Duration::from_millis(offset.rem_euclid(50) as u64)),
                    now,
                );
            }
            Input::Fail { pick, written } => {
                if outstanding.is_empty() {
                    continue;
                }
                let r = outstanding.remove(pick % outstanding.len());
                let failure = if written {
                    RequestFailure::Disconnected
                } else {
                    RequestFailure::NotSent
                };
                let _ = p.handle_request_failed(r.id, failure, now);
            }
            Input::Metadata {
                partition,
                leader,
                epoch,
                wrong_id,
            } => {
                let md = Metadata::new(vec![PartitionMetadata::new(
                    tp(partition),
                    leader.map(NodeId),
                    epoch,
                )]);
                let id = wrong_id
                    .filter(|_| !outstanding.is_empty())
                    .map(|pick| outstanding[pick % outstanding.len()].id);
                let refused = p.handle_metadata(id, &md, now);
                if id.is_some() {
                    // Not the metadata request: refused, and the Produce keeps waiting.
                    assert!(
                        matches!(refused, Err(InputError::Mismatch { .. })),
                        "{refused:?}"
                    );
                }
            }
            Input::Advance { ms } => {
                now = now + Duration::from_millis(ms);
                p.handle_timeout(now);
            }
            Input::Flush => p.flush(),
            Input::Close => p.close(),
        }
        pump(&mut p, now, &mut outstanding, &mut outcomes);
    }
    // Whatever happened, the producer ends: answer everything with success, then let
    // time run past every deadline.
    for _ in 0..200 {
        if p.is_idle() {
            break;
        }
        let batch: Vec<ProduceRequest> = std::mem::take(&mut outstanding);
        for r in batch {
            let partitions = r
                .batches
                .iter()
                .map(|b| PartitionResponse::ok(b.partition.clone(), 0))
                .collect();
            let _ = p.handle_produce_response(
                r.id,
                &ProduceResponse::new(partitions).with_throttle(Duration::ZERO),
                now,
            );
        }
        now = now + Duration::from_millis(500);
        p.handle_timeout(now);
        pump(&mut p, now, &mut outstanding, &mut outcomes);
    }
    assert!(
        p.is_idle() || p.fatal_error().is_some(),
        "producer did not drain: {} unreported",
        p.unreported_records()
    );
    assert_eq!(
        outcomes.len() as u64,
        sent,
        "every accepted record has an outcome"
    );
    assert!(
        outcomes.values().all(|&n| n == 1),
        "a record got two outcomes"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn core_survives_any_broker_input(inputs in proptest::collection::vec(input(), 1..120), max_in_flight in 1..=5u32, idempotence in proptest::bool::weighted(0.85)) {
        run(inputs, max_in_flight, idempotence);
    }
}
