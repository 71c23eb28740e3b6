//! A transactional batch that never reached the wire and expires makes the transaction
//! abortable.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Hands every Produce request back as not sent (the leader is unreachable) and moves
/// the clock on, until each of `records` has an outcome.
fn never_reach_the_leader(h: &mut Harness, records: &[RecordId]) {
    for _ in 0..40 {
        if records.iter().all(|&id| h.failed(id).is_some()) {
            return;
        }
        while let Some(r) = h.outstanding.front().cloned() {
            h.fail(r.id, RequestFailure::NotSent);
        }
        h.advance(500);
    }
}

/// Each of `records` failed at `delivery.timeout.ms`, never written, and the
/// transaction can only be aborted.
fn expired_and_only_abortable(h: &mut Harness, records: &[RecordId]) {
    for &id in records {
        assert!(
            matches!(h.failed(id), Some(DeliveryError::Timeout { .. })),
            "{:?}",
            h.events
        );
        assert_eq!(h.possibly_written(id), Some(false), "never written");
    }
    h.assert_only_abortable();
    h.p.abort_transaction().unwrap();
}

/// Java's `Sender.failBatch` → `TransactionManager.handleFailedBatch` →
/// `maybeTransitionToErrorState`: inside a transaction every failed batch makes the
/// transaction abortable, whether or not it was ever written, since its records are
/// not in the transaction and a commit would lose them silently. Here the partition's
/// leader is never reachable (every Produce request is handed back as not sent), so the
/// batch expires in its queue at `delivery.timeout.ms`, and the commit must fail.
#[test]
fn an_unsent_batch_expiring_in_a_transaction_makes_it_abortable() {
    let mut h = Harness::transactional(1);
    h.init_transactions_as(ProducerIdAndEpoch::new(7, 1));
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.answer_add_partitions(0, KafkaError::None);
    never_reach_the_leader(&mut h, &[a]);
    expired_and_only_abortable(&mut h, &[a]);
}

/// The same for the pieces of a batch split after MESSAGE_TOO_LARGE, each with a stamp
/// of its own that has never been on the wire (Java's `handleFailedBatch` makes no
/// exception for a split batch's pieces).
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
        Some(TransactionState::InTransaction),
        "a split is no failure"
    );
    never_reach_the_leader(&mut h, &ids);
    expired_and_only_abortable(&mut h, &ids);
}
