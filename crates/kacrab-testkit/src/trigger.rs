//! When an injected fault fires: shared by the FakeBroker hooks ([`crate::Cluster`]) and the
//! lying proxy ([`crate::Proxy`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which of the requests a fault watches it fires on.
///
/// Built with [`Trigger::every`], [`Trigger::always`] or [`Trigger::chance`], then narrowed
/// with [`Trigger::after`] and [`Trigger::times`]:
///
/// ```
/// use kacrab_testkit::Trigger;
/// // Let 10 matching requests through, then fire on every third one, 50 times at most.
/// let t = Trigger::every(3).after(10).times(50);
/// // Fire on 5% of the matching requests (seeded, so reproducible), 100 times at most.
/// let u = Trigger::chance(0.05, 7).times(100);
/// # let _ = (t, u);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    skip: u64,
    every: u64,
    probability: Option<f64>,
    seed: u64,
    times: Option<u64>,
}

impl Trigger {
    /// Fires on every matching request.
    pub fn always() -> Self {
        Self::every(1)
    }

    /// Fires on every `n`-th matching request (the first, the `n+1`-th, ...); `n` of 0 is 1.
    pub fn every(n: u64) -> Self {
        Self {
            skip: 0,
            every: n.max(1),
            probability: None,
            seed: 0,
            times: None,
        }
    }

    /// Fires on each matching request with `probability` (0.0..=1.0), drawn from an RNG
    /// seeded with `seed`: the same request stream gives the same faults.
    pub fn chance(probability: f64, seed: u64) -> Self {
        Self {
            probability: Some(probability.clamp(0.0, 1.0)),
            seed,
            ..Self::every(1)
        }
    }

    /// Lets the first `n` matching requests through untouched.
    pub fn after(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }

    /// Fires at most `n` times.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    pub(crate) fn start(self) -> TriggerState {
        TriggerState {
            rng: SplitMix64(self.seed ^ 0x9E37_79B9_7F4A_7C15),
            trigger: self,
            seen: 0,
            fired: Fired::default(),
        }
    }
}

/// A live [`Trigger`]: counts what it has seen and fired.
#[derive(Debug)]
pub(crate) struct TriggerState {
    trigger: Trigger,
    rng: SplitMix64,
    seen: u64,
    pub(crate) fired: Fired,
}

impl TriggerState {
    /// Whether the fault fires on this matching request (counts it if so).
    pub(crate) fn fire(&mut self) -> bool {
        let n = self.seen;
        self.seen += 1;
        let t = &self.trigger;
        if self
            .trigger
            .times
            .is_some_and(|max| self.fired.count() >= max)
            || n < t.skip
        {
            return false;
        }
        let hit = match t.probability {
            Some(p) => self.rng.unit() < p,
            None => (n - t.skip).is_multiple_of(t.every),
        };
        if hit {
            self.fired.0.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// Whether this trigger can still fire.
    pub(crate) fn exhausted(&self) -> bool {
        self.trigger
            .times
            .is_some_and(|max| self.fired.count() >= max)
    }
}

/// How many times an injected fault has fired so far (shared, cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct Fired(Arc<AtomicU64>);

impl Fired {
    /// Faults injected so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A small deterministic RNG (SplitMix64): enough for fault draws, no dependency.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fires(t: Trigger, n: usize) -> Vec<usize> {
        let mut s = t.start();
        (0..n).filter(|_| s.fire()).collect()
    }

    #[test]
    fn every_after_times() {
        assert_eq!(
            fires(Trigger::every(3).after(2).times(3), 20),
            vec![2, 5, 8]
        );
        assert_eq!(fires(Trigger::always().times(2), 5), vec![0, 1]);
        assert_eq!(fires(Trigger::every(0), 3), vec![0, 1, 2]);
    }

    #[test]
    fn chance_is_seeded_and_bounded() {
        let a = fires(Trigger::chance(0.2, 42), 10_000);
        assert_eq!(a, fires(Trigger::chance(0.2, 42), 10_000));
        assert!((1_700..2_300).contains(&a.len()), "{}", a.len());
        assert_eq!(fires(Trigger::chance(1.0, 1).times(7), 100).len(), 7);
        assert!(fires(Trigger::chance(0.0, 1), 100).is_empty());
    }
}
