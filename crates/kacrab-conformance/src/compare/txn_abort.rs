//! Aborts that Java completes at once where the core first bumps the epoch (KIP-360's
//! InitProducerId with its current id and epoch), or first looks the coordinator up to
//! send that bump (docs/design.md, "Transactional traces"): two forms
//! `txn::abort_ends_with_epoch_bump` does not take, each exact.
//!
//! Java's `TransactionManager` asks for a client-side bump after a failed batch
//! (`maybeTransitionToErrorState`, not while completing) and after UNKNOWN_PRODUCER_ID
//! (`abortableErrorIfPossible`), and forgets it when a transaction ends
//! (`completeTransaction` / `resetTransactionState`); an abort with nothing added sends
//! no EndTxn (`nextRequest` completes it when `transactionStarted` is false). The core
//! bumps after every abortable error under TV1, and keeps a bump that was refused
//! required until one succeeds.
//!
//! Also Java's defect after an abort that ends through its bump once EndTxn(ABORT) was
//! answered UNKNOWN_PRODUCER_ID: neither `completeTransaction` nor
//! `resetTransactionState` runs on that path, so Java's next transaction inherits the
//! aborted one's partitions, `transactionStarted` and bump request
//! ([`java_keeps_transaction_after_bumped_abort`]).

use super::lines::{identity, is_request, ABORT_OK, BEGIN_OK};
use super::{field, Verdict};

/// Codes that make the transaction abortable when the coordinator answers a
/// FindCoordinator or an AddPartitionsToTxn with them (never retried, never fatal).
const ABORTABLE: &[&str] = &[
    "TRANSACTION_ABORTABLE",
    "TOPIC_AUTHORIZATION_FAILED",
    "UNKNOWN_PRODUCER_ID",
];

fn ev(l: &str) -> &str {
    field(l, "ev").unwrap_or_default()
}

fn api(l: &str) -> &str {
    field(l, "api").unwrap_or_default()
}

/// Java's line `i` completes the abort, successfully.
fn java_completes_abort(java: &[(usize, &str)], i: usize) -> bool {
    java.get(i)
        .is_some_and(|(_, l)| *l == r#"{"ev":"txn_done","call":"abort","result":"ok"}"#)
}

/// The core's lines from `i` (its first difference, a request) up to its abort's
/// completion, or to the end of its history, are the bump of `id` and nothing else:
/// coordinator lookups, InitProducerId naming `id`, their answers, and the
/// application's calls and refused sends meanwhile. Without an InitProducerId in that
/// window the abort must fail (a lookup's answer ended it) or the history end (the
/// trace ended while the core looked the coordinator up).
fn core_bumps(core: &[(usize, &str)], i: usize, id: (Option<&str>, Option<&str>)) -> bool {
    if !core.get(i).is_some_and(|(_, l)| is_request(l)) {
        return false;
    }
    let mut init = false;
    for &(_, l) in &core[i..] {
        match ev(l) {
            "txn" => match api(l) {
                "find_coordinator" => {}
                "init" if identity(l) == id => init = true,
                _ => return false,
            },
            "coord_answered" if matches!(api(l), "find_coordinator" | "init") => {}
            "txn_call" | "send_refused" => {}
            "txn_done" if field(l, "call") == Some("abort") => {
                return init || field(l, "result").is_some_and(|r| r.starts_with("err:"));
            }
            _ => return false,
        }
    }
    true
}

/// Whether a coordinator answer makes the transaction abortable: FindCoordinator
/// answered TRANSACTION_ABORTABLE, or an AddPartitionsToTxn answer that adds no
/// partition and names one of [`ABORTABLE`].
pub(super) fn abortable_answer(l: &str) -> bool {
    if ev(l) != "coord_answered" {
        return false;
    }
    let error = field(l, "error").unwrap_or_default();
    match api(l) {
        "find_coordinator" => error == "TRANSACTION_ABORTABLE",
        "add_partitions" => {
            let codes: Vec<&str> = error
                .split(',')
                .filter_map(|c| c.split_once('=').map(|(_, code)| code))
                .collect();
            !codes.is_empty()
                && codes.iter().all(|&c| c != "NONE")
                && codes.iter().any(|c| ABORTABLE.contains(c))
        }
        _ => false,
    }
}

/// [`Verdict::AbortEndsWithEpochBump`], the form with nothing added whatever the order
/// of the abort and the abortable answer: since the transaction began (the lines
/// before `i` are the same on both sides) no partition was added (no AddPartitionsToTxn
/// answer names one NONE) and neither EndTxn nor InitProducerId was sent, the
/// application called abort, and the coordinator answered a FindCoordinator
/// TRANSACTION_ABORTABLE or an AddPartitionsToTxn refusing every partition with an
/// abortable code ([`ABORTABLE`]), before or after the abort call, after lookups and
/// retries. At `i` Java completes the abort (nothing to end, no bump asked:
/// coordinator answers do not ask Java for one, and UNKNOWN_PRODUCER_ID while aborting
/// comes too late for that abort), where the core bumps the identity of the
/// transaction's last AddPartitionsToTxn ([`core_bumps`]: lookups first, possibly
/// ended by a lookup's error, or by the trace's end).
pub(super) fn abort_bumps_with_nothing_added(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if !java_completes_abort(java, i) {
        return false;
    }
    let Some(begin) = core[..i].iter().rposition(|(_, l)| *l == BEGIN_OK) else {
        return false;
    };
    let since = &core[begin + 1..i];
    let added = since.iter().any(|(_, l)| {
        ev(l) == "coord_answered"
            && api(l) == "add_partitions"
            && field(l, "error").is_some_and(|e| e.split(',').any(|c| c.ends_with("=NONE")))
    });
    let ended = since
        .iter()
        .any(|(_, l)| is_request(l) && matches!(api(l), "end_txn" | "init"));
    let called = since.iter().any(|(_, l)| *l == ABORT_OK);
    let abortable = since.iter().any(|(_, l)| abortable_answer(l));
    let Some((_, add)) = since
        .iter()
        .rev()
        .find(|(_, l)| is_request(l) && api(l) == "add_partitions")
    else {
        return false;
    };
    !added && !ended && called && abortable && core_bumps(core, i, identity(add))
}

/// [`Verdict::AbortRetriesRefusedBump`]: the last request both sides sent other than a
/// lookup is the bump after an abort (InitProducerId with a producer id), the
/// coordinator refused it abortably (TRANSACTION_ABORTABLE, to it or to the lookup
/// before its resend), the abort failed on both sides, and the application aborts
/// again. At `i` Java completes that abort at once (its transaction ended with the
/// EndTxn, which also dropped the bump it had asked for); the core sends the refused
/// bump again ([`core_bumps`], the same identity).
pub(super) fn abort_retries_refused_bump(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if !java_completes_abort(java, i) {
        return false;
    }
    let Some(k) = core[..i]
        .iter()
        .rposition(|(_, l)| is_request(l) && api(l) != "find_coordinator")
    else {
        return false;
    };
    let bump = core[k].1;
    if api(bump) != "init" || field(bump, "pid").is_none_or(|p| p.starts_with('-')) {
        return false;
    }
    let after = &core[k + 1..i];
    let Some(failed) = after.iter().position(|(_, l)| {
        ev(l) == "txn_done"
            && field(l, "call") == Some("abort")
            && field(l, "result").is_some_and(|r| r.starts_with("err:"))
    }) else {
        return false;
    };
    let refused = after[..failed].iter().any(|(_, l)| {
        ev(l) == "coord_answered"
            && matches!(api(l), "init" | "find_coordinator")
            && field(l, "error") == Some("TRANSACTION_ABORTABLE")
    });
    let called_again = after[failed..].iter().any(|(_, l)| *l == ABORT_OK);
    refused && called_again && core_bumps(core, i, identity(bump))
}

/// The last abort before `i` that ended through its epoch bump after its EndTxn(ABORT)
/// was answered UNKNOWN_PRODUCER_ID (the lines before `i` are the same on both sides):
/// the index of its completion, the partitions its transaction added (answered NONE),
/// and those it asked for and never added (an AddPartitionsToTxn answered
/// UNKNOWN_PRODUCER_ID returns before `pendingPartitionsInTransaction` drops them). Java's `EndTxnHandler` fails only the EndTxn's own result there
/// (`abortableErrorIfPossible`, which also asks for a client-side bump again), and the
/// InitProducerId handler completes the abort without `completeTransaction` /
/// `resetTransactionState`, so Java keeps the transaction's partitions
/// (`partitionsInTransaction`), `transactionStarted` and the bump request.
fn bumped_abort(h: &[(usize, &str)], i: usize) -> Option<(usize, Vec<i32>, Vec<i32>)> {
    const DONE: &str = r#"{"ev":"txn_done","call":"abort","result":"ok"}"#;
    let d = h[..i].iter().rposition(|(_, l)| *l == DONE)?;
    let k = h[..d]
        .iter()
        .rposition(|(_, l)| is_request(l) && api(l) != "find_coordinator")?;
    let init = h[k].1;
    let e = h[..k]
        .iter()
        .rposition(|(_, l)| is_request(l) && api(l) != "find_coordinator" && api(l) != "init")?;
    let end = h[e].1;
    let end_abort = api(end) == "end_txn" && field(end, "commit") == Some("0");
    let inits_only = h[e + 1..k]
        .iter()
        .all(|(_, l)| !is_request(l) || matches!(api(l), "find_coordinator" | "init"));
    let last_answer = |from: usize, to: usize, which: &str| {
        h[from..to]
            .iter()
            .rev()
            .find(|(_, l)| ev(l) == "coord_answered" && api(l) == which)
            .and_then(|(_, l)| field(l, "error"))
    };
    let unknown = last_answer(e, k, "end_txn") == Some("UNKNOWN_PRODUCER_ID");
    let bumped = last_answer(k, d, "init") == Some("NONE");
    let bump = api(init) == "init" && identity(init) == identity(end);
    if !(end_abort && inits_only && unknown && bumped && bump) {
        return None;
    }
    let begin = h[..e].iter().rposition(|(_, l)| *l == BEGIN_OK)?;
    let added = h[begin..e]
        .iter()
        .filter(|(_, l)| ev(l) == "coord_answered" && api(l) == "add_partitions")
        .flat_map(|(_, l)| field(l, "error").unwrap_or_default().split(','))
        .filter_map(|c| c.strip_suffix("=NONE").and_then(|p| p.parse().ok()))
        .collect::<Vec<i32>>();
    let mut asked: Vec<i32> = h[begin..e]
        .iter()
        .filter(|(_, l)| is_request(l) && api(l) == "add_partitions")
        .flat_map(|(_, l)| super::txn::parts(l))
        .filter(|p| !added.contains(p))
        .collect();
    asked.sort_unstable();
    asked.dedup();
    Some((d, added, asked))
}

/// [`Verdict::JavaKeepsTransactionAfterBumpedAbort`]: an abort ended through its
/// epoch bump after EndTxn(ABORT) was answered UNKNOWN_PRODUCER_ID ([`bumped_abort`]),
/// and no EndTxn was answered NONE since (Java's reset never ran). The first difference
/// `i` is one of the four things Java's kept state makes it do:
/// * the core asks to add a partition that the aborted transaction had added, where
///   Java does not (it still counts the partition as in the transaction) and Java asks
///   for none of those partitions later in its transaction (before its next EndTxn);
///   or one it asked for and never added (Java still holds it pending) ([`stale_add`]);
/// * the core completes the commit or abort just called, having added nothing since
///   `begin`, where Java sends an EndTxn with that call's commit flag
///   (`transactionStarted` kept); for an abort the core's line may instead be its
///   InitProducerId under the identity of Java's EndTxn (the bump the core's abort
///   after an abortable error asking for one sends with no EndTxn, nothing added);
/// * right after an EndTxn answered NONE the core completes the commit or abort where
///   Java first bumps that EndTxn's producer id and epoch (the client-side bump request
///   kept);
/// * both ask to add partitions, Java's request naming as well partitions that the
///   aborted transaction asked for and never added, or new ones with them
///   ([`stale_pending`]).
pub(super) fn java_keeps_transaction_after_bumped_abort(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(_, c))) = (java.get(i), core.get(i)) else {
        // Java's history may end where the core asks for a stale partition.
        return core
            .get(i)
            .is_some_and(|&(_, c)| java.len() == i && stale_add(java, core, i, c));
    };
    let Some((d, _, _)) = bumped_abort(core, i) else {
        return false;
    };
    let ended_since = |to: usize| {
        core[d..to].iter().any(|(_, l)| {
            ev(l) == "coord_answered" && api(l) == "end_txn" && field(l, "error") == Some("NONE")
        })
    };
    // The commit or abort the application called last, completed by the core at `i`.
    let Some((_, call)) = core[..i]
        .iter()
        .rev()
        .find(|(_, l)| ev(l) == "txn_call" && field(l, "result") == Some("ok"))
    else {
        return false;
    };
    let op = field(call, "call").unwrap_or_default();
    let core_completes = ev(c) == "txn_done"
        && field(c, "call") == Some(op)
        && field(c, "result") == Some("ok")
        && matches!(op, "commit" | "abort");
    let flag = if op == "commit" { "1" } else { "0" };
    // Java's EndTxn for a transaction that added nothing.
    let begin = core[..i]
        .iter()
        .rposition(|(_, l)| *l == BEGIN_OK)
        .unwrap_or(0);
    let nothing_added = !core[begin..i].iter().any(|(_, l)| {
        ev(l) == "coord_answered"
            && api(l) == "add_partitions"
            && field(l, "error").is_some_and(|e| e.split(',').any(|p| p.ends_with("=NONE")))
    });
    // Or, for an abort, the core's bump under the identity of Java's EndTxn: the
    // core's abort after an abortable error that asks for a bump sends no EndTxn when
    // nothing was added (`AbortEndsWithEpochBump`); Java sends its EndTxn first.
    let core_bumps_here =
        op == "abort" && ev(c) == "txn" && api(c) == "init" && identity(c) == identity(j);
    let started_kept = !ended_since(i)
        && begin > d
        && (core_completes || core_bumps_here)
        && nothing_added
        && ev(j) == "txn"
        && api(j) == "end_txn"
        && field(j, "commit") == Some(flag);
    // Java's bump after an EndTxn answered NONE.
    let bump_kept = i > 0
        && !ended_since(i - 1)
        && ev(core[i - 1].1) == "coord_answered"
        && api(core[i - 1].1) == "end_txn"
        && field(core[i - 1].1, "error") == Some("NONE")
        && core_completes
        && core[..i]
            .iter()
            .rev()
            .find(|(_, l)| is_request(l) && api(l) == "end_txn")
            .is_some_and(|(_, end)| {
                field(end, "commit") == Some(flag)
                    && ev(j) == "txn"
                    && api(j) == "init"
                    && identity(j) == identity(end)
            });
    started_kept || bump_kept || stale_add(java, core, i, c) || stale_pending(java, core, i)
}

/// The fourth form of [`java_keeps_transaction_after_bumped_abort`]: at `i` both sides
/// send the transaction's first request for these partitions (neither asked for any of
/// them since `begin`) under the same producer id and epoch; Java's names a strict
/// superset of the core's, including a partition that the bumped abort's transaction
/// asked for and never added (Java's `addPartitionsToTransactionHandler` sends
/// `pendingPartitionsInTransaction`, kept), and every partition only Java names is
/// such a kept one or one the core asks for in a later AddPartitionsToTxn of the
/// transaction. (Java's `maybeAddPartition` skips a partition it holds pending, so
/// Java asks for a kept partition only with the next new one, where the core asks for
/// it at once.)
fn stale_pending(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    let Some((d, _, asked)) = bumped_abort(core, i) else {
        return false;
    };
    let Some((j, c)) = super::txn::add_partitions_pair(java, core, i) else {
        return false;
    };
    let ended = core[d..i].iter().any(|(_, l)| {
        ev(l) == "coord_answered" && api(l) == "end_txn" && field(l, "error") == Some("NONE")
    });
    let (jp, cp) = (super::txn::parts(j), super::txn::parts(c));
    let extra: Vec<i32> = jp.iter().copied().filter(|p| !cp.contains(p)).collect();
    let superset = cp.iter().all(|p| jp.contains(p));
    let fresh = jp.iter().all(|&p| {
        !super::txn::asked_in_transaction(java, i, p)
            && !super::txn::asked_in_transaction(core, i, p)
    });
    // The core's next AddPartitionsToTxn requests in this transaction.
    let core_asks_later = |p: i32| {
        core[i + 1..]
            .iter()
            .take_while(|(_, l)| !(is_request(l) && api(l) == "end_txn"))
            .any(|(_, l)| {
                is_request(l) && api(l) == "add_partitions" && super::txn::parts(l).contains(&p)
            })
    };
    let explained = extra
        .iter()
        .all(|&p| asked.contains(&p) || core_asks_later(p));
    let kept = jp.iter().any(|p| asked.contains(p));
    !ended && superset && !extra.is_empty() && fresh && explained && kept
}

/// The first form of [`java_keeps_transaction_after_bumped_abort`]: the core's line `c`
/// at `i` asks for a partition the bumped abort's transaction had added, Java's line
/// there (if any) is not that request, and Java's later AddPartitionsToTxn requests
/// before its next EndTxn name none of the stale partitions the core asks for. Also a
/// partition that transaction asked for and never added, where Java keeps it in
/// `pendingPartitionsInTransaction` ([`kept_pending`]), so `maybeAddPartition` skips it
/// and Java asks for it only with a new partition ([`stale_pending`]), or never (its
/// batches then wait, never drained: `isSendToPartitionAllowed`).
fn stale_add(java: &[(usize, &str)], core: &[(usize, &str)], i: usize, c: &str) -> bool {
    let Some((d, added, asked)) = bumped_abort(core, i) else {
        return false;
    };
    let ended = core[d..i].iter().any(|(_, l)| {
        ev(l) == "coord_answered" && api(l) == "end_txn" && field(l, "error") == Some("NONE")
    });
    if ended || !(is_request(c) && api(c) == "add_partitions") {
        return false;
    }
    let stale: Vec<i32> = super::txn::parts(c)
        .into_iter()
        .filter(|&p| added.contains(&p) || (asked.contains(&p) && kept_pending(core, d, p)))
        .collect();
    let java_asks_stale = java[i..]
        .iter()
        .take_while(|(_, l)| !(is_request(l) && api(l) == "end_txn"))
        .any(|(_, l)| {
            is_request(l)
                && api(l) == "add_partitions"
                && super::txn::parts(l).iter().any(|p| stale.contains(p))
        });
    !stale.is_empty() && !java_asks_stale
}

/// Whether Java still holds partition `p` in `pendingPartitionsInTransaction` after the
/// bumped abort that completed at `d`: in the aborted transaction (since its `begin`) the
/// last AddPartitionsToTxn answer naming `p` made `AddPartitionsToTxnHandler` return
/// before it drops the answer's partitions from the pending set (some partition of it
/// has an error the handler acts on at once: a lookup, a retry, a fatal or an abortable
/// error), or no answer named `p` (its request never came back). Where every error of
/// the answer is one the handler only notes (TOPIC_AUTHORIZATION_FAILED and the like),
/// it drops them.
fn kept_pending(h: &[(usize, &str)], d: usize, p: i32) -> bool {
    const EARLY: &[&str] = &[
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "CONCURRENT_TRANSACTIONS",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "REQUEST_TIMED_OUT",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "INVALID_PRODUCER_EPOCH",
        "PRODUCER_FENCED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "INVALID_TXN_STATE",
        "UNKNOWN_PRODUCER_ID",
        "INVALID_PRODUCER_ID_MAPPING",
        "TRANSACTION_ABORTABLE",
    ];
    let Some(begin) = h[..d].iter().rposition(|(_, l)| *l == BEGIN_OK) else {
        return false;
    };
    let entries = |l: &str| -> Vec<(i32, String)> {
        field(l, "error")
            .unwrap_or_default()
            .split(',')
            .filter_map(|e| {
                let (q, code) = e.split_once('=')?;
                Some((q.parse().ok()?, code.to_string()))
            })
            .collect()
    };
    let last = h[begin..d].iter().rev().find(|(_, l)| {
        ev(l) == "coord_answered"
            && api(l) == "add_partitions"
            && entries(l).iter().any(|(q, _)| *q == p)
    });
    last.is_none_or(|(_, l)| {
        entries(l)
            .iter()
            .any(|(_, code)| EARLY.contains(&code.as_str()))
    })
}

/// The verdict of the detectors of this module at the first difference `i`.
pub(super) fn classify(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> Verdict {
    if abort_bumps_with_nothing_added(java, core, i) {
        Verdict::AbortEndsWithEpochBump
    } else if abort_retries_refused_bump(java, core, i) {
        Verdict::AbortRetriesRefusedBump
    } else if java_keeps_transaction_after_bumped_abort(java, core, i) {
        Verdict::JavaKeepsTransactionAfterBumpedAbort
    } else {
        Verdict::Unexplained
    }
}
