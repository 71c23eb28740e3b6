//! The session's application half: the commands an application gives (send, flush,
//! close, transactional operations, partition lookups), the ordered backlog behind a
//! full `buffer.memory` (`max.block.ms`), and the completions that answer them.
//!
//! Order: a command that must not overtake earlier sends (a send, a flush, a close, a
//! transactional operation) waits in the backlog while any send waits there, so records
//! keep their call order, a flush covers every record sent before it, and a commit
//! covers every record sent in its transaction.

use std::collections::VecDeque;
use std::time::Duration;

use kacrab_idempotence::{
    ConsumerGroupMetadata, DeliveryError, KafkaError, OffsetToCommit, Producer, Record, SendError,
    Timestamp, Topic, TopicPartition, TxnError, TxnOp,
};

use crate::completion::{Completion, OpId, ProduceError, SendId, TopicError};
use crate::record::{ProducerRecord, RecordMetadata};
use crate::routing::Placement;
use crate::waiters::{Waiter, Waiters};

// The core's events and the invariant checks, in a file of their own (this one is long).
#[path = "app_events.rs"]
mod events;
#[path = "app_metadata_wait.rs"]
mod metadata_wait;
// The backlog's queue and its count of sends.
#[path = "app_backlog.rs"]
mod backlog;
use backlog::Backlog;

/// A transactional operation as the application calls it (see the methods of the same
/// names on [`Session`](crate::Session)), for drivers that pass calls to their loop as
/// values.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum TxnCall {
    /// `init_transactions`.
    Init,
    /// `begin_transaction`.
    Begin,
    /// `send_offsets_to_transaction`.
    SendOffsets(Vec<OffsetToCommit>, ConsumerGroupMetadata),
    /// `commit_transaction`.
    Commit,
    /// `abort_transaction`.
    Abort,
}

impl TxnCall {
    /// The operation, as completions name it.
    #[must_use]
    pub fn kind(&self) -> TxnOp {
        match self {
            Self::Init => TxnOp::InitTransactions,
            Self::Begin => TxnOp::BeginTransaction,
            Self::SendOffsets(..) => TxnOp::SendOffsets,
            Self::Commit => TxnOp::Commit,
            Self::Abort => TxnOp::Abort,
        }
    }
}

/// A command waiting behind a send that found `buffer.memory` full.
#[derive(Debug)]
enum Queued {
    Send {
        id: SendId,
        topic: Topic,
        /// `None` until the topic's metadata is known and a partitioner chose.
        partition: Option<i32>,
        /// The application's own partition, while the send waits for metadata naming
        /// the topic with it (Java's `KafkaProducer.waitOnMetadata` waits for a
        /// partition count above it, too).
        wanted: Option<i32>,
        record: Record,
        /// `max.block.ms` after the call.
        deadline: Timestamp,
    },
    Flush {
        op: OpId,
        /// The first send the flush does not cover.
        upto: SendId,
    },
    /// Its timeout, counted from the call, is in [`Life::CloseCalled`]: Java's
    /// `close(Duration)` bounds the whole call, the wait behind blocked sends included.
    Close {
        op: OpId,
    },
    Txn {
        op: OpId,
        call: TxnCall,
    },
}

/// A partition-count lookup waiting for metadata.
#[derive(Debug)]
struct Lookup {
    op: OpId,
    topic: String,
    /// `max.block.ms` after the call.
    deadline: Timestamp,
    /// When to ask for the topic's metadata (again).
    ask_at: Timestamp,
}

/// What the application half asks of the session's metadata and partitioners.
pub(crate) trait Resolve {
    /// The topic's partition count, if its metadata is known.
    fn partition_count(&self, topic: &str) -> Option<i32>;
    /// Where a record of `topic` goes (see [`crate::routing`]).
    fn place(
        &mut self,
        core: &Producer,
        topic: &Topic,
        partition: Option<i32>,
        record: &Record,
        now: Timestamp,
    ) -> Placement;
    /// The last connection error of each broker address still failing (named by a
    /// metadata wait that times out).
    fn connection_failures(&self) -> crate::ConnectionFailures;
}

/// Where the producer is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Open,
    /// `close` was called and waits in the backlog; past `deadline` (the earliest
    /// close's timeout, from its call), everything is aborted.
    CloseCalled {
        deadline: Option<Timestamp>,
    },
    /// The core is closing; past `deadline`, what is left is aborted.
    Closing {
        deadline: Option<Timestamp>,
    },
    /// Everything has an outcome; the closes were answered.
    Finished,
}

/// How the producer's close ended, for what may still be sent after it (the KIP-714
/// terminating push).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Records were failed rather than delivered: `abort`, a `close(timeout)` that ran
    /// out, or a connection that could not be secured (Java's forced close).
    Forced,
    /// Every record's outcome came in its own time; `deadline` is the close's timeout,
    /// if it had one.
    Graceful { deadline: Option<Timestamp> },
}

/// The application half of a session. See the module documentation.
#[derive(Debug)]
pub(crate) struct Application {
    max_block: Duration,
    lookup_backoff: Duration,
    next_send: u64,
    next_op: u64,
    /// Unix milliseconds at `clock_origin` (record timestamps of sends without one).
    wall_origin_ms: i64,
    clock_origin: Timestamp,
    waiters: Waiters,
    /// Invariant: if not empty, its front is a `Send` (every other command runs the
    /// moment it reaches the front), and the sends' deadlines ascend.
    backlog: Backlog,
    /// Flushes started, with the first send they do not cover. Invariant: `upto`
    /// ascends.
    flushes: VecDeque<(SendId, OpId)>,
    /// Transactional calls handed to the core, waiting for its completion event.
    txn_waiters: Vec<(TxnOp, OpId)>,
    lookups: Vec<Lookup>,
    /// When to ask (again) for the metadata of the topics the backlog's sends without a
    /// partition wait for (every `retry.backoff.ms` while the front waits).
    metadata_ask_at: Timestamp,
    closes: Vec<OpId>,
    life: Life,
    /// Set by `abort` (Java's forced close): the ending is `Forced`.
    forced: bool,
    /// How the close ended, once `Finished`.
    ending: Option<Ending>,
    completions: VecDeque<Completion>,
}

impl Application {
    pub(crate) fn new(
        max_block: Duration,
        lookup_backoff: Duration,
        now: Timestamp,
        wall_ms: i64,
    ) -> Self {
        Self {
            max_block,
            lookup_backoff: lookup_backoff.max(Duration::from_millis(1)),
            next_send: 0,
            next_op: 0,
            wall_origin_ms: wall_ms,
            clock_origin: now,
            waiters: Waiters::default(),
            backlog: Backlog::default(),
            flushes: VecDeque::new(),
            txn_waiters: Vec::new(),
            lookups: Vec::new(),
            metadata_ask_at: now,
            closes: Vec::new(),
            life: Life::Open,
            forced: false,
            ending: None,
            completions: VecDeque::new(),
        }
    }

    fn op(&mut self) -> OpId {
        let op = OpId(self.next_op);
        self.next_op += 1;
        op
    }

    pub(crate) fn pop_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.life == Life::Finished
    }

    /// How the close ended (`None` until finished).
    pub(crate) fn ending(&self) -> Option<Ending> {
        self.ending
    }

    fn refuses_commands(&self) -> bool {
        self.life != Life::Open
    }

    fn wall_ms(&self, now: Timestamp) -> i64 {
        let elapsed = now.saturating_duration_since(self.clock_origin).as_millis();
        self.wall_origin_ms
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }

    // ------------------------------------------------------------------ commands

    pub(crate) fn send(
        &mut self,
        core: &mut Producer,
        record: ProducerRecord,
        resolve: &mut dyn Resolve,
        failure: Option<&crate::phases::ConnectError>,
        now: Timestamp,
    ) -> SendId {
        let id = SendId(self.next_send);
        self.next_send += 1;
        if self.refuses_commands() {
            // Closed by a final connection failure: the send carries its cause, as
            // Java's `KafkaProducer.send` rethrows the AuthenticationException.
            let refusal = match failure {
                Some(error) => ProduceError::Connection {
                    error: error.clone(),
                    possibly_written: false,
                },
                None => ProduceError::Send(SendError::Closed),
            };
            self.refuse(core, id, refusal);
            return id;
        }
        let (topic, partition) = (record.topic, record.partition);
        let record = Record {
            key: record.key,
            value: record.value,
            headers: record.headers,
            timestamp: record.timestamp.unwrap_or_else(|| self.wall_ms(now)),
        };
        if !self.backlog.is_empty() {
            self.block(core, id, topic, partition, record, now);
            return id;
        }
        match resolve.place(core, &topic, partition, &record, now) {
            Placement::To(partition) => {
                let tp = TopicPartition { topic, partition };
                if let Some((tp, record)) = self.submit(core, id, tp, record, now) {
                    self.block(core, id, tp.topic, Some(tp.partition), record, now);
                }
            }
            Placement::Wait => {
                self.metadata_ask_at = now;
                self.wait_for_metadata(core, id, topic, partition, record, now);
            }
            Placement::Refuse(error) => self.refuse(core, id, ProduceError::Topic { topic, error }),
        }
        id
    }

    pub(crate) fn flush(&mut self, core: &mut Producer) -> OpId {
        let op = self.op();
        let upto = SendId(self.next_send);
        if self.backlog.is_empty() {
            self.start_flush(core, op, upto);
        } else {
            // Make room sooner; the flush starts once the waiting sends are in.
            core.flush();
            self.backlog.push_back(Queued::Flush { op, upto });
        }
        op
    }

    pub(crate) fn close(
        &mut self,
        core: &mut Producer,
        timeout: Option<Duration>,
        now: Timestamp,
    ) -> OpId {
        let op = self.op();
        let deadline = timeout.map(|t| now + t);
        match self.life {
            Life::Open => {
                if self.backlog.is_empty() {
                    self.start_close(core, op, deadline, now);
                } else {
                    self.life = Life::CloseCalled { deadline };
                    core.flush();
                    self.backlog.push_back(Queued::Close { op });
                }
            }
            Life::Finished => self.completions.push_back(Completion::Closed { op }),
            Life::CloseCalled {
                deadline: ref mut d,
            }
            | Life::Closing {
                deadline: ref mut d,
            } => {
                // A second close joins the first; a shorter timeout shortens it, even
                // while the first still waits in the backlog.
                if let Some(new) = deadline {
                    *d = Some(d.map_or(new, |old| old.min(new)));
                }
                self.closes.push(op);
            }
        }
        op
    }

    /// A connection could not be secured: the application learns it first (the session
    /// aborts next).
    pub(crate) fn connection_failed(&mut self, error: crate::phases::ConnectError) {
        self.completions
            .push_back(Completion::ConnectionFailed { error });
    }

    /// Fails everything now (Java's forced close).
    pub(crate) fn abort(&mut self, core: &mut Producer, now: Timestamp) {
        self.forced = true;
        core.abort();
        for q in self.backlog.take() {
            match q {
                Queued::Send { id, .. } => self.record_done(
                    id,
                    Err(ProduceError::Delivery {
                        error: DeliveryError::Aborted,
                        possibly_written: false,
                    }),
                ),
                // Completed once every record before it has its outcome (the core's
                // come as events), like a flush already started.
                Queued::Flush { op, upto } => self.flushes.push_back((upto, op)),
                Queued::Close { op, .. } => self.closes.push(op),
                Queued::Txn { op, call } => self.completions.push_back(Completion::Transaction {
                    op,
                    kind: call.kind(),
                    result: Err(TxnError::Closed),
                }),
            }
        }
        if self.life != Life::Finished {
            self.life = Life::Closing { deadline: None };
        }
        let _ = now;
    }

    pub(crate) fn transaction(&mut self, core: &mut Producer, call: TxnCall) -> OpId {
        let op = self.op();
        if self.refuses_commands() {
            self.completions.push_back(Completion::Transaction {
                op,
                kind: call.kind(),
                result: Err(TxnError::Closed),
            });
        } else if self.backlog.is_empty() {
            self.start_txn(core, op, call);
        } else {
            self.backlog.push_back(Queued::Txn { op, call });
        }
        op
    }

    /// Returns the op, and whether the topic's metadata should be asked for now.
    pub(crate) fn partition_count(
        &mut self,
        topic: &str,
        known: Option<i32>,
        now: Timestamp,
    ) -> OpId {
        let op = self.op();
        if known.is_some() || self.life == Life::Finished {
            self.completions
                .push_back(Completion::PartitionCount { op, count: known });
        } else {
            self.lookups.push(Lookup {
                op,
                topic: topic.to_owned(),
                deadline: now + self.max_block,
                ask_at: now,
            });
        }
        op
    }

    // ------------------------------------------------------------------ progress

    /// Applies the core's events, retries the backlog, answers lookups, flushes and
    /// closes. Returns the topics whose metadata a lookup should ask for now.
    pub(crate) fn progress(
        &mut self,
        core: &mut Producer,
        resolve: &mut dyn Resolve,
        now: Timestamp,
    ) -> Vec<String> {
        let mut freed = false;
        while let Some(event) = core.poll_event() {
            freed |= self.on_event(event);
        }
        if !self.backlog.is_empty()
            && (freed
                || self.front_waits_for_metadata()
                || self.front_deadline().is_some_and(|d| d <= now))
        {
            self.unblock(core, resolve, now);
        }
        if let Life::CloseCalled {
            deadline: Some(deadline),
        }
        | Life::Closing {
            deadline: Some(deadline),
        } = self.life
        {
            if deadline <= now {
                // close(timeout) ran out, perhaps while the close still waited behind
                // blocked sends: what is left fails (Java's forced close).
                self.abort(core, now);
                while let Some(event) = core.poll_event() {
                    self.on_event(event);
                }
            }
        }
        let lowest = self.lowest_unresolved();
        while self
            .flushes
            .front()
            .is_some_and(|&(upto, _)| upto <= lowest)
        {
            if let Some((_, op)) = self.flushes.pop_front() {
                self.completions.push_back(Completion::Flushed { op });
            }
        }
        if let (Life::Closing { deadline }, true, true) =
            (self.life, self.backlog.is_empty(), core.is_closed())
        {
            self.ending = Some(if self.forced {
                Ending::Forced
            } else {
                Ending::Graceful { deadline }
            });
            self.life = Life::Finished;
            for op in std::mem::take(&mut self.closes) {
                self.completions.push_back(Completion::Closed { op });
            }
            for l in std::mem::take(&mut self.lookups) {
                self.completions.push_back(Completion::PartitionCount {
                    op: l.op,
                    count: None,
                });
            }
        }
        let mut ask = self.answer_lookups(resolve, now);
        if self.front_waits_for_metadata() && self.metadata_ask_at <= now {
            self.metadata_ask_at = now + self.lookup_backoff;
            for q in self.backlog.iter() {
                // A send placed on a partition of an unknown topic (queued behind the
                // front) waits for the topic too.
                if let Queued::Send {
                    topic, partition, ..
                } = q
                {
                    let waits =
                        partition.is_none() || resolve.partition_count(topic.as_str()).is_none();
                    if waits && !ask.iter().any(|t| t == topic.as_str()) {
                        ask.push(topic.as_str().to_owned());
                    }
                }
            }
        }
        ask
    }

    /// Whether the backlog's front is a send waiting for its topic's metadata.
    fn front_waits_for_metadata(&self) -> bool {
        matches!(
            self.backlog.front(),
            Some(Queued::Send {
                partition: None,
                ..
            })
        )
    }

    fn answer_lookups(&mut self, resolve: &dyn Resolve, now: Timestamp) -> Vec<String> {
        let mut ask = Vec::new();
        let mut i = 0;
        while i < self.lookups.len() {
            let known = resolve.partition_count(&self.lookups[i].topic);
            if known.is_some() || self.lookups[i].deadline <= now {
                let l = self.lookups.swap_remove(i);
                self.completions.push_back(Completion::PartitionCount {
                    op: l.op,
                    count: known,
                });
                continue;
            }
            if self.lookups[i].ask_at <= now {
                self.lookups[i].ask_at = now + self.lookup_backoff;
                let topic = self.lookups[i].topic.clone();
                if !ask.contains(&topic) {
                    ask.push(topic);
                }
            }
            i += 1;
        }
        ask
    }

    /// The application half's next deadline: the oldest waiting send's `max.block.ms`,
    /// a lookup's next question or deadline, a close's timeout.
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        let close = match self.life {
            Life::CloseCalled { deadline } | Life::Closing { deadline } => deadline,
            Life::Open | Life::Finished => None,
        };
        let lookups = self.lookups.iter().map(|l| l.ask_at.min(l.deadline)).min();
        let metadata = self
            .front_waits_for_metadata()
            .then_some(self.metadata_ask_at);
        [self.front_deadline(), close, lookups, metadata]
            .into_iter()
            .flatten()
            .min()
    }

    /// The oldest send waiting for `buffer.memory` (the backlog's front, a send by the
    /// backlog's invariant): every earlier send entered the core or has its outcome.
    pub(crate) fn oldest_blocked_send(&self) -> Option<SendId> {
        match self.backlog.front() {
            Some(Queued::Send { id, .. }) => Some(*id),
            _ => None,
        }
    }

    /// Whether a send or a command waits in the backlog (for room in `buffer.memory`,
    /// or for its topic's metadata).
    pub(crate) fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The backlog's sends, by what they wait for (`bufferpool-wait-time-ns-total`,
    /// `metadata-wait-time-ns-total`).
    pub(crate) fn blocked_sends(&self) -> crate::metrics::Blocked {
        crate::metrics::Blocked::behind(self.backlog.sends(), self.front_waits_for_metadata())
    }

    fn front_deadline(&self) -> Option<Timestamp> {
        match self.backlog.front() {
            Some(Queued::Send { deadline, .. }) => Some(*deadline),
            _ => None,
        }
    }

    /// The oldest send without an outcome (or the next send id, if none).
    fn lowest_unresolved(&self) -> SendId {
        let backlog = self.backlog.iter().find_map(|q| match q {
            Queued::Send { id, .. } => Some(*id),
            _ => None,
        });
        [self.waiters.oldest(), backlog]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(SendId(self.next_send))
    }

    // ------------------------------------------------------------------ internals

    /// A send failed for `buffer.memory` before entering the core.
    fn buffer_full(&mut self, core: &mut Producer, id: SendId) {
        let buffered = core.config().buffer_memory();
        self.refuse(
            core,
            id,
            ProduceError::Send(SendError::BufferFull { buffered }),
        );
    }

    /// A send is refused: it never entered the core, or the core refused it. Every
    /// refusal goes through here, so the rule for transactions lives in one place: a
    /// refusal Java's `KafkaProducer.doSend` hands to
    /// `TransactionManager.maybeTransitionToErrorState` (an `ApiException`, see
    /// [`transaction_abort_cause`]) makes an open transaction abortable in the core
    /// ([`Producer::send_refused`]; for the core's own refusals it already did, and a
    /// second report changes nothing). The commit then fails, as in Java.
    pub(super) fn refuse(&mut self, core: &mut Producer, id: SendId, error: ProduceError) {
        if let Some(cause) = transaction_abort_cause(&error) {
            core.send_refused(cause);
        }
        self.record_done(id, Err(error));
    }

    fn record_done(&mut self, id: SendId, outcome: Result<RecordMetadata, ProduceError>) {
        self.completions
            .push_back(Completion::Record { id, outcome });
    }

    /// Gives a record to the core. Hands it back if `buffer.memory` is full.
    fn submit(
        &mut self,
        core: &mut Producer,
        id: SendId,
        tp: TopicPartition,
        record: Record,
        now: Timestamp,
    ) -> Option<(TopicPartition, Record)> {
        match core.send(&tp, &record, now) {
            Ok(rid) => {
                self.waiters.insert(
                    rid,
                    Waiter {
                        id,
                        timestamp: record.timestamp,
                    },
                );
                None
            }
            Err(SendError::BufferFull { .. }) => Some((tp, record)),
            Err(e) => {
                self.refuse(core, id, ProduceError::Send(e));
                None
            }
        }
    }

    fn block(
        &mut self,
        core: &mut Producer,
        id: SendId,
        topic: Topic,
        partition: Option<i32>,
        record: Record,
        now: Timestamp,
    ) {
        if self.max_block.is_zero() {
            match partition {
                Some(_) => self.buffer_full(core, id),
                None => {
                    let failures = crate::ConnectionFailures::default();
                    self.not_present(core, id, topic, None, None, failures);
                }
            }
            return;
        }
        self.backlog.push_back(Queued::Send {
            id,
            topic,
            partition,
            wanted: None,
            record,
            deadline: now + self.max_block,
        });
    }

    /// Runs the backlog in order: sends while they fit (failing those past
    /// `max.block.ms`), and every other command as it reaches the front.
    fn unblock(&mut self, core: &mut Producer, resolve: &mut dyn Resolve, now: Timestamp) {
        while let Some(q) = self.backlog.pop_front() {
            match q {
                Queued::Send {
                    id,
                    topic,
                    partition,
                    wanted,
                    record,
                    deadline,
                } => {
                    let wanted = partition.or(wanted);
                    let tp = match resolve.place(core, &topic, wanted, &record, now) {
                        Placement::To(partition) => TopicPartition { topic, partition },
                        Placement::Refuse(error) => {
                            self.refuse(core, id, ProduceError::Topic { topic, error });
                            continue;
                        }
                        Placement::Wait if deadline <= now => {
                            let count = resolve.partition_count(topic.as_str());
                            let failures = resolve.connection_failures();
                            self.not_present(core, id, topic, wanted, count, failures);
                            continue;
                        }
                        Placement::Wait => {
                            self.backlog.push_front(Queued::Send {
                                id,
                                topic,
                                partition: None,
                                wanted,
                                record,
                                deadline,
                            });
                            return;
                        }
                    };
                    let Some((tp, record)) = self.submit(core, id, tp, record, now) else {
                        continue;
                    };
                    if deadline <= now {
                        self.buffer_full(core, id);
                        continue;
                    }
                    self.backlog.push_front(Queued::Send {
                        id,
                        topic: tp.topic,
                        partition: Some(tp.partition),
                        wanted: None,
                        record,
                        deadline,
                    });
                    return;
                }
                Queued::Flush { op, upto } => self.start_flush(core, op, upto),
                Queued::Close { op } => {
                    let deadline = match self.life {
                        Life::CloseCalled { deadline } => deadline,
                        _ => None,
                    };
                    self.start_close(core, op, deadline, now);
                }
                Queued::Txn { op, call } => self.start_txn(core, op, call),
            }
        }
    }

    fn start_flush(&mut self, core: &mut Producer, op: OpId, upto: SendId) {
        core.flush();
        debug_assert!(self.flushes.back().is_none_or(|&(u, _)| u <= upto));
        self.flushes.push_back((upto, op));
    }

    fn start_close(
        &mut self,
        core: &mut Producer,
        op: OpId,
        deadline: Option<Timestamp>,
        now: Timestamp,
    ) {
        self.closes.push(op);
        if deadline.is_some_and(|d| d <= now) {
            self.abort(core, now);
            return;
        }
        core.close();
        self.life = Life::Closing { deadline };
    }

    fn start_txn(&mut self, core: &mut Producer, op: OpId, call: TxnCall) {
        let kind = call.kind();
        let started = match call {
            TxnCall::Init => core.init_transactions(),
            TxnCall::Begin => {
                let result = core.begin_transaction();
                self.completions
                    .push_back(Completion::Transaction { op, kind, result });
                return;
            }
            TxnCall::SendOffsets(offsets, group) => {
                core.send_offsets_to_transaction(offsets, group)
            }
            TxnCall::Commit => core.commit_transaction(),
            TxnCall::Abort => core.abort_transaction(),
        };
        match started {
            Ok(()) => self.txn_waiters.push((kind, op)),
            Err(e) => self.completions.push_back(Completion::Transaction {
                op,
                kind,
                result: Err(e),
            }),
        }
    }
}

/// The error a refused send makes an open transaction abortable with, `None` for a
/// refusal that leaves it alone: Java's `KafkaProducer.doSend` passes only
/// `ApiException`s to `TransactionManager.maybeTransitionToErrorState`.
///
/// * The core's refusals: [`SendError::transaction_abort_cause`] (too large, or
///   `buffer.memory` full past `max.block.ms`: `BufferExhaustedException`).
/// * The topic's: `waitOnMetadata`'s `TimeoutException` when metadata never named the
///   topic or the partition within `max.block.ms` (REQUEST_TIMED_OUT), the broker's
///   refusal itself (`TopicAuthorizationException`, `InvalidTopicException`), an invalid
///   name (the broker's INVALID_TOPIC_EXCEPTION, which the session saves asking for),
///   and a partition the application's partitioner invented (Java appends it and the
///   batch expires, `Sender` failing it through the same transition).
/// * A send refused because the session is closed or its driver stopped: the producer
///   is closing (Java's `IllegalStateException`), the transaction ends with it.
fn transaction_abort_cause(error: &ProduceError) -> Option<KafkaError> {
    match error {
        ProduceError::Send(e) => e.transaction_abort_cause(),
        ProduceError::Topic { error, .. } => Some(match error {
            TopicError::NotPresent { .. } | TopicError::PartitionNotPresent { .. } => {
                KafkaError::RequestTimedOut
            }
            TopicError::Refused(e) => *e,
            TopicError::InvalidName(_) => KafkaError::InvalidTopicException,
            TopicError::NoSuchPartition { .. } => KafkaError::UnknownTopicOrPartition,
        }),
        ProduceError::Delivery { .. }
        | ProduceError::Connection { .. }
        | ProduceError::Terminated => None,
    }
}
