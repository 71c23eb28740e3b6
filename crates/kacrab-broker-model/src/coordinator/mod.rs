//! The model transaction coordinator: Kafka's coordinator-side rules for
//! InitProducerId, AddPartitionsToTxn (explicit, and the implicit add of
//! Produce v12), AddOffsetsToTxn, TxnOffsetCommit, EndTxn (transaction
//! versions 1 and 2) and the transaction timeout, with the markers each
//! completed transaction writes to its partitions.
//!
//! Written from Kafka's broker-side rules (`TransactionCoordinator`'s
//! `handleInitProducerId`, `handleAddPartitionsToTransaction` and
//! `handleEndTransaction` over `TransactionMetadata`; the markers of
//! `ProducerAppendInfo.appendEndTxnMarker`; the error codes of KIP-360,
//! KIP-588 and KIP-890), never from any client code, so that it is an oracle
//! of its own.
//!
//! What is modelled:
//!
//! * One metadata record per transactional id: producer id, current and last
//!   epoch, the previous producer id (after a rotation), state, partitions,
//!   consumer groups with their pending offsets, timeout, start time and the
//!   client's transaction version.
//! * A transaction in `PrepareCommit`/`PrepareAbort` has markers outstanding.
//!   That is Kafka's pending transition: every request for the transactional
//!   id answers `CONCURRENT_TRANSACTIONS` until the markers are written and the
//!   transaction completes. Markers go through a [`MarkerWriter`] callback
//!   (see [`write_markers_to`] for model partitions); a failed write stays
//!   outstanding and is retried by [`TransactionCoordinator::deliver_markers`].
//!   [`TransactionCoordinator::set_hold_markers`] keeps them outstanding so
//!   that tests can look at the window.
//! * Consumer-group offsets are kept per transaction and committed when a
//!   COMMIT completes (the group coordinator applying its marker); an abort
//!   discards them. Groups count as members of the transaction.
//! * Under TV2 the response's `(pid, epoch)` is the bumped one. When the epoch
//!   is exhausted, the markers close the old producer id at the bumped epoch
//!   and the new producer id (epoch 0) takes over when the transaction
//!   completes, as Kafka's rotation does.
//!
//! Not modelled: the transaction log and its replication (a coordinator
//! failover is [`TransactionCoordinator::bump_coordinator_epoch`]), 2PC
//! (KIP-939), topic existence and per-topic authorization.
//!
//! Time is a parameter (`now_ms`); there is no clock and no randomness.

use std::collections::{BTreeMap, BTreeSet};

use crate::broker::{
    PartitionState, TransactionVersion, TxnMarker, CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, NETWORK_EXCEPTION, NONE, NOT_ENOUGH_REPLICAS,
    NO_PRODUCER_EPOCH, PRODUCER_FENCED, TRANSACTION_ABORTABLE, UNKNOWN_TOPIC_OR_PARTITION,
};

mod txn_metadata;

use txn_metadata::{allocate, end_txn_v1, end_txn_v2};
pub use txn_metadata::{TxnMetadata, TxnState};

/// Kafka error code: the coordinator is still loading its state.
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
/// Kafka error code: the coordinator is not available.
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
/// Kafka error code: this broker is not the coordinator for the id.
pub const NOT_COORDINATOR: i16 = 16;
/// Kafka error code: the transaction timeout is out of the allowed range.
pub const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
/// Kafka error code: the client may not use this transactional id.
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;

/// Kafka's default `transaction.max.timeout.ms` (15 minutes).
pub const DEFAULT_MAX_TRANSACTION_TIMEOUT_MS: u64 = 900_000;
/// Kafka's default `transactional.id.expiration.ms` (7 days).
pub const DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS: u64 = 604_800_000;
/// Producer id of "none".
pub const NO_PRODUCER_ID: i64 = -1;

/// A topic partition.
pub type Partition = (String, i32);

/// Writes one marker to one partition: `Ok` once it is in the log, or the
/// Kafka error code of the failed write (the marker stays outstanding).
pub type MarkerWriter<'a> = dyn FnMut(&Partition, &TxnMarker) -> Result<(), i16> + 'a;

/// Whether an epoch is exhausted: a bump from it must rotate the producer id.
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// A [`MarkerWriter`] that appends markers to model partitions at broker time
/// `now_ms` with [`PartitionState::append_marker`]. A missing partition is
/// `UNKNOWN_TOPIC_OR_PARTITION`.
pub fn write_markers_to(
    partitions: &mut BTreeMap<Partition, PartitionState>,
    now_ms: u64,
) -> impl FnMut(&Partition, &TxnMarker) -> Result<(), i16> + '_ {
    move |tp, marker| match partitions.get_mut(tp) {
        Some(p) => p
            .append_marker(marker, now_ms)
            .map(|_| ())
            .map_err(|e| e.code),
        None => Err(UNKNOWN_TOPIC_OR_PARTITION),
    }
}

/// The code a partition leader answers a transactional Produce with when
/// verification (or the implicit add of Produce v12) with the coordinator
/// failed with `code` (`AddPartitionsToTxnManager` and the verification
/// callback of `ReplicaManager`, KIP-890): a fenced producer gets
/// `INVALID_PRODUCER_EPOCH`; coordinator unavailability becomes
/// `NOT_ENOUGH_REPLICAS`; `CONCURRENT_TRANSACTIONS` too below Produce v12 (TV1
/// clients) but is kept for TV2; `TRANSACTION_ABORTABLE` is `INVALID_TXN_STATE`
/// below Produce v11.
pub fn produce_error_from_coordinator(code: i16, produce_version: i16) -> i16 {
    match code {
        PRODUCER_FENCED => INVALID_PRODUCER_EPOCH,
        NETWORK_EXCEPTION
        | COORDINATOR_LOAD_IN_PROGRESS
        | COORDINATOR_NOT_AVAILABLE
        | NOT_COORDINATOR => NOT_ENOUGH_REPLICAS,
        CONCURRENT_TRANSACTIONS if produce_version < 12 => NOT_ENOUGH_REPLICAS,
        TRANSACTION_ABORTABLE if produce_version < 11 => INVALID_TXN_STATE,
        other => other,
    }
}

/// The model transaction coordinator (and the transactional side of the group
/// coordinator), for every transactional id of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionCoordinator {
    txns: BTreeMap<String, TxnMetadata>,
    committed: BTreeMap<String, BTreeMap<Partition, i64>>,
    next_producer_id: i64,
    coordinator_epoch: i32,
    max_timeout_ms: u64,
    first_epoch: i16,
    hold_markers: bool,
    unavailable: Option<i16>,
    denied: BTreeSet<String>,
}

impl TransactionCoordinator {
    /// A coordinator (epoch 0) that hands out producer ids from
    /// `first_producer_id` upwards.
    pub fn new(first_producer_id: i64) -> Self {
        TransactionCoordinator {
            txns: BTreeMap::new(),
            committed: BTreeMap::new(),
            next_producer_id: first_producer_id,
            coordinator_epoch: 0,
            max_timeout_ms: DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
            first_epoch: 0,
            hold_markers: false,
            unavailable: None,
            denied: BTreeSet::new(),
        }
    }

    /// Sets `transaction.max.timeout.ms`.
    pub fn with_max_transaction_timeout_ms(mut self, max_timeout_ms: u64) -> Self {
        self.max_timeout_ms = max_timeout_ms;
        self
    }

    /// The coordinator epoch markers carry.
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// A coordinator failover: the new coordinator has a higher epoch and
    /// writes the outstanding markers with it.
    pub fn bump_coordinator_epoch(&mut self) -> i32 {
        self.coordinator_epoch += 1;
        self.coordinator_epoch
    }

    /// While `Some(code)`, every request fails with `code` (for example
    /// [`COORDINATOR_LOAD_IN_PROGRESS`] or [`NOT_COORDINATOR`]).
    pub fn set_unavailable(&mut self, code: Option<i16>) {
        self.unavailable = code;
    }

    /// Grants or denies the use of `txn_id`; a denied id gets
    /// [`TRANSACTIONAL_ID_AUTHORIZATION_FAILED`].
    pub fn set_authorized(&mut self, txn_id: &str, authorized: bool) {
        if authorized {
            self.denied.remove(txn_id);
        } else {
            self.denied.insert(txn_id.to_owned());
        }
    }

    /// The epoch the first InitProducerId of a transactional id new to this coordinator
    /// hands out: 0 in Kafka for an id with no history. A value close to `i16::MAX`
    /// stands for an id with a long history (each TV2 transaction bumps the epoch, so a
    /// busy id reaches the end in about 32,000 transactions): a few bumps later the epoch
    /// is exhausted and the producer id rotates (`TransactionMetadata.prepareFenceProducerEpoch`,
    /// `prepareAbortOrCommit` under TV2, KAFKA-20090), which a run from epoch 0 never reaches.
    pub fn set_first_epoch(&mut self, epoch: i16) {
        self.first_epoch = epoch.max(0);
    }

    /// While `true`, markers stay outstanding (the transaction stays in
    /// `Prepare*`) until released.
    pub fn set_hold_markers(&mut self, hold: bool) {
        self.hold_markers = hold;
    }

    /// The metadata of `txn_id`, if the coordinator has any.
    pub fn metadata(&self, txn_id: &str) -> Option<&TxnMetadata> {
        self.txns.get(txn_id)
    }

    /// The state of `txn_id`.
    pub fn state(&self, txn_id: &str) -> Option<TxnState> {
        self.txns.get(txn_id).map(|m| m.state)
    }

    /// The current `(producer id, epoch)` of `txn_id`.
    pub fn producer_id_and_epoch(&self, txn_id: &str) -> Option<(i64, i16)> {
        self.txns
            .get(txn_id)
            .map(|m| (m.producer_id, m.producer_epoch))
    }

    /// Every transactional id and its metadata, in id order.
    pub fn transactions(&self) -> impl Iterator<Item = &TxnMetadata> + '_ {
        self.txns.values()
    }

    /// Offsets committed for `group` by committed transactions.
    pub fn committed_offsets(&self, group: &str) -> BTreeMap<Partition, i64> {
        self.committed.get(group).cloned().unwrap_or_default()
    }

    /// Every outstanding marker write, in transactional-id then partition order.
    pub fn pending_marker_writes(&self) -> Vec<(Partition, TxnMarker)> {
        let mut out = Vec::new();
        for meta in self.txns.values() {
            if let Some(marker) = meta.marker(self.coordinator_epoch) {
                out.extend(meta.pending_markers.iter().map(|tp| (tp.clone(), marker)));
            }
        }
        out
    }

    /// InitProducerId without a transactional id (an idempotent producer): a
    /// new producer id with epoch 0.
    pub fn init_idempotent(&mut self) -> (i64, i16) {
        (allocate(&mut self.next_producer_id), 0)
    }

    /// InitProducerId for `txn_id` (`TransactionCoordinator.handleInitProducerId`,
    /// KIP-360). `expected` is the producer
    /// id and epoch the client holds (`None`, or a negative pid or epoch, when
    /// it holds none).
    ///
    /// A new id gets a fresh producer id at epoch 0; an `Empty` or `Complete*`
    /// one is bumped (a retry naming the last epoch gets the current one, and
    /// an exhausted epoch rotates the producer id), and goes to `Empty`. An
    /// `Ongoing` transaction is fenced (epoch+1) and aborted (ABORT markers
    /// through `write`), and the answer is `CONCURRENT_TRANSACTIONS`: the
    /// client retries and is bumped once more.
    pub fn init_producer_id(
        &mut self,
        txn_id: &str,
        timeout_ms: u64,
        expected: Option<(i64, i16)>,
        now_ms: u64,
        write: &mut MarkerWriter<'_>,
    ) -> Result<(i64, i16), i16> {
        self.gate(txn_id)?;
        if timeout_ms == 0 || timeout_ms > self.max_timeout_ms {
            return Err(INVALID_TRANSACTION_TIMEOUT);
        }
        let expected = expected.filter(|&(pid, epoch)| pid >= 0 && epoch >= 0);
        if !matches!(self.txns.get(txn_id), Some(m) if m.state != TxnState::Dead) {
            let pid = allocate(&mut self.next_producer_id);
            let mut meta = TxnMetadata::new(txn_id, pid, timeout_ms, now_ms);
            // The history's last epoch, completed: the bump below hands out `first_epoch`
            // (from 0, the last epoch is NO_PRODUCER_EPOCH, a new id's own).
            meta.producer_epoch = self.first_epoch - 1;
            self.txns.insert(txn_id.to_owned(), meta);
        }
        let Some(meta) = self.txns.get_mut(txn_id) else {
            return Err(INVALID_PRODUCER_ID_MAPPING);
        };
        if meta.state.is_prepare() {
            return Err(CONCURRENT_TRANSACTIONS);
        }
        if let Some((pid, epoch)) = expected {
            let known = meta.producer_epoch == NO_PRODUCER_EPOCH
                || pid == meta.producer_id
                || (pid == meta.prev_producer_id && is_epoch_exhausted(epoch));
            if !known {
                return Err(PRODUCER_FENCED);
            }
        }
        if meta.state == TxnState::Ongoing {
            meta.timeout_ms = timeout_ms;
            meta.fence_and_abort(&mut self.next_producer_id, now_ms);
            self.drive(txn_id, now_ms, write);
            return Err(CONCURRENT_TRANSACTIONS);
        }
        let current = meta.producer_epoch;
        let expected_epoch = expected.map(|(_, epoch)| epoch);
        if is_epoch_exhausted(current) && expected_epoch.is_none_or(|e| e == current) {
            meta.prev_producer_id = meta.producer_id;
            meta.producer_id = allocate(&mut self.next_producer_id);
            meta.producer_epoch = 0;
            meta.last_producer_epoch = if expected.is_some() {
                current
            } else {
                NO_PRODUCER_EPOCH
            };
        } else {
            // Without an expected epoch the last epoch is forgotten, so that
            // an older instance cannot pass its epoch off as a retry.
            let bumped = current.saturating_add(1).max(0);
            let (epoch, last) = match expected_epoch {
                None => (bumped, NO_PRODUCER_EPOCH),
                Some(e) if current == NO_PRODUCER_EPOCH || e == current => (bumped, current),
                Some(e) if e == meta.last_producer_epoch => (current, meta.last_producer_epoch),
                Some(_) => return Err(PRODUCER_FENCED),
            };
            meta.producer_epoch = epoch;
            meta.last_producer_epoch = last;
        }
        meta.state = TxnState::Empty;
        meta.timeout_ms = timeout_ms;
        meta.last_update_ms = now_ms;
        Ok((meta.producer_id, meta.producer_epoch))
    }

    /// AddPartitionsToTxn (TV1): one code for every partition. A pending
    /// transition is `CONCURRENT_TRANSACTIONS` (checked first), another producer id
    /// `INVALID_PRODUCER_ID_MAPPING`, another epoch `PRODUCER_FENCED`;
    /// otherwise the partitions join the transaction (which becomes
    /// `Ongoing`).
    pub fn add_partitions(
        &mut self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        partitions: &[Partition],
        now_ms: u64,
    ) -> Vec<(Partition, i16)> {
        let code = if partitions.is_empty() {
            NONE
        } else {
            self.add_to_txn(txn_id, pid, epoch, now_ms, TransactionVersion::V1, |m| {
                m.partitions.extend(partitions.iter().cloned());
            })
        };
        partitions.iter().map(|tp| (tp.clone(), code)).collect()
    }

    /// The partition leader's implicit add for a TV2 transactional Produce
    /// (v12): the same checks as [`Self::add_partitions`]. The raw coordinator
    /// code is returned; the leader answers the Produce with
    /// [`produce_error_from_coordinator`].
    pub fn add_partition_implicit(
        &mut self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        partition: &Partition,
        now_ms: u64,
    ) -> i16 {
        self.add_to_txn(txn_id, pid, epoch, now_ms, TransactionVersion::V2, |m| {
            m.partitions.insert(partition.clone());
        })
    }

    /// The partition leader's verification of a TV1 transactional Produce
    /// (KIP-890 part 1, `verifyOnly`): `NONE` if the partition is in the open
    /// transaction of this producer, `TRANSACTION_ABORTABLE` if it is not,
    /// otherwise the producer checks' code.
    pub fn verify_partition(
        &self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        partition: &Partition,
    ) -> i16 {
        self.verify(txn_id, pid, epoch, |m| m.partitions.contains(partition))
    }

    /// AddOffsetsToTxn (TV1): the group joins the transaction, with the
    /// checks of [`Self::add_partitions`].
    pub fn add_offsets(
        &mut self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        group_id: &str,
        now_ms: u64,
    ) -> i16 {
        self.add_to_txn(txn_id, pid, epoch, now_ms, TransactionVersion::V1, |m| {
            m.groups.insert(group_id.to_owned());
        })
    }

    /// TxnOffsetCommit: one code for every offset. With `tv2` (v5) the group
    /// joins the transaction implicitly; below, the group must have been added
    /// with [`Self::add_offsets`] (`TRANSACTION_ABORTABLE` otherwise, as the
    /// v4 verification answers). The offsets are committed only if the
    /// transaction commits.
    #[allow(clippy::too_many_arguments)]
    pub fn txn_offset_commit(
        &mut self,
        txn_id: &str,
        group_id: &str,
        pid: i64,
        epoch: i16,
        offsets: &[(Partition, i64)],
        tv2: bool,
        now_ms: u64,
    ) -> Vec<(Partition, i16)> {
        let code = if tv2 {
            self.add_to_txn(txn_id, pid, epoch, now_ms, TransactionVersion::V2, |m| {
                m.groups.insert(group_id.to_owned());
            })
        } else {
            self.verify(txn_id, pid, epoch, |m| m.groups.contains(group_id))
        };
        if code == NONE {
            if let Some(meta) = self.txns.get_mut(txn_id) {
                let pending = meta.pending_offsets.entry(group_id.to_owned()).or_default();
                pending.extend(offsets.iter().cloned());
            }
        }
        offsets.iter().map(|(tp, _)| (tp.clone(), code)).collect()
    }

    /// EndTxn. TV1 (`tv2 == false`): `Ok(None)`; the markers carry the
    /// transaction's epoch. TV2 (EndTxn v5): `Ok(Some((pid, epoch)))`, the
    /// bumped identity the client continues with (or the current one for a
    /// retry); the markers carry the bumped epoch. Markers go through
    /// `write`; the transaction stays in `Prepare*` (and the id answers
    /// `CONCURRENT_TRANSACTIONS`) until all of them are written.
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn(
        &mut self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        commit: bool,
        tv2: bool,
        now_ms: u64,
        write: &mut MarkerWriter<'_>,
    ) -> Result<Option<(i64, i16)>, i16> {
        let mut next_pid = self.next_producer_id;
        let meta = self.live_mut(txn_id)?;
        let identity = if tv2 {
            Some(end_txn_v2(meta, pid, epoch, commit, &mut next_pid, now_ms)?)
        } else {
            end_txn_v1(meta, pid, epoch, commit, now_ms)?;
            None
        };
        self.next_producer_id = next_pid;
        self.drive(txn_id, now_ms, write);
        Ok(identity)
    }

    /// Writes every outstanding marker (unless markers are held) and
    /// completes the transactions that have none left. Returns the number of
    /// markers written.
    pub fn deliver_markers(&mut self, now_ms: u64, write: &mut MarkerWriter<'_>) -> usize {
        let ids: Vec<String> = self.txns.keys().cloned().collect();
        ids.iter().map(|id| self.drive(id, now_ms, write)).sum()
    }

    /// Stops holding markers and delivers the outstanding ones.
    pub fn release_markers(&mut self, now_ms: u64, write: &mut MarkerWriter<'_>) -> usize {
        self.hold_markers = false;
        self.deliver_markers(now_ms, write)
    }

    /// The transaction timeout: every `Ongoing` transaction open for longer
    /// than its timeout is fenced (epoch+1) and aborted, with ABORT markers at
    /// the new epoch. Returns the transactional ids aborted.
    pub fn expire_transactions(
        &mut self,
        now_ms: u64,
        write: &mut MarkerWriter<'_>,
    ) -> Vec<String> {
        let timed_out: Vec<String> = self
            .txns
            .iter()
            .filter(|(_, m)| {
                m.state == TxnState::Ongoing && now_ms.saturating_sub(m.start_ms) > m.timeout_ms
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &timed_out {
            self.abort_open_transaction(id, now_ms, write);
        }
        timed_out
    }

    /// The coordinator aborts the open transaction of `txn_id` on its own, as its
    /// transaction timeout does (`TransactionCoordinator.abortTimedOutTransactions`):
    /// the epoch is fenced (+1) and ABORT markers go out at the new epoch. Returns
    /// whether a transaction was open.
    pub fn abort_open_transaction(
        &mut self,
        txn_id: &str,
        now_ms: u64,
        write: &mut MarkerWriter<'_>,
    ) -> bool {
        let Some(meta) = self.txns.get_mut(txn_id) else {
            return false;
        };
        if meta.state != TxnState::Ongoing {
            return false;
        }
        meta.fence_and_abort(&mut self.next_producer_id, now_ms);
        self.drive(txn_id, now_ms, write);
        true
    }

    /// `transactional.id.expiration.ms`: ids with no open transaction idle for
    /// at least `expiration_ms` become `Dead` (unknown to every request; the
    /// next InitProducerId starts afresh with a new producer id). Returns them.
    pub fn expire_transactional_ids(&mut self, now_ms: u64, expiration_ms: u64) -> Vec<String> {
        let mut dead = Vec::new();
        for (id, meta) in &mut self.txns {
            let idle = matches!(meta.state, TxnState::Empty) || meta.state.is_complete();
            if idle && now_ms.saturating_sub(meta.last_update_ms) >= expiration_ms {
                meta.state = TxnState::Dead;
                meta.last_update_ms = now_ms;
                dead.push(id.clone());
            }
        }
        dead
    }

    fn gate(&self, txn_id: &str) -> Result<(), i16> {
        match self.unavailable {
            Some(code) => Err(code),
            None if self.denied.contains(txn_id) => Err(TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            None => Ok(()),
        }
    }

    /// The live metadata of `txn_id` after the availability and authorization
    /// gates; an unknown or dead id is `INVALID_PRODUCER_ID_MAPPING`.
    fn live_mut(&mut self, txn_id: &str) -> Result<&mut TxnMetadata, i16> {
        self.gate(txn_id)?;
        match self.txns.get_mut(txn_id) {
            Some(m) if m.state != TxnState::Dead => Ok(m),
            _ => Err(INVALID_PRODUCER_ID_MAPPING),
        }
    }

    /// Writes the outstanding markers of `txn_id` (unless markers are held)
    /// and completes its transaction once none is left. Returns the number
    /// written.
    fn drive(&mut self, txn_id: &str, now_ms: u64, write: &mut MarkerWriter<'_>) -> usize {
        let Some(meta) = self.txns.get_mut(txn_id) else {
            return 0;
        };
        let Some(marker) = meta.marker(self.coordinator_epoch) else {
            return 0;
        };
        let mut written = 0;
        if !self.hold_markers {
            meta.pending_markers.retain(|tp| {
                let ok = write(tp, &marker).is_ok();
                written += usize::from(ok);
                !ok
            });
        }
        if meta.pending_markers.is_empty() {
            meta.complete(&mut self.committed, now_ms);
        }
        written
    }

    fn add_to_txn(
        &mut self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        now_ms: u64,
        version: TransactionVersion,
        add: impl FnOnce(&mut TxnMetadata),
    ) -> i16 {
        let added = self.live_mut(txn_id).and_then(|meta| {
            meta.check_add(pid, epoch)?;
            meta.begin(now_ms, version);
            add(meta);
            Ok(())
        });
        added.err().unwrap_or(NONE)
    }

    fn verify(
        &self,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        member: impl FnOnce(&TxnMetadata) -> bool,
    ) -> i16 {
        if let Err(code) = self.gate(txn_id) {
            return code;
        }
        let Some(meta) = self.txns.get(txn_id).filter(|m| m.state != TxnState::Dead) else {
            return INVALID_PRODUCER_ID_MAPPING;
        };
        match meta.check_producer(pid, epoch) {
            Err(code) => code,
            Ok(()) if meta.state == TxnState::Ongoing && member(meta) => NONE,
            Ok(()) => TRANSACTION_ABORTABLE,
        }
    }
}
