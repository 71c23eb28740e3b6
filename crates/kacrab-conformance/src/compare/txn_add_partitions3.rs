//! Further forms of AddPartitionsToTxn requests of Java's that the core does not send
//! (docs/design.md, "Transactional traces"), beside `txn_add_partitions.rs` and
//! `txn_add_partitions2.rs`: Java's queue of requests built earlier (an older request
//! sent again before the retry of the answered one, a request built before the abort
//! whose answers fail the abort), and Java's AddPartitionsToTxn conversation going on
//! where the core's transaction is abortable after an UNKNOWN_PRODUCER_ID answer; and
//! the shared rules those read: which answer adds partitions, which fails Java's
//! transaction, and the application's calls both sides answer alike.

use super::field;
use super::lines::{
    add_partitions_pair, answer_entries as entries, identity, ABORT_OK, BEGIN_OK, COMMIT_OK,
    COMMIT_REFUSED,
};
use super::txn::{asked_in_transaction, is_add_partitions, parts, retried_subset, same};
use super::txn_add_partitions2::{decide, java_order, Action};

/// Whether `line` is an answer to an AddPartitionsToTxn.
fn is_add_answer(line: &str) -> bool {
    field(line, "ev") == Some("coord_answered") && field(line, "api") == Some("add_partitions")
}

/// Whether `line` is a coordinator lookup or its answer.
fn is_lookup(line: &str) -> bool {
    field(line, "api") == Some("find_coordinator")
}

/// Whether an AddPartitionsToTxn answer in `h` before index `i`, since the transaction
/// began, added partition `p`: it names `p`, and every partition it lists NONE. An
/// answer naming any error adds none of its partitions, on either side: Java's
/// `AddPartitionsToTxnHandler.handleResponse` looks up, re-enqueues or fails before
/// `partitionsInTransaction.addAll`, and the core counts partitions added only when
/// the whole answer succeeded.
pub(super) fn added_by_answer(h: &[(usize, &str)], i: usize, p: i32) -> bool {
    let since = h[..i]
        .iter()
        .rposition(|&(_, l)| l == BEGIN_OK)
        .unwrap_or(0);
    h[since..i].iter().any(|&(_, l)| {
        let e = entries(l);
        is_add_answer(l) && e.iter().any(|&(q, _)| q == p) && e.iter().all(|&(_, c)| c == "NONE")
    })
}

/// Whether `line` is an AddPartitionsToTxn answer on which Java's handler, walking it in
/// Java's map order, fails the transaction (abortable or fatal): after it
/// `TransactionManager.nextRequest` fails every AddPartitionsToTxn it would send
/// (`maybeTerminateRequestWithError`), so Java asks for no partition again in the
/// transaction.
fn answer_fails_transaction(line: &str) -> bool {
    is_add_answer(line) && matches!(decide(&java_order(&entries(line))), Some(Action::Fails(_)))
}

/// The end of Java's adding that
/// `txn_add_partitions2::retried_add_partitions_never_asked_adding_ended` also takes
/// where Java's history shows no refusal or failed completion: Java's line after its
/// request at the difference `i` is that request's answer, one its handler fails the
/// transaction on ([`answer_fails_transaction`]), and the core's line there is its
/// answer, listing each of Java's entries (the same scripted answer; the core's also
/// names the partitions only it asked for, maybe with another code: the harness may
/// script one partition another); and Java's history ends with that answer (the
/// script calls nothing more, so no later line could show the failure).
pub(super) fn retry_answer_ends_adding(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, ja)), Some(&(_, ca))) = (java.get(i + 1), core.get(i + 1)) else {
        return false;
    };
    let listed = is_add_answer(ca) && {
        let ce = entries(ca);
        entries(ja).iter().all(|e| ce.contains(e))
    };
    java.len() == i + 2 && answer_fails_transaction(ja) && listed
}

/// The application's calls and the refused sends among `h[from..]`, in order: lines
/// the script drives on both sides (a detector that lets one side's conversation run
/// on beside them asks that the other side answered them alike).
pub(super) fn calls_from<'a>(h: &[(usize, &'a str)], from: usize) -> Vec<&'a str> {
    h[from.min(h.len())..]
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| is_call_or_refusal(l))
        .collect()
}

/// Whether `line` is an application call's answer or a refused send.
fn is_call_or_refusal(line: &str) -> bool {
    matches!(field(line, "ev"), Some("txn_call" | "send_refused"))
}

/// Java's line `i` is an older AddPartitionsToTxn that waited in its queue beside the
/// answered request `a` (Java builds one each time partitions are new while another
/// waits, naming all pending partitions then; equal-priority requests leave
/// `TransactionManager.pendingRequests`, a priority queue, in heap order): it names,
/// under `a`'s identity, a strict subset of `a`'s partitions. From there Java writes
/// only lookups and that older request's conversation, up to its next other
/// AddPartitionsToTxn, which is `retry`: the retry of `a`. The older request's
/// conversation is the request sent again (after its connection was lost) and its
/// answers, each naming exactly its partitions: an answer adding them all, after which
/// the next AddPartitionsToTxn must be the retry, or one on which Java's handler
/// (`AddPartitionsToTxnHandler.handleResponse`, walked in Java's map order) looks the
/// coordinator up or retries, re-enqueueing the older request beside the retry (either
/// may then go first). Refused sends in that window are set aside where the commit or
/// abort was accepted before `i` (`txn_java_keeps_asking::completing_refusal`: Java
/// refuses them while completing, the core may have refused them earlier, or at the same
/// point of its calls, when they are set aside on both sides); the other
/// application calls and refused sends Java writes meanwhile must be, in order, the
/// first such lines of the core's from the difference on (`core_calls`, [`calls_from`]):
/// the script drives them, and both sides answer them alike.
pub(super) fn older_request_first(
    h: &[(usize, &str)],
    i: usize,
    a: &str,
    retry: impl Fn(&str) -> bool,
    core_calls: &[&str],
) -> bool {
    let line = h[i].1;
    let (lp, ap) = (parts(line), parts(a));
    if !is_add_partitions(line)
        || identity(line) != identity(a)
        || lp.len() >= ap.len()
        || !lp.iter().all(|p| ap.contains(p))
    {
        return false;
    }
    let mut added = false;
    let mut calls = core_calls.iter().peekable();
    for &(_, l) in &h[i + 1..] {
        if super::txn_java_keeps_asking::completing_refusal(h, i, l) {
            // Set aside; where the core refused that same send at this point of its
            // calls too, it is set aside on both sides.
            calls.next_if(|&&c| c == l);
            continue;
        }
        if is_lookup(l) {
            continue;
        }
        if is_call_or_refusal(l) {
            if calls.next() != Some(&l) {
                return false;
            }
            continue;
        }
        if retry(l) {
            return true;
        }
        if added {
            return false;
        }
        if l == line {
            continue;
        }
        if !is_add_answer(l) {
            return false;
        }
        let e = entries(l);
        let mut ep: Vec<i32> = e.iter().map(|(p, _)| *p).collect();
        ep.sort_unstable();
        let mut own = lp.clone();
        own.sort_unstable();
        if ep != own {
            return false;
        }
        match decide(&java_order(&e)) {
            Some(Action::Done) => added = true,
            Some(Action::Lookup | Action::Retry) => {}
            _ => return false,
        }
    }
    false
}

/// The first index at or after `from` of `h` whose line completes an operation.
fn next_done(h: &[(usize, &str)], from: usize) -> Option<usize> {
    (from..h.len()).find(|&k| field(h[k].1, "ev") == Some("txn_done"))
}

/// [`super::Verdict::JavaAsksNewPartitionsWhileAborting`], the form of
/// `txn_add_partitions2::java_asks_new_partitions_ending_abort` where the abort fails
/// while the core still asks again for pending partitions. At the first difference
/// Java sends an AddPartitionsToTxn, after the application's abort was accepted in
/// this transaction on both sides; each partition of it was asked for before in the
/// transaction by both sides or by neither, at least one by neither (Java built it
/// before the abort with the partitions new then; `beginAbort` clears
/// `newPartitionsInTransaction`, not the queue). The core there asks again, under the
/// same identity, only for partitions of Java's request that both asked for before
/// (pending ones: their request may have been applied). From there to each side's
/// first completion the two histories pair up line for line: the same line, or Java's
/// AddPartitionsToTxn (under that identity, naming only partitions of its first one or
/// asked for by both before) against the core's (under that identity, naming only
/// Java's partitions both asked for before, and only partitions of Java's line), or
/// Java's answer to it against the core's, whose every entry is one of Java's (the
/// harness answers the outstanding request with one code, optionally one partition
/// another). Both completions fail the abort, the same line on both sides (one
/// scripted answer failed whichever request each side had out), and every later line
/// of the two histories is the same. (Where the core sends its EndTxn(ABORT) instead,
/// `txn_stale_add_partitions::aborts_fail_alike` is the rule.)
pub(super) fn java_asks_new_partitions_abort_fails(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some((j, _)) = add_partitions_pair(java, core, i) else {
        return false;
    };
    let since = java[..i]
        .iter()
        .rposition(|(_, l)| *l == BEGIN_OK)
        .unwrap_or(0);
    let aborted = java[since..i].iter().any(|(_, l)| *l == ABORT_OK)
        && core[since..i].iter().any(|(_, l)| *l == ABORT_OK);
    let both = |p: i32| asked_in_transaction(java, i, p) && asked_in_transaction(core, i, p);
    let neither = |p: i32| !asked_in_transaction(java, i, p) && !asked_in_transaction(core, i, p);
    let jp = parts(j);
    let shape = jp.iter().all(|&p| both(p) || neither(p)) && jp.iter().any(|&p| neither(p));
    if !aborted || !shape {
        return false;
    }
    let (Some(dj), Some(dc)) = (next_done(java, i), next_done(core, i)) else {
        return false;
    };
    let (jd, cd) = (java[dj].1, core[dc].1);
    let abort_failed = field(jd, "call") == Some("abort")
        && field(jd, "result").is_some_and(|r| r.starts_with("err:"))
        && same(jd, cd);
    if !abort_failed || dj != dc || java.len() != core.len() {
        return false;
    }
    let paired = |jl: &str, cl: &str| {
        let requests = is_add_partitions(jl)
            && is_add_partitions(cl)
            && identity(jl) == identity(j)
            && identity(cl) == identity(j)
            && parts(jl).iter().all(|p| jp.contains(p) || both(*p))
            && parts(cl)
                .iter()
                .all(|p| jp.contains(p) && both(*p) && parts(jl).contains(p));
        let answers = is_add_answer(jl) && is_add_answer(cl) && {
            let je = entries(jl);
            entries(cl).iter().all(|e| je.contains(e))
        };
        same(jl, cl) || requests || answers
    };
    (i..dj).all(|k| paired(java[k].1, core[k].1))
        && (dj..java.len()).all(|k| same(java[k].1, core[k].1))
}

/// [`super::Verdict::JavaAsksNewPartitionsWhileAborting`], the form of
/// `txn_add_partitions2::java_asks_new_partitions_ending_abort` where, before its
/// EndTxn(ABORT), the core writes the application's abort called again besides refused
/// calls and sends: both accept it (Java hands back the pending abort's result, the
/// core's abort is the same one; both write it as often), so it is set aside, on both
/// sides after `i`, and the rest is that detector's rule unchanged.
pub(super) fn java_asks_new_partitions_ending_abort_recalled(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if core.get(i).is_none_or(|&(_, l)| l == ABORT_OK)
        || java.get(i).is_none_or(|&(_, l)| l == ABORT_OK)
    {
        return false;
    }
    let recalled = |h: &[(usize, &str)]| h[i + 1..].iter().filter(|&&(_, l)| l == ABORT_OK).count();
    if recalled(core) == 0 || recalled(core) != recalled(java) {
        return false;
    }
    let without = |h: &[(usize, &str)]| -> Vec<(usize, String)> {
        h.iter()
            .enumerate()
            .filter(|&(k, &(_, l))| k <= i || l != ABORT_OK)
            .map(|(_, &(at, l))| (at, l.to_string()))
            .collect()
    };
    let (jw, cw) = (without(java), without(core));
    let jr: Vec<(usize, &str)> = jw.iter().map(|(a, l)| (*a, l.as_str())).collect();
    let cr: Vec<(usize, &str)> = cw.iter().map(|(a, l)| (*a, l.as_str())).collect();
    super::txn_add_partitions2::java_asks_new_partitions_ending_abort(&jr, &cr, i)
}

/// [`super::Verdict::UnknownProducerIdAbortsTransaction`], the form of
/// `txn_commit2::unknown_producer_id_refuses_commit` where Java first asks to add
/// partitions new to the transaction: at the first difference the core refuses the
/// commit call (its transaction abortable since the UNKNOWN_PRODUCER_ID answer), and
/// Java sends an AddPartitionsToTxn naming only partitions neither side asked for
/// before in the transaction (new ones; the core, abortable, sends only lookups), or
/// the retry of the last AddPartitionsToTxn both sent, after an answer both look up or
/// retry on ([`retry_after_lookup_or_retry`]; the core, abortable, drops it), then
/// accepts that commit call (its next line, or its next after coordinator lookups only:
/// Java's conversation going on, its request's connection lost, say; the lookups are set
/// aside with the request). With Java's request set aside the rest is
/// that detector's rule unchanged: the last Produce answer that failed a batch failed
/// batches with UNKNOWN_PRODUCER_ID, Java got it too and sends each again with the same
/// stamp.
pub(super) fn unknown_producer_id_refuses_commit_after_new_partitions(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(_, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    let new = |p: i32| !asked_in_transaction(java, i, p) && !asked_in_transaction(core, i, p);
    // Java's lookups right after its request (its conversation going on: the
    // request's connection lost, say) are set aside with it.
    let lookups = java[i + 1..]
        .iter()
        .take_while(|&&(_, l)| is_lookup(l))
        .count();
    if !is_add_partitions(j)
        || !(parts(j).iter().all(|&p| new(p)) || retry_after_lookup_or_retry(java, core, i))
        || c != COMMIT_REFUSED
        || java
            .get(i + 1 + lookups)
            .is_none_or(|&(_, l)| l != COMMIT_OK)
    {
        return false;
    }
    let mut without = java.to_vec();
    without.drain(i..=i + lookups);
    super::txn_commit2::unknown_producer_id_refuses_commit(java_out, core_out, &without, core, i)
}

/// Whether Java's AddPartitionsToTxn at `i` is the retry of the last one both sides
/// sent: the same line as the last AddPartitionsToTxn of each side before `i`, whose
/// last answer before `i` is the same line on both sides and one on which Java's
/// handler and the core, each in its own order, look the coordinator up or retry (so it
/// added nothing and the request is due again). Java, its transaction not failed,
/// sends it; the core, abortable, drops it (Java's rule too in ABORTABLE_ERROR:
/// `TransactionManager.nextRequest` fails it through `maybeTerminateRequestWithError`).
fn retry_after_lookup_or_retry(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    fn last<'a>(h: &[(usize, &'a str)], i: usize, f: fn(&str) -> bool) -> Option<&'a str> {
        h[..i].iter().rev().find(|&&(_, l)| f(l)).map(|&(_, l)| l)
    }
    let (Some(ja), Some(ca)) = (
        last(java, i, is_add_partitions),
        last(core, i, is_add_partitions),
    ) else {
        return false;
    };
    let (Some(jn), Some(cn)) = (last(java, i, is_add_answer), last(core, i, is_add_answer)) else {
        return false;
    };
    let goes_on = |a: Option<Action>| matches!(a, Some(Action::Lookup | Action::Retry));
    let answered_after = |h: &[(usize, &str)]| {
        let r = h[..i].iter().rposition(|&(_, l)| is_add_partitions(l));
        let n = h[..i].iter().rposition(|&(_, l)| is_add_answer(l));
        r.zip(n).is_some_and(|(r, n)| n > r)
    };
    java[i].1 == ja
        && ja == ca
        && jn == cn
        && answered_after(java)
        && answered_after(core)
        && goes_on(decide(&java_order(&entries(jn))))
        && goes_on(decide(&entries(jn)))
}

/// [`super::Verdict::UnknownProducerIdAbortsTransaction`], the form of
/// `txn_refusals::unknown_producer_id_refused_while_java_holds` where Java refuses the
/// same send later: at the first difference the core refuses a send (its transaction
/// abortable since the UNKNOWN_PRODUCER_ID answer); Java, whose transaction was not
/// abortable then, goes on with its AddPartitionsToTxn conversation (requests, answers
/// and lookups only) until an answer its handler (in Java's map order) treats as
/// failing the transaction (or a lookup answered an error Java does not retry, every
/// AddPartitionsToTxn answer before it one Java looks up or retries on:
/// `txn_java_keeps_asking::lookup_fails_last`), and then refuses that same send. From
/// there Java's history
/// is the core's from `i`, line for line, to the end of both. The cause is that
/// detector's, with Java's later refusals set aside: the last Produce answer the core
/// got before failed batches with UNKNOWN_PRODUCER_ID, Java got it too, sends nothing
/// of their partitions again and fails no record with UNKNOWN_PRODUCER_ID.
pub(super) fn unknown_producer_id_refused_before_java_fails(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(_, c)) = core.get(i) else {
        return false;
    };
    if field(c, "ev") != Some("send_refused") {
        return false;
    }
    let Some(jx) = (i..java.len()).find(|&k| java[k].1 == c) else {
        return false;
    };
    let window = &java[i..jx];
    let conversation = window.iter().all(|&(_, l)| {
        (is_lookup(l) || field(l, "api") == Some("add_partitions"))
            && matches!(field(l, "ev"), Some("txn" | "coord_answered"))
    });
    let answers: Vec<&str> = window
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| is_add_answer(l))
        .collect();
    let fails = |l: &str| matches!(decide(&java_order(&entries(l))), Some(Action::Fails(_)));
    let goes_on = |l: &&str| {
        matches!(
            decide(&java_order(&entries(l))),
            Some(Action::Lookup | Action::Retry)
        )
    };
    let add_fails = answers
        .split_last()
        .is_some_and(|(last, earlier)| fails(last) && earlier.iter().all(goes_on));
    let lookup_fails = super::txn_java_keeps_asking::lookup_fails_last(window);
    let rest_same = java.len() - jx == core.len() - i
        && java[jx..]
            .iter()
            .zip(&core[i..])
            .all(|(&(_, a), &(_, b))| same(a, b));
    if !conversation || !(add_fails || lookup_fails) || !rest_same {
        return false;
    }
    let refusals: Vec<String> = java_out.iter().filter(|l| *l != c).cloned().collect();
    super::txn_refusals::unknown_producer_id_refused_while_java_holds(&refusals, core_out, core, i)
}

/// Whether Java's output `java_out[from..to]` has a Produce answer failing a batch with
/// an error the core does not retry (UNKNOWN_PRODUCER_ID aside, which Java may retry:
/// `TransactionManager.canRetry`), where Java fails some record with that error: Java's
/// `TransactionManager.handleFailedBatch` then makes the transaction abortable (or
/// fatal), so `nextRequest` fails any AddPartitionsToTxn it builds after
/// (`maybeTerminateRequestWithError`).
fn batch_failed(java_out: &[String], from: usize, to: usize) -> bool {
    java_out[from.min(to)..to].iter().any(|l| {
        field(l, "ev") == Some("answered")
            && field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .filter_map(|b| b.rsplit_once('=').map(|(_, e)| e))
                .any(|e| {
                    let error = crate::core_side::error_by_name(e);
                    let failed = format!("err:{}", error.code());
                    !matches!(
                        e,
                        "NONE" | "DUPLICATE_SEQUENCE_NUMBER" | "UNKNOWN_PRODUCER_ID"
                    ) && !error.is_retriable()
                        && java_out.iter().any(|o| {
                            field(o, "ev") == Some("outcome")
                                && field(o, "result") == Some(failed.as_str())
                        })
                })
    })
}

/// [`super::Verdict::RetriedAddPartitionsTakesNewPartitions`], the form of
/// `txn_add_partitions::retried_add_partitions_never_asked` (the core's retry asks for
/// Java's partitions and `missing`, added meanwhile; Java never asks for `missing`)
/// with two more reasons the walk may meet. From the first difference on every line of
/// the two histories is the same, or that difference again or its answer
/// (`txn_add_partitions::again`), to the end of both, where:
/// * Java's answer may be a success when, between Java's request at the difference and
///   that answer, Java's output has a Produce answer that failed a batch so that Java's
///   transaction failed ([`batch_failed`]): `nextRequest` then fails the request it
///   would build for `missing`;
/// * the core may refuse sends Java does not write, its transaction abortable after an
///   UNKNOWN_PRODUCER_ID answer: the first such refusal is one
///   `txn_refusals::unknown_producer_id_refused_while_java_holds` or
///   `txn::unknown_producer_id_fails_commit` names (they read both sides' whole
///   output, so the plain `classify` the never-asked detector falls back on cannot
///   reach them); these refusals are set aside.
pub(super) fn retried_never_asked_after_failure(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(missing) = retried_subset(java, core, i) else {
        return false;
    };
    let (mut jk, mut ck) = (i, i);
    let mut named = false;
    while jk < java.len() || ck < core.len() {
        match (java.get(jk), core.get(ck)) {
            (Some(&(at, j)), Some(&(_, c)))
                if jk == i
                    || same(j, c)
                    || super::txn_add_partitions::again(
                        j,
                        c,
                        &missing,
                        super::txn_add_partitions::failed(java, jk)
                            || batch_failed(java_out, java[i].0, at),
                    ) =>
            {
                jk += 1;
                ck += 1;
            }
            (_, Some(&(_, c))) if field(c, "ev") == Some("send_refused") => {
                let cause =
                    super::txn_refusals::unknown_producer_id_refused_while_java_holds(
                        java_out, core_out, core, ck,
                    ) || super::txn::unknown_producer_id_fails_commit(java_out, core_out, core, ck);
                if (!named && !cause) || java_out.iter().any(|l| l == c) {
                    return false;
                }
                named = true;
                ck += 1;
            }
            _ => return false,
        }
    }
    true
}
