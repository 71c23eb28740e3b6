//! `UnknownProducerIdAbortsTransaction` in its general form: from the answer on, the two
//! producers are in different states, and every later difference is its consequence.

use super::lines::{last_failing_answer_before, sends_stamp, unknown_producer_id_stamps, BEGIN_OK};
use super::{field, txn};
use crate::trace::{Op, Trace};

/// [`super::Verdict::UnknownProducerIdAbortsTransaction`], wherever the first difference
/// falls: a Produce answer fails batches of the open transaction with
/// UNKNOWN_PRODUCER_ID; Java keeps them to retry (`TransactionManager.canRetry`: no
/// acknowledged offset at or above the log start, so it restarts the partition's
/// sequences) and the core makes the transaction abortable (docs/design.md,
/// "Simplification, as built"). From that answer on, Java's transaction is open and the
/// core's is abortable, so what either does next (a commit that fails or succeeds, an
/// AddPartitionsToTxn retried or dropped, sends accepted or refused, batches drained or
/// not) follows from that state, not from a rule of its own. Exact:
/// * the two outputs are the same, line for line (a failed completion naming no code in
///   Java, as in [`txn::same`]), up to their first difference, which comes after the
///   answer;
/// * that answer is the last Produce answer before the difference that failed a batch
///   in the core (a batch the core sends again with the same stamp, anywhere later, was
///   retried, not failed), and the first since the transaction began: before it, the
///   core's transaction was open;
/// * every batch it failed, it failed with UNKNOWN_PRODUCER_ID, and Java fails no record
///   with UNKNOWN_PRODUCER_ID: it kept them, and sends each again with the same stamp
///   after the answer, or a coordinator answer fatal to Java's handler comes first (and
///   the batches end with its error), Java sending none of their partitions' batches
///   in between;
/// * at the first difference the core does not send where Java does something: its line
///   there is no request (a refused send or call, a failed commit, an outcome, the end
///   of its output), which is what an abortable transaction differs by;
/// * the core keeps to its abortable state: until it begins another transaction, every
///   batch it sends after the answer is one it had sent before, with the same stamp
///   (an abortable transaction drains no new batch);
/// * Java keeps to its inputs: every failed completion in Java's output names no code
///   (-1) or a code some answer in it carried (PRODUCER_FENCED also where
///   INVALID_PRODUCER_EPOCH came, which Java's handlers turn into it), or
///   TRANSACTION_ABORTABLE, REQUEST_TIMED_OUT (a batch or request that expired); its
///   coordinator answers are, in order, ones the trace scripts ([`follows_script`]); and
///   it asks to add only partitions the trace sends records to.
pub(super) fn java_retries_what_the_core_failed(
    trace: &Trace,
    java: &[String],
    core: &[String],
) -> bool {
    let Some(d) = (0..java.len().max(core.len())).find(|&k| match (java.get(k), core.get(k)) {
        (Some(j), Some(c)) => !txn::same(j, c),
        _ => true,
    }) else {
        return false;
    };
    let Some(answer) = last_failing_answer_before(core, d) else {
        return false;
    };
    let Some(at) = core[..d].iter().rposition(|l| l == answer) else {
        return false;
    };
    let begun = core[..at].iter().rposition(|l| l == BEGIN_OK);
    let Some(begun) = begun else {
        return false;
    };
    // The first failing answer of the transaction: none between its begin and `at`.
    let earlier = core[begun..at].iter().enumerate().any(|(k, l)| {
        field(l, "ev") == Some("answered")
            && field(l, "batches")
                .unwrap_or_default()
                .split(',')
                .filter(|b| !b.ends_with("=NONE"))
                .any(|b| {
                    let stamp = b.rsplit_once('=').map_or(b, |(s, _)| s);
                    !sends_stamp(&core[begun + k + 1..], stamp)
                })
    });
    let failed = unknown_producer_id_stamps(answer);
    let only_unknown_producer_id = field(answer, "batches")
        .unwrap_or_default()
        .split(',')
        .filter(|b| !b.ends_with("=NONE"))
        .all(|b| {
            b.ends_with("=UNKNOWN_PRODUCER_ID") || {
                let stamp = b.rsplit_once('=').map_or(b, |(s, _)| s);
                sends_stamp(&core[at + 1..], stamp)
            }
        });
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
    let core_holds_back = core
        .get(d)
        .is_none_or(|l| !matches!(field(l, "ev"), Some("produce" | "txn")));
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
    let java_codes_brought = java.iter().all(|l| {
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
    });
    let java_failed_none = !java
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:59"));
    !earlier
        && !failed.is_empty()
        && only_unknown_producer_id
        && java_kept
        && java_failed_none
        && core_holds_back
        && core_sends_no_new_batch
        && java_codes_brought
        && follows_script(trace, java)
        && asks_only_sent_partitions(trace, java)
}

/// Whether the coordinator answers in `out` are, in order, answers the trace scripts:
/// each `coord_answered` line is the next `coord` operation's (one with nothing
/// outstanding is skipped), an AddPartitionsToTxn answer giving the operation's
/// partition its own error and every other partition the operation's error; or NONE,
/// which the harnesses answer everything with once the trace ends.
pub(super) fn follows_script(trace: &Trace, out: &[String]) -> bool {
    let mut ops = trace.ops.iter().filter_map(|op| match op {
        Op::Coord { error, p } => Some((error.as_str(), p.as_ref())),
        _ => None,
    });
    out.iter()
        .filter(|l| field(l, "ev") == Some("coord_answered"))
        .all(|l| {
            let add_partitions = field(l, "api") == Some("add_partitions");
            let answered = field(l, "error").unwrap_or_default();
            let drained = answered
                .split(',')
                .all(|e| e == "NONE" || e.ends_with("=NONE"));
            drained
                || ops.any(|(error, p)| {
                    if !add_partitions {
                        return answered == error;
                    }
                    answered.split(',').all(|entry| {
                        entry.split_once('=').is_some_and(|(part, code)| {
                            let own = p.filter(|(q, _)| q.to_string() == part);
                            code == own.map_or(error, |(_, perr)| perr.as_str())
                        })
                    })
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
