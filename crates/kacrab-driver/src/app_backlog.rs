//! The backlog's queue, which keeps count of the sends in it: the metrics read that
//! count after every input, and a driver without backpressure of its own can queue
//! hundreds of thousands of sends behind a full `buffer.memory`, so counting them by a
//! walk would make each send O(backlog).

use std::collections::VecDeque;

use super::Queued;

/// Commands in call order, with the number of [`Queued::Send`]s among them.
/// Invariant: `sends` is the number of sends in `queue`.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    queue: VecDeque<Queued>,
    sends: usize,
}

impl Backlog {
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub(super) fn front(&self) -> Option<&Queued> {
        self.queue.front()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Queued> {
        self.queue.iter()
    }

    /// The sends waiting, in O(1).
    pub(super) fn sends(&self) -> usize {
        self.sends
    }

    pub(super) fn push_back(&mut self, q: Queued) {
        self.sends += usize::from(matches!(q, Queued::Send { .. }));
        self.queue.push_back(q);
    }

    pub(super) fn push_front(&mut self, q: Queued) {
        self.sends += usize::from(matches!(q, Queued::Send { .. }));
        self.queue.push_front(q);
    }

    pub(super) fn pop_front(&mut self) -> Option<Queued> {
        let q = self.queue.pop_front()?;
        self.sends -= usize::from(matches!(q, Queued::Send { .. }));
        Some(q)
    }

    /// Empties the backlog, handing out what it held in order.
    pub(super) fn take(&mut self) -> impl Iterator<Item = Queued> {
        self.sends = 0;
        std::mem::take(&mut self.queue).into_iter()
    }
}
