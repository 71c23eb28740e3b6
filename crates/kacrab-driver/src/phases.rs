//! The phases a connection goes through before it carries the core's requests:
//! TCP connected (the driver's `handle_connected`) -> TLS handshake (SSL, SASL_SSL) ->
//! ApiVersions (negotiation) -> SASL (SASL_PLAINTEXT, SASL_SSL; `network/sasl_phase.rs`)
//! -> ready. The network half (`network.rs`) owns the state of
//! each connection; this module owns the transport under it (plain or TLS), the wall
//! clock rustls judges certificates by, and the failures that end the session.
//!
//! A failure of the security phases (a certificate the client does not trust, a host
//! name it does not match, an expired certificate, a broker that does not speak TLS, a
//! SASL authentication the broker refuses or a broker that cannot prove it knows the
//! SCRAM credential) is final: retrying cannot heal a configuration, and retrying would only hammer the
//! broker (Java's producer likewise surfaces an `SslAuthenticationException` to the
//! application instead of retrying: `NetworkClient.processDisconnection`,
//! `ChannelState.AUTHENTICATION_FAILED`). The session reports one
//! [`Completion::ConnectionFailed`](crate::Completion::ConnectionFailed) naming the broker
//! and the cause, then fails what is left as a forced close would; a record never
//! written is reported `possibly_written: false`.

use std::sync::Arc;

use bytes::Bytes;
use kacrab_idempotence::Timestamp;
use kacrab_wire::Frame;
use rustls::ClientConfig;

use crate::config::security::SecurityConfig;
use crate::config::{NonceSeed, SessionConfig};
use crate::sasl::{ClientNonce, SaslError, SaslExchange};
use crate::tls::{Opened, TlsStream, UnixClock};

pub use crate::tls::TlsFailure;

/// Why a connection to a broker could not be set up, naming the broker.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("connection to broker {broker} ({}) failed: {cause}", node.map_or_else(|| "bootstrap".to_owned(), |n| format!("node {n}")))]
#[non_exhaustive]
pub struct ConnectError {
    /// The broker's `host:port`.
    pub broker: String,
    /// Its node id, `None` for a bootstrap address.
    pub node: Option<i32>,
    /// What failed.
    pub cause: ConnectFailure,
}

/// The phase that failed, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The TLS handshake (SSL, SASL_SSL).
    #[error("TLS handshake: {0}")]
    Tls(#[from] TlsFailure),
    /// The SASL authentication (SASL_PLAINTEXT, SASL_SSL), or a KIP-368
    /// re-authentication on a connection already in use.
    #[error("SASL authentication: {0}")]
    Sasl(#[from] crate::sasl::SaslError),
}

/// The transport of one connection.
#[derive(Debug)]
pub(crate) enum Transport {
    /// Plain TCP: frames go as they are.
    Plain,
    /// TLS: frames are sealed into records.
    Tls(Box<TlsStream>),
}

impl Transport {
    /// The bytes to write for `frame`: the frame itself on plain TCP, its TLS records
    /// (one buffer) on TLS.
    pub(crate) fn seal(&mut self, frame: Frame) -> Result<Frame, TlsFailure> {
        match self {
            Self::Plain => Ok(frame),
            Self::Tls(tls) => tls.seal(frame).map(Frame::new),
        }
    }

    /// What bytes read from the socket carry.
    pub(crate) fn open(&mut self, bytes: &[u8]) -> Result<Opened, TlsFailure> {
        match self {
            Self::Plain => Ok(Opened {
                plaintext: bytes.to_vec(),
                ..Opened::default()
            }),
            Self::Tls(tls) => tls.open(bytes),
        }
    }

    /// Whether a TLS handshake is still running.
    pub(crate) fn is_handshaking(&self) -> bool {
        match self {
            Self::Plain => false,
            Self::Tls(tls) => tls.is_handshaking(),
        }
    }

    /// TLS bytes waiting to be written (the ClientHello once connected).
    pub(crate) fn take_outgoing(&mut self) -> Bytes {
        match self {
            Self::Plain => Bytes::new(),
            Self::Tls(tls) => tls.take_outgoing(),
        }
    }
}

/// The session's security: the TLS configuration, if any, the SASL settings, if the
/// protocol authenticates, and the clock.
#[derive(Debug)]
pub(crate) struct Security {
    tls: Option<Arc<ClientConfig>>,
    /// The SASL settings, `Some` exactly for SASL_PLAINTEXT and SASL_SSL (validated by
    /// `SessionConfigBuilder::build`).
    sasl: Option<crate::config::SaslConfig>,
    /// The seed of the SCRAM client nonces: the driver's entropy, else derived from
    /// `kacrab.jitter.seed` (deterministic, for tests).
    nonce_seed: NonceSeed,
    /// Exchanges begun so far: the counter every nonce is derived with, so no two
    /// exchanges of a session share one.
    exchanges: u64,
    clock: UnixClock,
    /// The driver's clock and the wall clock at the session's start: the wall clock at
    /// `now` is `start_unix_ms + (now - start)`.
    start: Timestamp,
    start_unix_ms: i64,
}

impl Security {
    pub(crate) fn new(session: &SessionConfig, now: Timestamp, unix_ms: i64) -> Self {
        let config: &SecurityConfig = session.security();
        let sasl = config.protocol.uses_sasl().then(|| session.sasl().clone());
        let nonce_seed = match session.sasl().nonce_seed_setting() {
            Some(seed) => seed,
            None => {
                let mut seed = [0u8; 32];
                for (i, chunk) in seed.chunks_mut(8).enumerate() {
                    let word = session.core().jitter_seed() ^ (0x5341_534c_0000_0000 + i as u64);
                    chunk.copy_from_slice(&word.to_be_bytes());
                }
                NonceSeed::new(seed)
            }
        };
        let clock = UnixClock::default();
        let tls = config.tls.as_ref().map(|settings| {
            // `SecurityBuilder::build` made this same configuration once already.
            crate::tls::client_config(settings, clock.clone())
                .expect("TLS settings were validated when the configuration was built")
        });
        let security = Self {
            tls,
            sasl,
            nonce_seed,
            exchanges: 0,
            clock,
            start: now,
            start_unix_ms: unix_ms,
        };
        security.tick(now);
        security
    }

    /// Sets the wall clock rustls reads to `now`'s.
    pub(crate) fn tick(&self, now: Timestamp) {
        let elapsed = now.saturating_duration_since(self.start).as_millis() as i64;
        let unix_ms = self.start_unix_ms.saturating_add(elapsed).max(0);
        self.clock.set(unix_ms as u64);
    }

    /// The transport for a new connection to `addr`.
    pub(crate) fn transport(&self, addr: &str) -> Result<Transport, TlsFailure> {
        match &self.tls {
            None => Ok(Transport::Plain),
            Some(config) => Ok(Transport::Tls(Box::new(TlsStream::connect(
                config.clone(),
                addr,
            )?))),
        }
    }

    /// Whether connections authenticate with SASL after version negotiation.
    pub(crate) fn uses_sasl(&self) -> bool {
        self.sasl.is_some()
    }

    /// A new SASL exchange, begun at `now`, with the next nonce of the session.
    pub(crate) fn sasl_exchange(
        &mut self,
        now: Timestamp,
    ) -> Option<Result<SaslExchange, SaslError>> {
        let config = self.sasl.as_ref()?;
        self.exchanges += 1;
        let nonce = ClientNonce::derive(&self.nonce_seed.0, self.exchanges);
        let elapsed = now.saturating_duration_since(self.start).as_millis() as i64;
        let unix_ms = self.start_unix_ms.saturating_add(elapsed);
        Some(SaslExchange::new(config, unix_ms, nonce))
    }

    /// Whether connections start with a TLS handshake.
    pub(crate) fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }
}
