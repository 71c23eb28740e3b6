//! The session's connection keys: `reconnect.backoff.ms` and `reconnect.backoff.max.ms`
//! (how long a broker whose connection failed or closed is left alone before it is
//! dialled again, exponential per consecutive failure, as Java's
//! `ClusterConnectionStates`) and `connections.max.idle.ms` (a connection idle that
//! long is closed, as Java's `Selector` with its idle expiry manager).

use std::time::Duration;

use super::SessionConfigError;

/// `reconnect.backoff.ms`: the wait before dialling a broker again after its connection
/// failed or closed, the first time (Java's default 50).
pub const RECONNECT_BACKOFF_MS: &str = "reconnect.backoff.ms";
/// `reconnect.backoff.max.ms`: the longest such wait, however many consecutive
/// failures (Java's default 1000).
pub const RECONNECT_BACKOFF_MAX_MS: &str = "reconnect.backoff.max.ms";

/// `connections.max.idle.ms`: a connection with nothing in flight and no traffic for
/// this long is closed (the producer's default 540000; negative: never, as Java's
/// `Selector` without an idle expiry manager).
pub const CONNECTIONS_MAX_IDLE_MS: &str = "connections.max.idle.ms";

const DEFAULT_MAX_IDLE: Duration = Duration::from_millis(540_000);
const DEFAULT_RECONNECT_BACKOFF: Duration = Duration::from_millis(50);
const DEFAULT_RECONNECT_BACKOFF_MAX: Duration = Duration::from_millis(1_000);

/// The connection part of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConnectionConfig {
    pub(crate) reconnect_backoff: Duration,
    pub(crate) reconnect_backoff_max: Duration,
    /// `None`: idle connections are never closed.
    pub(crate) max_idle: Option<Duration>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            reconnect_backoff: DEFAULT_RECONNECT_BACKOFF,
            reconnect_backoff_max: DEFAULT_RECONNECT_BACKOFF_MAX,
            max_idle: Some(DEFAULT_MAX_IDLE),
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
            CONNECTIONS_MAX_IDLE_MS => {
                let negative = value.trim().parse::<i64>().is_ok_and(|v| v < 0);
                self.max_idle = if negative {
                    None
                } else {
                    Some(super::parse_ms(CONNECTIONS_MAX_IDLE_MS, value)?)
                };
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
        assert_eq!(c.max_idle, Some(Duration::from_millis(540_000)));
        assert!(c.set(CONNECTIONS_MAX_IDLE_MS, "-1").unwrap());
        assert_eq!(c.max_idle, None);
        assert!(c.set(CONNECTIONS_MAX_IDLE_MS, "1000").unwrap());
        assert_eq!(c.max_idle, Some(Duration::from_millis(1000)));
        assert!(c.set(CONNECTIONS_MAX_IDLE_MS, "x").is_err());
    }
}
