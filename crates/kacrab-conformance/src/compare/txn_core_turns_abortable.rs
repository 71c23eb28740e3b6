//! Differences that follow from the core's transaction turning abortable where Java's
//! does not (docs/design.md, "Transactional traces"), in forms the detectors of the
//! conversation do not reach on their own:
//!
//! * [`unknown_producer_id_core_drains_nothing`]: the earliest difference is on a
//!   partition, not in the conversation: after a batch answered UNKNOWN_PRODUCER_ID that
//!   Java retries (`UnknownProducerIdAbortsTransaction`), Java produces where the
//!   core, abortable, drains nothing;
//! * [`core_never_splits_refusing`]: the core's rule that a batch that may be in the
//!   log is never split (`NoRenumberOfPossiblyWritten`) makes its transaction abortable
//!   with no commit pending, so its first difference is a send (or the commit call) it
//!   refuses and Java accepts;
//! * [`unknown_producer_id_commit_refused_while_java_holds`]: the commit call the core
//!   refuses after an UNKNOWN_PRODUCER_ID answer whose batches Java kept to retry and
//!   never sent again (`UnknownProducerIdAbortsTransaction`);
//! * [`unknown_producer_id_core_ends_abort_at_once`]: the EndTxn of an abort the core
//!   sends at once after such an answer, where Java's waits for the batches it resends
//!   (`UnknownProducerIdAbortsTransaction`);
//! * [`core_expired_drains_nothing`]: the earliest difference is on a partition, with
//!   no difference in the conversation: Java produces once its coordinator requests are
//!   answered, where the core expired the batches while they were out and, abortable,
//!   drains nothing (`CoreExpiresWhileCoordinatorRequestOut`).

use super::lines::{last_failing_answer, sends_stamp, unknown_producer_id_stamps};
use super::lines::{ABORT_OK, BEGIN_OK, COMMIT_DONE_OK, COMMIT_OK, COMMIT_REFUSED};
use super::txn_refusals::{
    coordinator_retriable, java_holds_unknown_producer_id_batches, produce_retriable,
};
use super::{field, Verdict};

fn produce(line: &str) -> bool {
    field(line, "ev") == Some("produce")
}

/// Whether some record of `out` completes with `result` (`err:<code>`).
pub(super) fn fails_record_with(out: &[String], result: &str) -> bool {
    out.iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some(result))
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`] where the trace's earliest difference
/// is on a partition (output line `when`): the two outputs are the same up to `when`;
/// there Java sends a Produce request and the core sends none. The last Produce answer
/// before `when` that failed a batch failed batches with UNKNOWN_PRODUCER_ID, and Java
/// sends each of them again with the same stamp after it (`TransactionManager.canRetry`
/// restarts the partition's sequences: Java's transaction stays committable), where the
/// core made its transaction abortable ("Simplification, as built"): from `when` on it
/// sends no new batch until a new transaction begins (Java's rule too: an
/// abortable transaction's undrained batches are failed, never sent:
/// `Sender.maybeSendAndPollTransactionalRequest` calls
/// `RecordAccumulator.abortUndrainedBatches`, which keeps a batch that already has a
/// sequence; so the core may send again a batch it had sent before `when`, a request
/// carrying only such stamps) and fails records with
/// UNKNOWN_PRODUCER_ID (59). The
/// caller also requires the conversation's own first difference, later, to be this
/// departure (the send or the commit the core refuses).
pub(super) fn unknown_producer_id_core_drains_nothing(
    java: &[String],
    core: &[String],
    when: usize,
) -> bool {
    if java.get(..when) != core.get(..when) || !java.get(when).is_some_and(|l| produce(l)) {
        return false;
    }
    if core.get(when).is_some_and(|l| produce(l)) {
        return false;
    }
    let Some(answer) = last_failing_answer(&core[..when]) else {
        return false;
    };
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java[..when].iter().rposition(|l| l == answer) else {
        return false;
    };
    let resent = failed
        .iter()
        .all(|stamp| sends_stamp(&java[answered + 1..], stamp));
    // A batch that already has a sequence is not undrained: both sides send it again
    // (`abortUndrainedBatches` fails only batches without one), so a Produce carrying
    // only stamps the core sent before `when` is a retry, not a drain.
    let retry_only = |l: &str| {
        field(l, "batches")
            .unwrap_or_default()
            .split(',')
            .all(|b| sends_stamp(&core[..when], b))
    };
    let drains_nothing = core[when..]
        .iter()
        .take_while(|l| field(l, "ev") != Some("txn_call") || field(l, "call") != Some("begin"))
        .all(|l| !produce(l) || retry_only(l));
    !failed.is_empty() && resent && drains_nothing && fails_record_with(core, "err:59")
}

/// The verdict for a trace whose earliest difference is a partition's, unexplained
/// there, at output line `when`, where the conversation's first difference comes later
/// and is named `conversation`: the form of [`unknown_producer_id_core_drains_nothing`].
pub(super) fn partition_first(
    java: &[String],
    core: &[String],
    when: usize,
    conversation: Verdict,
) -> Verdict {
    if conversation == Verdict::UnknownProducerIdAbortsTransaction
        && unknown_producer_id_core_drains_nothing(java, core, when)
    {
        conversation
    } else {
        Verdict::Unexplained
    }
}

/// A stamp "p:pid:epoch:seq:count" split into its head (partition, identity, base
/// sequence) and its record count.
fn stamp_parts(stamp: &str) -> Option<(&str, i64)> {
    let (head, n) = stamp.rsplit_once(':')?;
    Some((head, n.parse().ok()?))
}

/// Whether the batch `stamp` may be in the log by the lines `before`: an answer to it
/// with a code after which the broker may have appended it, or a request carrying it
/// on a connection that closed before the batch was answered.
fn possibly_written_before(before: &[String], stamp: &str) -> bool {
    let carries = |l: &str| {
        field(l, "batches")
            .unwrap_or_default()
            .split(',')
            .any(|b| b == stamp || b.split_once('=').is_some_and(|(s, _)| s == stamp))
    };
    let answered_so = before.iter().any(|l| {
        field(l, "ev") == Some("answered")
            && field(l, "batches").unwrap_or_default().split(',').any(|b| {
                b.split_once('=')
                    .is_some_and(|(s, e)| s == stamp && super::possibly_written(e))
            })
    });
    let lost_with_connection = before.iter().enumerate().any(|(k, l)| {
        produce(l)
            && carries(l)
            && before[k + 1..]
                .iter()
                .take_while(|m| !(field(m, "ev") == Some("answered") && carries(m)))
                .any(|m| {
                    field(m, "ev") == Some("disconnected") && field(m, "node") == field(l, "node")
                })
    });
    answered_so || lost_with_connection
}

/// The answer the core's line `at` follows, for departure 2 ending a transaction: the
/// outputs are the same up to line `at - 1`, a Produce answer that failed batches of more
/// than one record with MESSAGE_TOO_LARGE, each of which may be in the log by the lines
/// before ([`possibly_written_before`]), so the core fails it rather than split it (and
/// its transaction turns abortable); Java
/// splits it (`Sender.completeBatch`, `RecordAccumulator.splitAndReenqueue`) and sends
/// its first piece again, under the same identity and base sequence with at most its
/// records.
pub(super) fn core_fails_unsplit_possibly_written(
    java_out: &[String],
    core_out: &[String],
    at: usize,
) -> bool {
    if at == 0 || java_out.get(..at) != core_out.get(..at) {
        return false;
    }
    let answer = &core_out[at - 1];
    if field(answer, "ev") != Some("answered") {
        return false;
    }
    let too_large: Vec<&str> = field(answer, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.strip_suffix("=MESSAGE_TOO_LARGE"))
        .collect();
    let java_resends_piece = |head: &str, count: i64| {
        java_out[at..].iter().any(|l| {
            produce(l)
                && field(l, "batches")
                    .unwrap_or_default()
                    .split(',')
                    .any(|b| stamp_parts(b).is_some_and(|(h, n)| h == head && n <= count))
        })
    };
    !too_large.is_empty()
        && too_large.iter().all(|stamp| {
            stamp_parts(stamp).is_some_and(|(head, count)| {
                count > 1
                    && possibly_written_before(&core_out[..at - 1], stamp)
                    && java_resends_piece(head, count)
            })
        })
}

/// [`Verdict::NoRenumberOfPossiblyWritten`] ending a transaction with no commit
/// pending: the core's first difference (history index `i`) is, right after the answer
/// [`core_fails_unsplit_possibly_written`] describes, a send it refuses and Java never
/// refuses, or the commit call it refuses where Java accepts it (the core's transaction
/// is abortable, Java's goes on with the split batch); and the core fails records with
/// MESSAGE_TOO_LARGE (10).
pub(super) fn core_never_splits_refusing(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    let refused_send = field(c, "ev") == Some("send_refused") && !java_out.iter().any(|l| l == c);
    let refused_commit = c == COMMIT_REFUSED && java.get(i).is_some_and(|&(_, l)| l == COMMIT_OK);
    (refused_send || refused_commit)
        && fails_record_with(core_out, "err:10")
        && core_fails_unsplit_possibly_written(java_out, core_out, at)
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`], the third form (Java never gets to
/// resend: `txn_refusals::unknown_producer_id_refused_while_java_holds`) where the
/// core's first difference (history index `i`) is the commit call it refuses and Java
/// accepts, not a send: the last Produce answer before it failed batches with
/// UNKNOWN_PRODUCER_ID, Java got the same answer and kept them to retry
/// (`TransactionManager.canRetry`), but sent nothing of their partitions again (its
/// Sender held by the transactional request out) and failed no record with
/// UNKNOWN_PRODUCER_ID, where the core made its transaction abortable; and Java's
/// commit does not succeed (the next operation Java completes from `i` on is not a
/// successful commit: the transaction ends before the retry goes out).
pub(super) fn unknown_producer_id_commit_refused_while_java_holds(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, c)) = core.get(i) else {
        return false;
    };
    let java_accepts = java.get(i).is_some_and(|&(_, l)| l == COMMIT_OK);
    if c != COMMIT_REFUSED || !java_accepts {
        return false;
    }
    let java_commits = java[i..]
        .iter()
        .find(|&&(_, l)| field(l, "ev") == Some("txn_done"))
        .is_some_and(|&(_, l)| l == COMMIT_DONE_OK);
    !java_commits && java_holds_unknown_producer_id_batches(java_out, core_out, at)
}

/// [`Verdict::UnknownProducerIdAbortsTransaction`] where the application aborts: at the
/// first difference (history index `i`) the core sends the abort's EndTxn and Java does
/// not. The core's line before it is the abort call both accepted; the last Produce
/// answer before that call that failed a batch failed batches with UNKNOWN_PRODUCER_ID,
/// and Java sends each of them again with the same stamp after it
/// (`TransactionManager.canRetry`). The core had made its transaction abortable and
/// failed those batches, so nothing holds its EndTxn; Java's waits until its resent
/// batches complete (`TransactionManager.nextRequest` holds an EndTxn while batches are
/// incomplete), and Java sends that same EndTxn later (its history from `i` on holds
/// it).
pub(super) fn unknown_producer_id_core_ends_abort_at_once(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let end_abort = |l: &str| field(l, "api") == Some("end_txn") && field(l, "commit") == Some("0");
    let Some(&(_, c)) = core.get(i) else {
        return false;
    };
    if i == 0 || core[i - 1].1 != ABORT_OK || !end_abort(c) {
        return false;
    }
    if java.get(i).is_some_and(|&(_, l)| end_abort(l)) {
        return false;
    }
    let called = core[i - 1].0;
    let Some(answer) = last_failing_answer(&core_out[..called]) else {
        return false;
    };
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java_out[..called].iter().rposition(|l| l == answer) else {
        return false;
    };
    let resent = failed
        .iter()
        .all(|stamp| sends_stamp(&java_out[answered + 1..], stamp));
    let java_ends_later = java[i..].iter().any(|&(_, l)| l == c);
    !failed.is_empty() && resent && java_ends_later
}

/// [`Verdict::CoreExpiresWhileCoordinatorRequestOut`] where the trace's only
/// differences are on partitions and the earliest is at output line `when`: the two
/// outputs are the same up to `when`, where Java sends a Produce request and the core
/// sends none, and the line before `when` is a coordinator's answer (Java's Sender was
/// held by a transactional request until then: `Sender.runOnce` skips
/// `sendProducerData`, where Java checks expiry). Since the transaction began (the
/// last `begin` accepted before `when`) every Produce answer and every coordinator
/// answer carried only errors both sides retry, so the core's transaction can have
/// turned abortable only by an expiry: the core fails records with REQUEST_TIMED_OUT
/// (7), and from `when` on sends no Produce request until a new transaction begins (an
/// abortable transaction drains nothing). Java drains once its request is answered,
/// then expires the batches past `delivery.timeout.ms` (`Sender.sendProducerData`
/// expires after draining), so it fails records with 7 too.
pub(super) fn core_expired_drains_nothing(java: &[String], core: &[String], when: usize) -> bool {
    if when == 0
        || java.get(..when) != core.get(..when)
        || !java.get(when).is_some_and(|l| produce(l))
    {
        return false;
    }
    if core.get(when).is_some_and(|l| produce(l)) {
        return false;
    }
    if field(&core[when - 1], "ev") != Some("coord_answered") {
        return false;
    }
    let Some(began) = core[..when].iter().rposition(|l| l == BEGIN_OK) else {
        return false;
    };
    let only_retried = core[began..when].iter().all(|l| match field(l, "ev") {
        Some("answered") => produce_retriable(l),
        Some("coord_answered") => coordinator_retriable(l),
        _ => true,
    });
    let drains_nothing = core[when..]
        .iter()
        .take_while(|l| *l != BEGIN_OK)
        .all(|l| !produce(l));
    only_retried
        && drains_nothing
        && fails_record_with(core, "err:7")
        && fails_record_with(java, "err:7")
}
