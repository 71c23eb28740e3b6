//! SASL inside the session, byte for byte: the pair harness's brokers run a SASL
//! listener (`pair/sasl.rs`, after Kafka's `SaslServerAuthenticator`) that refuses any
//! request before authentication and closes a connection used after its KIP-368
//! session expired; the session authenticates each connection between ApiVersions and
//! ready, re-authenticates before the lifetime ends, and fails for good (one
//! connection attempt, one `Completion::ConnectionFailed` naming the broker, nothing
//! reported written) when the broker refuses it.

use crate::pair;

use std::sync::Arc;
use std::time::Duration;

use crate::pair::sasl::{SaslFault, SaslListener};
use crate::pair::{Cluster, Pair};
use kacrab_driver::{
    CloseReason, Completion, ConnectFailure, NonceSeed, SaslError, SaslMechanism, Session,
    SessionConfig, SessionConfigError,
};
use kafka_protocol::messages::ApiKey;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const SECOND: Duration = Duration::from_secs(1);

const ALICE_PW: &str = "alice-secret-pw-9921";
const BOB_PW: &str = "bob-secret-pw-5512";

fn plain_jaas(user: &str, password: &str) -> String {
    format!(
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{password}";"#
    )
}

fn scram_jaas(user: &str, password: &str) -> String {
    format!(
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";"#
    )
}

/// A cluster whose brokers enable PLAIN and SCRAM-SHA-512 for alice and bob.
fn cluster(brokers: i32, max_reauth: Duration) -> Cluster {
    let mut c = Cluster::new(brokers).with_topic("t", brokers);
    let mut l = SaslListener::new(
        &["PLAIN", "SCRAM-SHA-512"],
        &[("alice", ALICE_PW), ("bob", BOB_PW)],
    );
    l.max_reauth = max_reauth;
    c.sasl = Some(l);
    c
}

fn scram_props(jaas: &str) -> Vec<(&'static str, String)> {
    vec![
        ("security.protocol", "SASL_PLAINTEXT".into()),
        ("sasl.mechanism", "SCRAM-SHA-512".into()),
        ("sasl.jaas.config", jaas.to_owned()),
    ]
}

fn pair(cluster: Cluster, props: &[(&'static str, String)]) -> Pair {
    let props: Vec<(&str, &str)> = props.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Pair::new(cluster, &props)
}

fn listener(p: &Pair) -> &SaslListener {
    p.cluster.sasl.as_ref().expect("a SASL listener")
}

/// The APIs each connection sent, in order.
fn apis_of(p: &Pair, conn: kacrab_driver::ConnId) -> Vec<ApiKey> {
    p.cluster
        .seen
        .iter()
        .filter(|s| s.conn == conn)
        .map(|s| s.api)
        .collect()
}

#[test]
fn scram_sha_512_authenticates_every_connection_before_any_other_request() {
    let mut p = pair(
        cluster(3, Duration::ZERO),
        &scram_props(&scram_jaas("bob", BOB_PW)),
    );
    let ids: Vec<_> = (0..3).map(|i| p.send("t", i, &format!("r{i}"))).collect();
    assert!(p.run_until(10 * SECOND, |p| ids
        .iter()
        .all(|id| p.outcome(*id).is_some())));
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).partition, i as i32);
        assert_eq!(p.cluster.values("t", i as i32), [format!("r{i}")]);
    }
    let l = listener(&p);
    assert!(l.violations.is_empty(), "{:?}", l.violations);
    let conns: Vec<_> = p.connects.iter().map(|c| c.1).collect();
    assert!(conns.len() >= 3, "{conns:?}");
    assert_eq!(l.successes.len(), conns.len(), "each connection once");
    for conn in conns {
        let apis = apis_of(&p, conn);
        assert_eq!(
            apis[..4],
            [
                ApiKey::ApiVersions,
                ApiKey::SaslHandshake,
                ApiKey::SaslAuthenticate,
                ApiKey::SaslAuthenticate
            ],
            "{conn:?}: {apis:?}"
        );
        assert!(
            apis[4..].iter().all(|a| !pair::sasl::is_sasl(*a)),
            "{apis:?}"
        );
    }
    // SaslAuthenticate at the highest version both speak: v2.
    assert!(p
        .cluster
        .seen
        .iter()
        .filter(|s| s.api == ApiKey::SaslAuthenticate)
        .all(|s| s.version == 2));
    assert!(p.closes.is_empty(), "{:?}", p.closes);
}

#[test]
fn plain_authenticates_and_a_transaction_commits() {
    let props = vec![
        ("security.protocol", "SASL_PLAINTEXT".into()),
        ("sasl.mechanism", "PLAIN".into()),
        ("sasl.jaas.config", plain_jaas("alice", ALICE_PW)),
        ("transactional.id", "tx".into()),
    ];
    let mut p = pair(cluster(3, Duration::ZERO), &props);
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    let _begin = p.session.begin_transaction(p.now);
    let ids: Vec<_> = (0..3).map(|i| p.send("t", i, &format!("r{i}"))).collect();
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    assert!(matches!(
        p.op(commit),
        Some((_, Completion::Transaction { result: Ok(()), .. }))
    ));
    for id in ids {
        assert!(p.outcome(id).is_some_and(Result::is_ok));
    }
    assert_eq!(p.cluster.end_txns, [true]);
    assert!(listener(&p).violations.is_empty());
    assert!(
        listener(&p).client_nonces.is_empty(),
        "PLAIN sends no nonce"
    );
}

/// SASL_SSL: the TLS handshake, then ApiVersions, then SASL, inside the session.
#[test]
fn scram_over_sasl_ssl_runs_after_the_tls_handshake() {
    const CA: &str = include_str!("fixtures/tls/ca.pem");
    const CERT: &str = include_str!("fixtures/tls/broker.pem");
    const KEY: &str = include_str!("fixtures/tls/broker.key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(CERT.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let mut props = scram_props(&scram_jaas("bob", BOB_PW));
    props[0].1 = "SASL_SSL".into();
    props.push(("ssl.truststore.type", "PEM".into()));
    props.push(("ssl.truststore.certificates", CA.into()));
    let mut p = pair(cluster(1, Duration::ZERO), &props);
    p.tls_server = Some(Arc::new(server));
    let id = p.send("t", 0, "sealed");
    assert!(p.run_until(10 * SECOND, |p| p.outcome(id).is_some()));
    assert!(p.outcome(id).unwrap().is_ok(), "{:?}", p.outcome(id));
    assert_eq!(p.cluster.values("t", 0), ["sealed"]);
    // The bootstrap connection and node 0's, each once.
    assert_eq!(listener(&p).successes.len(), p.connects.len());
    assert!(listener(&p).violations.is_empty());
}

/// A final failure ([`Pair::fails_finally`]) whose cause is SASL, closing its
/// connection with it, with the listener seeing nothing out of order.
fn fails_once(mut p: Pair) -> (SaslError, Pair) {
    let error = p.fails_finally();
    assert!(
        matches!(p.closes.as_slice(), [(_, _, CloseReason::Security(e))] if *e == error),
        "the connection closes with the cause: {:?}",
        p.closes
    );
    assert!(listener(&p).violations.is_empty());
    let ConnectFailure::Sasl(cause) = error.cause else {
        panic!("a SASL failure: {error}");
    };
    (cause, p)
}

#[test]
fn a_wrong_password_fails_the_session_once_with_the_brokers_message() {
    for (mechanism, jaas) in [
        ("SCRAM-SHA-512", scram_jaas("bob", "not-bobs-password")),
        ("PLAIN", plain_jaas("alice", "not-alices-password")),
    ] {
        let props = vec![
            ("security.protocol", "SASL_PLAINTEXT".into()),
            ("sasl.mechanism", mechanism.into()),
            ("sasl.jaas.config", jaas),
        ];
        let (cause, _) = fails_once(pair(cluster(1, Duration::ZERO), &props));
        let SaslError::AuthenticationFailed {
            mechanism: m,
            message,
        } = &cause
        else {
            panic!("{cause:?}");
        };
        assert_eq!(m.name(), mechanism);
        let message = message.as_deref().unwrap_or_default();
        assert!(message.contains("Authentication failed"), "{message}");
        assert!(
            !cause.to_string().contains("not-"),
            "no password in {cause}"
        );
    }
}

#[test]
fn an_unknown_mechanism_fails_the_session_once_naming_the_offered_ones() {
    let props = vec![
        ("security.protocol", "SASL_PLAINTEXT".into()),
        ("sasl.mechanism", "SCRAM-SHA-256".into()),
        ("sasl.jaas.config", scram_jaas("bob", BOB_PW)),
    ];
    let (cause, p) = fails_once(pair(cluster(1, Duration::ZERO), &props));
    assert_eq!(
        cause,
        SaslError::UnsupportedMechanism {
            mechanism: SaslMechanism::ScramSha256,
            offered: vec!["PLAIN".into(), "SCRAM-SHA-512".into()],
        }
    );
    assert!(
        cause.to_string().contains("PLAIN, SCRAM-SHA-512"),
        "{cause}"
    );
    assert_eq!(p.cluster.count(ApiKey::SaslAuthenticate), 0);
}

#[test]
fn a_bad_server_signature_fails_the_session_once() {
    let mut c = cluster(1, Duration::ZERO);
    c.sasl.as_mut().unwrap().fault = SaslFault::BadServerSignature;
    let (cause, _) = fails_once(pair(c, &scram_props(&scram_jaas("bob", BOB_PW))));
    assert_eq!(
        cause,
        SaslError::BadServerSignature {
            mechanism: SaslMechanism::ScramSha512
        }
    );
}

#[test]
fn a_malformed_server_answer_fails_the_session_once() {
    let mut c = cluster(1, Duration::ZERO);
    c.sasl.as_mut().unwrap().fault = SaslFault::MalformedServerFirst;
    let (cause, _) = fails_once(pair(c, &scram_props(&scram_jaas("bob", BOB_PW))));
    assert!(
        matches!(
            cause,
            SaslError::Malformed {
                mechanism: SaslMechanism::ScramSha512,
                ..
            }
        ),
        "{cause:?}"
    );
}

/// KIP-368: a lifetime of 3 s; records flow for 20 s; the session re-authenticates each
/// connection before its session ends (the listener would close a connection used
/// after), never with answers outstanding, and every record is acknowledged once.
#[test]
fn connections_reauthenticate_before_the_session_lifetime_ends_and_nothing_is_lost() {
    let lifetime = 3 * SECOND;
    let mut p = pair(
        cluster(2, lifetime),
        &scram_props(&scram_jaas("bob", BOB_PW)),
    );
    p.latency = Duration::from_millis(20);
    let mut ids = Vec::new();
    for i in 0..200 {
        ids.push(p.send("t", i % 2, &format!("r{i}")));
        p.run_for(Duration::from_millis(100));
    }
    assert!(p.run_until(10 * SECOND, |p| ids
        .iter()
        .all(|id| p.outcome(*id).is_some())));
    for id in &ids {
        assert!(p.outcome(*id).unwrap().is_ok(), "{:?}", p.outcome(*id));
    }
    let mut logged: Vec<String> = (0..2).flat_map(|n| p.cluster.values("t", n)).collect();
    logged.sort();
    let mut expected: Vec<String> = (0..200).map(|i| format!("r{i}")).collect();
    expected.sort();
    assert_eq!(logged, expected, "every record exactly once");
    for n in 0..2 {
        let values = p.cluster.values("t", n);
        let order: Vec<u32> = values.iter().map(|v| v[1..].parse().unwrap()).collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "send order: {order:?}"
        );
    }
    let l = listener(&p);
    assert!(l.violations.is_empty(), "{:?}", l.violations);
    let reauths: Vec<_> = l.successes.iter().filter(|s| s.2).collect();
    assert!(
        reauths.len() >= 2 * 5,
        "re-authentications: {}",
        reauths.len()
    );
    // Kafka's selector metric counts exactly the renewals the listener saw.
    let now = p.now;
    let expected = reauths.len() as f64;
    let counted = p
        .session
        .metrics(now)
        .producer
        .successful_reauthentication_total;
    assert_eq!(counted, expected, "successful-reauthentication-total");
    let l = listener(&p);
    // Each within 85-95% of the lifetime after the previous one (plus round trips).
    for conn in p.connects.iter().map(|c| c.1) {
        let times: Vec<_> = l
            .successes
            .iter()
            .filter(|s| s.1 == conn)
            .map(|s| s.0)
            .collect();
        for w in times.windows(2) {
            let gap = w[1].saturating_duration_since(w[0]);
            assert!(gap >= lifetime * 85 / 100 && gap < lifetime, "{gap:?}");
        }
    }
    assert!(
        p.closes.is_empty(),
        "no connection was lost: {:?}",
        p.closes
    );
    assert!(
        p.connects.len() <= 3,
        "bootstrap + two leaders: {:?}",
        p.connects
    );
    // Distinct nonces for every exchange.
    let mut nonces = l.client_nonces.clone();
    let n = nonces.len();
    nonces.sort();
    nonces.dedup();
    assert_eq!(nonces.len(), n, "a fresh nonce per exchange");
}

#[test]
fn without_a_session_lifetime_there_is_no_reauthentication() {
    let mut p = pair(
        cluster(1, Duration::ZERO),
        &scram_props(&scram_jaas("bob", BOB_PW)),
    );
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(p.send("t", 0, &format!("r{i}")));
        p.run_for(SECOND);
    }
    assert!(ids
        .iter()
        .all(|id| p.outcome(*id).is_some_and(Result::is_ok)));
    assert_eq!(listener(&p).successes.len(), p.connects.len(), "once each");
    assert!(listener(&p).successes.iter().all(|s| !s.2));
}

/// The nonce seed is an input: the same seed gives the same nonces (the session is
/// deterministic), another seed others.
#[test]
fn the_scram_nonce_comes_from_the_seed_the_driver_gives() {
    let nonces = |seed: [u8; 32]| {
        let mut p = pair(
            cluster(1, Duration::ZERO),
            &scram_props(&scram_jaas("bob", BOB_PW)),
        );
        let mut config = SessionConfig::from_properties([
            ("bootstrap.servers", "b0:9092"),
            ("linger.ms", "0"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", scram_jaas("bob", BOB_PW).as_str()),
        ])
        .unwrap();
        config.set_sasl_nonce_seed(NonceSeed::new(seed));
        p.session = Session::new(config, p.now, 1_700_000_000_000);
        let id = p.send("t", 0, "x");
        assert!(p.run_until(10 * SECOND, |p| p.outcome(id).is_some()));
        assert!(p.outcome(id).unwrap().is_ok());
        listener(&p).client_nonces.clone()
    };
    let a = nonces([1; 32]);
    // The bootstrap connection and node 0's: one exchange each, distinct nonces.
    assert_eq!(a.len(), 2);
    assert_ne!(a[0], a[1]);
    assert_eq!(a, nonces([1; 32]));
    assert_ne!(a, nonces([2; 32]));
}

#[test]
fn sasl_protocols_need_sasl_settings_and_other_protocols_ignore_them_with_a_note() {
    for protocol in ["SASL_PLAINTEXT", "SASL_SSL"] {
        let e = SessionConfig::from_properties([
            ("bootstrap.servers", "b0:9092"),
            ("security.protocol", protocol),
        ])
        .unwrap_err();
        assert!(matches!(e, SessionConfigError::Sasl(_)), "{e:?}");
    }
    let missing_credentials = SessionConfig::from_properties([
        ("bootstrap.servers", "b0:9092"),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
    ]);
    assert!(matches!(
        missing_credentials,
        Err(SessionConfigError::Sasl(_))
    ));
    let jaas = plain_jaas("alice", ALICE_PW);
    let ignored = SessionConfig::from_properties([
        ("bootstrap.servers", "b0:9092"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", jaas.as_str()),
    ])
    .unwrap();
    assert!(
        ignored.notes().iter().any(|n| n.key == "sasl.*"),
        "{:?}",
        ignored.notes()
    );
    // And such a session does not authenticate.
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", jaas.as_str()),
        ],
    );
    let id = p.send("t", 0, "x");
    assert!(p.run_until(10 * SECOND, |p| p.outcome(id).is_some()));
    assert_eq!(p.cluster.count(ApiKey::SaslHandshake), 0);
}

/// Item 5 of issue 11: the password appears in no `Debug` output, error, completion or
/// close reason of a failed and of a successful SASL connection, nor in the Debug of the
/// configuration and the session.
#[test]
fn no_password_appears_in_debug_output_errors_or_closes() {
    let mut seen = String::new();
    for (jaas, fault) in [
        (scram_jaas("bob", BOB_PW), SaslFault::None),
        (scram_jaas("bob", BOB_PW), SaslFault::BadServerSignature),
        (plain_jaas("alice", ALICE_PW), SaslFault::None),
        (
            plain_jaas("alice", ALICE_PW),
            SaslFault::MalformedServerFirst,
        ),
    ] {
        let mechanism = if jaas.contains("Plain") {
            "PLAIN"
        } else {
            "SCRAM-SHA-512"
        };
        let props = vec![
            ("security.protocol", "SASL_PLAINTEXT".into()),
            ("sasl.mechanism", mechanism.into()),
            ("sasl.jaas.config", jaas.clone()),
        ];
        let config = SessionConfig::from_properties(
            [("bootstrap.servers", "b0:9092")]
                .into_iter()
                .chain(props.iter().map(|(k, v)| (*k, v.as_str()))),
        )
        .unwrap();
        seen += &format!("{config:?}\n");
        let mut c = cluster(1, Duration::from_secs(2));
        c.sasl.as_mut().unwrap().fault = fault;
        let mut p = pair(c, &props);
        let id = p.send("t", 0, "x");
        seen += &format!("{:?}\n", p.session);
        p.run_for(5 * SECOND);
        seen += &format!("{:?}\n{:?}\n", p.session, p.outcome(id));
        for (_, c) in &p.completions {
            seen += &format!("{c:?}\n");
            if let Completion::ConnectionFailed { error } = c {
                seen += &format!("{error}\n");
            }
        }
        for (_, _, reason) in &p.closes {
            seen += &format!("{reason:?} {reason}\n");
        }
        if let Some(e) = p.session.connection_failure() {
            seen += &format!("{e} {e:?}\n");
        }
    }
    assert!(seen.contains("ConnectionFailed"), "a failure was captured");
    assert!(
        seen.contains("SaslConfig"),
        "the SASL settings were captured"
    );
    for secret in [ALICE_PW, BOB_PW] {
        assert!(!seen.contains(secret), "the password leaked:\n{seen}");
    }
}
