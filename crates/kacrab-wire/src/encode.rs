//! Request framing through kafka-protocol's encoders.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::api::ApiKey;
use crate::error::WireError;

/// Encodes `length prefix + request header + body` into one buffer sized up front, so the
/// body (a Produce request's record batches included) is copied exactly once.
pub(crate) fn frame<B: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: Option<&StrBytes>,
    body: &B,
) -> Result<Bytes, WireError> {
    let header = request_header(api, version, correlation_id, client_id);
    let header_version = api.request_header_version(version);
    framed(api, version, &header, header_version, body)
}

/// The request header every request carries.
pub(crate) fn request_header(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: Option<&StrBytes>,
) -> RequestHeader {
    RequestHeader::default()
        .with_request_api_key(api.id())
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.cloned())
}

/// An encoder's complaint about a message of `api` at `version`, as a [`WireError`].
pub(crate) fn encode_error(
    api: ApiKey,
    version: i16,
) -> impl Fn(Box<dyn std::error::Error + Send + Sync>) -> WireError {
    move |source| WireError::Encode {
        api,
        version,
        source,
    }
}

/// `length prefix + header + body` in one buffer sized up front: the framing requests
/// and (under the `server` feature) responses share.
pub(crate) fn framed<H: Encodable, B: Encodable>(
    api: ApiKey,
    version: i16,
    header: &H,
    header_version: i16,
    body: &B,
) -> Result<Bytes, WireError> {
    let err = encode_error(api, version);
    let size = header
        .compute_size(header_version)
        .map_err(|e| err(e.into()))?
        + body.compute_size(version).map_err(|e| err(e.into()))?;
    let max = i32::MAX as usize;
    if size > max {
        return Err(WireError::FrameTooLarge { size, max });
    }
    let mut buf = BytesMut::with_capacity(4 + size);
    buf.put_i32(size as i32);
    header
        .encode(&mut buf, header_version)
        .map_err(|e| err(e.into()))?;
    body.encode(&mut buf, version).map_err(|e| err(e.into()))?;
    debug_assert_eq!(buf.len(), 4 + size, "compute_size disagrees with encode");
    Ok(buf.freeze())
}

/// A `String` as kafka-protocol's string type, without copying its bytes.
pub(crate) fn sb(s: String) -> StrBytes {
    StrBytes::from_string(s)
}
