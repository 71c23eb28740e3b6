//! The session driver: a [`kacrab_driver::Session`] (the core plus connections, routing,
//! version negotiation and request timeouts) driven over the world's lying network,
//! which carries real Kafka frames.
//!
//! A session connection (`Output::Connect` to `sim-broker-N:9092`) maps to the world's
//! connection to broker N, with a [`Frontend`] at the broker's end: the frames the
//! session transmits are read by the front end into the model's requests, which the
//! world carries (drops, delays, held requests, connection resets apply); what the world
//! delivers is encoded by the front end at its request's version and given to
//! `handle_bytes`. ApiVersions is answered by the front end after a round trip. Two
//! session connections to one broker share the world's connection to it: when it drops,
//! both are reset (`handle_disconnected`). The session's `poll_timeout` drives its timer.
//!
//! What the session learns without an answer (a connection opened, refused or reset) is
//! given one input per step, before time moves on, as the core driver gives its
//! failure reports.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use kacrab_driver::{
    CloseReason, Completion, ConnId, OpId, Output, ProduceError, ProducerRecord, SendId, Session,
    SessionConfig, TimestampType,
};
use kacrab_idempotence::{
    ConsumerGroupMetadata, DeliveryError, Event, NodeId, OffsetToCommit, Producer, ProducerConfig,
    RecordId, RequestId, SendError, Timestamp, TopicPartition, TxnError, TxnOp,
};

use crate::checker::ViolationKind;
use crate::frontend::{BrokerEndpoint, BrokerFeatures, Frontend, FrontendRequest};
use crate::net::ToBroker;
use crate::observers::Observers;
use crate::world::{ConnectDraw, Notice, World};

/// How many request ids each connection's front end owns (ids are `(conn + 1) << 32`
/// upwards), so that an answer names its connection.
const CONN_ID_SHIFT: u32 = 32;

/// What the session learns from the network without an answer.
#[derive(Clone, Debug)]
enum ClientInput {
    Connected(ConnId),
    ConnectFailed(ConnId),
    Disconnected(ConnId),
}

/// One open session connection.
#[derive(Debug)]
struct SimConn {
    /// The broker it reaches.
    node: NodeId,
    /// The broker's end of it.
    frontend: Frontend,
    /// Whether the broker answered the connection's ApiVersions (Kafka reads any
    /// request before it, but a client must not send one: it cannot know the versions).
    negotiated: bool,
}

/// The session and the driver's state. See the module documentation.
#[derive(Debug)]
pub(crate) struct SessionDriver {
    session: Session,
    /// Open connections. Invariant: every connection here is known to the session as
    /// open (a reset one is removed at once and its `Disconnected` owed).
    conns: BTreeMap<ConnId, SimConn>,
    /// Inputs owed to the session, in the order the driver learned them.
    owed: VecDeque<ClientInput>,
    /// ApiVersions answers on their way back: when, on which connection, the frame.
    hellos: Vec<(Timestamp, ConnId, Bytes)>,
    /// Dials drawn slow ([`ConnectDraw::Slow`]): when each opens, which, to whom.
    slow_connects: Vec<(Timestamp, ConnId, NodeId)>,
    /// `now` at which `handle_timeout` left `poll_timeout` in the past with no output.
    timer_stuck_at: Option<Timestamp>,
    /// Whether that was reported (once per run).
    timer_stuck_reported: bool,
    /// The partition of every send without an outcome yet (a failure names none).
    sends: BTreeMap<SendId, TopicPartition>,
    /// Whether the producer's fatal error was reported to the observers.
    fatal_reported: bool,
}

impl SessionDriver {
    /// A session for `config` bootstrapping from every broker of `world`.
    pub(crate) fn new(config: ProducerConfig, world: &World) -> Self {
        let bootstrap = world
            .brokers()
            .iter()
            .map(|b| BrokerEndpoint::sim(b.id).addr())
            .collect();
        Self {
            session: Session::new(session_config(&config, bootstrap), world.now(), 0),
            conns: BTreeMap::new(),
            owed: VecDeque::new(),
            hellos: Vec::new(),
            slow_connects: Vec::new(),
            timer_stuck_at: None,
            timer_stuck_reported: false,
            sends: BTreeMap::new(),
            fatal_reported: false,
        }
    }

    pub(crate) fn producer(&self) -> &Producer {
        self.session.producer()
    }

    pub(crate) fn metrics(&mut self, now: Timestamp) -> kacrab_driver::metrics::MetricsSnapshot {
        self.session.metrics(now)
    }

    pub(crate) fn flush(&mut self, now: Timestamp) {
        let _ = self.session.flush(now);
    }

    pub(crate) fn close(&mut self, now: Timestamp) {
        let _ = self.session.close(None, now);
    }

    pub(crate) fn abort(&mut self, now: Timestamp) {
        self.session.abort(now);
    }

    /// A transactional call. The session answers every call with a completion; one
    /// that is there at once (a refusal, or `begin_transaction`) is returned, as the
    /// core returns it, and not reported as an event (the core reports none for it).
    /// Completions of other commands found meanwhile go to the observers.
    pub(crate) fn transaction(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
        call: impl FnOnce(&mut Session, Timestamp) -> OpId,
    ) -> Result<(), TxnError> {
        let op = call(&mut self.session, now);
        let mut own = None;
        while let Some(c) = self.session.poll_completion() {
            match c {
                Completion::Transaction {
                    op: o,
                    kind,
                    result,
                } if o == op => {
                    if result.is_ok() && kind != TxnOp::BeginTransaction {
                        obs.on_event(
                            now,
                            &Event::TransactionCompleted {
                                op: kind,
                                result: Ok(()),
                            },
                        );
                    }
                    own = Some(result);
                }
                other => self.observe(obs, now, other),
            }
        }
        own.unwrap_or(Ok(()))
    }

    pub(crate) fn init_transactions(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        self.transaction(obs, now, Session::init_transactions)
    }

    pub(crate) fn begin_transaction(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        self.transaction(obs, now, Session::begin_transaction)
    }

    pub(crate) fn commit_transaction(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        self.transaction(obs, now, Session::commit_transaction)
    }

    pub(crate) fn abort_transaction(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        self.transaction(obs, now, Session::abort_transaction)
    }

    pub(crate) fn send_offsets(
        &mut self,
        obs: &mut Observers,
        offsets: Vec<OffsetToCommit>,
        group: ConsumerGroupMetadata,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        self.transaction(obs, now, |s, now| {
            s.send_offsets_to_transaction(offsets, group, now)
        })
    }

    /// A completion, as the core's event the observers know: a record's outcome under
    /// the send's id, a transactional operation's end.
    fn observe(&mut self, obs: &mut Observers, now: Timestamp, completion: Completion) {
        match completion {
            Completion::Record { id, outcome } => {
                let Some(partition) = self.sends.remove(&id) else {
                    obs.checker_mut().violation(
                        ViolationKind::Protocol,
                        format!("a second outcome for send {id:?}"),
                    );
                    return;
                };
                let records = vec![record_id(id)];
                let event = match outcome {
                    Ok(md) => Event::Delivered {
                        partition,
                        records,
                        base_offset: md.offset,
                        log_append_time: (md.timestamp_type == TimestampType::LogAppendTime)
                            .then_some(md.timestamp),
                    },
                    Err(ProduceError::Delivery {
                        error,
                        possibly_written,
                    }) => Event::Failed {
                        partition,
                        records,
                        error,
                        possibly_written,
                    },
                    // Refused before it reached the producer: certainly not written.
                    Err(ProduceError::Send(e)) => {
                        let error = match e {
                            SendError::Fatal(k) => DeliveryError::Fatal(k),
                            SendError::RecordTooLarge { .. } => DeliveryError::RecordTooLarge {
                                partition: partition.clone(),
                            },
                            SendError::BufferFull { .. } => DeliveryError::Timeout {
                                partition: partition.clone(),
                            },
                            _ => DeliveryError::Aborted,
                        };
                        Event::Failed {
                            partition,
                            records,
                            error,
                            possibly_written: false,
                        }
                    }
                    Err(other) => {
                        obs.checker_mut().violation(
                            ViolationKind::Protocol,
                            format!("send {id:?}: an outcome the simulator does not know: {other}"),
                        );
                        return;
                    }
                };
                obs.on_event(now, &event);
            }
            Completion::Transaction { kind, result, .. } => {
                if kind != TxnOp::BeginTransaction {
                    obs.on_event(now, &Event::TransactionCompleted { op: kind, result });
                }
            }
            other => obs.trace(now, || format!("session: {other:?}")),
        }
    }

    pub(crate) fn is_idle(&self, world: &World) -> bool {
        self.session.is_idle() && !self.owes_reports(world)
    }

    /// Whether the session is owed an input (or will be, once the driver takes the
    /// world's notices about its connections).
    pub(crate) fn owes_reports(&self, world: &World) -> bool {
        !self.owed.is_empty()
            || world.has_notice(|n| match n {
                Notice::ConnectionDropped(node) => self.conns.values().any(|c| c.node == *node),
                Notice::RequestFailed(id, _) => {
                    conn_of(*id).is_some_and(|c| self.conns.contains_key(&c))
                }
                Notice::TransactionVersion(_) => false,
            })
    }

    /// The application sends `value` to `tp` now. The session never refuses at once
    /// (a refusal is the send's outcome); the send's id names the record.
    pub(crate) fn send(
        &mut self,
        tp: &TopicPartition,
        value: Bytes,
        timestamp_ms: i64,
        now: Timestamp,
    ) -> Result<RecordId, SendError> {
        let record =
            ProducerRecord::new(tp.topic.clone(), tp.partition, value).with_timestamp(timestamp_ms);
        let id = self.session.send(record, now);
        self.sends.insert(id, tp.clone());
        Ok(record_id(id))
    }

    /// Takes what the network told the client on its own: a connection to a broker
    /// dropped (every session connection to it is reset) or a request could not be
    /// written (its connection is reset).
    pub(crate) fn take_notices(&mut self, world: &mut World) {
        while let Some(notice) = world.take_notice() {
            match notice {
                Notice::ConnectionDropped(node) => {
                    let gone: Vec<ConnId> = self
                        .conns
                        .iter()
                        .filter(|(_, c)| c.node == node)
                        .map(|(&id, _)| id)
                        .collect();
                    for conn in gone {
                        self.reset(conn);
                    }
                }
                Notice::RequestFailed(id, _) => {
                    if let Some(conn) = conn_of(id) {
                        self.reset(conn);
                    }
                }
                // The session learns the finalized features from ApiVersions.
                Notice::TransactionVersion(_) => {}
            }
        }
    }

    /// Forgets `conn` and owes the session its `Disconnected`.
    fn reset(&mut self, conn: ConnId) {
        if self.conns.remove(&conn).is_some() {
            self.hellos.retain(|(_, c, _)| *c != conn);
            self.slow_connects.retain(|(_, c, _)| *c != conn);
            self.owed.push_back(ClientInput::Disconnected(conn));
        }
    }

    /// Gives the session the earliest input owed, if any.
    pub(crate) fn report_next_failure(&mut self, world: &World, obs: &mut Observers) -> bool {
        let Some(input) = self.owed.pop_front() else {
            return false;
        };
        let now = world.now();
        obs.trace(now, || format!("session: {input:?}"));
        match input {
            ClientInput::Connected(conn) => self.session.handle_connected(conn, now),
            ClientInput::ConnectFailed(conn) => self.session.handle_connect_failed(conn, now),
            ClientInput::Disconnected(conn) => {
                obs.stats_mut().disconnected_reports += 1;
                self.session.handle_disconnected(conn, now);
            }
        }
        true
    }

    /// When the driver's timer fires: the session's `poll_timeout` or the next
    /// ApiVersions answer, moved a millisecond on when the last timer left it in the
    /// past with nothing to do.
    pub(crate) fn timer(&self, now: Timestamp) -> Option<Timestamp> {
        let hello = self
            .hellos
            .iter()
            .map(|(t, _, _)| *t)
            .chain(self.slow_connects.iter().map(|(t, _, _)| *t))
            .min();
        let session = self.session.poll_timeout().map(|t| {
            if self.timer_stuck_at == Some(now) && t <= now {
                now + std::time::Duration::from_millis(1)
            } else {
                t
            }
        });
        match (hello, session) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The timer fires at `now`: due ApiVersions answers arrive, then the session's
    /// `handle_timeout` if it is due.
    pub(crate) fn fire_timer(&mut self, obs: &mut Observers, now: Timestamp) {
        let opened: Vec<(Timestamp, ConnId, NodeId)> = {
            let (due, later) = std::mem::take(&mut self.slow_connects)
                .into_iter()
                .partition(|(t, _, _)| *t <= now);
            self.slow_connects = later;
            due
        };
        for (_, conn, node) in opened {
            obs.trace(now, || format!("session: slow connect {conn:?} opens"));
            self.open_conn(obs, conn, node);
            self.session.handle_connected(conn, now);
        }
        let due: Vec<(Timestamp, ConnId, Bytes)> = {
            let (due, later) = std::mem::take(&mut self.hellos)
                .into_iter()
                .partition(|(t, _, _)| *t <= now);
            self.hellos = later;
            due
        };
        for (_, conn, frame) in due {
            obs.trace(now, || format!("session: ApiVersions answer on {conn:?}"));
            if let Some(c) = self.conns.get_mut(&conn) {
                c.negotiated = true;
            }
            self.session.handle_bytes(conn, &frame, now);
        }
        if self.session.poll_timeout().is_some_and(|t| t <= now) {
            obs.trace(now, || "session handle_timeout".to_string());
            self.session.handle_timeout(now);
        }
    }

    /// As [`CoreDriver::after_timer`](crate::driver::CoreDriver::after_timer).
    pub(crate) fn after_timer(&mut self, obs: &mut Observers, now: Timestamp, progress: bool) {
        let stuck = !progress
            && self.hellos.iter().all(|(t, _, _)| *t > now)
            && self.slow_connects.iter().all(|(t, _, _)| *t > now)
            && self.session.poll_timeout().is_some_and(|t| t <= now);
        if stuck {
            self.timer_stuck_at = Some(now);
            if !self.timer_stuck_reported {
                self.timer_stuck_reported = true;
                let t = self.session.poll_timeout();
                obs.checker_mut().violation(
                    ViolationKind::TimerStuck,
                    format!("session poll_timeout {t:?} <= now {now:?} after handle_timeout, nothing to do"),
                );
            }
        }
    }

    /// After every input: takes the network's notices, drains the session's outputs
    /// (connecting, transmitting, closing), then its events; checks the core's
    /// invariants. Returns whether the session produced any output.
    pub(crate) fn drain(&mut self, world: &mut World, obs: &mut Observers) -> bool {
        self.take_notices(world);
        let now = world.now();
        let mut progress = false;
        while let Some(output) = self.session.poll_output(now) {
            progress = true;
            match output {
                Output::Connect { conn, addr } => self.connect(world, obs, conn, &addr),
                Output::Transmit { conn, frame, .. } => {
                    self.transmit(world, obs, conn, &frame.to_bytes());
                    // The virtual socket took the frame whole unless the write broke
                    // its connection (a notice resets it): only then is it reported
                    // written, which is what delivers an acks=0 request's records.
                    self.take_notices(world);
                    if self.conns.contains_key(&conn) {
                        self.session.handle_transmitted(conn, 1, now);
                    }
                }
                // One loop writes every frame in order: nothing to sequence.
                Output::Release { .. } => {}
                Output::Close { conn, reason } => {
                    // The model brokers answer only what they were asked, in order: a
                    // connection closed as a protocol violation means the session
                    // refused an answer it asked for (one to a request it had already
                    // timed out and still wrote, say).
                    if let CloseReason::Protocol(e) = &reason {
                        obs.checker_mut().violation(
                            ViolationKind::Protocol,
                            format!("the session closed {conn:?} for a protocol violation: {e}"),
                        );
                    }
                    self.close_conn(world, obs, conn);
                }
            }
            self.take_notices(world);
        }
        while let Some(completion) = self.session.poll_completion() {
            progress = true;
            self.observe(obs, now, completion);
        }
        if let (Some(error), false) = (self.session.producer().fatal_error(), self.fatal_reported) {
            self.fatal_reported = true;
            obs.on_event(now, &Event::Fatal { error });
        }
        self.session.assert_invariants();
        if progress {
            self.timer_stuck_at = None;
        }
        progress
    }

    fn connect(&mut self, world: &mut World, obs: &mut Observers, conn: ConnId, addr: &str) {
        let now = world.now();
        let node = BrokerEndpoint::parse_sim(addr).filter(|&n| world.is_up(n));
        obs.trace(now, || {
            format!("session: connect {conn:?} to {addr}: {node:?}")
        });
        let Some(node) = node else {
            self.owed.push_back(ClientInput::ConnectFailed(conn));
            return;
        };
        match world.draw_connect() {
            ConnectDraw::Accept => {
                self.open_conn(obs, conn, node);
                self.owed.push_back(ClientInput::Connected(conn));
            }
            ConnectDraw::Refuse => {
                obs.trace(now, || format!("FAULT session connect {conn:?} refused"));
                self.owed.push_back(ClientInput::ConnectFailed(conn));
            }
            ConnectDraw::Slow(after) => {
                obs.trace(now, || {
                    format!("FAULT session connect {conn:?} opens in {after:?}")
                });
                self.slow_connects.push((now + after, conn, node));
            }
        }
    }

    /// The world's end of session connection `conn` to `node` exists from now on.
    fn open_conn(&mut self, obs: &mut Observers, conn: ConnId, node: NodeId) {
        let first = RequestId((conn.0 + 1) << CONN_ID_SHIFT);
        self.conns.insert(
            conn,
            SimConn {
                node,
                frontend: Frontend::new(node, first),
                negotiated: false,
            },
        );
        obs.stats_mut().session_connections += 1;
    }

    fn transmit(&mut self, world: &mut World, obs: &mut Observers, conn: ConnId, frame: &[u8]) {
        let now = world.now();
        let Some(c) = self.conns.get_mut(&conn) else {
            // Reset under the session's feet: it learns at the next step.
            return;
        };
        let node = c.node;
        let requests = match c.frontend.handle_bytes(frame) {
            Ok(r) => r,
            Err(e) => {
                obs.checker_mut().violation(
                    ViolationKind::Protocol,
                    format!("session wrote a frame the broker can not read on {conn:?}: {e}"),
                );
                self.close_conn(world, obs, conn);
                self.owed.push_back(ClientInput::Disconnected(conn));
                return;
            }
        };
        for request in requests {
            match request {
                FrontendRequest::ApiVersions { id, .. } => {
                    let (tv, epoch) = world.finalized_transaction_version();
                    let features = BrokerFeatures {
                        transaction_version: Some(tv),
                        features_epoch: epoch,
                    };
                    let Some(c) = self.conns.get_mut(&conn) else {
                        return;
                    };
                    match c.frontend.answer_api_versions(id, &features) {
                        Ok(bytes) => {
                            obs.stats_mut().api_versions_answered += 1;
                            let rtt = world.net().latency(node) * 2;
                            self.hellos.push((now + rtt, conn, bytes));
                        }
                        Err(e) => obs.checker_mut().violation(
                            ViolationKind::Protocol,
                            format!("ApiVersions answer on {conn:?}: {e}"),
                        ),
                    }
                }
                FrontendRequest::Model(msg) => {
                    if !self.conns.get(&conn).is_some_and(|c| c.negotiated) {
                        obs.checker_mut().violation(
                            ViolationKind::Protocol,
                            format!("session req {} on {conn:?} before ApiVersions", msg.id()),
                        );
                    }
                    if let ToBroker::Produce(r) = &msg {
                        obs.stats_mut().produce_requests += 1;
                        obs.checker_mut().on_wire(node.0, r);
                    }
                    match &msg {
                        ToBroker::InitProducerId(_) => {
                            obs.stats_mut().init_producer_id_requests += 1
                        }
                        ToBroker::Metadata(_) => obs.stats_mut().metadata_requests += 1,
                        _ => {}
                    }
                    obs.trace(now, || {
                        format!("session req {} on {conn:?} -> node {node}", msg.id())
                    });
                    world.write(obs, node, msg);
                }
            }
        }
    }

    /// The session closes `conn`: the world's connection to its broker goes, and with
    /// it every other session connection to that broker.
    fn close_conn(&mut self, world: &mut World, obs: &mut Observers, conn: ConnId) {
        // A slow dial the session gave up on (its setup timeout) never opens.
        self.slow_connects.retain(|(_, c, _)| *c != conn);
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        self.hellos.retain(|(_, h, _)| *h != conn);
        obs.stats_mut().close_connections += 1;
        let lost = world.close_connection(c.node);
        obs.trace(world.now(), || {
            format!(
                "session closes {conn:?} to node {}, dropping {lost:?}",
                c.node
            )
        });
        let sharing: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, s)| s.node == c.node)
            .map(|(&id, _)| id)
            .collect();
        for other in sharing {
            self.reset(other);
        }
    }

    /// The response at the head of the connection from `node` reaches the client: its
    /// front end encodes it for the session connection that asked.
    pub(crate) fn deliver_response(
        &mut self,
        world: &mut World,
        obs: &mut Observers,
        node: NodeId,
    ) -> bool {
        let Some(msg) = world.pop_response(node) else {
            return false;
        };
        obs.stats_mut().responses += 1;
        let now = world.now();
        let id = msg.id();
        let Some(conn) = conn_of(id).filter(|c| self.conns.contains_key(c)) else {
            obs.trace(now, || {
                format!("response req {id}: its session connection is gone")
            });
            return true;
        };
        let brokers: Vec<BrokerEndpoint> = world
            .brokers()
            .iter()
            .filter(|b| b.up)
            .map(|b| BrokerEndpoint::sim(b.id))
            .collect();
        let Some(c) = self.conns.get_mut(&conn) else {
            return true;
        };
        match c.frontend.encode(&msg, &brokers) {
            Ok(frame) => {
                obs.trace(now, || format!("response req {id} on {conn:?}: {msg:?}"));
                self.session.handle_bytes(conn, &frame, now);
            }
            Err(e) => obs.checker_mut().violation(
                ViolationKind::Protocol,
                format!("the broker can not encode its answer to req {id}: {e}"),
            ),
        }
        true
    }
}

/// The checker's name for send `id` (a session run names its records by send).
fn record_id(id: SendId) -> RecordId {
    RecordId(id.0)
}

/// The simulator's producer configuration as a session's, bootstrapping from
/// `bootstrap`.
///
/// # Panics
/// When the session would run another configuration than `core` (a key the copy
/// missed): the run would not be the one configured.
fn session_config(core: &ProducerConfig, bootstrap: Vec<String>) -> SessionConfig {
    let mut builder = SessionConfig::builder();
    builder.bootstrap_servers(bootstrap).client_id("kacrab-sim");
    let b = builder.core();
    b.enable_idempotence(core.enable_idempotence())
        .acks(core.acks())
        .max_in_flight_requests_per_connection(core.max_in_flight_requests_per_connection())
        .retries(core.retries())
        .delivery_timeout(core.delivery_timeout())
        .request_timeout(core.request_timeout())
        .linger(core.linger())
        .batch_size(core.batch_size())
        .max_request_size(core.max_request_size())
        .buffer_memory(core.buffer_memory())
        .retry_backoff(core.retry_backoff())
        .retry_backoff_max(core.retry_backoff_max())
        .metadata_max_age(core.metadata_max_age())
        .transaction_timeout(core.transaction_timeout())
        .jitter_seed(core.jitter_seed())
        .producer_id_expiration(core.producer_id_expiration());
    if let Some(id) = core.transactional_id() {
        b.transactional_id(id);
    }
    let config = builder
        .build()
        .expect("the simulator's producer configuration is valid");
    assert_eq!(
        config.core(),
        core,
        "the session runs the configured producer"
    );
    config
}

/// The session connection whose front end handed out request id `id`.
fn conn_of(id: RequestId) -> Option<ConnId> {
    (id.0 >> CONN_ID_SHIFT).checked_sub(1).map(ConnId)
}
