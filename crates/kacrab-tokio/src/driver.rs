//! The driver task: the only owner of the [`Session`] (and so of the core's state).
//!
//! It waits for an application command, a connection event or its timer; applies
//! everything that is ready (commands and events are drained in batches, so one poll
//! loop serves many of them); then runs the session's contract: drain `poll_output`
//! (executing each output), drain `poll_event` (resolving waiters), and re-arm the timer
//! from `poll_timeout`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kacrab_driver::{ConnId, Output, Session};
use kacrab_idempotence::{
    ConsumerGroupMetadata, Event, OffsetToCommit, Record, RecordId, SendError, Timestamp,
    TopicPartition, TxnError, TxnOp,
};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::conn::{ConnEvent, ConnHandle, ConnTask, OutFrame, Transport};
use crate::sequencer::SharedSequencer;
use crate::{ProduceError, ProducerRecord, RecordMetadata};

/// The reply to one send.
pub(crate) type Reply = oneshot::Sender<Result<RecordMetadata, ProduceError>>;

/// What application handles ask of the driver task.
pub(crate) enum Command {
    Send {
        record: ProducerRecord,
        reply: Reply,
    },
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
    PartitionCount {
        topic: String,
        reply: oneshot::Sender<Option<i32>>,
    },
    /// A transactional operation; the reply comes with its completion event.
    Transaction {
        call: TxnCall,
        reply: oneshot::Sender<Result<(), TxnError>>,
    },
}

/// The transactional operations, as the application calls them.
pub(crate) enum TxnCall {
    Init,
    Begin,
    SendOffsets(Vec<OffsetToCommit>, ConsumerGroupMetadata),
    Commit,
    Abort,
}

/// Adapter settings (everything else is the core's configuration).
pub(crate) struct Settings {
    pub(crate) max_block: Duration,
    /// How often a partition-count lookup asks for metadata again.
    pub(crate) retry_backoff: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) transport: Transport,
}

/// Commands applied per wake-up before the poll loop runs: large enough to amortise the
/// poll loop over many sends, small enough to keep serving connections promptly.
const COMMAND_BATCH: usize = 1024;

/// A command waiting behind a full `buffer.memory` (Kafka's `max.block.ms`). Commands
/// after a blocked send wait behind it, so records keep their send order.
enum Pending {
    Send {
        tp: TopicPartition,
        record: Record,
        reply: Reply,
        deadline: Instant,
    },
    Flush(oneshot::Sender<()>),
    /// `None`: every handle was dropped.
    Close(Option<oneshot::Sender<()>>),
}

/// What became of a record given to the core.
enum Submitted {
    Accepted,
    /// Refused for good; its reply was sent.
    Refused,
    /// `buffer.memory` is full: handed back.
    Full(TopicPartition, Record, Reply),
}

/// An application waiting for a topic's partition count.
struct Lookup {
    topic: String,
    reply: oneshot::Sender<Option<i32>>,
    /// `max.block.ms` after the question.
    deadline: Instant,
    /// When to ask for the topic's metadata (again).
    ask_at: Instant,
}

struct Waiter {
    reply: Reply,
    timestamp: i64,
}

/// Waiters by [`RecordId`]. The core assigns ids consecutively, so this is a deque
/// indexed from the oldest unresolved id: no hashing, no allocation per record.
#[derive(Default)]
struct Waiters {
    base: u64,
    slots: VecDeque<Option<Waiter>>,
}

impl Waiters {
    fn insert(&mut self, id: RecordId, waiter: Waiter) {
        if self.slots.is_empty() {
            self.base = id.0;
        }
        while self.base + (self.slots.len() as u64) < id.0 {
            self.slots.push_back(None);
        }
        debug_assert_eq!(
            self.base + self.slots.len() as u64,
            id.0,
            "record ids are consecutive"
        );
        self.slots.push_back(Some(waiter));
    }

    fn take(&mut self, id: RecordId) -> Option<Waiter> {
        let index = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        let waiter = self.slots.get_mut(index)?.take();
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        waiter
    }

    /// The oldest record id without an outcome, or `next` when there is none.
    fn lowest_unresolved(&self, next: u64) -> u64 {
        if self.slots.is_empty() {
            next
        } else {
            self.base
        }
    }
}

pub(crate) struct Driver {
    session: Session,
    start: Instant,
    settings: Settings,
    conns: HashMap<ConnId, ConnHandle>,
    conn_events: mpsc::UnboundedSender<(ConnId, ConnEvent)>,
    sequencer: Arc<SharedSequencer>,
    waiters: Waiters,
    /// The id the core gives the next accepted record.
    next_id: u64,
    blocked: VecDeque<Pending>,
    /// Flushes by the first record id they do not wait for, oldest first.
    flushes: VecDeque<(u64, oneshot::Sender<()>)>,
    closes: Vec<oneshot::Sender<()>>,
    lookups: Vec<Lookup>,
    closing: bool,
    /// `close` completed: every record has an outcome.
    closed: bool,
    /// The wall clock for record timestamps, read once per wake-up.
    wall_ms: Option<i64>,
    /// Callers waiting for a transactional operation's completion event.
    txn_waiters: Vec<(TxnOp, oneshot::Sender<Result<(), TxnError>>)>,
}

impl Driver {
    pub(crate) fn new(
        session: Session,
        start: Instant,
        settings: Settings,
    ) -> (Self, mpsc::UnboundedReceiver<(ConnId, ConnEvent)>) {
        let (conn_events, conn_events_rx) = mpsc::unbounded_channel();
        let driver = Self {
            session,
            start,
            settings,
            conns: HashMap::new(),
            conn_events,
            sequencer: Arc::new(SharedSequencer::default()),
            waiters: Waiters::default(),
            next_id: 0,
            blocked: VecDeque::new(),
            flushes: VecDeque::new(),
            closes: Vec::new(),
            lookups: Vec::new(),
            closing: false,
            closed: false,
            wall_ms: None,
            txn_waiters: Vec::new(),
        };
        (driver, conn_events_rx)
    }

    /// Runs until the producer is closed (by [`Command::Close`] or by every handle being
    /// dropped) and every record has an outcome.
    pub(crate) async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut conn_events: mpsc::UnboundedReceiver<(ConnId, ConnEvent)>,
    ) {
        enum Wake {
            Conn((ConnId, ConnEvent)),
            Command(Option<Command>),
            Timer,
        }
        let mut commands_open = true;
        let sleep = tokio::time::sleep_until(self.start);
        tokio::pin!(sleep);
        // The deadline `sleep` is armed for; `None` when no timer is needed, or after it
        // fired (so the next deadline re-arms it even if unchanged).
        let mut armed: Option<Instant> = None;
        loop {
            let wake = tokio::select! {
                biased;
                Some(ev) = conn_events.recv() => Wake::Conn(ev),
                cmd = commands.recv(), if commands_open => Wake::Command(cmd),
                () = &mut sleep, if armed.is_some() => Wake::Timer,
            };
            let now = self.clock();
            self.wall_ms = None;
            match wake {
                Wake::Conn((conn, ev)) => self.on_conn_event(conn, ev, now),
                Wake::Command(Some(cmd)) => self.on_command(cmd, now),
                Wake::Command(None) => {
                    commands_open = false;
                    self.on_handles_dropped();
                }
                Wake::Timer => armed = None,
            }
            // Everything else that is ready now, so that one poll loop serves it all.
            while let Ok((conn, ev)) = conn_events.try_recv() {
                self.on_conn_event(conn, ev, now);
            }
            if commands_open {
                for _ in 0..COMMAND_BATCH {
                    match commands.try_recv() {
                        Ok(cmd) => self.on_command(cmd, now),
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            commands_open = false;
                            self.on_handles_dropped();
                            break;
                        }
                    }
                }
            }
            let next = self.process(now);
            if self.is_finished() {
                break;
            }
            match next {
                Some(deadline) if armed != Some(deadline) => {
                    sleep.as_mut().reset(deadline);
                    armed = Some(deadline);
                }
                Some(_) => {}
                None => armed = None,
            }
        }
        // Closed: later sends fail with `Closed`; connection tasks end with their handles.
        commands.close();
        while let Ok(cmd) = commands.try_recv() {
            self.refuse(cmd);
        }
        for (_, conn) in self.conns.drain() {
            let _ = conn.close.send(());
        }
        for reply in self.closes.drain(..) {
            let _ = reply.send(());
        }
        for (_, reply) in self.flushes.drain(..) {
            let _ = reply.send(());
        }
        for lookup in self.lookups.drain(..) {
            let _ = lookup.reply.send(None);
        }
    }

    fn clock(&self) -> Timestamp {
        let micros = self.start.elapsed().as_micros();
        Timestamp::from_micros(u64::try_from(micros).unwrap_or(u64::MAX))
    }

    fn instant(&self, t: Timestamp) -> Instant {
        self.start + Duration::from_micros(t.as_micros())
    }

    fn wall_ms(&mut self) -> i64 {
        *self.wall_ms.get_or_insert_with(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        })
    }

    fn is_finished(&self) -> bool {
        self.closed
    }

    // ------------------------------------------------------------------ inputs

    fn on_conn_event(&mut self, conn: ConnId, ev: ConnEvent, now: Timestamp) {
        match ev {
            ConnEvent::Connected => self.session.handle_connected(conn, now),
            ConnEvent::Bytes(bytes) => self.session.handle_bytes(conn, &bytes, now),
            ConnEvent::ConnectFailed => {
                self.conns.remove(&conn);
                self.session.handle_connect_failed(conn, now);
            }
            ConnEvent::Disconnected => {
                self.conns.remove(&conn);
                self.session.handle_disconnected(conn, now);
            }
        }
    }

    fn on_command(&mut self, cmd: Command, now: Timestamp) {
        match cmd {
            Command::Send { record, reply } => {
                let timestamp = match record.timestamp {
                    Some(t) => t,
                    None => self.wall_ms(),
                };
                let tp = TopicPartition {
                    topic: record.topic,
                    partition: record.partition,
                };
                let record = Record {
                    key: record.key,
                    value: record.value,
                    headers: record.headers,
                    timestamp,
                };
                if self.blocked.is_empty() {
                    if let Submitted::Full(tp, record, reply) = self.submit(tp, record, reply, now)
                    {
                        self.block(tp, record, reply);
                    }
                } else {
                    self.block(tp, record, reply);
                }
            }
            Command::Flush(reply) => {
                if self.blocked.is_empty() {
                    self.start_flush(reply);
                } else {
                    // Make room sooner, then flush once the blocked sends are in.
                    self.session.producer().flush();
                    self.blocked.push_back(Pending::Flush(reply));
                }
            }
            Command::PartitionCount { topic, reply } => {
                let now = Instant::now();
                self.lookups.push(Lookup {
                    topic,
                    reply,
                    deadline: now + self.settings.max_block,
                    ask_at: now,
                });
            }
            Command::Transaction { call, reply } => {
                let producer = self.session.producer();
                let (op, started) = match call {
                    TxnCall::Init => (TxnOp::InitTransactions, producer.init_transactions()),
                    TxnCall::Begin => {
                        let _ = reply.send(producer.begin_transaction());
                        return;
                    }
                    TxnCall::SendOffsets(offsets, group) => (
                        TxnOp::SendOffsets,
                        producer.send_offsets_to_transaction(offsets, group),
                    ),
                    TxnCall::Commit => (TxnOp::Commit, producer.commit_transaction()),
                    TxnCall::Abort => (TxnOp::Abort, producer.abort_transaction()),
                };
                match started {
                    Ok(()) => self.txn_waiters.push((op, reply)),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            Command::Close(reply) => {
                if self.blocked.is_empty() {
                    self.start_close(Some(reply));
                } else {
                    self.session.producer().flush();
                    self.blocked.push_back(Pending::Close(Some(reply)));
                }
            }
        }
    }

    fn on_handles_dropped(&mut self) {
        if self.blocked.is_empty() {
            self.start_close(None);
        } else {
            self.blocked.push_back(Pending::Close(None));
        }
    }

    /// Gives `record` to the core. Hands it back if `buffer.memory` is full.
    fn submit(
        &mut self,
        tp: TopicPartition,
        record: Record,
        reply: Reply,
        now: Timestamp,
    ) -> Submitted {
        match self.session.producer().send(&tp, &record, now) {
            Ok(id) => {
                self.next_id = id.0 + 1;
                self.waiters.insert(
                    id,
                    Waiter {
                        reply,
                        timestamp: record.timestamp,
                    },
                );
                Submitted::Accepted
            }
            Err(SendError::BufferFull { .. }) => Submitted::Full(tp, record, reply),
            Err(e) => {
                let _ = reply.send(Err(ProduceError::Send(e)));
                Submitted::Refused
            }
        }
    }

    fn block(&mut self, tp: TopicPartition, record: Record, reply: Reply) {
        if self.settings.max_block.is_zero() {
            let buffered = self.session.producer_ref().config().buffer_memory();
            let _ = reply.send(Err(ProduceError::Send(SendError::BufferFull { buffered })));
            return;
        }
        let deadline = Instant::now() + self.settings.max_block;
        self.blocked.push_back(Pending::Send {
            tp,
            record,
            reply,
            deadline,
        });
    }

    fn start_flush(&mut self, reply: oneshot::Sender<()>) {
        self.session.producer().flush();
        self.flushes.push_back((self.next_id, reply));
    }

    fn start_close(&mut self, reply: Option<oneshot::Sender<()>>) {
        self.session.producer().close();
        self.closing = true;
        if let Some(reply) = reply {
            self.closes.push(reply);
        }
    }

    fn refuse(&mut self, cmd: Command) {
        match cmd {
            Command::Send { reply, .. } => {
                let _ = reply.send(Err(ProduceError::Send(SendError::Closed)));
            }
            Command::Flush(reply) | Command::Close(reply) => {
                let _ = reply.send(());
            }
            Command::PartitionCount { reply, .. } => {
                let _ = reply.send(None);
            }
            Command::Transaction { reply, .. } => {
                let _ = reply.send(Err(TxnError::Fatal(
                    kacrab_idempotence::KafkaError::UnknownServerError,
                )));
            }
        }
    }

    // ------------------------------------------------------------------ the contract

    /// Drains the session's outputs and events until both are empty and no deadline has
    /// passed; returns when to wake up next.
    fn process(&mut self, now: Timestamp) -> Option<Instant> {
        let mut timed_out = false;
        // Metadata arrives with the inputs just applied: answer lookups first, and ask
        // for the metadata of the others (an output drained below).
        if !self.lookups.is_empty() {
            self.answer_lookups(now);
        }
        loop {
            while let Some(out) = self.session.poll_output(now) {
                self.execute(out);
            }
            let mut freed = false;
            while let Some(event) = self.session.poll_event() {
                freed |= self.on_event(event);
            }
            if !self.blocked.is_empty()
                && (freed || self.blocked_deadline().is_some_and(|d| d <= Instant::now()))
                && self.unblock(now)
            {
                continue;
            }
            let due = self.session.poll_timeout();
            // Compare the clock with the deadline here, whatever woke us: a busy producer
            // may never let the timer branch win.
            if due.is_some_and(|t| t <= now) && !timed_out {
                timed_out = true;
                self.session.handle_timeout(now);
                continue;
            }
            let deadline = due.map(|t| {
                if t <= now {
                    // Still due right after handle_timeout: wake again a little later
                    // rather than spin on it.
                    Instant::now() + Duration::from_millis(1)
                } else {
                    self.instant(t)
                }
            });
            self.settle();
            let lookups = self.lookups.iter().map(|l| l.ask_at.min(l.deadline)).min();
            return [deadline, self.blocked_deadline(), lookups]
                .into_iter()
                .flatten()
                .min();
        }
    }

    /// Resolves flushes and closes that are complete.
    fn settle(&mut self) {
        let lowest = self.waiters.lowest_unresolved(self.next_id);
        while self
            .flushes
            .front()
            .is_some_and(|(upto, _)| *upto <= lowest)
        {
            if let Some((_, reply)) = self.flushes.pop_front() {
                let _ = reply.send(());
            }
        }
        if self.closing && self.blocked.is_empty() && self.session.producer_ref().is_closed() {
            // `run` answers the closes (and any flush still queued: nothing is pending)
            // once it stopped taking commands.
            self.closed = true;
        }
    }

    /// Answers partition-count lookups whose topic is known (or whose `max.block.ms`
    /// passed), and asks for the metadata of the others when due.
    fn answer_lookups(&mut self, now: Timestamp) {
        let wall = Instant::now();
        let mut i = 0;
        while i < self.lookups.len() {
            let known = self.session.partition_count(&self.lookups[i].topic);
            if known.is_some() || self.lookups[i].deadline <= wall {
                let lookup = self.lookups.swap_remove(i);
                let _ = lookup.reply.send(known);
                continue;
            }
            if self.lookups[i].ask_at <= wall {
                self.lookups[i].ask_at = wall + self.settings.retry_backoff;
                let topic = self.lookups[i].topic.clone();
                self.session.request_metadata(&[topic.as_str()], now);
            }
            i += 1;
        }
    }

    fn blocked_deadline(&self) -> Option<Instant> {
        self.blocked.iter().find_map(|p| match p {
            Pending::Send { deadline, .. } => Some(*deadline),
            _ => None,
        })
    }

    /// Retries blocked commands in order; fails sends whose `max.block.ms` passed.
    /// Returns whether the core accepted a record.
    fn unblock(&mut self, now: Timestamp) -> bool {
        let mut accepted = false;
        let wall = Instant::now();
        while let Some(pending) = self.blocked.pop_front() {
            match pending {
                Pending::Send {
                    tp,
                    record,
                    reply,
                    deadline,
                } => match self.submit(tp, record, reply, now) {
                    Submitted::Accepted => accepted = true,
                    Submitted::Refused => {}
                    Submitted::Full(tp, record, reply) => {
                        if deadline <= wall {
                            let buffered = self.session.producer_ref().config().buffer_memory();
                            let _ = reply
                                .send(Err(ProduceError::Send(SendError::BufferFull { buffered })));
                            continue;
                        }
                        self.blocked.push_front(Pending::Send {
                            tp,
                            record,
                            reply,
                            deadline,
                        });
                        break;
                    }
                },
                Pending::Flush(reply) => self.start_flush(reply),
                Pending::Close(reply) => self.start_close(reply),
            }
        }
        accepted
    }

    fn execute(&mut self, out: Output) {
        match out {
            Output::Connect { conn, addr } => {
                let task = ConnTask {
                    conn,
                    addr,
                    transport: self.settings.transport.clone(),
                    connect_timeout: self.settings.connect_timeout,
                    events: self.conn_events.clone(),
                    sequencer: Arc::clone(&self.sequencer),
                };
                self.conns.insert(conn, task.spawn());
            }
            Output::Transmit {
                conn,
                frame,
                ticket,
            } => {
                let unsent = match self.conns.get(&conn) {
                    Some(c) => c
                        .frames
                        .send(OutFrame { frame, ticket })
                        .err()
                        .map(|e| e.0.ticket),
                    None => Some(ticket),
                };
                // The connection task is gone (its failure is on the way to us): this
                // frame will never be written.
                if let Some(Some(ticket)) = unsent {
                    self.sequencer.abandon(ticket);
                }
            }
            Output::Release { ticket } => self.sequencer.abandon(ticket),
            Output::Close { conn } => {
                if let Some(c) = self.conns.remove(&conn) {
                    let _ = c.close.send(());
                }
            }
        }
    }

    /// Resolves the waiters an event names. Returns whether it freed buffer space.
    fn on_event(&mut self, event: Event) -> bool {
        match event {
            Event::Delivered {
                partition,
                records,
                base_offset,
            } => {
                for (i, id) in records.into_iter().enumerate() {
                    if let Some(w) = self.waiters.take(id) {
                        let _ = w.reply.send(Ok(RecordMetadata {
                            topic: partition.topic.clone(),
                            partition: partition.partition,
                            offset: base_offset.map(|b| b + i as i64),
                            timestamp: w.timestamp,
                        }));
                    }
                }
                true
            }
            Event::Failed {
                records,
                error,
                possibly_written,
                ..
            } => {
                for id in records {
                    if let Some(w) = self.waiters.take(id) {
                        let _ = w.reply.send(Err(ProduceError::Delivery {
                            error: error.clone(),
                            possibly_written,
                        }));
                    }
                }
                true
            }
            // Every record is failed by its own event; later sends fail in `send`.
            Event::TransactionCompleted { op, result } => {
                let (done, waiting): (Vec<_>, Vec<_>) =
                    self.txn_waiters.drain(..).partition(|(o, _)| *o == op);
                self.txn_waiters = waiting;
                for (_, reply) in done {
                    let _ = reply.send(result.clone());
                }
                false
            }
            Event::Fatal { .. } | Event::ProducerIdChanged { .. } => false,
        }
    }
}
