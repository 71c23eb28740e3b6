//! The producer's configuration: Kafka's key names, Kafka 4.x defaults, and the
//! cross-key rules `ProducerConfig` and `KafkaProducer` apply when a producer is created.
//!
//! A [`ProducerConfig`] only exists validated: it is built by [`ProducerConfigBuilder::build`],
//! which also remembers which keys the user set explicitly, because two Kafka rules depend
//! on it (idempotence is silently switched off, or `delivery.timeout.ms` silently raised,
//! only when the user did not ask for the conflicting value).

use alloc::string::{String, ToString};

use crate::compression::Compression;
use core::time::Duration;

/// The highest `max.in.flight.requests.per.connection` an idempotent producer accepts: the
/// broker remembers the last five batches of each producer for deduplication.
pub const MAX_IN_FLIGHT_FOR_IDEMPOTENCE: u32 = 5;

macro_rules! keys {
    ($($name:ident = $key:literal,)*) => {
        /// The configuration keys [`ProducerConfigBuilder::set`] understands.
        pub mod keys {
            $(#[doc = concat!("`", $key, "`")] pub const $name: &str = $key;)*
            /// Every key above.
            pub const ALL: &[&str] = &[$($name),*];
        }
    };
}

keys! {
    ENABLE_IDEMPOTENCE = "enable.idempotence",
    ACKS = "acks",
    MAX_IN_FLIGHT = "max.in.flight.requests.per.connection",
    RETRIES = "retries",
    DELIVERY_TIMEOUT = "delivery.timeout.ms",
    REQUEST_TIMEOUT = "request.timeout.ms",
    LINGER = "linger.ms",
    BATCH_SIZE = "batch.size",
    MAX_REQUEST_SIZE = "max.request.size",
    BUFFER_MEMORY = "buffer.memory",
    RETRY_BACKOFF = "retry.backoff.ms",
    RETRY_BACKOFF_MAX = "retry.backoff.max.ms",
    METADATA_MAX_AGE = "metadata.max.age.ms",
    TRANSACTIONAL_ID = "transactional.id",
    TRANSACTION_TIMEOUT = "transaction.timeout.ms",
    // Not a Kafka key: seeds the retry backoff's jitter.
    JITTER_SEED = "kacrab.jitter.seed",
    // Not a Kafka client key: the brokers' `producer.id.expiration.ms` the producer
    // assumes (see `ProducerConfig::producer_id_expiration`).
    PRODUCER_ID_EXPIRATION = "kacrab.producer.id.expiration.ms",
}

/// Why a configuration was rejected.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A key this crate does not know. Adapters handle their own keys before passing the rest.
    #[error("unknown configuration key {0:?}")]
    UnknownKey(String),
    /// A value that does not parse as, or lies outside the range of, its key's type.
    #[error("invalid value {value:?} for configuration {key}: {reason}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The rejected value, as given (durations in milliseconds).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Idempotence was explicitly enabled together with `acks` other than `all`.
    #[error("the idempotent producer requires acks=all")]
    IdempotenceRequiresAcksAll,
    /// Idempotence is enabled and `max.in.flight.requests.per.connection` is above 5.
    #[error("the idempotent producer requires max.in.flight.requests.per.connection <= {max}, not {value}")]
    MaxInFlightTooHigh {
        /// The configured value.
        value: u32,
        /// [`MAX_IN_FLIGHT_FOR_IDEMPOTENCE`].
        max: u32,
    },
    /// Idempotence was explicitly enabled together with `retries=0`.
    #[error("the idempotent producer requires retries > 0")]
    IdempotenceRequiresRetries,
    /// `delivery.timeout.ms` was explicitly set below `linger.ms + request.timeout.ms`.
    #[error("delivery.timeout.ms ({delivery:?}) must be at least linger.ms + request.timeout.ms ({minimum:?})")]
    DeliveryTimeoutTooSmall {
        /// The configured delivery timeout.
        delivery: Duration,
        /// `linger + request_timeout`.
        minimum: Duration,
    },
    /// `batch.size` is zero.
    #[error("batch.size must be positive")]
    ZeroBatchSize,
    /// A `transactional.id` is set but idempotence is disabled (explicitly or by a conflict).
    #[error("a transactional.id requires idempotence")]
    TransactionalRequiresIdempotence,
    /// `kacrab.producer.id.expiration.ms` was explicitly set no longer than
    /// `delivery.timeout.ms + request.timeout.ms`: a broker that forgets the producer
    /// while one of its batches may still be resent could append that batch twice, and
    /// no client rule can prevent it.
    #[error("kacrab.producer.id.expiration.ms ({expiration:?}) must exceed delivery.timeout.ms + request.timeout.ms ({minimum:?})")]
    ProducerIdExpirationTooSmall {
        /// The configured expiry.
        expiration: Duration,
        /// `delivery_timeout + request_timeout`.
        minimum: Duration,
    },
}

/// Which acknowledgement the producer asks the leader for (`acks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Acks {
    /// `acks=0`: no acknowledgement.
    None,
    /// `acks=1`: the leader has written the records.
    Leader,
    /// `acks=all` (`-1`): every in-sync replica has them. Kafka's default.
    #[default]
    All,
}

impl Acks {
    /// The value sent in a Produce request: 0, 1 or -1.
    #[must_use]
    pub const fn as_i16(self) -> i16 {
        match self {
            Self::None => 0,
            Self::Leader => 1,
            Self::All => -1,
        }
    }
}

/// A validated producer configuration. Build one with [`ProducerConfig::builder`], or take
/// [`ProducerConfig::default`] for Kafka's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerConfig {
    enable_idempotence: bool,
    acks: Acks,
    max_in_flight_requests_per_connection: u32,
    retries: u32,
    delivery_timeout: Duration,
    request_timeout: Duration,
    linger: Duration,
    batch_size: usize,
    max_request_size: usize,
    buffer_memory: usize,
    retry_backoff: Duration,
    retry_backoff_max: Duration,
    metadata_max_age: Duration,
    transactional_id: Option<String>,
    transaction_timeout: Duration,
    jitter_seed: u64,
    producer_id_expiration: Duration,
    /// Set by the embedder (a driver parses `compression.type`): the core has no codec.
    compression: Compression,
}

/// Kafka 4.x's defaults (`linger.ms` is 5 since KIP-1030).
const DEFAULT: ProducerConfig = ProducerConfig {
    enable_idempotence: true,
    acks: Acks::All,
    max_in_flight_requests_per_connection: 5,
    retries: i32::MAX as u32,
    delivery_timeout: Duration::from_millis(120_000),
    request_timeout: Duration::from_millis(30_000),
    linger: Duration::from_millis(5),
    batch_size: 16_384,
    max_request_size: 1_048_576,
    buffer_memory: 33_554_432,
    retry_backoff: Duration::from_millis(100),
    retry_backoff_max: Duration::from_millis(1_000),
    metadata_max_age: Duration::from_millis(300_000),
    transactional_id: None,
    transaction_timeout: Duration::from_millis(60_000),
    jitter_seed: 0,
    producer_id_expiration: Duration::from_millis(86_400_000),
    compression: Compression::None,
};

impl Default for ProducerConfig {
    fn default() -> Self {
        DEFAULT
    }
}

macro_rules! getters {
    ($($(#[$m:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$m])*
        #[must_use]
        pub fn $name(&self) -> $ty {
            self.$name
        }
    )*};
}

impl ProducerConfig {
    /// A builder starting from Kafka's defaults with no key set explicitly.
    #[must_use]
    pub fn builder() -> ProducerConfigBuilder {
        ProducerConfigBuilder::default()
    }

    /// Parses `(key, value)` pairs with [`ProducerConfigBuilder::set`] (a later pair for the
    /// same key wins) and builds the result.
    ///
    /// # Errors
    /// The first error of [`ProducerConfigBuilder::set`], else that of
    /// [`ProducerConfigBuilder::build`].
    pub fn from_properties<'a>(
        props: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ConfigError> {
        let mut builder = Self::builder();
        for (key, value) in props {
            builder.set(key, value)?;
        }
        builder.build()
    }

    getters! {
        /// `enable.idempotence` after Kafka's rules: `false` if it was switched off because
        /// `acks` or `retries` conflicted and the user had not set it explicitly.
        enable_idempotence: bool;
        /// `acks`.
        acks: Acks;
        /// `max.in.flight.requests.per.connection` (1 means strict ordering, no pipelining).
        max_in_flight_requests_per_connection: u32;
        /// `retries`.
        retries: u32;
        /// `delivery.timeout.ms`, raised to `linger + request_timeout` if it was not set.
        delivery_timeout: Duration;
        /// `request.timeout.ms`.
        request_timeout: Duration;
        /// `linger.ms`.
        linger: Duration;
        /// `batch.size` in bytes.
        batch_size: usize;
        /// `max.request.size` in bytes.
        max_request_size: usize;
        /// `buffer.memory` in bytes: `send` refuses records beyond it.
        buffer_memory: usize;
        /// `retry.backoff.ms`: the first retry's backoff.
        retry_backoff: Duration;
        /// `retry.backoff.max.ms`: the backoff's cap.
        retry_backoff_max: Duration;
        /// `metadata.max.age.ms`.
        metadata_max_age: Duration;
        /// `transaction.timeout.ms`.
        transaction_timeout: Duration;
        /// `kacrab.jitter.seed`: the seed of the retry backoff's jitter.
        jitter_seed: u64;
        /// `kacrab.producer.id.expiration.ms`: how long the producer assumes the brokers
        /// keep its state on a partition after the last batch it wrote there (the
        /// brokers' `producer.id.expiration.ms`, default one day, minus the most the
        /// brokers' clocks may run ahead of the producer's). After that the broker
        /// accepts any sequence (KIP-360), so the producer sends one batch at a time on
        /// the partition until an append under its identity is acknowledged again.
        producer_id_expiration: Duration;
    }

    /// How batches are compressed: the compressor the embedder registered with
    /// [`ProducerConfigBuilder::compression`], [`Compression::None`] by default.
    #[must_use]
    pub fn compression(&self) -> &Compression {
        &self.compression
    }

    /// `transactional.id`, if one is set.
    #[must_use]
    pub fn transactional_id(&self) -> Option<&str> {
        self.transactional_id.as_deref()
    }

    /// Whether this is a transactional producer (a `transactional.id` is set).
    #[must_use]
    pub fn is_transactional(&self) -> bool {
        self.transactional_id.is_some()
    }
}

/// Builds a [`ProducerConfig`]. Each setter marks its key as explicitly set, which matters
/// for `enable.idempotence` and `delivery.timeout.ms` (see [`ProducerConfigBuilder::build`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerConfigBuilder {
    values: ProducerConfig,
    idempotence_set: bool,
    delivery_timeout_set: bool,
    producer_id_expiration_set: bool,
}

macro_rules! setters {
    ($($(#[$m:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$m])*
        pub fn $name(&mut self, value: $ty) -> &mut Self {
            self.values.$name = value;
            self
        }
    )*};
}

impl ProducerConfigBuilder {
    /// Registers the compressor every batch goes through (the `compression.type` a
    /// driver parsed, or the embedder's own codec); see [`crate::compression`].
    pub fn compression(&mut self, compression: Compression) -> &mut Self {
        self.values.compression = compression;
        self
    }

    /// Sets `enable.idempotence`.
    pub fn enable_idempotence(&mut self, value: bool) -> &mut Self {
        self.values.enable_idempotence = value;
        self.idempotence_set = true;
        self
    }

    /// Sets `delivery.timeout.ms` (at most `i32::MAX` ms).
    pub fn delivery_timeout(&mut self, value: Duration) -> &mut Self {
        self.values.delivery_timeout = value;
        self.delivery_timeout_set = true;
        self
    }

    /// Sets `kacrab.producer.id.expiration.ms`: the brokers' `producer.id.expiration.ms`
    /// the producer assumes, less any clock skew (see
    /// [`ProducerConfig::producer_id_expiration`]). Must exceed `delivery.timeout.ms +
    /// request.timeout.ms`.
    pub fn producer_id_expiration(&mut self, value: Duration) -> &mut Self {
        self.values.producer_id_expiration = value;
        self.producer_id_expiration_set = true;
        self
    }

    setters! {
        /// Sets `acks`.
        acks: Acks;
        /// Sets `max.in.flight.requests.per.connection` (at least 1; at most 5 when idempotent).
        max_in_flight_requests_per_connection: u32;
        /// Sets `retries` (at most `i32::MAX`).
        retries: u32;
        /// Sets `request.timeout.ms` (positive, at most `i32::MAX` ms).
        request_timeout: Duration;
        /// Sets `linger.ms`.
        linger: Duration;
        /// Sets `batch.size` (positive, at most `i32::MAX`).
        batch_size: usize;
        /// Sets `max.request.size` (at most `i32::MAX`).
        max_request_size: usize;
        /// Sets `buffer.memory`.
        buffer_memory: usize;
        /// Sets `retry.backoff.ms`.
        retry_backoff: Duration;
        /// Sets `retry.backoff.max.ms`. Below `retry.backoff.ms` it is a constant backoff.
        retry_backoff_max: Duration;
        /// Sets `metadata.max.age.ms`.
        metadata_max_age: Duration;
        /// Sets `transaction.timeout.ms` (at most `i32::MAX` ms).
        transaction_timeout: Duration;
        /// Sets `kacrab.jitter.seed`.
        jitter_seed: u64;
    }

    /// Sets `transactional.id` (non-empty), which makes the producer transactional.
    pub fn transactional_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.values.transactional_id = Some(id.into());
        self
    }

    /// Sets a key from its string form, parsed as Kafka parses it: surrounding whitespace is
    /// ignored, booleans are `true`/`false` in any case, `acks` is `all`, `-1`, `0` or `1`,
    /// and `*.ms` values are milliseconds.
    ///
    /// # Errors
    /// [`ConfigError::UnknownKey`] for a key not in [`keys::ALL`]; [`ConfigError::InvalidValue`]
    /// for a value that does not parse or is negative.
    pub fn set(&mut self, key: &str, value: &str) -> Result<&mut Self, ConfigError> {
        let ms = Duration::from_millis;
        match key {
            keys::ENABLE_IDEMPOTENCE => {
                let v = value.trim();
                if v.eq_ignore_ascii_case("true") {
                    self.enable_idempotence(true)
                } else if v.eq_ignore_ascii_case("false") {
                    self.enable_idempotence(false)
                } else {
                    return Err(invalid(
                        keys::ENABLE_IDEMPOTENCE,
                        value,
                        "expected true or false",
                    ));
                }
            }
            keys::ACKS => self.acks(match value.trim() {
                "all" | "-1" => Acks::All,
                "1" => Acks::Leader,
                "0" => Acks::None,
                _ => return Err(invalid(keys::ACKS, value, "expected one of all, -1, 0, 1")),
            }),
            keys::MAX_IN_FLIGHT => {
                self.max_in_flight_requests_per_connection(parse_int(keys::MAX_IN_FLIGHT, value)?)
            }
            keys::RETRIES => self.retries(parse_int(keys::RETRIES, value)?),
            keys::DELIVERY_TIMEOUT => {
                self.delivery_timeout(ms(parse_int(keys::DELIVERY_TIMEOUT, value)?.into()))
            }
            keys::REQUEST_TIMEOUT => {
                self.request_timeout(ms(parse_int(keys::REQUEST_TIMEOUT, value)?.into()))
            }
            keys::LINGER => self.linger(ms(parse_long(keys::LINGER, value)?)),
            keys::BATCH_SIZE => self.batch_size(to_usize(parse_int(keys::BATCH_SIZE, value)?)),
            keys::MAX_REQUEST_SIZE => {
                self.max_request_size(to_usize(parse_int(keys::MAX_REQUEST_SIZE, value)?))
            }
            keys::BUFFER_MEMORY => self.buffer_memory(
                usize::try_from(parse_long(keys::BUFFER_MEMORY, value)?).unwrap_or(usize::MAX),
            ),
            keys::RETRY_BACKOFF => self.retry_backoff(ms(parse_long(keys::RETRY_BACKOFF, value)?)),
            keys::RETRY_BACKOFF_MAX => {
                self.retry_backoff_max(ms(parse_long(keys::RETRY_BACKOFF_MAX, value)?))
            }
            keys::METADATA_MAX_AGE => {
                self.metadata_max_age(ms(parse_long(keys::METADATA_MAX_AGE, value)?))
            }
            keys::TRANSACTIONAL_ID => self.transactional_id(value.trim()),
            keys::TRANSACTION_TIMEOUT => {
                self.transaction_timeout(ms(parse_int(keys::TRANSACTION_TIMEOUT, value)?.into()))
            }
            keys::PRODUCER_ID_EXPIRATION => {
                self.producer_id_expiration(ms(parse_long(keys::PRODUCER_ID_EXPIRATION, value)?))
            }
            keys::JITTER_SEED => self.jitter_seed(value.trim().parse().map_err(|_| {
                invalid(keys::JITTER_SEED, value, "not an unsigned 64-bit integer")
            })?),
            _ => return Err(ConfigError::UnknownKey(key.to_string())),
        };
        Ok(self)
    }

    /// Validates the configuration and applies Kafka's cross-key rules, in Kafka's order:
    ///
    /// 1. Ranges of single keys ([`ConfigError::InvalidValue`], [`ConfigError::ZeroBatchSize`]).
    /// 2. If idempotence is enabled (explicitly or by default): `retries == 0`, then
    ///    `acks != all`, are errors if `enable.idempotence` was set explicitly and otherwise
    ///    switch idempotence off; `max.in.flight.requests.per.connection > 5` is always an
    ///    error (Kafka 4.x no longer switches idempotence off for it).
    /// 3. A `transactional.id` requires idempotence to still be on.
    /// 4. `delivery.timeout.ms >= linger.ms + request.timeout.ms` (each capped at `i32::MAX`
    ///    ms, as Kafka does): an error if the delivery timeout was set explicitly, otherwise
    ///    it is raised to that sum.
    /// 5. An explicitly set `kacrab.producer.id.expiration.ms` must exceed
    ///    `delivery.timeout.ms + request.timeout.ms`.
    ///
    /// # Errors
    /// The first rule broken.
    pub fn build(&self) -> Result<ProducerConfig, ConfigError> {
        let mut c = self.values.clone();
        check_ranges(&c)?;

        if c.enable_idempotence {
            let explicit = self.idempotence_set;
            let mut disable = false;
            if c.retries == 0 {
                if explicit {
                    return Err(ConfigError::IdempotenceRequiresRetries);
                }
                disable = true;
            }
            if c.acks != Acks::All {
                if explicit {
                    return Err(ConfigError::IdempotenceRequiresAcksAll);
                }
                disable = true;
            }
            let max_in_flight = c.max_in_flight_requests_per_connection;
            if max_in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE {
                return Err(ConfigError::MaxInFlightTooHigh {
                    value: max_in_flight,
                    max: MAX_IN_FLIGHT_FOR_IDEMPOTENCE,
                });
            }
            c.enable_idempotence = !disable;
        }
        if c.transactional_id.is_some() && !c.enable_idempotence {
            return Err(ConfigError::TransactionalRequiresIdempotence);
        }

        let minimum = (c.linger.min(INT_MAX_MS) + c.request_timeout).min(INT_MAX_MS);
        if c.delivery_timeout < minimum {
            if self.delivery_timeout_set {
                return Err(ConfigError::DeliveryTimeoutTooSmall {
                    delivery: c.delivery_timeout,
                    minimum,
                });
            }
            c.delivery_timeout = minimum;
        }
        // Left at its default, a delivery timeout of a day or more is accepted (the
        // producer then sends one batch at a time per partition after every ack).
        let minimum = c.delivery_timeout + c.request_timeout;
        if self.producer_id_expiration_set && c.producer_id_expiration <= minimum {
            return Err(ConfigError::ProducerIdExpirationTooSmall {
                expiration: c.producer_id_expiration,
                minimum,
            });
        }
        Ok(c)
    }
}

/// The largest value of a Kafka `INT` key holding milliseconds.
const INT_MAX_MS: Duration = Duration::from_millis(i32::MAX as u64);

fn invalid(key: &'static str, value: &str, reason: &'static str) -> ConfigError {
    ConfigError::InvalidValue {
        key,
        value: value.to_string(),
        reason,
    }
}

/// A Kafka `INT` value that must not be negative.
fn parse_int(key: &'static str, value: &str) -> Result<u32, ConfigError> {
    let n: i32 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, "not a 32-bit integer"))?;
    u32::try_from(n).map_err(|_| invalid(key, value, "must not be negative"))
}

/// A Kafka `LONG` value that must not be negative.
fn parse_long(key: &'static str, value: &str) -> Result<u64, ConfigError> {
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, "not a 64-bit integer"))?;
    u64::try_from(n).map_err(|_| invalid(key, value, "must not be negative"))
}

fn to_usize(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Single-key ranges. Typed setters accept their Rust type's whole range, except for the
/// durations Kafka sends as an `i32` of milliseconds.
fn check_ranges(c: &ProducerConfig) -> Result<(), ConfigError> {
    if c.max_in_flight_requests_per_connection == 0 {
        return Err(invalid(keys::MAX_IN_FLIGHT, "0", "must be at least 1"));
    }
    if c.batch_size == 0 {
        return Err(ConfigError::ZeroBatchSize);
    }
    if c.request_timeout.is_zero() {
        return Err(invalid(keys::REQUEST_TIMEOUT, "0", "must be positive"));
    }
    if c.transactional_id.as_deref() == Some("") {
        return Err(invalid(keys::TRANSACTIONAL_ID, "", "must be non-empty"));
    }
    for (key, d) in [
        (keys::DELIVERY_TIMEOUT, c.delivery_timeout),
        (keys::REQUEST_TIMEOUT, c.request_timeout),
        (keys::TRANSACTION_TIMEOUT, c.transaction_timeout),
    ] {
        if d > INT_MAX_MS {
            let value = d.as_millis().to_string();
            return Err(invalid(
                key,
                &value,
                "more milliseconds than a 32-bit integer holds",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
