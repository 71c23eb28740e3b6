//! Finding out how far the log got when a leader forgot the producer's older batches.
//!
//! A leader that reloaded its producer state from a snapshot (a restart, or a truncation
//! after an earlier rebuild: `UnifiedLog.rebuildProducerState`) remembers only each
//! producer's newest batch (`ProducerStateManager.writeSnapshot`), not the last five. The
//! retry of an older batch that is in the log is then answered
//! OUT_OF_ORDER_SEQUENCE_NUMBER (`ProducerAppendInfo.checkSequence`), and no retry
//! under its stamp can succeed. Renumbering it could write it twice, so on its own that
//! answer leaves the batch failed as possibly written: records lost to a fault the
//! cluster healed from.
//!
//! But under one (producer id, epoch) a leader that holds state for the producer appends
//! only the next sequence, so a batch in the log proves every batch stamped before it
//! under the same identity is there too. When the next batch is refused that way while
//! later batches may also be in the log, the partition resends the highest of those
//! alone, unchanged: the leader's newest batch is always in its dedup window, so if it
//! is that one the answer is a duplicate's ack, and if the log ends just before it the
//! batch is appended in order. Either way it is acknowledged, and every batch before it
//! is acknowledged with it (its offset unknown, as for a duplicate). An OUT_OF_ORDER
//! answer to it means the log ends lower: the next lower candidate is tried. When none
//! is left, the leader holds less than what was acknowledged (data Kafka lost, an
//! unclean election): the first batch fails as possibly written, as before.
//!
//! The probe runs only while the leader surely holds the producer's state
//! ([`Producer::state_held`]): a leader without it accepts any sequence (KIP-360), and
//! an append there would prove nothing. Transactional producers never probe: a failed
//! batch aborts their transaction anyway.

use crate::batch::StampFate;
use crate::error::KafkaError;
use crate::producer::Producer;
use crate::sequence_entry::seq_newer;
use crate::types::BatchId;

impl Producer {
    /// The next batch of partition `p` (the first in flight) was refused with
    /// OUT_OF_ORDER although it may be in the log. Starts a probe and returns true when
    /// a later batch may be in the log too; false when nothing can settle the batch.
    pub(crate) fn start_probe(&mut self, p: u32) -> bool {
        if self.txn.is_some() || self.bump.awaiting(p) || !self.state_held(p) {
            return false;
        }
        let Some(target) = self.probe_candidate(p, None) else {
            return false;
        };
        self.acc[p].seq.begin_probe(target);
        self.stats.probes += 1;
        true
    }

    /// The probe's target `id` was refused with OUT_OF_ORDER: the log ends below it.
    /// Moves the probe to the next lower candidate; when none is left, the first batch
    /// in flight fails as possibly written (which asks for a bump), and the probe ends.
    pub(crate) fn probe_refused(&mut self, p: u32, id: BatchId) {
        if let Some(lower) = self.probe_candidate(p, Some(id)) {
            self.acc[p].seq.begin_probe(lower);
            return;
        }
        self.acc[p].seq.end_probe();
        let Some(&first) = self.acc[p].seq.inflight().front() else {
            return;
        };
        let part = &mut self.acc[p];
        if let Some(at) = part.queue.iter().position(|&q| q == first) {
            part.queue.remove(at);
        }
        self.fail_answered(first, KafkaError::OutOfOrderSequenceNumber, None);
    }

    /// Batch `id` of a partition that runs a probe is in the log (acknowledged, or
    /// recognised as a duplicate): so is every batch stamped before it under its
    /// identity. Acknowledges those first, in stamp order, their offsets unknown, and
    /// ends the probe; the caller then completes `id` itself. Usually `id` is the
    /// probe's target; it can be a batch whose earlier attempt was still out when the
    /// probe began. No-op without a probe, or for the first batch in flight.
    pub(crate) fn settle_probe(&mut self, id: BatchId) {
        let Some(b) = self.batches.get(id) else {
            return;
        };
        let p = b.partition;
        let identity = b.stamp.map(|s| s.id);
        let part = &self.acc[p];
        let inflight = part.seq.inflight();
        let first = inflight.front().and_then(|&f| self.batches.get(f));
        if part.seq.probe().is_none()
            || inflight.front() == Some(&id)
            || first.and_then(|f| f.stamp).map(|s| s.id) != identity
            || !inflight.contains(&id)
        {
            return;
        }
        self.acc[p].seq.end_probe();
        while let Some(&first) = self.acc[p].seq.inflight().front() {
            if first == id {
                break;
            }
            if self.batches.get(first).is_none() {
                break;
            }
            // An attempt of it may still be out (the probe began before it landed):
            // its late answer finds the batch reported.
            let part = &mut self.acc[p];
            if let Some(at) = part.queue.iter().position(|&q| q == first) {
                part.queue.remove(at);
            }
            self.record_ack(first, -1);
            self.report(first, Ok(None));
        }
    }

    /// Whether batch `id` is proven in the log by an acknowledgement that already came:
    /// the partition's last acknowledged sequence, under the batch's own identity, is at
    /// or past the batch's last one. That later batch was stamped while `id` was on the
    /// wire, so while the leader surely held the producer's state (the drain sends a new
    /// batch behind one on the wire only then), and such a leader appended it only as
    /// the next sequence. Idempotent producers only, as the probe.
    pub(crate) fn written_before_an_ack(&self, id: BatchId) -> bool {
        if self.txn.is_some() || !self.is_idempotent() {
            return false;
        }
        let Some(b) = self.batches.get(id) else {
            return false;
        };
        let (Some(stamp), Some(last)) = (b.stamp, b.last_sequence()) else {
            return false;
        };
        let seq = &self.acc[b.partition].seq;
        stamp.id == seq.producer_id()
            && seq
                .last_acked_sequence()
                .is_some_and(|acked| acked == last || seq_newer(acked, last))
    }

    /// The highest batch in flight on partition `p` after its first and below `below`
    /// (all of them without `below`), under the first's identity, that may be in the
    /// log under its stamp.
    fn probe_candidate(&self, p: u32, below: Option<BatchId>) -> Option<BatchId> {
        let seq = &self.acc[p].seq;
        let first = self.batches.get(*seq.inflight().front()?)?;
        let identity = first.stamp?.id;
        let end = match below {
            Some(b) => seq.rank(b)?,
            None => seq.inflight().len(),
        };
        seq.inflight()
            .iter()
            .take(end)
            .skip(1)
            .rev()
            .copied()
            .find(|&c| {
                self.batches.get(c).is_some_and(|b| {
                    let maybe_in_log = b.fate == StampFate::Unknown || b.on_wire.is_some();
                    maybe_in_log && b.stamp.is_some_and(|s| s.id == identity)
                })
            })
    }
}
