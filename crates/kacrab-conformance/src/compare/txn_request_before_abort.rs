//! [`Verdict::JavaAsksNewPartitionsWhileAborting`](super::Verdict) where Java's held
//! AddPartitionsToTxn goes out right at the lookup's answer, before the application's
//! abort, which the core takes first.

use super::lines::ABORT_OK;
use super::txn::{after_lookup, asked_in_transaction, is_add_partitions, parts};

/// The form of `txn_refusals::java_asks_pending_partitions_while_aborting` where the
/// abort call comes in the step after the lookup's answer: at the first difference `i`
/// (the line before a successful lookup on both sides) Java sends an AddPartitionsToTxn
/// and accepts the abort on its next line, and the core accepts that abort at `i` (its
/// transaction abortable, it sends only lookups, so nothing of its went out at the
/// lookup's answer; Java, whose transaction is not abortable, sent the request the
/// lookup held back at once: `Sender.maybeSendAndPollTransactionalRequest`). With the
/// abort call moved before the lookup's answer on both sides (it changes no request of
/// either), the rest is that detector's rule unchanged: the core's transaction abortable
/// before the abort, Java's request naming partitions both asked for and neither added,
/// and the core's EndTxn(ABORT) that Java sends too, or answers failing both aborts
/// alike. Java's request may also name partitions new to the transaction on both sides
/// (neither asked for them before; Java, not abortable, asks for a partition a record
/// arrived at, the core's abortable transaction asks for none): those are set aside
/// (the rule is checked on the request naming the others, at least one).
pub(super) fn java_request_before_abort(
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(_, jn)), Some(&(_, c))) =
        (java.get(i), java.get(i + 1), core.get(i))
    else {
        return false;
    };
    if !is_add_partitions(j) || jn != ABORT_OK || c != ABORT_OK || !after_lookup(java, core, i) {
        return false;
    }
    let new = |p: i32| !asked_in_transaction(java, i, p) && !asked_in_transaction(core, i, p);
    let pending: Vec<String> = parts(j)
        .into_iter()
        .filter(|&p| !new(p))
        .map(|p| p.to_string())
        .collect();
    if pending.is_empty() {
        return false;
    }
    let Some(head) = j.split_once(r#","parts":"#).map(|(h, _)| h) else {
        return false;
    };
    let request = format!(r#"{head},"parts":"{}"}}"#, pending.join(","));
    // Move the abort call before the lookup's answer on both sides.
    let mut jm = java.to_vec();
    jm[i].1 = &request;
    jm.swap(i, i + 1); // .., found, abort, request
    jm.swap(i - 1, i); // .., abort, found, request
    let mut cm = core.to_vec();
    cm.swap(i - 1, i); // .., abort, found, EndTxn
    super::txn_refusals::java_asks_pending_partitions_while_aborting(core_out, &jm, &cm, i + 1)
}
