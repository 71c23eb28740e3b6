//! The push payload: the producer's metrics as an OpenTelemetry `MetricsData` message
//! (OTLP protobuf), the format KIP-714 fixes for PushTelemetry.
//!
//! Only the part of OTLP's `metrics/v1`, `common/v1` and `resource/v1` schemas a
//! producer's metrics need is declared here (gauges and monotonic sums of doubles, with
//! string attributes); field numbers are the schemas'. prost does the encoding.
//!
//! Names follow Kafka's client naming (`TelemetryMetricNamingConvention`): the group
//! without its `-metrics` suffix and the metric's name, prefixed `org.apache.kafka.`,
//! each `-` made a `.` (`producer-metrics` `record-send-rate` is
//! `org.apache.kafka.producer.record.send.rate`); tag keys have `-` made `_`
//! (`node-id` is `node_id`); `client-id` is left out, as Kafka leaves it out. A metric
//! counting from the start (`-total`) is a monotonic sum, every other one a gauge, as
//! Kafka's `KafkaMetricsCollector` classifies its cumulative sums and counts.

use std::collections::BTreeMap;

use bytes::Bytes;
use prost::Message;

use crate::metrics::MetricsSnapshot;

/// OTLP `MetricsData`.
#[derive(Clone, PartialEq, Message)]
pub struct MetricsData {
    /// `resource_metrics` (1).
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// OTLP `ResourceMetrics`.
#[derive(Clone, PartialEq, Message)]
pub struct ResourceMetrics {
    /// `resource` (1).
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// `scope_metrics` (2).
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// OTLP `Resource`.
#[derive(Clone, PartialEq, Message)]
pub struct Resource {
    /// `attributes` (1).
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// OTLP `ScopeMetrics`.
#[derive(Clone, PartialEq, Message)]
pub struct ScopeMetrics {
    /// `scope` (1).
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// `metrics` (2).
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// OTLP `InstrumentationScope`.
#[derive(Clone, PartialEq, Message)]
pub struct InstrumentationScope {
    /// `name` (1).
    #[prost(string, tag = "1")]
    pub name: String,
    /// `version` (2).
    #[prost(string, tag = "2")]
    pub version: String,
}

/// OTLP `Metric` (gauge or sum only).
#[derive(Clone, PartialEq, Message)]
pub struct Metric {
    /// `name` (1).
    #[prost(string, tag = "1")]
    pub name: String,
    /// `gauge` (5) or `sum` (7).
    #[prost(oneof = "Data", tags = "5, 7")]
    pub data: Option<Data>,
}

/// OTLP `Metric.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// `gauge` (5).
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    /// `sum` (7).
    #[prost(message, tag = "7")]
    Sum(Sum),
}

/// OTLP `Gauge`.
#[derive(Clone, PartialEq, Message)]
pub struct Gauge {
    /// `data_points` (1).
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// OTLP `Sum`.
#[derive(Clone, PartialEq, Message)]
pub struct Sum {
    /// `data_points` (1).
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// `aggregation_temporality` (2): [`DELTA`] or [`CUMULATIVE`].
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// `is_monotonic` (3).
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// OTLP `AGGREGATION_TEMPORALITY_DELTA`.
pub const DELTA: i32 = 1;
/// OTLP `AGGREGATION_TEMPORALITY_CUMULATIVE`.
pub const CUMULATIVE: i32 = 2;

/// OTLP `NumberDataPoint` (double values only).
#[derive(Clone, PartialEq, Message)]
pub struct NumberDataPoint {
    /// `start_time_unix_nano` (2).
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// `time_unix_nano` (3).
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// `as_double` (4).
    #[prost(double, tag = "4")]
    pub as_double: f64,
    /// `attributes` (7).
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
}

/// OTLP `KeyValue` with a string value.
#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    /// `key` (1).
    #[prost(string, tag = "1")]
    pub key: String,
    /// `value` (2).
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// OTLP `AnyValue`, the string case.
#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    /// `string_value` (1).
    #[prost(string, tag = "1")]
    pub string_value: String,
}

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            string_value: value.to_owned(),
        }),
    }
}

/// Which metrics the subscription asks for (`requested_metrics`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Selection {
    /// A single `*`.
    All,
    /// Name prefixes (never empty: an empty list asks for nothing, and no push is made).
    Prefixes(Vec<String>),
}

impl Selection {
    /// The subscription's list as Kafka reads it (`ClientTelemetryUtils`): `None` when
    /// it asks for nothing.
    pub(crate) fn of(requested: &[String]) -> Option<Self> {
        match requested {
            [] => None,
            [only] if only == "*" => Some(Self::All),
            prefixes => Some(Self::Prefixes(prefixes.to_vec())),
        }
    }

    fn wants(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Prefixes(p) => p.iter().any(|p| name.starts_with(p.as_str())),
        }
    }
}

/// Whether a push sends counters as deltas since the last push (the subscription's
/// `delta_temporality`) or as totals since the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Temporality {
    /// Since the previous push.
    Delta,
    /// Since the session started.
    Cumulative,
}

/// A metric's telemetry name and its attributes: one time series.
type Series = (String, Vec<(String, String)>);

/// The counters' values at the last push, for delta temporality.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ledger {
    /// By series: the total last sent, and when (ns since the Unix epoch).
    last: BTreeMap<Series, (f64, u64)>,
}

impl Ledger {
    /// Forgets every value (the temporality changed: Kafka's `metricsReset`).
    pub(crate) fn reset(&mut self) {
        self.last.clear();
    }
}

/// Kafka's telemetry name of a metric of `group` named `name`.
pub(crate) fn telemetry_name(group: &str, name: &str) -> String {
    let group = group.strip_suffix("-metrics").unwrap_or(group);
    format!("org.apache.kafka.{group}.{name}").replace('-', ".")
}

/// When the payload is taken and when the session started, in ns since the Unix epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Times {
    /// Now.
    pub(crate) now_unix_nano: u64,
    /// The session's start: cumulative sums count from here.
    pub(crate) start_unix_nano: u64,
}

/// The encoded payload of the metrics of `snapshot` that `selection` asks for. A
/// gauge whose value is NaN (an average over windows that recorded nothing) is left
/// out: it says nothing, and OTLP receivers treat NaN inconsistently. With delta
/// temporality each sum carries its change since the last push (its start time that
/// push's), and `ledger` remembers the totals sent.
pub(crate) fn encode(
    snapshot: &MetricsSnapshot,
    selection: &Selection,
    temporality: Temporality,
    ledger: &mut Ledger,
    times: Times,
) -> Bytes {
    let mut metrics = Vec::new();
    for m in snapshot.metrics() {
        let name = telemetry_name(m.group, m.name);
        if !selection.wants(&name) || m.value.is_nan() {
            continue;
        }
        let tags: Vec<(String, String)> = m
            .tags
            .iter()
            .map(|(k, v)| (k.replace('-', "_"), v.clone()))
            .collect();
        let attributes = tags.iter().map(|(k, v)| attribute(k, v)).collect();
        let data = if m.name.ends_with("-total") {
            let (value, start) = match temporality {
                Temporality::Cumulative => (m.value, times.start_unix_nano),
                Temporality::Delta => {
                    let key = (name.clone(), tags);
                    let (last, since) = ledger
                        .last
                        .insert(key, (m.value, times.now_unix_nano))
                        .unwrap_or((0.0, times.start_unix_nano));
                    (m.value - last, since)
                }
            };
            Data::Sum(Sum {
                data_points: vec![NumberDataPoint {
                    start_time_unix_nano: start,
                    time_unix_nano: times.now_unix_nano,
                    as_double: value,
                    attributes,
                }],
                aggregation_temporality: match temporality {
                    Temporality::Delta => DELTA,
                    Temporality::Cumulative => CUMULATIVE,
                },
                is_monotonic: true,
            })
        } else {
            Data::Gauge(Gauge {
                data_points: vec![NumberDataPoint {
                    start_time_unix_nano: 0,
                    time_unix_nano: times.now_unix_nano,
                    as_double: m.value,
                    attributes,
                }],
            })
        };
        metrics.push(Metric {
            name,
            data: Some(data),
        });
    }
    // No resource attributes: the broker adds the client's id, software and address
    // from the request itself (Kafka's client sends only `transactional_id` and
    // `client_rack` here, neither of which the snapshot holds).
    let resource = Vec::new();
    let data = MetricsData {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource,
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "kacrab".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                }),
                metrics,
            }],
        }],
    };
    Bytes::from(data.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> MetricsSnapshot {
        let mut s = MetricsSnapshot {
            client_id: "app".into(),
            ..MetricsSnapshot::default()
        };
        s.producer.record_send_total = 10.0;
        s.producer.record_send_rate = 2.5;
        s.producer.record_queue_time_avg = f64::NAN;
        s
    }

    fn decoded(bytes: &Bytes) -> Vec<(String, Data)> {
        let d = MetricsData::decode(bytes.as_ref()).expect("decodes");
        d.resource_metrics[0].scope_metrics[0]
            .metrics
            .iter()
            .map(|m| (m.name.clone(), m.data.clone().unwrap()))
            .collect()
    }

    #[test]
    fn names_follow_kafkas_telemetry_convention() {
        assert_eq!(
            telemetry_name("producer-metrics", "record-queue-time-avg"),
            "org.apache.kafka.producer.record.queue.time.avg"
        );
        assert_eq!(
            telemetry_name("producer-node-metrics", "request-latency-max"),
            "org.apache.kafka.producer.node.request.latency.max"
        );
    }

    #[test]
    fn a_selection_of_nothing_all_or_prefixes() {
        assert_eq!(Selection::of(&[]), None);
        assert_eq!(Selection::of(&["*".into()]), Some(Selection::All));
        let some = Selection::of(&["org.apache.kafka.producer.record.send".into()]).unwrap();
        assert!(some.wants("org.apache.kafka.producer.record.send.rate"));
        assert!(!some.wants("org.apache.kafka.producer.record.error.rate"));
    }

    #[test]
    fn totals_are_monotonic_sums_sent_as_deltas_and_nan_gauges_are_left_out() {
        let mut ledger = Ledger::default();
        let t = |now| Times {
            now_unix_nano: now,
            start_unix_nano: 100,
        };
        let sel = Selection::All;
        let first = decoded(&encode(
            &snapshot(),
            &sel,
            Temporality::Delta,
            &mut ledger,
            t(1_000),
        ));
        let total = |ms: &[(String, Data)]| {
            ms.iter()
                .find(|(n, _)| n == "org.apache.kafka.producer.record.send.total")
                .map(|(_, d)| d.clone())
                .expect("record.send.total pushed")
        };
        let Data::Sum(sum) = total(&first) else {
            panic!("a total is a sum")
        };
        assert!(sum.is_monotonic);
        assert_eq!(sum.aggregation_temporality, DELTA);
        assert_eq!(sum.data_points[0].as_double, 10.0);
        assert_eq!(sum.data_points[0].start_time_unix_nano, 100);
        assert!(
            first
                .iter()
                .all(|(n, _)| n != "org.apache.kafka.producer.record.queue.time.avg"),
            "a NaN average is left out"
        );
        let mut later = snapshot();
        later.producer.record_send_total = 25.0;
        let second = decoded(&encode(
            &later,
            &sel,
            Temporality::Delta,
            &mut ledger,
            t(2_000),
        ));
        let Data::Sum(sum) = total(&second) else {
            panic!()
        };
        assert_eq!(
            sum.data_points[0].as_double, 15.0,
            "the change since the last push"
        );
        assert_eq!(sum.data_points[0].start_time_unix_nano, 1_000);
        let cumulative = decoded(&encode(
            &later,
            &sel,
            Temporality::Cumulative,
            &mut ledger,
            t(3_000),
        ));
        let Data::Sum(sum) = total(&cumulative) else {
            panic!()
        };
        assert_eq!(
            (sum.data_points[0].as_double, sum.aggregation_temporality),
            (25.0, CUMULATIVE)
        );
        let rate = cumulative
            .iter()
            .find(|(n, _)| n == "org.apache.kafka.producer.record.send.rate")
            .expect("rate pushed");
        assert!(matches!(&rate.1, Data::Gauge(g) if g.data_points[0].as_double == 2.5));
    }
}
