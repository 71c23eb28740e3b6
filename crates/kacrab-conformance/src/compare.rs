//! Compares the two sides' outputs and classifies every difference.
//!
//! The invariant lives per partition, so the comparison does too: each side's output is
//! projected onto each partition (the batches sent for it, in order, and the answers
//! they got), and the first place where the projections differ is classified by the
//! detectors below, one per departure in `docs/design.md` ("Where the core departs from
//! the Java client"). Everything after a partition's first difference follows from it
//! and is not classified again. Record outcomes are compared only when every partition's
//! wire history is identical.

use std::collections::BTreeMap;

mod consistency;
mod java_tracking;
mod lines;
mod projection;
mod timing;
mod txn;
mod txn_abort;
mod txn_add_partitions;
mod txn_add_partitions2;
mod txn_add_partitions3;
mod txn_commit;
mod txn_commit2;
mod txn_core_fatal_beside_older_request;
mod txn_core_stops_adding;
mod txn_core_turns_abortable;
mod txn_drain_stop_fenced;
mod txn_drain_stop_undrained;
mod txn_held_add_partitions;
mod txn_java_keeps_asking;
mod txn_older_request_abortable;
mod txn_refusals;
mod txn_request_before_abort;
mod txn_stale_add_partitions;
mod txn_stale_request_against_bump;
mod txn_state_split;
mod txn_unsplit_no_add_partitions;
mod txn_upid_retry_answered_abortable;

use crate::core_side::CoreExtra;
use crate::trace::{Op, Trace};
use projection::{in_flight, project};
pub use projection::{PartitionEvent, Stamp};
use timing::{
    bump_waits_for_possibly_written, bump_waits_intermediate_identity, java_connection_full,
    java_drain_stopped, java_sent_on_timed_out_connection, split_drain_stops,
};

/// What a difference between Java and the core is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Identical output.
    Same,
    /// Departure 7: Java pipelines a second batch of a partition before the first ack
    /// under the current identity; the core sends one batch at a time until then.
    FirstBatchGate,
    /// Departure 6: Java stamps a batch while `max.in.flight` batches were stamped since
    /// the partition's oldest unfinished one, acknowledged or not (the core's window);
    /// the core waits.
    InFlightWindow,
    /// Departure 2: Java renumbers (new epoch or new sequence) a batch that may already be
    /// in the log; the core first resends it unchanged, and where
    /// OUT_OF_ORDER_SEQUENCE_NUMBER leaves no retry under its stamp it resends the highest
    /// later batch that may be in the log, alone and unchanged (`src/probe.rs`; its ack
    /// acknowledges the earlier ones, offsets unknown), or fails it as possibly written.
    NoRenumberOfPossiblyWritten,
    /// Departures 1, 5, 8, 9, 11: after a batch whose fate is unknown (or was definitively
    /// rejected), or that expired on the wire, Java and the core choose differently
    /// between keeping the numbering and bumping the epoch.
    UnresolvedSequenceHandling,
    /// Departure 9 and 11: the wire histories agree but a failed record's outcome
    /// differs in a way the core's proof-of-absence rules explain.
    OutcomeOfPossiblyWritten,
    /// Java's `RecordAccumulator.drainBatchesForOneNode` stops draining a node (`break`)
    /// at the first partition that must wait (`shouldStopDrainBatchesForPartition`: a
    /// retry that is not the first in flight, unresolved sequences, stale in-flight
    /// batches), so the node's later partitions wait too; the core skips only the
    /// waiting partition. Liveness only (the core is never slower). Exact: the core
    /// sends a batch to a node while Java holds it, Java's own drain of that node
    /// reported (`drain_stop`) that it stopped before that partition's drainable head
    /// in between, and Java later sends the same stamp (as many records or more, since
    /// its batch kept filling while it waited).
    JavaDrainStopsAtWaitingPartition,
    /// Java's `Sender.sendProducerData` drains and sends before `NetworkClient.poll`
    /// closes connections with a timed-out request (`handleTimedOutRequests`), so in the
    /// step where an older request on a connection times out Java still puts a new
    /// request on it and loses it with the connection (then retries it); the core closes
    /// the connection first (`handle_timeout` before `poll_request`) and sends on a new
    /// one. Liveness only. Exact: the core closed that connection for a timeout in the
    /// same step, and Java's first difference is either that close, with every batch of
    /// the partition it broke sent in that step, or a send in that step on that
    /// connection, followed at once by the close, where the core's first difference is
    /// its own close; or that close, where the core's first difference is the resend of
    /// the partition's batch on that connection to another broker in that step (Java's
    /// drain still found it in flight) and Java resends the same stamp in a later step,
    /// that broker's connection holding `max.in.flight` unanswered requests in Java at
    /// the end of the step.
    JavaSendsOnTimedOutConnection,
    /// Departure 2: the core applies an epoch bump only once no batch of a partition to
    /// rewrite is on the wire or may be in the log unsettled, and meanwhile stamps other
    /// partitions' new batches with the identity it has, continuing its numbering; Java
    /// bumps at once. Exact: the core's first difference is a new batch stamped with the
    /// identity it used last and that identity's next sequence on the partition; Java's
    /// next batch there goes to the same broker with at least as many records as
    /// sequence 0 of a newer identity, which the core stamps later too (or Java never
    /// sends it: at least as many of the partition's records expire in Java); when the
    /// core sent it, another partition had an error answer under the old identity and
    /// some partition (this one included) a batch of it on the wire or answered with a
    /// code after which it may be in the log, not acknowledged since; and every new
    /// batch the core stamps later is under an identity Java stamped too, or under the
    /// old one while the bump still waits. Also (`timing::bump_waits_intermediate_identity`)
    /// where two error answers under the old identity ask for two bumps, the core applies
    /// the first at once and stamps the new batch with the intermediate identity while the
    /// second waits, and Java, having bumped for both, stamps sequence 0 of a later epoch.
    BumpWaitsForPossiblyWrittenBatches,
    /// Transactional traces: a retried AddPartitionsToTxn, or one held behind a
    /// coordinator lookup. Java sends the request it built (`AddPartitionsToTxnHandler`
    /// keeps its builder) and asks for partitions added meanwhile in the next one; the
    /// core's request, built when sent, asks for the unanswered and the new partitions
    /// together. Exact: see `txn::retried_add_partitions_takes_new`.
    RetriedAddPartitionsTakesNewPartitions,
    /// Transactional traces: an AddPartitionsToTxn Java built before the application's
    /// abort, held behind a coordinator lookup, asks for partitions new at the abort;
    /// the core drops them at the abort (`beginAbort` clears only the new partitions,
    /// not a request already built). Exact: see
    /// `txn_add_partitions::java_asks_new_partitions_while_aborting`; with partitions
    /// whose request failed after the transaction became abortable (the core dropped
    /// it): `txn_refusals::java_asks_pending_partitions_while_aborting`.
    JavaAsksNewPartitionsWhileAborting,
    /// Transactional traces: an abort after `initTransactions` failed. Java's abort
    /// completes at once (nothing was added, so no EndTxn: KAFKA-18401) and leaves the
    /// producer with no producer id, so every later send is refused; the core first
    /// gets a producer id (FindCoordinator, InitProducerId). Exact: see
    /// `txn::abort_after_failed_init`.
    AbortAfterFailedInit,
    /// Transactional traces: under TV1 the core ends every aborted transaction that had
    /// an abortable error with a KIP-360 epoch bump (InitProducerId with its current id
    /// and epoch), so that no failed batch's attempt still in the network can join the
    /// next transaction; Java bumps only after the errors it names
    /// (docs/design.md, "Transactions": "a failed batch in a transaction makes it
    /// abortable and never renumbers sequences", and "Late transactional requests under
    /// TV1"). Exact: see `txn::abort_ends_with_epoch_bump`.
    AbortEndsWithEpochBump,
    /// Transactional traces: under TV1 the core ends a transaction whose EndTxn was
    /// lost on the wire (resent) with a KIP-360 bump, so that a late EndTxn cannot end
    /// the next transaction at the same epoch; Java completes at once (docs/design.md,
    /// "Late transactional requests under TV1"). Exact: see
    /// `txn::lost_end_txn_ends_with_epoch_bump`.
    LostEndTxnEndsWithEpochBump,
    /// Transactional traces: Java's AddPartitionsToTxn asks again for partitions whose
    /// earlier request is still unanswered (`pendingPartitionsInTransaction`); the
    /// core asks only for partitions not yet asked for. Harmless (the coordinator adds a
    /// partition once). Exact: see `txn::java_reasks_pending_partitions`.
    JavaReasksPendingPartitions,
    /// Transactional traces: the core fails a commit as soon as the transaction becomes
    /// abortable; Java holds the failing EndTxn until every batch completed. Liveness
    /// only (the error is the same). Exact: see
    /// `txn::commit_fails_before_batches_settle`; where Java's Sender then loses a batch
    /// in its own bookkeeping and its commit never completes:
    /// `txn_refusals::commit_fails_early_java_never_completes`.
    CommitFailsBeforeBatchesSettle,
    /// Transactional traces: both fail the commit, with different codes. The core
    /// fails it with the transaction's first abortable error, as the error names
    /// itself; Java fails the EndTxn it held with its last one (every abortable error
    /// overwrites `lastError`), and names a retriable cause or INVALID_TXN_STATE
    /// TRANSACTION_ABORTABLE (kafka-clients 4.3.1's `maybeTransitionToErrorState`).
    /// Exact: see `txn_commit::commit_fails_with_javas_last_error`.
    CommitFailsWithJavasLastError,
    /// Transactional traces: the core expires a batch by `delivery.timeout.ms` while a
    /// transactional request is in flight, and fails the commit; Java checks expiry only
    /// in `Sender.sendProducerData`, which it skips while a transactional request is in
    /// flight, so it goes on with its conversation and fails the commit later. Timing
    /// only (the core keeps the bound the configuration sets). Exact: see
    /// `txn_commit::core_expires_while_coordinator_request_out`; with no commit pending,
    /// the send the core then refuses and Java accepts:
    /// `txn_refusals::core_expires_while_coordinator_request_out_refusing`.
    CoreExpiresWhileCoordinatorRequestOut,
    /// Transactional traces: a batch answered UNKNOWN_PRODUCER_ID on a partition with
    /// no acknowledged offset at or above the log start. Java restarts the partition's
    /// sequences and retries it (`TransactionManager.canRetry`); the core makes the
    /// transaction abortable and fails the pending commit (a documented
    /// simplification). Exact: see `txn::unknown_producer_id_fails_commit`.
    UnknownProducerIdAbortsTransaction,
    /// Transactional traces: Java's Sender throws in its own bookkeeping after its
    /// `TransactionManager` dropped a partition's entry with batches of it on the wire
    /// (UNKNOWN_PRODUCER_ID, or an epoch bump), and the batch is lost to Java; the two
    /// outputs are identical up to that exception. A Java defect. Exact: see
    /// `java_tracking::java_loses_track_of_batches`.
    JavaLosesTrackOfBatches,
    /// Transactional traces: under TV1 the core keeps an epoch bump that the coordinator
    /// refused (TRANSACTION_ABORTABLE, failing the abort) required, and the next abort
    /// sends it again; Java's transaction had ended with its EndTxn, which dropped the
    /// bump (`completeTransaction`), so Java's next abort completes at once and the next
    /// transaction runs under the unbumped epoch. Exact: see
    /// `txn_abort::abort_retries_refused_bump`.
    AbortRetriesRefusedBump,
    /// Transactional traces: an abort that ends through its epoch bump after its
    /// EndTxn(ABORT) was answered UNKNOWN_PRODUCER_ID: Java completes it without
    /// resetting the transaction (`completeTransaction` never runs), so it keeps the
    /// aborted transaction's partitions, `transactionStarted` and its client-side bump
    /// request; the core starts the next transaction afresh. A Java defect (Java then
    /// produces to partitions it never added under the new epoch). Exact: see
    /// `txn_abort::java_keeps_transaction_after_bumped_abort`.
    JavaKeepsTransactionAfterBumpedAbort,
    /// Transactional traces: one AddPartitionsToTxn answer gives its partitions
    /// different errors, and the two sides act on different ones. Java's
    /// `AddPartitionsToTxnHandler` acts on the first error (that asks for a lookup, a
    /// retry, or ends the transaction) its `HashMap` of the answer yields, an order of
    /// hash buckets; the core on the first the answer lists. Which wins is arbitrary in
    /// Java, not a Kafka rule. Exact: see
    /// `txn_add_partitions2::add_partitions_errors_taken_in_another_order`.
    AddPartitionsErrorsTakenInAnotherOrder,
    /// A difference no detector explains: a core bug or a missing detector.
    Unexplained,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":");
    let start = line.find(&pat)? + pat.len();
    let rest = &line[start..];
    if let Some(r) = rest.strip_prefix('"') {
        r.split('"').next()
    } else {
        rest.split([',', '}']).next()
    }
}

/// Codes after which Kafka's broker may have appended the batch: the core's own
/// predicate (`KafkaError::may_have_appended`, the complement of the codes the broker
/// answers only before the append), so the comparison and the core agree on it.
fn possibly_written(error: &str) -> bool {
    !matches!(error, "NONE" | "DUPLICATE_SEQUENCE_NUMBER")
        && crate::core_side::error_by_name(error).may_have_appended()
}

/// The next sequence of `identity` after `events`: past the highest batch sent under it,
/// or 0.
fn next_seq(events: &[PartitionEvent], identity: (i64, i32)) -> i64 {
    events
        .iter()
        .filter_map(|e| match e {
            PartitionEvent::Sent { stamp, .. } if stamp.identity() == identity => {
                Some(stamp.seq + stamp.count)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// Whether `events` sent `stamp`'s batch already (the same identity and base sequence:
/// a retry keeps its stamp).
fn sent_before(events: &[PartitionEvent], stamp: &Stamp) -> bool {
    events.iter().any(|e| {
        matches!(e, PartitionEvent::Sent { stamp: s, .. }
            if s.identity() == stamp.identity() && s.seq == stamp.seq)
    })
}

/// What the shared prefix of a partition's history shows.
struct Prefix {
    /// The identity of the last batch sent.
    identity: Option<(i64, i32)>,
    /// Whether a batch was acknowledged under that identity.
    acked_under_identity: bool,
    /// Whether some batch's attempt may be in the log without an ack (possibly-written
    /// error or a broken connection) and was not acknowledged since.
    unknown_fate: bool,
    /// Whether some batch got an error at all.
    any_error: bool,
    /// Batches stamped under the current identity and not yet acknowledged.
    unfinished: Vec<Stamp>,
    /// Batches stamped under the current identity since the oldest unfinished one,
    /// acknowledged or not, in stamp order (departure 6's window).
    window: Vec<(Stamp, bool)>,
}

fn prefix(events: &[PartitionEvent]) -> Prefix {
    let mut p = Prefix {
        identity: None,
        acked_under_identity: false,
        unknown_fate: false,
        any_error: false,
        unfinished: Vec::new(),
        window: Vec::new(),
    };
    let mut flying: Vec<(i32, Stamp)> = Vec::new();
    for e in events {
        match e {
            PartitionEvent::Sent { node, stamp } => {
                if p.identity != Some(stamp.identity()) {
                    p.identity = Some(stamp.identity());
                    p.acked_under_identity = false;
                    p.unfinished.clear();
                    p.window.clear();
                }
                if !p.window.iter().any(|(s, _)| s.seq == stamp.seq) {
                    p.window.push((stamp.clone(), false));
                }
                if !p.unfinished.iter().any(|s| s.seq == stamp.seq) {
                    p.unfinished.push(stamp.clone());
                }
                flying.push((*node, stamp.clone()));
            }
            PartitionEvent::Answered { stamp, error } => {
                if let Some(i) = flying.iter().position(|(_, s)| s == stamp) {
                    flying.remove(i);
                }
                if error == "NONE" || error == "DUPLICATE_SEQUENCE_NUMBER" {
                    if Some(stamp.identity()) == p.identity {
                        p.acked_under_identity = true;
                        p.unfinished.retain(|s| s.seq != stamp.seq);
                        for (s, acked) in &mut p.window {
                            if s.seq == stamp.seq {
                                *acked = true;
                            }
                        }
                        // The window starts at the oldest unfinished batch.
                        let start = p.window.iter().position(|(_, a)| !a);
                        p.window.drain(..start.unwrap_or(p.window.len()));
                    }
                } else {
                    p.any_error = true;
                    if possibly_written(error) {
                        p.unknown_fate = true;
                    }
                }
            }
            PartitionEvent::Disconnected { node } => {
                if flying.iter().any(|(n, _)| n == node) {
                    p.unknown_fate = true;
                    p.any_error = true;
                }
                flying.retain(|(n, _)| n != node);
            }
        }
    }
    p
}

fn classify_partition(
    trace: &Trace,
    (some_record_failed, expired_on_the_wire): (bool, bool),
    shared: &[PartitionEvent],
    java_rest: &[PartitionEvent],
    core: Option<&PartitionEvent>,
) -> Verdict {
    let java = java_rest.first();
    let pre = prefix(shared);
    let max_in_flight = trace.config.max_in_flight as usize;
    let sent = |e: Option<&PartitionEvent>| match e {
        Some(PartitionEvent::Sent { stamp, .. }) => Some(stamp.clone()),
        _ => None,
    };
    let (j, c) = (sent(java), sent(core));
    // Java sends a batch the core holds back.
    if let Some(j) = &j {
        let same_identity = pre.identity == Some(j.identity());
        let new_batch = !pre.unfinished.iter().any(|s| s.seq == j.seq);
        let core_holds = c
            .as_ref()
            .is_none_or(|c| c.seq != j.seq || c.count != j.count);
        if same_identity && new_batch && core_holds {
            if !pre.acked_under_identity && !pre.unfinished.is_empty() {
                return Verdict::FirstBatchGate;
            }
            if pre.unfinished.len() >= max_in_flight || pre.window.len() >= max_in_flight {
                return Verdict::InFlightWindow;
            }
        }
    }
    // A batch that expired (delivery timeout) leaves no answer in the projection but an
    // unresolved sequence all the same: one side bumps, the other continues.
    let epoch_vs_continue = matches!((&j, &c), (Some(j), Some(c))
        if j.identity() != c.identity() && (j.seq == 0 || c.seq == 0));
    // Java bumps at an expiry while the expired batch's attempt is still on the wire; the
    // core waits for that attempt's answer first.
    let java_bumps_alone = matches!(&j, Some(j) if pre.identity.is_some_and(|i| i != j.identity()))
        && c.as_ref()
            .is_none_or(|c| Some(c.identity()) == pre.identity);
    if some_record_failed && java_bumps_alone && !pre.any_error {
        return Verdict::UnresolvedSequenceHandling;
    }
    // The same, where Java holds the partition's new batch first: after its bump the
    // partition's older batch in flight is stale (`shouldStopDrainBatchesForPartition`:
    // in-flight batches of a stale epoch), so Java's first difference is that batch's
    // answer or its connection's close, and its next new batch comes later, as sequence
    // 0 of the new identity (of a later one if Java bumped again meanwhile), with at
    // least the records the core stamped (its batch kept filling). The core's is a new
    // batch continuing the old identity's numbering. A record of the trace expired
    // while its attempt was on the wire (departure 9: failed possibly written on the
    // core's side, by the delivery timeout on both).
    if let (Some(c), true, false) = (&c, expired_on_the_wire, pre.any_error) {
        let java_next_new = java_rest.iter().enumerate().find_map(|(i, e)| match e {
            PartitionEvent::Sent { node, stamp }
                if !sent_before(shared, stamp) && !sent_before(&java_rest[..i], stamp) =>
            {
                Some((*node, stamp))
            }
            _ => None,
        });
        let core_node = match core {
            Some(PartitionEvent::Sent { node, .. }) => *node,
            _ => -1,
        };
        if let Some((jn, j)) = java_next_new {
            let newer = j.pid != c.pid || j.epoch > c.epoch;
            if j.seq == 0
                && newer
                && jn == core_node
                && j.count >= c.count
                && Some(c.identity()) == pre.identity
                && c.seq == next_seq(shared, c.identity())
                && !matches!(java, Some(PartitionEvent::Sent { .. }))
            {
                return Verdict::UnresolvedSequenceHandling;
            }
        }
    }
    if pre.any_error || (some_record_failed && epoch_vs_continue) {
        match (&j, &c) {
            // Java renumbers under a new identity while the core resends the old stamp.
            (Some(j), Some(c)) if pre.unknown_fate && Some(c.identity()) == pre.identity => {
                if Some(j.identity()) != pre.identity {
                    return Verdict::NoRenumberOfPossiblyWritten;
                }
                return Verdict::UnresolvedSequenceHandling;
            }
            _ => return Verdict::UnresolvedSequenceHandling,
        }
    }
    Verdict::Unexplained
}

/// Departure 2 at its root: before the first difference (output line `first_line`), a
/// batch whose earlier attempt may be in the log (answered with a code after which the
/// broker may have appended it, or on a connection that broke) is answered
/// OUT_OF_ORDER_SEQUENCE_NUMBER. Java bumps and renumbers it; the core fails it as
/// possibly written rather than write it twice under a new stamp. With a record the
/// core failed possibly written that Java acknowledged, every later difference follows
/// from that choice (the requests, and so the scripted answers, differ from there on).
/// With `renumbered`, Java's next send on that partition after the answer is under a
/// newer identity (it bumped and renumbered the batch).
fn out_of_order_for_possibly_written(
    parts: &BTreeMap<i32, Vec<PartitionEvent>>,
    at: &BTreeMap<i32, Vec<usize>>,
    first_line: usize,
    renumbered: bool,
) -> bool {
    parts.iter().any(|(q, evs)| {
        let shared = at
            .get(q)
            .map_or(0, |a| a.iter().take_while(|l| **l < first_line).count())
            .min(evs.len());
        let prefix = &evs[..shared];
        prefix.iter().enumerate().any(|(i, e)| {
            let PartitionEvent::Answered { stamp, error } = e else {
                return false;
            };
            let next_newer = evs[i + 1..].iter().find_map(|e| match e {
                PartitionEvent::Sent { stamp: s, .. } => {
                    Some(s.pid != stamp.pid || s.epoch > stamp.epoch)
                }
                _ => None,
            });
            error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
                && timing::unsettled(&prefix[..i]).contains(stamp)
                && (!renumbered || next_newer == Some(true))
        })
    })
}

/// The classified comparison of one trace.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The verdict: [`Verdict::Same`], the class of the earliest difference, or
    /// [`Verdict::Unexplained`] if any difference is unexplained.
    pub verdict: Verdict,
    /// Per diverging partition, earliest first: its class, where (index in its
    /// projected history) and when (output line).
    pub partitions: Vec<(i32, Verdict, usize, usize)>,
}

/// Compares `java` with `core` for `trace`.
#[must_use]
pub fn compare(trace: &Trace, java: &[String], core: &[String], extra: &CoreExtra) -> Comparison {
    let (java, stops) = split_drain_stops(java);
    let java = java.as_slice();
    let (jp, jat, jt, jo) = project(java);
    let (cp, cat, ct, co) = project(core);
    let mut partitions = Vec::new();
    let mut identity_only = Vec::new();
    let mut timing_only = Vec::new();
    let core_closes: Vec<(i32, i64)> = core
        .iter()
        .filter(|l| field(l, "ev") == Some("disconnected") && field(l, "why") == Some("timeout"))
        .filter_map(|l| {
            Some((
                field(l, "node")?.parse().ok()?,
                field(l, "s")?.parse().ok()?,
            ))
        })
        .collect();
    // A record failed by its delivery timeout on both sides while its attempt was on
    // the wire (the core reports it possibly written: departure 9).
    let expired_on_the_wire = jo.iter().any(|(rec, j)| {
        j == "err:7"
            && co.get(rec).is_some_and(|c| c == "err:7")
            && usize::try_from(*rec)
                .ok()
                .and_then(|i| extra.failed_possibly_written.get(i).copied().flatten())
                == Some(true)
    });
    // Every identity Java stamped a batch with.
    let java_identities: Vec<(i64, i32)> = jp
        .values()
        .flatten()
        .filter_map(|e| match e {
            PartitionEvent::Sent { stamp, .. } => Some(stamp.identity()),
            _ => None,
        })
        .collect();
    // Per partition, how many of its records Java failed by delivery timeout (record i
    // is the trace's i-th send).
    let mut java_expired: BTreeMap<i32, i64> = BTreeMap::new();
    let sends = trace.ops.iter().filter_map(|op| match op {
        Op::Send { p, .. } => Some(*p),
        _ => None,
    });
    for (rec, p) in sends.enumerate() {
        let rec = i64::try_from(rec).unwrap_or(i64::MAX);
        if jo.get(&rec).is_some_and(|r| r == "err:7") {
            *java_expired.entry(p).or_default() += 1;
        }
    }
    // Error answers and expiries Java saw: a bound on how often it bumped.
    let java_asks = i64::try_from(
        jp.values()
            .flatten()
            .filter(|e| {
                matches!(e, PartitionEvent::Answered { error, .. }
                    if error != "NONE" && error != "DUPLICATE_SEQUENCE_NUMBER")
            })
            .count(),
    )
    .unwrap_or(i64::MAX)
        + java_expired.values().sum::<i64>();
    let empty = Vec::new();
    for p in jp
        .keys()
        .chain(cp.keys())
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (je, ce) = (jp.get(&p).unwrap_or(&empty), cp.get(&p).unwrap_or(&empty));
        let (jt_p, ct_p) = (
            jt.get(&p).map_or(&[][..], Vec::as_slice),
            ct.get(&p).map_or(&[][..], Vec::as_slice),
        );
        let when = |at: &BTreeMap<i32, Vec<usize>>, k: usize| {
            at.get(&p)
                .and_then(|a| a.get(k))
                .copied()
                .unwrap_or(usize::MAX)
        };
        let first_difference = (0..je.len().max(ce.len())).find(|&k| je.get(k) != ce.get(k));
        let Some(k) = first_difference else {
            // The same history, but sent earlier by the core because Java's drain stopped:
            // this can explain the answers other partitions got (a request slot taken).
            if let Some(i) = java_drain_stopped(p, je.len(), (je, jt_p), (ce, ct_p), &stops) {
                timing_only.push((
                    p,
                    Verdict::JavaDrainStopsAtWaitingPartition,
                    i,
                    when(&jat, i).min(when(&cat, i)),
                ));
            }
            continue;
        };
        {
            let failed = jo.values().chain(co.values()).any(|r| r.starts_with("err"));
            // Java's lines after both the partition's shared history and the lines the
            // two outputs share.
            let shared = java.iter().zip(core).take_while(|(j, c)| j == c).count();
            let java_from = k
                .checked_sub(1)
                .and_then(|i| jat.get(&p)?.get(i))
                .map_or(0, |i| i + 1)
                .max(shared);
            let drain_stop = java_drain_stopped(p, k, (je, jt_p), (ce, ct_p), &stops)
                .or_else(|| {
                    (trace.config.transactional
                        && (txn_commit2::java_drain_stop_then_abortable(
                            p,
                            k,
                            je,
                            (ce, ct_p),
                            &stops,
                            java,
                            java_from,
                        ) || txn_drain_stop_fenced::java_drain_stop_then_fenced(
                            p,
                            k,
                            je,
                            (ce, ct_p),
                            &stops,
                            java,
                            java_from,
                        )))
                    .then_some(k)
                })
                .or_else(|| {
                    let recs: Vec<i64> = (0i64..)
                        .zip(trace.ops.iter().filter_map(|op| match op {
                            Op::Send { p, .. } => Some(*p),
                            _ => None,
                        }))
                        .filter(|&(_, q)| q == p)
                        .map(|(rec, _)| rec)
                        .collect();
                    (trace.config.transactional
                        && txn_drain_stop_undrained::java_fails_undrained_alike(
                            p,
                            k,
                            je,
                            (ce, ct_p),
                            &stops,
                            &recs,
                            &jo,
                            &co,
                        ))
                    .then_some(k)
                })
                .or_else(|| {
                    (trace.config.transactional
                        && txn_drain_stop_undrained::java_throws_before_draining(
                            p,
                            k,
                            je,
                            (ce, ct_p),
                            &stops,
                            (java, java_from),
                            core,
                            trace,
                        ))
                    .then_some(k)
                });
            let (v, k) = if let Some(i) = drain_stop {
                (Verdict::JavaDrainStopsAtWaitingPartition, i)
            } else if java_sent_on_timed_out_connection(
                k,
                (je, jt_p),
                (ce, ct_p),
                &core_closes,
                &|node, step| java_connection_full(java, node, step, trace.config.max_in_flight),
            ) {
                (Verdict::JavaSendsOnTimedOutConnection, k)
            } else if bump_waits_for_possibly_written(
                p,
                k,
                (
                    je,
                    &java_identities,
                    java_expired.get(&p).copied().unwrap_or(0),
                    java_asks,
                ),
                &cp,
                &cat,
                &|node| {
                    trace.ops.iter().any(
                        |op| matches!(op, Op::Leader { p: q, node: n } if *q == p && *n == node),
                    )
                },
            ) {
                (Verdict::BumpWaitsForPossiblyWrittenBatches, k)
            } else {
                let v = classify_partition(
                    trace,
                    (failed, expired_on_the_wire),
                    &je[..k],
                    je.get(k..).unwrap_or_default(),
                    ce.get(k),
                );
                // Departure 2 under an intermediate identity: only where nothing else
                // names the partition's difference.
                if v == Verdict::Unexplained
                    && bump_waits_intermediate_identity(
                        p,
                        k,
                        (
                            je,
                            &java_identities,
                            java_expired.get(&p).copied().unwrap_or(0),
                            java_asks,
                        ),
                        &cp,
                        &cat,
                        &|node| {
                            trace.ops.iter().any(
                            |op| matches!(op, Op::Leader { p: q, node: n } if *q == p && *n == node),
                        )
                        },
                    )
                {
                    (Verdict::BumpWaitsForPossiblyWrittenBatches, k)
                } else {
                    (v, k)
                }
            };
            // The next batch each side sends from the first difference on: one of them
            // is that difference (the other side may send its own later).
            let next_sent = |evs: &'_ [PartitionEvent]| {
                evs.get(k..)
                    .unwrap_or_default()
                    .iter()
                    .find_map(|e| match e {
                        PartitionEvent::Sent { node, stamp } => Some((*node, stamp.clone())),
                        _ => None,
                    })
            };
            let sends_first = matches!(je.get(k), Some(PartitionEvent::Sent { .. }))
                || matches!(ce.get(k), Some(PartitionEvent::Sent { .. }));
            if let (Verdict::Unexplained, true, Some((jn, j)), Some((cn, c))) =
                (v, sends_first, next_sent(je), next_sent(ce))
            {
                // Only the identity differs, or one side restarts at sequence 0 under a
                // new identity where the other continues its identity's numbering.
                let continues =
                    |a: &Stamp, b: &Stamp| a.seq == 0 && b.seq == next_seq(&je[..k], b.identity());
                let numbering = j.seq == c.seq || continues(&j, &c) || continues(&c, &j);
                // Java's batch, sent later than the core's, may have kept filling.
                let java_later = !matches!(je.get(k), Some(PartitionEvent::Sent { .. }));
                let records = j.count == c.count || (java_later && j.count > c.count);
                if jn == cn && numbering && records && j.identity() != c.identity() {
                    identity_only.push(p);
                }
            }
            partitions.push((p, v, k, when(&jat, k).min(when(&cat, k))));
        }
    }
    if !partitions.is_empty() {
        partitions.append(&mut timing_only);
    }
    // The earliest difference classifies the trace. Answers are scripted per broker
    // (its oldest request), so once one partition's batches are grouped into requests
    // differently, every partition sharing those brokers sees different answers: later
    // differences are consequences, not classified on their own.
    // Differences on the same output line happen in the same request or answer: a
    // departure there explains the partitions whose batches took or lost its place (a
    // request slot on the connection, room in the request), so it ranks first.
    partitions.sort_by_key(|&(_, v, _, when)| (when, v == Verdict::Unexplained));
    // A partition whose first difference is only the identity its next batch is stamped
    // with (same records, same broker, another producer id or epoch, and the same
    // sequence, or sequence 0 of the new identity on one side where the other continues
    // its identity's numbering), and whose own history does not explain it, follows a
    // producer-wide decision to bump or not, taken on another partition:
    // Java's epoch is one for the whole producer. That partition's difference is a
    // consequence and the trace's verdict is the first other partition's; with no other
    // diverging partition to explain it, it stays unexplained.
    let explains = |(p, _, _, _): &&(i32, Verdict, usize, usize)| !identity_only.contains(p);
    let mut verdict = if partitions.is_empty() {
        Verdict::Same
    } else {
        partitions
            .iter()
            .find(explains)
            .map_or(Verdict::Unexplained, |(_, v, _, _)| *v)
    };
    if verdict == Verdict::Unexplained {
        let first_line = partitions
            .iter()
            .map(|&(_, _, _, when)| when)
            .min()
            .unwrap_or(usize::MAX);
        let renumbered_by_java = jo.iter().any(|(rec, j)| {
            j.starts_with("ok")
                && co.get(rec).is_some_and(|c| c.starts_with("err"))
                && usize::try_from(*rec)
                    .ok()
                    .and_then(|i| extra.failed_possibly_written.get(i).copied().flatten())
                    == Some(true)
        });
        // Or the core failed a record possibly written with OUT_OF_ORDER (the probe found
        // nothing higher in the log) that Java did not fail so: Java renumbered it, and
        // the answer its new stamp got is scripted on other requests than the core's.
        let failed_where_java_retried = co.iter().any(|(rec, c)| {
            c == "err:45"
                && jo.get(rec).is_some_and(|j| j != "err:45")
                && usize::try_from(*rec)
                    .ok()
                    .and_then(|i| extra.failed_possibly_written.get(i).copied().flatten())
                    == Some(true)
        });
        if (renumbered_by_java && out_of_order_for_possibly_written(&jp, &jat, first_line, false))
            || (failed_where_java_retried
                && out_of_order_for_possibly_written(&jp, &jat, first_line, true))
        {
            verdict = Verdict::NoRenumberOfPossiblyWritten;
        }
    }
    let exotic = core
        .iter()
        .any(|l| l.contains("input_error") || l.contains("+twice"));
    if exotic {
        verdict = Verdict::Unexplained;
    }
    if trace.config.transactional && !exotic {
        let earliest = partitions.first().map(|&(_, v, _, when)| (v, when));
        verdict = txn::verdict(java, core, earliest, verdict);
        if verdict == Verdict::Unexplained && partitions.is_empty() {
            verdict = txn_commit2::timing_before_conversation(java, core, &timing_only)
                .unwrap_or(verdict);
        }
    }
    // Java's own Sender giving up on its bookkeeping (`compare/java_tracking.rs`): a
    // transactional trace keeps the verdict of a difference before it, or is that
    // defect where nothing differed before it; anything else is unexplained.
    if java
        .iter()
        .any(|l| field(l, "ev") == Some("java_exception"))
    {
        let first = java_tracking::java_line_of_first_difference(java, core, &partitions, &jat);
        if !java_tracking::after_named_difference(java, trace.config.transactional, verdict, first)
        {
            verdict = if trace.config.transactional {
                java_tracking::java_loses_track_of_batches(java, core)
                    .unwrap_or(Verdict::Unexplained)
            } else {
                Verdict::Unexplained
            };
        }
    }
    if verdict == Verdict::Unexplained && trace.config.transactional && !exotic {
        verdict = txn_state_split::core_abortable_where_java_keeps(trace, java, core, extra)
            .unwrap_or(verdict);
    }
    if verdict == Verdict::Unexplained
        && trace.config.transactional
        && !exotic
        && txn_held_add_partitions::one_answer_parts_the_two(trace, java, core)
    {
        verdict = Verdict::RetriedAddPartitionsTakesNewPartitions;
    }
    if verdict == Verdict::Same && jo != co {
        // Same wire history, different outcomes.
        let explained = jo.iter().all(|(rec, j)| {
            let c = co.get(rec).map_or("", String::as_str);
            j == c
                || (j.starts_with("err") || c.starts_with("err"))
                    && usize::try_from(*rec)
                        .ok()
                        .and_then(|i| extra.failed_possibly_written.get(i).copied().flatten())
                        .is_some()
        });
        verdict = if explained {
            Verdict::OutcomeOfPossiblyWritten
        } else {
            Verdict::Unexplained
        };
    }
    Comparison {
        verdict,
        partitions,
    }
}
