//! The enqueue ticket sequencer, for drivers that write requests from concurrent tasks.
//!
//! The core hands out requests in the order their sequences were stamped. A driver that
//! puts each request on its connection's queue in that order, from one loop, needs
//! nothing here (the drivers kacrab ships all do: a stalled connection then holds back
//! only itself). A driver whose tasks reserve their place on the sockets concurrently
//! could let a later request reach a broker before an earlier one for the same
//! partition, after a leader moved: the broker then sees sequence `n + 1` before `n`
//! and answers OUT_OF_ORDER_SEQUENCE_NUMBER, which costs a retry. Tickets stop that: every produce request carries a
//! [`Ticket`] reserved in drain order, and a task may put a request on its socket only
//! when [`TicketSequencer::may_enqueue`] says it is that ticket's turn. The turn advances
//! as soon as the request is *enqueued* on its socket, not when it is answered, so
//! pipelining is untouched.
//!
//! A ticket can span several requests (`parts`): a dispatch that goes to several brokers
//! at once holds the turn until every part has been enqueued, so a later ticket can never
//! overtake one of its parts.
//!
//! A ticket can be given up at any time, before or at its turn ([`TicketSequencer::abandon`]):
//! its connection died, or the session released it. A ticket abandoned ahead of its turn
//! is remembered and skipped when the turn reaches it, so no later ticket waits for a
//! request that will never be written.

use alloc::collections::BTreeSet;

/// A place in the enqueue order. Reserved by [`TicketSequencer::reserve`] in drain order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket {
    /// Position in the order, from 0.
    pub seq: u64,
    /// How many requests share this ticket (at least 1).
    pub parts: u32,
}

/// Reserves tickets in order and tracks whose turn it is. Pure data: drivers wrap it in
/// whatever synchronisation they use and wake waiters after [`TicketSequencer::enqueued`]
/// and [`TicketSequencer::abandon`].
#[derive(Clone, Debug, Default)]
pub struct TicketSequencer {
    /// The next ticket [`TicketSequencer::reserve`] hands out.
    next: u64,
    /// The ticket whose turn it is. Invariant: `serving <= next` when tickets come from
    /// this sequencer's own `reserve`.
    serving: u64,
    /// Parts of the serving ticket already enqueued. Invariant: less than its `parts`.
    serving_done: u32,
    /// Tickets given up before their turn. Invariant: every element is greater than
    /// `serving` (one equal to it is skipped at once).
    abandoned: BTreeSet<u64>,
}

impl TicketSequencer {
    /// A sequencer whose first ticket is 0.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            next: 0,
            serving: 0,
            serving_done: 0,
            abandoned: BTreeSet::new(),
        }
    }

    /// Reserves the next ticket, covering `parts` requests (`parts` of 0 counts as 1).
    pub fn reserve(&mut self, parts: u32) -> Ticket {
        let t = Ticket {
            seq: self.next,
            parts: parts.max(1),
        };
        self.next += 1;
        t
    }

    /// Whether a request holding `ticket` may be enqueued on its socket now: every
    /// earlier ticket has been fully enqueued. A retry that reuses an already served
    /// ticket may always go: its order was fixed when it was first enqueued.
    #[must_use]
    pub const fn may_enqueue(&self, ticket: Ticket) -> bool {
        ticket.seq <= self.serving
    }

    /// Records that one part of `ticket` was enqueued. Advances the turn once every part
    /// of the serving ticket is in. Calls for tickets already served (retries) or not yet
    /// serving (a contract violation, ignored in release builds) change nothing.
    pub fn enqueued(&mut self, ticket: Ticket) {
        debug_assert!(
            ticket.seq <= self.serving,
            "ticket enqueued before its turn"
        );
        if ticket.seq != self.serving {
            return;
        }
        self.serving_done += 1;
        if self.serving_done >= ticket.parts.max(1) {
            self.advance();
        }
    }

    /// Gives up the remaining parts of `ticket` (its requests were dropped before they
    /// could be enqueued), so later tickets are not blocked forever. Works at any time:
    /// a ticket abandoned ahead of its turn is skipped when the turn reaches it; one
    /// already served changes nothing.
    pub fn abandon(&mut self, ticket: Ticket) {
        if ticket.seq == self.serving {
            self.advance();
        } else if ticket.seq > self.serving {
            self.abandoned.insert(ticket.seq);
        }
        debug_assert!(self.abandoned.iter().all(|&t| t > self.serving));
    }

    /// Moves the turn to the next ticket, skipping every one given up ahead of its turn.
    fn advance(&mut self) {
        self.serving += 1;
        self.serving_done = 0;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }

    /// The ticket whose turn it is.
    #[must_use]
    pub const fn serving(&self) -> u64 {
        self.serving
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_go_in_reservation_order() {
        let mut s = TicketSequencer::new();
        let a = s.reserve(1);
        let b = s.reserve(1);
        assert!(s.may_enqueue(a));
        assert!(!s.may_enqueue(b), "b must wait for a");
        s.enqueued(a);
        assert!(s.may_enqueue(b));
        // A retry of a reuses its ticket and may always go, without moving the turn.
        assert!(s.may_enqueue(a));
        s.enqueued(a);
        assert_eq!(s.serving(), 1);
        s.enqueued(b);
        assert_eq!(s.serving(), 2);
    }

    /// kacrab 0.4's defect 1: a dispatch spanning two brokers released the turn after the
    /// first broker, so a later dispatch overtook its second part.
    #[test]
    fn multi_broker_dispatch_holds_the_turn_until_every_part_is_enqueued() {
        let mut s = TicketSequencer::new();
        let spanning = s.reserve(2);
        let later = s.reserve(1);
        s.enqueued(spanning); // broker 7's part is on its socket
        assert!(
            !s.may_enqueue(later),
            "later ticket must not overtake broker 8's part"
        );
        s.enqueued(spanning); // broker 8's part
        assert!(s.may_enqueue(later));
    }

    /// A ticket given up before its turn (its connection died while an earlier ticket
    /// was still being written elsewhere) must not block every later ticket when the
    /// turn reaches it.
    #[test]
    fn a_ticket_abandoned_ahead_of_its_turn_is_skipped_when_its_turn_comes() {
        let mut s = TicketSequencer::new();
        let a = s.reserve(1);
        let b = s.reserve(1);
        let c = s.reserve(2);
        let d = s.reserve(1);
        let e = s.reserve(1);
        s.abandon(b);
        s.abandon(d);
        assert_eq!(s.serving(), 0, "a still holds the turn");
        assert!(!s.may_enqueue(c));
        s.enqueued(a);
        assert_eq!(s.serving(), 2, "b was given up");
        assert!(s.may_enqueue(c) && !s.may_enqueue(e));
        s.enqueued(c);
        s.enqueued(c);
        assert_eq!(s.serving(), 4, "d was given up");
        assert!(s.may_enqueue(e));
        s.abandon(a);
        assert_eq!(s.serving(), 4, "giving up a served ticket changes nothing");
    }

    #[test]
    fn abandoning_the_serving_ticket_also_skips_later_abandoned_ones() {
        let mut s = TicketSequencer::new();
        let a = s.reserve(1);
        let b = s.reserve(1);
        let c = s.reserve(1);
        s.abandon(b);
        s.abandon(a);
        assert_eq!(s.serving(), 2);
        assert!(s.may_enqueue(c));
    }

    #[test]
    fn abandon_releases_the_turn() {
        let mut s = TicketSequencer::new();
        let a = s.reserve(3);
        let b = s.reserve(1);
        s.enqueued(a);
        s.abandon(a);
        assert!(s.may_enqueue(b));
    }
}
