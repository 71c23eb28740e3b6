//! A broker answer that would move the transaction to a state its current one cannot
//! reach makes the producer fatal: Java's `TransactionManager.transitionTo` throws on an
//! invalid transition, and since KAFKA-14831 one met while handling a response (on the
//! Sender thread) is a fatal error (`TransactionManager.maybeFailWithError`), because the
//! state machine can no longer be trusted.

mod support;

use kacrab_idempotence::*;
use support::*;

/// KAFKA-14831 (`TransactionManager.transitionTo`, `maybeFailWithError`): while the
/// commit's EndTxn is on the wire, a send the application reports refused makes the
/// transaction abortable (`KafkaProducer.doSend` → `maybeTransitionToErrorState`, legal
/// from COMMITTING_TRANSACTION). The coordinator then answers the commit: completing it
/// would be ABORTABLE_ERROR → READY, an invalid transition, so the producer turns fatal
/// with INVALID_TXN_STATE instead of silently reporting a usable, committed state.
#[test]
fn a_commit_answer_after_the_transaction_turned_abortable_is_fatal() {
    let mut h = Harness::transactional(1);
    h.init_transactions_as(ProducerIdAndEpoch::new(7, 1));
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.answer_add_partitions(0, KafkaError::None);
    let produce = h.outstanding.front().expect("the batch is sent").id;
    h.respond(produce, &[(0, KafkaError::None, 0)]);
    assert_eq!(h.delivered(a), Some(Some(0)));

    h.p.commit_transaction().unwrap();
    let Request::EndTxn(end) = h.next_txn() else {
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
