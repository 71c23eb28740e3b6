//! OAUTHBEARER through an OpenID Connect token endpoint (KIP-768, client credentials):
//! the settings Java's `OAuthBearerLoginCallbackHandler` reads, parsed here and carried
//! out by a driver that can wait on the network (kacrab-tokio's feature `oidc`).
//!
//! The session itself never fetches a token: it authenticates with what a provider
//! holds. So these settings are data here; a driver that fetches tokens takes them
//! ([`SaslConfig::take_oidc_client_credentials`](super::SaslConfig::take_oidc_client_credentials))
//! and installs an [`OAuthBearerTokenHandle`](crate::OAuthBearerTokenHandle) it refreshes
//! in their place. A configuration still holding them when the session is built is
//! refused ([`SaslConfigError::OidcNotBuiltIn`]).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::SaslConfigError;
use crate::secret::Secret;

/// The client identity of the JAAS line (`OAuthBearerLoginModule required clientId="…"
/// clientSecret="…" scope="…";`). The secret is redacted in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct OidcClient {
    pub(super) id: String,
    pub(super) secret: Secret,
    pub(super) scope: Option<String>,
    /// `extension_<name>` options: SASL extensions sent with every token.
    pub(super) extensions: BTreeMap<String, String>,
}

impl fmt::Debug for OidcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcClient")
            .field("id", &self.id)
            .field("secret", &self.secret)
            .field("scope", &self.scope)
            .field("extensions", &self.extensions)
            .finish()
    }
}

/// Everything a token fetcher needs, complete and checked: the token endpoint, the
/// client's identity, how to retry and when to refresh (Java's `sasl.login.*` and
/// `sasl.oauthbearer.*` keys, with Java's defaults). `Debug` never shows the secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcClientCredentials {
    token_endpoint_url: String,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    extensions: BTreeMap<String, String>,
    timing: OidcTiming,
}

impl OidcClientCredentials {
    /// Client credentials for `token_endpoint_url` (`http://` or `https://`), with
    /// Java's defaults for everything else.
    ///
    /// # Errors
    /// [`SaslConfigError::BadOidcSetting`] for an endpoint that is not an HTTP(S) URL or
    /// an empty client id or secret.
    pub fn new(
        token_endpoint_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<Secret>,
    ) -> Result<Self, SaslConfigError> {
        let token_endpoint_url = checked_endpoint(token_endpoint_url.into())?;
        let client = checked_client(OidcClient {
            id: client_id.into(),
            secret: client_secret.into(),
            scope: None,
            extensions: BTreeMap::new(),
        })?;
        Ok(Self {
            token_endpoint_url,
            client_id: client.id,
            client_secret: client.secret,
            scope: None,
            extensions: BTreeMap::new(),
            timing: OidcTiming::default(),
        })
    }

    /// Asks for `scope` (sent as the form's `scope` parameter).
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        self.scope = Some(scope.trim().to_owned()).filter(|s| !s.is_empty());
        self
    }

    /// `sasl.oauthbearer.token.endpoint.url`.
    #[must_use]
    pub fn token_endpoint_url(&self) -> &str {
        &self.token_endpoint_url
    }
    /// The JAAS option `clientId`.
    #[must_use]
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
    /// The JAAS option `clientSecret`.
    #[must_use]
    pub fn client_secret(&self) -> &Secret {
        &self.client_secret
    }
    /// The JAAS option `scope`, if given and not blank.
    #[must_use]
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }
    /// The JAAS options `extension_<name>`: SASL extensions sent with every token.
    #[must_use]
    pub fn extensions(&self) -> &BTreeMap<String, String> {
        &self.extensions
    }
    /// Retry, timeout and refresh settings.
    #[must_use]
    pub fn timing(&self) -> &OidcTiming {
        &self.timing
    }
    /// The timing settings, to change them.
    pub fn timing_mut(&mut self) -> &mut OidcTiming {
        &mut self.timing
    }
}

/// When to retry a token request and when to refresh a token, by Java's keys and
/// defaults (`SaslConfigs`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OidcTiming {
    /// `sasl.login.retry.backoff.ms` (100): the first retry's wait, doubled each time.
    pub retry_backoff: Duration,
    /// `sasl.login.retry.backoff.max.ms` (10000): retries stop once this long passed
    /// since the first attempt (Java's `Retry`).
    pub retry_backoff_max: Duration,
    /// `sasl.login.connect.timeout.ms` (none): how long connecting to the endpoint may take.
    pub connect_timeout: Option<Duration>,
    /// `sasl.login.read.timeout.ms` (none): how long the endpoint's answer may take.
    pub read_timeout: Option<Duration>,
    /// `sasl.login.refresh.window.factor` (0.8, in \[0.5, 1.0\]): refresh at this
    /// fraction of the token's lifetime.
    pub refresh_window_factor: f64,
    /// `sasl.login.refresh.window.jitter` (0.05, in \[0, 0.25\]): plus up to this
    /// random fraction.
    pub refresh_window_jitter: f64,
    /// `sasl.login.refresh.min.period.seconds` (60, in \[0, 900\]): not sooner than
    /// this after the last refresh.
    pub refresh_min_period: Duration,
    /// `sasl.login.refresh.buffer.seconds` (300, in \[0, 3600\]): not later than this
    /// before expiry.
    pub refresh_buffer: Duration,
    /// `sasl.oauthbearer.sub.claim.name` (`sub`): the JWT claim naming the principal.
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name` (`scope`): the JWT claim holding the scope.
    pub scope_claim_name: String,
    /// `sasl.oauthbearer.header.urlencode` (false, KIP-1025): URL-encode the client id
    /// and secret before HTTP Basic encoding them (RFC 6749 section 2.3.1).
    pub header_urlencode: bool,
}

/// The fractions are finite (parsing keeps them in Kafka's ranges), so equality is total.
impl Eq for OidcTiming {}

impl Default for OidcTiming {
    fn default() -> Self {
        Self {
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_millis(10_000),
            connect_timeout: None,
            read_timeout: None,
            refresh_window_factor: 0.8,
            refresh_window_jitter: 0.05,
            refresh_min_period: Duration::from_secs(60),
            refresh_buffer: Duration::from_secs(300),
            sub_claim_name: "sub".to_owned(),
            scope_claim_name: "scope".to_owned(),
            header_urlencode: false,
        }
    }
}

/// The OIDC settings as the keys arrive, in any order: complete only with an endpoint
/// and a client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct OidcSettings {
    endpoint: Option<String>,
    client: Option<OidcClient>,
    timing: OidcTiming,
}

/// `sasl.oauthbearer.token.endpoint.url`.
pub(super) const TOKEN_ENDPOINT_URL: &str = "sasl.oauthbearer.token.endpoint.url";

impl OidcSettings {
    /// Handles the keys of the client-credentials login; `Ok(false)` for any other key.
    pub(super) fn set(&mut self, key: &str, value: &str) -> Result<bool, SaslConfigError> {
        let bad = |reason: &'static str| SaslConfigError::BadOidcSetting {
            key: key.to_owned(),
            reason,
        };
        let ms = || {
            value
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| bad("not a whole number of milliseconds"))
        };
        let seconds_in = |max: u64| {
            value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|s| *s <= max)
                .map(Duration::from_secs)
                .ok_or_else(|| bad("not a whole number of seconds in Kafka's range"))
        };
        let fraction_in = |lo: f64, hi: f64| {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| (lo..=hi).contains(f))
                .ok_or_else(|| bad("not a number in Kafka's range"))
        };
        let t = &mut self.timing;
        match key {
            TOKEN_ENDPOINT_URL => self.endpoint = Some(checked_endpoint(value.trim().to_owned())?),
            "sasl.login.retry.backoff.ms" => t.retry_backoff = ms()?,
            "sasl.login.retry.backoff.max.ms" => t.retry_backoff_max = ms()?,
            "sasl.login.connect.timeout.ms" => t.connect_timeout = Some(ms()?),
            "sasl.login.read.timeout.ms" => t.read_timeout = Some(ms()?),
            "sasl.login.refresh.window.factor" => t.refresh_window_factor = fraction_in(0.5, 1.0)?,
            "sasl.login.refresh.window.jitter" => t.refresh_window_jitter = fraction_in(0.0, 0.25)?,
            "sasl.login.refresh.min.period.seconds" => t.refresh_min_period = seconds_in(900)?,
            "sasl.login.refresh.buffer.seconds" => t.refresh_buffer = seconds_in(3600)?,
            "sasl.oauthbearer.sub.claim.name" => t.sub_claim_name = value.trim().to_owned(),
            "sasl.oauthbearer.scope.claim.name" => t.scope_claim_name = value.trim().to_owned(),
            "sasl.oauthbearer.header.urlencode" => {
                t.header_urlencode = match value.trim().to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad("not true or false")),
                }
            }
            _ => return Ok(false),
        }
        if t.retry_backoff_max < t.retry_backoff {
            // Java's `Retry` refuses it too.
            return Err(SaslConfigError::BadOidcSetting {
                key: "sasl.login.retry.backoff.max.ms".to_owned(),
                reason: "less than sasl.login.retry.backoff.ms",
            });
        }
        Ok(true)
    }

    /// The client of a JAAS line with `clientId`/`clientSecret`.
    pub(super) fn set_client(
        &mut self,
        options: &BTreeMap<String, String>,
    ) -> Result<(), SaslConfigError> {
        let bad = |option: &'static str, reason| SaslConfigError::BadOption {
            module: "OAuthBearerLoginModule",
            option,
            reason,
        };
        let id = options
            .get("clientId")
            .ok_or_else(|| bad("clientId", "missing"))?;
        let secret = options
            .get("clientSecret")
            .ok_or_else(|| bad("clientSecret", "missing"))?;
        let extensions = options
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("extension_")?.to_owned(), v.clone())))
            .collect();
        self.client = Some(checked_client(OidcClient {
            id: id.clone(),
            secret: Secret::new(secret.clone()),
            scope: options
                .get("scope")
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty()),
            extensions,
        })?);
        Ok(())
    }

    /// Forgets the client (another kind of credentials replaced it).
    pub(super) fn clear_client(&mut self) {
        self.client = None;
    }

    /// Whether an OIDC setup was asked for (an endpoint or a client).
    pub(super) fn is_requested(&self) -> bool {
        self.endpoint.is_some() || self.client.is_some()
    }

    /// The complete settings, or what is missing.
    pub(super) fn complete(&self) -> Result<OidcClientCredentials, SaslConfigError> {
        let endpoint = self
            .endpoint
            .clone()
            .ok_or(SaslConfigError::BadOidcSetting {
                key: TOKEN_ENDPOINT_URL.to_owned(),
                reason:
                    "missing: a JAAS line with clientId and clientSecret needs the token endpoint",
            })?;
        let client = self.client.clone().ok_or(SaslConfigError::BadOidcSetting {
            key: super::SASL_JAAS_CONFIG.to_owned(),
            reason: "missing: the token endpoint needs OAuthBearerLoginModule with clientId and clientSecret",
        })?;
        Ok(OidcClientCredentials {
            token_endpoint_url: endpoint,
            client_id: client.id,
            client_secret: client.secret,
            scope: client.scope,
            extensions: client.extensions,
            timing: self.timing.clone(),
        })
    }
}

/// An `http://` or `https://` URL (Java also reads a token from a `file:` URL: not
/// supported). The URL is not a secret: errors name it.
fn checked_endpoint(url: String) -> Result<String, SaslConfigError> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        Ok(url)
    } else {
        Err(SaslConfigError::BadOidcSetting {
            key: TOKEN_ENDPOINT_URL.to_owned(),
            reason: "not an http:// or https:// URL (a file: token is not supported)",
        })
    }
}

/// Java's `sanitizeString`: id and secret trimmed, not empty.
fn checked_client(mut client: OidcClient) -> Result<OidcClient, SaslConfigError> {
    client.id = client.id.trim().to_owned();
    client.secret = Secret::new(client.secret.expose().trim().to_owned());
    let bad = |option, reason| SaslConfigError::BadOption {
        module: "OAuthBearerLoginModule",
        option,
        reason,
    };
    if client.id.is_empty() {
        return Err(bad("clientId", "empty"));
    }
    if client.secret.expose().is_empty() {
        return Err(bad("clientSecret", "empty"));
    }
    Ok(client)
}

impl From<OidcClientCredentials> for OidcSettings {
    fn from(c: OidcClientCredentials) -> Self {
        Self {
            endpoint: Some(c.token_endpoint_url),
            client: Some(OidcClient {
                id: c.client_id,
                secret: c.client_secret,
                scope: c.scope,
                extensions: c.extensions,
            }),
            timing: c.timing,
        }
    }
}
