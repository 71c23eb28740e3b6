//! The producer's errors.

use kacrab_driver::SessionConfigError;
use kacrab_idempotence::{DeliveryError, SendError};

/// Why a [`Producer`](crate::Producer) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration was refused: an unknown, malformed or out-of-range key,
    /// conflicting keys, or no `bootstrap.servers`.
    #[error(transparent)]
    Config(#[from] SessionConfigError),
    /// The producer was built outside a Tokio runtime: it spawns its tasks on the current
    /// one.
    #[error("a kacrab-tokio Producer must be built inside a Tokio runtime")]
    NoRuntime,
}

/// Why [`Producer::send`](crate::Producer::send) did not deliver a record: the session's
/// [`kacrab_driver::ProduceError`], plus [`ProduceError::Terminated`] for an outcome lost
/// with the driver task.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProduceError {
    /// The producer refused the record: nothing was queued and nothing was written.
    /// [`SendError::BufferFull`] means `buffer.memory` stayed full for `max.block.ms`;
    /// [`SendError::Closed`] that [`Producer::close`](crate::Producer::close) was called
    /// (or every handle was dropped) before the record reached the producer.
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
    /// A connection could not be secured (TLS): the broker and the cause. Final: every
    /// record without an outcome fails so.
    #[error("{error} (possibly written: {possibly_written})")]
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
    /// The producer's driver task ended (its runtime shut down, or it panicked) before
    /// the record had an outcome. The record may have been written.
    #[error("the producer's driver task ended before the record had an outcome")]
    Terminated,
}

impl ProduceError {
    /// Whether the record may be in the log: a delivery failure whose attempts may have
    /// landed, or an outcome lost with the driver task. `false` when it certainly is not.
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

impl From<kacrab_driver::ProduceError> for ProduceError {
    fn from(e: kacrab_driver::ProduceError) -> Self {
        match e {
            kacrab_driver::ProduceError::Send(e) => Self::Send(e),
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
            // A kind of failure this version does not know: report it as an outcome
            // lost, which claims nothing about the log (possibly written).
            _ => Self::Terminated,
        }
    }
}
