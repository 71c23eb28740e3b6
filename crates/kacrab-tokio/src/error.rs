//! The producer's errors: [`Error`] for building one. A record's outcome is the
//! session's [`kacrab_driver::ProduceError`], re-exported as it is (the blocking driver
//! reports the same type), with its `Terminated` for an outcome lost with the driver
//! task.

use kacrab_driver::SessionConfigError;

/// Why a [`Producer`](crate::Producer) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration was refused: an unknown, malformed or out-of-range key,
    /// conflicting keys, or no `bootstrap.servers`.
    #[error(transparent)]
    Config(#[from] SessionConfigError),
    /// The producer was built outside a Tokio runtime: it spawns its tasks on the current
    /// one.
    #[error("a kacrab-tokio Producer must be built inside a Tokio runtime")]
    NoRuntime,
    /// No host of `bootstrap.servers` resolved (plain TCP only: a custom
    /// [`Connector`](crate::Connector) resolves its own names). Java's producer
    /// constructor fails the same way.
    #[error(transparent)]
    UnresolvableBootstrap(#[from] kacrab_driver::UnresolvableBootstrap),
    /// The OIDC token fetcher could not be set up (feature `oidc`).
    #[cfg(feature = "oidc")]
    #[error(transparent)]
    Oidc(crate::oidc::OidcError),
}
