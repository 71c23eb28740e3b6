//! Attacks on the transactional producer: every operation ends
//! with exactly one completion event, and a graceful close does not report the producer
//! closed while one is still pending.

mod support;

use kacrab_idempotence::*;
use support::*;

const PID: i64 = 4242;

fn txn_harness(version_level: i16) -> Harness {
    let mut cfg = config();
    cfg.transactional_id("tx-r2");
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(version_level);
    h
}

fn txn_ready(version_level: i16) -> Harness {
    let mut h = txn_harness(version_level);
    h.p.init_transactions().unwrap();
    let Request::InitProducerId(r) = h.next_txn() else {
        panic!("InitProducerId expected")
    };
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(PID, 1)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    h.events.clear();
    h
}

/// `close()` while `init_transactions` waits for its InitProducerId: Java's Sender keeps
/// running on a graceful close while transactional requests are pending
/// (`Sender.run`: `hasPendingTransactionalRequests`), so the init completes. The core
/// used to say `is_closed()` at once, with the operation still pending: a driver stops
/// there and the operation never gets its event.
#[test]
fn graceful_close_waits_for_a_pending_init_transactions() {
    let mut h = txn_harness(1);
    h.p.init_transactions().unwrap();
    let Request::InitProducerId(r) = h.next_txn() else {
        panic!("InitProducerId expected")
    };
    h.p.close();
    h.pump();
    assert!(
        !h.p.is_closed(),
        "closed while init_transactions is pending: {:?}",
        h.txn_completions()
    );
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(PID, 1)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.txn_completions(), vec![(TxnOp::InitTransactions, Ok(()))]);
    assert!(h.p.is_closed());
}

/// A TV1 abort after an abortable error completes only after its KIP-360 epoch bump.
/// `close()` between the EndTxn(ABORT) answer and the bump must not report the producer
/// closed while the abort is still pending.
#[test]
fn graceful_close_waits_for_the_abort_epoch_bump() {
    let mut h = txn_ready(1);
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.add_all_partitions();
    let r = h.outstanding.front().expect("produce").id;
    h.respond(r, &[(0, KafkaError::InvalidRecord, -1)]);
    assert!(h.failed(a).is_some());
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    h.p.abort_transaction().unwrap();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn(ABORT) expected")
    };
    h.p.handle_end_txn(e.id, Ok(None), h.now).unwrap();
    h.pump();
    assert!(
        h.txn_completions().is_empty(),
        "the abort waits for its bump"
    );
    h.p.close();
    h.pump();
    assert!(
        !h.p.is_closed(),
        "closed while the abort (and its bump) is pending"
    );
    let Request::InitProducerId(b) = h.next_txn() else {
        panic!("InitProducerId(bump) expected")
    };
    assert_eq!(b.current, ProducerIdAndEpoch::new(PID, 1));
    h.p.handle_producer_id(b.id, Ok(ProducerIdAndEpoch::new(PID, 2)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.txn_completions(), vec![(TxnOp::Abort, Ok(()))]);
    assert!(h.p.is_closed());
}

/// TV1: a batch of the transaction being aborted fails as possibly written (its
/// attempt was lost on the wire and the retry expired). The EndTxn(ABORT) marker only
/// covers what the leader holds when it is written; the lost attempt can still land
/// after it, with the same epoch and the sequence the partition expects next, and then
/// join the next transaction on that partition (KIP-890 verification passes: the
/// partition is in that ongoing transaction) and be committed with it. Only a new epoch
/// (KIP-360's InitProducerId bump after the abort) makes the coordinator's verification
/// and the leader refuse it. The abort used to end without a bump (an error during an
/// abort changed nothing).
#[test]
fn tv1_abort_with_a_possibly_written_failure_bumps_the_epoch() {
    let mut h = txn_ready(1);
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "lost on the wire");
    h.add_all_partitions();
    let r1 = h.outstanding.front().expect("produce").id;
    h.p.abort_transaction().unwrap();
    h.pump();
    assert!(h.txn_requests.is_empty(), "EndTxn waits for the batch");
    h.fail(r1, RequestFailure::Disconnected);
    // Past delivery.timeout.ms before the retry goes: the batch expires.
    h.advance(20_000);
    let Some(true) = h.events.iter().find_map(|e| match e {
        Event::Failed {
            records,
            possibly_written,
            ..
        } if records.contains(&a) => Some(*possibly_written),
        _ => None,
    }) else {
        panic!("a fails possibly written: {:?}", h.events)
    };
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn(ABORT) expected")
    };
    assert!(!e.commit);
    h.p.handle_end_txn(e.id, Ok(None), h.now).unwrap();
    h.pump();
    let next = h.txn_requests.pop_front();
    let Some(Request::InitProducerId(b)) = next else {
        panic!(
            "an epoch bump must follow the abort, got {next:?}, state {:?}",
            h.p.transaction_state()
        )
    };
    assert_eq!(b.current, ProducerIdAndEpoch::new(PID, 1));
    assert!(
        h.txn_completions().is_empty(),
        "the abort completes after its bump"
    );
    h.p.handle_producer_id(b.id, Ok(ProducerIdAndEpoch::new(PID, 2)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.txn_completions(), vec![(TxnOp::Abort, Ok(()))]);
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
}

/// An AddPartitionsToTxn answer of OPERATION_NOT_ATTEMPTED for every partition (and no
/// other error) adds nothing: Java's `AddPartitionsToTxnHandler` counts it as a
/// partition error and the transaction becomes abortable. The core took the answer as
/// success, moved the partition into the transaction and drained its batch to a
/// partition the coordinator never added (no marker would ever end it there).
#[test]
fn add_partitions_answered_operation_not_attempted_adds_nothing() {
    let mut h = txn_ready(1);
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.answer_all_add_partitions(KafkaError::OperationNotAttempted);
    assert!(
        h.outstanding.is_empty(),
        "a drained to a partition not added"
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    assert!(h.failed(a).is_some(), "the unsent batch fails");
    h.p.abort_transaction().unwrap();
    h.pump();
    // Nothing was added: the abort ends without EndTxn, with the TV1 bump.
    let Some(Request::InitProducerId(b)) = h.txn_requests.pop_front() else {
        panic!("InitProducerId(bump) expected")
    };
    h.p.handle_producer_id(b.id, Ok(ProducerIdAndEpoch::new(PID, 2)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.txn_completions(), vec![(TxnOp::Abort, Ok(()))]);
}

/// TV1: an EndTxn(COMMIT) attempt is lost on the wire (the coordinator may still have
/// it queued: Kafka processes a request read before its connection closed), and its
/// retry commits. Under the same epoch, that late EndTxn would commit the *next*
/// transaction halfway, whatever it holds at that moment (TV1 EndTxn names only the
/// producer id and epoch; KIP-890 part 2 bumps the epoch on every EndTxn for this
/// reason). Found by the simulator (seed 21126, TV1, fault rate 0.12: "transaction 4
/// half visible"). The core now bumps the epoch after such a transaction (KIP-360's
/// InitProducerId with the current epoch), which fences the late request; the commit
/// completes after the bump.
#[test]
fn tv1_end_txn_lost_on_the_wire_bumps_the_epoch_after_the_transaction() {
    let mut h = txn_ready(1);
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.add_all_partitions();
    let r = h.outstanding.front().expect("produce").id;
    h.respond(r, &[(0, KafkaError::None, 0)]);
    assert!(h.delivered(a).is_some());
    h.p.commit_transaction().unwrap();
    let Request::EndTxn(e1) = h.next_txn() else {
        panic!("EndTxn expected")
    };
    h.p.handle_request_failed(e1.id, RequestFailure::Disconnected, h.now)
        .unwrap();
    h.advance(1_000);
    let Request::EndTxn(e2) = h.txn_requests.pop_front().expect("EndTxn again") else {
        panic!("EndTxn retry expected")
    };
    assert!(e2.commit);
    h.p.handle_end_txn(e2.id, Ok(None), h.now).unwrap();
    h.pump();
    let next = h.txn_requests.pop_front();
    let Some(Request::InitProducerId(b)) = next else {
        panic!("an epoch bump must fence the lost EndTxn, got {next:?}")
    };
    assert_eq!(b.current, ProducerIdAndEpoch::new(PID, 1));
    assert!(
        h.txn_completions().is_empty(),
        "the commit completes after the bump"
    );
    h.p.handle_producer_id(b.id, Ok(ProducerIdAndEpoch::new(PID, 2)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.txn_completions(), vec![(TxnOp::Commit, Ok(()))]);
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
}
