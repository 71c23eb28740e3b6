//! The configuration rules, key by key and across keys.
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
    let timeouts = [
        ("delivery.timeout.ms", "30000"),
        ("request.timeout.ms", "1000"),
    ];
    let at_minimum = [
        timeouts[0],
        timeouts[1],
        ("kacrab.producer.id.expiration.ms", "31000"),
    ];
    let (expiration, minimum) = (ms(31_000), ms(31_000));
    assert_eq!(
        props(&at_minimum),
        Err(ProducerIdExpirationTooSmall {
            expiration,
            minimum
        })
    );
    let above = [
        timeouts[0],
        timeouts[1],
        ("kacrab.producer.id.expiration.ms", "31001"),
    ];
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
        ("kacrab.producer.id.expiration.ms", "3600000"),
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
        .producer_id_expiration(ms(3_600_000))
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
