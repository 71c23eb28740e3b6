//! Idempotence and sequencing scenarios ported from Kafka's `SenderTest`
//! (`org.apache.kafka.clients.producer.internals`, the clients module's tests). Each
//! test names its Java original. The harness answers
//! InitProducerId and Metadata itself; tests answer Produce requests per partition.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

fn idempotent() -> Harness {
    Harness::new(config().build().unwrap())
}

fn ids(h: &Harness) -> Vec<RequestId> {
    h.outstanding.iter().map(|r| r.id).collect()
}

/// Port of `SenderTest.testSequenceNumberIncrement`: the first batch goes out with
/// seq 0, the producer id and epoch 0; after the ack, last acked 0 and next 1.
#[test]
fn sequence_number_increment() {
    let mut h = idempotent();
    let r = h.send(0, "a");
    let sent = h.outstanding.front().unwrap().clone();
    assert_eq!(
        wire(&sent),
        vec![Wire {
            partition: 0,
            producer_id: 343434,
            epoch: 0,
            base_sequence: 0,
            count: 1
        }]
    );
    h.respond_oldest(0, 0, KafkaError::None, 0);
    let s = h.state(0);
    assert_eq!(s.last_acked_sequence, Some(Sequence(0)));
    assert_eq!(s.next_sequence, Sequence(1));
    assert_eq!(h.delivered(r), Some(Some(0)));
}

/// Port of `SenderTest.testIdempotenceWithMultipleInflights`: two requests in flight
/// acked in order move last acked through both sequences. (Warm partition: the core
/// pipelines only after a partition's first ack; see `Harness::warm`.)
#[test]
fn idempotence_with_multiple_inflights() {
    let mut h = idempotent();
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    assert_eq!(h.outstanding.len(), 2);
    h.respond_oldest(0, 1, KafkaError::None, 1);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(1)));
    h.respond_oldest(0, 2, KafkaError::None, 2);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(2)));
    assert_eq!(
        (h.delivered(a), h.delivered(b)),
        (Some(Some(1)), Some(Some(2)))
    );
}

/// The core's first-batch gate: on a partition with no ack under the current identity,
/// a second batch waits for the first one's answer (a deliberate departure from Java,
/// which pipelines at once; see docs/design.md).
#[test]
fn first_batch_of_a_partition_goes_alone() {
    let mut h = idempotent();
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    assert_eq!(h.outstanding.len(), 1, "b waits for a's answer");
    h.respond_oldest(0, 0, KafkaError::None, 0);
    assert_eq!(h.outstanding.len(), 1);
    h.respond_oldest(0, 1, KafkaError::None, 1);
    assert_eq!(
        (h.delivered(a), h.delivered(b)),
        (Some(Some(0)), Some(Some(1)))
    );
}

/// Port of `SenderTest.testIdempotenceWithMultipleInflightsRetriedInOrder`: #0 gets a
/// leadership error, #1 and #2 OUT_OF_ORDER (not the next sequence: retried without a
/// bump). While retrying only one request is in flight, a new batch is not drained, and
/// the batches go out again in order, then the new one.
#[test]
fn idempotence_with_multiple_inflights_retried_in_order() {
    let mut h = idempotent();
    h.warm(0);
    let recs: Vec<RecordId> = (0..3).map(|i| h.send(0, &i.to_string())).collect();
    let rid = ids(&h);
    assert_eq!(rid.len(), 3);
    h.respond(rid[0], &[(0, KafkaError::LeaderNotAvailable, -1)]);
    h.respond(rid[1], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.respond(rid[2], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    let fourth = h.send(0, "3");
    assert!(
        h.outstanding.is_empty(),
        "nothing goes out during the backoff"
    );
    assert_eq!(
        h.state(0).next_sequence,
        Sequence(4),
        "the new batch is not stamped"
    );
    h.advance(60);
    for expected in 1..3 {
        assert_eq!(
            h.outstanding.len(),
            1,
            "one request in flight while retrying"
        );
        h.respond_oldest(0, expected, KafkaError::None, i64::from(expected));
    }
    // The last retry is first in flight again; the new batch may pipeline behind it.
    let w: Vec<Wire> = h.outstanding.iter().flat_map(wire).collect();
    assert_eq!(
        w.iter().map(|w| w.base_sequence).collect::<Vec<_>>(),
        vec![3, 4]
    );
    h.respond_oldest(0, 3, KafkaError::None, 3);
    h.respond_oldest(0, 4, KafkaError::None, 4);
    for (i, r) in recs.iter().chain([&fourth]).enumerate() {
        assert_eq!(h.delivered(*r), Some(Some(i as i64 + 1)));
    }
    assert_eq!(h.p.stats().epoch_bumps, 0);
}

/// Port of `SenderTest.testIdempotenceWithMultipleInflightsWhereFirstFailsFatallyAndSequenceOfFutureBatchesIsAdjusted`:
/// #0 fails with MESSAGE_TOO_LARGE (one record, cannot split), which bumps the epoch;
/// #1 answered OUT_OF_ORDER is retried and goes out again renumbered to seq 0.
#[test]
fn first_fails_fatally_and_sequence_of_future_batches_is_adjusted() {
    let mut h = idempotent();
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::MessageTooLarge, -1)]);
    assert!(matches!(
        h.failed(a),
        Some(DeliveryError::RecordTooLarge { .. })
    ));
    h.respond(rid[1], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(343434, 1));
    h.advance(60);
    let resent = h.outstanding.front().unwrap().clone();
    assert_eq!(wire(&resent)[0].epoch, 1);
    h.respond_oldest(0, 0, KafkaError::None, 1);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(0)));
    assert_eq!(h.delivered(b), Some(Some(1)));
}

/// Port of `SenderTest.testEpochBumpOnOutOfOrderSequenceForNextBatch`: a two-record
/// batch acked (next 2); the seq-2 batch gets OUT_OF_ORDER and is the next sequence, so
/// the epoch goes to 1 and the batch is renumbered to 0.
#[test]
fn epoch_bump_on_out_of_order_sequence_for_next_batch() {
    let mut h = Harness::new(config().linger(Duration::from_secs(10)).build().unwrap());
    h.p.send(&tp(0), &record("a"), h.now).unwrap();
    h.p.send(&tp(0), &record("b"), h.now).unwrap();
    h.p.flush();
    h.pump();
    h.respond_oldest(0, 0, KafkaError::None, 0);
    assert_eq!(h.state(0).next_sequence, Sequence(2));
    h.p.send(&tp(0), &record("c"), h.now).unwrap();
    h.p.flush();
    h.pump();
    h.respond_oldest(0, 2, KafkaError::OutOfOrderSequenceNumber, -1);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    let s = h.state(0);
    assert_eq!(s.next_sequence, Sequence(1));
    assert_eq!(s.first_in_flight_sequence, Some(Sequence(0)));
}

/// Port of `SenderTest.testEpochBumpOnOutOfOrderSequenceForNextBatchWhenThereIsNoBatchInFlight`:
/// after the bump caused by tp0, tp1 is stale and keeps its old state until its next
/// batch, which is stamped with epoch 1 and sequence 0.
#[test]
fn epoch_bump_on_out_of_order_sequence_when_there_is_no_batch_in_flight() {
    let mut h = idempotent();
    h.send(0, "a0");
    h.send(1, "b0");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::None, 0)]);
    h.respond(rid[1], &[(1, KafkaError::None, 0)]);
    h.send(0, "a1");
    h.respond_oldest(0, 1, KafkaError::OutOfOrderSequenceNumber, -1);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    let s0 = h.state(0);
    assert_eq!(
        (
            s0.producer_id.epoch,
            s0.next_sequence,
            s0.last_acked_sequence
        ),
        (ProducerEpoch(1), Sequence(1), None)
    );
    let s1 = h.state(1);
    assert_eq!(
        (
            s1.producer_id.epoch,
            s1.next_sequence,
            s1.last_acked_sequence
        ),
        (ProducerEpoch(0), Sequence(1), Some(Sequence(0)))
    );
    h.advance(60);
    h.respond_oldest(0, 0, KafkaError::None, 1);
    h.send(1, "b1");
    let w = wire(h.outstanding.back().unwrap());
    assert_eq!((w[0].epoch, w[0].base_sequence), (1, 0));
}

/// Port of `SenderTest.testEpochBumpOnOutOfOrderSequenceForNextBatchWhenBatchInFlightFails`
/// (retries = 1): tp1's batch in flight at the bump keeps its old epoch, fails after its
/// retry, and leaves tp1 to restart at epoch 1, sequence 0.
#[test]
fn epoch_bump_when_batch_in_flight_fails() {
    let mut h = Harness::new(config().retries(1).build().unwrap());
    h.send(0, "a0");
    h.send(1, "b0");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::None, 0)]);
    h.respond(rid[1], &[(1, KafkaError::None, 0)]);
    h.send(0, "a1");
    let b1 = h.send(1, "b1");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    h.respond(rid[1], &[(1, KafkaError::NotLeaderOrFollower, -1)]);
    h.advance(60);
    let retry = h
        .outstanding
        .iter()
        .find(|r| wire(r).iter().any(|w| w.partition == 1))
        .unwrap()
        .clone();
    assert!(wire(&retry).contains(&Wire {
        partition: 1,
        producer_id: 343434,
        epoch: 0,
        base_sequence: 1,
        count: 1
    }));
    assert!(wire(&retry).contains(&Wire {
        partition: 0,
        producer_id: 343434,
        epoch: 1,
        base_sequence: 0,
        count: 1
    }));
    h.respond(
        retry.id,
        &[
            (0, KafkaError::None, 1),
            (1, KafkaError::NotLeaderOrFollower, -1),
        ],
    );
    assert!(h.failed(b1).is_some());
    h.advance(60);
    h.send(1, "b2");
    let w = wire(h.outstanding.back().unwrap());
    assert_eq!((w[0].partition, w[0].epoch, w[0].base_sequence), (1, 1, 0));
    assert_eq!(h.p.stats().epoch_bumps, 1);
}

/// Port of `SenderTest.testCorrectHandlingOfOutOfOrderResponses`: the answer for #1
/// (OUT_OF_ORDER) comes before #0 (NOT_LEADER); #0 is put back ahead of #1 and they go
/// out one at a time, in order.
#[test]
fn correct_handling_of_out_of_order_responses() {
    let mut h = idempotent();
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    let rid = ids(&h);
    h.respond(rid[1], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.respond(rid[0], &[(0, KafkaError::NotLeaderOrFollower, -1)]);
    h.advance(60);
    assert_eq!(h.outstanding.len(), 1);
    h.respond_oldest(0, 1, KafkaError::None, 1);
    assert_eq!(h.outstanding.len(), 1);
    h.respond_oldest(0, 2, KafkaError::None, 2);
    assert_eq!(
        (h.delivered(a), h.delivered(b)),
        (Some(Some(1)), Some(Some(2)))
    );
    assert_eq!(h.p.stats().epoch_bumps, 0);
}

/// Port of `SenderTest.testCorrectHandlingOfOutOfOrderResponsesWhenSecondSucceeds`:
/// #1 succeeds first; #0's REQUEST_TIMED_OUT is retried and succeeds; last acked stays
/// at #1's sequence (max rule).
#[test]
fn correct_handling_of_out_of_order_responses_when_second_succeeds() {
    let mut h = idempotent();
    h.warm(0);
    h.send(0, "a");
    h.send(0, "b");
    let rid = ids(&h);
    h.respond(rid[1], &[(0, KafkaError::None, 2)]);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(2)));
    h.respond(rid[0], &[(0, KafkaError::RequestTimedOut, -1)]);
    h.advance(60);
    h.respond_oldest(0, 1, KafkaError::None, 1);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(2)));
    assert_eq!(h.state(0).in_flight_batches, 0);
}

/// Port of `SenderTest.testCorrectHandlingOfDuplicateSequenceError`: DUPLICATE_SEQUENCE_NUMBER
/// is success without an offset and moves neither last acked sequence nor offset.
#[test]
fn correct_handling_of_duplicate_sequence_error() {
    let mut h = idempotent();
    h.warm(0);
    let a = h.send(0, "a");
    h.send(0, "b");
    let rid = ids(&h);
    h.respond(rid[1], &[(0, KafkaError::None, 1000)]);
    h.respond(rid[0], &[(0, KafkaError::DuplicateSequenceNumber, -1)]);
    assert_eq!(h.delivered(a), Some(None));
    let s = h.state(0);
    assert_eq!(
        (s.last_acked_sequence, s.last_acked_offset),
        (Some(Sequence(2)), Some(1000))
    );
}

fn timeouts(request_ms: u64, delivery_ms: u64, backoff_ms: u64) -> Harness {
    Harness::new(
        config()
            .request_timeout(Duration::from_millis(request_ms))
            .delivery_timeout(Duration::from_millis(delivery_ms))
            .retry_backoff(Duration::from_millis(backoff_ms))
            .retry_backoff_max(Duration::from_millis(backoff_ms))
            .build()
            .unwrap(),
    )
}

/// Port of `SenderTest.testExpiryOfUnsentBatchesShouldNotCauseUnresolvedSequences`.
#[test]
fn expiry_of_unsent_batches_should_not_cause_unresolved_sequences() {
    let mut h = timeouts(1000, 1500, 50);
    h.answer_metadata = false;
    let r = h.send(0, "a");
    h.advance(1600);
    assert!(matches!(h.failed(r), Some(DeliveryError::Timeout { .. })));
    assert_eq!(h.state(0).unresolved, None);
    assert_eq!(h.p.stats().epoch_bumps, 0);
}

/// Port of `SenderTest.testExpiryOfFirstBatchShouldNotCauseUnresolvedSequencesIfFutureBatchesSucceed`:
/// #0 expires while waiting for its retry; the partition is unresolved and holds new
/// batches back; #1's ack proves #0 landed, so no bump.
#[test]
fn expiry_of_first_batch_should_not_cause_unresolved_sequences_if_future_batches_succeed() {
    let mut h = timeouts(1500, 1500, 5000);
    h.warm(0);
    let a = h.send(0, "a");
    h.advance(100);
    h.send(0, "b");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::RequestTimedOut, -1)]);
    h.advance(1400);
    assert!(matches!(h.failed(a), Some(DeliveryError::Timeout { .. })));
    assert_eq!(h.state(0).unresolved, Some(Sequence(2)));
    let c = h.send(0, "c");
    assert_eq!(
        h.outstanding.len(),
        1,
        "new batch held back while unresolved"
    );
    h.respond(rid[1], &[(0, KafkaError::None, 2)]);
    assert_eq!(h.state(0).unresolved, None);
    assert_eq!(h.p.stats().epoch_bumps, 0);
    h.respond_oldest(0, 3, KafkaError::None, 3);
    assert_eq!(h.delivered(c), Some(Some(3)));
}

/// Port of `SenderTest.testExpiryOfFirstBatchShouldCauseEpochBumpIfFutureBatchesFail`:
/// #0 expires in retry; #1's OUT_OF_ORDER at the unresolved sequence bumps the epoch.
#[test]
fn expiry_of_first_batch_should_cause_epoch_bump_if_future_batches_fail() {
    let mut h = timeouts(1500, 1500, 5000);
    h.warm(0);
    h.send(0, "a");
    h.advance(100);
    let b = h.send(0, "b");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::NotLeaderOrFollower, -1)]);
    h.advance(1400);
    assert_eq!(h.state(0).unresolved, Some(Sequence(2)));
    h.respond(rid[1], &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    let s = h.state(0);
    assert_eq!((s.next_sequence, s.unresolved), (Sequence(1), None));
    assert_eq!(
        h.outcomes(b),
        0,
        "#1 is retried under the new epoch, not failed"
    );
    assert_eq!(h.state(0).first_in_flight_sequence, Some(Sequence(0)));
}

/// Port of `SenderTest.testExpiryOfAllSentBatchesShouldCauseUnresolvedSequences`: the
/// only batch expired in retry; with nothing in flight the next loop bumps the epoch.
#[test]
fn expiry_of_all_sent_batches_should_cause_unresolved_sequences() {
    let mut h = timeouts(1500, 1500, 5000);
    let a = h.send(0, "a");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::NotLeaderOrFollower, -1)]);
    h.advance(1500);
    assert!(h.failed(a).is_some());
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    assert_eq!(h.state(0).unresolved, None);
    h.send(0, "b");
    assert_eq!(wire(h.outstanding.back().unwrap())[0].base_sequence, 0);
}

/// Port of `SenderTest.testResetOfProducerStateShouldAllowQueuedBatchesToDrain`: at
/// epoch MAX the bump needs a new producer id; tp1's batch, stamped with the old id, is
/// still resent with it and acked.
#[test]
fn reset_of_producer_state_should_allow_queued_batches_to_drain() {
    let mut h = Harness::with_pid(
        config().build().unwrap(),
        ProducerIdAndEpoch::new(343434, i16::MAX),
    );
    h.p.flush();
    h.p.send(&tp(0), &record("a"), h.now).unwrap();
    h.p.send(&tp(1), &record("b"), h.now).unwrap();
    h.pump();
    assert_eq!(h.outstanding.len(), 1, "both partitions in one request");
    let r = h.outstanding.front().unwrap().id;
    h.next_pid = ProducerIdAndEpoch::new(343435, 0);
    h.respond(
        r,
        &[
            (1, KafkaError::NotLeaderOrFollower, -1),
            (0, KafkaError::OutOfOrderSequenceNumber, -1),
        ],
    );
    assert_eq!(h.init_requests, 2);
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(343435, 0));
    h.advance(60);
    let sent: Vec<Wire> = h.outstanding.iter().flat_map(wire).collect();
    assert!(sent.contains(&Wire {
        partition: 1,
        producer_id: 343434,
        epoch: i16::MAX,
        base_sequence: 0,
        count: 1
    }));
    assert!(sent.contains(&Wire {
        partition: 0,
        producer_id: 343435,
        epoch: 0,
        base_sequence: 0,
        count: 1
    }));
    let r = h.outstanding.front().unwrap().id;
    h.respond(r, &[(0, KafkaError::None, 0), (1, KafkaError::None, 10)]);
    assert_eq!(h.state(1).next_sequence, Sequence(1));
}

/// Port of `SenderTest.testBatchesDrainedWithOldProducerIdShouldSucceedOnSubsequentRetry`.
#[test]
fn batches_drained_with_old_producer_id_should_succeed_on_subsequent_retry() {
    let mut h = idempotent();
    h.p.flush();
    h.p.send(&tp(0), &record("a"), h.now).unwrap();
    let b = h.p.send(&tp(1), &record("b"), h.now).unwrap();
    h.pump();
    let r = h.outstanding.front().unwrap().id;
    h.respond(
        r,
        &[
            (0, KafkaError::OutOfOrderSequenceNumber, -1),
            (1, KafkaError::NotLeaderOrFollower, -1),
        ],
    );
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    h.advance(60);
    let retry1 = h
        .outstanding
        .iter()
        .find(|r| wire(r).iter().any(|w| w.partition == 1))
        .unwrap()
        .clone();
    let w = wire(&retry1)
        .into_iter()
        .find(|w| w.partition == 1)
        .unwrap();
    assert_eq!(
        (w.epoch, w.base_sequence),
        (0, 0),
        "old epoch kept for the retry"
    );
    let answers: Vec<(i32, KafkaError, i64)> = wire(&retry1)
        .iter()
        .map(|w| (w.partition, KafkaError::None, 0))
        .collect();
    h.respond(retry1.id, &answers);
    assert!(h.delivered(b).is_some());
    assert_eq!(h.state(1).next_sequence, Sequence(1));
}

/// Port of `SenderTest.testRetryWhenProducerIdChanges`: a disconnect is retried with
/// the same sequence (the batch may have been written).
#[test]
fn retry_when_producer_id_changes() {
    let mut h = Harness::with_pid(
        config().build().unwrap(),
        ProducerIdAndEpoch::new(343434, i16::MAX),
    );
    h.send(0, "a");
    let r = h.outstanding.front().unwrap().id;
    h.fail(r, RequestFailure::Disconnected);
    h.advance(60);
    let w = wire(h.outstanding.front().unwrap());
    assert_eq!((w[0].epoch, w[0].base_sequence), (i16::MAX, 0));
    assert_eq!(h.state(0).next_sequence, Sequence(1));
}

/// Port of `SenderTest.testBumpEpochWhenOutOfOrderSequenceReceived`.
#[test]
fn bump_epoch_when_out_of_order_sequence_received() {
    let mut h = idempotent();
    let a = h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::OutOfOrderSequenceNumber, -1);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    assert_eq!(h.outcomes(a), 0, "still in flight, not done");
    assert_eq!(h.state(0).in_flight_batches, 1);
}

/// Port of `SenderTest.testIdempotentUnknownProducerHandlingWhenRetentionLimitReached`:
/// UNKNOWN_PRODUCER_ID with a log start past our last ack (retention) bumps the epoch;
/// the batch is resent at sequence 0.
#[test]
fn idempotent_unknown_producer_handling_when_retention_limit_reached() {
    let mut h = Harness::new(config().linger(Duration::from_secs(10)).build().unwrap());
    h.send(0, "a");
    h.p.flush();
    h.pump();
    h.p.flush();
    h.respond_with(
        h.outstanding.front().unwrap().id,
        &[(0, KafkaError::None, 1000)],
        10,
    );
    h.p.send(&tp(0), &record("b"), h.now).unwrap();
    h.p.send(&tp(0), &record("c"), h.now).unwrap();
    h.p.flush();
    h.pump();
    let r = h.outstanding.front().unwrap().id;
    h.respond_with(r, &[(0, KafkaError::UnknownProducerId, -1)], 1010);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    h.advance(60);
    let w = wire(h.outstanding.front().unwrap());
    assert_eq!((w[0].epoch, w[0].base_sequence, w[0].count), (1, 0, 2));
    h.respond_oldest(0, 0, KafkaError::None, 1011);
    let s = h.state(0);
    assert_eq!(
        (s.last_acked_sequence, s.last_acked_offset),
        (Some(Sequence(1)), Some(1012))
    );
}

/// Port of `SenderTest.testUnknownProducerErrorShouldBeRetriedWhenLogStartOffsetIsUnknown`.
#[test]
fn unknown_producer_error_should_be_retried_when_log_start_offset_is_unknown() {
    let mut h = idempotent();
    h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::None, 1000);
    h.send(0, "b");
    h.respond_oldest(0, 1, KafkaError::UnknownProducerId, -1);
    h.advance(60);
    assert_eq!(wire(h.outstanding.front().unwrap())[0].base_sequence, 1);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(0));
}

/// Port of `SenderTest.testUnknownProducerErrorShouldBeRetriedForFutureBatchesWhenFirstFails`:
/// seq 1 and 2 in flight both get UNKNOWN_PRODUCER_ID; one bump renumbers them 0 and 1.
#[test]
fn unknown_producer_error_should_be_retried_for_future_batches_when_first_fails() {
    let mut h = idempotent();
    h.send(0, "a");
    h.respond_with(
        h.outstanding.front().unwrap().id,
        &[(0, KafkaError::None, 1000)],
        0,
    );
    let b = h.send(0, "b");
    let c = h.send(0, "c");
    let rid = ids(&h);
    h.respond_with(rid[0], &[(0, KafkaError::UnknownProducerId, -1)], 1010);
    h.respond_with(rid[1], &[(0, KafkaError::UnknownProducerId, -1)], 1010);
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    assert_eq!(h.p.stats().epoch_bumps, 1);
    h.advance(60);
    h.respond_oldest(0, 0, KafkaError::None, 1011);
    h.advance(60);
    h.respond_oldest(0, 1, KafkaError::None, 1012);
    assert_eq!(
        (h.delivered(b), h.delivered(c)),
        (Some(Some(1011)), Some(Some(1012)))
    );
}

/// Port of `SenderTest.testShouldRaiseOutOfOrderSequenceExceptionToUserIfLogWasNotTruncated`:
/// UNKNOWN_PRODUCER_ID with a log start before our last ack still bumps (idempotent).
#[test]
fn unknown_producer_when_log_was_not_truncated_still_bumps() {
    let mut h = idempotent();
    h.send(0, "a");
    h.respond_with(
        h.outstanding.front().unwrap().id,
        &[(0, KafkaError::None, 1000)],
        0,
    );
    let b = h.send(0, "b");
    h.respond_with(
        h.outstanding.front().unwrap().id,
        &[(0, KafkaError::UnknownProducerId, -1)],
        10,
    );
    assert_eq!(h.p.producer_id().epoch, ProducerEpoch(1));
    assert_eq!(h.state(0).last_acked_sequence, None);
    assert_eq!(h.outcomes(b), 0);
}

/// Port of `SenderTest.testClusterAuthorizationExceptionInProduceRequest`: fatal, and
/// later sends fail.
#[test]
fn cluster_authorization_exception_in_produce_request() {
    let mut h = idempotent();
    let a = h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::ClusterAuthorizationFailed, -1);
    assert!(matches!(
        h.failed(a),
        Some(DeliveryError::Fatal(KafkaError::ClusterAuthorizationFailed))
    ));
    assert_eq!(
        h.p.fatal_error(),
        Some(KafkaError::ClusterAuthorizationFailed)
    );
    assert!(matches!(
        h.p.send(&tp(0), &record("b"), h.now),
        Err(SendError::Fatal(_))
    ));
}

/// Port of `SenderTest.testCancelInFlightRequestAfterFatalError`: a fatal error fails the
/// other in-flight batches; their late success is harmless.
#[test]
fn cancel_in_flight_request_after_fatal_error() {
    let mut h = idempotent();
    let a = h.send(0, "a");
    let b = h.send(1, "b");
    let rid = ids(&h);
    h.respond(rid[0], &[(0, KafkaError::ClusterAuthorizationFailed, -1)]);
    assert!(h.failed(a).is_some() && h.failed(b).is_some());
    h.respond(rid[1], &[(1, KafkaError::None, 0)]);
    assert_eq!((h.outcomes(a), h.outcomes(b)), (1, 1));
}

/// Port of `SenderTest.testUnsupportedForMessageFormatInProduceRequest`: the batch fails
/// but the producer is not in an error state.
#[test]
fn unsupported_for_message_format_in_produce_request() {
    let mut h = idempotent();
    let a = h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::UnsupportedForMessageFormat, -1);
    assert!(matches!(
        h.failed(a),
        Some(DeliveryError::Broker {
            error: KafkaError::UnsupportedForMessageFormat,
            ..
        })
    ));
    assert_eq!(h.p.fatal_error(), None);
}

/// Port of `SenderTest.testUnsupportedVersionInProduceRequest`: fatal.
#[test]
fn unsupported_version_in_produce_request() {
    let mut h = idempotent();
    h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::UnsupportedVersion, -1);
    assert_eq!(h.p.fatal_error(), Some(KafkaError::UnsupportedVersion));
}

/// Port of `SenderTest.testClusterAuthorizationExceptionInInitProducerIdRequest`: not
/// fatal for the idempotent producer; a later InitProducerId succeeds and work goes on.
#[test]
fn cluster_authorization_exception_in_init_producer_id_request() {
    let mut p = Producer::new(config().build().unwrap(), Timestamp::ZERO);
    let r = p.send(&tp(0), &record("a"), Timestamp::ZERO).unwrap();
    let Some(Request::InitProducerId(init)) = p.poll_request(Timestamp::ZERO) else {
        panic!("expected InitProducerId")
    };
    p.handle_producer_id(
        init.id,
        Err(KafkaError::ClusterAuthorizationFailed),
        Timestamp::ZERO,
    )
    .unwrap();
    assert_eq!(p.fatal_error(), None);
    assert_eq!(p.producer_id(), ProducerIdAndEpoch::NONE);
    let ev: Vec<Event> = std::iter::from_fn(|| p.poll_event()).collect();
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::Failed { records, .. } if records.contains(&r))));
    let later = Timestamp::from_millis(1000);
    p.handle_timeout(later);
    let Some(Request::InitProducerId(init)) = p.poll_request(later) else {
        panic!("InitProducerId is retried")
    };
    p.handle_producer_id(init.id, Ok(ProducerIdAndEpoch::new(5, 0)), later)
        .unwrap();
    assert_eq!(p.producer_id(), ProducerIdAndEpoch::new(5, 0));
}

/// Port of `SenderTest.testIdempotentSplitBatchAndSend`: a two-record batch (seq 0-1)
/// gets MESSAGE_TOO_LARGE; it splits into seq 0 and seq 1, sent one at a time.
#[test]
fn idempotent_split_batch_and_send() {
    let mut h = Harness::new(config().linger(Duration::from_secs(10)).build().unwrap());
    let a = h.p.send(&tp(0), &record("aaaa"), h.now).unwrap();
    let b = h.p.send(&tp(0), &record("bbbb"), h.now).unwrap();
    h.p.flush();
    h.pump();
    h.respond_oldest(0, 0, KafkaError::MessageTooLarge, -1);
    assert_eq!(h.p.stats().splits, 1);
    assert_eq!(h.state(0).next_sequence, Sequence(2));
    let w = wire(h.outstanding.front().unwrap());
    assert_eq!((w[0].base_sequence, w[0].count), (0, 1));
    assert_eq!(h.outstanding.len(), 1);
    h.respond_oldest(0, 0, KafkaError::None, 0);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(0)));
    h.respond_oldest(0, 1, KafkaError::None, 1);
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(1)));
    assert_eq!(
        (h.delivered(a), h.delivered(b)),
        (Some(Some(0)), Some(Some(1)))
    );
}

/// Port of `SenderTest.testExpiredBatchDoesNotSplitOnMessageTooLargeError`.
#[test]
fn expired_batch_does_not_split_on_message_too_large_error() {
    let mut h = Harness::new(
        config()
            .linger(Duration::from_millis(10))
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Duration::from_millis(1010))
            .build()
            .unwrap(),
    );
    let a = h.p.send(&tp(0), &record("a"), h.now).unwrap();
    h.p.send(&tp(0), &record("b"), h.now).unwrap();
    h.advance(10);
    let r = h.outstanding.front().unwrap().id;
    h.advance(999);
    assert_eq!(h.outcomes(a), 0);
    h.now = h.now + Duration::from_millis(1);
    h.respond(r, &[(0, KafkaError::MessageTooLarge, -1)]);
    assert_eq!(h.p.stats().splits, 0);
    assert_eq!(h.outcomes(a), 1);
}

/// Port of `SenderTest.testExpiredBatchDoesNotRetry`: a retriable error after the
/// delivery timeout is not re-enqueued.
#[test]
fn expired_batch_does_not_retry() {
    let mut h = timeouts(1000, 1000, 50);
    let a = h.send(0, "a");
    let r = h.outstanding.front().unwrap().id;
    h.now = h.now + Duration::from_millis(1000);
    h.respond(r, &[(0, KafkaError::NotEnoughReplicas, -1)]);
    assert!(matches!(h.failed(a), Some(DeliveryError::Timeout { .. })));
    assert_eq!(h.p.stats().retries, 0);
}

/// Port of `SenderTest.testInflightBatchesExpireOnDeliveryTimeout`: a batch on the wire
/// expires without an answer; the request stays outstanding.
#[test]
fn inflight_batches_expire_on_delivery_timeout() {
    let mut h = timeouts(1500, 1500, 50);
    h.advance(0);
    let a = h.send(0, "a");
    h.p.handle_timeout(h.now + Duration::from_millis(1499));
    h.now = h.now + Duration::from_millis(1499);
    h.pump();
    assert_eq!(h.outcomes(a), 0);
    h.advance(1);
    assert!(matches!(h.failed(a), Some(DeliveryError::Timeout { .. })));
}

/// Port of `SenderTest.testExpiredBatchesInMultiplePartitions`.
#[test]
fn expired_batches_in_multiple_partitions() {
    let mut h = timeouts(1500, 1500, 50);
    let a = h.send(0, "a");
    let b = h.send(1, "b");
    h.advance(1500);
    assert!(h.failed(a).is_some() && h.failed(b).is_some());
}

/// Port of `SenderTest.testSenderShouldRetryWithBackoffOnRetriableError`: InitProducerId
/// COORDINATOR_LOAD_IN_PROGRESS is retried after the backoff, not before.
#[test]
fn sender_should_retry_with_backoff_on_retriable_error() {
    let cfg = config()
        .retry_backoff(Duration::from_millis(100))
        .retry_backoff_max(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut p = Producer::new(cfg, Timestamp::ZERO);
    let Some(Request::InitProducerId(init)) = p.poll_request(Timestamp::ZERO) else {
        panic!()
    };
    p.handle_producer_id(
        init.id,
        Err(KafkaError::CoordinatorLoadInProgress),
        Timestamp::ZERO,
    )
    .unwrap();
    assert!(
        p.poll_request(Timestamp::from_millis(50)).is_none(),
        "not before the backoff"
    );
    let due = p.poll_timeout().expect("a retry deadline");
    assert!(
        due >= Timestamp::from_millis(80) && due <= Timestamp::from_millis(120),
        "{due:?}"
    );
    assert!(matches!(
        p.poll_request(due),
        Some(Request::InitProducerId(_))
    ));
}

/// Port of `SenderTest.testProducerBatchRetriesWhenPartitionLeaderChanges`: a new leader
/// epoch (KIP-951 hint) skips the backoff.
#[test]
fn producer_batch_retries_when_partition_leader_changes() {
    let mut h = timeouts(5000, 15000, 1000);
    h.send(0, "a");
    let r = h.outstanding.front().unwrap().id;
    let mut pr = PartitionResponse::error(tp(0), KafkaError::NotLeaderOrFollower);
    pr.current_leader = Some(LeaderHint::new(NodeId(2), 1));
    h.outstanding.clear();
    h.p.handle_produce_response(
        r,
        &ProduceResponse::new(vec![pr]).with_throttle(Duration::ZERO),
        h.now,
    )
    .unwrap();
    let out = h.pump();
    assert_eq!(out.len(), 1, "retried immediately");
    assert_eq!(out[0].node, NodeId(2));
    assert_eq!(wire(&out[0])[0].base_sequence, 0);
}

/// Port of `SenderTest.testCloseWithProducerIdReset`: a producer id reset during a
/// graceful close still drains everything.
#[test]
fn close_with_producer_id_reset() {
    let mut h = Harness::with_pid(
        config().build().unwrap(),
        ProducerIdAndEpoch::new(343434, i16::MAX),
    );
    let a = h.send(0, "a");
    h.p.close();
    h.next_pid = ProducerIdAndEpoch::new(343435, 0);
    h.respond_oldest(0, 0, KafkaError::OutOfOrderSequenceNumber, -1);
    h.advance(60);
    assert_eq!(h.p.producer_id(), ProducerIdAndEpoch::new(343435, 0));
    h.respond_oldest(0, 0, KafkaError::None, 0);
    assert!(h.delivered(a).is_some());
    assert!(h.p.is_closed());
}

/// Port of `SenderTest.testForceCloseWithProducerIdReset`: a forced close fails
/// everything without waiting.
#[test]
fn force_close_with_producer_id_reset() {
    let mut h = Harness::with_pid(
        config().build().unwrap(),
        ProducerIdAndEpoch::new(343434, i16::MAX),
    );
    let a = h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::OutOfOrderSequenceNumber, -1);
    h.p.abort();
    h.pump();
    assert!(matches!(h.failed(a), Some(DeliveryError::Aborted)));
    assert!(h.p.is_closed());
}

/// Not a Java port: the scenario the testkit found against FakeBroker. A batch appended
/// but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, again and again, must stay within the
/// broker's 5-batch dedup window: new batches may pipeline behind its retry, but never
/// more than max.in.flight unfinished batches per partition, so at most four are
/// appended after it and its retry is answered as a duplicate, not OUT_OF_ORDER.
#[test]
fn repeated_append_then_error_keeps_the_retry_inside_the_dedup_window() {
    let mut h = idempotent();
    h.warm(0);
    let first = h.send(0, "first");
    let first_req = h.outstanding.back().unwrap().id;
    h.respond(
        first_req,
        &[(0, KafkaError::NotEnoughReplicasAfterAppend, -1)],
    );
    let mut later = Vec::new();
    let mut offset = 2;
    for round in 0..4 {
        h.advance(60); // the retry goes out; new batches may pipeline behind it
        for i in 0..6 {
            later.push(h.send(0, &format!("r{round}-{i}")));
        }
        let unfinished = h.state(0).in_flight_batches;
        assert!(
            unfinished <= 5,
            "{unfinished} unfinished batches on one partition"
        );
        // The retry is appended-then-refused again; everything behind it succeeds.
        let reqs: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
        for r in reqs {
            let w = wire(&r)[0].clone();
            if w.base_sequence == 1 {
                h.respond(r.id, &[(0, KafkaError::NotEnoughReplicasAfterAppend, -1)]);
            } else {
                h.respond(r.id, &[(0, KafkaError::None, offset)]);
                offset += 1;
            }
        }
    }
    let appended_after_first = later.iter().filter(|&&r| h.delivered(r).is_some()).count();
    assert!(
        appended_after_first <= 4,
        "{appended_after_first} batches appended after the retried one"
    );
    h.advance(60);
    let retry = h
        .outstanding
        .iter()
        .find(|r| wire(r)[0].base_sequence == 1)
        .expect("the retry is out")
        .id;
    h.respond(retry, &[(0, KafkaError::None, 1)]);
    assert_eq!(h.delivered(first), Some(Some(1)));
    assert_eq!(h.p.stats().epoch_bumps, 0);
}

/// Port of `SenderTest.testWhenFirstBatchExpireNoSendSecondBatchIfGuaranteeOrder`: with
/// max.in.flight 1, a second batch is not sent while the first, expired on the wire, is
/// still outstanding.
#[test]
fn when_first_batch_expires_no_send_second_batch_if_guarantee_order() {
    let mut h = Harness::new(
        config()
            .max_in_flight_requests_per_connection(1)
            .request_timeout(Duration::from_millis(1500))
            .delivery_timeout(Duration::from_millis(1500))
            .build()
            .unwrap(),
    );
    h.warm(0);
    let a = h.send(0, "a");
    // a's first attempt is refused; its retry (at about 60 ms) is still out when a
    // reaches delivery.timeout.ms at 1,500 ms.
    let r = h.outstanding.front().unwrap().id;
    h.respond(r, &[(0, KafkaError::NotEnoughReplicas, -1)]);
    h.advance(60);
    assert_eq!(h.outstanding.len(), 1, "a's retry is out");
    h.advance(440);
    let b = h.send(0, "b");
    assert_eq!(
        h.outstanding.len(),
        1,
        "b waits: one request per connection"
    );
    h.advance(1000);
    assert!(matches!(h.failed(a), Some(DeliveryError::Timeout { .. })));
    assert_eq!(
        h.outstanding.len(),
        1,
        "a's request is still out: b still waits"
    );
    assert_eq!(h.outcomes(b), 0);
}

/// Port of `SenderTest.testRetries` (non-idempotent baseline): a retriable error is
/// retried `retries` times, then the batch fails.
#[test]
fn retries_then_fail_without_idempotence() {
    let mut h = Harness::new(
        config()
            .enable_idempotence(false)
            .retries(1)
            .build()
            .unwrap(),
    );
    let a = h.send(0, "a");
    let r = h.outstanding.front().unwrap().id;
    h.respond(r, &[(0, KafkaError::NotEnoughReplicas, -1)]);
    h.advance(60);
    let r = h.outstanding.front().expect("retried once").id;
    h.respond(r, &[(0, KafkaError::NotEnoughReplicas, -1)]);
    assert!(matches!(
        h.failed(a),
        Some(DeliveryError::Broker {
            error: KafkaError::NotEnoughReplicas,
            ..
        })
    ));
    assert_eq!(h.p.stats().retries, 1);
    let w = wire(&h.outstanding.front().cloned().unwrap_or_else(|| {
        h.send(0, "b");
        h.outstanding.front().unwrap().clone()
    }));
    assert_eq!(
        (w[0].producer_id, w[0].base_sequence),
        (-1, -1),
        "no stamp without idempotence"
    );
}

/// Port of `SenderTest.testSendInOrder` (max.in.flight 1): the second batch goes only
/// after the first is answered.
#[test]
fn send_in_order_with_one_in_flight() {
    let mut h = Harness::new(
        config()
            .max_in_flight_requests_per_connection(1)
            .build()
            .unwrap(),
    );
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    assert_eq!(h.outstanding.len(), 1);
    h.respond_oldest(0, 1, KafkaError::None, 1);
    assert_eq!(h.outstanding.len(), 1);
    h.respond_oldest(0, 2, KafkaError::None, 2);
    assert_eq!(
        (h.delivered(a), h.delivered(b)),
        (Some(Some(1)), Some(Some(2)))
    );
}

/// Port of `SenderTest.testCanRetryWithoutIdempotence`: without idempotence a retriable
/// error is retried, a non-retriable one fails the batch at once.
#[test]
fn can_retry_without_idempotence() {
    let mut h = Harness::new(config().enable_idempotence(false).build().unwrap());
    let a = h.send(0, "a");
    let r = h.outstanding.front().unwrap().id;
    h.respond(r, &[(0, KafkaError::NotLeaderOrFollower, -1)]);
    h.advance(60);
    let r = h.outstanding.front().expect("retried").id;
    h.respond(r, &[(0, KafkaError::None, 0)]);
    assert_eq!(h.delivered(a), Some(Some(0)));
    let b = h.send(0, "b");
    let r = h.outstanding.front().unwrap().id;
    h.respond(r, &[(0, KafkaError::TopicAuthorizationFailed, -1)]);
    assert!(matches!(
        h.failed(b),
        Some(DeliveryError::Broker {
            error: KafkaError::TopicAuthorizationFailed,
            ..
        })
    ));
    assert_eq!(
        h.p.producer_id(),
        ProducerIdAndEpoch::NONE,
        "no producer id without idempotence"
    );
    assert_eq!(h.init_requests, 0);
}

/// Port of `SenderTest.testInitProducerIdRequest`: the idempotent producer asks for a
/// producer id before anything else, and sends nothing until it has one.
#[test]
fn init_producer_id_request_comes_first() {
    let mut p = Producer::new(config().build().unwrap(), Timestamp::ZERO);
    p.send(&tp(0), &record("a"), Timestamp::ZERO).unwrap();
    let first = p.poll_request(Timestamp::ZERO).expect("a request");
    let Request::InitProducerId(init) = first else {
        panic!("InitProducerId first, got {first:?}")
    };
    assert_eq!(init.current, ProducerIdAndEpoch::NONE);
    while let Some(r) = p.poll_request(Timestamp::ZERO) {
        assert!(
            !matches!(r, Request::Produce(_)),
            "no produce before the producer id"
        );
    }
}

/// Port of `SenderTest.testTooLargeBatchesAreSafelyRemoved`: a one-record batch answered
/// MESSAGE_TOO_LARGE fails and leaves nothing behind in flight.
#[test]
fn too_large_batches_are_safely_removed() {
    let mut h = idempotent();
    let a = h.send(0, "a");
    h.respond_oldest(0, 0, KafkaError::MessageTooLarge, -1);
    assert!(matches!(
        h.failed(a),
        Some(DeliveryError::RecordTooLarge { .. })
    ));
    assert_eq!(h.state(0).in_flight_batches, 0);
    assert!(h.p.is_idle());
}

/// A batch that fails for good with OUT_OF_ORDER_SEQUENCE_NUMBER (here its retries are
/// spent) leaves the broker's sequence for the partition unknown; the idempotent producer
/// bumps its epoch so that the partition restarts at sequence 0 (Java's
/// `TransactionManager.handleFailedBatch` → `requestIdempotentEpochBumpForPartition`,
/// KIP-360), and the next record goes under the new epoch.
#[test]
fn a_batch_failed_out_of_order_bumps_the_epoch() {
    let mut c = config();
    c.retries(1);
    let mut h = Harness::new(c.build().unwrap());
    h.warm(0);
    let a = h.send(0, "a");
    for _ in 0..4 {
        if h.failed(a).is_some() {
            break;
        }
        let r = h.outstanding.front().expect("a outstanding").clone();
        h.respond(r.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
        h.advance(60);
    }
    assert!(
        h.failed(a).is_some(),
        "retries=1: the second refusal fails it"
    );
    h.send(0, "b");
    let w = wire(h.outstanding.back().expect("b sent"));
    assert!(w[0].epoch > 0, "{w:?}");
    assert_eq!(w[0].base_sequence, 0);
    assert_eq!(u64::try_from(w[0].epoch).unwrap(), h.p.stats().epoch_bumps);
}
