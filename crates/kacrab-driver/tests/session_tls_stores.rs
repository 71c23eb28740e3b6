//! Key and trust stores as a Java client's files hold them: PKCS12 stores with
//! passwords (Kafka's `ssl.keystore.type=PKCS12`, `DefaultSslEngineFactory`), and an
//! X.509 v1 client certificate (what `openssl x509 -req` makes without an extensions
//! file), which Java's `KeyManager` presents as it is.
//!
//! The stores are made at run time by `openssl` (on every machine that runs these
//! tests) from the TLS fixtures (`tests/fixtures/tls/make.sh`), in a directory of the
//! test's own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::pair::{Cluster, Pair};
use kacrab_driver::security::TrustAnchors;
use kacrab_driver::{SessionConfig, SessionConfigError};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const CA: &str = include_str!("fixtures/tls/ca.pem");
const BROKER: (&str, &str) = (
    include_str!("fixtures/tls/broker.pem"),
    include_str!("fixtures/tls/broker.key"),
);
const CLIENT: (&str, &str) = (
    include_str!("fixtures/tls/client.pem"),
    include_str!("fixtures/tls/client.key"),
);
const PASSWORD: &str = "store-secret-8d1f";

/// A directory of the test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("kacrab-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }

    /// Runs openssl in this directory; its output.
    fn openssl(&self, args: &[&str]) -> String {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.0)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `client.p12` (the fixture client's key and chain) and `trust.p12` (the fixture CA),
/// both under [`PASSWORD`], as keytool or `openssl pkcs12 -export` make them.
fn pkcs12_stores(dir: &Scratch) {
    dir.write("client.pem", CLIENT.0);
    dir.write("client.key", CLIENT.1);
    dir.write("ca.pem", CA);
    let pass = format!("pass:{PASSWORD}");
    dir.openssl(&[
        "pkcs12",
        "-export",
        "-inkey",
        "client.key",
        "-in",
        "client.pem",
        "-certfile",
        "ca.pem",
        "-name",
        "client",
        "-out",
        "client.p12",
        "-passout",
        &pass,
    ]);
    dir.openssl(&[
        "pkcs12",
        "-export",
        "-nokeys",
        "-in",
        "ca.pem",
        "-name",
        "ca",
        "-out",
        "trust.p12",
        "-passout",
        &pass,
    ]);
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A broker listener that requires a client certificate signed by the fixture CA.
fn mutual_tls_listener() -> Arc<rustls::ServerConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certs(CA).remove(0)).unwrap();
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .unwrap();
    let key = PrivateKeyDer::from_pem_slice(BROKER.1.as_bytes()).unwrap();
    Arc::new(
        rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs(BROKER.0), key)
            .unwrap(),
    )
}

fn pkcs12_props<'a>(dir: &'a [String; 2], password: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("security.protocol", "SSL"),
        ("ssl.keystore.type", "PKCS12"),
        ("ssl.keystore.location", &dir[0]),
        ("ssl.keystore.password", password),
        ("ssl.key.password", password),
        ("ssl.truststore.type", "PKCS12"),
        ("ssl.truststore.location", &dir[1]),
        ("ssl.truststore.password", password),
    ]
}

/// PKCS12 key and trust stores with passwords (`ssl.keystore.type=PKCS12`, Kafka's
/// `DefaultSslEngineFactory.createKeystore`/`createTruststore`) are read: the
/// keystore's certificate is presented to a broker that requires one, and the broker's
/// chain is trusted through the truststore's CA. Before PKCS12 was read, the
/// configuration was refused ("only PEM stores are supported").
#[test]
fn pkcs12_key_and_trust_stores_with_passwords_carry_mutual_tls() {
    let dir = Scratch::new("pkcs12-mtls");
    pkcs12_stores(&dir);
    let paths = [dir.path("client.p12"), dir.path("trust.p12")];
    let props = pkcs12_props(&paths, PASSWORD);

    let mut with_bootstrap = props.clone();
    with_bootstrap.push(("bootstrap.servers", "b0:9092"));
    let config = SessionConfig::from_properties(with_bootstrap).unwrap_or_else(|e| panic!("{e}"));
    let tls = config.security().tls.as_ref().unwrap();
    assert_eq!(tls.trust, TrustAnchors::Pem(certs(CA)));
    let identity = tls.identity.as_ref().unwrap();
    assert_eq!(identity.chain()[0], certs(CLIENT.0)[0]);

    let cluster = Cluster::new(1).with_topic("t", 1);
    let mut p = Pair::new(cluster, &props);
    p.tls_server = Some(mutual_tls_listener());
    let id = p.send("t", 0, "over pkcs12");
    p.settle(Duration::from_secs(10));
    assert_eq!(p.acked(id).offset, Some(0));
}

/// Kafka's default store type is JKS, and since JDK 9 a JKS-typed store that holds
/// PKCS12 is read as PKCS12 (`keystore.type.compat`): such a file loads here too.
#[test]
fn a_pkcs12_store_under_kafkas_default_jks_type_loads() {
    let dir = Scratch::new("pkcs12-as-jks");
    pkcs12_stores(&dir);
    let ks = dir.path("client.p12");
    let ts = dir.path("trust.p12");
    SessionConfig::from_properties([
        ("bootstrap.servers", "b0:9092"),
        ("security.protocol", "SSL"),
        ("ssl.keystore.type", "JKS"),
        ("ssl.keystore.location", &ks),
        ("ssl.keystore.password", PASSWORD),
        ("ssl.truststore.type", "JKS"),
        ("ssl.truststore.location", &ts),
        ("ssl.truststore.password", PASSWORD),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
}

/// A wrong password fails the configuration, naming the store, and the password given
/// appears nowhere in the error.
#[test]
fn a_wrong_store_password_is_refused_without_showing_it() {
    let dir = Scratch::new("pkcs12-wrong");
    pkcs12_stores(&dir);
    let paths = [dir.path("client.p12"), dir.path("trust.p12")];
    let mut props = pkcs12_props(&paths, "not-the-password-5e2a");
    props.push(("bootstrap.servers", "b0:9092"));
    let err = SessionConfig::from_properties(props).unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(
        text.contains("trust.p12") || text.contains("client.p12"),
        "{text}"
    );
    assert!(!text.contains("not-the-password-5e2a"), "{text}");
}

/// An X.509 v1 client certificate (no extensions: `openssl x509 -req` without
/// `-extfile`) signed by a CA, with its key: the configuration builds, as Java's
/// `SslFactory` accepts any keystore certificate, leaving the judgement to the broker.
/// Before, rustls' `with_client_auth_cert` parsed our own certificate with webpki's peer
/// rules and refused it: "invalid peer certificate: Other(UnsupportedCertVersion)". A key
/// that is not the certificate's is still refused.
#[test]
fn a_v1_client_certificate_is_presented_and_a_mismatched_key_refused() {
    let dir = Scratch::new("v1-client");
    let ec = [
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
    ];
    dir.openssl(&[&ec[..], &["v1ca.key"]].concat());
    dir.openssl(&[&ec[..], &["v1.key"]].concat());
    dir.openssl(&[&ec[..], &["other.key"]].concat());
    dir.openssl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        "v1ca.key",
        "-subj",
        "/CN=v1 CA",
        "-days",
        "30",
        "-out",
        "v1ca.pem",
    ]);
    dir.openssl(&[
        "req",
        "-new",
        "-key",
        "v1.key",
        "-subj",
        "/CN=v1-client",
        "-out",
        "v1.csr",
    ]);
    dir.openssl(&[
        "x509",
        "-req",
        "-in",
        "v1.csr",
        "-CA",
        "v1ca.pem",
        "-CAkey",
        "v1ca.key",
        "-CAcreateserial",
        "-days",
        "30",
        "-out",
        "v1.pem",
    ]);
    let text = dir.openssl(&["x509", "-in", "v1.pem", "-noout", "-text"]);
    assert!(
        text.contains("Version: 1 (0x0)"),
        "not a v1 certificate:\n{text}"
    );

    let chain = std::fs::read_to_string(dir.0.join("v1.pem")).unwrap();
    let key = std::fs::read_to_string(dir.0.join("v1.key")).unwrap();
    let other = std::fs::read_to_string(dir.0.join("other.key")).unwrap();
    let config = |key: &str| {
        SessionConfig::from_properties([
            ("bootstrap.servers", "b0:9092"),
            ("security.protocol", "SSL"),
            ("ssl.truststore.certificates", CA),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.certificate.chain", chain.as_str()),
            ("ssl.keystore.key", key),
        ])
    };
    let built = config(&key).unwrap_or_else(|e| panic!("{e}"));
    let identity = built
        .security()
        .tls
        .as_ref()
        .unwrap()
        .identity
        .as_ref()
        .unwrap();
    assert_eq!(identity.chain(), certs(&chain));

    let err = config(&other).unwrap_err();
    assert!(
        matches!(&err, SessionConfigError::Tls { key: "ssl.keystore.key", reason }
            if reason.contains("does not match")),
        "{err}"
    );
}

/// A JKS store is refused with the keytool command that converts it, whatever the
/// password line says (no maintained Rust crate reads JKS).
#[test]
fn a_jks_store_is_refused_with_the_conversion_command() {
    let dir = Scratch::new("jks");
    let jks: &Path = &dir.0.join("client.jks");
    std::fs::write(jks, [0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2, 0, 0, 0, 0]).unwrap();
    let err = SessionConfig::from_properties([
        ("bootstrap.servers", "b0:9092"),
        ("security.protocol", "SSL"),
        ("ssl.keystore.location", jks.to_str().unwrap()),
        ("ssl.keystore.password", PASSWORD),
    ])
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("keytool -importkeystore"), "{text}");
    assert!(text.contains("-deststoretype PKCS12"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
}
