//! The transactional half of a comparison: the coordinator's conversation (every
//! transactional request with its producer id, epoch, partitions and commit flag, and
//! every answer), the application's calls and their completions, and refused sends, in
//! order, must be identical on both sides, except where a detector below names the
//! difference (docs/design.md, "Transactional traces").

use super::{field, txn_add_partitions, Verdict};

/// The output events of one side that make up its transactional history.
const EVENTS: &[&str] = &[
    "txn",
    "coord_answered",
    "txn_call",
    "txn_done",
    "send_refused",
];

/// One side's transactional history: each line with its index in the side's output.
pub(super) fn history(lines: &[String]) -> Vec<(usize, &str)> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| field(l, "ev").is_some_and(|ev| EVENTS.contains(&ev)))
        .map(|(i, l)| (i, l.as_str()))
        .collect()
}

/// Whether two history lines say the same. A failed operation's code is compared only
/// where Java names one: Java completes most failed operations with a `KafkaException`
/// wrapping the cause (`TransactionManager.TxnRequestHandler.fatalError`,
/// `abortableError`), which `Errors.forException` reads as UNKNOWN_SERVER_ERROR (-1).
pub(super) fn same(java: &str, core: &str) -> bool {
    if java == core {
        return true;
    }
    field(java, "ev") == Some("txn_done")
        && field(core, "ev") == Some("txn_done")
        && field(java, "call") == field(core, "call")
        && field(java, "result") == Some("err:-1")
        && field(core, "result").is_some_and(|r| r.starts_with("err:"))
}

/// Where the two sides' transactional histories first differ: the index into each
/// history, and the earlier of the two output lines.
pub(super) fn first_difference(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
) -> Option<(usize, usize)> {
    let n = java.len().max(core.len());
    let i = (0..n).find(|&i| match (java.get(i), core.get(i)) {
        (Some((_, j)), Some((_, c))) => !same(j, c),
        _ => true,
    })?;
    let line = |h: &[(usize, &str)]| h.get(i).map_or(usize::MAX, |(l, _)| *l);
    Some((i, line(java).min(line(core))))
}

pub(super) fn parts(line: &str) -> Vec<i32> {
    field(line, "parts")
        .unwrap_or_default()
        .split(',')
        .filter_map(|p| p.parse().ok())
        .collect()
}

pub(super) fn is_add_partitions(line: &str) -> bool {
    field(line, "ev") == Some("txn") && field(line, "api") == Some("add_partitions")
}

/// Line `i` of both sides, when both are AddPartitionsToTxn under the same producer id
/// and epoch.
pub(super) fn add_partitions_pair<'a>(
    java: &[(usize, &'a str)],
    core: &[(usize, &'a str)],
    i: usize,
) -> Option<(&'a str, &'a str)> {
    let (&(_, j), &(_, c)) = (java.get(i)?, core.get(i)?);
    let same_identity =
        field(j, "pid") == field(c, "pid") && field(j, "epoch") == field(c, "epoch");
    (is_add_partitions(j) && is_add_partitions(c) && same_identity).then_some((j, c))
}

/// [`Verdict::RetriedAddPartitionsTakesNewPartitions`]: at the first difference both
/// sides send AddPartitionsToTxn under the same producer id and epoch; Java's asks for
/// a strict subset of the core's and was built earlier: it is a retry (it sent the same
/// partitions before), or it follows a successful coordinator lookup on both sides and
/// asks again for a partition both sides asked for before in this transaction (Java
/// built it, with the partitions pending then, before `lookupCoordinator` held it); and
/// Java asks for every partition the core added there in a later AddPartitionsToTxn.
pub(super) fn retried_add_partitions_takes_new(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(missing) = retried_subset(java, core, i) else {
        return false;
    };
    missing.iter().all(|m| {
        java[i + 1..]
            .iter()
            .any(|(_, l)| is_add_partitions(l) && parts(l).contains(m))
    })
}

/// At `i` both sides send AddPartitionsToTxn under the same producer id and epoch, and
/// Java's asks for a strict subset of the core's and was built earlier (see
/// [`retried_add_partitions_takes_new`]): the partitions only the core asks for.
pub(super) fn retried_subset(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> Option<Vec<i32>> {
    let (j, c) = add_partitions_pair(java, core, i)?;
    let (jp, cp) = (parts(j), parts(c));
    let subset = jp.iter().all(|p| cp.contains(p)) && jp.len() < cp.len();
    let after_lookup = after_lookup(java, core, i);
    let asks_again = jp
        .iter()
        .any(|&p| asked_in_transaction(java, i, p) && asked_in_transaction(core, i, p));
    let retry = java[..i].iter().any(|(_, l)| *l == j) || (after_lookup && asks_again);
    (subset && retry).then(|| cp.iter().copied().filter(|p| !jp.contains(p)).collect())
}

/// Whether the line before `i` is, on both sides, a successful coordinator lookup.
pub(super) fn after_lookup(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    const FOUND: &str = r#"{"ev":"coord_answered","api":"find_coordinator","error":"NONE"}"#;
    i > 0 && java[i - 1].1 == FOUND && core[i - 1].1 == FOUND
}

/// [`Verdict::AbortAfterFailedInit`]: the init failed (its completion was an error, and
/// no later init succeeded); the abort was accepted on both sides just before the first
/// difference, where Java completes it at once with no request and the core first looks
/// up the coordinator and asks for a producer id (InitProducerId with none) before it
/// completes.
pub(super) fn abort_after_failed_init(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const CALL: &str = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
    const DONE: &str = r#"{"ev":"txn_done","call":"abort","result":"ok"}"#;
    let init_done = |l: &str, result: &str| {
        field(l, "ev") == Some("txn_done")
            && field(l, "call") == Some("init")
            && field(l, "result").is_some_and(|r| r.starts_with(result))
    };
    let Some(failed) = java[..i].iter().rposition(|(_, l)| init_done(l, "err")) else {
        return false;
    };
    if java[failed..i].iter().any(|(_, l)| init_done(l, "ok")) {
        return false;
    }
    let called = i > 0 && java[i - 1].1 == CALL && core[i - 1].1 == CALL;
    let java_at_once = java.get(i).is_some_and(|(_, l)| *l == DONE);
    let Some(done) = core[i..].iter().position(|(_, l)| *l == DONE) else {
        return false;
    };
    let before = &core[i..i + done];
    let core_inits_first = before.iter().any(|(_, l)| {
        field(l, "ev") == Some("txn")
            && field(l, "api") == Some("init")
            && field(l, "pid") == Some("-1")
    }) && before.iter().all(|(_, l)| {
        matches!(field(l, "ev"), Some("txn" | "coord_answered"))
            && matches!(field(l, "api"), Some("find_coordinator" | "init"))
    });
    called && java_at_once && core_inits_first
}

/// The class of the first transactional difference at `i`.
pub(super) fn classify(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> Verdict {
    if retried_add_partitions_takes_new(java, core, i)
        || txn_add_partitions::retried_add_partitions_never_asked(java, core, i)
        || super::txn_add_partitions2::retried_add_partitions_never_asked_adding_ended(
            java, core, i,
        )
    {
        Verdict::RetriedAddPartitionsTakesNewPartitions
    } else if txn_add_partitions::java_asks_new_partitions_while_aborting(java, core, i)
        || super::txn_add_partitions2::java_asks_new_partitions_ending_abort(java, core, i)
    {
        Verdict::JavaAsksNewPartitionsWhileAborting
    } else if abort_after_failed_init(java, core, i) {
        Verdict::AbortAfterFailedInit
    } else if abort_ends_with_epoch_bump(java, core, i) {
        Verdict::AbortEndsWithEpochBump
    } else if lost_end_txn_ends_with_epoch_bump(java, core, i) {
        Verdict::LostEndTxnEndsWithEpochBump
    } else if java_reasks_pending_partitions(java, core, i)
        || java_retries_partitions_already_asked(java, core, i)
        || super::txn_add_partitions2::java_stale_retry_while_core_asks_new(java, core, i)
    {
        Verdict::JavaReasksPendingPartitions
    } else if commit_fails_before_batches_settle(java, core, i)
        || super::txn_commit::commit_fails_early_then_abort(java, core, i)
        || super::txn_commit2::commit_fails_early_then_abort_add_partitions_out(java, core, i)
    {
        Verdict::CommitFailsBeforeBatchesSettle
    } else {
        Verdict::Unexplained
    }
}

/// [`Verdict::AbortEndsWithEpochBump`]: at the first difference Java completes the
/// abort, where the core first bumps the epoch: its next transactional request after
/// lookups of the coordinator is an InitProducerId naming the producer id and epoch of
/// the EndTxn(ABORT) it sent last (KIP-360 under TV1), and that EndTxn is the last
/// request both sides sent before.
pub(super) fn abort_ends_with_epoch_bump(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let request = |l: &str| field(l, "ev") == Some("txn");
    let api = |l: &str| field(l, "api").unwrap_or_default().to_string();
    let java_completes = java.get(i).is_some_and(|(_, l)| {
        field(l, "ev") == Some("txn_done") && field(l, "call") == Some("abort")
    });
    let Some(e) = core[..i].iter().rposition(|(_, l)| request(l)) else {
        return false;
    };
    let end = core[e].1;
    // The abort ended with EndTxn(ABORT), or with nothing to end (no partition was
    // added: KAFKA-18401) under the last AddPartitionsToTxn's identity: right after the
    // call, or after the call and then that request's answer refusing every partition
    // (an abortable error while the abort waited for it). The lines before `i` are the
    // same on both sides.
    const CALL: &str = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
    let since_end = &core[e + 1..i];
    let refused_all = |l: &str| {
        field(l, "ev") == Some("coord_answered")
            && field(l, "api") == Some("add_partitions")
            && field(l, "error")
                .is_some_and(|codes| codes.split(',').all(|c| !c.ends_with("=NONE")))
    };
    let nothing_to_end = api(end) == "add_partitions"
        && since_end.iter().any(|(_, l)| *l == CALL)
        && (since_end.last().is_some_and(|(_, l)| *l == CALL)
            || since_end.iter().any(|(_, l)| refused_all(l)));
    let aborted = (api(end) == "end_txn" && field(end, "commit") == Some("0")) || nothing_to_end;
    let Some((_, next)) = core[i..]
        .iter()
        .find(|(_, l)| request(l) && api(l) != "find_coordinator")
    else {
        return false;
    };
    let only_lookups = core[i..]
        .iter()
        .take_while(|(_, l)| *l != *next)
        .all(|(_, l)| api(l) == "find_coordinator");
    let bump = api(next) == "init"
        && field(next, "pid") == field(end, "pid")
        && field(next, "epoch") == field(end, "epoch");
    java_completes && aborted && only_lookups && bump
}

/// [`Verdict::JavaReasksPendingPartitions`]: at the first difference both sides send
/// AddPartitionsToTxn under the same producer id and epoch; Java's asks for a strict
/// superset of the core's, and every partition only Java asks for was asked for in an
/// earlier AddPartitionsToTxn of both sides (Java's `addPartitionsToTransactionHandler`
/// asks again for `pendingPartitionsInTransaction`, whose request is still unanswered).
pub(super) fn java_reasks_pending_partitions(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some((j, c)) = add_partitions_pair(java, core, i) else {
        return false;
    };
    let (jp, cp) = (parts(j), parts(c));
    let superset = cp.iter().all(|p| jp.contains(p)) && cp.len() < jp.len();
    superset
        && jp
            .iter()
            .filter(|p| !cp.contains(p))
            .all(|&p| asked_in_transaction(java, i, p) && asked_in_transaction(core, i, p))
}

/// A request's producer id and epoch, as written.
fn identity_of(line: &str) -> (String, String) {
    (
        field(line, "pid").unwrap_or_default().to_string(),
        field(line, "epoch").unwrap_or_default().to_string(),
    )
}

/// Whether `h` asked for partition `p` in an AddPartitionsToTxn before index `i`, since
/// the transaction began.
pub(super) fn asked_in_transaction(h: &[(usize, &str)], i: usize, p: i32) -> bool {
    const BEGIN: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
    let since = h[..i].iter().rposition(|(_, l)| *l == BEGIN).unwrap_or(0);
    h[since..i]
        .iter()
        .any(|(_, l)| is_add_partitions(l) && parts(l).contains(&p))
}

/// [`Verdict::JavaReasksPendingPartitions`], the other form: at the first difference
/// Java sends an AddPartitionsToTxn (the retry of a request that failed, after a newer
/// one took its partitions with the new ones) for partitions both sides already added
/// in this transaction (an AddPartitionsToTxn answer named each with NONE: the newer
/// request was answered), under the identity of the last such request, where the
/// core asks for nothing new, or asks for new partitions with a request that Java
/// sends, identical, as its next AddPartitionsToTxn asking for anything not already
/// asked (the stale retry went first in Java's queue). A partition whose requests were
/// never answered NONE is not one the core asks for once where Java asks twice: the
/// core has not added it, so Java's retry is not stale (e.g. the core's transaction
/// became abortable and it dropped the request, as in the no-commit form of
/// `CoreExpiresWhileCoordinatorRequestOut`).
pub(super) fn java_retries_partitions_already_asked(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if !java_stale_retry(java, core, i) {
        return false;
    }
    let core_asks_new = core.get(i).is_some_and(|(_, c)| {
        is_add_partitions(c) && parts(c).iter().any(|&p| !asked_in_transaction(core, i, p))
    });
    // Java's next AddPartitionsToTxn after its stale retries, if it is the core's.
    let java_asks_core_next = core.get(i).is_some_and(|(_, c)| {
        java[i + 1..]
            .iter()
            .find(|(_, l)| {
                is_add_partitions(l) && parts(l).iter().any(|&p| !asked_in_transaction(java, i, p))
            })
            .is_some_and(|(_, l)| l == c)
    });
    !core_asks_new || java_asks_core_next
}

/// Whether Java's line at the first difference `i` is a stale AddPartitionsToTxn retry:
/// under the identity of both sides' last AddPartitionsToTxn, for partitions both sides
/// already added in this transaction (the premise of
/// [`java_retries_partitions_already_asked`] and of
/// `txn_held_add_partitions::stale_retry_takes_answers_alike`).
pub(super) fn java_stale_retry(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    let Some((_, j)) = java.get(i) else {
        return false;
    };
    if !is_add_partitions(j) {
        return false;
    }
    let last = |h: &[(usize, &str)]| -> Option<(String, String)> {
        h[..i]
            .iter()
            .rev()
            .find(|(_, l)| is_add_partitions(l))
            .map(|(_, l)| identity_of(l))
    };
    let identity = Some(identity_of(j));
    last(java) == identity
        && last(core) == identity
        && parts(j)
            .iter()
            .all(|&p| added_in_transaction(java, i, p) && added_in_transaction(core, i, p))
}

/// Whether an AddPartitionsToTxn answer in `h` before index `i`, since the transaction
/// began, named partition `p` with NONE (the coordinator added it).
pub(super) fn added_in_transaction(h: &[(usize, &str)], i: usize, p: i32) -> bool {
    const BEGIN: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
    let since = h[..i].iter().rposition(|(_, l)| *l == BEGIN).unwrap_or(0);
    let added = format!("{p}=NONE");
    h[since..i].iter().any(|(_, l)| {
        field(l, "ev") == Some("coord_answered")
            && field(l, "api") == Some("add_partitions")
            && field(l, "error").is_some_and(|e| e.split(',').any(|x| x == added))
    })
}

/// [`Verdict::CommitFailsBeforeBatchesSettle`]: at the first difference the core
/// completes the commit with an error, and Java completes it with the same error (or a
/// wrapped one) later, with the same history in between: Java fails the EndTxn only
/// once no batch is incomplete (`nextRequest` holds it while `hasIncompleteBatches`,
/// then `maybeTerminateRequestWithError`); the core fails the commit as soon as the
/// transaction becomes abortable. In between, a commit call that Java accepts (the
/// retry of the commit in progress: `TransactionManager.beginCommit` hands back the
/// pending result) is one the core refuses (its commit has failed), and nothing else
/// differs.
pub(super) fn commit_fails_before_batches_settle(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some((_, c)) = core.get(i) else {
        return false;
    };
    let failed_commit = field(c, "ev") == Some("txn_done")
        && field(c, "call") == Some("commit")
        && field(c, "result").is_some_and(|r| r.starts_with("err:"));
    if !failed_commit {
        return false;
    }
    let Some(j) = (i..java.len()).find(|&j| same(java[j].1, c)) else {
        return false;
    };
    const RETRIED: &str = r#"{"ev":"txn_call","call":"commit","result":"ok"}"#;
    const REFUSED: &str = r#"{"ev":"txn_call","call":"commit","result":"refused"}"#;
    (i..j).all(|k| {
        core.get(k + 1)
            .is_some_and(|(_, l)| same(java[k].1, l) || (java[k].1 == RETRIED && *l == REFUSED))
    })
}

/// A transactional trace's verdict. A transaction couples its partitions
/// (AddPartitionsToTxn gates every partition's drain, EndTxn waits for every batch, one
/// abortable error fails them all), so the earliest difference, on a partition
/// (`earliest`: its class and output line) or in the conversation, classifies the
/// trace, and every later one is its consequence; at a tie a partition detector's
/// verdict stands, else the conversation's. `produce` is the verdict the partitions
/// alone gave.
pub(super) fn verdict(
    java: &[String],
    core: &[String],
    earliest: Option<(Verdict, usize)>,
    produce: Verdict,
) -> Verdict {
    let (jh, ch) = (history(java), history(core));
    let classify = |jh: &[(usize, &str)], ch: &[(usize, &str)], i: usize| {
        match classify(jh, ch, i)
    {
        Verdict::Unexplained if unknown_producer_id_fails_commit(java, core, ch, i) => {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_refusals::unknown_producer_id_refused_while_java_holds(
                java, core, ch, i,
            ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_commit::core_expires_while_coordinator_request_out(core, jh, ch, i) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        Verdict::Unexplained
            if super::txn_refusals::core_expires_while_coordinator_request_out_refusing(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        Verdict::Unexplained
            if super::txn_core_stops_adding::core_expires_history_ends(java, core, jh, ch, i) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        Verdict::Unexplained
            if super::txn_commit::commit_fails_with_javas_last_error(java, jh, ch, i) =>
        {
            Verdict::CommitFailsWithJavasLastError
        }
        Verdict::Unexplained
            if super::txn_refusals::commit_fails_early_java_never_completes(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::CommitFailsBeforeBatchesSettle
        }
        Verdict::Unexplained
            if super::txn_commit2::commit_fails_then_java_loses_track(java, core, jh, ch, i) =>
        {
            Verdict::CommitFailsBeforeBatchesSettle
        }
        Verdict::Unexplained
            if super::txn_refusals::java_asks_pending_partitions_while_aborting(
                core, jh, ch, i,
            ) =>
        {
            Verdict::JavaAsksNewPartitionsWhileAborting
        }
        Verdict::Unexplained
            if super::txn_commit2::unknown_producer_id_refuses_commit(java, core, jh, ch, i) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_commit2::core_expired_refuses_commit(core, jh, ch, i) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        Verdict::Unexplained
            if super::txn_commit2::core_never_splits_possibly_written(java, core, ch, i) =>
        {
            Verdict::NoRenumberOfPossiblyWritten
        }
        Verdict::Unexplained
            if super::txn_commit2::commit_fails_then_fatal_coordinator_error(core, jh, ch, i) =>
        {
            Verdict::CommitFailsWithJavasLastError
        }
        Verdict::Unexplained
            if super::txn_commit2::unknown_producer_id_then_java_fatal(java, core, jh, ch, i) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_add_partitions2::add_partitions_errors_taken_in_another_order(
                java, jh, ch, i,
            ) =>
        {
            Verdict::AddPartitionsErrorsTakenInAnotherOrder
        }
        Verdict::Unexplained
            if super::txn_add_partitions2::core_expires_during_lookup_history_ends(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        Verdict::Unexplained
            if super::txn_add_partitions2::core_expires_during_lookup_java_aborts(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        Verdict::Unexplained
            if super::txn_held_add_partitions::stale_retry_takes_answers_alike(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::JavaReasksPendingPartitions
        }
        Verdict::Unexplained
            if super::txn_add_partitions2::java_sends_older_pending_request(jh, ch, i) =>
        {
            Verdict::RetriedAddPartitionsTakesNewPartitions
        }
        Verdict::Unexplained
            if super::txn_add_partitions2::unknown_producer_id_history_ends(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_add_partitions3::java_asks_new_partitions_abort_fails(jh, ch, i)
                || super::txn_add_partitions3::java_asks_new_partitions_ending_abort_recalled(
                    jh, ch, i,
                ) =>
        {
            Verdict::JavaAsksNewPartitionsWhileAborting
        }
        Verdict::Unexplained
            if super::txn_add_partitions3::unknown_producer_id_refuses_commit_after_new_partitions(
                java, core, jh, ch, i,
            )
                || super::txn_add_partitions3::unknown_producer_id_refused_before_java_fails(
                    java, core, jh, ch, i,
                ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_core_turns_abortable::core_never_splits_refusing(
                java, core, jh, ch, i,
            ) || super::txn_unsplit_no_add_partitions::java_adds_where_core_failed_unsplit(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::NoRenumberOfPossiblyWritten
        }
        Verdict::Unexplained
            if super::txn_core_stops_adding::core_never_splits_history_ends(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::NoRenumberOfPossiblyWritten
        }
        Verdict::Unexplained
            if super::txn_core_turns_abortable::unknown_producer_id_commit_refused_while_java_holds(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_add_partitions3::retried_never_asked_after_failure(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::RetriedAddPartitionsTakesNewPartitions
        }
        Verdict::Unexplained
            if super::txn_core_turns_abortable::unknown_producer_id_core_ends_abort_at_once(
                java, core, jh, ch, i,
            ) || super::txn_held_add_partitions::unknown_producer_id_core_drops_retry_and_aborts(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained
            if super::txn_request_before_abort::java_request_before_abort(core, jh, ch, i) =>
        {
            Verdict::JavaAsksNewPartitionsWhileAborting
        }
        Verdict::Unexplained
            if super::txn_stale_request_against_bump::java_stale_request_against_abort_bump(
                jh, ch, i,
            ) =>
        {
            Verdict::AbortEndsWithEpochBump
        }
        Verdict::Unexplained
            if super::txn_upid_retry_answered_abortable::unknown_producer_id_java_retry_answered_abortable(
                java, core, jh, ch, i,
            ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        Verdict::Unexplained => super::txn_abort::classify(jh, ch, i),
        v => v,
    }
    };
    match (first_difference(&jh, &ch), earliest) {
        (Some((i, line)), e) if e.is_none_or(|(_, when)| line < when) => classify(&jh, &ch, i),
        (_, Some((v, _))) if v != Verdict::Unexplained => v,
        // A partition's difference first, a consequence of the conversation's later one.
        (Some((i, line)), Some((_, when)))
            if line > when
                && produce == Verdict::Unexplained
                && super::txn_core_turns_abortable::partition_first(
                    java,
                    core,
                    when,
                    classify(&jh, &ch, i),
                ) != Verdict::Unexplained =>
        {
            classify(&jh, &ch, i)
        }
        // Both first differ at the same output line (one side's transactional request
        // where the other produces) and no partition detector names it: the
        // conversation's difference, which gates the partitions, classifies it.
        (Some((i, line)), Some((_, when))) if line == when => classify(&jh, &ch, i),
        // Only partitions differ: the core expired while a coordinator request was out.
        (None, Some((_, when)))
            if produce == Verdict::Unexplained
                && super::txn_core_turns_abortable::core_expired_drains_nothing(
                    java, core, when,
                ) =>
        {
            Verdict::CoreExpiresWhileCoordinatorRequestOut
        }
        // Only partitions differ: after an UNKNOWN_PRODUCER_ID answer Java retries, the
        // core, abortable, drains nothing, and the script calls nothing more that the
        // core would refuse (the conversations are the same throughout).
        (None, Some((_, when)))
            if produce == Verdict::Unexplained
                && super::txn_core_turns_abortable::unknown_producer_id_core_drains_nothing(
                    java, core, when,
                ) =>
        {
            Verdict::UnknownProducerIdAbortsTransaction
        }
        (_, Some(_)) => produce,
        (_, None) => Verdict::Same,
    }
}

/// [`Verdict::LostEndTxnEndsWithEpochBump`]: at the first difference Java completes the
/// commit or abort, where the core first bumps the epoch: the last request both sides
/// sent is an EndTxn that they had sent before too (a retry: the first was lost or
/// refused), and the core's next request after lookups of the coordinator is an
/// InitProducerId naming that EndTxn's producer id and epoch.
pub(super) fn lost_end_txn_ends_with_epoch_bump(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let request = |l: &str| field(l, "ev") == Some("txn");
    let api = |l: &str| field(l, "api").unwrap_or_default().to_string();
    let Some((_, end)) = core[..i].iter().rev().find(|(_, l)| request(l)) else {
        return false;
    };
    let java_end = java[..i].iter().rev().find(|(_, l)| request(l));
    let retried = api(end) == "end_txn"
        && java_end.is_some_and(|(_, l)| l == end)
        && core[..i].iter().filter(|(_, l)| l == end).count() >= 2;
    let call = if field(end, "commit") == Some("1") {
        "commit"
    } else {
        "abort"
    };
    let java_completes = java
        .get(i)
        .is_some_and(|(_, l)| field(l, "ev") == Some("txn_done") && field(l, "call") == Some(call));
    let Some((_, next)) = core[i..]
        .iter()
        .find(|(_, l)| request(l) && api(l) != "find_coordinator")
    else {
        return false;
    };
    let bump = api(next) == "init"
        && field(next, "pid") == field(end, "pid")
        && field(next, "epoch") == field(end, "epoch");
    retried && java_completes && bump
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`]: at the first difference the core
/// fails the commit with UNKNOWN_PRODUCER_ID (59), or, with no commit pending, refuses
/// a send that Java accepts (never writes it refused: the core's transaction is
/// abortable, Java's is not); the last Produce answer the core got
/// before that failed a batch (answers after it, if any, failed none; a batch the
/// core sends again with the same stamp, before the difference or after it, was
/// retried, not failed: `lines::last_failing_answer_before`) failed batches
/// with UNKNOWN_PRODUCER_ID, Java got the same answer, and Java
/// sends every one of those batches again, with the same stamp, after it
/// (`TransactionManager.canRetry`: no acknowledged offset at or above the log start,
/// so it restarts the partition's sequences and retries), where the core makes the
/// transaction abortable (docs/design.md, "Simplification, as built").
pub(super) fn unknown_producer_id_fails_commit(
    java: &[String],
    core: &[String],
    ch: &[(usize, &str)],
    i: usize,
) -> bool {
    const FAILED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:59"}"#;
    let Some(&(at, c)) = ch.get(i) else {
        return false;
    };
    let refused_send = field(c, "ev") == Some("send_refused") && !java.iter().any(|l| l == c);
    if c != FAILED && !refused_send {
        return false;
    }
    // The last Produce answer that failed a batch: answers after it failed none.
    let Some(answer) = super::lines::last_failing_answer_before(core, at) else {
        return false;
    };
    let failed = super::lines::unknown_producer_id_stamps(answer);
    let Some(answered) = java.iter().position(|l| l == answer) else {
        return false;
    };
    let resent = |stamp: &&str| super::lines::sends_stamp(&java[answered + 1..], stamp);
    !failed.is_empty() && failed.iter().all(resent)
}
