//! The `sasl.*` keys: the mechanism and its credentials.
//!
//! Credentials come from typed setters ([`SaslConfig::plain`], [`SaslConfig::scram`],
//! [`SaslConfig::oauthbearer`]) or from `sasl.jaas.config` in Java's JAAS syntax, with
//! the login modules the Java client uses for the mechanisms kacrab speaks:
//!
//! * `org.apache.kafka.common.security.plain.PlainLoginModule` and
//!   `org.apache.kafka.common.security.scram.ScramLoginModule`, options `username` and
//!   `password`. As in Java, where either module only stores the two strings for the
//!   mechanism's callback handler (`SaslClientCallbackHandler`), either serves PLAIN and
//!   SCRAM alike.
//! * `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule` with Kafka's
//!   unsecured-JWT options (`unsecuredLoginStringClaim_sub`, ...; see
//!   [`UnsecuredJwt`]), for tests and development. Real tokens come from the
//!   application's [`OAuthBearerTokenProvider`].
//!
//! Other `sasl.*` keys Kafka knows are refused as not supported, with the reason; a
//! password never appears in an error.

use std::fmt;
use std::sync::Arc;

use super::jaas::{self, JaasError};
use super::oidc::{self, OidcClientCredentials, OidcSettings};
use crate::sasl::oauthbearer::{OAuthBearerTokenProvider, UnsecuredJwt};
use crate::secret::Secret;

/// `sasl.mechanism`: the SASL mechanism (Kafka's default, `GSSAPI`, is not supported).
pub const SASL_MECHANISM: &str = "sasl.mechanism";
/// `sasl.jaas.config`: the login module and its options, in JAAS syntax.
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";

const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// The SASL mechanisms kacrab speaks, by Kafka's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616): username and password in the clear (use it over TLS).
    Plain,
    /// `SCRAM-SHA-256` (RFC 5802, RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512` (RFC 5802).
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628, KIP-255).
    OAuthBearer,
}

impl SaslMechanism {
    /// Kafka's name, as sent in SaslHandshake.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism with Kafka's name `name` (exact, as Kafka compares it).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        [
            SaslMechanism::Plain,
            SaslMechanism::ScramSha256,
            SaslMechanism::ScramSha512,
            SaslMechanism::OAuthBearer,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }

    const fn takes_password(self) -> bool {
        !matches!(self, SaslMechanism::OAuthBearer)
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the SASL settings were refused. Never holds a password or a token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SaslConfigError {
    /// `sasl.mechanism` names a mechanism kacrab does not speak.
    #[error("sasl.mechanism {mechanism:?} is not supported (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)")]
    UnsupportedMechanism {
        /// The name given.
        mechanism: String,
    },
    /// A `sasl.*` key kacrab does not implement.
    #[error("{key}: known Kafka producer setting, not supported: {reason}")]
    UnsupportedKey {
        /// The key.
        key: String,
        /// Why, and what to use instead.
        reason: &'static str,
    },
    /// `sasl.jaas.config` does not parse.
    #[error("invalid sasl.jaas.config: {0}")]
    Jaas(#[from] JaasError),
    /// `sasl.jaas.config` names a login module kacrab does not know. The name is not
    /// kept: where a line lost its start, a value (a password) stands in its place.
    #[error("sasl.jaas.config login module is not supported (supported: org.apache.kafka.common.security's plain.PlainLoginModule, scram.ScramLoginModule, oauthbearer.OAuthBearerLoginModule; the name found is not shown: it may be a misplaced value)")]
    UnsupportedLoginModule,
    /// A login module option that must be there is missing, or is malformed.
    #[error("sasl.jaas.config option {option} of {module}: {reason}")]
    BadOption {
        /// The login module's short name.
        module: &'static str,
        /// The option, as kacrab names it (Kafka's name, or its prefix with a
        /// placeholder): never text of the input, which may be a misplaced value.
        option: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The credentials do not fit the mechanism (a password for OAUTHBEARER, a token for
    /// SCRAM).
    #[error("sasl.mechanism {mechanism} does not take {credentials} credentials")]
    CredentialsMismatch {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// What was given instead.
        credentials: &'static str,
    },
    /// A mechanism without credentials.
    #[error("sasl.mechanism {mechanism} needs credentials: set sasl.jaas.config or the typed credentials")]
    MissingCredentials {
        /// The mechanism.
        mechanism: SaslMechanism,
    },
    /// Credentials the mechanism cannot carry (a NUL in a PLAIN username or password,
    /// RFC 4616).
    #[error("invalid SASL credentials: {reason}")]
    InvalidCredentials {
        /// What is wrong (never the value).
        reason: &'static str,
    },
    /// OAUTHBEARER through an OpenID Connect token endpoint (KIP-768: a JAAS line with
    /// `clientId`/`clientSecret` and `sasl.oauthbearer.token.endpoint.url`) reached a
    /// driver that does not fetch tokens: only kacrab-tokio with its feature `oidc`
    /// does (it takes the settings out before building the session).
    #[error("{key}: OAUTHBEARER with OIDC client credentials (KIP-768) needs kacrab-tokio's feature `oidc`, which fetches and refreshes the tokens; without it (or with kacrab-blocking) fetch tokens in the application and feed an OAuthBearerTokenHandle installed with SaslConfig::oauthbearer")]
    OidcNotBuiltIn {
        /// The key that asked for it.
        key: &'static str,
    },
    /// A setting of the OIDC client-credentials login is malformed or missing.
    #[error("{key}: {reason}")]
    BadOidcSetting {
        /// Kafka's key (never its value, which may be a secret).
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Credentials without `sasl.mechanism` (Kafka's default, GSSAPI, is not supported).
    #[error("sasl.mechanism is not set (Kafka's default GSSAPI is not supported)")]
    MissingMechanism,
}

/// Where an OAUTHBEARER token comes from.
#[derive(Clone)]
pub enum OAuthBearerSource {
    /// The application's provider.
    Provider(Arc<dyn OAuthBearerTokenProvider>),
    /// Kafka's unsecured JWT (`alg: none`) from the JAAS options: tests and development
    /// only, as in Kafka.
    Unsecured(UnsecuredJwt),
}

impl fmt::Debug for OAuthBearerSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthBearerSource::Provider(_) => f.write_str("Provider(..)"),
            OAuthBearerSource::Unsecured(u) => f.debug_tuple("Unsecured").field(u).finish(),
        }
    }
}

impl PartialEq for OAuthBearerSource {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (OAuthBearerSource::Provider(a), OAuthBearerSource::Provider(b)) => Arc::ptr_eq(a, b),
            (OAuthBearerSource::Unsecured(a), OAuthBearerSource::Unsecured(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for OAuthBearerSource {}

/// The credentials a mechanism authenticates with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaslCredentials {
    /// A username and password (PLAIN, SCRAM).
    UsernamePassword {
        /// The username (the SCRAM or PLAIN identity).
        username: String,
        /// The password (redacted in `Debug`).
        password: Secret,
    },
    /// An OAUTHBEARER token source.
    OAuthBearer(OAuthBearerSource),
}

/// The SASL part of the session's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SaslConfig {
    /// `sasl.mechanism`; `None` until set (Kafka's default, GSSAPI, is not supported).
    mechanism: Option<SaslMechanism>,
    /// From the typed setters or `sasl.jaas.config` (the later one wins).
    credentials: Option<SaslCredentials>,
    /// The seed of the SCRAM client nonces, from the driver (see [`NonceSeed`]).
    nonce_seed: Option<NonceSeed>,
    /// The OIDC client-credentials login's settings (KIP-768), for a driver that fetches
    /// tokens to take out ([`SaslConfig::take_oidc_client_credentials`]).
    oidc: OidcSettings,
}

/// 32 bytes of entropy the SCRAM client nonces of a session are derived from
/// (SHA-256 of the seed and a per-exchange counter). The session has no randomness of
/// its own (it is deterministic); the drivers fill this from the operating system
/// (`getrandom`). Redacted in `Debug`: whoever knows it can predict the nonces.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NonceSeed(pub(crate) [u8; 32]);

impl NonceSeed {
    /// A seed from 32 bytes of entropy.
    #[must_use]
    pub fn new(entropy: [u8; 32]) -> Self {
        Self(entropy)
    }
}

impl fmt::Debug for NonceSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NonceSeed([redacted])")
    }
}

impl SaslConfig {
    /// Handles `sasl.*` keys; `Ok(false)` if `key` is not a SASL key.
    ///
    /// # Errors
    /// [`SaslConfigError`] for a value that does not parse or a key kacrab does not
    /// implement.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, SaslConfigError> {
        match key {
            SASL_MECHANISM => {
                let name = value.trim();
                let mechanism = SaslMechanism::from_name(name).ok_or_else(|| {
                    SaslConfigError::UnsupportedMechanism {
                        mechanism: name.to_owned(),
                    }
                })?;
                self.mechanism = Some(mechanism);
            }
            SASL_JAAS_CONFIG => match credentials_from_jaas(value)? {
                JaasCredentials::Fixed(credentials) => {
                    self.oidc.clear_client();
                    self.credentials = Some(credentials);
                }
                JaasCredentials::Oidc(options) => {
                    self.oidc.set_client(&options)?;
                    self.credentials = None;
                }
            },
            // Java's OIDC handler is the one installed for these settings: naming it
            // changes nothing.
            SASL_LOGIN_CALLBACK_HANDLER_CLASS if value.trim().ends_with(OIDC_CALLBACK_HANDLER) => {}
            _ if self.oidc.set(key, value)? => {}
            _ => match unsupported_reason(key) {
                Some(reason) => {
                    return Err(SaslConfigError::UnsupportedKey {
                        key: key.to_owned(),
                        reason,
                    })
                }
                None => return Ok(false),
            },
        }
        Ok(true)
    }

    /// Sets `sasl.mechanism`.
    pub fn mechanism(&mut self, mechanism: SaslMechanism) -> &mut Self {
        self.mechanism = Some(mechanism);
        self
    }

    /// PLAIN with this username and password.
    pub fn plain(&mut self, username: impl Into<String>, password: impl Into<Secret>) -> &mut Self {
        self.mechanism = Some(SaslMechanism::Plain);
        self.username_password(username, password)
    }

    /// SCRAM (`ScramSha256` or `ScramSha512`; any other mechanism is refused at build)
    /// with this username and password.
    pub fn scram(
        &mut self,
        mechanism: SaslMechanism,
        username: impl Into<String>,
        password: impl Into<Secret>,
    ) -> &mut Self {
        self.mechanism = Some(mechanism);
        self.username_password(username, password)
    }

    /// OAUTHBEARER with tokens from the application's provider (replacing OIDC client
    /// credentials from `sasl.jaas.config`, if any).
    pub fn oauthbearer(&mut self, provider: Arc<dyn OAuthBearerTokenProvider>) -> &mut Self {
        self.mechanism = Some(SaslMechanism::OAuthBearer);
        self.oidc.clear_client();
        self.credentials = Some(SaslCredentials::OAuthBearer(OAuthBearerSource::Provider(
            provider,
        )));
        self
    }

    /// OAUTHBEARER with tokens from an OIDC token endpoint (KIP-768), fetched by the
    /// driver (kacrab-tokio's feature `oidc`); the typed form of
    /// `sasl.oauthbearer.token.endpoint.url` and the JAAS line with `clientId` and
    /// `clientSecret`.
    pub fn oidc_client_credentials(&mut self, settings: OidcClientCredentials) -> &mut Self {
        self.mechanism = Some(SaslMechanism::OAuthBearer);
        self.credentials = None;
        self.oidc = OidcSettings::from(settings);
        self
    }

    /// Takes the OIDC client-credentials settings out, for a driver that fetches tokens
    /// and installs its own provider in their place: `Ok(None)` when none were given
    /// (or a provider or other credentials replaced them).
    ///
    /// # Errors
    /// [`SaslConfigError::BadOidcSetting`] for a setup missing its endpoint or client.
    pub fn take_oidc_client_credentials(
        &mut self,
    ) -> Result<Option<OidcClientCredentials>, SaslConfigError> {
        if self.credentials.is_some() || !self.oidc.is_requested() {
            return Ok(None);
        }
        let settings = self.oidc.complete()?;
        self.oidc = OidcSettings::default();
        Ok(Some(settings))
    }

    /// Sets the seed of the SCRAM client nonces (the drivers fill it from the operating
    /// system; without one, a session derives its nonces from `kacrab.jitter.seed`,
    /// which is deterministic: fine for tests, predictable for anything else).
    pub fn nonce_seed(&mut self, seed: NonceSeed) -> &mut Self {
        self.nonce_seed = Some(seed);
        self
    }

    /// The seed of the SCRAM client nonces, if one was given.
    #[must_use]
    pub fn nonce_seed_setting(&self) -> Option<NonceSeed> {
        self.nonce_seed
    }

    /// Checks the SASL settings against `security.protocol`, as Kafka's
    /// `ChannelBuilders.clientChannelBuilder` does: SASL_PLAINTEXT and SASL_SSL need a
    /// mechanism with its credentials (Java fails the producer's construction without a
    /// JAAS entry); PLAINTEXT and SSL build no SASL channel and leave `sasl.*` unused,
    /// so settings given then are accepted with a note and ignored.
    ///
    /// # Errors
    /// As [`SaslConfig::validate`], for a SASL protocol, or for settings that are
    /// inconsistent in themselves.
    pub(crate) fn check_for(
        &self,
        uses_sasl: bool,
    ) -> Result<Option<&'static str>, SaslConfigError> {
        if uses_sasl {
            self.validate()?;
            return Ok(None);
        }
        if !self.is_configured() {
            return Ok(None);
        }
        self.validate()?;
        Ok(Some(
            "ignored: security.protocol is PLAINTEXT or SSL, which do not authenticate with SASL (as in Kafka, sasl.* is then unused)",
        ))
    }

    /// The username and password, keeping the mechanism.
    pub fn username_password(
        &mut self,
        username: impl Into<String>,
        password: impl Into<Secret>,
    ) -> &mut Self {
        self.credentials = Some(SaslCredentials::UsernamePassword {
            username: username.into(),
            password: password.into(),
        });
        self
    }

    /// The mechanism, if set.
    #[must_use]
    pub fn mechanism_setting(&self) -> Option<SaslMechanism> {
        self.mechanism
    }

    /// The credentials, if set.
    #[must_use]
    pub fn credentials(&self) -> Option<&SaslCredentials> {
        self.credentials.as_ref()
    }

    /// Whether anything SASL was configured.
    #[must_use]
    pub fn is_configured(&self) -> bool {
        self.mechanism.is_some() || self.credentials.is_some() || self.oidc.is_requested()
    }

    /// Checks that the mechanism and its credentials fit: what a SASL connection needs.
    ///
    /// # Errors
    /// [`SaslConfigError::MissingMechanism`], [`SaslConfigError::MissingCredentials`],
    /// [`SaslConfigError::CredentialsMismatch`] or [`SaslConfigError::InvalidCredentials`].
    pub fn validate(&self) -> Result<(SaslMechanism, &SaslCredentials), SaslConfigError> {
        let mechanism = self.mechanism.ok_or(SaslConfigError::MissingMechanism)?;
        if self.credentials.is_none() && self.oidc.is_requested() {
            // Complete or not, a driver that fetches tokens would have taken them out.
            self.oidc.complete()?;
            return Err(SaslConfigError::OidcNotBuiltIn {
                key: oidc::TOKEN_ENDPOINT_URL,
            });
        }
        let credentials = self
            .credentials
            .as_ref()
            .ok_or(SaslConfigError::MissingCredentials { mechanism })?;
        let fits = match credentials {
            SaslCredentials::UsernamePassword { .. } => mechanism.takes_password(),
            SaslCredentials::OAuthBearer(_) => !mechanism.takes_password(),
        };
        if !fits {
            let credentials = match credentials {
                SaslCredentials::UsernamePassword { .. } => "username/password",
                SaslCredentials::OAuthBearer(_) => "OAUTHBEARER token",
            };
            return Err(SaslConfigError::CredentialsMismatch {
                mechanism,
                credentials,
            });
        }
        if let (SaslMechanism::Plain, SaslCredentials::UsernamePassword { username, password }) =
            (mechanism, credentials)
        {
            if username.contains('\0') || password.expose().contains('\0') {
                return Err(SaslConfigError::InvalidCredentials {
                    reason: "a PLAIN username or password cannot hold a NUL character (RFC 4616)",
                });
            }
        }
        Ok((mechanism, credentials))
    }
}

/// `sasl.login.callback.handler.class`.
const SASL_LOGIN_CALLBACK_HANDLER_CLASS: &str = "sasl.login.callback.handler.class";
/// Java's OIDC login callback handler's class name (its package moved between
/// releases, so only the name is compared).
const OIDC_CALLBACK_HANDLER: &str = "OAuthBearerLoginCallbackHandler";
/// JAAS options of OIDC client credentials (`SaslOauthbearer` docs, KIP-768).
const OIDC_OPTIONS: &[&str] = &["clientId", "clientSecret"];

/// What a `sasl.jaas.config` line gives.
enum JaasCredentials {
    /// Credentials the session uses as they are.
    Fixed(SaslCredentials),
    /// `OAuthBearerLoginModule`'s OIDC options, for [`OidcSettings::set_client`].
    Oidc(std::collections::BTreeMap<String, String>),
}

/// Credentials from `sasl.jaas.config`.
fn credentials_from_jaas(text: &str) -> Result<JaasCredentials, SaslConfigError> {
    let entry = jaas::parse(text)?;
    let module = match entry.login_module.as_str() {
        PLAIN_LOGIN_MODULE => "PlainLoginModule",
        SCRAM_LOGIN_MODULE => "ScramLoginModule",
        // The same login module serves Kafka's unsecured JWTs and OIDC; the options say
        // which (`OAuthBearerUnsecuredLoginCallbackHandler` reads `unsecuredLogin*`,
        // `OAuthBearerLoginCallbackHandler`'s `JaasOptionsUtils` reads clientId and
        // clientSecret).
        OAUTHBEARER_LOGIN_MODULE
            if !entry
                .options
                .keys()
                .any(|o| o.starts_with("unsecuredLogin"))
                && OIDC_OPTIONS.iter().any(|o| entry.options.contains_key(*o)) =>
        {
            return Ok(JaasCredentials::Oidc(entry.options))
        }
        OAUTHBEARER_LOGIN_MODULE => {
            return Ok(JaasCredentials::Fixed(SaslCredentials::OAuthBearer(
                OAuthBearerSource::Unsecured(UnsecuredJwt::from_jaas_options(&entry.options)?),
            )))
        }
        _ => return Err(SaslConfigError::UnsupportedLoginModule),
    };
    let get = |option: &'static str| {
        entry
            .options
            .get(option)
            .cloned()
            .ok_or(SaslConfigError::BadOption {
                module,
                option,
                reason: "missing",
            })
    };
    Ok(JaasCredentials::Fixed(SaslCredentials::UsernamePassword {
        username: get("username")?,
        password: Secret::new(get("password")?),
    }))
}

/// Why a `sasl.*` key Kafka knows is not implemented; `None` for a key that is not a
/// SASL key at all (the caller's business).
fn unsupported_reason(key: &str) -> Option<&'static str> {
    Some(match key {
        _ if key.starts_with("sasl.kerberos.") => {
            "GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM or OAUTHBEARER"
        }
        "sasl.client.callback.handler.class"
        | "sasl.login.class"
        | "sasl.login.callback.handler.class" => {
            "Java classes cannot be loaded; set credentials with SaslConfig (plain, scram, or oauthbearer with an OAuthBearerTokenProvider), reached by ProducerBuilder::sasl (kacrab-tokio) or SessionConfigBuilder::sasl"
        }
        _ if key.starts_with("sasl.oauthbearer.jwks.")
            || key == "sasl.oauthbearer.clock.skew.seconds"
            || key.starts_with("sasl.oauthbearer.expected.") =>
        {
            "a broker's token validation setting: a producer does not validate the tokens it sends"
        }
        _ if key.starts_with("sasl.login.") || key.starts_with("sasl.oauthbearer.") => {
            "not a setting of the OIDC client-credentials login (kacrab-tokio's feature oidc), nor of any other SASL login kacrab implements"
        }
        _ if key.starts_with("sasl.") => "not a SASL setting kacrab implements",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(props: &[(&str, &str)]) -> Result<SaslConfig, SaslConfigError> {
        let mut c = SaslConfig::default();
        for (k, v) in props {
            assert!(c.set(k, v)?, "{k} is a SASL key");
        }
        Ok(c)
    }

    #[test]
    fn plain_and_scram_from_jaas() {
        let c = from(&[
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";"#,
            ),
        ])
        .unwrap();
        let (m, creds) = c.validate().unwrap();
        assert_eq!(m, SaslMechanism::Plain);
        assert_eq!(
            creds,
            &SaslCredentials::UsernamePassword {
                username: "u".into(),
                password: "p".into()
            }
        );
        let c = from(&[
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="a\"b";"#,
            ),
        ])
        .unwrap();
        let (m, creds) = c.validate().unwrap();
        assert_eq!(m, SaslMechanism::ScramSha512);
        let SaslCredentials::UsernamePassword { password, .. } = creds else {
            panic!("{creds:?}")
        };
        assert_eq!(password.expose(), "a\"b");
    }

    #[test]
    fn mechanisms_by_kafkas_names_only() {
        for m in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] {
            assert_eq!(SaslMechanism::from_name(m).unwrap().name(), m);
        }
        for bad in ["GSSAPI", "plain", "SCRAM-SHA-1", ""] {
            assert!(matches!(
                from(&[("sasl.mechanism", bad)]),
                Err(SaslConfigError::UnsupportedMechanism { .. })
            ));
        }
    }

    #[test]
    fn keys_kacrab_does_not_implement_are_refused_with_a_reason() {
        for key in [
            "sasl.kerberos.service.name",
            "sasl.login.callback.handler.class",
            "sasl.client.callback.handler.class",
            "sasl.login.class",
            "sasl.oauthbearer.jwks.endpoint.url",
            "sasl.oauthbearer.expected.audience",
            "sasl.made.up",
        ] {
            let mut c = SaslConfig::default();
            let err = c.set(key, "x").unwrap_err();
            assert!(
                matches!(&err, SaslConfigError::UnsupportedKey { key: k, .. } if k == key),
                "{err}"
            );
            assert!(err.to_string().contains("not supported"), "{err}");
        }
        assert!(!SaslConfig::default().set("linger.ms", "5").unwrap());
    }

    #[test]
    fn mismatched_or_missing_settings_are_refused() {
        let mut c = SaslConfig::default();
        c.mechanism(SaslMechanism::ScramSha256);
        assert_eq!(
            c.validate().unwrap_err(),
            SaslConfigError::MissingCredentials {
                mechanism: SaslMechanism::ScramSha256
            }
        );
        let mut c = SaslConfig::default();
        c.username_password("u", "p");
        assert_eq!(c.validate().unwrap_err(), SaslConfigError::MissingMechanism);
        let mut nul = SaslConfig::default();
        nul.plain("u", "p\0w");
        assert!(matches!(
            nul.validate().unwrap_err(),
            SaslConfigError::InvalidCredentials { .. }
        ));
        c.mechanism(SaslMechanism::OAuthBearer);
        assert!(matches!(
            c.validate().unwrap_err(),
            SaslConfigError::CredentialsMismatch { .. }
        ));
        let err = from(&[(
            "sasl.jaas.config",
            "com.example.MyLoginModule required password=\"hunter2\";",
        )])
        .unwrap_err();
        assert_eq!(err, SaslConfigError::UnsupportedLoginModule);
        let err = from(&[(
            "sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"hunter2\";",
        )])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "sasl.jaas.config option username of PlainLoginModule: missing"
        );
    }

    /// An OIDC setup as Java's producer takes it (KIP-768: `OAuthBearerLoginModule` with
    /// `clientId`/`clientSecret`/`scope`, `sasl.oauthbearer.token.endpoint.url`, Java's
    /// `OAuthBearerLoginCallbackHandler`, the `sasl.login.*` retry and refresh keys, as
    /// `OAuthBearerLoginCallbackHandler.configure` and `JaasOptionsUtils` read them)
    /// parses into settings a token-fetching driver takes out; left in, the session's
    /// validation refuses it naming kacrab-tokio's feature. The secret is in no error
    /// and no `Debug`.
    #[test]
    fn an_oidc_setup_parses_for_a_driver_that_fetches_tokens() {
        let oidc = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                    required clientId=\"app\" clientSecret=\"hunter2\" scope=\"kafka\" \
                    extension_logicalCluster=\"lkc-1\";";
        let props = [
            ("sasl.mechanism", "OAUTHBEARER"),
            (SASL_JAAS_CONFIG, oidc),
            (
                "sasl.oauthbearer.token.endpoint.url",
                "https://idp.example/token",
            ),
            (
                "sasl.login.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            ),
            ("sasl.login.retry.backoff.ms", "50"),
            ("sasl.login.retry.backoff.max.ms", "2000"),
            ("sasl.login.connect.timeout.ms", "3000"),
            ("sasl.login.refresh.window.factor", "0.9"),
            ("sasl.oauthbearer.sub.claim.name", "client_id"),
        ];
        let c = from(&props).unwrap();
        assert!(c.is_configured());
        let err = c.validate().unwrap_err();
        assert!(
            matches!(err, SaslConfigError::OidcNotBuiltIn { .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains("feature `oidc`"), "{text}");
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");

        let mut taken = c.clone();
        let settings = taken.take_oidc_client_credentials().unwrap().unwrap();
        assert_eq!(settings.token_endpoint_url(), "https://idp.example/token");
        assert_eq!(settings.client_id(), "app");
        assert_eq!(settings.client_secret().expose(), "hunter2");
        assert_eq!(settings.scope(), Some("kafka"));
        assert_eq!(
            settings
                .extensions()
                .get("logicalCluster")
                .map(String::as_str),
            Some("lkc-1")
        );
        let t = settings.timing();
        assert_eq!(t.retry_backoff, std::time::Duration::from_millis(50));
        assert_eq!(t.retry_backoff_max, std::time::Duration::from_millis(2000));
        assert_eq!(t.connect_timeout, Some(std::time::Duration::from_secs(3)));
        assert_eq!(t.read_timeout, None);
        assert!((t.refresh_window_factor - 0.9).abs() < 1e-9);
        assert_eq!(t.sub_claim_name, "client_id");
        assert!(!format!("{settings:?}").contains("hunter2"));
        // Taken out, the session is left to the driver's provider.
        assert_eq!(taken.take_oidc_client_credentials().unwrap(), None);

        // Half a setup names what is missing, never the secret.
        let err = from(&[("sasl.mechanism", "OAUTHBEARER"), (SASL_JAAS_CONFIG, oidc)])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(
            matches!(&err, SaslConfigError::BadOidcSetting { key, .. } if key == "sasl.oauthbearer.token.endpoint.url"),
            "{err}"
        );
        assert!(!err.to_string().contains("hunter2"));
        // Malformed values are refused by key.
        for (key, value) in [
            ("sasl.oauthbearer.token.endpoint.url", "file:/tmp/token"),
            ("sasl.login.refresh.window.factor", "0.2"),
            ("sasl.login.retry.backoff.ms", "soon"),
        ] {
            let err = from(&[(key, value)]).unwrap_err();
            assert!(
                matches!(&err, SaslConfigError::BadOidcSetting { key: k, .. } if k == key),
                "{err}"
            );
        }
        // The unsecured-JWT options still make an unsecured token.
        let unsecured = from(&[(
            SASL_JAAS_CONFIG,
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
             required unsecuredLoginStringClaim_sub=\"alice\";",
        )])
        .unwrap();
        assert!(matches!(
            unsecured.credentials(),
            Some(SaslCredentials::OAuthBearer(OAuthBearerSource::Unsecured(
                _
            )))
        ));
    }
}
