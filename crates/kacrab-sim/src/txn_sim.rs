//! The transaction tracker, an observer of the [`Cluster`](crate::Cluster): which
//! transaction each record belongs to, what the workload intended for it and how it
//! ended. The coordinator's side of transactions is in the world (`world::txn`), the
//! transactional script in the cluster (`cluster::script`), the properties in
//! `cluster::checks`.

use std::collections::BTreeMap;

use kacrab_idempotence::{RecordId, TxnError, TxnOp};

use crate::coordinator::Partition;

/// How one transaction of the workload ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOutcome {
    /// Not ended (yet).
    Open,
    /// `commit_transaction` completed with `Ok`.
    Committed,
    /// `abort_transaction` completed with `Ok` (chosen, or after a failed commit).
    Aborted,
    /// Neither: the producer failed (fenced, fatal) with this error. The coordinator
    /// decides; its records must be visible all or none.
    Failed(TxnError),
}

/// One transaction of the workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnRecord {
    /// The records sent in it.
    pub records: Vec<RecordId>,
    /// Whether the application meant to commit it.
    pub intended_commit: bool,
    /// The error of a commit that did not complete, if any.
    pub commit_error: Option<TxnError>,
    /// How it ended.
    pub outcome: TxnOutcome,
    /// The consumed offsets it sent (group [`crate::txn_offsets::WORKLOAD_GROUP`]).
    pub offsets: Vec<(Partition, i64)>,
    /// A rival producer initialised while it was open: the coordinator aborted it, so
    /// none of its records may become visible.
    pub fenced_by_rival: bool,
}

/// Which transaction each record belongs to, and how each ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnTracker {
    /// The transactions, in order.
    pub txns: Vec<TxnRecord>,
    /// Every `TransactionCompleted` event of the producer under test, in order.
    pub events: Vec<(TxnOp, Result<(), TxnError>)>,
    pub(crate) current: Option<usize>,
    by_record: BTreeMap<RecordId, usize>,
    /// The operation the workload called whose completion has not come yet.
    pub(crate) pending: Option<TxnOp>,
}

impl TxnTracker {
    pub(crate) fn on_sent(&mut self, id: RecordId) {
        if let Some(c) = self.current {
            self.txns[c].records.push(id);
            self.by_record.insert(id, c);
        }
    }

    pub(crate) fn on_completed(&mut self, op: TxnOp, result: &Result<(), TxnError>) {
        self.events.push((op, result.clone()));
        if self.pending == Some(op) {
            self.pending = None;
        }
    }

    pub(crate) fn begin(&mut self, commit: bool) -> usize {
        self.txns.push(TxnRecord {
            records: Vec::new(),
            intended_commit: commit,
            commit_error: None,
            outcome: TxnOutcome::Open,
            offsets: Vec::new(),
            fenced_by_rival: false,
        });
        self.current = Some(self.txns.len() - 1);
        self.txns.len() - 1
    }

    pub(crate) fn finish(&mut self, idx: usize, outcome: TxnOutcome) {
        self.txns[idx].outcome = outcome;
        self.current = None;
    }

    /// The transaction a record was sent in.
    #[must_use]
    pub fn transaction_of(&self, id: RecordId) -> Option<usize> {
        self.by_record.get(&id).copied()
    }

    /// How many transactions ended this way.
    #[must_use]
    pub fn count(&self, pred: impl Fn(&TxnOutcome) -> bool) -> usize {
        self.txns.iter().filter(|t| pred(&t.outcome)).count()
    }
}
