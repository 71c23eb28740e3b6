//! The transactional script of the [`Cluster`]'s application: transactions of K
//! records to random partitions, each committed or aborted by a seeded choice, the
//! consumed offsets sent with some, and a second producer with the same
//! `transactional.id` that fences the first.

use std::time::Duration;

use kacrab_idempotence::{Event, KafkaError, Producer, Request, TxnError, TxnOp};

use super::Cluster;
use crate::checker::ViolationKind;
use crate::txn_offsets;
use crate::txn_sim::TxnOutcome;

impl Cluster {
    fn txn_result(&self, op: TxnOp, start: usize) -> Option<Result<(), TxnError>> {
        self.obs.txns().events[start..]
            .iter()
            .find(|(o, _)| *o == op)
            .map(|(_, r)| r.clone())
    }

    /// Runs until the `op` completion after event `start`, at most `max`. A driver sleeps
    /// until `poll_timeout`: if an operation is pending while nothing at all is scheduled
    /// (no message in flight, no deadline), the core would never make progress, which
    /// is recorded as a violation rather than papered over with a tick.
    pub(crate) fn wait_txn(
        &mut self,
        op: TxnOp,
        start: usize,
        max: Duration,
    ) -> Option<Result<(), TxnError>> {
        let deadline = self.now() + max;
        let slice = Duration::from_millis(100);
        while self.now() < deadline {
            let left = deadline.saturating_duration_since(self.now()).min(slice);
            if self.run_until(left, |c| c.txn_result(op, start).is_some()) {
                break;
            }
            if self.is_idle_but_txn() {
                self.txn_ticks += 1;
                self.obs.checker_mut().violation(
                    crate::checker::ViolationKind::Transaction,
                    format!("{op:?} pending with nothing scheduled: the producer would hang"),
                );
                break;
            }
        }
        self.txn_result(op, start)
    }

    fn is_idle_but_txn(&self) -> bool {
        self.world.network_quiet()
            && !self.owes_reports()
            && self.driver.timer(self.now()).is_none()
    }

    /// How often a transactional operation was found pending with nothing scheduled
    /// (each is also a violation). Zero in a correct run.
    #[must_use]
    pub fn txn_ticks(&self) -> u64 {
        self.txn_ticks
    }

    /// `init_transactions`, then steps until it completes (at most `max`).
    ///
    /// # Errors
    /// What the call or its completion reported; `Fatal(RequestTimedOut)` when it did
    /// not complete within `max`.
    pub fn init_transactions(&mut self, max: Duration) -> Result<(), TxnError> {
        let start = self.obs.txns().events.len();
        let now = self.now();
        self.driver.init_transactions(&mut self.obs, now)?;
        self.obs.txns_mut().pending = Some(TxnOp::InitTransactions);
        self.after_input();
        self.wait_txn(TxnOp::InitTransactions, start, max)
            .unwrap_or(Err(TxnError::Fatal(KafkaError::RequestTimedOut)))
    }

    /// Ends the open transaction (`commit` or abort) and steps until it completes; a
    /// commit that fails abortably is aborted. Returns the outcome.
    fn end_transaction(&mut self, idx: usize, commit: bool, max: Duration) -> TxnOutcome {
        let op = if commit { TxnOp::Commit } else { TxnOp::Abort };
        let start = self.obs.txns().events.len();
        let now = self.now();
        let called = self.driver.end_transaction(&mut self.obs, commit, now);
        if called.is_ok() {
            self.obs.txns_mut().pending = Some(op);
        }
        self.after_input();
        let result = match called {
            Ok(()) => match self.wait_txn(op, start, max) {
                Some(r) => r,
                None => {
                    self.violation(
                        ViolationKind::Transaction,
                        format!("transaction {idx}: {op:?} did not complete within {max:?}"),
                    );
                    return TxnOutcome::Open;
                }
            },
            Err(e) => Err(e),
        };
        match result {
            Ok(()) if commit => TxnOutcome::Committed,
            Ok(()) => TxnOutcome::Aborted,
            Err(TxnError::Abortable(e)) if commit => {
                self.obs.txns_mut().txns[idx].commit_error = Some(TxnError::Abortable(e));
                self.obs.trace(self.world.now(), || {
                    format!("transaction {idx}: commit failed ({e}), aborting")
                });
                self.end_transaction(idx, false, max)
            }
            Err(e) => {
                if commit {
                    self.obs.txns_mut().txns[idx].commit_error = Some(e.clone());
                }
                TxnOutcome::Failed(e)
            }
        }
    }

    /// One transaction: `begin_transaction`, `records` records to random partitions
    /// (with a few steps between sends), then commit or abort. Returns its outcome.
    pub fn run_transaction(&mut self, records: u32, commit: bool, max: Duration) -> TxnOutcome {
        let idx = self.begin_and_send_inner(records, commit);
        if let TxnOutcome::Failed(e) = &self.obs.txns_mut().txns[idx].outcome {
            return TxnOutcome::Failed(e.clone());
        }
        self.maybe_send_offsets(idx, max);
        if self.world.draw_rival_producer() {
            self.obs.txns_mut().txns[idx].fenced_by_rival = true;
            let rival = self.fence_with_rival();
            self.obs.trace(self.world.now(), || {
                format!("transaction {idx}: a rival producer initialised: {rival:?}")
            });
        }
        self.finish_open_transaction(commit, max)
    }

    /// `begin_transaction` and `records` records to random partitions (with a few
    /// steps between sends); the transaction stays open. Returns its index.
    pub fn begin_and_send(&mut self, records: u32) -> usize {
        self.begin_and_send_inner(records, true)
    }

    fn begin_and_send_inner(&mut self, records: u32, commit: bool) -> usize {
        let idx = self.obs.txns_mut().begin(commit);
        self.obs
            .trace(self.world.now(), || format!("transaction {idx}: begin"));
        let now = self.now();
        if let Err(e) = self.driver.begin_transaction(&mut self.obs, now) {
            self.obs.txns_mut().finish(idx, TxnOutcome::Failed(e));
            return idx;
        }
        let n = self.world.partitions().len() as u64;
        let mut sent = 0;
        let mut tries = 0;
        while sent < records && tries < records * 100 {
            tries += 1;
            let gp = self.app_rng.below(n) as usize;
            match self.send_record(gp) {
                Ok(_) => sent += 1,
                Err(kacrab_idempotence::SendError::BufferFull { .. }) => {
                    self.after_input();
                    self.run_for(Duration::from_millis(1));
                    continue;
                }
                Err(e) => {
                    self.obs.trace(self.world.now(), || {
                        format!("transaction {idx}: send refused: {e}")
                    });
                    break;
                }
            }
            self.after_input();
            for _ in 0..self.app_rng.below(4) {
                if !self.step() {
                    break;
                }
            }
        }
        idx
    }

    /// Commits (or aborts) the open transaction of the workload and steps until it
    /// completes; a commit that fails abortably is aborted. Returns its outcome.
    pub fn finish_open_transaction(&mut self, commit: bool, max: Duration) -> TxnOutcome {
        let Some(idx) = self.obs.txns_mut().current else {
            return TxnOutcome::Open;
        };
        let outcome = self.end_transaction(idx, commit, max);
        self.obs.trace(self.world.now(), || {
            format!("transaction {idx}: {outcome:?}")
        });
        self.obs.txns_mut().finish(idx, outcome.clone());
        self.check_transactions(false);
        outcome
    }

    /// `count` transactions of `records` records each, each committed with probability
    /// `commit_ratio` (drawn from the application's seeded stream). Stops early when the
    /// producer can no longer run transactions. Returns the outcomes.
    pub fn run_transactions(
        &mut self,
        count: u32,
        records: u32,
        commit_ratio: f64,
        max: Duration,
    ) -> Vec<TxnOutcome> {
        let mut out = Vec::new();
        for _ in 0..count {
            let commit = self.app_rng.chance(commit_ratio);
            let o = self.run_transaction(records, commit, max);
            let stop = matches!(o, TxnOutcome::Failed(_) | TxnOutcome::Open);
            out.push(o);
            if stop {
                break;
            }
        }
        out
    }

    /// A second core producer with the same `transactional.id` starts and calls
    /// `init_transactions` (answered directly by the coordinator, on a reliable path):
    /// the coordinator bumps the epoch, fencing the first producer, and aborts its open
    /// transaction. The rival is kept ([`Cluster::rival`]).
    ///
    /// # Errors
    /// What the rival's `init_transactions` reported.
    pub fn fence_with_rival(&mut self) -> Result<(), TxnError> {
        let mut p = Producer::new(self.config.producer.clone(), self.now());
        p.handle_transaction_version(self.world.txn_env_level());
        p.init_transactions()?;
        let mut now = self.now();
        let mut result = None;
        for _ in 0..10_000 {
            while let Some(req) = p.poll_request(now) {
                match req {
                    Request::FindCoordinator(r) => {
                        let node = self.world.coordinator_node();
                        let _ = p.handle_find_coordinator(r.id, Ok(node), now);
                    }
                    Request::InitProducerId(r) => {
                        let txn_id = r.transactional_id.clone().unwrap_or_default();
                        let res = self
                            .world
                            .rival_init_producer_id(&mut self.obs, &r, &txn_id);
                        self.obs.trace(self.world.now(), || {
                            format!("rival InitProducerId: {res:?}")
                        });
                        let _ = p.handle_producer_id(r.id, res, now);
                    }
                    other => self.obs.checker_mut().violation(
                        ViolationKind::Protocol,
                        format!("rival asked for {other:?} during init_transactions"),
                    ),
                }
            }
            while let Some(ev) = p.poll_event() {
                if let Event::TransactionCompleted {
                    op: TxnOp::InitTransactions,
                    result: r,
                } = ev
                {
                    result = Some(r);
                }
            }
            if result.is_some() {
                break;
            }
            // Core bug: poll_timeout ignores a transactional request's backoff; tick.
            now = p
                .poll_timeout()
                .map_or(now + Duration::from_millis(100), |t| now.max(t));
            p.handle_timeout(now);
        }
        self.world.scan_logs(&mut self.obs);
        self.rival = Some(p);
        result.unwrap_or(Err(TxnError::Fatal(KafkaError::RequestTimedOut)))
    }

    /// With some chance (the coordinator's offsets stream), transaction `idx` sends
    /// offsets for one or two partitions and waits for the operation to complete (at
    /// most `max`).
    fn maybe_send_offsets(&mut self, idx: usize, max: Duration) {
        let tps: Vec<_> = self
            .world
            .partitions()
            .iter()
            .map(|p| p.tp.clone())
            .collect();
        let Some(offsets) = txn_offsets::draw_offsets(self.world.offsets_rng(), &tps, idx) else {
            return;
        };
        let sent = txn_offsets::as_partitions(&offsets);
        let start = self.obs.txns().events.len();
        let group = txn_offsets::workload_group();
        let now = self.now();
        if let Err(e) = self.driver.send_offsets(&mut self.obs, offsets, group, now) {
            self.obs.trace(self.world.now(), || {
                format!("transaction {idx}: send_offsets refused: {e}")
            });
            return;
        }
        self.obs.txns_mut().txns[idx].offsets = sent;
        self.obs.txns_mut().pending = Some(TxnOp::SendOffsets);
        self.after_input();
        let result = self.wait_txn(TxnOp::SendOffsets, start, max);
        self.obs.trace(self.world.now(), || {
            format!("transaction {idx}: send_offsets {result:?}")
        });
        if result.is_none() {
            self.violation(
                ViolationKind::Transaction,
                format!("transaction {idx}: SendOffsets did not complete within {max:?}"),
            );
        }
    }
}
