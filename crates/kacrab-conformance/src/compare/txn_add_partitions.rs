//! Detectors for AddPartitionsToTxn requests that ask for different partitions on the
//! two sides, beyond those of `txn.rs` (docs/design.md, "Transactional traces").

use super::txn::{
    add_partitions_pair, after_lookup, asked_in_transaction, classify, is_add_partitions, parts,
    retried_subset, same,
};
use super::{field, Verdict};

/// [`Verdict::RetriedAddPartitionsTakesNewPartitions`], the form where Java never asks
/// for the partitions only the core's retry took: at the first difference the core's
/// AddPartitionsToTxn asks for the partitions of Java's (a retry, or a request Java built
/// before a coordinator lookup, as in `txn::retried_subset`) and for partitions added
/// meanwhile, `missing`; and from there on every line of the two histories is the same,
/// or is that difference again (the same request, the core's also asking for some of
/// `missing`) or its answer (the core's lists Java's partitions with Java's codes, and
/// some of `missing`; Java's is not a success, after which Java would ask for `missing`
/// next, unless the transaction had failed before it: see [`failed`]), up to the end of both histories or to a later difference another detector
/// names. Java never asks for `missing` because the answer it got to the request it
/// retried ended the transaction's adding (an abortable or fatal error fails the request
/// `nextRequest` builds for them, `maybeTerminateRequestWithError`), or the trace ended
/// first; the core had asked for them already.
pub(super) fn retried_add_partitions_never_asked(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(missing) = retried_subset(java, core, i) else {
        return false;
    };
    let n = java.len().max(core.len());
    for k in i..n {
        match (java.get(k), core.get(k)) {
            (Some((_, j)), Some((_, c)))
                if k == i || same(j, c) || again(j, c, &missing, failed(java, k)) => {}
            _ => return classify(java, core, k) != Verdict::Unexplained,
        }
    }
    true
}

/// Whether Java's `j` and the core's `c` are an AddPartitionsToTxn under one identity,
/// or an answer to one that failed it (or came after the transaction failed:
/// `failed_before`), where the core's also names some of `missing` and is
/// otherwise Java's.
pub(super) fn again(j: &str, c: &str, missing: &[i32], failed_before: bool) -> bool {
    let extra_only = |jp: &[i32], cp: &[i32]| {
        jp.iter().all(|p| cp.contains(p))
            && jp.len() < cp.len()
            && cp.iter().all(|p| jp.contains(p) || missing.contains(p))
    };
    let request = is_add_partitions(j)
        && is_add_partitions(c)
        && field(j, "pid") == field(c, "pid")
        && field(j, "epoch") == field(c, "epoch")
        && extra_only(&parts(j), &parts(c));
    let is_answer = |l: &str| {
        field(l, "ev") == Some("coord_answered") && field(l, "api") == Some("add_partitions")
    };
    let entries = |l: &str| -> Vec<(i32, String)> {
        field(l, "error")
            .unwrap_or_default()
            .split(',')
            .filter_map(|e| {
                let (p, code) = e.split_once('=')?;
                Some((p.parse().ok()?, code.to_string()))
            })
            .collect()
    };
    let answer = is_answer(j) && is_answer(c) && {
        let (je, ce) = (entries(j), entries(c));
        let jp: Vec<i32> = je.iter().map(|(p, _)| *p).collect();
        let cp: Vec<i32> = ce.iter().map(|(p, _)| *p).collect();
        let failed = failed_before || je.iter().any(|(_, code)| code != "NONE");
        failed && extra_only(&jp, &cp) && je.iter().all(|e| ce.contains(e))
    };
    request || answer
}

/// Whether the transaction had failed (abortable or fatal) before index `k` of `h`: a
/// send was refused since the transaction began, with no commit or abort called since
/// (`maybeAddPartition` refuses sends in an open transaction only in an error state).
pub(super) fn failed(h: &[(usize, &str)], k: usize) -> bool {
    const BEGIN: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
    let since = h[..k].iter().rposition(|(_, l)| *l == BEGIN).unwrap_or(0);
    let ending = |l: &str| {
        field(l, "ev") == Some("txn_call")
            && matches!(field(l, "call"), Some("commit" | "abort"))
            && field(l, "result") == Some("ok")
    };
    let window = &h[since..k];
    window
        .iter()
        .any(|(_, l)| field(l, "ev") == Some("send_refused"))
        && !window.iter().any(|(_, l)| ending(l))
}

/// [`Verdict::JavaAsksNewPartitionsWhileAborting`]: at the first difference both sides
/// send AddPartitionsToTxn under the same producer id and epoch, right after a
/// successful coordinator lookup on both; the application's abort was accepted since
/// the transaction began, and neither side sent an AddPartitionsToTxn after it; the
/// core's asks only for partitions both sides asked for before in this transaction
/// (pending ones, asked again), and Java's asks for those and for partitions neither
/// side asked for before. Java built that request, with the partitions new then, before
/// the abort (`nextRequest` builds it, `Sender.maybeSendAndPollTransactionalRequest`
/// hands it to `lookupCoordinator`, which queues it behind the FindCoordinator), and
/// `beginAbort` clears only `newPartitionsInTransaction`, not a request already built;
/// the core drops new partitions at the abort and builds its request when it sends it.
pub(super) fn java_asks_new_partitions_while_aborting(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const BEGIN: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
    const ABORT: &str = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
    let Some((j, c)) = add_partitions_pair(java, core, i) else {
        return false;
    };
    let (jp, cp) = (parts(j), parts(c));
    let superset = cp.iter().all(|p| jp.contains(p)) && cp.len() < jp.len();
    let since = java[..i]
        .iter()
        .rposition(|(_, l)| *l == BEGIN)
        .unwrap_or(0);
    let Some(abort) = java[since..i].iter().rposition(|(_, l)| *l == ABORT) else {
        return false;
    };
    let nothing_asked_since = |h: &[(usize, &str)]| {
        !h[since + abort..i]
            .iter()
            .any(|(_, l)| is_add_partitions(l))
    };
    let both = |p: i32| asked_in_transaction(java, i, p) && asked_in_transaction(core, i, p);
    let neither = |p: i32| !asked_in_transaction(java, i, p) && !asked_in_transaction(core, i, p);
    superset
        && after_lookup(java, core, i)
        && core[since + abort].1 == ABORT
        && nothing_asked_since(java)
        && nothing_asked_since(core)
        && cp.iter().all(|&p| both(p))
        && jp.iter().filter(|p| !cp.contains(p)).all(|&p| neither(p))
}
