//! The crate's error types.

use crate::api::{ApiKey, VersionRange};

/// Everything that can go wrong in the wire layer.
///
/// Apart from the negotiation errors ([`WireError::NoCommonVersion`],
/// [`WireError::ApiNotAdvertised`], [`WireError::UnsupportedVersion`]) and
/// [`WireError::Encode`], every variant means the byte stream can no longer be trusted:
/// the driver should close the connection and fail whatever was in flight on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A frame's length prefix is larger than the configured maximum (or an encoded request
    /// would not fit a frame).
    #[error("frame of {size} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge {
        /// The size the length prefix claims (or the request's encoded size).
        size: usize,
        /// The limit in force.
        max: usize,
    },

    /// A frame's length prefix is negative.
    #[error("negative frame length {0}")]
    NegativeLength(i32),

    /// A response frame too short to hold even a correlation id.
    #[error("response frame of {len} bytes is too short for a response header")]
    ShortFrame {
        /// The frame's length.
        len: usize,
    },

    /// A response whose correlation id matches no request in flight on this connection.
    #[error("response with unknown correlation id {0}")]
    UnknownCorrelationId(i32),

    /// A response (or, on the broker side, a request) ended before its message did.
    #[error("{api} v{version} message is truncated")]
    Truncated {
        /// The API whose message was being decoded.
        api: ApiKey,
        /// The version it was decoded at.
        version: i16,
    },

    /// A response's (or, on the broker side, a request's) bytes do not form a valid
    /// message.
    #[error("malformed {api} v{version} message")]
    Decode {
        /// The API whose message was being decoded.
        api: ApiKey,
        /// The version it was decoded at.
        version: i16,
        /// What was wrong with it.
        #[source]
        source: DecodeError,
    },

    /// A request could not be encoded at the chosen version, typically because it sets a
    /// field that version does not have (for example a producer id in InitProducerId v2, or
    /// `allow_auto_topic_creation = false` in Metadata v3). On the broker side (feature
    /// `server`), a response that does not fit its version.
    #[error("cannot encode {api} v{version} message")]
    Encode {
        /// The API of the message.
        api: ApiKey,
        /// The version it was to be encoded at.
        version: i16,
        /// The encoder's complaint.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A version outside the range this crate implements for the API.
    #[error("{api} v{version} is not supported by kacrab-wire (supported: {supported})")]
    UnsupportedVersion {
        /// The API.
        api: ApiKey,
        /// The version asked for.
        version: i16,
        /// What this crate implements.
        supported: VersionRange,
    },

    /// The broker's advertised range for an API does not overlap ours.
    #[error("no common {api} version: we support {ours}, the broker {broker}")]
    NoCommonVersion {
        /// The API.
        api: ApiKey,
        /// Our range (after caps).
        ours: VersionRange,
        /// The broker's advertised range.
        broker: VersionRange,
    },

    /// The broker did not list the API in its ApiVersions response.
    #[error("the broker does not support {api}")]
    ApiNotAdvertised {
        /// The API.
        api: ApiKey,
    },

    /// A response that carries a top-level error where the wire layer itself needs a
    /// successful one (only [`crate::Versions::from_response`] reports this).
    #[error("{api} failed with error code {error_code}")]
    ErrorResponse {
        /// The API.
        api: ApiKey,
        /// Kafka's error code, raw.
        error_code: i16,
    },

    /// A request frame (broker side) whose API key this crate does not speak. Kafka closes
    /// such a connection (`SocketServer` cannot parse the request).
    #[cfg(feature = "server")]
    #[error("request for unknown API key {api_key} (correlation id {correlation_id})")]
    UnknownApiKey {
        /// The API key in the header.
        api_key: i16,
        /// The correlation id in the header.
        correlation_id: i32,
    },

    /// A request frame (broker side) too short for its header, or whose header is
    /// malformed (a client id that is not UTF-8, bad tagged fields).
    #[cfg(feature = "server")]
    #[error("malformed request header")]
    RequestHeader {
        /// What was wrong; `None` when the frame ended inside the header.
        #[source]
        source: Option<DecodeError>,
    },
}

/// Why a response's bytes are not a valid message (the source of [`WireError::Decode`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A length (string, array, bytes) below -1.
    #[error("negative length {0}")]
    NegativeLength(i64),
    /// A null where the schema does not allow one.
    #[error("null in a non-nullable field")]
    UnexpectedNull,
    /// A string that is not UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// An unsigned varint longer than 5 bytes.
    #[error("varint is longer than 5 bytes")]
    InvalidVarint,
    /// Bytes left over after the message (or after a known tagged field's value).
    #[error("{0} unexpected trailing bytes")]
    TrailingBytes(usize),
    /// A value the schema allows but the protocol's rules do not.
    #[error("{0}")]
    Invalid(&'static str),
}
