//! The transaction coordinator's timing and its faults in the world: markers
//! written after a delay, a moved coordinator loading its state, the coordinator
//! aborting an open transaction on its own, the finalized `transaction.version`
//! changing during a run, and the coordinator's answers counted by error code.
//!
//! * Markers. Kafka answers EndTxn once `PrepareCommit`/`PrepareAbort` is in the
//!   transaction log; `TransactionMarkerChannelManager` writes the markers afterwards
//!   and the transaction completes when every partition has acknowledged its marker.
//!   Meanwhile the transactional id has a pending transition, and every request for it
//!   answers CONCURRENT_TRANSACTIONS (`TransactionCoordinator.handleAddPartitionsToTransaction`,
//!   `handleEndTransaction`, `handleInitProducerId`). The model coordinator holds its
//!   markers; the cluster releases them at a scheduled time (a step of its own, like a
//!   message delivery), so the window is real.
//! * Loading. A coordinator that takes over a `__transaction_state` partition (after a
//!   crash or a leadership move) answers COORDINATOR_LOAD_IN_PROGRESS until it has
//!   loaded it (`TransactionStateManager.loadTransactionsForTxnTopicPartition`); the old
//!   node answers NOT_COORDINATOR. Markers outstanding at the move are written by the
//!   new coordinator, with its higher coordinator epoch, once loaded.
//! * The coordinator's own abort (its transaction timeout,
//!   `TransactionCoordinator.abortTimedOutTransactions`): epoch+1, ABORT markers.
//! * `transaction.version`. The KRaft controller finalizes a new level with a higher
//!   finalized-features epoch; brokers report both in ApiVersions (KIP-584), which the
//!   driver feeds to the producer. The brokers decide per request from its version
//!   (Produce v12, EndTxn v5, TxnOffsetCommit v5 are TV2), so a transaction in flight
//!   keeps going; the client must latch the version a transaction started under
//!   (Kafka 4.x `TransactionManager`), which the cluster checks on every request.

use std::time::Duration;

use kacrab_idempotence::{NodeId, Request, Timestamp};

use super::Notice;
use super::World;
use crate::broker::TransactionVersion;
use crate::checker::ViolationKind;
use crate::coordinator::{TransactionCoordinator, TxnState};
use crate::faults::FaultKind;
use crate::observers::Observers;
use crate::rng::Rng;

/// A model coordinator whose markers are written only when the cluster releases them,
/// handing a new transactional id `first_epoch` first.
pub(crate) fn asynchronous_coordinator(first_epoch: i16) -> TransactionCoordinator {
    let mut c = TransactionCoordinator::new(500_000);
    c.set_hold_markers(true);
    c.set_first_epoch(first_epoch);
    c
}

/// The coordinator's timing and the cluster's finalized `transaction.version`.
#[derive(Clone, Debug)]
pub(crate) struct TxnEnv {
    /// When the outstanding markers are written; `Some` exactly while the coordinator
    /// has markers outstanding (after a coordinator request).
    markers_due: Option<Timestamp>,
    /// The coordinator answers COORDINATOR_LOAD_IN_PROGRESS before this time.
    loading_until: Timestamp,
    /// The finalized `transaction.version` feature level.
    finalized_tv: i16,
    /// The finalized-features epoch; rises with every change of `finalized_tv`.
    features_epoch: i64,
    /// Draws the marker delays and loading times (not a fault stream: it runs even
    /// without faults).
    rng: Rng,
    /// Draws the workload's consumed offsets ([`crate::txn_offsets`]).
    offsets_rng: Rng,
    /// Per transactional id, the start (ms) of a transaction that a late request
    /// opened: an AddPartitionsToTxn or AddOffsetsToTxn the broker had read but applied
    /// only after the client had timed it out and closed its connection, by then
    /// answered through its retry, with the producer's transaction already ended.
    /// Kafka's coordinator does the same (`TransactionCoordinator.
    /// handleAddPartitionsToTransaction` takes a matching epoch from `CompleteCommit`
    /// or `CompleteAbort` to `Ongoing`: under TV1 the epoch does not change per
    /// transaction) and leaves that transaction open until its timeout aborts it
    /// (`abortTimedOutTransactions`): a hanging transaction (KIP-890), not a producer
    /// bug. Invariant: an entry names the `start_ms` the coordinator recorded when the
    /// late request opened the transaction.
    late_opened: std::collections::BTreeMap<String, u64>,
    /// The transactional ids whose `Ongoing` transaction an InitProducerId fenced
    /// (epoch + 1, aborted, `TransactionCoordinator.handleInitProducerId` from
    /// `Ongoing`) where only a late request explains the meeting: the InitProducerId
    /// was itself late, or the transaction was one a late request opened
    /// (`late_opened`). The producer's epoch is then fenced by Kafka's rules: its
    /// retried bump names the old epoch, which is neither the current nor the last
    /// one, and is PRODUCER_FENCED (`TransactionMetadata.prepareIncrementProducerEpoch`).
    /// Java's producer meets the same whenever it bumps under TV1 (KIP-360).
    late_fenced: std::collections::BTreeSet<String>,
}

impl TxnEnv {
    pub(crate) fn new(seed: u64, transaction_version: i16) -> Self {
        TxnEnv {
            markers_due: None,
            loading_until: Timestamp::ZERO,
            finalized_tv: transaction_version,
            features_epoch: 0,
            rng: Rng::stream(seed, 7),
            offsets_rng: Rng::stream(seed, 8),
            late_opened: std::collections::BTreeMap::new(),
            late_fenced: std::collections::BTreeSet::new(),
        }
    }

    /// Records that a late request opened `txn_id`'s transaction started at `start_ms`.
    pub(crate) fn record_late_open(&mut self, txn_id: &str, start_ms: u64) {
        self.late_opened.insert(txn_id.to_owned(), start_ms);
    }

    /// The start (ms) of the last transaction of `txn_id` a late request opened.
    pub(crate) fn late_opened(&self, txn_id: &str) -> Option<u64> {
        self.late_opened.get(txn_id).copied()
    }

    /// Records that an InitProducerId fenced a transaction of `txn_id` that only a
    /// late request explains (`late_fenced`).
    pub(crate) fn record_late_fence(&mut self, txn_id: &str) {
        self.late_fenced.insert(txn_id.to_owned());
    }

    /// Whether `txn_id`'s epoch was fenced through a late request (`late_fenced`).
    pub(crate) fn late_fenced(&self, txn_id: &str) -> bool {
        self.late_fenced.contains(txn_id)
    }

    pub(crate) fn offsets_rng(&mut self) -> &mut Rng {
        &mut self.offsets_rng
    }

    pub(crate) fn markers_due(&self) -> Option<Timestamp> {
        self.markers_due
    }
}

fn draw(rng: &mut Rng, max: Duration) -> Duration {
    let max_us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
    Duration::from_micros(rng.range(0, max_us))
}

impl World {
    /// The start (ms) of the last transaction of `txn_id` that a late AddPartitionsToTxn
    /// or AddOffsetsToTxn opened (see `TxnEnv::late_opened`).
    pub(crate) fn late_opened_transaction(&self, txn_id: &str) -> Option<u64> {
        self.txn_env.late_opened(txn_id)
    }

    /// Whether an InitProducerId fenced a transaction of `txn_id` that only a late
    /// request explains (see `TxnEnv::late_fenced`).
    pub(crate) fn fenced_through_late_request(&self, txn_id: &str) -> bool {
        self.txn_env.late_fenced(txn_id)
    }

    /// The model transaction coordinator.
    pub(crate) fn coordinator(&self) -> &TransactionCoordinator {
        &self.coordinator
    }

    /// The node the transaction coordinator runs on.
    pub(crate) fn coordinator_node(&self) -> NodeId {
        self.coordinator_node
    }

    /// The stream the workload's consumed offsets are drawn from.
    pub(crate) fn offsets_rng(&mut self) -> &mut Rng {
        self.txn_env.offsets_rng()
    }

    /// The finalized `transaction.version` and the finalized-features epoch it came with.
    #[must_use]
    pub fn finalized_transaction_version(&self) -> (i16, i64) {
        (self.txn_env.finalized_tv, self.txn_env.features_epoch)
    }

    /// The controller finalizes `transaction.version` = `level` (a higher features
    /// epoch); the brokers' ApiVersions answers carry it to the client
    /// ([`Notice::TransactionVersion`]).
    pub(crate) fn set_finalized_transaction_version(&mut self, obs: &mut Observers, level: i16) {
        self.txn_env.finalized_tv = level;
        self.txn_env.features_epoch += 1;
        let epoch = self.txn_env.features_epoch;
        obs.trace(self.now, || {
            format!("finalized transaction.version = {level} (epoch {epoch})")
        });
        self.notices.push_back(Notice::TransactionVersion(level));
    }

    /// Whether the coordinator is loading its state (it answers
    /// COORDINATOR_LOAD_IN_PROGRESS).
    #[must_use]
    pub fn coordinator_loading(&self) -> bool {
        self.now < self.txn_env.loading_until
    }

    /// Moves the coordinator to `to` (a bumped coordinator epoch); it loads its state
    /// first.
    pub fn move_coordinator(&mut self, obs: &mut Observers, to: NodeId) {
        self.coordinator_node = to;
        let epoch = self.coordinator.bump_coordinator_epoch();
        let load = draw(&mut self.txn_env.rng, self.config.coordinator_load_max);
        self.txn_env.loading_until = self.now + load;
        obs.trace(self.now, || {
            format!(
                "transaction coordinator moves to node {to} (epoch {epoch}), loading for {load:?}"
            )
        });
    }

    /// Schedules the write of the coordinator's outstanding markers, if any and not
    /// scheduled yet.
    pub(crate) fn schedule_markers(&mut self) {
        if self.txn_env.markers_due.is_some() || self.coordinator.pending_marker_writes().is_empty()
        {
            return;
        }
        let delay = draw(&mut self.txn_env.rng, self.config.marker_delay_max);
        self.txn_env.markers_due = Some(self.now + delay);
    }

    /// Writes the outstanding markers once they are due and the coordinator is loaded
    /// (`force`: now, as at the end of a run, when time is let pass).
    pub(crate) fn write_due_markers(&mut self, obs: &mut Observers, force: bool) {
        if !force {
            match self.txn_env.markers_due {
                Some(due) if due <= self.now => {}
                _ => return,
            }
        }
        if self.txn_env.markers_due.is_none() && self.coordinator.pending_marker_writes().is_empty()
        {
            return;
        }
        if !force && self.coordinator_loading() {
            self.txn_env.markers_due = Some(self.txn_env.loading_until);
            return;
        }
        self.txn_env.markers_due = None;
        let now_ms = self.now.as_millis();
        let written = {
            let mut w = super::txn::marker_writer(&mut self.partitions, now_ms);
            self.coordinator.release_markers(now_ms, &mut w)
        };
        self.coordinator.set_hold_markers(true);
        // The coordinator writes markers with acks=all: they are on every in-sync
        // replica, so committed (below the high watermark), as soon as they are written.
        self.sync_markers(obs);
        obs.trace(self.now, || format!("coordinator wrote {written} markers"));
        self.schedule_markers();
    }

    /// The coordinator faults drawn when a transactional request (other than
    /// FindCoordinator) reaches `node`: a `transaction.version` change, a coordinator
    /// move, the coordinator's own abort of the open transaction of `txn_id`.
    pub(crate) fn draw_coordinator_faults(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        txn_id: &str,
    ) {
        if self.fault_rng.chance(self.rates.transaction_version_change) {
            self.faults.add(FaultKind::TransactionVersionChange);
            let level = if self.txn_env.finalized_tv >= 2 { 1 } else { 2 };
            self.set_finalized_transaction_version(obs, level);
        }
        if node != self.coordinator_node || self.coordinator_loading() {
            return;
        }
        if self.fault_rng.chance(self.rates.coordinator_move) {
            let live: Vec<NodeId> = self
                .brokers
                .iter()
                .filter(|b| b.up && b.id != node)
                .map(|b| b.id)
                .collect();
            if let Some(i) = self.fault_rng.pick(live.len()) {
                self.faults.add(FaultKind::CoordinatorMove);
                self.move_coordinator(obs, live[i]);
                return;
            }
        }
        self.expire_timed_out_transactions(obs);
        let state = self.coordinator.state(txn_id);
        let open = state == Some(TxnState::Ongoing);
        if open && self.fault_rng.chance(self.rates.coordinator_abort) {
            self.faults.add(FaultKind::CoordinatorAbort);
            self.coordinator_aborts(obs, txn_id);
        }
        let idle = state.is_some_and(|s| s == TxnState::Empty || s.is_complete());
        if idle && self.fault_rng.chance(self.rates.transactional_id_expiry) {
            self.faults.add(FaultKind::TransactionalIdExpiry);
            self.expire_transactional_ids(obs);
        }
    }

    /// The coordinator's transaction timeout: every transaction open for longer than
    /// its `transaction.timeout.ms` is aborted (counted as a
    /// [`FaultKind::CoordinatorAbort`]). Kafka checks on a timer
    /// (`transaction.abort.timed.out.transaction.cleanup.interval.ms`); the model
    /// checks whenever a request reaches the coordinator.
    fn expire_timed_out_transactions(&mut self, obs: &mut Observers) {
        let now_ms = self.now.as_millis();
        let aborted = {
            let mut w = super::txn::marker_writer(&mut self.partitions, now_ms);
            self.coordinator.expire_transactions(now_ms, &mut w)
        };
        for id in aborted {
            self.faults.add(FaultKind::CoordinatorAbort);
            obs.trace(self.now, || {
                format!("transaction of {id} timed out: the coordinator aborts it")
            });
            self.schedule_markers();
        }
    }

    /// Every transactional id with no open transaction expires, as after
    /// `transactional.id.expiration.ms` of idleness. Returns them.
    pub fn expire_transactional_ids(&mut self, obs: &mut Observers) -> Vec<String> {
        let now_ms = self.now.as_millis();
        let dead = self.coordinator.expire_transactional_ids(now_ms, 0);
        obs.trace(self.now, || format!("transactional ids expire: {dead:?}"));
        dead
    }

    /// The coordinator aborts the open transaction of `txn_id` on its own, as its
    /// transaction timeout would. Returns whether one was open.
    pub fn coordinator_aborts(&mut self, obs: &mut Observers, txn_id: &str) -> bool {
        let now_ms = self.now.as_millis();
        let aborted = {
            let mut w = super::txn::marker_writer(&mut self.partitions, now_ms);
            self.coordinator
                .abort_open_transaction(txn_id, now_ms, &mut w)
        };
        if aborted {
            obs.trace(self.now, || {
                format!("coordinator aborts the open transaction of {txn_id}")
            });
            self.schedule_markers();
        }
        aborted
    }

    /// Counts a coordinator answer by its error code.
    pub(crate) fn count_coordinator_answer(&mut self, code: i16) {
        if let Some(kind) = FaultKind::coordinator_answer(code) {
            self.faults.add(kind);
        }
    }

    /// The finalized `transaction.version` level.
    pub(crate) fn txn_env_level(&self) -> i16 {
        self.txn_env.finalized_tv
    }

    /// [`Self::check_version_latch`] for a coordinator request.
    pub(crate) fn check_request_version(
        &mut self,
        obs: &mut Observers,
        req: &Request,
        txn_id: &str,
    ) {
        let (producer, v2, what) = match req {
            Request::AddPartitionsToTxn(r) => (r.producer, false, "AddPartitionsToTxn"),
            Request::AddOffsetsToTxn(r) => (r.producer, false, "AddOffsetsToTxn"),
            Request::TxnOffsetCommit(r) => (r.producer, r.transaction_v2, "TxnOffsetCommit"),
            Request::EndTxn(r) => (r.producer, r.transaction_v2, "EndTxn"),
            _ => return,
        };
        self.check_version_latch(obs, txn_id, producer.id.0, producer.epoch.0, v2, what);
    }

    /// A request of `pid` at `epoch` for `txn_id` made under transaction version 2
    /// (`v2`) or 1: the open transaction of that producer must have started under the
    /// same version (the client latches it for the whole transaction). A request at
    /// another epoch is not part of the open transaction: a late one from before an
    /// epoch bump (the coordinator fences it, `TransactionCoordinator`'s epoch checks
    /// answer PRODUCER_FENCED / INVALID_PRODUCER_EPOCH), whatever version it spoke.
    pub(crate) fn check_version_latch(
        &mut self,
        obs: &mut Observers,
        txn_id: &str,
        pid: i64,
        epoch: i16,
        v2: bool,
        what: &str,
    ) {
        let Some(meta) = self.coordinator.metadata(txn_id) else {
            return;
        };
        if meta.state != TxnState::Ongoing
            || meta.producer_id != pid
            || meta.producer_epoch != epoch
        {
            return;
        }
        let started_v2 = meta.version == TransactionVersion::V2;
        if started_v2 != v2 {
            let (from, to) = if started_v2 { (2, 1) } else { (1, 2) };
            obs.violation(
                self.now,
                ViolationKind::Transaction,
                format!(
                    "{what} under transaction version {to} in a transaction begun under {from}"
                ),
            );
        }
    }
}
