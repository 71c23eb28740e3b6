//! The client's own certificate (mutual TLS) is handed to rustls without being judged as
//! a peer's.
//!
//! rustls' `with_client_auth_cert` checks that the key matches the certificate by parsing
//! the certificate with webpki, whose end-entity parser refuses X.509 v1 certificates
//! (`UnsupportedCertVersion`): a rule for verifying a peer, not for presenting one. Java's
//! `KeyManager` presents whatever the keystore holds, and `openssl x509 -req` without an
//! extensions file makes v1 certificates, so a Java client's keystore often holds one;
//! whether it is acceptable is the broker's decision. kacrab builds the `CertifiedKey`
//! itself and compares the private key's SubjectPublicKeyInfo with the certificate's,
//! read by the small DER walk below (the only field needed), so a mismatched pair still
//! fails at configuration, as it does in rustls.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use crate::config::security::ClientIdentity;
use crate::config::SessionConfigError;

/// The resolver presenting `identity`, after checking its key matches its certificate.
pub(super) fn resolver(
    identity: &ClientIdentity,
    provider: &CryptoProvider,
) -> Result<Arc<SingleCertAndKey>, SessionConfigError> {
    let error = |reason: String| SessionConfigError::Tls {
        key: "ssl.keystore.key",
        reason,
    };
    // rustls' message names the key's kind, never its bytes.
    let key = provider
        .key_provider
        .load_private_key(identity.key())
        .map_err(|e| error(e.to_string()))?;
    let leaf = identity
        .chain()
        .first()
        .ok_or_else(|| error("no client certificate".to_owned()))?;
    let cert_spki = subject_public_key_info(leaf)
        .ok_or_else(|| error("the client certificate is not a DER X.509 certificate".to_owned()))?;
    if let Some(key_spki) = key.public_key() {
        if key_spki.as_ref() != cert_spki {
            return Err(error(
                "the private key does not match the client certificate".to_owned(),
            ));
        }
    }
    Ok(Arc::new(SingleCertAndKey::from(CertifiedKey::new(
        identity.chain().to_vec(),
        key,
    ))))
}

/// One DER element at the start of an encoding.
struct Element<'a> {
    tag: u8,
    /// Its whole encoding, header included.
    whole: &'a [u8],
    /// Its content.
    content: &'a [u8],
    /// What follows it.
    rest: &'a [u8],
}

/// The DER element at the start of `der`, if it is whole.
fn element(der: &[u8]) -> Option<Element<'_>> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = der.len() - rest.len();
    Some(Element {
        tag,
        whole: &der[..header + len],
        content: &rest[..len],
        rest: &rest[len..],
    })
}

/// The element at the start of `der` if it has `tag`.
fn tagged(der: &[u8], tag: u8) -> Option<Element<'_>> {
    element(der).filter(|e| e.tag == tag)
}

const SEQUENCE: u8 = 0x30;
/// `[0] EXPLICIT Version`, present in v2 and v3 certificates only.
const VERSION_TAG: u8 = 0xa0;

/// The encoded `subjectPublicKeyInfo` of an X.509 certificate of any version (RFC 5280
/// 4.1: `TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
/// issuer, validity, subject, subjectPublicKeyInfo, ... }`).
fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    let cert = tagged(cert, SEQUENCE)?.content;
    let mut tbs = tagged(cert, SEQUENCE)?.content;
    if let Some(version) = tagged(tbs, VERSION_TAG) {
        tbs = version.rest;
    }
    // serialNumber, signature, issuer, validity, subject.
    for _ in 0..5 {
        tbs = element(tbs)?.rest;
    }
    Some(tagged(tbs, SEQUENCE)?.whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_or_foreign_encoding_has_no_key() {
        assert_eq!(subject_public_key_info(&[]), None);
        assert_eq!(subject_public_key_info(&[0x30, 0x05, 0x30]), None);
        assert_eq!(subject_public_key_info(&[0x04, 0x00]), None);
        let long_form = element(&[0x02, 0x81, 0x01, 0x07, 0xff]).unwrap();
        assert_eq!(
            (long_form.tag, long_form.content, long_form.rest),
            (0x02, &[0x07][..], &[0xff][..])
        );
    }
}
