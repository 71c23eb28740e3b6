//! [`Verdict::AbortEndsWithEpochBump`](super::Verdict) where Java's stale
//! AddPartitionsToTxn takes the place of the abort's completion and the coordinator's
//! answers then fail both aborts alike.

use super::field;
use super::lines::{identity, is_request, ABORT_OK, BEGIN_OK};
use super::txn::{is_add_partitions, parts, same};
use super::txn_abort::abortable_answer;

/// Whether `line` completes the application's abort with an error.
fn abort_failed(line: &str) -> bool {
    field(line, "ev") == Some("txn_done")
        && field(line, "call") == Some("abort")
        && field(line, "result").is_some_and(|r| r.starts_with("err:"))
}

/// The form of `txn_abort::abort_bumps_with_nothing_added` (the core ends an abort with
/// nothing added by bumping the epoch, where Java completes it with no request) in which
/// Java still had an older AddPartitionsToTxn queued: at the first difference `i` Java
/// sends that request, under the identity of the last AddPartitionsToTxn both sent and
/// naming only partitions of it (`TransactionManager.pendingRequests` keeps a request
/// re-enqueued behind a lookup; the abort does not drop it), and the core sends its
/// bump, InitProducerId under that same identity. Since the transaction began no
/// partition was added on the core's side (no AddPartitionsToTxn answer names one
/// NONE), the core sent no EndTxn or InitProducerId, the application's abort was
/// accepted, and the coordinator gave an abortable answer (`abortable_answer`). Both
/// requests get the scripted answer: the core's bump one code, which Java's answer
/// names for some partition, and each side's next line fails the abort, alike
/// (`same`); every later line of the two histories is the same.
pub(super) fn java_stale_request_against_abort_bump(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(_, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    let bump = is_request(c) && field(c, "api") == Some("init") && identity(c) == identity(j);
    if !is_add_partitions(j) || !bump {
        return false;
    }
    fn last<'a>(h: &[(usize, &'a str)], i: usize) -> Option<&'a str> {
        h[..i]
            .iter()
            .rev()
            .find(|&&(_, l)| is_add_partitions(l))
            .map(|&(_, l)| l)
    }
    let (Some(ja), Some(ca)) = (last(java, i), last(core, i)) else {
        return false;
    };
    let stale =
        ja == ca && identity(ja) == identity(j) && parts(j).iter().all(|p| parts(ja).contains(p));
    let Some(begin) = core[..i].iter().rposition(|&(_, l)| l == BEGIN_OK) else {
        return false;
    };
    let since = &core[begin + 1..i];
    let added = since.iter().any(|&(_, l)| {
        field(l, "ev") == Some("coord_answered")
            && field(l, "api") == Some("add_partitions")
            && field(l, "error").is_some_and(|e| e.split(',').any(|c| c.ends_with("=NONE")))
    });
    let ended = since
        .iter()
        .any(|&(_, l)| is_request(l) && matches!(field(l, "api"), Some("end_txn" | "init")));
    let called = since.iter().any(|&(_, l)| l == ABORT_OK);
    let abortable = since.iter().any(|&(_, l)| abortable_answer(l));
    if !stale || added || ended || !called || !abortable {
        return false;
    }
    let (Some(&(_, jn)), Some(&(_, cn))) = (java.get(i + 1), core.get(i + 1)) else {
        return false;
    };
    let answers = field(jn, "ev") == Some("coord_answered")
        && field(jn, "api") == Some("add_partitions")
        && field(cn, "ev") == Some("coord_answered")
        && field(cn, "api") == Some("init")
        && field(cn, "error").is_some_and(|code| {
            field(jn, "error")
                .unwrap_or_default()
                .split(',')
                .any(|e| e.rsplit('=').next() == Some(code))
        });
    let (Some(&(_, jd)), Some(&(_, cd))) = (java.get(i + 2), core.get(i + 2)) else {
        return false;
    };
    let fail_alike = abort_failed(jd) && abort_failed(cd) && same(jd, cd);
    let rest_same = java.len() == core.len()
        && java[i + 3..]
            .iter()
            .zip(&core[i + 3..])
            .all(|(&(_, a), &(_, b))| same(a, b));
    answers && fail_alike && rest_same
}
