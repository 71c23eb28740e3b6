//! The faults of a request's life before and after its answer, drawn for the session
//! driver: a dial refused (as while a broker restarts), a connection setup slower than
//! `request.timeout.ms` with requests queued behind it, and a coordinator's answer held
//! past `request.timeout.ms` (it arrives, if its connection is still open, after the
//! client timed the request out and retried). They draw from a random stream of their
//! own, so enabling them leaves every other fault's draws, and so every recorded seed,
//! unchanged.

use std::time::Duration;

use super::World;
use crate::faults::FaultKind;
use crate::rng::Rng;

/// The stream these faults draw from (see the module documentation).
pub(super) fn setup_rng(seed: u64) -> Rng {
    Rng::stream(seed, 11)
}

/// What happens to a session's dial of a live broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectDraw {
    /// The connection opens after the usual latency.
    Accept,
    /// The dial is refused.
    Refuse,
    /// The connection opens after this long: longer than `request.timeout.ms`,
    /// shorter than the session's `socket.connection.setup.timeout.ms` (10 s).
    Slow(Duration),
}

impl World {
    /// Draws the fate of a dial to a live broker (counted as a fault unless accepted).
    pub(crate) fn draw_connect(&mut self) -> ConnectDraw {
        if self.setup_rng.chance(self.rates.connect_refused) {
            self.faults.add(FaultKind::ConnectRefused);
            return ConnectDraw::Refuse;
        }
        if self.setup_rng.chance(self.rates.slow_connection_setup) {
            self.faults.add(FaultKind::SlowConnectionSetup);
            return ConnectDraw::Slow(self.past_request_timeout());
        }
        ConnectDraw::Accept
    }

    /// Draws whether a coordinator's answer is held past `request.timeout.ms`, and by
    /// how much more than its latency (counted as a fault when it is).
    pub(crate) fn draw_late_coordinator_answer(&mut self) -> Option<Duration> {
        if !self.setup_rng.chance(self.rates.late_coordinator_answer) {
            return None;
        }
        self.faults.add(FaultKind::LateCoordinatorAnswer);
        Some(self.past_request_timeout())
    }

    /// `request.timeout.ms` plus up to as much again, capped below the session's
    /// default connection setup timeout.
    fn past_request_timeout(&mut self) -> Duration {
        let timeout = self.config.producer.request_timeout();
        let micros = (timeout.as_micros() as u64).max(1);
        let past = timeout + Duration::from_micros(self.setup_rng.range(1, micros));
        past.min(Duration::from_millis(9_000))
    }
}
