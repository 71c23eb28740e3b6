//! GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72), v0: KIP-714 client
//! metrics. Both are flexible from v0.

use bytes::Bytes;
use kafka_protocol::messages as kp;

use crate::reader::{Reader, R};

/// A client instance id: the 16 bytes of the UUID the broker assigned. All zeros asks the
/// broker to assign one (KIP-714).
pub type ClientInstanceId = [u8; 16];

/// GetTelemetrySubscriptions request: which metrics the cluster wants from this client.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GetTelemetrySubscriptionsRequest {
    /// The id the broker assigned earlier, or all zeros for a new one.
    pub client_instance_id: ClientInstanceId,
}

impl GetTelemetrySubscriptionsRequest {
    /// The request for a client that holds `client_instance_id` (zeros: none yet).
    #[must_use]
    pub fn new(client_instance_id: ClientInstanceId) -> Self {
        Self { client_instance_id }
    }

    pub(crate) fn into_kp(self) -> kp::GetTelemetrySubscriptionsRequest {
        kp::GetTelemetrySubscriptionsRequest::default()
            .with_client_instance_id(uuid::Uuid::from_bytes(self.client_instance_id))
    }
}

/// GetTelemetrySubscriptions response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GetTelemetrySubscriptionsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
    /// The client's instance id (assigned by the broker when the request had zeros).
    pub client_instance_id: ClientInstanceId,
    /// Identifies the subscription set; a push names it.
    pub subscription_id: i32,
    /// Compression types the broker accepts for pushes, in its order of preference
    /// (empty: none but uncompressed).
    pub accepted_compression_types: Vec<i8>,
    /// How often to push, in ms.
    pub push_interval_ms: i32,
    /// The largest payload the broker accepts, in bytes.
    pub telemetry_max_bytes: i32,
    /// Whether monotonic counters are sent as deltas (else cumulative).
    pub delta_temporality: bool,
    /// Metric name prefixes to send: empty for none, a single `*` for all.
    pub requested_metrics: Vec<String>,
}

impl GetTelemetrySubscriptionsResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        let resp = Self {
            throttle_time_ms: r.i32()?,
            error_code: r.i16()?,
            client_instance_id: r.uuid()?,
            subscription_id: r.i32()?,
            accepted_compression_types: r.array(Reader::i8)?,
            push_interval_ms: r.i32()?,
            telemetry_max_bytes: r.i32()?,
            delta_temporality: r.bool()?,
            requested_metrics: r.array(Reader::string)?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }
}

/// PushTelemetry request: one payload of metrics (OTLP `MetricsData`, serialized and
/// compressed with `compression_type`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PushTelemetryRequest {
    /// The broker-assigned client instance id.
    pub client_instance_id: ClientInstanceId,
    /// The subscription the payload answers.
    pub subscription_id: i32,
    /// The client's last push before it closes.
    pub terminating: bool,
    /// The payload's compression (a record-batch compression id; 0 for none).
    pub compression_type: i8,
    /// The payload.
    pub metrics: Bytes,
}

impl PushTelemetryRequest {
    pub(crate) fn into_kp(self) -> kp::PushTelemetryRequest {
        kp::PushTelemetryRequest::default()
            .with_client_instance_id(uuid::Uuid::from_bytes(self.client_instance_id))
            .with_subscription_id(self.subscription_id)
            .with_terminating(self.terminating)
            .with_compression_type(self.compression_type)
            .with_metrics(self.metrics)
    }
}

/// PushTelemetry response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PushTelemetryResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
}

impl PushTelemetryResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        let resp = Self {
            throttle_time_ms: r.i32()?,
            error_code: r.i16()?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }
}
