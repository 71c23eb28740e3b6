//! `connections.max.idle.ms`: a ready connection with nothing in flight, nothing queued
//! and no bytes moved for that long is closed (Java's `Selector` with its
//! `IdleExpiryManager`, which the producer's `NetworkClient` uses with a default of nine
//! minutes). Unlike Java's, one with requests in flight is never closed for idleness:
//! its answers are the core's to wait for, under `request.timeout.ms`. The next request
//! for its broker opens a new one.

use kacrab_idempotence::{Producer, Timestamp};

use super::{Conn, ConnState, Network};
use crate::output::{CloseReason, ConnId};

impl Network {
    /// When the earliest idle connection is to be closed, if any is idle.
    pub(super) fn idle_deadline(&self) -> Option<Timestamp> {
        let max_idle = self.max_idle?;
        self.conns
            .iter()
            .filter(|c| is_quiet(c))
            .map(|c| c.last_active + max_idle)
            .min()
    }

    /// Closes every connection idle for `connections.max.idle.ms` at `now`.
    pub(super) fn close_idle(&mut self, core: &mut Producer, now: Timestamp) {
        let Some(max_idle) = self.max_idle else {
            return;
        };
        let idle: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|c| is_quiet(c) && c.last_active + max_idle <= now)
            .map(|c| c.id)
            .collect();
        for conn in idle {
            self.drop_conn(core, conn, now, Some(CloseReason::Idle));
        }
    }
}

/// Whether `c` may be closed for idleness once quiet long enough: ready, with nothing
/// in flight (the core's or the session's own requests, or an `acks=0` request not yet
/// reported written) and nothing queued.
fn is_quiet(c: &Conn) -> bool {
    c.state == ConnState::Ready
        && c.wire.in_flight_count() == 0
        && c.queued.is_empty()
        && c.deadlines.is_empty()
        && c.writes.is_empty()
}
