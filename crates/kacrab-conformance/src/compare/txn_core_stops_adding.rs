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
use super::lines::{is_request, BEGIN_OK, COMMIT_REFUSED, FOUND};
use super::txn::added_in_transaction;
use super::txn::is_add_partitions;
use super::txn_add_partitions2::adding_ended;
use super::txn_core_turns_abortable::{core_fails_unsplit_possibly_written, fails_record_with};
use super::txn_refusals::{coordinator_retriable, produce_retriable};

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

/// [`super::Verdict::NoRenumberOfPossiblyWritten`] ending a transaction where the
/// core's history ends: the answer `txn_core_turns_abortable::
/// core_fails_unsplit_possibly_written` describes (a batch of more than one record that
/// may be in the log, answered MESSAGE_TOO_LARGE; the core fails it and turns
/// abortable, Java splits it and resends its first piece) comes while an
/// AddPartitionsToTxn is out, and that request's answer, on the next line of both
/// outputs, names only errors both sides retry (at least one). Java, whose transaction
/// goes on, sends the same request again at the first difference (history index `i`);
/// the core, abortable, drops it (it sends only lookups then) and its history ends
/// there; the core fails records with MESSAGE_TOO_LARGE (10).
pub(super) fn core_never_splits_history_ends(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, j)) = java.get(i) else {
        return false;
    };
    if core.len() != i || i == 0 || !is_add_partitions(j) || at < 2 {
        return false;
    }
    let last_request = core.iter().rev().find(|&&(_, l)| is_request(l));
    let answer = &core_out[at - 1];
    let retried_answer = field(answer, "ev") == Some("coord_answered")
        && field(answer, "api") == Some("add_partitions")
        && coordinator_retriable(answer)
        && field(answer, "error").is_some_and(|e| e.split(',').any(|x| !x.ends_with("=NONE")));
    last_request.is_some_and(|&(_, l)| l == j)
        && core[i - 1].0 == at - 1
        && java_out.get(at - 1) == Some(answer)
        && retried_answer
        && fails_record_with(core_out, "err:10")
        && core_fails_unsplit_possibly_written(java_out, core_out, at - 1)
}

/// [`super::Verdict::CoreExpiresWhileCoordinatorRequestOut`] where the core's history
/// ends: a lookup both sides sent was answered NONE on the last line of the core's
/// history (index `i - 1`), Java's line at the first difference `i` is the
/// AddPartitionsToTxn that waited for that lookup (sent before its `sendProducerData`
/// runs again), and the core's history ends there: a batch of the core expired by
/// `delivery.timeout.ms` (a record failed with REQUEST_TIMED_OUT) while the lookup was
/// out, so its transaction is abortable and it drops the held request. The expiry is the
/// only cause the core's output shows: since the transaction began every Produce answer
/// and every coordinator answer carried only errors both sides retry. Timing only, as in
/// the form's other shapes: Java expires the same batches once `sendProducerData` runs
/// (its output fails a record with REQUEST_TIMED_OUT too). Every other outcome of the
/// core's (a record of an earlier transaction) is Java's too.
pub(super) fn core_expires_history_ends(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(_, j)) = java.get(i) else {
        return false;
    };
    if core.len() != i || i < 2 || !is_add_partitions(j) {
        return false;
    }
    let found_then_held = field(core[i - 2].1, "api") == Some("find_coordinator")
        && is_request(core[i - 2].1)
        && core[i - 1].1 == FOUND;
    let Some(began) = core.iter().rposition(|&(_, l)| l == BEGIN_OK) else {
        return false;
    };
    let since = core[began].0;
    let produce_retried = core_out[since..]
        .iter()
        .filter(|l| field(l, "ev") == Some("answered"))
        .all(|l| produce_retriable(l));
    let coordinator_retried = core[began..]
        .iter()
        .filter(|&&(_, l)| field(l, "ev") == Some("coord_answered"))
        .all(|&(_, l)| coordinator_retriable(l));
    let expired = |out: &[String]| {
        out.iter()
            .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:7"))
    };
    // Any other outcome of the core's (a record of an earlier transaction) is Java's too.
    let others_alike = core_out
        .iter()
        .filter(|l| field(l, "ev") == Some("outcome") && field(l, "result") != Some("err:7"))
        .all(|l| java_out.contains(l));
    found_then_held
        && produce_retried
        && coordinator_retried
        && expired(core_out)
        && expired(java_out)
        && others_alike
}
