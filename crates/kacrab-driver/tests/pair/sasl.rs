//! The brokers' SASL listener for the session harness, after Kafka's
//! `SaslServerAuthenticator`: before a connection has authenticated it may send only
//! ApiVersions, SaslHandshake and SaslAuthenticate (anything else closes it); the
//! handshake names one of the enabled mechanisms (else UNSUPPORTED_SASL_MECHANISM with
//! the enabled list); PLAIN and SCRAM-SHA-256/512 (RFC 5802, written here from the RFC,
//! independently of the client) check the credentials (else SASL_AUTHENTICATION_FAILED
//! with Kafka's message); a success grants `connections.max.reauth.ms` as the session
//! lifetime (SaslAuthenticate v1+). KIP-368: a request on a connection whose session
//! has expired closes it, and a SaslHandshake on an authenticated connection starts a
//! re-authentication with the same mechanism.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Mac, SimpleHmac};
use kacrab_driver::ConnId;
use kacrab_idempotence::Timestamp;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use sha2::{Digest, Sha256, Sha512};

/// The broker's answer to an unknown mechanism.
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// A SASL request out of turn.
pub const ILLEGAL_SASL_STATE: i16 = 34;
/// Credentials refused.
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// How the listener misbehaves, for the failure tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SaslFault {
    /// None.
    #[default]
    None,
    /// The SCRAM server-final carries a wrong signature (a broker that does not hold
    /// the credential).
    BadServerSignature,
    /// The SCRAM server-first message is garbage.
    MalformedServerFirst,
}

/// One SASL listener, shared by every broker of the cluster.
#[derive(Debug)]
pub struct SaslListener {
    /// `sasl.enabled.mechanisms`.
    pub mechanisms: Vec<String>,
    /// Users and their passwords (PLAIN and SCRAM alike).
    pub users: BTreeMap<String, String>,
    /// `connections.max.reauth.ms`; zero: no session lifetime is granted.
    pub max_reauth: Duration,
    /// A misbehaviour.
    pub fault: SaslFault,
    /// The harness's clock, set before each request.
    pub now: Timestamp,
    /// Authentications that succeeded: `(when, conn, re-authentication?)`.
    pub successes: Vec<(Timestamp, ConnId, bool)>,
    /// Requests that broke the listener's rules (the test fails on any), with why.
    pub violations: Vec<String>,
    /// The SCRAM client nonces received, in order.
    pub client_nonces: Vec<String>,
    conns: BTreeMap<ConnId, ConnAuth>,
}

#[derive(Debug, Default)]
struct ConnAuth {
    /// The mechanism of the handshake, while an exchange runs.
    mechanism: Option<String>,
    /// The SCRAM state between the two rounds: the auth message so far and the user.
    scram: Option<(String, String)>,
    /// Authenticated once (a handshake now is a re-authentication).
    authenticated: bool,
    /// When the session ends (KIP-368), if a lifetime was granted.
    expires: Option<Timestamp>,
    /// Re-authenticating: requests other than SASL are refused meanwhile.
    in_exchange: bool,
}

impl SaslListener {
    /// A listener enabling `mechanisms`, with one user per `(name, password)`.
    pub fn new(mechanisms: &[&str], users: &[(&str, &str)]) -> Self {
        Self {
            mechanisms: mechanisms.iter().map(|m| (*m).to_owned()).collect(),
            users: users
                .iter()
                .map(|(u, p)| ((*u).to_owned(), (*p).to_owned()))
                .collect(),
            max_reauth: Duration::ZERO,
            fault: SaslFault::None,
            now: Timestamp::ZERO,
            successes: Vec::new(),
            violations: Vec::new(),
            client_nonces: Vec::new(),
            conns: BTreeMap::new(),
        }
    }

    /// Whether `api` may come on `conn` now; `Err(why)` closes the connection, as
    /// Kafka's authenticator does.
    pub fn admit(&mut self, conn: ConnId, api: ApiKey) -> Result<(), String> {
        let now = self.now;
        let auth = self.conns.entry(conn).or_default();
        match api {
            ApiKey::ApiVersions if !auth.authenticated => Ok(()),
            ApiKey::SaslHandshake | ApiKey::SaslAuthenticate => Ok(()),
            _ if !auth.authenticated || auth.in_exchange => Err(format!(
                "{conn:?}: {api:?} before the SASL authentication completed"
            )),
            _ if auth.expires.is_some_and(|t| t <= now) => Err(format!(
                "{conn:?}: {api:?} after the session expired (KIP-368)"
            )),
            _ => Ok(()),
        }
    }

    /// The connection is gone.
    pub fn forget(&mut self, conn: ConnId) {
        self.conns.remove(&conn);
    }

    /// The answer to a SaslHandshake.
    pub fn handshake(&mut self, conn: ConnId, r: &SaslHandshakeRequest) -> SaslHandshakeResponse {
        let mechanisms: Vec<StrBytes> = self
            .mechanisms
            .iter()
            .map(|m| StrBytes::from_string(m.clone()))
            .collect();
        let enabled = self.mechanisms.iter().any(|m| **m == *r.mechanism);
        let auth = self.conns.entry(conn).or_default();
        if auth.in_exchange {
            self.violations
                .push(format!("{conn:?}: SaslHandshake during an exchange"));
            return SaslHandshakeResponse::default()
                .with_error_code(ILLEGAL_SASL_STATE)
                .with_mechanisms(mechanisms);
        }
        if !enabled {
            return SaslHandshakeResponse::default()
                .with_error_code(UNSUPPORTED_SASL_MECHANISM)
                .with_mechanisms(mechanisms);
        }
        auth.mechanism = Some(r.mechanism.to_string());
        auth.in_exchange = true;
        SaslHandshakeResponse::default().with_mechanisms(mechanisms)
    }

    /// The answer to a SaslAuthenticate at `version`.
    pub fn authenticate(
        &mut self,
        conn: ConnId,
        r: &SaslAuthenticateRequest,
        version: i16,
    ) -> SaslAuthenticateResponse {
        let now = self.now;
        let lifetime = self.max_reauth;
        let fault = self.fault;
        let users = self.users.clone();
        let auth = self.conns.entry(conn).or_default();
        let Some(mechanism) = auth.mechanism.clone() else {
            self.violations
                .push(format!("{conn:?}: SaslAuthenticate without a handshake"));
            return SaslAuthenticateResponse::default().with_error_code(ILLEGAL_SASL_STATE);
        };
        let message = String::from_utf8_lossy(&r.auth_bytes).into_owned();
        let outcome = match mechanism.as_str() {
            "PLAIN" => plain(&users, &message),
            "SCRAM-SHA-256" | "SCRAM-SHA-512" => {
                let hash = if mechanism == "SCRAM-SHA-256" {
                    Hash::Sha256
                } else {
                    Hash::Sha512
                };
                match auth.scram.take() {
                    None => match scram_first(hash, &users, &message, fault) {
                        Ok((server_first, head, user)) => {
                            if let Some(nonce) = message.split(",r=").nth(1) {
                                self.client_nonces.push(nonce.to_owned());
                            }
                            auth.scram = Some((head, user));
                            return SaslAuthenticateResponse::default()
                                .with_auth_bytes(Bytes::from(server_first));
                        }
                        Err(e) => Err(e),
                    },
                    Some((head, user)) => {
                        scram_final(hash, &users[&user], &head, &message, &mechanism, fault)
                    }
                }
            }
            other => Err(format!("the model listener does not speak {other}")),
        };
        auth.mechanism = None;
        auth.in_exchange = false;
        match outcome {
            Ok(server_final) => {
                let reauth = auth.authenticated;
                auth.authenticated = true;
                let granted = if version >= 1 && !lifetime.is_zero() {
                    auth.expires = Some(now + lifetime);
                    lifetime.as_millis() as i64
                } else {
                    auth.expires = None;
                    0
                };
                self.successes.push((now, conn, reauth));
                SaslAuthenticateResponse::default()
                    .with_auth_bytes(Bytes::from(server_final))
                    .with_session_lifetime_ms(granted)
            }
            Err(message) => SaslAuthenticateResponse::default()
                .with_error_code(SASL_AUTHENTICATION_FAILED)
                .with_error_message(Some(StrBytes::from_string(message))),
        }
    }
}

/// The api a SASL request is, if it is one.
pub fn is_sasl(api: ApiKey) -> bool {
    matches!(api, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)
}

fn plain(users: &BTreeMap<String, String>, message: &str) -> Result<Vec<u8>, String> {
    let mut parts = message.split('\0');
    let (_authzid, user, password) = (parts.next(), parts.next(), parts.next());
    match (user, password) {
        (Some(u), Some(p)) if users.get(u).is_some_and(|known| known == p) => Ok(Vec::new()),
        // Kafka's PlainServerCallbackHandler / SaslServerAuthenticator wording.
        _ => Err("Authentication failed: Invalid username or password".into()),
    }
}

#[derive(Clone, Copy)]
enum Hash {
    Sha256,
    Sha512,
}

impl Hash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                let mut m = <SimpleHmac<Sha256> as Mac>::new_from_slice(key).expect("any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Self::Sha512 => {
                let mut m = <SimpleHmac<Sha512> as Mac>::new_from_slice(key).expect("any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn salted(self, password: &str) -> Vec<u8> {
        fn pbkdf2_hmac<D>(password: &str) -> Vec<u8>
        where
            D: sha2::Digest + sha2::digest::core_api::BlockSizeUser + Clone + Sync,
        {
            let mut out = vec![0u8; <D as sha2::Digest>::output_size()];
            pbkdf2::pbkdf2::<SimpleHmac<D>>(password.as_bytes(), SALT, ITERATIONS, &mut out)
                .expect("pbkdf2");
            out
        }
        match self {
            Self::Sha256 => pbkdf2_hmac::<Sha256>(password),
            Self::Sha512 => pbkdf2_hmac::<Sha512>(password),
        }
    }
}

const SALT: &[u8] = b"pair-harness-salt";
/// Kafka's minimum SCRAM iteration count.
const ITERATIONS: u32 = 4096;
const SERVER_NONCE: &str = "pairServerNonce7";

/// The server-first message, the auth message so far and the user.
fn scram_first(
    _hash: Hash,
    users: &BTreeMap<String, String>,
    message: &str,
    fault: SaslFault,
) -> Result<(Vec<u8>, String, String), String> {
    let bare = message
        .strip_prefix("n,,")
        .ok_or("SCRAM client-first without the gs2 header n,,")?;
    let mut user = None;
    let mut nonce = None;
    for attr in bare.split(',') {
        if let Some(u) = attr.strip_prefix("n=") {
            user = Some(u.replace("=2C", ",").replace("=3D", "="));
        } else if let Some(r) = attr.strip_prefix("r=") {
            nonce = Some(r.to_owned());
        }
    }
    let (user, nonce) = user
        .zip(nonce)
        .ok_or("SCRAM client-first without n= or r=")?;
    if !users.contains_key(&user) {
        return Err("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM".into());
    }
    if fault == SaslFault::MalformedServerFirst {
        return Ok((b"this is not scram".to_vec(), String::new(), user));
    }
    let server_first = format!(
        "r={nonce}{SERVER_NONCE},s={},i={ITERATIONS}",
        STANDARD.encode(SALT)
    );
    Ok((
        server_first.clone().into_bytes(),
        format!("{bare},{server_first}"),
        user,
    ))
}

fn scram_final(
    hash: Hash,
    password: &str,
    head: &str,
    message: &str,
    mechanism: &str,
    fault: SaslFault,
) -> Result<Vec<u8>, String> {
    let refused = || {
        format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}")
    };
    let (without_proof, proof) = message.rsplit_once(",p=").ok_or_else(refused)?;
    let salted = hash.salted(password);
    let client_key = hash.hmac(&salted, b"Client Key");
    let stored_key = hash.digest(&client_key);
    let server_key = hash.hmac(&salted, b"Server Key");
    let auth_message = format!("{head},{without_proof}");
    let signature = hash.hmac(&stored_key, auth_message.as_bytes());
    let proof = STANDARD.decode(proof).map_err(|_| refused())?;
    let recovered: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
    if hash.digest(&recovered) != stored_key {
        return Err(refused());
    }
    let mut server_signature = hash.hmac(&server_key, auth_message.as_bytes());
    if fault == SaslFault::BadServerSignature {
        server_signature[0] ^= 1;
    }
    Ok(format!("v={}", STANDARD.encode(server_signature)).into_bytes())
}
