//! The transactional requests: those waiting to be sent, served by Java's priority
//! order, the one on the wire, and the retry state of the request at the head (Java's
//! `TransactionManager.pendingRequests`, `inFlightRequest` and the handler's backoff).
//! One transactional request is out at a time.

use alloc::vec::Vec;

use crate::backoff::Backoff;
use crate::retry::Retry;
use crate::txn::Queued;
use crate::types::{RequestId, Timestamp};

/// The transactional request queue (see the module documentation).
#[derive(Debug)]
pub(crate) struct TxnQueue {
    /// Waiting requests; the first of the lowest priority goes next. A request retried
    /// goes back behind the others even if one of its kind waits already.
    waiting: Vec<Queued>,
    /// The one transactional request on the wire, and what it asks.
    in_flight: Option<(RequestId, Queued)>,
    /// The request at the queue's head: its failures and backoff.
    retry: Retry,
}

impl TxnQueue {
    /// Nothing waiting, nothing on the wire, no failure.
    pub(crate) fn new() -> Self {
        Self {
            waiting: Vec::new(),
            in_flight: None,
            retry: Retry::new(),
        }
    }

    /// Queues `q` unless it is already queued. (One of the same kind may be on the wire:
    /// an AddPartitionsToTxn out for some partitions does not cover the ones added since.)
    pub(crate) fn enqueue(&mut self, q: Queued) {
        if !self.waiting.contains(&q) {
            self.waiting.push(q);
        }
    }

    /// Puts `q` behind the waiting requests, whatever waits already.
    pub(crate) fn push_back(&mut self, q: Queued) {
        self.waiting.push(q);
    }

    /// Whether `q` waits.
    pub(crate) fn contains(&self, q: &Queued) -> bool {
        self.waiting.contains(q)
    }

    /// The request that goes next by priority (stable within a priority), if any.
    pub(crate) fn next(&self) -> Option<&Queued> {
        self.next_index().map(|i| &self.waiting[i])
    }

    /// Takes [`TxnQueue::next`] off the queue.
    pub(crate) fn take_next(&mut self) -> Option<Queued> {
        self.next_index().map(|i| self.waiting.remove(i))
    }

    /// Drops every waiting request.
    pub(crate) fn clear(&mut self) {
        self.waiting.clear();
    }

    /// Drops every waiting request but the coordinator lookups (an abortable error:
    /// whatever the transaction asked is moot, the coordinator is still needed).
    pub(crate) fn keep_lookups_only(&mut self) {
        self.waiting
            .retain(|q| matches!(q, Queued::FindCoordinator(_)));
    }

    /// Whether a request waits or is on the wire that matches `f`.
    pub(crate) fn any_waiting_or_sent(&self, f: impl Fn(&Queued) -> bool) -> bool {
        self.waiting
            .iter()
            .chain(self.in_flight.as_ref().map(|(_, q)| q))
            .any(f)
    }

    /// `q` went out as request `id`.
    pub(crate) fn sent(&mut self, id: RequestId, q: Queued) {
        self.in_flight = Some((id, q));
    }

    /// The request on the wire, if any.
    pub(crate) fn in_flight(&self) -> Option<&(RequestId, Queued)> {
        self.in_flight.as_ref()
    }

    /// The request on the wire is answered or forgotten: takes it.
    pub(crate) fn take_in_flight(&mut self) -> Option<(RequestId, Queued)> {
        self.in_flight.take()
    }

    /// Whether the head request's backoff still runs at `now`.
    pub(crate) fn waits_at(&self, now: Timestamp) -> bool {
        self.retry.waits_at(now)
    }

    /// When the head request's backoff ends, if it runs past `now`.
    pub(crate) fn retry_deadline_after(&self, now: Timestamp) -> Option<Timestamp> {
        self.retry.deadline_after(now)
    }

    /// The head request succeeded: its failures are forgotten.
    pub(crate) fn succeeded(&mut self) {
        self.retry.succeeded();
    }

    /// Request `q` failed at `now`: it goes back behind the waiting requests, and the
    /// next one waits for the backoff.
    pub(crate) fn retry_later(&mut self, q: Queued, backoff: &mut Backoff, now: Timestamp) {
        self.retry.failed(backoff, now);
        self.waiting.push(q);
    }

    /// The backoff no longer holds anything back (a forced close).
    pub(crate) fn cancel_wait(&mut self) {
        self.retry.cancel_wait();
    }

    fn next_index(&self) -> Option<usize> {
        (0..self.waiting.len()).min_by_key(|&i| self.waiting[i].priority())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::{Completion, CoordinatorType, IdRequest};

    #[test]
    fn queue_serves_by_priority() {
        let mut t = TxnQueue::new();
        t.enqueue(Queued::InitProducerId(IdRequest::Bump));
        t.enqueue(Queued::EndTxn(Completion::Commit));
        t.enqueue(Queued::AddPartitions);
        t.enqueue(Queued::AddPartitions);
        t.enqueue(Queued::FindCoordinator(CoordinatorType::Transaction));
        assert_eq!(t.waiting.len(), 4, "duplicates are not queued");
        let order: Vec<Queued> = core::iter::from_fn(|| t.take_next()).collect();
        assert_eq!(
            order,
            alloc::vec![
                Queued::FindCoordinator(CoordinatorType::Transaction),
                Queued::AddPartitions,
                Queued::EndTxn(Completion::Commit),
                Queued::InitProducerId(IdRequest::Bump),
            ]
        );
    }
}
