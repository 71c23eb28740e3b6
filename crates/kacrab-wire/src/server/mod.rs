//! The broker half of the wire (feature `server`): decode request frames, encode
//! response frames. The inverse of [`Connection`](crate::Connection), for model brokers,
//! fakes and simulators that must speak real Kafka bytes to a real client.
//!
//! * [`decode_request`] takes a frame as [`FrameDecoder::decode`](crate::FrameDecoder::decode)
//!   yields it (length prefix removed) and returns its header and its body as this
//!   crate's own [`Request`] types. Record batches stay [`Bytes`] slices of the frame (no
//!   copy). Like the response decoders, it allocates only in proportion to bytes that
//!   arrived, and never panics on hostile input.
//! * [`encode_response`] turns one of this crate's [`Response`]s into a whole
//!   size-prefixed frame with the response header of the request's version.
//!
//! ApiVersions keeps Kafka's fallback (KIP-511, `ApiVersionsRequest.getErrorResponse`
//! and `RequestContext.buildResponseSend`): a request at a version the broker cannot
//! read is not an error of the connection; it decodes as
//! [`RequestBody::UnsupportedApiVersions`], is answered with
//! [`unsupported_api_versions`], and [`encode_response`] writes that answer (any answer
//! carrying `UNSUPPORTED_VERSION`) as a v0 body, which every client can read. Any other
//! API at a version this crate cannot read is a [`WireError::UnsupportedVersion`]: Kafka
//! closes such a connection.

mod requests;
mod responses;

use bytes::Bytes;
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::Encodable;

use crate::api::{ApiKey, VersionRange};
use crate::error::WireError;
use crate::messages::UNSUPPORTED_VERSION;
use crate::messages::{
    check_version, ApiVersion, ApiVersionsResponse, Request, Response, SaslResponse,
};
use crate::reader::{ReadError, Reader};

/// A request frame's header, as the broker reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestHeader {
    /// The API.
    pub api: ApiKey,
    /// The version the client sent it at; the answer goes out at the same version.
    pub version: i16,
    /// The correlation id to answer with.
    pub correlation_id: i32,
    /// The client id, if the client sent one.
    pub client_id: Option<String>,
}

/// What a request frame asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestBody {
    /// A request this crate can read, at its header's version.
    Request(Request),
    /// ApiVersions at a version above [`ApiKey::supported`]: its body is not read (a newer
    /// client may have added fields). Answer with [`unsupported_api_versions`].
    UnsupportedApiVersions,
}

/// A request frame, decoded on the broker side.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerRequest {
    /// The header.
    pub header: RequestHeader,
    /// The body.
    pub body: RequestBody,
}

/// Decodes a request frame as [`FrameDecoder::decode`](crate::FrameDecoder::decode) yields
/// it: without its length prefix. The header version follows from the API and version
/// (v2, with tagged fields, for flexible versions; v1 otherwise). The whole frame must be
/// used.
///
/// # Errors
/// [`WireError::RequestHeader`] for a header that is cut short or malformed,
/// [`WireError::UnknownApiKey`] for an API this crate does not speak,
/// [`WireError::UnsupportedVersion`] for a version outside [`ApiKey::supported`]
/// (ApiVersions excepted, see [`RequestBody::UnsupportedApiVersions`]), and
/// [`WireError::Truncated`] or [`WireError::Decode`] for a body that is not a valid
/// request. Any error means the connection can not be trusted any more.
pub fn decode_request(frame: Bytes) -> Result<ServerRequest, WireError> {
    let header_err = |e: ReadError| WireError::RequestHeader {
        source: match e {
            ReadError::Truncated => None,
            ReadError::Malformed(d) => Some(d),
        },
    };
    // The client id is a classic nullable string even in header v2; only the tagged
    // fields after it are flexible.
    let mut r = Reader::new(frame, false);
    let api_key = r.i16().map_err(header_err)?;
    let version = r.i16().map_err(header_err)?;
    let correlation_id = r.i32().map_err(header_err)?;
    let api = ApiKey::from_id(api_key).ok_or(WireError::UnknownApiKey {
        api_key,
        correlation_id,
    })?;
    let client_id = r.nullable_string().map_err(header_err)?;
    let mut r = Reader::new(r.into_rest(), true);
    if api.request_header_version(version) >= 2 {
        r.skip_tagged_fields().map_err(header_err)?;
    }
    let header = RequestHeader {
        api,
        version,
        correlation_id,
        client_id,
    };
    if api == ApiKey::ApiVersions && version > api.supported().max {
        return Ok(ServerRequest {
            header,
            body: RequestBody::UnsupportedApiVersions,
        });
    }
    check_version(api, version)?;
    let mut r = Reader::new(r.into_rest(), api.is_flexible(version));
    let request = requests::read_body(&mut r, api, version)
        .and_then(|req| r.finish().map(|()| req))
        .map_err(|e| e.into_wire(api, version))?;
    Ok(ServerRequest {
        header,
        body: RequestBody::Request(request),
    })
}

/// The answer to an ApiVersions request this broker cannot read: `UNSUPPORTED_VERSION`
/// with the broker's ApiVersions range only, as Kafka's
/// `ApiVersionsRequest.getErrorResponse` builds it, so the client retries at a version
/// both sides know. [`encode_response`] writes it as a v0 body.
#[must_use]
pub fn unsupported_api_versions(supported: VersionRange) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: UNSUPPORTED_VERSION,
        api_keys: vec![ApiVersion {
            api_key: ApiKey::ApiVersions.id(),
            min_version: supported.min,
            max_version: supported.max,
        }],
        throttle_time_ms: 0,
        supported_features: Vec::new(),
        finalized_features_epoch: -1,
        finalized_features: Vec::new(),
    }
}

/// Encodes `response` as a whole frame answering the request `correlation_id` of `api`
/// read at `version`: length prefix, response header (v1 with tagged fields for flexible
/// versions, v0 otherwise and always for ApiVersions), body.
///
/// The body is written at `version`, except an ApiVersions answer carrying
/// `UNSUPPORTED_VERSION`, which is written as v0 (see the module docs). A field the
/// version does not have must hold its default, the value this crate's decoders give it
/// at that version: Kafka's schemas mark most such fields non-ignorable, and a set one
/// fails the encode (as Java's generated serializers throw); the ignorable ones
/// (throttle times, ApiVersions' features before v3) are left out. A Produce partition's
/// `current_leader` of `None` is the absent tagged field.
///
/// # Errors
/// [`WireError::Encode`] when `response` is not an answer of `api` or does not fit the
/// version (a Metadata topic without a name before v12, a Produce `current_leader`
/// before v10), and
/// [`WireError::UnsupportedVersion`] for a version outside [`ApiKey::supported`].
pub fn encode_response(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    response: &Response,
) -> Result<Bytes, WireError> {
    if response.api_key() != api {
        return Err(WireError::Encode {
            api,
            version,
            source: format!("a {} response does not answer {api}", response.api_key()).into(),
        });
    }
    let body_version = match response {
        Response::ApiVersions(r) if r.error_code == UNSUPPORTED_VERSION => 0,
        _ => {
            check_version(api, version)?;
            version
        }
    };
    let header_version = api.response_header_version(version);
    match response {
        Response::ApiVersions(r) => frame(
            api,
            body_version,
            header_version,
            correlation_id,
            &responses::api_versions(r),
        ),
        Response::Metadata(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::metadata(r),
        ),
        Response::InitProducerId(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::init_producer_id(r),
        ),
        Response::Produce(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::produce(r),
        ),
        Response::FindCoordinator(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::find_coordinator(r, version),
        ),
        Response::AddPartitionsToTxn(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::add_partitions_to_txn(r),
        ),
        Response::AddOffsetsToTxn(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::add_offsets_to_txn(r),
        ),
        Response::TxnOffsetCommit(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::txn_offset_commit(r),
        ),
        Response::EndTxn(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::end_txn(r),
        ),
        Response::Sasl(SaslResponse::Handshake(r)) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::sasl_handshake(r),
        ),
        Response::Sasl(SaslResponse::Authenticate(r)) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::sasl_authenticate(r),
        ),
        Response::GetTelemetrySubscriptions(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::get_telemetry_subscriptions(r),
        ),
        Response::PushTelemetry(r) => frame(
            api,
            version,
            header_version,
            correlation_id,
            &responses::push_telemetry(r),
        ),
    }
}

/// `length prefix + response header + body` in one buffer sized up front.
fn frame<B: Encodable>(
    api: ApiKey,
    version: i16,
    header_version: i16,
    correlation_id: i32,
    body: &B,
) -> Result<Bytes, WireError> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    crate::encode::framed(api, version, &header, header_version, body)
}
