//! A broker answer that would move the transaction to a state its current one cannot
//! reach makes the producer fatal: Java's `TransactionManager.transitionTo` throws on an
//! invalid transition, and since KAFKA-14831 one met while handling a response (on the
//! Sender thread) is a fatal error (`TransactionManager.maybeFailWithError`), because the
//! state machine can no longer be trusted.

mod support;

use kacrab_idempotence::*;
use support::*;

fn txn_v1() -> Harness {
    let mut cfg = config();
    cfg.transactional_id("tx-1");
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(1);
    h
}

fn next_txn(h: &mut Harness) -> Request {
    h.pump();
    h.txn_requests.pop_front().expect("a transactional request")
}

/// KAFKA-14831 (`TransactionManager.transitionTo`, `maybeFailWithError`): while the
/// commit's EndTxn is on the wire, a send the application reports refused makes the
/// transaction abortable (`KafkaProducer.doSend` → `maybeTransitionToErrorState`, legal
/// from COMMITTING_TRANSACTION). The coordinator then answers the commit: completing it
/// would be ABORTABLE_ERROR → READY, an invalid transition, so the producer turns fatal
/// with INVALID_TXN_STATE instead of silently reporting a usable, committed state.
#[test]
fn a_commit_answer_after_the_transaction_turned_abortable_is_fatal() {
    let mut h = txn_v1();
    h.p.init_transactions().unwrap();
    let Request::InitProducerId(r) = next_txn(&mut h) else {
        panic!("InitProducerId expected")
    };
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(7, 1)), h.now)
        .unwrap();
    h.pump();
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    let Request::AddPartitionsToTxn(r) = next_txn(&mut h) else {
        panic!("AddPartitionsToTxn expected")
    };
    h.p.handle_add_partitions(r.id, &[(tp(0), KafkaError::None)], h.now)
        .unwrap();
    h.pump();
    let produce = h.outstanding.front().expect("the batch is sent").id;
    h.respond(produce, &[(0, KafkaError::None, 0)]);
    assert_eq!(h.delivered(a), Some(Some(0)));

    h.p.commit_transaction().unwrap();
    let Request::EndTxn(end) = next_txn(&mut h) else {
        panic!("EndTxn expected")
    };
    assert!(end.commit);
    // A send refused while the commit is out: the transaction may only abort now.
    h.p.send_refused(KafkaError::RequestTimedOut);
    h.pump();
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );

    h.p.handle_end_txn(end.id, Ok(None), h.now).unwrap();
    h.pump();
    assert_eq!(h.p.fatal_error(), Some(KafkaError::InvalidTxnState));
    assert_eq!(h.p.transaction_state(), Some(TransactionState::FatalError));
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::Fatal { error } if *error == KafkaError::InvalidTxnState)),
        "{:?}",
        h.events
    );
    assert!(
        h.p.begin_transaction().is_err(),
        "no transaction may start after the invalid transition"
    );
    assert!(h.p.send(&tp(0), &record("b"), h.now).is_err());
}
