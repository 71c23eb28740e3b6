//! A one-shot slot: the I/O thread fills it once, an application thread waits for it.
//! Dropping the filling side unfilled wakes the waiter with `None`, so no waiter can hang
//! on an I/O thread that is gone.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

enum State<T> {
    Pending,
    Ready(T),
    /// The sender was dropped unfilled, or the value was taken.
    Gone,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The filling side.
pub(crate) struct Sender<T>(Option<Arc<Slot<T>>>);

/// The waiting side.
pub(crate) struct Receiver<T>(Arc<Slot<T>>);

pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State::Pending),
        ready: Condvar::new(),
    });
    (Sender(Some(Arc::clone(&slot))), Receiver(slot))
}

impl<T> Sender<T> {
    pub(crate) fn send(mut self, value: T) {
        if let Some(slot) = self.0.take() {
            *slot.lock() = State::Ready(value);
            slot.ready.notify_all();
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            let mut state = slot.lock();
            if matches!(*state, State::Pending) {
                *state = State::Gone;
            }
            drop(state);
            slot.ready.notify_all();
        }
    }
}

impl<T> Receiver<T> {
    /// Blocks until the value arrives; `None` if the sender was dropped unfilled.
    pub(crate) fn wait(&self) -> Option<T> {
        let mut state = self.0.lock();
        loop {
            match std::mem::replace(&mut *state, State::Gone) {
                State::Pending => {
                    *state = State::Pending;
                    state = self
                        .0
                        .ready
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                State::Ready(v) => return Some(v),
                State::Gone => return None,
            }
        }
    }

    /// As [`Receiver::wait`], giving up at `deadline` (`Err(())`).
    pub(crate) fn wait_until(&self, deadline: Instant) -> Result<Option<T>, ()> {
        let mut state = self.0.lock();
        loop {
            match std::mem::replace(&mut *state, State::Gone) {
                State::Pending => {
                    *state = State::Pending;
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(());
                    }
                    state = self
                        .0
                        .ready
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                State::Ready(v) => return Ok(Some(v)),
                State::Gone => return Ok(None),
            }
        }
    }

    /// Whether [`Receiver::wait`] would return at once.
    pub(crate) fn is_ready(&self) -> bool {
        !matches!(*self.0.lock(), State::Pending)
    }
}
