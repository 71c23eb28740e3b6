//! The producer's identity: its producer id and epoch (Java's global
//! `producerIdAndEpoch`), where getting one stands, and the InitProducerId's retry.

use crate::backoff::Backoff;
use crate::retry::Retry;
use crate::types::{ProducerIdAndEpoch, RequestId, Timestamp};

/// Where the producer is with its producer id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdState {
    /// Idempotence is off: batches are not stamped.
    Disabled,
    /// An InitProducerId is needed (at start, or after the epoch was exhausted).
    Needed,
    /// InitProducerId is outstanding.
    Requested(RequestId),
    /// Transactional: the producer id comes from `init_transactions` (and after an
    /// abort's bump); nothing asks for one on its own.
    Transactional,
    /// `id` is valid.
    Ready,
}

/// The producer id, its state and its retry.
#[derive(Debug)]
pub(crate) struct Identity {
    /// The current identity. Invariant: valid while `Ready`, and
    /// [`ProducerIdAndEpoch::NONE`] while `Disabled`.
    id: ProducerIdAndEpoch,
    state: IdState,
    /// The idempotent producer's own InitProducerId: its failures and backoff (the
    /// transactional one retries through the transactional queue).
    retry: Retry,
}

impl Identity {
    pub(crate) fn new(state: IdState) -> Self {
        Self {
            id: ProducerIdAndEpoch::NONE,
            state,
            retry: Retry::new(),
        }
    }

    /// The current producer id and epoch.
    pub(crate) fn id(&self) -> ProducerIdAndEpoch {
        self.id
    }

    pub(crate) fn state(&self) -> IdState {
        self.state
    }

    /// Whether the idempotent producer may ask for an id at `now`.
    pub(crate) fn may_request(&self, now: Timestamp) -> bool {
        self.state == IdState::Needed && !self.retry.waits_at(now)
    }

    /// InitProducerId `request` went out.
    pub(crate) fn requested(&mut self, request: RequestId) {
        self.state = IdState::Requested(request);
    }

    /// A valid id arrived: it is the producer's, and the failures are forgotten.
    pub(crate) fn ready(&mut self, id: ProducerIdAndEpoch) {
        debug_assert!(id.is_valid());
        self.id = id;
        self.state = IdState::Ready;
        self.retry.succeeded();
    }

    /// The epoch was bumped (or a new id doubles as the bump): `id` is the producer's.
    pub(crate) fn bumped(&mut self, id: ProducerIdAndEpoch) {
        self.id = id;
    }

    /// The InitProducerId failed: ask again after the backoff.
    pub(crate) fn failed(&mut self, backoff: &mut Backoff, now: Timestamp) {
        self.state = IdState::Needed;
        self.retry.failed(backoff, now);
    }

    /// The epoch cannot be bumped further: a new producer id is needed.
    pub(crate) fn exhausted(&mut self) {
        self.id = ProducerIdAndEpoch::NONE;
        self.state = IdState::Needed;
    }

    /// Transactional: the id is not being asked for (a request was dropped or failed).
    pub(crate) fn unasked(&mut self) {
        self.state = IdState::Transactional;
    }

    /// When the next InitProducerId may go, if that is still ahead of `now`.
    pub(crate) fn retry_deadline_after(&self, now: Timestamp) -> Option<Timestamp> {
        self.retry.deadline_after(now)
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self) {
        match self.state {
            IdState::Ready => assert!(self.id.is_valid(), "Ready without a valid id"),
            IdState::Disabled => assert_eq!(self.id, ProducerIdAndEpoch::NONE, "id while disabled"),
            IdState::Needed | IdState::Requested(_) | IdState::Transactional => {}
        }
    }
}
