//! The ticket sequencer shared by the connection tasks.
//!
//! The core reserves a [`Ticket`] for every Produce request in the order it stamps
//! them; the session hands each one out exactly once, on an `Output::Transmit` or an
//! `Output::Release`. A connection task writes a ticketed frame only when every earlier
//! ticket has been handed to its socket or given up, so a Produce never overtakes an
//! earlier one across connections (per connection the FIFO channel keeps the order).

use std::sync::Mutex;

use kacrab_idempotence::ticket::{Ticket, TicketSequencer};
use tokio::sync::Notify;

/// A [`TicketSequencer`] behind a std mutex, with a Tokio [`Notify`] for the tasks
/// waiting for their turn.
#[derive(Debug, Default)]
pub(crate) struct SharedSequencer {
    state: Mutex<TicketSequencer>,
    turn: Notify,
}

impl SharedSequencer {
    fn lock(&self) -> std::sync::MutexGuard<'_, TicketSequencer> {
        // A panic while holding the lock leaves plain counters behind: still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until `ticket` may be put on its socket.
    pub(crate) async fn wait_turn(&self, ticket: Ticket) {
        loop {
            let notified = self.turn.notified();
            tokio::pin!(notified);
            // Register before checking, so a turn change in between is not missed.
            notified.as_mut().enable();
            if self.lock().may_enqueue(ticket) {
                return;
            }
            notified.await;
        }
    }

    /// `ticket`'s frame was handed to its socket.
    pub(crate) fn enqueued(&self, ticket: Ticket) {
        self.lock().enqueued(ticket);
        self.turn.notify_waiters();
    }

    /// `ticket`'s frame will never be written (its connection died, or the session
    /// released it). Later tickets stop waiting for it, now or when its turn comes.
    pub(crate) fn abandon(&self, ticket: Ticket) {
        self.lock().abandon(ticket);
        self.turn.notify_waiters();
    }

    /// The ticket whose turn it is (tests).
    #[cfg(test)]
    pub(crate) fn serving(&self) -> u64 {
        self.lock().serving()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seq: u64) -> Ticket {
        Ticket { seq, parts: 1 }
    }

    #[test]
    fn abandoned_ahead_of_turn_is_skipped_when_its_turn_comes() {
        let s = SharedSequencer::default();
        s.abandon(t(1));
        s.abandon(t(3));
        assert_eq!(s.serving(), 0);
        s.enqueued(t(0));
        assert_eq!(s.serving(), 2, "1 was abandoned");
        s.enqueued(t(2));
        assert_eq!(s.serving(), 4, "3 was abandoned");
        s.abandon(t(0));
        assert_eq!(s.serving(), 4, "abandoning a served ticket changes nothing");
    }

    #[tokio::test]
    async fn a_later_ticket_waits_for_an_earlier_one() {
        let s = std::sync::Arc::new(SharedSequencer::default());
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move {
                s.wait_turn(t(1)).await;
            })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        s.wait_turn(t(0)).await;
        s.enqueued(t(0));
        waiter.await.unwrap();
    }
}
