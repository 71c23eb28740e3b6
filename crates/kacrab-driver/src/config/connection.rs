//! The session's connection keys: `reconnect.backoff.ms` and `reconnect.backoff.max.ms`
//! (how long a broker whose connection failed or closed is left alone before it is
//! dialled again, exponential per consecutive failure, as Java's
//! `ClusterConnectionStates`), `socket.connection.setup.timeout.max.ms` (the cap of
//! the setup timeout, which grows per consecutive failed attempt, as the same class),
//! `connections.max.idle.ms` (a connection idle that long is closed, as Java's
//! `Selector` with its idle expiry manager) and `send.buffer.bytes` /
//! `receive.buffer.bytes` (`SO_SNDBUF` / `SO_RCVBUF` of every new socket, set by the
//! driver, as Java's `Selector.configureSocketChannel`).

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

/// `socket.connection.setup.timeout.max.ms`: the longest setup timeout, however many
/// consecutive attempts to one broker failed (Java's default 30000).
pub const SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS: &str = "socket.connection.setup.timeout.max.ms";

/// `send.buffer.bytes`: `SO_SNDBUF` of each new socket (Java's producer default 131072;
/// -1: the operating system's default).
pub const SEND_BUFFER_BYTES: &str = "send.buffer.bytes";
/// `receive.buffer.bytes`: `SO_RCVBUF` of each new socket (Java's producer default
/// 32768; -1: the operating system's default).
pub const RECEIVE_BUFFER_BYTES: &str = "receive.buffer.bytes";

const DEFAULT_SETUP_TIMEOUT_MAX: Duration = Duration::from_millis(30_000);
const DEFAULT_SEND_BUFFER: usize = 131_072;
const DEFAULT_RECEIVE_BUFFER: usize = 32_768;
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
    pub(crate) setup_timeout_max: Duration,
    /// `None` (-1): the operating system's default. Invariant: never `Some(0)`.
    pub(crate) send_buffer: Option<usize>,
    /// `None` (-1): the operating system's default. Invariant: never `Some(0)`.
    pub(crate) receive_buffer: Option<usize>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            reconnect_backoff: DEFAULT_RECONNECT_BACKOFF,
            reconnect_backoff_max: DEFAULT_RECONNECT_BACKOFF_MAX,
            max_idle: Some(DEFAULT_MAX_IDLE),
            setup_timeout_max: DEFAULT_SETUP_TIMEOUT_MAX,
            send_buffer: Some(DEFAULT_SEND_BUFFER),
            receive_buffer: Some(DEFAULT_RECEIVE_BUFFER),
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
            SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS => {
                self.setup_timeout_max =
                    super::parse_ms(SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS, value)?;
            }
            SEND_BUFFER_BYTES => self.send_buffer = parse_buffer(SEND_BUFFER_BYTES, value)?,
            RECEIVE_BUFFER_BYTES => {
                self.receive_buffer = parse_buffer(RECEIVE_BUFFER_BYTES, value)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A socket buffer size: -1 is the operating system's default (Java's
/// `Selectable.USE_DEFAULT_BUFFER_SIZE`); Kafka's `ConfigDef` accepts 0, which Java's
/// `Socket.setSendBufferSize` then throws on at the first connection, so it is refused
/// here, up front.
fn parse_buffer(key: &'static str, value: &str) -> Result<Option<usize>, SessionConfigError> {
    let invalid = |reason| SessionConfigError::InvalidValue {
        key,
        value: value.to_owned(),
        reason,
    };
    match value.trim().parse::<i32>() {
        Ok(-1) => Ok(None),
        Ok(n) if n > 0 => Ok(Some(n as usize)),
        Ok(_) => Err(invalid(
            "must be positive, or -1 for the operating system's default",
        )),
        Err(_) => Err(invalid("not a 32-bit integer")),
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

    #[test]
    fn setup_timeout_max_and_socket_buffers_parse_with_kafkas_defaults() {
        let mut c = ConnectionConfig::default();
        assert_eq!(c.setup_timeout_max, Duration::from_millis(30_000));
        assert_eq!(
            (c.send_buffer, c.receive_buffer),
            (Some(131_072), Some(32_768))
        );
        assert!(c
            .set(SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS, "5000")
            .unwrap());
        assert_eq!(c.setup_timeout_max, Duration::from_millis(5000));
        assert!(c.set(SEND_BUFFER_BYTES, "-1").unwrap());
        assert!(c.set(RECEIVE_BUFFER_BYTES, " 65536 ").unwrap());
        assert_eq!((c.send_buffer, c.receive_buffer), (None, Some(65_536)));
        for bad in ["0", "-2", "x", "4294967296"] {
            assert!(c.set(SEND_BUFFER_BYTES, bad).is_err(), "{bad}");
        }
    }
}
