//! The producer's configuration: Kafka's key names, Kafka 4.x defaults, and the
//! cross-key rules `ProducerConfig` and `KafkaProducer` apply when a producer is created.
//!
//! A [`ProducerConfig`] only exists validated: it is built by [`ProducerConfigBuilder::build`],
//! which also remembers which keys the user set explicitly, because two Kafka rules depend
//! on it (idempotence is silently switched off, or `delivery.timeout.ms` silently raised,
//! only when the user did not ask for the conflicting value).

use alloc::string::{String, ToString};
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
            keys::PRODUCER_ID_EXPIRATION => self.producer_id_expiration(ms(parse_long(
                keys::PRODUCER_ID_EXPIRATION,
                value,
            )?)),
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
mod tests {
    use super::ConfigError::*;
    use super::*;
    use alloc::vec::Vec;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn inv(key: &'static str, value: &str, reason: &'static str) -> ConfigError {
        let value = value.into();
        InvalidValue { key, value, reason }
    }

    fn props(pairs: &[(&str, &str)]) -> Result<ProducerConfig, ConfigError> {
        ProducerConfig::from_properties(pairs.iter().copied())
    }

    /// (effective enable.idempotence, acks, retries, max.in.flight) of a valid config.
    fn idem(pairs: &[(&str, &str)]) -> (bool, Acks, u32, u32) {
        let c = props(pairs).unwrap();
        let in_flight = c.max_in_flight_requests_per_connection();
        (c.enable_idempotence(), c.acks(), c.retries(), in_flight)
    }

    const MAX: u32 = i32::MAX as u32;
    const TX: (&str, &str) = ("transactional.id", "transactionalId");
    const IDEM_ON: (&str, &str) = ("enable.idempotence", "true");
    const IDEM_OFF: (&str, &str) = ("enable.idempotence", "false");

    /// Kafka 4.x `ProducerConfig` defaults.
    #[test]
    fn defaults_match_kafka() {
        let c = ProducerConfig::default();
        assert_eq!(idem(&[]), (true, Acks::All, 2_147_483_647, 5));
        assert_eq!(
            (c.delivery_timeout(), c.request_timeout()),
            (ms(120_000), ms(30_000))
        );
        assert_eq!(
            (c.linger(), c.batch_size(), c.max_request_size()),
            (ms(5), 16_384, 1_048_576)
        );
        assert_eq!(
            (c.retry_backoff(), c.retry_backoff_max()),
            (ms(100), ms(1_000))
        );
        assert_eq!(
            (c.metadata_max_age(), c.transaction_timeout()),
            (ms(300_000), ms(60_000))
        );
        assert_eq!(
            (c.transactional_id(), c.is_transactional(), c.jitter_seed()),
            (None, false, 0)
        );
        assert_eq!(ProducerConfig::builder().build(), Ok(c.clone()));
        assert_eq!(props(&[]), Ok(c));
        let wire = [Acks::None, Acks::Leader, Acks::All].map(Acks::as_i16);
        assert_eq!((wire, Acks::default()), ([0, 1, -1], Acks::All));
    }

    /// Mirrors `KafkaProducerTest.testOverwriteAcksAndRetriesForIdempotentProducers`.
    #[test]
    fn overwrite_acks_and_retries_for_idempotent_producers() {
        assert_eq!(idem(&[TX]), (true, Acks::All, MAX, 5));
        let c = props(&[TX]).unwrap();
        assert_eq!(
            (c.is_transactional(), c.transactional_id()),
            (true, Some("transactionalId"))
        );
    }

    /// Mirrors `KafkaProducerTest.testAcksAndIdempotenceForIdempotentProducers`.
    #[test]
    fn acks_and_idempotence_for_idempotent_producers() {
        assert_eq!(
            idem(&[("acks", "0"), IDEM_OFF]),
            (false, Acks::None, MAX, 5)
        );
        assert_eq!(
            idem(&[("acks", "all"), IDEM_OFF]),
            (false, Acks::All, MAX, 5)
        );
        // enable.idempotence not set: a conflicting acks silently disables idempotence.
        assert_eq!(idem(&[("acks", "0")]), (false, Acks::None, MAX, 5));
        assert_eq!(idem(&[("acks", "1")]), (false, Acks::Leader, MAX, 5));
        let no_tx = Err(TransactionalRequiresIdempotence);
        assert_eq!(props(&[("acks", "0"), IDEM_OFF, TX]), no_tx);
        assert_eq!(props(&[("acks", "0"), TX]), no_tx);
        let explicit = props(&[("acks", "1"), IDEM_ON]);
        assert_eq!(explicit, Err(IdempotenceRequiresAcksAll));
    }

    /// Mirrors `KafkaProducerTest.testRetriesAndIdempotenceForIdempotentProducers`.
    #[test]
    fn retries_and_idempotence_for_idempotent_producers() {
        assert_eq!(
            idem(&[("retries", "0"), IDEM_OFF]),
            (false, Acks::All, 0, 5)
        );
        assert_eq!(idem(&[("retries", "0")]), (false, Acks::All, 0, 5));
        let no_tx = Err(TransactionalRequiresIdempotence);
        assert_eq!(props(&[("retries", "0"), IDEM_OFF, TX]), no_tx);
        assert_eq!(props(&[("retries", "0"), TX]), no_tx);
        let explicit = props(&[("retries", "0"), IDEM_ON]);
        assert_eq!(explicit, Err(IdempotenceRequiresRetries));
        // Kafka checks retries before acks.
        let both = props(&[("acks", "1"), ("retries", "0"), IDEM_ON]);
        assert_eq!(both, Err(IdempotenceRequiresRetries));
    }

    /// Mirrors `KafkaProducerTest.testInflightRequestsAndIdempotenceForIdempotentProducers`
    /// and `ProducerConfigTest.testUpperboundCheckOfEnableIdempotence`: in Kafka 4.x more
    /// than 5 in flight is an error even when idempotence is only on by default.
    #[test]
    fn inflight_requests_and_idempotence_for_idempotent_producers() {
        let six = ("max.in.flight.requests.per.connection", "6");
        let five = ("max.in.flight.requests.per.connection", "5");
        assert_eq!(idem(&[six, IDEM_OFF]), (false, Acks::All, MAX, 6));
        let too_high = Err(MaxInFlightTooHigh { value: 6, max: 5 });
        assert_eq!(props(&[six]), too_high);
        assert_eq!(props(&[six, IDEM_ON]), too_high);
        assert_eq!(props(&[six, TX]), too_high);
        // Checked even when acks has already switched idempotence off, as Kafka does.
        assert_eq!(props(&[six, ("acks", "1")]), too_high);
        assert_eq!(
            props(&[five, IDEM_OFF, TX]),
            Err(TransactionalRequiresIdempotence)
        );
        assert_eq!(idem(&[five]), (true, Acks::All, MAX, 5));
    }

    /// `KafkaProducer.configureDeliveryTimeout`.
    #[test]
    fn delivery_timeout_raised_unless_explicit() {
        let linger = ("linger.ms", "100000");
        let c = props(&[linger]).unwrap();
        assert_eq!(c.delivery_timeout(), ms(130_000));
        let explicit = props(&[linger, ("delivery.timeout.ms", "120000")]);
        let (delivery, minimum) = (ms(120_000), ms(130_000));
        assert_eq!(explicit, Err(DeliveryTimeoutTooSmall { delivery, minimum }));
        // Exactly the sum is accepted. The sum saturates at i32::MAX ms, as in Kafka.
        let c = props(&[("delivery.timeout.ms", "30005")]).unwrap();
        assert_eq!(c.delivery_timeout(), ms(30_005));
        let c = props(&[("linger.ms", "9223372036854775807")]).unwrap();
        assert_eq!(c.delivery_timeout(), INT_MAX_MS);
    }

    /// The assumed producer-state expiry must outlast any batch's resends.
    #[test]
    fn producer_id_expiration_must_exceed_delivery_and_request_timeouts() {
        let c = props(&[]).unwrap();
        assert_eq!(c.producer_id_expiration(), ms(86_400_000));
        let timeouts = [("delivery.timeout.ms", "30000"), ("request.timeout.ms", "1000")];
        let at_minimum = [timeouts[0], timeouts[1], ("kacrab.producer.id.expiration.ms", "31000")];
        let (expiration, minimum) = (ms(31_000), ms(31_000));
        assert_eq!(
            props(&at_minimum),
            Err(ProducerIdExpirationTooSmall {
                expiration,
                minimum
            })
        );
        let above = [timeouts[0], timeouts[1], ("kacrab.producer.id.expiration.ms", "31001")];
        assert_eq!(props(&above).unwrap().producer_id_expiration(), ms(31_001));
        // Not set: a delivery timeout past the default day is still accepted.
        assert!(props(&[("delivery.timeout.ms", "2147483647")]).is_ok());
    }

    #[test]
    fn single_key_ranges() {
        let b = ProducerConfig::builder;
        assert_eq!(b().batch_size(0).build(), Err(ZeroBatchSize));
        assert_eq!(props(&[("batch.size", "0")]), Err(ZeroBatchSize));
        let zero_in_flight = inv(keys::MAX_IN_FLIGHT, "0", "must be at least 1");
        let no_timeout = inv(keys::REQUEST_TIMEOUT, "0", "must be positive");
        let empty_id = inv(keys::TRANSACTIONAL_ID, "", "must be non-empty");
        let cases = [
            (
                b().max_in_flight_requests_per_connection(0).build(),
                &zero_in_flight,
            ),
            (props(&[(keys::MAX_IN_FLIGHT, "0")]), &zero_in_flight),
            (b().request_timeout(Duration::ZERO).build(), &no_timeout),
            (props(&[(keys::REQUEST_TIMEOUT, "0")]), &no_timeout),
            (b().transactional_id("").build(), &empty_id),
            (props(&[(keys::TRANSACTIONAL_ID, "  ")]), &empty_id),
        ];
        for (got, want) in cases {
            assert_eq!(got.as_ref(), Err(want));
        }
        let long = b().transaction_timeout(ms(1 << 31)).build();
        let reason = "more milliseconds than a 32-bit integer holds";
        assert_eq!(
            long,
            Err(inv(keys::TRANSACTION_TIMEOUT, "2147483648", reason))
        );
        // Values that only matter inside the core take their Rust type's whole range.
        let wide = b().retries(u32::MAX).linger(Duration::MAX).build();
        assert_eq!(wide.map(|c| c.retries()), Ok(u32::MAX));
    }

    #[test]
    fn string_form_sets_every_key() {
        let pairs = [
            ("enable.idempotence", " TRUE "),
            ("acks", "-1"),
            ("max.in.flight.requests.per.connection", "3"),
            ("retries", "7"),
            ("delivery.timeout.ms", "90000"),
            ("request.timeout.ms", "20000"),
            ("linger.ms", "10"),
            ("batch.size", "1024"),
            ("max.request.size", "2048"),
            ("buffer.memory", "4096"),
            ("retry.backoff.ms", "50"),
            ("retry.backoff.max.ms", "500"),
            ("metadata.max.age.ms", "60000"),
            ("transactional.id", " tx "),
            ("transaction.timeout.ms", "15000"),
            ("kacrab.jitter.seed", "18446744073709551615"),
        ];
        assert_eq!(pairs.iter().map(|p| p.0).collect::<Vec<_>>(), keys::ALL);
        let typed = ProducerConfig::builder()
            .enable_idempotence(true)
            .acks(Acks::All)
            .max_in_flight_requests_per_connection(3)
            .retries(7)
            .delivery_timeout(ms(90_000))
            .request_timeout(ms(20_000))
            .linger(ms(10))
            .batch_size(1024)
            .max_request_size(2048)
            .buffer_memory(4096)
            .retry_backoff(ms(50))
            .retry_backoff_max(ms(500))
            .metadata_max_age(ms(60_000))
            .transactional_id("tx")
            .transaction_timeout(ms(15_000))
            .jitter_seed(u64::MAX)
            .build()
            .unwrap();
        assert_eq!(props(&pairs).as_ref(), Ok(&typed));
        let c = &typed;
        assert_eq!(
            (c.max_in_flight_requests_per_connection(), c.retries()),
            (3, 7)
        );
        assert_eq!(
            (c.delivery_timeout(), c.request_timeout()),
            (ms(90_000), ms(20_000))
        );
        assert_eq!(
            (c.linger(), c.batch_size(), c.max_request_size()),
            (ms(10), 1024, 2048)
        );
        assert_eq!(
            (c.retry_backoff(), c.retry_backoff_max()),
            (ms(50), ms(500))
        );
        assert_eq!(
            (c.metadata_max_age(), c.transaction_timeout()),
            (ms(60_000), ms(15_000))
        );
        assert_eq!(
            (c.transactional_id(), c.jitter_seed()),
            (Some("tx"), u64::MAX)
        );
        assert_eq!(
            idem(&[("acks", "1"), ("enable.idempotence", "False")]).1,
            Acks::Leader
        );
    }

    #[test]
    fn string_form_rejects_bad_values() {
        let acks = "expected one of all, -1, 0, 1";
        let cases = [
            ("enable.idempotence", "yes", "expected true or false"),
            ("acks", "2", acks),
            ("acks", "ALL", acks),
            ("retries", "-1", "must not be negative"),
            ("retries", "2147483648", "not a 32-bit integer"),
            ("batch.size", "16k", "not a 32-bit integer"),
            ("request.timeout.ms", "1.5", "not a 32-bit integer"),
            ("linger.ms", "9223372036854775808", "not a 64-bit integer"),
            ("retry.backoff.ms", "-100", "must not be negative"),
            ("kacrab.jitter.seed", "-1", "not an unsigned 64-bit integer"),
        ];
        for (key, value, reason) in cases {
            assert_eq!(props(&[(key, value)]), Err(inv(key, value, reason)));
        }
        let unknown = props(&[("bootstrap.servers", "localhost:9092")]);
        assert_eq!(unknown, Err(UnknownKey("bootstrap.servers".into())));
    }

    #[test]
    fn later_properties_win() {
        let c = props(&[("acks", "1"), ("linger.ms", "7"), ("acks", "all")]).unwrap();
        assert_eq!(
            (c.acks(), c.linger(), c.enable_idempotence()),
            (Acks::All, ms(7), true)
        );
    }
}
