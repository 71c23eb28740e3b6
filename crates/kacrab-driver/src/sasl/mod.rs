//! One SASL authentication on one connection (KIP-43, KIP-152, KIP-368), sans-IO.
//!
//! [`SaslExchange`] is the state machine between ApiVersions and ready: a SaslHandshake
//! v1 naming the mechanism, a check of it against the broker's enabled list, then the
//! mechanism's tokens in SaslAuthenticate requests until it completes, with the session
//! lifetime the broker grants (KIP-368). It decides; the session sends its requests and
//! feeds it the answers. No clock, no randomness: the SCRAM nonce comes in as a
//! [`ClientNonce`] the session derives from entropy its driver supplies.
//!
//! ```text
//!  start() ──> Send(Handshake) ──> handle_response(Handshake) ──> Send(Authenticate) ─┐
//!                                                                 ┌──────────────────┘
//!                            handle_response(Authenticate) ──> Send(Authenticate) … ──> Done
//! ```
//!
//! Every error is final for the connection: Kafka closes it after a failed
//! authentication (`SaslServerAuthenticator`), and a retry with the same credentials
//! fails the same way.

pub(crate) mod oauthbearer;
mod plain;
mod scram;
pub(crate) mod token_handle;

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use kacrab_wire::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    SaslRequest, SaslResponse, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
};
use kacrab_wire::ApiKey;
use sha2::{Digest, Sha256};

use crate::config::{
    OAuthBearerSource, SaslConfig, SaslConfigError, SaslCredentials, SaslMechanism,
};
use crate::secret::Secret;
use scram::{Scram, ScramHash};

/// Why an authentication failed. Never holds a password or a token: the broker's
/// messages are stripped of the credentials before they are kept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SaslError {
    /// The broker does not enable the mechanism on this listener
    /// (UNSUPPORTED_SASL_MECHANISM, or a handshake answer that does not list it).
    #[error("the broker does not enable SASL mechanism {mechanism} (it offers: [{}])", .offered.join(", "))]
    UnsupportedMechanism {
        /// The mechanism configured.
        mechanism: SaslMechanism,
        /// The mechanisms the broker listed.
        offered: Vec<String>,
    },
    /// The broker refused the credentials (SASL_AUTHENTICATION_FAILED, a SCRAM `e=`
    /// server error, or an OAUTHBEARER error status).
    #[error("SASL {mechanism} authentication failed: {}", .message.as_deref().unwrap_or("no message from the broker"))]
    AuthenticationFailed {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// The broker's message.
        message: Option<String>,
    },
    /// The SCRAM server signature does not verify: the broker does not hold the
    /// credential (or something between rewrote the exchange).
    #[error("the broker's {mechanism} server signature does not verify")]
    BadServerSignature {
        /// The mechanism.
        mechanism: SaslMechanism,
    },
    /// The SCRAM iteration count is below Kafka's minimum or above kacrab's bound.
    #[error("SCRAM iteration count {iterations} is outside {min}..={max} (the minimum is Kafka's client's; the maximum is kacrab's bound, so that a hostile broker cannot stall the session in PBKDF2)")]
    IterationCount {
        /// What the broker asked for.
        iterations: u32,
        /// Kafka's minimum (`ScramMechanism.minIterations`), which Java's client enforces.
        min: u32,
        /// kacrab's bound against a hostile broker (Java's client has none below
        /// `i32::MAX`), far above any realistic credential's count.
        max: u32,
    },
    /// A mechanism message from the broker that does not parse.
    #[error("malformed {mechanism} message from the broker: {reason}")]
    Malformed {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// What is wrong.
        reason: &'static str,
    },
    /// The broker reports ILLEGAL_SASL_STATE.
    #[error("the broker reports an illegal SASL state: {}", .message.as_deref().unwrap_or("no message"))]
    IllegalState {
        /// The broker's message.
        message: Option<String>,
    },
    /// Another error code in a SASL answer.
    #[error("{api} failed with error code {error_code}: {}", .message.as_deref().unwrap_or("no message"))]
    BrokerError {
        /// The API.
        api: ApiKey,
        /// Kafka's error code.
        error_code: i16,
        /// The broker's message.
        message: Option<String>,
    },
    /// An answer the exchange was not waiting for (a protocol violation).
    #[error("unexpected {got} response while {expected}")]
    UnexpectedResponse {
        /// What the exchange was waiting for.
        expected: &'static str,
        /// What came.
        got: ApiKey,
    },
    /// The application's OAUTHBEARER token provider failed, or gave a token that cannot
    /// be sent.
    #[error("the OAUTHBEARER token provider failed: {message}")]
    TokenProvider {
        /// Its message.
        message: String,
    },
    /// The SASL settings do not make an exchange (normally caught when the
    /// configuration is built).
    #[error(transparent)]
    Config(#[from] SaslConfigError),
}

/// What the session does next for this exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SaslStep {
    /// Send this request (SaslHandshake v1, or SaslAuthenticate at the negotiated
    /// version) and feed its answer to [`SaslExchange::handle_response`].
    Send(SaslRequest),
    /// Authenticated. With a lifetime (KIP-368), the connection must re-authenticate
    /// before it ends: see [`reauthenticate_after`].
    Done {
        /// The session lifetime the broker granted, `None` for no limit.
        session_lifetime: Option<Duration>,
    },
}

/// The SCRAM client nonce (RFC 5802's `c-nonce`): printable, no `,`. It must differ
/// between exchanges; the session is deterministic, so it is derived from entropy the
/// driver supplies ([`ClientNonce::derive`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClientNonce(String);

impl ClientNonce {
    /// 32 bytes of entropy as a nonce (unpadded URL-safe base64: 43 printable bytes).
    #[must_use]
    pub(crate) fn from_entropy(entropy: &[u8; 32]) -> Self {
        Self(URL_SAFE_NO_PAD.encode(entropy))
    }

    /// The nonce of exchange number `counter` from a per-session `seed`:
    /// SHA-256(seed ‖ counter). Distinct for distinct counters; unpredictable to the
    /// broker as long as the seed is.
    #[must_use]
    pub(crate) fn derive(seed: &[u8; 32], counter: u64) -> Self {
        let mut h = Sha256::new();
        h.update(seed);
        h.update(counter.to_be_bytes());
        Self::from_entropy(&h.finalize().into())
    }

    /// A nonce given as text (test vectors); `None` unless printable ASCII without `,`.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn from_printable(nonce: &str) -> Option<Self> {
        let ok = !nonce.is_empty()
            && nonce
                .bytes()
                .all(|b| (0x21..=0x7e).contains(&b) && b != b',');
        ok.then(|| Self(nonce.to_owned()))
    }

    fn as_str(&self) -> &str {
        &self.0
    }
}

/// When to re-authenticate a session granted `lifetime` (KIP-368), as Java's
/// `SaslClientAuthenticator` computes it: 85% of the lifetime plus a jitter of up to 10%
/// against re-authentication storms. Java draws the jitter at random; here it is an
/// input, `jitter_permille` (0..=100, larger values count as 100), so the session stays
/// deterministic (it can derive it from the connection id or its seed).
#[must_use]
pub(crate) fn reauthenticate_after(lifetime: Duration, jitter_permille: u16) -> Duration {
    let permille = 850 + u32::from(jitter_permille.min(100));
    lifetime * permille / 1000
}

/// Where the exchange is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// [`SaslExchange::start`] not called yet.
    NotStarted,
    /// The SaslHandshake is in flight.
    AwaitingHandshake,
    /// A SaslAuthenticate is in flight.
    AwaitingAuthenticate,
    /// Authenticated.
    Done,
    /// Failed; the connection must close.
    Failed,
}

/// The mechanism's own state.
enum Mechanism {
    Plain {
        username: String,
        password: Secret,
    },
    Scram(Box<Scram>),
    OAuthBearer {
        source: OAuthBearerSource,
        /// The broker's error status (RFC 7628 section 3.2.2): the client answers
        /// with a lone `%x01` and the broker then fails the authentication.
        error_status: Option<String>,
    },
}

/// One SASL authentication on one connection (see the module docs).
pub(crate) struct SaslExchange {
    mechanism: SaslMechanism,
    state: Mechanism,
    /// Advances only forwards: NotStarted -> AwaitingHandshake -> AwaitingAuthenticate
    /// (repeatedly) -> Done, or to Failed from any awaiting phase.
    phase: Phase,
    /// The longest session lifetime a SaslAuthenticate answer granted (KIP-368).
    session_lifetime: Option<Duration>,
    /// The password or token this exchange sends: stripped from every broker message
    /// kept in an error.
    secret: Option<Secret>,
    /// The wall clock at `started`, in ms since the Unix epoch (an input, as all time).
    unix_ms: i64,
}

/// Only the mechanism and the phase: the state holds the password, the token or the
/// SCRAM keys.
impl std::fmt::Debug for SaslExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslExchange")
            .field("mechanism", &self.mechanism)
            .field("phase", &self.phase)
            .field("session_lifetime", &self.session_lifetime)
            .finish_non_exhaustive()
    }
}

impl SaslExchange {
    /// An exchange for `config`'s mechanism and credentials, begun when the wall clock
    /// read `unix_ms` (the session's clock: Kafka's unsecured OAUTHBEARER
    /// token is stamped with it, as the broker checks its `exp`). `nonce` serves SCRAM
    /// only.
    ///
    /// # Errors
    /// [`SaslError::Config`] when the settings do not fit ([`SaslConfig::validate`]).
    pub(crate) fn new(
        config: &SaslConfig,
        unix_ms: i64,
        nonce: ClientNonce,
    ) -> Result<Self, SaslError> {
        let (mechanism, credentials) = config.validate()?;
        let (state, secret) = match (mechanism, credentials) {
            (SaslMechanism::Plain, SaslCredentials::UsernamePassword { username, password }) => (
                Mechanism::Plain {
                    username: username.clone(),
                    password: password.clone(),
                },
                Some(password.clone()),
            ),
            (
                m @ (SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512),
                SaslCredentials::UsernamePassword { username, password },
            ) => {
                let hash = if m == SaslMechanism::ScramSha256 {
                    ScramHash::Sha256
                } else {
                    ScramHash::Sha512
                };
                (
                    Mechanism::Scram(Box::new(Scram::new(hash, username, password, nonce))),
                    Some(password.clone()),
                )
            }
            (SaslMechanism::OAuthBearer, SaslCredentials::OAuthBearer(source)) => (
                Mechanism::OAuthBearer {
                    source: source.clone(),
                    error_status: None,
                },
                None,
            ),
            // `validate` pairs passwords with PLAIN/SCRAM and tokens with OAUTHBEARER.
            (mechanism, _) => {
                return Err(SaslConfigError::CredentialsMismatch {
                    mechanism,
                    credentials: "these",
                }
                .into())
            }
        };
        Ok(Self {
            mechanism,
            state,
            phase: Phase::NotStarted,
            session_lifetime: None,
            secret,
            unix_ms,
        })
    }

    /// The mechanism this exchange runs (Kafka's name).
    pub(crate) fn mechanism_name(&self) -> &'static str {
        self.mechanism.name()
    }

    /// Whether it has completed successfully.
    #[cfg(test)]
    pub(crate) fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The first request: SaslHandshake v1 naming the mechanism. Call it once; a second
    /// call sends the same handshake again only if none was answered yet.
    pub(crate) fn start(&mut self) -> SaslStep {
        debug_assert!(
            matches!(self.phase, Phase::NotStarted | Phase::AwaitingHandshake),
            "start() after the handshake"
        );
        self.phase = Phase::AwaitingHandshake;
        SaslStep::Send(SaslRequest::Handshake(kacrab_wire::message!(
            SaslHandshakeRequest {
                mechanism: self.mechanism.name().to_owned(),
            }
        )))
    }

    /// Feeds the decoded answer to the last request sent; returns what to do next.
    ///
    /// # Errors
    /// Any [`SaslError`]: the exchange has failed for good and the connection must
    /// close.
    pub(crate) fn handle_response(
        &mut self,
        response: SaslResponse,
    ) -> Result<SaslStep, SaslError> {
        let result = match (self.phase, response) {
            (Phase::AwaitingHandshake, SaslResponse::Handshake(r)) => self.on_handshake(r),
            (Phase::AwaitingAuthenticate, SaslResponse::Authenticate(r)) => self.on_authenticate(r),
            (phase, r) => Err(SaslError::UnexpectedResponse {
                expected: match phase {
                    Phase::NotStarted => "the exchange had not started",
                    Phase::AwaitingHandshake => "awaiting SaslHandshake",
                    Phase::AwaitingAuthenticate => "awaiting SaslAuthenticate",
                    Phase::Done => "already authenticated",
                    Phase::Failed => "the exchange had failed",
                },
                got: r.api_key(),
            }),
        };
        match &result {
            Ok(SaslStep::Send(_)) => self.phase = Phase::AwaitingAuthenticate,
            Ok(SaslStep::Done { .. }) => self.phase = Phase::Done,
            Err(_) => self.phase = Phase::Failed,
        }
        result
    }

    fn on_handshake(&mut self, r: SaslHandshakeResponse) -> Result<SaslStep, SaslError> {
        let offered = r.mechanisms.iter().any(|m| m == self.mechanism.name());
        match r.error_code {
            0 if offered => {}
            0 | UNSUPPORTED_SASL_MECHANISM => {
                return Err(SaslError::UnsupportedMechanism {
                    mechanism: self.mechanism,
                    offered: r.mechanisms,
                })
            }
            ILLEGAL_SASL_STATE => return Err(SaslError::IllegalState { message: None }),
            error_code => {
                return Err(SaslError::BrokerError {
                    api: ApiKey::SaslHandshake,
                    error_code,
                    message: None,
                })
            }
        }
        let first = match &mut self.state {
            Mechanism::Plain { username, password } => plain::message(username, password),
            Mechanism::Scram(scram) => scram.client_first(),
            Mechanism::OAuthBearer { source, .. } => {
                let token = match source {
                    OAuthBearerSource::Provider(p) => p.token(),
                    OAuthBearerSource::Unsecured(u) => Ok(u.token_at(self.unix_ms)),
                }
                .map_err(|message| SaslError::TokenProvider { message })?;
                self.secret = Some(token.value.clone());
                oauthbearer::client_first_message(&token)?
            }
        };
        Ok(authenticate(first))
    }

    fn on_authenticate(&mut self, r: SaslAuthenticateResponse) -> Result<SaslStep, SaslError> {
        if r.session_lifetime_ms > 0 {
            let lifetime = Duration::from_millis(r.session_lifetime_ms.unsigned_abs());
            self.session_lifetime =
                Some(self.session_lifetime.map_or(lifetime, |l| l.max(lifetime)));
        }
        let message = r.error_message.map(|m| self.scrub(m));
        match r.error_code {
            0 => {}
            SASL_AUTHENTICATION_FAILED => {
                return Err(SaslError::AuthenticationFailed {
                    mechanism: self.mechanism,
                    message,
                })
            }
            ILLEGAL_SASL_STATE => return Err(SaslError::IllegalState { message }),
            error_code => {
                return Err(SaslError::BrokerError {
                    api: ApiKey::SaslAuthenticate,
                    error_code,
                    message,
                })
            }
        }
        let done = SaslStep::Done {
            session_lifetime: self.session_lifetime,
        };
        let mechanism = self.mechanism;
        match &mut self.state {
            // Kafka's PlainSaslServer completes on the one message and answers nothing.
            Mechanism::Plain { .. } => Ok(done),
            Mechanism::Scram(scram) => {
                if scram.awaits_server_first() {
                    Ok(authenticate(scram.handle_server_first(&r.auth_bytes)?))
                } else {
                    scram.handle_server_final(&r.auth_bytes)?;
                    Ok(done)
                }
            }
            Mechanism::OAuthBearer { error_status, .. } => {
                if let Some(status) = error_status.take() {
                    // The broker should have failed the exchange after our %x01.
                    return Err(SaslError::AuthenticationFailed {
                        mechanism,
                        message: Some(status),
                    });
                }
                if r.auth_bytes.is_empty() {
                    return Ok(done);
                }
                let status = String::from_utf8_lossy(&r.auth_bytes).into_owned();
                *error_status = Some(self_scrub(self.secret.as_ref(), status));
                Ok(authenticate(vec![0x01]))
            }
        }
    }

    fn scrub(&self, message: String) -> String {
        self_scrub(self.secret.as_ref(), message)
    }
}

/// `message` with every occurrence of `secret` replaced: a broker that echoes the
/// credential (a hostile or buggy one) must not put it into an error or a log.
fn self_scrub(secret: Option<&Secret>, message: String) -> String {
    match secret {
        Some(s) if !s.is_empty() && message.contains(s.expose()) => {
            message.replace(s.expose(), "[redacted]")
        }
        _ => message,
    }
}

fn authenticate(auth_bytes: Vec<u8>) -> SaslStep {
    SaslStep::Send(SaslRequest::Authenticate(kacrab_wire::message!(
        SaslAuthenticateRequest {
            auth_bytes: auth_bytes.into(),
        }
    )))
}

#[cfg(test)]
mod tests;
