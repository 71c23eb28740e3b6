//! What an application plugs into the Tokio producer's builder: any SASL configuration
//! (an OAUTHBEARER token provider), a partitioner, interceptors.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::scripted::{Broker, ADDR, TOPIC};
use kacrab_testkit::extensions::{Broken, LastPartition, Seen, Tracer};
use kacrab_tokio::{
    OAuthBearerToken, OAuthBearerTokenHandle, OAuthBearerTokenProvider, ProduceError, Producer,
    ProducerRecord, Secret,
};

/// Hands out `token-1`, `token-2`, ...: one fresh token per authentication.
#[derive(Default)]
struct CountingProvider {
    calls: AtomicU32,
}

impl OAuthBearerTokenProvider for CountingProvider {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(OAuthBearerToken::new(
            Secret::from(format!("token-{n}")),
            i64::MAX,
            "alice",
        ))
    }
}

/// An OAUTHBEARER provider installed through `ProducerBuilder::sasl` authenticates the
/// Tokio producer's connection, and when the broker's session lifetime (KIP-368,
/// `SaslAuthenticateResponse.session_lifetime_ms`) nears its end the same connection
/// re-authenticates with a fresh token from the provider, at 85-95% of the lifetime
/// (Java's `SaslClientAuthenticator.ReauthInfo`), while records keep flowing.
#[tokio::test(start_paused = true)]
async fn an_oauthbearer_provider_authenticates_and_reauthenticates_with_a_fresh_token() {
    let broker = Broker::new(1);
    broker.require_oauthbearer(60_000);
    let provider = Arc::new(CountingProvider::default());
    let mut b = Producer::builder();
    b.set("bootstrap.servers", ADDR).unwrap();
    b.set("security.protocol", "SASL_PLAINTEXT").unwrap();
    b.set("linger.ms", "0").unwrap();
    b.sasl().oauthbearer(provider.clone());
    b.connector(broker.connector());
    let p = b.build().expect("an OAUTHBEARER producer builds");

    let send = |v: &'static str| p.send(ProducerRecord::new(TOPIC, 0, v));
    send("a").await.expect("queued").await.expect("delivered");
    tokio::time::sleep(Duration::from_secs(58)).await;
    send("b").await.expect("queued").await.expect("delivered");
    p.close().await;

    let s = broker.state.lock().unwrap();
    // The bootstrap connection and node 1's: each authenticated, then re-authenticated
    // in place (no new connection) with a token the provider had not handed out yet.
    assert_eq!(s.connect_log.len(), 2, "no connection was replaced");
    assert_eq!(provider.calls.load(Ordering::SeqCst), 4);
    for conn in 0..2 {
        let auths: Vec<_> = s.auth_log.iter().filter(|a| a.1 == conn).collect();
        assert_eq!(auths.len(), 2, "connection {conn}: {:?}", s.auth_log);
        let token = |i: usize| String::from_utf8(auths[i].2.to_vec()).unwrap();
        assert!(
            token(0).starts_with("n,,\u{1}auth=Bearer token-"),
            "{}",
            token(0)
        );
        assert_ne!(token(0), token(1), "a fresh token re-authenticates");
        let gap = auths[1].0 - auths[0].0;
        assert!(
            (Duration::from_millis(51_000)..=Duration::from_millis(57_000)).contains(&gap),
            "connection {conn} re-authenticated after {gap:?}"
        );
    }
    assert_eq!(s.records(0), 2);
}

/// An asynchronous token source (here a task standing in for an OIDC client on an async
/// HTTP stack) feeds an `OAuthBearerTokenHandle`; the session never waits on it. The
/// KIP-368 re-authentication before the broker's session ends sends the token the task
/// set last, on the same connection. As Java logs in within its constructor, the first
/// token is the application's to fetch before building: with none, authentication
/// fails as a provider's error does, naming the handle.
#[tokio::test(start_paused = true)]
async fn a_token_handle_fed_by_an_async_task_authenticates_and_reauthenticates() {
    let broker = Broker::new(1);
    broker.require_oauthbearer(60_000);
    let build = |handle: &OAuthBearerTokenHandle| {
        let mut b = Producer::builder();
        b.set("bootstrap.servers", ADDR).unwrap();
        b.set("security.protocol", "SASL_PLAINTEXT").unwrap();
        b.set("linger.ms", "0").unwrap();
        b.sasl().oauthbearer(Arc::new(handle.clone()));
        b.connector(broker.connector());
        b.build().expect("an OAUTHBEARER producer builds")
    };

    // No token yet: the record fails, not possibly written, and the error names why.
    let empty = OAuthBearerTokenHandle::new();
    let p = build(&empty);
    let err = p
        .send(ProducerRecord::new(TOPIC, 0, "early"))
        .await
        .expect("queued")
        .await
        .expect_err("no token to authenticate with");
    assert!(!err.possibly_written());
    assert!(err.to_string().contains("OAuthBearerTokenHandle"), "{err}");
    p.close().await;
    broker.state.lock().unwrap().auth_log.clear();

    let handle = OAuthBearerTokenHandle::new();
    let token =
        |n: u64| OAuthBearerToken::new(Secret::from(format!("token-{n}")), i64::MAX, "alice");
    handle.set(token(1));
    let start = tokio::time::Instant::now();
    let refresher = {
        let handle = handle.clone();
        tokio::spawn(async move {
            // The token lives 50 s: renewed every 40 s, at 80% of its lifetime, as Java's
            // login refresh does.
            for n in 2.. {
                tokio::time::sleep(Duration::from_secs(40)).await;
                handle.set(token(n));
            }
        })
    };
    let p = build(&handle);
    let send = |v: &'static str| p.send(ProducerRecord::new(TOPIC, 0, v));
    send("a").await.expect("queued").await.expect("delivered");
    tokio::time::sleep(Duration::from_secs(58)).await;
    send("b").await.expect("queued").await.expect("delivered");
    p.close().await;
    refresher.abort();

    let s = broker.state.lock().unwrap();
    for (at, conn, bytes) in &s.auth_log {
        let sent = String::from_utf8(bytes.to_vec()).unwrap();
        let n: u64 = sent
            .strip_prefix("n,,\u{1}auth=Bearer token-")
            .and_then(|rest| rest.split('\u{1}').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("connection {conn}: {sent:?}"));
        // The task's n-th token exists from 40 (n - 1) s on.
        let newest = at.duration_since(start).as_secs() / 40 + 1;
        assert_eq!(n, newest, "connection {conn} at {at:?} sent an old token");
    }
    // The two connections (bootstrap, node 1) each authenticated, then re-authenticated
    // in place with the token set at 40 s.
    let authenticated: Vec<usize> = (0..s.connect_log.len())
        .filter(|&conn| s.auth_log.iter().any(|a| a.1 == conn))
        .collect();
    assert_eq!(authenticated.len(), 2, "{:?}", s.auth_log);
    for conn in authenticated {
        let tokens: Vec<_> = s.auth_log.iter().filter(|a| a.1 == conn).collect();
        assert_eq!(tokens.len(), 2, "connection {conn}: {:?}", s.auth_log);
        assert_ne!(tokens[0].2, tokens[1].2, "a fresh token re-authenticates");
    }
    assert_eq!(s.records(0), 2);
}

/// The builder reaches every SASL setting, and its `Debug` never shows a secret.
#[test]
fn the_builders_debug_hides_sasl_secrets() {
    let mut b = Producer::builder();
    b.sasl().plain("alice", "hunter2");
    let shown = format!("{b:?}");
    assert!(shown.contains("alice"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}

/// Without the feature `oidc`, Java's OIDC client-credentials setup (KIP-768:
/// `sasl.oauthbearer.token.endpoint.url` and `OAuthBearerLoginModule` with clientId and
/// clientSecret) is refused when the producer is built, naming the feature and the token
/// handle to feed instead; the secret is not in the error.
#[cfg(not(feature = "oidc"))]
#[test]
fn without_the_oidc_feature_the_token_endpoint_names_the_feature() {
    let err = Producer::from_properties(&[
        ("bootstrap.servers", "localhost:9092"),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "OAUTHBEARER"),
        ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
        (
            "sasl.jaas.config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             clientId=\"app\" clientSecret=\"hunter2\";",
        ),
    ])
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(err.contains("feature `oidc`"), "{err}");
    assert!(err.contains("OAuthBearerTokenHandle"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

/// Against krafka's FakeBroker: the installed partitioner places every record without
/// a partition; interceptors run in order, so the header the first adds reaches the
/// broker, and the second, failing, loses no record (its changes are dropped, as Java's
/// `ProducerInterceptors.onSend` logs and goes on with the record as it was); each sees
/// every record's outcome once, the delivered ones with partition and offset and the one
/// refused before it was sent (an invalid topic name: Java's
/// `ProducerInterceptors.onSendError`) with `possibly_written: false`.
#[test]
fn interceptors_and_a_partitioner_installed_in_the_builder() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("ext", 3).expect("topic");
    let bootstrap = cluster.bootstrap();
    let tracer = Arc::new(Tracer::default());
    let broken = Arc::new(Broken::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let outcomes = rt.block_on(async {
        let mut b = Producer::builder();
        b.set("bootstrap.servers", &bootstrap).unwrap();
        b.partitioner(LastPartition)
            .interceptor(Arc::clone(&tracer))
            .interceptor(Arc::clone(&broken));
        let p = b.build().expect("producer");
        let mut deliveries = Vec::new();
        for i in 0..5 {
            let record = ProducerRecord::unkeyed("ext", format!("v{i}"));
            deliveries.push(p.send(record).await.expect("queued"));
        }
        deliveries.push(
            p.send(ProducerRecord::unkeyed("not a topic!", "x"))
                .await
                .expect("refused through its delivery"),
        );
        let mut outcomes = Vec::new();
        for d in deliveries {
            outcomes.push(d.await);
        }
        p.close().await;
        outcomes
    });

    assert!(outcomes[..5].iter().all(Result::is_ok), "{outcomes:?}");
    assert!(matches!(outcomes[5], Err(ProduceError::Topic { .. })));
    let logs = cluster.broker().all_records("ext").expect("log");
    assert_eq!(logs.len(), 5);
    for (i, r) in logs.iter().enumerate() {
        assert_eq!(r.partition, 2, "the installed partitioner placed it");
        assert_eq!(r.value.as_deref(), Some(format!("v{i}").as_bytes()));
        assert_eq!(
            r.headers,
            vec![("traced".to_owned(), Some(bytes::Bytes::from("yes")))]
        );
    }
    let seen = tracer.seen.lock().unwrap().clone();
    let mut expected: Vec<Seen> = (0..5)
        .map(|i| ("ext".to_owned(), Ok((2, Some(i)))))
        .collect();
    expected.push(("not a topic!".to_owned(), Err(false)));
    let mut sorted = seen.clone();
    sorted.sort_by_key(|(topic, _)| topic.clone());
    assert_eq!(sorted, expected, "every outcome once: {seen:?}");
    assert_eq!(broken.acks.load(Ordering::SeqCst), 6);
}
