//! Transactions in the [`Cluster`]: the model [`TransactionCoordinator`](crate::coordinator::TransactionCoordinator) answering
//! the core's transactional requests on its node, the partition leaders' checks of
//! transactional Produce with it, a transactional workload (N transactions of K
//! records, each committed or aborted by a seeded choice), a second producer with the
//! same `transactional.id` that fences the first. The properties are in `txn_checks`,
//! the coordinator's timing and faults in [`crate::txn_faults`], the consumed offsets
//! in [`crate::txn_offsets`].
//!
//! The coordinator lives on one broker ([`SimConfig::coordinator_node`](crate::SimConfig));
//! FindCoordinator (any live broker) names it; every other transactional request sent
//! to another node is answered NOT_COORDINATOR. When its node crashes the coordinator
//! moves to another live broker with a bumped coordinator epoch (its state is kept: the
//! transaction log is replicated), and loads it first. Markers are written into the model
//! partitions a drawn delay after the coordinator prepares a transaction
//! ([`crate::txn_faults`]).

use std::collections::BTreeMap;
use std::time::Duration;

use kacrab_idempotence::{
    Event, InitProducerIdRequest, KafkaError, NodeId, ProduceRequest, Producer, ProducerIdAndEpoch,
    RecordId, Request, TopicPartition, TxnError, TxnOp,
};

use crate::batch;
use crate::broker::{TxnMarker, NONE, UNKNOWN_TOPIC_OR_PARTITION};
use crate::checker::ViolationKind;
use crate::cluster::{Cluster, SimPartition};
use crate::coordinator::{produce_error_from_coordinator, Partition};
use crate::faults::FaultKind;
use crate::net::{txn_request_id, ToClient, TxnAnswer};

/// How one transaction of the workload ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOutcome {
    /// Not ended (yet).
    Open,
    /// `commit_transaction` completed with `Ok`.
    Committed,
    /// `abort_transaction` completed with `Ok` (chosen, or after a failed commit).
    Aborted,
    /// Neither: the producer failed (fenced, fatal) with this error. The coordinator
    /// decides; its records must be visible all or none.
    Failed(TxnError),
}

/// One transaction of the workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnRecord {
    /// The records sent in it.
    pub records: Vec<RecordId>,
    /// Whether the application meant to commit it.
    pub intended_commit: bool,
    /// The error of a commit that did not complete, if any.
    pub commit_error: Option<TxnError>,
    /// How it ended.
    pub outcome: TxnOutcome,
    /// The consumed offsets it sent (group [`crate::txn_offsets::WORKLOAD_GROUP`]).
    pub offsets: Vec<(Partition, i64)>,
    /// A rival producer initialised while it was open: the coordinator aborted it, so
    /// none of its records may become visible.
    pub fenced_by_rival: bool,
}

/// Which transaction each record belongs to, and how each ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnTracker {
    /// The transactions, in order.
    pub txns: Vec<TxnRecord>,
    /// Every `TransactionCompleted` event of the producer under test, in order.
    pub events: Vec<(TxnOp, Result<(), TxnError>)>,
    pub(crate) current: Option<usize>,
    by_record: BTreeMap<RecordId, usize>,
    /// The operation the workload called whose completion has not come yet.
    pub(crate) pending: Option<TxnOp>,
}

impl TxnTracker {
    pub(crate) fn on_sent(&mut self, id: RecordId) {
        if let Some(c) = self.current {
            self.txns[c].records.push(id);
            self.by_record.insert(id, c);
        }
    }

    pub(crate) fn on_completed(&mut self, op: TxnOp, result: &Result<(), TxnError>) {
        self.events.push((op, result.clone()));
        if self.pending == Some(op) {
            self.pending = None;
        }
    }

    fn begin(&mut self, commit: bool) -> usize {
        self.txns.push(TxnRecord {
            records: Vec::new(),
            intended_commit: commit,
            commit_error: None,
            outcome: TxnOutcome::Open,
            offsets: Vec::new(),
            fenced_by_rival: false,
        });
        self.current = Some(self.txns.len() - 1);
        self.txns.len() - 1
    }

    fn finish(&mut self, idx: usize, outcome: TxnOutcome) {
        self.txns[idx].outcome = outcome;
        self.current = None;
    }

    /// The transaction a record was sent in.
    #[must_use]
    pub fn transaction_of(&self, id: RecordId) -> Option<usize> {
        self.by_record.get(&id).copied()
    }

    /// How many transactions ended this way.
    #[must_use]
    pub fn count(&self, pred: impl Fn(&TxnOutcome) -> bool) -> usize {
        self.txns.iter().filter(|t| pred(&t.outcome)).count()
    }
}

fn partition_of(tp: &TopicPartition) -> Partition {
    (tp.topic.as_str().to_owned(), tp.partition)
}

/// A marker writer over the cluster's partitions.
pub(crate) fn marker_writer(
    parts: &mut [SimPartition],
    now_ms: u64,
) -> impl FnMut(&Partition, &TxnMarker) -> Result<(), i16> + '_ {
    move |tp, marker| match parts
        .iter_mut()
        .find(|p| p.tp.topic.as_str() == tp.0 && p.tp.partition == tp.1)
    {
        Some(p) => p
            .state
            .append_marker(marker, now_ms)
            .map(|_| ())
            .map_err(|e| e.code),
        None => Err(UNKNOWN_TOPIC_OR_PARTITION),
    }
}

fn codes(v: Vec<(Partition, i16)>, tps: &[TopicPartition]) -> Vec<(TopicPartition, KafkaError)> {
    v.into_iter()
        .map(|((t, p), code)| {
            let tp = tps
                .iter()
                .find(|tp| tp.topic.as_str() == t && tp.partition == p)
                .cloned()
                .unwrap_or_else(|| TopicPartition::new(t.as_str(), p));
            (tp, KafkaError::from_code(code))
        })
        .collect()
}

impl Cluster {
    /// The model transaction coordinator.
    #[must_use]
    pub fn coordinator(&self) -> &crate::coordinator::TransactionCoordinator {
        &self.coordinator
    }

    /// The node the transaction coordinator runs on.
    #[must_use]
    pub fn coordinator_node(&self) -> NodeId {
        self.coordinator_node
    }

    /// The transactions of the workload and their outcomes.
    #[must_use]
    pub fn transactions(&self) -> &TxnTracker {
        &self.txns
    }

    /// The second producer with the same `transactional.id`, once one fenced the first.
    #[must_use]
    pub fn rival(&self) -> Option<&Producer> {
        self.rival.as_ref()
    }

    /// Writes the coordinator's outstanding markers if they are due.
    fn deliver_markers(&mut self) {
        self.write_due_markers(false);
    }

    /// The coordinator moves off a crashed `node` (to another live broker).
    pub(crate) fn coordinator_node_crashed(&mut self, node: NodeId) {
        if node != self.coordinator_node {
            return;
        }
        if let Some(to) = self
            .brokers
            .iter()
            .find(|b| b.up && b.id != node)
            .map(|b| b.id)
        {
            self.move_coordinator(to);
        }
    }

    /// InitProducerId with a transactional id, at `node`.
    pub(crate) fn coordinator_init_producer_id(
        &mut self,
        node: NodeId,
        r: &InitProducerIdRequest,
        txn_id: &str,
    ) -> Result<ProducerIdAndEpoch, KafkaError> {
        self.draw_coordinator_faults(node, txn_id);
        let refused = if node != self.coordinator_node {
            Some(KafkaError::NotCoordinator)
        } else if self.coordinator_loading() {
            Some(KafkaError::CoordinatorLoadInProgress)
        } else if self.fault_rng.chance(self.rates.coordinator_error) {
            self.faults.add(FaultKind::CoordinatorError);
            Some(KafkaError::CoordinatorLoadInProgress)
        } else {
            None
        };
        let result = match refused {
            Some(e) => Err(e),
            None => {
                self.deliver_markers();
                self.init_at_coordinator(r, txn_id)
            }
        };
        if let Err(e) = &result {
            self.count_coordinator_answer(e.code());
        }
        result
    }

    fn init_at_coordinator(
        &mut self,
        r: &InitProducerIdRequest,
        txn_id: &str,
    ) -> Result<ProducerIdAndEpoch, KafkaError> {
        let now_ms = self.now.as_millis();
        let timeout_ms = u64::try_from(r.transaction_timeout.as_millis()).unwrap_or(u64::MAX);
        let expected = Some((r.current.id.0, r.current.epoch.0));
        let result = {
            let mut w = marker_writer(&mut self.partitions, now_ms);
            self.coordinator
                .init_producer_id(txn_id, timeout_ms, expected, now_ms, &mut w)
                .map(|(pid, epoch)| ProducerIdAndEpoch::new(pid, epoch))
                .map_err(KafkaError::from_code)
        };
        self.schedule_markers();
        result
    }

    /// A transactional request reaches `node`.
    pub(crate) fn answer_txn(&mut self, node: NodeId, req: Request) {
        let id = txn_request_id(&req);
        let now_ms = self.now.as_millis();
        let unavailable = self.fault_rng.chance(self.rates.coordinator_error);
        if unavailable {
            self.faults.add(FaultKind::CoordinatorError);
        }
        if let Some(txn_id) = transactional_id_of(&req) {
            self.draw_coordinator_faults(node, &txn_id);
            self.check_request_version(&req, &txn_id);
        }
        let refuse = match (&req, unavailable) {
            (Request::FindCoordinator(_), true) => Some(KafkaError::CoordinatorNotAvailable),
            (Request::FindCoordinator(_), false) => None,
            (_, _) if node != self.coordinator_node => Some(KafkaError::NotCoordinator),
            (_, _) if self.coordinator_loading() => Some(KafkaError::CoordinatorLoadInProgress),
            (_, true) => Some(KafkaError::CoordinatorLoadInProgress),
            _ => None,
        };
        if !matches!(req, Request::FindCoordinator(_)) && refuse.is_none() {
            self.deliver_markers();
        }
        let tps: Vec<TopicPartition> = self.partitions.iter().map(|p| p.tp.clone()).collect();
        let answer = match req {
            Request::FindCoordinator(_) => {
                TxnAnswer::FindCoordinator(refuse.map_or(Ok(self.coordinator_node), Err))
            }
            Request::AddPartitionsToTxn(r) => TxnAnswer::AddPartitions(match refuse {
                Some(e) => r.partitions.iter().map(|tp| (tp.clone(), e)).collect(),
                None => {
                    let parts: Vec<Partition> = r.partitions.iter().map(partition_of).collect();
                    let v = self.coordinator.add_partitions(
                        &r.transactional_id,
                        r.producer.id.0,
                        r.producer.epoch.0,
                        &parts,
                        now_ms,
                    );
                    codes(v, &tps)
                }
            }),
            Request::AddOffsetsToTxn(r) => TxnAnswer::AddOffsets(match refuse {
                Some(e) => e,
                None => KafkaError::from_code(self.coordinator.add_offsets(
                    &r.transactional_id,
                    r.producer.id.0,
                    r.producer.epoch.0,
                    &r.group_id,
                    now_ms,
                )),
            }),
            Request::TxnOffsetCommit(r) => TxnAnswer::TxnOffsetCommit(match refuse {
                Some(e) => r.offsets.iter().map(|o| (o.partition.clone(), e)).collect(),
                None => {
                    let offsets: Vec<(Partition, i64)> = r
                        .offsets
                        .iter()
                        .map(|o| (partition_of(&o.partition), o.offset))
                        .collect();
                    let offset_tps: Vec<TopicPartition> =
                        r.offsets.iter().map(|o| o.partition.clone()).collect();
                    let v = self.coordinator.txn_offset_commit(
                        &r.transactional_id,
                        &r.group.group_id,
                        r.producer.id.0,
                        r.producer.epoch.0,
                        &offsets,
                        r.transaction_v2,
                        now_ms,
                    );
                    codes(v, &offset_tps)
                }
            }),
            Request::EndTxn(r) => TxnAnswer::EndTxn(match refuse {
                Some(e) => Err(e),
                None => {
                    let mut w = marker_writer(&mut self.partitions, now_ms);
                    self.coordinator
                        .end_txn(
                            &r.transactional_id,
                            r.producer.id.0,
                            r.producer.epoch.0,
                            r.commit,
                            r.transaction_v2,
                            now_ms,
                            &mut w,
                        )
                        .map(|o| o.map(|(pid, epoch)| ProducerIdAndEpoch::new(pid, epoch)))
                        .map_err(KafkaError::from_code)
                }
            }),
            other => {
                self.checker.violation(
                    ViolationKind::Protocol,
                    format!("not a transactional request: {other:?}"),
                );
                return;
            }
        };
        self.schedule_markers();
        for code in answer_codes(&answer) {
            self.count_coordinator_answer(code);
        }
        self.trace_line(|| format!("node {node} txn req {id}: {answer:?}"));
        self.respond(node, id, ToClient::Txn(id, answer), &[]);
    }

    /// The partition leader's check of a transactional batch with the coordinator
    /// (TV1: verification; TV2: the implicit add of Produce v12). `Some(error)` refuses
    /// the batch.
    pub(crate) fn txn_produce_check(
        &mut self,
        r: &ProduceRequest,
        data: &[u8],
        tp: &TopicPartition,
    ) -> Option<KafkaError> {
        let txn_id = r.transactional_id.as_deref()?;
        let h = batch::decode_header(data).ok()?;
        if !h.is_transactional() {
            return None;
        }
        let part = partition_of(tp);
        self.check_version_latch(
            txn_id,
            h.producer_id,
            h.producer_epoch,
            r.transaction_v2,
            "Produce",
        );
        let code = if !self.is_up(self.coordinator_node) {
            crate::coordinator::COORDINATOR_NOT_AVAILABLE
        } else if self.coordinator_loading() {
            crate::coordinator::COORDINATOR_LOAD_IN_PROGRESS
        } else if r.transaction_v2 {
            let now_ms = self.now.as_millis();
            self.coordinator.add_partition_implicit(
                txn_id,
                h.producer_id,
                h.producer_epoch,
                &part,
                now_ms,
            )
        } else {
            self.coordinator
                .verify_partition(txn_id, h.producer_id, h.producer_epoch, &part)
        };
        if code == NONE {
            return None;
        }
        self.count_coordinator_answer(code);
        let version = if r.transaction_v2 { 12 } else { 11 };
        let error = KafkaError::from_code(produce_error_from_coordinator(code, version));
        self.trace_line(|| {
            format!("{tp}: coordinator check of txn batch failed: {code} -> {error}")
        });
        Some(error)
    }

    // ------------------------------------------------------------------ the workload

    fn txn_result(&self, op: TxnOp, start: usize) -> Option<Result<(), TxnError>> {
        self.txns.events[start..]
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
        let deadline = self.now + max;
        let slice = Duration::from_millis(100);
        while self.now < deadline {
            let left = deadline.saturating_duration_since(self.now).min(slice);
            if self.run_until(left, |c| c.txn_result(op, start).is_some()) {
                break;
            }
            if self.is_idle_but_txn() {
                self.txn_ticks += 1;
                self.checker.violation(
                    crate::checker::ViolationKind::Transaction,
                    format!("{op:?} pending with nothing scheduled: the producer would hang"),
                );
                break;
            }
        }
        self.txn_result(op, start)
    }

    fn is_idle_but_txn(&self) -> bool {
        self.net.next_delivery().is_none()
            && self.local.is_empty()
            && self.producer.poll_timeout().is_none()
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
        let start = self.txns.events.len();
        self.producer.init_transactions()?;
        self.txns.pending = Some(TxnOp::InitTransactions);
        self.after_input();
        self.wait_txn(TxnOp::InitTransactions, start, max)
            .unwrap_or(Err(TxnError::Fatal(KafkaError::RequestTimedOut)))
    }

    /// Ends the open transaction (`commit` or abort) and steps until it completes; a
    /// commit that fails abortably is aborted. Returns the outcome.
    fn end_transaction(&mut self, idx: usize, commit: bool, max: Duration) -> TxnOutcome {
        let op = if commit { TxnOp::Commit } else { TxnOp::Abort };
        let start = self.txns.events.len();
        let called = if commit {
            self.producer.commit_transaction()
        } else {
            self.producer.abort_transaction()
        };
        if called.is_ok() {
            self.txns.pending = Some(op);
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
                self.txns.txns[idx].commit_error = Some(TxnError::Abortable(e));
                self.trace_line(|| format!("transaction {idx}: commit failed ({e}), aborting"));
                self.end_transaction(idx, false, max)
            }
            Err(e) => {
                if commit {
                    self.txns.txns[idx].commit_error = Some(e.clone());
                }
                TxnOutcome::Failed(e)
            }
        }
    }

    /// One transaction: `begin_transaction`, `records` records to random partitions
    /// (with a few steps between sends), then commit or abort. Returns its outcome.
    pub fn run_transaction(&mut self, records: u32, commit: bool, max: Duration) -> TxnOutcome {
        let idx = self.begin_and_send_inner(records, commit);
        if let TxnOutcome::Failed(e) = &self.txns.txns[idx].outcome {
            return TxnOutcome::Failed(e.clone());
        }
        self.maybe_send_offsets(idx, max);
        if self.fault_rng.chance(self.rates.rival_producer) {
            self.faults.add(FaultKind::RivalProducer);
            self.txns.txns[idx].fenced_by_rival = true;
            let rival = self.fence_with_rival();
            self.trace_line(|| {
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
        let idx = self.txns.begin(commit);
        self.trace_line(|| format!("transaction {idx}: begin"));
        if let Err(e) = self.producer.begin_transaction() {
            self.txns.finish(idx, TxnOutcome::Failed(e));
            return idx;
        }
        let n = self.partitions.len() as u64;
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
                    self.trace_line(|| format!("transaction {idx}: send refused: {e}"));
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
        let Some(idx) = self.txns.current else {
            return TxnOutcome::Open;
        };
        let outcome = self.end_transaction(idx, commit, max);
        self.trace_line(|| format!("transaction {idx}: {outcome:?}"));
        self.txns.finish(idx, outcome.clone());
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
        let mut p = Producer::new(self.config.producer.clone(), self.now);
        p.handle_transaction_version(self.txn_env_level());
        p.init_transactions()?;
        let mut now = self.now;
        let mut result = None;
        for _ in 0..10_000 {
            while let Some(req) = p.poll_request(now) {
                match req {
                    Request::FindCoordinator(r) => {
                        let node = self.coordinator_node;
                        let _ = p.handle_find_coordinator(r.id, Ok(node), now);
                    }
                    Request::InitProducerId(r) => {
                        let txn_id = r.transactional_id.clone().unwrap_or_default();
                        self.write_due_markers(true);
                        let res = self.init_at_coordinator(&r, &txn_id);
                        self.trace_line(|| format!("rival InitProducerId: {res:?}"));
                        let _ = p.handle_producer_id(r.id, res, now);
                    }
                    other => self.checker.violation(
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
        self.checker
            .scan_logs(self.partitions.iter().map(|p| &p.state));
        self.rival = Some(p);
        result.unwrap_or(Err(TxnError::Fatal(KafkaError::RequestTimedOut)))
    }
}

/// The transactional id a coordinator request names (`None` for FindCoordinator).
fn transactional_id_of(req: &Request) -> Option<String> {
    match req {
        Request::AddPartitionsToTxn(r) => Some(r.transactional_id.clone()),
        Request::AddOffsetsToTxn(r) => Some(r.transactional_id.clone()),
        Request::TxnOffsetCommit(r) => Some(r.transactional_id.clone()),
        Request::EndTxn(r) => Some(r.transactional_id.clone()),
        _ => None,
    }
}

/// Every error code in a coordinator's answer, once each.
fn answer_codes(answer: &TxnAnswer) -> Vec<i16> {
    let mut codes: Vec<i16> = match answer {
        TxnAnswer::FindCoordinator(r) => r.as_ref().err().map(|e| e.code()).into_iter().collect(),
        TxnAnswer::AddPartitions(v) | TxnAnswer::TxnOffsetCommit(v) => {
            v.iter().map(|(_, e)| e.code()).collect()
        }
        TxnAnswer::AddOffsets(e) => vec![e.code()],
        TxnAnswer::EndTxn(r) => r.as_ref().err().map(|e| e.code()).into_iter().collect(),
    };
    codes.sort_unstable();
    codes.dedup();
    codes
}
