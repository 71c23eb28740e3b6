//! A token provider the application feeds: for token sources that are asynchronous (an
//! OIDC client on an async HTTP stack, a cloud SDK's refresh loop).
//!
//! The session asks its provider for a token on its own event loop, once per
//! authentication, and must not wait there for the network. So an asynchronous source
//! refreshes the token on the application's own task and hands it to this handle; the
//! session takes whatever the handle holds when it authenticates. Refreshing before
//! expiry is the application's: Java's login refresh thread renews at 80% of a token's
//! lifetime (`sasl.login.refresh.window.factor`, `ExpiringCredentialRefreshingLogin`).
//! The broker caps the authenticated session at the token's expiry (KIP-368:
//! `SaslAuthenticateResponse.session_lifetime_ms`), and the session re-authenticates in
//! place before it ends, with the handle's token at that moment.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use super::oauthbearer::{OAuthBearerToken, OAuthBearerTokenProvider};

/// A shared slot for the current OAUTHBEARER token: the application sets it (from any
/// thread or task, as often as it refreshes), the session reads it at each
/// authentication. Clones share the slot. Install a clone with
/// [`SaslConfig::oauthbearer`](crate::SaslConfig::oauthbearer) and keep one to refresh.
///
/// Set the first token before the producer is built, as Java logs in within its
/// constructor: until the first [`set`](OAuthBearerTokenHandle::set) an authentication
/// fails with [`SaslError::TokenProvider`](crate::SaslError::TokenProvider) as any
/// provider's error does (the records waiting on it fail, not possibly written).
///
/// ```
/// use kacrab_driver::{OAuthBearerToken, OAuthBearerTokenHandle, Secret};
///
/// let handle = OAuthBearerTokenHandle::new();
/// // The producer's configuration takes a clone:
/// // builder.sasl().oauthbearer(Arc::new(handle.clone()));
/// // The application's refresh task, on each new token from its identity provider:
/// handle.set(OAuthBearerToken::new(Secret::from("eyJ..."), 1_900_000_000_000, "svc"));
/// assert_eq!(handle.expires_at_ms(), Some(1_900_000_000_000));
/// ```
#[derive(Clone, Default)]
pub struct OAuthBearerTokenHandle {
    current: Arc<RwLock<Option<OAuthBearerToken>>>,
}

impl OAuthBearerTokenHandle {
    /// An empty handle: authentications fail until a token is set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `token` the one the next authentication (or KIP-368 re-authentication)
    /// sends. Open connections keep the session they authenticated; the broker ends it
    /// at the old token's expiry, and the re-authentication before that uses this one.
    pub fn set(&self, token: OAuthBearerToken) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(token);
    }

    /// When the current token expires, in ms since the Unix epoch (`None` before the
    /// first [`set`](OAuthBearerTokenHandle::set)): for the application's refresh task
    /// to schedule the next refresh.
    #[must_use]
    pub fn expires_at_ms(&self) -> Option<i64> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|t| t.lifetime_ms)
    }
}

impl OAuthBearerTokenProvider for OAuthBearerTokenHandle {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| {
                "no token yet: the application has not set one on its OAuthBearerTokenHandle"
                    .to_owned()
            })
    }
}

impl fmt::Debug for OAuthBearerTokenHandle {
    /// The principal and expiry only: never the token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        let mut d = f.debug_struct("OAuthBearerTokenHandle");
        match current.as_ref() {
            Some(t) => d
                .field("principal_name", &t.principal_name)
                .field("lifetime_ms", &t.lifetime_ms),
            None => d.field("token", &"none yet"),
        };
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn a_clone_sees_the_newest_token_and_debug_hides_it() {
        let handle = OAuthBearerTokenHandle::new();
        let session_side = handle.clone();
        let none = session_side.token().unwrap_err();
        assert!(none.contains("no token yet"), "{none}");
        handle.set(OAuthBearerToken::new(
            Secret::from("first-s3cret"),
            10,
            "svc",
        ));
        handle.set(OAuthBearerToken::new(
            Secret::from("second-s3cret"),
            20,
            "svc",
        ));
        let token = session_side.token().unwrap();
        assert_eq!(token.value.expose(), "second-s3cret");
        assert_eq!(session_side.expires_at_ms(), Some(20));
        let shown = format!("{handle:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("svc"), "{shown}");
    }
}
