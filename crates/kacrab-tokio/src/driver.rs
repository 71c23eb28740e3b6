//! The driver task: the only owner of the [`Session`]. It runs the session's loop and
//! nothing else: application commands from the handles become session commands,
//! connection events become `handle_connected` / `handle_bytes` /
//! `handle_connect_error` / `handle_connection_lost` (with the socket's error), the
//! clock reaching `poll_timeout` becomes `handle_timeout`, each `poll_output` is
//! carried out, and each `poll_completion` resolves the oneshot its id names. Backlog, flushes, closes, lookups, transactions and every timer are the
//! session's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kacrab_driver::{Completion, ConnId, OpId, Output, SendId, SendSlots, Session, TxnCall};
use kacrab_idempotence::{Timestamp, TxnError};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::conn::{ConnEvent, ConnHandle, ConnTask, Transport};
use crate::gate::{Buffer, Gate};
use crate::{ProduceError, ProducerRecord, RecordMetadata};

/// The reply to one send.
pub(crate) type Reply = oneshot::Sender<Result<RecordMetadata, ProduceError>>;

/// What application handles ask of the driver task: one variant per session command.
#[derive(Debug)]
pub(crate) enum Command {
    Send {
        record: ProducerRecord,
        reply: Reply,
        /// The gate's permits the record holds, given back when the driver takes it.
        weight: u32,
        /// Present when the sender waits for the session to take the record in.
        admission: Option<Admission>,
    },
    /// Fail every record without an outcome now and close (Java's forced close).
    Abort(oneshot::Sender<()>),
    Flush(oneshot::Sender<()>),
    Close {
        timeout: Option<Duration>,
        reply: oneshot::Sender<()>,
    },
    PartitionCount {
        topic: String,
        reply: oneshot::Sender<Option<i32>>,
    },
    Transaction {
        call: TxnCall,
        reply: oneshot::Sender<Result<(), TxnError>>,
    },
    /// A metrics snapshot, answered at once.
    Metrics(oneshot::Sender<kacrab_driver::MetricsSnapshot>),
    /// The KIP-714 client instance id, answered at once.
    ClientInstanceId(oneshot::Sender<Option<[u8; 16]>>),
}

/// A sender waiting for its record's admission: `Ok` once the session took it in (or
/// gave it an outcome other than a refusal), the refusal otherwise.
pub(crate) type Admission = oneshot::Sender<Result<(), ProduceError>>;

/// Who waits for the completion of an [`OpId`].
#[derive(Debug)]
enum OpReply {
    /// A flush or a close.
    Done(oneshot::Sender<()>),
    Transaction(oneshot::Sender<Result<(), TxnError>>),
    PartitionCount(oneshot::Sender<Option<i32>>),
}

/// Commands applied per wake-up before the session's outputs are drained: large enough
/// to amortise the drain over many sends, small enough to keep serving connections.
const COMMAND_BATCH: usize = 1024;

/// Maps Tokio's clock to the session's [`Timestamp`]s: microseconds since `start`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: Instant,
}

impl Clock {
    pub(crate) fn new(start: Instant) -> Self {
        Self { start }
    }

    fn now(self) -> Timestamp {
        let micros = self.start.elapsed().as_micros();
        Timestamp::from_micros(u64::try_from(micros).unwrap_or(u64::MAX))
    }

    /// The instant `t` names. `now()` read at or after it is at least `t` (both round
    /// microseconds down), so a timer armed for it wakes with the deadline due.
    fn instant(self, t: Timestamp) -> Instant {
        self.start + Duration::from_micros(t.as_micros())
    }
}

/// What woke the driver task.
enum Wake {
    Conn(ConnId, ConnEvent),
    Command(Command),
    /// Every handle was dropped.
    HandlesDropped,
    Timer,
}

pub(crate) struct Driver {
    session: Session,
    clock: Clock,
    transport: Transport,
    conns: HashMap<ConnId, ConnHandle>,
    conn_events: mpsc::UnboundedSender<(ConnId, ConnEvent)>,
    /// Invariant: exactly the sends whose completion the session has not yet produced.
    sends: SendSlots<Reply>,
    /// Invariant: exactly the other commands whose completion is still to come.
    ops: HashMap<OpId, OpReply>,
    /// Senders waiting for their record's admission, by send. Invariant: every key is a
    /// key of `sends`; resolved at the end of every wake-up for the sends older than the
    /// session's `oldest_blocked_send`.
    admissions: BTreeMap<SendId, Admission>,
    /// What bounds the handles' sends; the weight taken off the channel since the last
    /// publish is `taken`.
    gate: Arc<Gate>,
    taken: u32,
}

impl Drop for Driver {
    /// However the task ends (finished, cancelled with its runtime, panicked), senders
    /// waiting for the channel's room stop waiting.
    fn drop(&mut self) {
        self.gate.stop(self.session.connection_failure().cloned());
    }
}

impl Driver {
    pub(crate) fn new(
        session: Session,
        clock: Clock,
        transport: Transport,
        gate: Arc<Gate>,
    ) -> (Self, mpsc::UnboundedReceiver<(ConnId, ConnEvent)>) {
        let (conn_events, conn_events_rx) = mpsc::unbounded_channel();
        let driver = Self {
            session,
            clock,
            transport,
            conns: HashMap::new(),
            conn_events,
            sends: SendSlots::new(),
            ops: HashMap::new(),
            admissions: BTreeMap::new(),
            gate,
            taken: 0,
        };
        (driver, conn_events_rx)
    }

    /// Runs until the session is finished: closed (by a close, or by every handle being
    /// dropped) with every record's outcome reported.
    pub(crate) async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut conn_events: mpsc::UnboundedReceiver<(ConnId, ConnEvent)>,
    ) {
        let mut commands_open = true;
        let sleep = tokio::time::sleep_until(self.clock.start);
        tokio::pin!(sleep);
        // The deadline `sleep` is armed for; `None` when no timer is needed, or after it
        // fired (so the next deadline re-arms it).
        let mut armed: Option<Timestamp> = None;
        let mut wake: Option<Wake> = None;
        loop {
            let now = self.clock.now();
            if let Some(w) = wake.take() {
                self.apply(w, now);
            }
            // Everything else that is ready now, so that one drain serves it all.
            while let Ok((conn, ev)) = conn_events.try_recv() {
                self.apply(Wake::Conn(conn, ev), now);
            }
            for _ in 0..COMMAND_BATCH {
                if !commands_open {
                    break;
                }
                match commands.try_recv() {
                    Ok(cmd) => self.apply(Wake::Command(cmd), now),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        commands_open = false;
                        self.apply(Wake::HandlesDropped, now);
                    }
                }
            }
            // Whatever woke us: a busy producer may never let the timer branch win.
            if self.session.poll_timeout().is_some_and(|t| t <= now) {
                self.session.handle_timeout(now);
            }
            self.drain_outputs(now);
            if self.session.is_finished() {
                // Stop taking commands before the closes are answered, so that a
                // handle sees `is_closed` once its close resolved; the session answers
                // the commands already queued (sends fail with `Closed`). The gate
                // learns the final failure first: a handle whose record fails below may
                // send again before this task is dropped, and is refused with it.
                self.gate.stop(self.session.connection_failure().cloned());
                commands.close();
                while let Ok(cmd) = commands.try_recv() {
                    self.apply(Wake::Command(cmd), now);
                }
                self.drain_outputs(now);
            }
            while let Some(done) = self.session.poll_completion() {
                self.resolve(done);
            }
            self.admit();
            if self.session.is_finished() {
                break;
            }
            match self.session.poll_timeout() {
                Some(t) if armed != Some(t) => {
                    sleep.as_mut().reset(self.clock.instant(t));
                    armed = Some(t);
                }
                Some(_) => {}
                None => armed = None,
            }
            wake = Some(tokio::select! {
                biased;
                Some((conn, ev)) = conn_events.recv() => Wake::Conn(conn, ev),
                cmd = commands.recv(), if commands_open => match cmd {
                    Some(cmd) => Wake::Command(cmd),
                    None => {
                        commands_open = false;
                        Wake::HandlesDropped
                    }
                },
                () = &mut sleep, if armed.is_some() => {
                    armed = None;
                    Wake::Timer
                }
            });
        }
        debug_assert!(self.sends.is_empty() && self.ops.is_empty());
        // The session closed every connection; none is left to stop.
        debug_assert!(self.conns.is_empty());
    }

    // ------------------------------------------------------------------ inputs

    fn apply(&mut self, wake: Wake, now: Timestamp) {
        match wake {
            Wake::Conn(conn, ConnEvent::Connected) => self.session.handle_connected(conn, now),
            Wake::Conn(conn, ConnEvent::Bytes(bytes)) => {
                self.session.handle_bytes(conn, &bytes, now);
            }
            Wake::Conn(conn, ConnEvent::Written(frames)) => {
                self.session.handle_transmitted(conn, frames, now);
            }
            Wake::Conn(conn, ConnEvent::ConnectFailed(cause)) => {
                self.conns.remove(&conn);
                self.session.handle_connect_error(conn, cause, now);
            }
            Wake::Conn(conn, ConnEvent::Disconnected(cause)) => {
                self.conns.remove(&conn);
                self.session.handle_connection_lost(conn, cause, now);
            }
            Wake::Command(cmd) => self.command(cmd, now),
            // Java's producer has no such rule; here the last handle's drop is a close
            // that nobody waits for.
            Wake::HandlesDropped => {
                self.session.close(None, now);
            }
            Wake::Timer => {}
        }
    }

    fn command(&mut self, cmd: Command, now: Timestamp) {
        let s = &mut self.session;
        let (op, reply) = match cmd {
            Command::Send {
                record,
                reply,
                weight,
                admission,
            } => {
                self.taken = self.taken.saturating_add(weight);
                let id = s.send(record, now);
                self.sends.insert(id, reply);
                if let Some(a) = admission {
                    self.admissions.insert(id, a);
                }
                return;
            }
            Command::Abort(reply) => {
                s.abort(now);
                // A close after the abort completes once the abort's outcomes are out.
                (s.close(Some(Duration::ZERO), now), OpReply::Done(reply))
            }
            Command::Flush(reply) => (s.flush(now), OpReply::Done(reply)),
            Command::Close { timeout, reply } => (s.close(timeout, now), OpReply::Done(reply)),
            Command::PartitionCount { topic, reply } => (
                s.partition_count(&topic, now),
                OpReply::PartitionCount(reply),
            ),
            Command::Transaction { call, reply } => {
                let op = s.transaction(call, now);
                (op, OpReply::Transaction(reply))
            }
            Command::Metrics(reply) => {
                let _ = reply.send(s.metrics(now));
                return;
            }
            Command::ClientInstanceId(reply) => {
                let _ = reply.send(s.client_instance_id());
                return;
            }
        };
        self.ops.insert(op, reply);
    }

    /// Answers the senders whose record the session took in (older than its backlog's
    /// front), gives the gate the channel's room back and tells it whether sends posted
    /// now must wait for their admission.
    fn admit(&mut self) {
        let oldest_blocked = self.session.oldest_blocked_send();
        while let Some(entry) = self.admissions.first_entry() {
            if oldest_blocked.is_some_and(|b| *entry.key() >= b) {
                break;
            }
            let _ = entry.remove().send(Ok(()));
        }
        let buffer = if oldest_blocked.is_some() {
            Buffer::Blocked
        } else {
            Buffer::HasRoom
        };
        self.gate.publish(std::mem::take(&mut self.taken), buffer);
    }

    // ------------------------------------------------------------------ outputs

    fn drain_outputs(&mut self, now: Timestamp) {
        while let Some(out) = self.session.poll_output(now) {
            self.execute(out);
        }
    }

    fn execute(&mut self, out: Output) {
        match out {
            Output::Connect { conn, addr } => {
                let task = ConnTask {
                    conn,
                    addr,
                    options: self.session.connect_options(conn),
                    transport: self.transport.clone(),
                    events: self.conn_events.clone(),
                };
                self.conns.insert(conn, task.spawn());
            }
            // Queued on its connection in the session's order. This loop is the one
            // enqueue point, as in a driver writing every socket from one loop, so the
            // core's Produce tickets need no sequencer (nor `Release`). A connection task
            // that is gone drops the frame: its failure is on the way to us. The task
            // reports each frame once written (`ConnEvent::Written`).
            Output::Transmit { conn, frame, .. } => {
                if let Some(c) = self.conns.get(&conn) {
                    let _ = c.frames.send(frame);
                }
            }
            Output::Release { .. } => {}
            Output::Close { conn, reason: _ } => {
                if let Some(c) = self.conns.remove(&conn) {
                    c.close();
                }
            }
        }
    }

    fn resolve(&mut self, done: Completion) {
        // A send whose future was dropped is not waited for: a failed reply is fine.
        match done {
            Completion::Record { id, outcome } => {
                let reply = self.sends.remove(id);
                if let Some(admission) = self.admissions.remove(&id) {
                    if let Err(refused @ (ProduceError::Send(_) | ProduceError::Topic { .. })) =
                        outcome
                    {
                        // Refused before it was queued: the waiting `send` says so.
                        let _ = admission.send(Err(refused));
                        return;
                    }
                    let _ = admission.send(Ok(()));
                }
                if let Some(reply) = reply {
                    let _ = reply.send(outcome);
                }
            }
            Completion::Flushed { op } | Completion::Closed { op } => {
                if let Some(OpReply::Done(reply)) = self.ops.remove(&op) {
                    let _ = reply.send(());
                }
            }
            Completion::Transaction { op, result, .. } => {
                if let Some(OpReply::Transaction(reply)) = self.ops.remove(&op) {
                    let _ = reply.send(result);
                }
            }
            Completion::PartitionCount { op, count } => {
                if let Some(OpReply::PartitionCount(reply)) = self.ops.remove(&op) {
                    let _ = reply.send(count);
                }
            }
            _ => {}
        }
    }
}
