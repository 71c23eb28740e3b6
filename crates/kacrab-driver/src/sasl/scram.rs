//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the client side, as Kafka's
//! `ScramSaslClient` runs it: no channel binding (`n,,`), no authorization id.
//!
//! Usernames and passwords are used as their UTF-8 bytes, without SASLprep (RFC 4013):
//! Kafka's `ScramFormatter.normalize` does the same, and credentials stored by Kafka's
//! tools were derived that way, so a SASLprep'd password would fail against them. The
//! username is escaped as RFC 5802 says (`=` as `=3D`, `,` as `=2C`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Mac, SimpleHmac};
use sha2::digest::core_api::BlockSizeUser;
use sha2::{Digest, Sha256, Sha512};

use super::{ClientNonce, SaslError};
use crate::config::SaslMechanism;
use crate::secret::Secret;

/// Kafka's lowest iteration count (`ScramMechanism.minIterations`): the client refuses a
/// server that asks for fewer (`ScramSaslClient`).
pub(crate) const MIN_ITERATIONS: u32 = 4096;
/// kacrab's highest iteration count, not Kafka's. Java's client takes any positive `int`
/// (`ScramMessages.ServerFirstMessage`); Kafka's `ScramMechanism.maxIterations` (16384)
/// bounds only the credentials Kafka's own tools create, so a broker may hold more. The
/// session runs PBKDF2 inline, and 2^31 iterations from a hostile broker would stall it
/// for hours; a million is 61 times Kafka's tool maximum and above OWASP's 2023
/// PBKDF2 recommendations (600,000 for SHA-256, 210,000 for SHA-512), yet costs
/// about a second at worst.
pub(crate) const MAX_ITERATIONS: u32 = 1_000_000;

/// The hash of a SCRAM mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScramHash {
    Sha256,
    Sha512,
}

/// The keys RFC 5802 derives from the password for one salt and iteration count.
struct Keys {
    client_proof: Vec<u8>,
    server_signature: Vec<u8>,
}

fn hmac<D: Digest + BlockSizeUser + Clone>(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length: `new_from_slice` cannot fail.
    let mut mac = <SimpleHmac<D> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn derive<D: Digest + BlockSizeUser + Clone + Sync>(
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    auth_message: &[u8],
) -> Keys {
    let mut salted = vec![0u8; <D as Digest>::output_size()];
    // The output length is the PRF's: the only length pbkdf2 refuses is zero.
    pbkdf2::pbkdf2::<SimpleHmac<D>>(password, salt, iterations, &mut salted)
        .expect("PBKDF2 output length is the hash's");
    let client_key = hmac::<D>(&salted, b"Client Key");
    let stored_key = D::digest(&client_key).to_vec();
    let client_signature = hmac::<D>(&stored_key, auth_message);
    let client_proof = client_key
        .iter()
        .zip(&client_signature)
        .map(|(k, s)| k ^ s)
        .collect();
    let server_key = hmac::<D>(&salted, b"Server Key");
    Keys {
        client_proof,
        server_signature: hmac::<D>(&server_key, auth_message),
    }
}

impl ScramHash {
    fn derive(self, password: &[u8], salt: &[u8], iterations: u32, auth_message: &[u8]) -> Keys {
        match self {
            ScramHash::Sha256 => derive::<Sha256>(password, salt, iterations, auth_message),
            ScramHash::Sha512 => derive::<Sha512>(password, salt, iterations, auth_message),
        }
    }

    fn mechanism(self) -> SaslMechanism {
        match self {
            ScramHash::Sha256 => SaslMechanism::ScramSha256,
            ScramHash::Sha512 => SaslMechanism::ScramSha512,
        }
    }
}

/// Where the client is in RFC 5802's exchange.
enum State {
    /// The client-first message is not sent yet.
    Initial,
    /// The client-first message went out; its bare part enters the AuthMessage.
    SentClientFirst { client_first_bare: String },
    /// The client-final message went out; the server must prove it knows the password
    /// with this signature.
    SentClientFinal { server_signature: Vec<u8> },
    /// The server's signature checked out.
    Done,
}

/// One SCRAM authentication, client side.
pub(super) struct Scram {
    hash: ScramHash,
    username: String,
    password: Secret,
    nonce: ClientNonce,
    state: State,
}

/// RFC 5802's `saslname`: `=` and `,` escaped.
fn sasl_name(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

impl Scram {
    pub(super) fn new(
        hash: ScramHash,
        username: &str,
        password: &Secret,
        nonce: ClientNonce,
    ) -> Self {
        Self {
            hash,
            username: username.to_owned(),
            password: password.clone(),
            nonce,
            state: State::Initial,
        }
    }

    fn malformed(&self, reason: &'static str) -> SaslError {
        SaslError::Malformed {
            mechanism: self.hash.mechanism(),
            reason,
        }
    }

    /// Whether the server-first message is awaited (the client-first one went out).
    pub(super) fn awaits_server_first(&self) -> bool {
        matches!(self.state, State::SentClientFirst { .. })
    }

    /// `n,,n=<user>,r=<client nonce>`.
    pub(super) fn client_first(&mut self) -> Vec<u8> {
        let bare = format!("n={},r={}", sasl_name(&self.username), self.nonce.as_str());
        let message = format!("n,,{bare}");
        self.state = State::SentClientFirst {
            client_first_bare: bare,
        };
        message.into_bytes()
    }

    /// The server-first message in, the client-final message (with the proof) out.
    pub(super) fn handle_server_first(&mut self, message: &[u8]) -> Result<Vec<u8>, SaslError> {
        let State::SentClientFirst { client_first_bare } = &self.state else {
            return Err(self.malformed("a server-first message out of turn"));
        };
        let server_first = std::str::from_utf8(message)
            .map_err(|_| self.malformed("server-first message is not UTF-8"))?;
        let mut attrs = server_first.split(',');
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or_else(|| {
                self.malformed(
                    "server-first message does not start with r= (a mandatory extension?)",
                )
            })?;
        let salt = attrs
            .next()
            .and_then(|a| a.strip_prefix("s="))
            .ok_or_else(|| self.malformed("server-first message has no s= salt"))?;
        let iterations = attrs
            .next()
            .and_then(|a| a.strip_prefix("i="))
            .ok_or_else(|| self.malformed("server-first message has no i= iteration count"))?;
        // Any further attributes are extensions; RFC 5802 lets a client ignore them.
        if nonce.len() <= self.nonce.as_str().len() || !nonce.starts_with(self.nonce.as_str()) {
            return Err(self.malformed("the server nonce does not extend the client nonce"));
        }
        if !nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
        {
            return Err(self.malformed("the server nonce is not printable"));
        }
        let salt = STANDARD
            .decode(salt)
            .map_err(|_| self.malformed("the salt is not base64"))?;
        let iterations: u32 = iterations
            .parse()
            .map_err(|_| self.malformed("the iteration count is not a number"))?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(SaslError::IterationCount {
                iterations,
                min: MIN_ITERATIONS,
                max: MAX_ITERATIONS,
            });
        }
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let keys = self.hash.derive(
            self.password.expose().as_bytes(),
            &salt,
            iterations,
            auth_message.as_bytes(),
        );
        let message = format!("{without_proof},p={}", STANDARD.encode(&keys.client_proof));
        self.state = State::SentClientFinal {
            server_signature: keys.server_signature,
        };
        Ok(message.into_bytes())
    }

    /// The server-final message: the server's signature, or its error.
    pub(super) fn handle_server_final(&mut self, message: &[u8]) -> Result<(), SaslError> {
        let State::SentClientFinal { server_signature } = &self.state else {
            return Err(self.malformed("a server-final message out of turn"));
        };
        let text = std::str::from_utf8(message)
            .map_err(|_| self.malformed("server-final message is not UTF-8"))?;
        let first = text.split(',').next().unwrap_or_default();
        if let Some(error) = first.strip_prefix("e=") {
            return Err(SaslError::AuthenticationFailed {
                mechanism: self.hash.mechanism(),
                message: Some(format!("SCRAM server error: {error}")),
            });
        }
        let verifier = first
            .strip_prefix("v=")
            .ok_or_else(|| self.malformed("server-final message has neither v= nor e="))?;
        let claimed = STANDARD
            .decode(verifier)
            .map_err(|_| self.malformed("the server signature is not base64"))?;
        // Constant time, as a signature check should be.
        if !bool::from(subtle_eq(&claimed, server_signature)) {
            return Err(SaslError::BadServerSignature {
                mechanism: self.hash.mechanism(),
            });
        }
        self.state = State::Done;
        Ok(())
    }
}

/// Equality in time independent of where the bytes differ.
fn subtle_eq(a: &[u8], b: &[u8]) -> subtle::Choice {
    use subtle::ConstantTimeEq as _;
    if a.len() == b.len() {
        a.ct_eq(b)
    } else {
        subtle::Choice::from(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7677_sha_256_test_vector() {
        let mut scram = Scram::new(
            ScramHash::Sha256,
            "user",
            &Secret::new("pencil"),
            ClientNonce::from_printable("rOprNGfwEbeRWgbNEkqO").unwrap(),
        );
        assert_eq!(scram.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let client_final = scram
            .handle_server_first(
                b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            )
            .unwrap();
        assert_eq!(
            String::from_utf8(client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        scram
            .handle_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
    }

    #[test]
    fn a_tampered_server_signature_is_refused() {
        let mut scram = Scram::new(
            ScramHash::Sha256,
            "user",
            &Secret::new("pencil"),
            ClientNonce::from_printable("rOprNGfwEbeRWgbNEkqO").unwrap(),
        );
        scram.client_first();
        scram
            .handle_server_first(
                b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            )
            .unwrap();
        // One bit flipped in the first byte of the RFC's signature ('6' -> '7').
        assert_eq!(
            scram.handle_server_final(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(SaslError::BadServerSignature {
                mechanism: SaslMechanism::ScramSha256
            })
        );
    }

    #[test]
    fn hostile_server_first_messages_are_refused() {
        let first = |msg: &[u8]| {
            let mut scram = Scram::new(
                ScramHash::Sha512,
                "u",
                &Secret::new("p"),
                ClientNonce::from_printable("abc").unwrap(),
            );
            scram.client_first();
            scram.handle_server_first(msg)
        };
        for msg in [
            &b"r=abc,s=AAAA,i=4096"[..], // the nonce does not grow
            b"r=xyzabc,s=AAAA,i=4096",   // does not extend ours
            b"m=ext,r=abcd,s=AAAA,i=4096",
            b"r=abcd,s=***,i=4096",
            b"r=abcd,s=AAAA,i=lots",
            b"r=abcd,s=AAAA",
            b"\xff",
        ] {
            assert!(
                matches!(first(msg), Err(SaslError::Malformed { .. })),
                "{:?}",
                String::from_utf8_lossy(msg)
            );
        }
        for i in ["0", "4095", "1000001", "4294967295"] {
            assert!(matches!(
                first(format!("r=abcd,s=AAAA,i={i}").as_bytes()),
                Err(SaslError::IterationCount { .. })
            ));
        }
    }

    #[test]
    fn usernames_are_escaped() {
        assert_eq!(sasl_name("a=b,c"), "a=3Db=2Cc");
    }
}
