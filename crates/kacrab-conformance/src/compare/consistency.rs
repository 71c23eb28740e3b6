//! Whether one side's output holds together as a producer's own record, whatever the
//! other side did: what a rule that stops comparing the two sides at some point (the
//! state split, `txn_state_split`) still checks on each.

use std::collections::BTreeMap;

use super::field;
use super::lines::{ABORT_OK, BEGIN_OK, COMMIT_OK};
use crate::trace::{Op, Trace};

/// The entries of a `produce` or `answered` line: (partition, the rest of the entry).
fn entries(line: &str) -> impl Iterator<Item = (&str, &str)> {
    field(line, "batches")
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.split_once(':'))
}

/// Whether `out`, one side's output for `trace`, holds together:
/// * every record the trace sends has exactly one outcome line (none at all where
///   Java's harness threw in its final drain, before writing them);
/// * every Produce answer names batches that side sent to that broker and has not had
///   answered since (a broken connection loses what was on it);
/// * every batch is stamped with a producer id and epoch an InitProducerId of that side
///   was granted before (the harnesses grant `1000 + n` to the n-th granted request
///   without an id, and bump the epoch of one with an id), and no batch leaves a gap in
///   its partition's sequences under that identity (a base sequence above the next
///   one; a lower one is a batch sent again, or renumbered by Java's sequence restart);
/// * every delivered record's partition had some batch acknowledged (NONE or
///   DUPLICATE_SEQUENCE_NUMBER), and its offset is one a NONE answer handed out there,
///   to no other record;
/// * every AddPartitionsToTxn and EndTxn carries a producer id and epoch that side was
///   granted (an older one too: Java sends requests built before a bump);
/// * each EndTxn follows the application's accepted call of its kind in the
///   transaction, and each transactional request but a lookup is answered, or its
///   connection (the coordinator's broker) closes, before the next one and by the end.
pub(super) fn holds_together(trace: &Trace, out: &[String]) -> bool {
    outcomes_once(trace, out)
        && answers_what_was_sent(out)
        && stamps_granted_and_gap_free(out)
        && delivered_acknowledged(trace, out)
        && offsets_handed_out(trace, out)
        && calls_and_requests(trace, out)
}

/// The partition of each record the trace sends, by record number.
fn partitions_of(trace: &Trace) -> Vec<i32> {
    trace
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Send { p, .. } => Some(*p),
            _ => None,
        })
        .collect()
}

/// The delivered records with a known offset: (record, partition, offset).
pub(super) fn delivered(trace: &Trace, out: &[String]) -> Vec<(usize, i32, i64)> {
    let partition_of = partitions_of(trace);
    out.iter()
        .filter(|l| field(l, "ev") == Some("outcome"))
        .filter_map(|l| {
            let rec = field(l, "rec")?.parse::<usize>().ok()?;
            let offset = field(l, "result")?
                .strip_prefix("ok:")?
                .parse::<i64>()
                .ok()?;
            (offset >= 0).then_some((rec, *partition_of.get(rec)?, offset))
        })
        .collect()
}

/// Whether every delivered record's offset is one a NONE answer handed out on its
/// partition (the harnesses give a NONE-answered batch the partition's log end as its
/// base offset and move the end by its record count), and no two records share one.
fn offsets_handed_out(trace: &Trace, out: &[String]) -> bool {
    let mut log_end: BTreeMap<i32, i64> = BTreeMap::new();
    for l in out.iter().filter(|l| field(l, "ev") == Some("answered")) {
        for (p, rest) in entries(l) {
            if let (Some(p), Some((stamp, "NONE"))) = (p.parse::<i32>().ok(), rest.rsplit_once('='))
            {
                let count: i64 = stamp
                    .rsplit(':')
                    .next()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                *log_end.entry(p).or_insert(0) += count;
            }
        }
    }
    let delivered = delivered(trace, out);
    let mut seen: Vec<(i32, i64)> = Vec::new();
    delivered.iter().all(|&(_, p, o)| {
        let fresh = !seen.contains(&(p, o));
        seen.push((p, o));
        fresh && o < log_end.get(&p).copied().unwrap_or(0)
    })
}

fn outcomes_once(trace: &Trace, out: &[String]) -> bool {
    let records = trace
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Send { .. }))
        .count();
    let mut seen = vec![0u32; records];
    // Java's harness writes the outcomes after its final drain; where the drain throws
    // (one of Java's bookkeeping failures), it writes the exception and none.
    let outcomes = out.iter().filter(|l| field(l, "ev") == Some("outcome"));
    if outcomes.clone().next().is_none()
        && out.iter().any(|l| field(l, "ev") == Some("java_exception"))
    {
        return true;
    }
    for l in outcomes {
        match field(l, "rec").and_then(|r| r.parse::<usize>().ok()) {
            Some(r) if r < records => seen[r] += 1,
            _ => return false,
        }
    }
    seen.iter().all(|&n| n == 1)
}

fn answers_what_was_sent(out: &[String]) -> bool {
    // Per broker, the stamps on the wire, one entry per time sent.
    let mut on_wire: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for l in out {
        let node = field(l, "node").unwrap_or_default();
        match field(l, "ev") {
            Some("produce") => {
                let wire = on_wire.entry(node).or_default();
                wire.extend(
                    field(l, "batches")
                        .unwrap_or_default()
                        .split(',')
                        .map(str::to_string),
                );
            }
            Some("answered") => {
                let wire = on_wire.entry(node).or_default();
                for b in field(l, "batches").unwrap_or_default().split(',') {
                    let stamp = b.rsplit_once('=').map_or(b, |(s, _)| s);
                    let Some(k) = wire.iter().position(|s| s == stamp) else {
                        return false;
                    };
                    wire.remove(k);
                }
            }
            Some("disconnected") => {
                on_wire.remove(node);
            }
            _ => {}
        }
    }
    true
}

fn stamps_granted_and_gap_free(out: &[String]) -> bool {
    let mut granted: Vec<(String, String)> = Vec::new();
    let mut asked: Option<(i64, i64)> = None;
    let mut fresh = 0i64;
    // Per (partition, pid, epoch): the next sequence.
    let mut next: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for l in out {
        match (field(l, "ev"), field(l, "api")) {
            (Some("txn" | "init"), Some("init") | None) if field(l, "pid").is_some() => {
                let num = |k| field(l, k).and_then(|v| v.parse::<i64>().ok());
                asked = num("pid").zip(num("epoch"));
            }
            (Some("coord_answered"), Some("init")) => {
                if field(l, "error") == Some("NONE") {
                    if let Some((pid, epoch)) = asked {
                        let (p, e) = if pid >= 0 {
                            (pid, epoch + 1)
                        } else {
                            (1000 + fresh, 0)
                        };
                        fresh += 1;
                        granted.push((p.to_string(), e.to_string()));
                    }
                }
                asked = None;
            }
            (Some("txn"), Some("add_partitions" | "end_txn")) => {
                let identity = (
                    field(l, "pid").unwrap_or_default().to_string(),
                    field(l, "epoch").unwrap_or_default().to_string(),
                );
                if !granted.contains(&identity) {
                    return false;
                }
            }
            (Some("produce"), _) => {
                for (p, rest) in entries(l) {
                    let v: Vec<&str> = rest.split(':').collect();
                    let [pid, epoch, seq, count] = v[..] else {
                        return false;
                    };
                    let (Ok(seq), Ok(count)) = (seq.parse::<i64>(), count.parse::<i64>()) else {
                        return false;
                    };
                    let identity = (pid.to_string(), epoch.to_string());
                    // The idempotent harness grants its id at once, without a line.
                    if !granted.is_empty() && !granted.contains(&identity) {
                        return false;
                    }
                    let n = next
                        .entry((p.to_string(), identity.0, identity.1))
                        .or_insert(0);
                    if seq > *n {
                        return false;
                    }
                    *n = (*n).max(seq + count);
                }
            }
            _ => {}
        }
    }
    true
}

fn delivered_acknowledged(trace: &Trace, out: &[String]) -> bool {
    let partition_of = partitions_of(trace);
    let acknowledged = |p: i32| {
        out.iter().any(|l| {
            field(l, "ev") == Some("answered")
                && entries(l).any(|(q, rest)| {
                    q == p.to_string()
                        && (rest.ends_with("=NONE") || rest.ends_with("=DUPLICATE_SEQUENCE_NUMBER"))
                })
        })
    };
    out.iter().all(|l| {
        field(l, "ev") != Some("outcome")
            || !field(l, "result").is_some_and(|r| r.starts_with("ok"))
            || field(l, "rec")
                .and_then(|r| r.parse::<usize>().ok())
                .and_then(|r| partition_of.get(r))
                .is_some_and(|&p| acknowledged(p))
    })
}

fn calls_and_requests(trace: &Trace, out: &[String]) -> bool {
    let mut called: Option<&str> = None;
    let ends_follow_calls = out.iter().all(|l| {
        if l == BEGIN_OK {
            called = None;
        } else if l == COMMIT_OK {
            called = Some("1");
        } else if l == ABORT_OK {
            called = Some("0");
        } else if field(l, "api") == Some("end_txn") && field(l, "ev") == Some("txn") {
            return called.is_some() && field(l, "commit") == called;
        }
        true
    });
    let coordinator = trace.config.nodes.to_string();
    let mut waiting: Option<&str> = None;
    let one_at_a_time = out.iter().all(|l| {
        // A lookup may go out while another request waits for the coordinator.
        if field(l, "api") == Some("find_coordinator") {
            return true;
        }
        match field(l, "ev") {
            Some("txn") => {
                if waiting.is_some() {
                    return false;
                }
                waiting = field(l, "api");
            }
            Some("coord_answered") => {
                if waiting.is_some_and(|api| Some(api) != field(l, "api")) {
                    return false;
                }
                waiting = None;
            }
            Some("disconnected") if field(l, "node") == Some(&coordinator) => waiting = None,
            _ => {}
        }
        true
    });
    ends_follow_calls && one_at_a_time && waiting.is_none()
}
