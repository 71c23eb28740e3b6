//! The session's network half: one [`kacrab_wire::Connection`] per broker socket,
//! version negotiation, routing of the core's requests, the broker addresses Metadata
//! reports, and the timers of connections (setup) and of the session's own requests.
//!
//! Request timeouts have one owner each: the core's requests are timed by the core
//! (`request.timeout.ms` from the write this module reports with
//! `handle_request_written`, folded into its `poll_timeout`); when it gives up on one,
//! the connection carrying it is closed here (as Java's `NetworkClient` does), so a late
//! answer can never arrive. A core request queued behind its connection's setup is not
//! written: no timeout runs for it, and a failed setup reports it `NotSent`, which costs
//! its batches no attempt. The session's own requests (ApiVersions, the metadata of a
//! partition lookup) are timed here.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use kacrab_idempotence::{
    InputError, KafkaError, Producer, ProducerIdAndEpoch, Request, RequestFailure, RequestId,
    Timestamp,
};
use kacrab_wire::{Connection, FrameDecoder, Response, Versions};

use crate::convert;
use crate::features::FinalizedFeatures;
use crate::output::{CloseReason, ConnId, Output};
use crate::phases::{ConnectError, Security, TlsFailure, Transport};

mod failures;
mod idle;
mod invariants;
mod lookup;
mod negotiation;
mod reconnect;
mod sasl_phase;
mod secure;
mod telemetry;
mod write_reports;

use crate::topics::Topics;
use secure::{Gone, Health};

pub(crate) use failures::Streak;
pub(crate) use telemetry::TelemetryEvent;

/// Tags at or above this value name session-owned requests (ApiVersions, lookup
/// metadata); below it, a tag is the core's `RequestId`.
const SESSION_TAG: u64 = 1 << 63;

#[derive(Debug, PartialEq, Eq)]
enum ConnState {
    /// The broker's address is in its reconnect backoff (`reconnect`): requests queue;
    /// at `until` the driver is asked to connect. The driver knows nothing of it yet.
    BackingOff {
        until: Timestamp,
    },
    /// Waiting for the driver's `handle_connected`, until the setup deadline.
    Connecting {
        deadline: Timestamp,
    },
    /// TCP is up; the TLS handshake runs, until the same setup deadline.
    TlsHandshake {
        deadline: Timestamp,
    },
    /// ApiVersions sent at this version.
    Negotiating(i16),
    /// The SASL exchange runs (`sasl_phase`); requests queue.
    Authenticating(sasl_phase::AuthRound),
    /// KIP-368 re-authentication is due: requests queue while the answers in flight
    /// arrive, then the exchange runs again.
    Draining,
    Ready,
}

#[derive(Debug)]
struct Conn {
    id: ConnId,
    /// The broker's node id, or `None` for a bootstrap address.
    node: Option<i32>,
    addr: String,
    state: ConnState,
    /// Plain, or TLS once connected (the handshake runs in `TlsHandshake`).
    transport: Transport,
    wire: Connection,
    frames: FrameDecoder,
    /// Invariant: `Some` exactly once negotiation finished (`Authenticating`,
    /// `Draining`, `Ready`).
    versions: Option<Versions>,
    /// The SASL exchange. Invariant: `Some` exactly when `state` is `Authenticating`.
    sasl: Option<Box<crate::sasl::SaslExchange>>,
    /// When the KIP-368 re-authentication is due (the broker granted a session
    /// lifetime). Invariant: `None` unless `state` is `Ready`.
    reauth_at: Option<Timestamp>,
    /// Requests waiting for the connection to be ready, in order. Invariant: empty when
    /// `state` is `Ready` (they are written the moment it becomes ready).
    queued: VecDeque<Pending>,
    /// The session-owned requests written on this connection and awaiting an answer,
    /// with when they time out, in write order. Invariant: exactly the in-flight
    /// requests whose tag is at or above `SESSION_TAG`.
    deadlines: VecDeque<(u64, Timestamp)>,
    /// When bytes last moved on it (or it was opened): `connections.max.idle.ms`
    /// counts from here.
    last_active: Timestamp,
    /// Which resolved address of its host the driver dials (`ConnectOptions`); set
    /// when it is dialled.
    address_index: usize,
    /// The frames handed to the driver and reported written, and the `acks=0` Produce
    /// requests waiting for their write (`write_reports`).
    writes: write_reports::WriteReports,
}

/// A request waiting for its connection's version negotiation.
#[derive(Debug)]
enum Pending {
    /// The core's.
    Core(Request),
    /// The session's own (lookup metadata), with its tag.
    Session(kacrab_wire::Request, u64),
}

/// Connections, routing, negotiation and broker addresses.
#[derive(Debug)]
pub(crate) struct Network {
    client_id: Option<String>,
    bootstrap: Vec<String>,
    next_bootstrap: usize,
    brokers: BTreeMap<i32, String>,
    topics: Topics,
    /// Leaders a Produce request was written to since the session last took them (for
    /// the partitioner's `partitioner.availability.timeout.ms`).
    drained: Vec<i32>,
    conns: Vec<Conn>,
    next_conn: u64,
    next_session_tag: u64,
    out: VecDeque<Output>,
    /// The newest finalized features seen on any connection.
    features: FinalizedFeatures,
    /// For the session's telemetry schedule (`telemetry`), until it takes them.
    telemetry_events: Vec<TelemetryEvent>,
    request_timeout: Duration,
    security: Security,
    /// The first security failure, until the session takes it (see `phases`).
    failure: Option<ConnectError>,
    /// A security phase failed: final; no connection is opened again and every request
    /// is reported never sent. Never goes back to `Healthy`.
    health: Health,
    /// Responses decoded, for the metrics (drained by the session).
    pub(crate) tally: crate::metrics::NetTally,
    /// Per-address reconnect backoff.
    reconnects: reconnect::Reconnects,
    /// The last connection error of each address still failing.
    last_errors: failures::LastErrors,
    /// The session's metadata lookups: one at a time, backed off.
    lookups: lookup::Lookups,
    /// `connections.max.idle.ms` (`None`: never closed for idleness).
    max_idle: Option<Duration>,
}

impl Network {
    pub(crate) fn new(
        bootstrap: Vec<String>,
        client_id: Option<String>,
        request_timeout: Duration,
        security: Security,
        config: &crate::config::SessionConfig,
        now: Timestamp,
    ) -> Self {
        debug_assert!(!bootstrap.is_empty(), "validated by SessionConfig");
        let core = config.core();
        let lookup_backoff = kacrab_idempotence::backoff::Backoff::new(
            core.retry_backoff(),
            core.retry_backoff_max(),
            core.jitter_seed() ^ 0x6c6f_6f6b_7570_7321,
        );
        Self {
            client_id,
            bootstrap,
            next_bootstrap: 0,
            brokers: BTreeMap::new(),
            topics: Topics::default(),
            drained: Vec::new(),
            conns: Vec::new(),
            next_conn: 0,
            next_session_tag: SESSION_TAG,
            out: VecDeque::new(),
            features: FinalizedFeatures::new(),
            telemetry_events: Vec::new(),
            request_timeout,
            security,
            failure: None,
            health: Health::Healthy,
            tally: crate::metrics::NetTally::default(),
            reconnects: reconnect::Reconnects::new(config),
            last_errors: failures::LastErrors::default(),
            lookups: lookup::Lookups::new(lookup_backoff, now),
            max_idle: config.connections_max_idle(),
        }
    }

    pub(crate) fn partition_count(&self, topic: &str) -> Option<i32> {
        self.topics.partition_count(topic)
    }

    pub(crate) fn topics(&self) -> &Topics {
        &self.topics
    }

    pub(crate) fn topics_mut(&mut self) -> &mut Topics {
        &mut self.topics
    }

    /// How the driver opens `conn`: its socket buffers and which resolved address it
    /// dials. `None` for a connection the session does not know (or never dialled).
    pub(crate) fn connect_options(
        &self,
        conn: ConnId,
        buffers: (Option<usize>, Option<usize>),
    ) -> Option<crate::output::ConnectOptions> {
        let c = self.conns.iter().find(|c| c.id == conn)?;
        (!matches!(c.state, ConnState::BackingOff { .. })).then_some(
            crate::output::ConnectOptions {
                send_buffer: buffers.0,
                receive_buffer: buffers.1,
                address_index: c.address_index,
            },
        )
    }

    pub(crate) fn take_drained(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.drained)
    }

    pub(crate) fn pop_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    pub(crate) fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// Connections the driver was asked to open and not yet to close (one waiting for
    /// its broker's reconnect backoff is not counted).
    pub(crate) fn connection_count(&self) -> usize {
        self.conns
            .iter()
            .filter(|c| !matches!(c.state, ConnState::BackingOff { .. }))
            .count()
    }

    /// The broker of a live connection (`Some(None)` for a bootstrap address), `None`
    /// for a connection the session no longer has.
    pub(crate) fn node_of(&self, conn: ConnId) -> Option<Option<i32>> {
        self.conns.iter().find(|c| c.id == conn).map(|c| c.node)
    }

    /// Requests written and not yet answered, over every connection.
    pub(crate) fn in_flight_count(&self) -> usize {
        self.conns.iter().map(|c| c.wire.in_flight_count()).sum()
    }

    /// The earliest connection setup deadline, reconnect backoff end, session-request
    /// deadline or next metadata lookup.
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        self.conns
            .iter()
            .filter_map(|c| {
                let setup = match c.state {
                    ConnState::Connecting { deadline }
                    | ConnState::TlsHandshake { deadline }
                    | ConnState::BackingOff { until: deadline } => Some(deadline),
                    _ => None,
                };
                let request = c.deadlines.front().map(|&(_, d)| d);
                [setup, request, c.writes.deadline()]
                    .into_iter()
                    .flatten()
                    .min()
            })
            .chain(self.reauth_timeout())
            .chain(self.lookups.poll_timeout().filter(|_| !self.has_failed()))
            .chain(self.idle_deadline())
            .min()
    }

    /// Closes connections whose setup or session request timed out, and every
    /// connection carrying a core request the core no longer has outstanding (it timed
    /// it out).
    pub(crate) fn handle_timeout(&mut self, core: &mut Producer, now: Timestamp) {
        // A request the core gave up on while it waited for its connection's negotiation
        // is never written: the core would refuse its answer.
        for c in &mut self.conns {
            c.queued.retain(|p| {
                let Pending::Core(r) = p else { return true };
                let keep = r.id().is_none_or(|id| core.is_outstanding(id));
                if let (false, Request::Produce(p)) = (keep, r) {
                    self.out.push_back(Output::Release { ticket: p.ticket });
                }
                keep
            });
        }
        let mut expired = Vec::new();
        for c in &self.conns {
            let reason = if matches!(c.state, ConnState::Connecting { deadline } | ConnState::TlsHandshake { deadline } if deadline <= now)
            {
                Some(CloseReason::ConnectTimeout)
            } else if c.deadlines.front().is_some_and(|&(_, d)| d <= now)
                || c.writes.deadline().is_some_and(|d| d <= now)
                || c.wire
                    .in_flight()
                    .any(|f| f.tag < SESSION_TAG && !core.is_outstanding(RequestId(f.tag)))
            {
                Some(CloseReason::RequestTimeout)
            } else {
                None
            };
            if let Some(reason) = reason {
                expired.push((c.id, reason));
            }
        }
        for (conn, reason) in expired {
            self.drop_conn(core, conn, now, Some(reason));
        }
        self.handle_reauth_timeout(core, now);
        self.close_idle(core, now);
        self.dial_backed_off(core, now);
        self.send_lookup(core, now);
    }

    /// Closes every connection: the producer is finished.
    pub(crate) fn close_all(&mut self, core: &mut Producer, now: Timestamp) {
        let ids: Vec<ConnId> = self.conns.iter().map(|c| c.id).collect();
        for id in ids {
            self.drop_conn(core, id, now, Some(CloseReason::Finished));
        }
    }

    pub(crate) fn handle_connected(&mut self, core: &mut Producer, conn: ConnId, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        let ConnState::Connecting { deadline } = c.state else {
            return;
        };
        if self.security.uses_tls() {
            self.start_tls(core, conn, deadline, now);
            return;
        }
        self.negotiate(core, conn, now);
    }

    /// The connection could not be opened, or failed after it was (for `cause`, when
    /// the driver gave one): requests written on it may have been applied, queued ones
    /// never left.
    pub(crate) fn handle_disconnected(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        cause: Option<&crate::ConnectionError>,
        now: Timestamp,
    ) {
        if let Some(cause) = cause {
            self.record_failure(conn, cause);
        }
        if self.in_handshake(conn) {
            // The driver already reported it gone: no `Close` is asked.
            self.fail(
                core,
                conn,
                TlsFailure::ClosedDuringHandshake,
                Gone::Reported,
                now,
            );
            return;
        }
        self.drop_conn(core, conn, now, None);
    }

    pub(crate) fn handle_bytes(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        bytes: &[u8],
        now: Timestamp,
    ) {
        let Some(opened) = self.open_bytes(core, conn, bytes, now) else {
            return;
        };
        let Some(c) = self.conn_mut(conn) else { return };
        c.last_active = now;
        c.frames.extend(&opened.plaintext);
        if opened.closed {
            // The broker ended the TLS session (close_notify): answers already decrypted
            // are handled, then the connection goes as a disconnect.
            self.decode_frames(core, conn, now);
            self.drop_conn(core, conn, now, Some(CloseReason::ClosedByBroker));
            return;
        }
        self.decode_frames(core, conn, now);
        self.resume_reauth(core, conn, now);
    }

    fn decode_frames(&mut self, core: &mut Producer, conn: ConnId, now: Timestamp) {
        loop {
            let Some(c) = self.conn_mut(conn) else { return };
            match c.frames.decode() {
                Ok(Some(frame)) => self.handle_frame(core, conn, frame, now),
                Ok(None) => return,
                Err(e) => {
                    // A malformed frame: nothing more on this connection can be trusted.
                    let reason = CloseReason::Malformed(e.to_string());
                    self.drop_conn(core, conn, now, Some(reason));
                    return;
                }
            }
        }
    }

    fn handle_frame(&mut self, core: &mut Producer, conn: ConnId, frame: Bytes, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        // A body that does not decode still consumes its request in `Connection::decode`:
        // remember whose it was, so that request fails with the connection.
        let matched = frame
            .get(..4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .and_then(|id| c.wire.in_flight().find(|f| f.correlation_id == id))
            .map(|f| f.tag);
        let decoded = match c.wire.decode(frame) {
            Ok(d) => d,
            Err(e) => {
                if let kacrab_wire::WireError::UnknownCorrelationId(id) = e {
                    if self.answered_unasked(core, conn, id, now) {
                        return;
                    }
                }
                if let Some(tag) = matched.filter(|&t| t < SESSION_TAG) {
                    if core.is_outstanding(RequestId(tag)) {
                        let result = core.handle_request_failed(
                            RequestId(tag),
                            RequestFailure::Disconnected,
                            now,
                        );
                        debug_assert!(result.is_ok(), "outstanding request refused: {result:?}");
                    }
                }
                let reason = CloseReason::Malformed(e.to_string());
                self.drop_conn(core, conn, now, Some(reason));
                return;
            }
        };
        let tag = decoded.tag;
        if tag >= SESSION_TAG {
            debug_assert_eq!(c.deadlines.front().map(|d| d.0), Some(tag));
            c.deadlines.pop_front();
        }
        let node = c.node;
        let throttle = crate::metrics::throttle_of(&decoded.response);
        self.tally.response(node, tag, throttle, now);
        if let Response::ApiVersions(answer) = &decoded.response {
            self.handle_api_versions(core, conn, answer, now);
            return;
        }
        if let Response::Sasl(answer) = decoded.response {
            self.handle_sasl(core, conn, answer, now);
            return;
        }
        let id = RequestId(tag);
        let result: Result<(), InputError> = match decoded.response {
            Response::Produce(r) => {
                let brokers = &self.brokers;
                let answer = convert::produce_response(&r, |node| brokers.contains_key(&node));
                let result = core.handle_produce_response(id, &answer, now);
                for ep in &r.node_endpoints {
                    self.learn_broker(core, ep.node_id, &ep.host, ep.port, now);
                }
                result
            }
            Response::InitProducerId(r) => {
                let result = if r.error_code == 0 {
                    Ok(ProducerIdAndEpoch::new(r.producer_id, r.producer_epoch))
                } else {
                    Err(KafkaError::from_code(r.error_code))
                };
                core.handle_producer_id(id, result, now)
            }
            Response::Metadata(r) => {
                let md = convert::metadata(&r);
                for b in &md.brokers {
                    self.learn_broker(core, b.node.0, &b.host, b.port, now);
                }
                self.topics.learn(&r);
                let request = (tag < SESSION_TAG).then_some(id);
                let result = core.handle_metadata(request, &md, now);
                if tag >= SESSION_TAG {
                    self.lookup_answered(core, tag, now);
                }
                result
            }
            Response::FindCoordinator(r) => {
                let result = if r.error_code == 0 {
                    self.learn_broker(core, r.node_id, &r.host, r.port, now);
                    Ok(kacrab_idempotence::NodeId(r.node_id))
                } else {
                    Err(KafkaError::from_code(r.error_code))
                };
                core.handle_find_coordinator(id, result, now)
            }
            Response::AddPartitionsToTxn(r) => {
                core.handle_add_partitions(id, &convert::topic_results(&r.topics), now)
            }
            Response::AddOffsetsToTxn(r) => {
                core.handle_add_offsets(id, KafkaError::from_code(r.error_code), now)
            }
            Response::TxnOffsetCommit(r) => {
                core.handle_txn_offset_commit(id, &convert::topic_results(&r.topics), now)
            }
            Response::EndTxn(r) => {
                let result = if r.error_code == 0 {
                    Ok((r.producer_id >= 0)
                        .then(|| ProducerIdAndEpoch::new(r.producer_id, r.producer_epoch)))
                } else {
                    Err(KafkaError::from_code(r.error_code))
                };
                core.handle_end_txn(id, result, now)
            }
            Response::GetTelemetrySubscriptions(r) => {
                self.telemetry_events
                    .push(TelemetryEvent::Subscribed(tag, r));
                Ok(())
            }
            Response::PushTelemetry(r) => {
                self.telemetry_events.push(TelemetryEvent::Pushed(tag, r));
                Ok(())
            }
            // Handled above (negotiation, the SASL phase).
            Response::ApiVersions(_) | Response::Sasl(_) => Ok(()),
        };
        // The core refused the answer: the broker broke the protocol (an answer to a
        // request it was not asked, or one that does not match). Nothing more on this
        // connection can be trusted.
        if let Err(e) = result {
            // A refused answer leaves its request outstanding in the core, but the wire
            // has already forgotten it: fail it with the connection, as the others.
            if tag < SESSION_TAG && core.is_outstanding(id) {
                let failed = core.handle_request_failed(id, RequestFailure::Disconnected, now);
                debug_assert!(failed.is_ok(), "outstanding request refused: {failed:?}");
            }
            self.drop_conn(core, conn, now, Some(CloseReason::Protocol(e)));
        }
    }

    fn learn_broker(
        &mut self,
        core: &mut Producer,
        node: i32,
        host: &str,
        port: i32,
        now: Timestamp,
    ) {
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
            self.drop_conn(core, id, now, Some(CloseReason::BrokerMoved));
        }
    }

    /// Routes one request from the core's `poll_request`.
    pub(crate) fn route(&mut self, core: &mut Producer, request: Request, now: Timestamp) {
        if self.has_failed() && !matches!(request, Request::CloseConnection { .. }) {
            self.never_sent(core, request, now);
            return;
        }
        let node = match &request {
            Request::Produce(r) => Some(r.node.0),
            Request::InitProducerId(r) => r.node.map(|n| n.0),
            Request::Metadata(_) | Request::FindCoordinator(_) => None,
            // Requests for a coordinator go to it.
            Request::AddPartitionsToTxn(r) => Some(r.node.0),
            Request::AddOffsetsToTxn(r) => Some(r.node.0),
            Request::TxnOffsetCommit(r) => Some(r.node.0),
            Request::EndTxn(r) => Some(r.node.0),
            Request::CloseConnection { node } => {
                let ids: Vec<ConnId> = self
                    .conns
                    .iter()
                    .filter(|c| c.node == Some(node.0))
                    .map(|c| c.id)
                    .collect();
                for id in ids {
                    self.drop_conn(core, id, now, Some(CloseReason::Requested));
                }
                return;
            }
        };
        let conn = match node {
            Some(node) => self.node_conn(node, now),
            None => Some(self.any_conn(now)),
        };
        match conn {
            Some(conn) => self.enqueue(core, conn, request, now),
            // No address for the node: the request never leaves. The core forgets the
            // leader (or coordinator) and looks it up again.
            None => self.never_sent(core, request, now),
        }
    }

    /// Reports a core request that will never be written.
    fn never_sent(&mut self, core: &mut Producer, request: Request, now: Timestamp) {
        if let Request::Produce(p) = &request {
            self.out.push_back(Output::Release { ticket: p.ticket });
        }
        // A request the core already gave up on (timed out) is not reported again.
        let Some(id) = request.id().filter(|&id| core.is_outstanding(id)) else {
            return;
        };
        let result = core.handle_request_failed(id, RequestFailure::NotSent, now);
        debug_assert!(
            result.is_ok(),
            "a request just routed is outstanding: {result:?}"
        );
    }

    fn enqueue(&mut self, core: &mut Producer, conn: ConnId, request: Request, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        if c.state == ConnState::Ready {
            self.write_core_request(core, conn, request, now);
        } else {
            c.queued.push_back(Pending::Core(request));
        }
    }

    fn write_core_request(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        request: Request,
        now: Timestamp,
    ) {
        let ticket = match &request {
            Request::Produce(r) => {
                self.drained.push(r.node.0);
                Some(r.ticket)
            }
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
        let Some(c) = self.conn_mut(conn) else { return };
        let Some(mut versions) = c.versions.clone() else {
            debug_assert!(false, "written only on a ready connection");
            return;
        };
        versions.set_transaction_v2(transaction_v2);
        let encoded = versions
            .version_for(&wire_request)
            .and_then(|v| c.wire.encode(wire_request, v, id.0));
        match encoded {
            Ok(e) => {
                self.tally.written(ticket.map(|_| id.0), now);
                let frame = self.transmit(core, conn, e.frame, ticket, now);
                let answer = if e.expects_response {
                    write_reports::Answer::Expected
                } else {
                    write_reports::Answer::None {
                        correlation_id: e.correlation_id,
                    }
                };
                self.handed_over(core, conn, id, frame, answer, now);
                // Encoded: the core's request lists serve the next request.
                core.recycle(request);
            }
            Err(_) => {
                if let Some(ticket) = ticket {
                    self.out.push_back(Output::Release { ticket });
                }
                // No version both sides speak: answer the request as the broker would.
                let result = match request {
                    Request::Produce(r) => {
                        let response = kacrab_idempotence::ProduceResponse::new(
                            r.batches
                                .iter()
                                .map(|b| {
                                    kacrab_idempotence::PartitionResponse::error(
                                        b.partition.clone(),
                                        KafkaError::UnsupportedVersion,
                                    )
                                })
                                .collect(),
                        )
                        .with_throttle(Duration::ZERO);
                        core.handle_produce_response(r.id, &response, now)
                    }
                    Request::InitProducerId(r) => {
                        core.handle_producer_id(r.id, Err(KafkaError::UnsupportedVersion), now)
                    }
                    _ => core.handle_request_failed(id, RequestFailure::NotSent, now),
                };
                debug_assert!(
                    result.is_ok(),
                    "a request just routed is outstanding: {result:?}"
                );
            }
        }
    }

    fn session_tag(&mut self) -> u64 {
        let tag = self.next_session_tag;
        self.next_session_tag += 1;
        tag
    }

    fn send_session_request(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        request: kacrab_wire::Request,
        tag: u64,
        now: Timestamp,
    ) {
        let deadline = now + self.request_timeout;
        let Some(c) = self.conn_mut(conn) else { return };
        let (ConnState::Ready, Some(versions)) = (&c.state, c.versions.as_ref()) else {
            c.queued.push_back(Pending::Session(request, tag));
            return;
        };
        let encoded = versions
            .version_for(&request)
            .and_then(|v| c.wire.encode(request, v, tag));
        // A lookup whose metadata cannot be encoded is asked again after the backoff
        // (on another connection, perhaps) until max.block.ms.
        match encoded {
            Ok(e) => {
                c.deadlines.push_back((tag, deadline));
                self.transmit(core, conn, e.frame, None, now);
            }
            Err(_) => {
                self.lookup_lost(tag, now);
                self.telemetry_events.push(TelemetryEvent::Lost(tag));
            }
        }
    }

    /// The connection to `node`, opened if needed; `None` if its address is unknown.
    fn node_conn(&mut self, node: i32, now: Timestamp) -> Option<ConnId> {
        if let Some(c) = self.conns.iter().find(|c| c.node == Some(node)) {
            return Some(c.id);
        }
        let addr = self.brokers.get(&node)?.clone();
        Some(self.open(Some(node), addr, now))
    }

    /// A new connection to `addr`: dialled now, or once its reconnect backoff ends.
    fn open(&mut self, node: Option<i32>, addr: String, now: Timestamp) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let blocked = self.reconnects.blocked_until(&addr, now);
        let (state, address_index) = match blocked {
            Some(until) => (ConnState::BackingOff { until }, 0),
            None => {
                let dial = self.reconnects.dial(&addr);
                let deadline = now + dial.setup_timeout;
                (ConnState::Connecting { deadline }, dial.address_index)
            }
        };
        self.conns.push(Conn {
            id,
            node,
            addr: addr.clone(),
            state,
            transport: Transport::Plain,
            wire: Connection::new(self.client_id.clone()),
            frames: FrameDecoder::new(),
            versions: None,
            sasl: None,
            reauth_at: None,
            queued: VecDeque::new(),
            deadlines: VecDeque::new(),
            last_active: now,
            address_index,
            writes: write_reports::WriteReports::default(),
        });
        if blocked.is_none() {
            self.out.push_back(Output::Connect { conn: id, addr });
        }
        id
    }

    fn conn_mut(&mut self, conn: ConnId) -> Option<&mut Conn> {
        self.conns.iter_mut().find(|c| c.id == conn)
    }

    /// Forgets a connection. Requests written on it are possibly written; queued ones
    /// never left. With a reason, the driver is asked to close the socket (without one,
    /// the driver reported the connection gone).
    fn drop_conn(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        now: Timestamp,
        reason: Option<CloseReason>,
    ) {
        if reason == Some(CloseReason::ConnectTimeout) {
            self.record_setup_timeout(conn);
        }
        let Some(pos) = self.conns.iter().position(|c| c.id == conn) else {
            return;
        };
        let mut c = self.conns.remove(pos);
        self.lookup_conn_gone(conn, now);
        self.telemetry_events.push(TelemetryEvent::ConnGone(conn));
        // One never dialled (backing off): the driver knows nothing of it, and its
        // broker did not fail again.
        if !matches!(c.state, ConnState::BackingOff { .. }) {
            let setup = if matches!(
                c.state,
                ConnState::Connecting { .. } | ConnState::TlsHandshake { .. }
            ) {
                reconnect::Phase::Setup
            } else {
                reconnect::Phase::Established
            };
            self.reconnects.disconnected(&c.addr, setup, now);
            if let Some(reason) = reason {
                self.out.push_back(Output::Close { conn, reason });
            }
        }
        // Requests written, in write order, then the acks=0 requests handed to the
        // driver and not reported written (some of their bytes may have left), in
        // hand-off order. A connection carries acks=0 Produce requests only beside
        // requests that are not Produce, so each partition's order is kept.
        let lost: Vec<RequestId> = c
            .wire
            .take_in_flight()
            .into_iter()
            .filter(|f| f.tag < SESSION_TAG)
            .map(|f| RequestId(f.tag))
            .chain(c.writes.take_unreported())
            .collect();
        for id in lost {
            // A request the core already gave up on (timed out) is not reported again.
            if core.is_outstanding(id) {
                let result = core.handle_request_failed(id, RequestFailure::Disconnected, now);
                debug_assert!(result.is_ok(), "outstanding request refused: {result:?}");
            }
        }
        for p in c.queued.drain(..) {
            if let Pending::Core(r) = p {
                self.never_sent(core, r, now);
            }
        }
    }
}
