//! TLS inside the session: rustls' sans-IO [`rustls::ClientConnection`] per broker
//! connection. The driver moves ciphertext only; the session encrypts every frame it
//! transmits and decrypts every byte it is handed.
//!
//! Time is an input here as everywhere below the drivers: certificate validity is judged
//! against the session's own wall clock ([`UnixClock`], advanced from `now`), never the
//! machine's, so a test decides what "expired" means.

mod identity;
mod verify;

use std::io::{IoSlice, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use kacrab_wire::Frame;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, ClientConnection, RootCertStore};

use crate::config::security::{EndpointIdentification, TlsSettings, TrustAnchors};
use crate::config::SessionConfigError;

/// The session's wall clock, in milliseconds since the Unix epoch, shared with rustls'
/// certificate verifier. The session sets it before every call into rustls.
#[derive(Clone, Debug, Default)]
pub(crate) struct UnixClock(Arc<AtomicU64>);

impl UnixClock {
    pub(crate) fn set(&self, unix_ms: u64) {
        self.0.store(unix_ms, Ordering::Relaxed);
    }
}

impl rustls::time_provider::TimeProvider for UnixClock {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(
            std::time::Duration::from_millis(self.0.load(Ordering::Relaxed)),
        ))
    }
}

/// The rustls client configuration for `settings`, judging time by `clock`.
///
/// # Errors
/// Certificates or a key rustls refuses, or no usable platform trust store.
pub(crate) fn client_config(
    settings: &TlsSettings,
    clock: UnixClock,
) -> Result<Arc<ClientConfig>, SessionConfigError> {
    let tls_error = |key: &'static str, reason: String| SessionConfigError::Tls { key, reason };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    match &settings.trust {
        TrustAnchors::Pem(certs) => {
            for c in certs {
                roots.add(c.clone()).map_err(|e| {
                    tls_error("ssl.truststore.certificates", format!("unusable CA: {e}"))
                })?;
            }
        }
        TrustAnchors::Platform => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(tls_error(
                    "ssl.truststore.location",
                    "no ssl.truststore given and the platform trust store has no usable certificate"
                        .to_owned(),
                ));
            }
        }
    }
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    if settings.versions.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    if settings.versions.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    let clock: Arc<dyn rustls::time_provider::TimeProvider> = Arc::new(clock);
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| tls_error("ssl.truststore.certificates", e.to_string()))?;
    let verifier: Arc<dyn ServerCertVerifier> = match settings.endpoint_identification {
        EndpointIdentification::Https => verifier,
        EndpointIdentification::Disabled => Arc::new(verify::AnyName(verifier)),
    };
    let builder = ClientConfig::builder_with_details(provider.clone(), clock)
        .with_protocol_versions(&versions)
        .map_err(|e| tls_error("ssl.enabled.protocols", e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match &settings.identity {
        None => builder.with_no_client_auth(),
        Some(id) => builder.with_client_cert_resolver(identity::resolver(id, &provider)?),
    };
    Ok(Arc::new(config))
}

/// Why a TLS handshake (or a TLS connection) failed. Names the cause; never contains key
/// material.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The broker's certificate chain does not lead to a trusted CA
    /// (`ssl.truststore.*`, or the platform's roots).
    #[error("the broker's certificate is not trusted (unknown issuer)")]
    UntrustedCertificate,
    /// The broker's certificate does not name the host connected to
    /// (`ssl.endpoint.identification.algorithm=https`).
    #[error("the broker's certificate is not valid for host {host:?}")]
    HostnameMismatch {
        /// The host connected to.
        host: String,
    },
    /// The broker's certificate has expired.
    #[error("the broker's certificate has expired")]
    CertificateExpired,
    /// The broker's certificate is not valid yet.
    #[error("the broker's certificate is not valid yet")]
    CertificateNotYetValid,
    /// Another problem with the broker's certificate.
    #[error("the broker's certificate was refused: {0}")]
    BadCertificate(String),
    /// The broker refused the handshake with this alert (for instance a client
    /// certificate it requires, or does not trust).
    #[error("the broker refused the TLS handshake: alert {0}")]
    AlertReceived(String),
    /// The broker answered with bytes that are not TLS: the port is probably a
    /// PLAINTEXT or SASL_PLAINTEXT listener.
    #[error("the broker did not answer in TLS (is the port a plaintext listener?)")]
    NotTls,
    /// The broker closed the connection during the handshake (a plaintext listener does
    /// so on a TLS ClientHello, which it reads as an oversized request).
    #[error("the broker closed the connection during the TLS handshake (is the port a plaintext listener?)")]
    ClosedDuringHandshake,
    /// The host is not a valid TLS server name.
    #[error("{0:?} is not a valid TLS server name")]
    InvalidServerName(String),
    /// Any other TLS error.
    #[error("TLS error: {0}")]
    Other(String),
}

impl TlsFailure {
    fn from_rustls(e: &rustls::Error, host: &str) -> Self {
        use rustls::Error as E;
        match e {
            E::InvalidCertificate(c) => match c {
                CertificateError::UnknownIssuer
                | CertificateError::BadSignature
                | CertificateError::UnhandledCriticalExtension => Self::UntrustedCertificate,
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => Self::HostnameMismatch {
                    host: host.to_owned(),
                },
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    Self::CertificateExpired
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    Self::CertificateNotYetValid
                }
                other => Self::BadCertificate(format!("{other:?}")),
            },
            E::AlertReceived(a) => Self::AlertReceived(format!("{a:?}")),
            E::InvalidMessage(_) | E::InappropriateMessage { .. } => Self::NotTls,
            other => Self::Other(other.to_string()),
        }
    }
}

/// One connection's TLS state.
pub(crate) struct TlsStream {
    conn: ClientConnection,
    host: String,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("host", &self.host)
            .field("handshaking", &self.conn.is_handshaking())
            .finish_non_exhaustive()
    }
}

/// What one batch of ciphertext from the broker gave.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    /// Decrypted application bytes (Kafka frames).
    pub(crate) plaintext: Vec<u8>,
    /// TLS bytes to send back (handshake messages), possibly empty.
    pub(crate) reply: Bytes,
    /// The broker closed the TLS session (close_notify).
    pub(crate) closed: bool,
}

impl TlsStream {
    /// A client handshake toward `addr` (`host:port`); SNI and hostname verification use
    /// the host.
    pub(crate) fn connect(config: Arc<ClientConfig>, addr: &str) -> Result<Self, TlsFailure> {
        let host = host_of(addr).to_owned();
        let name = ServerName::try_from(host.clone())
            .map_err(|_| TlsFailure::InvalidServerName(host.clone()))?;
        let conn =
            ClientConnection::new(config, name).map_err(|e| TlsFailure::from_rustls(&e, &host))?;
        Ok(Self { conn, host })
    }

    /// Whether the handshake is still running.
    pub(crate) fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Every TLS byte rustls wants sent now (the ClientHello, handshake replies).
    pub(crate) fn take_outgoing(&mut self) -> Bytes {
        let mut out = Vec::new();
        self.write_outgoing(&mut out);
        Bytes::from(out)
    }

    /// Encrypts one frame: the TLS records to transmit.
    ///
    /// rustls buffers at most 64 KiB of plaintext by default (`set_buffer_limit`), and a
    /// Produce frame of several full batches is larger; so the frame goes in as pieces,
    /// each sealed into TLS records before the next, and no frame is ever too large. The
    /// frame's parts go in together (a vectored write), so a small part between two
    /// batches shares their records instead of making one of its own.
    pub(crate) fn seal(&mut self, mut plaintext: Frame) -> Result<Bytes, TlsFailure> {
        // A TLS record carries at most 16 KiB and adds at most a few dozen bytes.
        let len = plaintext.len();
        let mut out = Vec::with_capacity(len + len / 256 + 64);
        while plaintext.has_remaining() {
            let mut slices = [IoSlice::new(&[]); 64];
            let n = plaintext.chunks_vectored(&mut slices);
            let taken = self
                .conn
                .writer()
                .write_vectored(&slices[..n])
                .map_err(|e| TlsFailure::Other(e.to_string()))?;
            let drained = self.write_outgoing(&mut out);
            if taken == 0 && drained == 0 {
                return Err(TlsFailure::Other(
                    "rustls took none of a frame and had nothing to send".to_owned(),
                ));
            }
            plaintext.advance(taken);
        }
        self.write_outgoing(&mut out);
        Ok(Bytes::from(out))
    }

    /// Moves every TLS byte rustls wants sent into `out`; returns how many.
    fn write_outgoing(&mut self, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        while self.conn.wants_write() {
            // Writing to a Vec cannot fail.
            if self.conn.write_tls(out).unwrap_or(0) == 0 {
                break;
            }
        }
        out.len() - before
    }

    /// Feeds ciphertext read from the socket.
    pub(crate) fn open(&mut self, mut ciphertext: &[u8]) -> Result<Opened, TlsFailure> {
        let mut opened = Opened::default();
        while !ciphertext.is_empty() {
            // `read_tls` takes what its buffer holds; decrypting makes room for more.
            match self.conn.read_tls(&mut ciphertext) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(TlsFailure::Other(e.to_string())),
            }
            let state = self
                .conn
                .process_new_packets()
                .map_err(|e| TlsFailure::from_rustls(&e, &self.host))?;
            self.drain_plaintext(&mut opened)?;
            if state.peer_has_closed() {
                opened.closed = true;
                break;
            }
        }
        opened.reply = self.take_outgoing();
        Ok(opened)
    }

    fn drain_plaintext(&mut self, opened: &mut Opened) -> Result<(), TlsFailure> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.conn.reader().read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => opened.plaintext.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                // An unclean close (no close_notify) shows only once the socket ends.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(TlsFailure::Other(e.to_string())),
            }
        }
    }
}

/// The host part of `host:port` (brackets of an IPv6 literal removed).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_strips_port_and_brackets() {
        assert_eq!(host_of("b0:9092"), "b0");
        assert_eq!(host_of("[::1]:9093"), "::1");
        assert_eq!(host_of("10.0.0.1:9093"), "10.0.0.1");
    }
}
