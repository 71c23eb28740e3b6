//! The model partition log: ordered data batches and transaction markers,
//! a log start offset, and the aborted-transaction index that a
//! `read_committed` consumer uses.
//!
//! Every replica of a partition has its own `Log`. The leader's high watermark
//! (Kafka's `Partition.maybeIncrementLeaderHW`: the smallest log end offset of
//! the in-sync replicas) is set by the cluster (`Log::set_high_watermark`);
//! a log nobody tracks (a lone model broker in a unit test) is fully
//! replicated, its high watermark is its log end offset. A replica that
//! follows a new leader truncates to it (`Log::truncate_to_entries`,
//! KIP-101/KIP-279), so what is above the high watermark can vanish.
//!
//! Entries below the log start offset stay in [`Log::entries`] and
//! [`Log::records`], but the consumer views [`Log::read_uncommitted`] and
//! [`Log::read_committed`] start at the log start offset and stop at the high
//! watermark, as a fetch would. The audit trail is the [`Log::journal`]: every
//! append and every truncation, in order, kept even for entries that vanished
//! (the simulator's exactly-once checks must see everything ever written).

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

/// One change of the log, in the order it happened (the audit trail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogChange {
    /// An entry was appended by the leader.
    Appended(LogEntry),
    /// A failover made a replica with a shorter log the leader: these entries of
    /// the old leader's log, never committed, are gone from the partition.
    Truncated(Vec<LogEntry>),
}

/// Where a log's high watermark comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HighWatermark {
    /// No one tracks replication: the log counts as fully replicated.
    #[default]
    LogEnd,
    /// The leader's high watermark as the cluster computed it.
    Tracked(i64),
}

/// The partition log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log {
    entries: Vec<LogEntry>,
    log_start_offset: i64,
    log_end_offset: i64,
    aborted: Vec<AbortedTxn>,
    /// Never above `log_end_offset`, never moves backwards while tracked.
    high_watermark: HighWatermark,
    /// Every append and truncation; moves with leadership (see
    /// [`Log::take_journal`]), so the leader's journal is the partition's.
    journal: Vec<LogChange>,
}

impl Log {
    /// An empty log starting at offset 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry in the log, in offset order, including those below the log
    /// start offset and those above the high watermark (truncated entries are
    /// only in the [`Log::journal`]).
    pub fn entries(&self) -> &[LogEntry] {
        &self.entries
    }

    /// First offset a consumer can fetch.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// Offset the next append gets.
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// The high watermark: offsets below it are committed (on every in-sync
    /// replica) and visible to consumers.
    pub fn high_watermark(&self) -> i64 {
        match self.high_watermark {
            HighWatermark::LogEnd => self.log_end_offset,
            HighWatermark::Tracked(hw) => hw,
        }
    }

    /// Sets the tracked high watermark (clamped to the log end offset).
    pub fn set_high_watermark(&mut self, hw: i64) {
        self.high_watermark = HighWatermark::Tracked(hw.min(self.log_end_offset));
    }

    /// Every append and truncation so far, in order (the audit trail).
    pub fn journal(&self) -> &[LogChange] {
        &self.journal
    }

    /// Takes the journal (a new leader carries on the old leader's).
    pub(crate) fn take_journal(&mut self) -> Vec<LogChange> {
        std::mem::take(&mut self.journal)
    }

    /// Replaces the journal with `journal` plus, if any entries vanished, their
    /// truncation.
    pub(crate) fn set_journal(&mut self, mut journal: Vec<LogChange>, truncated: Vec<LogEntry>) {
        if !truncated.is_empty() {
            journal.push(LogChange::Truncated(truncated));
        }
        self.journal = journal;
    }

    /// How many leading entries this log shares with `other` (Kafka finds the
    /// divergence point from leader epochs, KIP-279; entries here carry their
    /// raw batch and append time, so equality finds the same point).
    pub fn common_prefix(&self, other: &Log) -> usize {
        self.entries
            .iter()
            .zip(&other.entries)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Drops every entry from index `keep` on (a follower truncating to its
    /// leader). The aborted index and the high watermark follow. Returns the
    /// dropped entries.
    pub(crate) fn truncate_to_entries(&mut self, keep: usize) -> Vec<LogEntry> {
        if keep >= self.entries.len() {
            return Vec::new();
        }
        let removed = self.entries.split_off(keep);
        self.log_end_offset = removed[0].base_offset();
        let leo = self.log_end_offset;
        self.aborted.retain(|a| a.last_offset < leo);
        self.log_start_offset = self.log_start_offset.min(leo);
        if let HighWatermark::Tracked(hw) = self.high_watermark {
            self.high_watermark = HighWatermark::Tracked(hw.min(leo));
        }
        removed
    }

    /// A follower copies one entry of its leader's log, at the same offsets.
    /// `txn_first_offset` is the open transaction an ABORT marker closes.
    pub(crate) fn replicate(&mut self, entry: &LogEntry, txn_first_offset: Option<i64>) {
        debug_assert_eq!(entry.base_offset(), self.log_end_offset, "replica gap");
        if let (LogEntry::Marker(m), Some(first_offset)) = (entry, txn_first_offset) {
            if m.kind == MarkerKind::Abort {
                self.aborted.push(AbortedTxn {
                    producer_id: m.producer_id,
                    first_offset,
                    last_offset: m.offset,
                });
            }
        }
        self.log_end_offset = entry.last_offset() + 1;
        self.entries.push(entry.clone());
    }

    /// The aborted-transaction index, in marker order.
    pub fn aborted_transactions(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    /// Every data record in the log, in offset order (ignores the log start
    /// offset and the high watermark).
    pub fn records(&self) -> impl Iterator<Item = &LoggedRecord> + '_ {
        self.entries.iter().flat_map(|e| match e {
            LogEntry::Batch(b) => b.records.as_slice(),
            LogEntry::Marker(_) => &[],
        })
    }

    /// The data records a `read_uncommitted` consumer sees: everything from
    /// the log start offset to the high watermark, aborted or not.
    pub fn read_uncommitted(&self) -> Vec<&LoggedRecord> {
        let hw = self.high_watermark();
        self.records()
            .filter(|r| r.offset >= self.log_start_offset && r.offset < hw)
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
        let target = offset.min(self.high_watermark());
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
        let entry = LogEntry::Batch(LoggedBatch {
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
        });
        self.journal.push(LogChange::Appended(entry.clone()));
        self.entries.push(entry);
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
        let entry = LogEntry::Marker(ControlMarker {
            offset,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            kind,
            append_time_ms,
        });
        self.journal.push(LogChange::Appended(entry.clone()));
        self.entries.push(entry);
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
