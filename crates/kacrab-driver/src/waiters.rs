//! The records the core accepted, waiting for their outcome, by the core's record id.

use std::collections::VecDeque;

use kacrab_idempotence::RecordId;

use crate::completion::SendId;

/// A record the core accepted, waiting for its outcome.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiter {
    pub(crate) id: SendId,
    pub(crate) timestamp: i64,
}

/// Waiters by the core's [`RecordId`]. The core assigns ids consecutively and records
/// enter it in send order, so this is a deque indexed from the oldest unresolved id.
/// Invariant: the front slot, if any, is occupied, and the occupied slots' send ids
/// ascend.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    base: u64,
    pub(crate) slots: VecDeque<Option<Waiter>>,
}

impl Waiters {
    pub(crate) fn insert(&mut self, record: RecordId, waiter: Waiter) {
        if self.slots.is_empty() {
            self.base = record.0;
        }
        while self.base + (self.slots.len() as u64) < record.0 {
            self.slots.push_back(None);
        }
        debug_assert_eq!(self.base + self.slots.len() as u64, record.0);
        self.slots.push_back(Some(waiter));
    }

    pub(crate) fn take(&mut self, record: RecordId) -> Option<Waiter> {
        let index = usize::try_from(record.0.checked_sub(self.base)?).ok()?;
        let waiter = self.slots.get_mut(index)?.take();
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        waiter
    }

    /// The oldest send still waiting for its outcome.
    pub(crate) fn oldest(&self) -> Option<SendId> {
        self.slots.front().copied().flatten().map(|w| w.id)
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.iter().flatten().count()
    }
}
