//! Detectors for a send the core refuses where Java accepts it: the core's transaction
//! has become abortable (or failed) and Java's has not yet; and for a commit the core
//! fails early where Java's never completes (docs/design.md, "Transactional traces").

use super::field;
use super::java_tracking::{is_tracking_failure, named_partition};
use super::lines::{
    is_request, refused_send, sends_stamp, unknown_producer_id_stamps, BEGIN_OK, COMMIT_DONE_OK,
    COMMIT_OK, COMMIT_REFUSED, FOUND,
};
use super::txn::{added_in_transaction, after_lookup, asked_in_transaction, parts, same};
use super::txn_commit::{in_step, java_lookup, java_refusal_while_committing};
use crate::core_side::error_by_name;

fn add_partitions(line: &str) -> bool {
    is_request(line) && field(line, "api") == Some("add_partitions")
}

/// Whether every error the coordinator's answer line names is one Java and the core
/// both retry (an answer with no error names NONE).
pub(super) fn coordinator_retriable(line: &str) -> bool {
    field(line, "error")
        .unwrap_or_default()
        .split(',')
        .all(|p| {
            let e = p.rsplit('=').next().unwrap_or_default();
            e == "NONE" || error_by_name(e).is_retriable()
        })
}

/// Whether every batch error a Produce answer line names is one the core retries (NONE
/// and DUPLICATE_SEQUENCE_NUMBER, an acknowledgement, included).
pub(super) fn produce_retriable(line: &str) -> bool {
    field(line, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.split_once('=').map(|(_, e)| e))
        .all(|e| {
            matches!(e, "NONE" | "DUPLICATE_SEQUENCE_NUMBER") || error_by_name(e).is_retriable()
        })
}

/// Whether every batch error the Produce answer `line` names is one the core retries
/// or MESSAGE_TOO_LARGE on a batch of more than one record, and the core fails no record
/// with MESSAGE_TOO_LARGE (10) in `core_out`: it split each such batch and kept it to
/// send again, as Java does (`Sender.completeBatch`, `RecordAccumulator.splitAndReenqueue`), so that
/// answer failed nothing.
fn split_both(core_out: &[String], line: &str) -> bool {
    let split = |b: &str| {
        b.strip_suffix("=MESSAGE_TOO_LARGE")
            .and_then(|s| s.rsplit_once(':'))
            .and_then(|(_, n)| n.parse::<i64>().ok())
            .is_some_and(|n| n > 1)
    };
    let never_failed = !core_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:10"));
    never_failed
        && field(line, "batches")
            .unwrap_or_default()
            .split(',')
            .all(|b| {
                split(b)
                    || b.split_once('=').is_some_and(|(_, e)| {
                        matches!(e, "NONE" | "DUPLICATE_SEQUENCE_NUMBER")
                            || error_by_name(e).is_retriable()
                    })
            })
}

/// [`Verdict::CoreExpiresWhileCoordinatorRequestOut`](super::Verdict), the form with no
/// commit pending: at the first difference `i` the core refuses a send (record `r`), or
/// the application's commit (which Java accepts later; `r` is then the first send the
/// core refuses after it, or none), its
/// transaction abortable because a batch expired by `delivery.timeout.ms` while a
/// transactional request was out; Java, which checks expiry only in
/// `Sender.sendProducerData` and skips it while a transactional request is in flight or
/// about to be sent (`Sender.runOnce` returns after `maybeSendAndPollTransactionalRequest`;
/// the same in the 4.3.1 jar), has expired nothing and accepts the send. Accepted only
/// when all of these hold:
/// * the only cause the core's outputs show for its transaction to be abortable is an
///   expiry: a record accepted before `r` failed with REQUEST_TIMED_OUT (the core's
///   `DeliveryError::Timeout`), and since the transaction began (the last `begin`
///   accepted before `i`) every Produce answer before the refusal and every coordinator
///   answer before `i` carried only errors both sides retry (or, in a Produce answer,
///   MESSAGE_TOO_LARGE on a batch of more than one record, where the core fails no
///   record with it: both split the batch and keep it to send again, [`split_both`]);
/// * Java's Sender had a transactional request out then: the last transactional request
///   both sides sent before `i` is unanswered, or it is a coordinator lookup answered
///   NONE on the line just before `i` and Java's line at `i` is the AddPartitionsToTxn
///   that waited for it (sent before `sendProducerData` could run);
/// * from `i` on, Java writes the core's lines once the core's refusals of sends Java
///   never refuses are set aside, up to a line where Java shows that its transaction is
///   not abortable where the core's is: Java sends an AddPartitionsToTxn (the core, in
///   an abortable transaction, sends only lookups) or accepts a commit the core refuses;
///   or to the end of both histories;
/// * the next operation Java completes from `i` on is not a successful commit (Java
///   fails the expired batch once `sendProducerData` runs again, so its transaction
///   turns abortable too).
///
/// Nothing after that line is compared: it is the consequence (Java expires the batches
/// later, once its conversation lets `sendProducerData` run). An expiry writes no line,
/// so its moment is not checked against the request's; as in
/// `txn_commit::core_expires_while_coordinator_request_out`, the request being out at
/// the refusal, with Java not abortable there, stands for it.
pub(super) fn core_expires_while_coordinator_request_out_refusing(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    // The refused call: a send (record `r`), or a commit Java accepts later, where the
    // expired record is one accepted before the first send the core refuses after it.
    let refused_commit = c == COMMIT_REFUSED
        && (java[i..].iter().any(|&(_, l)| l == COMMIT_OK)
            || super::txn_core_stops_adding::java_refuses_commit_after_expiring(java_out, java, i));
    if !refused_send(c) && !refused_commit {
        return false;
    }
    let first_refused_after = || {
        core[i..]
            .iter()
            .find(|&&(_, l)| refused_send(l))
            .and_then(|&(_, l)| field(l, "rec"))
    };
    let rec = if refused_commit {
        first_refused_after()
    } else {
        field(c, "rec")
    };
    let r = match rec {
        Some(r) => match r.parse::<usize>() {
            Ok(r) => r,
            Err(_) => return false,
        },
        None if refused_commit => usize::MAX,
        None => return false,
    };
    // The only cause: an expiry.
    let expired_before = core_out.iter().any(|l| {
        field(l, "ev") == Some("outcome")
            && field(l, "result") == Some("err:7")
            && field(l, "rec")
                .and_then(|k| k.parse::<usize>().ok())
                .is_some_and(|k| k < r)
    });
    let began = core[..i].iter().rposition(|&(_, l)| l == BEGIN_OK);
    let Some(began) = began else {
        return false;
    };
    let since = core[began].0;
    let produce_retried = core_out[since..at]
        .iter()
        .filter(|l| field(l, "ev") == Some("answered"))
        .all(|l| produce_retriable(l) || split_both(core_out, l));
    let coordinator_retried = core[began..i]
        .iter()
        .filter(|&&(_, l)| field(l, "ev") == Some("coord_answered"))
        .all(|&(_, l)| coordinator_retriable(l));
    if !(expired_before && produce_retried && coordinator_retried) {
        return false;
    }
    // Java's Sender had a transactional request out.
    let Some(last) = core[..i].iter().rposition(|&(_, l)| is_request(l)) else {
        return false;
    };
    let unanswered = !core[last + 1..i]
        .iter()
        .any(|&(_, l)| field(l, "ev") == Some("coord_answered"));
    let found_then_held = last + 2 == i
        && field(core[last].1, "api") == Some("find_coordinator")
        && core[last + 1].1 == FOUND
        && java.get(i).is_some_and(|&(_, l)| add_partitions(l));
    if !(unanswered || found_then_held) {
        return false;
    }
    // Java goes on as a transaction that is not abortable.
    let java_refuses = |l: &str| java_out.iter().any(|j| j == l);
    let core_rest: Vec<&str> = core[i..]
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| !refused_send(l) || java_refuses(l))
        .collect();
    let java_rest: Vec<&str> = java[i..].iter().map(|&(_, l)| l).collect();
    let d = (0..java_rest.len().min(core_rest.len()))
        .find(|&k| !same(java_rest[k], core_rest[k]))
        .unwrap_or(java_rest.len().min(core_rest.len()));
    let java_goes_on = match (java_rest.get(d), core_rest.get(d)) {
        (Some(j), _) if add_partitions(j) => true,
        (Some(&j), Some(&c)) => j == COMMIT_OK && c == COMMIT_REFUSED,
        (None, None) => true,
        _ => false,
    };
    // The consequence is timing only: Java's `sendProducerData`, once it runs again,
    // drains the expired batch and fails it in flight in the same call
    // (`getExpiredInflightBatches`), so Java's transaction turns abortable too and the
    // next operation it completes is not a successful commit. (Which of the core's
    // failed records expired cannot be read from its output: an abortable transaction
    // fails its other unsent batches with the same error.)
    let java_commits = java[i..]
        .iter()
        .find(|&&(_, l)| field(l, "ev") == Some("txn_done"))
        .is_some_and(|&(_, l)| l == COMMIT_DONE_OK);
    java_goes_on && !java_commits
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`](super::Verdict), the no-commit form
/// where Java never gets to resend: at the first difference `i` the core refuses a send
/// that Java never refuses, and the last Produce answer the core got before failed
/// batches with UNKNOWN_PRODUCER_ID (the core makes the transaction abortable: the
/// simplification "UNKNOWN_PRODUCER_ID with a truncated log also aborts"). Java got the
/// same answer and kept each of those batches to retry (`TransactionManager.canRetry`
/// restarts the partition's sequences), but sent nothing of their partitions again
/// (its Sender was held by the transactional conversation, and the transaction ended
/// before the retry went out), and Java failed no record with UNKNOWN_PRODUCER_ID (a
/// batch it had not kept would have failed so). `txn::unknown_producer_id_fails_commit`
/// accepts the form where Java sends each batch again with the same stamp; this one
/// accepts only the form where it sends none of their partitions again.
pub(super) fn unknown_producer_id_refused_while_java_holds(
    java_out: &[String],
    core_out: &[String],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    if !refused_send(c) || java_out.iter().any(|l| l == c) {
        return false;
    }
    java_holds_unknown_producer_id_batches(java_out, core_out, at)
}

/// The cause [`unknown_producer_id_refused_while_java_holds`] checks, for the core's
/// line `at`: the last Produce answer the core got before it failed batches with
/// UNKNOWN_PRODUCER_ID, Java got the same answer, sent nothing of their partitions again
/// after it and failed no record with UNKNOWN_PRODUCER_ID.
pub(super) fn java_holds_unknown_producer_id_batches(
    java_out: &[String],
    core_out: &[String],
    at: usize,
) -> bool {
    let Some(answer) = core_out[..at]
        .iter()
        .rev()
        .find(|l| field(l, "ev") == Some("answered"))
    else {
        return false;
    };
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java_out.iter().position(|l| l == answer) else {
        return false;
    };
    let partition = |stamp: &str| stamp.split(':').next().unwrap_or_default().to_string();
    let never_sent_again = |stamp: &&str| {
        let p = partition(stamp);
        !java_out[answered + 1..].iter().any(|l| {
            field(l, "ev") == Some("produce")
                && field(l, "batches")
                    .unwrap_or_default()
                    .split(',')
                    .any(|b| partition(b) == p)
        })
    };
    let java_failed_none = !java_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:59"));
    !failed.is_empty() && failed.iter().all(never_sent_again) && java_failed_none
}

/// [`Verdict::CommitFailsBeforeBatchesSettle`](super::Verdict), the form where Java's
/// commit never completes because Java's Sender throws in its own bookkeeping while it
/// holds the EndTxn (`compare/java_tracking.rs`). At the first difference `i` the core
/// fails the commit with UNKNOWN_PRODUCER_ID (59), and the last Produce answer the core
/// got before failed batches with it. Both sides make the transaction abortable there:
/// Java got the same answer and failed those batches rather than retrying them
/// (`TransactionManager.canRetry` said no: an offset at or above the log start was
/// acknowledged on the partition), as it sends none of their stamps again. Java's
/// `handleFailedBatch` then drops the partition's entry (`resetSequenceForPartition`)
/// with another batch of it on the wire, so when that batch is answered the Sender
/// throws, and the batch is neither completed nor queued again: the EndTxn Java holds
/// while batches are incomplete (`TransactionManager.nextRequest`) never goes out and
/// Java's commit never completes. Accepted only when all of these hold:
/// * Java's first exception is one of its two bookkeeping failures, naming the
///   partition of one of those batches, written after Java's line at `i`;
/// * Java's history from `i` on holds only what its pending commit dictates for each
///   application call (a commit handed back the pending result, an abort or a begin
///   refused, a send refused) and coordinator lookups: no completion, no EndTxn, no
///   InitProducerId, no AddPartitionsToTxn;
/// * until that exception, Java writes the core's lines (the core one line ahead), a
///   commit Java hands back the pending result for and the core refuses aside, as in
///   `txn::commit_fails_before_batches_settle`; or until the application's abort,
///   which Java refuses (its commit is pending) and the core, whose commit has failed,
///   accepts (the abort form of `txn_commit::in_step_or_refused`): the core's lines
///   after it are those of an abort Java has not started, and are not compared.
///
/// `txn::commit_fails_before_batches_settle` accepts the form where Java's commit
/// completes, with the core's error, once its batches settle; where the lost batch later
/// expires, Java's commit fails with TRANSACTION_ABORTABLE
/// (`txn_commit::commit_fails_with_javas_last_error`). What either side does after the
/// exception is its consequence: Java's lines are checked only for being those of a
/// commit that is still pending.
pub(super) fn commit_fails_early_java_never_completes(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const FAILED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:59"}"#;
    let (Some(&(at, c)), Some(&(java_at, _))) = (core.get(i), java.get(i)) else {
        return false;
    };
    if c != FAILED {
        return false;
    }
    let Some(answer) = core_out[..at]
        .iter()
        .rev()
        .find(|l| field(l, "ev") == Some("answered"))
    else {
        return false;
    };
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java_out.iter().position(|l| l == answer) else {
        return false;
    };
    let resent = |stamp: &&str| sends_stamp(&java_out[answered + 1..], stamp);
    if failed.is_empty() || failed.iter().any(resent) {
        return false;
    }
    // Java's Sender throws on that partition's next answer, after the first difference.
    let Some(e) = java_out
        .iter()
        .position(|l| field(l, "ev") == Some("java_exception"))
    else {
        return false;
    };
    let partition_of = |stamp: &str| stamp.split(':').next().and_then(|p| p.parse::<i32>().ok());
    let on_failed_partition = named_partition(&java_out[e])
        .is_some_and(|p| failed.iter().any(|s| partition_of(s) == Some(p)));
    if !(is_tracking_failure(&java_out[e]) && on_failed_partition && java_at < e) {
        return false;
    }
    // Java's commit stays pending, and until the exception nothing else differs.
    let pending = java[i..]
        .iter()
        .all(|&(_, l)| java_refusal_while_committing(l) || java_lookup(l));
    // In step until the exception, or until the application's abort, which Java
    // refuses (its commit is pending) and the core accepts (its commit has failed).
    const ABORT_OK: &str = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
    const ABORT_REFUSED: &str = r#"{"ev":"txn_call","call":"abort","result":"refused"}"#;
    let in_step_before = (i..java.len())
        .take_while(|&k| java[k].0 < e)
        .find(|&k| !in_step(java, core, k))
        .is_none_or(|d| {
            java[d].1 == ABORT_REFUSED && core.get(d + 1).is_some_and(|&(_, l)| l == ABORT_OK)
        });
    pending && in_step_before
}

/// [`Verdict::JavaAsksNewPartitionsWhileAborting`](super::Verdict), the form with
/// partitions that were pending when the transaction became abortable: an
/// AddPartitionsToTxn failed with a retriable error (or timed out) after the
/// transaction became abortable, and both sides looked the coordinator up. Java
/// re-enqueued the request behind the lookup (`lookupCoordinator`), and the
/// application's abort does not drop it (`beginAbort` clears only the new partitions;
/// `maybeTerminateRequestWithError` fails requests only while the transaction is in
/// error, and an abort in progress is not), so after the lookup Java asks to add those
/// partitions to the transaction it is aborting, then ends it. The core, in an abortable
/// transaction, sends only lookups (the fix recorded as
/// `txn_abortable_sends_only_lookups`), so it dropped the request and ends the
/// transaction with EndTxn(ABORT) at once. Harmless: partitions added only to be
/// aborted. Accepted only when all of these hold:
/// * the core's transaction was abortable before the abort: since the transaction began
///   and before the abort, a send was refused, or a Produce answer failed a batch with
///   an error the core does not retry, or a record of the core failed with
///   REQUEST_TIMED_OUT (an expiry writes no line);
/// * both sides accepted the abort after that, and neither sent an AddPartitionsToTxn or
///   an EndTxn between the abort and `i`; the line before `i` is a successful lookup on
///   both sides;
/// * at `i` Java sends an AddPartitionsToTxn, under the identity of the last one both
///   sent, for partitions both asked for before in the transaction and neither had added
///   (no answer named them NONE), and the core sends EndTxn(ABORT) under that identity
///   (there, or after refusing sends, begin or commit calls that Java refuses too, after
///   its request: `txn_java_keeps_asking::refused_by_both`);
/// * Java's next request after `i` that is neither an AddPartitionsToTxn nor a lookup is
///   that same EndTxn; or Java sends none because the answers to its requests, the same
///   the core's EndTxn got, fail both aborts alike
///   ([`super::txn_stale_add_partitions::aborts_fail_alike`]), or the last of them gives
///   one partition a code the core's EndTxn did not get, on which Java's abort fails
///   ([`super::txn_held_add_partitions::java_abort_fails_on_another_code`]).
pub(super) fn java_asks_pending_partitions_while_aborting(
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    const ABORT_OK: &str = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
    let Some(&(_, j)) = java.get(i) else {
        return false;
    };
    // The core's EndTxn at `i`, or after sends it refuses that Java refuses too (the
    // abort refuses every send on both sides; Java writes them after its request).
    let Some(&(_, c)) = core[i..]
        .iter()
        .find(|&&(_, l)| !super::txn_java_keeps_asking::refused_by_both(java, i, l))
    else {
        return false;
    };
    let end_txn_abort = |l: &str| {
        is_request(l) && field(l, "api") == Some("end_txn") && field(l, "commit") == Some("0")
    };
    if !add_partitions(j) || !end_txn_abort(c) || !after_lookup(java, core, i) {
        return false;
    }
    fn identity(l: &str) -> (Option<&str>, Option<&str>) {
        (field(l, "pid"), field(l, "epoch"))
    }
    let Some(last) = core[..i].iter().rposition(|&(_, l)| add_partitions(l)) else {
        return false;
    };
    if identity(core[last].1) != identity(j) || identity(c) != identity(j) {
        return false;
    }
    let Some(began) = core[..i].iter().rposition(|&(_, l)| l == BEGIN_OK) else {
        return false;
    };
    let Some(aborted) = core[began..i].iter().position(|&(_, l)| l == ABORT_OK) else {
        return false;
    };
    let aborted = began + aborted;
    let quiet = core[aborted..i]
        .iter()
        .all(|&(_, l)| !add_partitions(l) && !end_txn_abort(l));
    // Abortable before the abort.
    let (from, to) = (core[began].0, core[aborted].0);
    let refused = core[began..aborted].iter().any(|&(_, l)| refused_send(l));
    let batch_failed = core_out[from..to]
        .iter()
        .any(|l| field(l, "ev") == Some("answered") && !produce_retriable(l));
    let expired = core_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:7"));
    let pending_only = parts(j).iter().all(|&p| {
        asked_in_transaction(java, i, p)
            && asked_in_transaction(core, i, p)
            && !added_in_transaction(java, i, p)
            && !added_in_transaction(core, i, p)
    });
    let ends_as_core = java[i + 1..]
        .iter()
        .find(|&&(_, l)| {
            is_request(l) && !add_partitions(l) && field(l, "api") != Some("find_coordinator")
        })
        .is_some_and(|&(_, l)| l == c);
    // Or Java never sends it: the answers to its requests, and the same ones to the
    // core's EndTxn, fail both aborts alike.
    let fail_alike = || {
        super::txn_stale_add_partitions::aborts_fail_alike(java, core, i)
            || super::txn_held_add_partitions::java_abort_fails_on_another_code(java, core, i)
    };
    quiet && (refused || batch_failed || expired) && pending_only && (ends_as_core || fail_alike())
}
