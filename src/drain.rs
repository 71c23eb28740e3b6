//! `poll_request`: everything the producer wants sent, in Java's Sender order
//! (resolve unresolved sequences, bump the epoch, get a producer id, then drain), and
//! the drain itself (Java's `RecordAccumulator.drain` with the idempotence gates).

use crate::txn_ops::TxnStep;
use alloc::vec::Vec;

use crate::batch::{Stamp, StampFate};
use crate::io::{InitProducerIdRequest, MetadataRequest, ProduceBatch, ProduceRequest, Request};
use crate::producer::{IdState, Lifecycle, Producer};
use crate::requests::OutstandingKind;
use crate::types::{BatchId, NodeId, Timestamp, Topic};

/// Why a partition's head batch cannot go now. Only used to decide; never surfaced.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// The head batch may be drained to this node.
    Ready(NodeId),
    NotReady,
}

impl Producer {
    /// The next request the driver must send, if any, counted as written at once: its
    /// `request.timeout.ms` starts now, and an `acks=0` request's records are delivered
    /// now. For a driver that writes each request before its next input; one that may
    /// hold a request back (behind its connection's setup) uses
    /// [`Producer::poll_request_unwritten`] instead. Stamping happens here: a batch
    /// gets its (producer id, epoch, sequence) when it is first drained.
    ///
    /// Call it until it returns `None` after every input and application call.
    pub fn poll_request(&mut self, now: Timestamp) -> Option<Request> {
        let request = self.poll_request_unwritten(now)?;
        if let Some(id) = request.id() {
            let written = self.handle_request_written(id, now);
            debug_assert!(written.is_ok(), "a request just handed out: {written:?}");
        }
        Some(request)
    }

    /// The next request the driver must send, if any, not yet written: the driver
    /// reports its write with [`Producer::handle_request_written`]. Until then no
    /// `request.timeout.ms` runs for it, an `acks=0` request's records are not
    /// delivered, and a failure is [`RequestFailure::NotSent`](crate::RequestFailure::NotSent),
    /// which costs its batches no attempt (Java drains only for nodes whose connection
    /// `NetworkClient.ready` accepts, and times a request from its send). Stamping
    /// happens here, as in [`Producer::poll_request`].
    ///
    /// Call it until it returns `None` after every input and application call.
    pub fn poll_request_unwritten(&mut self, now: Timestamp) -> Option<Request> {
        self.observe(now);
        if let Some(node) = self.requests.pop_close() {
            return Some(Request::CloseConnection { node });
        }
        if self.fatal.is_some() {
            return None;
        }
        if self.flushing && self.is_idle() && self.lifecycle == Lifecycle::Open {
            self.flushing = false;
        }
        self.maybe_resolve_sequences();
        match self.poll_transactional(now) {
            TxnStep::Send(r) => return Some(r),
            TxnStep::HoldProduce => return None,
            TxnStep::Nothing => {}
        }
        self.maybe_apply_epoch_bump();
        if let Some(r) = self.maybe_request_producer_id() {
            return Some(r);
        }
        if let Some(r) = self.maybe_request_metadata() {
            return Some(r);
        }
        self.drain_one_request()
    }

    fn maybe_request_producer_id(&mut self) -> Option<Request> {
        if !self.identity.may_request(self.now) {
            return None;
        }
        let id = self.next_request_id();
        self.identity.requested(id);
        self.requests.push(id, OutstandingKind::InitProducerId);
        Some(Request::InitProducerId(InitProducerIdRequest {
            id,
            node: None,
            transactional_id: None,
            transaction_timeout: self.config.transaction_timeout(),
            current: crate::types::ProducerIdAndEpoch::NONE,
        }))
    }

    fn maybe_request_metadata(&mut self) -> Option<Request> {
        if self.requests.metadata_in_flight().is_some() || self.metadata_retry.waits_at(self.now) {
            return None;
        }
        let mut topics: Vec<Topic> = Vec::new();
        for &p in self.acc.pending() {
            let part = &self.acc[p];
            if part.leader.is_none() && !topics.contains(&part.tp.topic) {
                topics.push(part.tp.topic.clone());
            }
        }
        if topics.is_empty() {
            return None;
        }
        topics.sort();
        let id = self.next_request_id();
        self.stats.metadata_requests += 1;
        self.requests.push(id, OutstandingKind::Metadata);
        Some(Request::Metadata(MetadataRequest { id, topics }))
    }

    fn node_has_capacity(&self, node: NodeId) -> bool {
        let max = self.config.max_in_flight_requests_per_connection();
        self.requests.has_capacity(node, max, self.now)
    }

    /// The node partition `p` makes ready, as Java's `RecordAccumulator.ready` decides
    /// (`partitionReady` / `batchReady`): its leader is known and can take a request,
    /// and its head batch is not backing off and is sendable (closed, i.e. full or
    /// followed by another batch, or lingered, or a flush runs). The sequencing gates
    /// are not looked at: in Java they only decide, per partition, what the drain of a
    /// ready node takes, so a gated full batch still lets the node's lingering batches go.
    /// One exception: with `max.in.flight.requests.per.connection` 1 Java's Sender mutes
    /// every partition it drains until that batch is answered (`Sender.sendProducerData`,
    /// `RecordAccumulator.mutePartition`), and `batchReady` skips a muted partition, so
    /// a partition with a batch on the wire makes no node ready.
    fn ready_node(&self, p: u32) -> Option<NodeId> {
        let part = &self.acc[p];
        let node = part.leader?;
        if !self.node_has_capacity(node) {
            return None;
        }
        let muted =
            self.config.max_in_flight_requests_per_connection() == 1 && !part.on_wire.is_empty();
        if muted {
            return None;
        }
        if part.seq.probe().is_some() && part.next_queued().is_none() {
            return None;
        }
        match part.next_queued() {
            Some(head) => {
                let b = self.batches.get(head)?;
                let backing_off =
                    b.retry.waits_at(self.now) && b.last_leader_epoch == Some(part.leader_epoch);
                (!backing_off).then_some(node)
            }
            None => {
                let open = part.open.as_ref()?;
                let lingered = open.created + self.config.linger() <= self.now;
                let full = open.builder.is_full(open.write_limit);
                (lingered || full || self.flushing).then_some(node)
            }
        }
    }

    /// Whether partition `p`'s head batch may be drained now, and to which node. The
    /// gates are Java's `shouldStopDrainBatchesForPartition` plus backoff; not linger:
    /// once its node is ready ([`Producer::ready_node`]), a lingering batch goes too
    /// (`RecordAccumulator.drainBatchesForOneNode` takes the first batch of every
    /// partition of a ready node).
    fn head(&self, p: u32) -> Head {
        if !self.txn_allows_drain(p) {
            return Head::NotReady;
        }
        let part = &self.acc[p];
        if self.bump.awaiting(p) && !self.may_resolve_before_rewrite(p) {
            return Head::NotReady;
        }
        let Some(node) = part.leader else {
            return Head::NotReady;
        };
        if !self.node_has_capacity(node) {
            return Head::NotReady;
        }
        if part.seq.probe().is_some() {
            // A probe runs: its target goes alone, unchanged (`crate::probe`).
            let Some(target) = part.next_queued() else {
                return Head::NotReady;
            };
            let Some(b) = self.batches.get(target) else {
                return Head::NotReady;
            };
            let leader_moved = b.last_leader_epoch != Some(part.leader_epoch);
            if !part.on_wire.is_empty() || (b.retry.waits_at(self.now) && !leader_moved) {
                return Head::NotReady;
            }
            return Head::Ready(node);
        }
        let idempotent = self.is_idempotent();
        let max_in_flight = self.config.max_in_flight_requests_per_connection() as usize;
        let new_batch_allowed = || {
            if part.on_wire.len() >= max_in_flight {
                return false;
            }
            if !idempotent {
                return true;
            }
            // At most max.in.flight (<= 5) batches stamped since the oldest unfinished
            // one, acknowledged or not: then at most four batches are appended after it,
            // and its retry always finds it in the broker's five-batch dedup window
            // instead of drawing OUT_OF_ORDER.
            if part.seq.window_len() >= max_in_flight {
                return false;
            }
            // Don't mix epochs: old-epoch batches must finish before new-epoch ones.
            let stale =
                part.seq.producer_id() != self.identity.id() && !part.seq.inflight().is_empty();
            // While the leader may hold no state for the producer (before the first ack
            // under the partition's identity, or after an idle gap that may have let it
            // expire), one batch at a time: such a broker accepts any sequence
            // (KIP-360), so a pipelined later batch could land before a refused earlier
            // one, and a refusal would no longer prove the later batches absent.
            let state_unknown = !self.state_held(p) && !part.on_wire.is_empty();
            !stale && !state_unknown && part.seq.unresolved().is_none()
        };
        match part.queue.front() {
            Some(&head) => {
                let Some(b) = self.batches.get(head) else {
                    return Head::NotReady;
                };
                let leader_moved = b.last_leader_epoch != Some(part.leader_epoch);
                if b.retry.waits_at(self.now) && !leader_moved {
                    return Head::NotReady;
                }
                if b.stamp.is_some() {
                    // A resend (only an idempotent producer stamps batches, so the
                    // in-flight window bounds it already): only the lowest outstanding
                    // sequence may go.
                    if part.seq.inflight().front() != Some(&head) {
                        return Head::NotReady;
                    }
                } else if !new_batch_allowed() {
                    return Head::NotReady;
                }
                Head::Ready(node)
            }
            None => {
                if part.open.is_none() || !new_batch_allowed() {
                    return Head::NotReady;
                }
                Head::Ready(node)
            }
        }
    }

    /// Whether partition `p`'s leader surely still holds the producer's state for the
    /// whole life of a batch stamped now: an append under the partition's identity was
    /// acknowledged, and `kacrab.producer.id.expiration.ms` does not run out, counted
    /// from that batch's creation (a lower bound of the timestamp the broker measures
    /// idleness from, `ProducerStateManager.isProducerExpired`), before a batch
    /// stamped now can no longer be resent (`delivery.timeout.ms`, plus
    /// `request.timeout.ms` for its last attempt to arrive). Assumes record timestamps
    /// are not older than the time they are sent and the brokers' clocks do not run
    /// ahead of the producer's by more than the configured expiry's margin.
    pub(crate) fn state_held(&self, p: u32) -> bool {
        let part = &self.acc[p];
        let lifetime = self.config.delivery_timeout() + self.config.request_timeout();
        part.seq.last_acked_sequence().is_some()
            && part.seq.state_refreshed().is_some_and(|since| {
                self.now + lifetime < since + self.config.producer_id_expiration()
            })
    }

    /// While a bump waits to renumber partition `p`, one batch may still go: the first in
    /// flight, when an earlier attempt of it may have been appended. Its answer (a
    /// duplicate's ack, or OUT_OF_ORDER proving it absent) is what makes the renumbering
    /// safe.
    fn may_resolve_before_rewrite(&self, p: u32) -> bool {
        let part = &self.acc[p];
        match (part.queue.front(), part.seq.inflight().front()) {
            (Some(head), Some(first)) if head == first => self
                .batches
                .get(*head)
                .is_some_and(|b| b.fate == StampFate::Unknown),
            _ => false,
        }
    }

    /// Builds one Produce request: the node of the first partition in rotation order
    /// that makes its node ready and has a batch to drain there (lingering or not), and
    /// at most one head batch from each partition that node leads, lingering or not
    /// (Java's `RecordAccumulator.drain`), within max.request.size.
    fn drain_one_request(&mut self) -> Option<Request> {
        if self.is_idempotent() && self.identity.state() != IdState::Ready {
            return None;
        }
        let max_size = self.config.max_request_size();
        let target = self.drain_target()?;
        let mut node: Option<NodeId> = None;
        let mut taken: Vec<BatchId> = self.recycled.batch_list();
        let mut size = 0usize;
        let mut first_pos: Option<usize> = None;
        let mut i = 0;
        while i < self.acc.pending().len() {
            let p = self.acc.pending()[i];
            if !self.acc[p].has_queued() {
                self.acc.delist_at(i);
                continue;
            }
            match self.head(p) {
                Head::Ready(n) if n == target => {
                    let head_size = self.head_size(p);
                    if node.is_some() && size + head_size > max_size {
                        i += 1;
                        continue;
                    }
                    node = Some(n);
                    if first_pos.is_none() {
                        // Sized once, on the first batch: an empty poll allocates nothing.
                        taken.reserve_exact(self.acc.pending().len() - i);
                    }
                    first_pos.get_or_insert(i);
                    size += head_size;
                    taken.push(self.take_head(p));
                }
                _ => {}
            }
            i += 1;
        }
        let node = node?;
        // Round robin: next time, start after the first partition served now.
        if let Some(pos) = first_pos {
            self.acc.rotate_after(pos);
        }
        Some(self.send_batches(node, taken))
    }

    /// The node the next request goes to: the first, in rotation order of the
    /// partitions that make it ready ([`Producer::ready_node`]), that leads a partition
    /// whose head batch may be drained now, lingering or not. Allocates nothing; a node
    /// found with nothing drainable is remembered (up to eight) so that many gated
    /// partitions of one node cost one scan.
    fn drain_target(&self) -> Option<NodeId> {
        let mut empty: [Option<NodeId>; 8] = [None; 8];
        let mut empties = 0;
        for &p in self.acc.pending() {
            let Some(n) = self.ready_node(p) else {
                continue;
            };
            if self.head(p) == Head::Ready(n) {
                return Some(n);
            }
            if empty.contains(&Some(n)) {
                continue;
            }
            if self
                .acc
                .pending()
                .iter()
                .any(|&q| self.head(q) == Head::Ready(n))
            {
                return Some(n);
            }
            if empties < empty.len() {
                empty[empties] = Some(n);
                empties += 1;
            }
        }
        None
    }

    fn head_size(&self, p: u32) -> usize {
        let part = &self.acc[p];
        match part.next_queued() {
            Some(id) => self.batches.get(id).map_or(0, |b| b.data.len()),
            None => part.open.as_ref().map_or(0, |o| o.builder.size_in_bytes()),
        }
    }

    /// Takes partition `p`'s head batch off its queue and stamps it if it is new.
    fn take_head(&mut self, p: u32) -> BatchId {
        if self.acc[p].queue.is_empty() {
            self.close_open(p);
        }
        let id = self.acc[p].take_next_queued().expect("head exists");
        let idempotent = self.is_idempotent();
        let global = self.identity.id();
        let transactional = self.config.is_transactional();
        let part = &mut self.acc[p];
        let b = self.batches.get_mut(id).expect("queued batch is live");
        if b.stamp.is_none() && idempotent {
            // Java's maybeUpdateProducerIdAndEpoch: a stale partition with nothing in
            // flight restarts at sequence 0 under the current identity (KAFKA-12152).
            if part.seq.producer_id() != global && part.seq.inflight().is_empty() {
                part.seq.restart_at_zero(global);
            }
            debug_assert_eq!(part.seq.producer_id(), global);
            b.stamp = Some(Stamp {
                id: global,
                base_sequence: part.seq.stamp_next(id, b.record_count),
            });
            b.write_stamp(transactional);
        }
        b.reopened = false;
        if b.fate == StampFate::Unsent {
            b.fate = StampFate::Refused;
        }
        b.last_leader_epoch = Some(part.leader_epoch);
        id
    }

    fn send_batches(&mut self, node: NodeId, taken: Vec<BatchId>) -> Request {
        let id = self.next_request_id();
        let acks = self.config.acks();
        let mut batches = self.recycled.request_list();
        batches.reserve_exact(taken.len());
        for &b in &taken {
            let batch = self.batches.get_mut(b).expect("taken batch is live");
            let data = batch.data.share();
            let p = batch.partition;
            batch.on_wire = Some(id);
            self.acc[p].on_wire.push_back(b);
            batches.push(ProduceBatch {
                partition: self.acc[p].tp.clone(),
                data,
            });
        }
        self.stats.produce_requests += 1;
        self.metrics_drained(node, &taken);
        let ticket = self.requests.reserve_ticket();
        // Outstanding until written even with acks=0: the batches are delivered only
        // once their bytes are (`handle_request_written`), and a connection lost before
        // that fails them as never sent.
        let kind = OutstandingKind::Produce {
            node,
            batches: taken,
        };
        self.requests.push(id, kind);
        Request::Produce(ProduceRequest {
            id,
            node,
            ticket,
            acks,
            timeout: self.config.request_timeout(),
            transactional_id: self.txn.as_ref().map(|t| t.id.clone()),
            transaction_v2: self.txn.as_ref().is_some_and(|t| t.version.is_v2()),
            batches,
        })
    }
}
