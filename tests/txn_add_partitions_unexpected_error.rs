//! An AddPartitionsToTxn answer whose partition error is none the handler expects.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Java's `AddPartitionsToTxnHandler.handleResponse`: a partition error it does not
/// expect (here UNKNOWN_SERVER_ERROR, neither retriable nor one of the errors it acts on
/// at once) is logged ("Could not add partition {} due to unexpected error {}") and
/// counts as a partition error, so the answer ends in `abortableError`. The partition was
/// not added: its batch must never be produced, it fails, and the transaction can no
/// longer commit, only abort.
#[test]
fn an_unexpected_partition_error_makes_the_transaction_abortable() {
    let mut h = Harness::transactional(1);
    h.init_transactions_as(ProducerIdAndEpoch::new(7, 1));
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    h.answer_add_partitions(0, KafkaError::UnknownServerError);

    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    assert!(
        h.outstanding.is_empty(),
        "a partition not added to the transaction is never produced to"
    );
    assert!(
        matches!(
            h.failed(a),
            Some(DeliveryError::Broker {
                error: KafkaError::UnknownServerError,
                ..
            })
        ),
        "{:?}",
        h.events
    );
    assert_eq!(
        h.p.commit_transaction(),
        Err(TxnError::Abortable(KafkaError::UnknownServerError))
    );
    h.p.abort_transaction().unwrap();
}
