//! Each side's output projected onto each partition: the batches sent for it, in
//! order, the answers they got and the connection closes that took them, with the
//! output line and step of each event; and the records' outcomes.

use std::collections::BTreeMap;

use super::field;

/// A batch's stamp: partition, producer id, epoch, base sequence, record count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Partition.
    pub p: i32,
    /// Producer id.
    pub pid: i64,
    /// Epoch.
    pub epoch: i32,
    /// Base sequence.
    pub seq: i64,
    /// Record count.
    pub count: i64,
}

impl Stamp {
    pub(super) fn parse(s: &str) -> Option<Self> {
        let mut it = s.split(':').map(str::parse::<i64>);
        let mut next = || it.next().and_then(Result::ok);
        Some(Self {
            p: i32::try_from(next()?).ok()?,
            pid: next()?,
            epoch: i32::try_from(next()?).ok()?,
            seq: next()?,
            count: next()?,
        })
    }

    pub(super) fn identity(&self) -> (i64, i32) {
        (self.pid, self.epoch)
    }
}

/// One event of a partition's projected history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionEvent {
    /// A batch went on the wire to `node`.
    Sent {
        /// The broker.
        node: i32,
        /// The stamp.
        stamp: Stamp,
    },
    /// A batch got this answer.
    Answered {
        /// The stamp.
        stamp: Stamp,
        /// Kafka's error name.
        error: String,
    },
    /// The connection carrying the partition's requests to `node` broke.
    Disconnected {
        /// The broker.
        node: i32,
    },
}

/// Per partition, the projected history of one side's output, the output line of each
/// event and the step (see `core_side`) of each event that is a send or a close for a
/// timed-out request (-1 for others); and the outcome lines.
pub(super) type Projection = (
    BTreeMap<i32, Vec<PartitionEvent>>,
    BTreeMap<i32, Vec<usize>>,
    BTreeMap<i32, Vec<i64>>,
    BTreeMap<i64, String>,
);

pub(super) fn project(lines: &[String]) -> Projection {
    let mut parts: BTreeMap<i32, Vec<PartitionEvent>> = BTreeMap::new();
    let mut outcomes = BTreeMap::new();
    let mut at: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    let mut times: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for (index, line) in lines.iter().enumerate() {
        for (p, events) in &parts {
            times.entry(*p).or_default().resize(events.len(), -1);
        }
        for (p, events) in &parts {
            let seen = at.entry(*p).or_default();
            seen.resize(events.len(), index.saturating_sub(1));
        }
        let ev = field(line, "ev").unwrap_or_default();
        let node = field(line, "node")
            .and_then(|n| n.parse().ok())
            .unwrap_or(-1);
        match ev {
            "produce" => {
                let t = field(line, "s").and_then(|t| t.parse().ok()).unwrap_or(-1);
                for s in field(line, "batches").unwrap_or_default().split(',') {
                    if let Some(stamp) = Stamp::parse(s) {
                        let events = parts.entry(stamp.p).or_default();
                        let sent_at = times.entry(stamp.p).or_default();
                        sent_at.resize(events.len(), -1);
                        sent_at.push(t);
                        events.push(PartitionEvent::Sent { node, stamp });
                    }
                }
            }
            "answered" => {
                for s in field(line, "batches").unwrap_or_default().split(',') {
                    let Some((stamp, error)) = s.split_once('=') else {
                        continue;
                    };
                    if let Some(stamp) = Stamp::parse(stamp) {
                        parts
                            .entry(stamp.p)
                            .or_default()
                            .push(PartitionEvent::Answered {
                                stamp,
                                error: error.to_string(),
                            });
                    }
                }
            }
            "disconnected" => {
                // Only partitions with a batch on that node's connection see it. A close
                // for a timed-out request carries its step.
                let t = field(line, "s").and_then(|t| t.parse().ok()).unwrap_or(-1);
                for (p, events) in parts.iter_mut() {
                    if in_flight(events).iter().any(|(n, _)| *n == node) {
                        let at = times.entry(*p).or_default();
                        at.resize(events.len(), -1);
                        at.push(t);
                        events.push(PartitionEvent::Disconnected { node });
                    }
                }
            }
            "outcome" => {
                let rec = field(line, "rec")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(-1);
                outcomes.insert(rec, field(line, "result").unwrap_or_default().to_string());
            }
            _ => {}
        }
    }
    for (p, events) in &parts {
        at.entry(*p).or_default().resize(events.len(), lines.len());
        times.entry(*p).or_default().resize(events.len(), -1);
    }
    (parts, at, times, outcomes)
}

/// The batches of a partition on the wire and unanswered after `events`.
pub(super) fn in_flight(events: &[PartitionEvent]) -> Vec<(i32, Stamp)> {
    let mut flying: Vec<(i32, Stamp)> = Vec::new();
    for e in events {
        match e {
            PartitionEvent::Sent { node, stamp } => flying.push((*node, stamp.clone())),
            PartitionEvent::Answered { stamp, .. } => {
                if let Some(i) = flying.iter().position(|(_, s)| s == stamp) {
                    flying.remove(i);
                }
            }
            PartitionEvent::Disconnected { node } => flying.retain(|(n, _)| n != node),
        }
    }
    flying
}
