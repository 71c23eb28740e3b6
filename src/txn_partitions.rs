//! The partitions of the open transaction, by how far each has joined it: new (sent to,
//! not yet asked for), pending (in an AddPartitionsToTxn without an answer) and added
//! (the coordinator holds it; its batches may drain). Java's `TransactionManager` keeps
//! the same three sets (`newPartitionsInTransaction`, `pendingPartitionsInTransaction`,
//! `partitionsInTransaction`). Under transaction version 2 a partition is added with its
//! first Produce, so it goes straight to added.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// The open transaction's partitions, by stage (see the module documentation); indexes
/// into the accumulator's partition table.
#[derive(Debug, Default)]
pub(crate) struct TxnPartitions {
    /// Sent to in this transaction, not yet asked for. Invariant: the three sets are
    /// disjoint (a partition is in one stage at a time).
    new: BTreeSet<u32>,
    /// In an AddPartitionsToTxn without an answer. Kept, and asked for again, until an
    /// answer settles them: the coordinator may hold them already.
    pending: BTreeSet<u32>,
    /// Added to the transaction: their batches may drain.
    added: BTreeSet<u32>,
}

impl TxnPartitions {
    /// Partition `p` was sent to under transaction version 1: it is asked for with the
    /// next AddPartitionsToTxn, unless it was added or asked for already.
    pub(crate) fn join(&mut self, p: u32) {
        if !self.added.contains(&p) && !self.pending.contains(&p) {
            self.new.insert(p);
        }
    }

    /// Partition `p` was sent to under transaction version 2: its first Produce adds it.
    pub(crate) fn join_with_produce(&mut self, p: u32) {
        self.added.insert(p);
    }

    /// Whether `p` was added to the transaction (Java's `isPartitionAdded`).
    pub(crate) fn is_added(&self, p: u32) -> bool {
        self.added.contains(&p)
    }

    /// Whether some partition waits to be asked for.
    pub(crate) fn has_new(&self) -> bool {
        !self.new.is_empty()
    }

    /// Whether an AddPartitionsToTxn has nothing to ask for (neither new partitions nor
    /// pending ones to ask for again).
    pub(crate) fn nothing_to_ask(&self) -> bool {
        self.new.is_empty() && self.pending.is_empty()
    }

    /// The new partitions are not asked for any more (an abort, a forced close); pending
    /// ones stay until an answer settles them.
    pub(crate) fn drop_new(&mut self) {
        self.new.clear();
    }

    /// An AddPartitionsToTxn goes out: the new partitions become pending, and every
    /// pending one (including those of an earlier request that got no answer) is asked
    /// for, in index order.
    pub(crate) fn ask(&mut self) -> Vec<u32> {
        let moved = core::mem::take(&mut self.new);
        self.pending.extend(moved);
        self.pending.iter().copied().collect()
    }

    /// Whether a pending partition is missing from `answered`.
    pub(crate) fn pending_outside(&self, answered: &[u32]) -> bool {
        self.pending.iter().any(|p| !answered.contains(p))
    }

    /// The answer added every pending partition.
    pub(crate) fn all_pending_added(&mut self) {
        let pending = core::mem::take(&mut self.pending);
        self.added.extend(pending);
    }

    /// The answer settled the pending partitions without adding them all: those in
    /// `added` (when given) joined, the others did not. Returns whether any joined.
    pub(crate) fn settle_pending(&mut self, added: Option<&[u32]>) -> bool {
        let joined: Vec<u32> = match added {
            Some(added) => added
                .iter()
                .copied()
                .filter(|p| self.pending.contains(p))
                .collect(),
            None => Vec::new(),
        };
        let any = !joined.is_empty();
        self.added.extend(joined);
        self.pending.clear();
        any
    }

    /// The transaction ended: no partition belongs to one.
    pub(crate) fn clear(&mut self) {
        self.new.clear();
        self.pending.clear();
        self.added.clear();
    }

    /// Whether no partition is in any stage.
    pub(crate) fn is_empty(&self) -> bool {
        self.new.is_empty() && self.pending.is_empty() && self.added.is_empty()
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self) {
        assert!(
            self.new.is_disjoint(&self.pending)
                && self.new.is_disjoint(&self.added)
                && self.pending.is_disjoint(&self.added),
            "a partition in two stages of joining the transaction"
        );
    }
}
