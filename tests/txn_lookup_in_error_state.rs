//! Coordinator lookups while the transaction is in an error state.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Java's `TxnRequestHandler` answers NOT_COORDINATOR with `lookupCoordinator` (a
/// FindCoordinator queued at once) and `reenqueue`. If the transaction turned abortable
/// while the request was out, `Sender.maybeSendAndPollTransactionalRequest` →
/// `TransactionManager.nextRequest` drops the re-queued request
/// (`maybeTerminateRequestWithError`) but lets the FindCoordinator go: the coordinator
/// is found again before the application aborts, and the dropped AddPartitionsToTxn is
/// never resent.
#[test]
fn not_coordinator_in_an_abortable_state_looks_the_coordinator_up_again() {
    let mut h = Harness::transactional(1);
    h.init_transactions_as(ProducerIdAndEpoch::new(7, 1));
    assert_eq!(h.lookups, vec![CoordinatorType::Transaction]);

    h.p.begin_transaction().unwrap();
    h.send(0, "a");
    let Request::AddPartitionsToTxn(add) = h.next_txn() else {
        panic!("AddPartitionsToTxn expected")
    };
    // The transaction turns abortable while the AddPartitionsToTxn is out.
    h.p.send_refused(KafkaError::RequestTimedOut);
    h.pump();
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    h.p.handle_add_partitions(add.id, &[(tp(0), KafkaError::NotCoordinator)], h.now)
        .unwrap();
    h.pump();
    // Past the retry backoff (50 ms): the re-queued request is dropped, its lookup goes.
    h.advance(100);
    assert_eq!(
        h.lookups,
        vec![CoordinatorType::Transaction, CoordinatorType::Transaction],
        "the coordinator is looked up again before any abort"
    );
    assert!(
        h.txn_requests.is_empty(),
        "nothing but the lookup goes in an error state: {:?}",
        h.txn_requests
    );
    assert!(h.outstanding.is_empty());
}
