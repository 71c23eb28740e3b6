//! The world's side of replication: followers fetching from the leader with a
//! virtual-time lag, the in-sync replicas and the high watermark, acks=all produce
//! requests held in purgatory until their batches are committed, and leader
//! elections that truncate the uncommitted tail.
//!
//! Kafka's rules:
//!
//! * The leader's high watermark is the smallest log end offset of the in-sync
//!   replicas, and never moves backwards (`Partition.maybeIncrementLeaderHW`). A
//!   crashed replica leaves the ISR; a replica rejoins once it has caught up with the
//!   leader's log end (`Partition.maybeExpandIsr`).
//! * An acks=all produce is answered once every partition it appended to has its high
//!   watermark past the batch (`DelayedProduce.tryComplete`,
//!   `Partition.checkEnoughReplicasReachOffset`), with NOT_LEADER_OR_FOLLOWER for a
//!   partition whose leadership moved meanwhile, or REQUEST_TIMED_OUT after the
//!   request's timeout. The broker reads nothing more from the connection meanwhile
//!   (the channel is muted while a request is processed).
//! * Only an in-sync replica can become leader (`unclean.leader.election.enable` is
//!   false by default); with none alive the partition is offline until one returns.
//!   The replicas then truncate to the new leader's log (KIP-101/KIP-279), so what was
//!   appended to the old leader and not yet replicated vanishes; what was committed
//!   is on every in-sync replica and survives.
//! * Transaction markers are written with acks=all by the coordinator
//!   (`WriteTxnMarkers`); the model coordinator writes them synchronously, so a marker
//!   is replicated to the in-sync replicas at once (with everything before it).

use std::time::Duration;

use kacrab_idempotence::{
    KafkaError, LeaderHint, NodeId, PartitionResponse, ProduceRequest, ProduceResponse, RequestId,
    Timestamp,
};

use super::World;
use crate::broker::PartitionState;
use crate::config::SimConfig;
use crate::failure_bound::FaultScope;
use crate::faults::FaultKind;
use crate::log::LogEntry;
use crate::net::ToClient;
use crate::observers::Observers;

/// Whether a follower is in the in-sync replica set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsrState {
    /// In the ISR: the high watermark waits for it; it can become leader.
    InSync,
    /// Out of the ISR (crashed, or restarted and still catching up).
    OutOfSync,
}

/// One follower replica of a partition.
#[derive(Clone, Debug)]
pub struct Follower {
    /// The broker holding it.
    pub node: NodeId,
    /// Its log and producer state (built from what it replicated).
    pub state: PartitionState,
    /// ISR membership. Invariant: an in-sync follower's log is a prefix of the
    /// leader's reaching at least the high watermark.
    pub isr: IsrState,
    /// Its next fetch, if one is due.
    pub fetch_at: Option<Timestamp>,
}

/// What an acks=all produce waits for on one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wait {
    /// Index in the response's partitions.
    index: usize,
    gp: usize,
    /// The leader epoch the batch was appended under.
    leader_epoch: i32,
    /// The high watermark that commits the batch (its last offset + 1).
    required: i64,
    done: bool,
}

impl Wait {
    pub(crate) fn new(index: usize, gp: usize, leader_epoch: i32, last_offset: i64) -> Self {
        Wait {
            index,
            gp,
            leader_epoch,
            required: last_offset + 1,
            done: false,
        }
    }

    /// The partition waited on.
    pub(crate) fn gp(&self) -> usize {
        self.gp
    }
}

/// An acks=all produce request in purgatory (Kafka's `DelayedProduce`).
#[derive(Clone, Debug)]
pub(crate) struct DelayedProduce {
    node: NodeId,
    /// The connection it was read from; if that one drops, the request is gone.
    generation: u64,
    id: RequestId,
    resp: ProduceResponse,
    gps: Vec<usize>,
    waits: Vec<Wait>,
    deadline: Timestamp,
}

/// Followers of a partition led by `leader`: every other broker, in sync.
pub(crate) fn new_followers(leader: NodeId, config: &SimConfig) -> Vec<Follower> {
    (1..=config.brokers as i32)
        .map(NodeId)
        .filter(|&n| n != leader)
        .map(|node| Follower {
            node,
            state: tracked_state(config),
            isr: IsrState::InSync,
            fetch_at: None,
        })
        .collect()
}

/// An empty replica whose high watermark is tracked and whose segments roll every
/// `SimConfig::segment_entries` entries.
pub(crate) fn tracked_state(config: &SimConfig) -> PartitionState {
    PartitionState::tracked(config.segment_entries, config.rebuild_snapshots)
}

impl World {
    fn expiration_ms(&self) -> u64 {
        u64::try_from(self.config.producer_id_expiration.as_millis()).unwrap_or(u64::MAX)
    }

    /// The earliest follower fetch or purgatory deadline.
    pub(crate) fn next_replication_event(&self) -> Option<Timestamp> {
        let fetches = self
            .partitions
            .iter()
            .flat_map(|p| p.followers.iter().filter_map(|f| f.fetch_at));
        let deadlines = self.purgatory.iter().map(|d| d.deadline);
        fetches.chain(deadlines).min()
    }

    /// Performs every fetch due now, then answers what purgatory can answer.
    pub(crate) fn replication_step(&mut self, obs: &mut Observers) {
        for gp in 0..self.partitions.len() {
            for fi in 0..self.partitions[gp].followers.len() {
                if self.partitions[gp].followers[fi]
                    .fetch_at
                    .is_some_and(|t| t <= self.now)
                {
                    self.fetch(obs, gp, fi);
                }
            }
        }
        self.complete_delayed(obs);
    }

    /// Follower `fi` of partition `gp` fetches everything its leader has.
    fn fetch(&mut self, obs: &mut Observers, gp: usize, fi: usize) {
        let (now_ms, exp) = (self.now.as_millis(), self.expiration_ms());
        let leader_up = self.is_up(self.partitions[gp].leader);
        let node = self.partitions[gp].followers[fi].node;
        let follower_up = self.is_up(node);
        let part = &mut self.partitions[gp];
        let f = &mut part.followers[fi];
        f.fetch_at = None;
        if !leader_up || !follower_up {
            return;
        }
        f.state.fetch_from(&part.state, now_ms, exp);
        if f.isr == IsrState::OutOfSync
            && f.state.log().log_end_offset() == part.state.log().log_end_offset()
        {
            f.isr = IsrState::InSync;
            let tp = part.tp.clone();
            obs.trace(self.now, || {
                format!("node {node} caught up on {tp}, back in the ISR")
            });
        }
        self.update_high_watermark(gp);
    }

    /// After the leader of `gp` appended (or changed): every live follower without a
    /// fetch due fetches now, or after a lag drawn as a fault.
    pub(crate) fn schedule_fetches(&mut self, obs: &mut Observers, gp: usize) {
        for fi in 0..self.partitions[gp].followers.len() {
            let f = &self.partitions[gp].followers[fi];
            if f.fetch_at.is_some() || !self.is_up(f.node) {
                continue;
            }
            if self.fault_rng.chance(self.rates.replica_lag) {
                let lo = self.config.replica_lag_min.as_micros() as u64;
                let hi = self.config.replica_lag_max.as_micros() as u64;
                let at = self.now + Duration::from_micros(self.fault_rng.range(lo, hi));
                self.faults.add(FaultKind::ReplicaLag);
                self.partitions[gp].followers[fi].fetch_at = Some(at);
            } else {
                self.fetch(obs, gp, fi);
            }
        }
        self.update_high_watermark(gp);
    }

    /// The leader's high watermark: the smallest log end offset of the ISR (the
    /// leader included), never lower than before.
    pub(crate) fn update_high_watermark(&mut self, gp: usize) {
        let part = &mut self.partitions[gp];
        let leo = part.state.log().log_end_offset();
        let old = part.state.high_watermark();
        let isr_min = part
            .followers
            .iter()
            .filter(|f| f.isr == IsrState::InSync)
            .map(|f| f.state.log().log_end_offset())
            .fold(leo, i64::min);
        debug_assert!(
            isr_min >= old,
            "an in-sync replica is below the high watermark"
        );
        part.state.set_high_watermark(isr_min.max(old));
    }

    /// Markers the coordinator wrote since the last input are replicated at once (it
    /// writes them with acks=all).
    pub(crate) fn sync_markers(&mut self, obs: &mut Observers) {
        for gp in 0..self.partitions.len() {
            let state = &self.partitions[gp].state;
            let hw = state.high_watermark();
            let marker_above_hw = state
                .entries()
                .iter()
                .rev()
                .take_while(|e| e.last_offset() >= hw)
                .any(|e| matches!(e, LogEntry::Marker(_)));
            if marker_above_hw {
                for fi in 0..self.partitions[gp].followers.len() {
                    self.fetch(obs, gp, fi);
                }
            }
        }
    }

    /// Holds the acks=all produce `request` until its batches are committed (at most
    /// its timeout).
    pub(crate) fn park(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        request: &ProduceRequest,
        resp: ProduceResponse,
        gps: &[usize],
        waits: Vec<Wait>,
    ) {
        let (id, timeout) = (request.id, request.timeout);
        // The request came on the connection of `reply_generation`. If that one is gone
        // (a request the broker held and applied late), nobody waits for the answer: the
        // append stands and replicates on its own, and nothing is parked on a newer
        // connection that never carried the request.
        let generation = self.reply_generation;
        if !self.net.is_current(node, generation) {
            return;
        }
        obs.stats_mut().delayed_produces += 1;
        self.net.park(node, id);
        obs.trace(self.now, || {
            format!("node {node} holds req {id} until replicated")
        });
        self.purgatory.push(DelayedProduce {
            node,
            generation,
            id,
            resp,
            gps: gps.to_vec(),
            waits,
            deadline: self.now + timeout,
        });
    }

    /// Whether every batch `waits` names is committed already.
    pub(crate) fn committed(&self, waits: &[Wait]) -> bool {
        waits
            .iter()
            .all(|w| self.partitions[w.gp].state.high_watermark() >= w.required)
    }

    /// Answers every delayed produce whose partitions are all committed, moved or
    /// timed out.
    pub(crate) fn complete_delayed(&mut self, obs: &mut Observers) {
        let mut i = 0;
        while i < self.purgatory.len() {
            let (node, generation) = (self.purgatory[i].node, self.purgatory[i].generation);
            let open = self
                .net
                .connection(node)
                .is_some_and(|c| c.generation == generation);
            if !open || !self.is_up(node) {
                self.purgatory.remove(i);
                continue;
            }
            let timed_out = self.now >= self.purgatory[i].deadline;
            for w in 0..self.purgatory[i].waits.len() {
                let wait = self.purgatory[i].waits[w];
                if wait.done {
                    continue;
                }
                let p = &self.partitions[wait.gp];
                let moved = p.leader != node || p.leader_epoch != wait.leader_epoch;
                let error = if moved {
                    Some(KafkaError::NotLeaderOrFollower)
                } else if p.state.high_watermark() >= wait.required {
                    None
                } else if timed_out {
                    Some(KafkaError::RequestTimedOut)
                } else {
                    continue;
                };
                let hint = (moved && self.is_up(p.leader) && self.fault_rng.chance(0.5))
                    .then_some(LeaderHint::new(p.leader, p.leader_epoch));
                let log_start = p.state.log_start_offset();
                let d = &mut self.purgatory[i];
                d.waits[w].done = true;
                if let Some(error) = error {
                    let tp = d.resp.partitions[wait.index].partition.clone();
                    let mut pr = PartitionResponse::error(tp.clone(), error);
                    pr.log_start_offset = log_start;
                    pr.current_leader = hint;
                    d.resp.partitions[wait.index] = pr;
                    if moved {
                        self.faults.add(FaultKind::NotLeaderAfterAppend);
                    }
                    let id = d.id;
                    obs.trace(self.now, || {
                        format!("node {node} appended {tp} for req {id}, answers {error}")
                    });
                }
            }
            if self.purgatory[i].waits.iter().all(|w| w.done) {
                let d = self.purgatory.remove(i);
                if self.net.unpark(d.node, d.generation).is_some() {
                    // The answer goes back on the connection the request came on, not
                    // on whichever one the request being applied now came on: Kafka
                    // answers on the request's connection only
                    // (`RequestChannel.sendResponse`), and drops the answer if it closed.
                    self.respond_on(
                        obs,
                        d.node,
                        d.generation,
                        d.id,
                        ToClient::Produce(d.id, d.resp),
                        &d.gps,
                    );
                }
            } else {
                i += 1;
            }
        }
    }

    /// A live in-sync follower of `gp` other than `not`, chosen at random.
    pub(crate) fn elect(&mut self, gp: usize, not: NodeId) -> Option<NodeId> {
        let candidates: Vec<NodeId> = self.partitions[gp]
            .followers
            .iter()
            .filter(|f| f.isr == IsrState::InSync && f.node != not && self.is_up(f.node))
            .map(|f| f.node)
            .collect();
        self.fault_rng.pick(candidates.len()).map(|i| candidates[i])
    }

    /// Makes follower `to` the leader of `gp` with a bumped leader epoch. Its log is
    /// the truth: the old leader's uncommitted tail is truncated, every replica
    /// truncates to it, and the producer state is the one `to` built by replication.
    pub(crate) fn change_leader(&mut self, obs: &mut Observers, gp: usize, to: NodeId) {
        let (now_ms, exp) = (self.now.as_millis(), self.expiration_ms());
        let old_leader = self.partitions[gp].leader;
        let old_up = self.is_up(old_leader);
        let part = &mut self.partitions[gp];
        let Some(fi) = part.followers.iter().position(|f| f.node == to) else {
            return;
        };
        debug_assert_eq!(
            part.followers[fi].isr,
            IsrState::InSync,
            "no unclean leader election"
        );
        let mut f = part.followers.remove(fi);
        std::mem::swap(&mut part.state, &mut f.state);
        // `f.state` is now the old leader's replica.
        let truncated = part.state.take_over_from(&mut f.state);
        let truncated_records: usize = truncated
            .iter()
            .map(|e| match e {
                LogEntry::Batch(b) => b.records.len(),
                LogEntry::Marker(_) => 0,
            })
            .sum();
        let truncated_entries = truncated.len();
        f.node = old_leader;
        f.isr = if old_up {
            IsrState::InSync
        } else {
            IsrState::OutOfSync
        };
        f.fetch_at = None;
        part.followers.push(f);
        part.followers.sort_by_key(|f| f.node);
        for g in &mut part.followers {
            let keep = g.state.log().common_prefix(part.state.log());
            g.state.truncate_to_entries(keep, now_ms, exp);
        }
        part.previous_leader = Some((part.leader, part.leader_epoch));
        part.leader = to;
        part.leader_epoch += 1;
        let (tp, epoch) = (part.tp.clone(), part.leader_epoch);
        obs.stats_mut().leader_changes += 1;
        if truncated_entries > 0 {
            self.faults.add(FaultKind::TruncationOnFailover);
            self.fault_window(obs, FaultScope::Partition(gp), Duration::ZERO);
            obs.stats_mut().truncated_entries += truncated_entries as u64;
            obs.stats_mut().truncated_records += truncated_records as u64;
        }
        obs.trace(self.now, || {
            format!("leader of {tp} is now node {to} (epoch {epoch}), {truncated_entries} uncommitted entries truncated")
        });
        self.update_high_watermark(gp);
        self.schedule_fetches(obs, gp);
        self.complete_delayed(obs);
    }

    /// `node` crashed: its follower replicas leave the ISR (the high watermark may
    /// advance without them) and its parked requests are gone with the connection.
    pub(crate) fn replicas_crashed(&mut self, node: NodeId) {
        self.purgatory.retain(|d| d.node != node);
        for gp in 0..self.partitions.len() {
            for f in &mut self.partitions[gp].followers {
                if f.node == node {
                    f.isr = IsrState::OutOfSync;
                    f.fetch_at = None;
                }
            }
            self.update_high_watermark(gp);
        }
    }

    /// `node` restarted: each of its replicas reloads producer state from its newest
    /// snapshot plus the log after it, and a follower starts catching up (out of the
    /// ISR until it has).
    pub(crate) fn replicas_restarted(&mut self, obs: &mut Observers, node: NodeId) {
        let (now_ms, exp) = (self.now.as_millis(), self.expiration_ms());
        // Kafka restarts both ways: after a clean shutdown (a snapshot at the log end)
        // or a crash (the newest snapshot plus a replay of the log after it). Which one
        // is drawn per restart unless the configuration forces the clean one.
        let clean = self.config.snapshot_restore || self.fault_rng.chance(0.5);
        let snapshot_at = |s: &PartitionState| {
            if clean {
                s.entries().len()
            } else {
                s.newest_snapshot()
            }
        };
        for gp in 0..self.partitions.len() {
            let part = &mut self.partitions[gp];
            if part.leader == node {
                let at = snapshot_at(&part.state);
                part.state.restart_from_snapshot_at(at, now_ms, exp);
            }
            for f in &mut part.followers {
                if f.node == node {
                    let at = snapshot_at(&f.state);
                    f.state.restart_from_snapshot_at(at, now_ms, exp);
                    f.isr = IsrState::OutOfSync;
                }
            }
            self.schedule_fetches(obs, gp);
        }
        self.complete_delayed(obs);
    }

    /// Lets follower `to` of `gp` catch up fully now (a reassignment waits for it).
    /// Returns whether it is in sync then.
    pub(crate) fn catch_up(&mut self, obs: &mut Observers, gp: usize, to: NodeId) -> bool {
        let Some(fi) = self.partitions[gp]
            .followers
            .iter()
            .position(|f| f.node == to)
        else {
            return false;
        };
        self.fetch(obs, gp, fi);
        self.partitions[gp].followers[fi].isr == IsrState::InSync
    }
}
