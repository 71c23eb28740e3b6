//! The timer table behind [`Producer::poll_timeout`](crate::Producer::poll_timeout)
//! (quinn-proto's `TimerTable` idea): a few fixed timers, read from their owners in O(1)
//! or O(nodes) (request timeouts, throttles, the InitProducerId, metadata and
//! transactional backoffs), and ordered indices of the per-partition deadlines, so that
//! the next deadline is found without walking every batch.
//!
//! Each partition has at most three deadlines ([`PartitionTimers`]): the delivery
//! timeout of its oldest batch in each place, its open batch's linger, and its head
//! batch's retry backoff. The table keeps them sorted. It is updated lazily: the
//! accumulator and the batch slab mark every partition they hand out mutably as
//! *touched* ([`Touched`]); a touched partition's entries may be stale, so a query
//! skips them and computes the touched partitions afresh, and the producer moves the
//! fresh values into the table when it next observes the time. The plain scan of
//! every partition stays as the debug oracle (`Producer::poll_timeout_scan`), which
//! `assert_invariants` compares with the table's answer.

use alloc::vec::Vec;

use crate::types::Timestamp;

/// A set of partition indices: a list for iteration and bits for membership.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    list: Vec<u32>,
    /// Invariant: `bits[p]` iff `p` is in `list` (once).
    bits: Vec<bool>,
}

impl Touched {
    /// Adds `p`.
    pub(crate) fn mark(&mut self, p: u32) {
        let i = p as usize;
        if i >= self.bits.len() {
            self.bits.resize(i + 1, false);
        }
        if !self.bits[i] {
            self.bits[i] = true;
            self.list.push(p);
        }
    }

    /// Whether `p` is in.
    pub(crate) fn contains(&self, p: u32) -> bool {
        self.bits.get(p as usize).copied().unwrap_or(false)
    }

    /// The members, in the order they were added.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.list.iter().copied()
    }

    /// Moves the members to `into` and empties the set.
    pub(crate) fn drain_into(&mut self, into: &mut Vec<u32>) {
        for &p in &self.list {
            self.bits[p as usize] = false;
        }
        into.append(&mut self.list);
    }
}

/// One partition's deadlines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PartitionTimers {
    /// `delivery.timeout.ms` of its earliest unreported batch (open, head of the queue,
    /// or on the wire): due even once passed, until `handle_timeout` expires it.
    pub(crate) delivery: Option<Timestamp>,
    /// The open batch's linger, when nothing is queued before it. A timer only while
    /// ahead of the time and no flush runs (then the batch is ready anyway).
    pub(crate) linger: Option<Timestamp>,
    /// The queue head's retry backoff. A timer only while ahead of the time.
    pub(crate) backoff: Option<Timestamp>,
}

impl PartitionTimers {
    /// The earliest of these that is a timer at `now` (see the fields).
    pub(crate) fn next(&self, now: Timestamp, flushing: bool) -> Option<Timestamp> {
        let linger = self.linger.filter(|&t| !flushing && t > now);
        let backoff = self.backoff.filter(|&t| t > now);
        [self.delivery, linger, backoff].into_iter().flatten().min()
    }
}

/// Sorted `(deadline, partition)` pairs, one per partition at most.
#[derive(Debug, Default)]
struct Index {
    /// Invariant: strictly sorted.
    entries: Vec<(Timestamp, u32)>,
}

impl Index {
    fn replace(&mut self, p: u32, old: Option<Timestamp>, new: Option<Timestamp>) {
        if old == new {
            return;
        }
        if let Some(t) = old {
            if let Ok(pos) = self.entries.binary_search(&(t, p)) {
                self.entries.remove(pos);
            }
        }
        if let Some(t) = new {
            if let Err(pos) = self.entries.binary_search(&(t, p)) {
                self.entries.insert(pos, (t, p));
            }
        }
    }

    /// The earliest deadline after `after` (all of them with `None`) of a partition
    /// `skip` does not exclude.
    fn first(&self, after: Option<Timestamp>, skip: impl Fn(u32) -> bool) -> Option<Timestamp> {
        let from = after.map_or(0, |now| self.entries.partition_point(|&(t, _)| t <= now));
        self.entries[from..]
            .iter()
            .find(|&&(_, p)| !skip(p))
            .map(|&(t, _)| t)
    }
}

/// The per-partition deadlines, indexed (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct TimerTable {
    /// What the indices hold for each partition. Invariant: `delivery`, `linger` and
    /// `backoff` hold exactly the `Some` entries of these, with their partition.
    partitions: Vec<PartitionTimers>,
    delivery: Index,
    linger: Index,
    backoff: Index,
}

impl TimerTable {
    /// Partition `p`'s deadlines are now `timers`.
    pub(crate) fn set(&mut self, p: u32, timers: PartitionTimers) {
        let i = p as usize;
        if i >= self.partitions.len() {
            self.partitions.resize(i + 1, PartitionTimers::default());
        }
        let old = core::mem::replace(&mut self.partitions[i], timers);
        self.delivery.replace(p, old.delivery, timers.delivery);
        self.linger.replace(p, old.linger, timers.linger);
        self.backoff.replace(p, old.backoff, timers.backoff);
    }

    /// What the table holds for partition `p`.
    pub(crate) fn get(&self, p: u32) -> PartitionTimers {
        self.partitions.get(p as usize).copied().unwrap_or_default()
    }

    /// The earliest partition deadline at `now`, leaving out the partitions `stale`
    /// names (the caller computes those afresh).
    pub(crate) fn next(
        &self,
        now: Timestamp,
        flushing: bool,
        stale: impl Fn(u32) -> bool + Copy,
    ) -> Option<Timestamp> {
        let linger = if flushing {
            None
        } else {
            self.linger.first(Some(now), stale)
        };
        [
            self.delivery.first(None, stale),
            linger,
            self.backoff.first(Some(now), stale),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self) {
        let mut counts = [0usize; 3];
        for (p, t) in self.partitions.iter().enumerate() {
            let p = p as u32;
            for (k, (index, at)) in [
                (&self.delivery, t.delivery),
                (&self.linger, t.linger),
                (&self.backoff, t.backoff),
            ]
            .into_iter()
            .enumerate()
            {
                if let Some(at) = at {
                    assert!(
                        index.entries.binary_search(&(at, p)).is_ok(),
                        "timer of partition {p} missing from its index"
                    );
                    counts[k] += 1;
                }
            }
        }
        for (k, index) in [&self.delivery, &self.linger, &self.backoff]
            .into_iter()
            .enumerate()
        {
            assert_eq!(index.entries.len(), counts[k], "stale timer index entries");
            assert!(
                index.entries.windows(2).all(|w| w[0] < w[1]),
                "timer index out of order"
            );
        }
    }
}
