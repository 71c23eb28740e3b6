//! The blocking producer's errors. A record's outcome is the session's
//! [`kacrab_driver::ProduceError`], re-exported as it is (the Tokio driver reports the
//! same type), with its `Terminated` for an outcome lost with the I/O thread.

use std::time::Duration;

use kacrab_driver::SessionConfigError;

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
    /// No host of `bootstrap.servers` resolved to an address (each is named with the
    /// resolver's message). Java's producer constructor fails the same way.
    #[error(transparent)]
    UnresolvableBootstrap(#[from] kacrab_driver::UnresolvableBootstrap),
}

/// Why [`Producer::send`](crate::Producer::send) refused a record. Nothing was queued and
/// the record will never have another outcome. (A refusal that reaches the record once it
/// was handed over comes as [`ProduceError::Send`](crate::ProduceError::Send) through its
/// handle or callback instead: `buffer.memory` full for `max.block.ms` is then the core's
/// [`SendError::BufferFull`](kacrab_idempotence::SendError::BufferFull).)
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
    /// A final connection failure (a TLS or SASL failure: the broker and the cause)
    /// ended the producer; as Java's `KafkaProducer.send` rethrows the
    /// AuthenticationException, the refusal carries it.
    #[error("{0}")]
    Connection(kacrab_driver::ConnectError),
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
