//! The model broker's per-partition rules: Kafka's broker-side producer state
//! (`ProducerStateEntry`, the checks of `ProducerAppendInfo`, the dedup of
//! `UnifiedLog`), transaction markers, producer expiry and the state a new
//! leader starts with.
//!
//! Written from Kafka's broker-side rules (`ProducerStateEntry`,
//! `ProducerAppendInfo.appendDataBatch` and `appendEndTxnMarker`,
//! `UnifiedLog.analyzeAndValidateProducerState`,
//! `ProducerStateManager.removeExpiredProducers`), never from the client's
//! code, so that the simulator is an independent oracle. What is modelled,
//! for a modern (2.5+) broker:
//!
//! * Dedup first: a batch whose (epoch, first sequence, last sequence) matches
//!   one of the last [`NUM_BATCHES_TO_RETAIN`] batches of its producer is
//!   answered with the original offsets and nothing is appended.
//! * Then the epoch check (INVALID_PRODUCER_EPOCH), the sequence check
//!   (OUT_OF_ORDER_SEQUENCE_NUMBER; an unknown producer accepts any sequence,
//!   KIP-360) and the transaction check (INVALID_TXN_STATE).
//! * The broker never answers DUPLICATE_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID.
//! * KIP-890 part 1 verification: before the first transactional batch of a
//!   producer on the partition at its epoch the leader asks the coordinator
//!   (the cluster does, `txn_produce_check`) and keeps a
//!   [`VerificationStateEntry`] with the lowest sequence it verified; a batch
//!   with a higher first sequence is then OUT_OF_ORDER_SEQUENCE_NUMBER, and
//!   under TV2 so is a non-zero first sequence from a producer with no batch
//!   here (`ProducerAppendInfo.checkSequence`). The
//!   `VerificationGuard` race (a marker between verification and append) can
//!   not happen here: the check and the append are one step.
//! * Replication, truncation and snapshot restore: `replica.rs`.
//!
//! Time is a parameter (`now_ms`); there is no clock and no randomness. The
//! timestamp stored in producer state is the batch's max timestamp, as Kafka
//! stores it for a CreateTime topic (the default `message.timestamp.type`);
//! producer expiry measures idleness from it (`isProducerExpired`).

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use crate::batch::{self, increment_sequence, BatchError};
use crate::log::{Log, LogEntry, LoggedRecord, MarkerKind};
pub use crate::verification::VerificationStateEntry;

/// Kafka error code: no error.
pub const NONE: i16 = 0;
/// Kafka error code: the server hit an unexpected error.
pub const UNKNOWN_SERVER_ERROR: i16 = -1;
/// Kafka error code: the message failed its CRC or is otherwise corrupt.
pub const CORRUPT_MESSAGE: i16 = 2;
/// Kafka error code: the topic or partition does not exist on this broker.
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
/// Kafka error code: this broker is not the leader (or follower) for it.
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
/// Kafka error code: the request timed out.
pub const REQUEST_TIMED_OUT: i16 = 7;
/// Kafka error code: the message is larger than the broker accepts.
pub const MESSAGE_TOO_LARGE: i16 = 10;
/// Kafka error code: the connection was lost.
pub const NETWORK_EXCEPTION: i16 = 13;
/// Kafka error code: fewer in-sync replicas than required (nothing written).
pub const NOT_ENOUGH_REPLICAS: i16 = 19;
/// Kafka error code: written to the leader, but the ISR shrank before the
/// acks were collected.
pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
/// Kafka error code: the batch's sequence is not the next expected one.
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
/// Kafka error code: a duplicate sequence (never sent by a modern broker).
pub const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
/// Kafka error code: the producer epoch is older than the broker's.
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
/// Kafka error code: the operation is not valid in the transaction's state.
pub const INVALID_TXN_STATE: i16 = 48;
/// Kafka error code: the producer id does not match the transactional id.
pub const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
/// Kafka error code: the coordinator is busy with a transition.
pub const CONCURRENT_TRANSACTIONS: i16 = 51;
/// Kafka error code: a marker came from a coordinator with an old epoch.
pub const TRANSACTION_COORDINATOR_FENCED: i16 = 52;
/// Kafka error code: the broker has no state for this producer (never sent
/// on produce by a modern broker).
pub const UNKNOWN_PRODUCER_ID: i16 = 59;
/// Kafka error code: the compression codec is not supported.
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
/// Kafka error code: the record batch is invalid.
pub const INVALID_RECORD: i16 = 87;
/// Kafka error code: a newer producer with the same transactional id exists.
pub const PRODUCER_FENCED: i16 = 90;
/// Kafka error code: the transaction must be aborted (KIP-890/1050).
pub const TRANSACTION_ABORTABLE: i16 = 120;

/// Batches of metadata kept per producer for dedup (`NUM_BATCHES_TO_RETAIN`).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;
/// Epoch of a producer the broker knows nothing about.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Sequence reported by an entry with no batch history.
pub const NO_SEQUENCE: i32 = -1;
/// Kafka's default `producer.id.expiration.ms` (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: u64 = 86_400_000;

/// What the broker remembers about one appended batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Sequence of the first record.
    pub first_seq: i32,
    /// Sequence of the last record (wrapping).
    pub last_seq: i32,
    /// Offset of the first record.
    pub first_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// Broker time of the append.
    pub timestamp_ms: u64,
}

/// Per-partition, per-producer-id state (Kafka's `ProducerStateEntry`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerStateEntry {
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    last_timestamp_ms: u64,
    current_txn_first_offset: Option<i64>,
    batches: VecDeque<BatchMetadata>,
}

impl ProducerStateEntry {
    /// A fresh entry: unknown epoch, no history, no open transaction.
    pub fn new(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: -1,
            last_timestamp_ms: 0,
            current_txn_first_offset: None,
            batches: VecDeque::new(),
        }
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// The epoch, [`NO_PRODUCER_EPOCH`] if unknown.
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// Epoch of the coordinator that wrote the last marker, -1 if none.
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Broker time of the last batch or marker.
    pub fn last_timestamp_ms(&self) -> u64 {
        self.last_timestamp_ms
    }

    /// First offset of the open transaction, if one is open.
    pub fn current_txn_first_offset(&self) -> Option<i64> {
        self.current_txn_first_offset
    }

    pub(crate) fn set_current_txn_first_offset(&mut self, offset: Option<i64>) {
        self.current_txn_first_offset = offset;
    }

    /// The retained batch history, oldest first (at most
    /// [`NUM_BATCHES_TO_RETAIN`]).
    pub fn batches(&self) -> impl ExactSizeIterator<Item = &BatchMetadata> + '_ {
        self.batches.iter()
    }

    /// Whether there is no batch history.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Last sequence of the newest batch, [`NO_SEQUENCE`] if none.
    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    /// First sequence of the oldest retained batch, [`NO_SEQUENCE`] if none.
    pub fn first_seq(&self) -> i32 {
        self.batches.front().map_or(NO_SEQUENCE, |b| b.first_seq)
    }

    /// The retained batch with exactly this epoch and sequence range.
    pub fn find_duplicate(
        &self,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Option<&BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
    }

    /// Kafka's `addBatch`: a new epoch clears the history; the oldest batch is
    /// evicted beyond [`NUM_BATCHES_TO_RETAIN`].
    pub(crate) fn add_batch(&mut self, epoch: i16, meta: BatchMetadata) {
        if epoch != self.producer_epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
        if self.batches.len() >= NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(meta);
        self.last_timestamp_ms = meta.timestamp_ms;
    }

    /// Kafka's `update` on a marker: a new epoch clears the history; the open
    /// transaction is closed.
    pub(crate) fn apply_marker(&mut self, epoch: i16, coordinator_epoch: i32, now_ms: u64) {
        if epoch != self.producer_epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
        self.coordinator_epoch = coordinator_epoch;
        self.current_txn_first_offset = None;
        self.last_timestamp_ms = now_ms;
    }

    /// Whether expiry may drop this entry at `now_ms`.
    fn is_expired(&self, now_ms: u64, expiration_ms: u64) -> bool {
        self.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(self.last_timestamp_ms) >= expiration_ms
    }
}

/// All producer states of one partition, ordered by producer id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerStates {
    entries: BTreeMap<i64, ProducerStateEntry>,
}

impl ProducerStates {
    /// The entry of `producer_id`, if the broker has one.
    pub fn get(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.entries.get(&producer_id)
    }

    /// All entries in producer-id order.
    pub fn iter(&self) -> impl Iterator<Item = &ProducerStateEntry> + '_ {
        self.entries.values()
    }

    /// Number of producers known.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no producer is known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A copy keeping every entry; with `full == false` each entry keeps only
    /// its newest batch, as a producer-state snapshot does.
    pub fn snapshot(&self, full: bool) -> ProducerStates {
        let mut copy = self.clone();
        if !full {
            for e in copy.entries.values_mut() {
                while e.batches.len() > 1 {
                    e.batches.pop_front();
                }
            }
        }
        copy
    }

    /// Drops entries with no open transaction idle for at least
    /// `expiration_ms`. Returns the dropped producer ids in order.
    pub fn remove_expired(&mut self, now_ms: u64, expiration_ms: u64) -> Vec<i64> {
        let gone: Vec<i64> = self
            .entries
            .values()
            .filter(|e| e.is_expired(now_ms, expiration_ms))
            .map(|e| e.producer_id)
            .collect();
        for pid in &gone {
            self.entries.remove(pid);
        }
        gone
    }

    /// Smallest first offset of an open transaction.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.entries
            .values()
            .filter_map(|e| e.current_txn_first_offset)
            .min()
    }

    pub(crate) fn entry_mut(&mut self, producer_id: i64) -> &mut ProducerStateEntry {
        self.entries
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::new(producer_id))
    }
}

/// Why the producer-state rules rejected a batch or marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Kafka error code.
    pub code: i16,
    /// Human-readable reason.
    pub reason: &'static str,
}

const fn reject(code: i16, reason: &'static str) -> Rejection {
    Rejection { code, reason }
}

/// Kafka's `inSequence`: `next` directly follows `last`, including the wrap
/// from `i32::MAX` to 0.
pub fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// The data epoch check: an epoch older than the entry's is fenced.
pub fn check_producer_epoch(
    entry: Option<&ProducerStateEntry>,
    epoch: i16,
) -> Result<(), Rejection> {
    match entry {
        Some(e) if epoch < e.producer_epoch => Err(reject(
            INVALID_PRODUCER_EPOCH,
            "producer epoch older than the broker's",
        )),
        _ => Ok(()),
    }
}

/// The client sequence check (no dedup, as in `ProducerAppendInfo`): a new
/// epoch must start at 0 unless the producer is unknown; the same epoch must
/// continue right after the last retained sequence (-1 when the history is
/// empty, so 0 is next).
pub fn check_sequence(
    entry: Option<&ProducerStateEntry>,
    epoch: i16,
    first_seq: i32,
) -> Result<(), Rejection> {
    let (entry_epoch, last_seq) = entry.map_or((NO_PRODUCER_EPOCH, NO_SEQUENCE), |e| {
        (e.producer_epoch, e.last_seq())
    });
    if epoch != entry_epoch {
        if entry_epoch != NO_PRODUCER_EPOCH && first_seq != 0 {
            return Err(reject(
                OUT_OF_ORDER_SEQUENCE_NUMBER,
                "invalid sequence for new epoch",
            ));
        }
    } else if entry_epoch != NO_PRODUCER_EPOCH && !in_sequence(last_seq, first_seq) {
        return Err(reject(
            OUT_OF_ORDER_SEQUENCE_NUMBER,
            "out of order sequence",
        ));
    }
    Ok(())
}

/// The marker epoch check. Under TV0/1 an older epoch is fenced. Under TV2 the
/// marker must carry a newer epoch, except a retry at the same epoch when no
/// transaction is open (or the epoch is exhausted).
pub fn check_marker_epoch(
    entry: Option<&ProducerStateEntry>,
    marker_epoch: i16,
    version: TransactionVersion,
) -> Result<(), Rejection> {
    let Some(e) = entry else { return Ok(()) };
    let current = e.producer_epoch;
    let invalid = match version {
        TransactionVersion::V1 => marker_epoch < current,
        TransactionVersion::V2 => {
            marker_epoch < current
                || (marker_epoch == current
                    && e.current_txn_first_offset.is_some()
                    && marker_epoch != i16::MAX)
        }
    };
    if invalid {
        Err(reject(INVALID_PRODUCER_EPOCH, "marker epoch is stale"))
    } else {
        Ok(())
    }
}

/// Transaction protocol version of a marker's coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransactionVersion {
    /// TV0/TV1: the marker carries the transaction's epoch.
    V1,
    /// TV2 (KIP-890 part 2): the marker carries a bumped epoch.
    V2,
}

/// A WriteTxnMarkers entry for one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnMarker {
    /// Producer whose transaction ends.
    pub producer_id: i64,
    /// Epoch the coordinator writes the marker with.
    pub producer_epoch: i16,
    /// Epoch of the coordinator.
    pub coordinator_epoch: i32,
    /// Commit or abort.
    pub kind: MarkerKind,
    /// The coordinator's transaction version.
    pub transaction_version: TransactionVersion,
}

/// A successful produce for one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The batch was written.
    Appended {
        /// Offset of its first record.
        base_offset: i64,
        /// Offset of its last record.
        last_offset: i64,
        /// Log start offset for the response.
        log_start_offset: i64,
    },
    /// The batch was already written: the original offsets, nothing appended.
    Duplicate {
        /// Original offset of its first record.
        base_offset: i64,
        /// Original offset of its last record.
        last_offset: i64,
        /// Log start offset for the response.
        log_start_offset: i64,
    },
}

impl AppendOutcome {
    /// Offset of the first record, original or new.
    pub fn base_offset(&self) -> i64 {
        match *self {
            AppendOutcome::Appended { base_offset, .. }
            | AppendOutcome::Duplicate { base_offset, .. } => base_offset,
        }
    }

    /// Offset of the last record, original or new.
    pub fn last_offset(&self) -> i64 {
        match *self {
            AppendOutcome::Appended { last_offset, .. }
            | AppendOutcome::Duplicate { last_offset, .. } => last_offset,
        }
    }

    /// Log start offset the response carries.
    pub fn log_start_offset(&self) -> i64 {
        match *self {
            AppendOutcome::Appended {
                log_start_offset, ..
            }
            | AppendOutcome::Duplicate {
                log_start_offset, ..
            } => log_start_offset,
        }
    }

    /// Whether nothing was appended because the batch was a duplicate.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, AppendOutcome::Duplicate { .. })
    }
}

/// A failed produce (or marker) for one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendError {
    /// Kafka error code.
    pub code: i16,
    /// Log start offset for the response.
    pub log_start_offset: i64,
    /// Human-readable reason.
    pub reason: &'static str,
}

/// How a replica's producer state is derived from another's, for unit tests of
/// the rules (the cluster itself keeps one replica per broker, see `replica.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateTransfer {
    /// A follower that built its state by replication: the full history.
    Replicated,
    /// A broker restarted from a producer-state snapshot: only the newest
    /// batch per producer survives.
    SnapshotRestore,
}

/// One partition of the model broker: its log and its producer states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionState {
    pub(crate) log: Log,
    pub(crate) producers: ProducerStates,
    /// KIP-890 verification state of producers with no open transaction here
    /// (Kafka's `ProducerStateManager.verificationStates`): the leader's memory
    /// only, never replicated nor snapshotted. Cleared by any transactional
    /// append or marker of the producer (`UnifiedLog.updateProducers`).
    pub(crate) verifications: BTreeMap<i64, VerificationStateEntry>,
    /// Where this replica's producer-state snapshots are (`replica.rs`).
    pub(crate) snapshots: crate::replica::Snapshots,
}

impl PartitionState {
    /// An empty partition.
    pub fn new() -> Self {
        Self::default()
    }

    /// Produces one v2 batch (the partition's whole record set in a Produce
    /// request) at broker time `now_ms`.
    pub fn append(&mut self, raw: &[u8], now_ms: u64) -> Result<AppendOutcome, AppendError> {
        let batch = batch::decode(raw).map_err(|e| self.error(e.code(), batch_reason(&e)))?;
        let h = batch.header;
        if h.is_control() {
            return Err(self.error(INVALID_RECORD, "control batch from a client"));
        }
        if h.record_count <= 0 {
            return Err(self.error(INVALID_RECORD, "batch has no records"));
        }
        if h.last_offset_delta != h.record_count - 1 {
            return Err(self.error(INVALID_RECORD, "offset range disagrees with record count"));
        }
        if batch
            .records
            .iter()
            .enumerate()
            .any(|(i, r)| i64::from(r.offset_delta) != i as i64)
        {
            return Err(self.error(INVALID_RECORD, "record offset deltas are not contiguous"));
        }
        let pid = h.producer_id;
        let idempotent = h.has_producer_id();
        if idempotent && h.base_sequence < 0 {
            return Err(self.error(INVALID_RECORD, "producer id without a sequence"));
        }
        let (first_seq, last_seq) = if idempotent {
            (h.base_sequence, h.last_sequence())
        } else {
            (NO_SEQUENCE, NO_SEQUENCE)
        };
        let records = batch
            .records
            .into_iter()
            .enumerate()
            .map(|(i, r)| LoggedRecord {
                offset: 0,
                key: r.key,
                value: r.value,
                headers: r.headers,
                producer_id: pid,
                producer_epoch: h.producer_epoch,
                sequence: if idempotent {
                    increment_sequence(first_seq, i as i32)
                } else {
                    NO_SEQUENCE
                },
                transactional: h.is_transactional(),
            })
            .collect();
        let raw = Bytes::copy_from_slice(raw);
        let epoch = h.producer_epoch;
        let txn = h.is_transactional();
        if !idempotent {
            let (base_offset, last_offset) = self
                .log
                .append_batch(pid, epoch, first_seq, last_seq, txn, now_ms, raw, records);
            return Ok(self.appended(base_offset, last_offset));
        }

        let current = self.producers.get(pid);
        if let Some(dup) = current.and_then(|e| e.find_duplicate(epoch, first_seq, last_seq)) {
            return Ok(AppendOutcome::Duplicate {
                base_offset: dup.first_offset,
                last_offset: dup.last_offset,
                log_start_offset: self.log.log_start_offset(),
            });
        }
        let checks = check_producer_epoch(current, epoch)
            .and_then(|()| {
                let empty = current.is_none_or(ProducerStateEntry::is_empty);
                crate::verification::check_lowest_sequence(
                    self.verifications.get(&pid),
                    empty,
                    first_seq,
                )
            })
            .and_then(|()| check_sequence(current, epoch, first_seq))
            .and_then(|()| match current {
                Some(e) if e.current_txn_first_offset.is_some() && !txn => Err(reject(
                    INVALID_TXN_STATE,
                    "non-transactional batch while a transaction is open",
                )),
                _ => Ok(()),
            });
        if let Err(r) = checks {
            return Err(self.error(r.code, r.reason));
        }

        let (base_offset, last_offset) = self
            .log
            .append_batch(pid, epoch, first_seq, last_seq, txn, now_ms, raw, records);
        let entry = self.producers.entry_mut(pid);
        entry.add_batch(
            epoch,
            BatchMetadata {
                first_seq,
                last_seq,
                first_offset: base_offset,
                last_offset,
                // CreateTime: the producer's clock, not the broker's.
                timestamp_ms: u64::try_from(h.max_timestamp).unwrap_or(0),
            },
        );
        if txn && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(base_offset);
        }
        if txn {
            self.verifications.remove(&pid);
        }
        Ok(self.appended(base_offset, last_offset))
    }

    /// Writes a COMMIT or ABORT marker from the coordinator at broker time
    /// `now_ms`. Returns the marker's offset. An ABORT that closes an open
    /// transaction is recorded in the aborted-transaction index.
    pub fn append_marker(&mut self, marker: &TxnMarker, now_ms: u64) -> Result<i64, AppendError> {
        let current = self.producers.get(marker.producer_id);
        if let Err(r) =
            check_marker_epoch(current, marker.producer_epoch, marker.transaction_version)
        {
            return Err(self.error(r.code, r.reason));
        }
        if current.is_some_and(|e| e.coordinator_epoch > marker.coordinator_epoch) {
            return Err(self.error(TRANSACTION_COORDINATOR_FENCED, "coordinator epoch is stale"));
        }
        let txn_first_offset = current.and_then(|e| e.current_txn_first_offset);
        let offset = self.log.append_marker(
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.kind,
            now_ms,
            txn_first_offset,
        );
        self.producers.entry_mut(marker.producer_id).apply_marker(
            marker.producer_epoch,
            marker.coordinator_epoch,
            now_ms,
        );
        self.verifications.remove(&marker.producer_id);
        Ok(offset)
    }

    /// Drops producers with no open transaction idle for at least
    /// `expiration_ms` (`producer.id.expiration.ms`). Returns their ids.
    pub fn expire_producers(&mut self, now_ms: u64, expiration_ms: u64) -> Vec<i64> {
        self.verifications
            .retain(|_, v| now_ms.saturating_sub(v.created_ms()) < expiration_ms);
        self.producers.remove_expired(now_ms, expiration_ms)
    }

    /// The log.
    pub fn log(&self) -> &Log {
        &self.log
    }

    /// Every entry of this replica's log (including those above the high
    /// watermark; truncated ones are only in the log's journal).
    pub fn entries(&self) -> &[LogEntry] {
        self.log.entries()
    }

    /// Every data record of this replica's log, in offset order.
    pub fn records(&self) -> impl Iterator<Item = &LoggedRecord> + '_ {
        self.log.records()
    }

    /// What a `read_uncommitted` consumer fetches: all data from the log start
    /// offset to the high watermark.
    pub fn read_uncommitted(&self) -> Vec<&LoggedRecord> {
        self.log.read_uncommitted()
    }

    /// What a `read_committed` consumer fetches: data below the last stable
    /// offset, from non-transactional batches and committed transactions.
    pub fn read_committed(&self) -> Vec<&LoggedRecord> {
        self.log.read_committed(self.last_stable_offset())
    }

    /// The high watermark (see [`Log::high_watermark`]).
    pub fn high_watermark(&self) -> i64 {
        self.log.high_watermark()
    }

    /// The first offset of the earliest open transaction, but never above the
    /// high watermark.
    pub fn last_stable_offset(&self) -> i64 {
        self.producers
            .first_unstable_offset()
            .map_or(self.high_watermark(), |o| o.min(self.high_watermark()))
    }

    /// The log start offset.
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    /// Retention or DeleteRecords: moves the log start offset forward (never
    /// past the high watermark). Producer state is kept (KAFKA-7190).
    pub fn advance_log_start_offset(&mut self, offset: i64) -> i64 {
        self.log.advance_log_start_offset(offset)
    }

    /// The state of `producer_id`, if the broker has one.
    pub fn producer(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(producer_id)
    }

    /// All producer states.
    pub fn producers(&self) -> &ProducerStates {
        &self.producers
    }

    /// A copy of the producer states: all retained batches (`full`, a
    /// replicated follower) or only the newest batch per producer (a
    /// snapshot).
    pub fn snapshot_producer_state(&self, full: bool) -> ProducerStates {
        self.producers.snapshot(full)
    }

    /// Replaces the producer states (the log is kept).
    pub fn restore_producer_state(&mut self, states: ProducerStates) {
        self.producers = states;
    }

    /// Becomes the new leader after `old`: the same (fully replicated) log,
    /// and producer states derived from `old`'s according to `mode`.
    pub fn transfer_from(&mut self, old: &PartitionState, mode: StateTransfer) {
        self.log = old.log.clone();
        self.producers = old.producers.snapshot(mode == StateTransfer::Replicated);
    }

    /// A clean shutdown and restart in place: the log survives, producer state
    /// is reloaded from the snapshot written at shutdown, at the log end (newest
    /// batch per producer only, nothing to replay). See also
    /// `restart_from_snapshot_at` for a crash.
    pub fn restart_from_snapshot(&mut self) {
        self.producers = self.producers.snapshot(false);
        self.verifications.clear();
    }

    fn error(&self, code: i16, reason: &'static str) -> AppendError {
        AppendError {
            code,
            log_start_offset: self.log.log_start_offset(),
            reason,
        }
    }

    fn appended(&self, base_offset: i64, last_offset: i64) -> AppendOutcome {
        AppendOutcome::Appended {
            base_offset,
            last_offset,
            log_start_offset: self.log.log_start_offset(),
        }
    }
}

fn batch_reason(e: &BatchError) -> &'static str {
    match e {
        BatchError::Truncated => "record batch truncated",
        BatchError::BadLength => "record batch length field is invalid",
        BatchError::BadMagic(_) => "record batch magic is not 2",
        BatchError::CrcMismatch { .. } => "record batch crc mismatch",
        BatchError::Compressed(_) => "compressed batches are not modelled",
        BatchError::Malformed(what) => what,
    }
}
