//! Per-connection request/response correlation.

use std::collections::VecDeque;

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;

use crate::api::ApiKey;
use crate::error::WireError;
use crate::messages::{Request, Response};
use crate::outgoing::Frame;
use crate::reader::Reader;

/// A request waiting for its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// Its correlation id.
    pub correlation_id: i32,
    /// Its API.
    pub api: ApiKey,
    /// The version it was sent at (and its response will be read at).
    pub version: i16,
    /// The caller's tag.
    pub tag: u64,
}

/// An encoded request, ready to write to the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedRequest {
    /// The whole frame: length prefix, request header, body; a Produce request's record
    /// batches are parts of their own, not copied.
    pub frame: Frame,
    /// The correlation id allocated to it.
    pub correlation_id: i32,
    /// `false` for Produce with `acks = 0`: the broker will not answer, and nothing was
    /// recorded as in flight. The caller completes the request once the frame is written.
    pub expects_response: bool,
}

/// A response matched to its request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedResponse {
    /// The caller's tag given at [`Connection::encode`].
    pub tag: u64,
    /// The correlation id.
    pub correlation_id: i32,
    /// The version it was read at: the request's (ApiVersions' UNSUPPORTED_VERSION
    /// answer excepted, whose body is read as v0).
    pub version: i16,
    /// The response.
    pub response: Response,
}

/// The sans-IO state of one broker connection: allocates correlation ids, remembers what
/// is in flight, encodes requests into frames and matches response frames to them.
///
/// It knows nothing of sockets, time or retries. Any error from [`Connection::decode`]
/// means the stream is no longer trustworthy: close the socket and fail what
/// [`Connection::take_in_flight`] returns.
#[derive(Debug, Default)]
pub struct Connection {
    client_id: Option<StrBytes>,
    next_correlation_id: i32,
    in_flight: VecDeque<InFlight>,
}

impl Connection {
    /// A fresh connection whose requests carry `client_id` in their headers.
    #[must_use]
    pub fn new(client_id: Option<String>) -> Self {
        Self {
            client_id: client_id.map(StrBytes::from_string),
            next_correlation_id: 0,
            in_flight: VecDeque::new(),
        }
    }

    /// The client id sent in request headers.
    #[must_use]
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// Encodes `request` at `version` into a frame with a fresh correlation id, and
    /// remembers it (with `tag`) until its response arrives, unless no response will.
    ///
    /// The version is the caller's choice, normally [`crate::Versions::version_for`].
    ///
    /// # Errors
    /// [`WireError::UnsupportedVersion`] for a version this crate does not implement,
    /// [`WireError::Encode`] when the request does not fit the version, and
    /// [`WireError::FrameTooLarge`] past 2 GiB. Nothing is recorded then.
    pub fn encode(
        &mut self,
        request: impl Into<Request>,
        version: i16,
        tag: u64,
    ) -> Result<EncodedRequest, WireError> {
        let request = request.into();
        let api = request.api_key();
        let expects_response = request.expects_response();
        let correlation_id = self.free_correlation_id();
        let frame = request.encode_frame(version, correlation_id, self.client_id.as_ref())?;
        self.next_correlation_id = next_id(correlation_id);
        if expects_response {
            self.in_flight.push_back(InFlight {
                correlation_id,
                api,
                version,
                tag,
            });
        }
        Ok(EncodedRequest {
            frame,
            correlation_id,
            expects_response,
        })
    }

    /// Matches a response frame (as [`crate::FrameDecoder::decode`] yields it, without the
    /// length prefix) to its request by correlation id, forgets that request, and decodes
    /// the response at the request's version.
    ///
    /// # Errors
    /// [`WireError::ShortFrame`], [`WireError::UnknownCorrelationId`],
    /// [`WireError::Truncated`] or [`WireError::Decode`]; in the last two cases the request
    /// has been forgotten all the same. Either way: close the connection.
    pub fn decode(&mut self, frame: Bytes) -> Result<DecodedResponse, WireError> {
        let Some(&[a, b, c, d]) = frame.get(..4) else {
            return Err(WireError::ShortFrame { len: frame.len() });
        };
        let correlation_id = i32::from_be_bytes([a, b, c, d]);
        let pos = self
            .in_flight
            .iter()
            .position(|f| f.correlation_id == correlation_id)
            .ok_or(WireError::UnknownCorrelationId(correlation_id))?;
        let Some(InFlight {
            api, version, tag, ..
        }) = self.in_flight.remove(pos)
        else {
            return Err(WireError::UnknownCorrelationId(correlation_id));
        };
        let mut rest = Reader::new(frame.slice(4..), true);
        if api.response_header_version(version) >= 1 {
            rest.skip_tagged_fields()
                .map_err(|e| e.into_wire(api, version))?;
        }
        let body = rest.into_rest();
        let version = if api == ApiKey::ApiVersions {
            crate::messages::ApiVersionsResponse::body_version(&body, version)
        } else {
            version
        };
        let response = Response::decode(api, version, body)?;
        Ok(DecodedResponse {
            tag,
            correlation_id,
            version,
            response,
        })
    }

    /// The requests awaiting a response, oldest first.
    pub fn in_flight(&self) -> impl ExactSizeIterator<Item = &InFlight> + '_ {
        self.in_flight.iter()
    }

    /// How many requests await a response.
    #[must_use]
    pub fn in_flight_count(&self) -> usize {
        self.in_flight.len()
    }

    /// Forgets every request in flight and returns them, oldest first: for when the
    /// connection closes and their callers must be told.
    pub fn take_in_flight(&mut self) -> Vec<InFlight> {
        self.in_flight.drain(..).collect()
    }

    /// The next correlation id not in flight. Ids are non-negative and wrap to 0.
    fn free_correlation_id(&self) -> i32 {
        let mut id = self.next_correlation_id;
        while self.in_flight.iter().any(|f| f.correlation_id == id) {
            id = next_id(id);
        }
        id
    }
}

fn next_id(id: i32) -> i32 {
    id.checked_add(1).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::MetadataRequest;

    #[test]
    fn correlation_ids_wrap_and_skip_in_flight() {
        let mut c = Connection::new(None);
        c.next_correlation_id = i32::MAX;
        let a = c.encode(MetadataRequest::all_topics(), 1, 1).unwrap();
        assert_eq!(a.correlation_id, i32::MAX);
        let b = c.encode(MetadataRequest::all_topics(), 1, 2).unwrap();
        assert_eq!(b.correlation_id, 0);
        // wrap around onto ids still in flight: they are skipped
        c.next_correlation_id = i32::MAX;
        let d = c.encode(MetadataRequest::all_topics(), 1, 3).unwrap();
        assert_eq!(d.correlation_id, 1);
    }

    #[test]
    fn failed_encode_records_nothing_and_keeps_the_id() {
        let mut c = Connection::new(None);
        let bad = MetadataRequest {
            topics: None,
            allow_auto_topic_creation: false,
        };
        assert!(matches!(
            c.encode(bad, 3, 0),
            Err(WireError::Encode {
                api: ApiKey::Metadata,
                version: 3,
                ..
            })
        ));
        assert_eq!(c.in_flight_count(), 0);
        assert_eq!(
            c.encode(MetadataRequest::all_topics(), 3, 0)
                .unwrap()
                .correlation_id,
            0
        );
    }
}
