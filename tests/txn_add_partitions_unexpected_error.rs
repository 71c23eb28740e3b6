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
    let mut cfg = config();
    cfg.transactional_id("tx-1");
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(1);
    h.p.init_transactions().unwrap();
    h.pump();
    let Some(Request::InitProducerId(r)) = h.txn_requests.pop_front() else {
        panic!("InitProducerId expected")
    };
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(7, 1)), h.now)
        .unwrap();
    h.pump();
    h.p.begin_transaction().unwrap();
    let a = h.send(0, "a");
    let Some(Request::AddPartitionsToTxn(r)) = h.txn_requests.pop_front() else {
        panic!("AddPartitionsToTxn expected")
    };
    h.p.handle_add_partitions(r.id, &[(tp(0), KafkaError::UnknownServerError)], h.now)
        .unwrap();
    h.pump();

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
