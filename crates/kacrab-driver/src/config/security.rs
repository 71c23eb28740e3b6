//! `security.protocol` and the `ssl.*` keys: how a connection is secured.
//!
//! Kafka's names and defaults (`org.apache.kafka.common.config.SslConfigs`,
//! `CommonClientConfigs.SECURITY_PROTOCOL_CONFIG`). Stores are PEM (KIP-651, from a file
//! or inline) or PKCS12 files with their passwords (`stores`); a JKS file is refused
//! with the command that converts it. Files are read once, when the configuration is built; the session itself
//! reads nothing. Every other `ssl.*` key is refused with
//! [`SessionConfigError::Unsupported`] rather than ignored.

use std::fmt;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::SessionConfigError;
use crate::secret::Secret;

mod stores;

/// `security.protocol`: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
pub const SECURITY_PROTOCOL: &str = "security.protocol";
/// `ssl.truststore.type`: `PEM`, `PKCS12` or `JKS` (the file's content decides).
pub const SSL_TRUSTSTORE_TYPE: &str = "ssl.truststore.type";
/// `ssl.truststore.location`: a PEM or PKCS12 file of trusted CA certificates.
pub const SSL_TRUSTSTORE_LOCATION: &str = "ssl.truststore.location";
/// `ssl.truststore.certificates`: trusted CA certificates, PEM, inline.
pub const SSL_TRUSTSTORE_CERTIFICATES: &str = "ssl.truststore.certificates";
/// `ssl.keystore.type`: `PEM`, `PKCS12` or `JKS` (the file's content decides).
pub const SSL_KEYSTORE_TYPE: &str = "ssl.keystore.type";
/// `ssl.keystore.location`: a PEM or PKCS12 file with the client's private key and
/// certificate chain (mutual TLS).
pub const SSL_KEYSTORE_LOCATION: &str = "ssl.keystore.location";
/// `ssl.keystore.certificate.chain`: the client's certificate chain, PEM, inline.
pub const SSL_KEYSTORE_CERTIFICATE_CHAIN: &str = "ssl.keystore.certificate.chain";
/// `ssl.keystore.key`: the client's private key, PEM (PKCS#8, unencrypted), inline.
pub const SSL_KEYSTORE_KEY: &str = "ssl.keystore.key";
/// `ssl.endpoint.identification.algorithm`: `https` (the default) checks the broker's
/// certificate names its host; empty turns the check off.
pub const SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: &str = "ssl.endpoint.identification.algorithm";
/// `ssl.protocol`: `TLSv1.3` (default) or `TLSv1.2`.
pub const SSL_PROTOCOL: &str = "ssl.protocol";
/// `ssl.enabled.protocols`: a subset of `TLSv1.2,TLSv1.3` (the default).
pub const SSL_ENABLED_PROTOCOLS: &str = "ssl.enabled.protocols";

/// `security.protocol`, Kafka's `SecurityProtocol`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// No TLS, no SASL (the default).
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL over plain TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Whether connections run TLS.
    #[must_use]
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    #[must_use]
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }

    /// Kafka's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }
}

/// Where the broker certificates' trust comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TrustAnchors {
    /// The platform's trust store (read once, when the configuration is built), as the
    /// JVM's default truststore is in Kafka.
    #[default]
    Platform,
    /// These CA certificates only (`ssl.truststore.*`).
    Pem(Vec<CertificateDer<'static>>),
}

/// Whether the broker's certificate must name the host connected to
/// (`ssl.endpoint.identification.algorithm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EndpointIdentification {
    /// `https`: the certificate must be valid for the broker's host name (the default
    /// since KIP-294).
    #[default]
    Https,
    /// Empty: any name is accepted; the chain is still verified.
    Disabled,
}

/// A client identity for mutual TLS: a certificate chain and its private key.
#[derive(PartialEq, Eq)]
pub struct ClientIdentity {
    chain: Vec<CertificateDer<'static>>,
    /// The private key. Never printed.
    key: PrivateKeyDer<'static>,
}

impl Clone for ClientIdentity {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl ClientIdentity {
    /// The certificate chain, leaf first.
    #[must_use]
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    /// The private key.
    #[must_use]
    pub(crate) fn key(&self) -> PrivateKeyDer<'static> {
        self.key.clone_key()
    }
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field(
                "chain",
                &format_args!("{} certificate(s)", self.chain.len()),
            )
            .field("key", &format_args!("[redacted]"))
            .finish()
    }
}

/// Allowed TLS versions (`ssl.protocol` / `ssl.enabled.protocols`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsVersions {
    /// TLS 1.2 allowed.
    pub tls12: bool,
    /// TLS 1.3 allowed.
    pub tls13: bool,
}

impl Default for TlsVersions {
    fn default() -> Self {
        Self {
            tls12: true,
            tls13: true,
        }
    }
}

/// The validated TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsSettings {
    /// Trust.
    pub trust: TrustAnchors,
    /// The client's identity, for brokers that require client authentication.
    pub identity: Option<ClientIdentity>,
    /// Hostname verification.
    pub endpoint_identification: EndpointIdentification,
    /// Allowed versions.
    pub versions: TlsVersions,
}

/// The security keys as set, validated by [`SecurityBuilder::build`].
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct SecurityBuilder {
    protocol: SecurityProtocol,
    truststore_location: Option<String>,
    truststore_certificates: Option<String>,
    keystore_location: Option<String>,
    keystore_chain: Option<String>,
    /// Inline PEM private key: secret, never printed.
    keystore_key: Option<String>,
    /// `ssl.keystore.password`, `ssl.key.password`, `ssl.truststore.password`: for
    /// PKCS12 stores. Never printed.
    keystore_password: Option<Secret>,
    key_password: Option<Secret>,
    truststore_password: Option<Secret>,
    endpoint_identification: EndpointIdentification,
    versions: TlsVersions,
}

impl fmt::Debug for SecurityBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecurityBuilder")
            .field("protocol", &self.protocol)
            .field("truststore_location", &self.truststore_location)
            .field(
                "truststore_certificates",
                &self.truststore_certificates.is_some(),
            )
            .field("keystore_location", &self.keystore_location)
            .field("keystore_chain", &self.keystore_chain.is_some())
            .field(
                "keystore_key",
                &self.keystore_key.as_ref().map(|_| "[redacted]"),
            )
            .field("keystore_password", &self.keystore_password)
            .field("key_password", &self.key_password)
            .field("truststore_password", &self.truststore_password)
            .field("endpoint_identification", &self.endpoint_identification)
            .field("versions", &self.versions)
            .finish()
    }
}

/// The validated security configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SecurityConfig {
    /// `security.protocol`.
    pub protocol: SecurityProtocol,
    /// For SSL and SASL_SSL.
    pub tls: Option<TlsSettings>,
}

fn unsupported(key: &str, reason: &'static str) -> SessionConfigError {
    SessionConfigError::Unsupported {
        key: key.to_owned(),
        reason,
    }
}

fn invalid(key: &'static str, value: &str, reason: &'static str) -> SessionConfigError {
    SessionConfigError::InvalidValue {
        key,
        value: value.to_owned(),
        reason,
    }
}

impl SecurityBuilder {
    /// Handles `security.protocol` and `ssl.*`; `Ok(false)` if `key` is neither.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, SessionConfigError> {
        let v = value.trim();
        match key {
            SECURITY_PROTOCOL => {
                self.protocol = match v.to_ascii_uppercase().as_str() {
                    "PLAINTEXT" => SecurityProtocol::Plaintext,
                    "SSL" => SecurityProtocol::Ssl,
                    "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
                    "SASL_SSL" => SecurityProtocol::SaslSsl,
                    _ => {
                        return Err(invalid(
                            SECURITY_PROTOCOL,
                            value,
                            "expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                        ))
                    }
                };
            }
            // The file's content decides how it is read (see `stores`); JKS, Kafka's
            // default, is accepted so a store named with it that holds PKCS12 loads, as
            // in the JDK, and one that holds JKS is refused with the conversion command.
            SSL_TRUSTSTORE_TYPE | SSL_KEYSTORE_TYPE => {
                if !["PEM", "PKCS12", "JKS"]
                    .iter()
                    .any(|t| v.eq_ignore_ascii_case(t))
                {
                    return Err(unsupported(
                        key,
                        "only PEM and PKCS12 stores are supported (a JKS file is converted \
                         with keytool -importkeystore -deststoretype PKCS12)",
                    ));
                }
            }
            SSL_TRUSTSTORE_LOCATION => self.truststore_location = non_empty(v),
            SSL_TRUSTSTORE_CERTIFICATES => self.truststore_certificates = non_empty(v),
            SSL_KEYSTORE_LOCATION => self.keystore_location = non_empty(v),
            SSL_KEYSTORE_CERTIFICATE_CHAIN => self.keystore_chain = non_empty(v),
            SSL_KEYSTORE_KEY => self.keystore_key = non_empty(v),
            SSL_ENDPOINT_IDENTIFICATION_ALGORITHM => {
                self.endpoint_identification = match v.to_ascii_lowercase().as_str() {
                    "https" => EndpointIdentification::Https,
                    "" => EndpointIdentification::Disabled,
                    _ => {
                        return Err(invalid(
                            SSL_ENDPOINT_IDENTIFICATION_ALGORITHM,
                            value,
                            "expected https or empty",
                        ))
                    }
                };
            }
            SSL_PROTOCOL => match v {
                // The protocol of the SSLContext; the enabled list decides what is
                // offered, as in Kafka.
                "TLSv1.2" | "TLSv1.3" | "TLS" => {}
                _ => return Err(invalid(SSL_PROTOCOL, value, "expected TLSv1.2 or TLSv1.3")),
            },
            SSL_ENABLED_PROTOCOLS => {
                let mut versions = TlsVersions {
                    tls12: false,
                    tls13: false,
                };
                for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    match p {
                        "TLSv1.2" => versions.tls12 = true,
                        "TLSv1.3" => versions.tls13 = true,
                        _ => {
                            return Err(invalid(
                                SSL_ENABLED_PROTOCOLS,
                                value,
                                "only TLSv1.2 and TLSv1.3 are supported",
                            ))
                        }
                    }
                }
                if !(versions.tls12 || versions.tls13) {
                    return Err(invalid(SSL_ENABLED_PROTOCOLS, value, "names no protocol"));
                }
                self.versions = versions;
            }
            "ssl.key.password" => self.key_password = non_empty(value).map(Secret::new),
            "ssl.keystore.password" => self.keystore_password = non_empty(value).map(Secret::new),
            "ssl.truststore.password" => {
                self.truststore_password = non_empty(value).map(Secret::new);
            }
            // Kafka's other ssl.* keys: known, not supported. Any other ssl.* key is a
            // typo, answered as every unknown key is (with the nearest known one).
            _ if key.starts_with("ssl.") && super::catalogue::answer(key).is_some() => {
                return Err(unsupported(key, "this ssl.* key is not supported"))
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Validates: reads and parses the PEM material.
    pub(crate) fn build(&self) -> Result<SecurityConfig, SessionConfigError> {
        if !self.protocol.uses_tls() {
            return Ok(SecurityConfig {
                protocol: self.protocol,
                tls: None,
            });
        }
        let trust = match (&self.truststore_location, &self.truststore_certificates) {
            (Some(_), Some(_)) => {
                return Err(conflict(
                    "ssl.truststore.location and ssl.truststore.certificates are exclusive",
                ))
            }
            (Some(path), None) => TrustAnchors::Pem(stores::trust_anchors(
                SSL_TRUSTSTORE_LOCATION,
                path,
                self.truststore_password.as_ref(),
            )?),
            (None, Some(pem)) => {
                TrustAnchors::Pem(certificates(SSL_TRUSTSTORE_CERTIFICATES, pem.as_bytes())?)
            }
            (None, None) => TrustAnchors::Platform,
        };
        let identity = match (
            &self.keystore_location,
            &self.keystore_chain,
            &self.keystore_key,
        ) {
            (None, None, None) => None,
            (Some(path), None, None) => Some(stores::client_identity(
                SSL_KEYSTORE_LOCATION,
                path,
                self.keystore_password.as_ref(),
                self.key_password.as_ref(),
            )?),
            (None, Some(chain), Some(key)) => Some(identity(
                SSL_KEYSTORE_CERTIFICATE_CHAIN,
                chain.as_bytes(),
                SSL_KEYSTORE_KEY,
                key.as_bytes(),
            )?),
            (Some(_), _, _) => {
                return Err(conflict(
                    "ssl.keystore.location excludes ssl.keystore.certificate.chain and ssl.keystore.key",
                ))
            }
            _ => {
                return Err(conflict(
                    "ssl.keystore.certificate.chain and ssl.keystore.key go together",
                ))
            }
        };
        let tls = TlsSettings {
            trust,
            identity,
            endpoint_identification: self.endpoint_identification,
            versions: self.versions,
        };
        // Everything rustls will be given is checked now, so a session never fails to
        // build its TLS configuration.
        crate::tls::client_config(&tls, crate::tls::UnixClock::default())?;
        Ok(SecurityConfig {
            protocol: self.protocol,
            tls: Some(tls),
        })
    }
}

fn conflict(reason: &'static str) -> SessionConfigError {
    SessionConfigError::Tls {
        key: "ssl.*",
        reason: reason.to_owned(),
    }
}

fn non_empty(v: &str) -> Option<String> {
    (!v.is_empty()).then(|| v.to_owned())
}

fn certificates(
    key: &'static str,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, SessionConfigError> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
    match certs {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(SessionConfigError::Tls {
            key,
            reason: "no PEM certificate found".to_owned(),
        }),
        Err(e) => Err(SessionConfigError::Tls {
            key,
            reason: format!("malformed PEM certificate: {e}"),
        }),
    }
}

fn identity(
    chain_key: &'static str,
    chain: &[u8],
    key_key: &'static str,
    key: &[u8],
) -> Result<ClientIdentity, SessionConfigError> {
    let chain = certificates(chain_key, chain)?;
    // The key's bytes never appear in the error: only what kind of problem it is.
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| SessionConfigError::Tls {
        key: key_key,
        reason: match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no unencrypted PEM private key found (PKCS#8, PKCS#1 or SEC1)".to_owned()
            }
            _ => "malformed PEM private key".to_owned(),
        },
    })?;
    Ok(ClientIdentity { chain, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(pairs: &[(&str, &str)]) -> Result<SecurityConfig, SessionConfigError> {
        let mut b = SecurityBuilder::default();
        for (k, v) in pairs {
            b.set(k, v)?;
        }
        b.build()
    }

    #[test]
    fn plaintext_is_the_default_and_needs_no_tls() {
        let c = build(&[]).unwrap();
        assert_eq!(c.protocol, SecurityProtocol::Plaintext);
        assert!(c.tls.is_none());
    }

    #[test]
    fn sasl_protocols_build_with_tls_only_for_sasl_ssl() {
        let plain = build(&[(SECURITY_PROTOCOL, "SASL_PLAINTEXT")]).unwrap();
        assert_eq!(plain.protocol, SecurityProtocol::SaslPlaintext);
        assert!(plain.tls.is_none());
        let ssl = build(&[(SECURITY_PROTOCOL, "SASL_SSL")]).unwrap();
        assert_eq!(ssl.protocol, SecurityProtocol::SaslSsl);
        assert!(ssl.tls.is_some());
    }

    #[test]
    fn protocol_names_are_kafkas_case_insensitively() {
        for (name, p) in [
            ("PLAINTEXT", SecurityProtocol::Plaintext),
            ("ssl", SecurityProtocol::Ssl),
            ("SASL_PLAINTEXT", SecurityProtocol::SaslPlaintext),
            ("SASL_SSL", SecurityProtocol::SaslSsl),
        ] {
            let mut b = SecurityBuilder::default();
            b.set(SECURITY_PROTOCOL, name).unwrap();
            assert_eq!(b.protocol, p);
        }
        let mut b = SecurityBuilder::default();
        assert!(matches!(
            b.set(SECURITY_PROTOCOL, "TLS"),
            Err(SessionConfigError::InvalidValue { .. })
        ));
    }

    #[test]
    fn unsupported_ssl_keys_are_refused_by_name() {
        let mut b = SecurityBuilder::default();
        for (k, v) in [
            ("ssl.truststore.type", "BKS"),
            ("ssl.keystore.type", "PKCS11"),
            ("ssl.cipher.suites", "x"),
            ("ssl.engine.factory.class", "x"),
        ] {
            match b.set(k, v) {
                Err(SessionConfigError::Unsupported { key, .. }) => assert_eq!(key, k),
                other => panic!("{k}: {other:?}"),
            }
        }
        assert_eq!(b.set("linger.ms", "1"), Ok(false));
        for (k, v) in [
            ("ssl.truststore.type", "pem"),
            ("ssl.truststore.type", "JKS"),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.key.password", "x"),
            ("ssl.keystore.password", "x"),
            ("ssl.truststore.password", "x"),
        ] {
            assert_eq!(b.set(k, v), Ok(true), "{k}");
        }
    }

    #[test]
    fn an_ssl_typo_is_an_unknown_key_with_a_suggestion_and_a_known_key_says_so() {
        let mut b = crate::config::SessionConfig::builder();
        assert_eq!(
            b.set("ssl.trustore.location", "/ca.pem").unwrap_err(),
            SessionConfigError::UnknownKey {
                key: "ssl.trustore.location".into(),
                suggestion: Some("ssl.truststore.location"),
            }
        );
        let known = b.set("ssl.cipher.suites", "x").unwrap_err().to_string();
        assert!(
            known.starts_with("ssl.cipher.suites: known Kafka producer setting, not supported: "),
            "{known}"
        );
    }

    #[test]
    fn a_jks_store_or_a_broken_pkcs12_is_named_for_what_it_is() {
        let dir = std::env::temp_dir().join(format!("kacrab-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jks = dir.join("client.jks");
        std::fs::write(&jks, [0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2]).unwrap();
        let p12 = dir.join("client.p12");
        std::fs::write(&p12, [0x30, 0x82, 0x0A, 0x01, 0x02]).unwrap();
        for (key, path, kind, hint) in [
            (
                SSL_TRUSTSTORE_LOCATION,
                &jks,
                "JKS",
                "-deststoretype PKCS12",
            ),
            (SSL_KEYSTORE_LOCATION, &jks, "JKS", "-deststoretype PKCS12"),
            (SSL_TRUSTSTORE_LOCATION, &p12, "PKCS12", "wrong password"),
        ] {
            let err = build(&[
                (SECURITY_PROTOCOL, "SSL"),
                (SSL_TRUSTSTORE_TYPE, "JKS"),
                // A password does not change the answer for a JKS file.
                ("ssl.truststore.password", "changeit"),
                ("ssl.keystore.password", "changeit"),
                (key, path.to_str().unwrap()),
            ])
            .unwrap_err();
            match &err {
                SessionConfigError::Tls { key: k, reason } => {
                    assert_eq!(*k, key);
                    assert!(reason.contains(kind) && reason.contains(hint), "{reason}");
                    assert!(!reason.contains("changeit"), "{reason}");
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_malformed_truststore_is_refused_at_build() {
        let err = build(&[
            (SECURITY_PROTOCOL, "SSL"),
            (SSL_TRUSTSTORE_CERTIFICATES, "not a certificate"),
        ])
        .unwrap_err();
        assert!(
            matches!(err, SessionConfigError::Tls { key, .. } if key == SSL_TRUSTSTORE_CERTIFICATES)
        );
        let err = build(&[
            (SECURITY_PROTOCOL, "SSL"),
            (SSL_TRUSTSTORE_LOCATION, "/no/such/file.pem"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("/no/such/file.pem"), "{err}");
    }

    #[test]
    fn a_keystore_key_never_appears_in_debug_or_errors() {
        let secret = "-----BEGIN PRIVATE KEY-----\nU0VDUkVULUtFWS1NQVRFUklBTA==\n-----END PRIVATE KEY-----\n";
        let mut b = SecurityBuilder::default();
        b.set(SECURITY_PROTOCOL, "SSL").unwrap();
        b.set(SSL_KEYSTORE_KEY, secret).unwrap();
        b.set(SSL_KEYSTORE_CERTIFICATE_CHAIN, "junk").unwrap();
        assert!(!format!("{b:?}").contains("U0VDUkVU"));
        let err = b.build().unwrap_err();
        assert!(!format!("{err:?} {err}").contains("U0VDUkVU"));
    }
}
