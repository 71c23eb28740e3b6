//! TLS inside the session, byte for byte: the pair harness's brokers listen with a
//! rustls server half; the session encrypts and decrypts itself, the "driver" moves
//! ciphertext only. Certificates are throwaway openssl-made fixtures
//! (`tests/fixtures/tls/make.sh`), valid 2020-2040 except `expired.pem` (to 2023-01-01);
//! the harness runs the session's wall clock at 2023-11-14.
//!
//! Each failure is final and names the broker: one connection attempt, one
//! `Completion::ConnectionFailed`, no record reported possibly written.

use crate::pair;

use std::sync::Arc;
use std::time::Duration;

use crate::pair::{Cluster, Pair};
use kacrab_driver::{
    CloseReason, Completion, ConnectFailure, SessionConfig, SessionConfigError, TlsFailure,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const SECOND: Duration = Duration::from_secs(1);

const CA: &str = include_str!("fixtures/tls/ca.pem");
const BROKER: (&str, &str) = (
    include_str!("fixtures/tls/broker.pem"),
    include_str!("fixtures/tls/broker.key"),
);
const EXPIRED: (&str, &str) = (
    include_str!("fixtures/tls/expired.pem"),
    include_str!("fixtures/tls/expired.key"),
);
const ROGUE: (&str, &str) = (
    include_str!("fixtures/tls/rogue.pem"),
    include_str!("fixtures/tls/rogue.key"),
);
const CLIENT: (&str, &str) = (
    include_str!("fixtures/tls/client.pem"),
    include_str!("fixtures/tls/client.key"),
);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("fixture certificates")
}

/// A broker TLS listener presenting `identity`; with `client_auth`, it requires a client
/// certificate signed by the test CA (`ssl.client.auth=required`).
fn listener(identity: (&str, &str), client_auth: bool) -> Arc<rustls::ServerConfig> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions");
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certs(CA).remove(0)).expect("CA");
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .expect("client verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let key = PrivateKeyDer::from_pem_slice(identity.1.as_bytes()).expect("fixture key");
    Arc::new(
        builder
            .with_single_cert(certs(identity.0), key)
            .expect("server certificate"),
    )
}

/// SSL, trusting the test CA inline.
fn ssl() -> Vec<(&'static str, &'static str)> {
    vec![
        ("security.protocol", "SSL"),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", CA),
    ]
}

fn pair(cluster: Cluster, listener: Arc<rustls::ServerConfig>, props: &[(&str, &str)]) -> Pair {
    let mut p = Pair::new(cluster, props);
    p.tls_server = Some(listener);
    p
}

/// A final failure ([`Pair::fails_finally`]) whose cause is TLS.
fn fails_once(mut p: Pair) -> TlsFailure {
    let error = p.fails_finally();
    let ConnectFailure::Tls(cause) = error.cause else {
        panic!("a TLS failure: {error}");
    };
    cause
}

#[test]
fn records_and_a_transaction_go_over_tls() {
    let cluster = Cluster::new(3).with_topic("t", 3);
    let mut props = ssl();
    props.push(("transactional.id", "tx"));
    let mut p = pair(cluster, listener(BROKER, false), &props);
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    let begin = p.session.begin_transaction(p.now);
    let ids: Vec<_> = (0..3).map(|i| p.send("t", i, &format!("r{i}"))).collect();
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    for op in [init, begin, commit] {
        assert!(
            matches!(
                p.op(op),
                Some((_, Completion::Transaction { result: Ok(()), .. }))
            ),
            "{:?}",
            p.op(op)
        );
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).partition, i as i32);
        assert_eq!(p.cluster.values("t", i as i32), [format!("r{i}")]);
    }
    assert_eq!(p.cluster.end_txns, [true]);
    assert!(p.closes.is_empty(), "{:?}", p.closes);
}

#[test]
fn tls_survives_split_and_coalesced_reads() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let mut p = pair(cluster, listener(BROKER, false), &ssl());
    p.split_responses = true;
    p.rng = pair::Rng::new(7);
    let ids: Vec<_> = (0..20).map(|i| p.send("t", 0, &format!("v{i}"))).collect();
    p.settle(10 * SECOND);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).offset, Some(i as i64));
    }
}

/// rustls buffers 64 KiB of plaintext by default; a Produce frame of several full batches
/// is larger and once failed every record on the connection. Six partitions of one
/// 20 KB record each make one frame of about 120 KB.
#[test]
fn a_frame_larger_than_rustls_plaintext_buffer_goes_over_tls() {
    let cluster = Cluster::new(1).with_topic("t", 6);
    let mut props = ssl();
    props.push(("linger.ms", "50"));
    let mut p = pair(cluster, listener(BROKER, false), &props);
    let value = "x".repeat(20_000);
    let ids: Vec<_> = (0..6).map(|i| p.send("t", i, &value)).collect();
    p.settle(10 * SECOND);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).partition, i as i32);
        assert_eq!(
            p.cluster.values("t", i as i32),
            std::slice::from_ref(&value)
        );
    }
    assert!(p.closes.is_empty(), "{:?}", p.closes);
}

#[test]
fn mutual_tls_presents_the_keystore_certificate() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let mut props = ssl();
    props.push(("ssl.keystore.type", "PEM"));
    props.push(("ssl.keystore.certificate.chain", CLIENT.0));
    props.push(("ssl.keystore.key", CLIENT.1));
    let mut p = pair(cluster, listener(BROKER, true), &props);
    let id = p.send("t", 0, "mtls");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(id).offset, Some(0));
}

#[test]
fn a_broker_requiring_a_client_certificate_refuses_a_client_without_one() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let p = pair(cluster, listener(BROKER, true), &ssl());
    let cause = fails_once(p);
    assert!(
        matches!(cause, TlsFailure::AlertReceived(ref a) if a.contains("CertificateRequired")),
        "{cause:?}"
    );
}

#[test]
fn an_untrusted_certificate_fails_the_session_once() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let p = pair(cluster, listener(ROGUE, false), &ssl());
    assert_eq!(fails_once(p), TlsFailure::UntrustedCertificate);
}

#[test]
fn an_expired_certificate_fails_the_session_once() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let p = pair(cluster, listener(EXPIRED, false), &ssl());
    assert_eq!(fails_once(p), TlsFailure::CertificateExpired);
}

#[test]
fn a_hostname_the_certificate_does_not_name_fails_unless_identification_is_off() {
    let renamed = || {
        let mut c = Cluster::new(1).with_topic("t", 1);
        c.brokers.get_mut(&0).unwrap().addr = "elsewhere:9092".into();
        c
    };
    let mut p = pair(renamed(), listener(BROKER, false), &ssl());
    let id = p.send("t", 0, "never");
    p.run_for(30 * SECOND);
    assert_eq!(p.connects.len(), 1);
    assert!(!p
        .outcome(id)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .possibly_written());
    let error = p.the_connection_failure();
    assert_eq!(error.broker, "elsewhere:9092");
    assert_eq!(
        error.cause,
        ConnectFailure::Tls(TlsFailure::HostnameMismatch {
            host: "elsewhere".into()
        })
    );
    assert!(error.to_string().contains("elsewhere:9092"), "{error}");

    // ssl.endpoint.identification.algorithm= (empty) turns the name check off; the
    // chain is still checked.
    let mut props = ssl();
    props.push(("ssl.endpoint.identification.algorithm", ""));
    let mut p = pair(renamed(), listener(BROKER, false), &props);
    let id = p.send("t", 0, "named");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(id).offset, Some(0));
    let p = pair(renamed(), listener(ROGUE, false), &props);
    let mut p = p;
    let id = p.send("t", 0, "never");
    p.run_for(30 * SECOND);
    assert!(p.outcome(id).unwrap().is_err());
    assert_eq!(
        p.the_connection_failure().cause,
        ConnectFailure::Tls(TlsFailure::UntrustedCertificate)
    );
}

#[test]
fn tls_offered_to_a_plaintext_listener_fails_the_session_once() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    // No tls_server: the broker reads the ClientHello as an oversized request and
    // closes, as Kafka's plaintext listener does.
    let p = Pair::new(cluster, &ssl());
    assert_eq!(fails_once(p), TlsFailure::ClosedDuringHandshake);
}

#[test]
fn plaintext_answers_to_a_tls_client_are_not_tls() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let mut p = Pair::new(cluster, &ssl());
    let id = p.send("t", 0, "never");
    // The first thing the client reads is a plaintext Kafka frame, not a ServerHello.
    // Connected at +1 ms; the ClientHello would reach the broker at +2 ms.
    let (conn, _) = p.links()[0];
    p.run_for(Duration::from_millis(1));
    p.session
        .handle_bytes(conn, &[0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0], p.now);
    p.pump();
    assert!(p.outcome(id).is_some_and(Result::is_err));
    assert_eq!(
        p.the_connection_failure().cause,
        ConnectFailure::Tls(TlsFailure::NotTls)
    );
    assert!(p
        .closes
        .iter()
        .any(|(_, c, r)| *c == conn && matches!(r, CloseReason::Security(_))));
}

/// The handshake counts against `socket.connection.setup.timeout.ms`: a broker that
/// never answers the ClientHello closes the connection at the setup deadline.
#[test]
fn a_handshake_that_never_completes_times_out_as_connection_setup() {
    let cluster = Cluster::new(1).with_topic("t", 1);
    let mut props = ssl();
    props.push(("socket.connection.setup.timeout.ms", "2000"));
    let mut p = pair(cluster, listener(BROKER, false), &props);
    // The server half answers nothing: the link stalls as it opens.
    let _id = p.send("t", 0, "slow");
    p.run_until(SECOND, |p| !p.links().is_empty());
    let (conn, _) = p.links()[0];
    p.stall_link(conn);
    p.run_for(3 * SECOND);
    assert!(p
        .closes
        .iter()
        .any(|(_, c, r)| *c == conn && *r == CloseReason::ConnectTimeout));
}

#[test]
fn a_keystore_without_its_key_or_a_bad_key_is_refused_before_a_session_exists() {
    let base = |extra: &[(&'static str, &'static str)]| {
        let mut all = vec![("bootstrap.servers", "b0:9092")];
        all.extend(ssl());
        all.extend_from_slice(extra);
        SessionConfig::from_properties(all)
    };
    assert!(matches!(
        base(&[("ssl.keystore.certificate.chain", CLIENT.0)]),
        Err(SessionConfigError::Tls { .. })
    ));
    let err = base(&[
        ("ssl.keystore.certificate.chain", CLIENT.0),
        (
            "ssl.keystore.key",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ),
    ])
    .unwrap_err();
    assert!(
        matches!(
            err,
            SessionConfigError::Tls {
                key: "ssl.keystore.key",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(base(&[
        ("ssl.keystore.certificate.chain", CLIENT.0),
        ("ssl.keystore.key", CLIENT.1),
    ])
    .is_ok());
    let dir = std::env::temp_dir().join(format!("kacrab-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keystore = dir.join("client.pem");
    std::fs::write(&keystore, format!("{}{}", CLIENT.1, CLIENT.0)).unwrap();
    let truststore = dir.join("ca.pem");
    std::fs::write(&truststore, CA).unwrap();
    let from_files = SessionConfig::from_properties([
        ("bootstrap.servers", "b0:9092"),
        ("security.protocol", "SSL"),
        ("ssl.truststore.location", truststore.to_str().unwrap()),
        ("ssl.keystore.location", keystore.to_str().unwrap()),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let tls = from_files.unwrap().security().tls.clone().unwrap();
    assert!(tls.identity.is_some());
}

/// The client's private key appears in no Debug output, error or close reason of a
/// successful connection or a failed one.
#[test]
fn the_client_key_never_appears_in_debug_output_or_errors() {
    // A line from the middle of the key's base64: any leak of its bytes shows it.
    let key_line = CLIENT.1.lines().nth(2).expect("a key body line");
    assert!(key_line.len() > 20);
    let mut props = ssl();
    props.push(("ssl.keystore.certificate.chain", CLIENT.0));
    props.push(("ssl.keystore.key", CLIENT.1));
    let mut all = vec![("bootstrap.servers", "b0:9092")];
    all.extend_from_slice(&props);
    let config = SessionConfig::from_properties(all.clone()).unwrap();
    let mut seen = format!("{config:?}");
    let mut builder = SessionConfig::builder();
    for (k, v) in &all {
        builder.set(k, v).unwrap();
    }
    seen += &format!("{builder:?}");

    for (identity, client_auth) in [(BROKER, true), (ROGUE, true)] {
        let cluster = Cluster::new(1).with_topic("t", 1);
        let mut p = pair(cluster, listener(identity, client_auth), &props);
        p.send("t", 0, "v");
        p.run_for(10 * SECOND);
        seen += &format!("{:?}", p.session);
        for (_, c) in &p.completions {
            seen += &format!("{c:?}");
            if let Completion::ConnectionFailed { error } = c {
                seen += &format!("{error} {error:?}");
            }
        }
        for (_, _, r) in &p.closes {
            seen += &format!("{r} {r:?}");
        }
    }
    assert!(seen.contains("ConnectionFailed"), "the rogue broker failed");
    assert!(!seen.contains(key_line), "the key leaked");
    assert!(!seen.contains("PRIVATE KEY"), "the key leaked");
}

/// A driver writing each connection from its own task orders Produce frames across
/// connections by ticket: each TLS Transmit holds exactly one frame's records, so the
/// tickets still order what reaches the brokers, and every ticket ends once.
#[test]
fn ticket_ordered_writes_across_tls_connections_deliver_every_record() {
    let cluster = Cluster::new(3).with_topic("t", 6);
    let mut p = pair(cluster, listener(BROKER, false), &ssl());
    p.ticket_order = true;
    p.jitter = Duration::from_micros(700);
    let ids: Vec<_> = (0..60)
        .map(|i| p.send("t", i % 6, &format!("v{i}")))
        .collect();
    p.settle(10 * SECOND);
    for id in &ids {
        p.acked(*id);
    }
    for part in 0..6 {
        let expected: Vec<String> = (0..60)
            .filter(|i| i % 6 == part)
            .map(|i| format!("v{i}"))
            .collect();
        assert_eq!(p.cluster.values("t", part), expected);
    }
    p.assert_every_ticket_ended();
}

/// Over TLS every `Transmit` (handshake records and sealed frames alike) counts as one
/// frame of its connection: with `acks=0`, records written in ticket order across
/// connections, their writes reported as each connection's written prefix, are
/// delivered only once reported, each once in its partition's log, in send order
/// (Java completes an `acks=0` send in `NetworkClient.handleCompletedSends`).
#[test]
fn acks_zero_over_tls_is_delivered_once_the_writes_are_reported() {
    let cluster = Cluster::new(3).with_topic("t", 3);
    let mut props = ssl();
    props.extend([("acks", "0"), ("enable.idempotence", "false")]);
    let mut p = pair(cluster, listener(BROKER, false), &props);
    p.ticket_order = true;
    p.jitter = Duration::from_micros(700);
    p.hold_write_reports = true;
    let ids: Vec<_> = (0..30)
        .map(|i| p.send("t", i % 3, &format!("v{i}")))
        .collect();
    p.run_until(10 * SECOND, |p| {
        (0..3).all(|part| p.cluster.values("t", part).len() == 10)
    });
    assert!(
        ids.iter().all(|id| p.outcome(*id).is_none()),
        "delivered before the writes were reported"
    );
    p.report_writes();
    for id in &ids {
        assert_eq!(p.acked(*id).offset, None);
    }
    for part in 0..3 {
        let expected: Vec<String> = (0..30)
            .filter(|i| i % 3 == part)
            .map(|i| format!("v{i}"))
            .collect();
        assert_eq!(p.cluster.values("t", part), expected);
    }
    p.assert_every_ticket_ended();
}
