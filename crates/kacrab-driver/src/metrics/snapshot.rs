//! The typed snapshot of the producer's metrics, with Kafka's names, groups and tags.

use std::collections::BTreeMap;

/// Kafka's group of the producer-wide metrics.
pub const PRODUCER_GROUP: &str = "producer-metrics";
/// Kafka's group of the per-topic metrics (tag `topic`).
pub const TOPIC_GROUP: &str = "producer-topic-metrics";
/// Kafka's group of the per-broker metrics (tag `node-id`, valued `node-<id>`).
pub const NODE_GROUP: &str = "producer-node-metrics";

/// Declares a struct of `f64` metrics and the Kafka name of each field.
macro_rules! metric_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[doc = $doc:literal])* $field:ident => $kafka:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            $( $(#[doc = $doc])* #[doc = concat!("\n\nKafka's name: `", $kafka, "`.")] pub $field: f64, )*
        }

        impl $name {
            /// Every metric's Kafka name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($kafka),*];

            /// Every metric as (Kafka's name, value), in declaration order.
            #[must_use]
            pub fn named(&self) -> Vec<(&'static str, f64)> {
                vec![$(($kafka, self.$field)),*]
            }

            /// The value of the metric with this Kafka name.
            #[must_use]
            pub fn get(&self, name: &str) -> Option<f64> {
                match name {
                    $($kafka => Some(self.$field),)*
                    _ => None,
                }
            }
        }
    };
}

metric_set! {
    /// The producer-wide metrics (`producer-metrics`). Rates are per second over
    /// `metrics.sample.window.ms` x `metrics.num.samples`; averages and maxima over the
    /// same windows are NaN when nothing was recorded in them (as in Kafka); `-total`s
    /// count from the session's start. Times are in ms unless the name says `-ns`.
    pub struct ProducerMetrics {
        /// Records sent per second: every record of every batch drained into a produce
        /// request, each attempt counting (Kafka's `records-per-request` sensor's Meter).
        record_send_rate => "record-send-rate",
        /// Records sent, as `record-send-rate` counts them.
        record_send_total => "record-send-total",
        /// Records failed per second (Kafka's `errors` sensor, recorded in `failBatch`).
        record_error_rate => "record-error-rate",
        /// Records failed.
        record_error_total => "record-error-total",
        /// Records retried per second (recorded when a batch is re-enqueued).
        record_retry_rate => "record-retry-rate",
        /// Records retried, once per retry of their batch.
        record_retry_total => "record-retry-total",
        /// The average over drained batches of their largest record's size, in bytes
        /// (Kafka records `ProducerBatch.maxRecordSize` at drain).
        record_size_avg => "record-size-avg",
        /// The largest record size, in bytes.
        record_size_max => "record-size-max",
        /// The average time batches spent queued before a drain, in ms.
        record_queue_time_avg => "record-queue-time-avg",
        /// The longest such time, in ms.
        record_queue_time_max => "record-queue-time-max",
        /// The average produce request latency (hand-out to answer), in ms.
        request_latency_avg => "request-latency-avg",
        /// The longest produce request latency, in ms.
        request_latency_max => "request-latency-max",
        /// Requests written per second, of every kind (Kafka's `Selector` `request-rate`).
        request_rate => "request-rate",
        /// Requests written.
        request_total => "request-total",
        /// The average request size, in bytes.
        request_size_avg => "request-size-avg",
        /// The largest request size, in bytes.
        request_size_max => "request-size-max",
        /// Responses read per second, of every kind.
        response_rate => "response-rate",
        /// Responses read.
        response_total => "response-total",
        /// Requests written and not yet answered, on every connection.
        requests_in_flight => "requests-in-flight",
        /// The average size of drained batches, in bytes.
        batch_size_avg => "batch-size-avg",
        /// The largest drained batch, in bytes.
        batch_size_max => "batch-size-max",
        /// The average number of records per produce request.
        records_per_request_avg => "records-per-request-avg",
        /// The average compression rate of drained batches: each batch's records
        /// section as written over the same records uncompressed (Kafka's
        /// `ProducerBatch.compressionRatio`; 1.0 for uncompressed batches).
        compression_rate_avg => "compression-rate-avg",
        /// Batches split per second after MESSAGE_TOO_LARGE.
        batch_split_rate => "batch-split-rate",
        /// Batches split.
        batch_split_total => "batch-split-total",
        /// `buffer.memory`.
        buffer_total_bytes => "buffer-total-bytes",
        /// `buffer.memory` not charged by records without an outcome.
        buffer_available_bytes => "buffer-available-bytes",
        /// The total time sends waited for room in `buffer.memory`, in ns, summed over
        /// every waiting send (Kafka's `bufferpool-wait-time-ns-total`).
        bufferpool_wait_time_ns_total => "bufferpool-wait-time-ns-total",
        /// Sends refused per second because `buffer.memory` stayed full for
        /// `max.block.ms`.
        buffer_exhausted_rate => "buffer-exhausted-rate",
        /// Sends refused because `buffer.memory` stayed full.
        buffer_exhausted_total => "buffer-exhausted-total",
        /// The average `throttle_time_ms` of the responses read, in ms: every
        /// response counts, whatever its API (0 unless throttled), as Kafka's
        /// `NetworkClient` records this sensor; the SASL exchange does not.
        produce_throttle_time_avg => "produce-throttle-time-avg",
        /// The longest `throttle_time_ms` of the responses read, in ms.
        produce_throttle_time_max => "produce-throttle-time-max",
        /// Bytes written per second, on every connection.
        outgoing_byte_rate => "outgoing-byte-rate",
        /// Bytes written.
        outgoing_byte_total => "outgoing-byte-total",
        /// Bytes read per second, on every connection.
        incoming_byte_rate => "incoming-byte-rate",
        /// Bytes read.
        incoming_byte_total => "incoming-byte-total",
        /// Open connections (being set up, negotiating or ready).
        connection_count => "connection-count",
        /// Connections established per second.
        connection_creation_rate => "connection-creation-rate",
        /// Connections established.
        connection_creation_total => "connection-creation-total",
        /// Connections closed per second (by the session or reported gone).
        connection_close_rate => "connection-close-rate",
        /// Connections closed.
        connection_close_total => "connection-close-total",
        /// KIP-368 re-authentications of open connections per second.
        successful_reauthentication_rate => "successful-reauthentication-rate",
        /// KIP-368 re-authentications of open connections completed.
        successful_reauthentication_total => "successful-reauthentication-total",
        /// Seconds since metadata was last applied (since the session began, before
        /// the first answer).
        metadata_age => "metadata-age",
        /// Time spent in `init_transactions`, in ns (call to completion).
        txn_init_time_ns_total => "txn-init-time-ns-total",
        /// Time spent in `begin_transaction`, in ns.
        txn_begin_time_ns_total => "txn-begin-time-ns-total",
        /// Time spent in `send_offsets_to_transaction`, in ns.
        txn_send_offsets_time_ns_total => "txn-send-offsets-time-ns-total",
        /// Time spent in `commit_transaction`, in ns.
        txn_commit_time_ns_total => "txn-commit-time-ns-total",
        /// Time spent in `abort_transaction`, in ns.
        txn_abort_time_ns_total => "txn-abort-time-ns-total",
        /// Time spent in `flush`, in ns.
        flush_time_ns_total => "flush-time-ns-total",
        /// Time sends and partition lookups waited for metadata, in ns (each waiting
        /// send or lookup counting its own wait).
        metadata_wait_time_ns_total => "metadata-wait-time-ns-total",
        /// kacrab's own: KIP-360 epoch bumps applied (including new ids after epoch
        /// exhaustion).
        epoch_bump_total => "kacrab-epoch-bump-total",
        /// kacrab's own: times the producer id itself changed.
        producer_id_change_total => "kacrab-producer-id-change-total",
        /// kacrab's own: times the epoch changed under the same producer id.
        epoch_change_total => "kacrab-epoch-change-total",
        /// kacrab's own: records failed whose fate in the log is unknown
        /// (`possibly_written: true`).
        possibly_written_failure_total => "kacrab-possibly-written-failure-total",
        /// kacrab's own: partitions blocked by a batch of unknown fate.
        unresolved_partitions => "kacrab-unresolved-partitions",
        /// kacrab's own: requests timed out by `request.timeout.ms`.
        request_timeout_total => "kacrab-request-timeout-total",
        /// kacrab's own: batches failed by `delivery.timeout.ms`.
        expired_batch_total => "kacrab-expired-batch-total",
    }
}

metric_set! {
    /// One topic's metrics (`producer-topic-metrics`, tag `topic`), recorded as Kafka's
    /// per-topic sensors are.
    pub struct TopicMetrics {
        /// Records sent per second to the topic (at drain, each attempt counting).
        record_send_rate => "record-send-rate",
        /// Records sent to the topic.
        record_send_total => "record-send-total",
        /// Bytes of batches sent per second to the topic.
        byte_rate => "byte-rate",
        /// Bytes of batches sent to the topic.
        byte_total => "byte-total",
        /// The average compression rate of the topic's batches.
        compression_rate => "compression-rate",
        /// Records of the topic retried per second.
        record_retry_rate => "record-retry-rate",
        /// Records of the topic retried.
        record_retry_total => "record-retry-total",
        /// Records of the topic failed per second.
        record_error_rate => "record-error-rate",
        /// Records of the topic failed.
        record_error_total => "record-error-total",
    }
}

metric_set! {
    /// One broker connection's metrics (`producer-node-metrics`, tag `node-id`).
    pub struct NodeMetrics {
        /// Bytes written per second to the node.
        outgoing_byte_rate => "outgoing-byte-rate",
        /// Bytes written to the node.
        outgoing_byte_total => "outgoing-byte-total",
        /// Requests written per second to the node.
        request_rate => "request-rate",
        /// Requests written to the node.
        request_total => "request-total",
        /// The average request size to the node, in bytes.
        request_size_avg => "request-size-avg",
        /// The largest request size to the node, in bytes.
        request_size_max => "request-size-max",
        /// Bytes read per second from the node.
        incoming_byte_rate => "incoming-byte-rate",
        /// Bytes read from the node.
        incoming_byte_total => "incoming-byte-total",
        /// Responses read per second from the node.
        response_rate => "response-rate",
        /// Responses read from the node.
        response_total => "response-total",
        /// The average produce request latency to the node, in ms.
        request_latency_avg => "request-latency-avg",
        /// The longest produce request latency to the node, in ms.
        request_latency_max => "request-latency-max",
    }
}

/// One metric with its Kafka group, name and tags: the flat form an exporter reads.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Metric {
    /// Kafka's group: [`PRODUCER_GROUP`], [`TOPIC_GROUP`] or [`NODE_GROUP`].
    pub group: &'static str,
    /// Kafka's name.
    pub name: &'static str,
    /// The tags beyond `client-id`: `topic` or `node-id`, or none.
    pub tags: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
}

/// Every metric of a session at one instant ([`Session::metrics`](crate::Session::metrics)).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// `client.id`, Kafka's `client-id` tag on every metric (empty if not set).
    pub client_id: String,
    /// `producer-metrics`.
    pub producer: ProducerMetrics,
    /// `producer-topic-metrics`, by topic.
    pub topics: BTreeMap<String, TopicMetrics>,
    /// `producer-node-metrics`, by node id (bootstrap connections, whose node is not
    /// yet known, count as node -1).
    pub nodes: BTreeMap<i32, NodeMetrics>,
}

impl MetricsSnapshot {
    /// Every metric, flat, with its group and tags.
    #[must_use]
    pub fn metrics(&self) -> Vec<Metric> {
        let mut all: Vec<Metric> = self
            .producer
            .named()
            .into_iter()
            .map(|(name, value)| Metric {
                group: PRODUCER_GROUP,
                name,
                tags: Vec::new(),
                value,
            })
            .collect();
        for (topic, m) in &self.topics {
            all.extend(m.named().into_iter().map(|(name, value)| Metric {
                group: TOPIC_GROUP,
                name,
                tags: vec![("topic", topic.clone())],
                value,
            }));
        }
        for (node, m) in &self.nodes {
            all.extend(m.named().into_iter().map(|(name, value)| Metric {
                group: NODE_GROUP,
                name,
                tags: vec![("node-id", format!("node-{node}"))],
                value,
            }));
        }
        all
    }
}

impl std::fmt::Display for MetricsSnapshot {
    /// One `group:name{tags} value` line per metric, as Kafka's `metrics()` map lists.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for m in self.metrics() {
            write!(f, "{}:{}", m.group, m.name)?;
            if !m.tags.is_empty() {
                let tags: Vec<String> = m.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "{{{}}}", tags.join(","))?;
            }
            writeln!(f, " {}", m.value)?;
        }
        Ok(())
    }
}
