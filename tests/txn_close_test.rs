//! How a transactional producer closes (gracefully or by force), and an
//! AddPartitionsToTxn answer that omits a partition.

mod support;

use kacrab_idempotence::*;
use support::*;

const PID: i64 = 777;

fn txn_ready() -> Harness {
    let mut cfg = config();
    cfg.transactional_id("tx-close");
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(1);
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

/// After `abort()` (the forced close) a record never sent is reported failed, not
/// possibly written; `commit_transaction()` used to be accepted and send
/// EndTxn(COMMIT). Every transactional operation is now refused, and nothing
/// transactional is sent.
#[test]
fn commit_after_forced_close_is_refused_and_nothing_is_sent() {
    let mut h = txn_ready();
    h.p.begin_transaction().unwrap();
    add_all_after_send(&mut h);
    let unsent = h.p.send(&tp(1), &record("never sent"), h.now).unwrap();
    h.p.abort();
    h.pump();
    assert_eq!(h.failed(unsent), Some(DeliveryError::Aborted));
    assert_eq!(h.possibly_written(unsent), Some(false));
    assert_eq!(h.p.commit_transaction(), Err(TxnError::Closed));
    assert_eq!(h.p.abort_transaction(), Err(TxnError::Closed));
    assert_eq!(h.p.begin_transaction(), Err(TxnError::Closed));
    let (o, g) = (vec![], ConsumerGroupMetadata::new("g").with_member(1, "m"));
    assert_eq!(h.p.send_offsets_to_transaction(o, g), Err(TxnError::Closed));
    h.pump();
    assert!(h.txn_requests.is_empty(), "{:?}", h.txn_requests);
    assert!(h.p.is_closed());
}

/// One record sent and acknowledged in the transaction on partition 0.
fn add_all_after_send(h: &mut Harness) {
    let a = h.send(0, "sent");
    h.add_all_partitions();
    let r = h.outstanding.front().expect("produce").id;
    h.respond(r, &[(0, KafkaError::None, 0)]);
    assert_eq!(h.delivered(a), Some(Some(0)));
}

/// A forced close while a commit is pending completes the commit with
/// `TxnError::Closed` (Java fails every pending result), and the EndTxn on the wire is
/// forgotten.
#[test]
fn forced_close_completes_the_pending_commit_with_closed() {
    let mut h = txn_ready();
    h.p.begin_transaction().unwrap();
    add_all_after_send(&mut h);
    h.p.commit_transaction().unwrap();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn expected")
    };
    h.p.abort();
    h.pump();
    assert_eq!(
        h.txn_completions(),
        vec![(TxnOp::Commit, Err(TxnError::Closed))]
    );
    assert!(h.p.handle_end_txn(e.id, Ok(None), h.now).is_err());
    assert!(h.p.poll_timeout().is_none(), "nothing left to wait for");
    assert!(h.p.is_closed());
}

/// `close()` with a transaction open aborts it (Java's Sender aborts an ongoing
/// transaction on a graceful close): the record never sent fails Aborted, the sent one
/// is left to the EndTxn(ABORT) marker, and the producer is closed only after it.
#[test]
fn close_with_open_transaction_aborts_it() {
    let mut h = txn_ready();
    h.p.begin_transaction().unwrap();
    add_all_after_send(&mut h);
    let unsent = h.p.send(&tp(1), &record("unsent"), h.now).unwrap();
    h.p.close();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn(ABORT) expected on close")
    };
    assert!(!e.commit);
    assert_eq!(h.failed(unsent), Some(DeliveryError::Aborted));
    assert!(h.p.is_idle());
    assert!(!h.p.is_closed(), "closed only once the abort ended");
    assert_eq!(h.p.commit_transaction(), Err(TxnError::Closed));
    h.p.handle_end_txn(e.id, Ok(None), h.now).unwrap();
    h.pump();
    assert!(h.p.is_closed());
    assert!(
        h.txn_completions().is_empty(),
        "no application operation was pending"
    );
}

/// A commit requested before `close()` finishes as a commit.
#[test]
fn close_during_commit_lets_the_commit_finish() {
    let mut h = txn_ready();
    h.p.begin_transaction().unwrap();
    add_all_after_send(&mut h);
    h.p.commit_transaction().unwrap();
    h.p.close();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn expected")
    };
    assert!(e.commit);
    assert!(!h.p.is_closed());
    h.p.handle_end_txn(e.id, Ok(None), h.now).unwrap();
    h.pump();
    assert_eq!(h.txn_completions(), vec![(TxnOp::Commit, Ok(()))]);
    assert!(h.p.is_closed());
}

/// An AddPartitionsToTxn answer that omits a partition asked for: the omitted partition
/// is not in the transaction (it used to be taken as added and its batch drained), so
/// the transaction becomes abortable; the listed one is added and the abort ends it with
/// EndTxn.
#[test]
fn add_partitions_answer_omitting_a_partition_does_not_add_it() {
    let mut h = txn_ready();
    h.p.begin_transaction().unwrap();
    let a = h.p.send(&tp(0), &record("a"), h.now).unwrap();
    let b = h.p.send(&tp(1), &record("b"), h.now).unwrap();
    let Request::AddPartitionsToTxn(r) = h.next_txn() else {
        panic!("AddPartitionsToTxn expected")
    };
    assert_eq!(r.partitions.len(), 2);
    h.p.handle_add_partitions(r.id, &[(tp(0), KafkaError::None)], h.now)
        .unwrap();
    h.pump();
    assert!(
        h.outstanding
            .iter()
            .all(|p| p.batches.iter().all(|b| b.partition != tp(1))),
        "the omitted partition's batch must not drain"
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    assert_eq!(h.possibly_written(b), Some(false));
    assert!(matches!(
        h.p.commit_transaction(),
        Err(TxnError::Abortable(_))
    ));
    h.p.abort_transaction().unwrap();
    h.pump();
    for r in h.outstanding.clone() {
        h.respond(r.id, &[(0, KafkaError::None, 0)]);
    }
    let _ = a;
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn(ABORT): partition 0 is in the transaction")
    };
    assert!(!e.commit);
}
