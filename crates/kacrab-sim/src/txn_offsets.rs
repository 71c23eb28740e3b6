//! Consumed offsets in the transactional workload: some transactions send offsets of a
//! consumer group with `send_offsets_to_transaction` (AddOffsetsToTxn and
//! TxnOffsetCommit under TV1, TxnOffsetCommit v5 alone under TV2), and the property
//! that the group's committed offsets come only from transactions that committed
//! (KIP-98: the group coordinator applies them with the COMMIT marker).

use std::time::Duration;

use kacrab_idempotence::{ConsumerGroupMetadata, OffsetToCommit, TxnOp};

use crate::cluster::Cluster;
use crate::coordinator::Partition;
use crate::txn_sim::TxnOutcome;

/// The consumer group of the workload's offsets.
pub const WORKLOAD_GROUP: &str = "sim-group";

/// The chance that a transaction of the workload sends offsets.
const OFFSETS_CHANCE: f64 = 0.3;

/// The offset transaction `idx` commits for global partition `gp`: rises with `idx`,
/// so that the latest committed transaction's offset is the largest.
fn offset_for(idx: usize, gp: usize) -> i64 {
    i64::try_from(idx * 100 + gp).unwrap_or(i64::MAX)
}

impl Cluster {
    /// With [`OFFSETS_CHANCE`], transaction `idx` sends offsets for one or two
    /// partitions and waits for the operation to complete (at most `max`).
    pub(crate) fn maybe_send_offsets(&mut self, idx: usize, max: Duration) {
        if !self.txn_env.offsets_rng().chance(OFFSETS_CHANCE) {
            return;
        }
        let n = self.partitions.len() as u64;
        let count = self.txn_env.offsets_rng().range(1, 2);
        let mut offsets = Vec::new();
        for _ in 0..count {
            let gp = self.txn_env.offsets_rng().below(n) as usize;
            let tp = self.partitions[gp].tp.clone();
            if offsets.iter().any(|o: &OffsetToCommit| o.partition == tp) {
                continue;
            }
            offsets.push(OffsetToCommit {
                partition: tp,
                offset: offset_for(idx, gp),
                leader_epoch: None,
                metadata: None,
            });
        }
        let group = ConsumerGroupMetadata {
            group_id: WORKLOAD_GROUP.to_owned(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        };
        let sent: Vec<(Partition, i64)> = offsets
            .iter()
            .map(|o| {
                (
                    (o.partition.topic.as_str().to_owned(), o.partition.partition),
                    o.offset,
                )
            })
            .collect();
        let start = self.txns.events.len();
        if let Err(e) = self.producer.send_offsets_to_transaction(offsets, group) {
            self.trace_line(|| format!("transaction {idx}: send_offsets refused: {e}"));
            return;
        }
        self.txns.txns[idx].offsets = sent;
        self.txns.pending = Some(TxnOp::SendOffsets);
        self.after_input();
        let result = self.wait_txn(TxnOp::SendOffsets, start, max);
        self.trace_line(|| format!("transaction {idx}: send_offsets {result:?}"));
        if result.is_none() {
            self.violation(
                crate::checker::ViolationKind::Transaction,
                format!("transaction {idx}: SendOffsets did not complete within {max:?}"),
            );
        }
    }

    /// The offsets property: every offset committed for [`WORKLOAD_GROUP`] was sent by
    /// a transaction that committed (or whose outcome the producer never learned), and
    /// is at least the one the last committed transaction sent for that partition
    /// (but for transaction `settling`, whose markers are still being written).
    pub(crate) fn check_offsets(&self, settling: Option<usize>, problems: &mut Vec<String>) {
        let committed = self.coordinator.committed_offsets(WORKLOAD_GROUP);
        for (tp, &offset) in &committed {
            let from = self
                .txns
                .txns
                .iter()
                .position(|t| t.offsets.iter().any(|(p, o)| p == tp && *o == offset));
            match from.map(|t| &self.txns.txns[t].outcome) {
                Some(TxnOutcome::Committed | TxnOutcome::Failed(_)) => {}
                Some(o) => problems.push(format!(
                    "offset {offset} of {tp:?} committed by a transaction that ended {o:?}"
                )),
                None => problems.push(format!("offset {offset} of {tp:?} never sent")),
            }
        }
        for (t, txn) in self.txns.txns.iter().enumerate() {
            if txn.outcome != TxnOutcome::Committed || settling == Some(t) {
                continue;
            }
            for (tp, offset) in &txn.offsets {
                if committed.get(tp).is_none_or(|c| c < offset) {
                    problems.push(format!(
                        "offset {offset} of {tp:?} from committed transaction {t} not committed"
                    ));
                }
            }
        }
    }
}
