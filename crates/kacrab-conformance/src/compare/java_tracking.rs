//! Java's Sender failing its own bookkeeping in transactional traces.
//!
//! Java's `TransactionManager` keeps, per partition, the batches on the wire and the next
//! sequence (`TxnPartitionMap`), and drops a partition's entry while batches of it are
//! still on the wire in two places: `handleFailedBatch` on UNKNOWN_PRODUCER_ID
//! (`resetSequenceForPartition`), and the InitProducerId answer that bumps the epoch
//! (`resetSequenceNumbers`, every entry). When another batch of that partition is then
//! answered, Java's Sender throws: re-enqueueing a retriable one fails its check
//! (`RecordAccumulator.insertInSequenceOrder`: "We are re-enqueueing a batch which is not
//! tracked"), and completing or failing one looks the entry up (`TxnPartitionMap.get`:
//! "Trying to get txnPartitionEntry ... never set"). Kafka's `Sender.run` logs such an
//! exception and goes on, with the batch neither queued nor completed: its records never
//! get an outcome, and a commit waits for them until the transaction times out. A Java
//! defect, not a rule the core departs from.

use std::collections::BTreeMap;

use super::{field, lines, txn, Verdict};

/// The two exceptions of Java's bookkeeping (see the module's comment).
pub(super) fn is_tracking_failure(line: &str) -> bool {
    field(line, "ev") == Some("java_exception")
        && field(line, "what").is_some_and(|what| {
            what.starts_with(
                "IllegalStateException: We are re-enqueueing a batch which is not tracked",
            ) || what.starts_with("IllegalStateException: Trying to get txnPartitionEntry for")
        })
}

/// The partition a tracking failure names (`t-N` in the message).
pub(super) fn named_partition(line: &str) -> Option<i32> {
    let what = field(line, "what")?;
    let at = what.find("t-")? + 2;
    let digits: String = what[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The index in Java's output of the trace's first difference (the earliest of the
/// first partition difference and the conversation's, by output line), or `None` where
/// Java's side of it is missing (the core wrote a line Java never wrote, after lines that differ).
/// Where the two outputs are the same up to the difference's output line, that line is
/// where Java's output first differs, whether or not Java wrote its own line there.
pub(super) fn java_line_of_first_difference(
    java: &[String],
    core: &[String],
    partitions: &[(i32, Verdict, usize, usize)],
    java_at: &BTreeMap<i32, Vec<usize>>,
) -> Option<usize> {
    // Where Java never wrote the partition's line there (the core sent a batch Java did
    // not) and the outputs are the same up to it, Java's output first differs at `when`.
    let shared_up_to =
        |when: usize| java.get(..when).is_some() && java.get(..when) == core.get(..when);
    let on_partition = partitions.first().map(|&(p, _, k, when)| {
        let line = java_at.get(&p).and_then(|a| a.get(k)).copied();
        (when, line.or_else(|| shared_up_to(when).then_some(when)))
    });
    let (jh, ch) = (txn::history(java), txn::history(core));
    // Where the two outputs are the same up to the conversation's difference (its
    // earlier line, `when`), Java's output first differs at `when` itself, even where
    // Java's own history line there comes later or never (the core wrote a line Java
    // did not, and Java went on).
    let in_conversation = txn::first_difference(&jh, &ch).map(|(i, when)| {
        let shared = java.get(..when).is_some() && java.get(..when) == core.get(..when);
        let line = jh.get(i).map(|&(line, _)| line);
        (when, if shared { Some(when) } else { line })
    });
    match (on_partition, in_conversation) {
        (Some((a, ja)), Some((b, jb))) if a == b => ja.zip(jb).map(|(x, y)| x.min(y)),
        (Some((a, ja)), Some((b, _))) if a < b => ja,
        (_, Some((_, jb))) => jb,
        (Some((_, ja)), None) => ja,
        (None, None) => None,
    }
}

/// Whether a trace with a Java exception keeps `verdict`: it is transactional (its
/// earliest difference classifies it, every later one is a consequence), the verdict
/// names a departure, and every exception is a tracking failure written after the first
/// difference (so it happened after it: lines of a step may be written after an
/// exception thrown in that step, never before). `first` is
/// [`java_line_of_first_difference`].
pub(super) fn after_named_difference(
    java: &[String],
    transactional: bool,
    verdict: Verdict,
    first: Option<usize>,
) -> bool {
    transactional
        && !matches!(verdict, Verdict::Same | Verdict::Unexplained)
        && java.iter().enumerate().all(|(i, l)| {
            field(l, "ev") != Some("java_exception")
                || (is_tracking_failure(l) && first.is_some_and(|f| i > f))
        })
}

/// A transactional trace whose only difference before Java's first exception is one the
/// exception follows from: the exception is a tracking failure naming a partition whose
/// entry Java dropped, in the lines before it, while another batch of the partition was
/// unsettled (sent, and neither acknowledged nor answered with an error Kafka does not
/// retry): an UNKNOWN_PRODUCER_ID answer to one of its batches, or an InitProducerId that
/// bumped the epoch (it named a producer id) answered NONE. Up to the exception the two
/// outputs are identical, line for line (a call's failed completion counting as identical
/// where Java's names no code, -1, and the core's names one, as in the transactional
/// history's [`txn::same`]):
/// * [`Verdict::JavaLosesTrackOfBatches`]: with nothing set aside;
/// * [`Verdict::CommitFailsBeforeBatchesSettle`]: with the core's failed commit set
///   aside, written right after the Produce answer that failed a batch with that code
///   (the answer turned the transaction abortable; the core fails its commit then, Java
///   holds its EndTxn until no batch is incomplete, `TransactionManager.nextRequest`),
///   and each later commit call Java hands the pending result back for (`ok`) one the
///   core refuses (its commit has failed), with no other application call in between
///   but one both refuse (Java, committing, refuses an abort or a begin the core might
///   take). Java's commit
///   completes after the exception, or never (the lost batch keeps it incomplete).
pub(super) fn java_loses_track_of_batches(java: &[String], core: &[String]) -> Option<Verdict> {
    let e = java
        .iter()
        .position(|l| field(l, "ev") == Some("java_exception"))?;
    let (Some(p), true) = (named_partition(&java[e]), is_tracking_failure(&java[e])) else {
        return None;
    };
    if !dropped_while_unsettled(&java[..e]).contains(&p) {
        return None;
    }
    // Line for line the same, where a failed call's completion counts as the same when
    // Java names no code (-1) and the core names one (`txn::same`, the history's rule).
    let same_up_to = |core: &[&String], retried_refused: bool| {
        const RETRIED: &str = r#"{"ev":"txn_call","call":"commit","result":"ok"}"#;
        const REFUSED: &str = r#"{"ev":"txn_call","call":"commit","result":"refused"}"#;
        core.get(..e).is_some_and(|c| {
            c.iter().zip(&java[..e]).all(|(c, j)| {
                *c == j
                    || txn::same(j, c)
                    || same_send_other_step(j, c)
                    || (retried_refused && j == RETRIED && *c == REFUSED)
            })
        })
    };
    let all: Vec<&String> = core.iter().collect();
    if same_up_to(&all, false) {
        return Some(Verdict::JavaLosesTrackOfBatches);
    }
    let failed_commit = core.iter().take(e + 1).position(|l| {
        field(l, "ev") == Some("txn_done")
            && field(l, "call") == Some("commit")
            && field(l, "result").is_some_and(|r| r.starts_with("err:"))
    })?;
    let code = field(&core[failed_commit], "result")?.strip_prefix("err:")?;
    let after_failing_answer = failed_commit
        .checked_sub(1)
        .and_then(|k| lines::last_failing_answer(&core[..failed_commit]).filter(|a| *a == &core[k]))
        .is_some_and(|answer| {
            field(answer, "batches")
                .unwrap_or_default()
                .split(',')
                .any(|b| {
                    b.rsplit_once('=').is_some_and(|(_, name)| {
                        crate::core_side::error_by_name(name).code().to_string() == code
                    })
                })
        });
    // Java's commit is pending from there to the exception: an abort or a begin there
    // is refused by Java and may be taken by the core, so only one both refuse may come
    // (`same_up_to` holds the core's line to Java's refusal).
    let only_commit_calls = java[failed_commit..e].iter().all(|l| {
        field(l, "ev") != Some("txn_call")
            || field(l, "call") == Some("commit")
            || field(l, "result") == Some("refused")
    });
    let mut aside = all;
    aside.remove(failed_commit);
    (after_failing_answer && only_commit_calls && same_up_to(&aside, true))
        .then_some(Verdict::CommitFailsBeforeBatchesSettle)
}

/// Whether two Produce request lines send the same batches to the same broker at the
/// same time, in different steps of the harnesses' loops (a step counts the loop's
/// turns, not time, and the two loops may turn a different number of times at one
/// instant).
fn same_send_other_step(java: &str, core: &str) -> bool {
    let without_step = |l: &str| {
        l.find(r#","s":"#).map(|at| {
            let rest = &l[at + 5..];
            let end = rest
                .find(|ch: char| !ch.is_ascii_digit())
                .unwrap_or(rest.len());
            format!("{}{}", &l[..at], &rest[end..])
        })
    };
    field(java, "ev") == Some("produce")
        && field(core, "ev") == Some("produce")
        && without_step(java).is_some_and(|j| Some(j) == without_step(core))
}

/// The partitions whose entry Java dropped while another batch of theirs was unsettled,
/// in `lines` (see [`java_loses_track_of_batches`]). A batch answered with an error and
/// sent again later in `lines` stays unsettled: Java kept it to retry.
pub(super) fn dropped_while_unsettled(lines: &[String]) -> Vec<i32> {
    // Per partition, the stamps ("pid:epoch:seq:count") sent and not settled.
    let mut unsettled: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let mut dropped = Vec::new();
    let mut bump_asked = false;
    for (k, line) in lines.iter().enumerate() {
        match field(line, "ev") {
            Some("produce") => {
                for (p, stamp) in batches(line) {
                    let sent = unsettled.entry(p).or_default();
                    if !sent.contains(&stamp) {
                        sent.push(stamp);
                    }
                }
            }
            Some("answered") => {
                for (p, answered) in batches(line) {
                    let (stamp, error) = answered.split_once('=').unwrap_or((&answered, ""));
                    let sent = unsettled.entry(p).or_default();
                    // A batch Java sends again later was kept to retry, not settled,
                    // whatever its error.
                    let resent =
                        super::lines::sends_stamp(&lines[k + 1..], &format!("{p}:{stamp}"));
                    let settles = !resent
                        && (error == "UNKNOWN_PRODUCER_ID"
                            || !crate::core_side::error_by_name(error).is_retriable());
                    if settles {
                        sent.retain(|s| s != stamp);
                    }
                    if error == "UNKNOWN_PRODUCER_ID" && !sent.is_empty() {
                        dropped.push(p);
                    }
                }
            }
            Some("txn") if field(line, "api") == Some("init") => {
                bump_asked = field(line, "pid").is_some_and(|pid| pid != "-1");
            }
            Some("coord_answered") if field(line, "api") == Some("init") => {
                if bump_asked && field(line, "error") == Some("NONE") {
                    dropped.extend(
                        unsettled
                            .iter()
                            .filter(|(_, sent)| !sent.is_empty())
                            .map(|(&p, _)| p),
                    );
                }
                bump_asked = false;
            }
            _ => {}
        }
    }
    dropped
}

/// The batches of a `produce` or `answered` line: (partition, the rest of its entry).
fn batches(line: &str) -> Vec<(i32, String)> {
    field(line, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| {
            let (p, rest) = b.split_once(':')?;
            Some((p.parse().ok()?, rest.to_string()))
        })
        .collect()
}
