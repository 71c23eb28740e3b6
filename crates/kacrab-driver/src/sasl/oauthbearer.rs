//! OAUTHBEARER (RFC 7628, KIP-255): the token provider, the client's first message, and
//! Kafka's unsecured JWT for tests.

use std::collections::BTreeMap;
use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::SaslError;
use crate::config::SaslConfigError;
use crate::secret::Secret;

/// An OAuth 2 bearer token, as the application's provider hands it over.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthBearerToken {
    /// The token (a compact JWS for most identity providers). Redacted in `Debug`.
    pub value: Secret,
    /// When it expires, in ms since the Unix epoch (`OAuthBearerToken.lifetimeMs`).
    pub lifetime_ms: i64,
    /// The principal it names.
    pub principal_name: String,
    /// SASL extensions sent with it (RFC 7628 section 3.1; Kafka's `SaslExtensions`):
    /// names of ASCII letters, values of printable ASCII, space, tab, CR or LF; `auth`
    /// is reserved.
    pub extensions: BTreeMap<String, String>,
}

impl OAuthBearerToken {
    /// The token `value` for `principal_name`, expiring at `lifetime_ms` (ms since the
    /// Unix epoch), with no SASL extensions.
    #[must_use]
    pub fn new(value: Secret, lifetime_ms: i64, principal_name: impl Into<String>) -> Self {
        Self {
            value,
            lifetime_ms,
            principal_name: principal_name.into(),
            extensions: BTreeMap::new(),
        }
    }

    /// Adds a SASL extension (see [`OAuthBearerToken::extensions`] for the rules).
    #[must_use]
    pub fn with_extension(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extensions.insert(name.into(), value.into());
        self
    }
}

/// Supplies OAUTHBEARER tokens: the application implements it (an OIDC client, a
/// cloud's SDK). It is asked once per authentication (the first and every KIP-368
/// re-authentication), so it should cache a token until shortly before it expires.
pub trait OAuthBearerTokenProvider: Send + Sync + 'static {
    /// The token to authenticate with, or why there is none (the message becomes
    /// [`SaslError::TokenProvider`]: it must not hold a secret).
    ///
    /// # Errors
    /// Why no token is available.
    fn token(&self) -> Result<OAuthBearerToken, String>;
}

/// The client's first (and only) message, `gs2-header kvsep auth=Bearer <token>
/// (kvsep key=value)* kvsep kvsep` with an empty authorization id, as Kafka's
/// `OAuthBearerClientInitialResponse` writes it.
pub(super) fn client_first_message(token: &OAuthBearerToken) -> Result<Vec<u8>, SaslError> {
    check_extensions(&token.extensions).map_err(|reason| SaslError::TokenProvider {
        message: reason.to_owned(),
    })?;
    let mut message = format!("n,,\u{1}auth=Bearer {}", token.value.expose());
    for (key, value) in &token.extensions {
        message.push('\u{1}');
        message.push_str(key);
        message.push('=');
        message.push_str(value);
    }
    message.push_str("\u{1}\u{1}");
    Ok(message.into_bytes())
}

/// RFC 7628 section 3.1's grammar for extensions (Kafka's `OAuthBearerClientInitialResponse`
/// patterns).
fn check_extensions(extensions: &BTreeMap<String, String>) -> Result<(), &'static str> {
    for (key, value) in extensions {
        if key == "auth" {
            return Err("the SASL extension name \"auth\" is reserved");
        }
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err("a SASL extension name must be ASCII letters");
        }
        let printable =
            |b: u8| (0x21..=0x7e).contains(&b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        if value.is_empty() || !value.bytes().all(printable) {
            return Err("a SASL extension value must be printable ASCII, space, tab, CR or LF");
        }
    }
    Ok(())
}

/// Kafka's unsecured JWT (`OAuthBearerUnsecuredLoginCallbackHandler`): a token with
/// `alg: none` built from the JAAS options, which a broker accepts only with Kafka's
/// unsecured validator. For tests and development, never production.
///
/// Options (those of Kafka's handler; any other `unsecuredLogin*` option is refused,
/// options of other names are ignored as Java ignores them):
/// `unsecuredLoginStringClaim_<name>`, `unsecuredLoginNumberClaim_<name>`,
/// `unsecuredLoginListClaim_<name>` (the first character separates the items),
/// `unsecuredLoginExtension_<name>`, `unsecuredLoginPrincipalClaimName` (default `sub`),
/// `unsecuredLoginLifetimeSeconds` (default 3600), `unsecuredLoginScopeClaimName`
/// (default `scope`). `iat` and `exp` are set from the clock; the principal claim must
/// be given as a string claim.
///
/// As a provider it reads the system's wall clock, which the broker checks `exp` against:
/// the one place below the drivers that does, and only in this test-only form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsecuredJwt {
    principal_claim_name: String,
    lifetime_seconds: u64,
    scope_claim_name: String,
    /// Claim name -> its JSON value text.
    claims: BTreeMap<String, String>,
    extensions: BTreeMap<String, String>,
}

impl UnsecuredJwt {
    /// From `OAuthBearerLoginModule`'s options.
    ///
    /// # Errors
    /// [`SaslConfigError::BadOption`] for an option that is malformed, unknown, or
    /// missing (the principal claim).
    pub(crate) fn from_jaas_options(
        options: &BTreeMap<String, String>,
    ) -> Result<Self, SaslConfigError> {
        // Errors name an option by Kafka's name or prefix, never by the text written:
        // claim names are the user's, and a malformed line can put a value anywhere.
        let bad = |option: &'static str, reason| SaslConfigError::BadOption {
            module: "OAuthBearerLoginModule",
            option,
            reason,
        };
        let mut jwt = Self {
            principal_claim_name: "sub".to_owned(),
            lifetime_seconds: 3600,
            scope_claim_name: "scope".to_owned(),
            claims: BTreeMap::new(),
            extensions: BTreeMap::new(),
        };
        for (option, value) in options {
            let claim = |prefix: &str| {
                option
                    .strip_prefix(prefix)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
            };
            if let Some(name) = claim("unsecuredLoginStringClaim_") {
                jwt.claims.insert(name, json_string(value));
            } else if let Some(name) = claim("unsecuredLoginNumberClaim_") {
                if !value.trim().parse::<f64>().is_ok_and(f64::is_finite) {
                    return Err(bad("unsecuredLoginNumberClaim_<name>", "not a number"));
                }
                jwt.claims.insert(name, value.trim().to_owned());
            } else if let Some(name) = claim("unsecuredLoginListClaim_") {
                let mut chars = value.chars();
                let Some(separator) = chars.next() else {
                    return Err(bad(
                        "unsecuredLoginListClaim_<name>",
                        "empty: the first character separates the items",
                    ));
                };
                let items: Vec<String> = chars
                    .as_str()
                    .split(separator)
                    .filter(|s| !s.is_empty())
                    .map(json_string)
                    .collect();
                jwt.claims.insert(name, format!("[{}]", items.join(",")));
            } else if let Some(name) = claim("unsecuredLoginExtension_") {
                jwt.extensions.insert(name, value.clone());
            } else {
                match option.as_str() {
                    "unsecuredLoginPrincipalClaimName" => {
                        jwt.principal_claim_name = value.trim().to_owned();
                    }
                    "unsecuredLoginScopeClaimName" => {
                        jwt.scope_claim_name = value.trim().to_owned()
                    }
                    "unsecuredLoginLifetimeSeconds" => {
                        jwt.lifetime_seconds = value.trim().parse().map_err(|_| {
                            bad(
                                "unsecuredLoginLifetimeSeconds",
                                "not a whole number of seconds",
                            )
                        })?;
                    }
                    _ if option.starts_with("unsecuredLogin") => {
                        return Err(bad(
                            "unsecuredLogin*",
                            "an option of this prefix that Kafka does not define",
                        ))
                    }
                    // Other modules' options are not this handler's business, as in Java.
                    _ => {}
                }
            }
        }
        for (reserved, option) in [
            ("iat", "unsecuredLogin*Claim_iat"),
            ("exp", "unsecuredLogin*Claim_exp"),
        ] {
            if jwt.claims.contains_key(reserved) {
                return Err(bad(option, "set from the clock, not an option"));
            }
        }
        if !jwt.claims.contains_key(&jwt.principal_claim_name) {
            return Err(bad(
                "unsecuredLoginStringClaim_<principal>",
                "the principal claim (named by unsecuredLoginPrincipalClaimName, default sub) must be given as a string claim",
            ));
        }
        check_extensions(&jwt.extensions)
            .map_err(|reason| bad("unsecuredLoginExtension_<name>", reason))?;
        Ok(jwt)
    }

    /// The token as issued at `now_ms` (ms since the Unix epoch).
    #[must_use]
    pub fn token_at(&self, now_ms: i64) -> OAuthBearerToken {
        let iat = now_ms.div_euclid(1000);
        let exp = iat.saturating_add(i64::try_from(self.lifetime_seconds).unwrap_or(i64::MAX));
        let mut claims = format!("{{\"iat\":{iat},\"exp\":{exp}");
        for (name, value) in &self.claims {
            claims.push(',');
            claims.push_str(&json_string(name));
            claims.push(':');
            claims.push_str(value);
        }
        claims.push('}');
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let body = URL_SAFE_NO_PAD.encode(claims.as_bytes());
        let principal_name = self
            .claims
            .get(&self.principal_claim_name)
            .and_then(|v| unquote(v))
            .unwrap_or_default();
        OAuthBearerToken {
            value: Secret::new(format!("{header}.{body}.")),
            lifetime_ms: exp.saturating_mul(1000),
            principal_name,
            extensions: self.extensions.clone(),
        }
    }

    /// The claim holding the scope (`unsecuredLoginScopeClaimName`).
    #[must_use]
    pub fn scope_claim_name(&self) -> &str {
        &self.scope_claim_name
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The text of a JSON string literal this module wrote (`json_string`'s inverse).
fn unquote(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn decode_part(part: &str) -> String {
        String::from_utf8(URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn unsecured_jwt_as_kafka_builds_it() {
        let jwt = UnsecuredJwt::from_jaas_options(&options(&[
            ("unsecuredLoginStringClaim_sub", "al\"ice"),
            ("unsecuredLoginNumberClaim_n", "42"),
            ("unsecuredLoginListClaim_scope", ",read,write"),
            ("unsecuredLoginExtension_traceId", "abc"),
            ("unsecuredLoginLifetimeSeconds", "60"),
        ]))
        .unwrap();
        let token = jwt.token_at(1_700_000_000_999);
        let parts: Vec<&str> = token.value.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(decode_part(parts[0]), r#"{"alg":"none"}"#);
        assert_eq!(
            decode_part(parts[1]),
            r#"{"iat":1700000000,"exp":1700000060,"n":42,"scope":["read","write"],"sub":"al\"ice"}"#
        );
        assert_eq!(parts[2], "", "no signature");
        assert_eq!(token.principal_name, "al\"ice");
        assert_eq!(token.lifetime_ms, 1_700_000_060_000);
        assert_eq!(token.extensions, options(&[("traceId", "abc")]));
        let first = client_first_message(&token).unwrap();
        let expected = format!(
            "n,,\u{1}auth=Bearer {}\u{1}traceId=abc\u{1}\u{1}",
            token.value.expose()
        );
        assert_eq!(first, expected.into_bytes());
    }

    #[test]
    fn unsecured_jwt_options_are_checked() {
        let err =
            |pairs: &[(&str, &str)]| UnsecuredJwt::from_jaas_options(&options(pairs)).unwrap_err();
        assert!(matches!(err(&[]), SaslConfigError::BadOption { .. }));
        assert!(matches!(
            err(&[
                ("unsecuredLoginStringClaim_sub", "a"),
                ("unsecuredLoginNumberClaim_n", "x")
            ]),
            SaslConfigError::BadOption {
                reason: "not a number",
                ..
            }
        ));
        assert!(matches!(
            err(&[
                ("unsecuredLoginStringClaim_sub", "a"),
                ("unsecuredLoginStringClaim_exp", "1")
            ]),
            SaslConfigError::BadOption { .. }
        ));
        assert!(matches!(
            err(&[
                ("unsecuredLoginStringClaim_sub", "a"),
                ("unsecuredLoginExtension_auth", "x")
            ]),
            SaslConfigError::BadOption { .. }
        ));
        assert!(matches!(
            err(&[
                ("unsecuredLoginStringClaim_sub", "a"),
                ("unsecuredLoginMadeUp", "x")
            ]),
            SaslConfigError::BadOption { .. }
        ));
        // Another principal claim name moves the requirement.
        UnsecuredJwt::from_jaas_options(&options(&[
            ("unsecuredLoginPrincipalClaimName", "user"),
            ("unsecuredLoginStringClaim_user", "bob"),
        ]))
        .unwrap();
    }

    #[test]
    fn extensions_follow_rfc_7628() {
        let mut token = OAuthBearerToken {
            value: Secret::new("t"),
            lifetime_ms: 0,
            principal_name: String::new(),
            extensions: options(&[("bad-name", "v")]),
        };
        assert!(matches!(
            client_first_message(&token),
            Err(SaslError::TokenProvider { .. })
        ));
        token.extensions = options(&[("ok", "\u{1}")]);
        assert!(client_first_message(&token).is_err());
    }
}
