//! The lies the network and the brokers tell: fault kinds, the rates at which the
//! simulator draws them, the counters it keeps, and scripted one-shot faults for
//! deterministic unit tests.

use core::fmt;
use std::time::Duration;

/// One kind of fault the simulator can inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// The broker applied the request, then the connection dropped before the response
    /// left: the response and everything else in flight on the connection are lost.
    ResponseLostAfterApply,
    /// The connection dropped while the request travelled to the broker: it (and every
    /// request behind it) is never applied.
    RequestLost,
    /// The driver found the connection broken when writing a request: that request was
    /// never sent (`NotSent`), the others in flight are `Disconnected`.
    ConnectionDrop,
    /// The response is held past `request.timeout.ms` (the core closes the connection).
    ResponseTimeout,
    /// The response gets an extra random delay (reorders across connections).
    ResponseDelay,
    /// A broker crashes (its connections drop, its partitions get new leaders) and
    /// restarts later.
    BrokerCrash,
    /// A partition's leadership moves to another live broker, without a crash.
    LeaderMove,
    /// The leader answers NOT_LEADER_OR_FOLLOWER without appending (a transient).
    NotLeader,
    /// The leader answers NOT_ENOUGH_REPLICAS without appending.
    NotEnoughReplicas,
    /// The leader appends, then answers NOT_ENOUGH_REPLICAS_AFTER_APPEND.
    NotEnoughReplicasAfterAppend,
    /// The leader appends, then answers REQUEST_TIMED_OUT (Kafka's produce timeout).
    RequestTimedOutAfterAppend,
    /// The response asks the client to back off (`throttle_time_ms`).
    Throttle,
    /// InitProducerId answered with a retriable coordinator error.
    CoordinatorError,
    /// A partition's in-sync replicas shrink below `min.insync.replicas` for a while:
    /// the append that notices answers NOT_ENOUGH_REPLICAS_AFTER_APPEND, every later
    /// one NOT_ENOUGH_REPLICAS until the episode ends.
    IsrShrink,
    /// A metadata answer names a partition's previous leader and leader epoch (the
    /// answering broker's cache lags behind a leadership change).
    StaleMetadata,
    /// A batch larger than the brokers' `max.message.bytes` is refused with
    /// MESSAGE_TOO_LARGE (the producer splits it, or fails a single record).
    MessageTooLarge,
    /// The leader appends, then loses leadership while the acks=all produce waits for
    /// replication, and answers NOT_LEADER_OR_FOLLOWER (Kafka's DelayedProduce). Counted
    /// both for the direct fault and when a move during purgatory causes it.
    NotLeaderAfterAppend,
    /// The broker read a request and applies it later (its request queue, a slow
    /// disk): possibly after the client timed out or closed the connection, and
    /// possibly after a retry of the same batch on a new connection.
    ProcessingDelay,
    /// The leader refuses a batch with INVALID_RECORD (`LogValidator`, KIP-467),
    /// nothing appended.
    InvalidRecord,
    /// The leader refuses a batch with INVALID_TIMESTAMP (`LogValidator`), nothing
    /// appended.
    InvalidTimestamp,
    /// The leader refuses a partition with TOPIC_AUTHORIZATION_FAILED
    /// (`KafkaApis.handleProduceRequest`), nothing appended.
    TopicAuthorizationFailed,
    /// The leader refuses a batch with CORRUPT_MESSAGE (CRC check in
    /// `LogValidator`/`UnifiedLog.analyzeAndValidateRecords`), nothing appended.
    CorruptMessage,
    /// A whole produce request is refused with CLUSTER_AUTHORIZATION_FAILED (no
    /// IDEMPOTENT_WRITE, `KafkaApis.handleProduceRequest`): fatal for the producer,
    /// while its other requests are still on the wire.
    ClusterAuthorizationFailed,
    /// A leader dropped an idle producer's state on a partition
    /// (`producer.id.expiration.ms` passed since its last batch,
    /// `ProducerStateManager.removeExpiredProducers`): it then accepts any sequence
    /// from that producer (KIP-360). Caused by the workload's idle gaps, not drawn.
    ProducerStateExpiry,
    /// A follower fetches an appended batch only after a delay: until every in-sync
    /// replica has it, the batch is above the high watermark and an acks=all produce
    /// waits in purgatory.
    ReplicaLag,
    /// A failover made a replica with a shorter log the leader: the old leader's
    /// uncommitted tail is truncated (KIP-101/KIP-279).
    TruncationOnFailover,
    /// The transaction coordinator moves to another live broker without a crash (the
    /// leadership of its `__transaction_state` partition moves): the old node answers
    /// NOT_COORDINATOR, the new one COORDINATOR_LOAD_IN_PROGRESS while it loads.
    CoordinatorMove,
    /// The coordinator aborts the open transaction on its own, as its transaction
    /// timeout does (`TransactionCoordinator.abortTimedOutTransactions`): epoch+1 and
    /// ABORT markers.
    CoordinatorAbort,
    /// The cluster's finalized `transaction.version` changes (up or down, with a
    /// higher finalized-features epoch), and the brokers' ApiVersions answers say so.
    TransactionVersionChange,
    /// A coordinator answered CONCURRENT_TRANSACTIONS (markers still outstanding).
    CoordinatorConcurrentTransactions,
    /// A coordinator answered COORDINATOR_LOAD_IN_PROGRESS.
    CoordinatorLoadInProgress,
    /// A broker answered NOT_COORDINATOR to a coordinator request.
    CoordinatorNotCoordinator,
    /// A coordinator request (or lookup) was answered COORDINATOR_NOT_AVAILABLE.
    CoordinatorNotAvailable,
    /// A coordinator answered PRODUCER_FENCED.
    CoordinatorProducerFenced,
    /// A coordinator answered TRANSACTION_ABORTABLE.
    CoordinatorTransactionAbortable,
    /// A coordinator answered INVALID_TXN_STATE.
    CoordinatorInvalidTxnState,
    /// A coordinator answered INVALID_PRODUCER_ID_MAPPING.
    CoordinatorInvalidProducerIdMapping,
    /// A coordinator answered another error code.
    CoordinatorOtherError,
    /// The transactional id expires while no transaction is open, as after
    /// `transactional.id.expiration.ms` of idleness
    /// (`TransactionStateManager.removeExpiredTransactionalIds`): the coordinator
    /// forgets it and answers INVALID_PRODUCER_ID_MAPPING until a new InitProducerId.
    TransactionalIdExpiry,
    /// Another producer with the same `transactional.id` calls `init_transactions`:
    /// the coordinator bumps the epoch (aborting the open transaction), and the
    /// producer under test is fenced (PRODUCER_FENCED).
    RivalProducer,
    /// One topic is created while the producer runs (a producer started just before
    /// `kafka-topics --create`): Metadata answers it UNKNOWN_TOPIC_OR_PARTITION, then
    /// some of its partitions LEADER_NOT_AVAILABLE with no leader, then the topic.
    TopicCreatedLate,
    /// A broker crashes and every other connection drops with it: the client has no
    /// ready connection while the crashed broker is in its reconnect backoff, and the
    /// crash's leadership moves need metadata.
    ConnectionsDropWithCrash,
    /// A session's dial of a live broker is refused (as while the broker restarts):
    /// the requests queued for the connection were never written. Session driver only.
    ConnectRefused,
    /// A session's connection takes longer than `request.timeout.ms` to open, with
    /// requests queued behind it (not written yet). Session driver only.
    SlowConnectionSetup,
    /// A coordinator's answer is held past `request.timeout.ms`: it arrives (if its
    /// connection is still open) after the client timed the request out and retried.
    LateCoordinatorAnswer,
    /// A leader answers NOT_LEADER_OR_FOLLOWER, nothing appended, to a batch of a
    /// producer it holds no state for on that partition: the partition is still opening
    /// for the producer (its leader being elected right after the topic was created, or
    /// the producer's state expired). A client that pipelines the next batch then gets
    /// it accepted at any sequence (KIP-360) ahead of the refused one, which is retried
    /// OUT_OF_ORDER until `delivery.timeout.ms` (KAFKA-15591, fixed broker-side only in
    /// Kafka 4.5); the core's first-batch gate keeps one batch in flight until the first
    /// ack, so it cannot happen here.
    OpeningNotLeader,
    /// A connection goes silent without closing (a proxy holding it, a peer that stopped
    /// reading): nothing written on it arrives, nothing comes back, for
    /// [`SimConfig::silence_hold`](crate::SimConfig). The next connections to the same
    /// broker may go silent too, one after another (back-to-back silences). Only the
    /// client's `request.timeout.ms` ends it (Java's `NetworkClient.handleTimedOutRequests`
    /// closes the node's connection at its first timed-out request).
    SilentConnection,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: &'static [FaultKind] = &[
        FaultKind::ResponseLostAfterApply,
        FaultKind::RequestLost,
        FaultKind::ConnectionDrop,
        FaultKind::ResponseTimeout,
        FaultKind::ResponseDelay,
        FaultKind::BrokerCrash,
        FaultKind::LeaderMove,
        FaultKind::NotLeader,
        FaultKind::NotEnoughReplicas,
        FaultKind::NotEnoughReplicasAfterAppend,
        FaultKind::RequestTimedOutAfterAppend,
        FaultKind::Throttle,
        FaultKind::CoordinatorError,
        FaultKind::IsrShrink,
        FaultKind::StaleMetadata,
        FaultKind::MessageTooLarge,
        FaultKind::NotLeaderAfterAppend,
        FaultKind::ProcessingDelay,
        FaultKind::InvalidRecord,
        FaultKind::InvalidTimestamp,
        FaultKind::TopicAuthorizationFailed,
        FaultKind::CorruptMessage,
        FaultKind::ClusterAuthorizationFailed,
        FaultKind::ProducerStateExpiry,
        FaultKind::ReplicaLag,
        FaultKind::TruncationOnFailover,
        FaultKind::CoordinatorMove,
        FaultKind::CoordinatorAbort,
        FaultKind::TransactionVersionChange,
        FaultKind::CoordinatorConcurrentTransactions,
        FaultKind::CoordinatorLoadInProgress,
        FaultKind::CoordinatorNotCoordinator,
        FaultKind::CoordinatorNotAvailable,
        FaultKind::CoordinatorProducerFenced,
        FaultKind::CoordinatorTransactionAbortable,
        FaultKind::CoordinatorInvalidTxnState,
        FaultKind::CoordinatorInvalidProducerIdMapping,
        FaultKind::CoordinatorOtherError,
        FaultKind::TransactionalIdExpiry,
        FaultKind::RivalProducer,
        FaultKind::TopicCreatedLate,
        FaultKind::ConnectionsDropWithCrash,
        FaultKind::ConnectRefused,
        FaultKind::SlowConnectionSetup,
        FaultKind::LateCoordinatorAnswer,
        FaultKind::OpeningNotLeader,
        FaultKind::SilentConnection,
    ];

    /// A short stable name for reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::ResponseLostAfterApply => "response lost after apply",
            FaultKind::RequestLost => "request lost before apply",
            FaultKind::ConnectionDrop => "connection drop on write",
            FaultKind::ResponseTimeout => "response past request.timeout",
            FaultKind::ResponseDelay => "response delayed (reorder)",
            FaultKind::BrokerCrash => "broker crash + restart",
            FaultKind::LeaderMove => "leadership move",
            FaultKind::NotLeader => "NOT_LEADER_OR_FOLLOWER",
            FaultKind::NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            FaultKind::NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            FaultKind::RequestTimedOutAfterAppend => "REQUEST_TIMED_OUT after append",
            FaultKind::Throttle => "throttle",
            FaultKind::CoordinatorError => "InitProducerId coordinator error",
            FaultKind::IsrShrink => "ISR shrink episode",
            FaultKind::StaleMetadata => "stale metadata",
            FaultKind::MessageTooLarge => "MESSAGE_TOO_LARGE",
            FaultKind::ReplicaLag => "replica fetch lag",
            FaultKind::TruncationOnFailover => "truncation on failover",
            FaultKind::NotLeaderAfterAppend => "NOT_LEADER_OR_FOLLOWER after append",
            FaultKind::ProcessingDelay => "request applied late",
            FaultKind::InvalidRecord => "INVALID_RECORD",
            FaultKind::InvalidTimestamp => "INVALID_TIMESTAMP",
            FaultKind::TopicAuthorizationFailed => "TOPIC_AUTHORIZATION_FAILED",
            FaultKind::CorruptMessage => "CORRUPT_MESSAGE",
            FaultKind::ClusterAuthorizationFailed => "CLUSTER_AUTHORIZATION_FAILED (fatal)",
            FaultKind::ProducerStateExpiry => "producer-state expiry",
            FaultKind::CoordinatorMove => "transaction coordinator move",
            FaultKind::CoordinatorAbort => "coordinator aborts the transaction (timeout)",
            FaultKind::TransactionVersionChange => "finalized transaction.version change",
            FaultKind::CoordinatorConcurrentTransactions => "coordinator: CONCURRENT_TRANSACTIONS",
            FaultKind::CoordinatorLoadInProgress => "coordinator: COORDINATOR_LOAD_IN_PROGRESS",
            FaultKind::CoordinatorNotCoordinator => "coordinator: NOT_COORDINATOR",
            FaultKind::CoordinatorNotAvailable => "coordinator: COORDINATOR_NOT_AVAILABLE",
            FaultKind::CoordinatorProducerFenced => "coordinator: PRODUCER_FENCED",
            FaultKind::CoordinatorTransactionAbortable => "coordinator: TRANSACTION_ABORTABLE",
            FaultKind::CoordinatorInvalidTxnState => "coordinator: INVALID_TXN_STATE",
            FaultKind::CoordinatorInvalidProducerIdMapping => {
                "coordinator: INVALID_PRODUCER_ID_MAPPING"
            }
            FaultKind::CoordinatorOtherError => "coordinator: other error",
            FaultKind::TransactionalIdExpiry => "transactional id expiry",
            FaultKind::RivalProducer => "rival producer fences",
            FaultKind::TopicCreatedLate => "topic created while producing",
            FaultKind::ConnectionsDropWithCrash => "every connection drops with a crash",
            FaultKind::ConnectRefused => "connect refused",
            FaultKind::SlowConnectionSetup => "connection setup past request.timeout",
            FaultKind::LateCoordinatorAnswer => "coordinator answer past request.timeout",
            FaultKind::OpeningNotLeader => "NOT_LEADER_OR_FOLLOWER on an opening partition",
            FaultKind::SilentConnection => "silent connection (back to back)",
        }
    }

    /// The counter of a coordinator's answer with Kafka error `code` (the "coordinator
    /// errors by code" of a report), `None` for `NONE`.
    #[must_use]
    pub fn coordinator_answer(code: i16) -> Option<FaultKind> {
        use crate::broker as b;
        use crate::coordinator as c;
        Some(match code {
            b::NONE => return None,
            b::CONCURRENT_TRANSACTIONS => FaultKind::CoordinatorConcurrentTransactions,
            c::COORDINATOR_LOAD_IN_PROGRESS => FaultKind::CoordinatorLoadInProgress,
            c::NOT_COORDINATOR => FaultKind::CoordinatorNotCoordinator,
            c::COORDINATOR_NOT_AVAILABLE => FaultKind::CoordinatorNotAvailable,
            b::PRODUCER_FENCED => FaultKind::CoordinatorProducerFenced,
            b::TRANSACTION_ABORTABLE => FaultKind::CoordinatorTransactionAbortable,
            b::INVALID_TXN_STATE => FaultKind::CoordinatorInvalidTxnState,
            b::INVALID_PRODUCER_ID_MAPPING => FaultKind::CoordinatorInvalidProducerIdMapping,
            _ => FaultKind::CoordinatorOtherError,
        })
    }

    /// Whether the kind arises only with a transactional producer (an idempotent run
    /// never sees it).
    #[must_use]
    pub fn is_transactional(self) -> bool {
        matches!(
            self,
            FaultKind::CoordinatorMove
                | FaultKind::CoordinatorAbort
                | FaultKind::TransactionVersionChange
                | FaultKind::CoordinatorConcurrentTransactions
                | FaultKind::CoordinatorLoadInProgress
                | FaultKind::CoordinatorNotCoordinator
                | FaultKind::CoordinatorNotAvailable
                | FaultKind::CoordinatorProducerFenced
                | FaultKind::CoordinatorTransactionAbortable
                | FaultKind::CoordinatorInvalidTxnState
                | FaultKind::CoordinatorInvalidProducerIdMapping
                | FaultKind::CoordinatorOtherError
                | FaultKind::TransactionalIdExpiry
                | FaultKind::RivalProducer
                | FaultKind::LateCoordinatorAnswer
        )
    }

    /// Whether the kind arises only with the session driver (`DriverKind::Session`):
    /// the core driver opens no connections.
    #[must_use]
    pub fn is_session_only(self) -> bool {
        matches!(
            self,
            FaultKind::ConnectRefused | FaultKind::SlowConnectionSetup
        )
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|&k| k == self).unwrap_or(0)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Probabilities of each fault, each drawn at its own opportunity (per request, per
/// response or per partition in a produce request).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultRates {
    /// Per produce request reaching its broker: apply, then lose the response and drop
    /// the connection.
    pub response_lost: f64,
    /// Per request reaching a broker: the connection drops first, nothing is applied.
    pub request_lost: f64,
    /// Per request the driver writes: the connection is found broken.
    pub connection_drop: f64,
    /// Per response: held past `request.timeout.ms`.
    pub response_timeout: f64,
    /// Per response: an extra random delay.
    pub response_delay: f64,
    /// Per produce request reaching a broker: that broker crashes (before or after
    /// applying it).
    pub broker_crash: f64,
    /// Per produce request reaching a broker: some partition's leadership moves.
    pub leader_move: f64,
    /// Per partition in a produce request on its leader: one of NOT_LEADER_OR_FOLLOWER,
    /// NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND or REQUEST_TIMED_OUT.
    pub partition_error: f64,
    /// Per produce response: a throttle time.
    pub throttle: f64,
    /// Per InitProducerId: a retriable coordinator error.
    pub coordinator_error: f64,
    /// Per produce request reaching a broker: an ISR shrink episode starts on one of
    /// its partitions.
    pub isr_shrink: f64,
    /// Per metadata answer: one partition is reported with its previous leader.
    pub stale_metadata: f64,
    /// Per partition in a produce request on its leader: MESSAGE_TOO_LARGE, as if the
    /// topic's `max.message.bytes` had just been lowered below the batch.
    pub message_too_large: f64,
    /// Per partition in a produce request on its leader, with another live broker:
    /// append, move the leadership there, answer NOT_LEADER_OR_FOLLOWER.
    pub not_leader_after_append: f64,
    /// Per request a broker reads: it holds the request for up to
    /// [`SimConfig::processing_delay_max`](crate::SimConfig) before applying it.
    pub processing_delay: f64,
    /// Per partition in a produce request on its leader: one of INVALID_RECORD,
    /// INVALID_TIMESTAMP, TOPIC_AUTHORIZATION_FAILED or CORRUPT_MESSAGE, nothing
    /// appended.
    pub rejected_batch: f64,
    /// Per produce request reaching a broker: CLUSTER_AUTHORIZATION_FAILED for the
    /// whole request (fatal for the producer). Zero in [`FaultRates::uniform`]: a fatal
    /// error ends the run's producer, so it is drawn by [`FaultRates::with_fatal`] in
    /// runs of its own.
    pub fatal_error: f64,
    /// Per follower fetch after an append: the follower fetches only after a delay
    /// (see `SimConfig::replica_lag_min`).
    pub replica_lag: f64,
    /// Per acks=all produce held in purgatory: the leadership of one of its
    /// partitions moves (to an in-sync follower) before the followers fetched.
    pub purgatory_leader_move: f64,
    /// Per transactional request reaching the coordinator: the coordinator moves
    /// ([`FaultKind::CoordinatorMove`]).
    pub coordinator_move: f64,
    /// Per transactional request reaching the coordinator while a transaction is open:
    /// the coordinator aborts it ([`FaultKind::CoordinatorAbort`]).
    pub coordinator_abort: f64,
    /// Per transactional request reaching a broker: the finalized `transaction.version`
    /// changes ([`FaultKind::TransactionVersionChange`]).
    pub transaction_version_change: f64,
    /// Per transactional request reaching the coordinator while no transaction is
    /// open: the transactional id expires ([`FaultKind::TransactionalIdExpiry`]).
    pub transactional_id_expiry: f64,
    /// Per transaction of the workload: a rival producer with the same
    /// `transactional.id` initialises before it ends ([`FaultKind::RivalProducer`]).
    pub rival_producer: f64,
    /// Per run of an idempotent (not transactional) producer: one topic is created
    /// while it runs ([`FaultKind::TopicCreatedLate`]).
    pub topic_created_late: f64,
    /// Per broker crash: every other connection drops too
    /// ([`FaultKind::ConnectionsDropWithCrash`]).
    pub connections_drop_with_crash: f64,
    /// Per session dial of a live broker: refused.
    pub connect_refused: f64,
    /// Per session dial of a live broker: opens only after `request.timeout.ms`.
    pub slow_connection_setup: f64,
    /// Per coordinator answer: held past `request.timeout.ms`.
    pub late_coordinator_answer: f64,
    /// Per batch reaching a leader that holds no state for its producer on that
    /// partition: NOT_LEADER_OR_FOLLOWER, nothing appended ([`FaultKind::OpeningNotLeader`]).
    pub opening_not_leader: f64,
    /// Per request written on a connection that is not silent: the connection goes
    /// silent, and so do the next `0..SimConfig::silence_run_max` connections to the
    /// same broker ([`FaultKind::SilentConnection`]).
    pub silent_connection: f64,
}

impl FaultRates {
    /// No faults at all (the quiet phase, and scripted tests).
    pub const NONE: FaultRates = FaultRates {
        response_lost: 0.0,
        request_lost: 0.0,
        connection_drop: 0.0,
        response_timeout: 0.0,
        response_delay: 0.0,
        broker_crash: 0.0,
        leader_move: 0.0,
        partition_error: 0.0,
        throttle: 0.0,
        coordinator_error: 0.0,
        isr_shrink: 0.0,
        stale_metadata: 0.0,
        message_too_large: 0.0,
        not_leader_after_append: 0.0,
        processing_delay: 0.0,
        rejected_batch: 0.0,
        fatal_error: 0.0,
        replica_lag: 0.0,
        purgatory_leader_move: 0.0,
        coordinator_move: 0.0,
        coordinator_abort: 0.0,
        transaction_version_change: 0.0,
        transactional_id_expiry: 0.0,
        rival_producer: 0.0,
        topic_created_late: 0.0,
        connections_drop_with_crash: 0.0,
        connect_refused: 0.0,
        slow_connection_setup: 0.0,
        late_coordinator_answer: 0.0,
        opening_not_leader: 0.0,
        silent_connection: 0.0,
    };

    /// Every kind of fault, scaled from one overall `rate` (0 to 1). The expensive faults
    /// (timeouts, crashes) are rarer than the cheap ones, so that at a rate of 0.05 a run
    /// sees every kind without spending all its virtual time waiting on timeouts.
    #[must_use]
    pub fn uniform(rate: f64) -> FaultRates {
        let r = rate.clamp(0.0, 1.0);
        FaultRates {
            response_lost: r / 4.0,
            request_lost: r / 4.0,
            connection_drop: r / 4.0,
            response_timeout: r / 25.0,
            response_delay: r,
            broker_crash: r / 60.0,
            leader_move: r / 8.0,
            partition_error: r / 2.0,
            throttle: r / 4.0,
            coordinator_error: r,
            isr_shrink: r / 40.0,
            stale_metadata: r,
            message_too_large: r / 40.0,
            not_leader_after_append: r / 16.0,
            processing_delay: r / 4.0,
            rejected_batch: r / 40.0,
            fatal_error: 0.0,
            replica_lag: (r * 4.0).min(1.0),
            purgatory_leader_move: r / 2.0,
            coordinator_move: r / 10.0,
            coordinator_abort: r / 40.0,
            transaction_version_change: r / 4.0,
            transactional_id_expiry: r / 20.0,
            rival_producer: r / 10.0,
            topic_created_late: (r * 2.0).min(1.0),
            connections_drop_with_crash: (r * 2.0).min(1.0),
            connect_refused: r / 4.0,
            slow_connection_setup: r / 10.0,
            late_coordinator_answer: r / 25.0,
            opening_not_leader: (r * 2.0).min(1.0),
            silent_connection: r / 200.0,
        }
    }

    /// These rates with a fatal CLUSTER_AUTHORIZATION_FAILED drawn per produce request
    /// at `rate`.
    #[must_use]
    pub fn with_fatal(self, rate: f64) -> FaultRates {
        FaultRates {
            fatal_error: rate.clamp(0.0, 1.0),
            ..self
        }
    }

    /// Whether every rate is zero.
    #[must_use]
    pub fn is_quiet(&self) -> bool {
        *self == FaultRates::NONE
    }
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates::NONE
    }
}

/// How many faults of each kind were injected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultCounts {
    counts: [u64; FaultKind::ALL.len()],
}

impl Default for FaultCounts {
    fn default() -> Self {
        Self {
            counts: [0; FaultKind::ALL.len()],
        }
    }
}

impl FaultCounts {
    /// Counts one fault.
    pub fn add(&mut self, kind: FaultKind) {
        self.counts[kind.index()] += 1;
    }

    /// Faults of `kind` so far.
    #[must_use]
    pub fn get(&self, kind: FaultKind) -> u64 {
        self.counts[kind.index()]
    }

    /// All faults so far.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// `(kind, count)` for every kind, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (FaultKind, u64)> + '_ {
        FaultKind::ALL.iter().map(|&k| (k, self.get(k)))
    }

    /// Adds another set of counters to this one.
    pub fn merge(&mut self, other: &FaultCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
    }
}

/// An error a scripted broker answers for one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionFault {
    /// NOT_LEADER_OR_FOLLOWER, nothing appended (with a KIP-951 hint if `hint`).
    NotLeader {
        /// Whether the answer carries the current leader.
        hint: bool,
    },
    /// NOT_ENOUGH_REPLICAS, nothing appended.
    NotEnoughReplicas,
    /// Appended, then NOT_ENOUGH_REPLICAS_AFTER_APPEND.
    NotEnoughReplicasAfterAppend,
    /// Appended, then REQUEST_TIMED_OUT.
    RequestTimedOutAfterAppend,
    /// MESSAGE_TOO_LARGE, nothing appended (as after the topic's `max.message.bytes`
    /// was lowered).
    MessageTooLarge,
    /// Appended, then the leadership moves to another live broker (if there is one)
    /// and the answer is NOT_LEADER_OR_FOLLOWER, as Kafka's DelayedProduce answers when
    /// the leader changed while the produce waited in purgatory.
    NotLeaderAfterAppend,
    /// INVALID_RECORD, nothing appended.
    InvalidRecord,
    /// INVALID_TIMESTAMP, nothing appended.
    InvalidTimestamp,
    /// TOPIC_AUTHORIZATION_FAILED, nothing appended.
    TopicAuthorizationFailed,
    /// CORRUPT_MESSAGE, nothing appended.
    CorruptMessage,
}

impl PartitionFault {
    /// The fault kind it is counted as.
    #[must_use]
    pub fn kind(self) -> FaultKind {
        match self {
            PartitionFault::NotLeader { .. } => FaultKind::NotLeader,
            PartitionFault::NotEnoughReplicas => FaultKind::NotEnoughReplicas,
            PartitionFault::NotEnoughReplicasAfterAppend => FaultKind::NotEnoughReplicasAfterAppend,
            PartitionFault::RequestTimedOutAfterAppend => FaultKind::RequestTimedOutAfterAppend,
            PartitionFault::MessageTooLarge => FaultKind::MessageTooLarge,
            PartitionFault::NotLeaderAfterAppend => FaultKind::NotLeaderAfterAppend,
            PartitionFault::InvalidRecord => FaultKind::InvalidRecord,
            PartitionFault::InvalidTimestamp => FaultKind::InvalidTimestamp,
            PartitionFault::TopicAuthorizationFailed => FaultKind::TopicAuthorizationFailed,
            PartitionFault::CorruptMessage => FaultKind::CorruptMessage,
        }
    }

    /// The error answered for a fault that appends nothing (`None` for the others).
    #[must_use]
    pub fn refusal(self) -> Option<kacrab_idempotence::KafkaError> {
        use kacrab_idempotence::KafkaError as E;
        Some(match self {
            PartitionFault::NotLeader { .. } => E::NotLeaderOrFollower,
            PartitionFault::NotEnoughReplicas => E::NotEnoughReplicas,
            PartitionFault::MessageTooLarge => E::MessageTooLarge,
            PartitionFault::InvalidRecord => E::InvalidRecord,
            PartitionFault::InvalidTimestamp => E::InvalidTimestamp,
            PartitionFault::TopicAuthorizationFailed => E::TopicAuthorizationFailed,
            PartitionFault::CorruptMessage => E::CorruptMessage,
            PartitionFault::NotEnoughReplicasAfterAppend
            | PartitionFault::RequestTimedOutAfterAppend
            | PartitionFault::NotLeaderAfterAppend => return None,
        })
    }

    /// Whether the answer fails the batch whatever the producer does: a refusal no
    /// retry gets past (Java's `Sender.completeBatch` fails the batch on a
    /// non-retriable error; MESSAGE_TOO_LARGE on a batch of one record).
    #[must_use]
    pub fn fails_records(self) -> bool {
        matches!(
            self,
            PartitionFault::MessageTooLarge
                | PartitionFault::InvalidRecord
                | PartitionFault::InvalidTimestamp
                | PartitionFault::TopicAuthorizationFailed
                | PartitionFault::CorruptMessage
        )
    }

    /// Whether the broker appends the batch before answering the error.
    #[must_use]
    pub fn appends(self) -> bool {
        matches!(
            self,
            PartitionFault::NotEnoughReplicasAfterAppend
                | PartitionFault::RequestTimedOutAfterAppend
                | PartitionFault::NotLeaderAfterAppend
        )
    }
}

/// A fault the test script asks for, applied at the next matching opportunity and
/// then consumed (`times` opportunities).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// The next produce request carrying `partition` (a global partition index) that
    /// reaches its broker: apply it, then lose the response and drop the connection.
    LoseResponseAfterApply {
        /// Global partition index.
        partition: usize,
    },
    /// The next produce request carrying `partition` is lost before the broker applies
    /// it (the connection drops).
    LoseRequest {
        /// Global partition index.
        partition: usize,
    },
    /// The next `times` produce attempts for `partition` on its leader get `fault`.
    PartitionError {
        /// Global partition index.
        partition: usize,
        /// The answer.
        fault: PartitionFault,
        /// How many attempts.
        times: u32,
    },
    /// The response to the next produce request carrying `partition` is delayed by
    /// `by` (past `request.timeout.ms` if `by` is large enough).
    DelayResponse {
        /// Global partition index.
        partition: usize,
        /// Extra delay.
        by: Duration,
    },
    /// The next produce response carrying `partition` asks for a throttle of `by`.
    Throttle {
        /// Global partition index.
        partition: usize,
        /// Throttle time.
        by: Duration,
    },
    /// The next produce request carrying `partition` that its broker reads is held
    /// there for `by` before it is applied.
    HoldRequest {
        /// Global partition index.
        partition: usize,
        /// How long the broker holds it.
        by: Duration,
    },
    /// The next produce request carrying `partition` that reaches its broker is refused
    /// whole with CLUSTER_AUTHORIZATION_FAILED.
    RefuseRequest {
        /// Global partition index.
        partition: usize,
    },
}

impl Script {
    /// The partition the script waits for.
    #[must_use]
    pub fn partition(&self) -> usize {
        match *self {
            Script::LoseResponseAfterApply { partition }
            | Script::LoseRequest { partition }
            | Script::PartitionError { partition, .. }
            | Script::DelayResponse { partition, .. }
            | Script::Throttle { partition, .. }
            | Script::HoldRequest { partition, .. }
            | Script::RefuseRequest { partition } => partition,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind() {
        let mut c = FaultCounts::default();
        c.add(FaultKind::Throttle);
        c.add(FaultKind::Throttle);
        c.add(FaultKind::BrokerCrash);
        assert_eq!(c.get(FaultKind::Throttle), 2);
        assert_eq!(c.total(), 3);
        assert_eq!(c.iter().count(), FaultKind::ALL.len());
        let mut d = FaultCounts::default();
        d.merge(&c);
        assert_eq!(d, c);
    }

    #[test]
    fn uniform_zero_is_quiet() {
        assert!(FaultRates::uniform(0.0).is_quiet());
        assert!(!FaultRates::uniform(0.1).is_quiet());
    }
}
