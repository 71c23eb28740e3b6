//! One transactional id's record at the model coordinator ([`TxnMetadata`]), its
//! states ([`TxnState`]) and the transitions EndTxn drives, by transaction version:
//! `end_txn_v1` (strict producer id and epoch) and `end_txn_v2` (KIP-890: the epoch
//! a retry may name depends on the state; every completion bumps the epoch).

use std::collections::{BTreeMap, BTreeSet};

use super::{is_epoch_exhausted, Partition, NO_PRODUCER_ID};
use crate::broker::{
    TransactionVersion, TxnMarker, CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE, NO_PRODUCER_EPOCH, PRODUCER_FENCED,
};
use crate::log::MarkerKind;

/// State of a transactional id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnState {
    /// No transaction open (after InitProducerId).
    Empty,
    /// A transaction is open: partitions or groups were added.
    Ongoing,
    /// Committing: COMMIT markers are outstanding.
    PrepareCommit,
    /// Aborting: ABORT markers are outstanding.
    PrepareAbort,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
    /// The transactional id expired; the next InitProducerId starts afresh.
    Dead,
}

impl TxnState {
    /// Whether markers are outstanding (Kafka's pending transition).
    pub fn is_prepare(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }

    /// Whether the last transaction has completed.
    pub fn is_complete(self) -> bool {
        matches!(self, TxnState::CompleteCommit | TxnState::CompleteAbort)
    }
}

/// What the coordinator knows about one transactional id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The transactional id.
    pub transactional_id: String,
    /// Current producer id.
    pub producer_id: i64,
    /// Producer id before the last rotation, [`NO_PRODUCER_ID`] if none.
    pub prev_producer_id: i64,
    /// Producer id a TV2 rotation hands over to when the transaction
    /// completes, [`NO_PRODUCER_ID`] if none is pending.
    pub next_producer_id: i64,
    /// Current epoch ([`NO_PRODUCER_EPOCH`] before the first InitProducerId).
    pub producer_epoch: i16,
    /// Epoch before the last bump a retry may still name, or
    /// [`NO_PRODUCER_EPOCH`].
    pub last_producer_epoch: i16,
    /// State.
    pub state: TxnState,
    /// Partitions in the open transaction.
    pub partitions: BTreeSet<Partition>,
    /// Consumer groups in the open transaction.
    pub groups: BTreeSet<String>,
    /// Offsets committed in the open transaction: group -> partition -> offset.
    pub pending_offsets: BTreeMap<String, BTreeMap<Partition, i64>>,
    /// Partitions whose marker is not written yet (`Prepare*` only).
    pub pending_markers: BTreeSet<Partition>,
    /// Transaction timeout.
    pub timeout_ms: u64,
    /// When the open transaction started.
    pub start_ms: u64,
    /// Last state change (for transactional-id expiry).
    pub last_update_ms: u64,
    /// The client's transaction version, as its last request showed it.
    pub version: TransactionVersion,
}

impl TxnMetadata {
    pub(super) fn new(
        transactional_id: &str,
        producer_id: i64,
        timeout_ms: u64,
        now_ms: u64,
    ) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_owned(),
            producer_id,
            prev_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            pending_offsets: BTreeMap::new(),
            pending_markers: BTreeSet::new(),
            timeout_ms,
            start_ms: now_ms,
            last_update_ms: now_ms,
            version: TransactionVersion::V1,
        }
    }

    /// The marker the outstanding transaction writes to each partition, if
    /// it is in `Prepare*`.
    pub fn marker(&self, coordinator_epoch: i32) -> Option<TxnMarker> {
        let kind = match self.state {
            TxnState::PrepareCommit => MarkerKind::Commit,
            TxnState::PrepareAbort => MarkerKind::Abort,
            _ => return None,
        };
        Some(TxnMarker {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            coordinator_epoch,
            kind,
            transaction_version: self.version,
        })
    }

    /// Request order for adds: a pending transition or outstanding markers
    /// first, then the producer id, then the epoch
    /// (`handleAddPartitionsToTransaction`). While markers are written the
    /// transition to Complete* is pending (`prepareComplete` runs before EndTxn
    /// answers), and under TV2 a rotated producer already uses the new id the
    /// answer carried: it must be told to retry, not that its id is unknown.
    pub(super) fn check_add(&self, pid: i64, epoch: i16) -> Result<(), i16> {
        if self.state.is_prepare() {
            Err(CONCURRENT_TRANSACTIONS)
        } else {
            self.check_producer(pid, epoch)
        }
    }

    /// Request order for verification: the producer id, then the epoch, then
    /// a pending transition or outstanding markers
    /// (`handleVerifyPartitionsInTransaction`).
    pub(super) fn check_producer(&self, pid: i64, epoch: i16) -> Result<(), i16> {
        if self.producer_id != pid {
            Err(INVALID_PRODUCER_ID_MAPPING)
        } else if self.producer_epoch != epoch {
            Err(PRODUCER_FENCED)
        } else if self.state.is_prepare() {
            Err(CONCURRENT_TRANSACTIONS)
        } else {
            Ok(())
        }
    }

    /// Opens a transaction if none is open.
    pub(super) fn begin(&mut self, now_ms: u64, version: TransactionVersion) {
        if self.state != TxnState::Ongoing {
            self.state = TxnState::Ongoing;
            self.start_ms = now_ms;
            self.version = version;
        }
        self.last_update_ms = now_ms;
    }

    /// Enters `Prepare*` with markers for every partition outstanding.
    pub(super) fn prepare(&mut self, commit: bool, now_ms: u64) {
        self.state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        self.pending_markers = self.partitions.clone();
        self.last_update_ms = now_ms;
    }

    /// TV2 completion: bump the epoch (rotating the producer id when it is
    /// exhausted) and prepare. Returns the `(pid, epoch)` the client gets.
    pub(super) fn prepare_bumped(
        &mut self,
        commit: bool,
        next_pid: &mut i64,
        now_ms: u64,
    ) -> (i64, i16) {
        let exhausted = is_epoch_exhausted(self.producer_epoch);
        self.last_producer_epoch = self.producer_epoch;
        self.producer_epoch = self.producer_epoch.saturating_add(1);
        self.version = TransactionVersion::V2;
        self.prepare(commit, now_ms);
        if exhausted {
            self.next_producer_id = allocate(next_pid);
            (self.next_producer_id, 0)
        } else {
            (self.producer_id, self.producer_epoch)
        }
    }

    /// The coordinator's own abort (InitProducerId on an open transaction, or
    /// the timeout): fence with epoch+1, forget the last epoch, abort. Under
    /// TV2 an exhausted epoch also rotates the producer id (KAFKA-20090).
    pub(super) fn fence_and_abort(&mut self, next_pid: &mut i64, now_ms: u64) {
        let exhausted = is_epoch_exhausted(self.producer_epoch);
        self.producer_epoch = self.producer_epoch.saturating_add(1);
        self.last_producer_epoch = NO_PRODUCER_EPOCH;
        if exhausted && self.version == TransactionVersion::V2 {
            self.next_producer_id = allocate(next_pid);
        }
        self.prepare(false, now_ms);
    }

    /// All markers written: commit or drop the group offsets, clear the
    /// transaction, hand over to the next producer id if one is pending.
    pub(super) fn complete(
        &mut self,
        committed: &mut BTreeMap<String, BTreeMap<Partition, i64>>,
        now_ms: u64,
    ) {
        let commit = self.state == TxnState::PrepareCommit;
        let offsets = std::mem::take(&mut self.pending_offsets);
        if commit {
            for (group, offs) in offsets {
                committed.entry(group).or_default().extend(offs);
            }
        }
        self.state = if commit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        self.partitions.clear();
        self.groups.clear();
        self.pending_markers.clear();
        if self.next_producer_id != NO_PRODUCER_ID {
            self.prev_producer_id = self.producer_id;
            self.producer_id = self.next_producer_id;
            self.next_producer_id = NO_PRODUCER_ID;
            self.producer_epoch = 0;
            self.last_producer_epoch = NO_PRODUCER_EPOCH;
        }
        self.last_update_ms = now_ms;
    }
}

pub(super) fn allocate(next_pid: &mut i64) -> i64 {
    let pid = *next_pid;
    *next_pid += 1;
    pid
}

/// EndTxn below v5: strict producer id and epoch; markers at the same epoch.
pub(super) fn end_txn_v1(
    meta: &mut TxnMetadata,
    pid: i64,
    epoch: i16,
    commit: bool,
    now_ms: u64,
) -> Result<(), i16> {
    if meta.producer_id != pid {
        return Err(INVALID_PRODUCER_ID_MAPPING);
    }
    if meta.producer_epoch != epoch {
        return Err(PRODUCER_FENCED);
    }
    match meta.state {
        // Markers outstanding: a retry of the same result waits; the other result
        // is an invalid transition (`logInvalidStateTransitionAndReturnError`).
        TxnState::PrepareCommit if commit => Err(CONCURRENT_TRANSACTIONS),
        TxnState::PrepareAbort if !commit => Err(CONCURRENT_TRANSACTIONS),
        TxnState::Ongoing => {
            meta.version = TransactionVersion::V1;
            meta.prepare(commit, now_ms);
            Ok(())
        }
        TxnState::CompleteCommit if commit => Ok(()),
        TxnState::CompleteAbort if !commit => Ok(()),
        _ => Err(INVALID_TXN_STATE),
    }
}

/// EndTxn v5 (TV2): the valid epoch depends on the state (a retry names the
/// epoch before the bump, or the last epoch of the previous producer id after
/// a rotation); every completion bumps the epoch.
pub(super) fn end_txn_v2(
    meta: &mut TxnMetadata,
    pid: i64,
    epoch: i16,
    commit: bool,
    next_pid: &mut i64,
    now_ms: u64,
) -> Result<(i64, i16), i16> {
    let current = (meta.producer_id, meta.producer_epoch);
    let retry_on_bump = current.0 == pid && epoch.checked_add(1) == Some(current.1);
    let retry_on_overflow = meta.prev_producer_id == pid
        && meta.producer_id != pid
        && epoch == i16::MAX - 1
        && meta.producer_epoch == 0;
    let is_retry = retry_on_bump || retry_on_overflow;
    // A pending transition answers before the epoch check (KAFKA-18464), so
    // that an EndTxn right after a completion is retried, not fenced; and
    // before the producer id check (KAFKA-18660), so that after a rotation the
    // new id, which the previous EndTxn answered with while its markers are
    // still being written, is told to retry, not that it is unknown.
    if meta.state.is_prepare() {
        return Err(CONCURRENT_TRANSACTIONS);
    }
    if meta.producer_id != pid && !retry_on_overflow {
        return Err(INVALID_PRODUCER_ID_MAPPING);
    }
    let valid_epoch = match meta.state {
        TxnState::Ongoing | TxnState::Empty => epoch == meta.producer_epoch,
        s if s.is_complete() => is_retry || epoch == meta.producer_epoch,
        _ => false,
    };
    if !valid_epoch {
        return Err(PRODUCER_FENCED);
    }
    match meta.state {
        TxnState::Ongoing => Ok(meta.prepare_bumped(commit, next_pid, now_ms)),
        TxnState::CompleteCommit if is_retry && commit => Ok(current),
        TxnState::CompleteAbort if is_retry && !commit => Ok(current),
        // A commit naming the epoch the coordinator's own abort bumped from:
        // the producer was fenced by that abort (KAFKA-20785).
        TxnState::CompleteAbort if is_retry => Err(PRODUCER_FENCED),
        TxnState::CompleteCommit if is_retry => Err(INVALID_TXN_STATE),
        // An abort with nothing in the transaction still bumps the epoch; a
        // commit of nothing is invalid.
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort if !commit => {
            Ok(meta.prepare_bumped(false, next_pid, now_ms))
        }
        _ => Err(INVALID_TXN_STATE),
    }
}
