//! Containers the core reuses instead of allocating afresh for every request and every
//! batch: the per-request lists of batch ids it keeps while a request is outstanding,
//! the per-request lists of batches a driver hands back through
//! [`Producer::recycle`](crate::Producer::recycle), the per-batch record lists an
//! application hands back through [`Producer::recycle_event`](crate::Producer::recycle_event),
//! and the batch buffers of acknowledged
//! batches (Java's `BufferPool`, which keeps freed `batch.size` buffers for the next
//! batch instead of returning them to the allocator).
//!
//! Every pool is bounded (see the fields), so an idle producer keeps at most a fixed
//! number of spare containers, whatever its peak was.

use alloc::vec::Vec;
use bytes::BytesMut;

use crate::batch::BatchData;
use crate::io::ProduceBatch;
use crate::types::{BatchId, RecordId};

/// Spare per-request lists kept at most, of each kind. A request's lists come back when
/// it is answered (or by the driver, for the batches list); one node with Kafka's
/// default `max.in.flight.requests.per.connection` of 5 needs at most 5 of each, a
/// few nodes a few times that.
pub(crate) const MAX_SPARE_LISTS: usize = 32;

/// The containers waiting for reuse.
#[derive(Debug, Default)]
pub(crate) struct Recycled {
    /// Emptied lists for an outstanding Produce request's batch ids. Invariant: every
    /// list is empty, at most [`MAX_SPARE_LISTS`] lists.
    batch_lists: Vec<Vec<BatchId>>,
    /// Emptied lists for a Produce request's batches, handed back by the driver.
    /// Invariant: every list is empty, at most [`MAX_SPARE_LISTS`] lists.
    request_lists: Vec<Vec<ProduceBatch>>,
    /// Emptied record lists, from events handed back. Invariant: every list is empty, at
    /// most `max_buffers` lists (one per spare buffer: each becomes a batch with one
    /// list).
    record_lists: Vec<Vec<RecordId>>,
    /// Freed batch buffers: each unshared, reference-counted (sharing it costs no
    /// allocation), empty, of exactly `buffer_size` bytes of capacity. Invariant: at
    /// most `max_buffers`, so the pool holds at most `max_buffers * buffer_size` bytes.
    buffers: Vec<BytesMut>,
    /// `batch.size`: only buffers of exactly this capacity are kept and handed out (a
    /// batch opened for a larger record or compressed has another size).
    buffer_size: usize,
    /// A quarter of `buffer.memory` in buffers of `batch.size` (Java keeps up to all of
    /// `buffer.memory`; a quarter covers the batches of many full requests).
    max_buffers: usize,
}

impl Recycled {
    /// Pools for batches of `batch_size` bytes under `buffer_memory`.
    pub(crate) fn new(batch_size: usize, buffer_memory: usize) -> Self {
        Self {
            batch_lists: Vec::new(),
            request_lists: Vec::new(),
            record_lists: Vec::new(),
            buffers: Vec::new(),
            buffer_size: batch_size,
            max_buffers: buffer_memory / 4 / batch_size.max(1),
        }
    }

    /// An empty list for a request's batch ids.
    pub(crate) fn batch_list(&mut self) -> Vec<BatchId> {
        self.batch_lists.pop().unwrap_or_default()
    }

    /// Takes back a request's batch-id list.
    pub(crate) fn give_batch_list(&mut self, mut list: Vec<BatchId>) {
        if self.batch_lists.len() < MAX_SPARE_LISTS && list.capacity() > 0 {
            list.clear();
            self.batch_lists.push(list);
        }
        debug_assert!(self.batch_lists.len() <= MAX_SPARE_LISTS);
    }

    /// An empty list for a request's batches.
    pub(crate) fn request_list(&mut self) -> Vec<ProduceBatch> {
        self.request_lists.pop().unwrap_or_default()
    }

    /// Takes back a request's batch list (its batches are dropped here).
    pub(crate) fn give_request_list(&mut self, mut list: Vec<ProduceBatch>) {
        list.clear();
        if self.request_lists.len() < MAX_SPARE_LISTS && list.capacity() > 0 {
            self.request_lists.push(list);
        }
        debug_assert!(self.request_lists.len() <= MAX_SPARE_LISTS);
    }

    /// An empty list for a new batch's record ids.
    pub(crate) fn record_list(&mut self) -> Vec<RecordId> {
        self.record_lists.pop().unwrap_or_default()
    }

    /// Takes back an event's record list.
    pub(crate) fn give_record_list(&mut self, mut list: Vec<RecordId>) {
        if self.record_lists.len() < self.max_buffers && list.capacity() > 0 {
            list.clear();
            self.record_lists.push(list);
        }
        debug_assert!(self.record_lists.len() <= self.max_buffers);
    }

    /// A freed buffer of `capacity` bytes, if one is spare.
    pub(crate) fn buffer(&mut self, capacity: usize) -> Option<BytesMut> {
        if capacity != self.buffer_size {
            return None;
        }
        self.buffers.pop()
    }

    /// Takes back a freed batch's bytes: kept if nobody else holds them (a driver
    /// still holding a request's copy keeps them alive; they are then freed when it
    /// drops them) and they are a `batch.size` buffer.
    pub(crate) fn give_buffer(&mut self, data: BatchData) {
        if self.buffers.len() >= self.max_buffers {
            return;
        }
        let Some(mut buf) = data.into_unique() else {
            return;
        };
        if buf.capacity() != self.buffer_size {
            return;
        }
        buf.clear();
        self.buffers.push(buf);
        debug_assert!(self.buffers.len() <= self.max_buffers);
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self) {
        assert!(self.batch_lists.len() <= MAX_SPARE_LISTS);
        assert!(self.batch_lists.iter().all(Vec::is_empty));
        assert!(self.request_lists.len() <= MAX_SPARE_LISTS);
        assert!(self.request_lists.iter().all(Vec::is_empty));
        assert!(self.record_lists.len() <= self.max_buffers);
        assert!(self.record_lists.iter().all(Vec::is_empty));
        assert!(self.buffers.len() <= self.max_buffers);
        assert!(self
            .buffers
            .iter()
            .all(|b| b.is_empty() && b.capacity() == self.buffer_size));
    }
}
