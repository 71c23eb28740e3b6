//! Faults aimed at the producer's metadata and leader knowledge.
//!
//! A topic created while the producer runs ([`FaultKind::TopicCreatedLate`]): the race
//! of a producer started just before `kafka-topics --create`. Until `exists_at` the
//! brokers answer the topic UNKNOWN_TOPIC_OR_PARTITION (Metadata and Produce alike);
//! from then until `leaders_at` some of its partitions have no leader yet (Metadata
//! answers them LEADER_NOT_AVAILABLE with leader -1, as Kafka's `KRaftMetadataCache`
//! does while the controller elects; Produce is refused NOT_LEADER_OR_FOLLOWER without
//! a hint); then the topic is as configured. The producer must keep asking for the
//! topic on its backoff until it appears (Java's `KafkaProducer.waitOnMetadata`,
//! `Metadata.handleMetadataResponse` requesting an update for a topic or partition
//! answered with an `InvalidMetadataException`), and deliver every record once. Drawn
//! once per run, from a random stream of its own, so the other faults of a seed are
//! drawn as before.
//!
//! Every connection dropping with a crash ([`FaultKind::ConnectionsDropWithCrash`]):
//! the client is left without a ready connection while the crashed broker is in its
//! reconnect backoff, and the crash's leadership moves need metadata. The lookup must
//! go to a broker it can reach rather than wait on the crashed one (Java's
//! `NetworkClient.leastLoadedNode`).

use std::time::Duration;

use kacrab_idempotence::{NodeId, Timestamp, Topic};

use crate::faults::FaultKind;
use crate::observers::Observers;
use crate::rng::Rng;

use super::{SimPartition, World};

/// The random stream the creation is drawn from.
const STREAM: u64 = 0x6d65_7461_6461_7461;

/// The topic being created, and when it and its leaders appear.
#[derive(Clone, Debug)]
pub(crate) struct TopicCreation {
    topic: Topic,
    /// Before this the topic does not exist.
    exists_at: Timestamp,
    /// Before this the partitions in `leaderless` have no leader. Invariant: not before
    /// `exists_at`.
    leaders_at: Timestamp,
    /// Global partition indices of the topic's partitions elected last.
    leaderless: Vec<usize>,
}

impl TopicCreation {
    /// Draws whether one of `topics` is created late, at `rate` per run.
    pub(crate) fn draw(
        seed: u64,
        rate: f64,
        topics: &[Topic],
        partitions: &[SimPartition],
    ) -> Option<Self> {
        let mut rng = Rng::stream(seed, STREAM);
        if !rng.chance(rate) {
            return None;
        }
        let topic = topics[rng.pick(topics.len())?].clone();
        let exists_at = Timestamp::ZERO + Duration::from_millis(rng.range(50, 1500));
        let leaders_at = exists_at + Duration::from_millis(rng.range(0, 1000));
        let leaderless = partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.tp.topic == topic)
            .filter(|_| rng.chance(0.5))
            .map(|(gp, _)| gp)
            .collect();
        debug_assert!(leaders_at >= exists_at);
        Some(Self {
            topic,
            exists_at,
            leaders_at,
            leaderless,
        })
    }
}

impl World {
    /// Whether `topic` exists at the current time.
    pub(crate) fn topic_exists(&self, topic: &Topic) -> bool {
        self.topics.contains(topic)
            && self
                .creation
                .as_ref()
                .is_none_or(|c| &c.topic != topic || self.now >= c.exists_at)
    }

    /// Whether partition `gp` is still waiting for its first leader.
    pub(crate) fn awaits_first_leader(&self, gp: usize) -> bool {
        self.creation
            .as_ref()
            .is_some_and(|c| self.now < c.leaders_at && c.leaderless.contains(&gp))
    }

    /// Faults stop: a topic still being created is created now, with every leader
    /// elected. Its creation is a fault like any other, so the quiet phase, whose
    /// liveness bounds count from the heal, must not wait on it.
    pub(super) fn finish_topic_creation(&mut self, obs: &mut Observers) {
        if self
            .creation
            .take()
            .is_some_and(|c| self.now < c.leaders_at)
        {
            obs.trace(self.now, || {
                "topic creation completes with the heal".to_string()
            });
        }
    }

    /// When the topic created while producing has all its leaders, if one is.
    pub(crate) fn topic_leaders_at(&self) -> Option<Timestamp> {
        self.creation.as_ref().map(|c| c.leaders_at)
    }

    /// Counts the creation fault, if one was drawn.
    pub(super) fn count_creation(&mut self) {
        if self.creation.is_some() {
            self.faults.add(FaultKind::TopicCreatedLate);
        }
    }

    /// After a random crash of `node`: every other connection drops too, at
    /// `connections_drop_with_crash`.
    pub(super) fn maybe_drop_every_connection_with(&mut self, obs: &mut Observers, node: NodeId) {
        if !self
            .crash_rng
            .chance(self.rates.connections_drop_with_crash)
        {
            return;
        }
        self.faults.add(FaultKind::ConnectionsDropWithCrash);
        obs.trace(self.now, || {
            format!("FAULT every connection drops with node {node}")
        });
        let others: Vec<NodeId> = self
            .brokers
            .iter()
            .filter(|b| b.up && b.id != node)
            .map(|b| b.id)
            .collect();
        for other in others {
            self.connection_lost(obs, other, None);
        }
    }
}
