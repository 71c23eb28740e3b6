//! Every key of Kafka's producer configuration, and what kacrab answers to it.
//!
//! The list is `ProducerConfig`'s `ConfigDef` (clients/src/main/java/org/apache/kafka/
//! clients/producer/ProducerConfig.java, apache/kafka trunk 1eb76443), with the
//! `CommonClientConfigs` keys it defines, `SslConfigs.addClientSslSupport` and
//! `SaslConfigs.addClientSaslSupport`. A key is either implemented (the core's
//! `ProducerConfigBuilder::set` or one of the session's config modules parses it),
//! accepted and ignored with a note (it has no meaning for a client that sends bytes),
//! or refused as a known setting kacrab does not support, with the reason: a Java
//! `producer.properties` then fails on a line kacrab cannot honour with a message that
//! says so, never with the "unknown key" a typo gets.

/// What kacrab does with one Kafka producer key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Parsed by the core's or the session's configuration.
    Implemented,
    /// Accepted and ignored; the note is readable through `SessionConfig::notes`.
    Ignored(&'static str),
    /// Owned by one of the session's config modules (named), which answers for it
    /// itself: parsed, or refused with that module's own reason.
    Module(&'static str),
    /// Refused: "known Kafka producer setting, not supported: <reason>". `unless` is a
    /// value (compared trimmed, ASCII case-insensitively) that describes what kacrab does
    /// anyway, accepted with a note: `compression.type=none` asks for nothing kacrab
    /// does not do.
    NotSupported {
        reason: &'static str,
        unless: Option<&'static str>,
    },
}

/// The keys owned by a session config module: the module's `set` claims them before
/// the catalogue is asked (see `SessionConfigBuilder::set`).
const SECURITY_MODULE: Answer = Answer::Module("config/security.rs"); // security.*, ssl.*
const SASL_MODULE: Answer = Answer::Module("config/sasl.rs"); // sasl.*
const COMPRESSION_MODULE: Answer = Answer::Module("config/compression.rs"); // compression.*
const METRICS_MODULE: Answer = Answer::Module("config/metrics.rs"); // metrics.*

const fn refused_unless(reason: &'static str, value: &'static str) -> Answer {
    Answer::NotSupported {
        reason,
        unless: Some(value),
    }
}

const SERIALIZER_NOTE: &str = "ignored: kacrab sends the bytes it is given, it has no \
                               serializer classes";

/// Every key, with its answer.
pub(crate) const KEYS: &[(&str, Answer)] = &[
    // ProducerConfig's own keys.
    ("acks", Answer::Implemented),
    ("batch.size", Answer::Implemented),
    ("bootstrap.servers", Answer::Implemented),
    ("buffer.memory", Answer::Implemented),
    // Kafka's default, `use_all_dns_ips`, is what kacrab does: each attempt to a host
    // dials its next resolved address (`ConnectOptions::address_index`, as Java's
    // `ClusterConnectionStates.connecting` moving to the next address).
    (
        "client.dns.lookup",
        refused_unless(
            "resolve_canonical_bootstrap_servers_only needs a reverse DNS lookup (Java's \
             InetAddress.getCanonicalHostName), which Rust's standard resolver cannot do; \
             only use_all_dns_ips (each attempt dials the host's next resolved address)",
            "use_all_dns_ips",
        ),
    ),
    ("client.id", Answer::Implemented),
    ("compression.type", compression_or("none")),
    ("compression.gzip.level", COMPRESSION_MODULE),
    ("compression.lz4.level", COMPRESSION_MODULE),
    ("compression.zstd.level", COMPRESSION_MODULE),
    (
        "config.providers",
        refused_unless(
            "config providers are Java classes that resolve ${...} references; kacrab \
             reads every value as written",
            "",
        ),
    ),
    ("connections.max.idle.ms", Answer::Implemented),
    ("delivery.timeout.ms", Answer::Implemented),
    ("enable.idempotence", Answer::Implemented),
    ("enable.metrics.push", METRICS_MODULE),
    (
        "interceptor.classes",
        refused_unless(
            "a Java class can not be loaded; implement ProducerInterceptor and install it \
             with ProducerBuilder::interceptor (kacrab-tokio), Extensions::interceptor \
             (kacrab-blocking) or Session::add_interceptor",
            "",
        ),
    ),
    ("key.serializer", Answer::Ignored(SERIALIZER_NOTE)),
    ("linger.ms", Answer::Implemented),
    ("max.block.ms", Answer::Implemented),
    ("max.in.flight.requests.per.connection", Answer::Implemented),
    ("max.request.size", Answer::Implemented),
    ("metadata.max.age.ms", Answer::Implemented),
    ("metadata.max.idle.ms", Answer::Implemented),
    (
        "metadata.recovery.strategy",
        refused_unless("rebootstrapping is not implemented (KIP-899)", "none"),
    ),
    (
        "metadata.recovery.rebootstrap.trigger.ms",
        refused(
            "kacrab has no rebootstrap timer: the bootstrap servers are always among the \
             addresses its cluster-wide requests try",
        ),
    ),
    ("metric.reporters", metrics_or("")),
    ("metrics.num.samples", METRICS_MODULE),
    ("metrics.recording.level", METRICS_MODULE),
    ("metrics.sample.window.ms", METRICS_MODULE),
    (
        "partitioner.adaptive.partitioning.enable",
        Answer::Implemented,
    ),
    ("partitioner.availability.timeout.ms", Answer::Implemented),
    (
        "partitioner.class",
        refused_unless(
            "a Java class can not be loaded; implement Partitioner and install it with \
             ProducerBuilder::partitioner (kacrab-tokio), Extensions::partitioner \
             (kacrab-blocking) or Session::set_partitioner",
            "",
        ),
    ),
    ("partitioner.ignore.keys", Answer::Implemented),
    ("receive.buffer.bytes", Answer::Implemented),
    ("reconnect.backoff.max.ms", Answer::Implemented),
    ("reconnect.backoff.ms", Answer::Implemented),
    ("request.timeout.ms", Answer::Implemented),
    ("retries", Answer::Implemented),
    ("retry.backoff.max.ms", Answer::Implemented),
    ("retry.backoff.ms", Answer::Implemented),
    ("security.protocol", security_or("PLAINTEXT")),
    ("security.providers", SECURITY_MODULE),
    ("send.buffer.bytes", Answer::Implemented),
    (
        "socket.connection.setup.timeout.max.ms",
        Answer::Implemented,
    ),
    ("socket.connection.setup.timeout.ms", Answer::Implemented),
    ("transaction.timeout.ms", Answer::Implemented),
    ("transactional.id", Answer::Implemented),
    (
        "transaction.two.phase.commit.enable",
        refused_unless(
            "two-phase commit with an external transaction manager (KIP-939) is not \
             implemented",
            "false",
        ),
    ),
    ("value.serializer", Answer::Ignored(SERIALIZER_NOTE)),
    // SslConfigs.addClientSslSupport.
    ("ssl.protocol", SECURITY_MODULE),
    ("ssl.provider", SECURITY_MODULE),
    ("ssl.cipher.suites", SECURITY_MODULE),
    ("ssl.enabled.protocols", SECURITY_MODULE),
    ("ssl.keystore.type", SECURITY_MODULE),
    ("ssl.keystore.location", SECURITY_MODULE),
    ("ssl.keystore.password", SECURITY_MODULE),
    ("ssl.key.password", SECURITY_MODULE),
    ("ssl.keystore.key", SECURITY_MODULE),
    ("ssl.keystore.certificate.chain", SECURITY_MODULE),
    ("ssl.truststore.certificates", SECURITY_MODULE),
    ("ssl.truststore.type", SECURITY_MODULE),
    ("ssl.truststore.location", SECURITY_MODULE),
    ("ssl.truststore.password", SECURITY_MODULE),
    ("ssl.keymanager.algorithm", SECURITY_MODULE),
    ("ssl.trustmanager.algorithm", SECURITY_MODULE),
    ("ssl.endpoint.identification.algorithm", SECURITY_MODULE),
    ("ssl.secure.random.implementation", SECURITY_MODULE),
    ("ssl.engine.factory.class", SECURITY_MODULE),
    // SaslConfigs.addClientSaslSupport.
    ("sasl.kerberos.service.name", SASL_MODULE),
    ("sasl.kerberos.kinit.cmd", SASL_MODULE),
    ("sasl.kerberos.ticket.renew.window.factor", SASL_MODULE),
    ("sasl.kerberos.ticket.renew.jitter", SASL_MODULE),
    ("sasl.kerberos.min.time.before.relogin", SASL_MODULE),
    ("sasl.login.refresh.window.factor", SASL_MODULE),
    ("sasl.login.refresh.window.jitter", SASL_MODULE),
    ("sasl.login.refresh.min.period.seconds", SASL_MODULE),
    ("sasl.login.refresh.buffer.seconds", SASL_MODULE),
    ("sasl.mechanism", SASL_MODULE),
    ("sasl.jaas.config", SASL_MODULE),
    ("sasl.client.callback.handler.class", SASL_MODULE),
    ("sasl.login.callback.handler.class", SASL_MODULE),
    ("sasl.login.class", SASL_MODULE),
    ("sasl.login.connect.timeout.ms", SASL_MODULE),
    ("sasl.login.read.timeout.ms", SASL_MODULE),
    ("sasl.login.retry.backoff.max.ms", SASL_MODULE),
    ("sasl.login.retry.backoff.ms", SASL_MODULE),
    ("sasl.oauthbearer.scope.claim.name", SASL_MODULE),
    ("sasl.oauthbearer.sub.claim.name", SASL_MODULE),
    ("sasl.oauthbearer.token.endpoint.url", SASL_MODULE),
    ("sasl.oauthbearer.jwks.endpoint.url", SASL_MODULE),
    ("sasl.oauthbearer.jwks.endpoint.refresh.ms", SASL_MODULE),
    (
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        SASL_MODULE,
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        SASL_MODULE,
    ),
    ("sasl.oauthbearer.clock.skew.seconds", SASL_MODULE),
    ("sasl.oauthbearer.expected.audience", SASL_MODULE),
    ("sasl.oauthbearer.expected.issuer", SASL_MODULE),
    ("sasl.oauthbearer.header.urlencode", SASL_MODULE),
];

const fn refused(reason: &'static str) -> Answer {
    Answer::NotSupported {
        reason,
        unless: None,
    }
}

/// Kafka's default values of keys kacrab does not act on, each with what kacrab does
/// instead: a Java `producer.properties` that writes out a default (or a tool that
/// dumps every key) loads, where the same key at any other value is refused. Consulted
/// only when the key's own answer refused the value.
pub(crate) const KAFKA_DEFAULTS: &[(&str, &str, &str)] = &[
    (
        "metric.reporters",
        "org.apache.kafka.common.metrics.JmxReporter",
        "accepted at Kafka's default: there is no JMX; read Session::metrics, or the \
         `metrics` facade (feature `metrics`)",
    ),
    (
        "metadata.recovery.strategy",
        "rebootstrap",
        "accepted at Kafka's default: kacrab keeps the bootstrap servers among the \
         addresses its metadata requests try, so a cluster whose known brokers all \
         changed is found again through them",
    ),
    (
        "metadata.recovery.rebootstrap.trigger.ms",
        "300000",
        "accepted at Kafka's default: the bootstrap servers are always among the \
         addresses tried, with no timer",
    ),
    (
        "ssl.keymanager.algorithm",
        "SunX509",
        "accepted at Kafka's default: a Java (JSSE) algorithm name; kacrab uses rustls",
    ),
    (
        "ssl.trustmanager.algorithm",
        "PKIX",
        "accepted at Kafka's default: a Java (JSSE) algorithm name; rustls verifies \
         certificate chains (PKIX) itself",
    ),
    (
        "sasl.mechanism",
        "GSSAPI",
        "accepted at Kafka's default, unused unless security.protocol is SASL_*, which \
         then needs sasl.mechanism set to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
    ),
    ("sasl.kerberos.kinit.cmd", "/usr/bin/kinit", KERBEROS_NOTE),
    (
        "sasl.kerberos.ticket.renew.window.factor",
        "0.8",
        KERBEROS_NOTE,
    ),
    ("sasl.kerberos.ticket.renew.jitter", "0.05", KERBEROS_NOTE),
    (
        "sasl.kerberos.min.time.before.relogin",
        "60000",
        KERBEROS_NOTE,
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "3600000",
        LOGIN_NOTE,
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "100",
        LOGIN_NOTE,
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "10000",
        LOGIN_NOTE,
    ),
    ("sasl.oauthbearer.clock.skew.seconds", "30", LOGIN_NOTE),
];

const KERBEROS_NOTE: &str = "accepted at Kafka's default, unused: GSSAPI (Kerberos) is not \
                             supported";
const LOGIN_NOTE: &str = "accepted at Kafka's default, unused: a broker's token validation \
                          setting, and a producer does not validate the tokens it sends";

/// The note for `key` set to `value`, if that value is Kafka's default for a key
/// kacrab does not act on (compared trimmed, ASCII case-insensitively).
pub(crate) fn kafka_default(key: &str, value: &str) -> Option<(&'static str, &'static str)> {
    KAFKA_DEFAULTS
        .iter()
        .find(|(k, v, _)| *k == key && v.eq_ignore_ascii_case(value.trim()))
        .map(|(k, _, note)| (*k, *note))
}

/// A module's answer (`value` is what kacrab does when the module does not claim the key).
const fn module_or(module: Answer, value: &'static str) -> Answer {
    match module {
        Answer::NotSupported { reason, .. } => refused_unless(reason, value),
        other => other,
    }
}
const fn compression_or(value: &'static str) -> Answer {
    module_or(COMPRESSION_MODULE, value)
}
const fn metrics_or(value: &'static str) -> Answer {
    module_or(METRICS_MODULE, value)
}
const fn security_or(value: &'static str) -> Answer {
    module_or(SECURITY_MODULE, value)
}

/// The catalogue's answer for `key`, `None` if Kafka's producer has no such key.
pub(crate) fn answer(key: &str) -> Option<(&'static str, Answer)> {
    KEYS.iter().find(|(k, _)| *k == key).copied()
}

/// The known key nearest to `key` by edit distance, if it is close enough to be a typo
/// (at most a third of the key's length, and at most 4 edits).
pub(crate) fn nearest(key: &str) -> Option<&'static str> {
    let limit = (key.chars().count() / 3).clamp(1, 4);
    KEYS.iter()
        .map(|(k, _)| *k)
        .chain(kacrab_idempotence::config::keys::ALL.iter().copied())
        .chain([super::METRICS_PUBLISH_INTERVAL_MS])
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_listed_once() {
        for (i, (k, _)) in KEYS.iter().enumerate() {
            assert!(
                KEYS[i + 1..].iter().all(|(other, _)| other != k),
                "{k} is listed twice"
            );
        }
    }

    /// A value Kafka accepts for each implemented key.
    fn example(key: &str) -> &'static str {
        match key {
            "acks" => "all",
            "bootstrap.servers" => "b1:9092,b2:9092",
            "client.id" => "app",
            "enable.idempotence" | "partitioner.adaptive.partitioning.enable" => "true",
            "partitioner.ignore.keys" => "false",
            "transactional.id" => "tx-1",
            "max.in.flight.requests.per.connection" => "5",
            "retries" => "2147483647",
            "metadata.max.idle.ms" => "300000",
            "delivery.timeout.ms" => "120000",
            _ => "1000",
        }
    }

    #[test]
    fn every_implemented_key_is_parsed_and_every_other_key_answered() {
        use crate::config::{SessionConfig, SessionConfigError};
        for (key, answer) in KEYS {
            let mut b = SessionConfig::builder();
            match answer {
                Answer::Implemented => {
                    b.set(key, example(key))
                        .unwrap_or_else(|e| panic!("{key} is implemented, yet: {e}"));
                }
                Answer::Ignored(note) => {
                    b.set(key, "org.example.Whatever").unwrap();
                    b.bootstrap_servers(["h:1"]);
                    let c = b.build().unwrap();
                    assert_eq!(c.notes().len(), 1, "{key}");
                    assert_eq!((c.notes()[0].key, c.notes()[0].note), (*key, *note));
                }
                Answer::Module(module) => {
                    // The module claims its key: whatever it answers, never "unknown".
                    let answered = b.set(key, example(key));
                    assert!(
                        !matches!(answered, Err(SessionConfigError::UnknownKey { .. })),
                        "{key} is owned by {module}, yet unknown"
                    );
                }
                Answer::NotSupported { reason, unless } => {
                    let err = b.set(key, "some-value-kacrab-cannot-honour").unwrap_err();
                    assert_eq!(
                        err,
                        SessionConfigError::NotSupported { key, reason },
                        "{key}"
                    );
                    assert!(err
                        .to_string()
                        .contains("known Kafka producer setting, not supported: "));
                    if let Some(v) = unless {
                        b.set(key, &format!(" {} ", v.to_ascii_uppercase()))
                            .unwrap_or_else(|e| panic!("{key}={v}: {e}"));
                    }
                }
            }
        }
    }

    #[test]
    fn every_accepted_default_is_a_catalogued_key_and_only_its_default_is_accepted() {
        use crate::config::{SessionConfig, SessionConfigError};
        for (key, default, _) in KAFKA_DEFAULTS {
            assert!(answer(key).is_some(), "{key} is not catalogued");
            let mut b = SessionConfig::builder();
            b.set(key, default)
                .unwrap_or_else(|e| panic!("{key}={default}: {e}"));
            let other = b.set(key, "some-value-kacrab-cannot-honour");
            assert!(
                !matches!(other, Ok(_) | Err(SessionConfigError::UnknownKey { .. })),
                "{key}: only Kafka's default is accepted"
            );
        }
    }

    #[test]
    fn a_secret_value_is_never_in_the_error() {
        let mut b = crate::config::SessionConfig::builder();
        let err = b
            .set("sasl.jaas.config", "password=\"hunter2\"")
            .unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
        assert!(!format!("{err:?}").contains("hunter2"));
    }

    #[test]
    fn a_typo_suggests_the_key_it_misspells() {
        assert_eq!(nearest("linger.msec"), Some("linger.ms"));
        assert_eq!(nearest("bootstrap.server"), Some("bootstrap.servers"));
        assert_eq!(nearest("compresion.type"), Some("compression.type"));
        assert_eq!(nearest("no.such.key"), None);
    }
}
