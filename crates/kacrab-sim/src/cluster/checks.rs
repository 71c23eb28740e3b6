//! The transactional properties of a [`Cluster`] run: what a `read_committed` reader
//! sees against how each transaction of the workload ended, the consumed offsets
//! committed for the group, and that nothing is left open or pending at the end.

use std::collections::BTreeMap;

use kacrab_idempotence::RecordId;

use super::Cluster;
use crate::checker::{decode_value, Outcome, ViolationKind};
use crate::coordinator::TxnState;
use crate::summary::ViolationCounts;
use crate::txn_offsets;
use crate::txn_sim::TxnOutcome;

impl Cluster {
    /// The transactional properties: every record a `read_committed` reader sees is in
    /// a committed transaction (or one whose outcome the producer never learned), once,
    /// in send order per partition; every record of a committed transaction is
    /// delivered and visible exactly once; a transaction the producer never learned the
    /// outcome of is visible all or none. With `end`, also: no transaction left open,
    /// neither in the workload nor at the coordinator (unless the producer is fatal and
    /// nobody fenced it).
    pub fn check_transactions(&mut self, end: bool) {
        let now = self.now();
        self.obs.set_clock(now);
        let mut seen: BTreeMap<RecordId, u32> = BTreeMap::new();
        let mut problems = Vec::new();
        for (gp, p) in self.world.partitions().iter().enumerate() {
            let mut last: Option<u32> = None;
            for r in p.state.read_committed() {
                let Some((pp, idx)) = r.value.as_deref().and_then(decode_value) else {
                    problems.push(format!("{}@{}: undecodable record", p.tp, r.offset));
                    continue;
                };
                let Some(&rid) = self.obs.checker().sent_to(gp).get(idx as usize) else {
                    problems.push(format!("{}@{}: p{pp}#{idx} never sent", p.tp, r.offset));
                    continue;
                };
                if last.is_some_and(|l| l >= idx) {
                    problems.push(format!(
                        "{}@{}: read_committed sees #{idx} after #{}",
                        p.tp,
                        r.offset,
                        last.unwrap_or_default()
                    ));
                }
                last = Some(idx);
                *seen.entry(rid).or_default() += 1;
            }
        }
        for (&rid, &n) in &seen {
            if n > 1 {
                problems.push(format!("record {rid} visible {n} times to read_committed"));
            }
            match self
                .obs
                .txns()
                .transaction_of(rid)
                .map(|t| (t, &self.obs.txns().txns[t].outcome))
            {
                None => problems.push(format!("record {rid} visible but in no transaction")),
                Some((t, TxnOutcome::Aborted)) => {
                    problems.push(format!("record {rid} of aborted transaction {t} visible"));
                }
                Some((t, TxnOutcome::Open)) if self.obs.txns().current != Some(t) => {
                    problems.push(format!(
                        "record {rid} of unfinished transaction {t} visible"
                    ));
                }
                Some((t, TxnOutcome::Open)) => {
                    problems.push(format!("record {rid} of open transaction {t} visible"));
                }
                _ => {}
            }
        }
        // The markers of the last ended transaction may still be on their way: its
        // records become visible when they are written.
        let settling = (!self.world.coordinator().pending_marker_writes().is_empty())
            .then(|| {
                self.obs
                    .txns()
                    .txns
                    .iter()
                    .rposition(|t| t.outcome != TxnOutcome::Open)
            })
            .flatten();
        for (t, txn) in self.obs.txns().txns.iter().enumerate() {
            let visible = txn.records.iter().filter(|r| seen.contains_key(r)).count();
            if txn.fenced_by_rival && visible != 0 {
                problems.push(format!(
                    "transaction {t} aborted by a rival's init_transactions, but {visible} of its records are visible"
                ));
            }
            match &txn.outcome {
                TxnOutcome::Committed => {
                    for rid in &txn.records {
                        if !seen.contains_key(rid) && settling != Some(t) {
                            problems.push(format!(
                                "record {rid} of committed transaction {t} not visible"
                            ));
                        }
                        let delivered = self
                            .obs
                            .checker()
                            .record(*rid)
                            .is_some_and(|r| r.outcome == Outcome::Delivered);
                        if !delivered {
                            problems.push(format!(
                                "record {rid} of committed transaction {t} not delivered"
                            ));
                        }
                    }
                }
                TxnOutcome::Failed(e) if visible != 0 && visible != txn.records.len() => {
                    problems.push(format!(
                        "transaction {t} ({e}) half visible: {visible} of {}",
                        txn.records.len()
                    ));
                }
                TxnOutcome::Open if end => {
                    problems.push(format!("transaction {t} never ended"));
                }
                _ => {}
            }
        }
        txn_offsets::check_offsets(
            self.world.coordinator(),
            self.obs.txns(),
            settling,
            &mut problems,
        );
        if end {
            if let Some(op) = self.obs.txns().pending {
                self.obs.checker_mut().violation(
                    ViolationKind::Liveness,
                    format!("{op:?} still pending at the end of the quiet phase"),
                );
            }
            if let Some(id) = self.config.producer.transactional_id() {
                let state = self.world.coordinator().state(id);
                let stuck = state.is_some_and(|s| s == TxnState::Ongoing || s.is_prepare());
                if stuck
                    && self.driver.producer().fatal_error().is_none()
                    && !self.hanging_by_kafkas_rules(id)
                {
                    problems.push(format!("coordinator left transaction in {state:?}"));
                }
            }
        }
        for p in problems {
            self.obs
                .checker_mut()
                .violation(ViolationKind::Transaction, p);
        }
    }
}

impl Cluster {
    /// Whether `txn_id`'s transaction left `Ongoing` at the end is one Kafka's
    /// coordinator leaves open too, not one the producer failed to end: a late
    /// AddPartitionsToTxn or AddOffsetsToTxn (read by the broker, timed out and retried
    /// by the client, applied after its connection closed) opened it after the
    /// producer's last transaction had ended, and the producer has none open. Kafka's
    /// `TransactionCoordinator.handleAddPartitionsToTransaction` accepts the matching
    /// epoch from `CompleteCommit`/`CompleteAbort` (TV1 keeps the epoch across
    /// transactions); the transaction hangs until `abortTimedOutTransactions` aborts
    /// it (KIP-890 ends this under TV2, where every transaction has its own epoch).
    #[must_use]
    pub fn hanging_by_kafkas_rules(&self, txn_id: &str) -> bool {
        let Some(meta) = self.world.coordinator().metadata(txn_id) else {
            return false;
        };
        let producer_idle = self
            .obs
            .txns()
            .txns
            .iter()
            .all(|t| t.outcome != TxnOutcome::Open);
        meta.state == TxnState::Ongoing
            && producer_idle
            && self.world.late_opened_transaction(txn_id) == Some(meta.start_ms)
    }

    /// The start (ms) of the last transaction of `txn_id` that a late
    /// AddPartitionsToTxn or AddOffsetsToTxn opened at the coordinator (one the broker
    /// applied after the client had closed the connection it came on), if any.
    #[must_use]
    pub fn late_opened_transaction(&self, txn_id: &str) -> Option<u64> {
        self.world.late_opened_transaction(txn_id)
    }

    /// Whether the producer's fatal error is one Kafka's rules give it under the faults
    /// drawn, not a bug: the coordinator aborted its transaction (as a transaction
    /// timeout does; the epoch bump fences the producer's next request,
    /// `TransactionCoordinator.handleEndTransaction`), a rival producer with the same
    /// `transactional.id` fenced it, or its transactional id expired
    /// (INVALID_PRODUCER_ID_MAPPING, fatal in Java's `TransactionManager`; or, when the
    /// answer to the InitProducerId that recreated the id was lost, PRODUCER_FENCED for
    /// its retry, `TransactionCoordinator.handleInitProducerId`), or an
    /// InitProducerId fenced a transaction that only a late request explains (a late
    /// AddPartitionsToTxn/AddOffsetsToTxn opened it after the producer's last one
    /// ended, or the InitProducerId itself was applied after the client had retried
    /// it and begun its next transaction): the coordinator fences and aborts an
    /// `Ongoing` transaction on InitProducerId whatever its epoch, and the
    /// producer's retried bump names an epoch that is neither the current nor the
    /// last one (`TransactionMetadata.prepareIncrementProducerEpoch`).
    #[must_use]
    pub fn fatal_by_kafkas_rules(&self) -> bool {
        use crate::faults::FaultKind;
        use kacrab_idempotence::{KafkaError, TxnError};
        let last_failed = matches!(
            self.obs.txns().txns.last().map(|t| &t.outcome),
            Some(TxnOutcome::Failed(_))
        );
        // The coordinator's abort bumps the epoch, so the producer's next request is
        // fenced; at an exhausted epoch under TV2 it also rotates the producer id
        // (KAFKA-20090), and the old id is then unknown: INVALID_PRODUCER_ID_MAPPING,
        // fatal since KAFKA-18019.
        let rotated_away = self
            .config
            .producer
            .transactional_id()
            .and_then(|id| self.world.coordinator().producer_id_and_epoch(id))
            .is_some_and(|(pid, _)| pid != self.driver.producer().producer_id().id.0);
        let fenced_by_abort = self.world.faults().get(FaultKind::CoordinatorAbort) > 0
            && match self.obs.txns().txns.last().map(|t| &t.outcome) {
                Some(TxnOutcome::Failed(TxnError::ProducerFenced)) => true,
                Some(TxnOutcome::Failed(TxnError::Fatal(KafkaError::InvalidProducerIdMapping))) => {
                    rotated_away
                }
                _ => false,
            };
        let fenced_by_rival = self.world.faults().get(FaultKind::RivalProducer) > 0 && last_failed;
        let forgotten = self.world.faults().get(FaultKind::TransactionalIdExpiry) > 0
            && matches!(
                self.driver.producer().fatal_error(),
                Some(KafkaError::InvalidProducerIdMapping | KafkaError::ProducerFenced)
            );
        let fenced_late = matches!(
            self.driver.producer().fatal_error(),
            Some(KafkaError::ProducerFenced)
        ) && self
            .config
            .producer
            .transactional_id()
            .is_some_and(|id| self.fenced_through_late_request(id));
        fenced_by_abort || fenced_by_rival || forgotten || fenced_late
    }

    /// Whether an InitProducerId fenced a transaction of `txn_id` that only a late
    /// request explains (see [`Cluster::fatal_by_kafkas_rules`]).
    #[must_use]
    pub fn fenced_through_late_request(&self, txn_id: &str) -> bool {
        self.world.fenced_through_late_request(txn_id)
    }

    /// A transactional chaos run: `init_transactions`, then `n` transactions of `k`
    /// records each (committed with probability 0.6) under `rates`, then the faults
    /// stop, crashed brokers restart, the producer drains, and the end-of-run checks
    /// run. The returned cluster holds the violations and counters.
    #[must_use]
    pub fn transactional_chaos(mut sim: crate::SimConfig, n: u32, k: u32) -> Cluster {
        const MAX: core::time::Duration = core::time::Duration::from_secs(120);
        sim.trace = false;
        let mut c = Cluster::new(sim);
        if c.init_transactions(MAX).is_ok() {
            c.run_transactions(n, k, 0.6, MAX);
        }
        c.set_fault_rates(crate::FaultRates::NONE);
        c.restart_all();
        c.run_until_idle(MAX);
        c.final_check();
        c
    }

    /// The liveness bound of [`crate::failure_bound`]: every failed record must be
    /// explained by a fault able to fail it.
    pub fn check_failures_explained(&mut self) {
        self.obs.set_clock(self.now());
        self.obs.checker_mut().check_failures_explained();
    }

    /// Every violation [`Cluster::transactional_chaos_violations`] would report,
    /// counted by kind: all of them, also past the 64 the checker keeps.
    #[must_use]
    pub fn transactional_chaos_violation_counts(&self) -> ViolationCounts {
        let all = self.obs.checker().violation_counts();
        if self.fatal_by_kafkas_rules() {
            all.without(ViolationKind::Fatal)
        } else {
            all.clone()
        }
    }

    /// The violations of a transactional chaos run the checker kept (the first 64), a
    /// fatal producer excepted when [`Cluster::fatal_by_kafkas_rules`] explains it;
    /// [`Cluster::transactional_chaos_violation_counts`] counts all of them.
    #[must_use]
    pub fn transactional_chaos_violations(&self) -> Vec<String> {
        let excused = self.fatal_by_kafkas_rules();
        self.obs
            .checker()
            .violations()
            .iter()
            .filter(|v| !(excused && v.kind == ViolationKind::Fatal))
            .map(|v| format!("{v:?}"))
            .collect()
    }
}
