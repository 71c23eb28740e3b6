//! The driver: the producer under test and what a real driver does with its outputs
//! and the network's answers. Produce requests go on their broker's connection,
//! InitProducerId and Metadata on any live broker's; a request that cannot be written
//! is reported `NotSent`, everything in flight on a connection that drops is reported
//! `Disconnected`; on `CloseConnection` the connection's remaining traffic is dropped
//! and nothing more is reported for the produce requests the core already failed;
//! answers are fed back with their request id.
//!
//! It talks to the [`World`] only through the client's side of the network
//! ([`World::write`], [`World::pop_response`], [`World::close_connection`],
//! [`World::take_notice`]) and its broker directory ([`World::broker`],
//! [`World::pick_live_broker`]).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;

use kacrab_idempotence::record::Record;
use kacrab_idempotence::RecordId;
use kacrab_idempotence::{
    NodeId, Producer, Request, RequestFailure, RequestId, SendError, Timestamp, TopicPartition,
};

use crate::checker::ViolationKind;
use crate::net::{ToBroker, ToClient, TxnAnswer};
use crate::observers::Observers;
use crate::world::{Notice, World};

/// The producer and the driver's own state. See the module documentation.
#[derive(Debug)]
pub(crate) struct CoreDriver {
    producer: Producer,
    /// Failure reports the driver owes the producer, given before time moves on, in
    /// the order the driver learned them.
    local: VecDeque<(RequestId, RequestFailure)>,
    /// `now` at which `handle_timeout` left `poll_timeout` in the past with no output.
    timer_stuck_at: Option<Timestamp>,
    /// Whether that was reported (once per run).
    timer_stuck_reported: bool,
}

impl CoreDriver {
    pub(crate) fn new(producer: Producer) -> Self {
        Self {
            producer,
            local: VecDeque::new(),
            timer_stuck_at: None,
            timer_stuck_reported: false,
        }
    }

    pub(crate) fn producer(&self) -> &Producer {
        &self.producer
    }

    /// The producer, for the application's commands (`flush`, `close`, the
    /// transactional calls); the caller drains with [`CoreDriver::drain`] after.
    pub(crate) fn producer_mut(&mut self) -> &mut Producer {
        &mut self.producer
    }

    /// Whether every record sent so far has an outcome and the driver owes nothing.
    pub(crate) fn is_idle(&self, world: &World) -> bool {
        self.producer.is_idle() && !self.owes_reports(world)
    }

    /// Whether the driver owes the producer a failure report (or will, once it takes
    /// the world's notices: a dropped connection alone owes nothing, its requests do).
    pub(crate) fn owes_reports(&self, world: &World) -> bool {
        !self.local.is_empty() || world.has_notice(|n| !matches!(n, Notice::ConnectionDropped(_)))
    }

    /// The application sends `record` to `tp` now.
    ///
    /// # Errors
    /// What `Producer::send` refused.
    pub(crate) fn send(
        &mut self,
        tp: &TopicPartition,
        value: Bytes,
        timestamp_ms: i64,
        now: Timestamp,
    ) -> Result<RecordId, SendError> {
        self.producer
            .send(tp, &Record::from_value(value, timestamp_ms), now)
    }

    /// Takes what the network told the client on its own: failures become reports
    /// owed, a new `transaction.version` goes to the producer.
    pub(crate) fn take_notices(&mut self, world: &mut World) {
        while let Some(notice) = world.take_notice() {
            match notice {
                Notice::RequestFailed(id, failure) => self.local.push_back((id, failure)),
                Notice::TransactionVersion(level) => {
                    self.producer.handle_transaction_version(level)
                }
                // Every request it carried has its own `RequestFailed`.
                Notice::ConnectionDropped(_) => {}
            }
        }
    }

    /// Gives the producer the earliest failure report owed, if any. Returns whether
    /// there was one.
    pub(crate) fn report_next_failure(&mut self, world: &World, obs: &mut Observers) -> bool {
        let Some((id, failure)) = self.local.pop_front() else {
            return false;
        };
        self.report_failure(obs, world.now(), id, failure);
        true
    }

    /// When the producer's timer fires: `poll_timeout`, moved a millisecond on when the
    /// last `handle_timeout` left it in the past with nothing to do (a real driver's
    /// clock moves on while it spins).
    pub(crate) fn timer(&self, now: Timestamp) -> Option<Timestamp> {
        self.producer.poll_timeout().map(|t| {
            if self.timer_stuck_at == Some(now) && t <= now {
                now + Duration::from_millis(1)
            } else {
                t
            }
        })
    }

    /// The producer's timer fires at `now` (the caller drains next, then calls
    /// [`CoreDriver::after_timer`]).
    pub(crate) fn fire_timer(&mut self, obs: &mut Observers, now: Timestamp) {
        obs.trace(now, || "handle_timeout".to_string());
        self.producer.handle_timeout(now);
    }

    /// After the timer fired at `now` and the driver drained (`progress`: whether the
    /// producer produced output): a timer left in the past with nothing to do is a
    /// violation (reported once).
    pub(crate) fn after_timer(&mut self, obs: &mut Observers, now: Timestamp, progress: bool) {
        let stuck = !progress && self.producer.poll_timeout().is_some_and(|t| t <= now);
        if stuck {
            self.timer_stuck_at = Some(now);
            if !self.timer_stuck_reported {
                self.timer_stuck_reported = true;
                let t = self.producer.poll_timeout();
                obs.checker_mut().violation(
                    ViolationKind::TimerStuck,
                    format!(
                        "poll_timeout {t:?} <= now {now:?} after handle_timeout, nothing to do"
                    ),
                );
            }
        }
    }

    /// After every input (the world settled): takes the network's notices, drains
    /// requests (routing each), then events; checks the core's invariants. Returns
    /// whether the producer produced any output.
    pub(crate) fn drain(&mut self, world: &mut World, obs: &mut Observers) -> bool {
        self.take_notices(world);
        let now = world.now();
        let mut progress = false;
        while let Some(request) = self.producer.poll_request(now) {
            progress = true;
            self.route(world, obs, request);
        }
        while let Some(event) = self.producer.poll_event() {
            progress = true;
            obs.on_event(now, &event);
        }
        self.producer.assert_invariants();
        if progress {
            self.timer_stuck_at = None;
        }
        progress
    }

    /// Routes one request from `poll_request`.
    fn route(&mut self, world: &mut World, obs: &mut Observers, request: Request) {
        let now = world.now();
        match request {
            Request::Produce(r) => {
                obs.stats_mut().produce_requests += 1;
                obs.checker_mut().on_wire(r.node.0, &r);
                if obs.tracing() {
                    let mut s = format!("produce req {} -> node {}:", r.id, r.node);
                    for line in obs
                        .checker()
                        .wire_log()
                        .iter()
                        .rev()
                        .take(r.batches.len())
                        .rev()
                    {
                        let tp = &world.partitions()[line.partition as usize].tp;
                        let _ = write!(
                            s,
                            " [{tp} {}/{} seq {}+{} #{}]",
                            line.producer_id,
                            line.epoch,
                            line.base_sequence,
                            line.count,
                            line.first_index
                        );
                    }
                    obs.trace(now, || s);
                }
                let node = r.node;
                if world.broker(node).is_none() {
                    obs.checker_mut().violation(
                        ViolationKind::Protocol,
                        format!("produce to unknown node {node}"),
                    );
                    self.local.push_back((r.id, RequestFailure::NotSent));
                    return;
                }
                self.write(world, obs, node, ToBroker::Produce(r));
            }
            Request::InitProducerId(r) => {
                obs.stats_mut().init_producer_id_requests += 1;
                match r.node {
                    Some(node) => self.write(world, obs, node, ToBroker::InitProducerId(r)),
                    None => self.write_any(world, obs, ToBroker::InitProducerId(r)),
                }
            }
            Request::Metadata(r) => {
                obs.stats_mut().metadata_requests += 1;
                self.write_any(world, obs, ToBroker::Metadata(r));
            }
            Request::CloseConnection { node } => self.close_connection(world, obs, node),
            // A producer without transactional.id never asks for these.
            r @ (Request::FindCoordinator(_)
            | Request::AddPartitionsToTxn(_)
            | Request::AddOffsetsToTxn(_)
            | Request::TxnOffsetCommit(_)
            | Request::EndTxn(_))
                if !self.producer.config().is_transactional() =>
            {
                obs.checker_mut().violation(
                    ViolationKind::Protocol,
                    format!(
                        "transactional request from a producer without transactional.id: {r:?}"
                    ),
                );
            }
            Request::FindCoordinator(r) => {
                obs.trace(now, || format!("req {} FindCoordinator {}", r.id, r.key));
                self.write_any(world, obs, ToBroker::Txn(Request::FindCoordinator(r)));
            }
            r @ (Request::AddPartitionsToTxn(_)
            | Request::AddOffsetsToTxn(_)
            | Request::TxnOffsetCommit(_)
            | Request::EndTxn(_)) => {
                let node = match &r {
                    Request::AddPartitionsToTxn(x) => x.node,
                    Request::AddOffsetsToTxn(x) => x.node,
                    Request::TxnOffsetCommit(x) => x.node,
                    Request::EndTxn(x) => x.node,
                    _ => unreachable!(),
                };
                obs.trace(now, || format!("txn req -> node {node}: {r:?}"));
                if world.broker(node).is_none() {
                    obs.checker_mut().violation(
                        ViolationKind::Protocol,
                        format!("transactional request to unknown node {node}"),
                    );
                    self.local
                        .push_back((crate::net::txn_request_id(&r), RequestFailure::NotSent));
                    return;
                }
                self.write(world, obs, node, ToBroker::Txn(r));
            }
        }
    }

    /// Writes a request for "any broker" to a live one.
    fn write_any(&mut self, world: &mut World, obs: &mut Observers, msg: ToBroker) {
        match world.pick_live_broker() {
            Some(node) => self.write(world, obs, node, msg),
            None => {
                obs.trace(world.now(), || {
                    format!("req {} not sent: no live broker", msg.id())
                });
                self.local.push_back((msg.id(), RequestFailure::NotSent));
            }
        }
    }

    /// Writes a request on the connection to `node`; what the network said about it
    /// (and about the requests a broken connection carried) becomes reports owed.
    fn write(&mut self, world: &mut World, obs: &mut Observers, node: NodeId, msg: ToBroker) {
        world.write(obs, node, msg);
        self.take_notices(world);
    }

    /// `Request::CloseConnection`: the producer already failed every produce request on
    /// the connection; other requests on it are reported `Disconnected`.
    fn close_connection(&mut self, world: &mut World, obs: &mut Observers, node: NodeId) {
        let now = world.now();
        obs.stats_mut().close_connections += 1;
        let lost = world.close_connection(node);
        obs.trace(now, || {
            format!("close connection to node {node} (producer asked), dropping {lost:?}")
        });
        for l in lost {
            if l.produce {
                // The core must have failed it already; feeding the failure again must be
                // refused and change nothing.
                let r =
                    self.producer
                        .handle_request_failed(l.id, RequestFailure::Disconnected, now);
                if r.is_ok() {
                    obs.checker_mut().violation(
                        ViolationKind::Protocol,
                        format!(
                            "produce request {} still outstanding after CloseConnection({node})",
                            l.id
                        ),
                    );
                }
            } else {
                self.local.push_back((l.id, RequestFailure::Disconnected));
            }
        }
    }

    fn report_failure(
        &mut self,
        obs: &mut Observers,
        now: Timestamp,
        id: RequestId,
        failure: RequestFailure,
    ) {
        match failure {
            RequestFailure::NotSent => obs.stats_mut().not_sent_reports += 1,
            RequestFailure::Disconnected => obs.stats_mut().disconnected_reports += 1,
        }
        obs.trace(now, || format!("report req {id} {failure:?}"));
        // An InitProducerId or Metadata the producer already timed out is unknown to
        // it by now; that is fine. Produce requests are never timed out without a
        // CloseConnection, which removes them from the network first.
        let _ = self.producer.handle_request_failed(id, failure, now);
    }

    /// The response at the head of the connection from `node` reaches the client and is
    /// fed to the producer. Returns whether there was one.
    pub(crate) fn deliver_response(
        &mut self,
        world: &mut World,
        obs: &mut Observers,
        node: NodeId,
    ) -> bool {
        let Some(msg) = world.pop_response(node) else {
            return false;
        };
        obs.stats_mut().responses += 1;
        let now = world.now();
        match msg {
            ToClient::Produce(id, resp) => {
                obs.trace(now, || {
                    let mut s = format!("response req {id} from node {node}:");
                    for p in &resp.partitions {
                        let _ = write!(s, " [{} {} @{}]", p.partition, p.error, p.base_offset);
                    }
                    if !resp.throttle.is_zero() {
                        let _ = write!(s, " throttle {:?}", resp.throttle);
                    }
                    s
                });
                if let Err(e) = self.producer.handle_produce_response(id, &resp, now) {
                    obs.checker_mut().violation(
                        ViolationKind::Protocol,
                        format!("produce response refused: {e}"),
                    );
                }
            }
            ToClient::InitProducerId(id, result) => {
                obs.trace(now, || format!("response req {id}: producer id {result:?}"));
                let _ = self.producer.handle_producer_id(id, result, now);
            }
            ToClient::Metadata(id, md) => {
                obs.trace(now, || {
                    let mut s = format!("response req {id}: metadata");
                    for p in &md.partitions {
                        let _ = write!(
                            s,
                            " {}={:?}/{}",
                            p.partition,
                            p.leader.map(|n| n.0),
                            p.leader_epoch
                        );
                    }
                    s
                });
                let _ = self.producer.handle_metadata(Some(id), &md, now);
            }
            ToClient::Txn(id, answer) => {
                obs.trace(now, || format!("response req {id}: {answer:?}"));
                // An answer to a request the core already timed out is unknown to it.
                let _ = match answer {
                    TxnAnswer::FindCoordinator(r) => {
                        self.producer.handle_find_coordinator(id, r, now)
                    }
                    TxnAnswer::AddPartitions(r) => self.producer.handle_add_partitions(id, &r, now),
                    TxnAnswer::AddOffsets(e) => self.producer.handle_add_offsets(id, e, now),
                    TxnAnswer::TxnOffsetCommit(r) => {
                        self.producer.handle_txn_offset_commit(id, &r, now)
                    }
                    TxnAnswer::EndTxn(r) => self.producer.handle_end_txn(id, r, now),
                };
            }
        }
        true
    }
}
