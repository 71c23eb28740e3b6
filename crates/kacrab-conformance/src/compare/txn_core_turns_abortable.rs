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
//!   refuses and Java accepts.

use super::lines::{last_failing_answer, sends_stamp, unknown_producer_id_stamps};
use super::lines::{COMMIT_OK, COMMIT_REFUSED};
use super::{field, Verdict};

fn produce(line: &str) -> bool {
    field(line, "ev") == Some("produce")
}

/// Whether some record of `out` completes with `result` (`err:<code>`).
fn fails_record_with(out: &[String], result: &str) -> bool {
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
