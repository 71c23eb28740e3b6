//! A partition still opening for a producer ([`FaultKind::OpeningNotLeader`]): its
//! leader answers NOT_LEADER_OR_FOLLOWER to a batch of an idempotent producer it holds
//! no state for, as a freshly created topic's partitions do while their leaders are
//! being elected. Kafka before 4.5 then accepts the producer's next batch at any
//! sequence (KIP-360, `ProducerAppendInfo.checkSequence` for an unknown producer), so a
//! client that pipelined it gets it appended ahead of the refused first batch, whose
//! retries are answered OUT_OF_ORDER_SEQUENCE_NUMBER until `delivery.timeout.ms`
//! (KAFKA-15591; Java 4.4's `RecordAccumulator` pipelines the second batch). The model
//! broker accepts that non-zero first sequence (unless `strict_first_sequence`), so the
//! hazard is real here; the core's first-batch gate must keep the second batch back.

use std::collections::BTreeSet;

use kacrab_idempotence::{KafkaError, NodeId, PartitionResponse};

use super::World;
use crate::batch;
use crate::faults::FaultKind;
use crate::observers::Observers;
use crate::rng::Rng;

/// What the fault has drawn so far.
#[derive(Clone, Debug)]
pub(super) struct Opening {
    /// Its own stream, so that runs without the fault draw what they drew before.
    rng: Rng,
    /// (global partition, producer id) whose first batch was drawn for already: the
    /// fault hits a producer's first produce on a partition, once.
    drawn: BTreeSet<(usize, i64)>,
}

impl Opening {
    pub(super) fn new(seed: u64) -> Self {
        Self {
            rng: Rng::stream(seed, 0x0be1),
            drawn: BTreeSet::new(),
        }
    }
}

impl World {
    /// Draws the refusal of `data`, a batch for global partition `gp` on its leader
    /// `node`: `Some` (NOT_LEADER_OR_FOLLOWER, no leader hint, nothing appended) when
    /// the batch is idempotent, the leader holds no state for its producer there, it is
    /// the producer's first batch to reach the partition's leader, and the fault is
    /// drawn.
    pub(super) fn refuse_opening(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        gp: usize,
        data: &[u8],
    ) -> Option<PartitionResponse> {
        if self.rates.opening_not_leader <= 0.0 {
            return None;
        }
        let header = batch::decode_header(data).ok()?;
        let state = &self.partitions[gp].state;
        let opening = header.producer_id >= 0
            && !header.is_transactional()
            && state.producer(header.producer_id).is_none();
        if !opening
            || !self.opening.drawn.insert((gp, header.producer_id))
            || !self.opening.rng.chance(self.rates.opening_not_leader)
        {
            return None;
        }
        self.faults.add(FaultKind::OpeningNotLeader);
        let tp = self.partitions[gp].tp.clone();
        let seq = header.base_sequence;
        obs.trace(self.now, || {
            format!("FAULT node {node} answers {tp} (opening, seq {seq}): NOT_LEADER_OR_FOLLOWER")
        });
        let mut pr = PartitionResponse::error(tp, KafkaError::NotLeaderOrFollower);
        pr.log_start_offset = self.partitions[gp].state.log_start_offset();
        Some(pr)
    }
}
