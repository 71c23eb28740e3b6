//! The gate application threads pass to hand a record to the I/O thread: it refuses
//! sends once the producer is closed, fatal or stopped, bounds the bytes in flight on
//! the channel, and says whether the session is holding sends behind a full
//! `buffer.memory` (then `send` waits for its record's admission, as Java's blocks for
//! `max.block.ms`; the session times that wait, not this gate).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use kacrab_idempotence::KafkaError;

use crate::error::SendError;

/// Whether the I/O thread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IoThread {
    Running,
    /// It ended after the session finished (a close).
    Stopped,
    /// It panicked.
    Died,
}

/// Whether `close` was called: later sends are refused at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Life {
    Open,
    Closed,
}

/// Whether the session holds sends behind a full `buffer.memory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buffer {
    HasRoom,
    /// A send posted now waits in the session's backlog: its caller waits for it to be
    /// admitted (or refused when `max.block.ms` passes).
    Blocked,
}

#[derive(Debug)]
pub(crate) struct GateState {
    pub(crate) life: Life,
    pub(crate) thread: IoThread,
    /// The core's fatal error, once the I/O thread saw it.
    fatal: Option<KafkaError>,
    /// The final connection failure that ended the session, once the I/O thread ended
    /// because of it.
    failure: Option<kacrab_driver::ConnectError>,
    buffer: Buffer,
    /// Bytes posted and not yet taken by the I/O thread. Invariant: at most
    /// `posted_limit` unless one record larger than it was posted alone.
    posted_bytes: usize,
    /// Application threads waiting for `posted_bytes` to fall.
    waiting: usize,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    posted_limit: usize,
}

/// A send the gate let through, holding the gate until the record is on the channel
/// (so a close that shut the gate sees every record posted before it).
pub(crate) struct Admitted<'a> {
    guard: MutexGuard<'a, GateState>,
    size: usize,
    /// Whether the caller must wait for its record's admission by the session.
    pub(crate) buffer: Buffer,
}

impl Admitted<'_> {
    /// The record is on the channel: count its bytes.
    pub(crate) fn posted(mut self) {
        self.guard.posted_bytes += self.size;
    }
}

impl Gate {
    pub(crate) fn new(posted_limit: usize) -> Self {
        Self {
            state: Mutex::new(GateState {
                life: Life::Open,
                thread: IoThread::Running,
                fatal: None,
                failure: None,
                buffer: Buffer::HasRoom,
                posted_bytes: 0,
                waiting: 0,
            }),
            changed: Condvar::new(),
            posted_limit: posted_limit.max(1),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets a record of `size` bytes through once the channel has room for it. On the
    /// I/O thread (a callback sending) it never waits: the thread it would wait for is
    /// the one running it.
    pub(crate) fn admit(&self, size: usize, on_io_thread: bool) -> Result<Admitted<'_>, SendError> {
        let mut g = self.lock();
        loop {
            if let (Life::Closed, Some(failure)) = (g.life, &g.failure) {
                return Err(SendError::Connection(failure.clone()));
            }
            if g.life == Life::Closed {
                return Err(SendError::Rejected(kacrab_idempotence::SendError::Closed));
            }
            if let Some(e) = g.fatal {
                return Err(SendError::Rejected(kacrab_idempotence::SendError::Fatal(e)));
            }
            if g.thread != IoThread::Running {
                return Err(SendError::Terminated);
            }
            let room = g.posted_bytes == 0 || g.posted_bytes + size <= self.posted_limit;
            if room || on_io_thread {
                let buffer = if on_io_thread {
                    Buffer::HasRoom
                } else {
                    g.buffer
                };
                return Ok(Admitted {
                    guard: g,
                    size,
                    buffer,
                });
            }
            // The I/O thread takes everything posted within one wake-up; it wakes us
            // once the channel is half empty.
            g.waiting += 1;
            g = self.changed.wait(g).unwrap_or_else(PoisonError::into_inner);
            g.waiting -= 1;
        }
    }

    /// The I/O thread took `taken` bytes off the channel and tells what it knows.
    pub(crate) fn publish(&self, taken: usize, buffer: Buffer, fatal: Option<KafkaError>) {
        let mut g = self.lock();
        g.posted_bytes = g.posted_bytes.saturating_sub(taken);
        g.buffer = buffer;
        if g.fatal.is_none() {
            g.fatal = fatal;
        }
        let wake = g.waiting > 0 && (g.posted_bytes <= self.posted_limit / 2 || g.fatal.is_some());
        drop(g);
        if wake {
            self.changed.notify_all();
        }
    }

    /// `close` was called: later sends are refused.
    pub(crate) fn close(&self) {
        self.lock().life = Life::Closed;
        self.changed.notify_all();
    }

    /// The I/O thread ended (with the session's final connection failure, if that ended
    /// it).
    pub(crate) fn stop(&self, thread: IoThread, failure: Option<kacrab_driver::ConnectError>) {
        {
            let mut g = self.lock();
            g.life = Life::Closed;
            g.thread = thread;
            g.failure = failure;
        }
        self.changed.notify_all();
    }
}
