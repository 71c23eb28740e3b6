//! The simulator's checker: it watches what the application sent, what went on the
//! wire, what the logs hold and what the producer reported, and checks the idempotent
//! producer's promises after every step.
//!
//! Every record's value encodes its (global partition, index within the partition)
//! (see [`crate::oracle`]), so a log entry maps back to the [`RecordId`] the producer
//! returned for it. The log-side properties (a), (b), (c), (d), (g), (h) are the
//! [`LogOracle`]'s, the same code the adapter suite checks FakeBroker and real Kafka
//! with; this module adds what only a simulator can see: the wire (e), the journal of
//! every append and truncation as it happens, failure reasons, the fatal policy, and
//! violations stamped with the step and virtual time.
//!
//! Properties:
//! * (a) every acknowledged record is in its partition's log, exactly once, in send
//!   order (checked when the ack arrives: the model broker answers acks=all only once
//!   the batch is committed, and a committed entry is never truncated, which is
//!   checked whenever a failover truncates a leader's log);
//! * (b) no record appears twice in a log (a record truncated by a failover, never
//!   acknowledged, is no longer in it and may be written again);
//! * (c) every record resolves exactly once (delivered or failed);
//! * (d) a failed record is in the log at most once and never out of order: every
//!   partition's log holds its records in strictly increasing send order. One
//!   exception no client can prevent: a request of a producer id the producer has
//!   since given up (epoch exhausted, new id from InitProducerId) that a broker applies
//!   late, after records of the new id (the broker fences older epochs of one id,
//!   never another id; Kafka's `ProducerStateManager` keeps state per id). Such a
//!   record must be failed as possibly written, never acknowledged; it is counted in
//!   [`Checker::retired_producer_writes`];
//! * (e) on the wire, per (producer id, epoch, partition), sequences start at 0 and
//!   never skip, a new sequence never carries a record already sent under a lower one,
//!   and a sequence a broker appended is never sent again with another record;
//! * (g) an acknowledged offset is the record's offset in the log;
//! * (h) a record failed with `possibly_written == false` never reaches the log.
//!
//! Liveness (f) and the core's own invariants are checked by the
//! [`Cluster`](crate::Cluster) and the [`scenario`](crate::scenario) runner, which
//! report through [`Checker::violation`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use kacrab_idempotence::{
    DeliveryError, Event, ProduceRequest, RecordId, RequestId, Timestamp, TopicPartition,
};

use crate::batch;
use crate::broker::PartitionState;
use crate::failure_bound::{FailureAccount, FaultScope};
use crate::log::{LogChange, LogEntry};
use crate::oracle::LogOracle;
pub use crate::oracle::{decode_value, encode_value, Outcome, RecordState, Tally, ViolationKind};
use crate::summary::ViolationCounts;

/// One property violation, with when it was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// What.
    pub kind: ViolationKind,
    /// The simulator step.
    pub step: u64,
    /// Virtual time.
    pub at: Timestamp,
    /// Details.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[step {} t={}µs] {:?}: {}",
            self.step,
            self.at.as_micros(),
            self.kind,
            self.detail
        )
    }
}

/// One batch as seen on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireBatch {
    /// When it was handed to the network.
    pub at: Timestamp,
    /// The request carrying it.
    pub request: RequestId,
    /// The broker it was sent to.
    pub node: i32,
    /// Global partition index.
    pub partition: u32,
    /// Producer id (-1 when not idempotent).
    pub producer_id: i64,
    /// Epoch.
    pub epoch: i16,
    /// Base sequence.
    pub base_sequence: i32,
    /// Records in the batch.
    pub count: i32,
    /// Partition index of the first record.
    pub first_index: u32,
}

/// Whether the producer going fatal is a violation of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FatalPolicy {
    /// The run injects no fatal error: a fatal producer is a bug.
    #[default]
    Violation,
    /// The run injects fatal errors on purpose: a fatal producer is expected (every
    /// other property still holds, `possibly_written` above all).
    Expected,
}

/// Stored violations are capped; all are counted.
const MAX_KEPT: usize = 64;

/// The oracle. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct Checker {
    index_of: BTreeMap<TopicPartition, u32>,
    /// The log-side properties (a), (b), (c), (d), (g), (h): the oracle the adapter
    /// suite checks FakeBroker and real Kafka with.
    oracle: LogOracle,
    scanned: Vec<usize>,
    wire_runs: BTreeMap<(u32, i64, i16), Vec<u32>>,
    /// (partition, producer id, epoch, sequence) → index of the record appended with it.
    logged_sequences: BTreeMap<(u32, i64, i16, i32), u32>,
    wire_log: Vec<WireBatch>,
    violations: Vec<Violation>,
    violation_count: u64,
    /// Every violation counted by kind (the kept ones are capped, these are not).
    by_kind: ViolationCounts,
    /// The faults able to fail records and the failed records' lives: the liveness
    /// bound of [`crate::failure_bound`].
    failures: FailureAccount,
    failure_reasons: BTreeMap<String, u64>,
    step: u64,
    now: Timestamp,
    fatal_policy: FatalPolicy,
    /// The fatal error the producer reported, if any.
    fatal: Option<String>,
}

impl Checker {
    /// Whether a fatal producer is a violation (see [`FatalPolicy`]).
    pub fn set_fatal_policy(&mut self, policy: FatalPolicy) {
        self.fatal_policy = policy;
    }

    /// The fatal error the producer reported, if it did.
    #[must_use]
    pub fn fatal(&self) -> Option<&str> {
        self.fatal.as_deref()
    }

    /// A checker for these partitions (global index = position).
    #[must_use]
    pub fn new(tps: Vec<TopicPartition>) -> Self {
        let n = tps.len();
        let index_of = tps
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, tp)| (tp, i as u32))
            .collect();
        let oracle = LogOracle::new(tps.iter().map(ToString::to_string).collect());
        Self {
            index_of,
            oracle,
            scanned: vec![0; n],
            failures: FailureAccount::new(n),
            ..Self::default()
        }
    }

    /// Moves the oracle's findings into the stamped violations.
    fn absorb(&mut self) {
        if self.oracle.has_findings() {
            for f in self.oracle.take_findings() {
                self.violation(f.kind, f.detail);
            }
        }
    }

    /// Sets the step and time that violations are stamped with.
    pub fn set_clock(&mut self, step: u64, now: Timestamp) {
        self.step = step;
        self.now = now;
    }

    /// Records a violation.
    pub fn violation(&mut self, kind: ViolationKind, detail: impl Into<String>) {
        self.violation_count += 1;
        self.by_kind.add(kind);
        if self.violations.len() < MAX_KEPT {
            self.violations.push(Violation {
                kind,
                step: self.step,
                at: self.now,
                detail: detail.into(),
            });
        }
    }

    /// The violations kept (the first 64; all are counted).
    #[must_use]
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// How many violations were seen.
    #[must_use]
    pub fn violation_count(&self) -> u64 {
        self.violation_count
    }

    /// Every violation seen, counted by kind.
    #[must_use]
    pub fn violation_counts(&self) -> &ViolationCounts {
        debug_assert_eq!(self.by_kind.total(), self.violation_count);
        &self.by_kind
    }

    /// The index the next record sent to `partition` gets.
    #[must_use]
    pub fn next_index(&self, partition: usize) -> u32 {
        self.oracle.next_index(partition)
    }

    /// The global index of a partition.
    #[must_use]
    pub fn partition_index(&self, tp: &TopicPartition) -> Option<u32> {
        self.index_of.get(tp).copied()
    }

    /// The application's `send` returned `id` for the record `(partition, index)`.
    pub fn on_sent(&mut self, id: RecordId, partition: usize, index: u32) {
        let (expected, assigned) = self.oracle.on_sent(partition);
        self.failures.on_sent(id, partition, self.now);
        if id != expected {
            self.violation(
                ViolationKind::Protocol,
                format!("record id {id} assigned out of order (expected {expected})"),
            );
        }
        debug_assert_eq!(index, assigned);
    }

    /// Every record sent, by [`RecordId`].
    #[must_use]
    pub fn records(&self) -> &[RecordState] {
        self.oracle.records()
    }

    /// The record ids sent to `partition`, in send order.
    #[must_use]
    pub fn sent_to(&self, partition: usize) -> &[RecordId] {
        self.oracle.sent_to(partition)
    }

    /// The state of record `id`.
    #[must_use]
    pub fn record(&self, id: RecordId) -> Option<&RecordState> {
        self.oracle.record(id)
    }

    /// Failed records by reason (delivery timeout, or the broker's error name).
    #[must_use]
    pub fn failure_reasons(&self) -> &BTreeMap<String, u64> {
        &self.failure_reasons
    }

    /// Every batch that went on the wire, in order.
    #[must_use]
    pub fn wire_log(&self) -> &[WireBatch] {
        &self.wire_log
    }

    /// A produce request left the driver for `node`: checks property (e).
    pub fn on_wire(&mut self, node: i32, request: &ProduceRequest) {
        for pb in &request.batches {
            let Some(gp) = self.partition_index(&pb.partition) else {
                self.violation(
                    ViolationKind::Protocol,
                    format!("produce for unknown partition {}", pb.partition),
                );
                continue;
            };
            let decoded = match batch::decode(&pb.data) {
                Ok(b) => b,
                Err(e) => {
                    self.violation(ViolationKind::BadBatch, format!("{}: {e}", pb.partition));
                    continue;
                }
            };
            let h = decoded.header;
            let indexes: Vec<u32> = decoded
                .records
                .iter()
                .map(|r| match r.value.as_deref().and_then(decode_value) {
                    Some((p, i)) if p == gp => i,
                    _ => u32::MAX,
                })
                .collect();
            if indexes.contains(&u32::MAX) {
                self.violation(
                    ViolationKind::WrongRecord,
                    format!("{}: batch carries a foreign record", pb.partition),
                );
            }
            self.wire_log.push(WireBatch {
                at: self.now,
                request: request.id,
                node,
                partition: gp,
                producer_id: h.producer_id,
                epoch: h.producer_epoch,
                base_sequence: h.base_sequence,
                count: h.record_count,
                first_index: indexes.first().copied().unwrap_or(u32::MAX),
            });
            if h.producer_id < 0 {
                continue;
            }
            let run = self
                .wire_runs
                .entry((gp, h.producer_id, h.producer_epoch))
                .or_default();
            let mut problems = Vec::new();
            if run.is_empty() && h.base_sequence != 0 {
                problems.push(format!("run starts at sequence {}", h.base_sequence));
            }
            for (j, &idx) in indexes.iter().enumerate() {
                let s = i64::from(h.base_sequence) + j as i64;
                let len = run.len() as i64;
                if s < len {
                    // A sequence sent before may be sent again with another record only
                    // if no broker ever appended it (a refused batch's sequences are
                    // free again, e.g. after a split); otherwise the broker could take
                    // the new record for the old one.
                    let key = (gp, h.producer_id, h.producer_epoch, s as i32);
                    match self.logged_sequences.get(&key) {
                        Some(&logged) if logged != idx => problems.push(format!(
                            "sequence {s} reused for record #{idx} after it was appended for record #{logged}"
                        )),
                        _ => run[s as usize] = idx,
                    }
                } else if s == len {
                    if run.last().is_some_and(|&last| last >= idx) {
                        problems.push(format!(
                            "record #{idx} at sequence {s} after record #{} (resent under a new sequence)",
                            run.last().copied().unwrap_or_default()
                        ));
                    }
                    run.push(idx);
                } else {
                    problems.push(format!("sequence gap: expected {len}, got {s}"));
                    break;
                }
            }
            for p in problems {
                self.violation(
                    ViolationKind::WireSequence,
                    format!(
                        "{} pid {} epoch {} base {} count {}: {p}",
                        pb.partition,
                        h.producer_id,
                        h.producer_epoch,
                        h.base_sequence,
                        h.record_count
                    ),
                );
            }
        }
    }

    /// Reads what was appended to (and truncated from) the partitions' leader logs
    /// since the last call, from their journals: properties (b), (d), (h). A record
    /// truncated by a failover no longer counts as logged (it may be written again);
    /// an acknowledged one must never be truncated.
    pub fn scan_logs<'a>(&mut self, logs: impl IntoIterator<Item = &'a PartitionState>) {
        for (gp, state) in logs.into_iter().enumerate() {
            let journal = state.log().journal();
            let start = self.scanned[gp];
            self.scanned[gp] = journal.len();
            for change in &journal[start..] {
                match change {
                    LogChange::Appended(LogEntry::Batch(b)) => {
                        for r in &b.records {
                            if let Some((_, idx)) = r.value.as_deref().and_then(decode_value) {
                                if r.producer_id >= 0 {
                                    let key =
                                        (gp as u32, r.producer_id, r.producer_epoch, r.sequence);
                                    self.logged_sequences.insert(key, idx);
                                }
                            }
                            self.oracle.on_logged(
                                gp,
                                r.offset,
                                r.producer_id,
                                r.key.as_deref(),
                                r.value.as_deref(),
                            );
                        }
                    }
                    LogChange::Appended(LogEntry::Marker(_)) => {}
                    LogChange::Truncated(entries) => {
                        let removed = entries.iter().filter_map(|e| match e {
                            LogEntry::Batch(b) => Some(&b.records),
                            LogEntry::Marker(_) => None,
                        });
                        for r in removed.clone().flatten() {
                            let Some((_, idx)) = r.value.as_deref().and_then(decode_value) else {
                                continue;
                            };
                            let key = (gp as u32, r.producer_id, r.producer_epoch, r.sequence);
                            if r.producer_id >= 0 && self.logged_sequences.get(&key) == Some(&idx) {
                                self.logged_sequences.remove(&key);
                            }
                        }
                        self.oracle.on_truncated(
                            gp,
                            removed.flatten().map(|r| (r.offset, r.value.as_deref())),
                        );
                    }
                }
            }
        }
        self.absorb();
    }

    /// Records appended behind records of a newer producer id by a request of a
    /// retired one (see property (d)): not a violation while they are not
    /// acknowledged.
    #[must_use]
    pub fn retired_producer_writes(&self) -> u64 {
        self.oracle.retired_producer_writes()
    }

    /// Records truncated from a leader's log by failovers so far.
    #[must_use]
    pub fn truncated_records(&self) -> u64 {
        self.oracle.truncated_records()
    }

    /// An event the producer reported: properties (a), (c), (g), (h).
    pub fn on_event(&mut self, event: &Event) {
        match event {
            Event::Delivered {
                partition,
                records,
                base_offset,
                ..
            } => {
                let gp = self.partition_index(partition).map(|p| p as usize);
                for (i, &rid) in records.iter().enumerate() {
                    let expected = base_offset.map(|b| b + i as i64);
                    self.oracle
                        .on_outcome(rid, gp, Outcome::Delivered, expected);
                }
            }
            Event::Failed {
                partition,
                records,
                possibly_written,
                error,
            } => {
                let reason = match error {
                    DeliveryError::Timeout { .. } => "delivery timeout".to_string(),
                    DeliveryError::Broker { error, .. } => error.name().to_string(),
                    DeliveryError::RecordTooLarge { .. } => "record too large".to_string(),
                    DeliveryError::Fatal(e) => format!("fatal {}", e.name()),
                    DeliveryError::Aborted => "aborted".to_string(),
                    other => other.to_string(),
                };
                *self.failure_reasons.entry(reason).or_default() += records.len() as u64;
                let gp = self.partition_index(partition).map(|p| p as usize);
                let outcome = Outcome::Failed {
                    possibly_written: *possibly_written,
                };
                for &rid in records {
                    if self
                        .oracle
                        .record(rid)
                        .is_some_and(|r| r.outcome == Outcome::Pending)
                    {
                        self.failures.on_failed(rid, self.now);
                    }
                    self.oracle.on_outcome(rid, gp, outcome, None);
                }
            }
            Event::Fatal { error } => {
                // Every record pending now or sent later fails.
                self.failures
                    .fault(FaultScope::Everywhere, self.now, Duration::MAX);
                self.fatal = Some(error.to_string());
                if self.fatal_policy == FatalPolicy::Violation {
                    self.violation(
                        ViolationKind::Fatal,
                        format!("producer went fatal: {error}"),
                    );
                }
            }
            Event::ProducerIdChanged { .. } => {
                // A new producer id or epoch: what was in flight is failed or
                // re-sequenced.
                self.failures
                    .fault(FaultScope::Everywhere, self.now, Duration::ZERO);
            }
            Event::TransactionCompleted { .. } => {}
        }
        self.absorb();
    }

    /// A fault able to fail records in `scope` struck at `at` and lasts `length` (see
    /// [`crate::failure_bound`]).
    pub fn fault_window(&mut self, scope: FaultScope, at: Timestamp, length: Duration) {
        self.failures.fault(scope, at, length);
    }

    /// End of run, when the run asks for it: every partition's failed records must be
    /// explained by a fault able to fail them (see [`crate::failure_bound`]); a
    /// partition with failures none explains is one
    /// [`ViolationKind::UnexplainedFailures`], naming it.
    pub fn check_failures_explained(&mut self) {
        let names: BTreeMap<u32, String> = self
            .index_of
            .iter()
            .map(|(tp, &i)| (i, tp.to_string()))
            .collect();
        for u in self.failures.unexplained() {
            let name = names
                .get(&(u.partition as u32))
                .cloned()
                .unwrap_or_else(|| format!("partition #{}", u.partition));
            self.violation(
                ViolationKind::UnexplainedFailures,
                format!(
                    "{name}: {} of its {} failed records failed with no fault able to fail them (refusal, ISR shrink, state expiry, truncation, crash, silence, topic creation, fatal error, epoch bump) during their life",
                    u.unexplained, u.failed
                ),
            );
        }
    }

    /// End of run: every record must have an outcome (c).
    pub fn check_all_resolved(&mut self) {
        self.oracle.check_all_resolved();
        self.absorb();
    }

    /// Totals for one partition, or all when `partition` is `None`.
    #[must_use]
    pub fn tally(&self, partition: Option<usize>) -> Tally {
        self.oracle.tally(partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_round_trip() {
        let v = encode_value(3, 77, 20);
        assert_eq!(v.len(), 20);
        assert_eq!(decode_value(&v), Some((3, 77)));
        assert_eq!(decode_value(&[1, 2, 3]), None);
    }
}
