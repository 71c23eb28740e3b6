//! The I/O thread: a loop over the [`Session`], and nothing else.
//!
//! One thread owns the session. Everything reaches it as a [`Msg`] on one channel, which
//! is also its wake-up: application commands from [`Producer`](crate::Producer)
//! handles, and what the connection threads read. After each burst of messages (and
//! whenever the clock passes the session's `poll_timeout`) it executes the session's
//! outputs (a frame goes to its connection's writer thread, see [`crate::net`]: this
//! thread never blocks on a socket), hands each completion to whoever waits for it (by
//! `SendId` or `OpId`), and then waits on the channel until the next message or
//! `poll_timeout`.

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kacrab_driver::{
    Completion, ConnId, ConnectionError, Extensions, OpId, Output, ProducerRecord, SendId,
    SendSlots, Session, SessionConfig, TxnCall,
};
use kacrab_idempotence::{Timestamp, TxnError};

use crate::error::SendError;
use crate::gate::{Buffer, Gate, IoThread};
use crate::net::{Net, NetEvent, WriteFailed};
use crate::oneshot;
use crate::ProduceError;
use kacrab_driver::RecordMetadata;

/// What a record's outcome goes to.
pub(crate) type Outcome = Result<RecordMetadata, ProduceError>;

/// A user callback.
pub(crate) type Callback = Box<dyn FnOnce(Outcome) + Send>;

/// Where one record's outcome goes. Dropped without an outcome (the I/O thread died),
/// it reports [`ProduceError::Terminated`].
pub(crate) struct Done(Option<DoneKind>);

enum DoneKind {
    Handle(oneshot::Sender<Outcome>),
    Callback(Callback),
}

impl Done {
    pub(crate) fn handle(tx: oneshot::Sender<Outcome>) -> Self {
        Self(Some(DoneKind::Handle(tx)))
    }

    pub(crate) fn callback(f: Callback) -> Self {
        Self(Some(DoneKind::Callback(f)))
    }

    /// Drops it without an outcome and without calling a callback (the caller of `send`
    /// got the error instead).
    pub(crate) fn disarm(mut self) {
        self.0.take();
    }

    fn complete(mut self, outcome: Outcome) {
        match self.0.take() {
            Some(DoneKind::Handle(tx)) => tx.send(outcome),
            // A panicking callback must not take the I/O thread (and every other record)
            // down with it.
            Some(DoneKind::Callback(f)) => {
                let ran = catch_unwind(AssertUnwindSafe(|| f(outcome)));
                if ran.is_err() {
                    log_panic("a delivery callback panicked");
                }
            }
            None => {}
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(DoneKind::Callback(f)) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| f(Err(ProduceError::Terminated))));
        }
        // A handle's sender reports the loss by being dropped.
    }
}

/// A send's admission: `Ok` once the session took it in (or gave it an outcome other
/// than a full buffer), `Err` when `max.block.ms` passed with the buffer full.
pub(crate) type Admission = oneshot::Sender<Result<(), SendError>>;

/// Everything the I/O thread hears about.
pub(crate) enum Msg {
    /// `Producer::send`. `admission` when the caller waits for its record to leave the
    /// session's backlog.
    Send {
        record: ProducerRecord,
        done: Done,
        /// What it counts on the gate.
        size: usize,
        admission: Option<Admission>,
    },
    Flush(oneshot::Sender<()>),
    /// `Producer::abort`: fail every record without an outcome now, then close.
    Abort(oneshot::Sender<()>),
    /// `Producer::close`; `reply` is `None` when the last handle was dropped.
    Close {
        timeout: Option<Duration>,
        reply: Option<oneshot::Sender<()>>,
    },
    PartitionCount {
        topic: String,
        reply: oneshot::Sender<Option<i32>>,
    },
    Transaction {
        call: TxnCall,
        reply: oneshot::Sender<Result<(), TxnError>>,
    },
    /// `Producer::metrics`, answered at once.
    Metrics(oneshot::Sender<kacrab_driver::MetricsSnapshot>),
    /// `Producer::client_instance_id`, answered at once.
    ClientInstanceId(oneshot::Sender<Option<[u8; 16]>>),
    Net(NetEvent),
}

/// Who waits for a command other than a send.
enum OpWaiter {
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
    Count(oneshot::Sender<Option<i32>>),
    Txn(oneshot::Sender<Result<(), TxnError>>),
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
    /// Connections the session closed.
    pub closes: u64,
    /// Frames written.
    pub frames_written: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// `handle_timeout` calls.
    pub timeouts: u64,
}

impl IoStats {
    fn add(&mut self, d: &Self) {
        self.connects += d.connects;
        self.connect_failures += d.connect_failures;
        self.disconnects += d.disconnects;
        self.closes += d.closes;
        self.frames_written += d.frames_written;
        self.bytes_written += d.bytes_written;
        self.bytes_read += d.bytes_read;
        self.timeouts += d.timeouts;
    }
}

/// How many messages one wake-up handles before it writes out and checks the clock.
const BURST: usize = 256;

/// The I/O thread's state.
pub(crate) struct Io {
    session: Session,
    /// `Timestamp::ZERO`.
    start: Instant,
    rx: Receiver<Msg>,
    net: Net,
    gate: Arc<Gate>,
    stats: Arc<Mutex<IoStats>>,
    /// Counted since the last publish.
    local: IoStats,
    /// Bytes taken off the channel since the last publish.
    taken: usize,
    /// `max.block.ms`, to name it in a refusal.
    max_block: Duration,
    /// Every send without its outcome. Invariant: one entry per send the session has
    /// not completed.
    records: SendSlots<Done>,
    /// Senders blocked until their record leaves the session's backlog. Invariant: a
    /// subset of `records`' ids.
    admissions: BTreeMap<SendId, Admission>,
    ops: HashMap<OpId, OpWaiter>,
}

impl Io {
    /// The session for `config`, its clock starting now.
    pub(crate) fn new(
        config: SessionConfig,
        extensions: &Extensions,
        rx: Receiver<Msg>,
        tx: Sender<Msg>,
        gate: Arc<Gate>,
        stats: Arc<Mutex<IoStats>>,
    ) -> Self {
        let max_block = config.max_block();
        let start = Instant::now();
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut config = config;
        seed_sasl_nonces(&mut config);
        let mut session = Session::new(config, Timestamp::ZERO, unix_ms);
        session.install(extensions);
        Self {
            session,
            start,
            rx,
            net: Net::new(tx),
            gate,
            stats,
            local: IoStats::default(),
            taken: 0,
            max_block,
            records: SendSlots::new(),
            admissions: BTreeMap::new(),
            ops: HashMap::new(),
        }
    }

    /// Runs the loop until the session is finished (a close), then answers what raced
    /// the close. After a panic, every waiter learns the thread is gone.
    pub(crate) fn run(mut self) {
        let ran = catch_unwind(AssertUnwindSafe(|| self.run_loop()));
        let thread = if ran.is_ok() {
            IoThread::Stopped
        } else {
            log_panic("the I/O thread panicked; failing every pending record");
            IoThread::Died
        };
        // No send passes the gate from here on.
        let failure = self.session.connection_failure().cloned();
        self.gate.stop(thread, failure);
        if thread == IoThread::Stopped {
            // The finished session still answers commands (sends fail with `Closed`).
            while let Ok(msg) = self.rx.try_recv() {
                self.handle(msg);
            }
            self.drive();
            self.publish();
        }
        self.net.shut_all();
        // Whatever is left (only after a panic) is dropped: records report `Terminated`,
        // waiters wake with nothing.
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    fn run_loop(&mut self) {
        loop {
            let now = self.now();
            if self.session.poll_timeout().is_some_and(|t| t <= now) {
                self.session.handle_timeout(now);
                self.local.timeouts += 1;
            }
            self.drive();
            self.publish();
            if self.session.is_finished() {
                return;
            }
            let msg = match self.session.poll_timeout() {
                Some(at) => match self
                    .rx
                    .recv_timeout(at.saturating_duration_since(self.now()))
                {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
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

    /// One input to the session.
    fn handle(&mut self, msg: Msg) {
        let now = self.now();
        let s = &mut self.session;
        let (op, waiter) = match msg {
            Msg::Send {
                record,
                done,
                size,
                admission,
            } => {
                self.taken += size;
                let id = s.send(record, now);
                self.records.insert(id, done);
                if let Some(a) = admission {
                    self.admissions.insert(id, a);
                }
                return;
            }
            Msg::Flush(reply) => (s.flush(now), OpWaiter::Flush(reply)),
            Msg::Abort(reply) => {
                s.abort(now);
                // A close after the abort completes once the abort's outcomes are out.
                (s.close(Some(Duration::ZERO), now), OpWaiter::Close(reply))
            }
            Msg::Close { timeout, reply } => {
                let op = s.close(timeout, now);
                match reply {
                    Some(reply) => (op, OpWaiter::Close(reply)),
                    None => return,
                }
            }
            Msg::PartitionCount { topic, reply } => {
                (s.partition_count(&topic, now), OpWaiter::Count(reply))
            }
            Msg::Transaction { call, reply } => {
                let op = s.transaction(call, now);
                (op, OpWaiter::Txn(reply))
            }
            Msg::Metrics(reply) => {
                reply.send(s.metrics(now));
                return;
            }
            Msg::ClientInstanceId(reply) => {
                reply.send(s.client_instance_id());
                return;
            }
            Msg::Net(event) => {
                self.network(event, now);
                return;
            }
        };
        self.ops.insert(op, waiter);
    }

    fn network(&mut self, event: NetEvent, now: Timestamp) {
        match event {
            NetEvent::Connected { conn, open } => {
                if self.net.opened(conn, open) {
                    self.local.connects += 1;
                    self.session.handle_connected(conn, now);
                }
            }
            NetEvent::ConnectFailed { conn, cause } => {
                if self.net.remove(conn) {
                    self.local.connect_failures += 1;
                    self.session.handle_connect_error(conn, cause, now);
                }
            }
            NetEvent::Bytes { conn, data } => {
                if self.net.knows(conn) {
                    self.local.bytes_read += data.len() as u64;
                    self.session.handle_bytes(conn, &data, now);
                }
            }
            NetEvent::Written { conn, frames } => {
                if self.net.knows(conn) {
                    self.session.handle_transmitted(conn, frames, now);
                }
            }
            NetEvent::Eof { conn, cause } => self.lost(conn, cause, now),
        }
    }

    /// A connection failed after it was open (end of stream, a read or write error),
    /// for `cause`.
    fn lost(&mut self, conn: ConnId, cause: ConnectionError, now: Timestamp) {
        if self.net.remove(conn) {
            self.local.disconnects += 1;
            self.session.handle_connection_lost(conn, cause, now);
        }
    }

    /// Executes the session's outputs and hands out its completions until it has none;
    /// then admits the blocked senders the session took in.
    fn drive(&mut self) {
        let now = self.now();
        while let Some(out) = self.session.poll_output(now) {
            self.execute(out, now);
        }
        while let Some(done) = self.session.poll_completion() {
            self.complete(done);
        }
        let oldest_blocked = self.session.oldest_blocked_send();
        while let Some(entry) = self.admissions.first_entry() {
            if oldest_blocked.is_some_and(|b| *entry.key() >= b) {
                break;
            }
            entry.remove().send(Ok(()));
        }
    }

    fn execute(&mut self, out: Output, now: Timestamp) {
        match out {
            Output::Connect { conn, addr } => {
                let options = self.session.connect_options(conn);
                if !self.net.connect(conn, addr, options) {
                    self.local.connect_failures += 1;
                    let cause = ConnectionError::new(
                        std::io::ErrorKind::Other,
                        "could not start the connection's thread",
                    );
                    self.session.handle_connect_error(conn, cause, now);
                }
            }
            // This thread queues every frame on its connection's writer in the session's
            // order, as Java's Sender enqueues on its `Selector` (whose per-connection
            // send waits in user space until the socket takes it), so the core's enqueue
            // tickets (for drivers whose tasks enqueue concurrently) need no handling:
            // neither here nor in `Release`.
            Output::Transmit { conn, frame, .. } => {
                self.local.frames_written += 1;
                self.local.bytes_written += frame.len() as u64;
                if let Err(WriteFailed(conn)) = self.net.write(conn, frame) {
                    // The writer stopped on a failed write; its error is not carried.
                    let cause = ConnectionError::new(
                        std::io::ErrorKind::BrokenPipe,
                        "a write to the socket failed",
                    );
                    self.lost(conn, cause, now);
                }
            }
            Output::Release { .. } => {}
            Output::Close { conn, .. } => {
                if self.net.remove(conn) {
                    self.local.closes += 1;
                }
            }
        }
    }

    fn complete(&mut self, completion: Completion) {
        match completion {
            Completion::Record { id, outcome } => {
                let Some(done) = self.records.remove(id) else {
                    return;
                };
                match (self.admissions.remove(&id), outcome) {
                    // Its caller still waits in `send`: it gets the refusal instead, a
                    // full buffer as the time it waited.
                    (Some(admission), Err(ProduceError::Send(refusal))) => {
                        done.disarm();
                        admission.send(Err(match refusal {
                            kacrab_idempotence::SendError::BufferFull { .. } => {
                                SendError::Timeout(self.max_block)
                            }
                            other => SendError::Rejected(other),
                        }));
                    }
                    (admission, outcome) => {
                        if let Some(a) = admission {
                            a.send(Ok(()));
                        }
                        done.complete(outcome);
                    }
                }
            }
            Completion::Flushed { op } | Completion::Closed { op } => {
                if let Some(OpWaiter::Flush(reply) | OpWaiter::Close(reply)) = self.ops.remove(&op)
                {
                    reply.send(());
                }
            }
            Completion::PartitionCount { op, count } => {
                if let Some(OpWaiter::Count(reply)) = self.ops.remove(&op) {
                    reply.send(count);
                }
            }
            Completion::Transaction { op, result, .. } => {
                if let Some(OpWaiter::Txn(reply)) = self.ops.remove(&op) {
                    reply.send(result);
                }
            }
            _ => {}
        }
    }

    /// Tells application threads what changed: the channel's room, whether the session
    /// holds sends, a fatal error; and adds the counters up.
    fn publish(&mut self) {
        let buffer = if self.session.oldest_blocked_send().is_some() {
            Buffer::Blocked
        } else {
            Buffer::HasRoom
        };
        let fatal = self.session.producer().fatal_error();
        self.gate
            .publish(std::mem::take(&mut self.taken), buffer, fatal);
        if self.local != IoStats::default() {
            let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
            s.add(&std::mem::take(&mut self.local));
        }
    }
}

/// Fills the SCRAM nonce seed from the operating system unless the application gave
/// one: the session is deterministic and has no randomness of its own.
fn seed_sasl_nonces(config: &mut kacrab_driver::SessionConfig) {
    if config.sasl().nonce_seed_setting().is_none() {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the operating system's random source");
        config.set_sasl_nonce_seed(kacrab_driver::NonceSeed::new(seed));
    }
}

/// Reports a caught panic: through `tracing` (target `kacrab`) with the feature; without
/// it, on stderr, since a swallowed panic must not go unnoticed.
fn log_panic(what: &str) {
    #[cfg(feature = "tracing")]
    tracing::error!(target: "kacrab", "kacrab-blocking: {what}");
    #[cfg(not(feature = "tracing"))]
    eprintln!("kacrab-blocking: {what}");
}
