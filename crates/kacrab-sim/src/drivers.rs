//! The two drivers the [`Cluster`](crate::Cluster) can run, behind one face: the
//! [`CoreDriver`] (the bare core, with the simulator's own router, on typed messages)
//! and the [`SessionDriver`] (a `kacrab_driver::Session` on real Kafka frames). Both
//! talk to the world through its client side only; the cluster's step loop does not
//! know which one runs.

use bytes::Bytes;
use kacrab_idempotence::{
    ConsumerGroupMetadata, NodeId, OffsetToCommit, Producer, RecordId, SendError, Timestamp,
    TopicPartition, TxnError,
};

use crate::driver::CoreDriver;
use crate::observers::Observers;
use crate::session_driver::SessionDriver;
use crate::world::World;

/// Which driver runs the producer. See the module documentation.
#[derive(Debug)]
pub(crate) enum Driver {
    /// The bare core.
    Core(Box<CoreDriver>),
    /// The session.
    Session(Box<SessionDriver>),
}

/// Runs `$body` with `$d` bound to whichever driver runs.
macro_rules! either {
    ($self:expr, $d:ident => $body:expr) => {
        match $self {
            Driver::Core($d) => $body,
            Driver::Session($d) => $body,
        }
    };
}

impl Driver {
    pub(crate) fn producer(&self) -> &Producer {
        either!(self, d => d.producer())
    }

    /// The session's metrics snapshot at `now` (`None` for the bare core).
    pub(crate) fn session_metrics(
        &mut self,
        now: Timestamp,
    ) -> Option<kacrab_driver::metrics::MetricsSnapshot> {
        match self {
            Driver::Core(_) => None,
            Driver::Session(d) => Some(d.metrics(now)),
        }
    }

    /// The application calls `flush` (the caller drains after, as after every command).
    pub(crate) fn flush(&mut self, now: Timestamp) {
        match self {
            Driver::Core(d) => d.producer_mut().flush(),
            Driver::Session(d) => d.flush(now),
        }
    }

    /// The application calls `close`.
    pub(crate) fn close(&mut self, now: Timestamp) {
        match self {
            Driver::Core(d) => d.producer_mut().close(),
            Driver::Session(d) => d.close(now),
        }
    }

    /// The application calls `abort` (a forced close).
    pub(crate) fn abort(&mut self, now: Timestamp) {
        match self {
            Driver::Core(d) => d.producer_mut().abort(),
            Driver::Session(d) => d.abort(now),
        }
    }

    /// `init_transactions`; an error is the call's refusal.
    pub(crate) fn init_transactions(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        match self {
            Driver::Core(d) => d.producer_mut().init_transactions(),
            Driver::Session(d) => d.init_transactions(obs, now),
        }
    }

    /// `begin_transaction`.
    pub(crate) fn begin_transaction(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        match self {
            Driver::Core(d) => d.producer_mut().begin_transaction(),
            Driver::Session(d) => d.begin_transaction(obs, now),
        }
    }

    /// `commit_transaction` (`commit`) or `abort_transaction`.
    pub(crate) fn end_transaction(
        &mut self,
        obs: &mut Observers,
        commit: bool,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        match (self, commit) {
            (Driver::Core(d), true) => d.producer_mut().commit_transaction(),
            (Driver::Core(d), false) => d.producer_mut().abort_transaction(),
            (Driver::Session(d), true) => d.commit_transaction(obs, now),
            (Driver::Session(d), false) => d.abort_transaction(obs, now),
        }
    }

    /// `send_offsets_to_transaction`.
    pub(crate) fn send_offsets(
        &mut self,
        obs: &mut Observers,
        offsets: Vec<OffsetToCommit>,
        group: ConsumerGroupMetadata,
        now: Timestamp,
    ) -> Result<(), TxnError> {
        match self {
            Driver::Core(d) => d.producer_mut().send_offsets_to_transaction(offsets, group),
            Driver::Session(d) => d.send_offsets(obs, offsets, group, now),
        }
    }

    /// Whether every record sent so far has an outcome and the driver owes nothing.
    pub(crate) fn is_idle(&self, world: &World) -> bool {
        either!(self, d => d.is_idle(world))
    }

    /// Whether the driver owes the producer an input before time moves on.
    pub(crate) fn owes_reports(&self, world: &World) -> bool {
        either!(self, d => d.owes_reports(world))
    }

    /// The application sends `value` (stamped `timestamp_ms`) to `tp` now.
    pub(crate) fn send(
        &mut self,
        tp: &TopicPartition,
        value: Bytes,
        timestamp_ms: i64,
        now: Timestamp,
    ) -> Result<RecordId, SendError> {
        either!(self, d => d.send(tp, value, timestamp_ms, now))
    }

    /// Takes what the network told the client on its own.
    pub(crate) fn take_notices(&mut self, world: &mut World) {
        either!(self, d => d.take_notices(world));
    }

    /// Gives the earliest input owed, if any. Returns whether there was one.
    pub(crate) fn report_next_failure(&mut self, world: &World, obs: &mut Observers) -> bool {
        either!(self, d => d.report_next_failure(world, obs))
    }

    /// When the driver's timer fires next.
    pub(crate) fn timer(&self, now: Timestamp) -> Option<Timestamp> {
        either!(self, d => d.timer(now))
    }

    /// The timer fires at `now` (the caller drains next, then calls `after_timer`).
    pub(crate) fn fire_timer(&mut self, obs: &mut Observers, now: Timestamp) {
        either!(self, d => d.fire_timer(obs, now));
    }

    /// After the timer fired at `now` and the driver drained.
    pub(crate) fn after_timer(&mut self, obs: &mut Observers, now: Timestamp, progress: bool) {
        either!(self, d => d.after_timer(obs, now, progress));
    }

    /// After every input: drains the producer's (or session's) outputs and events.
    /// Returns whether there were any.
    pub(crate) fn drain(&mut self, world: &mut World, obs: &mut Observers) -> bool {
        either!(self, d => d.drain(world, obs))
    }

    /// The response at the head of the connection from `node` reaches the client.
    /// Returns whether there was one.
    pub(crate) fn deliver_response(
        &mut self,
        world: &mut World,
        obs: &mut Observers,
        node: NodeId,
    ) -> bool {
        either!(self, d => d.deliver_response(world, obs, node))
    }
}
