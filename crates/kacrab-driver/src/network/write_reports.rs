//! The driver's reports that frames were written: each connection counts the
//! [`Output::Transmit`] frames it handed to the driver and those the driver reported
//! completely written ([`Session::handle_transmitted`](crate::Session::handle_transmitted)),
//! in order. An `acks=0` Produce request gets no answer, so the write is its completion:
//! its records are delivered when the driver reports its frame written, not when the
//! frame is handed over. Java completes such a send in `NetworkClient.
//! handleCompletedSends`, after `Selector.poll` finished writing it; a connection lost
//! before then fails it (`NetworkClient.processDisconnection`), and an unfinished send
//! times out under `request.timeout.ms` from the hand-off as every in-flight request
//! does (`InFlightRequest.sendTimeMs`, `NetworkClient.handleTimedOutRequests`).
//!
//! Every other request keeps its timer from the hand-off (Java's too) and needs no
//! report: its answer completes it.

use std::collections::VecDeque;

use kacrab_idempotence::ticket::Ticket;
use kacrab_idempotence::{Producer, RequestFailure, RequestId, Timestamp};
use kacrab_wire::Frame;

use super::Network;
use crate::output::{ConnId, Output};

/// The position of one `Transmit` frame among those handed to the driver on its
/// connection (0 for the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FrameIndex(u64);

/// Whether the broker answers a request handed over: an `acks=0` Produce request gets
/// no answer, and its correlation id is kept to recognise a broker that answers anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// An answer completes the request.
    Expected,
    /// No answer comes: the write completes it.
    None {
        /// The request's correlation id on its connection.
        correlation_id: i32,
    },
}

/// An `acks=0` Produce request whose frame the driver has not yet reported written.
#[derive(Clone, Copy, Debug)]
struct AwaitingWrite {
    frame: FrameIndex,
    request: RequestId,
    correlation_id: i32,
    /// `request.timeout.ms` from the hand-off: a write not finished by then closes the
    /// connection.
    deadline: Timestamp,
}

/// How many `acks=0` correlation ids a connection remembers: far more than can be
/// outstanding before an answer to one of them could arrive.
const UNANSWERED_REMEMBERED: usize = 64;

/// One connection's frames handed to the driver and reported written.
#[derive(Debug, Default)]
pub(super) struct WriteReports {
    /// The correlation ids of the last `acks=0` requests handed over, oldest first (at
    /// most [`UNANSWERED_REMEMBERED`]): an answer to one is recognised, not taken for
    /// garbage.
    unanswered: VecDeque<i32>,
    /// Frames handed to the driver. Invariant: at least `reported`.
    handed: u64,
    /// Frames the driver reported completely written.
    reported: u64,
    /// Frames known written: those reported, and those before an `acks=0` request the
    /// broker answered (which it read whole). Invariant: in `reported..=handed`.
    written: u64,
    /// Invariant: frames strictly ascending, each in `written..handed`; deadlines
    /// ascending (they are taken in hand-off order).
    awaiting: VecDeque<AwaitingWrite>,
}

impl WriteReports {
    /// Counts one frame handed to the driver; returns its position.
    fn hand(&mut self) -> FrameIndex {
        let index = FrameIndex(self.handed);
        self.handed += 1;
        index
    }

    /// Whether a request awaits its write report.
    pub(super) fn is_empty(&self) -> bool {
        self.awaiting.is_empty()
    }

    /// When the oldest unreported `acks=0` write times out.
    pub(super) fn deadline(&self) -> Option<Timestamp> {
        self.awaiting.front().map(|a| a.deadline)
    }

    /// The `acks=0` requests whose frames were never reported written, in hand-off order.
    pub(super) fn take_unreported(&mut self) -> impl Iterator<Item = RequestId> + '_ {
        self.awaiting.drain(..).map(|a| a.request)
    }

    pub(super) fn assert_invariants(&self) {
        assert!(
            self.reported <= self.handed,
            "more frames reported than handed"
        );
        assert!(
            (self.reported..=self.handed).contains(&self.written),
            "frames known written are reported ones or handed ones"
        );
        for w in self.awaiting.iter().collect::<Vec<_>>().windows(2) {
            assert!(w[0].frame < w[1].frame, "awaiting writes out of order");
            assert!(
                w[0].deadline <= w[1].deadline,
                "awaiting deadlines out of order"
            );
        }
        for a in &self.awaiting {
            assert!(
                (self.written..self.handed).contains(&a.frame.0),
                "an awaiting write is handed and unreported"
            );
        }
    }
}

impl Network {
    /// Hands `frame` to the driver on `conn` (every `Output::Transmit` goes through
    /// here, so the frames the driver reports are counted in the same order); returns
    /// its position, or `None` when the session no longer has `conn`.
    pub(super) fn push_transmit(
        &mut self,
        conn: ConnId,
        frame: Frame,
        ticket: Option<Ticket>,
    ) -> Option<FrameIndex> {
        let c = self.conn_mut(conn)?;
        let index = c.writes.hand();
        self.out.push_back(Output::Transmit {
            conn,
            frame,
            ticket,
        });
        Some(index)
    }

    /// The core's request `id` was handed to the driver on `conn` as `frame` (`None`:
    /// it was not, its connection failed sealing it) at `now`.
    pub(super) fn handed_over(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        id: RequestId,
        frame: Option<FrameIndex>,
        answer: Answer,
        now: Timestamp,
    ) {
        match (frame, answer) {
            // Handed to the driver's socket in order, as Java's `Selector.send`: the
            // request's timeout starts now (Java's `InFlightRequest.sendTimeMs`). A
            // transmit that failed (TLS) already failed the request with its connection.
            (Some(_), Answer::Expected) => {
                if core.is_outstanding(id) {
                    let written = core.handle_request_written(id, now);
                    debug_assert!(written.is_ok(), "an outstanding request: {written:?}");
                }
            }
            // An acks=0 Produce request: nothing comes back, so its write is its
            // completion, reported by the driver.
            (Some(frame), Answer::None { correlation_id }) => {
                let deadline = now + self.request_timeout;
                let Some(c) = self.conn_mut(conn) else { return };
                debug_assert!(c.writes.awaiting.back().is_none_or(|a| a.frame < frame));
                if c.writes.unanswered.len() == UNANSWERED_REMEMBERED {
                    c.writes.unanswered.pop_front();
                }
                c.writes.unanswered.push_back(correlation_id);
                c.writes.awaiting.push_back(AwaitingWrite {
                    frame,
                    request: id,
                    correlation_id,
                    deadline,
                });
            }
            // Not transmitted (its connection failed sealing it): no byte left.
            (None, _) => {
                if core.is_outstanding(id) {
                    let failed = core.handle_request_failed(id, RequestFailure::NotSent, now);
                    debug_assert!(failed.is_ok(), "an outstanding request: {failed:?}");
                }
            }
        }
    }

    /// The driver wrote the next `frames` frames handed to it on `conn` completely: the
    /// `acks=0` requests among them are complete.
    pub(crate) fn handle_transmitted(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        frames: usize,
        now: Timestamp,
    ) {
        // A connection the session already forgot (closed, failed): nothing waits on it.
        let Some(c) = self.conn_mut(conn) else { return };
        let unreported = c.writes.handed - c.writes.reported;
        let frames = u64::try_from(frames).unwrap_or(u64::MAX);
        debug_assert!(
            frames <= unreported,
            "{conn:?}: {frames} frames reported written, {unreported} handed and unreported"
        );
        c.writes.reported += frames.min(unreported);
        c.last_active = now;
        let reported = c.writes.reported;
        self.known_written(core, conn, reported, now);
    }

    /// The frames before position `upto` on `conn` are known written: the `acks=0`
    /// requests among them are complete.
    fn known_written(&mut self, core: &mut Producer, conn: ConnId, upto: u64, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        c.writes.written = c.writes.written.max(upto);
        let written = c.writes.written;
        while let Some(a) = c.writes.awaiting.front().copied() {
            if a.frame.0 >= written {
                break;
            }
            c.writes.awaiting.pop_front();
            // The core may have given it up (an abort, a close).
            if core.is_outstanding(a.request) {
                let written = core.handle_request_written(a.request, now);
                debug_assert!(written.is_ok(), "an outstanding request: {written:?}");
            }
        }
    }

    /// A frame answering `correlation_id` arrived on `conn`, and no request awaiting an
    /// answer has that id. If it is one of the last `acks=0` requests handed over, the
    /// broker answered a request Kafka never answers (krafka's FakeBroker does): the
    /// answer is dropped and the connection kept, as librdkafka ignores an answer to an
    /// unknown correlation id; closing it would fail the `acks=0` requests written after
    /// that one as possibly written, and a non-idempotent producer would write them
    /// twice. And the broker read the whole request to answer it: if it still awaits
    /// its write report, that frame and every one handed before it count as written,
    /// whatever the driver reported so far (its reads and writes may run on different
    /// threads, in no order). Returns whether it was one; any other unknown id closes
    /// the connection.
    pub(super) fn answered_unasked(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        correlation_id: i32,
        now: Timestamp,
    ) -> bool {
        let Some(c) = self.conn_mut(conn) else {
            return false;
        };
        let Some(pos) = c
            .writes
            .unanswered
            .iter()
            .position(|&id| id == correlation_id)
        else {
            return false;
        };
        c.writes.unanswered.remove(pos);
        let awaiting = c
            .writes
            .awaiting
            .iter()
            .find(|a| a.correlation_id == correlation_id)
            .copied();
        if let Some(a) = awaiting {
            self.known_written(core, conn, a.frame.0 + 1, now);
        }
        true
    }
}
