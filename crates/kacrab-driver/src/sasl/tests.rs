//! The exchange against broker halves written here: PLAIN, SCRAM-SHA-256/512 with a
//! minimal RFC 5802 verifier, OAUTHBEARER; the failures; and the redaction of secrets.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Mac, SimpleHmac};
use kacrab_wire::messages::*;
use kacrab_wire::server::{decode_request, encode_response, RequestBody};
use kacrab_wire::{Connection, FrameDecoder, Request, Response};
use sha2::{Digest, Sha512};

use super::*;
use crate::config::SessionConfig;

const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-pw-7731";"#;
const SCRAM_JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-pw-4409";"#;

fn nonce() -> ClientNonce {
    ClientNonce::derive(&[7; 32], 1)
}

fn sasl_config(props: &[(&str, &str)]) -> SaslConfig {
    let mut all = vec![("bootstrap.servers", "b:9092")];
    all.extend_from_slice(props);
    SessionConfig::from_properties(all).unwrap().sasl().clone()
}

fn exchange(props: &[(&str, &str)]) -> SaslExchange {
    SaslExchange::new(&sasl_config(props), 0, nonce()).unwrap()
}

/// The request in `step`, sent through a real `Connection` at `version`, read by the
/// wire's broker half and answered by `broker`; the answer read back by the client.
fn over_the_wire(
    step: SaslStep,
    version: i16,
    broker: impl FnOnce(SaslRequest) -> Response,
) -> SaslResponse {
    let SaslStep::Send(request) = step else {
        panic!("expected a request, got {step:?}")
    };
    let mut conn = Connection::new(Some("sasl-test".into()));
    let sent = conn.encode(request, version, 1).unwrap();
    let read = decode_request(sent.frame.to_bytes().slice(4..)).unwrap();
    let RequestBody::Request(Request::Sasl(request)) = read.body else {
        panic!("not a SASL request: {:?}", read.body)
    };
    let answer = broker(request);
    let frame = encode_response(
        read.header.correlation_id,
        read.header.api,
        version,
        &answer,
    )
    .unwrap();
    let mut frames = FrameDecoder::new();
    frames.extend(&frame);
    let got = conn.decode(frames.decode().unwrap().unwrap()).unwrap();
    let Response::Sasl(r) = got.response else {
        panic!("not a SASL response")
    };
    r
}

fn handshake_ok(mechanisms: &[&str]) -> impl FnOnce(SaslRequest) -> Response {
    let mechanisms: Vec<String> = mechanisms.iter().map(|m| (*m).to_owned()).collect();
    move |req| {
        assert!(matches!(req, SaslRequest::Handshake(_)));
        kacrab_wire::message!(SaslHandshakeResponse {
            error_code: 0,
            mechanisms,
        })
        .into()
    }
}

fn auth_bytes(req: &SaslRequest) -> Bytes {
    match req {
        SaslRequest::Authenticate(a) => a.auth_bytes.clone(),
        SaslRequest::Handshake(h) => panic!("a handshake where a token was due: {h:?}"),
    }
}

fn answer(error_code: i16, message: Option<&str>, bytes: &[u8], lifetime_ms: i64) -> Response {
    kacrab_wire::message!(SaslAuthenticateResponse {
        error_code,
        error_message: message.map(str::to_owned),
        auth_bytes: Bytes::copy_from_slice(bytes),
        session_lifetime_ms: lifetime_ms,
    })
    .into()
}

// ------------------------------------------------------------------------- PLAIN

#[test]
fn plain_authenticates_in_one_round_and_reports_the_session_lifetime() {
    let mut x = exchange(&[
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ]);
    let first = x.start();
    assert_eq!(
        first,
        SaslStep::Send(SaslRequest::Handshake(kacrab_wire::message!(
            SaslHandshakeRequest {
                mechanism: "PLAIN".into()
            }
        )))
    );
    let r = over_the_wire(first, 1, handshake_ok(&["SCRAM-SHA-512", "PLAIN"]));
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 2, |req| {
        assert_eq!(&auth_bytes(&req)[..], b"\0alice\0alice-pw-7731");
        answer(0, None, b"", 3_600_000)
    });
    assert_eq!(
        x.handle_response(r).unwrap(),
        SaslStep::Done {
            session_lifetime: Some(Duration::from_secs(3600))
        }
    );
    assert!(x.is_done());
}

#[test]
fn a_mechanism_the_broker_does_not_enable_is_a_typed_error_naming_what_it_offers() {
    // UNSUPPORTED_SASL_MECHANISM, as Kafka answers.
    let mut x = exchange(&[
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, |_| {
        kacrab_wire::message!(SaslHandshakeResponse {
            error_code: UNSUPPORTED_SASL_MECHANISM,
            mechanisms: vec!["PLAIN".into(), "OAUTHBEARER".into()],
        })
        .into()
    });
    let err = x.handle_response(r).unwrap_err();
    assert_eq!(
        err,
        SaslError::UnsupportedMechanism {
            mechanism: SaslMechanism::ScramSha512,
            offered: vec!["PLAIN".into(), "OAUTHBEARER".into()],
        }
    );
    assert_eq!(
        err.to_string(),
        "the broker does not enable SASL mechanism SCRAM-SHA-512 (it offers: [PLAIN, OAUTHBEARER])"
    );
    // A success code whose list lacks the mechanism is the same error.
    let mut x = exchange(&[
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, handshake_ok(&["SCRAM-SHA-256"]));
    assert!(matches!(
        x.handle_response(r),
        Err(SaslError::UnsupportedMechanism { .. })
    ));
    // And nothing more is accepted afterwards.
    assert!(matches!(
        x.handle_response(SaslResponse::Authenticate(
            SaslAuthenticateResponse::default()
        )),
        Err(SaslError::UnexpectedResponse { .. })
    ));
}

#[test]
fn answers_out_of_turn_are_protocol_errors() {
    let mut x = exchange(&[
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ]);
    x.start();
    assert_eq!(
        x.handle_response(SaslResponse::Authenticate(
            SaslAuthenticateResponse::default()
        )),
        Err(SaslError::UnexpectedResponse {
            expected: "awaiting SaslHandshake",
            got: kacrab_wire::ApiKey::SaslAuthenticate
        })
    );
}

// ------------------------------------------------------------------------- SCRAM

/// A broker's SCRAM-SHA-512 credential and the half of RFC 5802 it runs: enough of a
/// verifier to check the client's proof, written from the RFC independently of the
/// client.
struct ScramServer {
    salt: Vec<u8>,
    iterations: u32,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
    server_nonce: &'static str,
    /// Set between the two rounds.
    auth_message_head: Option<String>,
    /// Flip a bit of the server signature (a broker that does not know the password).
    tamper: bool,
}

fn hmac512(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = <SimpleHmac<Sha512> as Mac>::new_from_slice(key).unwrap();
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

impl ScramServer {
    fn new(password: &str) -> Self {
        Self::with_iterations(password, 4096)
    }

    fn with_iterations(password: &str, iterations: u32) -> Self {
        let salt = b"kafka-salt-0001".to_vec();
        let mut salted = [0u8; 64];
        pbkdf2::pbkdf2::<SimpleHmac<Sha512>>(password.as_bytes(), &salt, iterations, &mut salted)
            .unwrap();
        let client_key = hmac512(&salted, b"Client Key");
        Self {
            salt,
            iterations,
            stored_key: Sha512::digest(&client_key).to_vec(),
            server_key: hmac512(&salted, b"Server Key"),
            server_nonce: "srvNonce%42",
            auth_message_head: None,
            tamper: false,
        }
    }

    fn round(&mut self, req: SaslRequest) -> Response {
        let msg = String::from_utf8(auth_bytes(&req).to_vec()).unwrap();
        match self.auth_message_head.take() {
            None => {
                let bare = msg.strip_prefix("n,,").expect("gs2 header n,,");
                assert!(bare.starts_with("n=bob,r="), "{bare}");
                let client_nonce = &bare["n=bob,r=".len()..];
                let server_first = format!(
                    "r={client_nonce}{},s={},i={}",
                    self.server_nonce,
                    STANDARD.encode(&self.salt),
                    self.iterations
                );
                self.auth_message_head = Some(format!("{bare},{server_first}"));
                answer(0, None, server_first.as_bytes(), 0)
            }
            Some(head) => {
                let (without_proof, proof) = msg.rsplit_once(",p=").unwrap();
                assert!(without_proof.starts_with("c=biws,r="));
                let auth_message = format!("{head},{without_proof}");
                let signature = hmac512(&self.stored_key, auth_message.as_bytes());
                let client_key: Vec<u8> = STANDARD
                    .decode(proof)
                    .unwrap()
                    .iter()
                    .zip(&signature)
                    .map(|(p, s)| p ^ s)
                    .collect();
                if Sha512::digest(&client_key).to_vec() != self.stored_key {
                    // Kafka's SaslServerAuthenticator wording.
                    return answer(
                        SASL_AUTHENTICATION_FAILED,
                        Some("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
                        b"",
                        0,
                    );
                }
                let mut server_signature = hmac512(&self.server_key, auth_message.as_bytes());
                if self.tamper {
                    server_signature[0] ^= 1;
                }
                let v = format!("v={}", STANDARD.encode(server_signature));
                answer(0, None, v.as_bytes(), 900_000)
            }
        }
    }
}

fn scram_512(server: &mut ScramServer) -> Result<SaslStep, SaslError> {
    let mut x = exchange(&[
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, handshake_ok(&["SCRAM-SHA-512"]));
    let mut step = x.handle_response(r)?;
    // Two authenticate rounds at most; a third request would be a bug.
    for _ in 0..2 {
        if let SaslStep::Done { .. } = step {
            break;
        }
        let r = over_the_wire(step, 2, |req| server.round(req));
        step = x.handle_response(r)?;
    }
    Ok(step)
}

#[test]
fn scram_sha_512_against_a_verifying_server() {
    let mut server = ScramServer::new("bob-pw-4409");
    assert_eq!(
        scram_512(&mut server).unwrap(),
        SaslStep::Done {
            session_lifetime: Some(Duration::from_secs(900))
        }
    );
}

/// Java's client checks only the minimum (`ScramSaslClient` refuses fewer than
/// `ScramMechanism.minIterations`, 4096); `maxIterations` (16384) bounds only the
/// credentials Kafka's own tools create (`ScramParser`, KIP-554), and a credential made
/// elsewhere, or under older tools, may have more. Such a broker authenticates Java's
/// client, so it must authenticate this one.
#[test]
fn scram_completes_with_iteration_counts_above_kafkas_tool_maximum() {
    for iterations in [16_385, 20_000, 100_000] {
        let mut server = ScramServer::with_iterations("bob-pw-4409", iterations);
        assert_eq!(
            scram_512(&mut server),
            Ok(SaslStep::Done {
                session_lifetime: Some(Duration::from_secs(900))
            }),
            "{iterations} iterations"
        );
    }
}

#[test]
fn scram_with_a_wrong_password_fails_with_the_brokers_message() {
    let mut server = ScramServer::new("another-password");
    let err = scram_512(&mut server).unwrap_err();
    assert_eq!(
        err,
        SaslError::AuthenticationFailed {
            mechanism: SaslMechanism::ScramSha512,
            message: Some("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512".into()),
        }
    );
}

#[test]
fn scram_refuses_a_server_that_cannot_prove_it_knows_the_password() {
    let mut server = ScramServer::new("bob-pw-4409");
    server.tamper = true;
    assert_eq!(
        scram_512(&mut server).unwrap_err(),
        SaslError::BadServerSignature {
            mechanism: SaslMechanism::ScramSha512
        }
    );
}

#[test]
fn scram_sha_256_exchange_follows_rfc_7677() {
    let mut x = SaslExchange::new(
        SaslConfig::default().scram(SaslMechanism::ScramSha256, "user", "pencil"),
        0,
        ClientNonce::from_printable("rOprNGfwEbeRWgbNEkqO").unwrap(),
    )
    .unwrap();
    let r = over_the_wire(x.start(), 1, handshake_ok(&["SCRAM-SHA-256"]));
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 0, |req| {
        assert_eq!(&auth_bytes(&req)[..], b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        answer(0, None, b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", 0)
    });
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 0, |req| {
        assert_eq!(
            &auth_bytes(&req)[..],
            &b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="[..]
        );
        answer(
            0,
            None,
            b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
            0,
        )
    });
    // v0 has no session lifetime: none reported.
    assert_eq!(
        x.handle_response(r).unwrap(),
        SaslStep::Done {
            session_lifetime: None
        }
    );
}

#[test]
fn scram_server_error_attribute_is_an_authentication_failure() {
    let mut x = exchange(&[
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, handshake_ok(&["SCRAM-SHA-512"]));
    let step = x.handle_response(r).unwrap();
    let mut server = ScramServer::new("bob-pw-4409");
    let r = over_the_wire(step, 2, |req| server.round(req));
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 2, |_| answer(0, None, b"e=unknown-user", 0));
    assert_eq!(
        x.handle_response(r).unwrap_err(),
        SaslError::AuthenticationFailed {
            mechanism: SaslMechanism::ScramSha512,
            message: Some("SCRAM server error: unknown-user".into())
        }
    );
}

#[test]
fn client_nonces_differ_per_exchange_and_are_printable() {
    let seed = [9; 32];
    let a = ClientNonce::derive(&seed, 1);
    let b = ClientNonce::derive(&seed, 2);
    assert_ne!(a, b);
    assert_eq!(a, ClientNonce::derive(&seed, 1), "deterministic");
    assert!(ClientNonce::from_printable(a.as_str()).is_some());
    assert!(ClientNonce::from_printable("a,b").is_none());
    assert!(ClientNonce::from_printable("").is_none());
}

// ------------------------------------------------------------------- OAUTHBEARER

struct FixedToken(Mutex<u32>);

impl OAuthBearerTokenProvider for FixedToken {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        *self.0.lock().unwrap() += 1;
        Ok(OAuthBearerToken {
            value: Secret::new("tok.en-9911"),
            lifetime_ms: 0,
            principal_name: "svc".into(),
            extensions: BTreeMap::from([("logicalCluster".into(), "lkc-1".into())]),
        })
    }
}

use crate::sasl::oauthbearer::{OAuthBearerToken, OAuthBearerTokenProvider};

#[test]
fn oauthbearer_sends_the_providers_token_with_extensions() {
    let provider = Arc::new(FixedToken(Mutex::new(0)));
    let mut config = SaslConfig::default();
    config.oauthbearer(provider.clone());
    let mut x = SaslExchange::new(&config, 0, nonce()).unwrap();
    let r = over_the_wire(x.start(), 1, handshake_ok(&["OAUTHBEARER"]));
    let step = x.handle_response(r).unwrap();
    assert_eq!(
        *provider.0.lock().unwrap(),
        1,
        "asked once per authentication"
    );
    let r = over_the_wire(step, 2, |req| {
        assert_eq!(
            &auth_bytes(&req)[..],
            b"n,,\x01auth=Bearer tok.en-9911\x01logicalCluster=lkc-1\x01\x01"
        );
        answer(0, None, b"", 0)
    });
    assert_eq!(
        x.handle_response(r).unwrap(),
        SaslStep::Done {
            session_lifetime: None
        }
    );
}

#[test]
fn oauthbearer_error_status_is_acknowledged_then_reported() {
    let mut config = SaslConfig::default();
    config.oauthbearer(Arc::new(FixedToken(Mutex::new(0))));
    let mut x = SaslExchange::new(&config, 0, nonce()).unwrap();
    let r = over_the_wire(x.start(), 1, handshake_ok(&["OAUTHBEARER"]));
    let step = x.handle_response(r).unwrap();
    // RFC 7628 section 3.2.2: an error status; the client answers %x01.
    let r = over_the_wire(step, 2, |_| {
        answer(0, None, br#"{"status":"invalid_token"}"#, 0)
    });
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 2, |req| {
        assert_eq!(&auth_bytes(&req)[..], b"\x01");
        answer(
            SASL_AUTHENTICATION_FAILED,
            Some("Authentication failed: Invalid JWT for token tok.en-9911"),
            b"",
            0,
        )
    });
    let err = x.handle_response(r).unwrap_err();
    assert_eq!(
        err,
        SaslError::AuthenticationFailed {
            mechanism: SaslMechanism::OAuthBearer,
            message: Some("Authentication failed: Invalid JWT for token [redacted]".into())
        }
    );
}

#[test]
fn oauthbearer_unsecured_jwt_from_jaas() {
    let mut x = exchange(&[
        ("sasl.mechanism", "OAUTHBEARER"),
        (
            "sasl.jaas.config",
            r#"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";"#,
        ),
    ]);
    let r = over_the_wire(x.start(), 1, handshake_ok(&["OAUTHBEARER"]));
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 2, |req| {
        let bytes = auth_bytes(&req);
        let text = std::str::from_utf8(&bytes).unwrap();
        // base64url of {"alg":"none"}, then the claims, then no signature.
        assert!(
            text.starts_with("n,,\x01auth=Bearer eyJhbGciOiJub25lIn0."),
            "{text}"
        );
        assert!(text.ends_with(".\x01\x01"), "{text}");
        answer(0, None, b"", 0)
    });
    assert!(matches!(x.handle_response(r), Ok(SaslStep::Done { .. })));
}

#[test]
fn a_failing_token_provider_fails_the_exchange() {
    struct NoToken;
    impl OAuthBearerTokenProvider for NoToken {
        fn token(&self) -> Result<OAuthBearerToken, String> {
            Err("identity provider unreachable".into())
        }
    }
    let mut config = SaslConfig::default();
    config.oauthbearer(Arc::new(NoToken));
    let mut x = SaslExchange::new(&config, 0, nonce()).unwrap();
    let r = over_the_wire(x.start(), 1, handshake_ok(&["OAUTHBEARER"]));
    assert_eq!(
        x.handle_response(r).unwrap_err(),
        SaslError::TokenProvider {
            message: "identity provider unreachable".into()
        }
    );
}

// --------------------------------------------------------------- KIP-368, errors

#[test]
fn reauthentication_falls_within_85_to_95_percent_of_the_lifetime() {
    let lifetime = Duration::from_secs(1000);
    assert_eq!(reauthenticate_after(lifetime, 0), Duration::from_secs(850));
    assert_eq!(reauthenticate_after(lifetime, 50), Duration::from_secs(900));
    assert_eq!(
        reauthenticate_after(lifetime, 100),
        Duration::from_secs(950)
    );
    assert_eq!(
        reauthenticate_after(lifetime, u16::MAX),
        Duration::from_secs(950)
    );
}

#[test]
fn other_broker_error_codes_are_typed() {
    let mut x = exchange(&[
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, |_| {
        kacrab_wire::message!(SaslHandshakeResponse {
            error_code: ILLEGAL_SASL_STATE,
            mechanisms: vec![],
        })
        .into()
    });
    assert_eq!(
        x.handle_response(r),
        Err(SaslError::IllegalState { message: None })
    );
    let mut x = exchange(&[
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, handshake_ok(&["PLAIN"]));
    let step = x.handle_response(r).unwrap();
    let r = over_the_wire(step, 2, |_| answer(-1, Some("boom"), b"", 0));
    assert!(matches!(
        x.handle_response(r),
        Err(SaslError::BrokerError { error_code: -1, .. })
    ));
}

// -------------------------------------------------------------------- redaction

const SECRETS: &[&str] = &["alice-pw-7731", "bob-pw-4409", "tok.en-9911"];

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} leaks {s:?}: {text}");
    }
}

#[test]
fn no_debug_output_or_error_holds_a_secret() {
    // Configurations, from properties and typed.
    let props = [
        ("bootstrap.servers", "b:9092"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ];
    let config = SessionConfig::from_properties(props).unwrap();
    assert_no_secret("SessionConfig", &format!("{config:?} {config:#?}"));
    let mut builder = SessionConfig::builder();
    builder
        .sasl()
        .scram(SaslMechanism::ScramSha512, "bob", "bob-pw-4409");
    assert_no_secret("SessionConfigBuilder", &format!("{builder:?}"));
    assert_no_secret("SaslConfig", &format!("{:?}", builder.build().unwrap_err()));
    let mut oauth = SaslConfig::default();
    oauth.oauthbearer(Arc::new(FixedToken(Mutex::new(0))));
    assert_no_secret("OAuthBearer SaslConfig", &format!("{oauth:?}"));
    assert_no_secret(
        "OAuthBearerToken",
        &format!("{:?}", FixedToken(Mutex::new(0)).token().unwrap()),
    );

    // Configuration errors for broken values holding a password.
    for jaas in [
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required password="alice-pw-7731""#,
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required password="alice-pw-7731;"#,
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" "alice-pw-7731";"#,
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required password="alice-pw-7731";"#,
        r#"com.example.Module required password="alice-pw-7731";"#,
    ] {
        let err = SessionConfig::from_properties([
            ("bootstrap.servers", "b:9092"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", jaas),
        ])
        .unwrap_err();
        assert_no_secret("SessionConfigError", &format!("{err} {err:?}"));
    }

    // Requests on the wire, in Debug.
    let mut x = exchange(&[
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", PLAIN_JAAS),
    ]);
    let r = over_the_wire(x.start(), 1, handshake_ok(&["PLAIN"]));
    let step = x.handle_response(r).unwrap();
    assert_no_secret("SaslStep", &format!("{step:?}"));
    if let SaslStep::Send(req) = &step {
        assert_no_secret("Request", &format!("{:?}", Request::Sasl(req.clone())));
    }
    // A broker that echoes the password in its error message.
    let r = over_the_wire(step, 2, |_| {
        answer(
            SASL_AUTHENTICATION_FAILED,
            Some("bad password alice-pw-7731 for alice"),
            b"alice-pw-7731",
            0,
        )
    });
    // The wire type cannot know the secret: it hides the bytes, the exchange scrubs the
    // message it keeps.
    assert!(
        format!("{r:?}").contains("auth_bytes: [13 bytes redacted]"),
        "{r:?}"
    );
    let err = x.handle_response(r).unwrap_err();
    assert_no_secret("SaslError", &format!("{err} {err:?}"));
    assert_eq!(
        err.to_string(),
        "SASL PLAIN authentication failed: bad password [redacted] for alice"
    );

    // Every SCRAM failure.
    for tamper in [false, true] {
        let mut server = ScramServer::new(if tamper { "bob-pw-4409" } else { "other" });
        server.tamper = tamper;
        let err = scram_512(&mut server).unwrap_err();
        assert_no_secret("SaslError", &format!("{err} {err:?}"));
    }
}

// ------------------------------------------------------------------ real broker

/// One authentication against a real broker over a plain socket: ApiVersions, then the
/// exchange, with the versions negotiated. Returns the session lifetime granted.
fn authenticate_against(addr: &str, config: &SaslConfig) -> Result<Option<Duration>, SaslError> {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(addr).expect("connect to the probe broker");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut conn = Connection::new(Some("kacrab-sasl-probe".into()));
    let mut frames = FrameDecoder::new();
    let mut roundtrip = |conn: &mut Connection, request: Request, version: i16| -> Response {
        let sent = conn.encode(request, version, 0).unwrap();
        socket.write_all(&sent.frame.to_bytes()).unwrap();
        loop {
            if let Some(frame) = frames.decode().unwrap() {
                return conn.decode(frame).unwrap().response;
            }
            let mut buf = [0u8; 4096];
            let n = socket.read(&mut buf).expect("read from the probe broker");
            assert!(n > 0, "the broker closed the connection");
            frames.extend(&buf[..n]);
        }
    };
    let Response::ApiVersions(av) = roundtrip(
        &mut conn,
        kacrab_wire::message!(ApiVersionsRequest {
            client_software_name: "kacrab".into(),
            client_software_version: "0".into(),
        })
        .into(),
        3,
    ) else {
        panic!("not an ApiVersions answer")
    };
    let versions = kacrab_wire::Versions::from_response(&av).unwrap();
    let mut x = SaslExchange::new(config, wall_clock_ms(), ClientNonce::derive(&[3; 32], 9))?;
    let mut step = x.start();
    loop {
        let request = match step {
            SaslStep::Send(r) => r,
            SaslStep::Done { session_lifetime } => return Ok(session_lifetime),
        };
        let version = versions.get(request.api_key()).unwrap();
        let Response::Sasl(answer) = roundtrip(&mut conn, Request::Sasl(request), version) else {
            panic!("not a SASL answer")
        };
        step = x.handle_response(answer)?;
    }
}

/// Against a real SASL_PLAINTEXT listener named by `KACRAB_SASL_PROBE_BOOTSTRAP`, with
/// PLAIN user alice/alice-pw, SCRAM-SHA-512 user bob/bob-pw, Kafka's unsecured
/// OAUTHBEARER validator, and SCRAM-SHA-256 not enabled. Skips without it.
#[test]
fn real_broker_authenticates_each_mechanism_and_refuses_bad_credentials() {
    let Ok(addr) = std::env::var("KACRAB_SASL_PROBE_BOOTSTRAP") else {
        eprintln!(
            "skipped: set KACRAB_SASL_PROBE_BOOTSTRAP=host:port of a SASL_PLAINTEXT listener \
             (PLAIN alice/alice-pw, SCRAM-SHA-512 bob/bob-pw, unsecured OAUTHBEARER)"
        );
        return;
    };
    let jaas = |module: &str, user: &str, pw: &str| {
        format!(
            r#"org.apache.kafka.common.security.{module} required username="{user}" password="{pw}";"#
        )
    };
    let ok = |mech: &str, jaas: &str| {
        let config = sasl_config(&[("sasl.mechanism", mech), ("sasl.jaas.config", jaas)]);
        authenticate_against(&addr, &config)
    };
    let plain = jaas("plain.PlainLoginModule", "alice", "alice-pw");
    let scram = jaas("scram.ScramLoginModule", "bob", "bob-pw");
    let lifetime = ok("PLAIN", &plain).expect("PLAIN");
    eprintln!("PLAIN ok, session lifetime {lifetime:?}");
    ok("SCRAM-SHA-512", &scram).expect("SCRAM-SHA-512");
    ok(
        "OAUTHBEARER",
        r#"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="carol";"#,
    )
    .expect("OAUTHBEARER");
    let wrong = ok(
        "SCRAM-SHA-512",
        &jaas("scram.ScramLoginModule", "bob", "not-bobs"),
    )
    .unwrap_err();
    eprintln!("wrong SCRAM password: {wrong}");
    assert!(
        matches!(wrong, SaslError::AuthenticationFailed { .. }),
        "{wrong:?}"
    );
    let wrong = ok("PLAIN", &jaas("plain.PlainLoginModule", "alice", "nope")).unwrap_err();
    eprintln!("wrong PLAIN password: {wrong}");
    assert!(
        matches!(wrong, SaslError::AuthenticationFailed { .. }),
        "{wrong:?}"
    );
    let unknown = ok("SCRAM-SHA-256", &scram).unwrap_err();
    eprintln!("mechanism not enabled: {unknown}");
    assert!(
        matches!(&unknown, SaslError::UnsupportedMechanism { offered, .. } if offered.iter().any(|m| m == "PLAIN")),
        "{unknown:?}"
    );
}

/// The wall clock for the real-broker check (the test is the driver here: it owns the
/// clock, as a driver does).
fn wall_clock_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
