//! Java's older AddPartitionsToTxn request, sent first where the core looks the
//! coordinator up, answered with an error that makes Java's transaction abortable
//! (docs/design.md, "Transactional traces", `AddPartitionsErrorsTakenInAnotherOrder`).

use super::field;
use super::lines::{answer_entries as entries, identity, ABORT_OK};
use super::txn::{is_add_partitions, parts};
use super::txn_add_partitions2::{code_of, decide, java_order, Action, ABORTABLE};

/// A form of [`super::Verdict::AddPartitionsErrorsTakenInAnotherOrder`]: one
/// AddPartitionsToTxn answer (`answered` is the request it answers, Java's) gives its
/// partitions different errors; Java walks its map order and retries, the core takes
/// the answer's order and looks the coordinator up. Java's retry re-enqueues the
/// request behind its older one, which goes out first (as in
/// `txn_add_partitions3::older_request_first`), and the harness's next scripted answer,
/// an error that makes Java's transaction abortable, goes to it on Java's side and to
/// the core's lookup on the core's side. Exact: Java's line at `i` is an
/// AddPartitionsToTxn under `answered`'s identity naming a strict, non-empty subset of
/// its partitions; the core's is its lookup; Java's next line answers that request
/// naming exactly its partitions, and Java's handler (in its map order) fails the
/// transaction abortably on it (UNKNOWN_PRODUCER_ID, TRANSACTION_ABORTABLE,
/// TOPIC_AUTHORIZATION_FAILED); the core's next line answers its lookup with that same
/// error; every later line of the two histories is the same, and Java's output
/// (`java_out`) fails a record with that error's code.
pub(super) fn older_request_answered_abortable(
    java_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
    answered: &str,
) -> bool {
    if java.len() < i + 2 || core.len() < i + 2 || java.len() != core.len() {
        return false;
    }
    let (jl, cl) = (java[i].1, core[i].1);
    let (lp, ap) = (parts(jl), parts(answered));
    let older = is_add_partitions(jl)
        && identity(jl) == identity(answered)
        && !lp.is_empty()
        && lp.len() < ap.len()
        && lp.iter().all(|p| ap.contains(p));
    if !older || cl != r#"{"ev":"txn","api":"find_coordinator"}"# {
        return false;
    }
    let (ja, ca) = (java[i + 1].1, core[i + 1].1);
    if field(ja, "ev") != Some("coord_answered") || field(ja, "api") != Some("add_partitions") {
        return false;
    }
    let e = entries(ja);
    let mut ep: Vec<i32> = e.iter().map(|(p, _)| *p).collect();
    ep.sort_unstable();
    let mut own = lp.clone();
    own.sort_unstable();
    if ep != own {
        return false;
    }
    let Some(Action::Fails(name)) = decide(&java_order(&e)) else {
        return false;
    };
    let lookup_failed = field(ca, "ev") == Some("coord_answered")
        && field(ca, "api") == Some("find_coordinator")
        && field(ca, "error") == Some(name);
    let Some(code) = code_of(name) else {
        return false;
    };
    let result = format!("err:{code}");
    let java_fails = java_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some(result.as_str()));
    ABORTABLE.contains(&name)
        && lookup_failed
        && java_fails
        && java[i + 2..]
            .iter()
            .zip(&core[i + 2..])
            .all(|(&(_, j), &(_, c))| j == c)
}

/// For `txn_add_partitions2::add_partitions_errors_taken_in_another_order`: the core's
/// action on the answer (`action`) makes its transaction abortable, so it sends nothing
/// and its line at `i` is the application's abort, accepted; its next request is its
/// EndTxn(ABORT), and Java's next line that is an accepted abort or a completion is
/// that abort (Java, retrying, accepts the same call).
pub(super) fn core_aborts(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
    action: &Action,
) -> bool {
    let Action::Fails(name) = action else {
        return false;
    };
    let next_request = core[i + 1..]
        .iter()
        .find(|&&(_, l)| field(l, "ev") == Some("txn"))
        .map(|&(_, l)| l);
    let java_abort = java[i..]
        .iter()
        .find(|&&(_, l)| l == ABORT_OK || field(l, "ev") == Some("txn_done"))
        .is_some_and(|&(_, l)| l == ABORT_OK);
    ABORTABLE.contains(name)
        && core[i].1 == ABORT_OK
        && next_request
            .is_some_and(|l| field(l, "api") == Some("end_txn") && field(l, "commit") == Some("0"))
        && java_abort
}
