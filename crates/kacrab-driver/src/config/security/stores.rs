//! Key and trust store files (`ssl.keystore.location`, `ssl.truststore.location`): PEM
//! (KIP-651) or PKCS#12, told apart by their content, as the JDK's keystore loader
//! does (since JDK 9 a `JKS`-typed store that holds PKCS#12 is read as PKCS#12, so
//! Kafka's default `ssl.*.type=JKS` with a `.p12` file works in Java).
//!
//! PKCS#12 is parsed by `p12-keystore` (pure Rust on RustCrypto: PBES2/AES as keytool and
//! OpenSSL 3 write, and the legacy PBES1 3DES/RC2 of older ones). A JKS store (the
//! JDK's proprietary format, magic 0xFEEDFEED) has no maintained Rust reader: it is
//! refused with the `keytool` command that converts it, whatever its password line says.

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::{certificates, identity, ClientIdentity};
use crate::config::SessionConfigError;
use crate::secret::Secret;

/// What a store file holds.
enum Format {
    Pem,
    Pkcs12,
}

fn tls(key: &'static str, reason: String) -> SessionConfigError {
    SessionConfigError::Tls { key, reason }
}

fn read(key: &'static str, path: &str) -> Result<(Vec<u8>, Format), SessionConfigError> {
    let bytes = std::fs::read(path).map_err(|e| tls(key, format!("cannot read {path}: {e}")))?;
    if bytes.starts_with(&[0xFE, 0xED, 0xFE, 0xED]) {
        return Err(tls(
            key,
            format!(
                "{path} is a JKS keystore, which kacrab cannot read; convert it to PKCS12 \
                 with keytool -importkeystore -srckeystore {path} -destkeystore \
                 store.p12 -deststoretype PKCS12, then name store.p12 here with \
                 ssl.*.type=PKCS12 and the same password"
            ),
        ));
    }
    let pem = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .is_some_and(|start| bytes[start..].starts_with(b"-----BEGIN"));
    Ok((bytes, if pem { Format::Pem } else { Format::Pkcs12 }))
}

/// Opens a PKCS#12 store with the first of `passwords` that opens it (an absent
/// password is the empty one, as keytool's `-storepass ''`).
fn open(
    key: &'static str,
    path: &str,
    bytes: &[u8],
    passwords: &[Option<&Secret>],
    policy: p12_keystore::Pkcs12ImportPolicy,
) -> Result<p12_keystore::KeyStore, SessionConfigError> {
    let mut last = String::new();
    for password in passwords {
        let password = password.map_or("", |p| p.expose());
        match p12_keystore::KeyStore::from_pkcs12(bytes, password, policy) {
            Ok(store) => return Ok(store),
            // The library's message names the failed step, never the password.
            Err(e) => last = e.to_string(),
        }
    }
    Err(tls(
        key,
        format!(
            "cannot open {path} as a PKCS12 store (a wrong password, or neither PEM nor \
             PKCS12): {last}"
        ),
    ))
}

/// The trusted CA certificates of `ssl.truststore.location`.
pub(super) fn trust_anchors(
    key: &'static str,
    path: &str,
    password: Option<&Secret>,
) -> Result<Vec<CertificateDer<'static>>, SessionConfigError> {
    let (bytes, format) = read(key, path)?;
    match format {
        Format::Pem if password.is_some() => Err(tls(
            "ssl.truststore.password",
            "a PEM truststore takes no password (Kafka's DefaultSslEngineFactory refuses \
             one too, KIP-651): remove ssl.truststore.password"
                .to_owned(),
        )),
        Format::Pem => certificates(key, &bytes),
        Format::Pkcs12 => {
            // Every certificate of a truststore is an anchor: `Raw` keeps the ones
            // without Java's trusted-certificate attribute, which `openssl pkcs12
            // -export -nokeys` does not write (the JDK then ignores them, and the
            // truststore is empty; here the file's purpose is not second-guessed).
            let store = open(
                key,
                path,
                &bytes,
                &[password],
                p12_keystore::Pkcs12ImportPolicy::Raw,
            )?;
            let mut certs = Vec::new();
            for (_, entry) in store.entries() {
                match entry {
                    p12_keystore::KeyStoreEntry::Certificate(c) => {
                        certs.push(CertificateDer::from(c.as_der().to_vec()));
                    }
                    p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) => certs.extend(
                        chain
                            .certs()
                            .iter()
                            .map(|c| CertificateDer::from(c.as_der().to_vec())),
                    ),
                    p12_keystore::KeyStoreEntry::Secret(_) => {}
                }
            }
            if certs.is_empty() {
                return Err(tls(key, format!("{path} holds no certificate")));
            }
            Ok(certs)
        }
    }
}

/// The client's key and certificate chain of `ssl.keystore.location`.
pub(super) fn client_identity(
    key: &'static str,
    path: &str,
    store_password: Option<&Secret>,
    key_password: Option<&Secret>,
) -> Result<ClientIdentity, SessionConfigError> {
    let (bytes, format) = read(key, path)?;
    match format {
        Format::Pem if store_password.is_some() => Err(tls(
            "ssl.keystore.password",
            "a PEM keystore takes no store password (Kafka's DefaultSslEngineFactory \
             refuses one too, KIP-651): remove ssl.keystore.password"
                .to_owned(),
        )),
        Format::Pem if key_password.is_some() => Err(tls(
            "ssl.key.password",
            "encrypted PEM private keys are not supported: give the key unencrypted \
             (openssl pkcs8 -topk8 -nocrypt) or use a PKCS12 keystore"
                .to_owned(),
        )),
        Format::Pem => identity(key, &bytes, key, &bytes),
        Format::Pkcs12 => {
            // Kafka's keystores use one password for the store and its key; where
            // ssl.key.password differs, it is tried too.
            let mut passwords = vec![store_password];
            if key_password.is_some() {
                passwords.push(key_password);
            }
            let store = open(
                key,
                path,
                &bytes,
                &passwords,
                p12_keystore::Pkcs12ImportPolicy::Strict,
            )?;
            let (_, chain) = store
                .private_key_chain()
                .ok_or_else(|| tls(key, format!("{path} holds no private key entry")))?;
            let certs: Vec<CertificateDer<'static>> = chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            if certs.is_empty() {
                return Err(tls(
                    key,
                    format!("{path}: its private key has no certificate"),
                ));
            }
            let private =
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
            Ok(ClientIdentity {
                chain: certs,
                key: private,
            })
        }
    }
}
