//! [`Verdict::JavaDrainStopsAtWaitingPartition`](super::Verdict) in a transactional trace
//! where Java's transaction is fenced before it ever sends the batch the core sent first.

use super::timing::{self, DrainStop};
use super::{field, PartitionEvent};

/// Whether Java's output line `l` is an AddPartitionsToTxn answer that fences the
/// producer: INVALID_PRODUCER_EPOCH or PRODUCER_FENCED for a partition, which Java's
/// `TransactionManager.AddPartitionsToTxnHandler` turns into a fatal PRODUCER_FENCED.
fn fenced_add_partitions(l: &str) -> bool {
    field(l, "ev") == Some("coord_answered")
        && field(l, "api") == Some("add_partitions")
        && field(l, "error").is_some_and(|e| {
            e.split(',').any(|entry| {
                entry.split_once('=').is_some_and(|(_, code)| {
                    matches!(code, "INVALID_PRODUCER_EPOCH" | "PRODUCER_FENCED")
                })
            })
        })
}

/// [`Verdict::JavaDrainStopsAtWaitingPartition`](super::Verdict), the fenced form of
/// `txn_commit2::java_drain_stop_then_abortable`: partition `p`'s first difference, at
/// `k`, is the core sending a new batch (its identity's next sequence, not a retry) to
/// `node` in a step where Java reported that its drain of `node` stopped before `p`
/// (`RecordAccumulator.drainBatchesForOneNode`); Java sends no batch of `p` from there
/// on, and after the lines both outputs share (`java_from`) Java's output has an
/// AddPartitionsToTxn answer that fences the producer (INVALID_PRODUCER_EPOCH or
/// PRODUCER_FENCED: `AddPartitionsToTxnHandler` makes that a fatal PRODUCER_FENCED) and,
/// after it, a record failed with PRODUCER_FENCED (`err:90`): the fatal transaction's
/// undrained batches are failed, never sent (`Sender.maybeSendAndPollTransactionalRequest`,
/// `RecordAccumulator.abortUndrainedBatches`), where the core, not stopped, had sent it
/// first. Nothing else: a fenced answer without that failed record, a retry, or a send in
/// a step without Java's drain stop stays unexplained.
pub(super) fn java_drain_stop_then_fenced(
    p: i32,
    k: usize,
    je: &[PartitionEvent],
    (ce, ct): (&[PartitionEvent], &[i64]),
    stops: &[DrainStop],
    java_out: &[String],
    java_from: usize,
) -> bool {
    if !timing::java_never_drains_core_send(p, k, je, (ce, ct), stops) {
        return false;
    }
    let after = java_out.get(java_from..).unwrap_or_default();
    let fenced = after.iter().position(|l| fenced_add_partitions(l));
    let failed = fenced.is_some_and(|f| {
        after[f..]
            .iter()
            .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:90"))
    });
    failed
}
