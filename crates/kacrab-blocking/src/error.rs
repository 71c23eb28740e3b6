//! The blocking producer's errors.

use std::time::Duration;

use kacrab_driver::SessionConfigError;
use kacrab_idempotence::DeliveryError;

/// Why [`Producer::from_properties`](crate::Producer::from_properties) refused a
/// configuration, or could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The session refused the properties: a missing or malformed `bootstrap.servers`, a
    /// key nothing knows, a value out of range, conflicting keys.
    #[error(transparent)]
    Config(#[from] SessionConfigError),
    /// The I/O thread could not be started.
    #[error("could not start the I/O thread: {0}")]
    Spawn(String),
}

/// Why [`Producer::send`](crate::Producer::send) refused a record. Nothing was queued and
/// the record will never have another outcome.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The core refused it: the producer is closed or fatal, the record is larger than
    /// `max.request.size`, or its partition is negative.
    #[error(transparent)]
    Rejected(#[from] kacrab_idempotence::SendError),
    /// `buffer.memory` stayed full for `max.block.ms`.
    #[error("buffer.memory stayed full for max.block.ms ({0:?})")]
    Timeout(Duration),
    /// The producer's I/O thread has stopped.
    #[error("the producer's I/O thread has stopped")]
    Terminated,
}

/// Why a record sent with [`Producer::send`](crate::Producer::send) has no
/// [`RecordMetadata`](crate::RecordMetadata).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProduceError {
    /// The core gave up on the record (broker error, `delivery.timeout.ms`, fatal error).
    #[error("{error}")]
    Delivery {
        /// Why.
        error: DeliveryError,
        /// Whether some attempt may have reached the log. A failed record is in the log
        /// at most once, and never out of order.
        possibly_written: bool,
    },
    /// The record was refused before it was queued, for a reason the calling thread could
    /// not see yet (the producer turned fatal or closed meanwhile, the record is too large,
    /// or `buffer.memory` stayed full for `max.block.ms`).
    #[error("record refused: {0}")]
    Send(SendError),
    /// A connection could not be secured (TLS): the broker and the cause. Final: every
    /// record without an outcome fails so.
    #[error("{error}")]
    Connection {
        /// Which broker, and why.
        error: kacrab_driver::ConnectError,
        /// `false` for a record never written.
        possibly_written: bool,
    },
    /// The record's topic could not be used (unknown after `max.block.ms`, refused by
    /// the broker, an invalid name): nothing was queued and nothing was written.
    #[error("topic {topic}: {error}")]
    Topic {
        /// The record's topic.
        topic: kacrab_driver::Topic,
        /// Why.
        error: kacrab_driver::TopicError,
    },
    /// The producer's I/O thread stopped (it panicked) before the record had an outcome.
    /// The record may have been written.
    #[error("the producer's I/O thread stopped before the record had an outcome")]
    Terminated,
}

impl ProduceError {
    /// Whether the record may be in the log: a delivery failure whose attempts may have
    /// landed, or an outcome lost with the I/O thread. `false` when it certainly is not.
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

/// Why a blocking call ([`Producer::flush`](crate::Producer::flush),
/// [`Producer::close`](crate::Producer::close),
/// [`Producer::partition_count`](crate::Producer::partition_count)) returned without its
/// result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The time allowed passed.
    #[error("timed out")]
    Timeout,
    /// Called from a delivery callback, which runs on the I/O thread: waiting there would
    /// wait for the thread that is waiting.
    #[error("cannot wait on the producer's own I/O thread (called from a delivery callback)")]
    OnIoThread,
    /// The producer's I/O thread has stopped without a `close`.
    #[error("the producer's I/O thread has stopped")]
    Terminated,
}

impl ProduceError {
    /// The session's outcome, as this adapter reports it: `buffer.memory` full for
    /// `max.block.ms` is [`SendError::Timeout`], as from a `send` that blocked.
    pub(crate) fn from_session(e: kacrab_driver::ProduceError, max_block: Duration) -> Self {
        match e {
            kacrab_driver::ProduceError::Send(kacrab_idempotence::SendError::BufferFull {
                ..
            }) => Self::Send(SendError::Timeout(max_block)),
            kacrab_driver::ProduceError::Send(e) => Self::Send(SendError::Rejected(e)),
            kacrab_driver::ProduceError::Delivery {
                error,
                possibly_written,
            } => Self::Delivery {
                error,
                possibly_written,
            },
            kacrab_driver::ProduceError::Connection {
                error,
                possibly_written,
            } => Self::Connection {
                error,
                possibly_written,
            },
            kacrab_driver::ProduceError::Topic { topic, error } => Self::Topic { topic, error },
            // A kind of failure this adapter does not know yet: report it as an outcome
            // lost, which never claims the record is absent from the log.
            _ => Self::Terminated,
        }
    }
}
