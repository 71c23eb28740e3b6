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

/// One DER element at the start of `der`: its tag, its whole encoding, its content and
/// what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8], &[u8])> {
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
    Some((tag, &der[..header + len], &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
/// `[0] EXPLICIT Version`, present in v2 and v3 certificates only.
const VERSION_TAG: u8 = 0xa0;

/// The encoded `subjectPublicKeyInfo` of an X.509 certificate of any version (RFC 5280
/// 4.1: `TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
/// issuer, validity, subject, subjectPublicKeyInfo, ... }`).
fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    let (SEQUENCE, _, cert, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, _, mut tbs, _) = element(cert)? else {
        return None;
    };
    if tbs.first() == Some(&VERSION_TAG) {
        tbs = element(tbs)?.3;
    }
    // serialNumber, signature, issuer, validity, subject.
    for _ in 0..5 {
        tbs = element(tbs)?.3;
    }
    let (SEQUENCE, spki, _, _) = element(tbs)? else {
        return None;
    };
    Some(spki)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_or_foreign_encoding_has_no_key() {
        assert_eq!(subject_public_key_info(&[]), None);
        assert_eq!(subject_public_key_info(&[0x30, 0x05, 0x30]), None);
        assert_eq!(subject_public_key_info(&[0x04, 0x00]), None);
        assert_eq!(
            element(&[0x02, 0x81, 0x01, 0x07, 0xff]).map(|e| e.2),
            Some(&[0x07][..])
        );
    }
}
