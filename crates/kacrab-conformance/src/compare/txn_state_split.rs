//! The departures after which the two producers are in different transactional states:
//! one Produce answer fails batches in the core, whose transaction turns abortable, where
//! Java keeps them and its transaction goes on, or where both fail them during a commit
//! that the core fails at once and Java holds. From that answer on, every difference is
//! the consequence of that state, so the trace is checked at the premise, and for each
//! side keeping to its own state and inputs after it.

use super::lines::{last_failing_answer_before, sends_stamp, unknown_producer_id_stamps, BEGIN_OK};
use super::{field, txn, Verdict};
use crate::core_side::CoreExtra;
use crate::trace::{Op, Trace};

/// The verdict of a trace whose first difference follows a Produce answer that made the
/// core's transaction abortable and left Java's open or its commit pending:
/// * [`Verdict::UnknownProducerIdAbortsTransaction`]: the answer failed batches with
///   UNKNOWN_PRODUCER_ID; Java keeps them to retry (`TransactionManager.canRetry`: no
///   acknowledged offset at or above the log start, so it restarts the partition's
///   sequences), the core makes the transaction abortable (docs/design.md,
///   "Simplification, as built"); Java fails no record with UNKNOWN_PRODUCER_ID, and
///   sends each of those batches again after the answer, with the same stamp or the
///   one its sequence restart gives it ([`restarted_stamp`]), or a
///   coordinator answer fatal to Java's handler comes first (the batches end with its
///   error), Java sending none of their partitions' batches in between;
/// * [`Verdict::NoRenumberOfPossiblyWritten`] (departure 2): the answer failed batches of
///   more than one record with MESSAGE_TOO_LARGE that may be in the log; the core fails
///   them rather than split them, Java splits them and sends the first piece again
///   (`txn_core_turns_abortable::core_fails_unsplit_possibly_written`);
/// * [`Verdict::CommitFailsBeforeBatchesSettle`]: both fail the batches, during a commit;
///   the core fails the commit at once, Java holds it until no batch is incomplete
///   ([`commit_fails_where_java_holds`]). Java's transaction is abortable too, but its
///   pending commit refuses the application's abort and begin, which the core, its
///   commit failed, takes.
///
/// From that answer on Java's transaction is open and the core's is abortable, so what
/// either does next (a commit that fails or succeeds, an AddPartitionsToTxn retried or
/// dropped, sends accepted or refused, batches drained or not) follows from that state,
/// not from a rule of its own. Exact, besides the premise:
/// * the two outputs are the same, line for line (a failed completion naming no code in
///   Java, as in [`txn::same`]), up to their first difference, which comes after the
///   answer;
/// * that answer is the last Produce answer before the difference that failed a batch
///   in the core (a batch the core sends again with the same stamp, or split, anywhere
///   later, was retried, not failed), and the first since the transaction began: before it, the
///   core's transaction was open; every batch it failed, it failed with the premise's
///   error;
/// * at the first difference the core does not send where Java does something: its line
///   there is no new batch and no transactional request but the end of an abort the
///   application called (its EndTxn(ABORT), or the TV1 epoch bump), which is what an
///   abortable transaction differs by (a refused send or call, a failed commit, an
///   outcome, a batch it had sent before sent again, the end of its output);
/// * both outputs hold together on their own (`consistency::holds_together`: one
///   outcome per record, answers only to batches on the wire, granted identities,
///   gap-free sequences, offsets handed out once, EndTxn after its call, one
///   transactional request at a time), and the core delivers each partition's records
///   at offsets rising in send order;
/// * the core's failed records name what failed them: its expiry (7), the event's
///   answer or a later one that failed a batch in the core (not sent again, nor split),
///   a coordinator answer's code, or none (-1);
/// * the core keeps to its abortable state ([`core_keeps_abortable`]): until it begins
///   another transaction it sends only batches still unsettled, with their stamps (an
///   abortable transaction drains no new batch), completes no commit, takes no begin
///   before its abort completes, and sends no transactional request but lookups and the
///   end of the abort;
/// * Java's exceptions, if any, are its known bookkeeping failures, each on a partition
///   whose entry it dropped with a batch unsettled (`java_tracking`);
/// * Java keeps to its inputs: every failed completion and failed record in Java's
///   output names no code (-1) or a code some answer in it carried (PRODUCER_FENCED also
///   where INVALID_PRODUCER_EPOCH came, which Java's handlers turn into it), or
///   TRANSACTION_ABORTABLE, REQUEST_TIMED_OUT (a batch or request that expired); each
///   EndTxn it sends follows the application's call of its kind; each record it
///   delivers is on a partition a Produce answer acknowledged; its
///   coordinator answers are, in order, ones the trace scripts ([`follows_script`]); and
///   it asks to add only partitions the trace sends records to.
pub(super) fn core_abortable_where_java_keeps(
    trace: &Trace,
    java: &[String],
    core: &[String],
    extra: &CoreExtra,
) -> Option<Verdict> {
    let d = (0..java.len().max(core.len())).find(|&k| match (java.get(k), core.get(k)) {
        (Some(j), Some(c)) => !txn::same(j, c),
        _ => true,
    })?;
    // The stamps an answer line failed in the core, with their errors
    // (DUPLICATE_SEQUENCE_NUMBER acknowledges: the batch is in the log already).
    let failed_by = |k: usize, line: &str| -> Vec<(String, String)> {
        if field(line, "ev") != Some("answered") {
            return Vec::new();
        }
        field(line, "batches")
            .unwrap_or_default()
            .split(',')
            .filter(|b| !b.ends_with("=NONE") && !b.ends_with("=DUPLICATE_SEQUENCE_NUMBER"))
            .filter_map(|b| b.rsplit_once('='))
            .filter(|(stamp, _)| !sends_again(&core[k + 1..], stamp))
            .map(|(s, e)| (s.to_string(), e.to_string()))
            .collect()
    };
    let fails_between =
        |from: usize, to: usize| (from..to).any(|k| !failed_by(k, &core[k]).is_empty());
    let expiry = extra.first_expiry.filter(|e| e.line <= d);
    let expired_between =
        |from: usize, to: usize| expiry.is_some_and(|e| from < e.line && e.line <= to);
    // Where the states split: the core's output before `split` is what both shared.
    let (split, verdict) = if let Some(e) = expiry.filter(|e| e.txn_request_out && e.line > 0) {
        // The core expired a batch by `delivery.timeout.ms` while a transactional
        // request was on the wire, with no batch failed before it in the transaction:
        // Java checks expiry only in `Sender.sendProducerData`, which `runOnce` skips
        // while a transactional request is in flight, so it expired nothing then.
        let begun = core[..e.line].iter().rposition(|l| l == BEGIN_OK)?;
        // A batch the core did not send again after its answer because it expired
        // first is not failed by the answer: Java, whose output is the same up to here,
        // sends it again.
        let failed_before = (begun..e.line).any(|k| {
            failed_by(k, &core[k])
                .iter()
                .any(|(stamp, _)| !sends_again(&java[k + 1..], stamp))
        });
        if failed_before {
            return None;
        }
        (e.line, Verdict::CoreExpiresWhileCoordinatorRequestOut)
    } else {
        let answer = last_failing_answer_before(core, d)?;
        let at = core[..d].iter().rposition(|l| l == answer)?;
        let begun = core[..at].iter().rposition(|l| l == BEGIN_OK)?;
        // The first failure of the transaction: no failing answer or expiry since its
        // begin.
        let failed = failed_by(at, answer);
        if fails_between(begun, at) || expired_between(begun, at + 1) || failed.is_empty() {
            return None;
        }
        let all_failed_with = |code: &str| failed.iter().all(|(_, e)| e == code);
        let verdict = if all_failed_with("UNKNOWN_PRODUCER_ID")
            && java_keeps_unknown_producer_id_batches(java, at, answer)
        {
            Verdict::UnknownProducerIdAbortsTransaction
        } else if all_failed_with("MESSAGE_TOO_LARGE")
            && super::txn_core_turns_abortable::core_fails_unsplit_possibly_written(
                java,
                core,
                at + 1,
            )
        {
            Verdict::NoRenumberOfPossiblyWritten
        } else if commit_fails_where_java_holds(java, core, at, &failed) {
            Verdict::CommitFailsBeforeBatchesSettle
        } else {
            return None;
        };
        (at + 1, verdict)
    };
    let at = split - 1;
    // The application's abort, taken by both: the abortable core ends it (EndTxn(ABORT),
    // or the TV1 epoch bump) where Java, not abortable, goes on first.
    let aborted = core[..d].iter().rposition(|l| l == super::lines::ABORT_OK)
        > core[..d].iter().rposition(|l| l == BEGIN_OK);
    let ends_abort = |l: &str| {
        (field(l, "api") == Some("end_txn") && field(l, "commit") == Some("0"))
            || (field(l, "api") == Some("init") && field(l, "pid") != Some("-1"))
    };
    let core_holds_back = core.get(d).is_none_or(|l| match field(l, "ev") {
        Some("txn") => aborted && ends_abort(l),
        Some("produce") => field(l, "batches")
            .unwrap_or_default()
            .split(',')
            .all(|b| sends_stamp(&core[..split], b)),
        _ => true,
    });
    // Java's Sender may lose a batch in its own bookkeeping on the way (a tracking
    // failure on a partition whose entry it dropped, `java_tracking`); any other
    // exception is not explained.
    let exceptions_known = java_exceptions_known(java);
    // The core's failed records name what failed them: an expiry (7), the event's answer
    // or a later one that failed a batch in the core (not sent again, nor split; none
    // failed before the event), a coordinator answer's code, or none (-1).
    let core_fail_codes: Vec<String> = (at..core.len())
        .flat_map(|k| failed_by(k, &core[k]))
        .map(|(_, e)| crate::core_side::error_by_name(&e).code().to_string())
        .collect();
    let core_records_explained = core.iter().all(|l| {
        let Some(code) = (field(l, "ev") == Some("outcome"))
            .then(|| field(l, "result").and_then(|r| r.strip_prefix("err:")))
            .flatten()
        else {
            return true;
        };
        code == "-1"
            || (code == "7" && extra.first_expiry.is_some())
            || core_fail_codes.iter().any(|c| c == code)
            || core.iter().any(|a| {
                field(a, "ev") == Some("coord_answered")
                    && field(a, "error").is_some_and(|e| {
                        e.split(',').any(|x| {
                            let name = x.rsplit('=').next().unwrap_or_default();
                            crate::core_side::error_by_name(name).code().to_string() == code
                                || (name == "INVALID_PRODUCER_EPOCH" && code == "90")
                        })
                    })
            })
    });
    (core_holds_back
        && core_records_explained
        && exceptions_known
        && java_codes_brought(java)
        && java_commits_only_delivered(trace, java)
        && super::consistency::holds_together(trace, java)
        && super::consistency::holds_together(trace, core)
        && core_keeps_abortable(core, split)
        && core_delivers_in_send_order(trace, core)
        && follows_script(trace, java)
        && follows_script(trace, core)
        && asks_only_sent_partitions(trace, java))
    .then_some(verdict)
}

/// Whether every exception in Java's output is one of its bookkeeping failures, on a
/// partition whose entry it dropped with a batch unsettled (`java_tracking`).
pub(super) fn java_exceptions_known(java: &[String]) -> bool {
    java.iter().enumerate().all(|(e, l)| {
        field(l, "ev") != Some("java_exception")
            || (super::java_tracking::is_tracking_failure(l)
                && super::java_tracking::named_partition(l).is_some_and(|p| {
                    super::java_tracking::dropped_while_unsettled(&java[..e]).contains(&p)
                }))
    })
}

/// Whether Java's handler takes the coordinator answer `line` as fatal: the codes
/// `txn_commit2::fatal_coordinator_error` names, and on a FindCoordinator any error
/// that is not retriable, GROUP_AUTHORIZATION_FAILED or TRANSACTION_ABORTABLE
/// (`FindCoordinatorHandler`: "unexpected error").
fn java_fatal_answer(line: &str) -> bool {
    super::txn_commit2::fatal_coordinator_error(line).is_some()
        || (field(line, "ev") == Some("coord_answered")
            && field(line, "api") == Some("find_coordinator")
            && field(line, "error").is_some_and(|e| {
                let error = crate::core_side::error_by_name(e);
                !matches!(
                    e,
                    "NONE" | "GROUP_AUTHORIZATION_FAILED" | "TRANSACTION_ABORTABLE"
                ) && !error.is_retriable()
            }))
}

/// Whether a batch answered with an error (`stamp`) is sent again in `out`: with the
/// same stamp, or split (a piece under the same partition, identity and base sequence
/// with fewer records).
fn sends_again(out: &[String], stamp: &str) -> bool {
    let head_count = |s: &str| {
        s.rsplit_once(':')
            .and_then(|(h, c)| Some((h.to_string(), c.parse::<i64>().ok()?)))
    };
    let Some((head, count)) = head_count(stamp) else {
        return false;
    };
    sends_stamp(out, stamp)
        || out.iter().any(|l| {
            field(l, "ev") == Some("produce")
                && field(l, "batches")
                    .unwrap_or_default()
                    .split(',')
                    .any(|b| head_count(b).is_some_and(|(h, c)| h == head && c < count))
        })
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
    let fatal = java[at + 1..].iter().position(|l| java_fatal_answer(l));
    let java_kept = failed.iter().all(|s| {
        sends_stamp(&java[at + 1..], s)
            || restarted_stamp(&java[..at], s).is_some_and(|r| sends_stamp(&java[at + 1..], &r))
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

/// The commit premise of [`core_abortable_where_java_keeps`]: the core's line right
/// after the answer (its line `at`) fails the pending commit with the code of one of the
/// batches it failed (`failed`); Java failed them too (it sends none of them again, nor
/// a piece of one: same partition, identity and base sequence) and holds its commit
/// (Java accepted the commit call, and completes it, if ever, only after the answer and
/// never successfully: `TransactionManager.nextRequest` holds the EndTxn while batches
/// are incomplete, then fails it with the abortable error). Until it completes, Java
/// takes no abort or begin, sends no EndTxn and no new batch.
fn commit_fails_where_java_holds(
    java: &[String],
    core: &[String],
    at: usize,
    failed: &[(String, String)],
) -> bool {
    let Some(line) = core.get(at + 1) else {
        return false;
    };
    let code = field(line, "result").and_then(|r| r.strip_prefix("err:"));
    let names_a_failure = super::lines::failed_commit(line)
        && code.is_some_and(|c| {
            failed
                .iter()
                .any(|(_, e)| crate::core_side::error_by_name(e).code().to_string() == c)
        });
    let head = |stamp: &str| stamp.rsplit_once(':').map(|(h, _)| h.to_string());
    let java_resends = java[at + 1..].iter().any(|l| {
        field(l, "ev") == Some("produce")
            && field(l, "batches").unwrap_or_default().split(',').any(|b| {
                failed
                    .iter()
                    .any(|(s, _)| head(s).is_some_and(|h| head(b) == Some(h)))
            })
    });
    let committing = java[..=at]
        .iter()
        .rposition(|l| l == super::lines::COMMIT_OK);
    let begun = java[..=at].iter().rposition(|l| l == BEGIN_OK);
    let java_committing = committing.is_some() && committing > begun;
    let java_commits = java[at + 1..]
        .iter()
        .any(|l| l == super::lines::COMMIT_DONE_OK);
    // Until Java's commit completes, its pending commit refuses an abort and a begin,
    // sends no EndTxn (the handler is failed, not sent) and drains no new batch (an
    // abortable transaction's undrained batches are failed).
    let completes = java[at + 1..]
        .iter()
        .position(|l| field(l, "ev") == Some("txn_done") && field(l, "call") == Some("commit"))
        .map_or(java.len(), |k| at + 1 + k);
    let held = java[at + 1..completes].iter().all(|l| {
        l != super::lines::ABORT_OK
            && l != BEGIN_OK
            && field(l, "api") != Some("end_txn")
            && (field(l, "ev") != Some("produce")
                || field(l, "batches")
                    .unwrap_or_default()
                    .split(',')
                    .all(|b| sends_stamp(&java[..at], b)))
    });
    names_a_failure && !java_resends && java_committing && !java_commits && held
}

/// The stamp Java gives a batch (`stamp`, "partition:pid:epoch:seq:count") it keeps
/// after UNKNOWN_PRODUCER_ID: `TransactionManager.startSequencesAtBeginning` renumbers
/// the partition's batches still in flight from sequence 0, in order, so the batch's
/// new base sequence is the record count of the batches of its partition and identity
/// before it that were sent and not yet settled (acknowledged, or failed by an answer
/// Kafka does not retry) in `before`.
fn restarted_stamp(before: &[String], stamp: &str) -> Option<String> {
    let parts: Vec<&str> = stamp.split(':').collect();
    let [p, pid, epoch, seq, count] = parts[..] else {
        return None;
    };
    let seq: i64 = seq.parse().ok()?;
    let mut unsettled: Vec<String> = Vec::new();
    for line in before {
        let entries = || field(line, "batches").unwrap_or_default().split(',');
        match field(line, "ev") {
            Some("produce") => {
                for b in entries() {
                    if !unsettled.iter().any(|u| u == b) {
                        unsettled.push(b.to_string());
                    }
                }
            }
            Some("answered") => {
                for b in entries() {
                    let (sent, error) = b.rsplit_once('=').unwrap_or((b, ""));
                    let settles =
                        error == "NONE" || !crate::core_side::error_by_name(error).is_retriable();
                    if settles {
                        unsettled.retain(|u| u != sent);
                    }
                }
            }
            _ => {}
        }
    }
    let earlier: i64 = unsettled
        .iter()
        .filter_map(|u| {
            let v: Vec<&str> = u.split(':').collect();
            let same = v.len() == 5 && v[0] == p && v[1] == pid && v[2] == epoch;
            let s: i64 = v.get(3)?.parse().ok()?;
            (same && s < seq)
                .then(|| v[4].parse::<i64>().ok())
                .flatten()
        })
        .sum();
    Some(format!("{p}:{pid}:{epoch}:{earlier}:{count}"))
}

/// Whether every failed completion and every failed record in Java's output names no
/// code (-1), a code some answer in it carried (PRODUCER_FENCED also where
/// INVALID_PRODUCER_EPOCH came), or TRANSACTION_ABORTABLE or REQUEST_TIMED_OUT.
pub(super) fn java_codes_brought(java: &[String]) -> bool {
    java.iter().all(|l| {
        let Some(code) = matches!(field(l, "ev"), Some("txn_done" | "outcome"))
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

/// Whether a commit Java completes successfully had every record of its transaction
/// delivered: the k-th accepted begin in the output is the trace's k-th begin that was
/// accepted, and its records are the sends after it, up to the next begin.
pub(super) fn java_commits_only_delivered(trace: &Trace, java: &[String]) -> bool {
    let begin_ops: Vec<usize> = trace
        .ops
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op, Op::Txn { call } if call == "begin"))
        .map(|(i, _)| i)
        .collect();
    let begin_results: Vec<bool> = java
        .iter()
        .filter(|l| field(l, "ev") == Some("txn_call") && field(l, "call") == Some("begin"))
        .map(|l| l == BEGIN_OK)
        .collect();
    let outcome = |rec: usize| {
        java.iter()
            .find(|l| {
                field(l, "ev") == Some("outcome") && field(l, "rec") == Some(&rec.to_string())
            })
            .and_then(|l| field(l, "result"))
    };
    java.iter().enumerate().all(|(k, l)| {
        if l != super::lines::COMMIT_DONE_OK {
            return true;
        }
        let n = java[..k].iter().filter(|m| *m == BEGIN_OK).count();
        let Some(b) = begin_results
            .iter()
            .enumerate()
            .filter(|(_, ok)| **ok)
            .nth(n.wrapping_sub(1))
            .and_then(|(i, _)| begin_ops.get(i))
        else {
            return false;
        };
        let next = begin_ops
            .iter()
            .find(|&&i| i > *b)
            .copied()
            .unwrap_or(trace.ops.len());
        let sends = |ops: &[Op]| {
            ops.iter()
                .filter(|op| matches!(op, Op::Send { .. }))
                .count()
        };
        let first_rec = sends(&trace.ops[..*b]);
        (first_rec..first_rec + sends(&trace.ops[*b..next]))
            .all(|r| outcome(r).is_none_or(|o| o.starts_with("ok") || o == "refused"))
    })
}

/// Whether the core's delivered records of each partition have offsets rising in send
/// order (its promise: the log holds them in send order).
fn core_delivers_in_send_order(trace: &Trace, core: &[String]) -> bool {
    let mut delivered = super::consistency::delivered(trace, core);
    delivered.sort_by_key(|&(rec, _, _)| rec);
    let mut last: std::collections::BTreeMap<i32, i64> = std::collections::BTreeMap::new();
    delivered.iter().all(|&(_, p, o)| {
        let rising = last.get(&p).is_none_or(|&before| o > before);
        last.insert(p, o);
        rising
    })
}

/// The stamps a Produce answer line settles: acknowledged, or failed by an error Kafka
/// does not retry.
fn settled_by(line: &str) -> Vec<&str> {
    field(line, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| {
            let (stamp, error) = b.rsplit_once('=').unwrap_or((b, ""));
            (matches!(error, "NONE" | "DUPLICATE_SEQUENCE_NUMBER")
                || !crate::core_side::error_by_name(error).is_retriable())
            .then_some(stamp)
        })
        .collect()
}

/// Whether the core keeps to its abortable transaction from `split` until it begins
/// another: its only transactional requests are lookups, the end of the abort
/// (EndTxn(ABORT), the TV1 bump) and, once the application's abort is accepted, an
/// AddPartitionsToTxn sent before and retried; it completes no commit successfully,
/// takes no begin before that abort completes, and sends only batches still unsettled
/// (sent before and neither acknowledged nor failed since).
fn core_keeps_abortable(core: &[String], split: usize) -> bool {
    let mut settled: Vec<&str> = Vec::new();
    let mut sent: Vec<&str> = Vec::new();
    for l in &core[..split] {
        match field(l, "ev") {
            Some("produce") => sent.extend(field(l, "batches").unwrap_or_default().split(',')),
            Some("answered") => {
                settled.extend(settled_by(l));
            }
            _ => {}
        }
    }
    let mut abort_done = false;
    let mut aborting = false;
    // The AddPartitionsToTxn requests sent before the split, by their partitions.
    let asked_before: Vec<&str> = core[..split]
        .iter()
        .filter(|l| super::txn::is_add_partitions(l))
        .filter_map(|l| field(l, "parts"))
        .collect();
    for l in &core[split..] {
        if l == BEGIN_OK {
            return abort_done;
        }
        if l == super::lines::ABORT_OK {
            aborting = true;
        }
        match field(l, "ev") {
            Some("txn") => {
                let ends_abort = (field(l, "api") == Some("end_txn")
                    && field(l, "commit") == Some("0"))
                    || (field(l, "api") == Some("init") && field(l, "pid") != Some("-1"));
                // Aborting is no error state: a request retried after a retriable
                // answer goes out again (Java's `maybeTerminateRequestWithError` fails
                // requests only in an error state).
                let retried_while_aborting = aborting
                    && super::txn::is_add_partitions(l)
                    && field(l, "parts").is_some_and(|p| asked_before.contains(&p));
                if !(field(l, "api") == Some("find_coordinator")
                    || ends_abort
                    || retried_while_aborting)
                {
                    return false;
                }
            }
            Some("txn_done") if field(l, "call") == Some("abort") => abort_done = true,
            Some("produce") => {
                let unsettled = field(l, "batches")
                    .unwrap_or_default()
                    .split(',')
                    .all(|b| sent.contains(&b) && !settled.contains(&b));
                if !unsettled {
                    return false;
                }
            }
            Some("answered") => {
                settled.extend(settled_by(l));
            }
            _ => {}
        }
        if l == super::lines::COMMIT_DONE_OK {
            return false;
        }
    }
    true
}

/// Whether the coordinator answers in `out` are, in order, answers the trace scripts:
/// each `coord_answered` line is the next `coord` operation's (one with nothing
/// outstanding waits for the next request, so none is skipped in the order, but a
/// harness may end before using them all), as [`Op::Coord`] gives it to the request's
/// API; or, once every operation is used, NONE, which the harnesses answer everything
/// with once the trace ends (a request takes the next waiting operation when it goes
/// out, so none waits while the end's answers are given).
pub(super) fn follows_script(trace: &Trace, out: &[String]) -> bool {
    let mut ops = trace
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Coord { error, p, apis } => Some((error.as_str(), p.as_ref(), apis)),
            _ => None,
        })
        .peekable();
    out.iter()
        .filter(|l| field(l, "ev") == Some("coord_answered"))
        .all(|l| {
            let answered = field(l, "error").unwrap_or_default();
            let drained = answered
                .split(',')
                .all(|e| e == "NONE" || e.ends_with("=NONE"));
            if ops.peek().is_none() {
                return drained;
            }
            ops.next().is_some_and(|(error, p, apis)| {
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
pub(super) fn asks_only_sent_partitions(trace: &Trace, out: &[String]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::follows_script;
    use crate::trace::Trace;

    fn trace(coords: &[&str]) -> Trace {
        let mut text = String::from(
            r#"{"op":"config","partitions":2,"nodes":1,"batch_size":1000,"linger_ms":0,"max_in_flight":1,"request_timeout_ms":30000,"delivery_timeout_ms":120000,"retry_backoff_ms":0,"transactional":1}"#,
        );
        text.push('\n');
        for c in coords {
            text.push_str(c);
            text.push('\n');
        }
        text.push_str("{\"op\":\"end\"}\n");
        Trace::parse_many(&text).unwrap().remove(0)
    }

    fn answered(api: &str, error: &str) -> String {
        format!(r#"{{"ev":"coord_answered","api":"{api}","error":"{error}"}}"#)
    }

    #[test]
    fn each_answer_is_the_next_scripted_one() {
        let t = trace(&[
            r#"{"op":"coord","error":"NONE"}"#,
            r#"{"op":"coord","error":"CONCURRENT_TRANSACTIONS"}"#,
        ]);
        let in_turn = [
            answered("find_coordinator", "NONE"),
            answered("add_partitions", "0=CONCURRENT_TRANSACTIONS"),
        ];
        assert!(follows_script(&t, &in_turn));
        // The first answer skips the script's NONE for its later one.
        let skipping = [answered("add_partitions", "0=CONCURRENT_TRANSACTIONS")];
        assert!(!follows_script(&t, &skipping));
        // Once the script is used up, the end's NONE answers; not before.
        let ended = [
            answered("find_coordinator", "NONE"),
            answered("add_partitions", "0=CONCURRENT_TRANSACTIONS"),
            answered("end_txn", "NONE"),
        ];
        assert!(follows_script(&t, &ended));
        let t = trace(&[r#"{"op":"coord","error":"CONCURRENT_TRANSACTIONS"}"#]);
        assert!(!follows_script(&t, &[answered("add_partitions", "0=NONE")]));
    }
}
