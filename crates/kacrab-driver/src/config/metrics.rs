//! The `metrics.*` keys: Kafka's `MetricConfig` for the session's windowed statistics
//! (`CommonClientConfigs.METRICS_SAMPLE_WINDOW_MS_CONFIG`, `METRICS_NUM_SAMPLES_CONFIG`,
//! `METRICS_RECORDING_LEVEL_CONFIG`), and kacrab's own `kacrab.metrics.publish.interval.ms`.

use std::time::Duration;

use super::SessionConfigError;

/// `metrics.sample.window.ms`: the span of one sample of a windowed metric.
pub const METRICS_SAMPLE_WINDOW_MS: &str = "metrics.sample.window.ms";
/// `metrics.num.samples`: how many samples a windowed metric keeps.
pub const METRICS_NUM_SAMPLES: &str = "metrics.num.samples";
/// `metrics.recording.level`: `INFO`, `DEBUG` or `TRACE`. Accepted for compatibility;
/// every metric kacrab has is recorded at any level (Kafka's producer metrics are INFO).
pub const METRICS_RECORDING_LEVEL: &str = "metrics.recording.level";
/// `kacrab.metrics.publish.interval.ms`: with the `metrics` feature, how often the
/// session publishes its snapshot through the `metrics` facade on its own timer
/// (default 30 000, Kafka's `metrics.sample.window.ms`); 0 disables the timer. Kafka's
/// producer has no such key: its reporters read its metrics when they like, a facade
/// exporter needs the values pushed. Accepted (and unused) without the feature, so one
/// configuration loads in either build.
pub const METRICS_PUBLISH_INTERVAL_MS: &str = "kacrab.metrics.publish.interval.ms";

/// `enable.metrics.push` (KIP-714): whether the producer pushes its metrics to a broker
/// that asks for them (default `true`, as Kafka's). See the `telemetry` module.
pub const ENABLE_METRICS_PUSH: &str = "enable.metrics.push";

/// The metrics part of a session's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricsConfig {
    sample_window: Duration,
    num_samples: u32,
    /// `None`: publishing on the session's timer is disabled.
    publish_interval: Option<Duration>,
    /// `enable.metrics.push`.
    push: bool,
}

impl Default for MetricsConfig {
    /// Kafka's defaults: 30 000 ms, 2 samples; publishing every 30 000 ms.
    fn default() -> Self {
        Self {
            sample_window: Duration::from_millis(30_000),
            num_samples: 2,
            publish_interval: Some(Duration::from_millis(30_000)),
            push: true,
        }
    }
}

impl MetricsConfig {
    /// `metrics.sample.window.ms`.
    #[must_use]
    pub fn sample_window(&self) -> Duration {
        self.sample_window
    }

    /// `metrics.num.samples`.
    #[must_use]
    pub fn num_samples(&self) -> u32 {
        self.num_samples
    }

    /// `kacrab.metrics.publish.interval.ms`: `None` when 0 (no publishing timer).
    #[must_use]
    pub fn publish_interval(&self) -> Option<Duration> {
        self.publish_interval
    }

    /// `enable.metrics.push`: whether KIP-714 client telemetry is pushed.
    #[must_use]
    pub fn push(&self) -> bool {
        self.push
    }

    /// Sets one of this module's keys. `Ok(false)` for a key that is not one of them.
    ///
    /// # Errors
    /// [`SessionConfigError::InvalidValue`] for a value Kafka's `ConfigDef` refuses: a
    /// window or sample count below 1, a level other than INFO, DEBUG or TRACE; a
    /// publish interval that is not a whole number of milliseconds.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, SessionConfigError> {
        let invalid = |key: &'static str, reason: &'static str| SessionConfigError::InvalidValue {
            key,
            value: value.to_owned(),
            reason,
        };
        match key {
            METRICS_SAMPLE_WINDOW_MS => {
                let ms: u64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&ms| ms >= 1)
                    .ok_or_else(|| invalid(METRICS_SAMPLE_WINDOW_MS, "expected at least 1 ms"))?;
                self.sample_window = Duration::from_millis(ms);
            }
            METRICS_PUBLISH_INTERVAL_MS => {
                let ms: u64 = value.trim().parse().map_err(|_| {
                    invalid(
                        METRICS_PUBLISH_INTERVAL_MS,
                        "expected a whole number of ms (0 disables)",
                    )
                })?;
                self.publish_interval = (ms > 0).then(|| Duration::from_millis(ms));
            }
            METRICS_NUM_SAMPLES => {
                self.num_samples = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| invalid(METRICS_NUM_SAMPLES, "expected at least 1"))?;
            }
            ENABLE_METRICS_PUSH => {
                self.push = match value.trim() {
                    v if v.eq_ignore_ascii_case("true") => true,
                    v if v.eq_ignore_ascii_case("false") => false,
                    _ => return Err(invalid(ENABLE_METRICS_PUSH, "expected true or false")),
                };
            }
            METRICS_RECORDING_LEVEL => {
                if !matches!(value.trim(), "INFO" | "DEBUG" | "TRACE") {
                    return Err(invalid(
                        METRICS_RECORDING_LEVEL,
                        "expected INFO, DEBUG or TRACE",
                    ));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_defaults_and_validation() {
        let mut c = MetricsConfig::default();
        assert_eq!(c.sample_window(), Duration::from_millis(30_000));
        assert_eq!(c.num_samples(), 2);
        assert_eq!(c.set(METRICS_SAMPLE_WINDOW_MS, "1000"), Ok(true));
        assert_eq!(c.set(METRICS_NUM_SAMPLES, "3"), Ok(true));
        assert_eq!(c.set(METRICS_RECORDING_LEVEL, "DEBUG"), Ok(true));
        assert_eq!(c.set("linger.ms", "5"), Ok(false));
        assert_eq!(c.sample_window(), Duration::from_millis(1000));
        assert_eq!(c.num_samples(), 3);
        assert!(c.set(METRICS_SAMPLE_WINDOW_MS, "0").is_err());
        assert!(c.set(METRICS_NUM_SAMPLES, "0").is_err());
        assert!(c.set(METRICS_RECORDING_LEVEL, "LOUD").is_err());
    }

    #[test]
    fn the_publish_interval_defaults_to_the_sample_window_and_zero_disables_it() {
        let mut c = MetricsConfig::default();
        assert_eq!(c.publish_interval(), Some(Duration::from_millis(30_000)));
        assert_eq!(c.set(METRICS_PUBLISH_INTERVAL_MS, "1500"), Ok(true));
        assert_eq!(c.publish_interval(), Some(Duration::from_millis(1500)));
        assert_eq!(c.set(METRICS_PUBLISH_INTERVAL_MS, "0"), Ok(true));
        assert_eq!(c.publish_interval(), None);
        assert!(c.set(METRICS_PUBLISH_INTERVAL_MS, "-1").is_err());
        assert!(c.set(METRICS_PUBLISH_INTERVAL_MS, "soon").is_err());
    }
}
