//! The [`Producer`]: application commands, the event and timer outputs, and the state
//! that ties the accumulator, the sequencing entries and the outstanding requests
//! together. Draining lives in `drain.rs`, response handling in `complete.rs`, epoch
//! bumps and unresolved sequences in `sequencing.rs`.

use crate::retry::Retry;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::accumulator::Accumulator;
use crate::backoff::Backoff;
use crate::batch::{BatchData, BatchSlab, ProducerBatch, StampFate, WriteState};
use crate::compression::{CompressionRatio, RatioEstimates};
use crate::config::ProducerConfig;
use crate::error::{DeliveryError, InputError, KafkaError, SendError};
pub(crate) use crate::identity::IdState;
use crate::identity::Identity;
use crate::io::{Event, Metadata, Request};
use crate::metrics::{Samples, Stats};
use crate::outcome::Outcome;
use crate::partition::OpenBatch;
use crate::record::{BatchBuilder, Compression, Crc, Record, RECORD_BATCH_OVERHEAD};
use crate::recycle::Recycled;
use crate::requests::{Outstanding, Requests};
use crate::sequencing::BumpState;
use crate::timers::{PartitionTimers, TimerTable};
use crate::txn::Txn;
use crate::types::{
    BatchId, NodeId, ProducerIdAndEpoch, RecordId, RequestId, Sequence, Timestamp, TopicPartition,
};

/// One partition's sequencing state, as [`Producer::sequence_state`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SequenceState {
    /// The identity the partition's sequences belong to.
    pub producer_id: ProducerIdAndEpoch,
    /// The base sequence the next new batch gets.
    pub next_sequence: Sequence,
    /// The last sequence of the highest acknowledged batch.
    pub last_acked_sequence: Option<Sequence>,
    /// The highest acknowledged offset.
    pub last_acked_offset: Option<i64>,
    /// The base sequence of the oldest unfinished batch.
    pub first_in_flight_sequence: Option<Sequence>,
    /// Batches stamped and not yet finished (on the wire or waiting for a retry).
    pub in_flight_batches: usize,
    /// The sequence expected after a batch whose fate is unknown.
    pub unresolved: Option<Sequence>,
    /// The leader the partition is routed to.
    pub leader: Option<NodeId>,
}

/// The lifecycle the application drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    Open,
    /// `close` was called: no new sends, everything drains without linger.
    Closing,
}

/// A sans-IO Kafka idempotent producer.
///
/// See the [crate documentation](crate) for the driving contract. In short: call the
/// application methods and `handle_*` inputs, then drain [`Producer::poll_request`] and
/// [`Producer::poll_event`] until both return `None`, then sleep until
/// [`Producer::poll_timeout`] or the next input.
#[derive(Debug)]
pub struct Producer {
    pub(crate) config: ProducerConfig,
    pub(crate) backoff: Backoff,
    /// The latest time seen. Invariant: never decreases.
    pub(crate) now: Timestamp,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) flushing: bool,
    /// Set once; every later operation fails with it.
    pub(crate) fatal: Option<KafkaError>,

    /// The partition table, the drain rotation and the accepted-record counts.
    pub(crate) acc: Accumulator,
    pub(crate) batches: BatchSlab,
    /// The per-partition deadlines, indexed for `poll_timeout`.
    timers: TimerTable,
    /// Scratch for moving touched partitions into `timers` without allocating.
    retimed: Vec<u32>,

    /// The producer id and epoch, where getting one stands, and its retry.
    pub(crate) identity: Identity,
    /// The partitions an epoch bump must rewrite, and those with unresolved sequences.
    pub(crate) bump: BumpState,

    /// The requests handed out and not yet answered, and their bookkeeping.
    pub(crate) requests: Requests,
    /// The metadata lookup's failures and backoff (KIP-580).
    pub(crate) metadata_retry: Retry,

    pub(crate) events: VecDeque<Event>,
    pub(crate) stats: Stats,
    /// Metric samples for the session, once enabled (see `metrics.rs`).
    pub(crate) samples: Samples,
    /// The transactional state machine, iff `transactional.id` is set.
    pub(crate) txn: Option<Txn>,
    /// Per-topic compression ratio estimates that size compressed batches.
    pub(crate) ratios: RatioEstimates,
    /// Request lists and batch buffers kept for reuse (bounded, see `recycle.rs`).
    pub(crate) recycled: Recycled,
}

impl Producer {
    /// A producer with this configuration, at time `now`.
    #[must_use]
    pub fn new(config: ProducerConfig, now: Timestamp) -> Self {
        let backoff = Backoff::new(
            config.retry_backoff(),
            config.retry_backoff_max(),
            config.jitter_seed(),
        );
        let txn = config
            .transactional_id()
            .map(|id| Txn::new(id.into(), config.transaction_timeout()));
        let id_state = if txn.is_some() {
            IdState::Transactional
        } else if config.enable_idempotence() {
            IdState::Needed
        } else {
            IdState::Disabled
        };
        let recycled = Recycled::new(config.batch_size(), config.buffer_memory());
        Self {
            config,
            backoff,
            now,
            lifecycle: Lifecycle::Open,
            flushing: false,
            fatal: None,
            acc: Accumulator::default(),
            batches: BatchSlab::default(),
            timers: TimerTable::default(),
            retimed: Vec::new(),
            identity: Identity::new(id_state),
            bump: BumpState::default(),
            requests: Requests::new(),
            metadata_retry: Retry::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            samples: Samples::default(),
            txn,
            ratios: RatioEstimates::default(),
            recycled,
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    /// The producer's current id and epoch ([`ProducerIdAndEpoch::NONE`] before the
    /// first InitProducerId answer).
    #[must_use]
    pub fn producer_id(&self) -> ProducerIdAndEpoch {
        self.identity.id()
    }

    /// A snapshot of one partition's sequencing state (Java's `TxnPartitionEntry`), for
    /// observability and tests. `None` for a partition the producer never saw.
    #[must_use]
    pub fn sequence_state(&self, partition: &TopicPartition) -> Option<SequenceState> {
        let p = self.acc.index_of(partition)?;
        let part = &self.acc[p];
        Some(SequenceState {
            producer_id: part.seq.producer_id(),
            next_sequence: part.seq.next_sequence(),
            last_acked_sequence: part.seq.last_acked_sequence(),
            last_acked_offset: part.seq.last_acked_offset(),
            first_in_flight_sequence: part
                .seq
                .inflight()
                .front()
                .and_then(|&b| self.batches.get(b))
                .and_then(|b| b.stamp)
                .map(|s| s.base_sequence),
            in_flight_batches: part.seq.inflight().len(),
            unresolved: part.seq.unresolved(),
            leader: part.leader,
        })
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The fatal error, once the producer has hit one.
    #[must_use]
    pub fn fatal_error(&self) -> Option<KafkaError> {
        self.fatal
    }

    /// Records accepted by `send` that have no outcome yet.
    #[must_use]
    pub fn unreported_records(&self) -> u64 {
        self.acc.unreported_records()
    }

    /// Batches of `partition` waiting to be sent (closed ones, and the open one being
    /// filled), not counting those on the wire: the queue length Java's
    /// `RecordAccumulator.partitionReady` feeds to adaptive partitioning (KIP-794). `0`
    /// for a partition the producer never saw.
    #[must_use]
    pub fn queued_batches(&self, partition: &TopicPartition) -> usize {
        self.acc.index_of(partition).map_or(0, |p| {
            let part = &self.acc[p];
            part.queue.len() + usize::from(part.open.is_some())
        })
    }

    /// Whether request `id` is outstanding: handed out by `poll_request`, expecting an
    /// answer or a failure report, and not timed out. A driver holding a request the core
    /// no longer has outstanding (it passed `request.timeout.ms`) closes its connection,
    /// as Java's `NetworkClient` does: the late answer would be refused anyway.
    #[must_use]
    pub fn is_outstanding(&self, id: RequestId) -> bool {
        self.requests.contains(id)
    }

    /// Whether every accepted record has an outcome.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.acc.unreported_records() == 0
    }

    /// Whether `close` was called and every record has an outcome.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.lifecycle == Lifecycle::Closing && self.is_idle() && !self.txn_closing()
    }

    pub(crate) fn observe(&mut self, now: Timestamp) {
        debug_assert!(
            now >= self.now,
            "time went backwards: {now:?} < {:?}",
            self.now
        );
        if now > self.now {
            self.now = now;
        }
        self.retime();
    }

    pub(crate) fn is_idempotent(&self) -> bool {
        self.identity.state() != IdState::Disabled
    }

    pub(crate) fn next_request_id(&mut self) -> RequestId {
        self.requests.next_id()
    }

    pub(crate) fn partition_for(&mut self, tp: &TopicPartition) -> u32 {
        self.acc.partition_for(tp)
    }

    pub(crate) fn list(&mut self, p: u32) {
        self.acc.list(p);
    }

    // ---------------------------------------------------------------- application

    /// Queues `record` for `partition` and returns its id. The record's outcome arrives
    /// later as exactly one [`Event::Delivered`] or [`Event::Failed`] naming this id.
    ///
    /// # Errors
    /// The record was not queued: the producer is closed or fatal, the partition is
    /// negative, the record is larger than `max.request.size` or `buffer.memory`, a
    /// transactional producer has no transaction open, or `buffer.memory` is used up
    /// for now ([`SendError::BufferFull`]: retry once deliveries free room, or report
    /// giving up with [`Producer::send_refused`]). Inside a transaction, a refusal Java
    /// treats as an `ApiException` makes the transaction abortable (see
    /// [`Producer::send_refused`]).
    pub fn send(
        &mut self,
        partition: &TopicPartition,
        record: &Record,
        now: Timestamp,
    ) -> Result<RecordId, SendError> {
        self.observe(now);
        let size = BatchBuilder::estimated_record_size(record);
        self.admit_caller(partition)
            .and_then(|()| self.admit_size(size + RECORD_BATCH_OVERHEAD, size))
            .map_err(|e| self.refuse(e))?;
        let p = self.partition_for(partition);
        self.txn_add_partition(p).map_err(|e| self.refuse(e))?;
        let batch_size = self.config.batch_size();
        let needs_new = match &self.acc[p].open {
            Some(open) => !open.builder.has_room_for(record, open.write_limit),
            None => true,
        };
        if needs_new {
            self.close_open(p);
            let capacity = batch_size.max(BatchBuilder::batch_size_upper_bound(record));
            let ratio = self.ratios.get(&partition.topic);
            let compression = self.config.compression().clone();
            // A freed `batch.size` buffer if one is spare (without a codec: a compressed
            // batch's buffers have other sizes).
            let spare = match compression {
                Compression::None => self.recycled.buffer(capacity),
                Compression::Codec(_) => None,
            };
            let builder = match spare {
                Some(buf) => BatchBuilder::in_buffer(buf),
                None => BatchBuilder::with_ratio(compression, ratio, capacity),
            };
            self.acc[p].open = Some(OpenBatch {
                builder,
                write_limit: capacity,
                records: self.recycled.record_list(),
                created: self.now,
                charged: 0,
                max_record_size: 0,
            });
        }
        let id = RecordId(self.acc.accept(1, size).start);
        // Appending moves no deadline (the open batch keeps its creation time); a new
        // batch was marked when it opened, and a full one is when it closes below.
        let open = self.acc.untimed_mut(p).open.as_mut().expect("opened above");
        open.builder.append(record);
        open.records.push(id);
        open.charged += size;
        open.max_record_size = open.max_record_size.max(size);
        if open.builder.is_full(open.write_limit) {
            self.close_open(p);
        }
        self.stats.records_sent += 1;
        self.list(p);
        Ok(id)
    }

    /// Makes every queued record ready to send now, ignoring `linger.ms`, until the
    /// producer is idle. Wait for [`Producer::is_idle`] to know the flush completed.
    pub fn flush(&mut self) {
        self.flushing = true;
    }

    /// Stops accepting records and sends everything queued without waiting for linger.
    /// A transaction still open is aborted (EndTxn(ABORT); a commit already requested
    /// finishes), and every transactional operation is refused from now on with
    /// [`TxnError::Closed`](crate::TxnError::Closed). The producer is closed once
    /// [`Producer::is_closed`] is true.
    pub fn close(&mut self) {
        self.lifecycle = Lifecycle::Closing;
        self.flushing = true;
    }

    /// Fails every record without an outcome with [`DeliveryError::Aborted`] and closes
    /// the producer (Java's forced close): nothing transactional is sent any more and a
    /// pending transactional operation completes with
    /// [`TxnError::Closed`](crate::TxnError::Closed). Records already on the wire may still be
    /// written; they are reported `possibly_written`.
    pub fn abort(&mut self) {
        self.lifecycle = Lifecycle::Closing;
        self.txn_force_close();
        self.fail_everything(&DeliveryError::Aborted);
    }

    /// The next event for the application, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        let event = self.events.pop_front()?;
        self.metrics_event(&event);
        Some(event)
    }

    /// The next time the producer needs [`Producer::handle_timeout`], if any. Drivers
    /// compare their clock with it themselves and call `handle_timeout` once it passed.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let now = self.now;
        let (acc, slab) = (self.acc.touched(), self.batches.touched());
        let stale = |p: u32| acc.contains(p) || slab.contains(p);
        let indexed = self.timers.next(now, self.flushing, stale);
        let fresh = acc
            .iter()
            .chain(slab.iter())
            .filter_map(|p| self.partition_timers(p).next(now, self.flushing));
        indexed
            .into_iter()
            .chain(fresh)
            .chain(self.fixed_timers())
            .min()
    }

    /// The timers that are not per partition: request timeouts, the InitProducerId,
    /// metadata and transactional backoffs, and throttles.
    fn fixed_timers(&self) -> impl Iterator<Item = Timestamp> {
        let now = self.now;
        let txn_retry = self
            .txn
            .as_ref()
            .and_then(|t| t.queue.retry_deadline_after(now));
        [
            self.requests.next_deadline(),
            self.metadata_retry.deadline_after(now),
            self.identity.retry_deadline_after(now),
            txn_retry,
            self.requests.throttle_deadline_after(now),
        ]
        .into_iter()
        .flatten()
    }

    /// Partition `p`'s deadlines, from its queue and batches. Per partition, queued
    /// batches sit in creation order (retries, older, at the queue's front; the open
    /// batch newest), so the queue's front is the one whose delivery timeout comes
    /// first. The batches on the wire are not in creation order (a retry of the oldest
    /// can go out behind a later batch still out), so all of them are looked at; there
    /// are at most max.in.flight of them.
    pub(crate) fn partition_timers(&self, p: u32) -> PartitionTimers {
        let part = &self.acc[p];
        let delivery = self.config.delivery_timeout();
        let head = part.queue.front().and_then(|&head| self.batches.get(head));
        let next = part.next_queued().and_then(|next| self.batches.get(next));
        let oldest_live_on_wire = part
            .on_wire
            .iter()
            .filter_map(|&id| self.batches.get(id))
            .filter(|b| !b.done)
            .map(|b| b.created)
            .min();
        let created = [
            part.open.as_ref().map(|o| o.created),
            head.map(|b| b.created),
            oldest_live_on_wire,
        ];
        PartitionTimers {
            delivery: created.into_iter().flatten().min().map(|c| c + delivery),
            linger: part
                .open
                .as_ref()
                .filter(|_| part.queue.is_empty())
                .map(|o| o.created + self.config.linger()),
            backoff: next.and_then(|b| b.retry.not_before()),
        }
    }

    /// Moves the touched partitions' fresh deadlines into the timer table.
    fn retime(&mut self) {
        let mut touched = core::mem::take(&mut self.retimed);
        self.acc.take_touched(&mut touched);
        self.batches.take_touched(&mut touched);
        // Past a few dozen partitions changed, and a sizeable share of the table, one
        // sort beats moving a sorted index's tail once per partition.
        let bulk = touched.len() > 32 && touched.len() * 8 > self.timers.len();
        for &p in &touched {
            if p < self.acc.ids().end {
                let timers = self.partition_timers(p);
                if bulk {
                    self.timers.stage(p, timers);
                } else {
                    self.timers.set(p, timers);
                }
            }
        }
        if bulk {
            self.timers.rebuild();
        }
        touched.clear();
        self.retimed = touched;
    }

    /// The old `poll_timeout`, a scan of every partition: the oracle the timer table is
    /// checked against.
    pub(crate) fn poll_timeout_scan(&self) -> Option<Timestamp> {
        self.acc
            .ids()
            .filter_map(|p| self.partition_timers(p).next(self.now, self.flushing))
            .chain(self.fixed_timers())
            .min()
    }

    /// Checks the timer table: its invariants, and that each partition it holds fresh
    /// has the deadlines the partition's state gives.
    pub(crate) fn assert_timer_invariants(&self) {
        self.timers.assert_invariants();
        let (acc, slab) = (self.acc.touched(), self.batches.touched());
        for p in self.acc.ids() {
            if !acc.contains(p) && !slab.contains(p) {
                assert_eq!(
                    self.timers.get(p),
                    self.partition_timers(p),
                    "partition {p}: stale timers"
                );
            }
        }
        assert_eq!(
            self.poll_timeout(),
            self.poll_timeout_scan(),
            "the timer table and the scan disagree"
        );
    }

    /// Tells the producer the time is `now`: expires requests past `request.timeout.ms`
    /// and batches past `delivery.timeout.ms`. Then drain the `poll_*` outputs.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        self.observe(now);
        self.expire_requests();
        self.expire_batches();
    }

    /// Feeds partition leadership learned from a Metadata response. `request` is the id
    /// of the [`Request::Metadata`](crate::Request::Metadata) it answers, or `None` for metadata the driver
    /// fetched on its own (bootstrap).
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding; the leadership
    /// it carries is still applied (it is just information).
    /// [`InputError::Mismatch`] when `request` is outstanding but is not the Metadata
    /// request: nothing changes, and that request keeps waiting for its own answer.
    pub fn handle_metadata(
        &mut self,
        request: Option<RequestId>,
        metadata: &Metadata,
        now: Timestamp,
    ) -> Result<(), InputError> {
        self.observe(now);
        let known = match request {
            Some(id) if self.requests.metadata_in_flight() == Some(id) => {
                self.take_outstanding(id).is_some()
            }
            Some(id) if self.requests.contains(id) => {
                return Err(InputError::Mismatch {
                    request: id,
                    reason: "not a metadata request",
                });
            }
            Some(_) => false,
            None => true,
        };
        for pm in &metadata.partitions {
            let p = self.partition_for(&pm.partition);
            let part = &mut self.acc[p];
            // A new topic id: the topic was deleted and created again; its epochs
            // restarted, so the last one seen says nothing (Java's
            // `Metadata.updateLatestMetadata`). The sequencing state stays, as Java's.
            if pm.topic_id.is_some() && pm.topic_id != part.topic_id {
                part.topic_id = pm.topic_id;
                part.leader = pm.leader;
                part.leader_epoch = pm.leader_epoch;
                continue;
            }
            if pm.leader_epoch < 0 {
                // No leader epoch (a broker before Metadata v7): Java's
                // `Metadata.updateLatestMetadata` takes the partition as given and drops
                // the epoch last seen, so any epoch that comes later is newer.
                part.leader = pm.leader;
                part.leader_epoch = -1;
                continue;
            }
            // An epoch below the last one seen is stale and ignored, also while the
            // leader is forgotten (a wire failure or a leadership error): Java's
            // `Metadata.updateLatestMetadata` keeps the cached partition, whose leader
            // is the one of the newer epoch, never the stale answer's. The partition
            // waits for an answer at that epoch or later.
            if pm.leader_epoch >= part.leader_epoch {
                part.leader = pm.leader;
                part.leader_epoch = pm.leader_epoch;
            }
        }
        let still_unknown = self
            .acc
            .pending()
            .iter()
            .any(|&p| self.acc[p].leader.is_none());
        if still_unknown || !metadata.topic_errors.is_empty() {
            self.metadata_retry.failed(&mut self.backoff, self.now);
        } else {
            self.metadata_retry.succeeded();
        }
        if known {
            self.metrics_metadata();
            Ok(())
        } else {
            Err(InputError::UnknownRequest(request.unwrap_or(RequestId(0))))
        }
    }

    /// Feeds the answer to a [`Request::InitProducerId`](crate::Request::InitProducerId).
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not the outstanding
    /// InitProducerId; [`InputError::Mismatch`] when the answer carries no valid
    /// producer id (the request stays outstanding and times out if nothing better
    /// comes). Nothing changes either way.
    pub fn handle_producer_id(
        &mut self,
        request: RequestId,
        result: Result<ProducerIdAndEpoch, KafkaError>,
        now: Timestamp,
    ) -> Result<(), InputError> {
        self.observe(now);
        if self.txn.is_some() {
            return self.txn_producer_id(request, result, now);
        }
        if self.identity.state() != IdState::Requested(request) {
            return Err(InputError::UnknownRequest(request));
        }
        if matches!(result, Ok(id) if !id.is_valid() || id.epoch.0 < 0) {
            // Refused before anything changes: the request stays outstanding, and
            // without a usable answer it times out and is asked again.
            return Err(InputError::Mismatch {
                request,
                reason: "InitProducerId answered without a valid producer id",
            });
        }
        self.take_outstanding(request);
        match result {
            Ok(id) => {
                self.identity.ready(id);
                // The new id doubles as the bump the epoch exhaustion asked for, if no
                // batch of a partition to rewrite can still be seen twice.
                self.new_id_for_pending_bump();
                self.events.push_back(Event::ProducerIdChanged { id });
            }
            Err(e) if e.is_retriable() => self.identity.failed(&mut self.backoff, self.now),
            Err(
                e @ (KafkaError::ClusterAuthorizationFailed
                | KafkaError::TransactionalIdAuthorizationFailed),
            ) => {
                // KAFKA-13668: not fatal. What waits for an id fails; the id is asked for
                // again after a backoff, so a fixed ACL lets the producer recover.
                self.identity.failed(&mut self.backoff, self.now);
                self.fail_unsent(&e);
            }
            Err(e) => self.enter_fatal(e),
        }
        Ok(())
    }

    pub(crate) fn take_outstanding(&mut self, id: RequestId) -> Option<Outstanding> {
        self.requests.take(id)
    }

    /// Closes the open batch of partition `p` into its queue.
    pub(crate) fn close_open(&mut self, p: u32) {
        let Some(open) = self.acc[p].open.take() else {
            return;
        };
        if open.builder.is_empty() {
            return;
        }
        let id = self.batches.next_id();
        let record_count = open.builder.record_count();
        // An idempotent batch is stamped before it is sent, and stamping writes the
        // CRC: computing it here too would hash every batch twice.
        let crc = if self.is_idempotent() {
            Crc::LeaveToStamp
        } else {
            Crc::Write
        };
        let closed = open.builder.close(crc);
        if closed.compression_failed {
            self.stats.compression_failures += 1;
        } else if self.config.compression().codec().is_some() {
            let stored = closed.data.len() - RECORD_BATCH_OVERHEAD;
            let observed = CompressionRatio::observed(stored, closed.uncompressed_records_len);
            let topic = &self.acc[p].tp.topic;
            self.ratios.observe(topic, observed);
        }
        let batch = ProducerBatch {
            id,
            partition: p,
            records: open.records,
            record_count,
            data: BatchData::new(closed.data),
            uncompressed_records_len: closed.uncompressed_records_len,
            charged: open.charged,
            max_record_size: open.max_record_size,
            created: open.created,
            retry: Retry::new(),
            last_leader_epoch: None,
            stamp: None,
            reopened: false,
            fate: StampFate::Unsent,
            on_wire: None,
            write_state: WriteState::Never,
            done: false,
        };
        self.batches.insert(batch);
        self.acc[p].queue.push_back(id);
    }

    /// Reports a batch's records and drops its buffer accounting. The batch stays in the
    /// slab while a request still carries it.
    pub(crate) fn report(&mut self, id: BatchId, outcome: impl Into<Outcome>) {
        let Some(b) = self.batches.get_mut(id) else {
            return;
        };
        debug_assert!(!b.done, "batch {id:?} reported twice");
        if b.done {
            return;
        }
        b.done = true;
        let records = core::mem::take(&mut b.records);
        let possibly_written = b.possibly_written();
        if b.on_wire.is_some() {
            // Reported while an attempt is out (forced close, a fatal error elsewhere,
            // expiry): that attempt may still land, whatever the batch's history says.
            b.write_state = WriteState::Maybe;
            b.fate = StampFate::Unknown;
        }
        let charged = b.charged;
        let p = b.partition;
        let on_wire = b.on_wire.is_some();
        let partition = self.acc[p].tp.clone();
        self.acc.release(records.len() as u64, charged);
        crate::outcome::push_events(
            &mut self.events,
            partition,
            records,
            outcome.into(),
            possibly_written,
        );
        if !on_wire {
            self.free_batch(id);
        }
    }

    /// Removes a reported batch that no request carries any more, keeping its buffer for
    /// the next batch if nobody else holds it.
    pub(crate) fn free_batch(&mut self, id: BatchId) {
        if let Some(b) = self.batches.remove(id) {
            self.recycled.give_buffer(b.data);
        }
    }

    /// Hands a request back once the driver no longer needs it (its bytes are written
    /// or copied out), so its containers serve the next request and the batches' buffers
    /// can be reused when they are acknowledged. Optional: a request simply dropped is
    /// freed as usual. Only Produce requests carry anything worth keeping.
    pub fn recycle(&mut self, request: Request) {
        if let Request::Produce(r) = request {
            self.recycled.give_request_list(r.batches);
        }
    }

    /// Hands an event back once the application has read it, so its record list serves
    /// a later batch. Optional, like [`Producer::recycle`].
    pub fn recycle_event(&mut self, event: Event) {
        match event {
            Event::Delivered { records, .. } | Event::Failed { records, .. } => {
                self.recycled.give_record_list(records);
            }
            _ => {}
        }
    }

    pub(crate) fn enter_fatal(&mut self, error: KafkaError) {
        if self.fatal.is_some() {
            return;
        }
        self.fatal = Some(error);
        self.txn_fatal(error);
        self.events.push_back(Event::Fatal { error });
        self.fail_everything(&DeliveryError::Fatal(error));
    }

    /// Fails every batch that was never stamped (they all wait for a producer id).
    fn fail_unsent(&mut self, error: &KafkaError) {
        for p in self.acc.ids() {
            self.close_open(p);
            let part = &mut self.acc[p];
            let tp = part.tp.clone();
            let unsent: Vec<BatchId> = part
                .queue
                .iter()
                .copied()
                .filter(|&id| {
                    self.batches
                        .get(id)
                        .is_some_and(|b| b.stamp.is_none() && b.on_wire.is_none())
                })
                .collect();
            part.queue.retain(|id| !unsent.contains(id));
            for id in unsent {
                self.report(
                    id,
                    Err(DeliveryError::Broker {
                        partition: tp.clone(),
                        error: *error,
                        message: None,
                    }),
                );
            }
        }
    }

    /// Fails every record without an outcome (fatal error or forced close).
    pub(crate) fn fail_everything(&mut self, error: &DeliveryError) {
        for p in self.acc.ids() {
            self.close_open(p);
            let part = &mut self.acc[p];
            let queued: Vec<BatchId> = part.queue.drain(..).collect();
            part.seq.forget_batches();
            let wired: Vec<BatchId> = part.on_wire.iter().copied().collect();
            for id in queued.into_iter().chain(wired) {
                if self.batches.get(id).is_some_and(|b| !b.done) {
                    self.report(id, Err(error.clone()));
                }
            }
        }
        self.bump.clear();
    }
}
