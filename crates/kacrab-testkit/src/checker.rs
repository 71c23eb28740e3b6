//! The record format the adapter suite sends, and its check: the simulator's oracle
//! ([`kacrab_sim::oracle`]) applied to logs read back from FakeBroker or real Kafka.
//!
//! Record `i` of a burst goes to partition `p = i mod P` as that partition's record
//! `i / P`, with the oracle's encoding: key `"{p}:{i / P}"`, value the same tag padded
//! with `.` to `B` bytes. Given every send's result and every partition's log, [`check`]
//! feeds the oracle the logs, then the outcomes, and fails on anything it finds:
//!
//! * each acknowledged record in its partition's log exactly once, at the offset it was
//!   acknowledged with (when one was reported), in the partition it was sent to;
//! * no record in any log twice, nothing in a log that was not sent there, no corrupted
//!   key or value;
//! * every log in send order, acknowledged records or not (the log read back carries no
//!   producer ids, so the simulator's one exception, a late write of a retired producer
//!   id, is not granted);
//! * a record reported failed with `possibly_written == false` absent from the log;
//! * every send resolved (its waiter returned) — exactly once by construction, since a
//!   [`crate::Delivery`] is consumed by waiting on it;
//! * optionally, that every send was acknowledged.
//!
//! A transactional workload's records carry their transaction's number too
//! ([`txn_record_value`]), and [`check_transactions`] holds its two read-backs to the
//! same oracle: the `read_uncommitted` log against what each send reported, the
//! `read_committed` log against how each transaction ended (see there).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::Bytes;
use kacrab_sim::oracle::{self, LogOracle, RecordId};
pub use kacrab_sim::oracle::{LogRecord, Outcome, Tally};

use crate::{DeliveryFailure, DeliveryReport};

/// The partition record `i` goes to among `partitions`.
pub fn record_partition(i: u64, partitions: i32) -> i32 {
    (i % partitions.max(1) as u64) as i32
}

/// Record `i`'s place in its partition's send order.
pub fn record_index(i: u64, partitions: i32) -> u32 {
    (i / partitions.max(1) as u64) as u32
}

/// The key of record `i`: its tag `"{partition}:{index}"`.
pub fn record_key(i: u64, partitions: i32) -> Bytes {
    oracle::encode_key(
        record_partition(i, partitions) as u32,
        record_index(i, partitions),
    )
}

/// The value of record `i`: its tag padded with `.` to `size` bytes (never shorter than
/// the tag).
pub fn record_value(i: u64, partitions: i32, size: usize) -> Bytes {
    oracle::encode_value(
        record_partition(i, partitions) as u32,
        record_index(i, partitions),
        size,
    )
}

/// What one send's waiter returned.
pub type SendResult = Result<DeliveryReport, DeliveryFailure>;

/// The oracle's outcome for one send's result.
pub fn outcome(result: &SendResult) -> Outcome {
    match result {
        Ok(_) => Outcome::Delivered,
        Err(f) => Outcome::Failed {
            possibly_written: f.possibly_written,
        },
    }
}

/// What a check demands beyond the invariants that always hold.
#[derive(Clone, Debug)]
pub struct Expect {
    /// Number of partitions records were spread over (`i mod partitions`).
    pub partitions: i32,
    /// Value size the records were sent with.
    pub value_size: usize,
    /// Every send must have been acknowledged (no failures at all).
    pub all_acked: bool,
}

impl Expect {
    /// All sends acknowledged.
    pub fn strict(partitions: i32, value_size: usize) -> Self {
        Self {
            partitions,
            value_size,
            all_acked: true,
        }
    }
}

/// Up to this many offending records are named per kind of violation.
const SHOW: usize = 8;

/// Checks `results` (indexed by record) against `logs` (partition → records in offset
/// order). Returns the oracle's totals, or a readable report naming the first offending
/// records of each kind.
pub fn check(
    results: &[SendResult],
    logs: &BTreeMap<i32, Vec<LogRecord>>,
    expect: &Expect,
) -> Result<Tally, String> {
    let p_count = expect.partitions.max(1);
    let mut o = LogOracle::new((0..p_count).map(|p| format!("p{p}")).collect());
    o.set_value_size(Some(expect.value_size));
    for i in 0..results.len() as u64 {
        let (id, index) = o.on_sent(record_partition(i, p_count) as usize);
        debug_assert_eq!((id, index), (RecordId(i), record_index(i, p_count)));
    }
    // Logs first, as read after the run; then the outcomes, each checked against them.
    for (&p, log) in logs {
        o.scan_log(usize::try_from(p).unwrap_or(usize::MAX), log);
    }
    let mut refused = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let sent_to = record_partition(i as u64, p_count);
        let (reported, offset) = match r {
            Ok(report) => (report.partition, report.offset),
            Err(f) => {
                if expect.all_acked && refused.len() < SHOW {
                    refused.push(format!("{i}: {f}"));
                }
                (sent_to, None)
            }
        };
        o.on_outcome(
            RecordId(i as u64),
            usize::try_from(reported).ok(),
            outcome(r),
            offset,
        );
    }
    o.check_all_resolved();
    let findings = o.take_findings();
    let tally = o.tally(None);
    if findings.is_empty() && (!expect.all_acked || tally.failed == 0) {
        return Ok(tally);
    }
    let mut msg = format!(
        "exactly-once check failed: {} sent, {} acked, {} failed ({} not possibly written); \
         logs hold {} records over {} partitions\n",
        tally.records,
        tally.acked,
        tally.failed,
        tally.failed_not_written,
        logs.values().map(Vec::len).sum::<usize>(),
        logs.len()
    );
    msg.push_str(&oracle::summarize(&findings, SHOW));
    if expect.all_acked && tally.failed > 0 {
        let more = if tally.failed as usize > refused.len() {
            "; ..."
        } else {
            ""
        };
        let _ = writeln!(
            msg,
            "  failed (all sends must be acknowledged): {} (first: {}{more})",
            tally.failed,
            refused.join("; ")
        );
    }
    Err(msg)
}

/// The value of record `i` of transaction `txn`: its tag, `@`, the transaction's
/// number, padded with `.` to `size` bytes (never shorter than that text).
pub fn txn_record_value(i: u64, partitions: i32, size: usize, txn: u64) -> Bytes {
    let text = format!(
        "{}:{}@{txn}",
        record_partition(i, partitions),
        record_index(i, partitions)
    );
    let mut v = text.into_bytes();
    if v.len() < size {
        v.resize(size, b'.');
    }
    Bytes::from(v)
}

/// How a transaction ended, as the producer reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnOutcome {
    /// `commit_transaction` returned `Ok`.
    Committed,
    /// `abort_transaction` returned `Ok` (on purpose, or after an abortable error).
    Aborted,
    /// Neither: the producer failed (fenced or fatal) before it learned the outcome. The
    /// coordinator decided: its records are visible all or none.
    Unknown,
}

/// One transaction of a transactional workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnSent {
    /// Its number (the workload's count of transactions begun, from 0).
    pub number: u64,
    /// The input batch it processed: committed, the group's offset becomes `batch + 1`.
    pub batch: u64,
    /// Its records, by id (index into the send results), in send order.
    pub records: std::ops::Range<u64>,
    /// How it ended; `None` if it never did.
    pub outcome: Option<TxnOutcome>,
}

/// What [`check_transactions`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnTally {
    /// Transactions begun.
    pub txns: u64,
    /// Committed ones.
    pub committed: u64,
    /// Aborted ones.
    pub aborted: u64,
    /// Ones whose outcome the producer never learned.
    pub unknown: u64,
    /// Records of committed transactions (and of unknown ones the coordinator committed).
    pub committed_records: u64,
    /// The oracle's totals over the `read_uncommitted` log and every send's outcome.
    pub uncommitted: Tally,
    /// Records the `read_committed` reader saw.
    pub read_committed: u64,
}

/// Checks a transactional workload: `results` (every send, by record id), `txns` (each
/// record in exactly one), and the topic read back at both isolation levels. Every
/// logged value must be its record's [`txn_record_value`] for the transaction it was
/// sent in (else it is corrupted). Then:
///
/// * every transaction has exactly one outcome; one the producer never learned is
///   visible to `read_committed` all or none, and counts as committed or aborted by that;
/// * `read_uncommitted`: the oracle with every send's reported outcome (each
///   acknowledged record exactly once, in send order, at its offset; nothing failed as
///   not written), and every record of a committed transaction acknowledged;
/// * `read_committed`: no record of an aborted transaction; the oracle with the
///   committed transactions' records as acknowledged and the aborted ones' as absent
///   (each committed record exactly once, in send order, at its offset);
/// * the committed transactions processed the input batches `0, 1, 2, ...` in order,
///   each once, and `group_offset` (what the group committed on the input partition,
///   `None` if nothing) is one past the last of them.
pub fn check_transactions(
    results: &[SendResult],
    txns: &[TxnSent],
    read_committed: &BTreeMap<i32, Vec<LogRecord>>,
    read_uncommitted: &BTreeMap<i32, Vec<LogRecord>>,
    expect: &Expect,
    group_offset: Option<i64>,
) -> Result<TxnTally, String> {
    let p_count = expect.partitions.max(1);
    let mut problems: Vec<String> = Vec::new();
    let mut txn_of: Vec<Option<usize>> = vec![None; results.len()];
    for (t, txn) in txns.iter().enumerate() {
        for i in txn.records.clone() {
            match txn_of.get_mut(i as usize) {
                Some(slot @ None) => *slot = Some(t),
                Some(Some(other)) => problems.push(format!(
                    "record {i} is in transactions {} and {}",
                    txns[*other].number, txn.number
                )),
                None => problems.push(format!(
                    "transaction {} names record {i}, but only {} were sent",
                    txn.number,
                    results.len()
                )),
            }
        }
        if txn.outcome.is_none() {
            problems.push(format!("transaction {} has no outcome", txn.number));
        }
    }
    if let Some(i) = txn_of.iter().position(Option::is_none) {
        problems.push(format!("record {i} was sent in no transaction"));
    }
    // The logs as the oracle reads them: a value with the right transaction number
    // becomes the plain encoding; anything else is left for the oracle to reject.
    let plain = |logs: &BTreeMap<i32, Vec<LogRecord>>| -> BTreeMap<i32, Vec<LogRecord>> {
        let mut logs = logs.clone();
        for (&p, log) in logs.iter_mut() {
            for r in log.iter_mut() {
                let Some((kp, idx)) = oracle::decode_value(&r.key) else {
                    continue;
                };
                let i = u64::from(idx) * p_count as u64 + u64::from(kp);
                let Some(Some(t)) = txn_of.get(i as usize) else {
                    continue;
                };
                let sent = txn_record_value(i, p_count, expect.value_size, txns[*t].number);
                if kp as i32 == p && r.value == sent {
                    r.value = record_value(i, p_count, expect.value_size);
                }
            }
        }
        logs
    };
    let (committed, uncommitted) = (plain(read_committed), plain(read_uncommitted));
    let visible: std::collections::BTreeSet<u64> = committed
        .iter()
        .flat_map(|(&p, log)| {
            log.iter().filter_map(move |r| {
                let (kp, idx) = oracle::decode_value(&r.value)?;
                (kp as i32 == p).then_some(u64::from(idx) * p_count as u64 + u64::from(kp))
            })
        })
        .collect();
    // Each transaction's effective outcome: an unknown one is what read_committed shows.
    let mut effective: Vec<bool> = Vec::with_capacity(txns.len());
    for txn in txns {
        let shown = txn.records.clone().filter(|i| visible.contains(i)).count();
        let committed_ = match txn.outcome {
            Some(TxnOutcome::Committed) => true,
            Some(TxnOutcome::Unknown) => {
                if shown != 0 && shown != txn.records.clone().count() {
                    problems.push(format!(
                        "transaction {} (outcome unknown to the producer) is half visible to \
                         read_committed: {shown} of {} records",
                        txn.number,
                        txn.records.clone().count()
                    ));
                }
                shown != 0
            }
            Some(TxnOutcome::Aborted) | None => false,
        };
        if !committed_ && shown != 0 {
            problems.push(format!(
                "read_committed shows {shown} records of aborted transaction {} (first: {})",
                txn.number,
                txn.records
                    .clone()
                    .find(|i| visible.contains(i))
                    .unwrap_or_default()
            ));
        }
        effective.push(committed_);
    }
    let mut tally = TxnTally {
        txns: txns.len() as u64,
        ..TxnTally::default()
    };
    for (txn, &c) in txns.iter().zip(&effective) {
        match txn.outcome {
            Some(TxnOutcome::Committed) => tally.committed += 1,
            Some(TxnOutcome::Aborted) => tally.aborted += 1,
            Some(TxnOutcome::Unknown) => tally.unknown += 1,
            None => {}
        }
        if !c {
            continue;
        }
        tally.committed_records += txn.records.clone().count() as u64;
        if txn.outcome == Some(TxnOutcome::Committed) {
            let refused: Vec<String> = txn
                .records
                .clone()
                .filter_map(|i| match &results[i as usize] {
                    Err(f) => Some(format!("{i}: {f}")),
                    Ok(_) => None,
                })
                .take(SHOW)
                .collect();
            if !refused.is_empty() {
                problems.push(format!(
                    "transaction {} committed although sends of it failed: {}",
                    txn.number,
                    refused.join("; ")
                ));
            }
        }
    }
    let relaxed = Expect {
        all_acked: false,
        ..expect.clone()
    };
    match check(results, &uncommitted, &relaxed) {
        Ok(t) => tally.uncommitted = t,
        Err(e) => problems.push(format!("read_uncommitted: {e}")),
    }
    // For read_committed, an aborted transaction's records are absent ("not written"),
    // a committed one's acknowledged (at the offsets reported, when they were).
    // A committed record reported failed is named above; here it only must be visible.
    let as_committed: Vec<SendResult> = results
        .iter()
        .zip(&txn_of)
        .enumerate()
        .map(|(i, (r, t))| match (t.map(|t| effective[t]), r) {
            (Some(true), Ok(report)) => Ok(*report),
            (Some(true), Err(_)) => Ok(DeliveryReport {
                partition: record_partition(i as u64, p_count),
                offset: None,
            }),
            _ => Err(DeliveryFailure::new("aborted", false)),
        })
        .collect();
    let committed_only: BTreeMap<i32, Vec<LogRecord>> = committed
        .iter()
        .map(|(&p, log)| {
            let kept = log
                .iter()
                .filter(|r| {
                    oracle::decode_value(&r.value).is_none_or(|(kp, idx)| {
                        let i = u64::from(idx) * p_count as u64 + u64::from(kp);
                        txn_of
                            .get(i as usize)
                            .copied()
                            .flatten()
                            .is_none_or(|t| effective[t])
                    })
                })
                .cloned()
                .collect();
            (p, kept)
        })
        .collect();
    match check(&as_committed, &committed_only, &relaxed) {
        Ok(t) => tally.read_committed = t.log_records,
        Err(e) => problems.push(format!("read_committed: {e}")),
    }
    // Batches: committed in order, each once; the group's offset one past the last.
    let batches: Vec<u64> = txns
        .iter()
        .zip(&effective)
        .filter(|(_, &c)| c)
        .map(|(t, _)| t.batch)
        .collect();
    if let Some(k) = (0..batches.len()).find(|&k| batches[k] != k as u64) {
        problems.push(format!(
            "committed transactions processed input batches {:?}... (expected 0, 1, 2, ...; \
             the {k}th is {})",
            &batches[..batches.len().min(SHOW)],
            batches[k]
        ));
    }
    let want = (!batches.is_empty()).then_some(batches.len() as i64);
    if group_offset != want {
        problems.push(format!(
            "the group's committed offset is {group_offset:?}, expected {want:?} (one past \
             the last committed transaction's input batch)"
        ));
    }
    if problems.is_empty() {
        Ok(tally)
    } else {
        Err(format!(
            "transactional check failed ({} transactions: {} committed, {} aborted, {} \
             unknown):\n  {}",
            tally.txns,
            tally.committed,
            tally.aborted,
            tally.unknown,
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: i32 = 3;
    const B: usize = 12;

    fn rec(offset: i64, i: u64) -> LogRecord {
        LogRecord::of(offset, record_partition(i, P) as u32, record_index(i, P), B)
    }

    /// `n` records, all acked at the offsets a perfect broker would give them.
    fn perfect(n: u64) -> (Vec<SendResult>, BTreeMap<i32, Vec<LogRecord>>) {
        let mut logs: BTreeMap<i32, Vec<LogRecord>> = BTreeMap::new();
        let mut outcomes = Vec::new();
        for i in 0..n {
            let p = record_partition(i, P);
            let log = logs.entry(p).or_default();
            let offset = log.len() as i64;
            log.push(rec(offset, i));
            outcomes.push(Ok(DeliveryReport {
                partition: p,
                offset: Some(offset),
            }));
        }
        (outcomes, logs)
    }

    fn err(outcomes: &[SendResult], logs: &BTreeMap<i32, Vec<LogRecord>>) -> String {
        check(outcomes, logs, &Expect::strict(P, B)).expect_err("the check must fail")
    }

    fn relaxed() -> Expect {
        Expect {
            all_acked: false,
            ..Expect::strict(P, B)
        }
    }

    #[test]
    fn format() {
        assert_eq!(&record_key(7, 3)[..], b"1:2");
        assert_eq!(&record_value(7, 3, 6)[..], b"1:2...");
        assert_eq!(&record_value(123_456, 1, 3)[..], b"0:123456");
        assert_eq!(record_partition(7, 6), 1);
        assert_eq!(record_index(7, 6), 1);
    }

    #[test]
    fn a_perfect_run_passes() {
        let (o, l) = perfect(100);
        let s = check(&o, &l, &Expect::strict(P, B)).unwrap();
        assert_eq!(
            (s.records, s.acked, s.failed, s.log_records),
            (100, 100, 0, 100)
        );
    }

    #[test]
    fn a_duplicated_record_fails() {
        let (o, mut l) = perfect(30);
        let log = l.get_mut(&1).unwrap();
        let next = log.len() as i64;
        log.push(rec(next, 4));
        let e = err(&o, &l);
        assert!(
            e.contains("(Duplicate): 1 (first: p1: record #1 (id 4)"),
            "{e}"
        );
    }

    #[test]
    fn a_reordered_log_fails() {
        let (o, mut l) = perfect(30);
        let log = l.get_mut(&2).unwrap();
        let (a, b) = (log[3].clone(), log[4].clone());
        log[3] = LogRecord { offset: 3, ..b };
        log[4] = LogRecord { offset: 4, ..a };
        let e = err(&o, &l);
        assert!(
            e.contains("(Reordered): 1 (first: p2: record #3 logged at offset 4 after record #4)"),
            "{e}"
        );
        // And the reported offsets no longer match.
        assert!(e.contains("(OffsetMismatch): 2"), "{e}");
    }

    #[test]
    fn an_unacknowledged_record_out_of_order_fails() {
        let (mut o, mut l) = perfect(30);
        // Record 3 (p0 #1) failed possibly written, yet landed after record 27 (p0 #9).
        o[3] = Err(DeliveryFailure::new("timed out", true));
        let log = l.get_mut(&0).unwrap();
        let r3 = log.remove(1);
        for r in log.iter_mut().skip(1) {
            r.offset -= 1;
        }
        let last = log.len() as i64;
        log.push(LogRecord { offset: last, ..r3 });
        for (i, out) in o.iter_mut().enumerate() {
            if let Ok(rep) = out {
                if rep.partition == 0 && i > 3 {
                    rep.offset = rep.offset.map(|x| x - 1);
                }
            }
        }
        let e = check(&o, &l, &relaxed()).unwrap_err();
        assert!(
            e.contains("(Reordered): 1 (first: p0: record #1 logged at offset 9 after record #9)"),
            "{e}"
        );
    }

    #[test]
    fn a_lost_record_fails() {
        let (o, mut l) = perfect(30);
        l.get_mut(&0).unwrap().remove(5);
        let e = err(&o, &l);
        assert!(
            e.contains("(Lost): 1 (first: p0: record #5 (id 15) acknowledged, not in the log)"),
            "{e}"
        );
    }

    /// The rule the adapters' `possibly_written` is held to, on a hand-made log: a send
    /// reported failed and not possibly written whose record is in the log fails the
    /// check; reported possibly written, it passes.
    #[test]
    fn a_failed_not_written_record_in_the_log_fails() {
        let (mut o, l) = perfect(30);
        o[4] = Err(DeliveryFailure::new("INVALID_RECORD", false));
        let e = check(&o, &l, &relaxed()).unwrap_err();
        assert!(
            e.contains("(FailedButWritten): 1 (first: p1: record #1 (id 4) failed as not written, but logged at Some(1))"),
            "{e}"
        );
        assert!(e.contains("1 failed (1 not possibly written)"), "{e}");
        o[4] = Err(DeliveryFailure::new("delivery timeout", true));
        let s = check(&o, &l, &relaxed()).unwrap();
        assert_eq!((s.failed, s.failed_not_written, s.failed_in_log), (1, 0, 1));
        // Not in the log, it passes either way.
        let (mut o, mut l) = perfect(30);
        l.get_mut(&1).unwrap().pop();
        o[28] = Err(DeliveryFailure::new("INVALID_RECORD", false));
        let s = check(&o, &l, &relaxed()).unwrap();
        assert_eq!((s.failed, s.failed_not_written, s.failed_in_log), (1, 1, 0));
    }

    #[test]
    fn failures_and_wrong_reports_fail() {
        let (mut o, l) = perfect(30);
        o[2] = Err(DeliveryFailure::new("boom", true));
        o[7] = Ok(DeliveryReport {
            partition: 2,
            offset: Some(2),
        });
        o[8] = Ok(DeliveryReport {
            partition: 2,
            offset: Some(0),
        });
        let e = err(&o, &l);
        assert!(
            e.contains("failed (all sends must be acknowledged): 1 (first: 2: boom (possibly written: true))"),
            "{e}"
        );
        assert!(
            e.contains("(WrongRecord): 1 (first: p2: outcome for record 7 of p1)"),
            "{e}"
        );
        assert!(
            e.contains(
                "(OffsetMismatch): 1 (first: p2: record #2 acked at Some(0), logged at Some(2))"
            ),
            "{e}"
        );
    }

    #[test]
    fn foreign_misplaced_and_corrupt_records_fail() {
        let (o, mut l) = perfect(30);
        let log = l.get_mut(&0).unwrap();
        let n = log.len() as i64;
        log.push(rec(n, 99));
        log.push(LogRecord {
            offset: n + 1,
            key: Bytes::from_static(b"x"),
            value: Bytes::new(),
            producer_id: -1,
        });
        let log1 = l.get_mut(&1).unwrap();
        log1[0].value = record_value(1, P, B + 1);
        let e = err(&o, &l);
        assert!(e.contains("p0@10: record 0:33 was never sent here"), "{e}");
        assert!(e.contains("p0@11: undecodable value"), "{e}");
        assert!(
            e.contains("p1@0: record 1:0 has a corrupted key or value"),
            "{e}"
        );
        let (o, mut l) = perfect(30);
        let r = l.get_mut(&0).unwrap().pop().unwrap();
        l.get_mut(&1).unwrap().push(LogRecord { offset: 10, ..r });
        let e = err(&o, &l);
        assert!(e.contains("p1@10: record 0:9 was never sent here"), "{e}");
        assert!(e.contains("(Lost): 1 (first: p0: record #9 (id 27)"), "{e}");
    }

    #[test]
    fn the_report_names_at_most_a_few_records() {
        let (o, mut l) = perfect(300);
        l.get_mut(&0).unwrap().clear();
        let e = err(&o, &l);
        assert!(
            e.contains("(Lost): 100 (first: p0: record #0 (id 0)"),
            "{e}"
        );
        assert!(e.contains("; ...)"), "{e}");
        assert!(e.lines().count() < 5, "{e}");
    }

    /// A transactional run: transactions of 4 records each over `P` partitions; `aborted`
    /// names the aborted ones. Returns the sends' results, the transactions, and both
    /// logs as a perfect cluster would hold them.
    #[allow(clippy::type_complexity)]
    fn txn_run(
        n: u64,
        aborted: &[u64],
    ) -> (
        Vec<SendResult>,
        Vec<TxnSent>,
        BTreeMap<i32, Vec<LogRecord>>,
        BTreeMap<i32, Vec<LogRecord>>,
    ) {
        let (mut results, mut txns) = (Vec::new(), Vec::new());
        let (mut rc, mut ru): (BTreeMap<i32, Vec<LogRecord>>, BTreeMap<i32, Vec<LogRecord>>) =
            (BTreeMap::new(), BTreeMap::new());
        let mut batch = 0;
        for t in 0..n {
            let from = results.len() as u64;
            let commit = !aborted.contains(&t);
            for i in from..from + 4 {
                let p = record_partition(i, P);
                let log = ru.entry(p).or_default();
                // Offsets leave room for the transaction markers.
                let offset = log.last().map_or(0, |r| r.offset + 2);
                let rec = LogRecord {
                    offset,
                    key: record_key(i, P),
                    value: txn_record_value(i, P, B, t),
                    producer_id: -1,
                };
                log.push(rec.clone());
                if commit {
                    rc.entry(p).or_default().push(rec);
                }
                results.push(Ok(DeliveryReport {
                    partition: p,
                    offset: Some(offset),
                }));
            }
            txns.push(TxnSent {
                number: t,
                batch,
                records: from..from + 4,
                outcome: Some(if commit {
                    TxnOutcome::Committed
                } else {
                    TxnOutcome::Aborted
                }),
            });
            batch += u64::from(commit);
        }
        (results, txns, rc, ru)
    }

    #[test]
    fn a_perfect_transactional_run_passes() {
        let (r, t, rc, ru) = txn_run(10, &[3, 6]);
        let tally = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(8)).unwrap();
        assert_eq!(
            (tally.committed, tally.aborted, tally.committed_records),
            (8, 2, 32)
        );
        assert_eq!(
            (tally.read_committed, tally.uncommitted.log_records),
            (32, 40)
        );
        assert_eq!(&txn_record_value(7, 3, 8, 12)[..], b"1:2@12..");
    }

    #[test]
    fn an_aborted_record_seen_by_read_committed_fails() {
        let (r, t, mut rc, ru) = txn_run(10, &[3, 6]);
        // Record 13 (transaction 3, aborted) shown to read_committed.
        let leaked = ru[&1].iter().find(|x| x.key == record_key(13, P)).unwrap();
        let log = rc.get_mut(&1).unwrap();
        log.push(leaked.clone());
        log.sort_by_key(|x| x.offset);
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(8)).unwrap_err();
        assert!(
            e.contains("read_committed shows 1 records of aborted transaction 3 (first: 13)"),
            "{e}"
        );
    }

    #[test]
    fn a_lost_or_duplicated_committed_record_fails() {
        let (r, t, mut rc, ru) = txn_run(10, &[3]);
        rc.get_mut(&0).unwrap().remove(0);
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(9)).unwrap_err();
        assert!(
            e.contains("read_committed: exactly-once check failed"),
            "{e}"
        );
        assert!(e.contains("(Lost): 1"), "{e}");
        let (r, t, rc, mut ru) = txn_run(10, &[3]);
        let again = ru[&2][1].clone();
        ru.get_mut(&2).unwrap().push(LogRecord {
            offset: 1_000,
            ..again
        });
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(9)).unwrap_err();
        assert!(
            e.contains("read_uncommitted: exactly-once check failed"),
            "{e}"
        );
        assert!(e.contains("(Duplicate): 1"), "{e}");
    }

    #[test]
    fn a_record_with_another_transactions_number_is_corrupt() {
        let (r, t, rc, mut ru) = txn_run(4, &[]);
        ru.get_mut(&0).unwrap()[0].value = txn_record_value(0, P, B, 1);
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(4)).unwrap_err();
        assert!(e.contains("undecodable value"), "{e}");
    }

    #[test]
    fn an_unknown_transaction_is_all_or_nothing() {
        // Transaction 2's outcome unknown, all of it visible: committed.
        let (r, mut t, rc, ru) = txn_run(5, &[]);
        t[2].outcome = Some(TxnOutcome::Unknown);
        let tally = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(5)).unwrap();
        assert_eq!(
            (tally.committed, tally.unknown, tally.committed_records),
            (4, 1, 20)
        );
        // None of it visible: aborted (and the batches after it shift back by one).
        let (r, mut t, rc, ru) = txn_run(5, &[2]);
        t[2].outcome = Some(TxnOutcome::Unknown);
        check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(4)).unwrap();
        // Half of it visible: a violation.
        let (r, mut t, mut rc, ru) = txn_run(5, &[]);
        t[2].outcome = Some(TxnOutcome::Unknown);
        let hidden = record_key(9, P);
        rc.get_mut(&0).unwrap().retain(|x| x.key != hidden);
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(5)).unwrap_err();
        assert!(e.contains("transaction 2 (outcome unknown to the producer) is half visible to read_committed: 3 of 4"), "{e}");
    }

    #[test]
    fn the_group_offset_and_the_outcomes_are_checked() {
        let (r, t, rc, ru) = txn_run(6, &[1]);
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(6)).unwrap_err();
        assert!(
            e.contains("the group's committed offset is Some(6), expected Some(5)"),
            "{e}"
        );
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), None).unwrap_err();
        assert!(e.contains("is None, expected Some(5)"), "{e}");
        let (r, mut t, rc, ru) = txn_run(6, &[]);
        t[4].outcome = None;
        t[5].batch = 4;
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(5)).unwrap_err();
        assert!(e.contains("transaction 4 has no outcome"), "{e}");
        // A batch committed twice.
        let (r, mut t, rc, ru) = txn_run(6, &[]);
        t[3].batch = 2;
        let e = check_transactions(&r, &t, &rc, &ru, &Expect::strict(P, B), Some(6)).unwrap_err();
        assert!(
            e.contains("committed transactions processed input batches"),
            "{e}"
        );
    }
}
