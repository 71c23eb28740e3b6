//! When the session publishes its snapshot through the `metrics` facade on its own
//! (feature `metrics`, every `kacrab.metrics.publish.interval.ms`).
//!
//! Kafka's reporters read a producer's metrics whenever they like; a `metrics` facade
//! exporter only serves values pushed to it. The session therefore pushes on a timer of
//! its own, part of its `poll_timeout` / `handle_timeout` like every other deadline
//! (time is an input: no clock here), so a driver publishes without any code of the
//! application's. The first publication is one interval after the session starts; a
//! driver that wakes late publishes once and keeps the grid, or, if it missed a whole
//! interval, starts a new grid from then (no burst of stale publications).

use std::time::Duration;

use kacrab_idempotence::Timestamp;

/// The publishing deadline; unarmed without the `metrics` feature or with interval 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PublishTimer {
    /// The interval and the next deadline; `None`: never due.
    armed: Option<(Duration, Timestamp)>,
}

impl PublishTimer {
    /// A timer first due one `interval` after `now` (`None`: disabled).
    pub(crate) fn new(interval: Option<Duration>, now: Timestamp) -> Self {
        let interval = interval.filter(|_| cfg!(feature = "metrics"));
        debug_assert!(interval.is_none_or(|i| !i.is_zero()), "0 means disabled");
        Self {
            armed: interval.map(|i| (i, now + i)),
        }
    }

    /// The next publication, if any.
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        self.armed.map(|(_, next)| next)
    }

    /// Whether a publication is due at `now`; if so the deadline moves past `now`.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn take_due(&mut self, now: Timestamp) -> bool {
        let Some((interval, next)) = &mut self.armed else {
            return false;
        };
        if *next > now {
            return false;
        }
        *next = if now.saturating_duration_since(*next) >= *interval {
            now + *interval
        } else {
            *next + *interval
        };
        debug_assert!(*next > now);
        true
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use super::*;

    #[test]
    fn due_at_each_interval_and_a_late_wake_does_not_burst() {
        let start = Timestamp::from_millis(5);
        let mut t = PublishTimer::new(Some(Duration::from_millis(100)), start);
        assert_eq!(t.poll_timeout(), Some(Timestamp::from_millis(105)));
        assert!(!t.take_due(Timestamp::from_millis(104)));
        assert!(t.take_due(Timestamp::from_millis(105)));
        assert_eq!(t.poll_timeout(), Some(Timestamp::from_millis(205)));
        // Late by less than an interval: the grid is kept.
        assert!(t.take_due(Timestamp::from_millis(250)));
        assert_eq!(t.poll_timeout(), Some(Timestamp::from_millis(305)));
        // Late by more: one publication, then a new grid.
        assert!(t.take_due(Timestamp::from_millis(1000)));
        assert!(!t.take_due(Timestamp::from_millis(1000)));
        assert_eq!(t.poll_timeout(), Some(Timestamp::from_millis(1100)));
    }

    #[test]
    fn disabled_is_never_due() {
        let mut t = PublishTimer::new(None, Timestamp::ZERO);
        assert_eq!(t.poll_timeout(), None);
        assert!(!t.take_due(Timestamp::from_millis(u64::from(u32::MAX))));
    }
}
