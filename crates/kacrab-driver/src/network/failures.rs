//! The last connection error of every broker address whose latest connection failed:
//! logged once at WARN when an address starts failing (its first failure, or the first
//! after it was last ready), each repeat at DEBUG, and named by a metadata wait that
//! times out. An address leaves the set when a connection to it becomes ready.
//! Java's `NetworkClient` logs each failed connection with its cause ("Connection to
//! node ... could not be established. Node may not be available.").

use std::collections::BTreeMap;

use super::Network;
use crate::connection_error::{ConnectionError, ConnectionFailures};
use crate::output::ConnId;

/// Whether a failure is its address's first since it was last ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Streak {
    /// The address was not failing: logged at WARN.
    First,
    /// It was already failing: logged at DEBUG.
    Repeat,
}

/// The last connection error of each failing address.
#[derive(Debug, Default)]
pub(super) struct LastErrors(BTreeMap<String, ConnectionError>);

impl LastErrors {
    /// `addr` failed with `error`: replaces its last error.
    fn record(&mut self, addr: &str, error: ConnectionError) -> Streak {
        match self.0.insert(addr.to_owned(), error) {
            None => Streak::First,
            Some(_) => Streak::Repeat,
        }
    }

    /// A connection to `addr` became ready: it is no longer failing.
    pub(super) fn ready(&mut self, addr: &str) {
        self.0.remove(addr);
    }
}

impl Network {
    /// Connection `conn` failed with `error` (the driver's cause, or the session's own
    /// setup timeout): remembered as its address's last error, and logged.
    pub(super) fn record_failure(&mut self, conn: ConnId, error: &ConnectionError) {
        let Some(c) = self.conns.iter().find(|c| c.id == conn) else {
            return;
        };
        let (node, addr) = (c.node, c.addr.clone());
        let streak = self.last_errors.record(&addr, error.clone());
        crate::trace::connection_failed(conn, node, &addr, error, streak);
    }

    /// Connection `conn` did not open within its setup timeout: a failure like one the
    /// driver reports (a blackholed address never answers with "refused").
    pub(super) fn record_setup_timeout(&mut self, conn: ConnId) {
        let reason = crate::output::CloseReason::ConnectTimeout.to_string();
        let error = ConnectionError::new(std::io::ErrorKind::TimedOut, reason);
        self.record_failure(conn, &error);
    }

    /// The last connection error of each address still failing, ordered by address.
    pub(crate) fn connection_failures(&self) -> ConnectionFailures {
        ConnectionFailures::new(
            self.last_errors
                .0
                .iter()
                .map(|(a, e)| (a.clone(), e.clone()))
                .collect(),
        )
    }
}
