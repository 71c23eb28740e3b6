//! What the application learns from the session: one stream of [`Completion`]s, each
//! naming the command it completes by the id that command returned.

use std::time::Duration;

use kacrab_idempotence::{DeliveryError, KafkaError, SendError, Topic, TxnError, TxnOp};

use crate::record::RecordMetadata;

/// Names one [`Session::send`](crate::Session::send). Ids ascend by one per call, in
/// call order, so a driver can keep its waiters in a deque.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SendId(pub u64);

/// Names one command other than a send (a flush, a close, a transactional operation, a
/// partition lookup). Ids ascend by one per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u64);

/// Why a record sent with [`Session::send`](crate::Session::send) has no
/// [`RecordMetadata`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProduceError {
    /// The producer refused the record: nothing was queued and nothing was written.
    /// [`SendError::BufferFull`] means `buffer.memory` stayed full for `max.block.ms`;
    /// [`SendError::Closed`] that the producer was closed before the record reached it.
    #[error(transparent)]
    Send(#[from] SendError),
    /// The producer accepted the record but gave up on it.
    #[error("{error} (possibly written: {possibly_written})")]
    Delivery {
        /// Why.
        error: DeliveryError,
        /// Whether some attempt may have reached the log. A record reported so is in the
        /// log at most once, and never out of order; one reported `false` is certainly
        /// not in it.
        possibly_written: bool,
    },
    /// A connection could not be secured (a TLS failure), which ends the session: the
    /// broker and the cause. The record was given up with everything else.
    #[error("{error} (possibly written: {possibly_written})")]
    Connection {
        /// Which broker, and why.
        error: crate::phases::ConnectError,
        /// As for [`ProduceError::Delivery`]: `false` for a record never written.
        possibly_written: bool,
    },
    /// The record's topic could not be used: nothing was queued and nothing was
    /// written.
    #[error("topic {topic}: {error}")]
    Topic {
        /// The record's topic.
        topic: Topic,
        /// Why.
        error: TopicError,
    },
    /// The driver's loop (its task or thread) ended before the record had an outcome:
    /// its runtime shut down, or it panicked. The session itself never reports this; a
    /// driver does, for the records it can no longer learn about. The record may have
    /// been written.
    #[error("the producer's driver stopped before the record had an outcome")]
    Terminated,
}

/// Why a record's topic could not be used (see [`ProduceError::Topic`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopicError {
    /// No metadata named the topic within `max.block.ms` (it does not exist and the
    /// broker does not create it, or no broker answered): Java's `TimeoutException`
    /// "Topic ... not present in metadata after ... ms" from `KafkaProducer.waitOnMetadata`.
    /// The last connection error of every broker address still failing follows, so
    /// that an unreachable cluster names its cause ("connection refused").
    #[error("not present in metadata after {} ms{connection_failures}", waited.as_millis())]
    NotPresent {
        /// `max.block.ms`.
        waited: Duration,
        /// Each address whose last connection failed when the wait ended, with why.
        connection_failures: crate::ConnectionFailures,
    },
    /// The broker refused the topic: TOPIC_AUTHORIZATION_FAILED or
    /// INVALID_TOPIC_EXCEPTION, which waiting cannot fix.
    #[error("refused by the broker: {0}")]
    Refused(KafkaError),
    /// The name breaks Kafka's rules for topic names (`Topic.validate`).
    #[error("invalid topic name: {0}")]
    InvalidName(&'static str),
    /// The record's own partition was not among the topic's partitions in any
    /// metadata within `max.block.ms`: Java's `TimeoutException` "Partition ... of
    /// topic ... with partition count ... is not present in metadata after ... ms"
    /// from `KafkaProducer.waitOnMetadata`.
    #[error("partition {partition} not present in metadata (partition count {count}) after {} ms", waited.as_millis())]
    PartitionNotPresent {
        /// The record's partition.
        partition: i32,
        /// The topic's partition count in the latest metadata.
        count: i32,
        /// `max.block.ms`.
        waited: Duration,
    },
    /// The application's partitioner chose a partition the topic does not have.
    #[error("the partitioner chose partition {partition} of {count}")]
    NoSuchPartition {
        /// The partition chosen.
        partition: i32,
        /// The topic's partition count.
        count: i32,
    },
}

impl ProduceError {
    /// Whether the record may be in the log. `false` when it certainly is not.
    #[must_use]
    pub fn possibly_written(&self) -> bool {
        match self {
            Self::Send(_) | Self::Topic { .. } => false,
            Self::Delivery {
                possibly_written, ..
            }
            | Self::Connection {
                possibly_written, ..
            } => *possibly_written,
            Self::Terminated => true,
        }
    }
}

/// Something the application should learn. Every command that returns an id gets
/// exactly one completion naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completion {
    /// A record's outcome.
    Record {
        /// The send.
        id: SendId,
        /// Where it landed, or why it did not.
        outcome: Result<RecordMetadata, ProduceError>,
    },
    /// Every record sent before the flush has an outcome.
    Flushed {
        /// The flush.
        op: OpId,
    },
    /// A transactional operation ended.
    Transaction {
        /// The call.
        op: OpId,
        /// Which operation it was.
        kind: TxnOp,
        /// Its outcome.
        result: Result<(), TxnError>,
    },
    /// A partition-count lookup ended.
    PartitionCount {
        /// The lookup.
        op: OpId,
        /// The partition count, or `None` if it could not be learned within
        /// `max.block.ms` (the topic does not exist, no broker answered, or the producer
        /// closed).
        count: Option<i32>,
    },
    /// A connection could not be secured (TLS): the broker and the cause. Final: the
    /// session then fails what is left as [`Session::abort`](crate::Session::abort)
    /// does (a record never written is reported `possibly_written: false`) and
    /// finishes. Comes once, before those records' completions.
    ConnectionFailed {
        /// Which broker, and why.
        error: crate::phases::ConnectError,
    },
    /// The producer is closed: every record has an outcome and nothing more will be
    /// sent. Every close call gets one.
    Closed {
        /// The close.
        op: OpId,
    },
}
