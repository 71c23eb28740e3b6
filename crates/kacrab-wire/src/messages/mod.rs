//! The producer's requests and responses, as this crate's own types.
//!
//! Requests are converted to kafka-protocol's types and encoded by it; responses are
//! decoded here with bounded allocations (see the crate docs). Field names follow Kafka's
//! schemas; fields a version lacks hold the schema's default.
//!
//! Every message struct is `#[non_exhaustive]`: Kafka adds fields in new versions, and
//! this crate can then add them without breaking anyone. Outside the crate, build one
//! from its `Default` and set its public fields, or with [`message!`](crate::message),
//! which does that with struct-expression syntax.

mod api_versions;
mod find_coordinator;
mod init_producer_id;
mod metadata;
mod produce;
mod sasl;
mod telemetry;
mod txn;

pub use api_versions::{
    ApiVersion, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeature, SupportedFeature,
    UNSUPPORTED_VERSION,
};
pub use find_coordinator::{CoordinatorType, FindCoordinatorRequest, FindCoordinatorResponse};
pub use init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
pub use metadata::{
    MetadataBroker, MetadataPartition, MetadataRequest, MetadataResponse, MetadataTopic,
};
pub use produce::{
    LeaderIdAndEpoch, NodeEndpoint, ProducePartition, ProducePartitionResponse, ProduceRequest,
    ProduceResponse, ProduceTopic, ProduceTopicResponse, RecordError,
};
pub use sasl::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    SaslRequest, SaslResponse, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
};
pub use telemetry::{
    ClientInstanceId, GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest, PushTelemetryResponse,
};
pub use txn::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, PartitionResult, TopicPartitions,
    TopicResult, TxnOffsetCommitPartition, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
    TxnOffsetCommitTopic,
};

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;

use crate::api::ApiKey;
use crate::encode::frame;
use crate::error::WireError;
use crate::outgoing::Frame;
use crate::reader::{Reader, R};

/// Any request this crate encodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// ApiVersions.
    ApiVersions(ApiVersionsRequest),
    /// Metadata.
    Metadata(MetadataRequest),
    /// InitProducerId.
    InitProducerId(InitProducerIdRequest),
    /// Produce.
    Produce(ProduceRequest),
    /// FindCoordinator.
    FindCoordinator(FindCoordinatorRequest),
    /// AddPartitionsToTxn.
    AddPartitionsToTxn(AddPartitionsToTxnRequest),
    /// AddOffsetsToTxn.
    AddOffsetsToTxn(AddOffsetsToTxnRequest),
    /// TxnOffsetCommit.
    TxnOffsetCommit(TxnOffsetCommitRequest),
    /// EndTxn.
    EndTxn(EndTxnRequest),
    /// SaslHandshake or SaslAuthenticate (a connection's authentication phase).
    Sasl(SaslRequest),
    /// GetTelemetrySubscriptions (KIP-714).
    GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest),
    /// PushTelemetry (KIP-714).
    PushTelemetry(PushTelemetryRequest),
}

/// Any response this crate decodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// ApiVersions.
    ApiVersions(ApiVersionsResponse),
    /// Metadata.
    Metadata(MetadataResponse),
    /// InitProducerId.
    InitProducerId(InitProducerIdResponse),
    /// Produce.
    Produce(ProduceResponse),
    /// FindCoordinator.
    FindCoordinator(FindCoordinatorResponse),
    /// AddPartitionsToTxn.
    AddPartitionsToTxn(AddPartitionsToTxnResponse),
    /// AddOffsetsToTxn.
    AddOffsetsToTxn(AddOffsetsToTxnResponse),
    /// TxnOffsetCommit.
    TxnOffsetCommit(TxnOffsetCommitResponse),
    /// EndTxn.
    EndTxn(EndTxnResponse),
    /// SaslHandshake or SaslAuthenticate.
    Sasl(SaslResponse),
    /// GetTelemetrySubscriptions (KIP-714).
    GetTelemetrySubscriptions(GetTelemetrySubscriptionsResponse),
    /// PushTelemetry (KIP-714).
    PushTelemetry(PushTelemetryResponse),
}

macro_rules! from_impls {
    ($($variant:ident($req:ty, $resp:ty)),* $(,)?) => {
        $(
            impl From<$req> for Request {
                fn from(r: $req) -> Self {
                    Request::$variant(r)
                }
            }
            impl From<$resp> for Response {
                fn from(r: $resp) -> Self {
                    Response::$variant(r)
                }
            }
        )*
    };
}

from_impls!(
    ApiVersions(ApiVersionsRequest, ApiVersionsResponse),
    Metadata(MetadataRequest, MetadataResponse),
    InitProducerId(InitProducerIdRequest, InitProducerIdResponse),
    Produce(ProduceRequest, ProduceResponse),
    FindCoordinator(FindCoordinatorRequest, FindCoordinatorResponse),
    AddPartitionsToTxn(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    AddOffsetsToTxn(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    TxnOffsetCommit(TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    EndTxn(EndTxnRequest, EndTxnResponse),
    Sasl(SaslRequest, SaslResponse),
    GetTelemetrySubscriptions(
        GetTelemetrySubscriptionsRequest,
        GetTelemetrySubscriptionsResponse
    ),
    PushTelemetry(PushTelemetryRequest, PushTelemetryResponse),
);

macro_rules! sasl_from_impls {
    ($($req:ty, $resp:ty);* $(;)?) => {
        $(
            impl From<$req> for Request {
                fn from(r: $req) -> Self {
                    Request::Sasl(r.into())
                }
            }
            impl From<$resp> for Response {
                fn from(r: $resp) -> Self {
                    Response::Sasl(r.into())
                }
            }
        )*
    };
}

sasl_from_impls!(
    SaslHandshakeRequest, SaslHandshakeResponse;
    SaslAuthenticateRequest, SaslAuthenticateResponse;
);

impl Request {
    /// The request's API.
    #[must_use]
    pub fn api_key(&self) -> ApiKey {
        match self {
            Request::ApiVersions(_) => ApiKey::ApiVersions,
            Request::Metadata(_) => ApiKey::Metadata,
            Request::InitProducerId(_) => ApiKey::InitProducerId,
            Request::Produce(_) => ApiKey::Produce,
            Request::FindCoordinator(_) => ApiKey::FindCoordinator,
            Request::AddPartitionsToTxn(_) => ApiKey::AddPartitionsToTxn,
            Request::AddOffsetsToTxn(_) => ApiKey::AddOffsetsToTxn,
            Request::TxnOffsetCommit(_) => ApiKey::TxnOffsetCommit,
            Request::EndTxn(_) => ApiKey::EndTxn,
            Request::Sasl(r) => r.api_key(),
            Request::GetTelemetrySubscriptions(_) => ApiKey::GetTelemetrySubscriptions,
            Request::PushTelemetry(_) => ApiKey::PushTelemetry,
        }
    }

    /// Whether the broker answers it: everything but Produce with `acks = 0`.
    #[must_use]
    pub fn expects_response(&self) -> bool {
        !matches!(self, Request::Produce(p) if p.acks == 0)
    }

    /// Encodes the whole frame (length prefix, header, body).
    pub(crate) fn encode_frame(
        self,
        version: i16,
        correlation_id: i32,
        client_id: Option<&StrBytes>,
    ) -> Result<Frame, WireError> {
        let api = self.api_key();
        check_version(api, version)?;
        let whole = match self {
            Request::ApiVersions(r) => frame(api, version, correlation_id, client_id, &r.into_kp()),
            Request::Metadata(r) => frame(api, version, correlation_id, client_id, &r.into_kp()),
            Request::InitProducerId(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::Produce(r) => return r.encode_frame(version, correlation_id, client_id),
            Request::FindCoordinator(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp(version))
            }
            Request::AddPartitionsToTxn(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::AddOffsetsToTxn(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::TxnOffsetCommit(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::EndTxn(r) => frame(api, version, correlation_id, client_id, &r.into_kp()),
            Request::Sasl(SaslRequest::Handshake(r)) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::Sasl(SaslRequest::Authenticate(r)) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::GetTelemetrySubscriptions(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
            Request::PushTelemetry(r) => {
                frame(api, version, correlation_id, client_id, &r.into_kp())
            }
        };
        whole.map(Frame::new)
    }
}

pub(crate) fn check_version(api: ApiKey, version: i16) -> Result<(), WireError> {
    let supported = api.supported();
    if supported.contains(version) {
        Ok(())
    } else {
        Err(WireError::UnsupportedVersion {
            api,
            version,
            supported,
        })
    }
}

impl Response {
    /// The response's API.
    #[must_use]
    pub fn api_key(&self) -> ApiKey {
        match self {
            Response::ApiVersions(_) => ApiKey::ApiVersions,
            Response::Metadata(_) => ApiKey::Metadata,
            Response::InitProducerId(_) => ApiKey::InitProducerId,
            Response::Produce(_) => ApiKey::Produce,
            Response::FindCoordinator(_) => ApiKey::FindCoordinator,
            Response::AddPartitionsToTxn(_) => ApiKey::AddPartitionsToTxn,
            Response::AddOffsetsToTxn(_) => ApiKey::AddOffsetsToTxn,
            Response::TxnOffsetCommit(_) => ApiKey::TxnOffsetCommit,
            Response::EndTxn(_) => ApiKey::EndTxn,
            Response::Sasl(r) => r.api_key(),
            Response::GetTelemetrySubscriptions(_) => ApiKey::GetTelemetrySubscriptions,
            Response::PushTelemetry(_) => ApiKey::PushTelemetry,
        }
    }

    /// How long the broker throttled the request (KIP-219), 0 when the version has no
    /// such field.
    #[must_use]
    pub fn throttle_time_ms(&self) -> i32 {
        match self {
            Response::ApiVersions(r) => r.throttle_time_ms,
            Response::Metadata(r) => r.throttle_time_ms,
            Response::InitProducerId(r) => r.throttle_time_ms,
            Response::Produce(r) => r.throttle_time_ms,
            Response::FindCoordinator(r) => r.throttle_time_ms,
            Response::AddPartitionsToTxn(r) => r.throttle_time_ms,
            Response::AddOffsetsToTxn(r) => r.throttle_time_ms,
            Response::TxnOffsetCommit(r) => r.throttle_time_ms,
            Response::EndTxn(r) => r.throttle_time_ms,
            Response::Sasl(_) => 0,
            Response::GetTelemetrySubscriptions(r) => r.throttle_time_ms,
            Response::PushTelemetry(r) => r.throttle_time_ms,
        }
    }

    /// Decodes a response body (what follows the response header) of `api` at `version`.
    /// The whole body must be used. An ApiVersions body carrying UNSUPPORTED_VERSION is
    /// read as v0, whatever `version` says (that is what brokers send).
    ///
    /// # Errors
    /// [`WireError::UnsupportedVersion`] for a version outside [`ApiKey::supported`],
    /// [`WireError::Truncated`] or [`WireError::Decode`] for bad bytes.
    pub fn decode(api: ApiKey, version: i16, body: Bytes) -> Result<Self, WireError> {
        check_version(api, version)?;
        let version = if api == ApiKey::ApiVersions {
            ApiVersionsResponse::body_version(&body, version)
        } else {
            version
        };
        let mut r = Reader::new(body, api.is_flexible(version));
        read_body(&mut r, api, version)
            .and_then(|resp| r.finish().map(|()| resp))
            .map_err(|e| e.into_wire(api, version))
    }
}

fn read_body(r: &mut Reader, api: ApiKey, version: i16) -> R<Response> {
    Ok(match api {
        ApiKey::ApiVersions => ApiVersionsResponse::read(r, version)?.into(),
        ApiKey::Metadata => MetadataResponse::read(r, version)?.into(),
        ApiKey::InitProducerId => InitProducerIdResponse::read(r, version)?.into(),
        ApiKey::Produce => ProduceResponse::read(r, version)?.into(),
        ApiKey::FindCoordinator => FindCoordinatorResponse::read(r, version)?.into(),
        ApiKey::AddPartitionsToTxn => AddPartitionsToTxnResponse::read(r, version)?.into(),
        ApiKey::AddOffsetsToTxn => AddOffsetsToTxnResponse::read(r, version)?.into(),
        ApiKey::TxnOffsetCommit => TxnOffsetCommitResponse::read(r, version)?.into(),
        ApiKey::EndTxn => EndTxnResponse::read(r, version)?.into(),
        ApiKey::SaslHandshake => SaslHandshakeResponse::read(r, version)?.into(),
        ApiKey::SaslAuthenticate => SaslAuthenticateResponse::read(r, version)?.into(),
        ApiKey::GetTelemetrySubscriptions => {
            GetTelemetrySubscriptionsResponse::read(r, version)?.into()
        }
        ApiKey::PushTelemetry => PushTelemetryResponse::read(r, version)?.into(),
    })
}

/// Builds a message struct with struct-expression syntax: starts from the type's
/// `Default` (what the schema says a missing field holds), or from the value after `..`
/// as a struct update does, and sets the fields named.
/// Message structs are `#[non_exhaustive]`, so a plain struct expression cannot name
/// them outside this crate; this can, and keeps compiling when a field is added.
///
/// ```
/// use kacrab_wire::messages::{ProducePartition, ProduceRequest, ProduceTopic};
///
/// let partitions = vec![kacrab_wire::message!(ProducePartition { index: 0 })];
/// let request = kacrab_wire::message!(ProduceRequest {
///     acks: -1,
///     timeout_ms: 30_000,
///     topics: vec![kacrab_wire::message!(ProduceTopic { name: "orders".into(), partitions })],
/// });
/// assert_eq!(request.topics[0].partitions[0].index, 0);
/// ```
#[macro_export]
macro_rules! message {
    (@set $m:ident $field:ident $value:expr) => {
        $m.$field = $value;
    };
    (@set $m:ident $field:ident) => {
        $m.$field = $field;
    };
    ($($ty:ident)::+ { $($field:ident $(: $value:expr)?,)* ..$base:expr }) => {{
        let mut message: $($ty)::+ = $base;
        $($crate::message!(@set message $field $($value)?);)*
        message
    }};
    ($($ty:ident)::+ { $($field:ident $(: $value:expr)?),* $(,)? }) => {{
        let mut message = <$($ty)::+>::default();
        $($crate::message!(@set message $field $($value)?);)*
        message
    }};
}
