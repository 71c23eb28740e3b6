//! A transactional batch that never reached the wire and expires makes the transaction
//! abortable.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Java's `Sender.failBatch` → `TransactionManager.handleFailedBatch` →
/// `maybeTransitionToErrorState`: inside a transaction every failed batch makes the
/// transaction abortable, whether or not it was ever written, since its records are
/// not in the transaction and a commit would lose them silently. Here the partition's
/// leader is never reachable (every Produce request is handed back as not sent), so the
/// batch, stamped for its first attempt, expires in its queue at `delivery.timeout.ms`.
/// Its sequences are released (no batch after it was sent), and the commit must still
/// fail.
#[test]
fn an_unsent_batch_expiring_in_a_transaction_makes_it_abortable() {
    let mut h = Harness::transactional(1);
    h.init_transactions_as(ProducerIdAndEpoch::new(7, 1));
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.answer_add_partitions(0, KafkaError::None);
    for _ in 0..40 {
        if h.failed(a).is_some() {
            break;
        }
        while let Some(r) = h.outstanding.front().cloned() {
            h.fail(r.id, RequestFailure::NotSent);
        }
        h.advance(500);
    }
    assert!(
        matches!(h.failed(a), Some(DeliveryError::Timeout { .. })),
        "{:?}",
        h.events
    );
    assert_eq!(h.possibly_written(a), Some(false), "never written");
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    assert!(matches!(
        h.p.commit_transaction(),
        Err(TxnError::Abortable(_))
    ));
    h.p.abort_transaction().unwrap();
}

/// The same for the pieces of a batch split after MESSAGE_TOO_LARGE: each piece gets a
/// stamp of its own that has never been on the wire, and when the pieces expire unsent
/// their sequences are released. The transaction must still become abortable (Java's
/// `handleFailedBatch` makes no exception for a split batch's pieces).
#[test]
fn split_pieces_expiring_unsent_in_a_transaction_make_it_abortable() {
    let mut h = Harness::transactional(1);
    h.init_transactions_as(ProducerIdAndEpoch::new(7, 1));
    h.p.begin_transaction().unwrap();
    let ids: Vec<RecordId> = ["1", "2", "3", "4"]
        .iter()
        .map(|v| h.p.send(&tp(0), &record(v), h.now).expect("accepted"))
        .collect();
    h.pump();
    h.answer_add_partitions(0, KafkaError::None);
    let r = h.outstanding.back().expect("sent").clone();
    assert_eq!(wire(&r)[0].count, 4, "one batch of four");
    h.respond(r.id, &[(0, KafkaError::MessageTooLarge, -1)]);
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::InTransaction)
    );
    for _ in 0..40 {
        if ids.iter().all(|&id| h.failed(id).is_some()) {
            break;
        }
        while let Some(r) = h.outstanding.front().cloned() {
            h.fail(r.id, RequestFailure::NotSent);
        }
        h.advance(500);
    }
    for &id in &ids {
        assert!(
            matches!(h.failed(id), Some(DeliveryError::Timeout { .. })),
            "{:?}",
            h.events
        );
    }
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    assert!(matches!(
        h.p.commit_transaction(),
        Err(TxnError::Abortable(_))
    ));
}
