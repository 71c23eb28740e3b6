//! The output lines and line tests the transactional detectors share: an application
//! call's answer as both harnesses write it, and the few shapes of line every detector
//! reads (a failed commit, a refused send, a transactional request and its identity,
//! the batches a Produce answer failed with UNKNOWN_PRODUCER_ID).

use super::field;

/// `beginTransaction` accepted.
pub(super) const BEGIN_OK: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
/// `beginTransaction` refused.
pub(super) const BEGIN_REFUSED: &str = r#"{"ev":"txn_call","call":"begin","result":"refused"}"#;
/// `abortTransaction` accepted.
pub(super) const ABORT_OK: &str = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
/// `abortTransaction` refused.
pub(super) const ABORT_REFUSED: &str = r#"{"ev":"txn_call","call":"abort","result":"refused"}"#;
/// `commitTransaction` accepted.
pub(super) const COMMIT_OK: &str = r#"{"ev":"txn_call","call":"commit","result":"ok"}"#;
/// `commitTransaction` refused.
pub(super) const COMMIT_REFUSED: &str = r#"{"ev":"txn_call","call":"commit","result":"refused"}"#;
/// A commit completed successfully.
pub(super) const COMMIT_DONE_OK: &str = r#"{"ev":"txn_done","call":"commit","result":"ok"}"#;
/// A FindCoordinator answered NONE.
pub(super) const FOUND: &str = r#"{"ev":"coord_answered","api":"find_coordinator","error":"NONE"}"#;

/// The (partition, error name) entries of an AddPartitionsToTxn answer line.
pub(super) fn answer_entries(line: &str) -> Vec<(i32, &str)> {
    field(line, "error")
        .unwrap_or_default()
        .split(',')
        .filter_map(|e| {
            let (p, code) = e.split_once('=')?;
            Some((p.parse().ok()?, code))
        })
        .collect()
}

/// Whether `line` completes a commit with an error.
pub(super) fn failed_commit(line: &str) -> bool {
    field(line, "ev") == Some("txn_done")
        && field(line, "call") == Some("commit")
        && field(line, "result").is_some_and(|r| r.starts_with("err:"))
}

/// Whether `line` is a send the harness refused.
pub(super) fn refused_send(line: &str) -> bool {
    field(line, "ev") == Some("send_refused")
}

/// Whether `line` is a transactional request.
pub(super) fn is_request(line: &str) -> bool {
    field(line, "ev") == Some("txn")
}

/// A request's producer id and epoch, as written.
pub(super) fn identity(line: &str) -> (Option<&str>, Option<&str>) {
    (field(line, "pid"), field(line, "epoch"))
}

/// The stamps ("partition:pid:epoch:seq:count") a Produce answer line failed with
/// UNKNOWN_PRODUCER_ID.
pub(super) fn unknown_producer_id_stamps(answer: &str) -> Vec<&str> {
    field(answer, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.strip_suffix("=UNKNOWN_PRODUCER_ID"))
        .collect()
}

/// The last Produce answer in `out` that failed a batch (answers after it failed none).
/// A batch answered with an error and sent again later in `out` with the same stamp was
/// retried, not failed: an answer whose every error is such a retry failed nothing
/// (and cannot have made the transaction abortable), so it is passed over, as is one
/// that only acknowledges ([`acknowledges`]).
pub(super) fn last_failing_answer(out: &[String]) -> Option<&String> {
    out.iter().enumerate().rev().find_map(|(k, l)| {
        let failed = field(l, "ev") == Some("answered")
            && field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .filter(|b| !acknowledges(b))
                .any(|b| {
                    let stamp = b.rsplit_once('=').map_or(b, |(s, _)| s);
                    !sends_stamp(&out[k + 1..], stamp)
                });
        failed.then_some(l)
    })
}

/// Whether a Produce answer's entry ("stamp=ERROR") acknowledges its batch: NONE, or
/// DUPLICATE_SEQUENCE_NUMBER (the batch is in the log already; Java's Sender completes
/// it as sent, `Sender.completeBatch`).
fn acknowledges(entry: &str) -> bool {
    entry.ends_with("=NONE") || entry.ends_with("=DUPLICATE_SEQUENCE_NUMBER")
}

/// [`last_failing_answer`] among the lines of `out` before `at`, where a batch counts as
/// retried when it is sent again anywhere later in `out`, also at or after `at`: a
/// batch answered with a retriable error and sent again with the same stamp after the
/// first difference was kept, not failed, as much as one sent again before it.
pub(super) fn last_failing_answer_before(out: &[String], at: usize) -> Option<&String> {
    out[..at].iter().enumerate().rev().find_map(|(k, l)| {
        let failed = field(l, "ev") == Some("answered")
            && field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .filter(|b| !acknowledges(b))
                .any(|b| {
                    let stamp = b.rsplit_once('=').map_or(b, |(s, _)| s);
                    !sends_stamp(&out[k + 1..], stamp)
                });
        failed.then_some(l)
    })
}

/// Whether a Produce request in `out` sends the batch stamped `stamp`
/// ("partition:pid:epoch:seq:count") again.
pub(super) fn sends_stamp(out: &[String], stamp: &str) -> bool {
    out.iter().any(|l| {
        field(l, "ev") == Some("produce")
            && field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .any(|b| b == stamp)
    })
}

/// Java's and the core's lines at `i` where both are an AddPartitionsToTxn under the same
/// producer id and epoch.
pub(super) fn add_partitions_pair<'a>(
    java: &[(usize, &'a str)],
    core: &[(usize, &'a str)],
    i: usize,
) -> Option<(&'a str, &'a str)> {
    let (&(_, j), &(_, c)) = (java.get(i)?, core.get(i)?);
    (super::txn::is_add_partitions(j)
        && super::txn::is_add_partitions(c)
        && identity(j) == identity(c))
    .then_some((j, c))
}

/// Whether the last Produce answer that failed a batch in `core_out[..at]` came at or
/// after the core's output line `since`, failed batches with UNKNOWN_PRODUCER_ID, and Java
/// got the same answer, sends each of those stamps again after it (it kept the batches to
/// retry: `TransactionManager.canRetry`) and fails no record with UNKNOWN_PRODUCER_ID.
pub(super) fn java_resends_unknown_producer_id_batches(
    java_out: &[String],
    core_out: &[String],
    at: usize,
    since: usize,
) -> bool {
    let Some(answer) = last_failing_answer(&core_out[..at]) else {
        return false;
    };
    if core_out[..at].iter().rposition(|l| l == answer) < Some(since) {
        return false;
    }
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java_out.iter().position(|l| l == answer) else {
        return false;
    };
    let java_failed_none = !java_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:59"));
    !failed.is_empty()
        && failed
            .iter()
            .all(|s| sends_stamp(&java_out[answered + 1..], s))
        && java_failed_none
}
