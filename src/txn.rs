//! Transactions: the transactional state machine (Java's `TransactionManager` for a
//! producer with a `transactional.id`), the application's operations, and the queue of
//! transactional requests. Answers are handled in `txn_complete.rs`.
//!
//! Transactions layer on the idempotent machine without changing its sequencing rules.
//! What differs is in a few places only: a failed batch makes the transaction abortable
//! instead of bumping the epoch (the abort bumps it, KIP-360 / KIP-890), only partitions
//! added to the transaction drain, and an abort fails the batches never sent.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use crate::error::KafkaError;
use crate::txn_partitions::TxnPartitions;
use crate::txn_queue::TxnQueue;
use crate::txn_version::TxnVersion;
use crate::types::{NodeId, TopicPartition};

/// The transactional states (Java's `TransactionManager.State`, without 2PC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransactionState {
    /// `init_transactions` not called yet (or its authorization failed).
    Uninitialized,
    /// Getting a producer id (InitProducerId), or bumping the epoch after an abort.
    Initializing,
    /// Ready to begin a transaction.
    Ready,
    /// A transaction is open.
    InTransaction,
    /// Commit requested: flushing, then EndTxn(COMMIT).
    CommittingTransaction,
    /// Abort requested: unsent batches fail, sent ones finish, then EndTxn(ABORT).
    AbortingTransaction,
    /// The transaction must be aborted; only `abort_transaction` works.
    AbortableError,
    /// Nothing works any more (fenced, unauthorized, or an invalid transition).
    FatalError,
}

impl TransactionState {
    /// Java's transition table (`TransactionManager.State.isTransitionValid`).
    /// `FatalError` is reachable from anywhere.
    #[must_use]
    pub fn can_transition_to(self, target: Self) -> bool {
        use TransactionState as S;
        match target {
            S::Uninitialized => matches!(self, S::Ready | S::AbortableError | S::Initializing),
            S::Initializing => {
                matches!(
                    self,
                    S::Uninitialized | S::CommittingTransaction | S::AbortingTransaction
                )
            }
            S::Ready => {
                matches!(
                    self,
                    S::Initializing | S::CommittingTransaction | S::AbortingTransaction
                )
            }
            S::InTransaction => self == S::Ready,
            S::CommittingTransaction => self == S::InTransaction,
            S::AbortingTransaction => matches!(self, S::InTransaction | S::AbortableError),
            S::AbortableError => matches!(
                self,
                S::InTransaction | S::CommittingTransaction | S::AbortableError | S::Initializing
            ),
            S::FatalError => true,
        }
    }
}

/// An application operation that completes later, with one
/// [`Event::TransactionCompleted`](crate::Event::TransactionCompleted).
///
/// `#[non_exhaustive]`: a new operation (as KIP-939's prepare) comes with a new command,
/// and only an embedder that calls it sees its variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxnOp {
    /// [`Producer::init_transactions`](crate::Producer::init_transactions).
    InitTransactions,
    /// [`Producer::begin_transaction`](crate::Producer::begin_transaction) (completes at
    /// once: it only appears in errors, never in an event).
    BeginTransaction,
    /// [`Producer::send_offsets_to_transaction`](crate::Producer::send_offsets_to_transaction).
    SendOffsets,
    /// [`Producer::commit_transaction`](crate::Producer::commit_transaction).
    Commit,
    /// [`Producer::abort_transaction`](crate::Producer::abort_transaction).
    Abort,
}

/// Why a transactional operation was refused or failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxnError {
    /// The producer has no `transactional.id`.
    #[error("the producer has no transactional.id")]
    NotTransactional,
    /// [`ConsumerGroupMetadata`] with a generation but no member id: a consumer's
    /// metadata has both or neither (Java's `KafkaProducer.throwIfInvalidGroupMetadata`).
    /// Nothing changed.
    #[error("group metadata has generation {generation_id} but no member id")]
    InvalidGroupMetadata {
        /// The generation it has.
        generation_id: i32,
    },
    /// The operation is not valid in the current state (nothing changed).
    #[error("cannot {op:?} in state {state:?}")]
    InvalidState {
        /// The operation.
        op: TxnOp,
        /// The state it was called in.
        state: TransactionState,
    },
    /// Another operation is still pending; call that one again, or wait for its event.
    #[error("{pending:?} is still pending")]
    OperationPending {
        /// The pending operation.
        pending: TxnOp,
    },
    /// The transaction must be aborted ([`Producer::abort_transaction`](crate::Producer::abort_transaction)).
    #[error("the transaction must be aborted: {0}")]
    Abortable(KafkaError),
    /// Another producer with the same transactional id took over.
    #[error("fenced by another producer with the same transactional.id")]
    ProducerFenced,
    /// The producer can no longer be used.
    #[error("fatal transactional error: {0}")]
    Fatal(KafkaError),
    /// Not authorized for the transactional id (init_transactions may be called again).
    #[error("not authorized: {0}")]
    Unauthorized(KafkaError),
    /// [`Producer::close`](crate::Producer::close) or
    /// [`Producer::abort`](crate::Producer::abort) was called: no transactional
    /// operation is accepted any more (Java's `KafkaProducer.throwIfProducerClosed`), and
    /// an operation still pending at a forced close completes with this error.
    #[error("the producer is closed")]
    Closed,
}

/// A consumer group's identity, for [`Producer::send_offsets_to_transaction`](crate::Producer::send_offsets_to_transaction) (KIP-447).
///
/// Built with [`ConsumerGroupMetadata::new`] and the `with_*` methods, as Java's
/// `ConsumerGroupMetadata` constructors; the fields stay public to read and to set, and
/// new ones may come (the struct is `#[non_exhaustive]`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsumerGroupMetadata {
    /// The group id.
    pub group_id: String,
    /// The generation, or -1.
    pub generation_id: i32,
    /// The member id, or empty.
    pub member_id: String,
    /// The static member id, if any.
    pub group_instance_id: Option<String>,
}

impl ConsumerGroupMetadata {
    /// Group `group_id` with no generation (-1), no member id and no static member id:
    /// the broker then checks no membership (Java's `ConsumerGroupMetadata(groupId)`).
    #[must_use]
    pub fn new(group_id: impl Into<String>) -> Self {
        Self {
            group_id: group_id.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }

    /// Sets the generation and the member id (what a consumer's `groupMetadata()` has).
    #[must_use]
    pub fn with_member(mut self, generation_id: i32, member_id: impl Into<String>) -> Self {
        self.generation_id = generation_id;
        self.member_id = member_id.into();
        self
    }

    /// Sets the static member id (`group.instance.id`).
    #[must_use]
    pub fn with_group_instance_id(mut self, group_instance_id: Option<String>) -> Self {
        self.group_instance_id = group_instance_id;
        self
    }
}

/// One consumer offset to commit with the transaction.
///
/// Built with [`OffsetToCommit::new`] and the `with_*` methods; the fields stay public
/// to read and to set, and new ones may come (the struct is `#[non_exhaustive]`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OffsetToCommit {
    /// The consumed partition.
    pub partition: TopicPartition,
    /// The next offset to consume.
    pub offset: i64,
    /// The leader epoch of the consumed record, if known.
    pub leader_epoch: Option<i32>,
    /// Metadata stored with the offset.
    pub metadata: Option<String>,
}

impl OffsetToCommit {
    /// The next offset to consume from `partition`, with no leader epoch and no
    /// metadata.
    #[must_use]
    pub fn new(partition: TopicPartition, offset: i64) -> Self {
        Self {
            partition,
            offset,
            leader_epoch: None,
            metadata: None,
        }
    }

    /// Sets the leader epoch of the consumed record.
    #[must_use]
    pub fn with_leader_epoch(mut self, leader_epoch: Option<i32>) -> Self {
        self.leader_epoch = leader_epoch;
        self
    }

    /// Sets the metadata stored with the offset.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Option<String>) -> Self {
        self.metadata = metadata;
        self
    }
}

/// Which coordinator a FindCoordinator request looks for.
///
/// Exhaustive on purpose, as [`Request`](crate::Request): a driver must encode every
/// coordinator the core may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordinatorType {
    /// A consumer group's coordinator (key: the group id).
    Group,
    /// The transaction coordinator (key: the transactional id).
    Transaction,
}

/// The coordinators the transactional requests go to, as FindCoordinator found them.
#[derive(Debug, Default)]
pub(crate) struct Coordinators {
    /// The transaction coordinator (of the transactional id).
    transaction: Option<NodeId>,
    /// The consumer group's coordinator (for TxnOffsetCommit).
    group: Option<NodeId>,
}

impl Coordinators {
    /// The coordinator of `kind`, if known.
    pub(crate) fn get(&self, kind: CoordinatorType) -> Option<NodeId> {
        match kind {
            CoordinatorType::Transaction => self.transaction,
            CoordinatorType::Group => self.group,
        }
    }

    /// The transaction coordinator, if known.
    pub(crate) fn transaction(&self) -> Option<NodeId> {
        self.transaction
    }

    /// The group coordinator, if known.
    pub(crate) fn group(&self) -> Option<NodeId> {
        self.group
    }

    /// FindCoordinator answered: the coordinator of `kind` is `node`.
    pub(crate) fn found(&mut self, kind: CoordinatorType, node: NodeId) {
        *self.slot(kind) = Some(node);
    }

    /// The coordinator of `kind` said it is not (or no longer) the one: look it up again.
    pub(crate) fn forget(&mut self, kind: CoordinatorType) {
        *self.slot(kind) = None;
    }

    fn slot(&mut self, kind: CoordinatorType) -> &mut Option<NodeId> {
        match kind {
            CoordinatorType::Transaction => &mut self.transaction,
            CoordinatorType::Group => &mut self.group,
        }
    }
}

/// A transactional request waiting to be sent, in Java's priority order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Queued {
    FindCoordinator(CoordinatorType),
    /// An InitProducerId: for a first id, or the KIP-360 epoch bump after an abort
    /// (which sorts after EndTxn).
    InitProducerId(IdRequest),
    AddPartitions,
    AddOffsets,
    TxnOffsetCommit,
    EndTxn(Completion),
}

/// What a transactional InitProducerId asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdRequest {
    /// A producer id (`init_transactions`): `current` is not sent.
    Fresh,
    /// An epoch bump of the current id (KIP-360, after an abort).
    Bump,
}

/// How a transaction ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Completion {
    /// EndTxn(COMMIT).
    Commit,
    /// EndTxn(ABORT).
    Abort,
}

/// Which `handle_*` input answers a transactional request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    FindCoordinator,
    InitProducerId,
    AddPartitions,
    AddOffsets,
    TxnOffsetCommit,
    EndTxn,
}

impl Answer {
    /// What a mismatched answer is refused with.
    pub(crate) const fn mismatch(self) -> &'static str {
        match self {
            Self::FindCoordinator => "not a FindCoordinator request",
            Self::InitProducerId => "not an InitProducerId request",
            Self::AddPartitions => "not an AddPartitionsToTxn request",
            Self::AddOffsets => "not an AddOffsetsToTxn request",
            Self::TxnOffsetCommit => "not a TxnOffsetCommit request",
            Self::EndTxn => "not an EndTxn request",
        }
    }
}

impl Queued {
    /// The input that answers this request.
    pub(crate) const fn answered_by(&self) -> Answer {
        match self {
            Self::FindCoordinator(_) => Answer::FindCoordinator,
            Self::InitProducerId(_) => Answer::InitProducerId,
            Self::AddPartitions => Answer::AddPartitions,
            Self::AddOffsets => Answer::AddOffsets,
            Self::TxnOffsetCommit => Answer::TxnOffsetCommit,
            Self::EndTxn(_) => Answer::EndTxn,
        }
    }

    pub(crate) fn priority(&self) -> u8 {
        match self {
            Self::FindCoordinator(_) => 0,
            Self::InitProducerId(IdRequest::Fresh) => 1,
            Self::AddPartitions | Self::AddOffsets | Self::TxnOffsetCommit => 2,
            Self::EndTxn(_) => 3,
            Self::InitProducerId(IdRequest::Bump) => 4,
        }
    }

    /// The coordinator the request goes to, if it needs one.
    pub(crate) fn coordinator(&self) -> Option<CoordinatorType> {
        match self {
            Self::FindCoordinator(_) => None,
            Self::TxnOffsetCommit => Some(CoordinatorType::Group),
            _ => Some(CoordinatorType::Transaction),
        }
    }
}

/// Whether the producer was closed by force ([`Producer::abort`](crate::Producer::abort)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shutdown {
    /// Open, or closing gracefully (an open transaction is aborted first).
    Running,
    /// Forced close: nothing transactional is sent any more.
    Forced,
}

/// The transactional part of a producer. Present iff `transactional.id` is set.
#[derive(Debug)]
pub(crate) struct Txn {
    pub(crate) id: String,
    pub(crate) timeout: Duration,
    pub(crate) state: TransactionState,
    /// The cause of `AbortableError` / `FatalError`.
    pub(crate) last_error: Option<KafkaError>,
    /// The coordinators found, by kind.
    pub(crate) coordinators: Coordinators,
    /// The transaction version (KIP-890): finalized, in use, sampled for the next.
    pub(crate) version: TxnVersion,
    /// The abort must be followed by an InitProducerId that bumps the epoch (TV1).
    pub(crate) bump_required: bool,
    /// What the epoch bump of `Initializing` ends. Invariant: `FailedAbort` only in
    /// `Initializing` (every way out of it resets this).
    pub(crate) bump_ends: BumpEnds,
    /// Something was added to the transaction (a partition or offsets): EndTxn is sent.
    pub(crate) started: bool,
    /// The transaction's partitions, by how far each has joined it.
    pub(crate) partitions: TxnPartitions,
    pub(crate) group: Option<ConsumerGroupMetadata>,
    pub(crate) pending_offsets: Vec<OffsetToCommit>,
    /// The transactional requests: waiting, on the wire, the head's backoff.
    pub(crate) queue: TxnQueue,
    /// The application operation waiting for its completion event.
    pub(crate) op: Option<TxnOp>,
    pub(crate) shutdown: Shutdown,
}

/// What the TV1 epoch bump queued in `Initializing` ends, where it changes how an answer
/// is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BumpEnds {
    /// No failed abort: an init, or the bump after an abort that ended (or none queued).
    Nothing,
    /// An abort whose EndTxn was answered UNKNOWN_PRODUCER_ID. Java's state is still
    /// ABORTING_TRANSACTION until the bump completes (nothing on that path runs
    /// `completeTransaction`), so an abortable answer to a coordinator lookup changes
    /// nothing there (`transitionToAbortableError` skips it while aborting).
    FailedAbort,
}

impl Txn {
    pub(crate) fn new(id: String, timeout: Duration) -> Self {
        Self {
            id,
            timeout,
            state: TransactionState::Uninitialized,
            last_error: None,
            coordinators: Coordinators::default(),
            version: TxnVersion::default(),
            bump_required: false,
            bump_ends: BumpEnds::Nothing,
            started: false,
            partitions: TxnPartitions::default(),
            group: None,
            pending_offsets: Vec::new(),
            queue: TxnQueue::new(),
            op: None,
            shutdown: Shutdown::Running,
        }
    }

    /// Clears what belongs to one transaction (Java's `resetTransactionState`). With a
    /// bump required the state is `Initializing` and the bump is queued here, so that
    /// `Initializing` never stands without the request that ends it.
    pub(crate) fn reset_transaction(&mut self) {
        self.bump_ends = BumpEnds::Nothing;
        if self.bump_required {
            self.state = TransactionState::Initializing;
            self.queue.enqueue(Queued::InitProducerId(IdRequest::Bump));
        } else {
            self.state = TransactionState::Ready;
        }
        self.last_error = None;
        self.version.apply_next();
        self.started = false;
        self.partitions.clear();
        self.group = None;
        self.pending_offsets.clear();
    }

    pub(crate) fn is_completing(&self) -> bool {
        matches!(
            self.state,
            TransactionState::CommittingTransaction | TransactionState::AbortingTransaction
        )
    }

    /// Checks the transactional state's own invariants (the producer checks those that
    /// span its other parts: the request in flight is outstanding, the producer id
    /// request is this one). Panics with the first one violated.
    pub(crate) fn assert_invariants(&self) {
        use TransactionState as S;
        // A partition is in one stage of joining the transaction at a time: new (not
        // yet asked for), pending (in an AddPartitionsToTxn without an answer), added.
        self.partitions.assert_invariants();
        // Outside a transaction nothing belongs to one (`reset_transaction` cleared it).
        if matches!(self.state, S::Uninitialized | S::Initializing | S::Ready) {
            assert!(
                !self.started
                    && self.partitions.is_empty()
                    && self.group.is_none()
                    && self.pending_offsets.is_empty(),
                "transaction contents in state {:?}",
                self.state
            );
        }
        // TV2 adds partitions implicitly, with their first Produce: nothing to ask for.
        // (The version only changes between transactions, so a TV1 transaction's
        // partitions never stay behind.)
        if self.version.is_v2() {
            assert!(
                self.partitions.nothing_to_ask(),
                "AddPartitionsToTxn bookkeeping under transaction version 2"
            );
        }
        // Only the bump of `Initializing` can end a failed abort.
        assert!(
            self.bump_ends == BumpEnds::Nothing || self.state == S::Initializing,
            "a bump ending a failed abort in state {:?}",
            self.state
        );
        // A required bump is queued by `reset_transaction` with `Initializing`: `Ready`
        // never stands with a bump still owed.
        assert!(
            !(self.state == S::Ready && self.bump_required),
            "Ready with an epoch bump owed"
        );
        // The next transaction's version is sampled when this one starts completing
        // and applied when it ends.
        if self.version.next_sampled() {
            assert!(
                matches!(
                    self.state,
                    S::CommittingTransaction
                        | S::AbortingTransaction
                        | S::AbortableError
                        | S::FatalError
                ),
                "next transaction version sampled in state {:?}",
                self.state
            );
        }
        // `begin_transaction` completes at once; it never waits for an event.
        assert_ne!(self.op, Some(TxnOp::BeginTransaction), "begin pending");
        // After a forced close nothing transactional is on the wire.
        if self.shutdown == Shutdown::Forced {
            assert!(
                self.queue.in_flight().is_none(),
                "transactional request after a forced close"
            );
        }
        // `Initializing` never stands without the InitProducerId that ends it (queued,
        // or on the wire), unless the producer was closed by force.
        if self.state == S::Initializing && self.shutdown == Shutdown::Running {
            let asked = self
                .queue
                .any_waiting_or_sent(|q| matches!(q, Queued::InitProducerId(_)));
            assert!(asked, "Initializing without an InitProducerId to end it");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Port of the transition matrix of `TransactionManager.State.isTransitionValid`.
    #[test]
    fn transitions_follow_java() {
        use TransactionState as S;
        assert!(S::Ready.can_transition_to(S::InTransaction));
        assert!(!S::Uninitialized.can_transition_to(S::InTransaction));
        assert!(S::InTransaction.can_transition_to(S::CommittingTransaction));
        assert!(S::AbortableError.can_transition_to(S::AbortingTransaction));
        assert!(!S::AbortableError.can_transition_to(S::CommittingTransaction));
        assert!(S::CommittingTransaction.can_transition_to(S::Ready));
        assert!(S::AbortingTransaction.can_transition_to(S::Initializing));
        for s in [
            S::Uninitialized,
            S::Ready,
            S::InTransaction,
            S::AbortableError,
        ] {
            assert!(s.can_transition_to(S::FatalError));
        }
    }
}
