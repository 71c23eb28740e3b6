//! A partition's sequencing entry (Java's `TxnPartitionEntry`): the identity its
//! sequences belong to, the next sequence to hand out, what the leader acknowledged,
//! the batches stamped and not yet finished, an unresolved sequence and a running probe.
//!
//! Its fields change only through the methods here, each named for the event that
//! changes them, so every rule about a partition's sequences has one place. The batches
//! themselves (their stamps and fates) live in the `BatchSlab`: the checks that need
//! them, and those against the producer's bump lists, stay with the producer
//! (`invariants.rs`); [`SequenceEntry::assert_invariants`] checks the rest.

use alloc::collections::VecDeque;

use crate::types::{BatchId, ProducerIdAndEpoch, Sequence, Timestamp, TopicPartition};

/// One partition's sequencing state (see the module documentation).
#[derive(Debug)]
pub(crate) struct SequenceEntry {
    /// The identity this partition's sequences belong to (Java's per-partition
    /// `producerIdAndEpoch`). Stale when it differs from the producer's; a stale
    /// partition restarts at sequence 0 once nothing is in flight (KAFKA-12152).
    producer_id: ProducerIdAndEpoch,
    /// The base sequence the next new batch gets.
    next_sequence: Sequence,
    /// The last sequence of the highest acknowledged batch, under `producer_id`.
    last_acked_sequence: Option<Sequence>,
    /// A lower bound of the timestamp the leader keeps in its producer state for this
    /// identity (`ProducerStateEntry.lastTimestamp`, the max timestamp of the newest
    /// appended batch): the creation time of the newest batch acknowledged under
    /// `producer_id`. `None` without such an ack. The leader forgets the producer once
    /// `producer.id.expiration.ms` has passed since then
    /// (`ProducerStateManager.removeExpiredProducers`); see `Producer::state_held`.
    /// Invariant: `Some` exactly when `last_acked_sequence` is (reset with it).
    state_refreshed: Option<Timestamp>,
    /// The highest acknowledged offset; not reset by epoch bumps. Tells retention
    /// (log start moved past it) apart from lost state for UNKNOWN_PRODUCER_ID.
    last_acked_offset: Option<i64>,
    /// Every sequenced batch not yet completed or failed, in stamp order (which is
    /// sequence order within one identity, and robust to the i32 wrap). Invariant
    /// (checked by the producer, which sees the stamps): consecutive entries of one
    /// identity have contiguous sequences.
    inflight: VecDeque<BatchId>,
    /// Every batch stamped since the oldest unfinished one, finished or not, in stamp
    /// order. Its length bounds how many batches can be appended after the oldest
    /// unfinished batch, which must stay inside the broker's five-batch dedup window
    /// until its retry lands. Invariant: its front is `inflight`'s front, and it holds
    /// every batch of `inflight`, in the same order.
    window: VecDeque<BatchId>,
    /// After a batch failed or expired with its outcome unknown: the sequence expected
    /// after it (Java's `partitionsWithUnresolvedSequences`). No new batch is stamped
    /// while set. Invariant (checked by the producer): set exactly when the partition is
    /// on the bump state's unresolved list.
    unresolved: Option<Sequence>,
    /// While the leader answered OUT_OF_ORDER to the next batch although an attempt of
    /// it may be in the log: the one batch resent instead of it, to learn how far the
    /// log got (see `crate::probe`). Invariant: in `inflight`, behind its front (and,
    /// checked by the producer, under the front's identity); the partition sends
    /// nothing else meanwhile.
    probe: Option<BatchId>,
}

impl SequenceEntry {
    /// A partition never stamped: no identity, sequence 0, nothing acknowledged.
    pub(crate) fn new() -> Self {
        Self {
            producer_id: ProducerIdAndEpoch::NONE,
            next_sequence: Sequence::ZERO,
            last_acked_sequence: None,
            state_refreshed: None,
            last_acked_offset: None,
            inflight: VecDeque::new(),
            window: VecDeque::new(),
            unresolved: None,
            probe: None,
        }
    }

    /// The identity the partition's sequences belong to.
    pub(crate) fn producer_id(&self) -> ProducerIdAndEpoch {
        self.producer_id
    }

    /// The base sequence the next new batch gets.
    pub(crate) fn next_sequence(&self) -> Sequence {
        self.next_sequence
    }

    /// The last sequence of the highest batch acknowledged under the identity.
    pub(crate) fn last_acked_sequence(&self) -> Option<Sequence> {
        self.last_acked_sequence
    }

    /// The creation time of the newest batch acknowledged under the identity.
    pub(crate) fn state_refreshed(&self) -> Option<Timestamp> {
        self.state_refreshed
    }

    /// The highest acknowledged offset (under any identity).
    pub(crate) fn last_acked_offset(&self) -> Option<i64> {
        self.last_acked_offset
    }

    /// The sequenced batches not yet finished, in stamp order.
    pub(crate) fn inflight(&self) -> &VecDeque<BatchId> {
        &self.inflight
    }

    /// Where batch `id` stands in stamp order among the unfinished ones, if it is one.
    pub(crate) fn rank(&self, id: BatchId) -> Option<usize> {
        self.inflight.iter().position(|&b| b == id)
    }

    /// How many batches were stamped since the oldest unfinished one, finished or not.
    pub(crate) fn window_len(&self) -> usize {
        self.window.len()
    }

    /// The sequence expected after a batch whose outcome is unknown, while unresolved.
    pub(crate) fn unresolved(&self) -> Option<Sequence> {
        self.unresolved
    }

    /// The batch a running probe resends (see `crate::probe`).
    pub(crate) fn probe(&self) -> Option<BatchId> {
        self.probe
    }

    /// Java's `isNextSequence`: `seq` directly follows the last acknowledged sequence.
    /// Wrap-aware (a deliberate deviation: Java compares plain ints).
    pub(crate) fn is_next_sequence(&self, seq: Sequence) -> bool {
        match self.last_acked_sequence {
            None => seq == Sequence::ZERO,
            Some(last) => last.add(1) == seq,
        }
    }

    /// Java's `maybeUpdateProducerIdAndEpoch` and `resetSequenceNumbers`: the partition's
    /// sequences start again at 0 under `identity`, and the acks under the old one are
    /// forgotten. Only once nothing is in flight (the callers check: batches still in
    /// flight keep their old numbering until they finish).
    pub(crate) fn restart_at_zero(&mut self, identity: ProducerIdAndEpoch) {
        debug_assert!(self.inflight.is_empty(), "restart with batches in flight");
        self.producer_id = identity;
        self.next_sequence = Sequence::ZERO;
        self.reset_acked();
    }

    /// Stamps new batch `id` of `count` records: returns its base sequence and puts it
    /// behind the others in flight.
    pub(crate) fn stamp_next(&mut self, id: BatchId, count: i32) -> Sequence {
        let base = self.next_sequence;
        self.next_sequence = base.add(count);
        self.inflight.push_back(id);
        self.window.push_back(id);
        base
    }

    /// An epoch bump renumbered every batch in flight from 0 under `identity`, in their
    /// order (Java's `startSequencesAtBeginning`); `next` follows the last of them. The
    /// acks under the old identity are forgotten and the partition is no longer
    /// unresolved: returns whether it was, for the producer's unresolved list.
    pub(crate) fn renumbered(&mut self, identity: ProducerIdAndEpoch, next: Sequence) -> bool {
        self.producer_id = identity;
        self.next_sequence = next;
        self.reset_acked();
        self.unresolved.take().is_some()
    }

    /// A batch whose stamp under `identity` never reached the wire failed, and the
    /// batches after it moved down by its `count` records (Java's
    /// `adjustSequencesDueToFailedBatch`): so does the next sequence, if the partition
    /// still stamps under that identity.
    pub(crate) fn release_unsent(&mut self, identity: ProducerIdAndEpoch, count: i32) {
        if self.producer_id == identity {
            self.next_sequence = self.next_sequence.sub(count);
        }
    }

    /// Java's `handleCompletedBatch`, for the sequences: a batch stamped under
    /// `identity`, ending at sequence `last` and created at `created`, was acknowledged.
    /// Only acks under the partition's current identity move its sequence window (a
    /// late ack from before a rewrite would otherwise corrupt the new numbering); the
    /// leader's state for the identity is then at least as recent as the batch.
    pub(crate) fn record_ack(
        &mut self,
        identity: ProducerIdAndEpoch,
        last: Sequence,
        created: Timestamp,
    ) {
        if identity != self.producer_id {
            return;
        }
        self.update_last_acked_sequence(last);
        if self.state_refreshed.is_none_or(|t| created > t) {
            self.state_refreshed = Some(created);
        }
    }

    /// Java's `updateLastAckedOffset`: keeps the highest.
    pub(crate) fn record_offset(&mut self, offset: i64) {
        if self.last_acked_offset.is_none_or(|cur| offset > cur) {
            self.last_acked_offset = Some(offset);
        }
    }

    /// Batch `id` finished (acknowledged, failed or expired): it leaves the batches in
    /// flight, and the window lets go of what finished before the oldest unfinished.
    pub(crate) fn finish(&mut self, id: BatchId) {
        if let Some(pos) = self.rank(id) {
            self.inflight.remove(pos);
        }
        self.trim_window();
        // A probe ends with its target, or once that is the first batch in flight (its
        // ordinary resend is then the same question).
        if self.probe == Some(id) || self.probe.as_ref() == self.inflight.front() {
            self.probe = None;
        }
    }

    /// Batch `id` was split into `pieces`, which take its place in stamp order.
    pub(crate) fn replace_split(&mut self, id: BatchId, pieces: &[BatchId]) {
        // A probe whose target was refused as too large learned nothing: it ends, and
        // the first batch's next refusal starts a new one if one is still needed.
        if self.probe == Some(id) {
            self.probe = None;
        }
        for list in [&mut self.inflight, &mut self.window] {
            if let Some(pos) = list.iter().position(|&x| x == id) {
                list.remove(pos);
                for (k, &piece) in pieces.iter().enumerate() {
                    list.insert(pos + k, piece);
                }
            }
        }
    }

    /// Every batch of the partition was reported (fatal error or forced close):
    /// nothing is in flight, unresolved or probed any more. The identity, the next
    /// sequence and the acks stay.
    pub(crate) fn forget_batches(&mut self) {
        self.inflight.clear();
        self.window.clear();
        self.unresolved = None;
        self.probe = None;
    }

    /// Java's `markSequenceUnresolved`: remember the sequence expected after a batch
    /// whose outcome is unknown (the highest, if one is already remembered).
    pub(crate) fn mark_unresolved(&mut self, expected_after: Sequence) {
        self.unresolved = Some(match self.unresolved {
            Some(cur) if seq_newer(cur, expected_after) => cur,
            _ => expected_after,
        });
    }

    /// Java's `maybeResolveSequences`, once nothing is in flight: the partition is no
    /// longer unresolved. Returns whether the lost batch is known to have landed (the
    /// last ack is the last sequence handed out), or no longer matters (the partition is
    /// stale under the producer's `current` identity, and restarts at 0 anyway); when
    /// false, only a new epoch makes the next sequence safe.
    pub(crate) fn resolve(&mut self, current: ProducerIdAndEpoch) -> bool {
        self.unresolved = None;
        let stale = self.producer_id != current;
        stale || self.is_next_sequence(self.next_sequence)
    }

    /// Starts a probe, or moves it to a lower candidate: `target` is resent alone.
    pub(crate) fn begin_probe(&mut self, target: BatchId) {
        self.probe = Some(target);
    }

    /// Ends the probe, if one runs.
    pub(crate) fn end_probe(&mut self) {
        self.probe = None;
    }

    /// Checks the invariants documented on the fields that need nothing but the entry;
    /// `tp` names the partition in the message.
    pub(crate) fn assert_invariants(&self, tp: &TopicPartition) {
        // The state the leader holds for the identity is known only from its acks.
        assert_eq!(
            self.state_refreshed.is_some(),
            self.last_acked_sequence.is_some(),
            "{tp}: state_refreshed without an ack under the identity, or the reverse"
        );
        // The window starts at the oldest unfinished batch and holds every in-flight
        // batch, in order.
        assert_eq!(
            self.window.front(),
            self.inflight.front(),
            "{tp}: window front"
        );
        let mut it = self.window.iter();
        for b in &self.inflight {
            assert!(
                it.any(|w| w == b),
                "{tp}: in-flight batch missing from the window"
            );
        }
        if let Some(target) = self.probe {
            assert!(
                self.inflight.iter().skip(1).any(|&b| b == target),
                "{tp}: probe target not in flight behind the first"
            );
        }
    }

    /// Java's `maybeUpdateLastAckedSequence`: keeps the highest. Acks of one partition
    /// arrive at most a few batches apart, so "higher" is decided modulo the wrap.
    fn update_last_acked_sequence(&mut self, last: Sequence) {
        let newer = match self.last_acked_sequence {
            None => true,
            Some(cur) => seq_newer(last, cur),
        };
        if newer {
            self.last_acked_sequence = Some(last);
        }
    }

    /// Forgets the acks under the partition's identity (a new identity starts).
    fn reset_acked(&mut self) {
        self.last_acked_sequence = None;
        self.state_refreshed = None;
    }

    /// Drops finished batches from the front of `window`.
    fn trim_window(&mut self) {
        while let Some(&front) = self.window.front() {
            if Some(&front) == self.inflight.front() {
                break;
            }
            self.window.pop_front();
        }
    }
}

/// Whether sequence `a` is after `b`, modulo Kafka's wrap at `i32::MAX`: the forward
/// distance from `b` to `a` is less than half the sequence space.
pub(crate) fn seq_newer(a: Sequence, b: Sequence) -> bool {
    let space = i64::from(i32::MAX) + 1;
    let d = (i64::from(a.0) - i64::from(b.0)).rem_euclid(space);
    d != 0 && d < space / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_newer_handles_wrap() {
        assert!(seq_newer(Sequence(5), Sequence(4)));
        assert!(!seq_newer(Sequence(4), Sequence(5)));
        assert!(!seq_newer(Sequence(4), Sequence(4)));
        assert!(seq_newer(Sequence(0), Sequence(i32::MAX)));
        assert!(seq_newer(Sequence(3), Sequence(i32::MAX - 2)));
        assert!(!seq_newer(Sequence(i32::MAX), Sequence(0)));
    }

    #[test]
    fn next_sequence_after_wrap() {
        let mut s = SequenceEntry::new();
        assert!(s.is_next_sequence(Sequence(0)));
        s.update_last_acked_sequence(Sequence(i32::MAX));
        assert!(s.is_next_sequence(Sequence(0)));
        s.update_last_acked_sequence(Sequence(4));
        assert_eq!(s.last_acked_sequence(), Some(Sequence(4)));
        s.update_last_acked_sequence(Sequence(2));
        assert_eq!(s.last_acked_sequence(), Some(Sequence(4)), "max rule");
    }
}
