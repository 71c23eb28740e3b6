//! Answers to the transactional requests, rule for rule Java's per-RPC handlers
//! (`TransactionManager`'s `InitProducerIdHandler`, `AddPartitionsToTxnHandler`,
//! `FindCoordinatorHandler`, `AddOffsetsToTxnHandler`, `TxnOffsetCommitHandler`,
//! `EndTxnHandler`).

use alloc::vec::Vec;

use crate::error::{InputError, KafkaError};
use crate::io::{Event, RequestFailure};
use crate::producer::Producer;
use crate::txn::{
    Answer, BumpEnds, CoordinatorType, IdRequest, Queued, TransactionState as S, TxnError, TxnOp,
};
use crate::types::{NodeId, ProducerIdAndEpoch, RequestId, Timestamp, TopicPartition};

/// What an answer asks the state machine to do next.
enum Next {
    /// Done with this request.
    Done,
    /// Send it again after a backoff.
    Retry,
    /// Look the coordinator up again, then send it again.
    Relookup(CoordinatorType),
    /// The transaction must be aborted.
    Abortable(KafkaError),
    /// The producer is done for.
    Fatal(KafkaError),
}

/// The classification most transactional answers share (the handlers of
/// `TransactionManager`): NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look the
/// coordinator up again; INVALID_PRODUCER_EPOCH from a coordinator is PRODUCER_FENCED
/// (KIP-588); UNKNOWN_PRODUCER_ID and TRANSACTION_ABORTABLE (KIP-890) abort the
/// transaction; other retriable errors retry; the rest are fatal.
fn common(error: KafkaError, coordinator: CoordinatorType) -> Next {
    match error {
        KafkaError::None => Next::Done,
        KafkaError::NotCoordinator | KafkaError::CoordinatorNotAvailable => {
            Next::Relookup(coordinator)
        }
        KafkaError::InvalidProducerEpoch | KafkaError::ProducerFenced => {
            Next::Fatal(KafkaError::ProducerFenced)
        }
        KafkaError::TransactionalIdAuthorizationFailed
        | KafkaError::InvalidTxnState
        | KafkaError::InvalidProducerIdMapping => Next::Fatal(error),
        KafkaError::UnknownProducerId | KafkaError::TransactionAbortable => Next::Abortable(error),
        e if e.is_retriable() => Next::Retry,
        e => Next::Fatal(e),
    }
}

/// One partition's error in a TxnOffsetCommit answer, as Java's
/// `TxnOffsetCommitHandler.handleResponse` (Kafka trunk) takes it: `Done` for NONE,
/// `Relookup` for COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and REQUEST_TIMED_OUT, `Retry`
/// for other retriable codes; GROUP_AUTHORIZATION_FAILED, FENCED_INSTANCE_ID,
/// TRANSACTION_ABORTABLE and the group-metadata mismatches UNKNOWN_MEMBER_ID,
/// ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH (the last two by
/// KIP-1319, KAFKA-20444) are abortable; INVALID_PRODUCER_EPOCH is PRODUCER_FENCED; the
/// rest is fatal. Pinned by `txn_offset_commit_errors_by_class` (`tests/txn_offsets_test.rs`).
fn txn_offset_commit_error(error: KafkaError) -> Next {
    match error {
        KafkaError::None => Next::Done,
        KafkaError::CoordinatorNotAvailable
        | KafkaError::NotCoordinator
        | KafkaError::RequestTimedOut => Next::Relookup(CoordinatorType::Group),
        e if e.is_retriable() => Next::Retry,
        KafkaError::GroupAuthorizationFailed
        | KafkaError::FencedInstanceId
        | KafkaError::TransactionAbortable
        | KafkaError::UnknownMemberId
        | KafkaError::IllegalGeneration
        | KafkaError::GroupIdNotFound
        | KafkaError::StaleMemberEpoch => Next::Abortable(error),
        KafkaError::InvalidProducerEpoch | KafkaError::ProducerFenced => {
            Next::Fatal(KafkaError::ProducerFenced)
        }
        e => Next::Fatal(e),
    }
}

impl Producer {
    /// Takes the outstanding transactional request `id` off the books, if `answer` is
    /// the input that answers it. Everything is checked before anything changes, so an
    /// [`InputError`] leaves the request outstanding (the right answer is still
    /// accepted, and without one the request times out like any other).
    fn take_txn(
        &mut self,
        id: RequestId,
        answer: Answer,
        now: Timestamp,
    ) -> Result<Queued, InputError> {
        self.observe(now);
        let in_flight = self.txn.as_ref().and_then(|t| t.queue.in_flight());
        match in_flight {
            Some((r, q)) if *r == id => {
                if q.answered_by() != answer {
                    return Err(InputError::Mismatch {
                        request: id,
                        reason: answer.mismatch(),
                    });
                }
            }
            _ => return Err(InputError::UnknownRequest(id)),
        }
        self.take_outstanding(id);
        let (_, q) = self
            .txn
            .as_mut()
            .expect("checked")
            .queue
            .take_in_flight()
            .expect("checked");
        Ok(q)
    }

    fn apply(&mut self, q: Queued, next: Next) {
        let t = self.txn.as_mut().expect("transactional");
        match next {
            Next::Done => t.queue.succeeded(),
            Next::Retry => t.queue.retry_later(q, &mut self.backoff, self.now),
            Next::Relookup(kind) => {
                t.coordinators.forget(kind);
                // Back off as for a retry: a coordinator still loading answers
                // NOT_COORDINATOR at once, and an immediate lookup would spin.
                t.queue.retry_later(q, &mut self.backoff, self.now);
            }
            Next::Abortable(e) => self.txn_abortable(e),
            Next::Fatal(e) => self.enter_fatal(e),
        }
    }

    /// Feeds the answer to a [`Request::FindCoordinator`](crate::Request::FindCoordinator).
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding.
    pub fn handle_find_coordinator(
        &mut self,
        request: RequestId,
        result: Result<NodeId, KafkaError>,
        now: Timestamp,
    ) -> Result<(), InputError> {
        let q = self.take_txn(request, Answer::FindCoordinator, now)?;
        let kind = match q {
            Queued::FindCoordinator(kind) => kind,
            // take_txn admits only a FindCoordinator here.
            _ => CoordinatorType::Transaction,
        };
        let next = match result {
            Ok(node) => {
                let t = self.txn.as_mut().expect("transactional");
                t.coordinators.found(kind, node);
                Next::Done
            }
            Err(KafkaError::GroupAuthorizationFailed | KafkaError::TransactionAbortable)
                if self
                    .txn
                    .as_ref()
                    .is_some_and(|t| t.bump_ends == BumpEnds::FailedAbort) =>
            {
                // Java is still aborting here: `FindCoordinatorHandler.abortableError`
                // fails only the lookup's own result and `transitionToAbortableError`
                // skips. The bump still needs a coordinator, so it is looked up again.
                Next::Done
            }
            Err(KafkaError::GroupAuthorizationFailed) => {
                Next::Abortable(KafkaError::GroupAuthorizationFailed)
            }
            Err(KafkaError::TransactionAbortable) => {
                Next::Abortable(KafkaError::TransactionAbortable)
            }
            Err(e) if e.is_retriable() => Next::Retry,
            Err(e) => Next::Fatal(e),
        };
        self.apply(q, next);
        Ok(())
    }

    /// The transactional InitProducerId answer (called from `handle_producer_id`).
    pub(crate) fn txn_producer_id(
        &mut self,
        request: RequestId,
        result: Result<ProducerIdAndEpoch, KafkaError>,
        now: Timestamp,
    ) -> Result<(), InputError> {
        let q = self.take_txn(request, Answer::InitProducerId, now)?;
        // take_txn admits only an InitProducerId here.
        let bump = q == Queued::InitProducerId(IdRequest::Bump);
        match result {
            Ok(id) if id.is_valid() && id.epoch.0 >= 0 => {
                if !self.transition_allowed(S::Ready) {
                    return Ok(());
                }
                self.identity.ready(id);
                self.reset_all_sequences();
                let t = self.txn.as_mut().expect("transactional");
                if !bump {
                    t.version.latch_at_init();
                }
                t.bump_required = false;
                t.bump_ends = BumpEnds::Nothing;
                t.queue.succeeded();
                t.state = S::Ready;
                t.last_error = None;
                self.events.push_back(Event::ProducerIdChanged { id });
                self.complete_op(Ok(()));
            }
            Ok(_) => self.apply(q, Next::Retry),
            Err(
                e @ (KafkaError::TransactionalIdAuthorizationFailed
                | KafkaError::ClusterAuthorizationFailed),
            ) => {
                // KAFKA-13668: init_transactions may be called again once authorized.
                let t = self.txn.as_mut().expect("transactional");
                t.state = S::Uninitialized;
                t.bump_ends = BumpEnds::Nothing;
                t.queue.clear();
                self.identity.unasked();
                self.complete_op(Err(TxnError::Unauthorized(e)));
            }
            Err(e) => {
                self.identity.unasked();
                let next = match e {
                    // Java's `InitProducerIdHandler`: only TRANSACTION_ABORTABLE is
                    // abortable; an unexpected error is fatal.
                    KafkaError::UnknownProducerId => Next::Fatal(e),
                    e => common(e, CoordinatorType::Transaction),
                };
                self.apply(q, next);
            }
        }
        Ok(())
    }

    /// Feeds the answer to a [`Request::AddPartitionsToTxn`](crate::Request::AddPartitionsToTxn):
    /// one error per partition.
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding.
    pub fn handle_add_partitions(
        &mut self,
        request: RequestId,
        results: &[(TopicPartition, KafkaError)],
        now: Timestamp,
    ) -> Result<(), InputError> {
        let q = self.take_txn(request, Answer::AddPartitions, now)?;
        // Only partitions the answer lists are settled. One we asked for and the answer
        // omits was not added (Java's `AddPartitionsToTxnHandler` moves only the
        // answered partitions into the transaction); its batches must not drain, so the
        // transaction becomes abortable rather than waiting for a partition that never
        // joins it.
        let answered: Vec<u32> = results
            .iter()
            .filter_map(|(tp, _)| self.acc.index_of(tp))
            .collect();
        let omitted = self
            .txn
            .as_ref()
            .is_some_and(|t| t.partitions.pending_outside(&answered));
        // Every listed partition added, some omitted.
        let only_omission = omitted && results.iter().all(|(_, e)| *e == KafkaError::None);
        // Java's `AddPartitionsToTxnHandler.handleResponse` acts at once on the first
        // partition error that asks for a retry or a lookup or ends the transaction;
        // TOPIC_AUTHORIZATION_FAILED, OPERATION_NOT_ATTEMPTED and errors it does not
        // expect only mark the answer failed and let it look further. So one of the
        // former wins over the latter wherever the answer lists it.
        let acted_at_once = |e: KafkaError| {
            e.is_retriable()
                || matches!(
                    e,
                    KafkaError::InvalidProducerEpoch
                        | KafkaError::ProducerFenced
                        | KafkaError::TransactionalIdAuthorizationFailed
                        | KafkaError::InvalidTxnState
                        | KafkaError::UnknownProducerId
                        | KafkaError::InvalidProducerIdMapping
                        | KafkaError::TransactionAbortable
                )
        };
        let errors = || results.iter().map(|(_, e)| *e);
        let worst = errors()
            .find(|e| acted_at_once(*e))
            .or_else(|| errors().find(|e| *e == KafkaError::TopicAuthorizationFailed))
            .or_else(|| {
                errors().find(|e| *e != KafkaError::None && *e != KafkaError::OperationNotAttempted)
            })
            .unwrap_or(if omitted {
                KafkaError::UnknownServerError
            } else if results
                .iter()
                .any(|(_, e)| *e == KafkaError::OperationNotAttempted)
            {
                // Not added, with no other error named: still a partition error (Java's
                // `AddPartitionsToTxnHandler`), abortable.
                KafkaError::OperationNotAttempted
            } else {
                KafkaError::None
            });
        let next = match worst {
            KafkaError::ConcurrentTransactions => Next::Retry,
            KafkaError::TopicAuthorizationFailed => Next::Abortable(worst),
            e => match common(e, CoordinatorType::Transaction) {
                Next::Fatal(f)
                    if !matches!(
                        f,
                        KafkaError::ProducerFenced
                            | KafkaError::TransactionalIdAuthorizationFailed
                            | KafkaError::InvalidTxnState
                            | KafkaError::InvalidProducerIdMapping
                    ) =>
                {
                    Next::Abortable(f)
                }
                n => n,
            },
        };
        let t = self.txn.as_mut().expect("transactional");
        match next {
            Next::Done => {
                // Nothing omitted: every pending partition was answered NONE.
                t.partitions.all_pending_added();
                t.started = true;
                self.apply(q, Next::Done);
                // The batches of these partitions may drain now.
                for p in self.acc.ids() {
                    if self.acc[p].has_queued() {
                        self.list(p);
                    }
                }
            }
            // The same partitions stay pending and are asked for again, even if an
            // abort starts meanwhile: the coordinator may hold them, and then the
            // transaction must end with EndTxn.
            Next::Retry | Next::Relookup(_) => self.apply(q, next),
            other => {
                // With only omissions, every listed partition was added: the coordinator
                // holds them, so the transaction started and the abort must end it with
                // EndTxn.
                let added = only_omission.then_some(answered.as_slice());
                t.started |= t.partitions.settle_pending(added);
                self.apply(q, other);
            }
        }
        Ok(())
    }

    /// Feeds the answer to a [`Request::AddOffsetsToTxn`](crate::Request::AddOffsetsToTxn).
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding.
    pub fn handle_add_offsets(
        &mut self,
        request: RequestId,
        error: KafkaError,
        now: Timestamp,
    ) -> Result<(), InputError> {
        let q = self.take_txn(request, Answer::AddOffsets, now)?;
        let next = match error {
            KafkaError::GroupAuthorizationFailed => Next::Abortable(error),
            e => common(e, CoordinatorType::Transaction),
        };
        if matches!(next, Next::Done) {
            let t = self.txn.as_mut().expect("transactional");
            t.started = true;
            t.queue.enqueue(Queued::TxnOffsetCommit);
        }
        self.apply(q, next);
        Ok(())
    }

    /// Feeds the answer to a [`Request::TxnOffsetCommit`](crate::Request::TxnOffsetCommit):
    /// one error per partition. Partitions answered with a retriable error are sent again;
    /// the first abortable or fatal error in the answer decides (Java's
    /// `TxnOffsetCommitHandler.handleResponse` stops its walk there).
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding.
    pub fn handle_txn_offset_commit(
        &mut self,
        request: RequestId,
        results: &[(TopicPartition, KafkaError)],
        now: Timestamp,
    ) -> Result<(), InputError> {
        let q = self.take_txn(request, Answer::TxnOffsetCommit, now)?;
        let mut next = Next::Done;
        let mut relookup = false;
        let t = self.txn.as_mut().expect("transactional");
        for (tp, e) in results {
            match txn_offset_commit_error(*e) {
                Next::Done => t.pending_offsets.retain(|o| &o.partition != tp),
                Next::Relookup(_) => relookup = true,
                Next::Retry => {}
                ends @ (Next::Abortable(_) | Next::Fatal(_)) => {
                    next = ends;
                    break;
                }
            }
        }
        match next {
            Next::Done if t.pending_offsets.is_empty() => {
                self.apply(q, Next::Done);
                if self
                    .txn
                    .as_ref()
                    .is_some_and(|t| t.op == Some(TxnOp::SendOffsets))
                {
                    self.complete_op(Ok(()));
                }
            }
            Next::Done if relookup => self.apply(q, Next::Relookup(CoordinatorType::Group)),
            Next::Done => self.apply(q, Next::Retry),
            other => {
                let t = self.txn.as_mut().expect("transactional");
                t.pending_offsets.clear();
                if relookup {
                    // Java's `lookupCoordinator` ran for the lookup error met before the
                    // deciding one and forgot the node; the next TxnOffsetCommit looks
                    // the coordinator up before it goes.
                    t.coordinators.forget(CoordinatorType::Group);
                }
                self.apply(q, other);
            }
        }
        Ok(())
    }

    /// Feeds the answer to a [`Request::EndTxn`](crate::Request::EndTxn). With
    /// transaction version 2 the answer carries the bumped producer id and epoch.
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding.
    pub fn handle_end_txn(
        &mut self,
        request: RequestId,
        result: Result<Option<ProducerIdAndEpoch>, KafkaError>,
        now: Timestamp,
    ) -> Result<(), InputError> {
        let q = self.take_txn(request, Answer::EndTxn, now)?;
        let aborting = self
            .txn
            .as_ref()
            .is_some_and(|t| t.state == S::AbortingTransaction);
        match result {
            Ok(new_id) => {
                let bumped = new_id.is_some_and(|id| id.is_valid() && id.epoch.0 >= 0);
                if bumped {
                    // TV2: the coordinator bumped the epoch already.
                    self.txn.as_mut().expect("transactional").bump_required = false;
                }
                let target = if self.txn.as_ref().is_some_and(|t| t.bump_required) {
                    S::Initializing
                } else {
                    S::Ready
                };
                if !self.transition_allowed(target) {
                    return Ok(());
                }
                if let Some(id) = new_id.filter(|id| id.is_valid() && id.epoch.0 >= 0) {
                    // TV2: the coordinator bumped the epoch; every partition restarts at 0.
                    self.identity.bumped(id);
                    self.reset_all_sequences();
                    self.events.push_back(Event::ProducerIdChanged { id });
                }
                let t = self.txn.as_mut().expect("transactional");
                t.reset_transaction();
                t.queue.succeeded();
                self.flushing = false;
                // With a TV1 bump still queued, the operation completes after it.
                let bump_queued = t.queue.contains(&Queued::InitProducerId(IdRequest::Bump));
                if !bump_queued {
                    self.complete_op(Ok(()));
                }
            }
            Err(KafkaError::UnknownProducerId)
                if aborting
                    && self
                        .txn
                        .as_ref()
                        .is_some_and(|t| t.bump_required && !t.version.is_v2()) =>
            {
                // TV1, the abort owes an epoch bump: Java's `EndTxnHandler` takes
                // UNKNOWN_PRODUCER_ID as abortable when the coordinator can bump epochs
                // (`abortableErrorIfPossible`), which changes nothing while aborting
                // (`transitionToAbortableError` skips it), and the abort's result is the
                // bump's (`beginCompletingTransaction` returns `initializeTransactions`
                // when a bump is required). So the abort ends with the bump: the
                // InitProducerId with the current id and epoch (KIP-360) makes the
                // coordinator end whatever transaction it still holds for the id, and
                // the new epoch fences every attempt of this one.
                if !self.transition_allowed(S::Initializing) {
                    return Ok(());
                }
                let t = self.txn.as_mut().expect("transactional");
                t.reset_transaction();
                t.bump_ends = BumpEnds::FailedAbort;
                t.queue.succeeded();
                self.flushing = false;
            }
            Err(e) => {
                let next = match common(e, CoordinatorType::Transaction) {
                    // The abort itself failed: nothing is left to abort with, so the
                    // producer is done (KAFKA-19250 for TRANSACTION_ABORTABLE; the same
                    // for UNKNOWN_PRODUCER_ID, which would otherwise leave the state
                    // Aborting with nothing to send).
                    Next::Abortable(e) if aborting => Next::Fatal(e),
                    n => n,
                };
                self.apply(q, next);
            }
        }
        Ok(())
    }

    /// Whether a broker answer may move the state to `target`. An answer that would make
    /// an invalid transition poisons the producer (Java's KAFKA-14831): the state machine
    /// can no longer be trusted.
    fn transition_allowed(&mut self, target: S) -> bool {
        let state = self.txn.as_ref().map_or(S::FatalError, |t| t.state);
        if state.can_transition_to(target) {
            return true;
        }
        self.enter_fatal(KafkaError::InvalidTxnState);
        false
    }

    /// A transactional request got no answer: look the coordinator up again and resend.
    pub(crate) fn txn_request_failed(&mut self, request: RequestId, failure: RequestFailure) {
        let Some(t) = self.txn.as_mut() else { return };
        if t.queue.in_flight().is_none_or(|(r, _)| *r != request) {
            return;
        }
        let (_, q) = t.queue.take_in_flight().expect("checked");
        if failure == RequestFailure::Disconnected
            && !t.version.is_v2()
            && matches!(q, Queued::EndTxn(_) | Queued::TxnOffsetCommit)
        {
            // TV1: the lost attempt may still be applied late (a broker processes a
            // request read before its connection closed). Under the same epoch a late
            // EndTxn would end the *next* transaction halfway, and a late
            // TxnOffsetCommit would put this transaction's offsets in it. A departure
            // from Java: the transaction ends with a KIP-360 epoch bump, which fences
            // both (TV2 bumps on every EndTxn for the same reason, KIP-890).
            t.bump_required = true;
        }
        if matches!(q, Queued::InitProducerId(_)) {
            self.identity.unasked();
        }
        let next = match q.coordinator() {
            Some(kind) => Next::Relookup(kind),
            None => Next::Retry,
        };
        // An AddPartitionsToTxn without an answer may have been applied: its partitions
        // stay pending and are asked for again (the answer settles whether the
        // transaction started).
        self.apply(q, next);
    }

    /// After a bump (EndTxn v5, or InitProducerId after an abort): every partition's
    /// sequences restart at 0 under the new identity (Java's `resetSequenceNumbers`).
    /// Partitions restart lazily, once nothing of theirs is in flight.
    pub(crate) fn reset_all_sequences(&mut self) {
        for part in self.acc.iter_mut() {
            if part.seq.inflight().is_empty() {
                part.seq.restart_at_zero(self.identity.id());
            }
        }
    }
}
