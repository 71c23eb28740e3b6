//! Java's AddPartitionsToTxn conversation going on where the core's has stopped or
//! turned to ending the transaction (docs/design.md, "Java's AddPartitionsToTxn
//! requests outlive their reason" and the UNKNOWN_PRODUCER_ID and expiry departures):
//! the narrow conditions by which the existing detectors of those departures also take
//! a retry of the just-answered request, an answer whose errors Java and the core walk
//! in different orders to the same kind of failure, a lookup answer failing Java's
//! transaction, the core's KIP-360 bump after its EndTxn, Java's refusals while it
//! completes, and Java's naming of batches it aborts after an expiry.

use super::field;
use super::lines::{
    answer_entries as entries, identity, is_request, refused_send, ABORT_OK, BEGIN_OK, COMMIT_OK,
};
use super::txn::{is_add_partitions, parts};
use super::txn_add_partitions2::{decide, java_order, Action};
use super::txn_refusals::coordinator_retriable;

/// Whether `line` is an answer to an AddPartitionsToTxn.
fn is_add_answer(line: &str) -> bool {
    field(line, "ev") == Some("coord_answered") && field(line, "api") == Some("add_partitions")
}

/// Whether `line` is the answer to a coordinator lookup.
fn is_lookup_answer(line: &str) -> bool {
    field(line, "ev") == Some("coord_answered") && field(line, "api") == Some("find_coordinator")
}

/// The widening of `txn_add_partitions2::older_after_failure`'s answer: an
/// AddPartitionsToTxn answer whose entries, walked in Java's map order
/// (`AddPartitionsToTxnHandler.handleResponse` over a `HashMap`: [`java_order`]) and
/// in the answer's order (the core's walk), each come first to an error that makes the
/// transaction abortable (TOPIC_AUTHORIZATION_FAILED, TRANSACTION_ABORTABLE,
/// UNKNOWN_PRODUCER_ID: [`decide`]), whatever other errors later entries carry (neither
/// side reads past the first error it acts on). Neither side adds any partition from it,
/// and while aborting neither changes state on it (`transitionToAbortableError` does
/// nothing in ABORTING_TRANSACTION). Example: `0=TRANSACTION_ABORTABLE,
/// 1=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,2=TRANSACTION_ABORTABLE`: Java meets
/// partition 2 first, the core partition 0.
pub(super) fn abortable_in_both_orders(answer: &str) -> bool {
    if !is_add_answer(answer) {
        return false;
    }
    let e = entries(answer);
    let abortable = |a: Option<Action>| {
        matches!(
            a,
            Some(Action::Fails(
                "TOPIC_AUTHORIZATION_FAILED" | "TRANSACTION_ABORTABLE" | "UNKNOWN_PRODUCER_ID"
            ))
        )
    };
    abortable(decide(&java_order(&e))) && abortable(decide(&e))
}

/// Whether Java's line `i` is the retry of the AddPartitionsToTxn both sides had just
/// answered: the line before `i` is, on both sides, the same AddPartitionsToTxn answer,
/// on which Java's handler (walked in Java's map order) retries (CONCURRENT_TRANSACTIONS,
/// COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT), and
/// Java's line `i` is the same line as the last AddPartitionsToTxn both sides sent
/// before (Java re-enqueues that request as it was). The core, whose transaction is
/// abortable by then, sends no retry (an abortable transaction adds no partition: Java's
/// `nextRequest` fails such requests too, `maybeTerminateRequestWithError`).
pub(super) fn retry_of_answered(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    if i == 0 || java.len() <= i || core.len() < i || java[i - 1].1 != core[i - 1].1 {
        return false;
    }
    let answer = java[i - 1].1;
    if !is_add_answer(answer) || decide(&java_order(&entries(answer))) != Some(Action::Retry) {
        return false;
    }
    let j = java[i].1;
    let last_is_j = |h: &[(usize, &str)]| {
        h[..i]
            .iter()
            .rev()
            .find(|&&(_, l)| is_add_partitions(l))
            .is_some_and(|&(_, l)| l == j)
    };
    last_is_j(java) && last_is_j(core)
}

/// The widening of `txn_add_partitions3::unknown_producer_id_refused_before_java_fails`
/// for an answer to a lookup: in Java's window (its AddPartitionsToTxn conversation and
/// lookups between the difference and its own refusal) the last answer is a lookup's,
/// with an error Java does not retry (`FindCoordinatorHandler.handleResponse` re-enqueues
/// only on a `RetriableException`; any other error fails the transaction:
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED or an unexpected one fatally,
/// GROUP_AUTHORIZATION_FAILED abortably), every earlier lookup answer is NONE or
/// retriable, and every AddPartitionsToTxn answer there is one Java's handler (in its
/// map order) looks up or retries on.
pub(super) fn lookup_fails_last(window: &[(usize, &str)]) -> bool {
    let answers: Vec<&str> = window
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| field(l, "ev") == Some("coord_answered"))
        .collect();
    let Some((last, earlier)) = answers.split_last() else {
        return false;
    };
    let goes_on = |l: &&str| {
        if is_lookup_answer(l) {
            return coordinator_retriable(l);
        }
        is_add_answer(l)
            && matches!(
                decide(&java_order(&entries(l))),
                Some(Action::Lookup | Action::Retry)
            )
    };
    is_lookup_answer(last) && !coordinator_retriable(last) && earlier.iter().all(goes_on)
}

/// The widening of `txn_stale_add_partitions::aborts_fail_alike`'s pairing for the
/// core's KIP-360 bump: pair `k` of the two sides' conversation lines (`jt`, `ct`) is
/// Java's AddPartitionsToTxn (under the identity of Java's request `j`, naming only its
/// partitions) against the core's InitProducerId under that identity, sent right after
/// the core's EndTxn(ABORT) was answered UNKNOWN_PRODUCER_ID (the core ends such an
/// abort with the bump, as Java's `EndTxnHandler` does through
/// `abortableErrorIfPossible` and the bump `beginCompletingTransaction` owes); or the
/// answers to those two, Java's giving some partition the code the core's bump got (the
/// harness answers whichever request is outstanding).
pub(super) fn bump_pair(jt: &[&str], ct: &[&str], k: usize, j: &str) -> bool {
    let (Some(&a), Some(&b)) = (jt.get(k), ct.get(k)) else {
        return false;
    };
    let bump =
        |l: &str| is_request(l) && field(l, "api") == Some("init") && identity(l) == identity(j);
    let after_end_txn_upid = |at: usize| {
        at >= 1
            && ct[at - 1]
                == r#"{"ev":"coord_answered","api":"end_txn","error":"UNKNOWN_PRODUCER_ID"}"#
    };
    if is_request(a) || is_request(b) {
        let jp = parts(j);
        return is_add_partitions(a)
            && identity(a) == identity(j)
            && parts(a).iter().all(|p| jp.contains(p))
            && bump(b)
            && after_end_txn_upid(k);
    }
    let answer_to_bump = field(b, "ev") == Some("coord_answered")
        && field(b, "api") == Some("init")
        && k >= 1
        && bump(ct[k - 1])
        && after_end_txn_upid(k - 1);
    let Some(code) = field(b, "error") else {
        return false;
    };
    answer_to_bump && is_add_answer(a) && entries(a).iter().any(|&(_, c)| c == code)
}

/// The widening of `txn_add_partitions3::older_request_first`'s window for Java's
/// refused sends: line `l` of `h` (after `i`) is a refused send, and the application's
/// commit or abort was accepted in the transaction before `i` (after its last `begin`):
/// a completing transaction refuses every send (`TransactionManager.maybeAddPartition`
/// outside IN_TRANSACTION), whatever its AddPartitionsToTxn conversation does.
pub(super) fn completing_refusal(h: &[(usize, &str)], i: usize, l: &str) -> bool {
    let began = h[..i]
        .iter()
        .rposition(|&(_, x)| x == BEGIN_OK)
        .unwrap_or(0);
    refused_send(l)
        && h[began..i]
            .iter()
            .any(|&(_, x)| x == COMMIT_OK || x == ABORT_OK)
}

/// The widening of `txn_add_partitions2::core_expires_during_lookup_java_aborts`'s check
/// that Java fails record `rec`, which the core expired: Java fails it with
/// REQUEST_TIMED_OUT (expired) or -1 (aborted unsent, `TransactionAbortedException`),
/// or with TRANSACTION_ABORTABLE where Java expired some record itself (failed it with
/// REQUEST_TIMED_OUT) and no Produce or coordinator answer in its output names
/// TRANSACTION_ABORTABLE: Java's Sender fails the batches it aborts unsent with
/// `lastError` when it has one (`maybeAbortBatches`), and kafka-clients 4.3.1's
/// `maybeTransitionToErrorState` names an expired batch's `TimeoutException`, wrapped,
/// TRANSACTION_ABORTABLE (docs/design.md, `CommitFailsWithJavasLastError`).
pub(super) fn java_fails_expired(java_out: &[String], rec: &str) -> bool {
    let result = |r: &str| {
        java_out.iter().any(|l| {
            field(l, "ev") == Some("outcome")
                && field(l, "rec") == Some(rec)
                && field(l, "result") == Some(r)
        })
    };
    if result("err:7") || result("err:-1") {
        return true;
    }
    let expired_some = java_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:7"));
    let answered_abortable = java_out.iter().any(|l| {
        matches!(field(l, "ev"), Some("answered" | "coord_answered"))
            && l.contains("TRANSACTION_ABORTABLE")
    });
    result("err:120") && expired_some && !answered_abortable
}

/// The widening of `txn_refusals::java_asks_pending_partitions_while_aborting`'s skip
/// before the core's EndTxn(ABORT): line `l` (of the core's history from `i`) is a
/// refused send or a refused `begin` or `commit` call that Java also writes from `i`
/// on. While aborting both sides refuse every send and both calls (no transition to
/// them from ABORTING_TRANSACTION); Java writes them after its held request.
pub(super) fn refused_by_both(java: &[(usize, &str)], i: usize, l: &str) -> bool {
    let refused_call = field(l, "ev") == Some("txn_call")
        && matches!(field(l, "call"), Some("begin" | "commit"))
        && field(l, "result") == Some("refused");
    (refused_send(l) || refused_call) && java[i..].iter().any(|&(_, x)| x == l)
}
