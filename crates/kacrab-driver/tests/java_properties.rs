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

/// A key no Kafka client defines (`schema.registry.url`, `basic.auth.*` beside the Avro
/// serializers) is ignored and listed, as Java's `AbstractConfig.logUnused` warns
/// "supplied but isn't a known config" and goes on; a key within a few edits of a
/// known one is still a typo that fails. Before, every unknown key was fatal.
#[test]
fn keys_no_kafka_client_defines_are_ignored_and_listed() {
    let text = format!(
        "{FIXTURE}\nschema.registry.url=http://registry:8081\n\
         basic.auth.credentials.source=USER_INFO\nschema.registry.url=http://other:8081\n"
    );
    let config = load(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.ignored_keys(),
        ["schema.registry.url", "basic.auth.credentials.source"]
    );
    let same = SessionConfig::from_java_properties(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(same.ignored_keys(), config.ignored_keys());
    // A typo is not "another client's key".
    let typo = format!("{FIXTURE}\nbatch.sise=1\n");
    assert!(matches!(
        load(&typo),
        Err(SessionConfigError::UnknownKey {
            suggestion: Some("batch.size"),
            ..
        })
    ));
}

/// Every refused line of a file is reported in one error, in file order, each with its
/// line and key (Java's `ConfigDef.parse` stops at the first, but then warns rather
/// than fails for unknown keys; a user fixing a file should see all of it at once).
#[test]
fn every_problem_of_a_file_is_reported_at_once_in_file_order() {
    let text = "bootstrap.servers=h:9092\n\
                linger.msec=5\n\
                # a comment\n\
                interceptor.classes=com.example.Audit\n\
                max.block.ms=soon\n\
                schema.registry.url=http://registry:8081\n\
                acks=some\n";
    let err = SessionConfig::from_java_properties(text).unwrap_err();
    let SessionConfigError::Problems(problems) = &err else {
        panic!("a list of problems: {err:?}");
    };
    let lines: Vec<(Option<usize>, &str)> = problems
        .problems()
        .iter()
        .map(|p| (p.line, p.key.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            (Some(2), "linger.msec"),
            (Some(4), "interceptor.classes"),
            (Some(5), "max.block.ms"),
            (Some(7), "acks"),
        ]
    );
    let shown = err.to_string();
    assert!(
        shown.starts_with("4 problems in the configuration:"),
        "{shown}"
    );
    assert!(shown.contains("line 2 (linger.msec): "), "{shown}");
    assert!(shown.contains("did you mean linger.ms?"), "{shown}");
    assert!(shown.contains("line 4 (interceptor.classes): "), "{shown}");
    // The order of lines decides the order of the report, not which one is reported.
    let reversed: String = text.lines().rev().map(|l| format!("{l}\n")).collect();
    let SessionConfigError::Problems(again) =
        SessionConfig::from_java_properties(&reversed).unwrap_err()
    else {
        panic!("a list of problems");
    };
    assert_eq!(again.problems().len(), 4);
    // Property pairs report the same problems, without lines.
    let pairs = parse_java_properties(text).unwrap();
    let err = SessionConfig::from_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .unwrap_err();
    assert!(
        matches!(&err, SessionConfigError::Problems(p) if p.problems().len() == 4
            && p.problems().iter().all(|p| p.line.is_none())),
        "{err}"
    );
}

/// `SessionConfig::from_properties_file` reads a file (every problem at once, with
/// lines); a file that cannot be read is named with the operating system's error.
#[test]
fn a_properties_file_loads_and_an_unreadable_one_is_named() {
    let dir = std::env::temp_dir().join(format!("kacrab-props-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("producer.properties");
    std::fs::write(&path, FIXTURE).unwrap();
    let config = SessionConfig::from_properties_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.core().linger(), Duration::from_millis(10));

    let missing = dir.join("missing.properties");
    let err = SessionConfig::from_properties_file(&missing).unwrap_err();
    assert!(
        matches!(&err, SessionConfigError::ReadFile { path, .. } if *path == missing.display().to_string()),
        "{err:?}"
    );
    assert!(err.to_string().contains("os error"), "{err}");

    // One refused line of a file keeps its line number.
    std::fs::write(&path, "bootstrap.servers=h:1\n\nlinger.msec=1\n").unwrap();
    let err = SessionConfig::from_properties_file(&path).unwrap_err();
    assert!(err.to_string().contains("line 3 (linger.msec)"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An OIDC client-credentials file (Kafka's KIP-768 settings: the token endpoint and an
/// `OAuthBearerLoginModule` line with clientId/clientSecret, Java's
/// `OAuthBearerLoginCallbackHandler`) parses; the session alone cannot fetch tokens, so
/// building it refuses the setup once, naming kacrab-tokio's feature `oidc` and the
/// token handle, never the unrelated unsecured-JWT error; the client secret is not shown.
#[test]
fn an_oidc_file_parses_and_asks_for_a_driver_that_fetches_tokens() {
    let text = "bootstrap.servers=h:9093\n\
                security.protocol=SASL_SSL\n\
                sasl.mechanism=OAUTHBEARER\n\
                sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
                sasl.oauthbearer.token.endpoint.url=https://idp.example/oauth2/token\n\
                sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                required clientId='app' clientSecret='s3cr3t-7f' scope='kafka';\n";
    let err = SessionConfig::from_java_properties(text).unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("feature `oidc`"), "{shown}");
    assert!(shown.contains("OAuthBearerTokenHandle"), "{shown}");
    assert!(
        !shown.contains("unsecured") && !shown.contains("s3cr3t-7f"),
        "{shown}"
    );
    assert!(!format!("{err:?}").contains("s3cr3t-7f"));
}
