//! The retry state of one retried thing: a batch, the InitProducerId, the metadata
//! lookup, the transactional request at the head of its queue. Each counts its failed
//! attempts and may not go again before its backoff has passed (Java keeps the same
//! pair per `ProducerBatch`, `attempts` and the backoff from `lastAttemptMs`, and per
//! `TxnRequestHandler`; the metadata lookup's is KIP-580's). One type for all of them,
//! so the rule "a failure schedules the next attempt, a success forgets the failures"
//! is written once.

use crate::backoff::Backoff;
use crate::types::Timestamp;

/// Failed attempts so far and the earliest time of the next one.
///
/// Invariant: `not_before` is `Some` only after a failure (`failures > 0`) or an
/// attempt never sent ([`Retry::unsent`]); a success resets both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Retry {
    /// Attempts that failed and were (or will be) retried (Java's `attempts`).
    failures: u32,
    /// The next attempt waits until then; `None`: it may go at once.
    not_before: Option<Timestamp>,
}

impl Retry {
    /// No attempt has failed.
    pub(crate) const fn new() -> Self {
        Retry {
            failures: 0,
            not_before: None,
        }
    }

    /// `failures` failed attempts, the next free to go at once: a split batch's pieces
    /// carry their parent's count, so `retries` still bounds them.
    pub(crate) const fn with_failures(failures: u32) -> Self {
        Retry {
            failures,
            not_before: None,
        }
    }

    /// Failed attempts so far.
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }

    /// An attempt failed at `now`: the next one waits for the backoff after this many
    /// failures (`retry.backoff.ms`, doubling, capped at `retry.backoff.max.ms`,
    /// jittered). Returns when it may go.
    pub(crate) fn failed(&mut self, backoff: &mut Backoff, now: Timestamp) -> Timestamp {
        self.failures = self.failures.saturating_add(1);
        let at = now + backoff.delay(self.failures);
        self.not_before = Some(at);
        self.check();
        at
    }

    /// An attempt failed, and the next may go at once: a batch whose leader moved is
    /// retried without a backoff (KIP-951; Java's `RecordAccumulator.shouldBackoff`
    /// looks at the leader epoch, not at the failure count).
    pub(crate) fn failed_retry_at_once(&mut self) {
        self.failures = self.failures.saturating_add(1);
        self.not_before = None;
        self.check();
    }

    /// An attempt was never sent (its connection could not be opened, or its broker's
    /// address is unknown): no failure is counted, and the next attempt waits the first
    /// step of the backoff (`retry.backoff.ms`, not doubled), which paces the lookup of
    /// the leader it waits for as Java's metadata refresh backoff does
    /// (`Metadata.refreshBackoffMs`). Returns when it may go.
    pub(crate) fn unsent(&mut self, backoff: &mut Backoff, now: Timestamp) -> Timestamp {
        let at = now + backoff.delay(1);
        self.not_before = Some(at);
        at
    }

    /// An attempt succeeded: the failures are forgotten.
    pub(crate) fn succeeded(&mut self) {
        *self = Retry::new();
    }

    /// The backoff is dropped and the failures kept: the request it held back is gone
    /// (a forced close cleared its queue).
    pub(crate) fn cancel_wait(&mut self) {
        self.not_before = None;
    }

    /// Whether the next attempt must still wait at `now`.
    pub(crate) fn waits_at(&self, now: Timestamp) -> bool {
        self.not_before.is_some_and(|at| at > now)
    }

    /// The next attempt's time if it is still ahead of `now` (a timer to set).
    pub(crate) fn deadline_after(&self, now: Timestamp) -> Option<Timestamp> {
        self.not_before.filter(|&at| at > now)
    }

    /// When the next attempt may go, if a failure set a time (passed or not).
    pub(crate) fn not_before(&self) -> Option<Timestamp> {
        self.not_before
    }

    fn check(&self) {
        debug_assert!(
            self.not_before.is_none() || self.failures > 0,
            "a retry waits only after a failure (or a never-sent attempt)"
        );
    }
}

#[cfg(test)]
mod tests {
    use core::time::Duration;

    use super::*;

    fn backoff() -> Backoff {
        Backoff::without_jitter(Duration::from_millis(100), Duration::from_millis(1_000))
    }

    #[test]
    fn a_failure_schedules_the_next_attempt_and_a_success_forgets_it() {
        let (mut r, mut b) = (Retry::new(), backoff());
        let now = Timestamp::from_millis(1_000);
        assert!(!r.waits_at(now));
        assert_eq!(r.failed(&mut b, now), Timestamp::from_millis(1_100));
        assert_eq!(r.failed(&mut b, now), Timestamp::from_millis(1_200));
        assert_eq!(r.failures(), 2);
        assert!(r.waits_at(Timestamp::from_millis(1_199)));
        assert!(!r.waits_at(Timestamp::from_millis(1_200)));
        assert_eq!(r.deadline_after(now), Some(Timestamp::from_millis(1_200)));
        assert_eq!(r.deadline_after(Timestamp::from_millis(1_200)), None);
        r.succeeded();
        assert_eq!(r, Retry::new());
    }

    #[test]
    fn a_retry_at_once_counts_the_failure_without_a_wait() {
        let (mut r, mut b) = (Retry::new(), backoff());
        r.failed(&mut b, Timestamp::from_millis(0));
        r.failed_retry_at_once();
        assert_eq!(r, Retry::with_failures(2));
        r.failed(&mut b, Timestamp::from_millis(0));
        r.cancel_wait();
        assert_eq!(r, Retry::with_failures(3));
    }

    #[test]
    fn an_unsent_attempt_waits_the_first_step_and_counts_no_failure() {
        let (mut r, mut b) = (Retry::new(), backoff());
        let now = Timestamp::from_millis(1_000);
        assert_eq!(r.unsent(&mut b, now), Timestamp::from_millis(1_100));
        assert_eq!(r.unsent(&mut b, now), Timestamp::from_millis(1_100));
        assert_eq!(r.failures(), 0);
        assert!(r.waits_at(Timestamp::from_millis(1_099)));
    }
}
