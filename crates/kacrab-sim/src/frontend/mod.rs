//! The model broker's front end: real Kafka frames in, the simulator's typed messages
//! out, and back.
//!
//! A [`Frontend`] is the broker's end of one client connection. It decodes request frames
//! (with `kacrab_wire::server`) into the [`ToBroker`] messages the model brokers already
//! understand, remembers each request's correlation id and version, and encodes the model's
//! [`ToClient`] answer at that version with that correlation id, as Kafka's
//! `RequestChannel` pairs a response with its request's header. ApiVersions never reaches
//! the model: [`Frontend::answer_api_versions`] answers it from the [`BrokerFeatures`] the
//! simulator passes, advertising [`KAFKA_4_API_VERSIONS`].
//!
//! # Request ids
//!
//! Each request read gets a fresh [`RequestId`], counted up from the `first_id` given to
//! [`Frontend::new`]; the model's answer names it, and the front end maps it back to the
//! correlation id and version. Ids are unique within one front end; give each connection
//! its own range (for example `generation << 32`) when ids must be unique across
//! connections.
//!
//! # Fields only a client has
//!
//! The core's request types carry fields that exist only on the client side and are not
//! on the wire. The front end fills them so, and the model broker must not read them for
//! any decision: the request's `ticket` is `Ticket { seq: 0, parts: 1 }`, and its `node`
//! (`ProduceRequest::node`, `InitProducerIdRequest::node`, the coordinator's in the
//! transactional requests) is the broker that read the frame, which is the only node a
//! real broker knows a request by. `transaction_v2` is not client-only: Kafka infers it
//! from the version (Produce v12, TxnOffsetCommit v5 and EndTxn v5 are transaction
//! version 2, KIP-890), and so does the front end.

mod answers;
mod requests;

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;
use kacrab_idempotence::{Acks, NodeId, ProducerIdAndEpoch, RequestId};
use kacrab_wire::messages as wire;
use kacrab_wire::server::{self, RequestBody, ServerRequest};
use kacrab_wire::{ApiKey, FrameDecoder, Request, Response, VersionRange, WireError};

use crate::net::{ToBroker, ToClient, TxnAnswer};

/// The port every simulated broker listens on.
pub const SIM_BROKER_PORT: i32 = 9092;

/// The cluster id the front ends report in Metadata (v2+).
pub const SIM_CLUSTER_ID: &str = "kacrab-sim";

/// The API versions the front end advertises, as a Kafka 4.0 broker does for the APIs the
/// producer uses (its schemas' `validVersions`). Produce is listed from v0 although v0-v2
/// were removed (KIP-896): Kafka 4.0 keeps them in the ApiVersions answer and rejects them
/// on use (KAFKA-18659). Versions above what `kacrab-wire` implements are advertised all
/// the same, as a real broker would: the client must cap them itself.
pub const KAFKA_4_API_VERSIONS: [(ApiKey, VersionRange); 9] = [
    (ApiKey::Produce, VersionRange::new(0, 12)),
    (ApiKey::Metadata, VersionRange::new(0, 13)),
    (ApiKey::FindCoordinator, VersionRange::new(0, 6)),
    (ApiKey::ApiVersions, VersionRange::new(0, 4)),
    (ApiKey::InitProducerId, VersionRange::new(0, 5)),
    (ApiKey::AddPartitionsToTxn, VersionRange::new(0, 5)),
    (ApiKey::AddOffsetsToTxn, VersionRange::new(0, 4)),
    (ApiKey::EndTxn, VersionRange::new(0, 5)),
    (ApiKey::TxnOffsetCommit, VersionRange::new(0, 5)),
];

/// The highest `transaction.version` level Kafka 4.0 supports (KIP-890).
pub const MAX_TRANSACTION_VERSION: i16 = 2;

/// A broker's address as Metadata, FindCoordinator and Produce (KIP-951) answers give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerEndpoint {
    /// The broker.
    pub node: NodeId,
    /// Its host name.
    pub host: String,
    /// Its port.
    pub port: i32,
}

impl BrokerEndpoint {
    /// The simulator's address of broker `node`: `sim-broker-N:9092`.
    #[must_use]
    pub fn sim(node: NodeId) -> Self {
        Self {
            node,
            host: format!("sim-broker-{}", node.0),
            port: SIM_BROKER_PORT,
        }
    }

    /// `host:port`, as a client connects to it.
    #[must_use]
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The simulated broker `addr` (`sim-broker-N:9092`) names, if it names one.
    #[must_use]
    pub fn parse_sim(addr: &str) -> Option<NodeId> {
        let rest = addr.strip_prefix("sim-broker-")?;
        let (node, port) = rest.split_once(':')?;
        (port.parse::<i32>().ok()? == SIM_BROKER_PORT)
            .then(|| node.parse().ok().map(NodeId))
            .flatten()
    }
}

/// What a broker's ApiVersions answer reports of the cluster's features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokerFeatures {
    /// The finalized `transaction.version` level, or `None` for a broker that reports no
    /// such feature (then it reports no supported features either, as a broker before
    /// KIP-890).
    pub transaction_version: Option<i16>,
    /// The epoch of this broker's view of the finalized features (-1: none). Brokers learn
    /// a change at different times; the client keeps the view of the highest epoch.
    pub features_epoch: i64,
}

/// A request frame, translated.
#[derive(Clone, Debug)]
pub enum FrontendRequest {
    /// ApiVersions: not the model's business. Answer it with
    /// [`Frontend::answer_api_versions`].
    ApiVersions {
        /// The id to answer it by.
        id: RequestId,
        /// The version the client sent (possibly one the front end cannot read: then the
        /// answer is `UNSUPPORTED_VERSION` in v0, as Kafka's).
        version: i16,
    },
    /// A request for the model broker. A Produce with `acks = 0` gets no answer: the front
    /// end does not wait for one.
    Model(ToBroker),
}

/// Why the front end could not translate.
#[derive(Debug)]
pub enum FrontendError {
    /// A frame that is not a valid request, or an answer that does not fit its version.
    /// For a request: Kafka closes the connection, and so must the simulator.
    Wire(WireError),
    /// A request the model's types cannot hold (the producer never sends one).
    Unsupported {
        /// The API.
        api: ApiKey,
        /// What it held.
        what: &'static str,
    },
    /// An answer to a request this front end does not await (never read, answered
    /// already, or a Produce with `acks = 0`).
    UnknownRequest(RequestId),
    /// An answer of the wrong kind for its request (or a model answer to ApiVersions).
    WrongAnswer {
        /// The request.
        id: RequestId,
        /// Its API.
        api: ApiKey,
    },
    /// An answer the request's version cannot carry (a new epoch from EndTxn before v5).
    Unrepresentable {
        /// The request.
        id: RequestId,
        /// What could not be said.
        what: &'static str,
    },
}

impl fmt::Display for FrontendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrontendError::Wire(e) => write!(f, "wire: {e}"),
            FrontendError::Unsupported { api, what } => write!(f, "{api} request with {what}"),
            FrontendError::UnknownRequest(id) => write!(f, "answer to unknown request {id}"),
            FrontendError::WrongAnswer { id, api } => {
                write!(f, "answer of the wrong kind to {api} request {id}")
            }
            FrontendError::Unrepresentable { id, what } => {
                write!(f, "answer to request {id} cannot carry {what}")
            }
        }
    }
}

impl std::error::Error for FrontendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrontendError::Wire(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WireError> for FrontendError {
    fn from(e: WireError) -> Self {
        FrontendError::Wire(e)
    }
}

/// A request read and not answered yet.
#[derive(Clone, Debug)]
struct Awaiting {
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    /// ApiVersions at a version the front end cannot read.
    unsupported: bool,
    /// FindCoordinator's key (v4+ answers name it).
    key: Option<String>,
}

/// The broker's end of one client connection. See the module documentation.
#[derive(Debug)]
pub struct Frontend {
    node: NodeId,
    next_id: u64,
    frames: FrameDecoder,
    /// Requests read and not answered, by the id handed to the model. Invariant: every id
    /// is below `next_id`.
    awaiting: BTreeMap<RequestId, Awaiting>,
}

impl Frontend {
    /// The end of a connection to broker `node`; request ids count up from `first_id`.
    #[must_use]
    pub fn new(node: NodeId, first_id: RequestId) -> Self {
        Self {
            node,
            next_id: first_id.0,
            frames: FrameDecoder::new(),
            awaiting: BTreeMap::new(),
        }
    }

    /// The broker.
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// How many requests were read and not answered.
    #[must_use]
    pub fn awaiting(&self) -> usize {
        self.awaiting.len()
    }

    /// The requests awaiting their answers, in the order they were read. Kafka answers
    /// a connection's requests in that order (`SocketServer` mutes a channel until the
    /// response to its current request is sent); the front end does not enforce it, the
    /// simulator can check it against [`Frontend::oldest_awaiting`].
    pub fn awaiting_ids(&self) -> impl Iterator<Item = RequestId> + '_ {
        self.awaiting.keys().copied()
    }

    /// The request read first among those awaiting their answers.
    #[must_use]
    pub fn oldest_awaiting(&self) -> Option<RequestId> {
        self.awaiting.keys().next().copied()
    }

    /// The API and version of request `id`, while it awaits its answer.
    #[must_use]
    pub fn request_version(&self, id: RequestId) -> Option<(ApiKey, i16)> {
        self.awaiting.get(&id).map(|a| (a.api, a.version))
    }

    /// Bytes the client wrote on the connection (any cut: whole frames, parts of one,
    /// several): every request completed by them, in order.
    ///
    /// # Errors
    /// As [`Frontend::decode`], or a bad length prefix; the requests before the bad frame
    /// are lost with the connection, which must be closed.
    pub fn handle_bytes(&mut self, bytes: &[u8]) -> Result<Vec<FrontendRequest>, FrontendError> {
        self.frames.extend(bytes);
        let mut out = Vec::new();
        while let Some(frame) = self.frames.decode()? {
            out.push(self.decode(frame)?);
        }
        Ok(out)
    }

    /// One request frame without its length prefix (as `FrameDecoder` yields it).
    ///
    /// # Errors
    /// [`FrontendError::Wire`] for a frame that is not a valid request,
    /// [`FrontendError::Unsupported`] for one the model's types cannot hold. Either way
    /// the connection must be closed.
    pub fn decode(&mut self, frame: Bytes) -> Result<FrontendRequest, FrontendError> {
        let ServerRequest { header, body, .. } = server::decode_request(frame)?;
        let id = RequestId(self.next_id);
        let (api, version) = (header.api, header.version);
        let request = match body {
            RequestBody::UnsupportedApiVersions => None,
            RequestBody::Request(r) => Some(r),
        };
        let key = match &request {
            Some(Request::FindCoordinator(r)) => Some(r.key.clone()),
            _ => None,
        };
        let translated = match request {
            None | Some(Request::ApiVersions(_)) => FrontendRequest::ApiVersions { id, version },
            Some(r) => FrontendRequest::Model(requests::to_broker(self.node, id, version, r)?),
        };
        self.next_id += 1;
        debug_assert!(
            self.awaiting.keys().all(|k| k.0 < self.next_id),
            "ids are handed out in order"
        );
        let answered = !matches!(&translated, FrontendRequest::Model(ToBroker::Produce(p)) if p.acks == Acks::None);
        if answered {
            self.awaiting.insert(
                id,
                Awaiting {
                    correlation_id: header.correlation_id,
                    api,
                    version,
                    unsupported: api == ApiKey::ApiVersions
                        && version > ApiKey::ApiVersions.supported().max,
                    key,
                },
            );
        }
        Ok(translated)
    }

    /// The answer to ApiVersions request `id`: [`KAFKA_4_API_VERSIONS`] and `features`, at
    /// the request's version; or, for a version the front end cannot read,
    /// `UNSUPPORTED_VERSION` with the ApiVersions versions it can (Kafka's rule, KIP-511).
    /// A whole size-prefixed frame.
    ///
    /// # Errors
    /// [`FrontendError::UnknownRequest`] or [`FrontendError::WrongAnswer`] when `id` is
    /// not an ApiVersions request awaiting its answer.
    pub fn answer_api_versions(
        &mut self,
        id: RequestId,
        features: &BrokerFeatures,
    ) -> Result<Bytes, FrontendError> {
        let a = self.take(id, ApiKey::ApiVersions)?;
        let response = if a.unsupported {
            server::unsupported_api_versions(ApiKey::ApiVersions.supported())
        } else {
            answers::api_versions(features, a.version)
        };
        Ok(server::encode_response(
            a.correlation_id,
            ApiKey::ApiVersions,
            a.version,
            &response.into(),
        )?)
    }

    /// The model's answer as a whole size-prefixed frame, at its request's version and
    /// with its correlation id. `brokers` are the live brokers Metadata lists; a node
    /// named elsewhere (a coordinator, a new leader) and absent from it is addressed by
    /// [`BrokerEndpoint::sim`].
    ///
    /// # Errors
    /// [`FrontendError::UnknownRequest`] when no request awaits this answer (the front end
    /// then forgets nothing), [`FrontendError::WrongAnswer`] when it answers another API,
    /// [`FrontendError::Unrepresentable`] or [`FrontendError::Wire`] when the version can
    /// not carry it; the request is forgotten in those three cases.
    pub fn encode(
        &mut self,
        answer: &ToClient,
        brokers: &[BrokerEndpoint],
    ) -> Result<Bytes, FrontendError> {
        let id = answer.id();
        let api = match answer {
            ToClient::Produce(..) => ApiKey::Produce,
            ToClient::InitProducerId(..) => ApiKey::InitProducerId,
            ToClient::Metadata(..) => ApiKey::Metadata,
            ToClient::Txn(_, TxnAnswer::FindCoordinator(_)) => ApiKey::FindCoordinator,
            ToClient::Txn(_, TxnAnswer::AddPartitions(_)) => ApiKey::AddPartitionsToTxn,
            ToClient::Txn(_, TxnAnswer::AddOffsets(_)) => ApiKey::AddOffsetsToTxn,
            ToClient::Txn(_, TxnAnswer::TxnOffsetCommit(_)) => ApiKey::TxnOffsetCommit,
            ToClient::Txn(_, TxnAnswer::EndTxn(_)) => ApiKey::EndTxn,
        };
        let a = self.take(id, api)?;
        let v = a.version;
        let response: Response = match answer {
            ToClient::Produce(_, r) => answers::produce_response(r, v, brokers).into(),
            ToClient::InitProducerId(_, r) => {
                let (error_code, pe) = match r {
                    Ok(pe) => (0, *pe),
                    Err(e) => (e.code(), ProducerIdAndEpoch::NONE),
                };
                kacrab_wire::message!(wire::InitProducerIdResponse {
                    throttle_time_ms: 0,
                    error_code,
                    producer_id: pe.id.0,
                    producer_epoch: pe.epoch.0,
                })
                .into()
            }
            ToClient::Metadata(_, md) => answers::metadata_response(md, v, brokers).into(),
            ToClient::Txn(_, TxnAnswer::FindCoordinator(r)) => {
                let (error_code, at) = match r {
                    Ok(node) => (0, Some(answers::endpoint(*node, brokers))),
                    Err(e) => (e.code(), None),
                };
                kacrab_wire::message!(wire::FindCoordinatorResponse {
                    throttle_time_ms: 0,
                    key: if v >= 4 { a.key.clone() } else { None },
                    error_code,
                    error_message: None,
                    node_id: at.as_ref().map_or(-1, |e| e.node.0),
                    host: at.as_ref().map_or_else(String::new, |e| e.host.clone()),
                    port: at.as_ref().map_or(-1, |e| e.port),
                })
                .into()
            }
            ToClient::Txn(_, TxnAnswer::AddPartitions(r)) => {
                kacrab_wire::message!(wire::AddPartitionsToTxnResponse {
                    throttle_time_ms: 0,
                    topics: answers::topic_results(r),
                })
                .into()
            }
            ToClient::Txn(_, TxnAnswer::AddOffsets(e)) => {
                kacrab_wire::message!(wire::AddOffsetsToTxnResponse {
                    throttle_time_ms: 0,
                    error_code: e.code(),
                })
                .into()
            }
            ToClient::Txn(_, TxnAnswer::TxnOffsetCommit(r)) => {
                kacrab_wire::message!(wire::TxnOffsetCommitResponse {
                    throttle_time_ms: 0,
                    topics: answers::topic_results(r),
                })
                .into()
            }
            ToClient::Txn(_, TxnAnswer::EndTxn(r)) => {
                let (error_code, pe) = match r {
                    Ok(pe) => (0, *pe),
                    Err(e) => (e.code(), None),
                };
                if pe.is_some() && v < 5 {
                    return Err(FrontendError::Unrepresentable {
                        id,
                        what: "a new producer epoch (EndTxn before v5)",
                    });
                }
                let pe = pe.unwrap_or(ProducerIdAndEpoch::NONE);
                kacrab_wire::message!(wire::EndTxnResponse {
                    throttle_time_ms: 0,
                    error_code,
                    producer_id: pe.id.0,
                    producer_epoch: pe.epoch.0,
                })
                .into()
            }
        };
        Ok(server::encode_response(
            a.correlation_id,
            api,
            v,
            &response,
        )?)
    }

    /// Forgets request `id`, returning what it awaited if it is of `api`.
    fn take(&mut self, id: RequestId, api: ApiKey) -> Result<Awaiting, FrontendError> {
        let a = self
            .awaiting
            .remove(&id)
            .ok_or(FrontendError::UnknownRequest(id))?;
        if a.api == api {
            Ok(a)
        } else {
            Err(FrontendError::WrongAnswer { id, api: a.api })
        }
    }
}
