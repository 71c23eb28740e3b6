//! Regressions for the exactly-once holes of issue 9 that live in the idempotent core:
//!
//! 1. a batch failed while an attempt of it is on the wire is possibly written, on every
//!    path that fails it (forced close, a fatal error on another partition);
//! 2. NOT_LEADER_OR_FOLLOWER (and the other codes Kafka's broker can answer after the
//!    append) is not proof that the batch is absent;
//! 3. after epoch exhaustion, the new producer id renumbers nothing that is on the wire;
//! 4. OUT_OF_ORDER_SEQUENCE_NUMBER does not prove a possibly-written batch absent (red
//!    team r3);
//!
//! and the `InputError::Mismatch` contract: an answer the core refuses leaves its state
//! unchanged.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

// ------------------------------------------------------------------ hole 1

/// `abort()` while a batch is on the wire: the broker may still append it, so its
/// records are reported possibly written. A batch that never left the process is not.
/// The late answer of the on-wire batch produces no second outcome.
#[test]
fn abort_reports_a_batch_on_the_wire_possibly_written() {
    let mut h = Harness::new(config().build().unwrap());
    let on_wire = h.send(0, "on the wire");
    // A cold partition sends one batch at a time until its first ack: this one waits.
    let queued = h.send(0, "never sent");
    assert_eq!(h.outstanding.len(), 1);
    h.p.abort();
    h.pump();
    assert_eq!(h.possibly_written(on_wire), Some(true), "{:?}", h.events);
    assert_eq!(h.possibly_written(queued), Some(false), "{:?}", h.events);
    let r = h.outstanding.front().unwrap().id;
    h.respond(r, &[(0, KafkaError::None, 0)]);
    assert_eq!(
        h.outcomes(on_wire),
        1,
        "a late answer must not report again"
    );
    assert!(h.p.is_closed());
}

/// A fatal error on one partition fails every record, including a batch of another
/// partition that is on the wire to a different broker: that broker can still append
/// it, so it is reported possibly written, and its late answer produces no event.
#[test]
fn fatal_error_reports_another_brokers_batch_on_the_wire_possibly_written() {
    let mut h = Harness::new(config().build().unwrap());
    h.leaders = vec![(0, 1, 0), (1, 2, 0)];
    let a = h.send(0, "a");
    let b = h.send(1, "b");
    assert_eq!(h.outstanding.len(), 2, "one request per broker");
    let to_node = |h: &Harness, node: i32| {
        h.outstanding
            .iter()
            .find(|r| r.node == NodeId(node))
            .unwrap()
            .id
    };
    let (ra, rb) = (to_node(&h, 1), to_node(&h, 2));
    h.respond(ra, &[(0, KafkaError::ClusterAuthorizationFailed, -1)]);
    assert_eq!(
        h.p.fatal_error(),
        Some(KafkaError::ClusterAuthorizationFailed)
    );
    assert_eq!(
        h.possibly_written(a),
        Some(false),
        "refused before the append"
    );
    assert_eq!(h.possibly_written(b), Some(true), "{:?}", h.events);
    h.respond(rb, &[(1, KafkaError::None, 0)]);
    assert_eq!(h.outcomes(b), 1, "a late answer must not report again");
}

// ------------------------------------------------------------------ hole 2

/// Kafka's DelayedProduce answers NOT_LEADER_OR_FOLLOWER (and KAFKA_STORAGE_ERROR,
/// UNKNOWN_TOPIC_OR_PARTITION) for a partition whose leadership or replica was lost
/// while an acks=all produce waited in purgatory, after the append; the appendToLocalLog
/// catch-all answers UNKNOWN_SERVER_ERROR. None of these proves the batch absent. The
/// codes refused before the append (validation, producer state, ISR check) do.
#[test]
fn errors_answered_after_the_append_may_have_appended() {
    for e in [
        KafkaError::NotLeaderOrFollower,
        KafkaError::KafkaStorageError,
        KafkaError::UnknownTopicOrPartition,
        KafkaError::RequestTimedOut,
        KafkaError::NotEnoughReplicasAfterAppend,
        KafkaError::UnknownServerError,
        KafkaError::NetworkException,
        KafkaError::Unknown(4242),
    ] {
        assert!(e.may_have_appended(), "{e}");
    }
    for e in [
        KafkaError::NotEnoughReplicas,
        KafkaError::OutOfOrderSequenceNumber,
        KafkaError::InvalidProducerEpoch,
        KafkaError::MessageTooLarge,
        KafkaError::RecordListTooLarge,
        KafkaError::CorruptMessage,
        KafkaError::InvalidRecord,
        KafkaError::TopicAuthorizationFailed,
    ] {
        assert!(!e.may_have_appended(), "{e}");
    }
}

/// The first attempt is answered NOT_LEADER_OR_FOLLOWER (the old leader appended it,
/// then lost leadership while the produce waited for replication), every retry
/// NOT_ENOUGH_REPLICAS until the delivery timeout. The record may be in the log: it is
/// reported possibly written, and the next record does not reuse its sequence.
#[test]
fn not_leader_or_follower_then_rejections_is_reported_possibly_written() {
    let mut h = Harness::new(
        config()
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Duration::from_millis(1000))
            .build()
            .unwrap(),
    );
    let a = h.send(0, "a");
    let first = wire(h.outstanding.front().unwrap())[0].clone();
    h.respond_oldest(0, 0, KafkaError::NotLeaderOrFollower, -1);
    while h.outcomes(a) == 0 {
        h.advance(60);
        if let Some(r) = h.outstanding.front().cloned() {
            h.respond(r.id, &[(0, KafkaError::NotEnoughReplicas, -1)]);
        }
    }
    assert_eq!(h.possibly_written(a), Some(true), "{:?}", h.events);
    h.advance(60);
    h.send(0, "x");
    let x = wire(h.outstanding.back().expect("x is sent"))[0].clone();
    assert_ne!(
        (x.producer_id, x.epoch, x.base_sequence),
        (first.producer_id, first.epoch, first.base_sequence),
        "x reuses a's (producer id, epoch, sequence)"
    );
}

/// A batch answered NOT_LEADER_OR_FOLLOWER may be in the new leader's log under its
/// stamp. When a later batch of the partition fails definitively (MESSAGE_TOO_LARGE, one
/// record) and asks for an epoch bump, the bump must not renumber it: it is resent with
/// its stamp unchanged first (a duplicate's ack, or OUT_OF_ORDER proving it absent).
#[test]
fn bump_never_renumbers_a_batch_answered_not_leader_or_follower() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    h.send(0, "a");
    h.send(0, "b");
    assert_eq!(h.outstanding.len(), 2);
    let ra = h.outstanding[0].clone();
    let rb = h.outstanding[1].id;
    let a_stamp = wire(&ra)[0].clone();
    assert_eq!(a_stamp.base_sequence, 1);
    h.respond(ra.id, &[(0, KafkaError::NotLeaderOrFollower, -1)]);
    h.respond(rb, &[(0, KafkaError::MessageTooLarge, -1)]);
    h.advance(60);
    let resent: Vec<Wire> = h.outstanding.iter().flat_map(wire).collect();
    assert_eq!(resent.len(), 1, "{resent:?}");
    assert_eq!(
        (resent[0].epoch, resent[0].base_sequence),
        (a_stamp.epoch, a_stamp.base_sequence),
        "a was renumbered while it may be in the log"
    );
}

// ------------------------------------------------------------------ hole 3

/// Like `Harness::pump`, but InitProducerId requests are held, not answered.
fn pump_holding_init(h: &mut Harness, held: &mut Vec<RequestId>) {
    loop {
        let mut progressed = false;
        while let Some(r) = h.p.poll_request(h.now) {
            progressed = true;
            match r {
                Request::InitProducerId(r) => held.push(r.id),
                Request::Produce(r) => h.outstanding.push_back(r),
                Request::Metadata(r) => {
                    let mut md = Metadata::default();
                    for partition in 0..2 {
                        let node = if partition == 0 { 1 } else { 2 };
                        md.partitions.push(PartitionMetadata::new(
                            tp(partition),
                            Some(NodeId(node)),
                            0,
                        ));
                    }
                    h.p.handle_metadata(Some(r.id), &md, h.now).unwrap();
                }
                other => panic!("unexpected request {other:?}"),
            }
        }
        while let Some(e) = h.p.poll_event() {
            progressed = true;
            h.events.push(e);
        }
        h.p.assert_invariants();
        if !progressed {
            return;
        }
    }
}

/// Answers the outstanding produce request `id` without the harness's auto-answers.
fn answer(h: &mut Harness, id: RequestId, answers: &[(i32, KafkaError)]) {
    let pos = h.outstanding.iter().position(|r| r.id == id).unwrap();
    h.outstanding.remove(pos);
    let mut response = ProduceResponse::default();
    for &(partition, error) in answers {
        response
            .partitions
            .push(PartitionResponse::error(tp(partition), error));
    }
    h.p.handle_produce_response(id, &response, h.now).unwrap();
}

/// At epoch `i16::MAX` a bump needs a new producer id. While it is being fetched, a
/// second partition joins the rewrite set with a batch still on the wire. The new id
/// must not renumber that partition until its batch is answered: every path into a
/// rewrite passes the same safety check.
#[test]
fn epoch_exhaustion_never_renumbers_a_batch_on_the_wire() {
    let mut h = Harness::with_pid(
        config().build().unwrap(),
        ProducerIdAndEpoch::new(343434, i16::MAX),
    );
    h.leaders = vec![(0, 1, 0), (1, 2, 0)];
    h.warm(0);
    h.warm(1);
    let mut held = Vec::new();
    for (partition, value) in [(0, "a"), (1, "b1"), (1, "b2")] {
        h.p.send(&tp(partition), &record(value), h.now).unwrap();
        pump_holding_init(&mut h, &mut held);
    }
    assert_eq!(
        h.outstanding.len(),
        3,
        "a, b1 and b2 each in its own request"
    );
    let ids: Vec<RequestId> = h.outstanding.iter().map(|r| r.id).collect();
    // a: OUT_OF_ORDER as the next sequence asks for a bump; at epoch MAX that is a new id.
    answer(&mut h, ids[0], &[(0, KafkaError::OutOfOrderSequenceNumber)]);
    pump_holding_init(&mut h, &mut held);
    assert_eq!(held.len(), 1, "a new producer id is requested");
    // b1 asks for a bump of partition 1 too, while b2 is still on the wire.
    answer(&mut h, ids[1], &[(1, KafkaError::OutOfOrderSequenceNumber)]);
    pump_holding_init(&mut h, &mut held);
    h.p.handle_producer_id(held[0], Ok(ProducerIdAndEpoch::new(343435, 0)), h.now)
        .unwrap();
    pump_holding_init(&mut h, &mut held);
    // b2 is answered under its old numbering: the broker lacks b1.
    answer(&mut h, ids[2], &[(1, KafkaError::OutOfOrderSequenceNumber)]);
    pump_holding_init(&mut h, &mut held);
    h.now = h.now + Duration::from_millis(60);
    h.p.handle_timeout(h.now);
    pump_holding_init(&mut h, &mut held);
    let sent: Vec<Wire> = h.outstanding.iter().flat_map(wire).collect();
    let p1: Vec<(i64, i32)> = sent
        .iter()
        .filter(|w| w.partition == 1)
        .map(|w| (w.producer_id, w.base_sequence))
        .collect();
    assert_eq!(
        p1,
        vec![(343435, 0)],
        "b1 renumbered under the new id: {sent:?}"
    );
    assert!(
        sent.iter()
            .any(|w| w.partition == 0 && w.producer_id == 343435),
        "{sent:?}"
    );
}

// ------------------------------------------------------------------ InputError

/// An InitProducerId answer without a valid producer id is refused with
/// `InputError::Mismatch`, and, as `InputError` documents, nothing changes: the request
/// is still outstanding, so a correct answer to it is accepted, and without one it times
/// out like any unanswered request and is asked again.
#[test]
fn refused_producer_id_answer_leaves_the_request_outstanding() {
    let config = config()
        .request_timeout(Duration::from_millis(1000))
        .build()
        .unwrap();
    for answer_again in [true, false] {
        let mut p = Producer::new(config.clone(), Timestamp::ZERO);
        p.send(&tp(0), &record("a"), Timestamp::ZERO).unwrap();
        let Some(Request::InitProducerId(r)) = p.poll_request(Timestamp::ZERO) else {
            panic!("InitProducerId first");
        };
        let refused = p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::NONE), Timestamp::ZERO);
        assert!(
            matches!(refused, Err(InputError::Mismatch { request, .. }) if request == r.id),
            "{refused:?}"
        );
        p.assert_invariants();
        assert_eq!(p.producer_id(), ProducerIdAndEpoch::NONE);
        assert!(
            !matches!(
                p.poll_request(Timestamp::ZERO),
                Some(Request::InitProducerId(_))
            ),
            "the refused answer changed the state: a second InitProducerId went out"
        );
        if answer_again {
            let pid = ProducerIdAndEpoch::new(7, 0);
            p.handle_producer_id(r.id, Ok(pid), Timestamp::ZERO)
                .expect("the request is still outstanding");
            assert_eq!(p.producer_id(), pid);
        } else {
            let later = Timestamp::ZERO + Duration::from_millis(1001);
            p.handle_timeout(later);
            let mut again = false;
            let mut t = later;
            for _ in 0..100 {
                while let Some(req) = p.poll_request(t) {
                    again |= matches!(req, Request::InitProducerId(_));
                }
                if again {
                    break;
                }
                t = t + Duration::from_millis(10);
                p.handle_timeout(t);
            }
            assert!(again, "the producer wedged after a refused answer");
        }
    }
}

/// The same contract on the transactional path: an answer fed to the wrong handler
/// (here the InitProducerId of `init_transactions` answered as a FindCoordinator) is
/// refused with `InputError::Mismatch` and must leave the request outstanding, so the
/// right answer is still accepted and `init_transactions` completes.
#[test]
fn mismatched_transactional_answer_leaves_the_request_outstanding() {
    let mut cfg = config();
    cfg.transactional_id("tx-1");
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(2);
    h.p.init_transactions().unwrap();
    h.pump();
    let Some(Request::InitProducerId(r)) = h.txn_requests.pop_front() else {
        panic!("InitProducerId expected");
    };
    let refused =
        h.p.handle_find_coordinator(r.id, Ok(NodeId(COORDINATOR)), h.now);
    assert!(
        matches!(refused, Err(InputError::Mismatch { .. })),
        "{refused:?}"
    );
    // Handlers that used to take any outstanding transactional request as theirs.
    let refused = h.p.handle_end_txn(r.id, Ok(None), h.now);
    assert!(
        matches!(refused, Err(InputError::Mismatch { .. })),
        "{refused:?}"
    );
    let refused = h.p.handle_add_offsets(r.id, KafkaError::None, h.now);
    assert!(
        matches!(refused, Err(InputError::Mismatch { .. })),
        "{refused:?}"
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::Initializing),
        "nothing changed"
    );
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(5, 0)), h.now)
        .expect("the request is still outstanding");
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
}

// ------------------------------------------------------------------ OUT_OF_ORDER (r3)

/// **OUT_OF_ORDER_SEQUENCE_NUMBER is no proof of absence for a batch that may be in
/// the log.** Two batches in flight (sequences 1 and 2), both written while their
/// answers were lost; the leader then reloads its producer state from a snapshot,
/// which keeps only the producer's newest batch (`ProducerStateManager.writeSnapshot`,
/// `UnifiedLog.rebuildProducerState`), so the retry of sequence 1 is answered
/// OUT_OF_ORDER although it is in the log (`ProducerAppendInfo.checkSequence`). The
/// core used to take that answer as proof of absence and renumber the batch under a
/// bumped epoch: a duplicate. It never renumbers it: the batch stays under its stamp
/// until the broker settles it (here the duplicate's ack of sequence 2 proves it
/// written; `tests/leader_forgot_batches.rs` has the cases where nothing does).
#[test]
fn out_of_order_for_a_possibly_written_batch_never_renumbers_it() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let first = h.send(0, "first");
    let second = h.send(0, "second");
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    assert_eq!(sent.len(), 2, "both batches pipelined");
    for r in &sent {
        h.fail(r.id, RequestFailure::Disconnected);
    }
    h.advance(100);
    let retry = h
        .outstanding
        .front()
        .expect("the first batch resent")
        .clone();
    let w = &wire(&retry)[0];
    assert_eq!((w.epoch, w.base_sequence), (0, 1), "resent unchanged first");
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    // Nothing renumbered the first batch: no request carries it under a new epoch.
    while let Some(r) = h.outstanding.front().cloned() {
        let w = &wire(&r)[0];
        assert_eq!(w.epoch, 0, "a batch was renumbered: {w:?}");
        if w.base_sequence == 2 {
            h.respond(r.id, &[(0, KafkaError::DuplicateSequenceNumber, -1)]);
        } else {
            h.respond(r.id, &[(0, KafkaError::None, 10)]);
        }
    }
    assert_eq!(h.outcomes(first), 1);
    assert_eq!(h.delivered(first), Some(None), "{:?}", h.events);
    assert_eq!(h.delivered(second), Some(None), "{:?}", h.events);
    let later = h.send(0, "later");
    h.advance(100);
    let r = h
        .outstanding
        .front()
        .expect("the later record sent")
        .clone();
    let w = &wire(&r)[0];
    assert_eq!((w.epoch, w.base_sequence), (0, 3), "{w:?}");
    h.respond(r.id, &[(0, KafkaError::None, 11)]);
    assert_eq!(h.delivered(later), Some(Some(11)));
}
