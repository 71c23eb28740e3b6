//! The I/O thread: the core's driver loop over `std::net`.
//!
//! One thread owns the [`Session`] and every socket's write half. Everything else reaches
//! it as a [`Msg`] on one channel: application calls from [`Producer`](crate::Producer)
//! handles, and bytes, end-of-stream and connect results from one thread per connection
//! (which connects, then blocks on `read`). After every message the loop drains
//! `poll_output` (executing each [`Output`]) and `poll_event` (completing records), then
//! waits on the channel until the next message or `poll_timeout`, whichever is first.

use std::collections::{HashMap, VecDeque};
use std::io::{BufWriter, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use kacrab_driver::{ConnId, Output, Session};
use kacrab_idempotence::{
    ConsumerGroupMetadata, Event, KafkaError, OffsetToCommit, Record, RecordId, Timestamp,
    TopicPartition, TxnError, TxnOp,
};

use crate::error::{ProduceError, SendError};
use crate::oneshot;
use kacrab_driver::RecordMetadata;

/// What a record's outcome goes to.
pub(crate) type Outcome = Result<RecordMetadata, ProduceError>;

/// A user callback.
pub(crate) type Callback = Box<dyn FnOnce(Outcome) + Send>;

/// Where one record's outcome goes. Dropped without an outcome (the I/O thread died),
/// it reports [`ProduceError::Terminated`].
pub(crate) struct Completion(Option<CompletionKind>);

enum CompletionKind {
    Handle(oneshot::Sender<Outcome>),
    Callback(Callback),
}

impl Completion {
    pub(crate) fn handle(tx: oneshot::Sender<Outcome>) -> Self {
        Self(Some(CompletionKind::Handle(tx)))
    }

    pub(crate) fn callback(f: Callback) -> Self {
        Self(Some(CompletionKind::Callback(f)))
    }

    /// Drops it without an outcome and without calling a callback (the record was never
    /// queued, and the caller got the error instead).
    pub(crate) fn disarm(mut self) {
        self.0.take();
    }

    fn complete(mut self, outcome: Outcome) {
        match self.0.take() {
            Some(CompletionKind::Handle(tx)) => tx.send(outcome),
            // A panicking callback must not take the I/O thread (and every other record)
            // down with it.
            Some(CompletionKind::Callback(f)) => {
                let ran = catch_unwind(AssertUnwindSafe(|| f(outcome)));
                if ran.is_err() {
                    eprintln!("kacrab-blocking: a delivery callback panicked");
                }
            }
            None => {}
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if let Some(CompletionKind::Callback(f)) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| f(Err(ProduceError::Terminated))));
        }
        // A handle's sender reports Shutdown by being dropped.
    }
}

/// A record on its way from `send` to the core.
pub(crate) struct Posted {
    pub(crate) partition: TopicPartition,
    pub(crate) record: Record,
    pub(crate) done: Completion,
    /// What it counts against the hand-off limit.
    pub(crate) size: usize,
    /// When `max.block.ms` runs out for it.
    pub(crate) block_deadline: Instant,
}

/// Everything the I/O thread hears about.
/// The transactional operations, as the application calls them.
pub(crate) enum TxnCall {
    Init,
    Begin,
    SendOffsets(Vec<OffsetToCommit>, ConsumerGroupMetadata),
    Commit,
    Abort,
}

pub(crate) enum Msg {
    /// `Producer::send`.
    Send(Box<Posted>),
    /// `Producer::flush`: answer once every record posted before it has an outcome.
    Flush(oneshot::Sender<()>),
    /// `Producer::close`: finish everything, then stop. After `abort_at`, fail what is
    /// left.
    Close {
        done: Option<oneshot::Sender<()>>,
        abort_at: Option<Instant>,
    },
    /// `Producer::partition_count`.
    PartitionCount {
        topic: String,
        deadline: Instant,
        reply: oneshot::Sender<Option<i32>>,
    },
    /// A transactional operation; the reply comes with its completion event.
    Transaction {
        call: TxnCall,
        reply: oneshot::Sender<Result<(), TxnError>>,
    },
    /// A connection thread connected.
    Connected { conn: ConnId, stream: TcpStream },
    /// A connection thread could not connect.
    ConnectFailed { conn: ConnId },
    /// Bytes read from a connection.
    Bytes { conn: ConnId, data: Vec<u8> },
    /// A connection reached end-of-stream or failed to read.
    Eof { conn: ConnId },
}

/// What application threads and the I/O thread share besides the channel: whether
/// `send` may hand over a record now.
pub(crate) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    /// Bytes of posted records above which `send` blocks.
    posted_limit: usize,
    pub(crate) max_block: Duration,
}

#[derive(Default)]
pub(crate) struct GateState {
    /// `close` was called.
    pub(crate) closed: bool,
    /// The core's fatal error, once seen.
    pub(crate) fatal: Option<KafkaError>,
    /// The I/O thread has ended.
    pub(crate) stopped: bool,
    /// The core answered BufferFull: records wait in the I/O thread for deliveries.
    backlog: bool,
    /// Bytes posted and not yet taken by the I/O thread.
    posted_bytes: usize,
    waiters: usize,
}

impl Gate {
    pub(crate) fn new(buffer_memory: usize, max_block: Duration) -> Self {
        Self {
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
            posted_limit: buffer_memory.clamp(1, 1 << 20),
            max_block,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until a record of `size` bytes may be posted (up to `max.block.ms`), and
    /// counts it as posted. `on_io_thread`: never wait (a callback cannot wait for the
    /// thread running it); the record joins the backlog instead.
    pub(crate) fn admit(&self, size: usize, on_io_thread: bool) -> Result<(), SendError> {
        let mut g = self.lock();
        let mut deadline: Option<Instant> = None;
        loop {
            if g.closed {
                return Err(SendError::Rejected(kacrab_idempotence::SendError::Closed));
            }
            if let Some(e) = g.fatal {
                return Err(SendError::Rejected(kacrab_idempotence::SendError::Fatal(e)));
            }
            if g.stopped {
                return Err(SendError::Terminated);
            }
            // Once waiting, wait for the hand-off to half empty, not for the first byte
            // of room: one wake-up per burst, not per record.
            let limit = if deadline.is_some() {
                self.posted_limit / 2
            } else {
                self.posted_limit
            };
            let room = g.posted_bytes == 0 || g.posted_bytes + size <= limit;
            if on_io_thread || (!g.backlog && room) {
                g.posted_bytes += size;
                return Ok(());
            }
            let d = *deadline.get_or_insert_with(|| Instant::now() + self.max_block);
            let now = Instant::now();
            if now >= d {
                return Err(SendError::Timeout(self.max_block));
            }
            g.waiters += 1;
            g = self
                .changed
                .wait_timeout(g, d - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            g.waiters -= 1;
        }
    }

    /// Gives back the bytes of a record that was counted but never posted.
    pub(crate) fn unadmit(&self, size: usize) {
        let mut g = self.lock();
        g.posted_bytes = g.posted_bytes.saturating_sub(size);
    }

    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }
}

/// Counters of the I/O thread, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoStats {
    /// Connections opened.
    pub connects: u64,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Connections lost (end of stream, read or write error).
    pub disconnects: u64,
    /// Connections the session asked to close.
    pub closes: u64,
    /// Frames written.
    pub frames_written: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// `handle_timeout` calls.
    pub timeouts: u64,
    /// Times `poll_timeout` still named a past deadline right after `handle_timeout`
    /// (the loop then sleeps 1 ms instead of spinning). Zero unless the core is wrong.
    pub stale_deadlines: u64,
    /// Records that waited in the backlog because the core's buffer.memory was full.
    pub backlogged: u64,
}

enum Conn {
    Connecting {
        closed: Arc<AtomicBool>,
    },
    Open {
        writer: BufWriter<TcpStream>,
        dirty: bool,
        closed: Arc<AtomicBool>,
    },
}

impl Conn {
    /// Stops the socket and tells its reader thread to go.
    fn shut(self) {
        match self {
            Self::Connecting { closed } => closed.store(true, Ordering::Release),
            Self::Open { writer, closed, .. } => {
                closed.store(true, Ordering::Release);
                // Unwritten frames are dropped, not flushed (as BufWriter's drop would).
                let (stream, _unwritten) = writer.into_parts();
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

struct Entry {
    seq: u64,
    timestamp: i64,
    done: Completion,
}

struct MetadataWaiter {
    topic: String,
    deadline: Instant,
    ask_again: Instant,
    reply: oneshot::Sender<Option<i32>>,
}

/// How many messages one wake-up handles before it writes out and checks the clock.
const BURST: usize = 256;
/// Each connection's write buffer; a frame is written when the burst ends.
const WRITE_BUFFER: usize = 64 * 1024;
const READ_BUFFER: usize = 64 * 1024;

/// The I/O thread's state.
pub(crate) struct Io {
    session: Session,
    start: Instant,
    rx: Receiver<Msg>,
    tx: Sender<Msg>,
    gate: Arc<Gate>,
    stats: Arc<Mutex<IoStats>>,
    local: IoStats,
    request_timeout: Duration,
    metadata_retry: Duration,

    conns: HashMap<ConnId, Conn>,
    pending: HashMap<RecordId, Entry>,
    /// Records the core refused with BufferFull, in send order, with their sequence.
    backlog: VecDeque<(u64, Box<Posted>)>,
    /// Bytes taken off the hand-off since the gate was last updated.
    taken_bytes: usize,
    /// Whether records got outcomes since the backlog was last retried.
    freed: bool,

    /// Sequence of the next posted record (FIFO order of the channel).
    next_seq: u64,
    /// Lowest sequence without an outcome; `resolved[i]` is sequence `low + i`.
    low: u64,
    resolved: VecDeque<bool>,
    flushes: Vec<(u64, oneshot::Sender<()>)>,

    closing: bool,
    close_waiters: Vec<oneshot::Sender<()>>,
    abort_at: Option<Instant>,
    core_closed: bool,
    metadata_waiters: Vec<MetadataWaiter>,
    /// Callers waiting for a transactional operation's completion event.
    txn_waiters: Vec<(TxnOp, oneshot::Sender<Result<(), TxnError>>)>,
    /// The earliest time the loop wakes for a deadline `poll_timeout` keeps naming.
    stale_until: Option<Instant>,
}

impl Io {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        session: Session,
        rx: Receiver<Msg>,
        tx: Sender<Msg>,
        gate: Arc<Gate>,
        stats: Arc<Mutex<IoStats>>,
        start: Instant,
        request_timeout: Duration,
        metadata_retry: Duration,
    ) -> Self {
        Self {
            session,
            start,
            rx,
            tx,
            gate,
            stats,
            local: IoStats::default(),
            request_timeout,
            metadata_retry,
            conns: HashMap::new(),
            pending: HashMap::new(),
            backlog: VecDeque::new(),
            taken_bytes: 0,
            freed: false,
            next_seq: 0,
            low: 0,
            resolved: VecDeque::new(),
            flushes: Vec::new(),
            closing: false,
            close_waiters: Vec::new(),
            abort_at: None,
            core_closed: false,
            metadata_waiters: Vec::new(),
            txn_waiters: Vec::new(),
            stale_until: None,
        }
    }

    /// Runs the loop until the producer is closed, then fails whatever is left (only
    /// after a panic is anything left).
    pub(crate) fn run(mut self) {
        let result = catch_unwind(AssertUnwindSafe(|| self.run_loop()));
        if result.is_err() {
            eprintln!("kacrab-blocking: the I/O thread panicked; failing every pending record");
        }
        self.stop();
    }

    // ------------------------------------------------------------------ clock

    fn now(&self) -> Timestamp {
        Timestamp::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    fn instant(&self, t: Timestamp) -> Instant {
        self.start + Duration::from_micros(t.as_micros())
    }

    // ------------------------------------------------------------------ loop

    fn run_loop(&mut self) {
        loop {
            // The clock: once it passed the core's deadline, say so.
            let now = Instant::now();
            if let Some(deadline) = self.session.poll_timeout() {
                let due =
                    self.instant(deadline) <= now && self.stale_until.is_none_or(|t| t <= now);
                if due {
                    let ts = self.now();
                    self.session.handle_timeout(ts);
                    self.local.timeouts += 1;
                    self.after_input();
                    self.stale_until = None;
                    if self.session.poll_timeout().is_some_and(|d| d <= ts) {
                        self.local.stale_deadlines += 1;
                        self.stale_until = Some(now + Duration::from_millis(1));
                    }
                }
            }
            self.expire_backlog(now);
            self.serve_metadata_waiters(now);
            if self.abort_at.is_some_and(|t| t <= now) {
                self.abort_at = None;
                self.session.producer().abort();
                self.after_input();
            }
            self.write_out();
            self.publish();
            if self.finished() {
                return;
            }

            let msg = match self.next_wake() {
                Some(at) => {
                    let wait = at.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(wait) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match self.rx.recv() {
                    Ok(m) => m,
                    Err(_) => return,
                },
            };
            self.handle(msg);
            for _ in 0..BURST {
                match self.rx.try_recv() {
                    Ok(m) => self.handle(m),
                    Err(_) => break,
                }
            }
        }
    }

    /// When the loop must wake without a message.
    fn next_wake(&self) -> Option<Instant> {
        let core = self.session.poll_timeout().map(|t| {
            let at = self.instant(t);
            self.stale_until.map_or(at, |s| at.max(s))
        });
        let backlog = self.backlog.front().map(|(_, p)| p.block_deadline);
        let metadata = self
            .metadata_waiters
            .iter()
            .map(|w| w.deadline.min(w.ask_again))
            .min();
        [core, backlog, metadata, self.abort_at]
            .into_iter()
            .flatten()
            .min()
    }

    fn finished(&self) -> bool {
        self.core_closed && self.backlog.is_empty() && self.session.producer_ref().is_closed()
    }

    fn handle(&mut self, msg: Msg) {
        let now = self.now();
        match msg {
            Msg::Send(posted) => {
                self.taken_bytes += posted.size;
                let seq = self.next_seq;
                self.next_seq += 1;
                self.resolved.push_back(false);
                if self.backlog.is_empty() {
                    if let Err(posted) = self.offer(seq, posted, now) {
                        self.local.backlogged += 1;
                        self.backlog.push_back((seq, posted));
                    }
                } else {
                    // Behind records already waiting: send order is kept.
                    self.local.backlogged += 1;
                    self.backlog.push_back((seq, posted));
                }
            }
            Msg::Flush(done) => {
                self.session.producer().flush();
                let mark = self.next_seq;
                if self.low >= mark {
                    done.send(());
                } else {
                    self.flushes.push((mark, done));
                }
            }
            Msg::Close { done, abort_at } => {
                self.closing = true;
                self.close_waiters.extend(done);
                if let Some(t) = abort_at {
                    self.abort_at = Some(self.abort_at.map_or(t, |a| a.min(t)));
                }
                self.maybe_close_core();
            }
            Msg::Transaction { call, reply } => {
                let producer = self.session.producer();
                let (op, started) = match call {
                    TxnCall::Init => (TxnOp::InitTransactions, producer.init_transactions()),
                    TxnCall::Begin => {
                        reply.send(producer.begin_transaction());
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
                    Err(e) => reply.send(Err(e)),
                }
            }
            Msg::PartitionCount {
                topic,
                deadline,
                reply,
            } => {
                if let Some(n) = self.session.partition_count(&topic) {
                    reply.send(Some(n));
                } else {
                    self.session.request_metadata(&[topic.as_str()], now);
                    let ask_again = Instant::now() + self.metadata_retry;
                    self.metadata_waiters.push(MetadataWaiter {
                        topic,
                        deadline,
                        ask_again,
                        reply,
                    });
                }
            }
            Msg::Connected { conn, stream } => match self.conns.remove(&conn) {
                Some(Conn::Connecting { closed }) => {
                    self.local.connects += 1;
                    let writer = BufWriter::with_capacity(WRITE_BUFFER, stream);
                    self.conns.insert(
                        conn,
                        Conn::Open {
                            writer,
                            dirty: false,
                            closed,
                        },
                    );
                    self.session.handle_connected(conn, now);
                }
                // Closed by the session while connecting.
                other => {
                    if let Some(c) = other {
                        self.conns.insert(conn, c);
                    }
                    let _ = stream.shutdown(Shutdown::Both);
                }
            },
            Msg::ConnectFailed { conn } => {
                if self.conns.remove(&conn).is_some() {
                    self.local.connect_failures += 1;
                    self.session.handle_connect_failed(conn, now);
                }
            }
            Msg::Bytes { conn, data } => {
                if self.conns.contains_key(&conn) {
                    self.local.bytes_read += data.len() as u64;
                    self.session.handle_bytes(conn, &data, now);
                }
            }
            Msg::Eof { conn } => self.lost(conn, now),
        }
        self.after_input();
    }

    /// Hands one record to the core. `Err` gives it back when the core's buffer is full.
    fn offer(&mut self, seq: u64, posted: Box<Posted>, now: Timestamp) -> Result<(), Box<Posted>> {
        match self
            .session
            .producer()
            .send(&posted.partition, &posted.record, now)
        {
            Ok(id) => {
                let Posted { record, done, .. } = *posted;
                let entry = Entry {
                    seq,
                    timestamp: record.timestamp,
                    done,
                };
                self.pending.insert(id, entry);
                Ok(())
            }
            Err(kacrab_idempotence::SendError::BufferFull { .. }) => Err(posted),
            Err(e) => {
                let Posted { done, .. } = *posted;
                self.resolve(seq, done, Err(ProduceError::Send(SendError::Rejected(e))));
                Ok(())
            }
        }
    }

    /// The core's driver loop after one input: drain `poll_output`, executing each
    /// output, then `poll_event`.
    fn after_input(&mut self) {
        loop {
            let now = self.now();
            while let Some(out) = self.session.poll_output(now) {
                self.execute(out, now);
            }
            self.drain_events();
            if !self.retry_backlog() {
                break;
            }
        }
    }

    fn execute(&mut self, out: Output, now: Timestamp) {
        match out {
            Output::Connect { conn, addr } => self.connect(conn, addr, now),
            // Frames go out from this one thread in the order the session produced them,
            // so the core's enqueue tickets (for drivers writing from several tasks) are
            // already honoured and are not needed here.
            Output::Transmit { conn, frame, .. } => {
                let failed = match self.conns.get_mut(&conn) {
                    Some(Conn::Open { writer, dirty, .. }) => {
                        *dirty = true;
                        self.local.frames_written += 1;
                        self.local.bytes_written += frame.len() as u64;
                        writer.write_all(&frame).is_err()
                    }
                    _ => false,
                };
                if failed {
                    self.lost(conn, now);
                }
            }
            // Only a driver ordering writes across tasks by ticket needs to hear that a
            // ticket will never be written; this loop has no such order to keep.
            Output::Release { .. } => {}
            Output::Close { conn } => {
                if let Some(c) = self.conns.remove(&conn) {
                    self.local.closes += 1;
                    c.shut();
                }
            }
        }
    }

    /// A connection failed after it was open (read end, read or write error).
    fn lost(&mut self, conn: ConnId, now: Timestamp) {
        if let Some(c) = self.conns.remove(&conn) {
            self.local.disconnects += 1;
            c.shut();
            self.session.handle_disconnected(conn, now);
        }
    }

    /// Opens a connection on its own thread (DNS and `connect_timeout` never block this
    /// loop); that thread then becomes the connection's reader.
    fn connect(&mut self, conn: ConnId, addr: String, now: Timestamp) {
        let closed = Arc::new(AtomicBool::new(false));
        self.conns.insert(
            conn,
            Conn::Connecting {
                closed: Arc::clone(&closed),
            },
        );
        let tx = self.tx.clone();
        let timeout = self.request_timeout;
        let spawned = thread::Builder::new()
            .name(format!("kacrab-conn-{}", conn.0))
            .spawn(move || connection_thread(conn, &addr, timeout, &closed, &tx));
        if spawned.is_err() {
            self.conns.remove(&conn);
            self.local.connect_failures += 1;
            self.session.handle_connect_failed(conn, now);
        }
    }

    fn drain_events(&mut self) {
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Delivered {
                    partition,
                    records,
                    base_offset,
                } => {
                    self.freed = true;
                    for (i, id) in records.iter().enumerate() {
                        let Some(e) = self.pending.remove(id) else {
                            continue;
                        };
                        let metadata = RecordMetadata {
                            topic: partition.topic.clone(),
                            partition: partition.partition,
                            offset: base_offset.map(|b| b + i as i64),
                            timestamp: e.timestamp,
                        };
                        self.resolve(e.seq, e.done, Ok(metadata));
                    }
                }
                Event::Failed {
                    records,
                    error,
                    possibly_written,
                    ..
                } => {
                    self.freed = true;
                    for id in &records {
                        let Some(e) = self.pending.remove(id) else {
                            continue;
                        };
                        let outcome = Err(ProduceError::Delivery {
                            error: error.clone(),
                            possibly_written,
                        });
                        self.resolve(e.seq, e.done, outcome);
                    }
                }
                Event::Fatal { error } => {
                    self.gate.lock().fatal = Some(error);
                    self.gate.notify();
                }
                Event::TransactionCompleted { op, result } => {
                    let (done, waiting): (Vec<_>, Vec<_>) =
                        self.txn_waiters.drain(..).partition(|(o, _)| *o == op);
                    self.txn_waiters = waiting;
                    for (_, reply) in done {
                        reply.send(result.clone());
                    }
                }
                Event::ProducerIdChanged { .. } => {}
            }
        }
        self.maybe_close_core();
    }

    /// Offers backlogged records to the core again after deliveries freed memory.
    /// Returns whether the core took any (so its outputs need draining).
    fn retry_backlog(&mut self) -> bool {
        if !self.freed || self.backlog.is_empty() {
            self.freed = false;
            return false;
        }
        self.freed = false;
        let now = self.now();
        let mut took = false;
        while let Some((seq, posted)) = self.backlog.pop_front() {
            match self.offer(seq, posted, now) {
                Ok(()) => took = true,
                Err(posted) => {
                    self.backlog.push_front((seq, posted));
                    break;
                }
            }
        }
        self.maybe_close_core();
        took
    }

    /// Fails backlogged records whose `max.block.ms` ran out.
    fn expire_backlog(&mut self, now: Instant) {
        while self
            .backlog
            .front()
            .is_some_and(|(_, p)| p.block_deadline <= now)
        {
            let Some((seq, posted)) = self.backlog.pop_front() else {
                break;
            };
            let error = SendError::Timeout(self.gate.max_block);
            self.resolve(seq, posted.done, Err(ProduceError::Send(error)));
        }
        self.maybe_close_core();
    }

    fn serve_metadata_waiters(&mut self, now: Instant) {
        if self.metadata_waiters.is_empty() {
            return;
        }
        let ts = self.now();
        let mut ask: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.metadata_waiters.len() {
            let w = &mut self.metadata_waiters[i];
            if let Some(n) = self.session.partition_count(&w.topic) {
                self.metadata_waiters.swap_remove(i).reply.send(Some(n));
            } else if w.deadline <= now {
                self.metadata_waiters.swap_remove(i).reply.send(None);
            } else {
                if w.ask_again <= now {
                    w.ask_again = now + self.metadata_retry;
                    if !ask.contains(&w.topic) {
                        ask.push(w.topic.clone());
                    }
                }
                i += 1;
            }
        }
        if !ask.is_empty() {
            let topics: Vec<&str> = ask.iter().map(String::as_str).collect();
            self.session.request_metadata(&topics, ts);
            self.after_input();
        }
    }

    /// Closes the core once `close` was asked for and no record waits in the backlog
    /// (the core would refuse records sent after its `close`).
    fn maybe_close_core(&mut self) {
        if self.closing && !self.core_closed && self.backlog.is_empty() {
            self.core_closed = true;
            self.session.producer().close();
        }
    }

    fn resolve(&mut self, seq: u64, done: Completion, outcome: Outcome) {
        done.complete(outcome);
        if let Some(slot) = seq
            .checked_sub(self.low)
            .and_then(|i| self.resolved.get_mut(i as usize))
        {
            *slot = true;
        }
        while self.resolved.front() == Some(&true) {
            self.resolved.pop_front();
            self.low += 1;
        }
        if !self.flushes.is_empty() {
            let low = self.low;
            let mut i = 0;
            while i < self.flushes.len() {
                if self.flushes[i].0 <= low {
                    self.flushes.swap_remove(i).1.send(());
                } else {
                    i += 1;
                }
            }
        }
    }

    /// Writes out what the burst buffered; a failed write is a lost connection.
    fn write_out(&mut self) {
        loop {
            let mut failed = Vec::new();
            for (&conn, c) in &mut self.conns {
                if let Conn::Open { writer, dirty, .. } = c {
                    if *dirty {
                        *dirty = false;
                        if writer.flush().is_err() {
                            failed.push(conn);
                        }
                    }
                }
            }
            if failed.is_empty() {
                return;
            }
            let now = self.now();
            for conn in failed {
                self.lost(conn, now);
            }
            self.after_input();
        }
    }

    /// Tells waiting application threads what changed.
    fn publish(&mut self) {
        let backlog = !self.backlog.is_empty();
        let taken = std::mem::take(&mut self.taken_bytes);
        {
            let mut g = self.gate.lock();
            let before = (g.backlog, g.posted_bytes > self.gate.posted_limit / 2);
            g.posted_bytes = g.posted_bytes.saturating_sub(taken);
            g.backlog = backlog;
            let after = (g.backlog, g.posted_bytes > self.gate.posted_limit / 2);
            // Wake waiters when what they wait for may have come: the backlog cleared,
            // the hand-off fell to half, or emptied (a record above half the limit waits
            // for that).
            let emptied = taken > 0 && g.posted_bytes == 0;
            if g.waiters > 0 && (before != after || emptied) {
                self.gate.notify();
            }
        }
        if self.local != IoStats::default() {
            let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
            add(&mut s, &std::mem::take(&mut self.local));
        }
    }

    /// Ends the thread: closes every socket, answers every waiter, and fails every
    /// record left (none after a clean close).
    fn stop(&mut self) {
        {
            let mut g = self.gate.lock();
            g.stopped = true;
            g.closed = true;
        }
        self.gate.notify();
        for (_, c) in self.conns.drain() {
            c.shut();
        }
        for (_, e) in self.pending.drain() {
            e.done.complete(Err(ProduceError::Terminated));
        }
        for (_, p) in self.backlog.drain(..) {
            p.done.complete(Err(ProduceError::Terminated));
        }
        // Records still in the channel were never seen by the core.
        while let Ok(msg) = self.rx.try_recv() {
            match msg {
                Msg::Send(p) => p.done.complete(Err(ProduceError::Terminated)),
                Msg::Flush(done) => done.send(()),
                Msg::Close { done, .. } => self.close_waiters.extend(done),
                Msg::Connected { stream, .. } => {
                    let _ = stream.shutdown(Shutdown::Both);
                }
                _ => {}
            }
        }
        for (_, done) in self.flushes.drain(..) {
            done.send(());
        }
        for w in self.metadata_waiters.drain(..) {
            w.reply.send(None);
        }
        let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        add(&mut s, &std::mem::take(&mut self.local));
        drop(s);
        for done in self.close_waiters.drain(..) {
            done.send(());
        }
    }
}

fn add(total: &mut IoStats, d: &IoStats) {
    total.connects += d.connects;
    total.connect_failures += d.connect_failures;
    total.disconnects += d.disconnects;
    total.closes += d.closes;
    total.frames_written += d.frames_written;
    total.bytes_written += d.bytes_written;
    total.bytes_read += d.bytes_read;
    total.timeouts += d.timeouts;
    total.stale_deadlines += d.stale_deadlines;
    total.backlogged += d.backlogged;
}

/// One connection: connect (every resolved address in turn, `request.timeout.ms` each),
/// hand the write half to the I/O thread, then read until the stream ends.
fn connection_thread(
    conn: ConnId,
    addr: &str,
    timeout: Duration,
    closed: &AtomicBool,
    tx: &Sender<Msg>,
) {
    let Some(stream) = open(addr, timeout) else {
        let _ = tx.send(Msg::ConnectFailed { conn });
        return;
    };
    let writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => {
            let _ = tx.send(Msg::ConnectFailed { conn });
            return;
        }
    };
    if tx
        .send(Msg::Connected {
            conn,
            stream: writer,
        })
        .is_err()
    {
        return;
    }
    read_loop(conn, stream, closed, tx);
}

fn open(addr: &str, timeout: Duration) -> Option<TcpStream> {
    let addrs = addr.to_socket_addrs().ok()?;
    for a in addrs {
        let Ok(stream) = TcpStream::connect_timeout(&a, timeout) else {
            continue;
        };
        let configured = stream.set_nodelay(true).is_ok()
            && stream.set_read_timeout(Some(timeout)).is_ok()
            && stream.set_write_timeout(Some(timeout)).is_ok();
        if configured {
            return Some(stream);
        }
    }
    None
}

fn read_loop(conn: ConnId, mut stream: TcpStream, closed: &AtomicBool, tx: &Sender<Msg>) {
    let mut buf = vec![0u8; READ_BUFFER];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if tx
                    .send(Msg::Bytes {
                        conn,
                        data: buf[..n].to_vec(),
                    })
                    .is_err()
                {
                    return;
                }
            }
            // The read timeout only lets this thread notice it was abandoned; requests
            // time out in the core.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                if closed.load(Ordering::Acquire) {
                    return;
                }
            }
            Err(_) => break,
        }
    }
    if !closed.load(Ordering::Acquire) {
        let _ = tx.send(Msg::Eof { conn });
    }
}
