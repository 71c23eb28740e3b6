//! Per-partition state: the accumulator's queue for the partition and its sequencing
//! entry (Java's `TxnPartitionEntry`).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::batch::BatchSlab;
use crate::record::BatchBuilder;
use crate::types::{
    BatchId, NodeId, ProducerIdAndEpoch, RecordId, Sequence, Timestamp, TopicPartition,
};

/// The batch still open for appends at the tail of a partition's queue.
#[derive(Debug)]
pub(crate) struct OpenBatch {
    pub(crate) builder: BatchBuilder,
    /// The size the batch may grow to (Kafka's `MemoryRecordsBuilder.writeLimit`, the
    /// buffer `RecordAccumulator.append` allocated): `max(batch.size,
    /// BatchBuilder::batch_size_upper_bound(first record))`. Invariant: fixed at open;
    /// the batch is full once its size reaches it, and a record that would pass it
    /// opens a new batch. A first record larger than `batch.size` therefore leaves room
    /// for small records behind it until linger sends the batch, as in Kafka.
    pub(crate) write_limit: usize,
    pub(crate) records: Vec<RecordId>,
    pub(crate) created: Timestamp,
    /// The `buffer.memory` bytes its records were charged when `send` accepted them.
    pub(crate) charged: usize,
    /// The largest of those charges (Kafka's `ProducerBatch.maxRecordSize`).
    pub(crate) max_record_size: usize,
}

/// Everything the producer tracks for one partition.
#[derive(Debug)]
pub(crate) struct PartitionState {
    pub(crate) tp: TopicPartition,
    /// The leader to route to; `None` until metadata says, or after a wire failure
    /// invalidated it (the retry then waits for fresh metadata instead of wedging).
    pub(crate) leader: Option<NodeId>,
    /// The highest leader epoch seen for this partition's topic id (Metadata older
    /// than it is stale and ignored).
    pub(crate) leader_epoch: i32,
    /// The topic id of the metadata last applied (`None` before Metadata v10 named
    /// one). A different id resets `leader` and `leader_epoch` (KIP-516).
    pub(crate) topic_id: Option<crate::types::TopicId>,

    /// Closed batches waiting for their first send or a retry. Invariant: sequenced
    /// batches come first, in the order of `inflight`; unsequenced ones follow in
    /// append order.
    pub(crate) queue: VecDeque<BatchId>,
    /// The batch being filled; logically the last element of the queue.
    pub(crate) open: Option<OpenBatch>,

    /// The identity this partition's sequences belong to (Java's per-partition
    /// `producerIdAndEpoch`). Stale when it differs from the producer's; a stale
    /// partition restarts at sequence 0 once nothing is in flight (KAFKA-12152).
    pub(crate) producer_id: ProducerIdAndEpoch,
    /// The base sequence the next new batch gets.
    pub(crate) next_sequence: Sequence,
    /// The last sequence of the highest acknowledged batch, under `producer_id`.
    pub(crate) last_acked_sequence: Option<Sequence>,
    /// A lower bound of the timestamp the leader keeps in its producer state for this
    /// identity (`ProducerStateEntry.lastTimestamp`, the max timestamp of the newest
    /// appended batch): the creation time of the newest batch acknowledged under
    /// `producer_id`. `None` without such an ack. The leader forgets the producer once
    /// `producer.id.expiration.ms` has passed since then
    /// (`ProducerStateManager.removeExpiredProducers`); see `Producer::state_held`.
    /// Invariant: `Some` exactly when `last_acked_sequence` is (reset with it).
    pub(crate) state_refreshed: Option<Timestamp>,
    /// The highest acknowledged offset; not reset by epoch bumps. Tells retention
    /// (log start moved past it) apart from lost state for UNKNOWN_PRODUCER_ID.
    pub(crate) last_acked_offset: Option<i64>,
    /// Every sequenced batch not yet completed or failed, in stamp order (which is
    /// sequence order within one identity, and robust to the i32 wrap). Invariant:
    /// consecutive entries of one identity have contiguous sequences.
    pub(crate) inflight: VecDeque<BatchId>,
    /// After a batch failed or expired with its outcome unknown: the sequence expected
    /// after it (Java's `partitionsWithUnresolvedSequences`). No new batch is stamped
    /// while set.
    pub(crate) unresolved: Option<Sequence>,
    /// Every batch stamped since the oldest unfinished one, finished or not, in stamp
    /// order (its front is `inflight`'s front). Its length bounds how many batches can
    /// be appended after the oldest unfinished batch, which must stay inside the
    /// broker's five-batch dedup window until its retry lands.
    pub(crate) window: VecDeque<BatchId>,
    /// Batches of this partition in outstanding requests, in send order.
    pub(crate) on_wire: VecDeque<BatchId>,
    /// While the leader answered OUT_OF_ORDER to the next batch although an attempt of
    /// it may be in the log: the one batch resent instead of it, to learn how far the
    /// log got (see `crate::probe`). Invariant: in `inflight`, behind its front, under
    /// the front's identity; the partition sends nothing else meanwhile.
    pub(crate) probe: Option<BatchId>,
}

impl PartitionState {
    pub(crate) fn new(tp: TopicPartition) -> Self {
        Self {
            tp,
            leader: None,
            leader_epoch: -1,
            topic_id: None,
            queue: VecDeque::new(),
            open: None,
            producer_id: ProducerIdAndEpoch::NONE,
            next_sequence: Sequence::ZERO,
            last_acked_sequence: None,
            state_refreshed: None,
            last_acked_offset: None,
            inflight: VecDeque::new(),
            window: VecDeque::new(),
            unresolved: None,
            on_wire: VecDeque::new(),
            probe: None,
        }
    }

    /// The batch the partition sends next, if it is queued: the probe's target while a
    /// probe runs (none while that is on the wire), else the queue's head.
    pub(crate) fn next_queued(&self) -> Option<BatchId> {
        match self.probe {
            Some(target) => self.queue.contains(&target).then_some(target),
            None => self.queue.front().copied(),
        }
    }

    /// Takes [`PartitionState::next_queued`] off the queue.
    pub(crate) fn take_next_queued(&mut self) -> Option<BatchId> {
        let id = self.next_queued()?;
        let at = self.queue.iter().position(|&q| q == id)?;
        self.queue.remove(at)
    }

    /// Whether anything is queued or open.
    pub(crate) fn has_queued(&self) -> bool {
        !self.queue.is_empty() || self.open.is_some()
    }

    /// Java's `isNextSequence`: `seq` directly follows the last acknowledged sequence.
    /// Wrap-aware (a deliberate deviation: Java compares plain ints).
    pub(crate) fn is_next_sequence(&self, seq: Sequence) -> bool {
        match self.last_acked_sequence {
            None => seq == Sequence::ZERO,
            Some(last) => last.add(1) == seq,
        }
    }

    /// Java's `maybeUpdateLastAckedSequence`: keeps the highest. Acks of one partition
    /// arrive at most a few batches apart, so "higher" is decided modulo the wrap.
    pub(crate) fn update_last_acked_sequence(&mut self, last: Sequence) {
        let newer = match self.last_acked_sequence {
            None => true,
            Some(cur) => seq_newer(last, cur),
        };
        if newer {
            self.last_acked_sequence = Some(last);
        }
    }

    /// Forgets the acks under the partition's identity (a new identity starts).
    pub(crate) fn reset_acked(&mut self) {
        self.last_acked_sequence = None;
        self.state_refreshed = None;
    }

    /// An append of a batch created at `created` was acknowledged under the partition's
    /// identity: the leader's state for it is at least that recent.
    pub(crate) fn refresh_state(&mut self, created: Timestamp) {
        if self.state_refreshed.is_none_or(|t| created > t) {
            self.state_refreshed = Some(created);
        }
    }

    /// Java's `updateLastAckedOffset`: keeps the highest.
    pub(crate) fn update_last_acked_offset(&mut self, offset: i64) {
        if self.last_acked_offset.is_none_or(|cur| offset > cur) {
            self.last_acked_offset = Some(offset);
        }
    }

    /// Java's `markSequenceUnresolved`: remember the sequence expected after `next`.
    pub(crate) fn mark_unresolved(&mut self, expected_after: Sequence) {
        self.unresolved = Some(match self.unresolved {
            Some(cur) if seq_newer(cur, expected_after) => cur,
            _ => expected_after,
        });
    }

    pub(crate) fn remove_inflight(&mut self, id: BatchId) {
        if let Some(pos) = self.inflight.iter().position(|&b| b == id) {
            self.inflight.remove(pos);
        }
        self.trim_window();
        // A probe ends with its target, or once that is the first batch in flight (its
        // ordinary resend is then the same question).
        if self.probe == Some(id) || self.probe.as_ref() == self.inflight.front() {
            self.probe = None;
        }
    }

    /// Drops finished batches from the front of `window`.
    pub(crate) fn trim_window(&mut self) {
        while let Some(&front) = self.window.front() {
            if Some(&front) == self.inflight.front() {
                break;
            }
            self.window.pop_front();
        }
    }

    pub(crate) fn remove_on_wire(&mut self, id: BatchId) {
        if let Some(pos) = self.on_wire.iter().position(|&b| b == id) {
            self.on_wire.remove(pos);
        }
    }

    /// Puts a retried batch back in sequence order (Java's `insertInSequenceOrder`):
    /// before the first queued batch that is unsequenced or stamped after it.
    pub(crate) fn reenqueue(&mut self, id: BatchId, slab: &BatchSlab) {
        let rank = |b: BatchId| self.inflight.iter().position(|&x| x == b);
        let my_rank = rank(id);
        let at = match my_rank {
            None => 0,
            Some(mine) => self
                .queue
                .iter()
                .position(|&q| match rank(q) {
                    None => true,
                    Some(r) => r > mine,
                })
                .unwrap_or(self.queue.len()),
        };
        debug_assert!(slab.get(id).is_some());
        self.queue.insert(at, id);
    }
}

/// Whether sequence `a` is after `b`, modulo Kafka's wrap at `i32::MAX`: the forward
/// distance from `b` to `a` is less than half the sequence space.
pub(crate) fn seq_newer(a: Sequence, b: Sequence) -> bool {
    let space = i64::from(i32::MAX) + 1;
    let d = (i64::from(a.0) - i64::from(b.0)).rem_euclid(space);
    d != 0 && d < space / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_newer_handles_wrap() {
        assert!(seq_newer(Sequence(5), Sequence(4)));
        assert!(!seq_newer(Sequence(4), Sequence(5)));
        assert!(!seq_newer(Sequence(4), Sequence(4)));
        assert!(seq_newer(Sequence(0), Sequence(i32::MAX)));
        assert!(seq_newer(Sequence(3), Sequence(i32::MAX - 2)));
        assert!(!seq_newer(Sequence(i32::MAX), Sequence(0)));
    }

    #[test]
    fn next_sequence_after_wrap() {
        let mut p = PartitionState::new(TopicPartition::new("t", 0));
        assert!(p.is_next_sequence(Sequence(0)));
        p.update_last_acked_sequence(Sequence(i32::MAX));
        assert!(p.is_next_sequence(Sequence(0)));
        p.update_last_acked_sequence(Sequence(4));
        assert_eq!(p.last_acked_sequence, Some(Sequence(4)));
        p.update_last_acked_sequence(Sequence(2));
        assert_eq!(p.last_acked_sequence, Some(Sequence(4)), "max rule");
    }
}
