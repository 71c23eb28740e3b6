//! OAUTHBEARER tokens from an OpenID Connect token endpoint: the client-credentials
//! login of KIP-768 (feature `oidc`).
//!
//! Java's producer takes it from `sasl.oauthbearer.token.endpoint.url`, a JAAS line
//! `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
//! clientId="…" clientSecret="…" scope="…";` and its `OAuthBearerLoginCallbackHandler`;
//! so does [`Producer::from_properties`](crate::Producer::from_properties) with this
//! feature (the session's configuration parses the keys into
//! [`OidcClientCredentials`]; [`SaslConfig::oidc_client_credentials`](crate::SaslConfig::oidc_client_credentials)
//! is the typed form).
//!
//! **The request** is Kafka's `HttpAccessTokenRetriever`'s (RFC 6749 section 4.4): a POST
//! of `grant_type=client_credentials` and the URL-encoded `scope`, with HTTP Basic
//! authentication of the client id and secret (URL-encoded first only with
//! `sasl.oauthbearer.header.urlencode`, KIP-1025, as Java). The answer's `access_token`
//! is the token; as Kafka's `LoginAccessTokenValidator`, its JWT payload gives the
//! principal (the `sasl.oauthbearer.sub.claim.name` claim, default `sub`) and the expiry
//! (`exp`); the signature is the broker's to check. **Retries** are Kafka's `Retry`:
//! a transport error or a status Kafka does not deem final (5xx but 501 and 505, 408,
//! 429, ...) is retried after `sasl.login.retry.backoff.ms`, doubling, until
//! `sasl.login.retry.backoff.max.ms` passed since the first attempt; 400, 401, 403 and
//! the other client errors of Kafka's list end the fetch at once.
//!
//! **Refresh.** The producer's task refreshes the token at
//! `sasl.login.refresh.window.factor` (plus up to `sasl.login.refresh.window.jitter`)
//! of its lifetime, within `sasl.login.refresh.min.period.seconds` and
//! `sasl.login.refresh.buffer.seconds`, as Java's `ExpiringCredentialRefreshingLogin`;
//! after a failed refresh it tries again 10 s later, keeping the current token
//! meanwhile. The session reads the newest token at each authentication and KIP-368
//! re-authentication ([`OAuthBearerTokenHandle`]).
//!
//! **The first token.** Java logs in within the producer's constructor. Here
//! [`ProducerBuilder::build`](crate::ProducerBuilder::build) stays synchronous (as
//! [`Producer::from_properties`](crate::Producer::from_properties) is): it starts the
//! refresh task, and the producer's driver task starts its session only once the first
//! fetch finished, so no connection authenticates before there is a token. When the
//! first fetch failed, authentication fails with that fetch's error (naming the endpoint
//! and its answer): the records waiting fail, not possibly written, and the producer
//! stops, as Java's constructor would have thrown.
//!
//! **Secrets.** The client secret and the tokens are [`Secret`]s: no `Debug`, error or
//! log shows them; errors name the endpoint's URL, the HTTP status and the RFC 6749
//! section 5.2 `error`/`error_description` the endpoint sent (never its other text).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use kacrab_driver::{
    OAuthBearerToken, OAuthBearerTokenHandle, OAuthBearerTokenProvider, OidcClientCredentials,
    OidcTiming, Secret,
};
use tokio::sync::oneshot;

/// Why no token came from the endpoint. Names the endpoint, never the secret or a token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OidcError {
    /// The endpoint answered with an HTTP error status.
    #[error("token endpoint {url} answered HTTP {status}{detail}")]
    Status {
        /// The token endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The RFC 6749 section 5.2 `error` and `error_description`, if it sent them.
        detail: String,
    },
    /// The request did not reach the endpoint or its answer did not arrive in time.
    #[error("token endpoint {url}: {reason}")]
    Transport {
        /// The token endpoint.
        url: String,
        /// What failed (the HTTP client's words).
        reason: String,
    },
    /// The endpoint's answer holds no usable token.
    #[error("token endpoint {url}: {reason}")]
    BadAnswer {
        /// The token endpoint.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (its TLS backend).
    #[error("the token endpoint's HTTP client could not be built: {0}")]
    Client(String),
}

/// One attempt's failure, and whether Kafka's `Retry` tries again after it.
enum Attempt {
    Retry(OidcError),
    Final(OidcError),
}

/// HTTP statuses after which Kafka's `HttpAccessTokenRetriever` stops retrying
/// (`UNRETRYABLE_HTTP_CODES`): the request itself is wrong.
const FINAL_STATUSES: &[u16] = &[
    400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505,
];

/// Java's `DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS`.
const RETRY_AFTER_FAILED_REFRESH: Duration = Duration::from_secs(10);

/// Fetches tokens from an OIDC token endpoint with client credentials.
pub struct OidcTokenFetcher {
    http: reqwest::Client,
    settings: OidcClientCredentials,
    /// `Basic base64(id:secret)`.
    authorization: Secret,
    /// `grant_type=client_credentials[&scope=…]`.
    form: String,
}

impl fmt::Debug for OidcTokenFetcher {
    /// The settings (their secret redacted), never the authorization header.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcTokenFetcher")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl OidcTokenFetcher {
    /// A fetcher for `settings`, with its own HTTP client (rustls, the system's roots).
    ///
    /// # Errors
    /// [`OidcError::Client`] when the HTTP client cannot be built.
    pub fn new(settings: OidcClientCredentials) -> Result<Self, OidcError> {
        let timing = settings.timing();
        let mut http = reqwest::Client::builder();
        if let Some(t) = timing.connect_timeout {
            http = http.connect_timeout(t);
        }
        if let Some(t) = timing.read_timeout {
            http = http.read_timeout(t);
        }
        let http = http
            .build()
            .map_err(|e| OidcError::Client(e.without_url().to_string()))?;
        let authorization = basic_authorization(
            settings.client_id(),
            settings.client_secret(),
            timing.header_urlencode,
        );
        let form = form_body(settings.scope());
        Ok(Self {
            http,
            settings,
            authorization,
            form,
        })
    }

    /// The settings this fetcher uses.
    #[must_use]
    pub fn settings(&self) -> &OidcClientCredentials {
        &self.settings
    }

    /// A token, retrying as Kafka's `Retry` does (see the [module](self) documentation).
    ///
    /// # Errors
    /// The first attempt's error once retries ended, or a final one at once.
    pub async fn fetch(&self) -> Result<OAuthBearerToken, OidcError> {
        let timing = self.settings.timing();
        let end = tokio::time::Instant::now() + timing.retry_backoff_max;
        let mut first_error = None;
        for attempt in 1u32.. {
            match self.attempt().await {
                Ok(token) => return Ok(token),
                Err(Attempt::Final(e)) => return Err(first_error.unwrap_or(e)),
                Err(Attempt::Retry(e)) => {
                    let remaining = end.saturating_duration_since(tokio::time::Instant::now());
                    let error = first_error.get_or_insert(e);
                    let Some(wait) = retry_wait(timing.retry_backoff, attempt, remaining) else {
                        return Err(error.clone());
                    };
                    log_warn(&format!(
                        "OIDC token fetch attempt {attempt} failed ({error}); retrying in {wait:?}"
                    ));
                    tokio::time::sleep(wait).await;
                }
            }
        }
        unreachable!("the attempts loop returns")
    }

    async fn attempt(&self) -> Result<OAuthBearerToken, Attempt> {
        let url = self.settings.token_endpoint_url();
        let transport = |e: reqwest::Error| {
            Attempt::Retry(OidcError::Transport {
                url: url.to_owned(),
                reason: e.without_url().to_string(),
            })
        };
        let mut authorization = reqwest::header::HeaderValue::from_str(self.authorization.expose())
            .map_err(|_| {
                Attempt::Final(OidcError::Client(
                    "the client id or secret cannot be sent in an HTTP header".to_owned(),
                ))
            })?;
        authorization.set_sensitive(true);
        let answer = self
            .http
            .post(url)
            .header(reqwest::header::AUTHORIZATION, authorization)
            .header(reqwest::header::ACCEPT, "application/json")
            .header(reqwest::header::CACHE_CONTROL, "no-cache")
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(self.form.clone())
            .send()
            .await
            .map_err(transport)?;
        let status = answer.status().as_u16();
        let body = answer.bytes().await.map_err(transport)?;
        if !matches!(status, 200 | 201) {
            let error = OidcError::Status {
                url: url.to_owned(),
                status,
                detail: error_detail(&body),
            };
            return Err(if FINAL_STATUSES.contains(&status) {
                Attempt::Final(error)
            } else {
                Attempt::Retry(error)
            });
        }
        if body.is_empty() {
            // Java's IOException, retried.
            return Err(Attempt::Retry(OidcError::BadAnswer {
                url: url.to_owned(),
                reason: format!("HTTP {status} with an empty body"),
            }));
        }
        self.token_from(&body).map_err(|reason| {
            Attempt::Final(OidcError::BadAnswer {
                url: url.to_owned(),
                reason: reason.to_owned(),
            })
        })
    }

    /// The token of a successful answer, as Kafka's `LoginAccessTokenValidator` reads it.
    fn token_from(&self, body: &[u8]) -> Result<OAuthBearerToken, &'static str> {
        let json: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| "the answer is not JSON")?;
        let access_token = json
            .get("access_token")
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or("the answer has no access_token")?;
        let claims = JwtClaims::read(access_token, &self.settings.timing().sub_claim_name)?;
        let mut token = OAuthBearerToken::new(
            Secret::new(access_token.to_owned()),
            claims.exp_ms,
            claims.principal,
        );
        for (name, value) in self.settings.extensions() {
            token = token.with_extension(name.clone(), value.clone());
        }
        Ok(token)
    }
}

/// What the producer needs of a token's JWT payload.
#[derive(Debug, PartialEq, Eq)]
struct JwtClaims {
    principal: String,
    exp_ms: i64,
    iat_ms: Option<i64>,
}

impl JwtClaims {
    /// The claims of a compact JWS (`header.payload.signature`), unverified: the broker
    /// verifies the signature. The reasons never quote the token.
    fn read(jwt: &str, sub_claim_name: &str) -> Result<Self, &'static str> {
        let mut parts = jwt.split('.');
        let (Some(_header), Some(payload), Some(_signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("the access_token is not a JWT (three dot-separated parts)");
        };
        let payload = URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .map_err(|_| "the access_token's JWT payload is not base64url")?;
        let claims: serde_json::Value = serde_json::from_slice(&payload)
            .map_err(|_| "the access_token's JWT payload is not JSON")?;
        let seconds = |name: &str| {
            claims
                .get(name)
                .and_then(serde_json::Value::as_f64)
                .filter(|s| s.is_finite())
                // Whole milliseconds of a claim in seconds (`NumericDate`).
                .map(|s| (s * 1000.0) as i64)
        };
        let exp_ms = seconds("exp").ok_or("the access_token has no numeric exp claim")?;
        let principal = claims
            .get(sub_claim_name)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or("the access_token has no principal claim (sasl.oauthbearer.sub.claim.name)")?
            .to_owned();
        Ok(Self {
            principal,
            exp_ms,
            iat_ms: seconds("iat"),
        })
    }
}

/// Kafka's `Retry`: after failed attempt `attempt` (from 1), wait `backoff` doubled
/// `attempt - 1` times, cut to what is left of `sasl.login.retry.backoff.max.ms`;
/// `None` when nothing is left.
fn retry_wait(backoff: Duration, attempt: u32, remaining: Duration) -> Option<Duration> {
    let doubled = backoff.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
    Some(doubled.min(remaining)).filter(|w| !w.is_zero())
}

/// When to refresh a token expiring at `exp_ms`, issued at `iat_ms`, seen at `now_ms`
/// (ms since the Unix epoch), as Kafka's `ExpiringCredentialRefreshingLogin.refreshMs`;
/// `jitter` in \[0, 1) draws the window's jitter. Returns the wait from `now_ms`.
fn refresh_delay(
    now_ms: i64,
    exp_ms: i64,
    iat_ms: Option<i64>,
    timing: &OidcTiming,
    jitter: f64,
) -> Duration {
    debug_assert!((0.0..1.0).contains(&jitter));
    if now_ms > exp_ms {
        return RETRY_AFTER_FAILED_REFRESH;
    }
    let pct = timing.refresh_window_factor + timing.refresh_window_jitter * jitter;
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let min_period = ms(timing.refresh_min_period);
    let buffer = ms(timing.refresh_buffer);
    let at = |start: i64| start + ((exp_ms - start) as f64 * pct) as i64;
    let refresh_ms = if now_ms.saturating_add(min_period.saturating_add(buffer)) > exp_ms {
        // The buffers do not fit in what is left: only the window applies.
        at(now_ms)
    } else {
        at(iat_ms.unwrap_or(now_ms))
            .min(exp_ms - buffer)
            .max(now_ms + min_period)
    };
    Duration::from_millis(u64::try_from(refresh_ms - now_ms).unwrap_or(0))
}

/// `Basic base64(id:secret)` (standard base64, RFC 7617, as KAFKA-14496 fixed it).
fn basic_authorization(id: &str, secret: &Secret, urlencode: bool) -> Secret {
    let (id, secret) = if urlencode {
        (form_urlencode(id), form_urlencode(secret.expose()))
    } else {
        (id.to_owned(), secret.expose().to_owned())
    };
    Secret::new(format!(
        "Basic {}",
        STANDARD.encode(format!("{id}:{secret}"))
    ))
}

/// Kafka's `formatRequestBody`.
fn form_body(scope: Option<&str>) -> String {
    let mut body = "grant_type=client_credentials".to_owned();
    if let Some(scope) = scope.map(str::trim).filter(|s| !s.is_empty()) {
        body.push_str("&scope=");
        body.push_str(&form_urlencode(scope));
    }
    body
}

/// `application/x-www-form-urlencoded`, as Java's `URLEncoder.encode(_, UTF_8)`: letters,
/// digits and `.-*_` as they are, space as `+`, every other byte `%XX`.
fn form_urlencode(s: &str) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// RFC 6749 section 5.2's `error` and `error_description` of an error answer (which the
/// RFC makes safe to show, and Java logs), bounded; nothing else of the body.
fn error_detail(body: &[u8]) -> String {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return String::new();
    };
    let field = |name| json.get(name).and_then(serde_json::Value::as_str);
    let Some(error) = field("error") else {
        return String::new();
    };
    let mut detail = format!(" ({error}");
    if let Some(description) = field("error_description") {
        detail.push_str(": ");
        detail.push_str(description);
    }
    let mut detail: String = detail.chars().take(300).collect();
    detail.push(')');
    detail
}

/// The provider the session reads: the refresh task's newest token, or, before the
/// first one, why the first fetch failed.
pub(crate) struct OidcTokenSource {
    handle: OAuthBearerTokenHandle,
    url: String,
    last_error: Mutex<Option<OidcError>>,
}

impl OAuthBearerTokenProvider for OidcTokenSource {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        // A token the last refresh could not replace is still sent: the broker judges
        // its expiry, as Java keeps its credential until a refresh succeeds.
        self.handle.token().map_err(|_| {
            match &*self
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
            {
                Some(e) => format!("no OIDC token: {e}"),
                None => format!("no OIDC token yet from {}", self.url),
            }
        })
    }
}

/// Takes the OIDC settings out of `config` and installs a provider fed by a refresh
/// task in their place; `Ok(None)` when there are none. The task starts with
/// [`OidcLogin::start`].
pub(crate) fn install(
    config: &mut kacrab_driver::SessionConfigBuilder,
) -> Result<Option<OidcLogin>, crate::Error> {
    let Some(settings) = config
        .sasl()
        .take_oidc_client_credentials()
        .map_err(|e| crate::Error::Config(e.into()))?
    else {
        return Ok(None);
    };
    let source = Arc::new(OidcTokenSource {
        handle: OAuthBearerTokenHandle::new(),
        url: settings.token_endpoint_url().to_owned(),
        last_error: Mutex::new(None),
    });
    let fetcher = OidcTokenFetcher::new(settings).map_err(crate::Error::Oidc)?;
    config.sasl().oauthbearer(Arc::clone(&source) as _);
    Ok(Some(OidcLogin { fetcher, source }))
}

/// A fetcher and the provider it feeds, before the refresh task starts.
pub(crate) struct OidcLogin {
    fetcher: OidcTokenFetcher,
    source: Arc<OidcTokenSource>,
}

impl OidcLogin {
    /// Spawns the refresh task on `runtime`; the receiver fires once the first fetch
    /// finished (with a token or an error). The task ends once the session dropped
    /// its provider (at its next wake-up).
    pub(crate) fn start(self, runtime: &tokio::runtime::Handle) -> oneshot::Receiver<()> {
        let (first_done, first) = oneshot::channel();
        let source = Arc::downgrade(&self.source);
        drop(self.source);
        runtime.spawn(refresh_loop(self.fetcher, source, first_done));
        first
    }
}

async fn refresh_loop(
    fetcher: OidcTokenFetcher,
    source: Weak<OidcTokenSource>,
    first_done: oneshot::Sender<()>,
) {
    let mut first_done = Some(first_done);
    loop {
        let fetched = fetcher.fetch().await;
        let Some(source) = source.upgrade() else {
            return;
        };
        let wait = match fetched {
            Ok(token) => {
                let now_ms = unix_ms();
                let iat_ms = token_iat_ms(&token, &fetcher);
                let wait = refresh_delay(
                    now_ms,
                    token.lifetime_ms,
                    iat_ms,
                    fetcher.settings().timing(),
                    jitter(),
                );
                source.handle.set(token);
                *source
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = None;
                wait
            }
            Err(e) => {
                log_warn(&format!(
                    "OIDC token refresh failed ({e}); trying again in {RETRY_AFTER_FAILED_REFRESH:?}"
                ));
                *source
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(e);
                RETRY_AFTER_FAILED_REFRESH
            }
        };
        drop(source);
        if let Some(done) = first_done.take() {
            let _ = done.send(());
        }
        tokio::time::sleep(wait).await;
    }
}

/// The token's `iat`, read again from its JWT (the fetcher checked it parses).
fn token_iat_ms(token: &OAuthBearerToken, fetcher: &OidcTokenFetcher) -> Option<i64> {
    JwtClaims::read(
        token.value.expose(),
        &fetcher.settings().timing().sub_claim_name,
    )
    .ok()
    .and_then(|c| c.iat_ms)
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A draw in \[0, 1) for the refresh window's jitter.
fn jitter() -> f64 {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.0;
    }
    f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0)
}

/// A warning through the session's log facade when the feature `tracing` is on.
fn log_warn(message: &str) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "kacrab::oidc", "{message}");
    #[cfg(not(feature = "tracing"))]
    let _ = message;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(payload: &str) -> String {
        format!(
            "{}.{}.sig",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256"}"#),
            URL_SAFE_NO_PAD.encode(payload)
        )
    }

    /// Kafka's `LoginAccessTokenValidator`: principal from the configured claim, expiry
    /// from `exp` in seconds; a token without them is refused without quoting it.
    #[test]
    fn claims_are_read_as_kafkas_login_validator_reads_them() {
        let claims = JwtClaims::read(
            &jwt(r#"{"sub":"svc","exp":1700000060,"iat":1700000000}"#),
            "sub",
        )
        .unwrap();
        assert_eq!(
            claims,
            JwtClaims {
                principal: "svc".into(),
                exp_ms: 1_700_000_060_000,
                iat_ms: Some(1_700_000_000_000),
            }
        );
        let other = JwtClaims::read(&jwt(r#"{"client_id":"app","exp":5}"#), "client_id").unwrap();
        assert_eq!(other.principal, "app");
        for (token, claim) in [
            (jwt(r#"{"exp":5}"#), "sub"),
            (jwt(r#"{"sub":"svc"}"#), "sub"),
            ("secret-opaque-token".to_owned(), "sub"),
        ] {
            let reason = JwtClaims::read(&token, claim).unwrap_err();
            assert!(!reason.contains("secret-opaque"), "{reason}");
        }
    }

    /// Kafka's `formatAuthorizationHeader` and `formatRequestBody`: standard base64 of
    /// `id:secret` (URL-encoded first only with `sasl.oauthbearer.header.urlencode`),
    /// the scope URL-encoded as Java's `URLEncoder`.
    #[test]
    fn the_request_is_kafkas() {
        let secret = Secret::from("p@ss word");
        assert_eq!(
            basic_authorization("app", &secret, false).expose(),
            format!("Basic {}", STANDARD.encode("app:p@ss word"))
        );
        assert_eq!(
            basic_authorization("app", &secret, true).expose(),
            format!("Basic {}", STANDARD.encode("app:p%40ss+word"))
        );
        assert_eq!(form_body(None), "grant_type=client_credentials");
        assert_eq!(
            form_body(Some(" kafka api:write ")),
            "grant_type=client_credentials&scope=kafka+api%3Awrite"
        );
        assert_eq!(form_urlencode("a.b-c*d_é"), "a.b-c*d_%C3%A9");
    }

    /// Kafka's `Retry.execute`: 100, 200, 400 ms ... cut to what is left of the max.
    #[test]
    fn retries_back_off_doubling_within_the_max() {
        let ms = Duration::from_millis;
        assert_eq!(retry_wait(ms(100), 1, ms(10_000)), Some(ms(100)));
        assert_eq!(retry_wait(ms(100), 2, ms(10_000)), Some(ms(200)));
        assert_eq!(retry_wait(ms(100), 4, ms(10_000)), Some(ms(800)));
        assert_eq!(retry_wait(ms(100), 4, ms(300)), Some(ms(300)));
        assert_eq!(retry_wait(ms(100), 9, Duration::ZERO), None);
        assert_eq!(retry_wait(ms(100), 200, ms(5)), Some(ms(5)));
    }

    /// Kafka's `ExpiringCredentialRefreshingLogin.refreshMs`: the window factor of the
    /// lifetime, not later than the buffer before expiry, not sooner than the minimum
    /// period; a lifetime too short for both buffers takes only the window.
    #[test]
    fn refresh_is_scheduled_as_kafkas_login_refresh() {
        let t = OidcTiming::default();
        let s = Duration::from_secs;
        // One hour: 80% (48 min) is before the 5-minute end buffer.
        assert_eq!(refresh_delay(0, 3_600_000, Some(0), &t, 0.0), s(2880));
        // With the whole jitter: 85%.
        let jittered = refresh_delay(0, 3_600_000, Some(0), &t, 0.999_999);
        assert!((s(3059)..=s(3060)).contains(&jittered), "{jittered:?}");
        // Ten minutes: 80% (8 min) is inside the end buffer, so 5 min before expiry.
        assert_eq!(refresh_delay(0, 600_000, Some(0), &t, 0.0), s(300));
        // Issued long ago, so 80% of its lifetime is past: the minimum period from now.
        assert_eq!(refresh_delay(3_000_000, 3_600_000, Some(0), &t, 0.0), s(60));
        // Two seconds: buffers do not fit, 80% of what is left.
        assert_eq!(
            refresh_delay(1_000, 3_000, Some(1_000), &t, 0.0),
            Duration::from_millis(1_600)
        );
        // Expired: try again shortly.
        assert_eq!(
            refresh_delay(5_000, 3_000, None, &t, 0.0),
            RETRY_AFTER_FAILED_REFRESH
        );
    }

    /// An error answer shows RFC 6749's `error`/`error_description`, nothing else.
    #[test]
    fn error_detail_is_rfc_6749s_fields_only() {
        assert_eq!(
            error_detail(br#"{"error":"invalid_client","error_description":"bad","x":"s3"}"#),
            " (invalid_client: bad)"
        );
        assert_eq!(error_detail(b"<html>s3cret</html>"), "");
    }

    /// The fetcher's `Debug` shows the settings without the secret or the header.
    #[test]
    fn the_fetchers_debug_hides_the_secret() {
        let settings = OidcClientCredentials::new("https://idp/token", "app", "s3cret-x").unwrap();
        let fetcher = OidcTokenFetcher::new(settings).unwrap();
        let shown = format!("{fetcher:?}");
        assert!(shown.contains("app"), "{shown}");
        assert!(!shown.contains("s3cret-x"), "{shown}");
        assert!(!shown.contains(&STANDARD.encode("app:s3cret-x")), "{shown}");
    }
}
