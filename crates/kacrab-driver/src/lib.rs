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
//!             Output::Transmit { conn, frame, ticket } => write frame to conn's socket, in
//!                 order (a driver writing from several tasks orders Produce frames across
//!                 connections by their ticket, see kacrab_idempotence::ticket),
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
mod convert;
mod features;
pub mod metrics;
mod network;
mod output;
mod phases;
mod record;
mod sasl;
mod secret;
mod session;
mod tls;

pub use app::TxnCall;
pub use completion::{Completion, OpId, ProduceError, SendId};
pub use config::security::{self, SecurityConfig, SecurityProtocol, TlsSettings};
pub use config::{
    ControlFlag, JaasError, OAuthBearerSource, SaslConfig, SaslConfigError, SaslCredentials,
    SaslMechanism, SASL_JAAS_CONFIG, SASL_MECHANISM,
};
pub use config::{
    MetricsConfig, SessionConfig, SessionConfigBuilder, SessionConfigError, BOOTSTRAP_SERVERS,
    CLIENT_ID, COMPRESSION_GZIP_LEVEL, COMPRESSION_LZ4_LEVEL, COMPRESSION_TYPE,
    COMPRESSION_ZSTD_LEVEL, MAX_BLOCK_MS, METRICS_NUM_SAMPLES, METRICS_RECORDING_LEVEL,
    METRICS_SAMPLE_WINDOW_MS, SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
};
pub use kacrab_idempotence::compression::{Codec, Compression};
pub use metrics::MetricsSnapshot;
pub use output::{CloseReason, ConnId, Output};
pub use phases::{ConnectError, ConnectFailure, TlsFailure};
pub use record::{ProducerRecord, RecordMetadata};
pub use sasl::oauthbearer::{OAuthBearerToken, OAuthBearerTokenProvider, UnsecuredJwt};
pub use sasl::SaslError;
pub use secret::Secret;
pub use session::Session;
// The core's types that appear in the session's API, so that a driver needs this crate
// alone.
pub use kacrab_idempotence::{
    ConfigError, ConsumerGroupMetadata, DeliveryError, Header, KafkaError, OffsetToCommit,
    SendError, Stats, Timestamp, Topic, TopicPartition, TransactionState, TxnError, TxnOp,
};

/// Java-compatible murmur2 partitioning for keyed records: the partition Kafka's default
/// partitioner picks for `key` among `partitions` partitions.
#[must_use]
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    let positive = murmur2(key) & 0x7fff_ffff;
    positive % partitions.max(1)
}

/// Kafka's murmur2 hash (`Utils.murmur2`), seed `0x9747b28c`.
#[must_use]
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = 0x9747_b28c ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from Kafka's `UtilsTest.testMurmur2`.
    #[test]
    fn murmur2_matches_kafka() {
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (input, expected) in cases {
            assert_eq!(
                murmur2(input),
                expected,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
