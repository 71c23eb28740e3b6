//! Kafka's exponential retry backoff (`ExponentialBackoff` as the `RecordAccumulator`
//! configures it), with the jitter drawn from a seeded generator so runs are reproducible.
//!
//! For `attempts` previous attempts the backoff is `initial * 2^(attempts - 1)` (Kafka's
//! `RETRY_BACKOFF_EXP_BASE` is 2), capped at `max`, then multiplied by a random factor in
//! `[0.8, 1.2)` and capped at `max` again. When `retry.backoff.ms >= retry.backoff.max.ms`
//! it is the constant `retry.backoff.max.ms`, without jitter, as in Kafka.

use core::time::Duration;

use crate::config::ProducerConfig;

/// Kafka's jitter (`RETRY_BACKOFF_JITTER`, 0.2), in percent: the backoff is multiplied by a
/// factor in `[1 - 0.2, 1 + 0.2)`.
pub const JITTER_PERCENT: u32 = 20;

/// A retry backoff policy and the random generator for its jitter.
///
/// The same parameters, seed and sequence of [`Backoff::delay`] calls give the same delays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first retry's backoff, never above `max`.
    initial: Duration,
    max: Duration,
    jitter_percent: u32,
    rng: SplitMix64,
}

impl Backoff {
    /// Kafka's policy: starts at `initial`, doubles per attempt up to `max`, ±20 % jitter
    /// drawn from a generator seeded with `seed`. An `initial` above `max` is lowered to it.
    #[must_use]
    pub fn new(initial: Duration, max: Duration, seed: u64) -> Self {
        Self {
            initial: initial.min(max),
            max,
            jitter_percent: JITTER_PERCENT,
            rng: SplitMix64(seed),
        }
    }

    /// The same policy with no jitter, so [`Backoff::delay`] is a pure function of `attempts`.
    #[must_use]
    pub fn without_jitter(initial: Duration, max: Duration) -> Self {
        Self {
            jitter_percent: 0,
            ..Self::new(initial, max, 0)
        }
    }

    /// Kafka's policy for `retry.backoff.ms`, `retry.backoff.max.ms` and `kacrab.jitter.seed`.
    #[must_use]
    pub fn from_config(config: &ProducerConfig) -> Self {
        Self::new(
            config.retry_backoff(),
            config.retry_backoff_max(),
            config.jitter_seed(),
        )
    }

    /// The first retry's backoff before jitter: `min(retry.backoff.ms, retry.backoff.max.ms)`.
    #[must_use]
    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The largest backoff this policy returns.
    #[must_use]
    pub fn max(&self) -> Duration {
        self.max
    }

    /// How long to wait before the next attempt, after `attempts` previous attempts.
    ///
    /// `attempts == 0` is a first attempt, which does not wait (Kafka only backs off a
    /// batch whose `attempts() > 0`); `attempts == 1` gives about `initial`, each further
    /// attempt about doubles it, and the result never exceeds [`Backoff::max`]. This is
    /// Kafka's `ExponentialBackoff.backoff(attempts - 1)`, computed in whole microseconds.
    ///
    /// Each call that applies jitter draws one number from the generator; constant results
    /// (no previous attempt, no growth room, or no jitter) draw none.
    #[must_use]
    pub fn delay(&mut self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        // Kafka's `expMax == 0`: no room to grow, a constant backoff without jitter.
        if self.max <= self.initial {
            return self.initial;
        }
        let max = micros(self.max);
        let exponent = attempts - 1;
        let initial = micros(self.initial);
        // `initial * 2^exponent`, capped; past 2^63 any non-zero initial exceeds the cap.
        let term = match exponent {
            0..=63 => (initial << exponent).min(max),
            _ if initial == 0 => 0,
            _ => max,
        };
        if self.jitter_percent == 0 || term == 0 {
            return from_micros(term);
        }
        // term * [1 - j, 1 + j): the low end plus a uniform draw over a 2j-wide span.
        let j = u128::from(self.jitter_percent);
        let low = term * (100 - j) / 100;
        let span = term * 2 * j / 100;
        let offset = (span * u128::from(self.rng.next())) >> 64;
        from_micros((low + offset).min(max))
    }
}

/// `d` in whole microseconds, saturating at `u64::MAX`, widened for overflow-free arithmetic.
fn micros(d: Duration) -> u128 {
    d.as_micros().min(u128::from(u64::MAX))
}

fn from_micros(us: u128) -> Duration {
    Duration::from_micros(u64::try_from(us).unwrap_or(u64::MAX))
}

/// `SplitMix64`: a tiny, fast, well-distributed generator; any seed (including 0) is fine.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Mirrors `ExponentialBackoffTest.testExponentialBackoffWithoutJitter`.
    #[test]
    fn exponential_backoff_without_jitter() {
        let mut b = Backoff::without_jitter(ms(100), ms(1_000));
        let got: Vec<_> = (0..8).map(|a| b.delay(a)).collect();
        let want = [0, 100, 200, 400, 800, 1_000, 1_000, 1_000].map(ms);
        assert_eq!(got, want);
        assert_eq!(b.delay(64), ms(1_000));
        assert_eq!(b.delay(65), ms(1_000));
        assert_eq!(b.delay(u32::MAX), ms(1_000));
    }

    /// Mirrors `ExponentialBackoffTest.testExponentialBackoff`: every delay lies within
    /// ±20 % of the exponential term and never above the maximum.
    #[test]
    fn exponential_backoff_stays_within_jitter_bounds() {
        for seed in 0..200 {
            let mut b = Backoff::new(ms(100), ms(2_000), seed);
            for attempts in 1..12_u32 {
                let term = (100_u64 << (attempts - 1)).min(2_000) * 1_000;
                let got = u64::try_from(b.delay(attempts).as_micros()).unwrap();
                assert!(
                    got >= term * 8 / 10,
                    "{seed} {attempts}: {got} < 0.8 * {term}"
                );
                assert!(
                    got < term * 12 / 10,
                    "{seed} {attempts}: {got} >= 1.2 * {term}"
                );
                assert!(got <= 2_000_000, "{seed} {attempts}: {got} above max");
            }
        }
    }

    /// Mirrors `RecordAccumulatorTest.testExponentialRetryBackoff` (retry.backoff.ms 100,
    /// retry.backoff.max.ms 1000): the first retry waits 80..120 ms, the second 160..240 ms,
    /// and once capped the wait is 800..=1000 ms.
    #[test]
    fn exponential_retry_backoff() {
        let config = ProducerConfig::default();
        let mut b = Backoff::from_config(&config);
        assert_eq!((b.initial(), b.max()), (ms(100), ms(1_000)));
        for _ in 0..100 {
            assert!((ms(80)..ms(120)).contains(&b.delay(1)));
            assert!((ms(160)..ms(240)).contains(&b.delay(2)));
            assert!((ms(800)..=ms(1_000)).contains(&b.delay(10)));
        }
    }

    /// The jitter's generator is SplitMix64 itself (the reference implementation's
    /// outputs for seed 1234567), so a given `jitter_seed` gives the same delays in every
    /// build and on every platform.
    #[test]
    fn jitter_generator_is_splitmix64() {
        let mut g = SplitMix64(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| g.next()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    #[test]
    fn jitter_spreads_both_ways() {
        let mut b = Backoff::new(ms(100), ms(10_000), 7);
        let delays: Vec<_> = (0..1_000).map(|_| b.delay(1)).collect();
        assert!(delays.iter().any(|d| *d < ms(90)));
        assert!(delays.iter().any(|d| *d > ms(110)));
    }

    #[test]
    fn deterministic_for_a_seed() {
        let run = |seed| {
            let mut b = Backoff::new(ms(100), ms(1_000), seed);
            (1..50).map(|a| b.delay(a % 7)).collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
        let config = ProducerConfig::builder().jitter_seed(42).build().unwrap();
        let mut b = Backoff::from_config(&config);
        let from_config: Vec<_> = (1..50).map(|a| b.delay(a % 7)).collect();
        assert_eq!(from_config, run(42));
    }

    /// Kafka: a `retry.backoff.ms` at or above `retry.backoff.max.ms` gives the constant
    /// `retry.backoff.max.ms`, without jitter.
    #[test]
    fn initial_at_or_above_max_is_constant() {
        let mut b = Backoff::new(ms(500), ms(200), 1);
        assert_eq!(b.initial(), ms(200));
        assert!((1..20).all(|a| b.delay(a) == ms(200)));
        let mut b = Backoff::new(ms(300), ms(300), 1);
        assert!((1..20).all(|a| b.delay(a) == ms(300)));
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut b = Backoff::new(Duration::ZERO, ms(1_000), 3);
        assert!((0..100).all(|a| b.delay(a) == Duration::ZERO));
        let mut b = Backoff::new(Duration::from_secs(u64::MAX / 2), Duration::MAX, 3);
        for attempts in [1, 2, 63, 64, 65, u32::MAX] {
            assert!(b.delay(attempts) <= Duration::MAX);
        }
        let mut b = Backoff::new(Duration::from_nanos(1), ms(1), 3);
        assert_eq!(b.delay(1), Duration::ZERO);
        assert!(b.delay(20) <= ms(1));
    }
}
