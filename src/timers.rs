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

    /// Adds `(t, p)` unsorted, for [`Index::rebuild`]; `p`'s old entry stays until then.
    fn stage(&mut self, p: u32, old: Option<Timestamp>, new: Option<Timestamp>) {
        if old != new {
            if let Some(t) = new {
                self.entries.push((t, p));
            }
        }
    }

    /// Drops the entries `current` no longer holds (the old ones of staged partitions)
    /// and sorts the rest: O(n log n) for any number of staged partitions.
    fn rebuild(&mut self, current: impl Fn(u32) -> Option<Timestamp>) {
        self.entries.retain(|&(t, p)| current(p) == Some(t));
        self.entries.sort_unstable();
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

    /// Sets the deadlines of many partitions at once: staged with [`TimerTable::stage`],
    /// then [`TimerTable::rebuild`] sorts each index once. Per partition, [`TimerTable::set`]
    /// moves the tail of a sorted `Vec` (O(n)); when most partitions change (an answer to
    /// a request carrying thousands of partitions), that is O(n^2), and one rebuild
    /// O(n log n).
    ///
    /// Between the first `stage` and `rebuild` the indices are unsorted: nothing else
    /// may read or write the table in between.
    pub(crate) fn stage(&mut self, p: u32, timers: PartitionTimers) {
        let i = p as usize;
        if i >= self.partitions.len() {
            self.partitions.resize(i + 1, PartitionTimers::default());
        }
        let old = core::mem::replace(&mut self.partitions[i], timers);
        self.delivery.stage(p, old.delivery, timers.delivery);
        self.linger.stage(p, old.linger, timers.linger);
        self.backoff.stage(p, old.backoff, timers.backoff);
    }

    /// Ends a run of [`TimerTable::stage`] calls.
    pub(crate) fn rebuild(&mut self) {
        let partitions = &self.partitions;
        let at = |p: u32| partitions.get(p as usize).copied().unwrap_or_default();
        self.delivery.rebuild(|p| at(p).delivery);
        self.linger.rebuild(|p| at(p).linger);
        self.backoff.rebuild(|p| at(p).backoff);
    }

    /// Entries in the largest index: what one [`TimerTable::set`] may have to move.
    pub(crate) fn len(&self) -> usize {
        self.delivery
            .entries
            .len()
            .max(self.linger.entries.len())
            .max(self.backoff.entries.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Timestamp {
        Timestamp::from_millis(t)
    }

    fn timers(delivery: u64, linger: Option<u64>, backoff: Option<u64>) -> PartitionTimers {
        PartitionTimers {
            delivery: Some(ms(delivery)),
            linger: linger.map(ms),
            backoff: backoff.map(ms),
        }
    }

    #[test]
    fn the_earliest_deadline_of_the_fresh_partitions_wins() {
        let mut table = TimerTable::default();
        table.set(0, timers(500, Some(120), None));
        table.set(1, timers(300, None, Some(150)));
        table.assert_invariants();
        let none = |_| false;
        assert_eq!(table.next(ms(100), false, none), Some(ms(120)));
        // A flush makes the open batch ready: its linger is no timer.
        assert_eq!(table.next(ms(100), true, none), Some(ms(150)));
        // Linger and backoff count only while ahead of the time; delivery always.
        assert_eq!(table.next(ms(200), false, none), Some(ms(300)));
        assert_eq!(table.next(ms(900), false, none), Some(ms(300)));
        // A stale partition's entries are left out (the caller computes it afresh).
        assert_eq!(table.next(ms(200), false, |p| p == 1), Some(ms(500)));
        // Replacing a partition's timers drops its old entries.
        table.set(1, PartitionTimers::default());
        table.assert_invariants();
        assert_eq!(table.get(1), PartitionTimers::default());
        assert_eq!(table.next(ms(200), false, none), Some(ms(500)));
        table.set(0, PartitionTimers::default());
        assert_eq!(table.next(ms(0), false, none), None);
        table.assert_invariants();
    }

    /// Staging many partitions and rebuilding once leaves the table exactly as setting
    /// them one by one does.
    #[test]
    fn staged_updates_match_one_by_one_updates() {
        let mut one_by_one = TimerTable::default();
        let mut staged = TimerTable::default();
        for p in 0..50u32 {
            let t = timers(1_000 + u64::from(p % 7), Some(u64::from(p)), None);
            one_by_one.set(p, t);
            staged.set(p, t);
        }
        for p in (0..50u32).filter(|p| p % 3 != 0) {
            let t = if p % 2 == 0 {
                PartitionTimers::default()
            } else if p % 5 == 0 {
                one_by_one.get(p) // unchanged
            } else {
                timers(2_000 - u64::from(p), None, Some(u64::from(p) + 7))
            };
            one_by_one.set(p, t);
            staged.stage(p, t);
        }
        staged.rebuild();
        staged.assert_invariants();
        one_by_one.assert_invariants();
        for (a, b) in [
            (&one_by_one.delivery, &staged.delivery),
            (&one_by_one.linger, &staged.linger),
            (&one_by_one.backoff, &staged.backoff),
        ] {
            assert_eq!(a.entries, b.entries);
        }
        for now in [0, 10, 30, 1_003, 1_990] {
            assert_eq!(
                one_by_one.next(ms(now), false, |_| false),
                staged.next(ms(now), false, |_| false)
            );
        }
    }

    #[test]
    fn partition_timers_filter_by_time_and_flush() {
        let t = timers(500, Some(120), Some(150));
        assert_eq!(t.next(ms(100), false), Some(ms(120)));
        assert_eq!(t.next(ms(100), true), Some(ms(150)));
        assert_eq!(t.next(ms(150), false), Some(ms(500)));
        assert_eq!(PartitionTimers::default().next(ms(0), false), None);
    }

    #[test]
    fn touched_holds_each_partition_once() {
        let mut touched = Touched::default();
        touched.mark(3);
        touched.mark(1);
        touched.mark(3);
        assert!(touched.contains(3) && touched.contains(1) && !touched.contains(0));
        assert!(!touched.contains(99));
        assert_eq!(touched.iter().collect::<Vec<_>>(), alloc::vec![3, 1]);
        let mut out = Vec::new();
        touched.drain_into(&mut out);
        assert_eq!(out, alloc::vec![3, 1]);
        assert!(!touched.contains(3));
        assert_eq!(touched.iter().count(), 0);
    }
}
