//! The Rust side: a trace through kacrab's core, written in the Java side's format.
//!
//! Mirrors `ConformanceHarness.java` step for step: the same scripted broker (answers by
//! node, oldest request first; InitProducerId and Metadata answered at once), the same
//! clock steps, the same output lines.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use kacrab_idempotence::{
    record, DeliveryError, Event, KafkaError, Metadata, NodeId, PartitionMetadata,
    PartitionResponse, ProduceResponse, Producer, ProducerConfig, ProducerIdAndEpoch, Record,
    RecordId, Request, RequestFailure, RequestId, Timestamp, TopicPartition, TxnError, TxnOp,
};

use crate::trace::{ApiAnswers, Op, Trace, TraceConfig, STEP_MS};

/// The topic every trace writes to.
pub const TOPIC: &str = "t";

/// Kafka's name for an error (`NONE` for none).
fn kafka_name(e: KafkaError) -> &'static str {
    if e == KafkaError::None {
        "NONE"
    } else {
        e.name()
    }
}

/// Kafka's error code for a name, e.g. `NOT_LEADER_OR_FOLLOWER`.
#[must_use]
pub fn error_by_name(name: &str) -> KafkaError {
    if name == "NONE" {
        return KafkaError::None;
    }
    (-1..=130)
        .map(KafkaError::from_code)
        .find(|e| e.name() == name)
        .unwrap_or(KafkaError::UnknownServerError)
}

/// A coordinator answer of the trace, as scripted (see [`Op::Coord`]), until a
/// transactional request is outstanding for it.
#[derive(Clone, Debug)]
struct Scripted {
    error: String,
    special: Option<(i32, String)>,
    apis: ApiAnswers,
}

/// Kafka's name of the error `code` (a decimal string, as an output line writes it).
#[must_use]
pub fn error_by_name_of_code(code: &str) -> Option<&'static str> {
    let code: i16 = code.parse().ok()?;
    (code != 0).then(|| KafkaError::from_code(code).name())
}

/// The error code an outcome line names for a failed record (Java's
/// `Errors.forException(e).code()` on the callback's exception).
fn delivery_code(error: &DeliveryError) -> i16 {
    match error {
        DeliveryError::Broker { error, .. }
        | DeliveryError::InvalidRecord { error, .. }
        | DeliveryError::Fatal(error) => error.code(),
        // Java fails the records a KIP-467 answer did not name with a plain
        // `KafkaException`, which `Errors.forException` maps to UNKNOWN_SERVER_ERROR.
        DeliveryError::Timeout { .. } => KafkaError::RequestTimedOut.code(),
        DeliveryError::RecordTooLarge { .. } => KafkaError::MessageTooLarge.code(),
        _ => KafkaError::UnknownServerError.code(),
    }
}

/// One Produce request the scripted broker has not answered: its id and, per batch,
/// (partition, record count).
struct Outstanding {
    id: RequestId,
    batches: Vec<(i32, i32, String)>,
}

/// The transactional request the scripted coordinator has not answered.
struct TxnOutstanding {
    id: RequestId,
    kind: TxnKind,
    /// When it went out: the core times it out `request.timeout.ms` later.
    sent: Timestamp,
}

/// The kinds of transactional request a trace answers, with what each answer needs.
enum TxnKind {
    FindCoordinator,
    InitProducerId(ProducerIdAndEpoch),
    AddPartitions(Vec<TopicPartition>),
    EndTxn,
}

/// The name a `txn_done` line gives an operation (Java's call).
fn op_name(op: TxnOp) -> &'static str {
    match op {
        TxnOp::InitTransactions => "init",
        TxnOp::Commit => "commit",
        TxnOp::Abort => "abort",
        _ => "other",
    }
}

/// The error code a `txn_done` line names for a failed operation (Java's
/// `Errors.forException` on the result's error: a wrapped cause is UNKNOWN_SERVER_ERROR).
fn txn_error_code(error: &TxnError) -> i16 {
    match error {
        TxnError::Abortable(e) | TxnError::Fatal(e) | TxnError::Unauthorized(e) => e.code(),
        TxnError::ProducerFenced => KafkaError::ProducerFenced.code(),
        _ => KafkaError::UnknownServerError.code(),
    }
}

/// What the Rust side learned beyond the shared output: whether each failed record was
/// reported possibly written (Java has no such flag).
#[derive(Clone, Debug, Default)]
pub struct CoreExtra {
    /// Per record: `Some(possibly_written)` if it failed.
    pub failed_possibly_written: Vec<Option<bool>>,
    /// The first batch the core failed by `delivery.timeout.ms`, if any.
    pub first_expiry: Option<Expiry>,
}

/// When the core first failed a batch by `delivery.timeout.ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiry {
    /// The number of output lines written before it.
    pub line: usize,
    /// Whether a transactional request was on the wire (sent, not yet answered) then.
    pub txn_request_out: bool,
}

struct Harness {
    producer: Producer,
    now: Timestamp,
    now_ms: u64,
    tps: Vec<TopicPartition>,
    nodes: i32,
    leader: Vec<i32>,
    leader_epoch: Vec<i32>,
    log_end: Vec<i64>,
    outstanding: BTreeMap<i32, VecDeque<Outstanding>>,
    record_index: HashMap<RecordId, usize>,
    outcomes: Vec<Option<String>>,
    extra: CoreExtra,
    init_count: i64,
    step_lines: Vec<(i32, String)>,
    /// Steps so far, counted as the Java harness counts them (one per `flush_step`), so
    /// the two sides' events within one millisecond can be ordered.
    step: u64,
    out: Vec<String>,
    /// The transaction coordinator's broker (one past the partition leaders), for a
    /// transactional trace.
    coordinator: Option<i32>,
    /// The transactional request on the wire, if any (one at a time).
    txn_out: Option<TxnOutstanding>,
    /// `request.timeout.ms`, for transactional requests the core times out itself.
    request_timeout: Duration,
    /// Coordinator answers scripted while no transactional request was outstanding: each
    /// answers the next transactional request as it is sent, oldest first (as the Java
    /// side: when a side sends a request does not decide which answer it gets).
    coord_queue: VecDeque<Scripted>,
    /// Operations called and not completed yet.
    pending_ops: Vec<TxnOp>,
}

fn config(c: &TraceConfig) -> ProducerConfig {
    let mut b = ProducerConfig::builder();
    let pairs = [
        ("enable.idempotence", "true".to_string()),
        ("acks", "all".to_string()),
        ("batch.size", c.batch_size.to_string()),
        ("linger.ms", c.linger_ms.to_string()),
        (
            "max.in.flight.requests.per.connection",
            c.max_in_flight.to_string(),
        ),
        ("request.timeout.ms", c.request_timeout_ms.to_string()),
        ("delivery.timeout.ms", c.delivery_timeout_ms.to_string()),
        ("retry.backoff.ms", c.retry_backoff_ms.to_string()),
        ("retry.backoff.max.ms", c.retry_backoff_ms.to_string()),
    ];
    for (k, v) in pairs {
        b.set(k, &v).expect("the generator writes valid keys");
    }
    if c.transactional {
        b.set("transactional.id", "txn").expect("a valid key");
        b.set("transaction.timeout.ms", "60000")
            .expect("a valid key");
    }
    b.build()
        .expect("the generator writes a valid configuration")
}

impl Harness {
    fn new(c: &TraceConfig) -> Self {
        let now = Timestamp::from_millis(0);
        let partitions = usize::try_from(c.partitions).unwrap_or(0);
        Self {
            producer: Producer::new(config(c), now),
            now,
            now_ms: 0,
            tps: (0..c.partitions)
                .map(|p| TopicPartition::new(TOPIC, p))
                .collect(),
            nodes: c.nodes,
            leader: (0..c.partitions).map(|p| p % c.nodes.max(1)).collect(),
            leader_epoch: vec![0; partitions],
            log_end: vec![0; partitions],
            outstanding: BTreeMap::new(),
            record_index: HashMap::new(),
            outcomes: Vec::new(),
            extra: CoreExtra::default(),
            init_count: 0,
            step_lines: Vec::new(),
            step: 0,
            out: Vec::new(),
            coordinator: c.transactional.then_some(c.nodes),
            txn_out: None,
            request_timeout: Duration::from_millis(u64::from(c.request_timeout_ms)),
            coord_queue: VecDeque::new(),
            pending_ops: Vec::new(),
        }
    }

    fn txn_line(&mut self, line: String) {
        self.step_lines.push((-1, line));
    }

    /// The core timed out requests: if the transactional request on the wire was one
    /// (past `request.timeout.ms`), it has failed it, and Java's `NetworkClient`
    /// closes that request's connection (`handleTimedOutRequests`). Written as Java
    /// writes it, and no scripted answer goes to that request any more.
    fn txn_request_timed_out(&mut self) {
        let (Some(node), Some(o)) = (self.coordinator, self.txn_out.as_ref()) else {
            return;
        };
        if o.sent + self.request_timeout > self.now {
            return;
        }
        self.txn_out = None;
        self.step_lines.push((
            node,
            format!(
                r#"{{"ev":"disconnected","node":{node},"why":"timeout","s":{}}}"#,
                self.step
            ),
        ));
    }

    fn input_error(&mut self) {
        self.step_lines
            .push((-1, r#"{"ev":"input_error"}"#.to_string()));
    }

    /// The application's transactional call, written as Java's harness writes it.
    fn txn_call(&mut self, call: &str) {
        let (op, result) = match call {
            "begin" => (None, self.producer.begin_transaction()),
            "commit" => (Some(TxnOp::Commit), self.producer.commit_transaction()),
            "abort" => (Some(TxnOp::Abort), self.producer.abort_transaction()),
            _ => (None, Err(TxnError::NotTransactional)),
        };
        let said = if result.is_ok() { "ok" } else { "refused" };
        self.txn_line(format!(
            r#"{{"ev":"txn_call","call":"{call}","result":"{said}"}}"#
        ));
        if let (Some(op), Ok(())) = (op, result) {
            if !self.pending_ops.contains(&op) {
                self.pending_ops.push(op);
            }
        }
    }

    /// The coordinator answers the outstanding transactional request.
    fn coord(&mut self, scripted: Scripted, queued: bool) {
        let Some(o) = self.txn_out.take() else {
            self.coord_queue.push_back(scripted);
            return;
        };
        let Scripted {
            error,
            special,
            apis,
        } = &scripted;
        let error = match &o.kind {
            TxnKind::FindCoordinator => apis.find.as_ref().unwrap_or(error),
            TxnKind::InitProducerId(_) => apis.init.as_ref().unwrap_or(error),
            TxnKind::EndTxn => apis.end.as_ref().unwrap_or(error),
            TxnKind::AddPartitions(_) => error,
        }
        .as_str();
        let e = error_by_name(error);
        let now = self.now;
        let (api, said, result) = match o.kind {
            TxnKind::FindCoordinator => {
                let answer = if e == KafkaError::None {
                    Ok(NodeId(self.coordinator.unwrap_or(0)))
                } else {
                    Err(e)
                };
                let r = self.producer.handle_find_coordinator(o.id, answer, now);
                ("find_coordinator", error.to_string(), r)
            }
            TxnKind::InitProducerId(cur) => {
                let answer = if e == KafkaError::None {
                    let assigned = if cur.is_valid() {
                        ProducerIdAndEpoch::new(cur.id.0, cur.epoch.0.saturating_add(1))
                    } else {
                        ProducerIdAndEpoch::new(1000 + self.init_count, 0)
                    };
                    self.init_count += 1;
                    Ok(assigned)
                } else {
                    Err(e)
                };
                let r = self.producer.handle_producer_id(o.id, answer, now);
                ("init", error.to_string(), r)
            }
            TxnKind::AddPartitions(tps) => {
                let named = special
                    .as_ref()
                    .filter(|(sp, _)| tps.iter().any(|tp| tp.partition == *sp));
                let mut results: Vec<(TopicPartition, KafkaError)> = tps
                    .into_iter()
                    .map(|tp| {
                        let name = match (named, &apis.rest) {
                            (Some((sp, perr)), _) if *sp == tp.partition => perr.as_str(),
                            (Some(_), Some(rest)) => rest.as_str(),
                            _ => error,
                        };
                        (tp, error_by_name(name))
                    })
                    .collect();
                results.sort_by_key(|(tp, _)| tp.partition);
                let said: Vec<String> = results
                    .iter()
                    .map(|(tp, e)| format!("{}={}", tp.partition, kafka_name(*e)))
                    .collect();
                let r = self.producer.handle_add_partitions(o.id, &results, now);
                ("add_partitions", said.join(","), r)
            }
            TxnKind::EndTxn => {
                let answer = if e == KafkaError::None {
                    Ok(None)
                } else {
                    Err(e)
                };
                let r = self.producer.handle_end_txn(o.id, answer, now);
                ("end_txn", error.to_string(), r)
            }
        };
        let line = format!(r#"{{"ev":"coord_answered","api":"{api}","error":"{said}"}}"#);
        // An answer that waited for its request is written after the request, in its step.
        if queued {
            self.txn_line(line);
        } else {
            self.out.push(line);
        }
        if result.is_err() {
            self.input_error();
        }
    }

    fn metadata(&self) -> Metadata {
        Metadata::new(
            self.tps
                .iter()
                .enumerate()
                .map(|(i, tp)| {
                    PartitionMetadata::new(
                        tp.clone(),
                        Some(NodeId(self.leader[i])),
                        self.leader_epoch[i],
                    )
                })
                .collect(),
        )
    }

    fn outcome(&mut self, id: RecordId, result: String) {
        let Some(&i) = self.record_index.get(&id) else {
            self.step_lines
                .push((-1, r#"{"ev":"unknown_record"}"#.to_string()));
            return;
        };
        self.outcomes[i] = Some(match self.outcomes[i].take() {
            Some(prev) => prev + "+twice",
            None => result,
        });
    }

    fn pump(&mut self) {
        for _ in 0..50 {
            if self.producer.poll_timeout().is_some_and(|t| t <= self.now) {
                let timeouts = self.producer.stats().request_timeouts;
                self.producer.handle_timeout(self.now);
                if self.producer.stats().request_timeouts > timeouts {
                    self.txn_request_timed_out();
                }
            }
            let mut any = false;
            while let Some(request) = self.producer.poll_request(self.now) {
                any = true;
                self.request(request);
            }
            while let Some(event) = self.producer.poll_event() {
                self.event(event);
            }
            if !any {
                break;
            }
        }
    }

    fn request(&mut self, request: Request) {
        let transactional = matches!(
            &request,
            Request::FindCoordinator(_) | Request::AddPartitionsToTxn(_) | Request::EndTxn(_)
        ) || matches!(&request, Request::InitProducerId(r) if r.transactional_id.is_some());
        self.request_inner(request);
        if transactional && self.txn_out.is_some() {
            if let Some(scripted) = self.coord_queue.pop_front() {
                self.coord(scripted, true);
            }
        }
    }

    fn request_inner(&mut self, request: Request) {
        match request {
            Request::Produce(r) => {
                let mut parts = BTreeMap::new();
                let mut batches = Vec::new();
                for b in &r.batches {
                    let p = b.partition.partition;
                    match record::read_header(&b.data) {
                        Ok(h) => {
                            let stamp = format!(
                                "{p}:{}:{}:{}:{}",
                                h.producer_id.0,
                                h.producer_epoch.0,
                                h.base_sequence,
                                h.record_count
                            );
                            parts.insert(p, stamp.clone());
                            batches.push((p, h.record_count, stamp));
                        }
                        Err(_) => {
                            parts.insert(p, format!("{p}:unreadable"));
                            batches.push((p, 0, format!("{p}:unreadable")));
                        }
                    }
                }
                let joined: Vec<String> = parts.into_values().collect();
                self.step_lines.push((
                    r.node.0,
                    format!(
                        r#"{{"ev":"produce","node":{},"batches":"{}","t":{},"s":{}}}"#,
                        r.node.0,
                        joined.join(","),
                        self.now_ms,
                        self.step
                    ),
                ));
                self.outstanding
                    .entry(r.node.0)
                    .or_default()
                    .push_back(Outstanding { id: r.id, batches });
            }
            Request::InitProducerId(r) if r.transactional_id.is_some() => {
                let cur = r.current;
                self.txn_line(format!(
                    r#"{{"ev":"txn","api":"init","pid":{},"epoch":{}}}"#,
                    cur.id.0, cur.epoch.0
                ));
                self.txn_out = Some(TxnOutstanding {
                    sent: self.now,
                    id: r.id,
                    kind: TxnKind::InitProducerId(cur),
                });
            }
            Request::FindCoordinator(r) => {
                self.txn_line(r#"{"ev":"txn","api":"find_coordinator"}"#.to_string());
                self.txn_out = Some(TxnOutstanding {
                    sent: self.now,
                    id: r.id,
                    kind: TxnKind::FindCoordinator,
                });
            }
            Request::AddPartitionsToTxn(r) => {
                let mut ps: Vec<i32> = r.partitions.iter().map(|tp| tp.partition).collect();
                ps.sort_unstable();
                ps.dedup();
                let ps: Vec<String> = ps.iter().map(ToString::to_string).collect();
                self.txn_line(format!(
                    r#"{{"ev":"txn","api":"add_partitions","pid":{},"epoch":{},"parts":"{}"}}"#,
                    r.producer.id.0,
                    r.producer.epoch.0,
                    ps.join(",")
                ));
                self.txn_out = Some(TxnOutstanding {
                    sent: self.now,
                    id: r.id,
                    kind: TxnKind::AddPartitions(r.partitions),
                });
            }
            Request::EndTxn(r) => {
                self.txn_line(format!(
                    r#"{{"ev":"txn","api":"end_txn","pid":{},"epoch":{},"commit":{}}}"#,
                    r.producer.id.0,
                    r.producer.epoch.0,
                    u8::from(r.commit)
                ));
                self.txn_out = Some(TxnOutstanding {
                    sent: self.now,
                    id: r.id,
                    kind: TxnKind::EndTxn,
                });
            }
            Request::InitProducerId(r) => {
                let cur = r.current;
                self.step_lines.push((
                    -1,
                    format!(
                        r#"{{"ev":"init","pid":{},"epoch":{}}}"#,
                        cur.id.0, cur.epoch.0
                    ),
                ));
                let assigned = if cur.is_valid() {
                    ProducerIdAndEpoch::new(cur.id.0, cur.epoch.0.saturating_add(1))
                } else {
                    ProducerIdAndEpoch::new(1000 + self.init_count, 0)
                };
                self.init_count += 1;
                if self
                    .producer
                    .handle_producer_id(r.id, Ok(assigned), self.now)
                    .is_err()
                {
                    self.step_lines
                        .push((-1, r#"{"ev":"input_error"}"#.to_string()));
                }
            }
            Request::Metadata(r) => {
                let md = self.metadata();
                if self
                    .producer
                    .handle_metadata(Some(r.id), &md, self.now)
                    .is_err()
                {
                    self.step_lines
                        .push((-1, r#"{"ev":"input_error"}"#.to_string()));
                }
            }
            Request::CloseConnection { node } if Some(node.0) == self.coordinator => {
                // A transactional request timed out: the core already failed it.
                if self.txn_out.take().is_some() {
                    self.step_lines.push((
                        node.0,
                        format!(
                            r#"{{"ev":"disconnected","node":{},"why":"timeout","s":{}}}"#,
                            node.0, self.step
                        ),
                    ));
                }
            }
            Request::CloseConnection { node } => {
                // The core already failed every request on the connection (a request
                // timed out): written like Java's close in `NetworkClient.
                // handleTimedOutRequests`, so the projection sees the broken connection.
                if let Some(q) = self.outstanding.get_mut(&node.0) {
                    if !q.is_empty() {
                        self.step_lines.push((
                            node.0,
                            format!(
                                r#"{{"ev":"disconnected","node":{},"why":"timeout","s":{}}}"#,
                                node.0, self.step
                            ),
                        ));
                    }
                    q.clear();
                }
            }
            other => self.step_lines.push((
                -1,
                format!(
                    r#"{{"ev":"unexpected","api":"{}"}}"#,
                    match other {
                        Request::AddOffsetsToTxn(_) => "ADD_OFFSETS_TO_TXN",
                        Request::TxnOffsetCommit(_) => "TXN_OFFSET_COMMIT",
                        _ => "OTHER",
                    }
                ),
            )),
        }
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Delivered {
                records,
                base_offset,
                ..
            } => {
                for (k, id) in records.into_iter().enumerate() {
                    let offset = base_offset.map_or(-1, |b| b + k as i64);
                    self.outcome(id, format!("ok:{offset}"));
                }
            }
            Event::Failed {
                records,
                error,
                possibly_written,
                ..
            } => {
                if matches!(error, DeliveryError::Timeout { .. })
                    && self.extra.first_expiry.is_none()
                {
                    self.extra.first_expiry = Some(Expiry {
                        line: self.out.len(),
                        txn_request_out: self.txn_out.is_some(),
                    });
                }
                let code = delivery_code(&error);
                for id in records {
                    if let Some(&i) = self.record_index.get(&id) {
                        self.extra.failed_possibly_written[i] = Some(possibly_written);
                    }
                    self.outcome(id, format!("err:{code}"));
                }
            }
            Event::TransactionCompleted { op, result } => {
                self.pending_ops.retain(|o| *o != op);
                let how = match &result {
                    Ok(()) => "ok".to_string(),
                    Err(e) => format!("err:{}", txn_error_code(e)),
                };
                self.txn_line(format!(
                    r#"{{"ev":"txn_done","call":"{}","result":"{how}"}}"#,
                    op_name(op)
                ));
            }
            Event::ProducerIdChanged { .. } => {}
            Event::Fatal { error } => self
                .step_lines
                .push((-1, format!(r#"{{"ev":"fatal","error":{}}}"#, error.code()))),
        }
    }

    fn flush_step(&mut self) {
        // Requests of one step to different brokers go out in an order neither side
        // promises: order them by node, keeping each node's own order.
        self.step_lines.sort_by_key(|(node, _)| *node);
        self.out
            .extend(self.step_lines.drain(..).map(|(_, line)| line));
        self.step += 1;
    }

    fn answer(&mut self, node: i32, error: &str, special: Option<(i32, &str)>, log_start: i64) {
        let Some(o) = self
            .outstanding
            .get_mut(&node)
            .and_then(VecDeque::pop_front)
        else {
            return;
        };
        let mut response = ProduceResponse::default();
        let mut said = Vec::new();
        for (p, count, stamp) in &o.batches {
            let (p, count) = (*p, *count);
            let name = match special {
                Some((sp, perr)) if sp == p => perr,
                _ => error,
            };
            let error = error_by_name(name);
            said.push((p, format!("{stamp}={name}")));
            let idx = usize::try_from(p).unwrap_or(0);
            let mut r = PartitionResponse::error(self.tps[idx].clone(), error);
            if error == KafkaError::None {
                r.base_offset = self.log_end[idx];
                r.log_start_offset = 0;
                self.log_end[idx] += i64::from(count);
            } else {
                r.log_start_offset = log_start;
            }
            response.partitions.push(r);
        }
        said.sort_by_key(|(p, _)| *p);
        let said: Vec<String> = said.into_iter().map(|(_, s)| s).collect();
        self.out.push(format!(
            r#"{{"ev":"answered","node":{node},"batches":"{}"}}"#,
            said.join(",")
        ));
        if self
            .producer
            .handle_produce_response(o.id, &response, self.now)
            .is_err()
        {
            self.step_lines
                .push((-1, r#"{"ev":"input_error"}"#.to_string()));
        }
    }

    fn tick(&mut self, mut ms: u32) {
        while ms > 0 {
            let d = ms.min(STEP_MS);
            ms -= d;
            self.now_ms += u64::from(d);
            self.now = Timestamp::from_millis(self.now_ms);
            self.pump();
            self.flush_step();
        }
    }

    fn op(&mut self, op: &Op) {
        match op {
            Op::Send { p, size } => {
                let idx = usize::try_from(*p).unwrap_or(0);
                let record = Record::from_value(Bytes::from(vec![0u8; *size as usize]), 0);
                match self.producer.send(&self.tps[idx], &record, self.now) {
                    Ok(id) => {
                        self.record_index.insert(id, self.outcomes.len());
                    }
                    Err(_) => {
                        // Refused before queueing; Java would throw from send().
                        self.step_lines.push((
                            -1,
                            format!(r#"{{"ev":"send_refused","rec":{}}}"#, self.outcomes.len()),
                        ));
                        self.outcomes.push(Some("refused".to_string()));
                        self.extra.failed_possibly_written.push(None);
                        self.pump();
                        self.flush_step();
                        return;
                    }
                }
                self.outcomes.push(None);
                self.extra.failed_possibly_written.push(None);
            }
            Op::Tick { ms } => {
                self.tick(*ms);
                return;
            }
            Op::Answer {
                node,
                error,
                p,
                log_start,
            } => {
                let special = p.as_ref().map(|(p, e)| (*p, e.as_str()));
                self.answer(*node, error, special, *log_start);
            }
            Op::Txn { call } => self.txn_call(call),
            Op::Coord { error, p, apis } => {
                self.coord(
                    Scripted {
                        error: error.clone(),
                        special: p.clone(),
                        apis: apis.clone(),
                    },
                    false,
                );
            }
            Op::Disconnect { node } => {
                self.out
                    .push(format!(r#"{{"ev":"disconnected","node":{node}}}"#));
                if Some(*node) == self.coordinator {
                    if let Some(o) = self.txn_out.take() {
                        if self
                            .producer
                            .handle_request_failed(o.id, RequestFailure::Disconnected, self.now)
                            .is_err()
                        {
                            self.input_error();
                        }
                    }
                }
                if let Some(q) = self.outstanding.remove(node) {
                    for o in q {
                        if self
                            .producer
                            .handle_request_failed(o.id, RequestFailure::Disconnected, self.now)
                            .is_err()
                        {
                            self.step_lines
                                .push((-1, r#"{"ev":"input_error"}"#.to_string()));
                        }
                    }
                }
            }
            Op::Leader { p, node } => {
                let idx = usize::try_from(*p).unwrap_or(0);
                self.leader[idx] = *node;
                self.leader_epoch[idx] += 1;
                let md = self.metadata();
                if self.producer.handle_metadata(None, &md, self.now).is_err() {
                    self.step_lines
                        .push((-1, r#"{"ev":"input_error"}"#.to_string()));
                }
            }
        }
        self.pump();
        self.flush_step();
    }

    fn drain(&mut self) {
        for _ in 0..400 {
            if self.outcomes.iter().all(Option::is_some)
                && self.pending_ops.is_empty()
                && self.txn_out.is_none()
            {
                break;
            }
            for node in 0..self.nodes {
                while self.outstanding.get(&node).is_some_and(|q| !q.is_empty()) {
                    self.answer(node, "NONE", None, 0);
                    self.pump();
                    self.flush_step();
                }
            }
            for _ in 0..20 {
                if self.txn_out.is_none() {
                    break;
                }
                let none = Scripted {
                    error: "NONE".into(),
                    special: None,
                    apis: ApiAnswers::default(),
                };
                self.coord(none, false);
                self.pump();
                self.flush_step();
            }
            self.tick(100);
        }
        for (i, o) in self.outcomes.iter().enumerate() {
            self.out.push(format!(
                r#"{{"ev":"outcome","rec":{i},"result":"{}"}}"#,
                o.as_deref().unwrap_or("none")
            ));
        }
    }
}

/// Runs `trace` through the core: the output lines (without the closing `end`) and what
/// only the core reports.
#[must_use]
pub fn run(trace: &Trace) -> (Vec<String>, CoreExtra) {
    let mut h = Harness::new(&trace.config);
    if trace.config.transactional {
        if h.producer.init_transactions().is_ok() {
            h.pending_ops.push(TxnOp::InitTransactions);
        } else {
            h.input_error();
        }
    }
    h.pump();
    h.flush_step();
    for op in &trace.ops {
        h.op(op);
    }
    h.drain();
    (h.out, h.extra)
}
