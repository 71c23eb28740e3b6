//! The accumulator's partition table (Java's `RecordAccumulator` batches map and its
//! drain rotation): every partition the producer saw, by index, the list of partitions
//! with something to drain, and the record and `buffer.memory` counts of what `send`
//! accepted and nothing reported yet. Each partition's own queue and sequencing entry
//! is a [`PartitionState`]; the batches themselves live in the `BatchSlab`.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::ops::{Index, IndexMut, Range};

use crate::partition::PartitionState;
use crate::timers::Touched;
use crate::types::TopicPartition;

/// The partition table (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    /// Invariant: `index[partitions[i].tp] == i` for every `i`, and nothing else.
    index: BTreeMap<TopicPartition, u32>,
    partitions: Vec<PartitionState>,
    /// Partitions that have queued or open batches (and possibly some that no longer
    /// have: the drain drops those as it meets them), in drain rotation order.
    /// Invariant: each at most once, and every partition with a queued or open batch
    /// is in here.
    pending: VecDeque<u32>,
    /// `listed[i]`: `i` is in `pending`. Stored twice for the O(1) membership test of
    /// [`Accumulator::list`]; invariant: agrees with `pending`.
    listed: Vec<bool>,
    /// Partitions handed out mutably since the timer table last looked at them: their
    /// entries in the table may be stale (see `timers.rs`).
    touched: Touched,
    next_record_id: u64,
    /// Records accepted and not yet reported.
    unreported_records: u64,
    /// Bytes charged to `buffer.memory` by records not yet reported. Invariant (checked
    /// by the producer, which sees the batches): the sum of the `charged` bytes of
    /// every unreported batch (open, queued, on the wire).
    buffered_bytes: usize,
}

impl Accumulator {
    /// The index of `tp`, if the producer saw it.
    pub(crate) fn index_of(&self, tp: &TopicPartition) -> Option<u32> {
        self.index.get(tp).copied()
    }

    /// The index of `tp`, adding it if it is new.
    pub(crate) fn partition_for(&mut self, tp: &TopicPartition) -> u32 {
        if let Some(&i) = self.index.get(tp) {
            return i;
        }
        let i = u32::try_from(self.partitions.len()).unwrap_or(u32::MAX);
        self.partitions.push(PartitionState::new(tp.clone()));
        self.listed.push(false);
        self.index.insert(tp.clone(), i);
        self.touched.mark(i);
        i
    }

    /// Every partition index.
    pub(crate) fn ids(&self) -> Range<u32> {
        0..self.partitions.len() as u32
    }

    /// Every partition, by index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &PartitionState> {
        self.partitions.iter()
    }

    /// Every partition, mutably (all of them count as touched).
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut PartitionState> {
        for p in 0..self.partitions.len() as u32 {
            self.touched.mark(p);
        }
        self.partitions.iter_mut()
    }

    /// Puts `p` on the drain list, unless it is there.
    pub(crate) fn list(&mut self, p: u32) {
        if !self.listed[p as usize] {
            self.listed[p as usize] = true;
            self.pending.push_back(p);
        }
    }

    /// The drain list, in rotation order.
    pub(crate) fn pending(&self) -> &VecDeque<u32> {
        &self.pending
    }

    /// Takes the partition at position `i` of the drain list off it.
    pub(crate) fn delist_at(&mut self, i: usize) {
        if let Some(p) = self.pending.remove(i) {
            self.listed[p as usize] = false;
        }
    }

    /// Round robin: the drain list restarts after position `pos`.
    pub(crate) fn rotate_after(&mut self, pos: usize) {
        let len = self.pending.len();
        if len > 0 {
            self.pending.rotate_left((pos + 1).min(len));
        }
    }

    /// Ids for `count` records just accepted, charged `bytes` of `buffer.memory`.
    pub(crate) fn accept(&mut self, count: u32, bytes: usize) -> Range<u64> {
        let first = self.next_record_id;
        self.next_record_id += u64::from(count);
        self.unreported_records += u64::from(count);
        self.buffered_bytes += bytes;
        first..self.next_record_id
    }

    /// `records` records charged `bytes` got their outcome.
    pub(crate) fn release(&mut self, records: u64, bytes: usize) {
        debug_assert!(self.buffered_bytes >= bytes, "buffer.memory released twice");
        self.unreported_records -= records;
        self.buffered_bytes = self.buffered_bytes.saturating_sub(bytes);
    }

    /// Records accepted and not yet reported.
    pub(crate) fn unreported_records(&self) -> u64 {
        self.unreported_records
    }

    /// Bytes charged to `buffer.memory` by records not yet reported.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.buffered_bytes
    }

    /// Partitions handed out mutably since the timer table last looked.
    pub(crate) fn touched(&self) -> &Touched {
        &self.touched
    }

    /// Empties the touched set, returning what was in it.
    pub(crate) fn take_touched(&mut self, into: &mut Vec<u32>) {
        self.touched.drain_into(into);
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self) {
        assert_eq!(
            self.index.len(),
            self.partitions.len(),
            "partition index size"
        );
        for (i, part) in self.partitions.iter().enumerate() {
            assert_eq!(
                self.index.get(&part.tp),
                Some(&(i as u32)),
                "partition index"
            );
        }
        assert_eq!(self.listed.len(), self.partitions.len(), "listed bits");
        let mut seen = alloc::vec![false; self.partitions.len()];
        for &p in &self.pending {
            assert!(!seen[p as usize], "partition {p} listed twice");
            seen[p as usize] = true;
        }
        for (i, part) in self.partitions.iter().enumerate() {
            assert_eq!(
                self.listed[i], seen[i],
                "{}: listed flag out of sync",
                part.tp
            );
            if part.has_queued() {
                assert!(seen[i], "{}: has queued batches but is not listed", part.tp);
            }
            part.seq.assert_invariants(&part.tp);
        }
    }
}

impl Index<u32> for Accumulator {
    type Output = PartitionState;

    fn index(&self, p: u32) -> &PartitionState {
        &self.partitions[p as usize]
    }
}

impl Accumulator {
    /// Hands out partition `p` mutably without marking it touched, for a change that
    /// leaves its deadlines as they were: a record appended to the open batch (which
    /// keeps its creation time) with the queue and the batches on the wire untouched.
    /// `Producer::assert_timer_invariants` checks every untouched partition's deadlines
    /// against its state, so a change that moved one fails there.
    pub(crate) fn untimed_mut(&mut self, p: u32) -> &mut PartitionState {
        &mut self.partitions[p as usize]
    }
}

impl IndexMut<u32> for Accumulator {
    /// Hands out partition `p` mutably, and marks it touched for the timer table.
    fn index_mut(&mut self, p: u32) -> &mut PartitionState {
        self.touched.mark(p);
        &mut self.partitions[p as usize]
    }
}
