//! Sans-IO Kafka wire layer for kacrab's producer drivers.
//!
//! # Layering
//!
//! ```text
//!  kacrab-idempotence   sequencing, retries, epochs: decides WHAT to send
//!         │  (its own types; raw i16 error codes cross this line)
//!  Tokio / blocking driver   owns sockets, clocks, timeouts; maps core <-> wire types
//!         │
//!  kacrab-wire (this crate)   HOW it looks on the wire: frames, correlation ids,
//!                             versions, message encode/decode
//! ```
//!
//! This crate knows nothing of sequence numbers, retries, sockets, async or time. It
//! turns requests into bytes and bytes into responses, with these pieces:
//!
//! * [`FrameDecoder`] cuts the size-prefixed byte stream into frames, refusing negative
//!   or oversized lengths without ever reserving what a prefix claims.
//! * [`Connection`] is the state of one broker socket: it allocates correlation ids,
//!   remembers each request in flight (API, version, a caller's `u64` tag), encodes
//!   requests into [`Frame`]s and matches response frames back to
//!   their requests. Produce with `acks = 0` is never answered and is not remembered.
//! * [`Versions`] turns a broker's ApiVersions answer into the version to use per API
//!   and exposes its finalized features (`transaction.version`).
//! * [`messages`] holds the requests and responses as this crate's own types; the
//!   [`Request`] and [`Response`] enums cover them all.
//!
//! With the feature `server`, the module `server` holds the broker half (decode requests, encode
//! responses), for model brokers and fakes; drivers do not need it.
//!
//! Error codes inside responses stay raw `i16`s: mapping them is the core's job. A
//! [`WireError`] from decoding means the connection can no longer be trusted.
//!
//! Requests are encoded with kafka-protocol (its types never appear in this API), except
//! Produce: its encoder writes only the bytes around the record batches, and the
//! [`Frame`] holds each batch's own `Bytes` as a part, for one vectored write. Responses are decoded
//! by this crate: kafka-protocol's decoders trust array lengths from the wire and can be
//! made to request hundreds of gigabytes with five bytes, which aborts the process. The
//! decoders here allocate only in proportion to bytes that arrived, and are checked
//! against kafka-protocol's encoders in the tests.
//!
//! # Example
//!
//! The handshake with a broker too old for ApiVersions v3, then a Metadata request. The
//! bytes "from the socket" are spelled out by hand.
//!
//! ```
//! use kacrab_wire::messages::{ApiVersionsRequest, MetadataRequest};
//! use kacrab_wire::{ApiKey, Connection, FrameDecoder, Response, Versions, WireError};
//!
//! # fn frame(parts: &[&[u8]]) -> Vec<u8> {
//! #     let body: Vec<u8> = parts.concat();
//! #     [&(body.len() as i32).to_be_bytes()[..], &body].concat()
//! # }
//! # fn main() -> Result<(), WireError> {
//! let mut conn = Connection::new(Some("my-app".to_owned()));
//! let mut frames = FrameDecoder::new();
//! let hello = kacrab_wire::message!(ApiVersionsRequest {
//!     client_software_name: "kacrab".into(),
//!     client_software_version: "0.1.0".into(),
//! });
//!
//! // ApiVersions v3 first; the tag (here 7) comes back with the response.
//! let sent = conn.encode(hello.clone(), ApiVersionsRequest::FIRST_VERSION, 7)?;
//! // socket.write_all_buf(&mut sent.frame), or a vectored write of its parts
//! # assert!(sent.expects_response);
//!
//! // The broker answers UNSUPPORTED_VERSION (35) in v0 format: it supports ApiVersions v0..=v2.
//! frames.extend(&frame(&[&[0, 0, 0, 0], &[0, 35], &[0, 0, 0, 1], &[0, 18, 0, 0, 0, 2]]));
//! let reply = conn.decode(frames.decode()?.expect("a whole frame"))?;
//! assert_eq!(reply.tag, 7);
//! let Response::ApiVersions(answer) = reply.response else { unreachable!() };
//! let retry = answer.retry_version(ApiVersionsRequest::FIRST_VERSION).expect("retry");
//! assert_eq!(retry, 2);
//!
//! conn.encode(hello, retry, 8)?;
//! // ApiVersions v2 answer: ApiVersions v0..=2 and Metadata v0..=9, throttle 0.
//! frames.extend(&frame(&[
//!     &[0, 0, 0, 1], &[0, 0], &[0, 0, 0, 2], &[0, 18, 0, 0, 0, 2], &[0, 3, 0, 0, 0, 9], &[0, 0, 0, 0],
//! ]));
//! let reply = conn.decode(frames.decode()?.expect("a whole frame"))?;
//! let Response::ApiVersions(answer) = reply.response else { unreachable!() };
//! let versions = Versions::from_response(&answer)?;
//!
//! let request = MetadataRequest::topics(["orders"]);
//! let version = versions.get(ApiKey::Metadata)?;
//! assert_eq!(version, 9);
//! let sent = conn.encode(request, version, 9)?;
//! assert_eq!(conn.in_flight_count(), 1);
//! # let _ = sent;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod api;
mod connection;
mod encode;
mod error;
mod frame;
pub mod messages;
mod outgoing;
mod reader;
#[cfg(feature = "server")]
pub mod server;
mod versions;

/// The `bytes` crate this API speaks ([`bytes::Bytes`] frames and record batches).
pub use bytes;

pub use api::{ApiKey, VersionRange};
pub use connection::{Connection, DecodedResponse, EncodedRequest, InFlight};
pub use error::{DecodeError, WireError};
pub use frame::{FrameDecoder, DEFAULT_MAX_FRAME_SIZE};
pub use messages::{Request, Response, SaslRequest, SaslResponse};
pub use outgoing::Frame;
pub use versions::{Versions, TRANSACTION_VERSION_FEATURE};

// The README is the crate's page on the registry: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
