//! Kafka's sampled statistics, rule for rule `org.apache.kafka.common.metrics.stats`:
//! `SampledStat` (a ring of `metrics.num.samples` samples, each covering
//! `metrics.sample.window.ms`), and over it `Avg`, `Max`, `WindowedSum`/`WindowedCount`
//! and `Rate`; `CumulativeSum`/`CumulativeCount` for the `-total` metrics; `Meter` pairs a
//! rate with its total. Time is an input, in milliseconds of the driver's clock, as
//! Kafka's `Time.milliseconds()`.

use std::time::Duration;

/// `metrics.sample.window.ms` and `metrics.num.samples` (Kafka's `MetricConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// One sample's span in ms (`timeWindowMs`); at least 1.
    pub(crate) span_ms: u64,
    /// Samples kept (`samples`); at least 1.
    pub(crate) samples: usize,
}

impl Window {
    pub(crate) fn new(span: Duration, samples: u32) -> Self {
        Self {
            span_ms: u64::try_from(span.as_millis()).unwrap_or(u64::MAX).max(1),
            samples: (samples as usize).max(1),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    value: f64,
    events: u64,
    /// When this sample's window began (Kafka's `lastWindowMs`).
    start_ms: u64,
}

/// How a sample folds a recorded value in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fold {
    /// `WindowedSum` (Kafka's `SampledTotal`), and the sums under `Avg`.
    Sum,
    /// `WindowedCount`: each event counts 1.
    Count,
    /// `Max`.
    Max,
}

impl Fold {
    fn initial(self) -> f64 {
        match self {
            Self::Sum | Self::Count => 0.0,
            Self::Max => f64::NEG_INFINITY,
        }
    }
}

/// Kafka's `SampledStat`: the current sample advances when its window is over; samples
/// older than `samples * span` are reset (`purgeObsoleteSamples`) before any measure.
#[derive(Clone, Debug)]
struct Sampled {
    fold: Fold,
    samples: Vec<Sample>,
    current: usize,
}

impl Sampled {
    fn new(fold: Fold) -> Self {
        Self {
            fold,
            samples: Vec::new(),
            current: 0,
        }
    }

    fn fresh(&self, now_ms: u64) -> Sample {
        Sample {
            value: self.fold.initial(),
            events: 0,
            start_ms: now_ms,
        }
    }

    fn record(&mut self, w: Window, value: f64, now_ms: u64) {
        if self.samples.is_empty() {
            self.samples.push(self.fresh(now_ms));
        }
        if now_ms.saturating_sub(self.samples[self.current].start_ms) >= w.span_ms {
            // `advance`: the next slot, new or reset.
            self.current = (self.current + 1) % w.samples;
            let fresh = self.fresh(now_ms);
            if self.current >= self.samples.len() {
                self.samples.push(fresh);
            } else {
                self.samples[self.current] = fresh;
            }
        }
        let s = &mut self.samples[self.current];
        match self.fold {
            Fold::Sum => s.value += value,
            Fold::Count => s.value += 1.0,
            Fold::Max => s.value = s.value.max(value),
        }
        s.events += 1;
    }

    fn purge(&mut self, w: Window, now_ms: u64) {
        let expire = w.span_ms.saturating_mul(w.samples as u64);
        let initial = self.fold.initial();
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.start_ms) >= expire {
                *s = Sample {
                    value: initial,
                    events: 0,
                    start_ms: now_ms,
                };
            }
        }
    }

    /// (combined value, events) after purging.
    fn combine(&mut self, w: Window, now_ms: u64) -> (f64, u64) {
        self.purge(w, now_ms);
        let events = self.samples.iter().map(|s| s.events).sum();
        let value = match self.fold {
            // Folded from +0.0: `Iterator::sum` of no `f64` is -0.0, which a rate
            // without samples would report.
            Fold::Sum | Fold::Count => self.samples.iter().map(|s| s.value).fold(0.0, |a, v| a + v),
            Fold::Max => self
                .samples
                .iter()
                .map(|s| s.value)
                .fold(f64::NEG_INFINITY, f64::max),
        };
        (value, events)
    }

    /// Kafka's `oldest(now)`: creates the first sample if there is none.
    fn oldest_start(&mut self, now_ms: u64) -> u64 {
        if self.samples.is_empty() {
            self.samples.push(self.fresh(now_ms));
        }
        self.samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms)
    }
}

/// Kafka's `Avg`: the sum of the retained samples over their event count; NaN without
/// events.
#[derive(Clone, Debug)]
pub(crate) struct Avg(Sampled);

impl Avg {
    pub(crate) fn new() -> Self {
        Self(Sampled::new(Fold::Sum))
    }
    pub(crate) fn record(&mut self, w: Window, value: f64, now_ms: u64) {
        self.0.record(w, value, now_ms);
    }
    pub(crate) fn measure(&mut self, w: Window, now_ms: u64) -> f64 {
        match self.0.combine(w, now_ms) {
            (_, 0) => f64::NAN,
            (sum, n) => sum / n as f64,
        }
    }
}

/// Kafka's `Max`: the largest value of the retained samples; NaN without events.
#[derive(Clone, Debug)]
pub(crate) struct Max(Sampled);

impl Max {
    pub(crate) fn new() -> Self {
        Self(Sampled::new(Fold::Max))
    }
    pub(crate) fn record(&mut self, w: Window, value: f64, now_ms: u64) {
        self.0.record(w, value, now_ms);
    }
    pub(crate) fn measure(&mut self, w: Window, now_ms: u64) -> f64 {
        match self.0.combine(w, now_ms) {
            (_, 0) => f64::NAN,
            (max, _) => max,
        }
    }
}

/// Kafka's `Rate` (per second) over a `WindowedSum` or a `WindowedCount`.
#[derive(Clone, Debug)]
pub(crate) struct Rate(Sampled);

impl Rate {
    /// A rate of the recorded values' sum.
    pub(crate) fn of_sum() -> Self {
        Self(Sampled::new(Fold::Sum))
    }
    /// A rate of events.
    pub(crate) fn of_count() -> Self {
        Self(Sampled::new(Fold::Count))
    }
    pub(crate) fn record(&mut self, w: Window, value: f64, now_ms: u64) {
        self.0.record(w, value, now_ms);
    }
    /// Kafka's `Rate.measure`: the windowed total over `windowSize` in seconds.
    pub(crate) fn measure(&mut self, w: Window, now_ms: u64) -> f64 {
        let (total, _) = self.0.combine(w, now_ms);
        total / (self.window_size_ms(w, now_ms) as f64 / 1000.0)
    }

    /// Kafka's `Rate.windowSize`: the time since the oldest retained sample began,
    /// stretched to at least `samples - 1` full windows (so a young rate is not
    /// overstated), and never 0.
    fn window_size_ms(&mut self, w: Window, now_ms: u64) -> u64 {
        self.0.purge(w, now_ms);
        let mut elapsed = now_ms.saturating_sub(self.0.oldest_start(now_ms));
        let full = elapsed / w.span_ms;
        let min_full = (w.samples as u64).saturating_sub(1);
        if full < min_full {
            elapsed += (min_full - full) * w.span_ms;
        }
        elapsed.max(1)
    }
}

/// Kafka's `Meter`: a rate and the cumulative total of the same values
/// (`CumulativeSum`), or of the same events (`CumulativeCount`).
#[derive(Clone, Debug)]
pub(crate) struct Meter {
    rate: Rate,
    total: f64,
    counts_events: bool,
}

impl Meter {
    /// Rate and total of the recorded values.
    pub(crate) fn of_sum() -> Self {
        Self {
            rate: Rate::of_sum(),
            total: 0.0,
            counts_events: false,
        }
    }
    /// Rate and total of events.
    pub(crate) fn of_count() -> Self {
        Self {
            rate: Rate::of_count(),
            total: 0.0,
            counts_events: true,
        }
    }
    pub(crate) fn record(&mut self, w: Window, value: f64, now_ms: u64) {
        self.rate.record(w, value, now_ms);
        self.total += if self.counts_events { 1.0 } else { value };
    }
    pub(crate) fn rate(&mut self, w: Window, now_ms: u64) -> f64 {
        self.rate.measure(w, now_ms)
    }
    pub(crate) fn total(&self) -> f64 {
        self.total
    }
}

/// `Avg` and `Max` of the same values, as most of Kafka's sensors pair them.
#[derive(Clone, Debug)]
pub(crate) struct AvgMax {
    avg: Avg,
    max: Max,
}

impl AvgMax {
    pub(crate) fn new() -> Self {
        Self {
            avg: Avg::new(),
            max: Max::new(),
        }
    }
    pub(crate) fn record(&mut self, w: Window, value: f64, now_ms: u64) {
        self.avg.record(w, value, now_ms);
        self.max.record(w, value, now_ms);
    }
    pub(crate) fn measure(&mut self, w: Window, now_ms: u64) -> (f64, f64) {
        (self.avg.measure(w, now_ms), self.max.measure(w, now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Window = Window {
        span_ms: 30_000,
        samples: 2,
    };

    /// A rate nothing was recorded in is 0, not -0 (an empty `f64` sum is -0.0, which
    /// printed as `connection-close-rate -0`).
    #[test]
    fn an_empty_rate_is_positive_zero() {
        let mut m = Meter::of_count();
        let rate = m.rate(W, 1_000);
        assert_eq!(rate, 0.0);
        assert!(rate.is_sign_positive(), "{rate}");
        assert_eq!(format!("{rate}"), "0");
    }

    /// Kafka's `MetricsTest.testRateWindowing`-style check: with two 30 s samples, a
    /// young rate divides by at least one full window plus the elapsed time.
    #[test]
    fn a_young_rate_divides_by_at_least_one_full_window() {
        let mut r = Rate::of_sum();
        r.record(W, 300.0, 0);
        // elapsed 0 -> stretched to 30 s: 300 / 30 = 10/s.
        assert!((r.measure(W, 0) - 10.0).abs() < 1e-9);
        // elapsed 15 s, still less than one full window: 300 / 45 s.
        assert!((r.measure(W, 15_000) - 300.0 / 45.0).abs() < 1e-9);
        // elapsed 40 s, one full window: no stretch, 300 / 40 s.
        assert!((r.measure(W, 40_000) - 7.5).abs() < 1e-9);
    }

    #[test]
    fn samples_older_than_every_window_are_forgotten() {
        let mut r = Rate::of_count();
        let mut a = Avg::new();
        let mut m = Max::new();
        r.record(W, 1.0, 0);
        a.record(W, 5.0, 0);
        m.record(W, 5.0, 0);
        a.record(W, 1.0, 10_000);
        m.record(W, 1.0, 10_000);
        assert!((a.measure(W, 10_000) - 3.0).abs() < 1e-9);
        assert!((m.measure(W, 10_000) - 5.0).abs() < 1e-9);
        // 60 s = samples * span after the first sample began: it is purged.
        assert!(a.measure(W, 60_000).is_nan());
        assert!(m.measure(W, 60_000).is_nan());
        assert!(r.measure(W, 60_000).abs() < 1e-9);
    }

    #[test]
    fn a_new_window_starts_once_the_current_one_is_over() {
        let mut m = Max::new();
        m.record(W, 9.0, 0);
        m.record(W, 2.0, 30_000); // second sample
        m.record(W, 3.0, 60_000); // wraps: replaces the first (9)
        assert!((m.measure(W, 60_000) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn a_meter_keeps_its_total_past_the_windows() {
        let mut meter = Meter::of_sum();
        meter.record(W, 4.0, 0);
        meter.record(W, 6.0, 1_000);
        assert_eq!(meter.total(), 10.0);
        assert!(meter.rate(W, 120_000).abs() < 1e-9);
        assert_eq!(meter.total(), 10.0);
        let mut events = Meter::of_count();
        events.record(W, 4.0, 0);
        events.record(W, 6.0, 0);
        assert_eq!(events.total(), 2.0);
    }
}
