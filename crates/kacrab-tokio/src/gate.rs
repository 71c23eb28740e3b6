//! What a handle's `send` waits for before it hands a record over, so that no queue
//! between the application and the session grows without bound:
//!
//! * **room on the channel**: a send takes permits for its record's weight from a
//!   semaphore of `min(buffer.memory, 1 MiB)` bytes, and the driver task gives them back
//!   once it took the record off the channel (a sender faster than the driver waits for
//!   the driver, not for memory to run out);
//! * **the session's admission** while the session holds sends behind a full
//!   `buffer.memory` (its backlog, timed by `max.block.ms`): the driver task publishes
//!   whether it does after every wake-up, and a send posted meanwhile waits until the
//!   session took its record in, or refused it. This gate has no timer: the session
//!   times the wait.
//!
//! The bytes the application can hold in the producer are therefore at most
//! `buffer.memory` in the core, plus what was posted before the driver task saw the
//! buffer full (at most the channel's bytes), plus one record per waiting caller.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use kacrab_driver::{ConnectError, ProduceError, SendError};

use tokio::sync::Semaphore;

use crate::ProducerRecord;

/// The most bytes of records on their way to the driver task (at most `buffer.memory`).
const HAND_OFF_LIMIT: usize = 1 << 20;

/// What a record adds to a message on the channel besides its key and value.
const RECORD_OVERHEAD: usize = 64;

/// Whether the session holds sends behind a full `buffer.memory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buffer {
    HasRoom,
    /// A send posted now waits in the session's backlog: its caller waits for it to be
    /// admitted (or refused when `max.block.ms` passes).
    Blocked,
}

/// See the module documentation. Shared by the handles and the driver task.
#[derive(Debug)]
pub(crate) struct Gate {
    /// Permits are bytes of records not yet taken off the channel by the driver task.
    /// Invariant: the permits held by posted records plus the available ones are
    /// `limit`; closed once the driver task ends.
    hand_off: Semaphore,
    /// `min(buffer.memory, 1 MiB)`, at least 1.
    limit: u32,
    /// The session's [`Buffer`] as of the driver task's last wake-up (`true`: blocked).
    blocked: AtomicBool,
    /// The final connection failure that ended the session, if one did: set once,
    /// before `hand_off` closes, so a send refused because the driver stopped carries
    /// the cause.
    failure: OnceLock<ConnectError>,
}

/// The channel's room for one record, taken: it is the driver task's to give back once
/// the record is posted ([`Permit::posted`]); dropped unposted, it returns to the gate.
pub(crate) struct Permit<'a> {
    permit: tokio::sync::SemaphorePermit<'a>,
    weight: u32,
}

impl Permit<'_> {
    /// The record is on the channel; the driver task gives the weight back when it takes
    /// it (see [`Gate::taken`]).
    pub(crate) fn posted(self) -> u32 {
        self.permit.forget();
        self.weight
    }
}

/// The driver task has stopped: nothing more is taken.
#[derive(Debug)]
pub(crate) struct Stopped;

impl Gate {
    pub(crate) fn new(buffer_memory: usize) -> Self {
        let limit = u32::try_from(buffer_memory.min(HAND_OFF_LIMIT))
            .unwrap_or(u32::MAX)
            .max(1);
        Self {
            hand_off: Semaphore::new(limit as usize),
            limit,
            blocked: AtomicBool::new(false),
            failure: OnceLock::new(),
        }
    }

    /// What `record` weighs on the channel (the core counts `buffer.memory` itself), at
    /// most the channel's limit so that one large record can always pass alone.
    fn weight(&self, record: &ProducerRecord) -> u32 {
        let size = record.key.as_ref().map_or(0, |k| k.len())
            + record.value.as_ref().map_or(0, |v| v.len())
            + RECORD_OVERHEAD;
        u32::try_from(size).unwrap_or(u32::MAX).min(self.limit)
    }

    /// Waits for room on the channel for `record`.
    pub(crate) async fn room_for(&self, record: &ProducerRecord) -> Result<Permit<'_>, Stopped> {
        let weight = self.weight(record);
        let permit = self
            .hand_off
            .acquire_many(weight)
            .await
            .map_err(|_| Stopped)?;
        Ok(Permit { permit, weight })
    }

    /// Whether a send posted now waits for the session's admission.
    pub(crate) fn buffer(&self) -> Buffer {
        if self.blocked.load(Ordering::Acquire) {
            Buffer::Blocked
        } else {
            Buffer::HasRoom
        }
    }

    /// The driver task took records weighing `taken` off the channel, and the session's
    /// buffer is `buffer`.
    pub(crate) fn publish(&self, taken: u32, buffer: Buffer) {
        self.blocked
            .store(buffer == Buffer::Blocked, Ordering::Release);
        if taken > 0 {
            self.hand_off.add_permits(taken as usize);
        }
    }

    /// The driver task ended (with the session's final connection failure, if that
    /// ended it): every waiting and later send fails.
    pub(crate) fn stop(&self, failure: Option<ConnectError>) {
        if let Some(failure) = failure {
            let _ = self.failure.set(failure);
        }
        self.hand_off.close();
    }

    /// Why a send is refused once the driver task stopped: the final connection failure
    /// that ended the session (as Java's `KafkaProducer.send` rethrows the
    /// AuthenticationException), else `Closed`.
    pub(crate) fn refusal(&self) -> ProduceError {
        match self.failure.get() {
            Some(error) => ProduceError::Connection {
                error: error.clone(),
                possibly_written: false,
            },
            None => ProduceError::Send(SendError::Closed),
        }
    }
}
