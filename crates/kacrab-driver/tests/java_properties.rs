//! A Java producer's `producer.properties`, read as `java.util.Properties` reads it,
//! loads through `SessionConfig::from_properties` unchanged.

use std::time::Duration;

use kacrab_driver::{parse_java_properties, SessionConfig, SessionConfigError};

const FIXTURE: &str = include_str!("fixtures/producer.properties");

fn load(text: &str) -> Result<SessionConfig, SessionConfigError> {
    let pairs = parse_java_properties(text).expect("well-formed properties");
    SessionConfig::from_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

#[test]
fn a_java_producer_properties_file_loads_unchanged() {
    let config = load(FIXTURE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.bootstrap(),
        [
            "kafka-1.example.internal:9092",
            "kafka-2.example.internal:9092",
            "kafka-3.example.internal:9092"
        ]
    );
    assert_eq!(config.client_id(), Some("orders-service eu"));
    assert_eq!(config.max_block(), Duration::from_millis(60_000));
    assert_eq!(config.core().linger(), Duration::from_millis(10));
    assert_eq!(config.core().batch_size(), 65_536);
    let noted: Vec<&str> = config.notes().iter().map(|n| n.key).collect();
    assert_eq!(
        noted,
        ["client.dns.lookup", "key.serializer", "value.serializer"]
    );
}

#[test]
fn a_setting_kacrab_can_not_honour_fails_as_known_and_a_typo_as_unknown() {
    let intercepted = format!("{FIXTURE}\ninterceptor.classes=com.example.Audit\n");
    let err = load(&intercepted).unwrap_err();
    assert!(
        matches!(
            err,
            SessionConfigError::NotSupported {
                key: "interceptor.classes",
                ..
            }
        ),
        "{err}"
    );
    assert!(err
        .to_string()
        .starts_with("interceptor.classes: known Kafka producer setting, not supported: "));

    let typo = FIXTURE.replace("linger.ms=10", "linger.msec=10");
    let err = load(&typo).unwrap_err();
    assert_eq!(
        err,
        SessionConfigError::UnknownKey {
            key: "linger.msec".into(),
            suggestion: Some("linger.ms")
        }
    );
    assert!(err.to_string().contains("did you mean linger.ms?"), "{err}");
}

/// Every key of Kafka 4.x's producer configuration at its default value (the fixture
/// lists them, from `ProducerConfig`'s `ConfigDef`): a Java producer's file with nothing
/// changed loads, and no key is refused at its default. Each line is also loaded alone,
/// so a failure names its key.
#[test]
fn every_producer_key_at_its_kafka_default_loads() {
    const DEFAULTS: &str = include_str!("fixtures/producer-defaults.properties");
    let pairs = parse_java_properties(DEFAULTS).expect("well-formed properties");
    let refused: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| {
            let mut b = SessionConfig::builder();
            b.set(k, v).err().map(|e| format!("{k}={v}: {e}"))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "refused at Kafka's default:\n{}",
        refused.join("\n")
    );
    let config = load(DEFAULTS).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.core().linger(), Duration::from_millis(5));
    assert_eq!(config.socket_buffers(), (Some(131_072), Some(32_768)));
    assert_eq!(
        config.connection_setup_timeout_max(),
        Duration::from_secs(30)
    );
}

/// Kafka's default `sasl.mechanism` (GSSAPI) loads, but a SASL protocol still needs a
/// mechanism kacrab supports: the default is accepted only where it asks for nothing.
#[test]
fn the_default_sasl_mechanism_does_not_make_a_sasl_protocol_work() {
    let err = SessionConfig::from_properties([
        ("bootstrap.servers", "h:1"),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "GSSAPI"),
    ])
    .unwrap_err();
    assert!(matches!(err, SessionConfigError::Sasl(_)), "{err}");
}
