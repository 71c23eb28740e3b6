//! Finished record batches handed to the core by a client with its own accumulator.
//!
//! A Kafka client that batches records itself (its own buffers, its own compression)
//! can still let the core sequence and stamp its batches: [`Producer::send_batch`]
//! takes one encoded RecordBatch v2 and queues it behind whatever the partition already
//! holds. From then on it is a batch like the core's own: it is stamped with the
//! producer id, epoch and base sequence when it is first drained, renumbered by an
//! epoch bump, retried, expired and reported record by record.
//!
//! The rules a handed batch must keep (each refused with
//! [`SendError::InvalidBatch`] otherwise, nothing queued):
//!
//! * exactly one batch, magic 2, its `batchLength` matching the bytes;
//! * at least one record, and `lastOffsetDelta = recordCount - 1` (a producer writes
//!   offsets 0..n-1; the broker assigns the real ones, `LogValidator`);
//! * not a control batch, not transactional (the core sets the transactional bit of a
//!   transactional producer's batches itself), and `CreateTime` timestamps (the broker
//!   sets `LogAppendTime`);
//! * no larger than `max.request.size`, and within `buffer.memory` as records are.
//!
//! The producer id, epoch, base sequence and CRC it carries are ignored: the core
//! writes them (a producer without idempotence writes "no producer", -1, and the CRC at
//! once). The base offset and the records themselves are the caller's. A batch the
//! broker refuses as too large (MESSAGE_TOO_LARGE) is split like the core's own when
//! its records can be read: uncompressed, or compressed with the codec of the
//! producer's `compression.type`; otherwise its records fail with
//! [`DeliveryError::RecordTooLarge`](crate::DeliveryError::RecordTooLarge).

use bytes::BytesMut;

use crate::batch::{BatchData, ProducerBatch, StampFate, WriteState};
use crate::error::SendError;
use crate::producer::Producer;
use crate::record::{self, RECORD_BATCH_OVERHEAD};
use crate::retry::Retry;
use crate::types::{ProducerIdAndEpoch, RecordId, Sequence, Timestamp, TopicPartition};

/// The records of a batch given to [`Producer::send_batch`]: `count` consecutive ids
/// from `first`, in the batch's order. Each gets exactly one outcome event, as a
/// record given to [`Producer::send`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchRecords {
    first: RecordId,
    count: u32,
}

impl BatchRecords {
    /// The id of the batch's first record.
    #[must_use]
    pub fn first(&self) -> RecordId {
        self.first
    }

    /// How many records the batch holds (at least one).
    #[must_use]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether `id` is one of these records.
    #[must_use]
    pub fn contains(&self, id: RecordId) -> bool {
        id.0 >= self.first.0 && id.0 - self.first.0 < u64::from(self.count)
    }

    /// The records' ids, in the batch's order.
    pub fn iter(&self) -> impl Iterator<Item = RecordId> {
        (self.first.0..self.first.0 + u64::from(self.count)).map(RecordId)
    }
}

impl Producer {
    /// Queues a finished RecordBatch v2 for `partition`, behind every record already
    /// sent there, to be sequenced and stamped by the core (see the module's rules,
    /// [`crate::handed`]). Returns the ids of its records, whose outcomes arrive as
    /// [`Event::Delivered`](crate::Event::Delivered) and
    /// [`Event::Failed`](crate::Event::Failed) as for [`Producer::send`].
    ///
    /// # Errors
    /// Nothing was queued: the producer is closed or fatal, the partition is negative,
    /// a transactional producer has no transaction open, the batch breaks a rule
    /// ([`SendError::InvalidBatch`]), is larger than `max.request.size` or all of
    /// `buffer.memory` ([`SendError::RecordTooLarge`]) or does not fit in `buffer.memory`
    /// now ([`SendError::BufferFull`]). Inside a transaction, the refusals
    /// [`Producer::send`] says make it abortable do here too.
    pub fn send_batch(
        &mut self,
        partition: &TopicPartition,
        mut batch: BytesMut,
        now: Timestamp,
    ) -> Result<BatchRecords, SendError> {
        self.observe(now);
        self.admit_caller(partition).map_err(|e| self.refuse(e))?;
        let count =
            record::check_handed(&batch).map_err(|e| self.refuse(SendError::InvalidBatch(e)))?;
        // A batch is its own upper bound, and charges its length.
        let size = batch.len();
        self.admit_size(size, size).map_err(|e| self.refuse(e))?;
        // Its largest record, as `send` counts one for `record-size-max` (0 when
        // compressed: not measured).
        let largest = record::largest_record(&batch).unwrap_or(0);
        let p = self.partition_for(partition);
        self.txn_add_partition(p).map_err(|e| self.refuse(e))?;
        if !self.is_idempotent() {
            // Without idempotence nothing stamps the batch later: mark it as carrying
            // no producer and write its CRC now.
            let unstamped =
                record::stamp(&mut batch, ProducerIdAndEpoch::NONE, Sequence(-1), false);
            debug_assert!(unstamped.is_ok(), "check_handed checked the frame");
        }
        // Whatever the partition holds goes first, so the records keep send order.
        self.close_open(p);
        let ids = self.acc.accept(count, size);
        let first = RecordId(ids.start);
        let records = ids.map(RecordId).collect();
        let id = self.batches.next_id();
        let record_count = i32::try_from(count).unwrap_or(i32::MAX);
        self.batches.insert(ProducerBatch {
            id,
            partition: p,
            records,
            record_count,
            uncompressed_records_len: size - RECORD_BATCH_OVERHEAD,
            data: BatchData::new(batch),
            charged: size,
            max_record_size: largest,
            created: self.now,
            retry: Retry::new(),
            last_leader_epoch: None,
            stamp: None,
            reopened: false,
            fate: StampFate::Unsent,
            on_wire: None,
            write_state: WriteState::Never,
            done: false,
        });
        self.acc[p].queue.push_back(id);
        self.stats.records_sent += u64::from(count);
        self.list(p);
        Ok(BatchRecords { first, count })
    }
}
