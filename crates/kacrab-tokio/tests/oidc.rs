//! OAUTHBEARER tokens from an OIDC token endpoint (KIP-768 client credentials, feature
//! `oidc`), end to end: a token endpoint this test serves on loopback, the scripted
//! OAUTHBEARER broker, and the producer configured by Java's keys.
//!
//! Real time, not paused: the endpoint is a real socket, and a paused clock jumps to
//! the session's next timer while an HTTP answer is on its way.
#![cfg(feature = "oidc")]

mod scripted;
mod token_endpoint;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use kacrab_tokio::{Producer, ProducerBuilder, ProducerRecord};
use scripted::{Broker, ADDR, TOPIC};

const CLIENT_SECRET: &str = "s3cret-x";

/// What the endpoint answers next.
#[derive(Clone, Debug)]
enum Reply {
    /// A fresh JWT for `sub`, expiring `lifetime_s` from now.
    Token { lifetime_s: u64 },
    /// An HTTP error with this JSON body.
    Status(u16, &'static str),
}

/// One request the endpoint saw.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    authorization: String,
    content_type: String,
    body: String,
}

#[derive(Default)]
struct EndpointState {
    script: VecDeque<Reply>,
    seen: Vec<Seen>,
    /// The access tokens issued, in order.
    issued: Vec<String>,
}

/// A token endpoint on loopback: answers each POST from its script (a token of
/// `default_lifetime_s` once the script is empty), and keeps what it saw.
struct TokenEndpoint {
    url: String,
    state: Arc<Mutex<EndpointState>>,
}

impl TokenEndpoint {
    async fn start(script: &[Reply], default_lifetime_s: u64) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/oauth2/token", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(EndpointState {
            script: script.iter().cloned().collect(),
            ..EndpointState::default()
        }));
        let served = Arc::clone(&state);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let state = Arc::clone(&served);
                tokio::spawn(serve(stream, state, default_lifetime_s));
            }
        });
        Self { url, state }
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    fn issued(&self) -> Vec<String> {
        self.state.lock().unwrap().issued.clone()
    }
}

/// One HTTP/1.1 exchange, then the connection closes.
async fn serve(
    mut stream: tokio::net::TcpStream,
    state: Arc<Mutex<EndpointState>>,
    default_lifetime_s: u64,
) {
    let Some(request) = token_endpoint::read_request(&mut stream).await else {
        return;
    };
    assert!(
        request.head.starts_with("POST /oauth2/token "),
        "{}",
        request.head
    );
    let (status, body) = {
        let mut s = state.lock().unwrap();
        s.seen.push(Seen {
            at: Instant::now(),
            authorization: request.header("authorization"),
            content_type: request.header("content-type"),
            body: request.body.clone(),
        });
        let reply = s.script.pop_front().unwrap_or(Reply::Token {
            lifetime_s: default_lifetime_s,
        });
        match reply {
            Reply::Token { lifetime_s } => {
                let n = s.issued.len() + 1;
                let token = jwt(n, lifetime_s);
                s.issued.push(token.clone());
                (
                    200,
                    format!(
                        r#"{{"access_token":"{token}","token_type":"Bearer","expires_in":{lifetime_s}}}"#
                    ),
                )
            }
            Reply::Status(status, body) => (status, body.to_owned()),
        }
    };
    token_endpoint::respond(&mut stream, status, &body).await;
}

/// The `n`-th token: an unsigned-looking JWT for `svc`, `exp` `lifetime_s` from now.
fn jwt(n: usize, lifetime_s: u64) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = format!(
        r#"{{"sub":"svc","iat":{now},"exp":{},"scope":"kafka","n":{n}}}"#,
        now + lifetime_s
    );
    format!(
        "{}.{}.c2lnbmF0dXJl",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

/// A producer of Java's OIDC keys against `broker`, its endpoint `url`.
fn oidc_builder(broker: &Broker, url: &str, extra: &[(&str, &str)]) -> ProducerBuilder {
    let mut b = Producer::builder();
    let jaas = format!(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         clientId=\"app\" clientSecret=\"{CLIENT_SECRET}\" scope=\"kafka produce\";"
    );
    for (k, v) in [
        ("bootstrap.servers", ADDR),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("linger.ms", "0"),
        ("sasl.mechanism", "OAUTHBEARER"),
        ("sasl.oauthbearer.token.endpoint.url", url),
        (
            "sasl.login.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        ),
        ("sasl.jaas.config", jaas.as_str()),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    {
        b.set(k, v).unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    b.connector(broker.connector());
    b
}

/// The token in an OAUTHBEARER client message.
fn bearer(auth_bytes: &[u8]) -> String {
    let text = std::str::from_utf8(auth_bytes).unwrap();
    text.strip_prefix("n,,\u{1}auth=Bearer ")
        .and_then(|rest| rest.split('\u{1}').next())
        .unwrap_or_else(|| panic!("{text:?}"))
        .to_owned()
}

/// The producer authenticates with the endpoint's token, fetched as Kafka's
/// `HttpAccessTokenRetriever` asks for it (POST `grant_type=client_credentials&scope=…`,
/// HTTP Basic of `clientId:clientSecret`, RFC 6749 section 4.4); the refresh task renews
/// it at `sasl.login.refresh.window.factor` of its lifetime (Kafka's
/// `ExpiringCredentialRefreshingLogin`), and the KIP-368 re-authentication before the
/// broker's session ends sends the renewed token on the same connection.
#[tokio::test]
async fn the_endpoints_token_authenticates_and_a_renewed_one_reauthenticates() {
    let broker = Broker::new(1);
    // Re-authentication at 85-95% of 8 s (6.8-7.6 s: at least 0.4 s before the
    // broker's session ends, room for a loaded machine); the 3-second tokens (2-3 s
    // left once issued, `exp` being in whole seconds) are renewed at 80% of that.
    broker.require_oauthbearer(8_000);
    let endpoint = TokenEndpoint::start(&[], 3).await;
    let p = oidc_builder(
        &broker,
        &endpoint.url,
        &[("sasl.login.refresh.window.jitter", "0")],
    )
    .build()
    .expect("builds");
    let send = |v: &'static str| p.send(ProducerRecord::new(TOPIC, 0, v));
    send("a").await.expect("queued").await.expect("delivered");
    tokio::time::sleep(Duration::from_millis(8_500)).await;
    send("b").await.expect("queued").await.expect("delivered");
    p.close().await;

    let seen = endpoint.seen();
    assert!(seen.len() >= 2, "renewed: {seen:?}");
    for request in &seen {
        assert_eq!(
            request.authorization,
            format!("Basic {}", STANDARD.encode(format!("app:{CLIENT_SECRET}")))
        );
        assert_eq!(request.content_type, "application/x-www-form-urlencoded");
        assert_eq!(
            request.body,
            "grant_type=client_credentials&scope=kafka+produce"
        );
    }
    let issued = endpoint.issued();
    let s = broker.state.lock().unwrap();
    let connections: Vec<usize> = (0..s.connect_log.len())
        .filter(|&conn| s.auth_log.iter().any(|a| a.1 == conn))
        .collect();
    assert!(!connections.is_empty());
    let mut reauthenticated = 0;
    for conn in connections {
        let tokens: Vec<String> = s
            .auth_log
            .iter()
            .filter(|a| a.1 == conn)
            .map(|a| bearer(&a.2))
            .collect();
        assert_eq!(
            tokens[0], issued[0],
            "connection {conn} first sends token 1"
        );
        for later in &tokens[1..] {
            let n = issued
                .iter()
                .position(|t| t == later)
                .expect("an issued token");
            assert!(
                n > 0,
                "connection {conn} re-authenticated with a renewed token"
            );
            reauthenticated += 1;
        }
    }
    assert!(reauthenticated > 0, "{:?}", s.auth_log);
    assert_eq!(s.records(0), 2);
}

/// An endpoint refusing the client (401, a status Kafka's `HttpAccessTokenRetriever`
/// does not retry) fails the first authentication with an error naming the endpoint's
/// URL, the status and RFC 6749's `error`, never the secret; the record fails not
/// possibly written. The builder's `Debug` hides the secret too.
#[tokio::test]
async fn a_refusing_endpoint_fails_the_records_naming_the_url_not_the_secret() {
    let broker = Broker::new(1);
    broker.require_oauthbearer(60_000);
    let endpoint = TokenEndpoint::start(
        &[Reply::Status(
            401,
            r#"{"error":"invalid_client","error_description":"unknown client"}"#,
        )],
        3600,
    )
    .await;
    let b = oidc_builder(&broker, &endpoint.url, &[]);
    let shown = format!("{b:?}");
    assert!(!shown.contains(CLIENT_SECRET), "{shown}");
    let p = b.build().expect("builds");
    let err = p
        .send(ProducerRecord::new(TOPIC, 0, "a"))
        .await
        .expect("queued")
        .await
        .expect_err("no token");
    assert!(!err.possibly_written(), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(text.contains(&endpoint.url), "{text}");
    assert!(text.contains("401"), "{text}");
    assert!(text.contains("invalid_client"), "{text}");
    assert!(!text.contains(CLIENT_SECRET), "{text}");
    assert!(
        !text.contains(&STANDARD.encode(format!("app:{CLIENT_SECRET}"))),
        "{text}"
    );
    p.close().await;
    assert_eq!(endpoint.seen().len(), 1, "a 401 is not retried");
    assert_eq!(broker.state.lock().unwrap().records(0), 0);
}

/// A 5xx is retried after `sasl.login.retry.backoff.ms`, doubling (Kafka's `Retry`),
/// and the token of the attempt that succeeds authenticates the producer.
#[tokio::test]
async fn a_failing_endpoint_is_retried_with_backoff() {
    let broker = Broker::new(1);
    broker.require_oauthbearer(60_000);
    let endpoint = TokenEndpoint::start(
        &[
            Reply::Status(503, r#"{"error":"temporarily_unavailable"}"#),
            Reply::Status(500, "oops"),
        ],
        3600,
    )
    .await;
    let p = oidc_builder(
        &broker,
        &endpoint.url,
        &[
            ("sasl.login.retry.backoff.ms", "200"),
            ("sasl.login.retry.backoff.max.ms", "5000"),
        ],
    )
    .build()
    .expect("builds");
    p.send(ProducerRecord::new(TOPIC, 0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered once the endpoint answers");
    p.close().await;
    let seen = endpoint.seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps[0] >= Duration::from_millis(200), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(400), "{gaps:?}");
    let s = broker.state.lock().unwrap();
    assert_eq!(bearer(&s.auth_log[0].2), endpoint.issued()[0]);
    assert_eq!(s.records(0), 1);
}
