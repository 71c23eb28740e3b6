//! The model partition log: ordered data batches and transaction markers,
//! a log start offset, and the aborted-transaction index that a
//! `read_committed` consumer uses.
//!
//! The log is modelled as fully replicated (acks=all), so the high watermark
//! is the log end offset. Entries below the log start offset stay in
//! [`Log::entries`] and [`Log::records`] for auditing (the simulator's
//! exactly-once checks must see everything that was ever written), but the
//! consumer views [`Log::read_uncommitted`] and [`Log::read_committed`] start
//! at the log start offset, as a fetch would.

use bytes::Bytes;

use crate::batch::Header;

/// One data record as stored, with everything a checker needs to attribute it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRecord {
    /// Offset assigned by the broker.
    pub offset: i64,
    /// Key, `None` for null.
    pub key: Option<Bytes>,
    /// Value, `None` for null.
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<Header>,
    /// Producer id of the batch, -1 for a non-idempotent producer.
    pub producer_id: i64,
    /// Producer epoch of the batch.
    pub producer_epoch: i16,
    /// Sequence of this record (base sequence plus its index, wrapping), or -1
    /// for a non-idempotent producer.
    pub sequence: i32,
    /// Whether the batch was transactional.
    pub transactional: bool,
}

/// A data batch as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedBatch {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// Producer id, -1 for a non-idempotent producer.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// First sequence, -1 for a non-idempotent producer.
    pub base_sequence: i32,
    /// Last sequence (wrapping), -1 for a non-idempotent producer.
    pub last_sequence: i32,
    /// Whether the batch was transactional.
    pub transactional: bool,
    /// Broker time of the append.
    pub append_time_ms: u64,
    /// The batch exactly as the client sent it.
    pub raw: Bytes,
    /// The decoded records, with their assigned offsets.
    pub records: Vec<LoggedRecord>,
}

/// Outcome a transaction marker records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MarkerKind {
    /// COMMIT control record.
    Commit,
    /// ABORT control record.
    Abort,
}

/// A transaction marker (control batch) as stored. It takes one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlMarker {
    /// Offset of the marker.
    pub offset: i64,
    /// Producer id the marker ends a transaction for.
    pub producer_id: i64,
    /// Producer epoch carried by the marker.
    pub producer_epoch: i16,
    /// Coordinator epoch carried by the marker.
    pub coordinator_epoch: i32,
    /// Commit or abort.
    pub kind: MarkerKind,
    /// Broker time of the append.
    pub append_time_ms: u64,
}

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEntry {
    /// A data batch from a producer.
    Batch(LoggedBatch),
    /// A transaction marker from the coordinator.
    Marker(ControlMarker),
}

impl LogEntry {
    /// First offset the entry occupies.
    pub fn base_offset(&self) -> i64 {
        match self {
            LogEntry::Batch(b) => b.base_offset,
            LogEntry::Marker(m) => m.offset,
        }
    }

    /// Last offset the entry occupies.
    pub fn last_offset(&self) -> i64 {
        match self {
            LogEntry::Batch(b) => b.last_offset,
            LogEntry::Marker(m) => m.offset,
        }
    }
}

/// An aborted transaction: the producer's transactional data in
/// `first_offset..=last_offset` is hidden from `read_committed` readers.
/// `last_offset` is the offset of the ABORT marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    /// Producer id of the aborted transaction.
    pub producer_id: i64,
    /// Offset of the transaction's first batch.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
}

/// The partition log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log {
    entries: Vec<LogEntry>,
    log_start_offset: i64,
    log_end_offset: i64,
    aborted: Vec<AbortedTxn>,
}

impl Log {
    /// An empty log starting at offset 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry ever appended, in offset order, including those below the
    /// log start offset.
    pub fn entries(&self) -> &[LogEntry] {
        &self.entries
    }

    /// First offset a consumer can fetch.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// Offset the next append gets. Equal to the high watermark in this model.
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// The aborted-transaction index, in marker order.
    pub fn aborted_transactions(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    /// Every data record ever appended, in offset order (audit view: ignores
    /// the log start offset).
    pub fn records(&self) -> impl Iterator<Item = &LoggedRecord> + '_ {
        self.entries.iter().flat_map(|e| match e {
            LogEntry::Batch(b) => b.records.as_slice(),
            LogEntry::Marker(_) => &[],
        })
    }

    /// The data records a `read_uncommitted` consumer sees: everything from
    /// the log start offset to the high watermark, aborted or not.
    pub fn read_uncommitted(&self) -> Vec<&LoggedRecord> {
        self.records()
            .filter(|r| r.offset >= self.log_start_offset)
            .collect()
    }

    /// The data records a `read_committed` consumer sees when the last stable
    /// offset is `last_stable_offset`: records below it from non-transactional
    /// batches and from committed transactions, starting at the log start
    /// offset. Control records are never returned.
    pub fn read_committed(&self, last_stable_offset: i64) -> Vec<&LoggedRecord> {
        self.records()
            .filter(|r| r.offset >= self.log_start_offset && r.offset < last_stable_offset)
            .filter(|r| !(r.transactional && self.is_aborted(r.producer_id, r.offset)))
            .collect()
    }

    /// Whether transactional data of `producer_id` at `offset` belongs to an
    /// aborted transaction.
    pub fn is_aborted(&self, producer_id: i64, offset: i64) -> bool {
        self.aborted.iter().any(|a| {
            a.producer_id == producer_id && a.first_offset <= offset && offset <= a.last_offset
        })
    }

    /// Moves the log start offset forward (retention or DeleteRecords), never
    /// past the high watermark and never backwards. Returns the new value.
    pub fn advance_log_start_offset(&mut self, offset: i64) -> i64 {
        let target = offset.min(self.log_end_offset);
        if target > self.log_start_offset {
            self.log_start_offset = target;
        }
        self.log_start_offset
    }

    /// Appends a data batch at the log end. `records` receive their offsets
    /// here. Returns (base offset, last offset).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_batch(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
        last_sequence: i32,
        transactional: bool,
        append_time_ms: u64,
        raw: Bytes,
        mut records: Vec<LoggedRecord>,
    ) -> (i64, i64) {
        let base_offset = self.log_end_offset;
        let count = i64::try_from(records.len()).unwrap_or(i64::MAX).max(1);
        let last_offset = base_offset + count - 1;
        for (i, r) in records.iter_mut().enumerate() {
            r.offset = base_offset + i as i64;
        }
        self.entries.push(LogEntry::Batch(LoggedBatch {
            base_offset,
            last_offset,
            producer_id,
            producer_epoch,
            base_sequence,
            last_sequence,
            transactional,
            append_time_ms,
            raw,
            records,
        }));
        self.log_end_offset = last_offset + 1;
        (base_offset, last_offset)
    }

    /// Appends a transaction marker at the log end. If it is an ABORT that
    /// closes a transaction begun at `txn_first_offset`, the aborted index
    /// records it. Returns the marker's offset.
    pub(crate) fn append_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        kind: MarkerKind,
        append_time_ms: u64,
        txn_first_offset: Option<i64>,
    ) -> i64 {
        let offset = self.log_end_offset;
        self.entries.push(LogEntry::Marker(ControlMarker {
            offset,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            kind,
            append_time_ms,
        }));
        self.log_end_offset = offset + 1;
        if let (MarkerKind::Abort, Some(first_offset)) = (kind, txn_first_offset) {
            self.aborted.push(AbortedTxn {
                producer_id,
                first_offset,
                last_offset: offset,
            });
        }
        offset
    }
}
