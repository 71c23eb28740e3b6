//! The session's configuration: Kafka's producer properties, parsed and validated once
//! for every driver.

use std::time::Duration;

use kacrab_idempotence::{ConfigError, ProducerConfig, ProducerConfigBuilder};

pub mod security;

use security::{SecurityBuilder, SecurityConfig};
mod jaas;
mod oidc;
mod sasl;

pub use jaas::{ControlFlag, JaasError};
pub use oidc::{OidcClientCredentials, OidcTiming};
pub use sasl::{
    NonceSeed, OAuthBearerSource, SaslConfig, SaslConfigError, SaslCredentials, SaslMechanism,
    SASL_JAAS_CONFIG, SASL_MECHANISM,
};
mod metrics;
pub use metrics::{
    MetricsConfig, ENABLE_METRICS_PUSH, METRICS_NUM_SAMPLES, METRICS_PUBLISH_INTERVAL_MS,
    METRICS_RECORDING_LEVEL, METRICS_SAMPLE_WINDOW_MS,
};
mod compression;
pub use compression::{
    COMPRESSION_GZIP_LEVEL, COMPRESSION_LZ4_LEVEL, COMPRESSION_TYPE, COMPRESSION_ZSTD_LEVEL,
};
mod catalogue;
mod connection;
mod metadata;
mod partitioner;
mod problems;
mod properties;

pub use problems::{ConfigProblem, ConfigProblems};
pub use properties::{parse_java_properties, MalformedProperties};

pub use connection::{
    CONNECTIONS_MAX_IDLE_MS, RECEIVE_BUFFER_BYTES, RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MS,
    SEND_BUFFER_BYTES, SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS,
};
pub use metadata::METADATA_MAX_IDLE_MS;

pub use partitioner::{
    PARTITIONER_ADAPTIVE_PARTITIONING_ENABLE, PARTITIONER_AVAILABILITY_TIMEOUT_MS,
    PARTITIONER_IGNORE_KEYS,
};

/// `bootstrap.servers`: comma-separated `host:port`s.
pub const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";
/// `client.id`: sent in every request header.
pub const CLIENT_ID: &str = "client.id";
/// `max.block.ms`: how long a send waits for `buffer.memory`, and a partition lookup for
/// metadata.
pub const MAX_BLOCK_MS: &str = "max.block.ms";
/// `socket.connection.setup.timeout.ms`: how long opening a connection may take.
pub const SOCKET_CONNECTION_SETUP_TIMEOUT_MS: &str = "socket.connection.setup.timeout.ms";

/// Kafka's default `max.block.ms`.
const DEFAULT_MAX_BLOCK: Duration = Duration::from_millis(60_000);
/// Kafka's default `socket.connection.setup.timeout.ms`.
const DEFAULT_CONNECTION_SETUP_TIMEOUT: Duration = Duration::from_millis(10_000);

/// Why a configuration was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionConfigError {
    /// A core key was unknown, malformed or out of range, or keys conflict (Kafka's own
    /// validation rules).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `bootstrap.servers` was not given, or names no `host:port`.
    #[error("bootstrap.servers is missing or names no host:port")]
    MissingBootstrap,
    /// A session key has a value that does not parse.
    #[error("invalid value {value:?} for configuration {key}: {reason}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The rejected value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A key kacrab knows of but does not support (a JKS keystore, an `ssl.*` key
    /// outside the supported set, ...).
    #[error("{key}: known Kafka producer setting, not supported: {reason}")]
    Unsupported {
        /// The key.
        key: String,
        /// Why, or what to use instead.
        reason: &'static str,
    },
    /// TLS material that cannot be used: a file that cannot be read, PEM that does not
    /// parse, a key rustls refuses. Never contains key material.
    #[error("TLS configuration {key}: {reason}")]
    Tls {
        /// The key whose value is at fault.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A `sasl.*` setting was refused (its message never holds a password).
    #[error(transparent)]
    Sasl(#[from] SaslConfigError),
    /// A key of Kafka's producer configuration kacrab does not support (the value is
    /// not shown: it may be a secret).
    #[error("{key}: known Kafka producer setting, not supported: {reason}")]
    NotSupported {
        /// The key.
        key: &'static str,
        /// Why, or "not yet implemented".
        reason: &'static str,
    },
    /// A key that is neither Kafka's nor kacrab's, close enough to one of them to be
    /// its typo (a key near none is ignored: [`SessionConfig::ignored_keys`]).
    #[error("unknown configuration key {key:?}{}", suggestion.map(|s| format!(" (did you mean {s}?)")).unwrap_or_default())]
    UnknownKey {
        /// The key as given.
        key: String,
        /// The known key nearest to it by edit distance, if close enough to be a typo.
        suggestion: Option<&'static str>,
    },
    /// Several problems (or a problem on a line of a properties text), in file order.
    #[error("{0}")]
    Problems(ConfigProblems),
    /// A `\uXXXX` escape without four hex digits in a properties text.
    #[error(transparent)]
    Malformed(#[from] MalformedProperties),
    /// A properties file that could not be read.
    #[error("cannot read the properties file {path}: {reason}")]
    ReadFile {
        /// The path as given.
        path: String,
        /// The operating system's error.
        reason: String,
    },
}

/// A key that was accepted without effect, and why (see [`SessionConfig::notes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigNote {
    /// The key.
    pub key: &'static str,
    /// What kacrab did with it.
    pub note: &'static str,
}

/// A validated session configuration: the core's plus the keys the session owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    core: ProducerConfig,
    bootstrap: Vec<String>,
    client_id: Option<String>,
    max_block: Duration,
    connection_setup_timeout: Duration,
    security: SecurityConfig,
    sasl: SaslConfig,
    metrics: MetricsConfig,
    partitioner: partitioner::PartitionerConfig,
    metadata: metadata::MetadataConfig,
    connection: connection::ConnectionConfig,
    notes: Vec<ConfigNote>,
    ignored_keys: Vec<String>,
}

impl SessionConfig {
    /// A builder with Kafka's defaults and no bootstrap servers.
    #[must_use]
    pub fn builder() -> SessionConfigBuilder {
        SessionConfigBuilder::default()
    }

    /// Parses Kafka property pairs (a later pair for the same key wins) and validates.
    ///
    /// # Errors
    /// As [`SessionConfigBuilder::set`] and [`SessionConfigBuilder::build`].
    /// Every pair is tried: one refused pair is returned as its error, several as
    /// [`SessionConfigError::Problems`] in order; the combination is validated once
    /// every pair was accepted.
    pub fn from_properties<'a>(
        props: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, SessionConfigError> {
        problems::load(props.into_iter().map(|(k, v)| (None, k, Ok(v))))?.build()
    }

    /// Parses a Java `.properties` text ([`parse_java_properties`]) and validates, as
    /// [`SessionConfig::from_properties`]; a refused line is reported with its line
    /// number, every refused line in one [`SessionConfigError::Problems`].
    ///
    /// # Errors
    /// As [`SessionConfig::from_properties`], with every line's problem.
    pub fn from_java_properties(text: &str) -> Result<Self, SessionConfigError> {
        SessionConfigBuilder::from_java_properties(text)?.build()
    }

    /// Reads a Java producer's `.properties` file and validates it, as
    /// [`SessionConfig::from_java_properties`].
    ///
    /// # Errors
    /// [`SessionConfigError::ReadFile`] (naming the path and the operating system's
    /// error), or as [`SessionConfig::from_java_properties`].
    pub fn from_properties_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, SessionConfigError> {
        SessionConfigBuilder::from_properties_file(path)?.build()
    }

    /// The core's configuration.
    #[must_use]
    pub fn core(&self) -> &ProducerConfig {
        &self.core
    }

    /// `bootstrap.servers`, never empty.
    #[must_use]
    pub fn bootstrap(&self) -> &[String] {
        &self.bootstrap
    }

    /// `client.id`.
    #[must_use]
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// `max.block.ms`.
    #[must_use]
    pub fn max_block(&self) -> Duration {
        self.max_block
    }

    /// `socket.connection.setup.timeout.ms`: how long the first attempt to open a
    /// connection to a broker may take (±20 % jitter); each consecutive failed attempt
    /// doubles it, up to [`SessionConfig::connection_setup_timeout_max`], and a
    /// connection that becomes ready resets it (Java's `ClusterConnectionStates`).
    #[must_use]
    pub fn connection_setup_timeout(&self) -> Duration {
        self.connection_setup_timeout
    }

    /// `security.protocol` and the TLS settings.
    #[must_use]
    pub fn security(&self) -> &SecurityConfig {
        &self.security
    }

    /// The SASL settings (`sasl.*`).
    #[must_use]
    pub fn sasl(&self) -> &SaslConfig {
        &self.sasl
    }

    /// Sets the seed of the SCRAM client nonces (see [`NonceSeed`]): the drivers call
    /// it with entropy from the operating system, unless the application gave one.
    pub fn set_sasl_nonce_seed(&mut self, seed: NonceSeed) {
        self.sasl.nonce_seed(seed);
    }

    /// The `metrics.*` keys.
    #[must_use]
    pub fn metrics(&self) -> &MetricsConfig {
        &self.metrics
    }

    /// `metadata.max.idle.ms`: a topic no send used for this long is no longer
    /// refreshed, and a send to it waits for its metadata again.
    #[must_use]
    pub fn metadata_max_idle(&self) -> Duration {
        self.metadata.max_idle
    }

    /// `reconnect.backoff.ms` and `reconnect.backoff.max.ms`: the wait before dialling
    /// a broker again after its connection failed or closed, doubling per consecutive
    /// failure up to the max, with Kafka's ±20 % jitter.
    #[must_use]
    pub fn reconnect_backoff(&self) -> (Duration, Duration) {
        (
            self.connection.reconnect_backoff,
            self.connection.reconnect_backoff_max,
        )
    }

    /// `socket.connection.setup.timeout.max.ms`: the cap of the setup timeout, which
    /// grows per consecutive failed attempt to one broker (see
    /// [`SessionConfig::connection_setup_timeout`]).
    #[must_use]
    pub fn connection_setup_timeout_max(&self) -> Duration {
        self.connection.setup_timeout_max
    }

    /// `send.buffer.bytes` and `receive.buffer.bytes`: `SO_SNDBUF` and `SO_RCVBUF` of
    /// each new socket; `None` (-1) leaves the operating system's default.
    #[must_use]
    pub fn socket_buffers(&self) -> (Option<usize>, Option<usize>) {
        (self.connection.send_buffer, self.connection.receive_buffer)
    }

    /// `connections.max.idle.ms`: a connection with nothing in flight and no traffic
    /// for this long is closed; `None` (a negative value): never.
    #[must_use]
    pub fn connections_max_idle(&self) -> Option<Duration> {
        self.connection.max_idle
    }

    /// The keys that were accepted without effect (`key.serializer`, a not-supported
    /// key set to the value kacrab's behaviour matches, ...), each with why.
    #[must_use]
    pub fn notes(&self) -> &[ConfigNote] {
        &self.notes
    }

    /// The keys no Kafka client defines (nor kacrab), far from every known key, that
    /// were ignored, in the order set: Java's producer logs "supplied but isn't a known
    /// config" for them and goes on (`AbstractConfig.logUnused`), and a file written for
    /// a Java application often holds such keys (`schema.registry.url` for the Avro
    /// serializers). Logged at WARN (feature `tracing`) when set.
    #[must_use]
    pub fn ignored_keys(&self) -> &[String] {
        &self.ignored_keys
    }

    /// The built-in partitioner's settings (`partitioner.*`, `batch.size`; its draws
    /// are seeded from `kacrab.jitter.seed`).
    pub(crate) fn partitioner(&self) -> crate::partitioner::BuiltInSettings {
        crate::partitioner::BuiltInSettings {
            keys: self.partitioner.keys,
            draw: self.partitioner.draw,
            availability_timeout: self.partitioner.availability_timeout,
            sticky_bytes: self.core.batch_size().max(1),
            seed: self.core.jitter_seed() ^ 0x7061_7274_6974_696f,
        }
    }
}

/// Builds a [`SessionConfig`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionConfigBuilder {
    core: ProducerConfigBuilder,
    bootstrap: Vec<String>,
    client_id: Option<String>,
    max_block: Duration,
    connection_setup_timeout: Duration,
    security: SecurityBuilder,
    sasl: SaslConfig,
    metrics: MetricsConfig,
    compression: compression::CompressionConfig,
    partitioner: partitioner::PartitionerConfig,
    metadata: metadata::MetadataConfig,
    connection: connection::ConnectionConfig,
    notes: Vec<ConfigNote>,
    ignored_keys: Vec<String>,
}

impl Default for SessionConfigBuilder {
    fn default() -> Self {
        Self {
            core: ProducerConfigBuilder::default(),
            bootstrap: Vec::new(),
            client_id: None,
            max_block: DEFAULT_MAX_BLOCK,
            connection_setup_timeout: DEFAULT_CONNECTION_SETUP_TIMEOUT,
            security: SecurityBuilder::default(),
            sasl: SaslConfig::default(),
            metrics: MetricsConfig::default(),
            compression: compression::CompressionConfig::default(),
            partitioner: partitioner::PartitionerConfig::default(),
            metadata: metadata::MetadataConfig::default(),
            connection: connection::ConnectionConfig::default(),
            notes: Vec::new(),
            ignored_keys: Vec::new(),
        }
    }
}

impl SessionConfigBuilder {
    /// A builder with every entry of a Java `.properties` text set; every refused line
    /// is reported at once, as in [`SessionConfig::from_java_properties`] (which also
    /// validates the combination: [`SessionConfigBuilder::build`]).
    ///
    /// # Errors
    /// A refused line, or [`SessionConfigError::Problems`] with every refused line.
    pub fn from_java_properties(text: &str) -> Result<Self, SessionConfigError> {
        problems::from_text(text)
    }

    /// [`SessionConfigBuilder::from_java_properties`] of a file's text.
    ///
    /// # Errors
    /// [`SessionConfigError::ReadFile`] (naming the path and the operating system's
    /// error), or as [`SessionConfigBuilder::from_java_properties`].
    pub fn from_properties_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, SessionConfigError> {
        problems::from_file(path.as_ref())
    }

    /// Sets a property by its Kafka name: the session's keys ([`BOOTSTRAP_SERVERS`],
    /// [`CLIENT_ID`], [`MAX_BLOCK_MS`], [`SOCKET_CONNECTION_SETUP_TIMEOUT_MS`]), the
    /// security keys (`security.protocol`, `ssl.*`: [`crate::security`]), the SASL keys
    /// ([`SASL_MECHANISM`], [`SASL_JAAS_CONFIG`]; other `sasl.*` keys are refused as not
    /// supported), the compression keys ([`COMPRESSION_TYPE`] and the three levels of
    /// KIP-390), the `metrics.*` keys or any key of [`ProducerConfigBuilder::set`].
    ///
    /// # Errors
    /// [`SessionConfigError::InvalidValue`] for a malformed session key;
    /// [`SessionConfigError::Config`] for a core value that does not parse;
    /// [`SessionConfigError::Sasl`] for a SASL key; [`SessionConfigError::NotSupported`]
    /// for a Kafka producer key kacrab does not support;
    /// [`SessionConfigError::UnknownKey`] (with the nearest known key) for a typo of a
    /// known key; any other key is ignored and listed ([`SessionConfig::ignored_keys`]).
    /// `key.serializer` and `value.serializer` are accepted and ignored, with a
    /// [`SessionConfig::notes`] entry.
    pub fn set(&mut self, key: &str, value: &str) -> Result<&mut Self, SessionConfigError> {
        let Err(refusal) = self.set_answered(key, value) else {
            return Ok(self);
        };
        // Kafka's default of a key kacrab does not act on: a Java file that writes it
        // out loads (see `catalogue::KAFKA_DEFAULTS`).
        let refused = matches!(
            refusal,
            SessionConfigError::NotSupported { .. }
                | SessionConfigError::Unsupported { .. }
                | SessionConfigError::Sasl(_)
        );
        match catalogue::kafka_default(key, value) {
            Some((key, note)) if refused => {
                self.notes.retain(|n| n.key != key);
                self.notes.push(ConfigNote { key, note });
                Ok(self)
            }
            _ => Err(refusal),
        }
    }

    /// `set`, without the acceptance of Kafka's defaults.
    fn set_answered(&mut self, key: &str, value: &str) -> Result<(), SessionConfigError> {
        match key {
            BOOTSTRAP_SERVERS => self.bootstrap = parse_bootstrap(value)?,
            CLIENT_ID => {
                let id = value.trim();
                self.client_id = (!id.is_empty()).then(|| id.to_owned());
            }
            MAX_BLOCK_MS => self.max_block = parse_ms(MAX_BLOCK_MS, value)?,
            SOCKET_CONNECTION_SETUP_TIMEOUT_MS => {
                let t = parse_ms(SOCKET_CONNECTION_SETUP_TIMEOUT_MS, value)?;
                if t.is_zero() {
                    return Err(SessionConfigError::InvalidValue {
                        key: SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
                        value: value.to_owned(),
                        reason: "must be at least 1 ms",
                    });
                }
                self.connection_setup_timeout = t;
            }
            _ if self.security.set(key, value)? => {}
            _ if self.metrics.set(key, value)? => {}
            _ if compression::CompressionConfig::owns(key) => self.compression.set(key, value)?,
            _ if self.partitioner.set(key, value)? => {}
            _ if self.metadata.set(key, value)? => {}
            _ if self.connection.set(key, value)? => {}
            _ if self.sasl.set(key, value)? => {}
            _ => self.set_catalogued(key, value)?,
        }
        Ok(())
    }

    /// A key no session module took: the core's, or answered by the catalogue of
    /// Kafka's producer keys (ignored with a note, not supported, or unknown).
    fn set_catalogued(&mut self, key: &str, value: &str) -> Result<(), SessionConfigError> {
        use catalogue::Answer;
        let known = catalogue::answer(key);
        let note = match known {
            None if !kacrab_idempotence::config::keys::ALL.contains(&key) => {
                // A typo of a known key fails; any other key is another client's or
                // application's, ignored as Java ignores it (with a warning).
                if let Some(suggestion) = catalogue::nearest(key) {
                    return Err(SessionConfigError::UnknownKey {
                        key: key.to_owned(),
                        suggestion: Some(suggestion),
                    });
                }
                crate::trace::ignored_key(key);
                if !self.ignored_keys.iter().any(|k| k == key) {
                    self.ignored_keys.push(key.to_owned());
                }
                return Ok(());
            }
            None | Some((_, Answer::Implemented)) => {
                self.core.set(key, value)?;
                return Ok(());
            }
            Some((key, Answer::Ignored(note))) => ConfigNote { key, note },
            // A module key its module did not claim: the module does not support it.
            Some((key, Answer::Module(_))) => {
                return Err(SessionConfigError::NotSupported {
                    key,
                    reason: "not supported by kacrab's implementation of this setting's family",
                });
            }
            Some((key, Answer::NotSupported { reason, unless })) => {
                if unless.is_some_and(|v| v.eq_ignore_ascii_case(value.trim())) {
                    ConfigNote {
                        key,
                        note: "accepted: this value asks for what kacrab does without it",
                    }
                } else {
                    return Err(SessionConfigError::NotSupported { key, reason });
                }
            }
        };
        self.notes.retain(|n| n.key != note.key);
        self.notes.push(note);
        Ok(())
    }

    /// Sets `bootstrap.servers` from `host:port` strings.
    pub fn bootstrap_servers<I, S>(&mut self, servers: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.bootstrap = servers.into_iter().map(Into::into).collect();
        self
    }

    /// Sets `client.id`.
    pub fn client_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.client_id = Some(id.into());
        self
    }

    /// Sets `max.block.ms`.
    pub fn max_block(&mut self, max_block: Duration) -> &mut Self {
        self.max_block = max_block;
        self
    }

    /// Sets `socket.connection.setup.timeout.ms`.
    pub fn connection_setup_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.connection_setup_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The SASL settings, for typed credentials ([`SaslConfig::plain`], ...).
    pub fn sasl(&mut self) -> &mut SaslConfig {
        &mut self.sasl
    }

    /// Sets the compression codec (`None`: `compression.type=none`) and its level
    /// (`None`: Kafka's default), as `compression.type` and its level key would.
    pub fn compression(
        &mut self,
        codec: Option<kacrab_idempotence::Codec>,
        level: Option<i32>,
    ) -> &mut Self {
        self.compression.set_codec(codec, level);
        self
    }

    /// The core's configuration, for typed settings (`linger`, `batch_size`, ...).
    pub fn core(&mut self) -> &mut ProducerConfigBuilder {
        &mut self.core
    }

    /// Validates.
    ///
    /// # Errors
    /// [`SessionConfigError::Config`] if the core's configuration is invalid,
    /// [`SessionConfigError::MissingBootstrap`] without bootstrap servers,
    /// [`SessionConfigError::Sasl`] when SASL settings were given that do not fit
    /// ([`SaslConfig::validate`]).
    pub fn build(&self) -> Result<SessionConfig, SessionConfigError> {
        let core = self
            .core
            .clone()
            .compression(self.compression.build()?)
            .build()?;
        if self.bootstrap.is_empty() {
            return Err(SessionConfigError::MissingBootstrap);
        }
        let security = self.security.build()?;
        let mut notes = self.notes.clone();
        if let Some(note) = self.sasl.check_for(security.protocol.uses_sasl())? {
            notes.push(ConfigNote {
                key: "sasl.*",
                note,
            });
        }
        Ok(SessionConfig {
            security,
            core,
            bootstrap: self.bootstrap.clone(),
            client_id: self.client_id.clone(),
            max_block: self.max_block,
            connection_setup_timeout: self.connection_setup_timeout,
            sasl: self.sasl.clone(),
            metrics: self.metrics,
            partitioner: self.partitioner,
            metadata: self.metadata,
            connection: self.connection,
            notes,
            ignored_keys: self.ignored_keys.clone(),
        })
    }
}

fn parse_ms(key: &'static str, value: &str) -> Result<Duration, SessionConfigError> {
    let ms: u64 = value
        .trim()
        .parse()
        .map_err(|_| SessionConfigError::InvalidValue {
            key,
            value: value.to_owned(),
            reason: "expected a non-negative number of milliseconds",
        })?;
    Ok(Duration::from_millis(ms))
}

/// Parses `bootstrap.servers`: comma-separated `host:port`s, whitespace ignored.
fn parse_bootstrap(value: &str) -> Result<Vec<String>, SessionConfigError> {
    let mut servers = Vec::new();
    for part in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let valid = part.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !valid {
            return Err(SessionConfigError::InvalidValue {
                key: BOOTSTRAP_SERVERS,
                value: value.to_owned(),
                reason: "expected comma-separated host:port entries",
            });
        }
        servers.push(part.to_owned());
    }
    if servers.is_empty() {
        return Err(SessionConfigError::MissingBootstrap);
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_parsing() {
        assert_eq!(parse_bootstrap(" a:1 , b:2,").unwrap(), vec!["a:1", "b:2"]);
        assert_eq!(parse_bootstrap("[::1]:9092").unwrap(), vec!["[::1]:9092"]);
        assert_eq!(
            parse_bootstrap(""),
            Err(SessionConfigError::MissingBootstrap)
        );
        assert!(matches!(
            parse_bootstrap("nohost"),
            Err(SessionConfigError::InvalidValue { .. })
        ));
        assert!(matches!(
            parse_bootstrap("h:0"),
            Err(SessionConfigError::InvalidValue { .. })
        ));
    }

    #[test]
    fn a_bad_configuration_is_refused_at_build() {
        assert_eq!(
            SessionConfig::from_properties([("linger.ms", "5")]),
            Err(SessionConfigError::MissingBootstrap)
        );
        assert!(matches!(
            SessionConfig::from_properties([("bootstrap.servers", "h:1"), ("linger.msec", "1")]),
            Err(SessionConfigError::UnknownKey {
                suggestion: Some("linger.ms"),
                ..
            })
        ));
        assert!(matches!(
            SessionConfig::from_properties([("bootstrap.servers", "h:1"), ("max.block.ms", "x")]),
            Err(SessionConfigError::InvalidValue {
                key: MAX_BLOCK_MS,
                ..
            })
        ));
        let ok = SessionConfig::from_properties([
            ("bootstrap.servers", "h:1"),
            ("client.id", "c"),
            ("max.block.ms", "5"),
        ])
        .unwrap();
        assert_eq!(ok.max_block(), Duration::from_millis(5));
        assert_eq!(ok.client_id(), Some("c"));
    }
}
