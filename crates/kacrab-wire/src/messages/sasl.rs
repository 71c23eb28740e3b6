//! SaslHandshake (key 17, v0–v1) and SaslAuthenticate (key 36, v0–v2): KIP-43, KIP-152,
//! KIP-368.
//!
//! A SaslHandshake v1 names the mechanism and learns the broker's enabled ones; the
//! mechanism's tokens then travel in SaslAuthenticate requests (KIP-152). From v1 a
//! successful SaslAuthenticate answer carries the session's lifetime (KIP-368): the
//! client must re-authenticate before it ends.
//!
//! Authentication bytes can hold a password (PLAIN) or a token (OAUTHBEARER): the
//! [`Debug`](std::fmt::Debug) output of these types shows their length only.

use std::fmt;

use bytes::Bytes;
use kafka_protocol::messages as kp;

use crate::api::ApiKey;
use crate::encode::sb;
use crate::reader::{Reader, R};

/// Kafka's `UNSUPPORTED_SASL_MECHANISM` error code (33).
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// Kafka's `ILLEGAL_SASL_STATE` error code (34).
pub const ILLEGAL_SASL_STATE: i16 = 34;
/// Kafka's `SASL_AUTHENTICATION_FAILED` error code (58).
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// SaslHandshake request: the mechanism the client wants.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SaslHandshakeRequest {
    /// Kafka's name of the mechanism (`PLAIN`, `SCRAM-SHA-512`, ...).
    pub mechanism: String,
}

impl SaslHandshakeRequest {
    /// The version a client sends: v1, after which tokens go in SaslAuthenticate
    /// requests (v0 sent them as raw frames, which this crate does not speak).
    pub const VERSION: i16 = 1;

    pub(crate) fn into_kp(self) -> kp::SaslHandshakeRequest {
        kp::SaslHandshakeRequest::default().with_mechanism(sb(self.mechanism))
    }
}

/// SaslHandshake response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SaslHandshakeResponse {
    /// Error code: 0, or [`UNSUPPORTED_SASL_MECHANISM`] (then `mechanisms` says what the
    /// broker offers), or [`ILLEGAL_SASL_STATE`].
    pub error_code: i16,
    /// The mechanisms the broker has enabled on this listener.
    pub mechanisms: Vec<String>,
}

impl SaslHandshakeResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        Ok(Self {
            error_code: r.i16()?,
            mechanisms: r.array(Reader::string)?,
        })
    }
}

/// SaslAuthenticate request: one token of the mechanism.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SaslAuthenticateRequest {
    /// The mechanism's bytes (may hold a secret: never printed).
    pub auth_bytes: Bytes,
}

impl fmt::Debug for SaslAuthenticateRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslAuthenticateRequest")
            .field("auth_bytes", &Redacted(self.auth_bytes.len()))
            .finish()
    }
}

impl SaslAuthenticateRequest {
    pub(crate) fn into_kp(self) -> kp::SaslAuthenticateRequest {
        kp::SaslAuthenticateRequest::default().with_auth_bytes(self.auth_bytes)
    }
}

/// SaslAuthenticate response.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SaslAuthenticateResponse {
    /// Error code: 0, or [`SASL_AUTHENTICATION_FAILED`] (then `error_message` says why),
    /// or [`ILLEGAL_SASL_STATE`].
    pub error_code: i16,
    /// The broker's error message.
    pub error_message: Option<String>,
    /// The mechanism's bytes from the broker (never printed).
    pub auth_bytes: Bytes,
    /// How long the authenticated session lasts, in ms, 0 for no limit (v1+; 0 before).
    pub session_lifetime_ms: i64,
}

impl fmt::Debug for SaslAuthenticateResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslAuthenticateResponse")
            .field("error_code", &self.error_code)
            .field("error_message", &self.error_message)
            .field("auth_bytes", &Redacted(self.auth_bytes.len()))
            .field("session_lifetime_ms", &self.session_lifetime_ms)
            .finish()
    }
}

impl SaslAuthenticateResponse {
    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let error_code = r.i16()?;
        let error_message = r.nullable_string()?;
        let auth_bytes = r.bytes()?;
        let session_lifetime_ms = if version >= 1 { r.i64()? } else { 0 };
        r.skip_tagged_fields()?;
        Ok(Self {
            error_code,
            error_message,
            auth_bytes,
            session_lifetime_ms,
        })
    }
}

/// A byte string's length in place of its content.
struct Redacted(usize);

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} bytes redacted]", self.0)
    }
}

/// Either SASL request, as one SASL exchange emits them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaslRequest {
    /// SaslHandshake.
    Handshake(SaslHandshakeRequest),
    /// SaslAuthenticate.
    Authenticate(SaslAuthenticateRequest),
}

impl SaslRequest {
    /// The request's API.
    #[must_use]
    pub fn api_key(&self) -> ApiKey {
        match self {
            SaslRequest::Handshake(_) => ApiKey::SaslHandshake,
            SaslRequest::Authenticate(_) => ApiKey::SaslAuthenticate,
        }
    }
}

/// Either SASL response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaslResponse {
    /// SaslHandshake.
    Handshake(SaslHandshakeResponse),
    /// SaslAuthenticate.
    Authenticate(SaslAuthenticateResponse),
}

impl SaslResponse {
    /// The response's API.
    #[must_use]
    pub fn api_key(&self) -> ApiKey {
        match self {
            SaslResponse::Handshake(_) => ApiKey::SaslHandshake,
            SaslResponse::Authenticate(_) => ApiKey::SaslAuthenticate,
        }
    }
}

impl From<SaslHandshakeRequest> for SaslRequest {
    fn from(r: SaslHandshakeRequest) -> Self {
        SaslRequest::Handshake(r)
    }
}

impl From<SaslAuthenticateRequest> for SaslRequest {
    fn from(r: SaslAuthenticateRequest) -> Self {
        SaslRequest::Authenticate(r)
    }
}

impl From<SaslHandshakeResponse> for SaslResponse {
    fn from(r: SaslHandshakeResponse) -> Self {
        SaslResponse::Handshake(r)
    }
}

impl From<SaslAuthenticateResponse> for SaslResponse {
    fn from(r: SaslAuthenticateResponse) -> Self {
        SaslResponse::Authenticate(r)
    }
}
