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
}
