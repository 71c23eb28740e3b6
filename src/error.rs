//! Kafka's error codes, their classification, and the core's own errors.

use alloc::string::String;

use crate::types::TopicPartition;

macro_rules! kafka_errors {
    ($( $(#[$m:meta])* $name:ident = $code:literal => $kafka:literal ),* $(,)?) => {
        /// A Kafka protocol error code, as carried by Produce, InitProducerId and the
        /// transactional RPCs.
        ///
        /// Codes this crate does not name are kept as [`KafkaError::Unknown`] so that
        /// nothing a broker says is dropped.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[non_exhaustive]
        pub enum KafkaError {
            $( $(#[$m])* $name, )*
            /// A code this crate does not name, kept as received.
            Unknown(i16),
        }

        impl KafkaError {
            /// The error for a wire code. `0` is [`KafkaError::None`].
            #[must_use]
            pub const fn from_code(code: i16) -> Self {
                match code {
                    $( $code => Self::$name, )*
                    other => Self::Unknown(other),
                }
            }

            /// The wire code.
            #[must_use]
            pub const fn code(self) -> i16 {
                match self {
                    $( Self::$name => $code, )*
                    Self::Unknown(c) => c,
                }
            }

            /// Kafka's upper-case name, e.g. `OUT_OF_ORDER_SEQUENCE_NUMBER`.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$name => $kafka, )*
                    Self::Unknown(_) => "UNKNOWN",
                }
            }
        }
    };
}

kafka_errors! {
    /// The server experienced an unexpected error.
    UnknownServerError = -1 => "UNKNOWN_SERVER_ERROR",
    /// No error.
    None = 0 => "NONE",
    /// The message failed its CRC check or is otherwise corrupt (retriable).
    CorruptMessage = 2 => "CORRUPT_MESSAGE",
    /// This server does not host this topic-partition (retriable; stale metadata).
    UnknownTopicOrPartition = 3 => "UNKNOWN_TOPIC_OR_PARTITION",
    /// There is no leader for this partition right now (retriable; stale metadata).
    LeaderNotAvailable = 5 => "LEADER_NOT_AVAILABLE",
    /// This broker is not the leader (retriable; stale metadata).
    NotLeaderOrFollower = 6 => "NOT_LEADER_OR_FOLLOWER",
    /// The broker timed out waiting for replication; the write may have landed (retriable).
    RequestTimedOut = 7 => "REQUEST_TIMED_OUT",
    /// The replica is not available (retriable; stale metadata).
    ReplicaNotAvailable = 9 => "REPLICA_NOT_AVAILABLE",
    /// The batch is larger than the broker accepts.
    MessageTooLarge = 10 => "MESSAGE_TOO_LARGE",
    /// The connection was lost (retriable; stale metadata).
    NetworkException = 13 => "NETWORK_EXCEPTION",
    /// The coordinator is loading (retriable).
    CoordinatorLoadInProgress = 14 => "COORDINATOR_LOAD_IN_PROGRESS",
    /// The coordinator is not available (retriable).
    CoordinatorNotAvailable = 15 => "COORDINATOR_NOT_AVAILABLE",
    /// This broker is not the coordinator (retriable).
    NotCoordinator = 16 => "NOT_COORDINATOR",
    /// The topic name is invalid.
    InvalidTopicException = 17 => "INVALID_TOPIC_EXCEPTION",
    /// The request is larger than the broker accepts.
    RecordListTooLarge = 18 => "RECORD_LIST_TOO_LARGE",
    /// Too few in-sync replicas; nothing was appended (retriable).
    NotEnoughReplicas = 19 => "NOT_ENOUGH_REPLICAS",
    /// Appended, but too few in-sync replicas acknowledged it (retriable; maybe written).
    NotEnoughReplicasAfterAppend = 20 => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    /// acks is not -1, 0 or 1.
    InvalidRequiredAcks = 21 => "INVALID_REQUIRED_ACKS",
    /// The consumer group generation is stale.
    IllegalGeneration = 22 => "ILLEGAL_GENERATION",
    /// The member id is unknown to the group.
    UnknownMemberId = 25 => "UNKNOWN_MEMBER_ID",
    /// Not authorized to write to the topic.
    TopicAuthorizationFailed = 29 => "TOPIC_AUTHORIZATION_FAILED",
    /// Not authorized for the group.
    GroupAuthorizationFailed = 30 => "GROUP_AUTHORIZATION_FAILED",
    /// Not authorized for idempotent writes on the cluster (fatal).
    ClusterAuthorizationFailed = 31 => "CLUSTER_AUTHORIZATION_FAILED",
    /// A record timestamp is out of the accepted range.
    InvalidTimestamp = 32 => "INVALID_TIMESTAMP",
    /// The broker does not support this request version (fatal).
    UnsupportedVersion = 35 => "UNSUPPORTED_VERSION",
    /// The request is invalid.
    InvalidRequest = 42 => "INVALID_REQUEST",
    /// The message format does not support this request.
    UnsupportedForMessageFormat = 43 => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    /// The broker expected another sequence number.
    OutOfOrderSequenceNumber = 45 => "OUT_OF_ORDER_SEQUENCE_NUMBER",
    /// The batch was already written (success without an offset).
    DuplicateSequenceNumber = 46 => "DUPLICATE_SEQUENCE_NUMBER",
    /// The producer epoch is older than the broker's.
    InvalidProducerEpoch = 47 => "INVALID_PRODUCER_EPOCH",
    /// The transactional state does not allow this request.
    InvalidTxnState = 48 => "INVALID_TXN_STATE",
    /// The producer id does not match the transactional id (fatal).
    InvalidProducerIdMapping = 49 => "INVALID_PRODUCER_ID_MAPPING",
    /// The transaction timeout is out of the broker's range.
    InvalidTransactionTimeout = 50 => "INVALID_TRANSACTION_TIMEOUT",
    /// Another transactional operation is in progress (retriable).
    ConcurrentTransactions = 51 => "CONCURRENT_TRANSACTIONS",
    /// The transaction coordinator was fenced.
    TransactionCoordinatorFenced = 52 => "TRANSACTION_COORDINATOR_FENCED",
    /// Not authorized for the transactional id.
    TransactionalIdAuthorizationFailed = 53 => "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    /// The broker did not attempt this operation because another failed.
    OperationNotAttempted = 55 => "OPERATION_NOT_ATTEMPTED",
    /// The broker had a disk error (retriable; stale metadata).
    KafkaStorageError = 56 => "KAFKA_STORAGE_ERROR",
    /// The broker has no state for this producer id.
    UnknownProducerId = 59 => "UNKNOWN_PRODUCER_ID",
    /// The group id is unknown.
    GroupIdNotFound = 69 => "GROUP_ID_NOT_FOUND",
    /// The leader epoch is older than the broker's (retriable; stale metadata).
    FencedLeaderEpoch = 74 => "FENCED_LEADER_EPOCH",
    /// The leader epoch is newer than the broker's (retriable).
    UnknownLeaderEpoch = 75 => "UNKNOWN_LEADER_EPOCH",
    /// The static member was fenced.
    FencedInstanceId = 82 => "FENCED_INSTANCE_ID",
    /// The record was rejected by the broker's validation.
    InvalidRecord = 87 => "INVALID_RECORD",
    /// The request was throttled (retriable).
    ThrottlingQuotaExceeded = 89 => "THROTTLING_QUOTA_EXCEEDED",
    /// Another producer with the same transactional id fenced this one (fatal).
    ProducerFenced = 90 => "PRODUCER_FENCED",
    /// The topic id is unknown (retriable; stale metadata).
    UnknownTopicId = 100 => "UNKNOWN_TOPIC_ID",
    /// The topic id does not match (retriable; stale metadata).
    InconsistentTopicId = 103 => "INCONSISTENT_TOPIC_ID",
    /// The member epoch is stale.
    StaleMemberEpoch = 113 => "STALE_MEMBER_EPOCH",
    /// The transaction must be aborted (KIP-890).
    TransactionAbortable = 120 => "TRANSACTION_ABORTABLE",
}

/// How the idempotent producer reacts to an error, before the per-error rules of
/// Java's `canRetry` (which can still turn a retriable error into a failure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// No error.
    Success,
    /// Retry with the same sequence after a backoff.
    Retriable,
    /// Retry with the same sequence; the leader moved, so refresh metadata first.
    Leadership,
    /// `DUPLICATE_SEQUENCE_NUMBER`: the batch was already written; success without offset.
    Duplicate,
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER`: decided by `TransactionManager.canRetry`.
    OutOfOrder,
    /// `UNKNOWN_PRODUCER_ID`: decided by `TransactionManager.canRetry`.
    UnknownProducer,
    /// The producer can never recover: every later operation fails.
    Fatal,
    /// Transactional producers abort the transaction; idempotent producers fail the batch.
    Abortable,
    /// The batch fails; the producer goes on.
    NonRetriable,
}

impl KafkaError {
    /// Whether Java's client classifies this as a `RetriableException`.
    #[must_use]
    pub const fn is_retriable(self) -> bool {
        matches!(
            self,
            Self::CorruptMessage
                | Self::UnknownTopicOrPartition
                | Self::LeaderNotAvailable
                | Self::NotLeaderOrFollower
                | Self::RequestTimedOut
                | Self::ReplicaNotAvailable
                | Self::NetworkException
                | Self::CoordinatorLoadInProgress
                | Self::CoordinatorNotAvailable
                | Self::NotCoordinator
                | Self::NotEnoughReplicas
                | Self::NotEnoughReplicasAfterAppend
                | Self::ConcurrentTransactions
                | Self::KafkaStorageError
                | Self::FencedLeaderEpoch
                | Self::UnknownLeaderEpoch
                | Self::ThrottlingQuotaExceeded
                | Self::UnknownTopicId
                | Self::InconsistentTopicId
        )
    }

    /// Whether the error means our view of partition leadership is stale
    /// (Java's `InvalidMetadataException` family).
    #[must_use]
    pub const fn invalidates_metadata(self) -> bool {
        matches!(
            self,
            Self::UnknownTopicOrPartition
                | Self::LeaderNotAvailable
                | Self::NotLeaderOrFollower
                | Self::ReplicaNotAvailable
                | Self::NetworkException
                | Self::KafkaStorageError
                | Self::FencedLeaderEpoch
                | Self::UnknownTopicId
                | Self::InconsistentTopicId
        )
    }

    /// Whether a Produce answered with this error may still have appended the batch:
    /// every code except those Kafka's broker only answers before the append
    /// ([`KafkaError::rejected_before_append`]). A batch keeps the ambiguity of every
    /// earlier attempt: a later rejection does not erase it.
    #[must_use]
    pub const fn may_have_appended(self) -> bool {
        !self.rejected_before_append()
    }

    /// Whether Kafka's broker answers a Produce with this code only before appending
    /// the batch, so the answer proves the batch absent under the stamp it carried.
    ///
    /// Absence must be proven, so this is a list of codes and everything else
    /// (including codes this crate does not name) counts as possibly appended. Not on
    /// the list, because the broker answers them after the append:
    /// `NOT_ENOUGH_REPLICAS_AFTER_APPEND` and `REQUEST_TIMED_OUT` (DelayedProduce, ISR
    /// shrunk or replication not done in time); `NOT_LEADER_OR_FOLLOWER` (DelayedProduce
    /// completes with it when the leader changed while the acks=all produce waited:
    /// `Partition.checkEnoughReplicasReachOffset` with no local leader log, or
    /// `ReplicaManager.getPartitionOrError` after the replica was removed), and for the
    /// same reason `KAFKA_STORAGE_ERROR` (the partition went offline; also thrown by a
    /// failed log write) and `UNKNOWN_TOPIC_OR_PARTITION`; `UNKNOWN_SERVER_ERROR`
    /// (`ReplicaManager.appendToLocalLog`'s catch-all, thrown from anywhere in the
    /// append). On the list: `KafkaApis.handleProduceRequest`'s authorization and request
    /// checks, `LogValidator`'s size, CRC and record checks, the ISR check of
    /// `Partition.appendRecordsToLeader` (`NOT_ENOUGH_REPLICAS`), and the producer-state
    /// checks of `UnifiedLog.analyzeAndValidateProducerState` and of the KIP-890
    /// transaction verification, which all run before the log is written.
    #[must_use]
    pub const fn rejected_before_append(self) -> bool {
        matches!(
            self,
            Self::CorruptMessage
                | Self::MessageTooLarge
                | Self::RecordListTooLarge
                | Self::InvalidRecord
                | Self::InvalidTimestamp
                | Self::UnsupportedForMessageFormat
                | Self::InvalidTopicException
                | Self::InvalidRequiredAcks
                | Self::InvalidRequest
                | Self::UnsupportedVersion
                | Self::TopicAuthorizationFailed
                | Self::ClusterAuthorizationFailed
                | Self::TransactionalIdAuthorizationFailed
                | Self::NotEnoughReplicas
                | Self::OutOfOrderSequenceNumber
                | Self::InvalidProducerEpoch
                | Self::UnknownProducerId
                | Self::ProducerFenced
                | Self::InvalidProducerIdMapping
                | Self::InvalidTxnState
                | Self::TransactionAbortable
        )
    }

    /// The classification the core acts on (for a Produce response).
    #[must_use]
    pub const fn class(self) -> ErrorClass {
        match self {
            Self::None => ErrorClass::Success,
            Self::DuplicateSequenceNumber => ErrorClass::Duplicate,
            Self::OutOfOrderSequenceNumber => ErrorClass::OutOfOrder,
            Self::UnknownProducerId => ErrorClass::UnknownProducer,
            Self::ClusterAuthorizationFailed
            | Self::TransactionalIdAuthorizationFailed
            | Self::ProducerFenced
            | Self::UnsupportedVersion
            | Self::InvalidProducerIdMapping => ErrorClass::Fatal,
            Self::InvalidProducerEpoch | Self::InvalidTxnState | Self::TransactionAbortable => {
                ErrorClass::Abortable
            }
            e if e.invalidates_metadata() => ErrorClass::Leadership,
            e if e.is_retriable() => ErrorClass::Retriable,
            _ => ErrorClass::NonRetriable,
        }
    }
}

impl core::fmt::Display for KafkaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Unknown(c) => write!(f, "unknown Kafka error code {c}"),
            e => write!(f, "{} ({})", e.name(), e.code()),
        }
    }
}

impl core::error::Error for KafkaError {}

/// Why a record was not delivered. Carried by [`Event::Failed`](crate::Event::Failed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// The broker answered with an error the producer does not retry (or retries ran out).
    #[error("broker rejected the batch for {partition}: {error}{}", said(.message))]
    Broker {
        /// The partition.
        partition: TopicPartition,
        /// The broker's error.
        error: KafkaError,
        /// The broker's message for it (Produce v8+, KIP-467), if it sent one.
        message: Option<String>,
    },
    /// KIP-467: the broker named this record as the reason it rejected the whole batch
    /// (INVALID_RECORD, INVALID_TIMESTAMP and the other `LogValidator` refusals), so
    /// nothing of the batch was appended by that answer. As Java's `Sender.failBatch`:
    /// `error` is the partition's error when the broker named one record, and
    /// INVALID_RECORD when it named several (its single code cannot tell their causes
    /// apart; the messages do).
    #[error("broker rejected record {batch_index} of the batch for {partition}: {error}{}", said(.message))]
    InvalidRecord {
        /// The partition.
        partition: TopicPartition,
        /// The error this record failed with.
        error: KafkaError,
        /// The record's index in its batch.
        batch_index: i32,
        /// The broker's message for this record, else its message for the batch.
        message: Option<String>,
    },
    /// KIP-467: the broker rejected the batch because of other records in it, which
    /// fail with [`DeliveryError::InvalidRecord`]; this record itself was not named.
    #[error("broker rejected the batch for {partition} for other records in it: {error}{}", said(.message))]
    BatchHadInvalidRecords {
        /// The partition.
        partition: TopicPartition,
        /// The batch's error.
        error: KafkaError,
        /// The broker's message for the batch, if it sent one.
        message: Option<String>,
    },
    /// `delivery.timeout.ms` passed before the record was acknowledged.
    #[error("delivery timeout expired for {partition}")]
    Timeout {
        /// The partition.
        partition: TopicPartition,
    },
    /// A single record is larger than the broker accepts.
    #[error("record too large for {partition}")]
    RecordTooLarge {
        /// The partition.
        partition: TopicPartition,
    },
    /// The producer hit a fatal error; nothing more will be delivered.
    #[error("producer is in a fatal state: {0}")]
    Fatal(KafkaError),
    /// The producer was closed with [`Producer::abort`](crate::Producer::abort).
    #[error("producer was aborted before the record was delivered")]
    Aborted,
}

impl DeliveryError {
    /// The Kafka error the broker answered with, for the variants that carry one.
    #[must_use]
    pub fn kafka_error(&self) -> Option<KafkaError> {
        match self {
            Self::Broker { error, .. }
            | Self::InvalidRecord { error, .. }
            | Self::BatchHadInvalidRecords { error, .. }
            | Self::Fatal(error) => Some(*error),
            Self::Timeout { .. } | Self::RecordTooLarge { .. } | Self::Aborted => None,
        }
    }

    /// The broker's message, for the variants that carry one.
    #[must_use]
    pub fn broker_message(&self) -> Option<&str> {
        match self {
            Self::Broker { message, .. }
            | Self::InvalidRecord { message, .. }
            | Self::BatchHadInvalidRecords { message, .. } => message.as_deref(),
            _ => None,
        }
    }
}

/// `": <message>"` after an error when the broker sent a message, nothing otherwise.
fn said(message: &Option<String>) -> impl core::fmt::Display + '_ {
    struct Said<'a>(Option<&'a str>);
    impl core::fmt::Display for Said<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self.0 {
                Some(m) => write!(f, ": {m}"),
                None => Ok(()),
            }
        }
    }
    Said(message.as_deref())
}

/// Why [`Producer::send`](crate::Producer::send) refused a record. Nothing was queued.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// [`Producer::close`](crate::Producer::close) was called.
    #[error("the producer is closed")]
    Closed,
    /// The producer hit a fatal error earlier.
    #[error("the producer is in a fatal state: {0}")]
    Fatal(KafkaError),
    /// The record alone, framed in a batch of its own, is larger than `max.request.size`
    /// or than all of `buffer.memory`: Java's `KafkaProducer.ensureValidRecordSize`
    /// (`RecordTooLargeException` for either).
    #[error("record of {size} bytes is larger than {limit} {max}")]
    RecordTooLarge {
        /// The record's encoded size, with a batch header.
        size: usize,
        /// The limit's value.
        max: usize,
        /// Which limit.
        limit: RecordSizeLimit,
    },
    /// A transactional producer sends only inside a transaction
    /// ([`Producer::begin_transaction`](crate::Producer::begin_transaction)).
    #[error("no transaction is open")]
    NotInTransaction,
    /// The partition number is negative.
    #[error("invalid partition {0}")]
    InvalidPartition(i32),
    /// `buffer.memory` is used up; try again after deliveries complete.
    #[error("buffer.memory exhausted: {buffered} bytes buffered")]
    BufferFull {
        /// Bytes currently buffered.
        buffered: usize,
    },
    /// A batch given to [`Producer::send_batch`](crate::Producer::send_batch) breaks a
    /// rule of [`crate::handed`].
    #[error("invalid record batch: {0}")]
    InvalidBatch(crate::record::RecordError),
}

/// The limit a record larger than it is refused for ([`SendError::RecordTooLarge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordSizeLimit {
    /// `max.request.size`: no request could carry it.
    MaxRequestSize,
    /// `buffer.memory`: it could never be buffered, even alone.
    BufferMemory,
}

impl core::fmt::Display for RecordSizeLimit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::MaxRequestSize => "max.request.size",
            Self::BufferMemory => "buffer.memory",
        })
    }
}

impl SendError {
    /// The error a refused send makes an open transaction abortable with, `None` for a
    /// refusal that leaves the transaction alone (see [`Producer::send_refused`](crate::Producer::send_refused)).
    ///
    /// Java's `KafkaProducer.doSend` passes only `ApiException`s to
    /// `TransactionManager.maybeTransitionToErrorState`: a record too large
    /// (`RecordTooLargeException`: `MESSAGE_TOO_LARGE`) and `buffer.memory` full past
    /// `max.block.ms` (`BufferExhaustedException`, a `TimeoutException`:
    /// `REQUEST_TIMED_OUT`). It rethrows the others untouched: a closed producer and a
    /// send outside a transaction (`IllegalStateException`, from `throwIfProducerClosed`
    /// and `TransactionManager.maybeAddPartition`), a negative partition
    /// (`IllegalArgumentException` from `ProducerRecord`), an earlier error
    /// (`maybeFailWithError`'s `KafkaException`). A malformed handed batch has no Java
    /// counterpart; like a malformed record it is the caller's error
    /// (`IllegalArgumentException`), and leaves the transaction alone.
    #[must_use]
    pub fn transaction_abort_cause(&self) -> Option<KafkaError> {
        match self {
            Self::RecordTooLarge { .. } => Some(KafkaError::MessageTooLarge),
            Self::BufferFull { .. } => Some(KafkaError::RequestTimedOut),
            Self::Closed
            | Self::Fatal(_)
            | Self::NotInTransaction
            | Self::InvalidPartition(_)
            | Self::InvalidBatch(_) => None,
        }
    }
}

/// A protocol input the core could not accept. The core's state is unchanged: the
/// request the input names (if any) stays outstanding, so a correct answer to it is
/// still accepted, and without one it is failed by `request.timeout.ms` like any
/// unanswered request (and asked again); no batch, sequence or transactional state
/// moves. The one exception is [`Producer::handle_metadata`](crate::Producer::handle_metadata),
/// which applies the leadership a Metadata response carries even under an unknown
/// request id (it is information, not an answer). A driver should log the error (and,
/// for a response it cannot match, close that connection).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// No request with this id is outstanding (already answered, failed or timed out).
    #[error("no outstanding request {0}")]
    UnknownRequest(crate::RequestId),
    /// The response does not match the request it answers.
    #[error("response does not match request {request}: {reason}")]
    Mismatch {
        /// The request.
        request: crate::RequestId,
        /// What did not match.
        reason: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_is_kept() {
        for code in -1..200 {
            assert_eq!(KafkaError::from_code(code).code(), code);
        }
        assert_eq!(KafkaError::from_code(999), KafkaError::Unknown(999));
        assert_eq!(
            KafkaError::from_code(45),
            KafkaError::OutOfOrderSequenceNumber
        );
    }

    #[test]
    fn classification() {
        assert_eq!(
            KafkaError::NotLeaderOrFollower.class(),
            ErrorClass::Leadership
        );
        assert_eq!(KafkaError::NotEnoughReplicas.class(), ErrorClass::Retriable);
        assert_eq!(
            KafkaError::OutOfOrderSequenceNumber.class(),
            ErrorClass::OutOfOrder
        );
        assert_eq!(
            KafkaError::UnknownProducerId.class(),
            ErrorClass::UnknownProducer
        );
        assert_eq!(
            KafkaError::DuplicateSequenceNumber.class(),
            ErrorClass::Duplicate
        );
        assert_eq!(
            KafkaError::ClusterAuthorizationFailed.class(),
            ErrorClass::Fatal
        );
        assert_eq!(
            KafkaError::TopicAuthorizationFailed.class(),
            ErrorClass::NonRetriable
        );
        assert_eq!(KafkaError::Unknown(4242).class(), ErrorClass::NonRetriable);
        assert!(KafkaError::NotEnoughReplicasAfterAppend.may_have_appended());
        assert!(!KafkaError::NotEnoughReplicas.may_have_appended());
    }
}
