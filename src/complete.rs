//! Answers to Produce requests, per partition (Java's `Sender.completeBatch`): success,
//! the retry decision (`canRetry`), splitting on MESSAGE_TOO_LARGE, and failure
//! (`handleFailedBatch`). One partition's answer never touches another's batch.

use crate::retry::Retry;
use alloc::vec::Vec;

use crate::batch::{BatchData, ProducerBatch, Stamp, StampFate, WriteState};
use crate::error::{DeliveryError, ErrorClass, InputError, KafkaError};
use crate::io::{PartitionResponse, ProduceResponse, RequestFailure};
use crate::outcome::{Failure, Outcome};
use crate::producer::{IdState, Producer};
use crate::record;
use crate::requests::OutstandingKind;
use crate::types::{BatchId, RequestId, Timestamp, TopicPartition};

/// Whether a failed batch's sequences may be adjusted (Java's `handleFailedBatch`
/// argument `adjustSequenceNumbers`): only when the failure came from an answer and
/// the batch still had attempts left under `retries`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Adjust {
    /// The failure may lead to a bump that renumbers the partition.
    Sequences,
    /// It may not (an expiry, or retries used up).
    Nothing,
}

impl Adjust {
    /// `Sequences` while attempts are left under `retries`.
    fn while_attempts_left(failures: u32, retries: u32) -> Self {
        if failures < retries {
            Self::Sequences
        } else {
            Self::Nothing
        }
    }
}

/// When a batch sent again may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextAttempt {
    /// After `retry.backoff.ms` (doubling per failure).
    AfterBackoff,
    /// At once: the answer named a newer leader (KIP-951), so the backoff that guards
    /// a broker from a retry storm does not apply to the new one.
    AtOnce,
}

impl Producer {
    /// Feeds the answer to the [`Request::Produce`](crate::Request::Produce) with id
    /// `request`. Each partition completes on its own.
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when no such produce request is outstanding (it
    /// was already answered, failed or timed out); nothing changes.
    pub fn handle_produce_response(
        &mut self,
        request: RequestId,
        response: &ProduceResponse,
        now: Timestamp,
    ) -> Result<(), InputError> {
        self.observe(now);
        let (node, batches) = self
            .requests
            .take_produce(request)
            .ok_or(InputError::UnknownRequest(request))?;
        let now = self.now;
        self.metrics_answered(node, response.throttle);
        if !response.throttle.is_zero() {
            self.requests.throttle(node, now + response.throttle);
        }
        // Where the previous batch's answer was: the next batch's answer is most likely
        // right after it.
        let mut previous: Option<usize> = None;
        for (i, &id) in batches.iter().enumerate() {
            let Some(b) = self.batches.get(id) else {
                continue;
            };
            let tp = &self.acc[b.partition].tp;
            let found = answer_position(&response.partitions, tp, i, previous);
            previous = found.or(previous);
            let answer = found.map(|at| &response.partitions[at]);
            match answer {
                Some(r) => self.complete_batch(id, r),
                // An answer that leaves a partition out says nothing about it: treat it
                // as lost in transit, so possibly written.
                None => self.lost_in_transit(id, RequestFailure::Disconnected),
            }
        }
        self.recycled.give_batch_list(batches);
        Ok(())
    }

    /// Tells the producer that a request will get no answer. For a produce request,
    /// every batch in it is retried (or failed), and with
    /// [`RequestFailure::Disconnected`] treated as possibly written. The leaders of its
    /// partitions are forgotten, so the retry waits for fresh metadata rather than
    /// going back to a dead broker.
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding (for example the
    /// core already timed it out); nothing changes.
    pub fn handle_request_failed(
        &mut self,
        request: RequestId,
        failure: RequestFailure,
        now: Timestamp,
    ) -> Result<(), InputError> {
        self.observe(now);
        let o = self
            .take_outstanding(request)
            .ok_or(InputError::UnknownRequest(request))?;
        match o.kind {
            OutstandingKind::Produce { batches, .. } => {
                for id in batches {
                    self.lost_in_transit(id, failure);
                }
            }
            OutstandingKind::InitProducerId => {
                if self.identity.state() == IdState::Requested(request) {
                    self.identity.failed(&mut self.backoff, self.now);
                }
            }
            OutstandingKind::Transactional => self.txn_request_failed(request, failure),
            OutstandingKind::Metadata => {
                // At most one metadata lookup is outstanding: this one.
                self.metadata_retry.failed(&mut self.backoff, self.now);
            }
        }
        Ok(())
    }

    /// Takes batch `id` off the wire; returns false when it was already reported (an
    /// expired batch whose request was still out), after freeing it.
    fn land(&mut self, id: BatchId) -> bool {
        let Some(b) = self.batches.get_mut(id) else {
            return false;
        };
        b.on_wire = None;
        let (p, done) = (b.partition, b.done);
        self.acc[p].remove_on_wire(id);
        if done {
            self.free_batch(id);
            return false;
        }
        true
    }

    /// An `acks=0` batch was written: delivered, with no offset (no answer comes).
    pub(crate) fn delivered_unacknowledged(&mut self, id: BatchId) {
        if self.land(id) {
            self.report(id, Ok(None));
        }
    }

    fn lost_in_transit(&mut self, id: BatchId, failure: RequestFailure) {
        if !self.land(id) {
            return;
        }
        let b = self.batches.get_mut(id).expect("landed batch is live");
        if failure == RequestFailure::Disconnected {
            b.write_state = WriteState::Maybe;
            b.fate = StampFate::Unknown;
        }
        let p = b.partition;
        // The burst-wedge fix: forget the leader so the retry is re-routed by fresh
        // metadata, and a dead broker cannot hold healthy partitions hostage.
        self.invalidate_leader(p);
        match failure {
            RequestFailure::Disconnected => self.retry_or_fail(
                id,
                KafkaError::NetworkException,
                -1,
                NextAttempt::AfterBackoff,
                None,
            ),
            RequestFailure::NotSent => self.requeue_unsent(id),
        }
    }

    /// A batch whose request was never written goes back to its queue as if it had
    /// never been drained: no attempt counted under `retries`, no growing retry backoff;
    /// it waits for its leader's metadata and connection, the lookup paced by the first
    /// step of `retry.backoff.ms` ([`Retry::unsent`]). Java drains no batch for a node
    /// `NetworkClient.ready` refuses (`Sender.sendProducerData`), and
    /// `ProducerBatch.attempts` grows only when a sent request failed. Only
    /// `delivery.timeout.ms` ends its wait.
    fn requeue_unsent(&mut self, id: BatchId) {
        let b = self.batches.get(id).expect("live");
        if b.done || self.now >= b.created + self.config.delivery_timeout() {
            self.fail_answered(id, KafkaError::NetworkException, None);
            return;
        }
        let p = b.partition;
        let b = self.batches.get_mut(id).expect("live");
        b.retry.unsent(&mut self.backoff, self.now);
        self.acc[p].requeue_unsent(id, &self.batches);
        self.list(p);
    }

    pub(crate) fn invalidate_leader(&mut self, p: u32) {
        self.acc[p].leader = None;
    }

    fn complete_batch(&mut self, id: BatchId, r: &PartitionResponse) {
        let b = self.batches.get(id).expect("batch in request is live");
        if b.done {
            // Expired while on the wire. A late success still advances the sequencing
            // state (Java's handleCompletedBatch runs for it too); an error is ignored.
            if matches!(r.error.class(), ErrorClass::Success | ErrorClass::Duplicate) {
                self.record_ack(id, r.base_offset);
            }
            self.land(id);
            return;
        }
        self.land(id);
        match r.error.class() {
            ErrorClass::Success => {
                self.settle_probe(id);
                self.record_ack(id, r.base_offset);
                self.report(id, Outcome::acked(r));
            }
            _ if r.error == KafkaError::MessageTooLarge && self.splittable(id) => {
                self.split_batch(id);
            }
            class => {
                let b = self.batches.get_mut(id).expect("live");
                let state = if r.error.may_have_appended() {
                    WriteState::Maybe
                } else {
                    WriteState::Rejected
                };
                b.write_state = b.write_state.max(state);
                // A refusal never lowers the fate: OUT_OF_ORDER_SEQUENCE_NUMBER included,
                // which does not prove the batch absent. A broker that reloaded its
                // producer state from a snapshot (a restart, or a truncation:
                // `UnifiedLog.rebuildProducerState`, `ProducerStateManager.
                // truncateAndReload`) remembers only each producer's newest batch, not
                // the last five, so the retry of an earlier batch that is in the log is
                // answered OUT_OF_ORDER (`ProducerAppendInfo.checkSequence`).
                if r.error.may_have_appended() {
                    b.fate = StampFate::Unknown;
                }
                let p = b.partition;
                if r.error == KafkaError::OutOfOrderSequenceNumber && self.written_before_an_ack(id)
                {
                    // A later batch of its identity was acknowledged: it is in the log
                    // (`crate::probe`), where this leader no longer recognises it.
                    self.record_ack(id, -1);
                    self.report(id, Ok(None));
                    return;
                }
                let mut next = NextAttempt::AfterBackoff;
                if class == ErrorClass::Leadership {
                    match r.current_leader {
                        Some(hint) if hint.leader_epoch > self.acc[p].leader_epoch => {
                            let part = &mut self.acc[p];
                            part.leader = Some(hint.leader);
                            part.leader_epoch = hint.leader_epoch;
                            next = NextAttempt::AtOnce;
                        }
                        _ => self.invalidate_leader(p),
                    }
                }
                if class == ErrorClass::Duplicate
                    && !self.can_retry(id, r.error, r.log_start_offset)
                {
                    // DUPLICATE_SEQUENCE_NUMBER: already written; success without offset.
                    self.settle_probe(id);
                    self.record_ack(id, -1);
                    self.report(id, Ok(None));
                    return;
                }
                self.retry_or_fail(id, r.error, r.log_start_offset, next, Some(r));
            }
        }
    }

    /// Retries the batch, or fails it with `error`; `answer` is the broker's answer
    /// that carried the error (`None` when the request was lost), whose message and
    /// per-record errors reach the records' outcome.
    fn retry_or_fail(
        &mut self,
        id: BatchId,
        error: KafkaError,
        log_start: i64,
        next: NextAttempt,
        answer: Option<&PartitionResponse>,
    ) {
        if self.can_retry(id, error, log_start) {
            self.reenqueue(id, next, error);
            return;
        }
        self.fail_answered(id, error, answer);
    }

    /// Fails batch `id` for `error`, which an answer refused it with (or which stands
    /// for its lost answer) and which `can_retry` did not retry; the first in flight
    /// of a probe that found nothing higher in the log.
    pub(crate) fn fail_answered(
        &mut self,
        id: BatchId,
        error: KafkaError,
        answer: Option<&PartitionResponse>,
    ) {
        let b = self.batches.get(id).expect("live");
        let p = b.partition;
        let tp = self.acc[p].tp.clone();
        let timed_out = self.now >= b.created + self.config.delivery_timeout();
        let adjust = Adjust::while_attempts_left(b.retry.failures(), self.config.retries());
        let records = b.records.len();
        let delivery_error: Failure = if timed_out && error.is_retriable() {
            DeliveryError::Timeout { partition: tp }.into()
        } else if error == KafkaError::MessageTooLarge {
            DeliveryError::RecordTooLarge { partition: tp }.into()
        } else if error.class() == ErrorClass::Fatal {
            DeliveryError::Fatal(error).into()
        } else if let Some(r) = answer {
            Failure::from_answer(tp, r, records)
        } else {
            DeliveryError::Broker {
                partition: tp,
                error,
                message: None,
            }
            .into()
        };
        self.fail_batch(id, delivery_error, Some(error), adjust);
        if error.class() == ErrorClass::Fatal {
            self.enter_fatal(error);
        }
    }

    /// Java's `Sender.canRetry` (delivery timeout not reached, attempts below `retries`,
    /// batch not done) plus `TransactionManager.canRetry` (the sequence errors:
    /// UNKNOWN_PRODUCER_ID and OUT_OF_ORDER_SEQUENCE_NUMBER retry, bumping the epoch of
    /// an idempotent producer, KIP-360; otherwise retriable errors only). May request an
    /// epoch bump as a side effect, exactly where Java does.
    fn can_retry(&mut self, id: BatchId, error: KafkaError, log_start: i64) -> bool {
        let b = self.batches.get(id).expect("live");
        if b.done
            || self.now >= b.created + self.config.delivery_timeout()
            || b.retry.failures() >= self.config.retries()
        {
            return false;
        }
        if !self.is_idempotent() {
            return error.is_retriable();
        }
        let p = b.partition;
        let reopened = b.reopened;
        let fate = b.fate;
        let base = b.stamp.map(|s| s.base_sequence);
        let seq = &self.acc[p].seq;
        if self.txn.is_some() {
            // Transactional (`TransactionManager.canRetry`): no client-side bump; a
            // sequence error that is not "an earlier batch failed" fails the batch, and
            // the abort bumps the epoch.
            return match error {
                KafkaError::UnknownProducerId => log_start == -1 || reopened,
                KafkaError::OutOfOrderSequenceNumber => {
                    seq.unresolved().is_none()
                        && (reopened || base.is_some_and(|b| !seq.is_next_sequence(b)))
                }
                e => e.is_retriable(),
            };
        }
        match error {
            KafkaError::UnknownProducerId => {
                if log_start == -1 || reopened {
                    return true;
                }
                // Truncated log head (retention) or lost state: either way the idempotent
                // producer bumps the epoch and retries.
                self.request_bump(p);
                true
            }
            KafkaError::OutOfOrderSequenceNumber => {
                let Some(base) = base else { return true };
                if seq.probe() == Some(id) {
                    // The log ends below the probe's target (`crate::probe`).
                    self.probe_refused(p, id);
                    return true;
                }
                if seq.unresolved().is_none() && (reopened || !seq.is_next_sequence(base)) {
                    // Not the next batch: an earlier one failed or is being retried.
                    return true;
                }
                if fate == StampFate::Unknown {
                    // The next batch, refused although an earlier attempt under this
                    // stamp may be in the log (see `complete_batch`): no retry under the
                    // stamp can succeed, and renumbering it could write it twice. A
                    // later batch in the log would prove it there (`crate::probe`);
                    // without one it fails as possibly written, and the bump follows
                    // (`fail_batch`).
                    return self.start_probe(p);
                }
                if seq.unresolved().is_none_or(|u| u == base) {
                    self.request_bump(p);
                }
                true
            }
            e => e.is_retriable(),
        }
    }

    /// Java's `reenqueue` + `insertInSequenceOrder`.
    fn reenqueue(&mut self, id: BatchId, next: NextAttempt, cause: KafkaError) {
        let b = self.batches.get_mut(id).expect("live");
        let p = b.partition;
        match next {
            NextAttempt::AtOnce => b.retry.failed_retry_at_once(),
            NextAttempt::AfterBackoff => {
                b.retry.failed(&mut self.backoff, self.now);
            }
        }
        self.acc[p].reenqueue(id, &self.batches);
        self.stats.retries += 1;
        self.metrics_retried(id, cause);
        self.list(p);
    }

    /// Java's `handleCompletedBatch`: advance last acked sequence and offset.
    pub(crate) fn record_ack(&mut self, id: BatchId, base_offset: i64) {
        let b = self.batches.get(id).expect("live");
        let p = b.partition;
        let count = i64::from(b.record_count);
        let stamp = b.stamp;
        let last = b.last_sequence();
        let created = b.created;
        let seq = &mut self.acc[p].seq;
        if let (Some(stamp), Some(last)) = (stamp, last) {
            seq.record_ack(stamp.id, last, created);
        }
        if base_offset >= 0 {
            seq.record_offset(base_offset.saturating_add(count - 1));
        }
        seq.finish(id);
    }

    /// Java's `failBatch` + `handleFailedBatch`, with one deliberate strengthening: a
    /// sequenced batch whose fate is unknown never leaves a silent gap. It is marked
    /// unresolved, and the partition is bumped unless later acks prove it landed.
    pub(crate) fn fail_batch(
        &mut self,
        id: BatchId,
        error: impl Into<Failure>,
        kafka_error: Option<KafkaError>,
        adjust: Adjust,
    ) {
        let Some(b) = self.batches.get_mut(id) else {
            return;
        };
        if b.on_wire.is_some() {
            // An attempt is still out (the batch expired on the wire): it may yet land.
            b.write_state = WriteState::Maybe;
            b.fate = StampFate::Unknown;
        }
        let p = b.partition;
        let stamped = b.stamp.is_some();
        let maybe_written = b.possibly_written();
        let expected_after = b.last_sequence().map(|s| s.add(1));
        let unsent = b
            .stamp
            .filter(|_| b.fate == StampFate::Unsent)
            .map(|s| (s, b.record_count));
        let released = match unsent {
            Some((stamp, count)) => self.release_unsent_sequences(p, id, stamp, count),
            None => false,
        };
        self.acc[p].seq.finish(id);
        self.report(id, Outcome::Failed(error.into()));
        if self.fatal.is_some() || !self.is_idempotent() || released {
            return;
        }
        if self.txn.is_some() {
            // A failed batch makes the transaction abortable; the abort's epoch bump
            // (KIP-360 for TV1, every EndTxn for TV2) restarts every sequence.
            self.txn_abortable(kafka_error.unwrap_or(KafkaError::RequestTimedOut));
            return;
        }
        if !stamped {
            return;
        }
        let sequence_error = matches!(
            kafka_error,
            Some(KafkaError::OutOfOrderSequenceNumber | KafkaError::UnknownProducerId)
        );
        if sequence_error
            || (adjust == Adjust::Sequences && !maybe_written && kafka_error.is_some())
        {
            self.request_bump(p);
        } else if let Some(after) = expected_after {
            self.mark_unresolved(p, after);
        }
    }

    /// A batch whose current stamp never reached the wire failed: its sequences were
    /// never used under that identity. If no batch stamped after it under the same
    /// identity was sent either (the usual case: only the first in-flight batch may be
    /// resent after a rewrite, and new batches queue behind), those move down by its
    /// count and the run on the wire stays gap-free (Java's
    /// `adjustSequencesDueToFailedBatch`, applied only where it is safe). Returns whether
    /// it did; if a later batch is already out, nothing moves and the caller falls back
    /// to marking the partition unresolved.
    fn release_unsent_sequences(&mut self, p: u32, id: BatchId, stamp: Stamp, count: i32) -> bool {
        let transactional = self.config.is_transactional();
        let seq = &mut self.acc[p].seq;
        let Some(pos) = seq.rank(id) else {
            return false;
        };
        let later_sent = seq.inflight().iter().skip(pos + 1).any(|&later| {
            self.batches.get(later).is_some_and(|b| {
                b.stamp.is_some_and(|s| s.id == stamp.id)
                    && (b.fate != StampFate::Unsent || b.on_wire.is_some())
            })
        });
        if later_sent {
            return false;
        }
        for &later in seq.inflight().iter().skip(pos + 1) {
            let Some(b) = self.batches.get_mut(later) else {
                continue;
            };
            let Some(s) = b.stamp.filter(|s| s.id == stamp.id) else {
                continue;
            };
            b.stamp = Some(Stamp {
                id: s.id,
                base_sequence: s.base_sequence.sub(count),
            });
            b.write_stamp(transactional);
        }
        seq.release_unsent(stamp.id, count);
        true
    }

    /// Java splits any multi-record batch on MESSAGE_TOO_LARGE. A batch that may already
    /// be in the log (an earlier attempt's answer was lost; the broker checks the size
    /// before deduplicating) is never split: its pieces would be new batches to the
    /// broker and be written a second time. It fails as possibly written instead.
    fn splittable(&self, id: BatchId) -> bool {
        self.batches.get(id).is_some_and(|b| {
            b.record_count > 1
                && b.write_state != WriteState::Maybe
                && self.now < b.created + self.config.delivery_timeout()
        })
    }

    /// MESSAGE_TOO_LARGE on a multi-record batch: split it in halves. The pieces keep
    /// the batch's place: consecutive sequences from its base, same identity, in its
    /// position in the in-flight order. `next_sequence` does not move.
    fn split_batch(&mut self, id: BatchId) {
        let (p, target, adjust) = {
            let b = self.batches.get(id).expect("live");
            (
                b.partition,
                (b.data.len() / 2).max(1),
                Adjust::while_attempts_left(b.retry.failures(), self.config.retries()),
            )
        };
        // A compressed batch is decompressed, split by its own compression ratio, and each
        // piece compressed again (Java's `ProducerBatch.split` rebuilds the pieces with
        // the batch's codec). The pieces get their CRC when they are stamped below.
        let split = record::split_pieces(
            self.batches.get(id).expect("live").data.as_slice(),
            target,
            self.config.compression(),
            record::Crc::Write,
        );
        let pieces = match split {
            Ok(pieces) if pieces.len() > 1 => pieces,
            _ => {
                // A multi-record batch of our own always splits; if it somehow did not,
                // fail it as too large rather than loop.
                let tp = self.acc[p].tp.clone();
                let error = DeliveryError::RecordTooLarge { partition: tp };
                self.fail_batch(id, error, Some(KafkaError::MessageTooLarge), adjust);
                return;
            }
        };
        let b = self.batches.remove(id).expect("live");
        self.stats.splits += 1;
        self.metrics_split();
        let transactional = self.config.is_transactional();
        let mut records = b.records.into_iter();
        let mut seq = b.stamp.map(|s| s.base_sequence);
        let mut ids: Vec<BatchId> = Vec::with_capacity(pieces.len());
        // The parent's buffer.memory charge is shared out by record count, the last piece
        // taking the rest, so the pieces release exactly what the parent was charged.
        let total_records = b.record_count.max(1) as usize;
        let mut uncharged = b.charged;
        let last_piece = pieces.len() - 1;
        for (k, piece) in pieces.into_iter().enumerate() {
            let record::SplitPiece {
                data,
                uncompressed_records_len,
            } = piece;
            let count = record::read_header(&data).map_or(0, |h| h.record_count);
            let piece_records: Vec<_> = records.by_ref().take(count as usize).collect();
            let charged = if k == last_piece {
                uncharged
            } else {
                (b.charged * piece_records.len() / total_records).min(uncharged)
            };
            uncharged -= charged;
            let nid = self.batches.next_id();
            let mut piece = ProducerBatch {
                id: nid,
                partition: p,
                record_count: piece_records.len() as i32,
                records: piece_records,
                data: BatchData::new(data),
                uncompressed_records_len,
                charged,
                max_record_size: b.max_record_size,
                created: b.created,
                retry: Retry::with_failures(b.retry.failures()),
                last_leader_epoch: b.last_leader_epoch,
                stamp: None,
                reopened: b.reopened,
                // The parent's sequences were on the wire (refused as too large); the
                // pieces reuse them and share its fate.
                fate: b.fate,
                on_wire: None,
                write_state: b.write_state,
                done: false,
            };
            if let (Some(s), Some(stamp)) = (seq, b.stamp) {
                piece.stamp = Some(Stamp {
                    id: stamp.id,
                    base_sequence: s,
                });
                seq = Some(s.add(piece.record_count));
                piece.write_stamp(transactional);
            }
            self.batches.insert(piece);
            ids.push(nid);
        }
        debug_assert!(records.next().is_none(), "split lost records");
        self.acc[p].seq.replace_split(id, &ids);
        for &nid in ids.iter().rev() {
            if b.stamp.is_some() {
                self.acc[p].reenqueue(nid, &self.batches);
            } else {
                self.acc[p].queue.push_front(nid);
            }
        }
        self.list(p);
    }
}

/// Where `tp`'s answer is in `answers`, for the batch at position `i` of its request whose
/// previous batch was answered at `previous`.
///
/// Brokers answer partitions in request order, so the batch's own position is tried
/// first; then the position after the previous answer, which also finds a response that
/// lists the same partitions rotated or grouped otherwise (a driver grouping a request's
/// partitions by topic) without a scan; then a scan from there, wrapping around. A request
/// of n partitions answered in order, or in a rotated order, is matched in O(n), not
/// O(n^2).
fn answer_position(
    answers: &[PartitionResponse],
    tp: &TopicPartition,
    i: usize,
    previous: Option<usize>,
) -> Option<usize> {
    if answers.get(i).is_some_and(|r| &r.partition == tp) {
        return Some(i);
    }
    let start = previous.map_or(0, |p| p + 1);
    let n = answers.len();
    (0..n)
        .map(|k| (start + k) % n)
        .find(|&at| &answers[at].partition == tp)
}
