//! The oracle every log is checked with: the simulator's model brokers, FakeBroker and
//! real Kafka (through `kacrab-testkit`) alike. One record encoding, one outcome type,
//! one log-side check.
//!
//! **Encoding.** Record `index` of partition `partition` (its place in that partition's
//! send order, from 0) has the value `"{partition}:{index}"` in decimal ASCII, padded
//! with `.` to the value size (never shorter than the digits), and, where a key is sent,
//! the key `"{partition}:{index}"`. ASCII because the real-Kafka scenarios read logs back
//! through Kafka's console consumer, which prints values as text; the partition in the
//! value because a record in the wrong partition must be told from a missing one
//! whatever the partitioner; the index within the partition because order is a
//! per-partition promise.
//!
//! **Outcome.** [`Outcome`] is what the producer reported: nothing yet, delivered, or
//! failed with its `possibly_written` flag.
//!
//! **The check.** A [`LogOracle`] is told what was sent ([`LogOracle::on_sent`]), what
//! each partition's log holds ([`LogOracle::on_logged`], or a whole read-back log with
//! [`LogOracle::scan_log`]), what left a log ([`LogOracle::on_truncated`]) and every
//! reported outcome ([`LogOracle::on_outcome`]), in any order the logs and the outcomes
//! interleave. It finds:
//! * every acknowledged record in its partition's log, exactly once, at the offset it was
//!   acknowledged with ([`ViolationKind::Lost`], [`ViolationKind::OffsetMismatch`]);
//! * no record twice in a log ([`ViolationKind::Duplicate`]);
//! * every log in send order, acknowledged records or not ([`ViolationKind::Reordered`]),
//!   with one exception no client can prevent: a request of a producer id the producer
//!   has since given up that a broker applies late, after records of the new id (Kafka's
//!   `ProducerStateManager` keeps state per producer id and fences only older epochs of
//!   one id). Such a record must not be acknowledged; it is counted in
//!   [`LogOracle::retired_producer_writes`]. Logs read without producer ids (-1) get no
//!   exception;
//! * every record resolved exactly once ([`ViolationKind::ResolvedTwice`],
//!   [`ViolationKind::Unresolved`] from [`LogOracle::check_all_resolved`]);
//! * a record reported failed with `possibly_written == false` absent from the log
//!   ([`ViolationKind::FailedButWritten`]), whichever of the two is seen first;
//! * nothing in a log that was not sent there ([`ViolationKind::WrongRecord`]).
//!
//! Findings are collected in order and taken with [`LogOracle::take_findings`]: the
//! simulator stamps them with its step and clock, the adapter suite groups them in a
//! report.

use std::collections::BTreeMap;
use std::fmt;

use bytes::{Bytes, BytesMut};
/// The record ids the oracle keys records by (assigned in send order from 0).
pub use kacrab_idempotence::RecordId;

/// The record tag `"{partition}:{index}"`, the key of record `index` of `partition`.
#[must_use]
pub fn encode_key(partition: u32, index: u32) -> Bytes {
    Bytes::from(format!("{partition}:{index}"))
}

/// The value of record `index` of `partition`: its tag padded with `.` to `size` bytes
/// (never shorter than the tag).
#[must_use]
pub fn encode_value(partition: u32, index: u32, size: usize) -> Bytes {
    let tag = format!("{partition}:{index}");
    let mut b = BytesMut::with_capacity(size.max(tag.len()));
    b.extend_from_slice(tag.as_bytes());
    if b.len() < size {
        b.resize(size, b'.');
    }
    b.freeze()
}

/// Reads (partition, index) back from a record value (or key): the tag, then nothing but
/// `.` padding. `None` for anything else.
#[must_use]
pub fn decode_value(value: &[u8]) -> Option<(u32, u32)> {
    fn number(b: &[u8]) -> Option<u32> {
        if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    }
    let colon = value.iter().position(|&c| c == b':')?;
    let rest = &value[colon + 1..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if !rest[digits..].iter().all(|&c| c == b'.') {
        return None;
    }
    Some((number(&value[..colon])?, number(&rest[..digits])?))
}

/// A record's outcome as the producer reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No outcome yet.
    Pending,
    /// Acknowledged (`Event::Delivered`).
    Delivered,
    /// Failed (`Event::Failed`).
    Failed {
        /// As reported: `false` promises the record is not in the log.
        possibly_written: bool,
    },
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// A record appears twice in a log.
    Duplicate,
    /// A record appears after a record sent later.
    Reordered,
    /// An acknowledged record is not in the log.
    Lost,
    /// The acknowledged offset is not the record's log offset.
    OffsetMismatch,
    /// A record got a second outcome.
    ResolvedTwice,
    /// A record never got an outcome.
    Unresolved,
    /// An outcome names a record in the wrong partition or an unknown one, or a log
    /// holds a record never sent to it (or one it cannot read).
    WrongRecord,
    /// A wire sequence run does not start at 0, skips, or reuses a sequence.
    WireSequence,
    /// A record failed as "not written" is in the log.
    FailedButWritten,
    /// The producer did not drain once faults stopped.
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
    /// A partition failed records that no fault able to fail them explains (see
    /// [`crate::failure_bound`]): the producer gave up on records it could have
    /// delivered.
    UnexplainedFailures,
}

impl ViolationKind {
    /// Every kind, in report order.
    pub const ALL: &'static [ViolationKind] = &[
        Self::Duplicate,
        Self::Reordered,
        Self::Lost,
        Self::OffsetMismatch,
        Self::ResolvedTwice,
        Self::Unresolved,
        Self::WrongRecord,
        Self::WireSequence,
        Self::FailedButWritten,
        Self::Liveness,
        Self::UnexplainedFailures,
        Self::Fatal,
        Self::Protocol,
        Self::TimerStuck,
        Self::BadBatch,
        Self::Transaction,
    ];

    /// A stable one-word name, for the summary line (`by_kind=duplicate:0,...`) that
    /// scripts read.
    #[must_use]
    pub fn short_name(self) -> &'static str {
        match self {
            Self::Duplicate => "duplicate",
            Self::Reordered => "reordered",
            Self::Lost => "lost",
            Self::OffsetMismatch => "offset_mismatch",
            Self::ResolvedTwice => "resolved_twice",
            Self::Unresolved => "unresolved",
            Self::WrongRecord => "wrong_record",
            Self::WireSequence => "wire_sequence",
            Self::FailedButWritten => "failed_but_written",
            Self::Liveness => "liveness",
            Self::UnexplainedFailures => "unexplained_failures",
            Self::Fatal => "fatal",
            Self::Protocol => "protocol",
            Self::TimerStuck => "timer_stuck",
            Self::BadBatch => "bad_batch",
            Self::Transaction => "transaction",
        }
    }

    /// A short description, for reports.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Duplicate => "duplicated in the log",
            Self::Reordered => "in the log out of send order",
            Self::Lost => "acknowledged but not in the log (lost)",
            Self::OffsetMismatch => "acknowledged offset does not match the log",
            Self::ResolvedTwice => "resolved twice",
            Self::Unresolved => "never resolved",
            Self::WrongRecord => "wrong record (foreign, misplaced, unreadable or misreported)",
            Self::WireSequence => "wire sequence broken",
            Self::FailedButWritten => "failed as not possibly written, yet in the log",
            Self::Liveness => "did not drain",
            Self::Fatal => "producer went fatal",
            Self::Protocol => "protocol misuse",
            Self::TimerStuck => "timer stuck in the past",
            Self::BadBatch => "undecodable batch",
            Self::Transaction => "transaction property",
            Self::UnexplainedFailures => "failed records no fault explains",
        }
    }
}

/// One thing the oracle found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What.
    pub kind: ViolationKind,
    /// Which records, where.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.detail)
    }
}

/// Everything known about one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordState {
    /// Partition (index among the oracle's partitions).
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
    /// acknowledged: acknowledging it is a violation.
    pub retired_write: bool,
}

/// Totals over the records (one partition or all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Records sent (accepted by `send`).
    pub records: u64,
    /// Delivered.
    pub acked: u64,
    /// Failed.
    pub failed: u64,
    /// Failed with `possibly_written == false` (of [`Tally::failed`]).
    pub failed_not_written: u64,
    /// No outcome yet.
    pub pending: u64,
    /// Records in the log more than once.
    pub duplicates: u64,
    /// Acknowledged records logged out of send order.
    pub reordered: u64,
    /// Acknowledged records absent from the log.
    pub lost: u64,
    /// Failed records that are in the log nevertheless (allowed once, when reported
    /// possibly written).
    pub failed_in_log: u64,
    /// Data records in the log.
    pub log_records: u64,
}

/// One data record of a log, as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Its offset.
    pub offset: i64,
    /// Its key (empty for a null key).
    pub key: Bytes,
    /// Its value (empty for a null value).
    pub value: Bytes,
    /// The producer id that wrote it, or -1 when the reader does not know.
    pub producer_id: i64,
}

impl LogRecord {
    /// Record `index` of `partition` as the adapter suite writes it (key and value), at
    /// `offset`, producer unknown: for tests of the oracle on hand-made logs.
    #[must_use]
    pub fn of(offset: i64, partition: u32, index: u32, size: usize) -> Self {
        Self {
            offset,
            key: encode_key(partition, index),
            value: encode_value(partition, index, size),
            producer_id: -1,
        }
    }
}

/// The log-side oracle. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct LogOracle {
    /// Partition names for findings, by partition index.
    names: Vec<String>,
    /// Every record sent, by [`RecordId`] (ids are assigned in send order from 0).
    records: Vec<RecordState>,
    /// Per partition, the ids of its records in send order.
    by_index: Vec<Vec<RecordId>>,
    /// Per partition, the highest record index in the log.
    max_in_log: Vec<Option<u32>>,
    /// The producer id that appended the record at `max_in_log`.
    max_in_log_producer: Vec<i64>,
    retired_producer_writes: u64,
    truncated_records: u64,
    /// When set, a logged value must be exactly the encoding at this size.
    value_size: Option<usize>,
    findings: Vec<Finding>,
}

impl LogOracle {
    /// An oracle for partitions `0..names.len()`, named for findings.
    #[must_use]
    pub fn new(names: Vec<String>) -> Self {
        let n = names.len();
        Self {
            names,
            by_index: vec![Vec::new(); n],
            max_in_log: vec![None; n],
            max_in_log_producer: vec![-1; n],
            ..Self::default()
        }
    }

    /// Demands every logged value be exactly [`encode_value`] at `size` (a corrupted or
    /// truncated value is a [`ViolationKind::WrongRecord`]).
    pub fn set_value_size(&mut self, size: Option<usize>) {
        self.value_size = size;
    }

    fn find(&mut self, kind: ViolationKind, detail: String) {
        self.findings.push(Finding { kind, detail });
    }

    /// The findings since the last call, in the order found.
    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.findings)
    }

    /// Whether findings are waiting to be taken.
    #[must_use]
    pub fn has_findings(&self) -> bool {
        !self.findings.is_empty()
    }

    /// The index the next record sent to `partition` gets.
    #[must_use]
    pub fn next_index(&self, partition: usize) -> u32 {
        self.by_index[partition].len() as u32
    }

    /// A record was sent to `partition` (accepted by the producer): it gets the next
    /// [`RecordId`] and the next index of that partition.
    pub fn on_sent(&mut self, partition: usize) -> (RecordId, u32) {
        let id = RecordId(self.records.len() as u64);
        let index = self.next_index(partition);
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
        (id, index)
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

    /// The record a decoded tag names in partition `gp`, if it was sent there.
    fn sent_here(&self, gp: usize, tag: Option<(u32, u32)>) -> Option<(u32, RecordId)> {
        let (p, idx) = tag?;
        if p as usize != gp {
            return None;
        }
        Some((idx, *self.by_index[gp].get(idx as usize)?))
    }

    /// Checks a whole log read back from partition `gp` (offsets must increase), record by
    /// record as [`LogOracle::on_logged`].
    pub fn scan_log(&mut self, gp: usize, log: &[LogRecord]) {
        if gp >= self.names.len() {
            if !log.is_empty() {
                self.find(
                    ViolationKind::WrongRecord,
                    format!(
                        "partition {gp} holds {} records, but nothing was sent to it",
                        log.len()
                    ),
                );
            }
            return;
        }
        let mut prev: Option<i64> = None;
        for r in log {
            if let Some(p) = prev.filter(|&p| r.offset <= p) {
                let tp = &self.names[gp];
                self.find(
                    ViolationKind::WrongRecord,
                    format!("{tp}: log offsets not increasing ({} after {p})", r.offset),
                );
            }
            prev = Some(r.offset);
            let key = (!r.key.is_empty()).then_some(&r.key[..]);
            self.on_logged(gp, r.offset, r.producer_id, key, Some(&r.value));
        }
    }

    /// A data record was appended to partition `gp`'s log at `offset` by `producer_id`
    /// (-1 if unknown).
    pub fn on_logged(
        &mut self,
        gp: usize,
        offset: i64,
        producer_id: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) {
        let tp = self.names[gp].clone();
        let tag = value.and_then(decode_value);
        let Some((idx, rid)) = self.sent_here(gp, tag) else {
            let detail = match tag {
                None => format!("{tp}@{offset}: undecodable value"),
                Some((p, i)) => format!("{tp}@{offset}: record {p}:{i} was never sent here"),
            };
            self.find(ViolationKind::WrongRecord, detail);
            return;
        };
        let p = gp as u32;
        let exact = self
            .value_size
            .is_none_or(|size| value.is_some_and(|v| v == encode_value(p, idx, size)));
        let key_ok = key.is_none_or(|k| k == encode_key(p, idx));
        if !exact || !key_ok {
            self.find(
                ViolationKind::WrongRecord,
                format!("{tp}@{offset}: record {p}:{idx} has a corrupted key or value"),
            );
        }
        let max = self.max_in_log[gp];
        let rec = &mut self.records[rid.0 as usize];
        rec.log_count += 1;
        let count = rec.log_count;
        let outcome = rec.outcome;
        if count > 1 {
            let first = rec.log_offset;
            self.find(
                ViolationKind::Duplicate,
                format!(
                    "{tp}: record #{idx} (id {rid}) logged again at offset {offset} (first at {first:?})"
                ),
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
                self.find(
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
            self.find(
                ViolationKind::FailedButWritten,
                format!(
                    "{tp}: record #{idx} (id {rid}) failed as not written, then logged at {offset}"
                ),
            );
        }
    }

    /// Records left partition `gp`'s log (truncated by a failover): `(offset, value)`
    /// each. An unacknowledged one may be written again; an acknowledged one is lost.
    pub fn on_truncated<'a>(
        &mut self,
        gp: usize,
        removed: impl IntoIterator<Item = (i64, Option<&'a [u8]>)>,
    ) {
        for (offset, value) in removed {
            self.truncated_records += 1;
            let Some((idx, rid)) = self.sent_here(gp, value.and_then(decode_value)) else {
                continue;
            };
            let tp = self.names[gp].clone();
            let rec = &mut self.records[rid.0 as usize];
            rec.log_count = rec.log_count.saturating_sub(1);
            if rec.log_offset == Some(offset) {
                rec.log_offset = None;
            }
            if rec.outcome == Outcome::Delivered {
                self.find(
                    ViolationKind::Lost,
                    format!(
                        "{tp}: record #{idx} (id {rid}) acknowledged, then truncated from offset {offset} by a failover"
                    ),
                );
            }
        }
        self.max_in_log[gp] = self.by_index[gp]
            .iter()
            .rev()
            .map(|rid| &self.records[rid.0 as usize])
            .find(|r| r.log_count > 0)
            .map(|r| r.index);
    }

    /// The producer reported `outcome` for record `id`, naming `partition` (`None`: a
    /// partition the oracle does not know), with `offset` for an acknowledgement that
    /// carries one.
    pub fn on_outcome(
        &mut self,
        id: RecordId,
        partition: Option<usize>,
        outcome: Outcome,
        offset: Option<i64>,
    ) {
        let named = |p: Option<usize>, names: &[String]| {
            p.and_then(|p| names.get(p).cloned())
                .unwrap_or_else(|| format!("partition {p:?}"))
        };
        let Some(rec) = usize::try_from(id.0)
            .ok()
            .and_then(|i| self.records.get_mut(i))
        else {
            let tp = named(partition, &self.names);
            self.find(
                ViolationKind::WrongRecord,
                format!("{tp}: outcome for unknown record {id}"),
            );
            return;
        };
        if partition != Some(rec.partition as usize) {
            let owner = self.names[rec.partition as usize].clone();
            let tp = named(partition, &self.names);
            self.find(
                ViolationKind::WrongRecord,
                format!("{tp}: outcome for record {id} of {owner}"),
            );
            return;
        }
        rec.resolutions += 1;
        let tp = self.names[rec.partition as usize].clone();
        if rec.resolutions > 1 {
            let first = rec.outcome;
            self.find(
                ViolationKind::ResolvedTwice,
                format!("{tp}: record {id} resolved again as {outcome:?} (first {first:?})"),
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
                    self.find(
                        ViolationKind::Reordered,
                        format!("{tp}: record #{idx} (id {id}) acknowledged, logged out of order at {log_offset:?}"),
                    );
                }
                if !logged {
                    self.find(
                        ViolationKind::Lost,
                        format!("{tp}: record #{idx} (id {id}) acknowledged, not in the log"),
                    );
                } else if offset.is_some_and(|o| Some(o) != log_offset) {
                    self.find(
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
                self.find(
                    ViolationKind::FailedButWritten,
                    format!("{tp}: record #{idx} (id {id}) failed as not written, but logged at {log_offset:?}"),
                );
            }
            _ => {}
        }
    }

    /// End of run: every record must have an outcome.
    pub fn check_all_resolved(&mut self) {
        let mut pending = self
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.outcome == Outcome::Pending);
        let Some((first, r)) = pending.next() else {
            return;
        };
        let (p, idx) = (r.partition as usize, r.index);
        let n = 1 + pending.count();
        let tp = self.names[p].clone();
        self.find(
            ViolationKind::Unresolved,
            format!("{n} records without an outcome, first: {tp} #{idx} (id {first})"),
        );
    }

    /// Records appended behind records of a newer producer id by a request of a
    /// retired one: not a violation while they are not acknowledged.
    #[must_use]
    pub fn retired_producer_writes(&self) -> u64 {
        self.retired_producer_writes
    }

    /// Records truncated from a log so far.
    #[must_use]
    pub fn truncated_records(&self) -> u64 {
        self.truncated_records
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
                Outcome::Failed { possibly_written } => {
                    t.failed += 1;
                    if !possibly_written {
                        t.failed_not_written += 1;
                    }
                    if r.log_count > 0 {
                        t.failed_in_log += 1;
                    }
                }
            }
        }
        t
    }
}

/// Findings grouped by kind, at most `show` details each, for a readable report.
#[must_use]
pub fn summarize(findings: &[Finding], show: usize) -> String {
    let mut kinds: BTreeMap<ViolationKind, (usize, Vec<&str>)> = BTreeMap::new();
    for f in findings {
        let e = kinds.entry(f.kind).or_default();
        e.0 += 1;
        if e.1.len() < show {
            e.1.push(&f.detail);
        }
    }
    let mut out = String::new();
    for (kind, (n, items)) in kinds {
        let more = if n > items.len() { "; ..." } else { "" };
        out.push_str(&format!(
            "  {} ({kind:?}): {n} (first: {}{more})\n",
            kind.describe(),
            items.join("; ")
        ));
    }
    out
}
