//! The application's transactional operations, and the transactional step of
//! `poll_request` (Java's `maybeSendAndPollTransactionalRequest`).

use alloc::vec::Vec;

use crate::error::{DeliveryError, KafkaError};
use crate::io::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, Event,
    FindCoordinatorRequest, InitProducerIdRequest, Request, TxnOffsetCommitRequest,
};
use crate::producer::{IdState, Lifecycle, Producer};
use crate::requests::OutstandingKind;
use crate::txn::{
    BumpEnds, Completion, ConsumerGroupMetadata, CoordinatorType, IdRequest, OffsetToCommit,
    Queued, Shutdown, TransactionState as S, Txn, TxnError, TxnOp,
};
use crate::types::{BatchId, ProducerIdAndEpoch, Timestamp};

/// What the transactional step of `poll_request` decided this round.
pub(crate) enum TxnStep {
    /// This transactional request goes out now.
    Send(Request),
    /// Nothing transactional to send; produce data may go.
    Nothing,
    /// A transactional request is outstanding: no produce data this round (Java's
    /// `Sender.runOnce` returns before `sendProducerData` while one is in flight).
    HoldProduce,
}

impl Producer {
    /// The transactional state, or `None` without a `transactional.id`.
    #[must_use]
    pub fn transaction_state(&self) -> Option<S> {
        self.txn.as_ref().map(|t| t.state)
    }

    /// Tells the producer the cluster's finalized `transaction.version` feature level
    /// (from ApiVersions: the driver feeds the view with the highest finalized-features
    /// epoch, not whichever broker answered last). Level 2 or more enables transaction
    /// version 2 (KIP-890). It is sampled at `init_transactions` and when a transaction
    /// starts completing, and applies from the next transaction: an open transaction
    /// keeps its version to the end (a TV1 to TV2 change bumps the epoch after it).
    pub fn handle_transaction_version(&mut self, level: i16) {
        if let Some(t) = self.txn.as_mut() {
            t.version.finalized(level);
        }
    }

    /// Checks the common preconditions and the pending-operation rule: calling the
    /// pending operation again is fine (its one completion event is still to come);
    /// calling another one is not. Returns `Ok(true)` when `op` is already pending.
    fn txn_precheck(&self, op: TxnOp) -> Result<bool, TxnError> {
        let t = self.txn.as_ref().ok_or(TxnError::NotTransactional)?;
        if t.op == Some(op) {
            // Even after a graceful close: the operation goes on and completes.
            return Ok(true);
        }
        if self.lifecycle == Lifecycle::Closing {
            return Err(TxnError::Closed);
        }
        if let Some(pending) = t.op {
            return Err(TxnError::OperationPending { pending });
        }
        match (t.state, t.last_error) {
            (
                S::FatalError,
                Some(KafkaError::ProducerFenced | KafkaError::InvalidProducerEpoch),
            ) => Err(TxnError::ProducerFenced),
            (S::FatalError, e) => Err(TxnError::Fatal(e.unwrap_or(KafkaError::UnknownServerError))),
            (S::AbortableError, Some(e)) if op != TxnOp::Abort => Err(TxnError::Abortable(e)),
            _ => Ok(false),
        }
    }

    fn invalid(&self, op: TxnOp) -> TxnError {
        TxnError::InvalidState {
            op,
            state: self.txn.as_ref().map_or(S::Uninitialized, |t| t.state),
        }
    }

    fn txn_mut(&mut self) -> &mut Txn {
        self.txn.as_mut().expect("transactional producer")
    }

    /// Gets a producer id for the `transactional.id` (fencing any older producer with the
    /// same id) and completes with [`Event::TransactionCompleted`]. Call it once, before
    /// anything else; calling it again while it is pending is harmless.
    ///
    /// # Errors
    /// The producer is not transactional, is fatal, or was already initialized.
    pub fn init_transactions(&mut self) -> Result<(), TxnError> {
        if self.txn_precheck(TxnOp::InitTransactions)? {
            return Ok(());
        }
        let t = self.txn_mut();
        if t.state != S::Uninitialized {
            return Err(self.invalid(TxnOp::InitTransactions));
        }
        t.state = S::Initializing;
        t.bump_ends = BumpEnds::Nothing;
        t.op = Some(TxnOp::InitTransactions);
        t.queue.enqueue(Queued::InitProducerId(IdRequest::Fresh));
        Ok(())
    }

    /// Opens a transaction. Completes at once (no event).
    ///
    /// # Errors
    /// Not `Ready` (not initialized, a transaction already open, an operation pending).
    pub fn begin_transaction(&mut self) -> Result<(), TxnError> {
        let t = self.txn.as_ref().ok_or(TxnError::NotTransactional)?;
        if self.lifecycle == Lifecycle::Closing {
            return Err(TxnError::Closed);
        }
        if let Some(pending) = t.op {
            return Err(TxnError::OperationPending { pending });
        }
        if t.state != S::Ready {
            return Err(self.invalid(TxnOp::BeginTransaction));
        }
        self.txn_mut().state = S::InTransaction;
        Ok(())
    }

    /// Adds consumer offsets to the open transaction: they are committed with it, and
    /// only if it commits. Completes with [`Event::TransactionCompleted`]; with no
    /// offsets, at once and with nothing sent (the transaction does not start for it).
    ///
    /// # Errors
    /// Group metadata with a generation but no member id
    /// ([`TxnError::InvalidGroupMetadata`]), no transaction open, an error state, or
    /// another operation pending.
    pub fn send_offsets_to_transaction(
        &mut self,
        offsets: Vec<OffsetToCommit>,
        group: ConsumerGroupMetadata,
    ) -> Result<(), TxnError> {
        // Java's `KafkaProducer.throwIfInvalidGroupMetadata`, before any other check: a
        // consumer in a group has a generation and a member id, outside one neither.
        if group.generation_id > 0 && group.member_id.is_empty() {
            return Err(TxnError::InvalidGroupMetadata {
                generation_id: group.generation_id,
            });
        }
        if self.txn_precheck(TxnOp::SendOffsets)? {
            return Ok(());
        }
        let t = self.txn_mut();
        if t.state != S::InTransaction {
            return Err(self.invalid(TxnOp::SendOffsets));
        }
        if offsets.is_empty() {
            // Java's `KafkaProducer.sendOffsetsToTransaction` hands an empty map to
            // nobody: nothing is sent and the transaction does not start, so a commit
            // with nothing else in it ends without EndTxn (KAFKA-18401). Sending an
            // empty TxnOffsetCommit v5 would mark it started, and the coordinator
            // refuses EndTxn for a transaction nothing joined.
            self.events.push_back(Event::TransactionCompleted {
                op: TxnOp::SendOffsets,
                result: Ok(()),
            });
            return Ok(());
        }
        t.op = Some(TxnOp::SendOffsets);
        t.pending_offsets = offsets;
        t.group = Some(group);
        if t.version.is_v2() {
            // TV2: TxnOffsetCommit v5 adds the group to the transaction itself.
            t.started = true;
            t.queue.enqueue(Queued::TxnOffsetCommit);
        } else {
            t.queue.enqueue(Queued::AddOffsets);
        }
        Ok(())
    }

    /// Commits the open transaction once every record sent in it is acknowledged
    /// (linger is ignored meanwhile). Completes with [`Event::TransactionCompleted`].
    ///
    /// # Errors
    /// No transaction open, an abortable or fatal error, or another operation pending.
    pub fn commit_transaction(&mut self) -> Result<(), TxnError> {
        if self.txn_precheck(TxnOp::Commit)? {
            return Ok(());
        }
        if self.txn.as_ref().map(|t| t.state) != Some(S::InTransaction) {
            return Err(self.invalid(TxnOp::Commit));
        }
        let t = self.txn_mut();
        t.state = S::CommittingTransaction;
        t.op = Some(TxnOp::Commit);
        self.begin_completing(Completion::Commit);
        Ok(())
    }

    /// Aborts the open transaction: records never sent fail with
    /// [`DeliveryError::Aborted`]; records already sent finish first, then EndTxn(ABORT)
    /// makes them invisible to read_committed readers. Completes with
    /// [`Event::TransactionCompleted`].
    ///
    /// # Errors
    /// No transaction to abort, a fatal error, or another operation pending.
    pub fn abort_transaction(&mut self) -> Result<(), TxnError> {
        if self.txn_precheck(TxnOp::Abort)? {
            return Ok(());
        }
        let state = self.txn.as_ref().map(|t| t.state);
        if !matches!(state, Some(S::InTransaction | S::AbortableError)) {
            return Err(self.invalid(TxnOp::Abort));
        }
        self.txn_mut().op = Some(TxnOp::Abort);
        self.begin_abort();
        Ok(())
    }

    /// Java's `beginAbort`, for the application's abort and for a graceful close.
    fn begin_abort(&mut self) {
        let t = self.txn_mut();
        t.state = S::AbortingTransaction;
        t.partitions.drop_new();
        self.begin_completing(Completion::Abort);
    }

    /// A graceful close with a transaction open aborts it (Java's `Sender.run`: on close
    /// an ongoing, not completing transaction gets `beginAbort`). Waits for a pending
    /// operation (SendOffsets) to end first; the abort has no application operation, so
    /// no completion event: the records tell (unsent ones fail with
    /// [`DeliveryError::Aborted`], sent ones are acknowledged and then aborted by the
    /// marker).
    fn maybe_abort_on_close(&mut self) {
        let Some(t) = self.txn.as_ref() else { return };
        if self.lifecycle == Lifecycle::Closing
            && t.shutdown == Shutdown::Running
            && t.op.is_none()
            && matches!(t.state, S::InTransaction | S::AbortableError)
        {
            self.begin_abort();
        }
    }

    /// Whether a graceful close still waits for a transaction that is open or ending
    /// (Java's `hasOngoingTransaction`), or for a pending application operation (an
    /// init, or a TV1 abort or commit waiting for its epoch bump: Java's Sender keeps
    /// running while such a request is in flight, and every operation gets its one
    /// event); a forced close waits for nothing.
    pub(crate) fn txn_closing(&self) -> bool {
        self.txn.as_ref().is_some_and(|t| {
            t.shutdown == Shutdown::Running
                && (t.op.is_some()
                    || matches!(
                        t.state,
                        S::InTransaction
                            | S::CommittingTransaction
                            | S::AbortingTransaction
                            | S::AbortableError
                    ))
        })
    }

    /// The forced close ([`Producer::abort`]): nothing transactional is sent any more,
    /// the request on the wire is forgotten (its answer is unknown to the core), and the
    /// pending operation completes with [`TxnError::Closed`] (Java's
    /// `TransactionManager.close` fails every pending request's result).
    pub(crate) fn txn_force_close(&mut self) {
        let Some(t) = self.txn.as_mut() else { return };
        t.shutdown = Shutdown::Forced;
        t.queue.clear();
        t.queue.cancel_wait();
        t.partitions.drop_new();
        let in_flight = t.queue.take_in_flight();
        if let Some((id, _)) = in_flight {
            self.take_outstanding(id);
            if self.identity.state() == IdState::Requested(id) {
                self.identity.unasked();
            }
        }
        self.complete_op(Err(TxnError::Closed));
    }

    /// Java's `beginCompletingTransaction`.
    fn begin_completing(&mut self, completion: Completion) {
        self.flushing = true;
        let t = self.txn_mut();
        if completion == Completion::Commit && t.partitions.has_new() {
            t.queue.enqueue(Queued::AddPartitions);
        }
        // The EndTxn speaks the version the transaction began under; the newly finalized
        // one applies from the next transaction. Moving from TV1 to TV2 bumps the epoch
        // at the end of this one (TV1 EndTxn, then InitProducerId), as Java's
        // `beginCompletingTransaction` does after `maybeUpdateTransactionV2Enabled`.
        if t.version.sample_next() {
            t.bump_required = true;
        }
        // A required bump is queued once the transaction ends (`reset_transaction`).
        t.queue.enqueue(Queued::EndTxn(completion));
    }

    /// Called from `send` for a transactional producer: the partition joins the
    /// transaction (TV2 at once; TV1 through the next AddPartitionsToTxn).
    pub(crate) fn txn_add_partition(&mut self, p: u32) -> Result<(), crate::error::SendError> {
        let Some(t) = self.txn.as_mut() else {
            return Ok(());
        };
        if t.state != S::InTransaction {
            return Err(crate::error::SendError::NotInTransaction);
        }
        if t.version.is_v2() {
            t.partitions.join_with_produce(p);
            t.started = true;
        } else {
            t.partitions.join(p);
        }
        Ok(())
    }

    /// Java's `isSendToPartitionAllowed`, the transactional drain gate.
    pub(crate) fn txn_allows_drain(&self, p: u32) -> bool {
        self.txn
            .as_ref()
            .is_none_or(|t| t.state != S::FatalError && t.partitions.is_added(p))
    }

    /// The transactional step of `poll_request`: a request to send, nothing, or a hold on
    /// produce data this round (a transactional request is outstanding).
    pub(crate) fn poll_transactional(&mut self, now: Timestamp) -> TxnStep {
        if self.txn.is_none() {
            return TxnStep::Nothing;
        }
        self.maybe_abort_on_close();
        let t = self.txn.as_ref().expect("checked");
        if t.shutdown == Shutdown::Forced {
            return TxnStep::Nothing;
        }
        match t.state {
            S::AbortableError | S::AbortingTransaction => self.fail_unsent_batches(),
            S::FatalError => return TxnStep::Nothing,
            _ => {}
        }
        let t = self.txn.as_mut().expect("checked");
        let adding = matches!(t.state, S::InTransaction | S::CommittingTransaction);
        if adding && t.partitions.has_new() {
            t.queue.enqueue(Queued::AddPartitions);
        }
        if t.queue.in_flight().is_some() {
            return TxnStep::HoldProduce; // No produce data while one is out (Java's Sender.runOnce)
        }
        if t.queue.waits_at(now) {
            return TxnStep::Nothing;
        }
        let Some(next) = t.queue.next() else {
            return TxnStep::Nothing;
        };
        if t.state == S::AbortableError && !matches!(next, Queued::FindCoordinator(_)) {
            // Java's `maybeTerminateRequestWithError`: in an error state only lookups go
            // out. The transition dropped what was queued (`keep_lookups_only`); this
            // drops a request queued again since, e.g. one that was on the wire then
            // and came back NOT_COORDINATOR or with its connection lost. Java looked the
            // coordinator up when it queued that request again (`lookupCoordinator`), and
            // the lookup still goes out: the core asks for it here, as it would have
            // before sending the request.
            let q = t.queue.take_next().expect("checked");
            if let Some(kind) = q.coordinator() {
                let asked = t
                    .queue
                    .any_waiting_or_sent(|w| matches!(w, Queued::FindCoordinator(k) if *k == kind));
                if t.coordinators.get(kind).is_none() && !asked {
                    t.queue.push_back(Queued::FindCoordinator(kind));
                }
            }
            return self.poll_transactional(now);
        }
        if matches!(next, Queued::EndTxn(_)) && self.acc.unreported_records() > 0 {
            return TxnStep::Nothing; // EndTxn waits for every batch's outcome
        }
        let t = self.txn.as_mut().expect("checked");
        let q = t.queue.take_next().expect("checked");
        // A request that needs a coordinator we do not know goes after a FindCoordinator.
        if let Some(kind) = q.coordinator() {
            if t.coordinators.get(kind).is_none() {
                t.queue.push_back(q);
                t.queue.push_back(Queued::FindCoordinator(kind));
                let q = t.queue.take_next().expect("just pushed");
                return TxnStep::Send(self.emit_txn(q));
            }
        }
        if let Queued::EndTxn(_) = q {
            if !t.started {
                // Nothing was added: there is nothing to end (KAFKA-18401).
                t.reset_transaction();
                if t.state == S::Ready {
                    self.complete_op(Ok(()));
                }
                return self.poll_transactional(now);
            }
        }
        if let Queued::AddPartitions = q {
            if t.partitions.nothing_to_ask() {
                return self.poll_transactional(now);
            }
        }
        TxnStep::Send(self.emit_txn(q))
    }

    fn emit_txn(&mut self, q: Queued) -> Request {
        let id = self.next_request_id();
        let producer = self.identity.id();
        let t = self.txn.as_mut().expect("transactional");
        let request = match &q {
            Queued::FindCoordinator(key_type) => {
                let key = match key_type {
                    CoordinatorType::Transaction => t.id.clone(),
                    CoordinatorType::Group => t
                        .group
                        .as_ref()
                        .map(|g| g.group_id.clone())
                        .unwrap_or_default(),
                };
                Request::FindCoordinator(FindCoordinatorRequest {
                    id,
                    key_type: *key_type,
                    key,
                })
            }
            Queued::InitProducerId(asked) => Request::InitProducerId(InitProducerIdRequest {
                id,
                node: t.coordinators.transaction(),
                transactional_id: Some(t.id.clone()),
                transaction_timeout: t.timeout,
                current: if *asked == IdRequest::Bump {
                    producer
                } else {
                    ProducerIdAndEpoch::NONE
                },
            }),
            Queued::AddPartitions => {
                // Pending ones are those of an earlier request that got no answer.
                let asked = t.partitions.ask();
                Request::AddPartitionsToTxn(AddPartitionsToTxnRequest {
                    id,
                    node: t.coordinators.transaction().expect("checked"),
                    transactional_id: t.id.clone(),
                    producer,
                    partitions: asked.iter().map(|&p| self.acc[p].tp.clone()).collect(),
                })
            }
            Queued::AddOffsets => Request::AddOffsetsToTxn(AddOffsetsToTxnRequest {
                id,
                node: t.coordinators.transaction().expect("checked"),
                transactional_id: t.id.clone(),
                producer,
                group_id: t
                    .group
                    .as_ref()
                    .map(|g| g.group_id.clone())
                    .unwrap_or_default(),
            }),
            Queued::TxnOffsetCommit => Request::TxnOffsetCommit(TxnOffsetCommitRequest {
                id,
                node: t.coordinators.group().expect("checked"),
                transactional_id: t.id.clone(),
                producer,
                group: t.group.clone().expect("offsets have a group"),
                offsets: t.pending_offsets.clone(),
                transaction_v2: t.version.is_v2(),
            }),
            Queued::EndTxn(completion) => Request::EndTxn(EndTxnRequest {
                id,
                node: t.coordinators.transaction().expect("checked"),
                transactional_id: t.id.clone(),
                producer,
                commit: *completion == Completion::Commit,
                transaction_v2: t.version.is_v2(),
            }),
        };
        t.queue.sent(id, q);
        self.requests.push(id, OutstandingKind::Transactional);
        if matches!(request, Request::InitProducerId(_)) {
            self.identity.requested(id);
        }
        request
    }

    /// Completes the pending application operation, if any.
    pub(crate) fn complete_op(&mut self, result: Result<(), TxnError>) {
        if let Some(op) = self.txn.as_mut().and_then(|t| t.op.take()) {
            self.events
                .push_back(Event::TransactionCompleted { op, result });
        }
    }

    /// Java's `transitionToAbortableError`: the transaction can only be aborted now.
    /// While an abort is already running the error changes the state nothing, but with
    /// TV1 it makes the abort bump the epoch (a departure from Java, which skips the
    /// bump while completing): a batch of the aborted transaction that failed may have
    /// an attempt still in the network, which could land after the EndTxn(ABORT) marker
    /// under the same epoch and join the next transaction on that partition (KIP-890
    /// verification passes while the partition is in an ongoing transaction). Only a new
    /// epoch makes the coordinator's verification and the leader refuse it (KIP-360).
    pub(crate) fn txn_abortable(&mut self, error: KafkaError) {
        let Some(t) = self.txn.as_mut() else { return };
        if t.state == S::AbortingTransaction && !t.version.is_v2() {
            t.bump_required = true;
        }
        if matches!(
            t.state,
            S::AbortingTransaction | S::FatalError | S::AbortableError
        ) {
            return;
        }
        if t.state == S::Initializing || (!t.version.is_v2() && !t.is_completing()) {
            // TV1 coordinators bump the epoch on request after the abort (KIP-360). A
            // refused bump (or init) stays required: the next abort asks again.
            t.bump_required = true;
        }
        if t.state == S::CommittingTransaction {
            t.bump_required = !t.version.is_v2();
        }
        t.state = S::AbortableError;
        t.bump_ends = BumpEnds::Nothing;
        t.last_error = Some(error);
        t.queue.keep_lookups_only();
        // Whatever operation is pending ends now, with the error: an init, offsets, a
        // commit, or an abort whose epoch bump was refused (TV1; the next abort bumps
        // again). Java's `TxnRequestHandler.abortableError` fails the pending result.
        self.complete_op(Err(TxnError::Abortable(error)));
    }

    /// Java's `transitionToFatalError` for the transactional part.
    pub(crate) fn txn_fatal(&mut self, error: KafkaError) {
        let Some(t) = self.txn.as_mut() else { return };
        t.state = S::FatalError;
        t.bump_ends = BumpEnds::Nothing;
        t.last_error = Some(error);
        t.queue.clear();
        let result = if matches!(
            error,
            KafkaError::ProducerFenced | KafkaError::InvalidProducerEpoch
        ) {
            TxnError::ProducerFenced
        } else {
            TxnError::Fatal(error)
        };
        self.complete_op(Err(result));
    }

    /// In an abortable error or an abort, batches never sent fail (Java's
    /// `abortUndrainedBatches`); batches with a sequence finish, so the broker's state
    /// stays known.
    fn fail_unsent_batches(&mut self) {
        let aborting = self
            .txn
            .as_ref()
            .is_some_and(|t| t.state == S::AbortingTransaction);
        let cause = self.txn.as_ref().and_then(|t| t.last_error);
        for p in self.acc.ids() {
            self.close_open(p);
            let part = &mut self.acc[p];
            let tp = part.tp.clone();
            let unsent: Vec<BatchId> = part
                .queue
                .iter()
                .copied()
                .filter(|&id| self.batches.get(id).is_some_and(|b| b.stamp.is_none()))
                .collect();
            if unsent.is_empty() {
                continue;
            }
            part.queue.retain(|id| !unsent.contains(id));
            for id in unsent {
                let error = match (aborting, cause) {
                    (false, Some(e)) => DeliveryError::Broker {
                        partition: tp.clone(),
                        error: e,
                        message: None,
                    },
                    _ => DeliveryError::Aborted,
                };
                self.report(id, Err(error));
            }
        }
    }
}
