//! The [`Session`]: the core, the application's commands and the network, behind one
//! sans-IO API.

use std::collections::VecDeque;
use std::time::Duration;

use kacrab_idempotence::{
    ConsumerGroupMetadata, DeliveryError, OffsetToCommit, Producer, Record, Stats, Timestamp,
    Topic, TransactionState,
};

use crate::app::Ending;
use crate::app::{Application, Resolve, TxnCall};
use crate::completion::{Completion, OpId, ProduceError, SendId};
use crate::config::{SessionConfig, SessionConfigError};
use crate::connection_error::ConnectionError;
use crate::extensions::Extensions;
use crate::interceptor::{Interceptors, ProducerInterceptor};
use crate::metrics::{Gauges, MetricsSnapshot, PublishTimer, SessionMetrics, TimedCall};
use crate::network::{Network, TelemetryEvent};
use crate::output::{ConnId, Output};
use crate::partitioner::{BuiltIn, Partitioner};
use crate::phases::Security;
use crate::record::ProducerRecord;
use crate::refresh::MetadataLifecycle;
use crate::routing::{Placement, Router};
use crate::telemetry::{Closing, Due, Telemetry};
use crate::topics::Topics;
use kacrab_wire::messages::GetTelemetrySubscriptionsRequest;

/// The sans-IO producer session: the core plus everything between it and the
/// application on one side and the sockets on the other. See the crate documentation
/// for the loop a driver runs.
///
/// Every method taking `now` requires `now` not to go backwards between calls.
#[derive(Debug)]
pub struct Session {
    core: Producer,
    app: Application,
    net: Network,
    metrics: SessionMetrics,
    /// When the snapshot is next published through the `metrics` facade.
    publish: PublishTimer,
    router: Router,
    lifecycle: MetadataLifecycle,
    /// Metadata answers the lifecycle has seen (see `Topics::answers`).
    answers_seen: u64,
    /// The logs' view of the core's state (feature `tracing`; empty without it).
    observer: crate::trace::Observer,
    /// `send.buffer.bytes` and `receive.buffer.bytes` (`None`: the OS default).
    socket_buffers: (Option<usize>, Option<usize>),
    /// The application's interceptors (see [`Session::add_interceptor`]).
    interceptors: Interceptors,
    /// KIP-714 client telemetry's schedule (`enable.metrics.push`).
    telemetry: Telemetry,
    /// Every connection was closed after the producer finished (and its terminating
    /// telemetry push, if any, was answered or lost).
    closed_all: bool,
    /// `Completion::Closed`s held until the connections are closed: a close completes
    /// when the producer is finished.
    held_closes: VecDeque<Completion>,
}

/// The session's metadata and partitioners, as the application half asks them.
struct Resolver<'a> {
    topics: &'a Topics,
    router: &'a mut Router,
    lifecycle: &'a mut MetadataLifecycle,
    network: &'a Network,
}

impl Resolve for Resolver<'_> {
    fn partition_count(&self, topic: &str) -> Option<i32> {
        self.topics.partition_count(topic)
    }

    fn place(
        &mut self,
        core: &Producer,
        topic: &Topic,
        partition: Option<i32>,
        record: &Record,
        now: Timestamp,
    ) -> Placement {
        self.lifecycle.used(topic.as_str(), now);
        self.router
            .place(topic, partition, record, self.topics, core, now)
    }

    fn connection_failures(&self) -> crate::ConnectionFailures {
        self.network.connection_failures()
    }
}

impl Session {
    /// A session for `config`. `now` is the driver's clock (any epoch) and `unix_ms`
    /// the wall clock at that instant, in milliseconds since the Unix epoch: records
    /// sent without a timestamp get `unix_ms` plus the time elapsed since.
    #[must_use]
    pub fn new(config: SessionConfig, now: Timestamp, unix_ms: i64) -> Self {
        let core_config = config.core().clone();
        let max_age = core_config.metadata_max_age();
        let net = Network::new(
            config.bootstrap().to_vec(),
            config.client_id().map(str::to_owned),
            core_config.request_timeout(),
            Security::new(&config, now, unix_ms),
            &config,
            now,
        );
        let app = Application::new(
            config.max_block(),
            core_config.retry_backoff(),
            now,
            unix_ms,
        );
        let metrics = SessionMetrics::new(
            config.metrics().sample_window(),
            config.metrics().num_samples(),
            config.client_id(),
            now,
        );
        let telemetry = Telemetry::new(
            config.metrics().push(),
            core_config.request_timeout(),
            now,
            unix_ms,
        );
        let mut core = Producer::new(core_config, now);
        core.enable_metric_samples();
        Self {
            core,
            app,
            net,
            metrics,
            publish: PublishTimer::new(config.metrics().publish_interval(), now),
            router: Router::new(BuiltIn::new(config.partitioner())),
            lifecycle: MetadataLifecycle::new(max_age, config.metadata_max_idle(), now),
            answers_seen: 0,
            observer: crate::trace::Observer::default(),
            socket_buffers: config.socket_buffers(),
            interceptors: Interceptors::default(),
            telemetry,
            closed_all: false,
            held_closes: VecDeque::new(),
        }
    }

    /// A session from Kafka property pairs: [`SessionConfig::from_properties`], then
    /// [`Session::new`]. A bad configuration is refused here, before anything starts.
    ///
    /// # Errors
    /// As [`SessionConfig::from_properties`].
    pub fn from_properties<'a>(
        props: impl IntoIterator<Item = (&'a str, &'a str)>,
        now: Timestamp,
        unix_ms: i64,
    ) -> Result<Self, SessionConfigError> {
        Ok(Self::new(
            SessionConfig::from_properties(props)?,
            now,
            unix_ms,
        ))
    }

    // ------------------------------------------------------------------ commands

    /// Sends `record`. It enters the producer now, in call order; its outcome is one
    /// [`Completion::Record`] naming the returned id. If `buffer.memory` is full it
    /// waits, in order, for up to `max.block.ms`, then fails with
    /// [`SendError::BufferFull`](kacrab_idempotence::SendError::BufferFull).
    ///
    /// A record without a partition waits, in the same order, for its topic's metadata
    /// (up to the same `max.block.ms`, from this call), then goes where the
    /// [`Partitioner`] installed with [`Session::set_partitioner`] or Kafka's built-in
    /// partitioner puts it; it fails with [`ProduceError::Topic`](crate::ProduceError::Topic)
    /// if the topic stays unknown, the broker refuses it, or its name is invalid.
    ///
    /// The installed [`ProducerInterceptor`]s see the record first, and may change it.
    pub fn send(&mut self, record: ProducerRecord, now: Timestamp) -> SendId {
        let record = self.interceptors.on_send(record);
        let awaited = self.interceptors.awaited(&record);
        let mut resolve = Resolver {
            topics: self.net.topics(),
            router: &mut self.router,
            lifecycle: &mut self.lifecycle,
            network: &self.net,
        };
        let failure = self.net.security_failure();
        let id = self
            .app
            .send(&mut self.core, record, &mut resolve, failure, now);
        self.interceptors.sent(id, awaited);
        self.progress(now);
        id
    }

    /// Installs the application's partitioner for records sent without a partition (the
    /// built-in one still decides when it returns `None`).
    pub fn set_partitioner(&mut self, partitioner: Box<dyn Partitioner>) {
        self.router.set_partitioner(partitioner);
    }

    /// Adds `interceptor` after those already installed. It sees every record sent from
    /// now on: in [`Session::send`], and its outcome when [`Session::poll_completion`]
    /// hands that out (see [`ProducerInterceptor`] for the rules).
    pub fn add_interceptor(&mut self, interceptor: std::sync::Arc<dyn ProducerInterceptor>) {
        self.interceptors.add(interceptor);
    }

    /// Installs `extensions`: its partitioner (a fresh one) if it has one, and its
    /// interceptors after those already installed. Call before the first send.
    pub fn install(&mut self, extensions: &Extensions) {
        if let Some(partitioner) = extensions.make_partitioner() {
            self.set_partitioner(partitioner);
        }
        for interceptor in extensions.interceptors() {
            self.add_interceptor(interceptor);
        }
    }

    /// Sends every queued record without waiting for `linger.ms`; completes
    /// ([`Completion::Flushed`]) once every record sent before this call has an outcome.
    pub fn flush(&mut self, now: Timestamp) -> OpId {
        let op = self.app.flush(&mut self.core);
        self.metrics.call(op, TimedCall::Flush, now);
        self.progress(now);
        op
    }

    /// Closes the producer: later sends and transactional calls are refused with
    /// `Closed`; records already sent are delivered, and an open transaction is
    /// aborted. With a `timeout`, whatever is still without an outcome when it passes
    /// fails (Java's `close(Duration)`); `None` waits for `delivery.timeout.ms`.
    /// Completes ([`Completion::Closed`]) once every record has an outcome and, after a
    /// graceful close under a KIP-714 subscription, the terminating telemetry push was
    /// answered (or lost, or the close's time is up: its timeout, at most
    /// `request.timeout.ms`); every connection is then closed and
    /// [`Session::is_finished`] is true.
    pub fn close(&mut self, timeout: Option<Duration>, now: Timestamp) -> OpId {
        let op = self.app.close(&mut self.core, timeout, now);
        self.progress(now);
        op
    }

    /// Fails every record without an outcome now (possibly written if on the wire) and
    /// closes the producer: Java's forced close.
    pub fn abort(&mut self, now: Timestamp) {
        self.app.abort(&mut self.core, now);
        self.progress(now);
    }

    /// Gets a producer id for `transactional.id`, fencing older producers with the same
    /// id. Completes with [`Completion::Transaction`]; calling it again while it is
    /// pending joins the same work.
    pub fn init_transactions(&mut self, now: Timestamp) -> OpId {
        self.transaction(TxnCall::Init, now)
    }

    /// Opens a transaction (completes at once).
    pub fn begin_transaction(&mut self, now: Timestamp) -> OpId {
        self.transaction(TxnCall::Begin, now)
    }

    /// Adds consumer offsets to the open transaction.
    pub fn send_offsets_to_transaction(
        &mut self,
        offsets: Vec<OffsetToCommit>,
        group: ConsumerGroupMetadata,
        now: Timestamp,
    ) -> OpId {
        self.transaction(TxnCall::SendOffsets(offsets, group), now)
    }

    /// Commits the open transaction once every record sent in it is acknowledged.
    pub fn commit_transaction(&mut self, now: Timestamp) -> OpId {
        self.transaction(TxnCall::Commit, now)
    }

    /// Aborts the open transaction.
    pub fn abort_transaction(&mut self, now: Timestamp) -> OpId {
        self.transaction(TxnCall::Abort, now)
    }

    /// Runs a transactional operation given as a value: the same as the method of its
    /// name.
    pub fn transaction(&mut self, call: TxnCall, now: Timestamp) -> OpId {
        let timed = TimedCall::of(&call);
        let op = self.app.transaction(&mut self.core, call);
        self.metrics.call(op, timed, now);
        self.progress(now);
        op
    }

    /// Asks for the partition count of `topic` (metadata is fetched if the session does
    /// not know it), within `max.block.ms`. Completes with
    /// [`Completion::PartitionCount`].
    pub fn partition_count(&mut self, topic: &str, now: Timestamp) -> OpId {
        let known = self.net.partition_count(topic);
        let op = self.app.partition_count(topic, known, now);
        self.metrics.call(op, TimedCall::MetadataWait, now);
        self.progress(now);
        op
    }

    // ------------------------------------------------------------------ outputs

    /// The next thing the driver must do on the network, if any.
    pub fn poll_output(&mut self, now: Timestamp) -> Option<Output> {
        if !self.net.has_output() {
            self.drain_core(now);
        }
        let out = self.net.pop_output()?;
        let node = match &out {
            Output::Transmit { conn, .. } | Output::Connect { conn, .. } => {
                self.net.node_of(*conn).flatten()
            }
            _ => None,
        };
        self.metrics.output(&out, node, now);
        self.observer.output(&out, node);
        Some(out)
    }

    /// The next thing the application should learn, if any.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        let done = loop {
            if self.closed_all {
                if let Some(close) = self.held_closes.pop_front() {
                    break close;
                }
            }
            let done = self.app.pop_completion()?;
            if matches!(done, Completion::Closed { .. }) && !self.closed_all {
                // The terminating telemetry push is still out: the close completes
                // with the connections' closing (`run_telemetry`).
                self.held_closes.push_back(done);
                continue;
            }
            break done;
        };
        // After a security failure the records given up name its cause.
        let done = match (done, self.net.security_failure()) {
            (
                Completion::Record {
                    id,
                    outcome:
                        Err(ProduceError::Delivery {
                            error: DeliveryError::Aborted,
                            possibly_written,
                        }),
                },
                Some(error),
            ) => Completion::Record {
                id,
                outcome: Err(ProduceError::Connection {
                    error: error.clone(),
                    possibly_written,
                }),
            },
            (done, _) => done,
        };
        self.metrics.completion(&done);
        crate::trace::completion(&done);
        self.interceptors.completed(&done);
        Some(done)
    }

    /// When [`Session::handle_timeout`] is next needed: the earliest of the core's
    /// deadlines (linger, retries, `request.timeout.ms` and `delivery.timeout.ms`), a
    /// connection's setup deadline, a session request's timeout, a waiting send's
    /// `max.block.ms`, a lookup's next question, a close's timeout, and (feature
    /// `metrics`, until the session is finished) the next publication of the metrics
    /// (`kacrab.metrics.publish.interval.ms`).
    ///
    /// After `handle_timeout(now)` this is `None` or later than `now` (checked with
    /// `debug_assert!`): a driver needs no guard against a deadline that stays due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        [
            self.core.poll_timeout(),
            self.net.poll_timeout(),
            self.app.poll_timeout(),
            self.lifecycle.poll_timeout(),
            self.publish
                .poll_timeout()
                .filter(|_| !self.app.is_finished()),
            self.telemetry.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether the producer is closed and every completion was produced: the driver
    /// may stop once it drained `poll_output` and `poll_completion`.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.app.is_finished() && self.closed_all
    }

    // ------------------------------------------------------------------ inputs

    /// The clock reached `now`: every deadline at or before it is acted on.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        self.core.handle_timeout(now);
        // A request the core gave up on closes its connection; the requests the core
        // makes next (retries) go out on fresh ones.
        self.net.handle_timeout(&mut self.core, now);
        let (forget, refresh) = self.lifecycle.handle_timeout(now);
        for topic in &forget {
            self.net.topics_mut().forget(topic);
            self.router.forget(topic);
        }
        if !refresh.is_empty() {
            let topics: Vec<&str> = refresh.iter().map(String::as_str).collect();
            self.net.request_metadata(&mut self.core, &topics, now);
        }
        self.progress(now);
        self.drain_core(now);
        // After the inputs above, so the values published are those at `now`.
        #[cfg(feature = "metrics")]
        if self.publish.take_due(now) && !self.app.is_finished() {
            let snapshot = self.metrics(now);
            crate::metrics::publish(&snapshot);
        }
        debug_assert!(
            self.poll_timeout().is_none_or(|t| t > now),
            "still due after handle_timeout({now:?}): {:?} (core {:?}, network {:?}, application {:?})",
            self.poll_timeout(),
            self.core.poll_timeout(),
            self.net.poll_timeout(),
            self.app.poll_timeout(),
        );
    }

    /// The connection is open: the session negotiates versions on it.
    pub fn handle_connected(&mut self, conn: ConnId, now: Timestamp) {
        let _in = self.observer.enter(Some(conn));
        if let Some(node) = self.net.node_of(conn) {
            self.metrics.connected(now);
            crate::trace::connected(conn, node);
        }
        self.net.handle_connected(&mut self.core, conn, now);
        self.progress(now);
    }

    /// The connection could not be opened: nothing queued on it was sent. The same as
    /// [`Session::handle_disconnected`], named for the driver's reading. Prefer
    /// [`Session::handle_connect_error`], which names the cause.
    pub fn handle_connect_failed(&mut self, conn: ConnId, now: Timestamp) {
        self.disconnected(conn, None, now);
    }

    /// The connection could not be opened, for `cause` (the socket's `io::Error`:
    /// refused, unresolvable, ...): nothing queued on it was sent. The cause is logged
    /// (at WARN for the address's first failure since it was last ready, at DEBUG for
    /// repeats) and named by a metadata wait that times out.
    pub fn handle_connect_error(&mut self, conn: ConnId, cause: ConnectionError, now: Timestamp) {
        self.disconnected(conn, Some(cause), now);
    }

    /// The connection failed (or could not be opened). Requests written on it may have
    /// been applied by the broker; the core treats them so. Prefer
    /// [`Session::handle_connection_lost`], which names the cause.
    pub fn handle_disconnected(&mut self, conn: ConnId, now: Timestamp) {
        self.disconnected(conn, None, now);
    }

    /// The connection failed, for `cause` (the socket's `io::Error`, or
    /// [`ConnectionError::closed_by_peer`]). Requests written on it may have been
    /// applied by the broker; the core treats them so. The cause is logged and kept as
    /// [`Session::handle_connect_error`] does.
    pub fn handle_connection_lost(&mut self, conn: ConnId, cause: ConnectionError, now: Timestamp) {
        self.disconnected(conn, Some(cause), now);
    }

    fn disconnected(&mut self, conn: ConnId, cause: Option<ConnectionError>, now: Timestamp) {
        if self.net.node_of(conn).is_some() {
            self.metrics.closed(now);
            self.observer.disconnected(conn, cause.as_ref());
        }
        self.net
            .handle_disconnected(&mut self.core, conn, cause.as_ref(), now);
        self.progress(now);
    }

    /// The driver completely wrote the next `frames` [`Output::Transmit`] frames of
    /// `conn` to its socket (counted in the order it received them; the count may batch
    /// several frames written together). Required of every driver: an `acks=0` Produce
    /// request gets no answer, so this report is what delivers its records (Java
    /// completes such a send in `NetworkClient.handleCompletedSends`, after the write);
    /// a driver that never reports leaves them pending until the connection times out
    /// under `request.timeout.ms` and they are retried, or `delivery.timeout.ms` fails
    /// them. A connection lost before the report fails them as possibly written. Every
    /// other request is timed from the hand-off and completed by its answer; a report
    /// for a connection the session already closed is ignored.
    pub fn handle_transmitted(&mut self, conn: ConnId, frames: usize, now: Timestamp) {
        let _in = self.observer.enter(Some(conn));
        self.net
            .handle_transmitted(&mut self.core, conn, frames, now);
        self.progress(now);
    }

    /// Bytes read from the connection's socket.
    pub fn handle_bytes(&mut self, conn: ConnId, bytes: &[u8], now: Timestamp) {
        if let Some(node) = self.net.node_of(conn) {
            self.metrics.incoming(node, bytes.len(), now);
        }
        let _in = self.observer.enter(Some(conn));
        self.net.handle_bytes(&mut self.core, conn, bytes, now);
        self.progress(now);
    }

    // ------------------------------------------------------------------ queries

    /// The core, read-only (statistics, sequence state, configuration).
    #[must_use]
    pub fn producer(&self) -> &Producer {
        &self.core
    }

    /// The core's counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.core.stats()
    }

    /// Every metric, with Kafka's names and meanings, at `now` (rates and averages over
    /// `metrics.sample.window.ms` x `metrics.num.samples` ending at `now`). Taking a
    /// snapshot changes nothing the producer does.
    pub fn metrics(&mut self, now: Timestamp) -> MetricsSnapshot {
        let gauges = Gauges {
            in_flight: self.net.in_flight_count(),
            connections: self.net.connection_count(),
        };
        self.metrics.snapshot(&self.core, gauges, now)
    }

    /// The transactional state, for a transactional producer.
    #[must_use]
    pub fn transaction_state(&self) -> Option<TransactionState> {
        self.core.transaction_state()
    }

    /// The oldest send still waiting in the session's backlog, if any: for room in
    /// `buffer.memory`, or for its topic's metadata (a topic not yet known, or known
    /// with too few partitions for the record's; see [`Session::send`]). Every send
    /// before it entered the producer or has its outcome; it and every later send wait,
    /// in order, for up to `max.block.ms`. A driver
    /// whose `send` blocks the calling thread, as Java's does, holds a caller until its
    /// send is older than this.
    #[must_use]
    pub fn oldest_blocked_send(&self) -> Option<SendId> {
        self.app.oldest_blocked_send()
    }

    /// Whether nothing the application handed over is still in the session's hands:
    /// the core is idle ([`Producer::is_idle`]) and no send or command waits in the
    /// session itself (for room in `buffer.memory`, or for its topic's metadata).
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.core.is_idle() && !self.app.has_backlog()
    }

    /// The failure that ended the session because a connection could not be secured
    /// (also reported once as [`Completion::ConnectionFailed`]), if one did. A driver
    /// attaches it to the errors it gives the application.
    #[must_use]
    pub fn connection_failure(&self) -> Option<&crate::phases::ConnectError> {
        self.net.security_failure()
    }

    /// How to open `conn`, which an [`Output::Connect`](crate::Output::Connect) just
    /// named: the socket buffer sizes to set before connecting (`send.buffer.bytes`,
    /// `receive.buffer.bytes`) and which of the host's resolved addresses to dial
    /// (`client.dns.lookup=use_all_dns_ips`). `None` for a connection the session does
    /// not know.
    #[must_use]
    pub fn connect_options(&self, conn: ConnId) -> Option<crate::output::ConnectOptions> {
        self.net.connect_options(conn, self.socket_buffers)
    }

    /// The client instance id a broker assigned for KIP-714 client telemetry (Java's
    /// `KafkaProducer.clientInstanceId`), once a subscription was fetched; `None` before,
    /// or with `enable.metrics.push=false`, or when no broker has a telemetry plugin.
    #[must_use]
    pub fn client_instance_id(&self) -> Option<[u8; 16]> {
        self.telemetry.subscription().map(|s| s.client_instance_id)
    }

    /// Open connections (being set up, negotiating or ready).
    #[must_use]
    pub fn connection_count(&self) -> usize {
        self.net.connection_count()
    }

    /// Checks every invariant of the session and of the core it owns; panics naming the
    /// first one broken. For tests: the session's property tests call it after every
    /// step.
    pub fn assert_invariants(&self) {
        self.core.assert_invariants();
        self.net.assert_invariants();
        self.app.assert_invariants(&self.core);
        self.telemetry.assert_invariants();
    }

    // ------------------------------------------------------------------ internals

    /// KIP-714 (the `telemetry` module): the network's news of the telemetry requests,
    /// then the request due, if a connection can carry it. Once the producer finished,
    /// its terminating push goes out, and every connection closes when telemetry is done
    /// (at once without a subscription; bounded by `request.timeout.ms` with one).
    fn run_telemetry(&mut self, was_finished: bool, now: Timestamp) {
        self.take_telemetry_events(now);
        let finished = self.app.is_finished();
        if finished && !was_finished {
            let how = match self.app.ending() {
                Some(Ending::Graceful { deadline }) => Closing::Within(deadline),
                Some(Ending::Forced) | None => Closing::Forced,
            };
            self.telemetry.close(how, now);
        }
        self.telemetry.expire(now);
        if let Some(due) = self.telemetry.due(now) {
            let conn = self.net.telemetry_conn(self.telemetry.sticky());
            let request: Option<kacrab_wire::Request> = match due {
                _ if conn.is_none() => None,
                Due::Subscription(id) => Some(GetTelemetrySubscriptionsRequest::new(id).into()),
                Due::Push { terminating } => {
                    let snapshot = self.metrics(now);
                    self.telemetry
                        .push_request(&snapshot, terminating, now)
                        .map(Into::into)
                }
            };
            match (conn, request) {
                (Some(conn), Some(request)) => {
                    let tag = self.net.send_telemetry(&mut self.core, conn, request, now);
                    self.telemetry.sent(due, conn, tag);
                    if let Some((node, addr)) = self.net.peer(conn) {
                        self.telemetry.sent_to(node, addr);
                    }
                    // A request that could not be encoded is reported lost at once.
                    self.take_telemetry_events(now);
                }
                _ => self.telemetry.no_connection(),
            }
        }
        if finished && self.telemetry.is_done() && !self.closed_all {
            self.closed_all = true;
            self.net.close_all(&mut self.core, now);
        }
    }

    fn take_telemetry_events(&mut self, now: Timestamp) {
        for event in self.net.take_telemetry_events() {
            match event {
                TelemetryEvent::Subscribed(tag, r) => self.telemetry.subscribed(tag, &r, now),
                TelemetryEvent::Pushed(tag, r) => self.telemetry.pushed(tag, &r, now),
                TelemetryEvent::Lost(tag) => self.telemetry.lost(tag, now),
                TelemetryEvent::ConnGone(conn) => self.telemetry.conn_gone(conn, now),
            }
        }
        if let Some(why) = self.telemetry.take_stopped() {
            crate::trace::telemetry_stopped(self.telemetry.last_broker(), why);
        }
    }

    /// Routes every request the core has ready. The core counts each as unwritten
    /// until the network writes it (`Network::write_core_request`): one waiting for its
    /// connection's setup has no request timeout running and costs no attempt if the
    /// connection fails.
    fn drain_core(&mut self, now: Timestamp) {
        while let Some(request) = self.core.poll_request_unwritten(now) {
            self.net.route(&mut self.core, request, now);
        }
        self.progress(now);
    }

    /// After any input: completions from the core's events, the backlog, lookups,
    /// flushes and closes; then, once finished, every connection closes.
    fn progress(&mut self, now: Timestamp) {
        let was_finished = self.app.is_finished();
        // A connection that cannot be secured ends the session (see `phases`).
        if let Some(error) = self.net.take_failure() {
            self.app.connection_failed(error);
            self.app.abort(&mut self.core, now);
        }
        for leader in self.net.take_drained() {
            self.router.drained(leader, now);
        }
        if self.net.topics().answers() != self.answers_seen {
            self.answers_seen = self.net.topics().answers();
            self.lifecycle.answered(now);
        }
        let mut resolve = Resolver {
            topics: self.net.topics(),
            router: &mut self.router,
            lifecycle: &mut self.lifecycle,
            network: &self.net,
        };
        let ask = self.app.progress(&mut self.core, &mut resolve, now);
        if !ask.is_empty() {
            let topics: Vec<&str> = ask.iter().map(String::as_str).collect();
            self.net.request_metadata(&mut self.core, &topics, now);
        }
        // The metrics first, so that a push taken now counts this input's effects.
        self.net
            .tally
            .drain_into(&mut self.metrics, &self.core, now);
        let blocked = self.app.blocked_sends();
        self.metrics.after_input(&mut self.core, blocked, now);
        self.run_telemetry(was_finished, now);
        // What the telemetry requests and the connections' closing added.
        self.net
            .tally
            .drain_into(&mut self.metrics, &self.core, now);
        self.observer.observe(&self.core);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ProduceError;
    use kacrab_idempotence::SendError;

    fn session(props: &[(&str, &str)]) -> Session {
        let mut all = vec![("bootstrap.servers", "h:1")];
        all.extend_from_slice(props);
        Session::new(
            SessionConfig::from_properties(all).unwrap(),
            Timestamp::ZERO,
            0,
        )
    }

    #[test]
    fn a_bad_configuration_is_refused_before_a_session_exists() {
        let bad = Session::from_properties([("linger.ms", "5")], Timestamp::ZERO, 0);
        assert_eq!(bad.unwrap_err(), SessionConfigError::MissingBootstrap);
        let unknown = Session::from_properties(
            [("bootstrap.servers", "h:1"), ("lingr.ms", "5")],
            Timestamp::ZERO,
            0,
        );
        assert!(matches!(
            unknown,
            Err(SessionConfigError::UnknownKey {
                suggestion: Some("linger.ms"),
                ..
            })
        ));
        let ok = Session::from_properties([("bootstrap.servers", "h:1")], Timestamp::ZERO, 0);
        assert!(ok.is_ok_and(|s| s.connection_count() == 0 && !s.is_finished()));
    }

    #[test]
    fn oldest_blocked_send_names_the_backlog_front_until_it_times_out() {
        let mut s = session(&[
            ("buffer.memory", "4096"),
            ("batch.size", "1024"),
            ("max.block.ms", "100"),
        ]);
        let now = Timestamp::ZERO;
        let record = || ProducerRecord::new("t", 0, vec![b'x'; 500]);
        let mut first_blocked = None;
        for _ in 0..20 {
            let id = s.send(record(), now);
            if s.oldest_blocked_send().is_some() {
                first_blocked = Some(id);
                break;
            }
        }
        let first_blocked = first_blocked.expect("buffer.memory fills without a broker");
        assert_eq!(s.oldest_blocked_send(), Some(first_blocked));
        let later = s.send(record(), now);
        assert_eq!(
            s.oldest_blocked_send(),
            Some(first_blocked),
            "a later send waits behind the oldest"
        );
        s.assert_invariants();
        let at = now + Duration::from_millis(100);
        while s.poll_timeout().is_some_and(|t| t <= at) {
            let t = s.poll_timeout().unwrap();
            s.handle_timeout(t);
        }
        assert_eq!(s.oldest_blocked_send(), None);
        let refused: Vec<SendId> = std::iter::from_fn(|| s.poll_completion())
            .filter_map(|c| match c {
                // Without a broker the front waits for its topic's metadata (Java's
                // `waitOnMetadata`), in the same backlog as a send waiting for room.
                Completion::Record {
                    id,
                    outcome:
                        Err(
                            ProduceError::Send(SendError::BufferFull { .. })
                            | ProduceError::Topic { .. },
                        ),
                } => Some(id),
                _ => None,
            })
            .collect();
        assert_eq!(refused, vec![first_blocked, later]);
        s.assert_invariants();
    }
}
