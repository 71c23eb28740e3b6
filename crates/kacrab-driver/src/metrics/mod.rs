//! Kafka's producer metrics, computed in the session with time as an input.
//!
//! The core counts and reports one [`MetricSample`] per event Kafka's `Sender` records
//! (see `kacrab_idempotence::metrics`); the session adds what only it sees (bytes,
//! requests and responses of every kind, connections, blocked sends, the time the
//! application's calls take) and keeps Kafka's windowed statistics over both
//! (the `stat` module: `SampledStat`, `Rate`, `Avg`, `Max`, `Meter`, with
//! `metrics.sample.window.ms` and `metrics.num.samples`). Where each metric is recorded
//! follows Kafka: `Sender.SenderMetrics` and `SenderMetricsRegistry` (record, batch,
//! request latency, throttle, split, in-flight and metadata-age metrics),
//! `Selector.SelectorMetrics` (bytes, requests, responses and connections, globally
//! and per node), `BufferPool` (buffer metrics) and `KafkaProducerMetrics`
//! (`txn-*-time-ns-total`, `flush-time-ns-total`, `metadata-wait-time-ns-total`: the
//! time from the call to its completion).

#[cfg(feature = "metrics")]
mod publish;
mod publish_timer;
mod snapshot;
pub(crate) mod stat;

use std::collections::BTreeMap;
use std::time::Duration;

use kacrab_idempotence::{MetricSample, Producer, Timestamp};

use crate::app::TxnCall;
use crate::completion::{Completion, OpId, ProduceError};
use crate::output::Output;
use stat::{AvgMax, Meter, Window};

#[cfg(feature = "metrics")]
pub use publish::publish;
pub(crate) use publish_timer::PublishTimer;
pub use snapshot::{
    Metric, MetricsSnapshot, NodeMetrics, ProducerMetrics, TopicMetrics, NODE_GROUP,
    PRODUCER_GROUP, TOPIC_GROUP,
};

/// The node a connection counts under before its broker is known (a bootstrap address).
const BOOTSTRAP_NODE: i32 = -1;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn now_ms(now: Timestamp) -> u64 {
    now.as_millis()
}

/// What a timed application call was, for its `-time-ns-total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimedCall {
    Init,
    Begin,
    SendOffsets,
    Commit,
    Abort,
    Flush,
    MetadataWait,
}

impl TimedCall {
    pub(crate) fn of(call: &TxnCall) -> Self {
        match call {
            TxnCall::Init => Self::Init,
            TxnCall::Begin => Self::Begin,
            TxnCall::SendOffsets(..) => Self::SendOffsets,
            TxnCall::Commit => Self::Commit,
            TxnCall::Abort => Self::Abort,
        }
    }
}

#[derive(Clone, Debug)]
struct TopicSensors {
    send: Meter,
    bytes: Meter,
    compression: stat::Avg,
    retry: Meter,
    error: Meter,
}

impl TopicSensors {
    fn new() -> Self {
        Self {
            send: Meter::of_sum(),
            bytes: Meter::of_sum(),
            compression: stat::Avg::new(),
            retry: Meter::of_sum(),
            error: Meter::of_sum(),
        }
    }
}

#[derive(Clone, Debug)]
struct NodeSensors {
    outgoing: Meter,
    requests: Meter,
    request_size: AvgMax,
    incoming: Meter,
    responses: Meter,
    latency: AvgMax,
}

impl NodeSensors {
    fn new() -> Self {
        Self {
            outgoing: Meter::of_sum(),
            requests: Meter::of_count(),
            request_size: AvgMax::new(),
            incoming: Meter::of_sum(),
            responses: Meter::of_count(),
            latency: AvgMax::new(),
        }
    }
}

/// The session's sensors. Recording never influences the producer.
#[derive(Clone, Debug)]
pub(crate) struct SessionMetrics {
    window: Window,
    client_id: String,
    record_send: Meter,
    records_per_request: stat::Avg,
    record_error: Meter,
    record_retry: Meter,
    record_size: AvgMax,
    queue_time: AvgMax,
    latency: AvgMax,
    throttle: AvgMax,
    batch_size: AvgMax,
    compression: stat::Avg,
    split: Meter,
    requests: Meter,
    request_size: AvgMax,
    responses: Meter,
    outgoing: Meter,
    incoming: Meter,
    created: Meter,
    closed: Meter,
    reauthenticated: Meter,
    exhausted: Meter,
    topics: BTreeMap<String, TopicSensors>,
    nodes: BTreeMap<i32, NodeSensors>,
    /// When metadata was last applied (the session's start before that).
    metadata_at: Timestamp,
    /// The sends waiting after the last input, and when it ended: the counts only
    /// change during inputs, so the wait between inputs is exact.
    blocked: (Blocked, Timestamp),
    bufferpool_wait_ns: f64,
    /// Timed calls not yet completed, with when they began.
    calls: BTreeMap<OpId, (TimedCall, Timestamp)>,
    call_ns: BTreeMap<&'static str, f64>,
    /// The last input's time: completions are produced by inputs, so they are timed by
    /// the input that produced them.
    last_now: Timestamp,
}

impl SessionMetrics {
    pub(crate) fn new(
        window: Duration,
        samples: u32,
        client_id: Option<&str>,
        now: Timestamp,
    ) -> Self {
        Self {
            window: Window::new(window, samples),
            client_id: client_id.unwrap_or_default().to_owned(),
            record_send: Meter::of_sum(),
            records_per_request: stat::Avg::new(),
            record_error: Meter::of_sum(),
            record_retry: Meter::of_sum(),
            record_size: AvgMax::new(),
            queue_time: AvgMax::new(),
            latency: AvgMax::new(),
            throttle: AvgMax::new(),
            batch_size: AvgMax::new(),
            compression: stat::Avg::new(),
            split: Meter::of_count(),
            requests: Meter::of_count(),
            request_size: AvgMax::new(),
            responses: Meter::of_count(),
            outgoing: Meter::of_sum(),
            incoming: Meter::of_sum(),
            created: Meter::of_count(),
            closed: Meter::of_count(),
            reauthenticated: Meter::of_sum(),
            exhausted: Meter::of_count(),
            topics: BTreeMap::new(),
            nodes: BTreeMap::new(),
            metadata_at: now,
            blocked: (Blocked::default(), now),
            bufferpool_wait_ns: 0.0,
            calls: BTreeMap::new(),
            call_ns: BTreeMap::new(),
            last_now: now,
        }
    }

    fn topic(&mut self, topic: &str) -> &mut TopicSensors {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_owned(), TopicSensors::new());
        }
        self.topics.get_mut(topic).expect("inserted above")
    }

    fn node(&mut self, node: Option<i32>) -> &mut NodeSensors {
        self.nodes
            .entry(node.unwrap_or(BOOTSTRAP_NODE))
            .or_insert_with(NodeSensors::new)
    }

    /// After every input: the core's samples, the blocked sends' wait.
    pub(crate) fn after_input(&mut self, core: &mut Producer, blocked: Blocked, now: Timestamp) {
        self.last_now = now;
        let (was, since) = self.blocked;
        let waited = now.saturating_duration_since(since).as_nanos() as f64;
        self.bufferpool_wait_ns += was.memory as f64 * waited;
        *self
            .call_ns
            .entry("metadata-wait-time-ns-total")
            .or_default() += was.metadata as f64 * waited;
        self.blocked = (blocked, now);
        while let Some(sample) = core.poll_metric_sample() {
            crate::trace::sample(&sample);
            self.record(sample, now);
        }
    }

    fn record(&mut self, sample: MetricSample, now: Timestamp) {
        let w = self.window;
        let t = now_ms(now);
        match sample {
            MetricSample::BatchDrained {
                topic,
                records,
                bytes,
                records_bytes,
                uncompressed_bytes,
                max_record_size,
                queue_time,
                ..
            } => {
                // Kafka's `ProducerBatch.compressionRatio`: the records section as
                // written over the same records uncompressed (1.0 without a codec).
                let ratio = if uncompressed_bytes == 0 {
                    1.0
                } else {
                    records_bytes as f64 / uncompressed_bytes as f64
                };
                self.batch_size.record(w, bytes as f64, t);
                self.queue_time.record(w, ms(queue_time), t);
                self.compression.record(w, ratio, t);
                self.record_size.record(w, max_record_size as f64, t);
                let s = self.topic(topic.as_str());
                s.send.record(w, f64::from(records), t);
                s.bytes.record(w, bytes as f64, t);
                s.compression.record(w, ratio, t);
            }
            MetricSample::ProduceRequest { records, .. } => {
                self.record_send.record(w, f64::from(records), t);
                self.records_per_request.record(w, f64::from(records), t);
            }
            MetricSample::Retried { topic, records, .. } => {
                self.record_retry.record(w, f64::from(records), t);
                self.topic(topic.as_str())
                    .retry
                    .record(w, f64::from(records), t);
            }
            MetricSample::Failed { topic, records, .. } => {
                self.record_error.record(w, f64::from(records), t);
                self.topic(topic.as_str())
                    .error
                    .record(w, f64::from(records), t);
            }
            // `produce-throttle-time` is recorded for every response (`responses`),
            // Produce answers included, as Kafka's `NetworkClient` records it.
            MetricSample::BatchSplit => self.split.record(w, 1.0, t),
            MetricSample::MetadataUpdated => self.metadata_at = now,
            _ => {}
        }
    }

    /// An output on its way to the driver (`node` is the connection's broker).
    pub(crate) fn output(&mut self, out: &Output, node: Option<i32>, now: Timestamp) {
        let w = self.window;
        let t = now_ms(now);
        if let Output::Close { .. } = out {
            self.closed.record(w, 1.0, t);
        }
        if let Output::Transmit { frame, .. } = out {
            let size = frame.len() as f64;
            self.requests.record(w, 1.0, t);
            self.request_size.record(w, size, t);
            self.outgoing.record(w, size, t);
            let n = self.node(node);
            n.requests.record(w, 1.0, t);
            n.request_size.record(w, size, t);
            n.outgoing.record(w, size, t);
        }
    }

    /// A connection was established.
    pub(crate) fn connected(&mut self, now: Timestamp) {
        self.created.record(self.window, 1.0, now_ms(now));
    }

    /// A connection the session knew closed (the session closed it, or the driver
    /// reported it gone).
    pub(crate) fn closed(&mut self, now: Timestamp) {
        self.closed.record(self.window, 1.0, now_ms(now));
    }

    /// Bytes read from a connection to `node`.
    pub(crate) fn incoming(&mut self, node: Option<i32>, bytes: usize, now: Timestamp) {
        let (w, t) = (self.window, now_ms(now));
        self.incoming.record(w, bytes as f64, t);
        self.node(node).incoming.record(w, bytes as f64, t);
    }

    /// A response decoded from a connection to `node`, with its `throttle_time_ms`
    /// (`None` for the SASL exchange, which Kafka's authenticator reads outside the
    /// `NetworkClient`).
    pub(crate) fn response(&mut self, node: Option<i32>, throttle_ms: Option<i32>, now: Timestamp) {
        let (w, t) = (self.window, now_ms(now));
        self.responses.record(w, 1.0, t);
        self.node(node).responses.record(w, 1.0, t);
        // Kafka hands the `produce-throttle-time` sensor to the producer's
        // `NetworkClient` (`KafkaProducer` passes `Sender.throttleTimeSensor`), whose
        // `handleCompletedReceives` records `throttleTimeMs()` of every response it
        // reads: 0 for an unthrottled one, whatever its API.
        if let Some(throttle) = throttle_ms {
            self.throttle.record(w, f64::from(throttle.max(0)), t);
        }
    }

    /// A produce answer came `latency` after its request was written to `node`.
    pub(crate) fn latency(&mut self, node: Option<i32>, latency: Duration, now: Timestamp) {
        let (w, t) = (self.window, now_ms(now));
        self.latency.record(w, ms(latency), t);
        self.node(node).latency.record(w, ms(latency), t);
    }

    /// A timed call began.
    pub(crate) fn call(&mut self, op: OpId, call: TimedCall, now: Timestamp) {
        self.calls.entry(op).or_insert((call, now));
    }

    /// A completion on its way to the application.
    pub(crate) fn completion(&mut self, done: &Completion) {
        let now = self.last_now;
        let op = match done {
            Completion::Transaction { op, .. }
            | Completion::Flushed { op }
            | Completion::PartitionCount { op, .. } => *op,
            Completion::Record {
                outcome: Err(ProduceError::Send(kacrab_idempotence::SendError::BufferFull { .. })),
                ..
            } => {
                self.exhausted.record(self.window, 1.0, now_ms(now));
                return;
            }
            _ => return,
        };
        let Some((call, began)) = self.calls.remove(&op) else {
            return;
        };
        let name = match call {
            TimedCall::Init => "txn-init-time-ns-total",
            TimedCall::Begin => "txn-begin-time-ns-total",
            TimedCall::SendOffsets => "txn-send-offsets-time-ns-total",
            TimedCall::Commit => "txn-commit-time-ns-total",
            TimedCall::Abort => "txn-abort-time-ns-total",
            TimedCall::Flush => "flush-time-ns-total",
            TimedCall::MetadataWait => "metadata-wait-time-ns-total",
        };
        *self.call_ns.entry(name).or_default() +=
            now.saturating_duration_since(began).as_nanos() as f64;
    }

    /// Every metric at `now`. `gauges` are read from the session's parts.
    pub(crate) fn snapshot(
        &mut self,
        core: &Producer,
        gauges: Gauges,
        now: Timestamp,
    ) -> MetricsSnapshot {
        let w = self.window;
        let t = now_ms(now);
        let stats = core.stats();
        let buffer = core.config().buffer_memory() as f64;
        let (record_size_avg, record_size_max) = self.record_size.measure(w, t);
        let (queue_avg, queue_max) = self.queue_time.measure(w, t);
        let (latency_avg, latency_max) = self.latency.measure(w, t);
        let (size_avg, size_max) = self.request_size.measure(w, t);
        let (batch_avg, batch_max) = self.batch_size.measure(w, t);
        let (throttle_avg, throttle_max) = self.throttle.measure(w, t);
        let since = now.saturating_duration_since(self.blocked.1).as_nanos() as f64;
        let waiting_now = self.blocked.0.memory as f64 * since;
        let metadata_waiting_now = self.blocked.0.metadata as f64 * since;
        let call = |name: &str| self.call_ns.get(name).copied().unwrap_or(0.0);
        let producer = ProducerMetrics {
            record_send_rate: self.record_send.rate(w, t),
            record_send_total: self.record_send.total(),
            record_error_rate: self.record_error.rate(w, t),
            record_error_total: self.record_error.total(),
            record_retry_rate: self.record_retry.rate(w, t),
            record_retry_total: self.record_retry.total(),
            record_size_avg,
            record_size_max,
            record_queue_time_avg: queue_avg,
            record_queue_time_max: queue_max,
            request_latency_avg: latency_avg,
            request_latency_max: latency_max,
            request_rate: self.requests.rate(w, t),
            request_total: self.requests.total(),
            request_size_avg: size_avg,
            request_size_max: size_max,
            response_rate: self.responses.rate(w, t),
            response_total: self.responses.total(),
            requests_in_flight: gauges.in_flight as f64,
            batch_size_avg: batch_avg,
            batch_size_max: batch_max,
            records_per_request_avg: self.records_per_request.measure(w, t),
            compression_rate_avg: self.compression.measure(w, t),
            batch_split_rate: self.split.rate(w, t),
            batch_split_total: self.split.total(),
            buffer_total_bytes: buffer,
            buffer_available_bytes: (buffer - core.buffered_bytes() as f64).max(0.0),
            bufferpool_wait_time_ns_total: self.bufferpool_wait_ns + waiting_now,
            buffer_exhausted_rate: self.exhausted.rate(w, t),
            buffer_exhausted_total: self.exhausted.total(),
            produce_throttle_time_avg: throttle_avg,
            produce_throttle_time_max: throttle_max,
            outgoing_byte_rate: self.outgoing.rate(w, t),
            outgoing_byte_total: self.outgoing.total(),
            incoming_byte_rate: self.incoming.rate(w, t),
            incoming_byte_total: self.incoming.total(),
            connection_count: gauges.connections as f64,
            connection_creation_rate: self.created.rate(w, t),
            connection_creation_total: self.created.total(),
            connection_close_rate: self.closed.rate(w, t),
            connection_close_total: self.closed.total(),
            successful_reauthentication_rate: self.reauthenticated.rate(w, t),
            successful_reauthentication_total: self.reauthenticated.total(),
            metadata_age: now
                .saturating_duration_since(self.metadata_at)
                .as_secs_f64(),
            txn_init_time_ns_total: call("txn-init-time-ns-total"),
            txn_begin_time_ns_total: call("txn-begin-time-ns-total"),
            txn_send_offsets_time_ns_total: call("txn-send-offsets-time-ns-total"),
            txn_commit_time_ns_total: call("txn-commit-time-ns-total"),
            txn_abort_time_ns_total: call("txn-abort-time-ns-total"),
            flush_time_ns_total: call("flush-time-ns-total"),
            metadata_wait_time_ns_total: call("metadata-wait-time-ns-total") + metadata_waiting_now,
            epoch_bump_total: stats.epoch_bumps as f64,
            producer_id_change_total: stats.producer_id_changes as f64,
            epoch_change_total: stats.epoch_changes as f64,
            possibly_written_failure_total: stats.possibly_written_failures as f64,
            unresolved_partitions: core.unresolved_partitions() as f64,
            request_timeout_total: stats.request_timeouts as f64,
            expired_batch_total: stats.expired_batches as f64,
        };
        let topics = self
            .topics
            .iter_mut()
            .map(|(name, s)| {
                let m = TopicMetrics {
                    record_send_rate: s.send.rate(w, t),
                    record_send_total: s.send.total(),
                    byte_rate: s.bytes.rate(w, t),
                    byte_total: s.bytes.total(),
                    compression_rate: s.compression.measure(w, t),
                    record_retry_rate: s.retry.rate(w, t),
                    record_retry_total: s.retry.total(),
                    record_error_rate: s.error.rate(w, t),
                    record_error_total: s.error.total(),
                };
                (name.clone(), m)
            })
            .collect();
        let nodes = self
            .nodes
            .iter_mut()
            .map(|(&node, s)| {
                let (size_avg, size_max) = s.request_size.measure(w, t);
                let (latency_avg, latency_max) = s.latency.measure(w, t);
                let m = NodeMetrics {
                    outgoing_byte_rate: s.outgoing.rate(w, t),
                    outgoing_byte_total: s.outgoing.total(),
                    request_rate: s.requests.rate(w, t),
                    request_total: s.requests.total(),
                    request_size_avg: size_avg,
                    request_size_max: size_max,
                    incoming_byte_rate: s.incoming.rate(w, t),
                    incoming_byte_total: s.incoming.total(),
                    response_rate: s.responses.rate(w, t),
                    response_total: s.responses.total(),
                    request_latency_avg: latency_avg,
                    request_latency_max: latency_max,
                };
                (node, m)
            })
            .collect();
        MetricsSnapshot {
            client_id: self.client_id.clone(),
            producer,
            topics,
            nodes,
        }
    }
}

/// The sends in the session's backlog (`max.block.ms`), by what they wait for. Kafka's
/// `bufferpool-wait-time-ns-total` counts only the time `BufferPool.allocate` blocked
/// for memory; a send waiting for its topic's metadata waits in
/// `KafkaProducer.waitOnMetadata`, which records `metadata-wait-time-ns-total`. The
/// backlog runs in order, so every send in it waits for what its front waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Blocked {
    /// Sends waiting for room in `buffer.memory`.
    pub(crate) memory: usize,
    /// Sends waiting for metadata.
    pub(crate) metadata: usize,
}

impl Blocked {
    /// `sends` queued behind a front that waits for metadata (`front_waits_for_metadata`)
    /// or for memory.
    pub(crate) fn behind(sends: usize, front_waits_for_metadata: bool) -> Self {
        if front_waits_for_metadata {
            Self {
                memory: 0,
                metadata: sends,
            }
        } else {
            Self {
                memory: sends,
                metadata: 0,
            }
        }
    }
}

/// What the snapshot reads from the session's parts at the instant it is taken.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gauges {
    /// Requests written and not answered, over every connection.
    pub(crate) in_flight: usize,
    /// Open connections.
    pub(crate) connections: usize,
}

/// The network's observations for the metrics, drained by the session after each
/// input: when each Produce was written, and which node each decoded response came
/// from. Kafka's `request-latency` runs from the write (Java creates the `ClientRequest`
/// only for a ready connection, and sends it at once) to the answer, so a request that
/// waited for its connection's setup does not count that wait.
#[derive(Clone, Debug, Default)]
pub(crate) struct NetTally {
    /// Produce requests written and not answered: the core's request id, when.
    written: BTreeMap<u64, Timestamp>,
    /// Decoded responses: node, latency (Produce only), `throttle_time_ms`.
    responses: Vec<(Option<i32>, Option<Duration>, Option<i32>)>,
    /// KIP-368 re-authentications completed since the last drain.
    reauthenticated: u32,
}

/// A response's `throttle_time_ms` as Kafka's `AbstractResponse.throttleTimeMs()` reads
/// it, or `None` for the SASL exchange (read by Kafka's authenticator, outside the
/// `NetworkClient` that records `produce-throttle-time`).
pub(crate) fn throttle_of(response: &kacrab_wire::Response) -> Option<i32> {
    use kacrab_wire::Response as R;
    match response {
        R::ApiVersions(r) => Some(r.throttle_time_ms),
        R::Metadata(r) => Some(r.throttle_time_ms),
        R::InitProducerId(r) => Some(r.throttle_time_ms),
        R::Produce(r) => Some(r.throttle_time_ms),
        R::FindCoordinator(r) => Some(r.throttle_time_ms),
        R::AddPartitionsToTxn(r) => Some(r.throttle_time_ms),
        R::AddOffsetsToTxn(r) => Some(r.throttle_time_ms),
        R::TxnOffsetCommit(r) => Some(r.throttle_time_ms),
        R::EndTxn(r) => Some(r.throttle_time_ms),
        R::GetTelemetrySubscriptions(r) => Some(r.throttle_time_ms),
        R::PushTelemetry(r) => Some(r.throttle_time_ms),
        R::Sasl(_) => None,
    }
}

impl NetTally {
    /// A core request was written; `produce` is its id if it is a Produce.
    pub(crate) fn written(&mut self, produce: Option<u64>, now: Timestamp) {
        if let Some(tag) = produce {
            self.written.insert(tag, now);
        }
    }

    /// A response to the request tagged `tag` was decoded on a connection to `node`
    /// (`throttle_ms`: see [`throttle_of`]).
    pub(crate) fn response(
        &mut self,
        node: Option<i32>,
        tag: u64,
        throttle_ms: Option<i32>,
        now: Timestamp,
    ) {
        let latency = self
            .written
            .remove(&tag)
            .map(|at| now.saturating_duration_since(at));
        self.responses.push((node, latency, throttle_ms));
    }

    /// A connection finished a KIP-368 re-authentication.
    pub(crate) fn reauthenticated(&mut self) {
        self.reauthenticated += 1;
    }

    /// Hands every tallied response to the sensors, and forgets the writes of requests
    /// the core no longer waits for (their connection failed, or they timed out).
    pub(crate) fn drain_into(
        &mut self,
        metrics: &mut SessionMetrics,
        core: &Producer,
        now: Timestamp,
    ) {
        for (node, latency, throttle_ms) in self.responses.drain(..) {
            metrics.response(node, throttle_ms, now);
            if let Some(latency) = latency {
                metrics.latency(node, latency, now);
            }
        }
        if self.reauthenticated > 0 {
            let count = f64::from(core::mem::take(&mut self.reauthenticated));
            metrics
                .reauthenticated
                .record(metrics.window, count, now_ms(now));
        }
        self.written
            .retain(|&tag, _| core.is_outstanding(kacrab_idempotence::RequestId(tag)));
    }
}
