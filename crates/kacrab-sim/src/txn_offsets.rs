//! Consumed offsets in the transactional workload: some transactions send offsets of a
//! consumer group with `send_offsets_to_transaction` (AddOffsetsToTxn and
//! TxnOffsetCommit under TV1, TxnOffsetCommit v5 alone under TV2), and the property
//! that the group's committed offsets come only from transactions that committed
//! (KIP-98: the group coordinator applies them with the COMMIT marker).

use kacrab_idempotence::{ConsumerGroupMetadata, OffsetToCommit, TopicPartition};

use crate::coordinator::{Partition, TransactionCoordinator};
use crate::rng::Rng;
use crate::txn_sim::{TxnOutcome, TxnTracker};

/// The consumer group of the workload's offsets.
pub const WORKLOAD_GROUP: &str = "sim-group";

/// The chance that a transaction of the workload sends offsets.
const OFFSETS_CHANCE: f64 = 0.3;

/// The offset transaction `idx` commits for global partition `gp`: rises with `idx`,
/// so that the latest committed transaction's offset is the largest.
fn offset_for(idx: usize, gp: usize) -> i64 {
    i64::try_from(idx * 100 + gp).unwrap_or(i64::MAX)
}

/// With [`OFFSETS_CHANCE`] (drawn from `rng`), the offsets transaction `idx` sends:
/// one or two of the cluster's partitions `tps` (by global index).
pub(crate) fn draw_offsets(
    rng: &mut Rng,
    tps: &[TopicPartition],
    idx: usize,
) -> Option<Vec<OffsetToCommit>> {
    if !rng.chance(OFFSETS_CHANCE) {
        return None;
    }
    let n = tps.len() as u64;
    let count = rng.range(1, 2);
    let mut offsets = Vec::new();
    for _ in 0..count {
        let gp = rng.below(n) as usize;
        let tp = tps[gp].clone();
        if offsets.iter().any(|o: &OffsetToCommit| o.partition == tp) {
            continue;
        }
        offsets.push(OffsetToCommit::new(tp, offset_for(idx, gp)));
    }
    Some(offsets)
}

/// The workload's consumer group, as `send_offsets_to_transaction` takes it.
pub(crate) fn workload_group() -> ConsumerGroupMetadata {
    ConsumerGroupMetadata::new(WORKLOAD_GROUP)
}

/// `offsets` as the coordinator keys them.
pub(crate) fn as_partitions(offsets: &[OffsetToCommit]) -> Vec<(Partition, i64)> {
    offsets
        .iter()
        .map(|o| {
            (
                (o.partition.topic.as_str().to_owned(), o.partition.partition),
                o.offset,
            )
        })
        .collect()
}

/// The offsets property: every offset committed for [`WORKLOAD_GROUP`] was sent by
/// a transaction that committed (or whose outcome the producer never learned), and
/// is at least the one the last committed transaction sent for that partition
/// (but for transaction `settling`, whose markers are still being written).
pub(crate) fn check_offsets(
    coordinator: &TransactionCoordinator,
    txns: &TxnTracker,
    settling: Option<usize>,
    problems: &mut Vec<String>,
) {
    let committed = coordinator.committed_offsets(WORKLOAD_GROUP);
    for (tp, &offset) in &committed {
        let from = txns
            .txns
            .iter()
            .position(|t| t.offsets.iter().any(|(p, o)| p == tp && *o == offset));
        match from.map(|t| &txns.txns[t].outcome) {
            Some(TxnOutcome::Committed | TxnOutcome::Failed(_)) => {}
            Some(o) => problems.push(format!(
                "offset {offset} of {tp:?} committed by a transaction that ended {o:?}"
            )),
            None => problems.push(format!("offset {offset} of {tp:?} never sent")),
        }
    }
    for (t, txn) in txns.txns.iter().enumerate() {
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
