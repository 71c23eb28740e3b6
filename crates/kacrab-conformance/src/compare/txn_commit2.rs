//! More forms of the commit the core fails early
//! ([`Verdict::CommitFailsBeforeBatchesSettle`](super::Verdict), `compare/txn_commit.rs`):
//! where Java's own held commit never completes, because Java's Sender lost track of a
//! batch of the transaction (`compare/java_tracking.rs`) before it would have failed it.

use super::lines::{
    failed_commit, last_failing_answer, sends_stamp, unknown_producer_id_stamps, ABORT_OK,
    ABORT_REFUSED, BEGIN_REFUSED, COMMIT_OK, COMMIT_REFUSED,
};
use super::timing::{self, DrainStop};
use super::txn::same;
use super::{field, java_tracking, txn, PartitionEvent, Verdict};

/// The partitions a Produce answer line failed with UNKNOWN_PRODUCER_ID.
fn unknown_producer_id_partitions(line: &str) -> Vec<i32> {
    if field(line, "ev") != Some("answered") {
        return Vec::new();
    }
    field(line, "batches")
        .unwrap_or_default()
        .split(',')
        .filter(|b| b.ends_with("=UNKNOWN_PRODUCER_ID"))
        .filter_map(|b| b.split_once(':')?.0.parse().ok())
        .collect()
}

/// [`Verdict::CommitFailsBeforeBatchesSettle`](super::Verdict), where Java's held commit
/// never completes. The core's line `at` (its history's `i`, the trace's first
/// difference) fails the commit with UNKNOWN_PRODUCER_ID (59), right after a Produce
/// answer that failed a batch of partition `p` with it; up to that answer both outputs
/// are the same. Java handles the same answer by failing that batch (its transaction
/// becomes abortable and it holds the EndTxn while batches are incomplete, the departure
/// `CommitFailsBeforeBatchesSettle` names) and dropping `p`'s entry
/// (`TransactionManager.handleFailedBatch`, `resetSequenceForPartition`) while another
/// batch of `p` is on the wire. Java then writes the core's lines, one behind (a commit
/// Java hands back the pending result for and the core refuses aside, and Produce
/// requests resending only batches of `p` both sent before, which the core sends again
/// later: Java no longer holds `p`'s retries to one at a time), up to a tracking
/// failure naming `p` (`java_tracking`): the next answer to `p` throws in Java's Sender,
/// so that batch never completes, and neither does Java's commit, which waits for it.
/// From the exception on Java writes, in the conversation, only what its pending commit
/// dictates for each application call (a commit handed back the pending result; an
/// abort, a begin or a send refused) and coordinator lookups, and never completes the
/// commit. The core's lines after the exception are the consequence of the lost batch
/// and are not compared.
pub(super) fn commit_fails_then_java_loses_track(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const FAILED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:59"}"#;
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    if c != FAILED || at == 0 || java_out.get(..at) != core_out.get(..at) {
        return false;
    }
    let cause = unknown_producer_id_partitions(&core_out[at - 1]);
    let Some(e) = java_out
        .iter()
        .position(|l| field(l, "ev") == Some("java_exception"))
    else {
        return false;
    };
    let exception = &java_out[e];
    let named = java_tracking::named_partition(exception);
    let dropped = java_tracking::dropped_while_unsettled(&java_out[..at]);
    if e < at
        || !java_tracking::is_tracking_failure(exception)
        || !named.is_some_and(|p| cause.contains(&p) && dropped.contains(&p))
    {
        return false;
    }
    // Up to the exception, Java writes the core's lines one behind; it never accepts an
    // abort while its commit is pending (`throwIfPendingState`). Java's Produce requests
    // may also carry batches of the named partition that both sent before `at` and the
    // core sends again later, which the core holds meanwhile: with the partition's entry
    // dropped Java no longer sends its retries one at a time
    // (`RecordAccumulator.shouldStopDrainBatchesForPartition` finds no in-flight
    // sequence to wait for).
    let pipelined = |l: &str| {
        field(l, "ev") == Some("produce")
            && field(l, "batches").is_some_and(|b| {
                b.split(',').all(|stamp| {
                    stamp.split_once(':').and_then(|(q, _)| q.parse().ok()) == named
                        && super::lines::sends_stamp(&java_out[..at], stamp)
                        && super::lines::sends_stamp(&core_out[at..], stamp)
                })
            })
    };
    let mut next = at + 1;
    let in_step = (at..e).all(|k| {
        let l = &java_out[k];
        let matched = *l != ABORT_OK
            && core_out
                .get(next)
                .is_some_and(|c| same(l, c) || (*l == COMMIT_OK && c == COMMIT_REFUSED));
        if matched {
            next += 1;
        }
        matched || pipelined(l)
    });
    // From it on, only what Java's pending commit dictates, and no completion.
    let waits = java.iter().filter(|&&(l, _)| l > e).all(|&(_, l)| {
        l == COMMIT_OK
            || l == ABORT_REFUSED
            || l == BEGIN_REFUSED
            || field(l, "ev") == Some("send_refused")
            || (matches!(field(l, "ev"), Some("txn" | "coord_answered"))
                && field(l, "api") == Some("find_coordinator"))
    });
    let never_completes = java[i..]
        .iter()
        .all(|&(_, l)| field(l, "ev") != Some("txn_done"));
    in_step && waits && never_completes
}

/// Whether the first difference `i` is a commit call Java accepts and the core refuses
/// (its transaction is abortable, Java's not yet: `TransactionManager.beginCommit`
/// refuses a commit in ABORTABLE_ERROR through `maybeFailWithError`, on both sides).
fn core_refuses_commit(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    java.get(i).is_some_and(|&(_, l)| l == COMMIT_OK)
        && core.get(i).is_some_and(|&(_, l)| l == COMMIT_REFUSED)
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`](super::Verdict), where the core's
/// first difference is the commit call it refuses and Java accepts: the cause is the
/// one `txn::unknown_producer_id_fails_commit` checks. The last Produce answer the core
/// got before the call that failed a batch (later ones, if any, failed none: they
/// cannot have made the transaction abortable) failed batches with
/// UNKNOWN_PRODUCER_ID, Java got the same
/// answer, and Java sends every one of those batches again after it, with the same
/// stamp (`TransactionManager.canRetry`: no acknowledged offset at or above the log
/// start, so Java restarts the partition's sequences and retries, and its transaction
/// stays committable), where the core made its transaction abortable, and so refuses
/// the commit.
pub(super) fn unknown_producer_id_refuses_commit(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if !core_refuses_commit(java, core, i) {
        return false;
    }
    let at = core[i].0;
    // The last Produce answer that failed a batch: answers after it failed none.
    let Some(answer) = last_failing_answer(&core_out[..at]) else {
        return false;
    };
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java_out.iter().position(|l| l == answer) else {
        return false;
    };
    let resent = |stamp: &&str| sends_stamp(&java_out[answered + 1..], stamp);
    !failed.is_empty() && failed.iter().all(resent)
}

/// [`Verdict::CoreExpiresWhileCoordinatorRequestOut`](super::Verdict), where the core's
/// first difference is the commit call it refuses and Java accepts: the core expired a
/// batch by `delivery.timeout.ms` (a record of the core failed with REQUEST_TIMED_OUT)
/// while the last transactional request both sides sent before the call is unanswered,
/// so its transaction is abortable before the application commits; Java, which checks
/// expiry only in `Sender.sendProducerData` (skipped while a transactional request is
/// in flight), accepts the commit. Java's next completion is that commit, failed; until
/// then both write the same (a commit Java hands back the pending result for and the
/// core refuses aside) up to the first line they differ on, and from there Java writes
/// only what its pending commit dictates for each application call, coordinator lookups
/// and its AddPartitionsToTxn conversation (no EndTxn, no InitProducerId), as for
/// `txn_commit::core_expires_while_coordinator_request_out`.
pub(super) fn core_expired_refuses_commit(
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if !core_refuses_commit(java, core, i) {
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
    let Some(j) = (i..java.len()).find(|&k| field(java[k].1, "ev") == Some("txn_done")) else {
        return false;
    };
    if !failed_commit(java[j].1) {
        return false;
    }
    let in_step = |k: usize| {
        core.get(k).is_some_and(|&(_, l)| {
            same(java[k].1, l) || (java[k].1 == COMMIT_OK && l == COMMIT_REFUSED)
        })
    };
    let d = (i..j).find(|&k| !in_step(k)).unwrap_or(j);
    let java_waits = java[d..j].iter().all(|&(_, l)| {
        l == COMMIT_OK
            || l == ABORT_REFUSED
            || l == BEGIN_REFUSED
            || field(l, "ev") == Some("send_refused")
            || (matches!(field(l, "ev"), Some("txn" | "coord_answered"))
                && matches!(field(l, "api"), Some("find_coordinator" | "add_partitions")))
    });
    unanswered && record_expired && java_waits
}

/// [`Verdict::JavaDrainStopsAtWaitingPartition`](super::Verdict) in a transactional trace
/// where Java never sends the batch the core sent: partition `p`'s first difference, at
/// `k`, is the core sending a new batch (its identity's next sequence, not a retry) to
/// `node` in a step where Java reported that its drain of `node` stopped before `p`
/// (`RecordAccumulator.drainBatchesForOneNode`, the quirk that detector names); Java
/// sends no batch of `p` from there on, and after the lines both outputs share
/// (`java_from`) Java's output shows its transaction failed (a send or a commit refused,
/// or an operation completed with an error) or the application's abort accepted (an
/// aborting transaction's undrained batches are aborted too, in the same
/// `Sender.maybeSendAndPollTransactionalRequest` step). Java's records of `p` were accepted as the
/// core's were (the outputs are the same up to the core's send), so a commit could not
/// complete without that batch: it was failed undrained (an abortable or failed
/// transaction's batches are aborted, never sent:
/// `Sender.maybeSendAndPollTransactionalRequest`, `RecordAccumulator.abortUndrainedBatches`),
/// where the core, not stopped, had sent it first.
pub(super) fn java_drain_stop_then_abortable(
    p: i32,
    k: usize,
    je: &[PartitionEvent],
    (ce, ct): (&[PartitionEvent], &[i64]),
    stops: &[DrainStop],
    java_out: &[String],
    java_from: usize,
) -> bool {
    if !timing::java_never_drains_core_send(p, k, je, (ce, ct), stops) {
        return false;
    }
    let failed = java_out
        .get(java_from..)
        .unwrap_or_default()
        .iter()
        .any(|l| {
            field(l, "ev") == Some("send_refused")
                || l == COMMIT_REFUSED
                || l == ABORT_OK
                || (field(l, "ev") == Some("txn_done")
                    && field(l, "result").is_some_and(|r| r.starts_with("err:")))
        });
    failed
}

/// A transactional trace whose partitions have the same histories on both sides, but
/// where the core sent a batch earlier than Java because Java's drain stopped before its
/// partition (`timing`: [`Verdict::JavaDrainStopsAtWaitingPartition`] entries, each with
/// its output line), and whose conversation, left unexplained by its own detectors,
/// first differs after that send: answers are scripted per broker, so the earlier send
/// moved which request each later answer reached, and the conversation's difference
/// (an operation completing earlier on one side, say) is its consequence. The earliest
/// difference classifies the trace: the drain stop's verdict.
pub(super) fn timing_before_conversation(
    java: &[String],
    core: &[String],
    timing: &[(i32, Verdict, usize, usize)],
) -> Option<Verdict> {
    let (jh, ch) = (txn::history(java), txn::history(core));
    let (_, line) = txn::first_difference(&jh, &ch)?;
    timing
        .iter()
        .filter(|&&(_, v, _, when)| v == Verdict::JavaDrainStopsAtWaitingPartition && when < line)
        .min_by_key(|&&(_, _, _, when)| when)
        .map(|&(_, v, _, _)| v)
}

/// [`Verdict::NoRenumberOfPossiblyWritten`](super::Verdict) (departure 2: a batch that
/// may be in the log is never renumbered or split), where it ends a transaction: the
/// core's first difference (its history's `i`, output line `at`) fails the commit with
/// MESSAGE_TOO_LARGE right after the Produce answer that failed a batch of more than
/// one record with it, the outputs being the same up to that answer; that batch's stamp
/// was answered before with a code after which it may be in the log (or was on a
/// connection that closed before its answer), so the core fails it rather than split it
/// (and its transaction turns abortable), where Java splits it (`Sender.completeBatch`,
/// `RecordAccumulator.splitAndReenqueue`) and sends its first piece again, under the same
/// identity and base sequence with at most its records
/// (`txn_core_turns_abortable::core_fails_unsplit_possibly_written`).
pub(super) fn core_never_splits_possibly_written(
    java_out: &[String],
    core_out: &[String],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const FAILED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:10"}"#;
    core.get(i).is_some_and(|&(at, c)| {
        c == FAILED
            && super::txn_core_turns_abortable::core_fails_unsplit_possibly_written(
                java_out, core_out, at,
            )
    })
}

/// The code of the fatal error Java's handler of a coordinator answer line takes
/// (`TransactionManager.fatalError`): TRANSACTIONAL_ID_AUTHORIZATION_FAILED on a
/// FindCoordinator (`FindCoordinatorHandler`); on an AddPartitionsToTxn whose partitions
/// all failed with one error (`AddPartitionsToTxnHandler`),
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED or INVALID_TXN_STATE as itself, and
/// INVALID_PRODUCER_EPOCH or PRODUCER_FENCED as PRODUCER_FENCED.
pub(super) fn fatal_coordinator_error(line: &str) -> Option<i16> {
    if field(line, "ev") != Some("coord_answered") {
        return None;
    }
    const AUTH: &str = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
    let error = field(line, "error")?;
    let name = match field(line, "api")? {
        "find_coordinator" => (error == AUTH).then_some(AUTH)?,
        "add_partitions" => {
            let mut errors = error.split(',').map(|p| p.split_once('=').map(|(_, e)| e));
            let first = errors.next()??;
            if !errors.all(|e| e == Some(first)) {
                return None;
            }
            match first {
                AUTH | "INVALID_TXN_STATE" => first,
                "INVALID_PRODUCER_EPOCH" | "PRODUCER_FENCED" => "PRODUCER_FENCED",
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(crate::core_side::error_by_name(name).code())
}

/// [`Verdict::CommitFailsWithJavasLastError`](super::Verdict), where the error Java's
/// commit fails with is a fatal one a coordinator answer brought while Java held its
/// EndTxn. At the first difference `i` the core fails the commit with its abortable
/// error (the departure `CommitFailsBeforeBatchesSettle`); Java, holding the EndTxn
/// while batches are incomplete, next gets a coordinator answer its handler takes as
/// fatal (`fatal_coordinator_error`): `fatalError` makes that error Java's `lastError`,
/// and the held EndTxn then fails with it (`maybeTerminateRequestWithError`). Accepted
/// only when all of these hold:
/// * Java's next completion (`j`) after `i` fails the commit with a code other than the
///   core's;
/// * every Java line from `i` to `j` is the core's next line (the core one line ahead,
///   `txn_commit::in_step`), and one of them is such a fatal answer with Java's code;
/// * the core, right after its copy of that answer, goes fatal with the same code (its
///   commit had already failed, so only its state records the error).
pub(super) fn commit_fails_then_fatal_coordinator_error(
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let code = |l: &str| -> Option<i16> { field(l, "result")?.strip_prefix("err:")?.parse().ok() };
    let Some(&(_, c)) = core.get(i) else {
        return false;
    };
    let Some(j) = (i..java.len()).find(|&k| field(java[k].1, "ev") == Some("txn_done")) else {
        return false;
    };
    let (Some(cc), Some(jc)) = (code(c), code(java[j].1)) else {
        return false;
    };
    if !failed_commit(c) || !failed_commit(java[j].1) || cc == jc {
        return false;
    }
    if !(i..j).all(|k| super::txn_commit::in_step(java, core, k)) {
        return false;
    }
    let fatal = format!(r#"{{"ev":"fatal","error":{jc}}}"#);
    (i..j).any(|k| {
        fatal_coordinator_error(java[k].1) == Some(jc)
            && core
                .get(k + 1)
                .is_some_and(|&(at, _)| core_out.get(at + 1) == Some(&fatal))
    })
}

/// [`Verdict::CommitFailsBeforeBatchesSettle`](super::Verdict), the abort form
/// (`txn_commit::commit_fails_early_then_abort`) where an AddPartitionsToTxn was out
/// when the core failed the commit. At the first difference `i` the core fails the
/// commit; Java's next completion (`j`) fails it with the same error (`txn::same`).
/// The lines are in step (`txn_commit::in_step`) up to `d`, where the application
/// aborts: Java refuses (its commit is pending), the core accepts. From `d` to `j` Java
/// writes only what its pending commit dictates for each application call, coordinator
/// lookups, and exactly one more line: the answer to the AddPartitionsToTxn that was the
/// last transactional request both sides sent before `i`, unanswered there, which the
/// core writes too after `d` (an abortable transaction does not drop a request already
/// out: Java's `AddPartitionsToTxnHandler` handles its answer, and Java's held EndTxn
/// fails only at its next `nextRequest`).
pub(super) fn commit_fails_early_then_abort_add_partitions_out(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(_, c)) = core.get(i) else {
        return false;
    };
    let Some(j) = (i..java.len()).find(|&k| field(java[k].1, "ev") == Some("txn_done")) else {
        return false;
    };
    if !failed_commit(c) || !same(java[j].1, c) {
        return false;
    }
    let add_partitions = |l: &str| field(l, "api") == Some("add_partitions");
    let Some(r) = core[..i]
        .iter()
        .rposition(|&(_, l)| field(l, "ev") == Some("txn"))
    else {
        return false;
    };
    let out = add_partitions(core[r].1)
        && !core[r + 1..i]
            .iter()
            .any(|&(_, l)| field(l, "ev") == Some("coord_answered"));
    let Some(d) = (i..j).find(|&k| !super::txn_commit::in_step(java, core, k)) else {
        return false;
    };
    if !out || java[d].1 != ABORT_REFUSED || core.get(d + 1).is_none_or(|&(_, l)| l != ABORT_OK) {
        return false;
    }
    let answers: Vec<&str> = java[d..j]
        .iter()
        .map(|&(_, l)| l)
        .filter(|&l| {
            !(super::txn_commit::java_refusal_while_committing(l)
                || super::txn_commit::java_lookup(l))
        })
        .collect();
    matches!(answers[..], [a] if field(a, "ev") == Some("coord_answered")
        && add_partitions(a)
        && core[d + 1..].iter().any(|&(_, l)| l == a))
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`](super::Verdict), where Java's
/// transaction fails fatally before its retry goes out. At the first difference `i` the
/// core fails the commit with UNKNOWN_PRODUCER_ID (59): the last Produce answer it got
/// before that failed a batch failed batches with it (the core makes the transaction
/// abortable, the simplification this departure names). Java got the same answer and
/// kept those batches to retry (`TransactionManager.canRetry`; it fails no record with
/// 59), so its transaction stays committable and its conversation goes on: from `i`
/// to its next completion `j` Java writes only coordinator lookups, its
/// AddPartitionsToTxn conversation and what its pending commit dictates for each
/// application call; one of those lines is a coordinator answer Java's handler takes as
/// fatal (`fatal_coordinator_error`), and `j` fails the commit with that error
/// (`fatalError` makes it `lastError`; `maybeTerminateRequestWithError`), so Java never
/// sends those batches' partitions again. The core, abortable, sends only lookups and
/// never gets that answer.
pub(super) fn unknown_producer_id_then_java_fatal(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const FAILED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:59"}"#;
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    if c != FAILED {
        return false;
    }
    let Some(answer) = last_failing_answer(&core_out[..at]) else {
        return false;
    };
    let failed = unknown_producer_id_partitions(answer);
    let Some(answered) = java_out.iter().position(|l| l == answer) else {
        return false;
    };
    let partition = |b: &str| b.split(':').next().and_then(|p| p.parse::<i32>().ok());
    let sent_again = java_out[answered + 1..].iter().any(|l| {
        field(l, "ev") == Some("produce")
            && field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .any(|b| partition(b).is_some_and(|p| failed.contains(&p)))
    });
    let java_failed_59 = java_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:59"));
    if failed.is_empty() || sent_again || java_failed_59 {
        return false;
    }
    let Some(j) = (i..java.len()).find(|&k| field(java[k].1, "ev") == Some("txn_done")) else {
        return false;
    };
    let jc: Option<i16> = field(java[j].1, "result")
        .and_then(|r| r.strip_prefix("err:"))
        .and_then(|r| r.parse().ok());
    let goes_on = java[i..j].iter().all(|&(_, l)| {
        super::txn_commit::java_refusal_while_committing(l)
            || super::txn_commit::java_lookup(l)
            || (matches!(field(l, "ev"), Some("txn" | "coord_answered"))
                && field(l, "api") == Some("add_partitions"))
    });
    failed_commit(java[j].1)
        && goes_on
        && java[i..j]
            .iter()
            .any(|&(_, l)| jc.is_some() && fatal_coordinator_error(l) == jc)
}
