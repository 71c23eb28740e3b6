//! The session's logs, through the `tracing` facade (feature `tracing`).
//!
//! Every function here is the one place an observation becomes a `tracing` event, with
//! structured fields and the target `kacrab`. Without the feature each body is empty
//! and the crate has no `tracing` dependency at all: the calls cost nothing. The core
//! has no logging of its own: the session observes what it reports (events, metric
//! samples, its identity and transactional state after each input) and logs that.
//!
//! Levels: `error` for what ends the producer (a fatal error, a connection that cannot
//! be secured); `warn` for records or transactional calls that failed; `info` for state
//! changes an operator follows (connections opened, ready and closed with their
//! [`CloseReason`], leader moves, producer id and epoch changes, transaction states,
//! retries with their cause); `debug` for metadata and negotiation detail; `trace` for
//! per-request and per-record detail. Nothing per record is logged above `trace`.
//!
//! Spans (target `kacrab`, level `info`) mark the Kafka work that has a lifetime: one
//! `connection` span per broker connection (fields `conn`, `addr`, `node`), from its
//! `Connect` output to its close, entered while the session handles that connection's
//! inputs, so that what its bytes cause (negotiation, TLS, SASL, retries, metadata) is
//! logged inside it; and one `transaction` span per transaction (`transactional_id`,
//! `producer_id`, `epoch`), from `begin_transaction` to the end of its commit or abort,
//! holding the transaction's state changes. The session keeps them in the [`Observer`].

#![cfg_attr(not(feature = "tracing"), allow(unused_variables))]

use kacrab_idempotence::{Event, KafkaError, MetricSample, Producer};

use crate::completion::Completion;
use crate::connection_error::ConnectionError;
use crate::network::Streak;
use crate::output::{CloseReason, ConnId, Output};
use crate::telemetry::Stopped;
use crate::topics::TopicState;

/// One `tracing` event with target `kacrab`; nothing without the feature.
#[cfg(feature = "tracing")]
macro_rules! event {
    ($level:ident, $($rest:tt)*) => {
        tracing::$level!(target: "kacrab", $($rest)*)
    };
}
#[cfg(not(feature = "tracing"))]
macro_rules! event {
    ($level:ident, $($rest:tt)*) => {
        ()
    };
}

/// Why a connection went, as the log names it: the session closed it (with its
/// [`CloseReason`]), or the driver reported it gone.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ConnectionEnd<'a> {
    /// The session asked the driver to close it.
    Closed(&'a CloseReason),
    /// The driver reported it failed or could not be opened
    /// ([`Session::handle_disconnected`](crate::Session::handle_disconnected)), with
    /// the cause when it gave one.
    Disconnected(Option<&'a ConnectionError>),
}

impl core::fmt::Display for ConnectionEnd<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Closed(reason) => write!(f, "{reason}"),
            Self::Disconnected(None) => f.write_str("the driver reported it disconnected"),
            Self::Disconnected(Some(cause)) => {
                write!(f, "the driver reported it disconnected: {cause}")
            }
        }
    }
}

/// An output on its way to the driver (`node` is the connection's broker, if known):
/// see [`Observer::output`] for the connection's opening and close.
fn output(out: &Output, node: Option<i32>) {
    match out {
        Output::Connect { conn, addr } => {
            event!(info, conn = conn.0, addr = %addr, node = ?node, "connection opening");
        }
        Output::Close { conn, reason } => connection_end(*conn, ConnectionEnd::Closed(reason)),
        Output::Transmit { conn, frame, .. } => {
            event!(trace, conn = conn.0, node = ?node, bytes = frame.len(), "request written");
        }
        Output::Release { ticket } => {
            event!(debug, ticket = ?ticket, "produce request released unsent");
        }
    }
}

/// The connection went (see [`ConnectionEnd`]). A driver-reported failure with its
/// cause is at DEBUG: [`connection_failed`] already logged the cause at its level.
fn connection_end(conn: ConnId, end: ConnectionEnd<'_>) {
    if let ConnectionEnd::Disconnected(Some(_)) = end {
        event!(debug, conn = conn.0, reason = %end, "connection closed");
    } else {
        event!(info, conn = conn.0, reason = %end, "connection closed");
    }
}

/// A connection to `addr` (broker `node`, or a bootstrap address when `None`) failed
/// with `error`: at WARN when its address was not failing yet ([`Streak::First`]: its
/// first failure, or the first since a connection to it was last ready), at DEBUG for
/// each repeat, so a broker that is down warns once, not once per reconnect.
pub(crate) fn connection_failed(
    conn: ConnId,
    node: Option<i32>,
    addr: &str,
    error: &ConnectionError,
    streak: Streak,
) {
    let broker = match node {
        Some(n) => format!("node {n}"),
        None => "bootstrap".to_owned(),
    };
    let kind = error.kind();
    match streak {
        Streak::First => {
            event!(warn, conn = conn.0, broker = %broker, addr = %addr, kind = ?kind, error = %error, "connection to broker failed");
        }
        Streak::Repeat => {
            event!(debug, conn = conn.0, broker = %broker, addr = %addr, kind = ?kind, error = %error, "connection to broker failed again");
        }
    }
}

/// KIP-714 client telemetry stopped for good before the producer closed, `why`, after
/// its last request went to `broker` (node, `None` for a bootstrap address, and
/// address): at WARN, once, since no metric reaches the cluster for the rest of the
/// session.
pub(crate) fn telemetry_stopped(broker: Option<(Option<i32>, &str)>, why: Stopped) {
    let node = match broker {
        Some((Some(n), _)) => format!("node {n}"),
        Some((None, _)) => "bootstrap".to_owned(),
        None => "none".to_owned(),
    };
    let addr = broker.map_or("", |(_, a)| a);
    match why {
        Stopped::Refused(code) => {
            event!(warn, broker = %node, addr = %addr, error_code = code, cause = %why, "client telemetry stopped");
        }
        Stopped::NoClientInstanceId | Stopped::Unanswered(_) => {
            event!(warn, broker = %node, addr = %addr, cause = %why, "client telemetry stopped");
        }
    }
}

/// A configuration key no Kafka client defines, ignored (Java's `AbstractConfig`
/// warns "supplied but isn't a known config").
pub(crate) fn ignored_key(key: &str) {
    event!(warn, key = %key, "configuration key supplied but isn't a known config; ignored");
}

/// The driver opened the TCP connection.
pub(crate) fn connected(conn: ConnId, node: Option<i32>) {
    event!(debug, conn = conn.0, node = ?node, "connection established");
}

/// The TLS handshake on `conn` finished.
pub(crate) fn tls_established(conn: ConnId) {
    event!(info, conn = conn.0, "TLS established");
}

/// SASL authentication on `conn` succeeded with `mechanism` (the hook for the SASL
/// phase: call it where the phase completes). Never pass a credential here.
#[allow(dead_code)] // called by the SASL phase once it lands
pub(crate) fn connection_authenticated(conn: ConnId, mechanism: &str) {
    event!(info, conn = conn.0, mechanism = %mechanism, "SASL authenticated");
}

/// ApiVersions succeeded: `conn` is ready, speaking `produce_version` of Produce.
pub(crate) fn connection_ready(conn: ConnId, versions: &kacrab_wire::Versions) {
    event!(
        info,
        conn = conn.0,
        produce = ?versions.get(kacrab_wire::ApiKey::Produce).ok(),
        metadata = ?versions.get(kacrab_wire::ApiKey::Metadata).ok(),
        transaction_v2 = versions.transaction_v2(),
        "connection ready (versions negotiated)"
    );
}

/// A broker answered ApiVersions with UNSUPPORTED_VERSION: it is asked again at
/// `version`.
pub(crate) fn negotiation_retry(conn: ConnId, version: i16) {
    event!(
        debug,
        conn = conn.0,
        version,
        "ApiVersions retried at the broker's version"
    );
}

/// One of the core's metric samples: the retries (with their cause) and splits are
/// logged, the rest at `trace`.
pub(crate) fn sample(sample: &MetricSample) {
    match sample {
        MetricSample::Retried {
            topic,
            partition,
            records,
            cause,
            ..
        } => {
            event!(
                info,
                topic = %topic.as_str(),
                partition,
                records,
                error = ?cause,
                error_code = cause.code(),
                "batch retried"
            );
        }
        MetricSample::BatchSplit => event!(info, "batch split after MESSAGE_TOO_LARGE"),
        MetricSample::MetadataUpdated => event!(debug, "metadata applied"),
        other => event!(trace, sample = ?other, "metric sample"),
    }
}

/// A core event on its way to the application half: failures are logged once per
/// batch (the records' own completions only at `trace`).
pub(crate) fn core_event(event: &Event) {
    match event {
        Event::Failed {
            partition,
            records,
            error,
            possibly_written,
        } => {
            event!(
                warn,
                topic = %partition.topic.as_str(),
                partition = partition.partition,
                records = records.len(),
                possibly_written,
                error = %error,
                "records failed"
            );
        }
        Event::Fatal { error } => {
            event!(error, error = ?error, error_code = error.code(), "producer failed fatally");
        }
        Event::TransactionCompleted {
            op,
            result: Err(error),
        } => {
            event!(warn, op = ?op, error = %error, "transactional operation failed");
        }
        Event::TransactionCompleted { op, result: Ok(()) } => {
            event!(debug, op = ?op, "transactional operation completed");
        }
        Event::Delivered {
            partition, records, ..
        } => {
            event!(
                trace,
                topic = %partition.topic.as_str(),
                partition = partition.partition,
                records = records.len(),
                "records delivered"
            );
        }
        // The identity is followed by the `Observer`, which knows the previous one.
        _ => {}
    }
}

/// A completion on its way to the application.
pub(crate) fn completion(done: &Completion) {
    match done {
        Completion::Record {
            id,
            outcome: Err(e),
        } => {
            event!(trace, send = ?id, error = %e, "record failed");
        }
        Completion::ConnectionFailed { error } => {
            event!(error, error = %error, "connection could not be secured; the producer stops");
        }
        Completion::PartitionCount { op, count: None } => {
            event!(warn, op = ?op, "partition count lookup failed (max.block.ms)");
        }
        _ => {}
    }
}

/// A Metadata answer named `topic` with a retriable `error` (UNKNOWN_TOPIC_OR_PARTITION:
/// it does not exist, or not yet; LEADER_NOT_AVAILABLE: it is being created), other
/// than the one the last answer naming it carried: sends to it wait and the session
/// keeps asking. A warning, as Java's `NetworkClient` logs "Error while fetching
/// metadata" at WARN, but once per topic and change, not once per lookup.
pub(crate) fn topic_missing(topic: &str, error: KafkaError) {
    #[cfg(feature = "tracing")]
    event!(warn, topic = %topic, error = ?error, error_code = error.code(), "topic metadata unavailable; sends to it wait");
}

/// An application's interceptor (the `index`th installed) failed in `stage` for a
/// record of `topic`; the session went on without its work.
pub(crate) fn interceptor_failed(
    stage: &'static str,
    index: usize,
    topic: &str,
    error: &(dyn std::error::Error + Send + Sync),
) {
    event!(warn, stage, interceptor = index, topic = %topic, error = %error, "interceptor failed; the record goes on");
}

/// A Metadata answer changed what the session knows of `topic` (`before` and `after`;
/// `None` is unknown).
pub(crate) fn topic_changed(topic: &str, before: Option<&TopicState>, after: Option<&TopicState>) {
    #[cfg(feature = "tracing")]
    {
        use TopicState::{Known, Refused};
        match (before, after) {
            (Some(Known(a)), Some(Known(b))) => {
                if a.partitions.len() != b.partitions.len() {
                    event!(
                        info,
                        topic = %topic,
                        from = a.partitions.len(),
                        to = b.partitions.len(),
                        "partition count changed"
                    );
                }
                for (pa, pb) in a.partitions.iter().zip(&b.partitions) {
                    if pa.leader != pb.leader {
                        event!(
                            info,
                            topic = %topic,
                            partition = pb.partition,
                            from = ?pa.leader,
                            to = ?pb.leader,
                            "leader moved"
                        );
                    }
                }
            }
            (_, Some(Known(b))) => {
                event!(info, topic = %topic, partitions = b.partitions.len(), "topic metadata learned");
            }
            (_, Some(Refused(e))) => {
                event!(warn, topic = %topic, error = ?e, error_code = e.code(), "topic refused by the broker");
            }
            (Some(_), None) => {
                event!(debug, topic = %topic, "topic metadata dropped until it settles")
            }
            (None, None) => {}
        }
    }
}

/// Follows what the core reports only as state: its producer id and epoch, its
/// transactional state and the bumps it applied. After every input it compares and logs
/// the changes. Without the feature it holds nothing and does nothing.
#[derive(Debug, Default)]
pub(crate) struct Observer {
    #[cfg(feature = "tracing")]
    seen: Option<Seen>,
    /// The `connection` span of every connection from its `Connect` output until it
    /// is closed or reported gone.
    #[cfg(feature = "tracing")]
    connections: std::collections::BTreeMap<u64, tracing::Span>,
    /// The open transaction's `transaction` span: set when the core's state enters
    /// `InTransaction`, dropped when it leaves the open states (commit or abort done,
    /// or fatal).
    #[cfg(feature = "tracing")]
    transaction: Option<tracing::Span>,
}

/// While alive, the connection's span is the current one (nothing without the feature).
/// It owns its span (a clone), so the session stays free to update the observer
/// meanwhile.
#[must_use]
pub(crate) struct InConnection {
    #[cfg(feature = "tracing")]
    _entered: Option<tracing::span::EnteredSpan>,
}

/// The connection an output is for.
fn conn_of(out: &Output) -> Option<ConnId> {
    match out {
        Output::Connect { conn, .. }
        | Output::Close { conn, .. }
        | Output::Transmit { conn, .. } => Some(*conn),
        Output::Release { .. } => None,
    }
}

/// Whether `state` is inside a transaction (between begin and the end of commit/abort).
#[cfg(feature = "tracing")]
fn in_transaction(state: Option<kacrab_idempotence::TransactionState>) -> bool {
    use kacrab_idempotence::TransactionState as S;
    matches!(
        state,
        Some(
            S::InTransaction
                | S::CommittingTransaction
                | S::AbortingTransaction
                | S::AbortableError
        )
    )
}

#[cfg(feature = "tracing")]
#[derive(Debug)]
struct Seen {
    identity: kacrab_idempotence::ProducerIdAndEpoch,
    txn: Option<kacrab_idempotence::TransactionState>,
    epoch_bumps: u64,
    fatal: bool,
}

impl Observer {
    /// An output on its way to the driver (`node` is the connection's broker, if
    /// known): a `Connect` opens the connection's span, a `Close` ends it; each is
    /// logged inside it.
    pub(crate) fn output(&mut self, out: &Output, node: Option<i32>) {
        #[cfg(feature = "tracing")]
        if let Output::Connect { conn, addr } = out {
            let span = tracing::info_span!(
                target: "kacrab",
                parent: None,
                "connection",
                conn = conn.0,
                addr = %addr,
                node = tracing::field::Empty,
            );
            if let Some(node) = node {
                span.record("node", node);
            }
            self.connections.insert(conn.0, span);
        }
        let _in = self.enter(conn_of(out));
        output(out, node);
        #[cfg(feature = "tracing")]
        if let Output::Close { conn, .. } = out {
            drop(_in);
            self.connections.remove(&conn.0);
        }
    }

    /// The driver reported `conn` gone (for `cause`, if it gave one): logged inside its
    /// span, which ends.
    pub(crate) fn disconnected(&mut self, conn: ConnId, cause: Option<&ConnectionError>) {
        {
            let _in = self.enter(Some(conn));
            connection_end(conn, ConnectionEnd::Disconnected(cause));
        }
        #[cfg(feature = "tracing")]
        self.connections.remove(&conn.0);
    }

    /// Enters `conn`'s span (if it has one) until the guard drops: the session holds it
    /// while it handles that connection's input.
    pub(crate) fn enter(&self, conn: Option<ConnId>) -> InConnection {
        InConnection {
            #[cfg(feature = "tracing")]
            _entered: conn
                .and_then(|c| self.connections.get(&c.0))
                .map(|span| span.clone().entered()),
        }
    }

    /// After an input: logs what changed since the last one.
    pub(crate) fn observe(&mut self, core: &Producer) {
        #[cfg(feature = "tracing")]
        {
            let now = Seen {
                identity: core.producer_id(),
                txn: core.transaction_state(),
                epoch_bumps: core.stats().epoch_bumps,
                fatal: core.fatal_error().is_some(),
            };
            if let Some(was) = &self.seen {
                if was.identity != now.identity {
                    let bumped = now.epoch_bumps > was.epoch_bumps;
                    let new_id = was.identity.id != now.identity.id;
                    event!(
                        info,
                        producer_id = now.identity.id.0,
                        epoch = now.identity.epoch.0,
                        previous_producer_id = was.identity.id.0,
                        previous_epoch = was.identity.epoch.0,
                        epoch_bump = bumped,
                        "{}",
                        match (new_id, bumped) {
                            (true, true) => "new producer id after epoch exhaustion",
                            (true, false) => "producer id changed",
                            (false, true) => "epoch bumped",
                            (false, false) => "epoch changed",
                        }
                    );
                }
                if was.txn != now.txn {
                    if !in_transaction(was.txn) && in_transaction(now.txn) {
                        self.transaction = Some(tracing::info_span!(
                            target: "kacrab",
                            parent: None,
                            "transaction",
                            transactional_id = %core.config().transactional_id().unwrap_or_default(),
                            producer_id = now.identity.id.0,
                            epoch = now.identity.epoch.0,
                        ));
                    }
                    {
                        let _in = self.transaction.as_ref().map(tracing::Span::enter);
                        event!(info, from = ?was.txn, to = ?now.txn, "transaction state changed");
                    }
                    if !in_transaction(now.txn) {
                        self.transaction = None;
                    }
                }
                if !was.fatal && now.fatal {
                    event!(error, error = ?core.fatal_error(), "producer in a fatal state");
                }
            }
            self.seen = Some(now);
        }
    }
}
