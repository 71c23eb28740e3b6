//! Idempotent-producer scenarios ported from Kafka's `TransactionManagerTest`
//! (`org.apache.kafka.clients.producer.internals`, the clients module's tests), driven
//! through the public API. Each names its Java original.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

fn ids(h: &Harness) -> Vec<RequestId> {
    h.outstanding.iter().map(|r| r.id).collect()
}

fn harness(pid: i64, epoch: i16) -> Harness {
    Harness::with_pid(
        config().build().unwrap(),
        ProducerIdAndEpoch::new(pid, epoch),
    )
}

/// Port of `TransactionManagerTest.testProducerIdReset`: at epoch MAX a bump needs a new
/// producer id; the bumped partition restarts at 0, the other keeps its sequence until
/// it next drains.
#[test]
fn producer_id_reset() {
    let mut h = harness(15, i16::MAX);
    for _ in 0..3 {
        h.send(0, "a");
        h.send(1, "b");
    }
    while let Some(r) = h.outstanding.front().cloned() {
        let w = wire(&r)[0].clone();
        h.respond(
            r.id,
            &[(w.partition, KafkaError::None, i64::from(w.base_sequence))],
        );
    }
    assert_eq!(
        (h.state(0).next_sequence, h.state(1).next_sequence),
        (Sequence(3), Sequence(3))
    );
    h.next_pid = ProducerIdAndEpoch::new(16, 0);
    h.send(0, "c");
    h.respond_oldest(0, 3, KafkaError::OutOfOrderSequenceNumber, -1);
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(16, 0));
    assert_eq!(
        h.state(0).next_sequence,
        Sequence(1),
        "tp0 renumbered from 0 (one batch in flight)"
    );
    assert_eq!(h.state(0).producer_id, ProducerIdAndEpoch::new(16, 0));
    assert_eq!(
        h.state(1).next_sequence,
        Sequence(3),
        "tp1 untouched until it drains"
    );
}

/// Port of `TransactionManagerTest.testBumpEpochAndResetSequenceNumbersAfterUnknownProducerId`:
/// b1 acked at offset 500; b2 gets UNKNOWN_PRODUCER_ID with log start 500 (not a
/// truncation): the epoch goes to 2 and b2..b5 become seq 0..3.
#[test]
fn bump_epoch_and_reset_sequence_numbers_after_unknown_producer_id() {
    let mut h = harness(13131, 1);
    h.warm(0);
    for i in 0..5 {
        h.send(0, &i.to_string());
    }
    let rid = ids(&h);
    assert_eq!(rid.len(), 5);
    h.respond_with(rid[0], &[(0, KafkaError::None, 500)], 0);
    h.respond_with(rid[1], &[(0, KafkaError::UnknownProducerId, -1)], 500);
    for &r in &rid[2..] {
        h.respond(r, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    }
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(13131, 2));
    assert_eq!(h.state(0).next_sequence, Sequence(4));
    for expected in 0..4 {
        h.advance(60);
        let w = wire(h.outstanding.front().unwrap());
        assert_eq!((w[0].epoch, w[0].base_sequence), (2, expected));
        h.respond(
            h.outstanding.front().unwrap().id,
            &[(0, KafkaError::None, 501 + i64::from(expected))],
        );
    }
}

/// Port of `TransactionManagerTest.testBatchFailureAfterProducerReset`: at epoch MAX,
/// UNKNOWN_PRODUCER_ID on tp0 resets the id; tp0's next batch is renumbered to 0 while
/// tp1 keeps its sequence and its queued batch.
#[test]
fn batch_failure_after_producer_reset() {
    let mut h = harness(13131, i16::MAX);
    h.send(0, "a");
    h.send(1, "b");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::None, 0)]);
    h.respond(rid[1], &[(1, KafkaError::None, 0)]);
    h.send(0, "a2");
    h.send(1, "b2");
    let rid = ids(&h);
    h.next_pid = ProducerIdAndEpoch::new(13132, 0);
    h.respond_with(rid[0], &[(0, KafkaError::UnknownProducerId, -1)], 400);
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(13132, 0));
    assert_eq!(h.state(0).next_sequence, Sequence(1));
    assert_eq!(h.state(0).first_in_flight_sequence, Some(Sequence(0)));
    assert_eq!(h.state(1).next_sequence, Sequence(2));
    assert_eq!(h.state(1).first_in_flight_sequence, Some(Sequence(1)));
}

/// Port of `TransactionManagerTest.testBatchCompletedAfterProducerReset`: b1 and b2 on
/// tp0 at the old id complete after the reset; tp0 then restarts at 0 under the new id.
#[test]
fn batch_completed_after_producer_reset() {
    let mut h = harness(13131, i16::MAX);
    h.warm(0);
    h.warm(1);
    h.send(0, "b1");
    h.send(0, "b2");
    h.send(1, "c1");
    let rid = ids(&h);
    h.next_pid = ProducerIdAndEpoch::new(13132, 0);
    h.respond(rid[2], &[(1, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(13132, 0));
    h.respond(rid[0], &[(0, KafkaError::None, 1)]);
    let s = h.state(0);
    assert_eq!(
        (s.next_sequence, s.last_acked_sequence),
        (Sequence(3), Some(Sequence(1)))
    );
    h.respond(rid[1], &[(0, KafkaError::None, 2)]);
    h.send(0, "b3");
    let s = h.state(0);
    assert_eq!(
        (s.producer_id, s.next_sequence, s.last_acked_sequence),
        (ProducerIdAndEpoch::new(13132, 0), Sequence(1), None)
    );
}

/// Port of `TransactionManagerTest.testDuplicateSequenceAfterProducerReset`: a batch
/// retried after a request timeout expires while its request is out; only once that
/// request is gone does the epoch bump, and the next batch starts at seq 0.
#[test]
fn duplicate_sequence_after_producer_reset() {
    let mut h = Harness::new(
        config()
            .request_timeout(Duration::from_secs(10))
            .delivery_timeout(Duration::from_secs(15))
            .build()
            .unwrap(),
    );
    let a = h.send(0, "a");
    h.advance(10_000); // request timeout: retried with the same sequence
    h.advance(60);
    assert_eq!(wire(h.outstanding.front().unwrap())[0].base_sequence, 0);
    h.advance(5_000); // delivery timeout while the retry is on the wire
    assert!(matches!(h.failed(a), Some(DeliveryError::Timeout { .. })));
    assert_eq!(
        h.p.producer_id().epoch,
        ProducerEpoch(0),
        "no bump while the request is out"
    );
    h.advance(5_000); // the retry's request times out: nothing is on the wire any more
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    h.send(0, "b");
    let w = wire(h.outstanding.back().unwrap());
    assert_eq!((w[0].epoch, w[0].base_sequence), (1, 0));
}

/// Port of `TransactionManagerTest.testBumpEpochAfterTimeoutWithoutPendingInflightRequests`.
#[test]
fn bump_epoch_after_timeout_without_pending_inflight_requests() {
    let mut h = Harness::with_pid(
        config()
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Duration::from_millis(1000))
            .build()
            .unwrap(),
        ProducerIdAndEpoch::new(15, 5),
    );
    let a = h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::NotEnoughReplicasAfterAppend, -1);
    h.advance(1000);
    assert!(h.failed(a).is_some());
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(15, 6));
}

/// Port of `TransactionManagerTest.testNoProducerIdResetAfterLastInFlightBatchSucceeds`:
/// b1 and b2 time out, but b3's ack proves they landed: no bump, next stays 3.
#[test]
fn no_producer_id_reset_after_last_in_flight_batch_succeeds() {
    let mut h = Harness::new(
        config()
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Duration::from_millis(1000))
            .retry_backoff(Duration::from_secs(5))
            .retry_backoff_max(Duration::from_secs(5))
            .build()
            .unwrap(),
    );
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    h.advance(500);
    let c = h.send(0, "c");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::NotEnoughReplicasAfterAppend, -1)]);
    h.respond(rid[1], &[(0, KafkaError::NotEnoughReplicasAfterAppend, -1)]);
    h.advance(500);
    assert!(h.failed(a).is_some() && h.failed(b).is_some());
    assert_eq!(h.state(0).unresolved, Some(Sequence(3)));
    assert_eq!(h.p.stats().epoch_bumps, 0, "no bump while c is in flight");
    h.respond(rid[2], &[(0, KafkaError::None, 3)]);
    assert_eq!(h.delivered(c), Some(Some(3)));
    assert_eq!(h.state(0).unresolved, None);
    assert_eq!(h.p.stats().epoch_bumps, 0);
    assert_eq!(h.state(0).next_sequence, Sequence(4));
}

/// Port of `TransactionManagerTest.testEpochBumpAfterLastInflightBatchFailsIdempotentProducer`:
/// b1 times out, b2 is acked, b3 times out: the epoch is bumped, sequences restart at 0.
#[test]
fn epoch_bump_after_last_inflight_batch_fails() {
    let mut h = Harness::with_pid(
        config()
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Duration::from_millis(1000))
            .retry_backoff(Duration::from_secs(5))
            .retry_backoff_max(Duration::from_secs(5))
            .build()
            .unwrap(),
        ProducerIdAndEpoch::new(15, 1),
    );
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    let c = h.send(0, "c");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::NotEnoughReplicasAfterAppend, -1)]);
    h.respond(rid[1], &[(0, KafkaError::None, 2)]);
    h.respond(rid[2], &[(0, KafkaError::NotEnoughReplicasAfterAppend, -1)]);
    h.advance(1000);
    assert!(h.failed(a).is_some() && h.delivered(b).is_some() && h.failed(c).is_some());
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(15, 2));
    let s = h.state(0);
    assert_eq!((s.next_sequence, s.unresolved), (Sequence(0), None));
}

/// Port of `TransactionManagerTest.testNoFailedBatchHandlingWhenTxnManagerIsInFatalError`:
/// after a fatal error a failed batch causes no further bump.
#[test]
fn no_failed_batch_handling_when_in_fatal_error() {
    let mut h = harness(15, 5);
    h.send(0, "a");
    h.send(1, "b");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(6));
    h.respond(rid[1], &[(1, KafkaError::ClusterAuthorizationFailed, -1)]);
    assert!(h.p.fatal_error().is_some());
    h.advance(10_000);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(6));
    h.p.assert_invariants();
}

/// Port of `TransactionManagerTest.testHealthyPartitionRetriesDuringEpochBump`: tp1's
/// in-flight batch keeps retrying at the old epoch; a new tp1 batch waits until it is
/// acked and then starts at seq 0 under the new epoch.
#[test]
fn healthy_partition_retries_during_epoch_bump() {
    let mut h = harness(13131, 1);
    h.warm(0);
    h.warm(1);
    for i in 0..3 {
        h.send(0, &format!("a{i}"));
    }
    h.send(1, "b1");
    h.send(1, "b2");
    let rid = ids(&h);
    // Order: a1, a2, a3, b1, b2.
    h.respond(rid[0], &[(0, KafkaError::None, 1)]);
    h.respond(rid[3], &[(1, KafkaError::None, 1)]);
    h.respond_with(rid[1], &[(0, KafkaError::UnknownProducerId, -1)], 0);
    h.respond(rid[2], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(2));
    let s0 = h.state(0);
    assert_eq!(
        (s0.producer_id.epoch, s0.first_in_flight_sequence),
        (ProducerEpoch(2), Some(Sequence(0)))
    );
    let s1 = h.state(1);
    assert_eq!(
        (s1.producer_id.epoch, s1.next_sequence),
        (ProducerEpoch(1), Sequence(3))
    );
    let b3 = h.p.send(&tp(1), &record("b3"), h.now).unwrap();
    h.respond(rid[4], &[(1, KafkaError::NotLeaderOrFollower, -1)]);
    h.advance(60);
    let all: Vec<Wire> = h.outstanding.iter().flat_map(wire).collect();
    assert!(
        all.contains(&Wire {
            partition: 1,
            producer_id: 13131,
            epoch: 1,
            base_sequence: 2,
            count: 1
        }),
        "{all:?}"
    );
    assert!(
        !all.iter().any(|w| w.partition == 1 && w.epoch == 2),
        "b3 must wait: {all:?}"
    );
    let r = h
        .outstanding
        .iter()
        .find(|r| wire(r).iter().any(|w| w.partition == 1))
        .unwrap()
        .clone();
    let answers: Vec<_> = wire(&r)
        .iter()
        .map(|w| (w.partition, KafkaError::None, 1))
        .collect();
    h.respond(r.id, &answers);
    let w: Vec<Wire> = h
        .outstanding
        .iter()
        .flat_map(wire)
        .filter(|w| w.partition == 1)
        .collect();
    assert_eq!(
        w,
        vec![Wire {
            partition: 1,
            producer_id: 13131,
            epoch: 2,
            base_sequence: 0,
            count: 1
        }]
    );
    let r = h
        .outstanding
        .iter()
        .find(|r| wire(r).iter().any(|w| w.partition == 1))
        .unwrap()
        .id;
    let answers: Vec<_> = h
        .outstanding
        .iter()
        .find(|x| x.id == r)
        .map(|x| {
            wire(x)
                .iter()
                .map(|w| (w.partition, KafkaError::None, 2))
                .collect::<Vec<_>>()
        })
        .unwrap();
    h.respond(r, &answers);
    assert!(h.delivered(b3).is_some());
    assert_eq!(h.state(1).next_sequence, Sequence(1));
}

/// Port of `TransactionManagerTest.testFailedInflightBatchAfterEpochBump`: as above,
/// but the old-epoch tp1 batch completes after a retry; tp1 ends at seq 1 under the new
/// epoch once its next batch drains.
#[test]
fn failed_inflight_batch_after_epoch_bump() {
    let mut h = harness(13131, 1);
    h.warm(0);
    h.warm(1);
    h.send(0, "a1");
    h.send(0, "a2");
    h.send(1, "b1");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::None, 1)]);
    h.respond(rid[1], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(2));
    h.respond(rid[2], &[(1, KafkaError::RequestTimedOut, -1)]);
    h.advance(60);
    let reqs: Vec<_> = h.outstanding.iter().cloned().collect();
    for r in reqs {
        let answers: Vec<_> = wire(&r)
            .iter()
            .map(|w| (w.partition, KafkaError::None, 5))
            .collect();
        h.respond(r.id, &answers);
    }
    h.send(1, "b2");
    let w = wire(h.outstanding.back().unwrap());
    assert_eq!((w[0].partition, w[0].epoch, w[0].base_sequence), (1, 2, 0));
    h.respond(
        h.outstanding.back().unwrap().id,
        &[(1, KafkaError::None, 6)],
    );
    assert_eq!(h.state(1).next_sequence, Sequence(1));
}
