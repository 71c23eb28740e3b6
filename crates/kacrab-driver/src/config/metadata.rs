//! The session's metadata keys: `metadata.max.idle.ms` (`metadata.max.age.ms` is the
//! core's key; the session acts on it, see `refresh.rs`).

use std::time::Duration;

use super::SessionConfigError;

/// `metadata.max.idle.ms`: how long a topic no send used stays in the producer's
/// metadata (Java's default 300000, at least 5000: `ProducerConfig`'s
/// `atLeast(5000)`).
pub const METADATA_MAX_IDLE_MS: &str = "metadata.max.idle.ms";

const DEFAULT_MAX_IDLE: Duration = Duration::from_millis(300_000);
const MIN_MAX_IDLE: Duration = Duration::from_millis(5_000);

/// The metadata part of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MetadataConfig {
    pub(crate) max_idle: Duration,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        Self {
            max_idle: DEFAULT_MAX_IDLE,
        }
    }
}

impl MetadataConfig {
    /// Sets `key` if it is one of this module's; `Ok(false)` if it is not.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, SessionConfigError> {
        if key != METADATA_MAX_IDLE_MS {
            return Ok(false);
        }
        let t = super::parse_ms(METADATA_MAX_IDLE_MS, value)?;
        if t < MIN_MAX_IDLE {
            return Err(SessionConfigError::InvalidValue {
                key: METADATA_MAX_IDLE_MS,
                value: value.to_owned(),
                reason: "must be at least 5000 ms",
            });
        }
        self.max_idle = t;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_idle_is_at_least_five_seconds() {
        let mut c = MetadataConfig::default();
        assert_eq!(c.max_idle, DEFAULT_MAX_IDLE);
        assert!(c.set(METADATA_MAX_IDLE_MS, "5000").unwrap());
        assert_eq!(c.max_idle, MIN_MAX_IDLE);
        assert!(c.set(METADATA_MAX_IDLE_MS, "4999").is_err());
        assert!(!c.set("metadata.max.age.ms", "1").unwrap());
    }
}
