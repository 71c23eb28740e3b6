//! Which transaction version (KIP-890) the producer speaks: the brokers' finalized
//! `transaction.version` as last reported, the version latched for the open
//! transaction, and the one sampled for the next. Version 2 (finalized level 2 or more)
//! adds partitions with their first Produce and bumps the epoch on every EndTxn.

/// The transaction version (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct TxnVersion {
    /// The brokers' finalized `transaction.version`, as last reported.
    finalized: i16,
    /// Version 2 in use by the open transaction. Latched: chosen at init, and changed
    /// only between transactions, so every request of one transaction (Produce,
    /// TxnOffsetCommit, EndTxn) speaks the version it began under
    /// (`TransactionManager.beginCompletingTransaction` builds EndTxn before
    /// `maybeUpdateTransactionV2Enabled`).
    v2: bool,
    /// The version the next transaction uses, sampled from `finalized` when this one
    /// starts completing; applied when it ends. Invariant (checked by `Txn`, which
    /// knows the state): set only while a transaction completes or failed.
    next_v2: Option<bool>,
}

impl TxnVersion {
    /// Whether the open transaction speaks version 2.
    pub(crate) fn is_v2(&self) -> bool {
        self.v2
    }

    /// Whether the next transaction's version was sampled and waits to apply.
    pub(crate) fn next_sampled(&self) -> bool {
        self.next_v2.is_some()
    }

    /// The brokers' finalized `transaction.version` is now `level`; it applies from the
    /// next sample.
    pub(crate) fn finalized(&mut self, level: i16) {
        self.finalized = level;
    }

    /// Java samples the version once initialized (by then the driver has reported the
    /// brokers' finalized features).
    pub(crate) fn latch_at_init(&mut self) {
        self.v2 = self.finalized >= 2;
    }

    /// The transaction starts completing: samples the next transaction's version.
    /// Returns whether it moves from version 1 to 2 (then this transaction ends with
    /// a version 1 EndTxn and an epoch bump).
    pub(crate) fn sample_next(&mut self) -> bool {
        let next_v2 = self.finalized >= 2;
        self.next_v2 = Some(next_v2);
        next_v2 && !self.v2
    }

    /// The transaction ended: the sampled version, if any, applies from now on.
    pub(crate) fn apply_next(&mut self) {
        if let Some(v2) = self.next_v2.take() {
            self.v2 = v2;
        }
    }
}
