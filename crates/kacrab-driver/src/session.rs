//! The [`Session`]: connections, routing and the core's inputs from response frames.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use kacrab_idempotence::ticket::Ticket;
use kacrab_idempotence::{
    Event, KafkaError, Producer, ProducerConfig, ProducerIdAndEpoch, Request, RequestFailure,
    RequestId, Timestamp,
};
use kacrab_wire::messages::{ApiVersionsRequest, MetadataRequest};
use kacrab_wire::{Connection, FrameDecoder, Response, Versions};

use crate::features::FinalizedFeatures;

use crate::convert;

/// Names one connection for the life of a session. Never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// What the driver must do on the network.
#[derive(Clone, Debug)]
#[must_use]
pub enum Output {
    /// Open a TCP connection to `addr` (`host:port`), then call
    /// [`Session::handle_connected`] or [`Session::handle_connect_failed`].
    Connect {
        /// The connection.
        conn: ConnId,
        /// Where to connect.
        addr: String,
    },
    /// Write `frame` to the connection's socket, after every frame written before it.
    Transmit {
        /// The connection.
        conn: ConnId,
        /// A whole size-prefixed Kafka frame.
        frame: Bytes,
        /// For a Produce request, the core's enqueue ticket
        /// ([`ProduceRequest::ticket`](kacrab_idempotence::ProduceRequest::ticket)); `None`
        /// for every other request. A driver writing from one loop ignores it; one that
        /// writes each connection from its own task passes the frame to the socket only
        /// when [`TicketSequencer::may_enqueue`](kacrab_idempotence::ticket::TicketSequencer::may_enqueue)
        /// allows, so that a later Produce never overtakes an earlier one across
        /// connections.
        ticket: Option<Ticket>,
    },
    /// The Produce request holding `ticket` will never be transmitted (its leader has no
    /// known address, its connection was dropped before the request could be written, or
    /// no version can encode it); the core was told. A driver ordering writes with a
    /// [`TicketSequencer`](kacrab_idempotence::ticket::TicketSequencer) must
    /// [`abandon`](kacrab_idempotence::ticket::TicketSequencer::abandon) it, or later
    /// tickets wait forever. Every Produce ticket the core hands out ends in exactly one
    /// `Transmit` or one `Release`.
    Release {
        /// The ticket.
        ticket: Ticket,
    },
    /// Close the connection and drop what is still in its socket. Do not call
    /// [`Session::handle_disconnected`] for it: the session already has.
    Close {
        /// The connection.
        conn: ConnId,
    },
}

/// Tags at or above this value name session-owned requests (ApiVersions, bootstrap
/// metadata); below it, a tag is the core's `RequestId`.
const SESSION_TAG: u64 = 1 << 63;

#[derive(Debug, PartialEq, Eq)]
enum ConnState {
    Connecting,
    /// ApiVersions sent at this version.
    Negotiating(i16),
    Ready,
}

#[derive(Debug)]
struct Conn {
    id: ConnId,
    /// The broker's node id, or `None` for a bootstrap address.
    node: Option<i32>,
    addr: String,
    state: ConnState,
    wire: Connection,
    frames: FrameDecoder,
    versions: Option<Versions>,
    /// Requests waiting for the connection to be ready, in order.
    queued: VecDeque<Pending>,
    /// When each request written on this connection and awaiting an answer times out
    /// (written + request.timeout.ms), in write order: answers come back in that order.
    deadlines: VecDeque<Timestamp>,
}

impl Conn {
    /// Remembers the deadline of a request just encoded, if the wire expects an answer
    /// (a Produce with acks=0 gets none). `in_flight_before` is the count before encoding.
    fn written(&mut self, in_flight_before: usize, deadline: Timestamp) {
        if self.wire.in_flight_count() > in_flight_before {
            self.deadlines.push_back(deadline);
        }
    }
}

/// A request waiting for its connection's version negotiation.
#[derive(Debug)]
enum Pending {
    /// The core's.
    Core(Request),
    /// The session's own (bootstrap metadata), with its tag.
    Session(kacrab_wire::Request, u64),
}

/// The sans-IO producer session: the core plus everything between it and the sockets.
#[derive(Debug)]
pub struct Session {
    core: Producer,
    client_id: Option<String>,
    bootstrap: Vec<String>,
    next_bootstrap: usize,
    brokers: BTreeMap<i32, String>,
    partition_counts: BTreeMap<String, i32>,
    conns: Vec<Conn>,
    next_conn: u64,
    next_session_tag: u64,
    out: VecDeque<Output>,
    /// The newest finalized features seen on any connection.
    features: FinalizedFeatures,
}

impl Session {
    /// A session for `config`, reaching the cluster through `bootstrap` (`host:port`s).
    /// `bootstrap` must not be empty: the first cluster-wide request panics otherwise.
    #[must_use]
    pub fn new(
        config: ProducerConfig,
        bootstrap: Vec<String>,
        client_id: Option<String>,
        now: Timestamp,
    ) -> Self {
        Self {
            core: Producer::new(config, now),
            client_id,
            bootstrap,
            next_bootstrap: 0,
            brokers: BTreeMap::new(),
            partition_counts: BTreeMap::new(),
            conns: Vec::new(),
            next_conn: 0,
            next_session_tag: SESSION_TAG,
            features: FinalizedFeatures::new(),
            out: VecDeque::new(),
        }
    }

    /// The core, for `send`, `flush`, `close` and getters.
    pub fn producer(&mut self) -> &mut Producer {
        &mut self.core
    }

    /// The core, read-only.
    #[must_use]
    pub fn producer_ref(&self) -> &Producer {
        &self.core
    }

    /// Partition count of `topic`, once metadata for it arrived.
    #[must_use]
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        self.partition_counts.get(topic).copied()
    }

    /// Asks for metadata of `topics` (for example to learn partition counts before the
    /// first send). Answers update the core's leaders and [`Session::partition_count`].
    pub fn request_metadata(&mut self, topics: &[&str], now: Timestamp) {
        let tag = self.next_session_tag;
        self.next_session_tag += 1;
        let request = MetadataRequest::topics(topics.iter().map(|t| (*t).to_owned()));
        let conn = self.any_conn();
        self.send_session_request(conn, kacrab_wire::Request::Metadata(request), tag, now);
    }

    /// The next thing the driver must do, if any. Drains the core's requests into
    /// connections first.
    pub fn poll_output(&mut self, now: Timestamp) -> Option<Output> {
        while let Some(request) = self.core.poll_request(now) {
            self.route(request, now);
        }
        self.out.pop_front()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.core.poll_event()
    }

    /// When [`Session::handle_timeout`] is next needed: the core's next deadline, or a
    /// request on a connection reaching `request.timeout.ms` unanswered.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let conns = self
            .conns
            .iter()
            .filter_map(|c| c.deadlines.front().copied())
            .min();
        match (self.core.poll_timeout(), conns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The clock passed a deadline. Besides the core's timeouts, a connection with a
    /// request unanswered for `request.timeout.ms` is closed (as Java's `NetworkClient`
    /// does), whatever the request: a broker that accepts connections but never answers
    /// ApiVersions, Metadata or InitProducerId must not hold the producer.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        self.core.handle_timeout(now);
        let expired: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|c| c.deadlines.front().is_some_and(|&d| d <= now))
            .map(|c| c.id)
            .collect();
        for conn in expired {
            self.drop_conn(conn, now, true);
        }
    }

    /// The connection is open: negotiate versions.
    pub fn handle_connected(&mut self, conn: ConnId, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        if c.state != ConnState::Connecting {
            return;
        }
        let version = ApiVersionsRequest::FIRST_VERSION;
        c.state = ConnState::Negotiating(version);
        self.send_api_versions(conn, version, now);
    }

    /// The connection could not be opened: nothing queued on it was sent.
    pub fn handle_connect_failed(&mut self, conn: ConnId, now: Timestamp) {
        self.drop_conn(conn, now, false);
    }

    /// The connection failed after it was open. Requests written on it may have been
    /// applied by the broker; the core treats them so.
    pub fn handle_disconnected(&mut self, conn: ConnId, now: Timestamp) {
        self.drop_conn(conn, now, false);
    }

    /// Bytes read from the connection's socket.
    pub fn handle_bytes(&mut self, conn: ConnId, bytes: &[u8], now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        c.frames.extend(bytes);
        loop {
            let Some(c) = self.conn_mut(conn) else { return };
            match c.frames.decode() {
                Ok(Some(frame)) => self.handle_frame(conn, frame, now),
                Ok(None) => return,
                Err(_) => {
                    // A malformed frame: nothing more on this connection can be trusted.
                    self.drop_conn(conn, now, true);
                    return;
                }
            }
        }
    }

    fn handle_frame(&mut self, conn: ConnId, frame: Bytes, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        let decoded = match c.wire.decode(frame) {
            Ok(d) => {
                c.deadlines.pop_front();
                d
            }
            Err(_) => {
                self.drop_conn(conn, now, true);
                return;
            }
        };
        if let Response::ApiVersions(answer) = &decoded.response {
            self.handle_api_versions(conn, answer, now);
            return;
        }
        let tag = decoded.tag;
        match decoded.response {
            Response::Produce(r) => {
                let _ = self.core.handle_produce_response(
                    RequestId(tag),
                    &convert::produce_response(&r),
                    now,
                );
                for ep in &r.node_endpoints {
                    self.learn_broker(ep.node_id, &ep.host, ep.port, now);
                }
            }
            Response::InitProducerId(r) => {
                let result = if r.error_code == 0 {
                    Ok(ProducerIdAndEpoch::new(r.producer_id, r.producer_epoch))
                } else {
                    Err(KafkaError::from_code(r.error_code))
                };
                let _ = self.core.handle_producer_id(RequestId(tag), result, now);
            }
            Response::Metadata(r) => {
                for b in &r.brokers {
                    self.learn_broker(b.node_id, &b.host, b.port, now);
                }
                for t in &r.topics {
                    if let (Some(name), 0) = (&t.name, t.error_code) {
                        self.partition_counts
                            .insert(name.clone(), t.partitions.len() as i32);
                    }
                }
                let md = convert::metadata(&r);
                let id = (tag < SESSION_TAG).then_some(RequestId(tag));
                let _ = self.core.handle_metadata(id, &md, now);
            }
            Response::FindCoordinator(r) => {
                let result = if r.error_code == 0 {
                    self.learn_broker(r.node_id, &r.host, r.port, now);
                    Ok(kacrab_idempotence::NodeId(r.node_id))
                } else {
                    Err(KafkaError::from_code(r.error_code))
                };
                let _ = self
                    .core
                    .handle_find_coordinator(RequestId(tag), result, now);
            }
            Response::AddPartitionsToTxn(r) => {
                let results = convert::topic_results(&r.topics);
                let _ = self
                    .core
                    .handle_add_partitions(RequestId(tag), &results, now);
            }
            Response::AddOffsetsToTxn(r) => {
                let error = KafkaError::from_code(r.error_code);
                let _ = self.core.handle_add_offsets(RequestId(tag), error, now);
            }
            Response::TxnOffsetCommit(r) => {
                let results = convert::topic_results(&r.topics);
                let _ = self
                    .core
                    .handle_txn_offset_commit(RequestId(tag), &results, now);
            }
            Response::EndTxn(r) => {
                let result = if r.error_code == 0 {
                    Ok((r.producer_id >= 0)
                        .then(|| ProducerIdAndEpoch::new(r.producer_id, r.producer_epoch)))
                } else {
                    Err(KafkaError::from_code(r.error_code))
                };
                let _ = self.core.handle_end_txn(RequestId(tag), result, now);
            }
            Response::ApiVersions(_) => {}
        }
    }

    fn handle_api_versions(
        &mut self,
        conn: ConnId,
        answer: &kacrab_wire::messages::ApiVersionsResponse,
        now: Timestamp,
    ) {
        let Some(c) = self.conn_mut(conn) else { return };
        let ConnState::Negotiating(sent) = c.state else {
            return;
        };
        if answer.error_code == kacrab_wire::messages::UNSUPPORTED_VERSION {
            match answer.retry_version(sent) {
                Some(v) => {
                    c.state = ConnState::Negotiating(v);
                    self.send_api_versions(conn, v, now);
                }
                None => self.drop_conn(conn, now, true),
            }
            return;
        }
        match Versions::from_response(answer) {
            Ok(versions) if answer.error_code == 0 => {
                // The finalized transaction.version (KIP-890) decides TV1 or TV2; the
                // newest view across every connection counts, not the latest answer.
                if let Some(level) = self.features.observe(&versions) {
                    self.core.handle_transaction_version(level);
                }
                let Some(c) = self.conn_mut(conn) else { return };
                c.versions = Some(versions);
                c.state = ConnState::Ready;
                let queued: Vec<Pending> = c.queued.drain(..).collect();
                for p in queued {
                    match p {
                        Pending::Core(r) => self.write_core_request(conn, r, now),
                        Pending::Session(r, tag) => self.send_session_request(conn, r, tag, now),
                    }
                }
            }
            _ => self.drop_conn(conn, now, true),
        }
    }

    fn learn_broker(&mut self, node: i32, host: &str, port: i32, now: Timestamp) {
        let addr = format!("{host}:{port}");
        if self.brokers.get(&node) == Some(&addr) {
            return;
        }
        self.brokers.insert(node, addr);
        // A broker that moved: its old connection goes.
        let stale: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|c| c.node == Some(node) && self.brokers.get(&node) != Some(&c.addr))
            .map(|c| c.id)
            .collect();
        for id in stale {
            self.drop_conn(id, now, true);
        }
    }

    fn route(&mut self, request: Request, now: Timestamp) {
        match &request {
            Request::Produce(r) => {
                let node = r.node.0;
                match self.node_conn(node) {
                    Some(conn) => self.enqueue(conn, request, now),
                    // No address for the leader: the request never leaves. The core
                    // forgets the leader and asks for metadata.
                    None => {
                        self.out.push_back(Output::Release { ticket: r.ticket });
                        let _ = self
                            .core
                            .handle_request_failed(r.id, RequestFailure::NotSent, now);
                    }
                }
            }
            Request::InitProducerId(r) if r.node.is_some() => {
                let (node, id) = (r.node.map_or(0, |n| n.0), r.id);
                self.send_to_node(node, id, request.clone(), now);
            }
            Request::InitProducerId(_) | Request::Metadata(_) => {
                let conn = self.any_conn();
                self.enqueue(conn, request, now);
            }
            Request::FindCoordinator(_) => {
                let conn = self.any_conn();
                self.enqueue(conn, request, now);
            }
            // Requests for a coordinator go to it; with no address for it the request
            // never leaves, and the core looks the coordinator up again.
            Request::AddPartitionsToTxn(r) => {
                self.send_to_node(r.node.0, r.id, request.clone(), now)
            }
            Request::AddOffsetsToTxn(r) => self.send_to_node(r.node.0, r.id, request.clone(), now),
            Request::TxnOffsetCommit(r) => self.send_to_node(r.node.0, r.id, request.clone(), now),
            Request::EndTxn(r) => self.send_to_node(r.node.0, r.id, request.clone(), now),
            Request::CloseConnection { node } => {
                let ids: Vec<ConnId> = self
                    .conns
                    .iter()
                    .filter(|c| c.node == Some(node.0))
                    .map(|c| c.id)
                    .collect();
                for id in ids {
                    self.drop_conn(id, now, true);
                }
            }
        }
    }

    fn send_to_node(&mut self, node: i32, id: RequestId, request: Request, now: Timestamp) {
        match self.node_conn(node) {
            Some(conn) => self.enqueue(conn, request, now),
            None => {
                let _ = self
                    .core
                    .handle_request_failed(id, RequestFailure::NotSent, now);
            }
        }
    }

    fn enqueue(&mut self, conn: ConnId, request: Request, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        if c.state == ConnState::Ready {
            self.write_core_request(conn, request, now);
        } else {
            c.queued.push_back(Pending::Core(request));
        }
    }

    fn write_core_request(&mut self, conn: ConnId, request: Request, now: Timestamp) {
        let ticket = match &request {
            Request::Produce(r) => Some(r.ticket),
            _ => None,
        };
        let (id, wire_request) = match &request {
            Request::Produce(r) => (
                r.id,
                kacrab_wire::Request::Produce(convert::produce_request(r)),
            ),
            Request::InitProducerId(r) => (
                r.id,
                kacrab_wire::Request::InitProducerId(convert::init_producer_id_request(r)),
            ),
            Request::Metadata(r) => (
                r.id,
                kacrab_wire::Request::Metadata(convert::metadata_request(&r.topics)),
            ),
            Request::FindCoordinator(r) => (r.id, convert::find_coordinator(r)),
            Request::AddPartitionsToTxn(r) => (r.id, convert::add_partitions(r)),
            Request::AddOffsetsToTxn(r) => (r.id, convert::add_offsets(r)),
            Request::TxnOffsetCommit(r) => (r.id, convert::txn_offset_commit(r)),
            Request::EndTxn(r) => (r.id, convert::end_txn(r)),
            Request::CloseConnection { .. } => return,
        };
        // Transaction version 2 uses Produce v12, EndTxn v5 and TxnOffsetCommit v5.
        let transaction_v2 = match &request {
            Request::Produce(r) => r.transaction_v2,
            Request::TxnOffsetCommit(r) => r.transaction_v2,
            Request::EndTxn(r) => r.transaction_v2,
            _ => false,
        };
        let deadline = now + self.core.config().request_timeout();
        let Some(c) = self.conn_mut(conn) else { return };
        let mut versions = c.versions.clone().expect("ready connection has versions");
        versions.set_transaction_v2(transaction_v2);
        let before = c.wire.in_flight_count();
        let encoded = versions
            .version_for(&wire_request)
            .and_then(|v| c.wire.encode(wire_request, v, id.0));
        c.written(before, deadline);
        match encoded {
            // With acks=0 nothing comes back; the core already reported those batches.
            Ok(e) => self.out.push_back(Output::Transmit {
                conn,
                frame: e.frame,
                ticket,
            }),
            Err(_) => {
                if let Some(ticket) = ticket {
                    self.out.push_back(Output::Release { ticket });
                }
                // No version both sides speak: answer the request as the broker would.
                match request {
                    Request::Produce(r) => {
                        let response = kacrab_idempotence::ProduceResponse {
                            partitions: r
                                .batches
                                .iter()
                                .map(|b| {
                                    kacrab_idempotence::PartitionResponse::error(
                                        b.partition.clone(),
                                        KafkaError::UnsupportedVersion,
                                    )
                                })
                                .collect(),
                            throttle: std::time::Duration::ZERO,
                        };
                        let _ = self.core.handle_produce_response(r.id, &response, now);
                    }
                    Request::InitProducerId(r) => {
                        let _ = self.core.handle_producer_id(
                            r.id,
                            Err(KafkaError::UnsupportedVersion),
                            now,
                        );
                    }
                    _ => {
                        let _ = self
                            .core
                            .handle_request_failed(id, RequestFailure::NotSent, now);
                    }
                }
            }
        }
    }

    fn send_api_versions(&mut self, conn: ConnId, version: i16, now: Timestamp) {
        let tag = self.next_session_tag;
        self.next_session_tag += 1;
        let deadline = now + self.core.config().request_timeout();
        let Some(c) = self.conn_mut(conn) else { return };
        let hello = ApiVersionsRequest {
            client_software_name: "kacrab".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
        };
        let before = c.wire.in_flight_count();
        let encoded = c.wire.encode(hello, version, tag);
        c.written(before, deadline);
        match encoded {
            Ok(e) => self.out.push_back(Output::Transmit {
                conn,
                frame: e.frame,
                ticket: None,
            }),
            Err(_) => self.drop_conn(conn, now, true),
        }
    }

    fn send_session_request(
        &mut self,
        conn: ConnId,
        request: kacrab_wire::Request,
        tag: u64,
        now: Timestamp,
    ) {
        let deadline = now + self.core.config().request_timeout();
        let Some(c) = self.conn_mut(conn) else { return };
        let Some(versions) = c.versions.as_ref() else {
            c.queued.push_back(Pending::Session(request, tag));
            return;
        };
        let before = c.wire.in_flight_count();
        let encoded = versions
            .version_for(&request)
            .and_then(|v| c.wire.encode(request, v, tag));
        c.written(before, deadline);
        if let Ok(e) = encoded {
            self.out.push_back(Output::Transmit {
                conn,
                frame: e.frame,
                ticket: None,
            });
        }
    }

    /// The connection to `node`, opened if needed; `None` if its address is unknown.
    fn node_conn(&mut self, node: i32) -> Option<ConnId> {
        if let Some(c) = self.conns.iter().find(|c| c.node == Some(node)) {
            return Some(c.id);
        }
        let addr = self.brokers.get(&node)?.clone();
        Some(self.open(Some(node), addr))
    }

    /// Any connection for cluster-wide requests: a ready one with the fewest requests
    /// in flight, else one being opened, else a new one to a known broker or bootstrap.
    fn any_conn(&mut self) -> ConnId {
        if let Some(c) = self
            .conns
            .iter()
            .filter(|c| c.state == ConnState::Ready)
            .min_by_key(|c| c.wire.in_flight_count() + c.queued.len())
        {
            return c.id;
        }
        if let Some(c) = self.conns.first() {
            return c.id;
        }
        // Round robin over every broker Metadata named, then the bootstrap servers: a
        // dead broker (or bootstrap address) must not be the only one ever tried.
        let candidates = self.brokers.len() + self.bootstrap.len();
        assert!(
            candidates > 0,
            "a session needs at least one bootstrap server"
        );
        let pick = self.next_bootstrap % candidates;
        self.next_bootstrap = self.next_bootstrap.wrapping_add(1);
        match self.brokers.iter().nth(pick) {
            Some((&node, addr)) => {
                let addr = addr.clone();
                self.open(Some(node), addr)
            }
            None => {
                let addr = self.bootstrap[pick - self.brokers.len()].clone();
                self.open(None, addr)
            }
        }
    }

    fn open(&mut self, node: Option<i32>, addr: String) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        self.conns.push(Conn {
            id,
            node,
            addr: addr.clone(),
            state: ConnState::Connecting,
            wire: Connection::new(self.client_id.clone()),
            frames: FrameDecoder::new(),
            versions: None,
            queued: VecDeque::new(),
            deadlines: VecDeque::new(),
        });
        self.out.push_back(Output::Connect { conn: id, addr });
        id
    }

    fn conn_mut(&mut self, conn: ConnId) -> Option<&mut Conn> {
        self.conns.iter_mut().find(|c| c.id == conn)
    }

    /// Forgets a connection. Requests written on it are possibly written; queued ones
    /// never left. With `tell_driver`, the driver is asked to close the socket.
    fn drop_conn(&mut self, conn: ConnId, now: Timestamp, tell_driver: bool) {
        let Some(pos) = self.conns.iter().position(|c| c.id == conn) else {
            return;
        };
        let mut c = self.conns.remove(pos);
        if tell_driver {
            self.out.push_back(Output::Close { conn });
        }
        for f in c.wire.take_in_flight() {
            if f.tag < SESSION_TAG {
                let _ = self.core.handle_request_failed(
                    RequestId(f.tag),
                    RequestFailure::Disconnected,
                    now,
                );
            }
        }
        for p in c.queued.drain(..) {
            let Pending::Core(r) = p else { continue };
            let id = match &r {
                Request::Produce(p) => {
                    self.out.push_back(Output::Release { ticket: p.ticket });
                    p.id
                }
                Request::InitProducerId(i) => i.id,
                Request::Metadata(m) => m.id,
                Request::FindCoordinator(r) => r.id,
                Request::AddPartitionsToTxn(r) => r.id,
                Request::AddOffsetsToTxn(r) => r.id,
                Request::TxnOffsetCommit(r) => r.id,
                Request::EndTxn(r) => r.id,
                Request::CloseConnection { .. } => continue,
            };
            let _ = self
                .core
                .handle_request_failed(id, RequestFailure::NotSent, now);
        }
    }
}
