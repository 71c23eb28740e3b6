//! What a driver keeps per send until the send's completion, by [`SendId`].

use std::collections::VecDeque;

use crate::completion::SendId;

/// A driver's per-send state (a reply channel, a waker) until the session completes the
/// send, by [`SendId`]. Ids ascend by one per [`Session::send`](crate::Session::send),
/// and completions come roughly in that order, so this is a deque indexed from the
/// oldest id still held: an insert is a push at the back and a removal a slot taken,
/// with no hashing (a hash map of sends cost the Tokio driver about a sixth of its CPU
/// at full speed).
#[derive(Debug)]
pub struct SendSlots<T> {
    /// The id of `slots[0]`.
    base: u64,
    /// Invariant: empty, or its front slot is occupied.
    slots: VecDeque<Option<T>>,
    /// Invariant: the occupied slots.
    len: usize,
}

impl<T> Default for SendSlots<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SendSlots<T> {
    /// No sends held.
    #[must_use]
    pub fn new() -> Self {
        Self {
            base: 0,
            slots: VecDeque::new(),
            len: 0,
        }
    }

    /// Holds `value` for send `id`, replacing what was held for it. Cheapest for an id
    /// newer than every id held, which is how ids come.
    pub fn insert(&mut self, id: SendId, value: T) -> Option<T> {
        if self.slots.is_empty() {
            self.base = id.0;
        }
        while id.0 < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let index = usize::try_from(id.0 - self.base).unwrap_or(usize::MAX);
        while self.slots.len() <= index {
            self.slots.push_back(None);
        }
        let old = self.slots[index].replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Takes what is held for send `id`.
    pub fn remove(&mut self, id: SendId) -> Option<T> {
        let index = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        let value = self.slots.get_mut(index)?.take()?;
        self.len -= 1;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(value)
    }

    /// How many sends are held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no send is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Takes everything held, oldest send first.
    pub fn drain(&mut self) -> impl Iterator<Item = (SendId, T)> + '_ {
        let base = self.base;
        self.len = 0;
        self.slots
            .drain(..)
            .enumerate()
            .filter_map(move |(i, v)| v.map(|v| (SendId(base + i as u64), v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_sends_in_any_order_of_removal() {
        let mut s = SendSlots::new();
        for i in 10..15 {
            assert!(s.insert(SendId(i), i).is_none());
        }
        assert_eq!(s.remove(SendId(12)), Some(12));
        assert_eq!(s.remove(SendId(12)), None, "taken once");
        assert_eq!(s.remove(SendId(10)), Some(10));
        assert_eq!(s.len(), 3);
        assert_eq!(s.slots.front(), Some(&Some(11)), "the front is occupied");
        assert_eq!(s.remove(SendId(99)), None);
        assert_eq!(s.remove(SendId(3)), None);
        assert!(
            s.insert(SendId(8), 8).is_none(),
            "an older id fits in front"
        );
        assert_eq!(s.insert(SendId(13), 130), Some(13), "replaces");
        let all: Vec<(SendId, u64)> = s.drain().collect();
        assert_eq!(
            all,
            [
                (SendId(8), 8),
                (SendId(11), 11),
                (SendId(13), 130),
                (SendId(14), 14)
            ]
        );
        assert!(s.is_empty());
    }
}
