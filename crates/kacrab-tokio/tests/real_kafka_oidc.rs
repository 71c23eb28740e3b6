//! OIDC client credentials (KIP-768, feature `oidc`) against real Apache Kafka that
//! validates the JWTs: `KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single`'s OIDC
//! listener (SASL_PLAINTEXT, OAUTHBEARER only, Kafka's
//! `OAuthBearerValidatorCallbackHandler` checking each token's RS256 signature against
//! the JWKS of `$KACRAB_KAFKA_OIDC_DIR/jwks.json`, its `exp`, `sub`, `aud` and `iss`).
//! Each test skips with a message unless `KACRAB_KAFKA_SASL_OIDC_BOOTSTRAP` is set (see
//! docs/real-kafka.md); `KACRAB_KAFKA_BOOTSTRAP` (the broker's PLAINTEXT listener)
//! creates the topics and reads them back with Kafka's console consumer.
//!
//! The token endpoint is this test's, on loopback (minimal HTTP/1.1, as in
//! `tests/oidc.rs`): it checks the HTTP Basic client credentials and answers
//! `{"access_token": <JWT>, "token_type": "Bearer", "expires_in": N}`, the JWT signed
//! with ring (`RsaKeyPair::from_pkcs8`, `RSA_PKCS1_SHA256`) by the PKCS#8 key the
//! script made for the broker's JWKS (`signer.pk8`), or, to be refused, by one the
//! broker does not know (`untrusted.pk8`, same `kid`).
//!
//! The test can fail: with the broker's key swapped for another (e.g. a
//! `KACRAB_KAFKA_OIDC_DIR` copy whose `signer.pk8` is `untrusted.pk8`) or another
//! audience (`KACRAB_KAFKA_OIDC_AUDIENCE=someone-else`), the first test's first record
//! fails with the broker's SASL authentication error (`{"status":"invalid_token"}`).
//! With an endpoint that stops issuing after the first token (so the producer keeps
//! it), the first record sent after that token's `exp` fails: the listener allows no
//! clock skew, so a re-authentication past `exp` needs a renewed token.
//!
//! Real time: the broker's sessions and the tokens' `exp` are wall-clock.
#![cfg(feature = "oidc")]

mod token_endpoint;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use kacrab_driver::ConnectFailure;
use kacrab_testkit::real_kafka::{create_topic, script};
use kacrab_tokio::{ProduceError, Producer, ProducerRecord};
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};

const CLIENT_ID: &str = "kacrab-app";
const CLIENT_SECRET: &str = "oidc-s3cret-not-in-errors";

/// The broker's OIDC listener and what its validator expects, from `scripts/kafka.sh`.
struct Env {
    oidc: String,
    plain: String,
    dir: PathBuf,
    audience: String,
    issuer: String,
    kid: String,
}

fn env(test: &str) -> Option<Env> {
    let Ok(oidc) = std::env::var("KACRAB_KAFKA_SASL_OIDC_BOOTSTRAP") else {
        eprintln!(
            "{test}: skipped, KACRAB_KAFKA_SASL_OIDC_BOOTSTRAP is not set \
             (KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single)"
        );
        return None;
    };
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set (scripts/kafka.sh prints it with the OIDC listener)")
        })
    };
    Some(Env {
        oidc,
        plain: var("KACRAB_KAFKA_BOOTSTRAP"),
        dir: PathBuf::from(var("KACRAB_KAFKA_OIDC_DIR")),
        audience: var("KACRAB_KAFKA_OIDC_AUDIENCE"),
        issuer: var("KACRAB_KAFKA_OIDC_ISSUER"),
        kid: var("KACRAB_KAFKA_OIDC_KID"),
    })
}

fn unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn fresh(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

/// Signs RS256 JWTs as an identity provider would.
struct Signer {
    key: RsaKeyPair,
    kid: String,
    audience: String,
    issuer: String,
    lifetime_s: u64,
}

impl Signer {
    /// `file` of the script's OIDC directory: `signer.pk8` (the JWKS's key) or
    /// `untrusted.pk8`.
    fn new(env: &Env, file: &str, lifetime_s: u64) -> Self {
        let path = env.dir.join(file);
        let der = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Self {
            key: RsaKeyPair::from_pkcs8(&der).expect("an RSA PKCS#8 key"),
            kid: env.kid.clone(),
            audience: env.audience.clone(),
            issuer: env.issuer.clone(),
            lifetime_s,
        }
    }

    /// A JWT (RFC 7519) issued now: `(token, exp)`.
    fn issue(&self) -> (String, u64) {
        let now = unix_s();
        let exp = now + self.lifetime_s;
        let header = format!(r#"{{"alg":"RS256","typ":"JWT","kid":"{}"}}"#, self.kid);
        let claims = format!(
            r#"{{"iss":"{}","sub":"{CLIENT_ID}","aud":"{}","iat":{now},"exp":{exp},"scope":"kafka"}}"#,
            self.issuer, self.audience
        );
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let mut signature = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                input.as_bytes(),
                &mut signature,
            )
            .expect("signs");
        (
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)),
            exp,
        )
    }
}

#[derive(Default)]
struct Issued {
    /// Each token issued, with its `exp`, in order.
    tokens: Vec<(String, u64)>,
    /// Requests refused for wrong client credentials.
    refused: usize,
}

/// A token endpoint on loopback (one HTTP/1.1 exchange per connection).
struct Endpoint {
    url: String,
    issued: Arc<Mutex<Issued>>,
}

impl Endpoint {
    async fn start(signer: Signer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/oauth2/token", listener.local_addr().unwrap());
        let issued = Arc::new(Mutex::new(Issued::default()));
        let state = Arc::clone(&issued);
        let signer = Arc::new(signer);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(serve(stream, Arc::clone(&signer), Arc::clone(&state)));
            }
        });
        Self { url, issued }
    }

    fn tokens(&self) -> Vec<(String, u64)> {
        self.issued.lock().unwrap().tokens.clone()
    }

    fn refused(&self) -> usize {
        self.issued.lock().unwrap().refused
    }
}

async fn serve(mut stream: tokio::net::TcpStream, signer: Arc<Signer>, state: Arc<Mutex<Issued>>) {
    let Some(request) = token_endpoint::read_request(&mut stream).await else {
        return;
    };
    let (head, body) = (&request.head, &request.body);
    let basic = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    let (status, answer) = if head.starts_with("POST /oauth2/token ")
        && request.header("authorization") == basic
        && body.starts_with("grant_type=client_credentials")
    {
        let (token, exp) = signer.issue();
        state.lock().unwrap().tokens.push((token.clone(), exp));
        (
            200,
            format!(
                r#"{{"access_token":"{token}","token_type":"Bearer","expires_in":{}}}"#,
                signer.lifetime_s
            ),
        )
    } else {
        state.lock().unwrap().refused += 1;
        (401, r#"{"error":"invalid_client"}"#.to_owned())
    };
    token_endpoint::respond(&mut stream, status, &answer).await;
}

/// A producer configured by Java's keys for OIDC client credentials.
fn producer(env: &Env, url: &str, extra: &[(&str, &str)]) -> Producer {
    let jaas = format!(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         clientId=\"{CLIENT_ID}\" clientSecret=\"{CLIENT_SECRET}\" scope=\"kafka\";"
    );
    let mut b = Producer::builder();
    for (k, v) in [
        ("bootstrap.servers", env.oidc.as_str()),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "OAUTHBEARER"),
        ("sasl.oauthbearer.token.endpoint.url", url),
        (
            "sasl.login.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        ),
        ("sasl.jaas.config", jaas.as_str()),
        ("linger.ms", "0"),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    {
        b.set(k, v).unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    let shown = format!("{b:?}");
    assert!(!shown.contains(CLIENT_SECRET), "{shown}");
    b.build().expect("builds")
}

/// Sends `value` to partition 0 of `topic` and waits for its outcome: why not, if it
/// was refused or failed.
async fn deliver(p: &Producer, topic: &str, value: String) -> Result<(), String> {
    match p.send(ProducerRecord::new(topic, 0, value)).await {
        Ok(delivery) => delivery.await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(format!("the producer refused it: {e}")),
    }
}

/// The values of `topic` (one partition) in log order, read by Kafka's console
/// consumer, after its end offset (Kafka's `GetOffsetShell`) said how many there are:
/// the consumer then stops at the last one rather than waiting out its idle timeout.
fn values(env: &Env, topic: &str) -> Vec<String> {
    let offsets = script(&["end-offsets", &env.plain, topic]).expect("end-offsets");
    let count: usize = offsets
        .trim()
        .strip_prefix(&format!("{topic}\t"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("end-offsets said {offsets:?}"));
    if count == 0 {
        return Vec::new();
    }
    let out = script(&["consume", &env.plain, topic, &count.to_string()]).expect("consume");
    out.lines()
        .filter_map(|l| l.split('\t').nth(3).map(str::to_owned))
        .collect()
}

/// (a) The endpoint's signed tokens authenticate on the broker; the producer renews
/// its 8-second tokens at half their lifetime (`sasl.login.refresh.window.factor` 0.5,
/// no jitter: Kafka's `ExpiringCredentialRefreshingLogin`) and re-authenticates on its
/// connection (KIP-368: the broker bounds each session by the token's `exp` and by
/// `KACRAB_KAFKA_REAUTH_MS`), so records sent after the first token expired are
/// acknowledged without a connection closing, and each record is in the log once,
/// in order. Fails with the broker's key or audience changed, or without renewal (see
/// the module's doc).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_tokens_authenticate_and_renewed_ones_reauthenticate() {
    let test = "signed_tokens_authenticate_and_renewed_ones_reauthenticate";
    let Some(env) = env(test) else {
        return;
    };
    let t0 = Instant::now();
    let topic = fresh("kacrab-oidc");
    create_topic(&env.plain, &topic, 1, 1).expect("create topic");
    let endpoint = Endpoint::start(Signer::new(&env, "signer.pk8", 8)).await;
    let p = producer(
        &env,
        &endpoint.url,
        &[
            ("sasl.login.refresh.window.factor", "0.5"),
            ("sasl.login.refresh.window.jitter", "0"),
        ],
    );
    for i in 0..5 {
        if let Err(e) = deliver(&p, &topic, format!("a{i}")).await {
            panic!("a{i} not delivered with the endpoint's first token: {e}");
        }
    }
    let first_exp = endpoint.tokens()[0].1;
    // Past the first token's expiry (`exp` is in whole seconds).
    let wait = (first_exp + 1).saturating_sub(unix_s());
    eprintln!("{test}: first token expires at {first_exp}; waiting {wait} s");
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert!(unix_s() > first_exp);
    for i in 0..5 {
        if let Err(e) = deliver(&p, &topic, format!("b{i}")).await {
            panic!("b{i}, sent after the first token expired, not delivered: {e}");
        }
    }
    let metrics = p.metrics().await.expect("a live producer");
    let produced = t0.elapsed();
    p.close().await;

    let tokens = endpoint.tokens();
    assert!(tokens.len() >= 2, "renewed: {} token(s)", tokens.len());
    assert_eq!(endpoint.refused(), 0, "the client credentials were right");
    let reauths = metrics
        .producer
        .get("successful-reauthentication-total")
        .unwrap();
    let closed = metrics.producer.get("connection-close-total").unwrap();
    eprintln!(
        "{test}: {} tokens fetched, {reauths} re-authentications, {closed} connections closed",
        tokens.len()
    );
    assert!(reauths >= 1.0, "re-authenticated: {reauths}");
    assert_eq!(closed, 0.0, "no connection was lost to an expired session");

    let expected: Vec<String> = (0..5)
        .map(|i| format!("a{i}"))
        .chain((0..5).map(|i| format!("b{i}")))
        .collect();
    assert_eq!(values(&env, &topic), expected, "once each, in order");
    eprintln!(
        "{test}: passed in {:.1} s (topic and records {:.1} s, then the read-back)",
        t0.elapsed().as_secs_f64(),
        produced.as_secs_f64()
    );
}

/// (b) A token signed by a key the broker's JWKS does not have (same `kid`) is
/// refused by Kafka's validator: the record fails with the SASL authentication error,
/// not possibly written, and nothing is in the log; the error names neither the client
/// secret nor the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_signed_by_an_unknown_key_is_refused() {
    let test = "a_token_signed_by_an_unknown_key_is_refused";
    let Some(env) = env(test) else {
        return;
    };
    let t0 = Instant::now();
    let topic = fresh("kacrab-oidc-forged");
    create_topic(&env.plain, &topic, 1, 1).expect("create topic");
    let endpoint = Endpoint::start(Signer::new(&env, "untrusted.pk8", 300)).await;
    let p = producer(&env, &endpoint.url, &[]);
    let err = p
        .send(ProducerRecord::new(topic.as_str(), 0, "forged"))
        .await
        .expect("queued")
        .await
        .expect_err("refused by the broker");
    p.close().await;
    eprintln!("{test}: {err}");
    assert!(!err.possibly_written(), "{err:?}");
    match &err {
        ProduceError::Connection { error, .. } => {
            assert!(
                matches!(error.cause, ConnectFailure::Sasl(_)),
                "a SASL failure: {err:?}"
            );
        }
        other => panic!("not an authentication failure: {other:?}"),
    }
    let text = format!("{err} {err:?}");
    assert!(text.contains("OAUTHBEARER authentication failed"), "{text}");
    assert!(!text.contains(CLIENT_SECRET), "{text}");
    assert!(
        !text.contains(&STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))),
        "{text}"
    );
    let tokens = endpoint.tokens();
    assert!(!tokens.is_empty(), "the endpoint was asked");
    for (token, _) in &tokens {
        // Any of its three parts would do; the signature is the forged part.
        let signature = token.rsplit('.').next().unwrap();
        assert!(!text.contains(signature), "{text}");
    }
    assert_eq!(
        values(&env, &topic),
        Vec::<String>::new(),
        "nothing written"
    );
    eprintln!("{test}: passed in {:.1} s", t0.elapsed().as_secs_f64());
}
