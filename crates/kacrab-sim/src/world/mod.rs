//! The world: the model brokers, their partitions and replication, the transaction
//! coordinator, the lying network between the brokers and the client, the fault
//! streams and rates, on the virtual clock.
//!
//! It knows nothing of the producer. A driver talks to it through a small interface:
//! [`World::write`] puts a request on the connection to a broker (the network may
//! break the connection on the write), [`World::pop_response`] takes what the network
//! delivers to the client, [`World::close_connection`] closes a connection at the
//! client's request, and [`World::take_notice`] yields what the client's socket layer
//! learns on its own: a request that was never written, a connection that dropped under
//! requests in flight, and the finalized `transaction.version` the brokers now report.
//! The world's own steps ([`World::next_event`]) are the brokers reading requests,
//! applying held ones, replicating, restarting, and the coordinator writing markers.
//!
//! * `brokers`: what a request does when it reaches a broker, crashes, leadership.
//! * `replication`: followers, the ISR, the high watermark, acks=all purgatory.
//! * `txn`: the coordinator answering transactional requests on its node.
//! * `txn_faults`: the coordinator's timing (markers, loading) and its faults.

mod brokers;
mod metadata_faults;
mod opening;
mod replication;
mod setup_faults;
mod silence;
mod txn;
mod txn_faults;

use std::collections::VecDeque;
use std::time::Duration;

use kacrab_idempotence::{NodeId, RequestFailure, RequestId, Timestamp, Topic, TopicPartition};

use crate::broker::PartitionState;
use crate::config::SimConfig;
use crate::coordinator::TransactionCoordinator;
use crate::failure_bound::FaultScope;
use crate::faults::{FaultCounts, FaultKind, FaultRates, Script};
use crate::net::{Direction, Lost, Net, ToBroker, ToClient};
use crate::observers::Observers;
use crate::rng::Rng;
use replication::{new_followers, tracked_state, DelayedProduce};

pub use replication::Follower;
pub(crate) use setup_faults::ConnectDraw;

/// One model broker's liveness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerNode {
    /// Its node id.
    pub id: NodeId,
    /// Whether it is running.
    pub up: bool,
    /// When a crashed broker comes back, if scheduled.
    pub restart_at: Option<Timestamp>,
}

/// One partition of the cluster: its leader's replica, its followers and who leads it.
#[derive(Clone, Debug)]
pub struct SimPartition {
    /// The partition.
    pub tp: TopicPartition,
    /// The current leader.
    pub leader: NodeId,
    /// The current leader epoch.
    pub leader_epoch: i32,
    /// The leader's replica: its log (whose high watermark says what is committed,
    /// and whose journal is the partition's audit trail) and producer states.
    pub state: PartitionState,
    /// Every other broker's replica (replication factor = brokers), by node id.
    pub followers: Vec<Follower>,
    /// While set and in the future, the ISR is too small: appends are refused with
    /// NOT_ENOUGH_REPLICAS.
    pub isr_shrunk_until: Option<Timestamp>,
    /// The leader and leader epoch before the last change (what a lagging metadata
    /// cache still reports).
    pub previous_leader: Option<(NodeId, i32)>,
}

/// What the client's side of the network learns without an answer from a broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    /// A request was never written (`NotSent`) or was lost with its connection
    /// (`Disconnected`).
    RequestFailed(RequestId, RequestFailure),
    /// The controller finalized this `transaction.version`; the brokers' ApiVersions
    /// answers now carry it.
    TransactionVersion(i16),
    /// The connection to this broker dropped (after the `RequestFailed` of every
    /// request it carried).
    ConnectionDropped(NodeId),
}

/// One of the world's own steps (see [`World::next_event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WorldEvent {
    /// A crashed broker comes back.
    Restart(NodeId),
    /// The request at the head of the connection to this broker reaches it.
    RequestArrives(NodeId),
    /// The response at the head of the connection from this broker reaches the client.
    ResponseArrives(NodeId),
    /// A broker applies a request it held.
    Apply,
    /// A follower fetches (or an acks=all wait times out).
    Replication,
}

/// The world. See the module documentation.
#[derive(Debug)]
pub(crate) struct World {
    config: SimConfig,
    /// The virtual clock; only [`World::advance_to`] moves it, never backwards.
    now: Timestamp,
    net: Net,
    brokers: Vec<BrokerNode>,
    partitions: Vec<SimPartition>,
    topics: Vec<Topic>,
    /// What the client's side of the network learned, in the order it happened; the
    /// driver takes them before anything else happens.
    notices: VecDeque<Notice>,
    fault_rng: Rng,
    /// The stream of the connection setup and late coordinator answer faults.
    setup_rng: Rng,
    net_rng: Rng,
    rates: FaultRates,
    faults: FaultCounts,
    scripts: Vec<(Script, u32)>,
    /// What [`FaultKind::OpeningNotLeader`] has drawn.
    opening: opening::Opening,
    /// The silent connections in progress ([`FaultKind::SilentConnection`]).
    silences: silence::Silences,
    next_producer_id: i64,
    /// The generation of the connection the request being applied was read from: its
    /// response goes back only while that connection is open.
    reply_generation: u64,
    /// When the brokers next run producer expiry.
    next_expiry_check: Timestamp,
    /// acks=all produce requests waiting for replication (`DelayedProduce`).
    purgatory: Vec<DelayedProduce>,
    /// The model transaction coordinator (one for the cluster).
    coordinator: TransactionCoordinator,
    /// The node it runs on.
    coordinator_node: NodeId,
    /// The coordinator's timing (markers, loading) and the finalized
    /// `transaction.version`.
    txn_env: txn_faults::TxnEnv,
    /// A topic created while the producer runs, if that fault was drawn.
    creation: Option<metadata_faults::TopicCreation>,
    /// Draws of what comes with a crash, on a stream of their own so the other faults
    /// of a seed are drawn as before.
    crash_rng: Rng,
}

impl World {
    /// The world `config` describes, at time zero.
    ///
    /// # Panics
    /// When `config` has no broker or no partition, or a leader outside `1..=brokers`.
    pub(crate) fn new(config: &SimConfig) -> Self {
        assert!(config.brokers >= 1, "a cluster needs a broker");
        assert!(config.partitions >= 1, "a cluster needs a partition");
        let mut net_rng = Rng::stream(config.seed, 1);
        let latencies: Vec<Duration> = match &config.latencies {
            Some(l) => {
                assert_eq!(l.len(), config.brokers as usize, "one latency per broker");
                l.clone()
            }
            None => (0..config.brokers)
                .map(|_| {
                    let lo = config.latency_min.as_micros() as u64;
                    let hi = config.latency_max.as_micros() as u64;
                    Duration::from_micros(net_rng.range(lo, hi))
                })
                .collect(),
        };
        let topics_n = config.topics.clamp(1, config.partitions);
        let topics: Vec<Topic> = (0..topics_n)
            .map(|t| Topic::new(&format!("t{t}")))
            .collect();
        let mut per_topic = vec![0i32; topics_n as usize];
        let mut partitions = Vec::new();
        for gp in 0..config.partitions {
            let t = (gp % topics_n) as usize;
            let tp = TopicPartition::new(topics[t].clone(), per_topic[t]);
            per_topic[t] += 1;
            let leader = match &config.leaders {
                Some(l) => l[gp as usize],
                None => (gp % config.brokers) as i32 + 1,
            };
            assert!(
                (1..=config.brokers as i32).contains(&leader),
                "leader {leader} is not a broker"
            );
            partitions.push(SimPartition {
                tp,
                leader: NodeId(leader),
                leader_epoch: 0,
                state: tracked_state(config),
                followers: new_followers(NodeId(leader), config),
                isr_shrunk_until: None,
                previous_leader: None,
            });
        }
        let brokers = (1..=config.brokers as i32)
            .map(|id| BrokerNode {
                id: NodeId(id),
                up: true,
                restart_at: None,
            })
            .collect();
        let coordinator_node = NodeId(config.coordinator_node.clamp(1, config.brokers as i32));
        // A transactional producer adds partitions through its coordinator, which the
        // model does not refuse for a topic not created yet: drawn for idempotent runs.
        let creation = config
            .producer
            .transactional_id()
            .is_none()
            .then(|| {
                metadata_faults::TopicCreation::draw(
                    config.seed,
                    config.faults.topic_created_late,
                    &topics,
                    &partitions,
                )
            })
            .flatten();
        let mut world = Self {
            now: Timestamp::ZERO,
            net: Net::new(latencies),
            brokers,
            partitions,
            topics,
            notices: VecDeque::new(),
            fault_rng: Rng::stream(config.seed, 2),
            setup_rng: setup_faults::setup_rng(config.seed),
            net_rng,
            rates: config.faults,
            faults: FaultCounts::default(),
            scripts: Vec::new(),
            opening: opening::Opening::new(config.seed),
            silences: silence::Silences::new(config.seed, config.brokers),
            next_producer_id: 1000,
            reply_generation: 0,
            next_expiry_check: Timestamp::ZERO + config.producer_id_expiration_check_interval,
            purgatory: Vec::new(),
            coordinator: txn_faults::asynchronous_coordinator(config.initial_producer_epoch),
            coordinator_node,
            txn_env: txn_faults::TxnEnv::new(config.seed, config.transaction_version),
            config: config.clone(),
            creation,
            crash_rng: Rng::stream(config.seed, 0x6372_6173_6800),
        };
        world.count_creation();
        world
    }

    // ------------------------------------------------------------------ what it shows

    /// Virtual time.
    /// A fault able to fail records in `scope` strikes now and lasts `length` (the
    /// liveness bound of [`crate::failure_bound`]).
    fn fault_window(&self, obs: &mut Observers, scope: FaultScope, length: Duration) {
        obs.checker_mut().fault_window(scope, self.now, length);
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.now
    }

    /// Moves the clock to `t` (never backwards).
    pub(crate) fn advance_to(&mut self, t: Timestamp) {
        self.now = self.now.max(t);
    }

    pub(crate) fn brokers(&self) -> &[BrokerNode] {
        &self.brokers
    }

    pub(crate) fn partitions(&self) -> &[SimPartition] {
        &self.partitions
    }

    /// The global index of `tp`.
    pub(crate) fn partition_index(&self, tp: &TopicPartition) -> Option<usize> {
        self.partitions.iter().position(|p| &p.tp == tp)
    }

    pub(crate) fn topics(&self) -> &[Topic] {
        &self.topics
    }

    pub(crate) fn net(&self) -> &Net {
        &self.net
    }

    pub(crate) fn faults(&self) -> &FaultCounts {
        &self.faults
    }

    /// The broker `node`, if there is one.
    pub(crate) fn broker(&self, node: NodeId) -> Option<&BrokerNode> {
        self.brokers.iter().find(|b| b.id == node)
    }

    /// Whether broker `node` exists and runs.
    pub(crate) fn is_up(&self, node: NodeId) -> bool {
        self.broker(node).is_some_and(|b| b.up)
    }

    /// The earliest of the world's own steps (broker restarts, network deliveries, held
    /// requests applied, replication), ties going to the first in that order. The
    /// coordinator's marker writes ([`World::markers_due`]) come after the
    /// application's sends in the cluster's order.
    pub(crate) fn next_event(&self) -> Option<(Timestamp, WorldEvent)> {
        let mut best: Option<(Timestamp, WorldEvent)> = None;
        let mut consider = |t: Timestamp, e: WorldEvent| {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, e));
            }
        };
        for b in &self.brokers {
            if let Some(t) = b.restart_at {
                consider(t, WorldEvent::Restart(b.id));
            }
        }
        if let Some((t, node, dir)) = self.net.next_delivery() {
            let e = match dir {
                Direction::ToBroker => WorldEvent::RequestArrives(node),
                Direction::ToClient => WorldEvent::ResponseArrives(node),
            };
            consider(t, e);
        }
        if let Some(t) = self.net.next_application() {
            consider(t, WorldEvent::Apply);
        }
        if let Some(t) = self.next_replication_event() {
            consider(t, WorldEvent::Replication);
        }
        best
    }

    /// When the coordinator's outstanding markers are due to be written.
    pub(crate) fn markers_due(&self) -> Option<Timestamp> {
        self.txn_env.markers_due()
    }

    /// Whether the network carries nothing towards anyone.
    pub(crate) fn network_quiet(&self) -> bool {
        self.net.next_delivery().is_none()
    }

    // ------------------------------------------------------------------ the client's side

    /// The next thing the client learned without an answer, if any.
    pub(crate) fn take_notice(&mut self) -> Option<Notice> {
        self.notices.pop_front()
    }

    /// Whether a notice `matters` waits for the client.
    pub(crate) fn has_notice(&self, matters: impl Fn(&Notice) -> bool) -> bool {
        self.notices.iter().any(matters)
    }

    /// A live broker for a request any broker can answer, drawn from the network's
    /// stream; `None` when every broker is down.
    pub(crate) fn pick_live_broker(&mut self) -> Option<NodeId> {
        let live: Vec<NodeId> = self.brokers.iter().filter(|b| b.up).map(|b| b.id).collect();
        self.net_rng.pick(live.len()).map(|i| live[i])
    }

    /// The client writes `msg` on the connection to `node`, opening it if needed. A
    /// request to a broker that is down, or whose connection breaks on the write, is
    /// not sent: a [`Notice::RequestFailed`] `NotSent` says so (after the
    /// `Disconnected` ones of the requests the broken connection carried).
    pub(crate) fn write(&mut self, obs: &mut Observers, node: NodeId, msg: ToBroker) {
        let id = msg.id();
        if !self.is_up(node) {
            obs.trace(self.now, || {
                format!("req {id} not sent: node {node} is down")
            });
            self.notices
                .push_back(Notice::RequestFailed(id, RequestFailure::NotSent));
            return;
        }
        let generation = self.net.connect(node);
        if self.fault_rng.chance(self.rates.connection_drop) {
            self.faults.add(FaultKind::ConnectionDrop);
            obs.trace(self.now, || {
                format!("FAULT connection to node {node} broken on write of req {id}")
            });
            self.connection_lost(obs, node, None);
            self.notices
                .push_back(Notice::RequestFailed(id, RequestFailure::NotSent));
            return;
        }
        let produce = msg.is_produce();
        let delay = self.one_way(node);
        self.net.send_request(node, self.now, delay, msg);
        if produce {
            self.silence_on_write(obs, node, generation, id);
        }
    }

    /// The response at the head of the connection from `node` reaches the client.
    pub(crate) fn pop_response(&mut self, node: NodeId) -> Option<ToClient> {
        self.net.pop_response(node).map(|t| t.msg)
    }

    /// The client closes its connection to `node`: whatever it carried is gone, and
    /// returned (the client decides what it reports).
    pub(crate) fn close_connection(&mut self, node: NodeId) -> Vec<Lost> {
        self.net.drop_connection(node)
    }

    /// A one-way latency to `node`: its base latency plus jitter.
    fn one_way(&mut self, node: NodeId) -> Duration {
        let jitter = self.net_rng.range(0, self.config.jitter.as_micros() as u64);
        self.net.latency(node) + Duration::from_micros(jitter)
    }

    /// The connection to `node` dropped (not at the client's request): every request
    /// in flight on it is reported `Disconnected`, and so is `current` (a request the
    /// broker had already taken off the connection).
    fn connection_lost(&mut self, obs: &mut Observers, node: NodeId, current: Option<RequestId>) {
        let mut ids: Vec<RequestId> = self
            .net
            .drop_connection(node)
            .into_iter()
            .map(|l| l.id)
            .collect();
        ids.extend(current);
        ids.sort();
        obs.trace(self.now, || {
            format!("connection to node {node} dropped, lost {ids:?}")
        });
        for id in ids {
            self.notices
                .push_back(Notice::RequestFailed(id, RequestFailure::Disconnected));
        }
        self.notices.push_back(Notice::ConnectionDropped(node));
    }

    // ------------------------------------------------------------------ controls

    /// Changes the fault rates.
    pub(crate) fn set_fault_rates(&mut self, rates: FaultRates) {
        self.rates = rates;
    }

    /// Queues a scripted fault; it fires at its next opportunity.
    pub(crate) fn script(&mut self, script: Script) {
        let times = match script {
            Script::PartitionError { times, .. } => times,
            _ => 1,
        };
        if times > 0 {
            self.scripts.push((script, times));
        }
    }

    /// Drops every scripted fault that has not fired yet.
    pub(crate) fn clear_scripts(&mut self) {
        self.scripts.clear();
    }

    /// Changes the one-way base latency to `node`.
    pub(crate) fn set_latency(&mut self, node: NodeId, latency: Duration) {
        self.net.set_latency(node, latency);
    }

    /// Drops the connection to `node` now; everything in flight on it is reported
    /// `Disconnected`.
    pub(crate) fn drop_connection(&mut self, obs: &mut Observers, node: NodeId) {
        self.faults.add(FaultKind::ConnectionDrop);
        self.connection_lost(obs, node, None);
    }

    /// Draws whether a rival producer with the same `transactional.id` starts now
    /// (counted as a fault when it does).
    pub(crate) fn draw_rival_producer(&mut self) -> bool {
        let rival = self.fault_rng.chance(self.rates.rival_producer);
        if rival {
            self.faults.add(FaultKind::RivalProducer);
        }
        rival
    }

    /// The world's side of a settled input: markers replicated, acks=all waits
    /// completed, the logs scanned by the checker.
    pub(crate) fn settle(&mut self, obs: &mut Observers) {
        self.sync_markers(obs);
        self.complete_delayed(obs);
        self.scan_logs(obs);
    }

    /// The checker reads every partition's log.
    pub(crate) fn scan_logs(&self, obs: &mut Observers) {
        obs.checker_mut()
            .scan_logs(self.partitions.iter().map(|p| &p.state));
    }
}
