//! The oracle: it watches what the application sent, what went on the wire, what
//! the logs hold and what the producer reported, and checks the idempotent
//! producer's promises after every step.
//!
//! Every record's value encodes its (global partition, index within the partition),
//! so a log entry maps back to the [`RecordId`] the producer returned for it.
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

use bytes::{BufMut, Bytes, BytesMut};
use kacrab_idempotence::{
    DeliveryError, Event, ProduceRequest, RecordId, RequestId, Timestamp, TopicPartition,
};

use crate::batch;
use crate::broker::PartitionState;
use crate::log::{LogChange, LogEntry, LoggedRecord};

/// Encodes a record value naming (global partition, index), padded to `size` bytes.
#[must_use]
pub fn encode_value(partition: u32, index: u32, size: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(size.max(8));
    b.put_u32(partition);
    b.put_u32(index);
    b.resize(size.max(8), 0);
    b.freeze()
}

/// Reads (global partition, index) back from a record value.
#[must_use]
pub fn decode_value(value: &[u8]) -> Option<(u32, u32)> {
    let p = u32::from_be_bytes(value.get(0..4)?.try_into().ok()?);
    let i = u32::from_be_bytes(value.get(4..8)?.try_into().ok()?);
    Some((p, i))
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// (b) A record appears twice in a log.
    Duplicate,
    /// (a)/(d) A record appears after a record sent later.
    Reordered,
    /// (a) An acknowledged record is not in the log.
    Lost,
    /// (g) The acknowledged offset is not the record's log offset.
    OffsetMismatch,
    /// (c) A record got a second outcome.
    ResolvedTwice,
    /// (c) A record never got an outcome.
    Unresolved,
    /// An outcome names a record in the wrong partition, or an unknown one.
    WrongRecord,
    /// (e) A wire sequence run does not start at 0, skips, or reuses a sequence.
    WireSequence,
    /// (h) A record failed as "not written" is in the log.
    FailedButWritten,
    /// (f) The producer did not drain once faults stopped.
    Liveness,
    /// The producer went fatal (the model brokers never send a fatal error).
    Fatal,
    /// The core rejected an input the driver had every right to give, or asked for
    /// something inconsistent.
    Protocol,
    /// `poll_timeout` stayed in the past after `handle_timeout` (a busy loop).
    TimerStuck,
    /// A batch on the wire could not be decoded by the model broker's reader.
    BadBatch,
    /// A transactional property: a committed transaction not visible exactly once and
    /// in order to `read_committed`, an aborted one visible, a transaction left half.
    Transaction,
}

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

/// A record's outcome as the producer reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No outcome yet.
    Pending,
    /// `Event::Delivered`.
    Delivered,
    /// `Event::Failed`.
    Failed {
        /// As reported.
        possibly_written: bool,
    },
}

/// Everything known about one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordState {
    /// Global partition index.
    pub partition: u32,
    /// Index within the partition (send order).
    pub index: u32,
    /// The first outcome reported.
    pub outcome: Outcome,
    /// How many outcomes were reported (1 is right).
    pub resolutions: u32,
    /// How many times it is in the log (0 or 1 is right).
    pub log_count: u32,
    /// Its offset in the log (first occurrence).
    pub log_offset: Option<i64>,
    /// The offset the producer reported for it.
    pub acked_offset: Option<i64>,
    /// It was logged after a record sent later.
    pub out_of_order: bool,
    /// It was logged out of order by a late request of a retired producer id, not yet
    /// acknowledged (see property (d)): acknowledging it is a violation.
    pub retired_write: bool,
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

/// Totals over the records (one partition or all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Records accepted by `send`.
    pub records: u64,
    /// Delivered.
    pub acked: u64,
    /// Failed.
    pub failed: u64,
    /// No outcome yet.
    pub pending: u64,
    /// Records in the log more than once.
    pub duplicates: u64,
    /// Acknowledged records logged out of send order.
    pub reordered: u64,
    /// Acknowledged records absent from the log.
    pub lost: u64,
    /// Failed records that are in the log nevertheless (allowed once).
    pub failed_in_log: u64,
    /// Data records in the log.
    pub log_records: u64,
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
    tps: Vec<TopicPartition>,
    index_of: BTreeMap<TopicPartition, u32>,
    records: Vec<RecordState>,
    by_index: Vec<Vec<RecordId>>,
    scanned: Vec<usize>,
    max_in_log: Vec<Option<u32>>,
    /// The producer id that appended the record at `max_in_log`.
    max_in_log_producer: Vec<i64>,
    /// Records appended out of order under a retired producer id (see property (d)).
    retired_producer_writes: u64,
    wire_runs: BTreeMap<(u32, i64, i16), Vec<u32>>,
    /// (partition, producer id, epoch, sequence) → index of the record appended with it.
    logged_sequences: BTreeMap<(u32, i64, i16, i32), u32>,
    wire_log: Vec<WireBatch>,
    violations: Vec<Violation>,
    violation_count: u64,
    failure_reasons: BTreeMap<String, u64>,
    step: u64,
    now: Timestamp,
    fatal_policy: FatalPolicy,
    /// The fatal error the producer reported, if any.
    fatal: Option<String>,
    truncated_records: u64,
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
        Self {
            tps,
            index_of,
            by_index: vec![Vec::new(); n],
            scanned: vec![0; n],
            max_in_log: vec![None; n],
            max_in_log_producer: vec![-1; n],
            ..Self::default()
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

    /// The index the next record sent to `partition` gets.
    #[must_use]
    pub fn next_index(&self, partition: usize) -> u32 {
        self.by_index[partition].len() as u32
    }

    /// The global index of a partition.
    #[must_use]
    pub fn partition_index(&self, tp: &TopicPartition) -> Option<u32> {
        self.index_of.get(tp).copied()
    }

    /// The application's `send` returned `id` for the record `(partition, index)`.
    pub fn on_sent(&mut self, id: RecordId, partition: usize, index: u32) {
        if id.0 != self.records.len() as u64 {
            self.violation(
                ViolationKind::Protocol,
                format!(
                    "record id {id} assigned out of order (expected {})",
                    self.records.len()
                ),
            );
        }
        debug_assert_eq!(index as usize, self.by_index[partition].len());
        self.by_index[partition].push(id);
        self.records.push(RecordState {
            partition: partition as u32,
            index,
            outcome: Outcome::Pending,
            resolutions: 0,
            log_count: 0,
            log_offset: None,
            acked_offset: None,
            out_of_order: false,
            retired_write: false,
        });
    }

    /// Every record sent, by [`RecordId`].
    #[must_use]
    pub fn records(&self) -> &[RecordState] {
        &self.records
    }

    /// The record ids sent to `partition`, in send order.
    #[must_use]
    pub fn sent_to(&self, partition: usize) -> &[RecordId] {
        &self.by_index[partition]
    }

    /// The state of record `id`.
    #[must_use]
    pub fn record(&self, id: RecordId) -> Option<&RecordState> {
        self.records.get(usize::try_from(id.0).ok()?)
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
                            self.on_logged(gp, r.offset, r.producer_id, r.value.as_deref());
                        }
                    }
                    LogChange::Appended(LogEntry::Marker(_)) => {}
                    LogChange::Truncated(entries) => {
                        for entry in entries {
                            let LogEntry::Batch(b) = entry else { continue };
                            for r in &b.records {
                                self.on_truncated(gp, r);
                            }
                        }
                        self.max_in_log[gp] = self.by_index[gp]
                            .iter()
                            .rev()
                            .map(|rid| &self.records[rid.0 as usize])
                            .find(|r| r.log_count > 0)
                            .map(|r| r.index);
                    }
                }
            }
        }
    }

    /// Records appended behind records of a newer producer id by a request of a
    /// retired one (see property (d)): not a violation while they are not
    /// acknowledged.
    #[must_use]
    pub fn retired_producer_writes(&self) -> u64 {
        self.retired_producer_writes
    }

    /// A record of partition `gp` left the log (truncated by a failover).
    fn on_truncated(&mut self, gp: usize, r: &LoggedRecord) {
        self.truncated_records += 1;
        let Some((p, idx)) = r.value.as_deref().and_then(decode_value) else {
            return;
        };
        let Some(&rid) = (p as usize == gp)
            .then(|| self.by_index[gp].get(idx as usize))
            .flatten()
        else {
            return;
        };
        if r.producer_id >= 0 {
            let key = (gp as u32, r.producer_id, r.producer_epoch, r.sequence);
            if self.logged_sequences.get(&key) == Some(&idx) {
                self.logged_sequences.remove(&key);
            }
        }
        let tp = self.tps[gp].clone();
        let rec = &mut self.records[rid.0 as usize];
        rec.log_count = rec.log_count.saturating_sub(1);
        if rec.log_offset == Some(r.offset) {
            rec.log_offset = None;
        }
        if rec.outcome == Outcome::Delivered {
            self.violation(
                ViolationKind::Lost,
                format!(
                    "{tp}: record #{idx} (id {rid}) acknowledged, then truncated from offset {} by a failover",
                    r.offset
                ),
            );
        }
    }

    /// Records truncated from a leader's log by failovers so far.
    #[must_use]
    pub fn truncated_records(&self) -> u64 {
        self.truncated_records
    }

    fn on_logged(&mut self, gp: usize, offset: i64, producer_id: i64, value: Option<&[u8]>) {
        let tp = self.tps[gp].clone();
        let Some((p, idx)) = value.and_then(decode_value) else {
            self.violation(
                ViolationKind::WrongRecord,
                format!("{tp}@{offset}: undecodable value"),
            );
            return;
        };
        let Some(&rid) = (p as usize == gp)
            .then(|| self.by_index[gp].get(idx as usize))
            .flatten()
        else {
            self.violation(
                ViolationKind::WrongRecord,
                format!("{tp}@{offset}: record p{p}#{idx} was never sent here"),
            );
            return;
        };
        let max = self.max_in_log[gp];
        let rec = &mut self.records[rid.0 as usize];
        rec.log_count += 1;
        let count = rec.log_count;
        let outcome = rec.outcome;
        if count > 1 {
            self.violation(
                ViolationKind::Duplicate,
                format!("{tp}: record #{idx} (id {rid}) logged again at offset {offset}"),
            );
            return;
        }
        rec.log_offset = Some(offset);
        let newer_producer = self.max_in_log_producer[gp];
        if max.is_some_and(|m| m > idx) {
            rec.out_of_order = true;
            let retired = producer_id >= 0 && producer_id < newer_producer;
            if retired && outcome != Outcome::Delivered {
                rec.retired_write = true;
                self.retired_producer_writes += 1;
            } else {
                self.violation(
                    ViolationKind::Reordered,
                    format!(
                        "{tp}: record #{idx} logged at offset {offset} after record #{}",
                        max.unwrap_or_default()
                    ),
                );
            }
        } else {
            self.max_in_log_producer[gp] = producer_id;
        }
        self.max_in_log[gp] = Some(max.map_or(idx, |m| m.max(idx)));
        if outcome
            == (Outcome::Failed {
                possibly_written: false,
            })
        {
            self.violation(
                ViolationKind::FailedButWritten,
                format!(
                    "{tp}: record #{idx} (id {rid}) failed as not written, then logged at {offset}"
                ),
            );
        }
    }

    /// An event the producer reported: properties (a), (c), (g), (h).
    pub fn on_event(&mut self, event: &Event) {
        match event {
            Event::Delivered {
                partition,
                records,
                base_offset,
            } => {
                for (i, &rid) in records.iter().enumerate() {
                    let expected = base_offset.map(|b| b + i as i64);
                    self.resolve(partition, rid, Outcome::Delivered, expected);
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
                for &rid in records {
                    let outcome = Outcome::Failed {
                        possibly_written: *possibly_written,
                    };
                    self.resolve(partition, rid, outcome, None);
                }
            }
            Event::Fatal { error } => {
                self.fatal = Some(error.to_string());
                if self.fatal_policy == FatalPolicy::Violation {
                    self.violation(
                        ViolationKind::Fatal,
                        format!("producer went fatal: {error}"),
                    );
                }
            }
            Event::ProducerIdChanged { .. } | Event::TransactionCompleted { .. } => {}
        }
    }

    fn resolve(
        &mut self,
        tp: &TopicPartition,
        rid: RecordId,
        outcome: Outcome,
        offset: Option<i64>,
    ) {
        let gp = self.partition_index(tp);
        let Some(rec) = usize::try_from(rid.0)
            .ok()
            .and_then(|i| self.records.get_mut(i))
        else {
            self.violation(
                ViolationKind::WrongRecord,
                format!("{tp}: outcome for unknown record {rid}"),
            );
            return;
        };
        if gp != Some(rec.partition) {
            let owner = rec.partition;
            self.violation(
                ViolationKind::WrongRecord,
                format!("{tp}: outcome for record {rid} of partition {owner}"),
            );
            return;
        }
        rec.resolutions += 1;
        if rec.resolutions > 1 {
            let first = rec.outcome;
            self.violation(
                ViolationKind::ResolvedTwice,
                format!("{tp}: record {rid} resolved again as {outcome:?} (first {first:?})"),
            );
            return;
        }
        rec.outcome = outcome;
        rec.acked_offset = offset;
        let (idx, log_offset, logged) = (rec.index, rec.log_offset, rec.log_count > 0);
        let retired_write = rec.retired_write;
        match outcome {
            Outcome::Delivered => {
                if retired_write {
                    self.violation(
                        ViolationKind::Reordered,
                        format!("{tp}: record #{idx} (id {rid}) acknowledged, logged out of order at {log_offset:?}"),
                    );
                }
                if !logged {
                    self.violation(
                        ViolationKind::Lost,
                        format!("{tp}: record #{idx} (id {rid}) acknowledged, not in the log"),
                    );
                } else if offset.is_some_and(|o| Some(o) != log_offset) {
                    self.violation(
                        ViolationKind::OffsetMismatch,
                        format!(
                            "{tp}: record #{idx} acked at {offset:?}, logged at {log_offset:?}"
                        ),
                    );
                }
            }
            Outcome::Failed {
                possibly_written: false,
            } if logged => {
                self.violation(
                    ViolationKind::FailedButWritten,
                    format!("{tp}: record #{idx} (id {rid}) failed as not written, but logged at {log_offset:?}"),
                );
            }
            _ => {}
        }
    }

    /// End of run: every record must have an outcome (c).
    pub fn check_all_resolved(&mut self) {
        let pending: Vec<(RecordId, u32, u32)> = self
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.outcome == Outcome::Pending)
            .map(|(i, r)| (RecordId(i as u64), r.partition, r.index))
            .collect();
        if let Some(&(rid, p, idx)) = pending.first() {
            let tp = self.tps[p as usize].clone();
            self.violation(
                ViolationKind::Unresolved,
                format!(
                    "{} records without an outcome, first: {tp} #{idx} (id {rid})",
                    pending.len()
                ),
            );
        }
    }

    /// Totals for one partition, or all when `partition` is `None`.
    #[must_use]
    pub fn tally(&self, partition: Option<usize>) -> Tally {
        let mut t = Tally::default();
        for r in &self.records {
            if partition.is_some_and(|p| p as u32 != r.partition) {
                continue;
            }
            t.records += 1;
            t.log_records += u64::from(r.log_count);
            if r.log_count > 1 {
                t.duplicates += 1;
            }
            match r.outcome {
                Outcome::Pending => t.pending += 1,
                Outcome::Delivered => {
                    t.acked += 1;
                    if r.log_count == 0 {
                        t.lost += 1;
                    }
                    if r.out_of_order {
                        t.reordered += 1;
                    }
                }
                Outcome::Failed { .. } => {
                    t.failed += 1;
                    if r.log_count > 0 {
                        t.failed_in_log += 1;
                    }
                }
            }
        }
        t
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
        assert_eq!(encode_value(1, 2, 0).len(), 8);
    }

    /// A partition whose leader log holds record #0 of partition 0.
    fn logged_once() -> PartitionState {
        let mut p = PartitionState::new();
        append_record_0(&mut p);
        p
    }

    fn append_record_0(p: &mut PartitionState) {
        let record = LoggedRecord {
            offset: 0,
            key: None,
            value: Some(encode_value(0, 0, 16)),
            headers: Vec::new(),
            producer_id: 7,
            producer_epoch: 0,
            sequence: 0,
            transactional: false,
        };
        p.log
            .append_batch(7, 0, 0, 0, false, 0, Bytes::new(), vec![record]);
    }

    fn truncate_all(p: &mut PartitionState) {
        let removed = p.log.truncate_to_entries(0);
        let journal = p.log.take_journal();
        p.log.set_journal(journal, removed);
    }

    #[test]
    fn a_truncated_unacknowledged_record_may_be_written_again() {
        let tp = TopicPartition::new("t", 0);
        let mut c = Checker::new(vec![tp.clone()]);
        c.on_sent(RecordId(0), 0, 0);
        let mut p = logged_once();
        c.scan_logs([&p]);
        truncate_all(&mut p);
        c.scan_logs([&p]);
        assert_eq!(c.truncated_records(), 1);
        append_record_0(&mut p);
        c.scan_logs([&p]);
        c.on_event(&Event::Delivered {
            partition: tp,
            records: vec![RecordId(0)],
            base_offset: Some(0),
        });
        assert_eq!(c.violations(), &[], "no duplicate, nothing lost");
    }

    #[test]
    fn an_acknowledged_record_truncated_is_lost() {
        let tp = TopicPartition::new("t", 0);
        let mut c = Checker::new(vec![tp.clone()]);
        c.on_sent(RecordId(0), 0, 0);
        let mut p = logged_once();
        c.scan_logs([&p]);
        c.on_event(&Event::Delivered {
            partition: tp,
            records: vec![RecordId(0)],
            base_offset: Some(0),
        });
        assert!(c.violations().is_empty());
        truncate_all(&mut p);
        c.scan_logs([&p]);
        assert_eq!(c.violations()[0].kind, ViolationKind::Lost);
    }

    #[test]
    fn ack_of_unlogged_record_is_lost() {
        let tp = TopicPartition::new("t", 0);
        let mut c = Checker::new(vec![tp.clone()]);
        c.on_sent(RecordId(0), 0, 0);
        c.on_event(&Event::Delivered {
            partition: tp.clone(),
            records: vec![RecordId(0)],
            base_offset: Some(0),
        });
        assert_eq!(c.violations()[0].kind, ViolationKind::Lost);
        c.on_event(&Event::Delivered {
            partition: tp,
            records: vec![RecordId(0)],
            base_offset: Some(0),
        });
        assert_eq!(c.violations()[1].kind, ViolationKind::ResolvedTwice);
        assert_eq!(c.tally(None).lost, 1);
    }
}
