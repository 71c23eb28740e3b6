//! `assert_invariants`: every invariant documented on the producer's fields, checked in
//! one place. Property tests and the simulator call it after every step.

use alloc::vec::Vec;

use crate::producer::{IdState, Producer};
use crate::requests::OutstandingKind;
use crate::sequence_entry::seq_newer;
use crate::txn::Queued;
use crate::types::BatchId;

impl Producer {
    /// Checks every internal invariant and panics with a description of the first one
    /// violated. Meant for tests and fuzzing (it walks all state, so it is not cheap);
    /// a panic here is a bug in this crate, never the caller's or a broker's fault.
    pub fn assert_invariants(&self) {
        // The partition table and drain list; the timer table against the scan.
        self.acc.assert_invariants();
        self.assert_timer_invariants();
        self.bump.assert_invariants();
        self.identity.assert_invariants();
        self.recycled.assert_invariants();
        if let IdState::Requested(id) = self.identity.state() {
            assert!(
                self.requests.contains(id),
                "InitProducerId {id:?} not outstanding"
            );
        }

        // Outstanding requests: their owner's invariants, then every produce batch on
        // the wire exactly once.
        self.requests
            .assert_invariants(self.config.max_in_flight_requests_per_connection());
        let mut wired: Vec<BatchId> = Vec::new();
        for o in self.requests.iter() {
            if let OutstandingKind::Produce { batches, .. } = &o.kind {
                let mut parts = Vec::new();
                for &b in batches {
                    let batch = self
                        .batches
                        .get(b)
                        .expect("batch of an outstanding request is live");
                    assert_eq!(
                        batch.on_wire,
                        Some(o.id),
                        "batch on_wire does not name its request"
                    );
                    assert!(
                        !parts.contains(&batch.partition),
                        "two batches of one partition in a request"
                    );
                    parts.push(batch.partition);
                    wired.push(b);
                }
            }
        }

        let mut records_unreported = 0u64;
        let mut bytes_charged = 0usize;
        for (i, part) in self.acc.iter().enumerate() {
            let p = i as u32;
            let seq = &part.seq;
            for &b in &part.on_wire {
                assert!(
                    wired.contains(&b),
                    "{}: on_wire batch not in any request",
                    part.tp
                );
            }
            // Queue: live, not done, not on the wire, this partition's; sequenced first in
            // in-flight order.
            let mut last_rank: Option<usize> = None;
            let mut unsequenced_seen = false;
            for &b in &part.queue {
                let batch = self.batches.get(b).expect("queued batch is live");
                assert_eq!(batch.partition, p);
                assert!(!batch.done, "{}: reported batch still queued", part.tp);
                assert!(
                    batch.on_wire.is_none(),
                    "{}: queued batch also on the wire",
                    part.tp
                );
                records_unreported += batch.records.len() as u64;
                bytes_charged += batch.charged;
                match seq.rank(b) {
                    Some(rank) => {
                        assert!(
                            !unsequenced_seen,
                            "{}: sequenced batch behind a new one",
                            part.tp
                        );
                        assert!(
                            last_rank.is_none_or(|r| r < rank),
                            "{}: queue out of sequence order",
                            part.tp
                        );
                        last_rank = Some(rank);
                    }
                    None => {
                        if self.is_idempotent() {
                            assert!(
                                batch.stamp.is_none(),
                                "{}: stamped batch not in flight",
                                part.tp
                            );
                        }
                        unsequenced_seen = true;
                    }
                }
            }
            if let Some(open) = &part.open {
                records_unreported += open.records.len() as u64;
                bytes_charged += open.charged;
                assert_eq!(open.records.len() as i32, open.builder.record_count());
            }
            for &b in &part.on_wire {
                let batch = self.batches.get(b).expect("on-wire batch is live");
                if !batch.done {
                    records_unreported += batch.records.len() as u64;
                    bytes_charged += batch.charged;
                }
            }
            // In flight: stamped, not done; contiguous sequences within one identity,
            // ending at next_sequence for the partition's identity.
            let mut prev: Option<(crate::batch::Stamp, i32)> = None;
            for &b in seq.inflight() {
                let batch = self.batches.get(b).expect("in-flight batch is live");
                assert!(!batch.done, "{}: reported batch still in flight", part.tp);
                assert_eq!(batch.records.len() as i32, batch.record_count);
                let stamp = batch.stamp.expect("in-flight batch is stamped");
                if let Some((ps, pc)) = prev {
                    if ps.id == stamp.id {
                        // Acked batches leave gaps; what remains must ascend without overlap.
                        let prev_end = ps.base_sequence.add(pc);
                        assert!(
                            prev_end == stamp.base_sequence
                                || seq_newer(stamp.base_sequence, prev_end),
                            "{}: overlapping or descending in-flight sequences",
                            part.tp
                        );
                    } else {
                        assert!(
                            ps.id < stamp.id || ps.id.id != stamp.id.id,
                            "{}: identities out of order",
                            part.tp
                        );
                    }
                }
                prev = Some((stamp, batch.record_count));
            }
            if let Some((s, c)) = prev {
                if s.id == seq.producer_id() && !self.bump.awaiting(p) {
                    let end = s.base_sequence.add(c);
                    assert!(
                        end == seq.next_sequence() || seq_newer(seq.next_sequence(), end),
                        "{}: in-flight batch ends past next_sequence",
                        part.tp
                    );
                }
            }
            assert_eq!(
                seq.unresolved().is_some(),
                self.bump.is_unresolved(p),
                "{}: unresolved list out of sync",
                part.tp
            );
            // A probe's target (in flight behind the first: the entry checks that) is
            // under the first's identity; no bump waits to renumber the partition
            // meanwhile.
            if let Some(target) = seq.probe() {
                let identity = |b: Option<&BatchId>| {
                    b.and_then(|&b| self.batches.get(b))
                        .and_then(|b| b.stamp)
                        .map(|s| s.id)
                };
                assert_eq!(
                    identity(Some(&target)),
                    identity(seq.inflight().front()),
                    "{}: probe across identities",
                    part.tp
                );
                assert!(
                    !self.bump.awaiting(p),
                    "{}: probe while a bump waits",
                    part.tp
                );
                assert!(self.txn.is_none(), "{}: transactional probe", part.tp);
            }
        }
        assert_eq!(
            records_unreported,
            self.acc.unreported_records(),
            "unreported record count"
        );
        // buffer.memory: what the unreported records were charged, no more, no less.
        assert_eq!(
            bytes_charged,
            self.acc.buffered_bytes(),
            "buffered bytes differ from the charges of unreported batches"
        );
        self.assert_txn_invariants();
        if self.fatal.is_some() {
            assert_eq!(
                self.acc.unreported_records(),
                0,
                "fatal producer still holds records"
            );
        }
    }

    /// The transactional state's invariants, and those tying it to the rest.
    fn assert_txn_invariants(&self) {
        let transactional = self
            .requests
            .iter()
            .filter(|o| matches!(o.kind, OutstandingKind::Transactional))
            .map(|o| o.id)
            .collect::<Vec<_>>();
        let Some(t) = &self.txn else {
            assert!(
                transactional.is_empty(),
                "transactional request without a txn"
            );
            return;
        };
        t.assert_invariants();
        // The one transactional request on the wire is the one outstanding.
        let in_flight = t.queue.in_flight().map(|(id, _)| *id);
        assert_eq!(
            transactional,
            in_flight.into_iter().collect::<Vec<_>>(),
            "transactional request in flight vs outstanding"
        );
        // The producer id is asked for by the transactional InitProducerId only.
        if let IdState::Requested(id) = self.identity.state() {
            assert!(
                matches!(t.queue.in_flight(), Some((r, Queued::InitProducerId(_))) if *r == id),
                "producer id requested outside the transactional InitProducerId"
            );
        }
        assert_ne!(
            self.identity.state(),
            IdState::Disabled,
            "transactional but not idempotent"
        );
    }
}
