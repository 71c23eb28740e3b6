//! `send_offsets_to_transaction` and the TxnOffsetCommit answer, rule for rule Java's
//! `KafkaProducer.sendOffsetsToTransaction` and `TransactionManager.TxnOffsetCommitHandler`
//! (Kafka trunk), driven through the public API with the scripted harness (it finds the
//! coordinators, node 9; each test answers the other transactional requests).

mod support;

use kacrab_idempotence::*;
use support::*;

const PID: i64 = 13131;

fn txn(v2: bool) -> Harness {
    Harness::transactional(if v2 { 2 } else { 1 })
}

/// Initialized and in a transaction, with nothing added to it yet.
fn in_empty_txn(v2: bool) -> Harness {
    let mut h = txn(v2);
    h.p.init_transactions().unwrap();
    let Request::InitProducerId(r) = h.next_txn() else {
        panic!("InitProducerId expected")
    };
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(PID, 0)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    h.events.clear();
    h.p.begin_transaction().unwrap();
    h
}

fn completions(h: &Harness, op: TxnOp) -> usize {
    h.events
        .iter()
        .filter(|e| matches!(e, Event::TransactionCompleted { op: o, .. } if *o == op))
        .count()
}

fn input(p: i32) -> TopicPartition {
    TopicPartition::new("in", p)
}

fn group() -> ConsumerGroupMetadata {
    ConsumerGroupMetadata::new("g").with_member(3, "m")
}

/// The consume-transform-produce loop whose poll returned nothing: offsets of no
/// partition, then the commit. Java's `KafkaProducer.sendOffsetsToTransaction` hands an
/// empty map to nobody (nothing is sent, the transaction does not start), and the commit
/// of a transaction nothing joined completes without EndTxn
/// (`TransactionManager.nextRequest`, `!transactionStarted`; KAFKA-18401). Under TV2 the
/// core sent an empty TxnOffsetCommit and then EndTxn(COMMIT) for a transaction the
/// coordinator never saw, which it refuses: the producer went fatal. Under TV1 it sent
/// AddOffsetsToTxn, an empty TxnOffsetCommit and EndTxn: three requests Java never sends.
/// Failed before the fix (a TxnOffsetCommit under TV2, an AddOffsetsToTxn under TV1).
#[test]
fn empty_offsets_send_nothing_and_the_empty_commit_ends_locally() {
    for v2 in [true, false] {
        let mut h = in_empty_txn(v2);
        h.p.send_offsets_to_transaction(Vec::new(), group())
            .unwrap();
        h.pump();
        assert!(
            h.txn_requests.is_empty(),
            "tv2 {v2}: nothing sent for empty offsets, got {:?}",
            h.txn_requests
        );
        assert_eq!(h.completed(TxnOp::SendOffsets), Some(Ok(())), "tv2 {v2}");
        assert_eq!(
            completions(&h, TxnOp::SendOffsets),
            1,
            "tv2 {v2}: one event"
        );
        assert_eq!(
            h.p.transaction_state(),
            Some(TransactionState::InTransaction)
        );
        h.p.commit_transaction().unwrap();
        h.pump();
        assert!(
            h.txn_requests.is_empty(),
            "tv2 {v2}: no EndTxn for a transaction nothing joined, got {:?}",
            h.txn_requests
        );
        assert_eq!(h.completed(TxnOp::Commit), Some(Ok(())), "tv2 {v2}");
        assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
        // The producer goes on: the next transaction's record is produced and committed.
        h.p.begin_transaction().unwrap();
        h.send(0, "a");
        if !v2 {
            let Request::AddPartitionsToTxn(a) = h.next_txn() else {
                panic!("AddPartitionsToTxn")
            };
            h.p.handle_add_partitions(a.id, &[(tp(0), KafkaError::None)], h.now)
                .unwrap();
            h.pump();
        }
        let r = h.outstanding.front().expect("the record goes out").id;
        h.respond(r, &[(0, KafkaError::None, 0)]);
        h.p.commit_transaction().unwrap();
        let Request::EndTxn(e) = h.next_txn() else {
            panic!("EndTxn for the transaction the record joined")
        };
        assert!(e.commit);
    }
}

/// Empty offsets in a transaction a record joined: nothing is sent for the offsets, and
/// the commit still ends the transaction with EndTxn (it started with the record).
#[test]
fn empty_offsets_leave_a_started_transaction_to_its_end_txn() {
    let mut h = in_empty_txn(true);
    h.send(0, "a");
    let r = h.outstanding.front().expect("the record goes out").id;
    h.respond(r, &[(0, KafkaError::None, 0)]);
    h.p.send_offsets_to_transaction(Vec::new(), group())
        .unwrap();
    h.pump();
    assert!(h.txn_requests.is_empty(), "{:?}", h.txn_requests);
    assert_eq!(h.completed(TxnOp::SendOffsets), Some(Ok(())));
    h.p.commit_transaction().unwrap();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn")
    };
    h.p.handle_end_txn(e.id, Ok(Some(ProducerIdAndEpoch::new(PID, 1))), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.completed(TxnOp::Commit), Some(Ok(())));
}

/// Empty offsets are still refused where non-empty ones are: outside a transaction, and
/// in an abortable state. (Java checks nothing but the group metadata for an empty map;
/// the core answers the same as for a non-empty one, which tells the application of its
/// bug instead of hiding it until the commit.)
#[test]
fn empty_offsets_are_refused_outside_a_transaction() {
    let mut h = in_empty_txn(true);
    h.p.abort_transaction().unwrap();
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    let refused = h.p.send_offsets_to_transaction(Vec::new(), group());
    assert_eq!(
        refused,
        Err(TxnError::InvalidState {
            op: TxnOp::SendOffsets,
            state: TransactionState::Ready
        })
    );
    h.pump();
    assert_eq!(completions(&h, TxnOp::SendOffsets), 0);
}

/// Java's `KafkaProducer.throwIfInvalidGroupMetadata`: group metadata with a generation
/// (`generationId > 0`) but no member id (`JoinGroupRequest.UNKNOWN_MEMBER_ID`, the empty
/// string) is refused before anything else, with empty offsets too. A generation of 0 or
/// -1 without a member id is accepted (the broker then checks no membership). Failed
/// before the fix (accepted, and sent).
#[test]
fn group_metadata_with_a_generation_but_no_member_id_is_refused() {
    for offsets in [Vec::new(), vec![OffsetToCommit::new(input(0), 7)]] {
        let mut h = in_empty_txn(true);
        let bad = ConsumerGroupMetadata::new("g").with_member(5, "");
        assert_eq!(
            h.p.send_offsets_to_transaction(offsets.clone(), bad),
            Err(TxnError::InvalidGroupMetadata { generation_id: 5 })
        );
        h.pump();
        assert!(h.txn_requests.is_empty(), "{:?}", h.txn_requests);
        assert_eq!(completions(&h, TxnOp::SendOffsets), 0);
        assert_eq!(
            h.p.transaction_state(),
            Some(TransactionState::InTransaction)
        );
        // The same call with a valid group goes on: nothing was left pending.
        for generation in [0, -1] {
            let ok = ConsumerGroupMetadata::new("g").with_member(generation, "");
            let mut h = in_empty_txn(true);
            h.p.send_offsets_to_transaction(offsets.clone(), ok)
                .unwrap();
        }
    }
    // Refused before the producer's own state is looked at, as Java checks it first.
    let mut p = Producer::new(config().build().unwrap(), Timestamp::ZERO);
    assert_eq!(
        p.send_offsets_to_transaction(
            Vec::new(),
            ConsumerGroupMetadata::new("g").with_member(1, "")
        ),
        Err(TxnError::InvalidGroupMetadata { generation_id: 1 })
    );
}

/// Sends offsets of partitions `in-0..n` and returns the TxnOffsetCommit (TV2: no
/// AddOffsetsToTxn before it).
fn offsets_commit(h: &mut Harness, n: i32) -> TxnOffsetCommitRequest {
    let offsets = (0..n).map(|p| OffsetToCommit::new(input(p), 10)).collect();
    h.p.send_offsets_to_transaction(offsets, group()).unwrap();
    let Request::TxnOffsetCommit(c) = h.next_txn() else {
        panic!("TxnOffsetCommit")
    };
    c
}

/// What one TxnOffsetCommit answer did to the producer.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The offsets were committed into the transaction.
    Committed,
    /// The failed partitions are sent again to the same coordinator.
    Retried,
    /// The group coordinator is looked up again, then the partitions are sent again.
    LookedUp,
    /// The transaction must be aborted.
    Abortable(KafkaError),
    /// Fenced by a newer producer.
    Fenced,
    /// The producer is done for.
    Fatal(KafkaError),
}

fn answer_offsets(h: &mut Harness, answers: &[(i32, KafkaError)]) -> Outcome {
    let c = offsets_commit(h, answers.len() as i32);
    let answers: Vec<_> = answers.iter().map(|&(p, e)| (input(p), e)).collect();
    h.p.handle_txn_offset_commit(c.id, &answers, h.now).unwrap();
    h.pump();
    match h.completed(TxnOp::SendOffsets) {
        Some(Ok(())) => return Outcome::Committed,
        Some(Err(TxnError::Abortable(e))) => {
            assert_eq!(
                h.p.transaction_state(),
                Some(TransactionState::AbortableError)
            );
            return Outcome::Abortable(e);
        }
        Some(Err(TxnError::ProducerFenced)) => return Outcome::Fenced,
        Some(Err(TxnError::Fatal(e))) => {
            assert_eq!(h.p.transaction_state(), Some(TransactionState::FatalError));
            return Outcome::Fatal(e);
        }
        Some(Err(e)) => panic!("unexpected {e:?}"),
        None => {}
    }
    // Still pending: sent again, after a lookup or not.
    let mut c2 = None;
    for _ in 0..20 {
        h.advance(60);
        if let Some(r) = h.txn_requests.pop_front() {
            c2 = Some(r);
            break;
        }
    }
    let Some(Request::TxnOffsetCommit(_)) = c2 else {
        panic!("the offsets are sent again, got {c2:?}")
    };
    let group_lookups = h
        .lookups
        .iter()
        .filter(|&&k| k == CoordinatorType::Group)
        .count();
    if group_lookups > 1 {
        Outcome::LookedUp
    } else {
        Outcome::Retried
    }
}

/// Every TxnOffsetCommit partition error by its class in Java's
/// `TxnOffsetCommitHandler.handleResponse` (Kafka trunk): COORDINATOR_NOT_AVAILABLE,
/// NOT_COORDINATOR and REQUEST_TIMED_OUT look the group coordinator up; other retriable
/// codes retry; GROUP_AUTHORIZATION_FAILED, FENCED_INSTANCE_ID, TRANSACTION_ABORTABLE,
/// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and (KIP-1319, KAFKA-20444) GROUP_ID_NOT_FOUND and
/// STALE_MEMBER_EPOCH are abortable; INVALID_PRODUCER_EPOCH and PRODUCER_FENCED are fenced;
/// everything else is fatal (TRANSACTIONAL_ID_AUTHORIZATION_FAILED and
/// UNSUPPORTED_FOR_MESSAGE_FORMAT by name, the rest as unexpected).
#[test]
fn txn_offset_commit_errors_by_class() {
    use KafkaError as E;
    let cases = [
        (E::None, Outcome::Committed),
        (E::CoordinatorNotAvailable, Outcome::LookedUp),
        (E::NotCoordinator, Outcome::LookedUp),
        (E::RequestTimedOut, Outcome::LookedUp),
        (E::UnknownTopicOrPartition, Outcome::Retried),
        (E::CoordinatorLoadInProgress, Outcome::Retried),
        (E::NetworkException, Outcome::Retried),
        (
            E::GroupAuthorizationFailed,
            Outcome::Abortable(E::GroupAuthorizationFailed),
        ),
        (E::FencedInstanceId, Outcome::Abortable(E::FencedInstanceId)),
        (
            E::TransactionAbortable,
            Outcome::Abortable(E::TransactionAbortable),
        ),
        (E::UnknownMemberId, Outcome::Abortable(E::UnknownMemberId)),
        (
            E::IllegalGeneration,
            Outcome::Abortable(E::IllegalGeneration),
        ),
        (E::GroupIdNotFound, Outcome::Abortable(E::GroupIdNotFound)),
        (E::StaleMemberEpoch, Outcome::Abortable(E::StaleMemberEpoch)),
        (E::InvalidProducerEpoch, Outcome::Fenced),
        (E::ProducerFenced, Outcome::Fenced),
        (
            E::TransactionalIdAuthorizationFailed,
            Outcome::Fatal(E::TransactionalIdAuthorizationFailed),
        ),
        (
            E::UnsupportedForMessageFormat,
            Outcome::Fatal(E::UnsupportedForMessageFormat),
        ),
        (E::InvalidTxnState, Outcome::Fatal(E::InvalidTxnState)),
        (
            E::InvalidProducerIdMapping,
            Outcome::Fatal(E::InvalidProducerIdMapping),
        ),
        (E::UnknownProducerId, Outcome::Fatal(E::UnknownProducerId)),
        (E::UnknownServerError, Outcome::Fatal(E::UnknownServerError)),
    ];
    for (error, expected) in cases {
        let mut h = in_empty_txn(true);
        assert_eq!(answer_offsets(&mut h, &[(0, error)]), expected, "{error:?}");
    }
}

/// Java's handler walks the answer's partitions and stops at the first abortable or
/// fatal error (`break`): that one decides, whatever follows. Java walks a `HashMap`
/// (`TxnOffsetCommitResponse.errors`), so its "first" is in no order a broker controls;
/// the core takes the answer's order, which is one of Java's possible walks. The core
/// let the last such error win: a fenced answer after an abortable one made the producer
/// fatal, and an abortable one after a fenced one let it live. Failed before the fix.
#[test]
fn the_first_abortable_or_fatal_txn_offset_commit_error_decides() {
    use KafkaError as E;
    let cases = [
        (
            [E::UnknownMemberId, E::ProducerFenced],
            Outcome::Abortable(E::UnknownMemberId),
        ),
        ([E::ProducerFenced, E::UnknownMemberId], Outcome::Fenced),
        (
            [E::GroupAuthorizationFailed, E::UnknownServerError],
            Outcome::Abortable(E::GroupAuthorizationFailed),
        ),
        (
            [E::InvalidTxnState, E::FencedInstanceId],
            Outcome::Fatal(E::InvalidTxnState),
        ),
        // A lookup or a retry before it does not stop the walk.
        (
            [E::NotCoordinator, E::IllegalGeneration],
            Outcome::Abortable(E::IllegalGeneration),
        ),
        (
            [E::CoordinatorLoadInProgress, E::ProducerFenced],
            Outcome::Fenced,
        ),
        // A retriable error beside a lookup: looked up, then both sent again.
        (
            [E::UnknownTopicOrPartition, E::NotCoordinator],
            Outcome::LookedUp,
        ),
    ];
    for (errors, expected) in cases {
        let mut h = in_empty_txn(true);
        let answers: Vec<_> = errors
            .iter()
            .enumerate()
            .map(|(p, &e)| (p as i32, e))
            .collect();
        assert_eq!(answer_offsets(&mut h, &answers), expected, "{errors:?}");
    }
}

/// A lookup error before the deciding one still drops the group coordinator: Java's
/// handler calls `lookupCoordinator(GROUP)` when it meets it (which forgets the node)
/// and only then stops at the abortable error. The next transaction's TxnOffsetCommit
/// looks the coordinator up first instead of going to the node that said it is not the
/// one. Failed before the fix (one lookup only).
#[test]
fn a_lookup_error_before_the_deciding_one_forgets_the_group_coordinator() {
    use KafkaError as E;
    let mut h = in_empty_txn(true);
    let outcome = answer_offsets(&mut h, &[(0, E::NotCoordinator), (1, E::IllegalGeneration)]);
    assert_eq!(outcome, Outcome::Abortable(E::IllegalGeneration));
    h.p.abort_transaction().unwrap();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn(ABORT): the TxnOffsetCommit v5 started the transaction")
    };
    assert!(!e.commit);
    h.p.handle_end_txn(e.id, Ok(Some(ProducerIdAndEpoch::new(PID, 1))), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    let group_lookups = |h: &Harness| {
        h.lookups
            .iter()
            .filter(|&&k| k == CoordinatorType::Group)
            .count()
    };
    assert_eq!(group_lookups(&h), 1);
    h.p.begin_transaction().unwrap();
    offsets_commit(&mut h, 1);
    assert_eq!(
        group_lookups(&h),
        2,
        "looked up again before the next commit"
    );
}
