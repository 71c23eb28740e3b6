//! Detectors for timing differences: when one side sends in another step than the
//! other (Java's drain stopping at another partition, Java sending on a connection that
//! closes in the same step, the core's bump waiting for possibly-written batches).
//! `docs/design.md`, "Differential conformance against Java".

use std::collections::BTreeMap;

#[cfg(doc)]
use super::Verdict;
use super::{field, in_flight, possibly_written, PartitionEvent, Stamp};

/// Java's report that its drain of `node` stopped early (`DrainWatch` in the Java
/// harness): the partitions in `left` had a head batch the loop would have taken.
#[derive(Clone, Debug)]
pub(super) struct DrainStop {
    /// When (the step).
    t: i64,
    /// The node drained.
    node: i32,
    /// The partitions left behind.
    left: Vec<i32>,
}

/// Whether Java reported, in step `t`, that its drain of `node` stopped and left `p`'s
/// head batch behind.
pub(super) fn stopped_at(stops: &[DrainStop], node: i32, t: i64, p: i32) -> bool {
    stops
        .iter()
        .any(|s| s.node == node && s.t == t && s.left.contains(&p))
}

/// Splits Java's `drain_stop` annotations off its output (the core writes none), so both
/// sides' line indices stay comparable.
pub(super) fn split_drain_stops(java: &[String]) -> (Vec<String>, Vec<DrainStop>) {
    let mut lines = Vec::with_capacity(java.len());
    let mut stops = Vec::new();
    for line in java {
        if field(line, "ev") == Some("drain_stop") {
            stops.push(DrainStop {
                t: field(line, "s").and_then(|t| t.parse().ok()).unwrap_or(-1),
                node: field(line, "node")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(-1),
                left: field(line, "left")
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|p| p.parse().ok())
                    .collect(),
            });
        } else {
            lines.push(line.clone());
        }
    }
    (lines, stops)
}

/// Where (index in `p`'s history) the core sent a batch at a moment when Java's drain of
/// that node stopped at another partition and left `p`'s head batch behind (a
/// `drain_stop` of Java's in the very step of the core's send), if that is what `p`'s
/// first difference, at `k` (its history's length if none), comes from. The send is
/// either the earliest one of the shared history that the core made before Java (the
/// same stamp, in a later step in Java: the answers then reach other batches), or
/// the core's event `k` itself: a new batch with the next sequence of its identity, which
/// Java sends later with at least as many records (its batch kept filling), under that
/// identity and sequence or, after a bump meanwhile, as sequence 0 of its new identity
/// (possibly in the same step, after an answer freed the partition).
pub(super) fn java_drain_stopped(
    p: i32,
    k: usize,
    (je, jt): (&[PartitionEvent], &[i64]),
    (ce, ct): (&[PartitionEvent], &[i64]),
    stops: &[DrainStop],
) -> Option<usize> {
    let stopped_at = |node: i32, t: i64| {
        stops
            .iter()
            .any(|s| s.node == node && s.t == t && s.left.contains(&p))
    };
    for (i, e) in ce.iter().enumerate().take(k) {
        if let PartitionEvent::Sent { node, .. } = e {
            let (tc, tj) = (ct.get(i).copied(), jt.get(i).copied());
            if tc != tj {
                let ahead = tc < tj && tc.is_some_and(|t| stopped_at(*node, t));
                return ahead.then_some(i);
            }
        }
    }
    let Some(PartitionEvent::Sent { node, stamp: c }) = ce.get(k) else {
        return None;
    };
    if matches!(je.get(k), Some(PartitionEvent::Sent { stamp, node: n }) if stamp == c && n == node)
    {
        return None;
    }
    // The core's send is either a retry of a batch both sides sent before (its stamp
    // unchanged: Java resends that very stamp later), or a new batch with its identity's
    // next sequence (Java sends it later, after any retries of older batches).
    let retry = resent(&je[..k], c);
    if !retry && c.seq != next_sequence(&je[..k], c) {
        return None;
    }
    let later = je
        .iter()
        .zip(jt)
        .enumerate()
        .skip(k)
        .find_map(|(i, (e, t))| match e {
            PartitionEvent::Sent { stamp, .. } if retry => (stamp == c).then_some((stamp, *t)),
            PartitionEvent::Sent { stamp, .. } if !resent(&je[..i], stamp) => Some((stamp, *t)),
            _ => None,
        });
    let (j, tj) = later?;
    let same_batch = if j.identity() == c.identity() {
        j.seq == c.seq
    } else {
        !retry && j.seq == 0
    };
    let tc = ct.get(k).copied().unwrap_or(-1);
    (same_batch && j.count >= c.count && tc <= tj && stopped_at(*node, tc)).then_some(k)
}

/// Whether `p`'s first difference, at `k`, is Java losing a request it put on a
/// connection in the very step that connection was closed for an older request's
/// timeout (see [`Verdict::JavaSendsOnTimedOutConnection`]); `core_closes` holds the
/// core's closes for a timeout, as (node, step).
pub(super) fn java_sent_on_timed_out_connection(
    k: usize,
    (je, jt): (&[PartitionEvent], &[i64]),
    (ce, ct): (&[PartitionEvent], &[i64]),
    core_closes: &[(i32, i64)],
    java_full: &dyn Fn(i32, i64) -> bool,
) -> bool {
    // Java's send in the step of the close, on the connection about to close (while the
    // core's first difference is that close itself, before it sent anything there).
    if let (
        Some(PartitionEvent::Sent { node, .. }),
        Some(PartitionEvent::Disconnected { node: closed }),
        Some(PartitionEvent::Disconnected { node: core_closed }),
    ) = (je.get(k), je.get(k + 1), ce.get(k))
    {
        let step = jt.get(k).copied().unwrap_or(-1);
        return step >= 0
            && node == closed
            && node == core_closed
            && jt.get(k + 1) == Some(&step)
            && ct.get(k) == Some(&step)
            && core_closes.contains(&(*node, step));
    }
    let Some(PartitionEvent::Disconnected { node }) = je.get(k) else {
        return false;
    };
    let Some(&step) = jt.get(k).filter(|s| **s >= 0) else {
        return false;
    };
    if matches!(ce.get(k), Some(PartitionEvent::Disconnected { .. })) {
        return false;
    }
    // The partition's batch on the connection that timed out: the core closes it first
    // and resends the batch in that step (to another leader, so no backoff), and writes
    // the send before the close (a step's lines are ordered by node); Java's drain in that
    // step still found the batch in flight, and by the time its `poll` gave it back the
    // new leader's connection was full (`max.in.flight` requests unanswered at the end of
    // the step), so its retry goes out in a later step.
    if let (
        Some(PartitionEvent::Sent {
            stamp: c,
            node: target,
        }),
        Some(PartitionEvent::Disconnected { node: core_closed }),
        Some(PartitionEvent::Sent { stamp: j, .. }),
    ) = (ce.get(k), ce.get(k + 1), je.get(k + 1))
    {
        return core_closed == node
            && ct.get(k) == Some(&step)
            && ct.get(k + 1) == Some(&step)
            && jt.get(k + 1).is_some_and(|t| *t > step)
            && j == c
            && in_flight(&je[..k]).iter().any(|(n, s)| n == node && s == c)
            && core_closes.contains(&(*node, step))
            && java_full(*target, step);
    }
    // The batches of the partition on that connection, and when each was sent.
    let mut on_connection: Vec<(&Stamp, i64)> = Vec::new();
    for (i, e) in je[..k].iter().enumerate() {
        match e {
            PartitionEvent::Sent { node: n, stamp } if n == node => {
                on_connection.push((stamp, jt.get(i).copied().unwrap_or(-1)));
            }
            PartitionEvent::Answered { stamp, .. } => {
                if let Some(x) = on_connection.iter().position(|(s, _)| *s == stamp) {
                    on_connection.remove(x);
                }
            }
            PartitionEvent::Disconnected { node: n } if n == node => on_connection.clear(),
            _ => {}
        }
    }
    !on_connection.is_empty()
        && on_connection.iter().all(|(_, sent)| *sent == step)
        && core_closes.contains(&(*node, step))
}

/// Whether Java's connection to `node` held `max_in_flight` unanswered Produce requests
/// at the end of step `step` (`InFlightRequests.canSendMore` refuses another). Closes
/// for a timeout happen in clock steps, which carry no answers, so the step ends at its
/// last line that names a step.
pub(super) fn java_connection_full(
    java: &[String],
    node: i32,
    step: i64,
    max_in_flight: u32,
) -> bool {
    let step_of = |l: &String| field(l, "s").and_then(|s| s.parse::<i64>().ok());
    let Some(end) = java
        .iter()
        .rposition(|l| step_of(l).is_some_and(|s| s <= step))
    else {
        return false;
    };
    let mut unanswered = 0usize;
    for line in &java[..=end] {
        let on_node = field(line, "node").and_then(|n| n.parse::<i32>().ok()) == Some(node);
        match field(line, "ev") {
            Some("produce") if on_node => unanswered += 1,
            Some("answered") if on_node => unanswered = unanswered.saturating_sub(1),
            Some("disconnected") if on_node => unanswered = 0,
            _ => {}
        }
    }
    unanswered >= max_in_flight as usize
}

/// The stamps in `events` whose attempt may be in the log without an acknowledgement
/// since: answered with a code after which the broker may have appended it, or on a
/// connection that broke.
pub(super) fn unsettled(events: &[PartitionEvent]) -> Vec<Stamp> {
    let mut flying: Vec<(i32, Stamp)> = Vec::new();
    let mut unknown: Vec<Stamp> = Vec::new();
    for e in events {
        match e {
            PartitionEvent::Sent { node, stamp } => flying.push((*node, stamp.clone())),
            PartitionEvent::Answered { stamp, error } => {
                flying.retain(|(_, s)| s != stamp);
                if error == "NONE" || error == "DUPLICATE_SEQUENCE_NUMBER" {
                    unknown.retain(|s| s != stamp);
                } else if possibly_written(error) && !unknown.contains(stamp) {
                    unknown.push(stamp.clone());
                }
            }
            PartitionEvent::Disconnected { node } => {
                for (_, s) in flying.iter().filter(|(n, _)| n == node) {
                    if !unknown.contains(s) {
                        unknown.push(s.clone());
                    }
                }
                flying.retain(|(n, _)| n != node);
            }
        }
    }
    unknown
}

/// Whether `p`'s first difference, at `k`, is the core stamping a new batch with the
/// identity it used last, continuing that identity's numbering, while its bump waits
/// for batches that may be in the log (see [`Verdict::BumpWaitsForPossiblyWrittenBatches`]).
/// `java_identities` are the identities Java stamped any batch with,
/// `java_expired_unsent` how many of `p`'s records Java failed by delivery timeout,
/// `java_asks` how many error answers and expiries Java saw in all; `core` is the
/// core's whole projection and `core_at` its output lines; `led_by(node)` tells whether
/// the trace ever moves `p`'s leadership to `node`.
pub(super) fn bump_waits_for_possibly_written(
    p: i32,
    k: usize,
    (je, java_identities, java_expired_unsent, java_asks): (
        &[PartitionEvent],
        &[(i64, i32)],
        i64,
        i64,
    ),
    core: &BTreeMap<i32, Vec<PartitionEvent>>,
    core_at: &BTreeMap<i32, Vec<usize>>,
    led_by: &dyn Fn(i32) -> bool,
) -> bool {
    let empty = Vec::new();
    let ce = core.get(&p).unwrap_or(&empty);
    let Some(PartitionEvent::Sent { node: cn, stamp: c }) = ce.get(k) else {
        return false;
    };
    // Java's next new batch of the partition (its retries of batches sent before, under
    // their old stamps, come first): the same node (or the one leadership moved to
    // meanwhile), at least the same records, sequence 0 of a newer identity (every
    // partition restarts at 0 after a bump).
    // Java may never send it: held behind the partition's stale batch in flight, its
    // records then expire in the accumulator (at least as many records of the partition
    // fail by delivery timeout in Java as the core stamped), and Java's next new batch,
    // if any, carries later records.
    // Sequence 0, or after the records of the partition's older batches Java still
    // tracked (sent, not settled): an idempotent bump asked for by this partition
    // renumbers those first (`TransactionManager.bumpIdempotentProducerEpoch`,
    // `startSequencesAtBeginning`), though on the wire they keep their old stamps.
    let java_new = je.iter().enumerate().skip(k).find_map(|(i, e)| match e {
        PartitionEvent::Sent { node, stamp } if !resent(&je[..i], stamp) => Some((i, node, stamp)),
        _ => None,
    });
    let java_new = match java_new {
        Some((i, jn, j)) => {
            let newer = j.pid != c.pid || j.epoch > c.epoch;
            let records = j.count >= c.count || java_expired_unsent >= c.count;
            let first = j.seq == 0 || j.seq == renumbered_first(je, i, j);
            if (jn != cn && !led_by(*jn)) || !first || !records || !newer {
                return false;
            }
            Some(j.identity())
        }
        None if java_expired_unsent >= c.count => None,
        None => return false,
    };
    // The core's stamp continues its identity's numbering on this partition.
    if c.seq != next_sequence(&je[..k], c) {
        return false;
    }
    let Some(&line) = core_at.get(&p).and_then(|a| a.get(k)) else {
        return false;
    };
    // Every core event with its line, to look before and after `line`.
    let events = || {
        core.iter().flat_map(|(q, evs)| {
            evs.iter().enumerate().map(move |(i, e)| {
                let at = core_at.get(q).and_then(|a| a.get(i)).copied();
                (*q, e, at.unwrap_or(usize::MAX))
            })
        })
    };
    let stamped = |e: &PartitionEvent| match e {
        PartitionEvent::Sent { stamp, .. } => Some(stamp.identity()),
        _ => None,
    };
    // The core's last identity before `line` is `c`'s.
    let last_before = events()
        .filter(|(_, e, at)| *at < line && stamped(e).is_some())
        .max_by_key(|(_, _, at)| *at)
        .and_then(|(_, e, _)| stamped(e));
    if last_before.is_some_and(|i| i != c.identity()) {
        return false;
    }
    // When the core stamped a batch at output line `at`: another partition with an error
    // answer under the old identity (what asks for the bump), and some partition, this
    // one included, with a batch of the old identity on the wire or answered with a code
    // after which it may be in the log, not acknowledged since (what the bump waits for).
    let old = |s: &Stamp| s.identity() == c.identity();
    let before = |q: &i32, evs: &'_ Vec<PartitionEvent>, at: usize| -> Vec<PartitionEvent> {
        let n = core_at
            .get(q)
            .map_or(0, |a| a.iter().take_while(|x| **x < at).count());
        evs[..n.min(evs.len())].to_vec()
    };
    let waits_at = |at: usize| {
        core.iter().any(|(q, evs)| {
            let before = before(q, evs, at);
            in_flight(&before).iter().any(|(_, s)| old(s)) || unsettled(&before).iter().any(old)
        })
    };
    let asked = core.iter().any(|(q, evs)| {
        *q != p
            && before(q, evs, line).iter().any(|e| {
                matches!(e, PartitionEvent::Answered { stamp, error }
                    if old(stamp) && error != "NONE" && error != "DUPLICATE_SEQUENCE_NUMBER")
            })
    });
    // The core's new batches after `c`: each under Java's identity (the bump applied),
    // or under the old one while the bump still waits. The trace may end before the bump
    // shows, but the core never goes on with the old identity once nothing holds it.
    // Java may bump again before the core's first bump shows (its renumbered batch
    // answered OUT_OF_ORDER in turn, as the core's old-identity batch was), and this
    // partition may skip an identity other partitions used: a later identity is one
    // Java had too (stamped on any partition, or passed through between two bumps),
    // never one of the core's own.
    // Java bumps its epoch one at a time, and may bump twice before it stamps anything:
    // every epoch of the producer id between the old one and the highest Java stamped
    // was Java's too (Java bumped no more often than it saw error answers and expiries).
    let java_top = java_identities
        .iter()
        .filter(|(pid, _)| *pid == c.pid)
        .map(|(_, e)| *e)
        .max()
        .filter(|top| i64::from(*top) - i64::from(c.epoch) <= java_asks);
    let later_than_java = |id: (i64, i32)| {
        if id.0 == c.pid {
            id.1 > c.epoch && java_top.is_some_and(|top| id.1 <= top)
        } else {
            java_identities.contains(&id)
        }
    };
    let later_new: Vec<((i64, i32), usize)> = core
        .iter()
        .flat_map(|(q, evs)| {
            evs.iter().enumerate().filter_map(move |(i, e)| {
                let at = core_at.get(q).and_then(|a| a.get(i)).copied()?;
                match e {
                    PartitionEvent::Sent { stamp, .. }
                        if at > line && !resent(&evs[..i], stamp) =>
                    {
                        Some((stamp.identity(), at))
                    }
                    _ => None,
                }
            })
        })
        .collect();
    let later_fit = later_new.iter().all(|&(id, at)| {
        Some(id) == java_new || later_than_java(id) || (id == c.identity() && waits_at(at))
    });
    // Once the core's bump shows, Java's new identity for this partition is among the
    // core's (when Java sent the batch at all), or Java bumped more often: the core's
    // one bump, when it applies, answers every request for one made while it waited,
    // where Java bumps once per `runOnce` that saw such a request. Java cannot have
    // bumped more often than it saw error answers and expiries (`java_asks`).
    let bumped = later_new.iter().any(|&(id, _)| id != c.identity());
    let same_new = !bumped
        || java_new.is_none_or(|j| {
            later_new.iter().any(|&(id, _)| id == j)
                || (j.0 == c.pid && i64::from(j.1) - i64::from(c.epoch) <= java_asks)
        });
    asked && waits_at(line) && later_fit && same_new
}

/// Whether `events` already sent `stamp`'s batch: the same identity and base sequence (a
/// retry keeps its stamp).
pub(super) fn resent(events: &[PartitionEvent], stamp: &Stamp) -> bool {
    events.iter().any(|e| {
        matches!(e, PartitionEvent::Sent { stamp: s, .. }
            if s.identity() == stamp.identity() && s.seq == stamp.seq)
    })
}

/// The sequence after the last batch `events` sent under `stamp`'s identity (0 if none).
pub(super) fn next_sequence(events: &[PartitionEvent], stamp: &Stamp) -> i64 {
    events
        .iter()
        .filter_map(|e| match e {
            PartitionEvent::Sent { stamp: s, .. } if s.identity() == stamp.identity() => {
                Some(s.seq + s.count)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// Where this partition asked for Java's bump (one of its batches was answered with an
/// error before Java's new batch at `i`), how many records of its batches under other
/// identities Java still tracked then: sent before `i`, not settled before it (neither
/// acknowledged nor failed by an answer Kafka does not retry), and answered after it
/// under their old stamps (so still in Java's books, not expired). Java's bump renumbers
/// those first (`startSequencesAtBeginning`), so its new batch's sequence follows them.
fn renumbered_first(je: &[PartitionEvent], i: usize, stamp: &Stamp) -> i64 {
    let mut unsettled: Vec<&Stamp> = Vec::new();
    let mut asked = false;
    for e in &je[..i] {
        match e {
            PartitionEvent::Sent { stamp: s, .. } if !unsettled.contains(&s) => unsettled.push(s),
            PartitionEvent::Answered { stamp: s, error } => {
                let acked = error == "NONE" || error == "DUPLICATE_SEQUENCE_NUMBER";
                asked |= !acked;
                if acked || !crate::core_side::error_by_name(error).is_retriable() {
                    unsettled.retain(|u| *u != s);
                }
            }
            _ => {}
        }
    }
    let answered_later = |s: &Stamp| {
        je[i..]
            .iter()
            .any(|e| matches!(e, PartitionEvent::Answered { stamp: a, .. } if a == s))
    };
    if !asked {
        return 0;
    }
    unsettled
        .iter()
        .filter(|s| s.identity() != stamp.identity() && answered_later(s))
        .map(|s| s.count)
        .sum()
}

/// Departure 2's wait where the core's first difference is under an intermediate
/// identity (see [`Verdict::BumpWaitsForPossiblyWrittenBatches`]): two error answers
/// under the old identity ask for two bumps; the core applies the first at once (its
/// partition had nothing else on the wire or possibly written) and stamps `p`'s new
/// batch, at `k`, with the identity that bump gave it, while the second bump waits for
/// a batch of the old identity still on the wire or possibly written; Java applies both
/// at once (one per `runOnce` that saw such an answer, `epochBumpRequired`) and stamps
/// that batch under the later identity. Exact: the core's batch continues its identity's
/// numbering on `p` and is under the same producer id as the core's last stamp before it
/// (the old identity) with a newer epoch; before it, more error answers under the old
/// identity reached other partitions than the core bumped epochs, and some partition had
/// a batch of the old identity on the wire or possibly written, unsettled (what the owed
/// bump waits for); Java's next new batch on `p` goes to the same broker (or the one
/// leadership moved to) with at least as many records as sequence 0 (or after the
/// records it renumbered) of a still newer epoch of the same producer id; and every new
/// batch the core stamps from its first difference on is under an epoch of that producer
/// id above the old one and at most the highest Java stamped, which is no more above the
/// old one than the error answers and expiries Java saw (`java_asks`). Arguments as for
/// [`bump_waits_for_possibly_written`].
pub(super) fn bump_waits_intermediate_identity(
    p: i32,
    k: usize,
    (je, java_identities, java_expired_unsent, java_asks): (
        &[PartitionEvent],
        &[(i64, i32)],
        i64,
        i64,
    ),
    core: &BTreeMap<i32, Vec<PartitionEvent>>,
    core_at: &BTreeMap<i32, Vec<usize>>,
    led_by: &dyn Fn(i32) -> bool,
) -> bool {
    let empty = Vec::new();
    let ce = core.get(&p).unwrap_or(&empty);
    let Some(PartitionEvent::Sent { node: cn, stamp: c }) = ce.get(k) else {
        return false;
    };
    let Some(&line) = core_at.get(&p).and_then(|a| a.get(k)) else {
        return false;
    };
    if c.seq != next_sequence(&je[..k], c) {
        return false;
    }
    // Every core event with its output line.
    let events = || {
        core.iter().flat_map(|(q, evs)| {
            evs.iter().enumerate().map(move |(i, e)| {
                let at = core_at.get(q).and_then(|a| a.get(i)).copied();
                (*q, i, e, at.unwrap_or(usize::MAX))
            })
        })
    };
    // The core's last identity before `line`: the old one, under which it bumped since.
    let Some(old) = events()
        .filter(|(_, _, e, at)| *at < line && matches!(e, PartitionEvent::Sent { .. }))
        .max_by_key(|(_, _, _, at)| *at)
        .and_then(|(_, _, e, _)| match e {
            PartitionEvent::Sent { stamp, .. } => Some(stamp.identity()),
            _ => None,
        })
    else {
        return false;
    };
    if old.0 != c.pid || old.1 >= c.epoch {
        return false;
    }
    let is_old = |s: &Stamp| s.identity() == old;
    let before = |q: &i32, evs: &'_ Vec<PartitionEvent>, at: usize| -> Vec<PartitionEvent> {
        let n = core_at
            .get(q)
            .map_or(0, |a| a.iter().take_while(|x| **x < at).count());
        evs[..n.min(evs.len())].to_vec()
    };
    // More requests for a bump (error answers under the old identity, other partitions)
    // than epochs the core bumped: one is still owed.
    let asks = core
        .iter()
        .filter(|(q, _)| **q != p)
        .flat_map(|(q, evs)| before(q, evs, line))
        .filter(|e| {
            matches!(e, PartitionEvent::Answered { stamp, error }
                if is_old(stamp) && error != "NONE" && error != "DUPLICATE_SEQUENCE_NUMBER")
        })
        .count();
    if i64::try_from(asks).unwrap_or(0) <= i64::from(c.epoch) - i64::from(old.1) {
        return false;
    }
    // What the owed bump waits for.
    let waits = core.iter().any(|(q, evs)| {
        let before = before(q, evs, line);
        in_flight(&before).iter().any(|(_, s)| is_old(s)) || unsettled(&before).iter().any(is_old)
    });
    if !waits {
        return false;
    }
    // Java's next new batch on `p`: sequence 0 (or after what it renumbered) of an epoch
    // past the core's intermediate one.
    let Some((i, jn, j)) = je.iter().enumerate().skip(k).find_map(|(i, e)| match e {
        PartitionEvent::Sent { node, stamp } if !resent(&je[..i], stamp) => Some((i, node, stamp)),
        _ => None,
    }) else {
        return false;
    };
    let records = j.count >= c.count || java_expired_unsent >= c.count;
    let first = j.seq == 0 || j.seq == renumbered_first(je, i, j);
    if (jn != cn && !led_by(*jn)) || j.pid != c.pid || j.epoch <= c.epoch || !records || !first {
        return false;
    }
    // Java's epochs: each one between the old one and the highest it stamped it passed
    // through, bumping no more often than it saw error answers and expiries.
    let Some(java_top) = java_identities
        .iter()
        .filter(|(pid, _)| *pid == c.pid)
        .map(|(_, e)| *e)
        .max()
        .filter(|top| i64::from(*top) - i64::from(old.1) <= java_asks)
    else {
        return false;
    };
    events()
        .filter(|(_, _, _, at)| *at >= line && *at != usize::MAX)
        .all(|(q, i, e, _)| match e {
            PartitionEvent::Sent { stamp, .. } if !resent(&core[&q][..i], stamp) => {
                stamp.pid == c.pid && stamp.epoch > old.1 && stamp.epoch <= java_top
            }
            _ => true,
        })
}

/// Whether partition `p`'s difference at `k` is the core sending a new batch (its
/// identity's next sequence, not a retry) to a node in a step where Java reported that
/// its drain of that node stopped before `p` (`RecordAccumulator.drainBatchesForOneNode`),
/// and Java sends no new batch of `p` from there on (only, if any, batches it had sent
/// before, again): the shared premise of the transactional
/// drain-stop forms, which differ in how Java's output shows the batch failed undrained.
pub(super) fn java_never_drains_core_send(
    p: i32,
    k: usize,
    je: &[PartitionEvent],
    (ce, ct): (&[PartitionEvent], &[i64]),
    stops: &[DrainStop],
) -> bool {
    let Some(PartitionEvent::Sent { node, stamp: c }) = ce.get(k) else {
        return false;
    };
    let Some(&tc) = ct.get(k) else {
        return false;
    };
    let new_batch = !resent(&je[..k], c) && c.seq == next_sequence(&je[..k], c);
    // A batch Java had sent before, sent again (a retry), is not one drained anew.
    let java_sends = je[k..]
        .iter()
        .any(|e| matches!(e, PartitionEvent::Sent { stamp, .. } if !resent(&je[..k], stamp)));
    new_batch && !java_sends && stopped_at(stops, *node, tc, p)
}
