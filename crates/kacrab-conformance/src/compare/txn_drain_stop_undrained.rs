//! `JavaDrainStopsAtWaitingPartition` in a transactional trace where Java never sends the
//! batch the core sent and the trace shows Java's failed transaction only through the
//! records of that batch (docs/design.md, "Transactional traces"): the form of
//! `txn_commit2::java_drain_stop_then_abortable` where the script calls nothing more.

use std::collections::BTreeMap;

use super::projection::PartitionEvent;
use super::timing::{self, DrainStop};

/// [`Verdict::JavaDrainStopsAtWaitingPartition`](super::Verdict): partition `p`'s first
/// difference, at `k`, is the core sending a new batch of `p` (its identity's next
/// sequence, not a retry) to `node` in a step where Java reported that its drain of
/// `node` stopped before `p` (`RecordAccumulator.drainBatchesForOneNode`); Java sends no
/// batch of `p` from there on. Java's output shows no refused call or failed operation
/// after that (the script calls nothing more), but Java fails a record of `p`
/// (`recs`: the trace's sends to `p`, by record number) with an error code `X` that is
/// not a delivery timeout (REQUEST_TIMED_OUT, 7), where the core delivered that record;
/// and both sides fail some other record with that same `X` (the answer that made
/// Java's transaction abortable, seen alike on both sides), or, where `X` is -1 (Java
/// names no code: a `TransactionAbortedException`), with any one code, a delivery
/// timeout's included (an expiry makes the transaction abortable). An abortable transaction's
/// undrained batches are failed with its last error, never sent
/// (`Sender.maybeSendAndPollTransactionalRequest`,
/// `RecordAccumulator.abortUndrainedBatches`): Java's batch was still undrained because
/// its drain had stopped, where the core, not stopped, had sent it first.
#[allow(clippy::too_many_arguments)]
pub(super) fn java_fails_undrained_alike(
    p: i32,
    k: usize,
    je: &[PartitionEvent],
    (ce, ct): (&[PartitionEvent], &[i64]),
    stops: &[DrainStop],
    recs: &[i64],
    jo: &BTreeMap<i64, String>,
    co: &BTreeMap<i64, String>,
) -> bool {
    if !timing::java_never_drains_core_send(p, k, je, (ce, ct), stops) {
        return false;
    }
    let failed_alike = |code: &str| {
        jo.iter().any(|(rec, j)| {
            !recs.contains(rec) && j == code && co.get(rec).is_some_and(|c| c == code)
        })
    };
    // Java names the transaction's last error, or none (-1) where it aborts the batch
    // with a `TransactionAbortedException`; either way some other record failed alike
    // on both sides shows what ended Java's transaction. With -1 that may be a delivery
    // timeout too: a transactional batch's expiry makes Java's transaction abortable
    // (`Sender.failBatch` → `TransactionManager.handleFailedBatch`), and the core, having
    // sent and delivered `p`'s record, was not abortable when it sent it.
    let any_failed_alike = jo.iter().any(|(rec, j)| {
        !recs.contains(rec) && j.starts_with("err:") && co.get(rec).is_some_and(|c| c == j)
    });
    let undrained_failed = recs.iter().any(|rec| {
        jo.get(rec).is_some_and(|j| {
            j.starts_with("err:")
                && j != "err:7"
                && co.get(rec).is_some_and(|c| c.starts_with("ok:"))
                && (failed_alike(j) || (j == "err:-1" && any_failed_alike))
        })
    });
    undrained_failed
}

/// [`Verdict::JavaDrainStopsAtWaitingPartition`](super::Verdict) where Java's output ends
/// in its own bookkeeping's failure before it drains the batch: partition `p`'s first
/// difference, at `k`, is the core sending a new batch of `p` in a step where Java's
/// drain of that node stopped before `p` (`timing::java_never_drains_core_send`), and
/// Java's output after the lines both outputs share (`java_from`) ends with a tracking
/// failure (`java_tracking::is_tracking_failure`: Java's `TransactionManager` dropped a
/// partition's entry with a batch of it on the wire, and the Sender threw on its answer)
/// thrown in the harness's final drain, so Java wrote no record's outcome at all. Java's
/// side then says nothing more to compare; the core's output (`core_out`) must hold
/// together on its own (`consistency::holds_together`). The exception itself is a Java
/// defect that follows the named difference (`java_tracking::after_named_difference`).
#[allow(clippy::too_many_arguments)]
pub(super) fn java_throws_before_draining(
    p: i32,
    k: usize,
    je: &[PartitionEvent],
    (ce, ct): (&[PartitionEvent], &[i64]),
    stops: &[DrainStop],
    (java_out, java_from): (&[String], usize),
    core_out: &[String],
    trace: &crate::trace::Trace,
) -> bool {
    let Some(last) = java_out.last() else {
        return false;
    };
    let threw_at_end = super::java_tracking::is_tracking_failure(last)
        && java_out.len() > java_from
        && !java_out
            .iter()
            .any(|l| super::field(l, "ev") == Some("outcome"));
    threw_at_end
        && timing::java_never_drains_core_send(p, k, je, (ce, ct), stops)
        && super::consistency::holds_together(trace, core_out)
}
