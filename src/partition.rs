//! Per-partition state: the accumulator's queue for the partition, its leader, and its
//! sequencing entry (Java's `TxnPartitionEntry`, a [`SequenceEntry`]).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::batch::BatchSlab;
use crate::record::BatchBuilder;
use crate::sequence_entry::SequenceEntry;
use crate::types::{BatchId, NodeId, RecordId, Timestamp, TopicPartition};

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
    /// batches come first, in stamp order (`seq`'s in-flight order); unsequenced ones follow in
    /// append order.
    pub(crate) queue: VecDeque<BatchId>,
    /// The batch being filled; logically the last element of the queue.
    pub(crate) open: Option<OpenBatch>,

    /// The partition's sequencing entry: its identity, sequences, acks, the batches in
    /// flight, an unresolved sequence and a running probe.
    pub(crate) seq: SequenceEntry,
    /// Batches of this partition in outstanding requests, in send order.
    pub(crate) on_wire: VecDeque<BatchId>,
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
            seq: SequenceEntry::new(),
            on_wire: VecDeque::new(),
        }
    }

    /// The batch the partition sends next, if it is queued: the probe's target while a
    /// probe runs (none while that is on the wire), else the queue's head.
    pub(crate) fn next_queued(&self) -> Option<BatchId> {
        match self.seq.probe() {
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

    pub(crate) fn remove_on_wire(&mut self, id: BatchId) {
        if let Some(pos) = self.on_wire.iter().position(|&b| b == id) {
            self.on_wire.remove(pos);
        }
    }

    /// Puts a retried batch back in sequence order (Java's `insertInSequenceOrder`):
    /// before the first queued batch that is unsequenced or stamped after it.
    pub(crate) fn reenqueue(&mut self, id: BatchId, slab: &BatchSlab) {
        let rank = |b: BatchId| self.seq.rank(b);
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

    /// Puts back a batch whose request was never written, where it was: a sequenced
    /// one in sequence order, an unsequenced one (no idempotence) before the first
    /// queued batch sent after it. Java never took such a batch out of its deque
    /// (`Sender.sendProducerData` drains only for ready nodes), so, unlike a retry, it
    /// must not jump the queue: several never-sent batches put back one by one would
    /// otherwise reverse their order.
    pub(crate) fn requeue_unsent(&mut self, id: BatchId, slab: &BatchSlab) {
        if self.seq.rank(id).is_some() {
            self.reenqueue(id, slab);
            return;
        }
        let first = |b: BatchId| slab.get(b).and_then(|b| b.records.first().copied());
        let mine = first(id);
        let at = self
            .queue
            .iter()
            .position(|&q| first(q) > mine)
            .unwrap_or(self.queue.len());
        self.queue.insert(at, id);
    }
}
