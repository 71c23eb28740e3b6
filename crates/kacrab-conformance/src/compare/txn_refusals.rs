//! Detectors for a send the core refuses where Java accepts it: the core's transaction
//! has become abortable (or failed) and Java's has not yet (docs/design.md,
//! "Transactional traces").

use super::field;
use super::txn::same;
use crate::core_side::error_by_name;

const BEGIN_OK: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
const COMMIT_OK: &str = r#"{"ev":"txn_call","call":"commit","result":"ok"}"#;
const COMMIT_REFUSED: &str = r#"{"ev":"txn_call","call":"commit","result":"refused"}"#;
const FOUND: &str = r#"{"ev":"coord_answered","api":"find_coordinator","error":"NONE"}"#;

fn refused_send(line: &str) -> bool {
    field(line, "ev") == Some("send_refused")
}

fn request(line: &str) -> bool {
    field(line, "ev") == Some("txn")
}

fn add_partitions(line: &str) -> bool {
    request(line) && field(line, "api") == Some("add_partitions")
}

/// Whether every error the coordinator's answer line names is one Java and the core
/// both retry (an answer with no error names NONE).
fn coordinator_retriable(line: &str) -> bool {
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
fn produce_retriable(line: &str) -> bool {
    field(line, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.split_once('=').map(|(_, e)| e))
        .all(|e| {
            matches!(e, "NONE" | "DUPLICATE_SEQUENCE_NUMBER") || error_by_name(e).is_retriable()
        })
}

/// [`Verdict::CoreExpiresWhileCoordinatorRequestOut`](super::Verdict), the form with no
/// commit pending: at the first difference `i` the core refuses a send (record `r`), its
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
///   answer before `i` carried only errors both sides retry;
/// * Java's Sender had a transactional request out then: the last transactional request
///   both sides sent before `i` is unanswered, or it is a coordinator lookup answered
///   NONE on the line just before `i` and Java's line at `i` is the AddPartitionsToTxn
///   that waited for it (sent before `sendProducerData` could run);
/// * from `i` on, Java writes the core's lines once the core's refusals of sends Java
///   never refuses are set aside, up to a line where Java shows that its transaction is
///   not abortable where the core's is: Java sends an AddPartitionsToTxn (the core, in
///   an abortable transaction, sends only lookups) or accepts a commit the core refuses;
///   or to the end of both histories.
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
    if !refused_send(c) {
        return false;
    }
    let Some(r) = field(c, "rec").and_then(|r| r.parse::<usize>().ok()) else {
        return false;
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
        .all(|l| produce_retriable(l));
    let coordinator_retried = core[began..i]
        .iter()
        .filter(|&&(_, l)| field(l, "ev") == Some("coord_answered"))
        .all(|&(_, l)| coordinator_retriable(l));
    if !(expired_before && produce_retried && coordinator_retried) {
        return false;
    }
    // Java's Sender had a transactional request out.
    let Some(last) = core[..i].iter().rposition(|&(_, l)| request(l)) else {
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
    match (java_rest.get(d), core_rest.get(d)) {
        (Some(j), _) if add_partitions(j) => true,
        (Some(&j), Some(&c)) => j == COMMIT_OK && c == COMMIT_REFUSED,
        (None, None) => true,
        _ => false,
    }
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
    let Some(answer) = core_out[..at]
        .iter()
        .rev()
        .find(|l| field(l, "ev") == Some("answered"))
    else {
        return false;
    };
    let failed: Vec<&str> = field(answer, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.strip_suffix("=UNKNOWN_PRODUCER_ID"))
        .collect();
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
