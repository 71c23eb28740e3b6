//! The departures after which the two producers are in different transactional states:
//! one Produce answer fails batches in the core, whose transaction turns abortable, where
//! Java keeps them and its transaction goes on. From that answer on, every difference is
//! the consequence of that state, so the trace is checked at the premise, and for each
//! side keeping to its own state and inputs after it.

use super::lines::{last_failing_answer_before, sends_stamp, unknown_producer_id_stamps, BEGIN_OK};
use super::{field, txn, Verdict};
use crate::trace::{Op, Trace};

/// The verdict of a trace whose first difference follows a Produce answer that made the
/// core's transaction abortable and left Java's open:
/// * [`Verdict::UnknownProducerIdAbortsTransaction`]: the answer failed batches with
///   UNKNOWN_PRODUCER_ID; Java keeps them to retry (`TransactionManager.canRetry`: no
///   acknowledged offset at or above the log start, so it restarts the partition's
///   sequences), the core makes the transaction abortable (docs/design.md,
///   "Simplification, as built"); Java fails no record with UNKNOWN_PRODUCER_ID, and
///   sends each of those batches again with the same stamp after the answer, or a
///   coordinator answer fatal to Java's handler comes first (the batches end with its
///   error), Java sending none of their partitions' batches in between;
/// * [`Verdict::NoRenumberOfPossiblyWritten`] (departure 2): the answer failed batches of
///   more than one record with MESSAGE_TOO_LARGE that may be in the log; the core fails
///   them rather than split them, Java splits them and sends the first piece again
///   (`txn_core_turns_abortable::core_fails_unsplit_possibly_written`).
///
/// From that answer on Java's transaction is open and the core's is abortable, so what
/// either does next (a commit that fails or succeeds, an AddPartitionsToTxn retried or
/// dropped, sends accepted or refused, batches drained or not) follows from that state,
/// not from a rule of its own. Exact, besides the premise:
/// * the two outputs are the same, line for line (a failed completion naming no code in
///   Java, as in [`txn::same`]), up to their first difference, which comes after the
///   answer;
/// * that answer is the last Produce answer before the difference that failed a batch
///   in the core (a batch the core sends again with the same stamp, anywhere later, was
///   retried, not failed), and the first since the transaction began: before it, the
///   core's transaction was open; every batch it failed, it failed with the premise's
///   error;
/// * at the first difference the core does not send where Java does something: its line
///   there is no transactional request and no new batch (a refused send or call, a
///   failed commit, an outcome, a batch it had sent before sent again, the end of its
///   output), which is what an abortable transaction differs by;
/// * the core keeps to its abortable state: until it begins another transaction, every
///   batch it sends after the answer is one it had sent before, with the same stamp
///   (an abortable transaction drains no new batch);
/// * Java keeps to its inputs: every failed completion in Java's output names no code
///   (-1) or a code some answer in it carried (PRODUCER_FENCED also where
///   INVALID_PRODUCER_EPOCH came, which Java's handlers turn into it), or
///   TRANSACTION_ABORTABLE, REQUEST_TIMED_OUT (a batch or request that expired); its
///   coordinator answers are, in order, ones the trace scripts ([`follows_script`]); and
///   it asks to add only partitions the trace sends records to.
pub(super) fn core_abortable_where_java_keeps(
    trace: &Trace,
    java: &[String],
    core: &[String],
) -> Option<Verdict> {
    let d = (0..java.len().max(core.len())).find(|&k| match (java.get(k), core.get(k)) {
        (Some(j), Some(c)) => !txn::same(j, c),
        _ => true,
    })?;
    let answer = last_failing_answer_before(core, d)?;
    let at = core[..d].iter().rposition(|l| l == answer)?;
    let begun = core[..at].iter().rposition(|l| l == BEGIN_OK)?;
    // The stamps an answer line failed in the core, with their errors.
    let failed_by = |k: usize, line: &str| -> Vec<(String, String)> {
        if field(line, "ev") != Some("answered") {
            return Vec::new();
        }
        field(line, "batches")
            .unwrap_or_default()
            .split(',')
            .filter(|b| !b.ends_with("=NONE"))
            .filter_map(|b| b.rsplit_once('='))
            .filter(|(stamp, _)| !sends_stamp(&core[k + 1..], stamp))
            .map(|(s, e)| (s.to_string(), e.to_string()))
            .collect()
    };
    // The first failing answer of the transaction: none between its begin and `at`.
    let earlier = (begun..at).any(|k| !failed_by(k, &core[k]).is_empty());
    let failed = failed_by(at, answer);
    if earlier || failed.is_empty() {
        return None;
    }
    let verdict = if failed.iter().all(|(_, e)| e == "UNKNOWN_PRODUCER_ID") {
        java_keeps_unknown_producer_id_batches(java, at, answer)
            .then_some(Verdict::UnknownProducerIdAbortsTransaction)?
    } else if failed.iter().all(|(_, e)| e == "MESSAGE_TOO_LARGE") {
        super::txn_core_turns_abortable::core_fails_unsplit_possibly_written(java, core, at + 1)
            .then_some(Verdict::NoRenumberOfPossiblyWritten)?
    } else {
        return None;
    };
    let core_holds_back = core.get(d).is_none_or(|l| match field(l, "ev") {
        Some("txn") => false,
        Some("produce") => field(l, "batches")
            .unwrap_or_default()
            .split(',')
            .all(|b| sends_stamp(&core[..at], b)),
        _ => true,
    });
    let next_begin = core[at..]
        .iter()
        .position(|l| l == BEGIN_OK)
        .map_or(core.len(), |k| at + k);
    let core_sends_no_new_batch = core[at + 1..next_begin].iter().all(|l| {
        field(l, "ev") != Some("produce")
            || field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .all(|b| sends_stamp(&core[..at], b))
    });
    (core_holds_back
        && core_sends_no_new_batch
        && java_codes_brought(java)
        && follows_script(trace, java)
        && asks_only_sent_partitions(trace, java))
    .then_some(verdict)
}

/// The UNKNOWN_PRODUCER_ID premise of [`core_abortable_where_java_keeps`]: Java fails no
/// record with UNKNOWN_PRODUCER_ID, and sends each batch `answer` (the core's line `at`)
/// failed with it again after it, or a coordinator answer fatal to Java's handler comes
/// first, Java sending none of those batches' partitions' batches in between.
fn java_keeps_unknown_producer_id_batches(java: &[String], at: usize, answer: &str) -> bool {
    let failed = unknown_producer_id_stamps(answer);
    let partition = |stamp: &str| stamp.split(':').next().map(str::to_string);
    let sends_partition = |line: &String, p: &Option<String>| {
        field(line, "ev") == Some("produce")
            && field(line, "batches")
                .unwrap_or_default()
                .split(',')
                .any(|b| Some(b.split(':').next().unwrap_or_default().to_string()) == *p)
    };
    let fatal = java[at + 1..]
        .iter()
        .position(|l| super::txn_commit2::fatal_coordinator_error(l).is_some());
    let java_kept = failed.iter().all(|s| {
        sends_stamp(&java[at + 1..], s)
            || fatal.is_some_and(|f| {
                let p = partition(s);
                !java[at + 1..at + 1 + f]
                    .iter()
                    .any(|l| sends_partition(l, &p))
            })
    });
    let java_failed_none = !java
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:59"));
    java_kept && java_failed_none
}

/// Whether every failed completion in Java's output names no code (-1), a code some
/// answer in it carried (PRODUCER_FENCED also where INVALID_PRODUCER_EPOCH came), or
/// TRANSACTION_ABORTABLE or REQUEST_TIMED_OUT.
fn java_codes_brought(java: &[String]) -> bool {
    java.iter().all(|l| {
        let Some(code) = (field(l, "ev") == Some("txn_done"))
            .then(|| field(l, "result").and_then(|r| r.strip_prefix("err:")))
            .flatten()
        else {
            return true;
        };
        let brought = |name: &str| {
            java.iter().any(|a| {
                matches!(field(a, "ev"), Some("answered" | "coord_answered"))
                    && (field(a, "batches")
                        .unwrap_or_default()
                        .contains(&format!("={name}"))
                        || field(a, "error").is_some_and(|e| {
                            e == name || e.split(',').any(|x| x.ends_with(&format!("={name}")))
                        }))
            })
        };
        let name = crate::core_side::error_by_name_of_code(code);
        matches!(code, "-1" | "7" | "120")
            || name.is_some_and(|n| {
                brought(n) || (n == "PRODUCER_FENCED" && brought("INVALID_PRODUCER_EPOCH"))
            })
    })
}

/// Whether the coordinator answers in `out` are, in order, answers the trace scripts:
/// each `coord_answered` line is the next `coord` operation's (one with nothing
/// outstanding waits for the next request, so none is skipped in the order, but a
/// harness may end before using them all), as [`Op::Coord`] gives it to the request's
/// API; or NONE, which the harnesses answer everything with once the trace ends.
pub(super) fn follows_script(trace: &Trace, out: &[String]) -> bool {
    let mut ops = trace.ops.iter().filter_map(|op| match op {
        Op::Coord { error, p, apis } => Some((error.as_str(), p.as_ref(), apis)),
        _ => None,
    });
    out.iter()
        .filter(|l| field(l, "ev") == Some("coord_answered"))
        .all(|l| {
            let answered = field(l, "error").unwrap_or_default();
            let drained = answered
                .split(',')
                .all(|e| e == "NONE" || e.ends_with("=NONE"));
            drained
                || ops.any(|(error, p, apis)| {
                    fn or<'a>(api: &'a Option<String>, error: &'a str) -> &'a str {
                        api.as_deref().unwrap_or(error)
                    }
                    let of = |api| or(api, error);
                    match field(l, "api") {
                        Some("find_coordinator") => answered == of(&apis.find),
                        Some("init") => answered == of(&apis.init),
                        Some("end_txn") => answered == of(&apis.end),
                        _ => {
                            let entries: Vec<(&str, &str)> = answered
                                .split(',')
                                .filter_map(|entry| entry.split_once('='))
                                .collect();
                            let named = p.filter(|(q, _)| {
                                entries.iter().any(|(part, _)| q.to_string() == *part)
                            });
                            entries.iter().all(|(part, code)| match named {
                                Some((q, perr)) if q.to_string() == *part => code == perr,
                                Some(_) => *code == of(&apis.rest),
                                None => *code == error,
                            })
                        }
                    }
                })
        })
}

/// Whether every partition an AddPartitionsToTxn in `out` names is one the trace sends
/// records to.
fn asks_only_sent_partitions(trace: &Trace, out: &[String]) -> bool {
    out.iter()
        .filter(|l| txn::is_add_partitions(l))
        .flat_map(|l| txn::parts(l))
        .all(|p| {
            trace
                .ops
                .iter()
                .any(|op| matches!(op, Op::Send { p: q, .. } if *q == p))
        })
}
