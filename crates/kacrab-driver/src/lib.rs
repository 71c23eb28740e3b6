//! The sans-IO producer session: everything between the application, the producer core
//! and the sockets, written once for every driver.
//!
//! A [`Session`] owns the core [`Producer`](kacrab_idempotence::Producer), the
//! application's commands and one [`kacrab_wire::Connection`] per broker socket. It
//! takes commands (send, flush, close, abort, the five transactional operations,
//! partition lookups), routes the core's requests to connections, negotiates versions
//! with ApiVersions, turns response frames into the core's inputs, keeps the broker
//! addresses Metadata reports, holds sends behind a full `buffer.memory` for
//! `max.block.ms`, and answers every command with one [`Completion`]. It opens no
//! socket, reads no clock and spawns nothing: a driver (Tokio tasks, a thread over
//! `std::net`, a `mio` loop, a user's own) moves bytes and time, and nothing else:
//!
//! ```text
//! loop {
//!     while let Some(out) = session.poll_output(now) {
//!         match out {
//!             Output::Connect { conn, addr } => start opening a socket to addr; later
//!                 session.handle_connected(conn, now) or handle_disconnected(conn, now),
//!             Output::Transmit { conn, frame, ticket } => write frame (its parts, one
//!                 vectored write) to conn's socket, in
//!                 order (a driver writing from several tasks orders Produce frames across
//!                 connections by their ticket, see kacrab_idempotence::ticket); once
//!                 the socket took it whole, session.handle_transmitted(conn, 1, now)
//!                 (required: an acks=0 request completes on it),
//!             Output::Release { ticket } => that Produce will never be written: a
//!                 ticket-ordering driver abandons its ticket; others ignore it,
//!             Output::Close { conn, reason } => close conn's socket (log the reason),
//!         }
//!     }
//!     while let Some(done) = session.poll_completion() { tell the application }
//!     if session.is_finished() { break }
//!     wait for bytes (session.handle_bytes), a disconnect (session.handle_disconnected),
//!     an application command (session.send, flush, close, ...), or the clock reaching
//!     session.poll_timeout() (session.handle_timeout)
//! }
//! ```
//!
//! Every timer is the session's (`poll_timeout` folds them all); after
//! `handle_timeout(now)`, `poll_timeout()` is `None` or later than `now`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod app;
mod completion;
mod config;
mod connection_error;
mod convert;
mod extensions;
mod features;
mod interceptor;
pub mod metrics;
mod network;
#[cfg(feature = "opentelemetry")]
pub mod otel;
mod output;
mod partitioner;
mod phases;
mod record;
mod refresh;
mod routing;
mod sasl;
mod secret;
mod send_slots;
mod session;
mod telemetry;
mod tls;
mod topics;
mod trace;
mod waiters;

pub use app::TxnCall;
pub use completion::{Completion, OpId, ProduceError, SendId, TopicError};
pub use config::security::{self, SecurityConfig, SecurityProtocol, TlsSettings};
pub use config::METRICS_PUBLISH_INTERVAL_MS;
pub use config::{
    parse_java_properties, ConfigNote, ConfigProblem, ConfigProblems, MalformedProperties,
    METADATA_MAX_IDLE_MS, PARTITIONER_ADAPTIVE_PARTITIONING_ENABLE,
    PARTITIONER_AVAILABILITY_TIMEOUT_MS, PARTITIONER_IGNORE_KEYS,
};
pub use config::{
    ControlFlag, JaasError, NonceSeed, OAuthBearerSource, OidcClientCredentials, OidcTiming,
    SaslConfig, SaslConfigError, SaslCredentials, SaslMechanism, SASL_JAAS_CONFIG, SASL_MECHANISM,
};
pub use config::{
    MetricsConfig, SessionConfig, SessionConfigBuilder, SessionConfigError, BOOTSTRAP_SERVERS,
    CLIENT_ID, COMPRESSION_GZIP_LEVEL, COMPRESSION_LZ4_LEVEL, COMPRESSION_TYPE,
    COMPRESSION_ZSTD_LEVEL, ENABLE_METRICS_PUSH, MAX_BLOCK_MS, METRICS_NUM_SAMPLES,
    METRICS_RECORDING_LEVEL, METRICS_SAMPLE_WINDOW_MS, SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
};
pub use config::{
    CONNECTIONS_MAX_IDLE_MS, RECEIVE_BUFFER_BYTES, RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MS,
    SEND_BUFFER_BYTES, SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS,
};
pub use connection_error::{ConnectionError, ConnectionFailures, UnresolvableBootstrap};
pub use extensions::Extensions;
pub use interceptor::{Acknowledgement, InterceptorError, ProducerInterceptor};
pub use kacrab_idempotence::compression::{Codec, Compression};
pub use kacrab_wire::Frame;
pub use metrics::MetricsSnapshot;
#[cfg(feature = "opentelemetry")]
pub use otel::OtelInterceptor;
pub use output::{CloseReason, ConnId, ConnectOptions, Output};
pub use partitioner::{
    murmur2, partition_for_key, KeyUse, Partitioner, StickyDraw, TopicPartitions,
};
pub use phases::{ConnectError, ConnectFailure, TlsFailure};
pub use record::{ProducerRecord, RecordMetadata, TimestampType};
pub use sasl::oauthbearer::{OAuthBearerToken, OAuthBearerTokenProvider, UnsecuredJwt};
pub use sasl::token_handle::OAuthBearerTokenHandle;
pub use sasl::SaslError;
pub use secret::Secret;
pub use send_slots::SendSlots;
pub use session::Session;
pub use topics::PartitionInfo;
// The core's types that appear in the session's API, so that a driver needs this crate
// alone.
pub use kacrab_idempotence::{
    ConfigError, ConsumerGroupMetadata, DeliveryError, Header, KafkaError, OffsetToCommit,
    SendError, Stats, Timestamp, Topic, TopicPartition, TransactionState, TxnError, TxnOp,
};

// The README is the crate's page on the registry: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
