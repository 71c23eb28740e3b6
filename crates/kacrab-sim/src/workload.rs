//! The application's send schedule: bursts of records at random intervals, with
//! optional idle gaps, drawn from the application's own random stream. The cluster
//! asks it when the next burst is due and how large it is, sends, and tells it what
//! was sent. (The transactional script is the cluster's: it runs the step loop.)

use std::time::Duration;

use kacrab_idempotence::Timestamp;

use crate::rng::Rng;

/// An application sending records on a schedule, drawn from its own random stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Records still to send.
    pub remaining: u64,
    /// Each send is a burst of `1..=burst_max` records.
    pub burst_max: u32,
    /// The mean time between bursts (drawn from `0..=2*interval`).
    pub interval: Duration,
    /// The next burst.
    pub next_at: Timestamp,
    /// Idle gaps (see [`Cluster::set_idle_gaps`](crate::Cluster::set_idle_gaps)): how
    /// long each lasts (zero: none).
    pub idle_gap: Duration,
    /// A gap starts each time this many records were sent since the last one.
    pub gap_every: u64,
    /// Records sent since the last gap.
    pub since_gap: u64,
    /// The end of the gap under way, if one is.
    pub quiet_until: Option<Timestamp>,
}

/// How far an idle gap keeps the application quiet: only the first partition gets a
/// record, this often.
const GAP_TRICKLE: Duration = Duration::from_secs(5);

impl Workload {
    /// `records` records in bursts of `1..=burst_max`, about `interval` apart, the
    /// first due at `now`.
    pub(crate) fn new(records: u64, burst_max: u32, interval: Duration, now: Timestamp) -> Self {
        Self {
            remaining: records,
            burst_max: burst_max.max(1),
            interval,
            next_at: now,
            idle_gap: Duration::ZERO,
            gap_every: 0,
            since_gap: 0,
            quiet_until: None,
        }
    }

    /// When the next burst is due, if records remain.
    pub(crate) fn due(&self) -> Option<Timestamp> {
        (self.remaining > 0).then_some(self.next_at)
    }

    /// The end of the idle gap under way at `now`, if one is (a gap that ended is
    /// cleared).
    pub(crate) fn gap_until(&mut self, now: Timestamp) -> Option<Timestamp> {
        match self.quiet_until {
            Some(until) if now < until => Some(until),
            Some(_) => {
                self.quiet_until = None;
                None
            }
            None => None,
        }
    }

    /// During the gap ending at `until`, the first partition got a record at `now`
    /// (`sent`) or not.
    pub(crate) fn trickled(&mut self, now: Timestamp, until: Timestamp, sent: bool) {
        self.remaining -= u64::from(sent).min(self.remaining);
        self.next_at = (now + GAP_TRICKLE).min(until);
    }

    /// How many records the next burst sends.
    pub(crate) fn draw_burst(&self, rng: &mut Rng) -> u64 {
        rng.range(1, u64::from(self.burst_max)).min(self.remaining)
    }

    /// A burst at `now` sent `sent` records; `buffer_full` when it stopped on a full
    /// buffer (the next one comes a millisecond later). Draws when the next burst is
    /// due and starts an idle gap when one is due.
    pub(crate) fn after_burst(
        &mut self,
        now: Timestamp,
        sent: u64,
        buffer_full: bool,
        rng: &mut Rng,
    ) {
        let gap = if buffer_full {
            Duration::from_millis(1)
        } else {
            let max = self.interval.as_micros() as u64 * 2;
            Duration::from_micros(rng.range(0, max))
        };
        self.remaining -= sent;
        self.next_at = now + gap;
        self.since_gap += sent;
        if self.gap_every > 0 && !self.idle_gap.is_zero() && self.since_gap >= self.gap_every {
            self.since_gap = 0;
            self.quiet_until = Some(now + self.idle_gap);
        }
    }
}
