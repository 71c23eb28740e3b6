//! The core's adding of partitions ending after a difference Java's stale
//! AddPartitionsToTxn retry makes (docs/design.md, `JavaReasksPendingPartitions`, the
//! stale retry where the core asks for new partitions).
//!
//! Java's stale retry goes out where the core sends its next AddPartitionsToTxn, so
//! Java asks for the core's partitions one request later, joined with partitions the
//! application sent to meanwhile. Where the core's transaction fails or is aborted after
//! the difference (its own departure, e.g. UNKNOWN_PRODUCER_ID making it abortable where
//! Java restarts the partition's sequences), the core refuses those sends and never asks
//! for those partitions, while Java's later request names them.

use super::field;
use super::lines::COMMIT_REFUSED;
use super::txn::added_in_transaction;
use super::txn_add_partitions2::adding_ended;

/// Whether the core's adding of partitions ended in its history after the difference at
/// `i` and before its next `begin` (`core_end`): an accepted abort, a failed completion,
/// a refused commit, or a refused send with no commit or abort called (the rule
/// `txn_add_partitions2::adding_ended` states for Java, which the core follows in each
/// case: an aborting or failed transaction adds no partition). A partition new to both
/// sides at the difference that Java's next request for new partitions names and the
/// core never asks for is then accounted for: the core stopped adding.
pub(super) fn core_stopped_adding(core: &[(usize, &str)], i: usize, core_end: usize) -> bool {
    adding_ended(core, i + 1, core_end)
}

/// Whether every partition of `parts` (Java's AddPartitionsToTxn at the difference `i`)
/// was already added on both sides in this transaction (an AddPartitionsToTxn answer
/// named it NONE, `txn::added_in_transaction`). Such a request is one Java built
/// earlier, with the partitions pending then (`TransactionManager.nextRequest` joins
/// `pendingPartitionsInTransaction` and the new ones), and sends after a newer request
/// was answered for them: stale like a retry of a line it sent before, so the stale
/// retry form (`txn_add_partitions2::java_stale_retry_while_core_asks_new`) takes it.
pub(super) fn added_by_both(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
    parts: &[i32],
) -> bool {
    !parts.is_empty()
        && parts
            .iter()
            .all(|&p| added_in_transaction(java, i, p) && added_in_transaction(core, i, p))
}

/// For the refused-commit form of `CoreExpiresWhileCoordinatorRequestOut`
/// (`txn_refusals::core_expires_while_coordinator_request_out_refusing`): besides Java
/// accepting the commit the core refuses, Java may refuse it too, later, where its own
/// `sendProducerData` expired the batch once its conversation let it run: Java's next
/// commit call after `i` is refused, and Java's output fails a record with
/// REQUEST_TIMED_OUT (its expiry; timing only, as the form's other evidence). The
/// caller's other conditions (the core's expiry the only cause, Java's transactional
/// request out, Java going on with the AddPartitionsToTxn it held) are unchanged.
pub(super) fn java_refuses_commit_after_expiring(
    java_out: &[String],
    java: &[(usize, &str)],
    i: usize,
) -> bool {
    let next_commit = java[i..]
        .iter()
        .find(|&&(_, l)| field(l, "ev") == Some("txn_call") && field(l, "call") == Some("commit"));
    let java_expired = java_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:7"));
    next_commit.is_some_and(|&(_, l)| l == COMMIT_REFUSED) && java_expired
}
