//! Why a connection to a broker could not be opened or was lost, as the driver saw it
//! (the socket's `io::Error`: refused, reset, timed out, unresolvable, ...), and the
//! last such cause of every address still failing, which a metadata wait that times
//! out names. Java's `NetworkClient` logs the cause of each failed connection
//! ("Connection to node ... could not be established"); a driver that dropped it left
//! an operator nothing but "not present in metadata" to go on.

use std::fmt;
use std::io;

/// The cause of a failed or lost connection: the `io::Error`'s kind and its message
/// (for an OS error, the OS's text and code, e.g. "Connection refused (os error 111)").
/// It names the failure only: a driver must not put credentials in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionError {
    kind: io::ErrorKind,
    message: String,
}

impl ConnectionError {
    /// A cause of `kind` described by `message`.
    #[must_use]
    pub fn new(kind: io::ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The broker ended the stream (a read returned end of file): no `io::Error`.
    #[must_use]
    pub fn closed_by_peer() -> Self {
        Self::new(io::ErrorKind::UnexpectedEof, "closed by the broker")
    }

    /// The kind of the `io::Error` (`ConnectionRefused`, `ConnectionReset`, ...).
    #[must_use]
    pub fn kind(&self) -> io::ErrorKind {
        self.kind
    }

    /// The error's message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<&io::Error> for ConnectionError {
    fn from(e: &io::Error) -> Self {
        Self::new(e.kind(), e.to_string())
    }
}

impl From<io::Error> for ConnectionError {
    fn from(e: io::Error) -> Self {
        Self::from(&e)
    }
}

impl fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectionError {}

/// The last connection error of each broker address whose latest connection failed
/// (none since became ready), by address. Displayed as `; addr: cause` per address,
/// so that it reads as the tail of the error it is part of (empty when none failed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionFailures(Vec<(String, ConnectionError)>);

impl ConnectionFailures {
    pub(crate) fn new(failures: Vec<(String, ConnectionError)>) -> Self {
        Self(failures)
    }

    /// Each failing address with its last connection error, ordered by address.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ConnectionError)> {
        self.0.iter().map(|(a, e)| (a.as_str(), e))
    }

    /// Whether no address was failing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for ConnectionFailures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (addr, error) in &self.0 {
            write!(f, "; {addr}: {error}")?;
        }
        Ok(())
    }
}

/// No host of `bootstrap.servers` resolved to an address: the producer cannot reach
/// any broker, and says so when it is built rather than after `max.block.ms`. Java's
/// `ClientUtils.parseAndValidateAddresses` throws a `ConfigException` ("No resolvable
/// bootstrap urls given in bootstrap.servers") from the producer's constructor; a host
/// that fails while another resolves is skipped there too (and here: the session dials
/// it, and its connect error names it). The session does no I/O: each driver resolves
/// the list once, with [`UnresolvableBootstrap::check`], in its constructor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnresolvableBootstrap(Vec<(String, String)>);

impl UnresolvableBootstrap {
    /// Resolves each of `servers` (`host:port`) with `resolve`, which returns how many
    /// addresses it found; fails naming every server and the resolver's message when
    /// none resolves to at least one address.
    ///
    /// # Errors
    /// When no server resolves: each with why (its resolver error, or "no address").
    pub fn check(
        servers: &[String],
        mut resolve: impl FnMut(&str) -> io::Result<usize>,
    ) -> Result<(), Self> {
        let mut failed = Vec::with_capacity(servers.len());
        for server in servers {
            match resolve(server) {
                Ok(n) if n > 0 => return Ok(()),
                Ok(_) => failed.push((server.clone(), "resolved to no address".to_owned())),
                Err(e) => failed.push((server.clone(), e.to_string())),
            }
        }
        Err(Self(failed))
    }

    /// Each bootstrap server with why it did not resolve.
    pub fn servers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(s, e)| (s.as_str(), e.as_str()))
    }
}

impl fmt::Display for UnresolvableBootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("No resolvable bootstrap urls given in bootstrap.servers")?;
        for (i, (server, error)) in self.0.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}{server}: {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnresolvableBootstrap {}

#[cfg(test)]
mod tests {
    use super::*;

    /// One server that resolves is enough (Java skips the others with a warning);
    /// none resolving names each with its resolver's message.
    #[test]
    fn bootstrap_fails_only_when_no_server_resolves() {
        let servers = ["bad:9092".to_owned(), "good:9092".to_owned()];
        let resolve = |s: &str| match s {
            "good:9092" => Ok(1),
            _ => Err(io::Error::other("Name or service not known")),
        };
        assert_eq!(UnresolvableBootstrap::check(&servers, resolve), Ok(()));
        let err = UnresolvableBootstrap::check(&servers[..1], resolve).unwrap_err();
        assert_eq!(
            err.to_string(),
            "No resolvable bootstrap urls given in bootstrap.servers: bad:9092: Name or service not known"
        );
        let none = UnresolvableBootstrap::check(&servers[1..], |_| Ok(0)).unwrap_err();
        assert_eq!(none.servers().count(), 1);
    }
}
