//! The producer metrics issue 14 requires of every driver, by Kafka group and name,
//! written out literally (not read from the snapshot's own name lists, so a metric
//! dropped or renamed there fails every driver's test).

/// Kafka's `producer-metrics` group.
pub const PRODUCER: &str = "producer-metrics";
/// Kafka's `producer-topic-metrics` group.
pub const TOPIC: &str = "producer-topic-metrics";
/// Kafka's `producer-node-metrics` group.
pub const NODE: &str = "producer-node-metrics";

/// Every required metric as (group, name). Kafka's names, plus kacrab's own
/// (`kacrab-` prefixed).
pub const REQUIRED: &[(&str, &str)] = &[
    (PRODUCER, "record-send-rate"),
    (PRODUCER, "record-send-total"),
    (PRODUCER, "record-error-rate"),
    (PRODUCER, "record-error-total"),
    (PRODUCER, "record-retry-rate"),
    (PRODUCER, "record-retry-total"),
    (PRODUCER, "record-size-avg"),
    (PRODUCER, "record-size-max"),
    (PRODUCER, "record-queue-time-avg"),
    (PRODUCER, "record-queue-time-max"),
    (PRODUCER, "request-latency-avg"),
    (PRODUCER, "request-latency-max"),
    (PRODUCER, "request-rate"),
    (PRODUCER, "request-total"),
    (PRODUCER, "response-rate"),
    (PRODUCER, "requests-in-flight"),
    (PRODUCER, "batch-size-avg"),
    (PRODUCER, "batch-size-max"),
    (PRODUCER, "records-per-request-avg"),
    (PRODUCER, "compression-rate-avg"),
    (PRODUCER, "batch-split-rate"),
    (PRODUCER, "buffer-total-bytes"),
    (PRODUCER, "buffer-available-bytes"),
    (PRODUCER, "bufferpool-wait-time-ns-total"),
    (PRODUCER, "produce-throttle-time-avg"),
    (PRODUCER, "produce-throttle-time-max"),
    (PRODUCER, "outgoing-byte-rate"),
    (PRODUCER, "incoming-byte-rate"),
    (PRODUCER, "connection-count"),
    (PRODUCER, "connection-creation-rate"),
    (PRODUCER, "connection-close-rate"),
    (PRODUCER, "successful-reauthentication-rate"),
    (PRODUCER, "successful-reauthentication-total"),
    (PRODUCER, "metadata-age"),
    (PRODUCER, "txn-init-time-ns-total"),
    (PRODUCER, "txn-begin-time-ns-total"),
    (PRODUCER, "txn-send-offsets-time-ns-total"),
    (PRODUCER, "txn-commit-time-ns-total"),
    (PRODUCER, "txn-abort-time-ns-total"),
    (PRODUCER, "kacrab-epoch-bump-total"),
    (PRODUCER, "kacrab-producer-id-change-total"),
    (PRODUCER, "kacrab-possibly-written-failure-total"),
    (PRODUCER, "kacrab-unresolved-partitions"),
    (TOPIC, "record-send-rate"),
    (TOPIC, "record-send-total"),
    (TOPIC, "byte-rate"),
    (TOPIC, "byte-total"),
    (TOPIC, "record-error-rate"),
    (TOPIC, "record-error-total"),
    (TOPIC, "record-retry-rate"),
    (TOPIC, "record-retry-total"),
    (TOPIC, "compression-rate"),
    (NODE, "request-latency-avg"),
    (NODE, "request-latency-max"),
    (NODE, "request-rate"),
    (NODE, "request-total"),
    (NODE, "response-rate"),
    (NODE, "response-total"),
];

/// The required metrics `present` (a snapshot's flat (group, name) list, after at
/// least one produce so that topic and node groups exist) lacks.
#[must_use]
pub fn missing<G: AsRef<str>, N: AsRef<str>>(
    present: &[(G, N)],
) -> Vec<(&'static str, &'static str)> {
    REQUIRED
        .iter()
        .copied()
        .filter(|(group, name)| {
            !present
                .iter()
                .any(|(g, n)| g.as_ref() == *group && n.as_ref() == *name)
        })
        .collect()
}
