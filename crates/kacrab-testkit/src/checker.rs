//! The exactly-once and order check, and the record format it relies on.
//!
//! Record `i` has key `i` in decimal ASCII and a value of `B` bytes that starts with `i`
//! in decimal ASCII (padded with `.`), and goes to partition `i mod P`. Given every send's
//! outcome and every partition's log, [`check`] asserts:
//!
//! * every send resolved (its waiter returned) — exactly once by construction, since a
//!   [`crate::Delivery`] is consumed by waiting on it;
//! * each acknowledged record is in its partition's log exactly once, at the offset it was
//!   acknowledged with (when one was reported), in the partition it was sent to;
//! * no record is in any log twice, and nothing is in a log that was not sent;
//! * acknowledged records are in send order in each partition's log, and (by default) so
//!   is everything else in the log;
//! * optionally, that every send was acknowledged.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use bytes::Bytes;

use crate::DeliveryReport;

/// The key of record `i`: `i` in decimal ASCII.
pub fn record_key(i: u64) -> Bytes {
    Bytes::from(i.to_string())
}

/// The value of record `i`: `size` bytes starting with `i` in decimal ASCII, padded with
/// `.` (never shorter than the digits).
pub fn record_value(i: u64, size: usize) -> Bytes {
    let mut v = i.to_string().into_bytes();
    if v.len() < size {
        v.resize(size, b'.');
    }
    Bytes::from(v)
}

/// The partition record `i` goes to among `partitions`.
pub fn record_partition(i: u64, partitions: i32) -> i32 {
    (i % partitions.max(1) as u64) as i32
}

/// One data record read back from a partition's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Its offset.
    pub offset: i64,
    /// Its key (empty for a null key).
    pub key: Bytes,
    /// Its value (empty for a null value).
    pub value: Bytes,
}

impl LogRecord {
    /// A log record in the testkit's format, for tests of the checker itself.
    pub fn of(offset: i64, i: u64, size: usize) -> Self {
        Self {
            offset,
            key: record_key(i),
            value: record_value(i, size),
        }
    }
}

/// How one send ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged.
    Acked(DeliveryReport),
    /// Failed with this error.
    Failed(String),
    /// The waiter never returned (within the scenario's deadline).
    Unresolved,
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
    /// Everything in each log (acknowledged or not) must be in send order. Holds for an
    /// idempotent producer: a write from an older epoch cannot land after a newer one.
    pub whole_log_in_order: bool,
}

impl Expect {
    /// All sends acknowledged, whole logs in order.
    pub fn strict(partitions: i32, value_size: usize) -> Self {
        Self {
            partitions,
            value_size,
            all_acked: true,
            whole_log_in_order: true,
        }
    }
}

/// Counts from a passing check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Sends.
    pub sent: usize,
    /// Acknowledged sends.
    pub acked: usize,
    /// Failed sends.
    pub failed: usize,
    /// Failed sends whose record is in the log anyway (written, outcome lost).
    pub failed_but_written: usize,
    /// Data records in all logs.
    pub in_log: usize,
}

/// Up to this many offending records are named per kind of violation.
const SHOW: usize = 8;

#[derive(Default)]
struct Violations {
    kinds: Vec<(&'static str, usize, Vec<String>)>,
}

impl Violations {
    fn add(&mut self, kind: &'static str, item: impl FnOnce() -> String) {
        let entry = match self.kinds.iter_mut().position(|(k, ..)| *k == kind) {
            Some(i) => &mut self.kinds[i],
            None => {
                self.kinds.push((kind, 0, Vec::new()));
                self.kinds.last_mut().expect("pushed")
            }
        };
        entry.1 += 1;
        if entry.2.len() < SHOW {
            entry.2.push(item());
        }
    }
}

/// Parses a decimal ASCII record index.
fn parse_index(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Checks `outcomes` (indexed by record) against `logs` (partition → records in offset
/// order). Returns counts, or a readable report naming the first offending records.
pub fn check(
    outcomes: &[Outcome],
    logs: &BTreeMap<i32, Vec<LogRecord>>,
    expect: &Expect,
) -> Result<Summary, String> {
    let p_count = expect.partitions;
    let mut v = Violations::default();
    let mut summary = Summary {
        sent: outcomes.len(),
        ..Summary::default()
    };

    // Where each record index sits in the logs: (partition, offset), every occurrence.
    let mut seen: HashMap<u64, Vec<(i32, i64)>> = HashMap::with_capacity(outcomes.len());
    for (&p, log) in logs {
        let mut prev_offset = None;
        for r in log {
            summary.in_log += 1;
            if prev_offset.is_some_and(|o| r.offset <= o) {
                v.add("log offsets not increasing", || {
                    format!("p{p}@{}", r.offset)
                });
            }
            prev_offset = Some(r.offset);
            let Some(i) = parse_index(&r.key) else {
                v.add("unparseable key", || {
                    format!(
                        "p{p}@{} key {:?}",
                        r.offset,
                        String::from_utf8_lossy(&r.key)
                    )
                });
                continue;
            };
            if i as usize >= outcomes.len() {
                v.add("never sent", || format!("{i} (p{p}@{})", r.offset));
                continue;
            }
            if r.value != record_value(i, expect.value_size) {
                v.add("value does not match key", || {
                    format!("{i} (p{p}@{})", r.offset)
                });
            }
            if record_partition(i, p_count) != p {
                v.add("in the wrong partition", || {
                    format!("{i} in p{p}, sent to p{}", record_partition(i, p_count))
                });
            }
            seen.entry(i).or_default().push((p, r.offset));
        }
    }

    let mut dup: Vec<(&u64, &Vec<(i32, i64)>)> =
        seen.iter().filter(|(_, at)| at.len() > 1).collect();
    dup.sort();
    for (i, at) in dup {
        v.add("duplicated in the log", || {
            let at: Vec<String> = at.iter().map(|(p, o)| format!("p{p}@{o}")).collect();
            format!("{i} at {}", at.join(", "))
        });
    }

    for (i, outcome) in outcomes.iter().enumerate() {
        let i = i as u64;
        let p = record_partition(i, p_count);
        let at = seen.get(&i);
        match outcome {
            Outcome::Unresolved => v.add("send never resolved", || i.to_string()),
            Outcome::Failed(e) => {
                summary.failed += 1;
                if at.is_some() {
                    summary.failed_but_written += 1;
                }
                if expect.all_acked {
                    v.add("failed (all sends must be acknowledged)", || {
                        format!("{i}: {e}")
                    });
                }
            }
            Outcome::Acked(report) => {
                summary.acked += 1;
                if report.partition != p {
                    v.add("acknowledged with the wrong partition", || {
                        format!("{i} reported p{}, sent to p{p}", report.partition)
                    });
                }
                match at {
                    None => v.add("acknowledged but not in the log (lost)", || {
                        format!("{i} (p{p})")
                    }),
                    Some(at) => {
                        if let Some(off) = report.offset {
                            if !at.contains(&(p, off)) {
                                v.add("acknowledged offset does not match the log", || {
                                    let at: Vec<String> =
                                        at.iter().map(|(p, o)| format!("p{p}@{o}")).collect();
                                    format!(
                                        "{i} acked at p{p}@{off}, log has it at {}",
                                        at.join(", ")
                                    )
                                });
                            }
                        }
                    }
                }
            }
        }
    }

    // Order: within each partition, record indexes must increase with the offset.
    for (&p, log) in logs {
        let mut last_acked: Option<u64> = None;
        let mut last_any: Option<u64> = None;
        for r in log {
            let Some(i) = parse_index(&r.key).filter(|&i| (i as usize) < outcomes.len()) else {
                continue;
            };
            let acked = matches!(outcomes[i as usize], Outcome::Acked(_));
            if acked {
                if let Some(prev) = last_acked.filter(|&prev| prev >= i) {
                    v.add("acknowledged records out of send order", || {
                        format!("{i} after {prev} in p{p} (@{})", r.offset)
                    });
                }
                last_acked = Some(i);
            }
            if let Some(prev) = last_any.filter(|&prev| prev >= i) {
                let both_acked = acked && matches!(outcomes[prev as usize], Outcome::Acked(_));
                if expect.whole_log_in_order && !both_acked && prev != i {
                    v.add("log out of send order (an unacknowledged record)", || {
                        format!("{i} after {prev} in p{p} (@{})", r.offset)
                    });
                }
            }
            last_any = Some(last_any.map_or(i, |l| l.max(i)));
        }
    }

    if v.kinds.is_empty() {
        return Ok(summary);
    }
    let mut msg = format!(
        "exactly-once check failed: {} sent, {} acked, {} failed; logs hold {} records over {} partitions\n",
        summary.sent,
        summary.acked,
        summary.failed,
        summary.in_log,
        logs.len()
    );
    for (kind, n, items) in &v.kinds {
        let more = if *n > items.len() { ", ..." } else { "" };
        let _ = writeln!(msg, "  {kind}: {n} (first: {}{more})", items.join("; "));
    }
    Err(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: i32 = 3;
    const B: usize = 12;

    /// `n` records, all acked at the offsets a perfect broker would give them.
    fn perfect(n: u64) -> (Vec<Outcome>, BTreeMap<i32, Vec<LogRecord>>) {
        let mut logs: BTreeMap<i32, Vec<LogRecord>> = BTreeMap::new();
        let mut outcomes = Vec::new();
        for i in 0..n {
            let p = record_partition(i, P);
            let log = logs.entry(p).or_default();
            let offset = log.len() as i64;
            log.push(LogRecord::of(offset, i, B));
            outcomes.push(Outcome::Acked(DeliveryReport {
                partition: p,
                offset: Some(offset),
            }));
        }
        (outcomes, logs)
    }

    fn err(outcomes: &[Outcome], logs: &BTreeMap<i32, Vec<LogRecord>>) -> String {
        check(outcomes, logs, &Expect::strict(P, B)).expect_err("the check must fail")
    }

    #[test]
    fn format() {
        assert_eq!(&record_key(42)[..], b"42");
        assert_eq!(&record_value(42, 6)[..], b"42....");
        assert_eq!(&record_value(123_456, 3)[..], b"123456");
        assert_eq!(record_partition(7, 6), 1);
        assert_eq!(parse_index(b"007"), Some(7));
        assert_eq!(parse_index(b"-1"), None);
        assert_eq!(parse_index(b""), None);
    }

    #[test]
    fn a_perfect_run_passes() {
        let (o, l) = perfect(100);
        let s = check(&o, &l, &Expect::strict(P, B)).unwrap();
        assert_eq!((s.sent, s.acked, s.failed, s.in_log), (100, 100, 0, 100));
    }

    #[test]
    fn a_duplicated_record_fails() {
        let (o, mut l) = perfect(30);
        let log = l.get_mut(&1).unwrap();
        let next = log.len() as i64;
        log.push(LogRecord::of(next, 4, B));
        let e = err(&o, &l);
        assert!(
            e.contains("duplicated in the log: 1 (first: 4 at p1@1, p1@10)"),
            "{e}"
        );
        // The copy also sits out of order.
        assert!(e.contains("out of send order"), "{e}");
    }

    #[test]
    fn a_reordered_log_fails() {
        let (o, mut l) = perfect(30);
        let log = l.get_mut(&2).unwrap();
        let (a, b) = (log[3].key.clone(), log[4].key.clone());
        let (va, vb) = (log[3].value.clone(), log[4].value.clone());
        (log[3].key, log[3].value, log[4].key, log[4].value) = (b, vb, a, va);
        let e = err(&o, &l);
        assert!(
            e.contains("acknowledged records out of send order: 1 (first: 11 after 14 in p2 (@4))"),
            "{e}"
        );
        // And the reported offsets no longer match.
        assert!(
            e.contains("acknowledged offset does not match the log: 2"),
            "{e}"
        );
    }

    #[test]
    fn an_unacknowledged_record_out_of_order_fails_unless_relaxed() {
        let (mut o, mut l) = perfect(30);
        // Record 3 failed, yet landed after record 27 in p0.
        o[3] = Outcome::Failed("timed out".into());
        let log = l.get_mut(&0).unwrap();
        let r3 = log.remove(1);
        for r in log.iter_mut().skip(1) {
            r.offset -= 1;
        }
        let last = log.len() as i64;
        log.push(LogRecord { offset: last, ..r3 });
        for (i, out) in o.iter_mut().enumerate() {
            if let Outcome::Acked(rep) = out {
                if rep.partition == 0 && i > 3 {
                    rep.offset = rep.offset.map(|x| x - 1);
                }
            }
        }
        let mut relaxed = Expect::strict(P, B);
        relaxed.all_acked = false;
        relaxed.whole_log_in_order = false;
        let s = check(&o, &l, &relaxed).unwrap();
        assert_eq!((s.failed, s.failed_but_written), (1, 1));
        relaxed.whole_log_in_order = true;
        let e = check(&o, &l, &relaxed).unwrap_err();
        assert!(e.contains("log out of send order (an unacknowledged record): 1 (first: 3 after 27 in p0 (@9))"), "{e}");
    }

    #[test]
    fn a_lost_record_fails() {
        let (o, mut l) = perfect(30);
        l.get_mut(&0).unwrap().remove(5);
        let e = err(&o, &l);
        assert!(
            e.contains("acknowledged but not in the log (lost): 1 (first: 15 (p0))"),
            "{e}"
        );
    }

    #[test]
    fn failures_unresolved_and_wrong_reports_fail() {
        let (mut o, l) = perfect(30);
        o[2] = Outcome::Failed("boom".into());
        o[5] = Outcome::Unresolved;
        o[7] = Outcome::Acked(DeliveryReport {
            partition: 2,
            offset: Some(2),
        });
        o[8] = Outcome::Acked(DeliveryReport {
            partition: 2,
            offset: Some(0),
        });
        let e = err(&o, &l);
        assert!(
            e.contains("failed (all sends must be acknowledged): 1 (first: 2: boom)"),
            "{e}"
        );
        assert!(e.contains("send never resolved: 1 (first: 5)"), "{e}");
        assert!(
            e.contains(
                "acknowledged with the wrong partition: 1 (first: 7 reported p2, sent to p1)"
            ),
            "{e}"
        );
        assert!(
            e.contains("acknowledged offset does not match the log: 1 (first: 8 acked at p2@0, log has it at p2@2)"),
            "{e}"
        );
    }

    #[test]
    fn foreign_misplaced_and_corrupt_records_fail() {
        let (o, mut l) = perfect(30);
        let log = l.get_mut(&0).unwrap();
        let n = log.len() as i64;
        log.push(LogRecord::of(n, 99, B));
        log.push(LogRecord {
            offset: n + 1,
            key: Bytes::from_static(b"x"),
            value: Bytes::new(),
        });
        let log1 = l.get_mut(&1).unwrap();
        log1[0].value = record_value(1, B + 1);
        let e = err(&o, &l);
        assert!(e.contains("never sent: 1 (first: 99 (p0@10))"), "{e}");
        assert!(e.contains("unparseable key: 1"), "{e}");
        assert!(
            e.contains("value does not match key: 1 (first: 1 (p1@0))"),
            "{e}"
        );
        let (o, mut l) = perfect(30);
        let r = l.get_mut(&0).unwrap().pop().unwrap();
        l.get_mut(&1).unwrap().push(LogRecord { offset: 10, ..r });
        let e = err(&o, &l);
        assert!(
            e.contains("in the wrong partition: 1 (first: 27 in p1, sent to p0)"),
            "{e}"
        );
    }

    #[test]
    fn the_report_names_at_most_a_few_keys() {
        let (o, mut l) = perfect(300);
        l.get_mut(&0).unwrap().clear();
        let e = err(&o, &l);
        assert!(
            e.contains("acknowledged but not in the log (lost): 100 (first: 0 (p0); 3 (p0);"),
            "{e}"
        );
        assert!(e.contains(", ...)"), "{e}");
        assert!(e.lines().count() < 5, "{e}");
    }
}
