//! The session's connection keys: `reconnect.backoff.ms` and `reconnect.backoff.max.ms`
//! (how long a broker whose connection failed or closed is left alone before it is
//! dialled again, exponential per consecutive failure, as Java's
//! `ClusterConnectionStates`).

use std::time::Duration;

use super::SessionConfigError;

/// `reconnect.backoff.ms`: the wait before dialling a broker again after its connection
/// failed or closed, the first time (Java's default 50).
pub const RECONNECT_BACKOFF_MS: &str = "reconnect.backoff.ms";
/// `reconnect.backoff.max.ms`: the longest such wait, however many consecutive
/// failures (Java's default 1000).
pub const RECONNECT_BACKOFF_MAX_MS: &str = "reconnect.backoff.max.ms";

const DEFAULT_RECONNECT_BACKOFF: Duration = Duration::from_millis(50);
const DEFAULT_RECONNECT_BACKOFF_MAX: Duration = Duration::from_millis(1_000);

/// The connection part of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConnectionConfig {
    pub(crate) reconnect_backoff: Duration,
    pub(crate) reconnect_backoff_max: Duration,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            reconnect_backoff: DEFAULT_RECONNECT_BACKOFF,
            reconnect_backoff_max: DEFAULT_RECONNECT_BACKOFF_MAX,
        }
    }
}

impl ConnectionConfig {
    /// Sets `key` if it is one of this module's; `Ok(false)` if it is not.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, SessionConfigError> {
        match key {
            RECONNECT_BACKOFF_MS => {
                self.reconnect_backoff = super::parse_ms(RECONNECT_BACKOFF_MS, value)?;
            }
            RECONNECT_BACKOFF_MAX_MS => {
                self.reconnect_backoff_max = super::parse_ms(RECONNECT_BACKOFF_MAX_MS, value)?;
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
    fn reconnect_backoff_keys_parse_with_kafkas_defaults() {
        let mut c = ConnectionConfig::default();
        assert_eq!(c.reconnect_backoff, Duration::from_millis(50));
        assert_eq!(c.reconnect_backoff_max, Duration::from_millis(1_000));
        assert!(c.set(RECONNECT_BACKOFF_MS, "20").unwrap());
        assert!(c.set(RECONNECT_BACKOFF_MAX_MS, "400").unwrap());
        assert_eq!(c.reconnect_backoff, Duration::from_millis(20));
        assert_eq!(c.reconnect_backoff_max, Duration::from_millis(400));
        assert!(c.set(RECONNECT_BACKOFF_MS, "-1").is_err());
        assert!(!c.set("retry.backoff.ms", "1").unwrap());
    }
}
