//! Epoch bumps (KIP-360) and unresolved sequences: Java's `requestIdempotentEpochBump`,
//! `bumpIdempotentProducerEpoch`, `startSequencesAtBeginning`, `markSequenceUnresolved`
//! and `maybeResolveSequences`, for the idempotent producer.

use alloc::vec::Vec;

use crate::batch::StampFate;
use crate::io::Event;
use crate::producer::{IdState, Producer};
use crate::types::{ProducerIdAndEpoch, Sequence};

/// The idempotent producer's epoch-bump bookkeeping: the partitions a bump must
/// renumber, and those whose sequences are unresolved. A bump is required exactly while
/// some partition awaits its rewrite (nothing else asks for one).
#[derive(Debug, Default)]
pub(crate) struct BumpState {
    /// Partitions an epoch bump must rewrite. The bump waits until none of them has a
    /// batch on the wire, so no answer can arrive for a batch after it was renumbered.
    /// Nothing new drains from them meanwhile. Invariant: each at most once.
    rewrite: Vec<u32>,
    /// The partitions whose `SequenceEntry::unresolved` is set, an index for
    /// `maybe_resolve_sequences`. Invariant: each at most once, and exactly those (the
    /// producer checks the second half, as it sees the partitions).
    unresolved: Vec<u32>,
}

impl BumpState {
    /// Whether an epoch bump is required.
    pub(crate) fn required(&self) -> bool {
        !self.rewrite.is_empty()
    }

    /// Whether partition `p` awaits a bump's rewrite.
    pub(crate) fn awaiting(&self, p: u32) -> bool {
        self.rewrite.contains(&p)
    }

    /// Whether partition `p` is on the unresolved list.
    pub(crate) fn is_unresolved(&self, p: u32) -> bool {
        self.unresolved.contains(&p)
    }

    /// How many partitions have unresolved sequences.
    pub(crate) fn unresolved_len(&self) -> usize {
        self.unresolved.len()
    }

    /// Forgets everything (every batch failed: nothing is left to renumber).
    pub(crate) fn clear(&mut self) {
        self.rewrite.clear();
        self.unresolved.clear();
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self) {
        for list in [&self.rewrite, &self.unresolved] {
            for (i, p) in list.iter().enumerate() {
                assert!(!list[i + 1..].contains(p), "partition {p} listed twice");
            }
        }
    }
}

impl Producer {
    /// Asks for an epoch bump that rewrites partition `p`'s in-flight sequences.
    pub(crate) fn request_bump(&mut self, p: u32) {
        // A bump renumbers the partition: a probe's question (how far did the log get
        // under the old numbering) no longer matters, or its premise failed.
        self.acc[p].seq.end_probe();
        if !self.bump.awaiting(p) {
            self.bump.rewrite.push(p);
        }
    }

    pub(crate) fn mark_unresolved(&mut self, p: u32, expected_after: Sequence) {
        let seq = &mut self.acc[p].seq;
        if seq.unresolved().is_none() {
            self.bump.unresolved.push(p);
        }
        seq.mark_unresolved(expected_after);
    }

    /// Java's `maybeResolveSequences`: once an unresolved partition has nothing in
    /// flight, either later acks prove the lost batch landed (the last ack is the last
    /// sequence handed out), or nobody knows, and only a new epoch makes the next
    /// sequence safe.
    pub(crate) fn maybe_resolve_sequences(&mut self) {
        let mut i = 0;
        while i < self.bump.unresolved.len() {
            let p = self.bump.unresolved[i];
            let part = &self.acc[p];
            if !part.seq.inflight().is_empty() || !part.on_wire.is_empty() {
                i += 1;
                continue;
            }
            // A stale partition with nothing in flight restarts at 0 under the current
            // identity anyway, so its old sequences no longer matter.
            let landed = self.acc[p].seq.resolve(self.identity.id());
            self.bump.unresolved.swap_remove(i);
            if !landed {
                self.request_bump(p);
            }
        }
    }

    /// Java's `bumpIdempotentEpochAndResetIdIfNeeded`, deferred until the rewrite is
    /// safe ([`Producer::rewrites_are_safe`]): after that no answer can arrive for a
    /// batch under its old numbering, and no batch on the wire is renumbered behind the
    /// broker's back.
    pub(crate) fn maybe_apply_epoch_bump(&mut self) {
        if !self.bump.required()
            || self.identity.state() != IdState::Ready
            || !self.rewrites_are_safe()
        {
            return;
        }
        match self.identity.id().epoch.next() {
            Some(epoch) => {
                let bumped = ProducerIdAndEpoch {
                    id: self.identity.id().id,
                    epoch,
                };
                self.apply_rewrites(bumped);
                self.events
                    .push_back(Event::ProducerIdChanged { id: bumped });
            }
            _ => {
                // Epochs do not wrap: a new producer id is needed. The rewrite waits for
                // it (partitions stay blocked), so nothing goes out stamped with no id.
                // More partitions may join the rewrite set meanwhile, so the new id
                // passes the same check again (`handle_producer_id`).
                self.identity.exhausted();
            }
        }
    }

    /// A new producer id arrived while a bump waited for it (epoch exhaustion). It is
    /// the bump, if the rewrite is safe now; otherwise the partitions stay blocked and a
    /// later [`Producer::maybe_apply_epoch_bump`] bumps the new id's epoch once it is.
    pub(crate) fn new_id_for_pending_bump(&mut self) {
        if self.bump.required() && self.rewrites_are_safe() {
            self.apply_rewrites(self.identity.id());
        }
    }

    /// The one rewrite-safety check every renumbering passes: no partition to rewrite
    /// has a batch that the renumbering could make the broker see twice.
    pub(crate) fn rewrites_are_safe(&self) -> bool {
        self.bump.rewrite.iter().all(|&p| self.rewrite_is_safe(p))
    }

    /// Whether partition `p`'s in-flight batches may be renumbered now: none is on the
    /// wire, and none may be in the log under its current stamp. In stamp order, a batch
    /// the broker refused proves the ones after it absent too (the broker accepts only
    /// the next sequence), so only the batches before the first refused one matter.
    fn rewrite_is_safe(&self, p: u32) -> bool {
        let part = &self.acc[p];
        if !part.on_wire.is_empty() {
            return false;
        }
        for &id in part.seq.inflight() {
            match self.batches.get(id).map(|b| b.fate) {
                Some(StampFate::Unknown) => return false,
                Some(_) => return true,
                None => {}
            }
        }
        true
    }

    /// Java's `startSequencesAtBeginning` for every partition awaiting a rewrite: its
    /// in-flight batches (all back in its queue) are renumbered from 0 under `identity`,
    /// which becomes the producer's, in their order, and marked reopened. Only reached
    /// through [`Producer::rewrites_are_safe`].
    fn apply_rewrites(&mut self, identity: ProducerIdAndEpoch) {
        debug_assert!(self.rewrites_are_safe(), "unsafe rewrite");
        self.identity.bumped(identity);
        let global = identity;
        let transactional = self.config.is_transactional();
        for p in core::mem::take(&mut self.bump.rewrite) {
            let entry = &mut self.acc[p].seq;
            let mut seq = Sequence::ZERO;
            for &id in entry.inflight() {
                let b = self.batches.get_mut(id).expect("in-flight batch is live");
                debug_assert!(b.on_wire.is_none(), "rewrite of a batch on the wire");
                b.stamp = Some(crate::batch::Stamp {
                    id: global,
                    base_sequence: seq,
                });
                b.reopened = true;
                b.fate = StampFate::Unsent;
                seq = seq.add(b.record_count);
                b.write_stamp(transactional);
            }
            if entry.renumbered(global, seq) {
                self.bump.unresolved.retain(|&u| u != p);
            }
        }
        self.stats.epoch_bumps += 1;
    }
}
