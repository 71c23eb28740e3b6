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
