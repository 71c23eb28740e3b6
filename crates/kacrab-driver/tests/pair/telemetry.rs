//! The brokers' client-telemetry plugin for the session harness (KIP-714), after
//! Kafka's `ClientMetricsManager`: with a plugin the brokers advertise
//! GetTelemetrySubscriptions and PushTelemetry v0; a subscription request with a zero
//! client instance id is given a new id; a push naming another subscription is answered
//! UNKNOWN_SUBSCRIPTION_ID; scripted error codes answer the next pushes. Payloads are
//! kept as sent and decoded here with prost against OTLP's field numbers, written from
//! OTLP's `metrics.proto`, independently of the session's encoder.

use std::collections::VecDeque;

use bytes::Bytes;
use kafka_protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};
use kafka_protocol::protocol::StrBytes;
use prost::Message;

/// Kafka's error for a push naming another subscription.
pub const UNKNOWN_SUBSCRIPTION_ID: i16 = 117;

/// The id the plugin assigns.
pub const INSTANCE_ID: [u8; 16] = [0x40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// The plugin and what it received.
#[derive(Clone, Debug)]
pub struct TelemetryPlugin {
    /// Metric name prefixes asked for (`["*"]`: all; empty: none).
    pub requested: Vec<String>,
    /// The push interval it asks for, in ms.
    pub push_interval_ms: i32,
    /// The current subscription's id.
    pub subscription_id: i32,
    /// Whether counters are asked as deltas.
    pub delta_temporality: bool,
    /// Error codes answering the next pushes, in order (0 for none).
    pub push_errors: VecDeque<i16>,
    /// Every subscription request's client instance id, in order.
    pub subscription_requests: Vec<[u8; 16]>,
    /// Every push accepted, in order.
    pub pushes: Vec<Push>,
    /// The error code of every push refused, in order.
    pub refused: Vec<i16>,
}

/// One push as received.
#[derive(Clone, Debug)]
pub struct Push {
    /// The client instance id it names.
    pub client_instance_id: [u8; 16],
    /// The subscription it names.
    pub subscription_id: i32,
    /// The client's last push.
    pub terminating: bool,
    /// Its compression type.
    pub compression_type: i8,
    /// The payload.
    pub metrics: Bytes,
}

impl TelemetryPlugin {
    /// A plugin asking every client for `requested` every `push_interval_ms`, as deltas.
    pub fn new(requested: &[&str], push_interval_ms: i32) -> Self {
        Self {
            requested: requested.iter().map(|s| (*s).to_owned()).collect(),
            push_interval_ms,
            subscription_id: 1,
            delta_temporality: true,
            push_errors: VecDeque::new(),
            subscription_requests: Vec::new(),
            pushes: Vec::new(),
            refused: Vec::new(),
        }
    }

    pub(super) fn subscribe(
        &mut self,
        r: &GetTelemetrySubscriptionsRequest,
    ) -> GetTelemetrySubscriptionsResponse {
        let asked = *r.client_instance_id.as_bytes();
        self.subscription_requests.push(asked);
        let id = if asked == [0; 16] { INSTANCE_ID } else { asked };
        GetTelemetrySubscriptionsResponse::default()
            .with_client_instance_id(uuid::Uuid::from_bytes(id))
            .with_subscription_id(self.subscription_id)
            .with_push_interval_ms(self.push_interval_ms)
            .with_telemetry_max_bytes(1 << 20)
            .with_delta_temporality(self.delta_temporality)
            .with_requested_metrics(
                self.requested
                    .iter()
                    .map(|s| StrBytes::from_string(s.clone()))
                    .collect(),
            )
    }

    pub(super) fn push(&mut self, r: &PushTelemetryRequest) -> PushTelemetryResponse {
        let code = if r.subscription_id != self.subscription_id {
            UNKNOWN_SUBSCRIPTION_ID
        } else {
            self.push_errors.pop_front().unwrap_or(0)
        };
        if code != 0 {
            self.refused.push(code);
        } else {
            self.pushes.push(Push {
                client_instance_id: *r.client_instance_id.as_bytes(),
                subscription_id: r.subscription_id,
                terminating: r.terminating,
                compression_type: r.compression_type,
                metrics: r.metrics.clone(),
            });
        }
        PushTelemetryResponse::default().with_error_code(code)
    }
}

/// A metric of a pushed payload: its name, kind, value and attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct PushedMetric {
    /// Its name.
    pub name: String,
    /// `Some((temporality, monotonic))` for a sum, `None` for a gauge.
    pub sum: Option<(i32, bool)>,
    /// The first data point's value.
    pub value: f64,
    /// The first data point's attributes.
    pub attributes: Vec<(String, String)>,
}

/// The metrics of an OTLP `MetricsData` payload; `Err` if it does not decode.
pub fn decode_metrics(payload: &[u8]) -> Result<Vec<PushedMetric>, prost::DecodeError> {
    let data = otlp::MetricsData::decode(payload)?;
    let mut out = Vec::new();
    for rm in data.resource_metrics {
        for sm in rm.scope_metrics {
            for m in sm.metrics {
                let (points, sum) = match (m.gauge, m.sum) {
                    (Some(g), None) => (g.data_points, None),
                    (None, Some(s)) => (
                        s.data_points,
                        Some((s.aggregation_temporality, s.is_monotonic)),
                    ),
                    other => panic!("{}: neither a gauge nor a sum: {other:?}", m.name),
                };
                let first = points.first().expect("one data point");
                out.push(PushedMetric {
                    name: m.name,
                    sum,
                    value: first.as_double,
                    attributes: first
                        .attributes
                        .iter()
                        .map(|kv| {
                            (
                                kv.key.clone(),
                                kv.value
                                    .as_ref()
                                    .map(|v| v.string_value.clone())
                                    .unwrap_or_default(),
                            )
                        })
                        .collect(),
                });
            }
        }
    }
    Ok(out)
}

/// OTLP's `metrics/v1` messages, the fields a producer's metrics use.
mod otlp {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricsData {
        #[prost(message, repeated, tag = "1")]
        pub resource_metrics: Vec<ResourceMetrics>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceMetrics {
        #[prost(message, repeated, tag = "2")]
        pub scope_metrics: Vec<ScopeMetrics>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeMetrics {
        #[prost(message, repeated, tag = "2")]
        pub metrics: Vec<Metric>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "5")]
        pub gauge: Option<Points>,
        #[prost(message, optional, tag = "7")]
        pub sum: Option<Sum>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Points {
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<NumberDataPoint>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sum {
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<NumberDataPoint>,
        #[prost(int32, tag = "2")]
        pub aggregation_temporality: i32,
        #[prost(bool, tag = "3")]
        pub is_monotonic: bool,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NumberDataPoint {
        #[prost(fixed64, tag = "3")]
        pub time_unix_nano: u64,
        #[prost(double, tag = "4")]
        pub as_double: f64,
        #[prost(message, repeated, tag = "7")]
        pub attributes: Vec<KeyValue>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValue {
        #[prost(string, tag = "1")]
        pub key: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AnyValue {
        #[prost(string, tag = "1")]
        pub string_value: String,
    }
}
