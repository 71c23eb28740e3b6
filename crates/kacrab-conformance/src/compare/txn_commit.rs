//! Detectors for what follows a commit the core fails early
//! ([`Verdict::CommitFailsBeforeBatchesSettle`](super::Verdict)): the core completes a
//! commit with the transaction's abortable error as soon as the transaction becomes
//! abortable, where Java holds the failing EndTxn until no batch is incomplete
//! (`TransactionManager.nextRequest`) and only then fails it
//! (`maybeTerminateRequestWithError`). Meanwhile Java's commit is still pending, so
//! Java answers the application's calls by its pending-transition rule
//! (`TransactionManager.handleCachedTransactionRequestResult`, `throwIfPendingState`),
//! where the core, whose commit has ended, answers them by its state (docs/design.md,
//! "Transactional traces").

use kacrab_idempotence::KafkaError;

use super::field;
use super::lines::{
    failed_commit, ABORT_OK, ABORT_REFUSED, BEGIN_REFUSED, COMMIT_OK, COMMIT_REFUSED,
};
use super::txn::same;
use crate::core_side::error_by_name;

/// Whether Java wrote `line` while its commit was pending in an abortable transaction,
/// as the answer its rules dictate to an application call: a commit is the retry of the
/// pending one (`beginCommit` hands back the pending result), an abort or a begin is
/// refused (another operation while one is pending), and so is a send
/// (`maybeAddPartition`: the abortable error, `maybeFailWithError`, or before it the
/// pending commit, `throwIfPendingState`).
pub(super) fn java_refusal_while_committing(line: &str) -> bool {
    line == COMMIT_OK
        || line == ABORT_REFUSED
        || line == BEGIN_REFUSED
        || field(line, "ev") == Some("send_refused")
}

/// Whether Java wrote `line` in a coordinator lookup, which Java lets through while its
/// transaction is abortable (`maybeTerminateRequestWithError` spares FindCoordinator).
pub(super) fn java_lookup(line: &str) -> bool {
    matches!(field(line, "ev"), Some("txn" | "coord_answered"))
        && field(line, "api") == Some("find_coordinator")
}

/// Java's commit completion for the core's early failure at `i`: the index of Java's
/// next completion at or after `i`, when it is a failed commit.
fn java_commit_failure(java: &[(usize, &str)], i: usize) -> Option<usize> {
    let j = (i..java.len()).find(|&k| field(java[k].1, "ev") == Some("txn_done"))?;
    failed_commit(java[j].1).then_some(j)
}

/// Whether Java's line `k` is the core's line `k + 1` (the core, having failed its
/// commit one line earlier, is one line ahead), or a commit Java hands back the pending
/// result for and the core refuses.
pub(super) fn in_step(java: &[(usize, &str)], core: &[(usize, &str)], k: usize) -> bool {
    core.get(k + 1).is_some_and(|&(_, l)| {
        same(java[k].1, l) || (java[k].1 == COMMIT_OK && l == COMMIT_REFUSED)
    })
}

/// The lines between the core's early commit failure at `i` and Java's at `j`. Both
/// sides write the same (the core one line ahead; a commit retried in Java and refused
/// by the core aside, as in `txn::commit_fails_before_batches_settle`) up to `d`, where
/// the application aborts: Java refuses (its commit is still pending), the core
/// accepts (its commit has failed and its transaction is abortable); from `d` until
/// Java's commit fails, Java writes only what its pending commit dictates for each
/// application call (`java_refusal_while_committing`) and coordinator lookups
/// (`java_lookup`), nothing else. Without such an abort (`d` is `j`), every line is
/// in step. `with_abort`: whether the abort must be there.
fn in_step_or_refused(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
    j: usize,
    with_abort: bool,
) -> bool {
    let in_step = |k: usize| in_step(java, core, k);
    let d = (i..j).find(|&k| !in_step(k)).unwrap_or(j);
    if d == j {
        return !with_abort;
    }
    let aborted =
        java[d].1 == ABORT_REFUSED && core.get(d + 1).is_some_and(|&(_, l)| l == ABORT_OK);
    aborted
        && java[d..j]
            .iter()
            .all(|&(_, l)| java_refusal_while_committing(l) || java_lookup(l))
}

/// [`Verdict::CommitFailsBeforeBatchesSettle`](super::Verdict), when the application
/// aborts before Java's commit fails. At the first difference `i` the core completes
/// the commit with an error; Java's next completion is that commit's, with the same
/// error (or a wrapped one); in between, the lines are as `in_step_or_refused` says,
/// with the abort. The core's lines after its abort are the consequence of an abort
/// Java has not started (its own abort comes only when the application calls it
/// again) and are not compared.
pub(super) fn commit_fails_early_then_abort(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(_, c)) = core.get(i) else {
        return false;
    };
    if !failed_commit(c) {
        return false;
    }
    java_commit_failure(java, i)
        .is_some_and(|j| same(java[j].1, c) && in_step_or_refused(java, core, i, j, true))
}

/// Java's `maybeTransitionToErrorState` (kafka-clients 4.3.1, not yet in the October
/// 2024 source) makes a transaction abortable with a `TransactionAbortableException`
/// wrapping the batch's error when that error is retriable (a batch that expired, or
/// ran out of retries) or INVALID_TXN_STATE: the code Java's failed commit then names.
fn java_names(error: KafkaError) -> i16 {
    if error.is_retriable() || error == KafkaError::InvalidTxnState {
        KafkaError::TransactionAbortable.code()
    } else {
        error.code()
    }
}

/// The errors a Produce answer line failed batches with.
fn batch_errors(line: &str) -> impl Iterator<Item = KafkaError> + '_ {
    let answered = field(line, "ev") == Some("answered");
    field(line, "batches")
        .filter(|_| answered)
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.split_once('=').map(|(_, e)| error_by_name(e)))
        .filter(|e| !matches!(e, KafkaError::None | KafkaError::DuplicateSequenceNumber))
}

/// The error of an AddPartitionsToTxn answer line whose partitions all failed with one
/// error (Java's handler then takes that error, whatever order it reads them in).
fn single_add_partitions_error(line: &str) -> Option<KafkaError> {
    if field(line, "ev") != Some("coord_answered") || field(line, "api") != Some("add_partitions") {
        return None;
    }
    let mut errors = field(line, "error")?
        .split(',')
        .filter_map(|p| p.split_once('=').map(|(_, e)| e));
    let first = errors.next()?;
    (first != "NONE" && errors.all(|e| e == first)).then(|| error_by_name(first))
}

fn code_of(line: &str) -> Option<i16> {
    field(line, "result")?.strip_prefix("err:")?.parse().ok()
}

/// [`Verdict::CommitFailsWithJavasLastError`](super::Verdict): at the first difference
/// `i` the core fails the commit with the transaction's first abortable error; Java's
/// next completion fails the commit with another code, which is Java's name for an
/// abortable error too: Java's `lastError` takes every abortable error that comes while
/// it holds the EndTxn (`transitionToAbortableError` overwrites it) and the held EndTxn
/// fails with it (`maybeTerminateRequestWithError`), wrapped as `java_names` says. Java's
/// code must be (a) the core's own error as Java names it (the same cause, wrapped),
/// (b) Java's name for the error of a batch Java's output answers with a non-retriable
/// error at or after the first difference and before Java's commit fails (a batch that
/// failed while Java held the EndTxn), or (c) TRANSACTION_ABORTABLE where Java expired
/// a batch of the transaction (a record failed with REQUEST_TIMED_OUT: a
/// `TimeoutException`, retriable, wrapped; an expiry writes no line of its own, so its
/// time is not checked). The lines in between are as `in_step_or_refused` says, with or
/// without an abort.
pub(super) fn commit_fails_with_javas_last_error(
    java_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    let Some(j) = java_commit_failure(java, i) else {
        return false;
    };
    let (Some(jc), Some(cc)) = (code_of(java[j].1), code_of(c)) else {
        return false;
    };
    if !failed_commit(c) || jc == cc || jc == KafkaError::UnknownServerError.code() {
        return false;
    }
    let first = java.get(i).map_or(at, |&(l, _)| l.min(at));
    // The window opens at the Produce answer that failed a batch with the core's error
    // (the answer that made the core's transaction abortable), when the shared lines
    // end with it; else at the first difference.
    let cause = java_out[..first.min(java_out.len())]
        .iter()
        .rposition(|l| field(l, "ev") != Some("answered"))
        .map_or(0, |k| k + 1);
    let start = (cause..first)
        .find(|&k| batch_errors(&java_out[k]).any(|e| e.code() == cc))
        .unwrap_or(first);
    let held = &java_out[start.min(java[j].0)..java[j].0];
    let batch_failed = held.iter().any(|l| {
        batch_errors(l).any(|e| !e.is_retriable() && java_names(e) == jc)
            || single_add_partitions_error(l).is_some_and(|e| java_names(e) == jc)
    });
    const EXPIRED: &str = r#""result":"err:7"}"#;
    let expired = jc == KafkaError::TransactionAbortable.code()
        && java_out
            .iter()
            .any(|l| field(l, "ev") == Some("outcome") && l.ends_with(EXPIRED));
    let wrapped = java_names(KafkaError::from_code(cc)) == jc;
    (wrapped || batch_failed || expired)
        && (in_step_or_refused(java, core, i, j, false)
            || in_step_or_refused(java, core, i, j, true))
}

/// Whether Java wrote `line` in the AddPartitionsToTxn conversation (a request or its
/// answer), which goes on while Java's transaction is not abortable yet.
fn java_add_partitions(line: &str) -> bool {
    matches!(field(line, "ev"), Some("txn" | "coord_answered"))
        && field(line, "api") == Some("add_partitions")
}

/// [`Verdict::CoreExpiresWhileCoordinatorRequestOut`](super::Verdict): at the first
/// difference `i` the core fails the commit with REQUEST_TIMED_OUT: a batch of the
/// transaction expired by `delivery.timeout.ms` (a record of the core failed so) while
/// the last transactional request both sides sent before is unanswered. Java checks
/// expiry only in `Sender.sendProducerData`, which `runOnce` skips while a
/// transactional request is in flight (`maybeSendAndPollTransactionalRequest` returns
/// first), so it expires nothing then and goes on with its conversation: its next
/// completion is the commit's, failed. In between, both write the same (the core one
/// line ahead) up to the first line they differ on, and from there Java writes only
/// what its pending commit dictates for each application call, coordinator lookups and
/// its AddPartitionsToTxn conversation: no EndTxn, no InitProducerId. What the core
/// does after its failure (only lookups, as its transaction is abortable) is its
/// consequence.
pub(super) fn core_expires_while_coordinator_request_out(
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const EXPIRED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:7"}"#;
    if core.get(i).is_none_or(|&(_, c)| c != EXPIRED) {
        return false;
    }
    let Some(r) = core[..i]
        .iter()
        .rposition(|&(_, l)| field(l, "ev") == Some("txn"))
    else {
        return false;
    };
    let unanswered = !core[r + 1..i]
        .iter()
        .any(|&(_, l)| field(l, "ev") == Some("coord_answered"));
    let record_expired = core_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && l.ends_with(r#""result":"err:7"}"#));
    let Some(j) = java_commit_failure(java, i) else {
        return false;
    };
    let in_step = |k: usize| in_step(java, core, k);
    let d = (i..j).find(|&k| !in_step(k)).unwrap_or(j);
    let java_waits = java[d..j].iter().all(|&(_, l)| {
        java_refusal_while_committing(l) || java_lookup(l) || java_add_partitions(l)
    });
    unanswered && record_expired && java_waits
}
