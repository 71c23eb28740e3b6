//! A record batch as the core tracks it (Java's `ProducerBatch`), and the slab that owns
//! every live batch so that queues, requests and the in-flight sets can share them by id.

use crate::retry::Retry;
use alloc::vec::Vec;
use bytes::{Bytes, BytesMut};

use crate::record;
use crate::timers::Touched;
use crate::types::{BatchId, ProducerIdAndEpoch, RecordId, RequestId, Sequence, Timestamp};

/// The (producer id, epoch, base sequence) a batch was stamped with at its first drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) id: ProducerIdAndEpoch,
    pub(crate) base_sequence: Sequence,
}

/// What the broker may have done with a batch, over all its attempts. Only ever rises:
/// a later definitive rejection never erases an earlier ambiguous attempt (kacrab 0.4
/// forgot exactly that and reused a maybe-appended batch's sequence: the regression test
/// `no_sequence_reuse_after_maybe_appended_batch_times_out`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WriteState {
    /// No attempt has left the process.
    Never,
    /// Every attempt was rejected before the append.
    Rejected,
    /// Some attempt may have been appended.
    Maybe,
}

/// What the broker may hold of a batch under its current stamp (an attempt on the wire
/// counts as [`StampFate::Unknown`] separately, through `on_wire`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StampFate {
    /// The stamp has never been on the wire: a rewrite or a split just assigned it, or
    /// the batch is not stamped. If such a batch fails, its sequences were never used.
    Unsent,
    /// Sent, and every finished attempt was refused before the append.
    Refused,
    /// Some attempt under this stamp may have been appended.
    Unknown,
}

/// The encoded bytes of a batch. Mutable until first handed to a driver; after that,
/// shared with requests, and copied on write only if a restamp finds it still shared.
#[derive(Debug)]
pub(crate) enum BatchData {
    Owned(BytesMut),
    Shared(Bytes),
}

impl BatchData {
    /// Takes a finished batch. [`record::BatchBuilder`] builds into a reference-counted
    /// buffer, so sharing it with requests later is a reference-count increment.
    pub(crate) fn new(finished: BytesMut) -> Self {
        Self::Owned(finished)
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Owned(b) => b.len(),
            Self::Shared(b) => b.len(),
        }
    }

    /// A shared handle for a request; the batch keeps its own.
    pub(crate) fn share(&mut self) -> Bytes {
        if let Self::Owned(b) = self {
            let frozen = core::mem::take(b).freeze();
            *self = Self::Shared(frozen);
        }
        match self {
            Self::Shared(b) => b.clone(),
            Self::Owned(_) => unreachable!("converted above"),
        }
    }

    /// Mutable bytes for an in-place restamp. Copies only when a driver still holds the
    /// previous bytes (a request not yet answered): the bytes on the wire must not change.
    pub(crate) fn make_mut(&mut self) -> &mut BytesMut {
        if let Self::Shared(b) = self {
            let owned = match core::mem::take(b).try_into_mut() {
                Ok(m) => m,
                Err(still_shared) => BytesMut::from(&still_shared[..]),
            };
            *self = Self::Owned(owned);
        }
        match self {
            Self::Owned(b) => b,
            Self::Shared(_) => unreachable!("converted above"),
        }
    }

    /// The buffer, if nobody else holds it (a driver may still hold a request's copy).
    pub(crate) fn into_unique(self) -> Option<BytesMut> {
        match self {
            Self::Owned(b) => Some(b),
            Self::Shared(b) => b.try_into_mut().ok(),
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Self::Owned(b) => b,
            Self::Shared(b) => b,
        }
    }
}

/// One batch of records for one partition.
#[derive(Debug)]
pub(crate) struct ProducerBatch {
    pub(crate) id: BatchId,
    /// Index of the partition in the producer's partition table.
    pub(crate) partition: u32,
    /// The records, in order. `records.len() == record_count`.
    pub(crate) records: Vec<RecordId>,
    pub(crate) record_count: i32,
    pub(crate) data: BatchData,
    /// The records section's size before compression (equal to its stored size without
    /// a codec): with `data`'s length, the batch's compression rate.
    pub(crate) uncompressed_records_len: usize,
    /// The `buffer.memory` bytes its records were charged by `send` (estimated sizes,
    /// not `data`'s length); released exactly when the batch is reported. The pieces of
    /// a split share their parent's charge, so the sum never changes.
    pub(crate) charged: usize,
    /// The largest record's charge (Kafka's `maxRecordSize`, for `record-size-avg/max`).
    pub(crate) max_record_size: usize,
    /// When the first record was appended; delivery.timeout.ms counts from here.
    pub(crate) created: Timestamp,
    /// Attempts that ended in a retry (Java's `attempts`) and the backoff before the
    /// next, which a changed leader skips.
    pub(crate) retry: Retry,
    /// The leader epoch the last attempt was routed with (KIP-951 backoff skip).
    pub(crate) last_leader_epoch: Option<i32>,
    /// Set at first drain; changed afterwards only by an epoch-bump rewrite or a split.
    pub(crate) stamp: Option<Stamp>,
    /// Rewritten by an epoch bump and not sent since (Java's `sequenceHasBeenReset`).
    pub(crate) reopened: bool,
    /// What the broker may hold of this batch under its *current* stamp. An epoch bump
    /// may renumber a batch only if no attempt under its stamp may have been appended:
    /// resending it renumbered would write it twice.
    pub(crate) fate: StampFate,
    /// The outstanding request carrying this batch, if any.
    pub(crate) on_wire: Option<RequestId>,
    pub(crate) write_state: WriteState,
    /// Reported (delivered or failed). A done batch may still be on the wire after a
    /// delivery timeout; its late answer only updates sequencing state.
    pub(crate) done: bool,
}

impl ProducerBatch {
    /// Whether the broker may hold this batch: some finished attempt may have been
    /// appended, or an attempt is on the wire now (bytes written to a socket and not
    /// answered can still be appended). The one place the reported `possibly_written`
    /// flag comes from, whatever path fails the batch.
    pub(crate) fn possibly_written(&self) -> bool {
        self.write_state == WriteState::Maybe || self.on_wire.is_some()
    }

    /// The records section's size before compression, for compression-rate metrics.
    pub(crate) fn uncompressed_size(&self) -> usize {
        self.uncompressed_records_len
    }

    pub(crate) fn last_sequence(&self) -> Option<Sequence> {
        self.stamp
            .map(|s| s.base_sequence.add(self.record_count - 1))
    }

    /// Writes the stamp into the encoded bytes (in place; copy-on-write if shared).
    pub(crate) fn write_stamp(&mut self, transactional: bool) {
        if let Some(stamp) = self.stamp {
            let buf = self.data.make_mut();
            // The bytes were produced by our own writer, so stamping cannot fail; a
            // failure would be a bug in this crate, not bad broker input.
            let stamped = record::stamp(buf, stamp.id, stamp.base_sequence, transactional);
            debug_assert!(stamped.is_ok(), "stamping our own batch failed");
        }
    }
}

struct Slot {
    generation: u32,
    batch: Option<ProducerBatch>,
}

/// Owns every live batch. Ids carry a generation so a stale id never reaches a reused
/// slot. Freed slots are reused, so the steady state allocates nothing here.
#[derive(Default)]
pub(crate) struct BatchSlab {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    /// Partitions whose batches were inserted, removed or handed out mutably since the
    /// timer table last looked (see `timers.rs`).
    touched: Touched,
}

impl core::fmt::Debug for BatchSlab {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BatchSlab")
            .field("live", &self.live)
            .finish()
    }
}

fn split_id(id: BatchId) -> (u32, u32) {
    ((id.0 & 0xffff_ffff) as u32, (id.0 >> 32) as u32)
}

impl BatchSlab {
    /// The id the next inserted batch will get.
    pub(crate) fn next_id(&self) -> BatchId {
        let (index, generation) = match self.free.last() {
            Some(&i) => (i, self.slots[i as usize].generation),
            None => (self.slots.len() as u32, 0),
        };
        BatchId((u64::from(generation) << 32) | u64::from(index))
    }

    /// Inserts a batch whose `id` must be [`BatchSlab::next_id`].
    pub(crate) fn insert(&mut self, batch: ProducerBatch) -> BatchId {
        let id = self.next_id();
        debug_assert_eq!(batch.id, id);
        self.touched.mark(batch.partition);
        let (index, _) = split_id(id);
        if let Some(i) = self.free.pop() {
            self.slots[i as usize].batch = Some(batch);
        } else {
            self.slots.push(Slot {
                generation: 0,
                batch: Some(batch),
            });
        }
        debug_assert!(self.slots[index as usize].batch.is_some());
        self.live += 1;
        id
    }

    pub(crate) fn get(&self, id: BatchId) -> Option<&ProducerBatch> {
        let (index, generation) = split_id(id);
        let slot = self.slots.get(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        slot.batch.as_ref()
    }

    pub(crate) fn get_mut(&mut self, id: BatchId) -> Option<&mut ProducerBatch> {
        let (index, generation) = split_id(id);
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        let batch = slot.batch.as_mut()?;
        self.touched.mark(batch.partition);
        Some(batch)
    }

    pub(crate) fn remove(&mut self, id: BatchId) -> Option<ProducerBatch> {
        let (index, generation) = split_id(id);
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        let batch = slot.batch.take()?;
        self.touched.mark(batch.partition);
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
        self.live -= 1;
        Some(batch)
    }

    /// Partitions whose batches changed since the timer table last looked.
    pub(crate) fn touched(&self) -> &Touched {
        &self.touched
    }

    /// Empties the touched set into `into`.
    pub(crate) fn take_touched(&mut self, into: &mut Vec<u32>) {
        self.touched.drain_into(into);
    }
}
