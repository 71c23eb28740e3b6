//! The requests the core handed to the driver and not yet saw answered: the table of
//! outstanding requests, the per-node Produce counts and throttles, the request id and
//! ticket counters, the one metadata lookup in flight and the connections to close.
//! One owner, so that "a Produce request is outstanding on node n" and "node n's
//! in-flight count" cannot drift apart (see [`Requests::assert_invariants`]).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::ticket::{Ticket, TicketSequencer};
use crate::types::{BatchId, NodeId, RequestId, Timestamp};

/// What an outstanding request is.
#[derive(Debug)]
pub(crate) enum OutstandingKind {
    /// A Produce request to `node` carrying `batches` (one per partition).
    Produce { node: NodeId, batches: Vec<BatchId> },
    /// The idempotent producer's own InitProducerId.
    InitProducerId,
    /// The metadata lookup (also [`Requests::metadata_in_flight`]).
    Metadata,
    /// The one outstanding transactional request (see `TxnQueue::in_flight`).
    Transactional,
}

/// Where an outstanding request is between hand-out and answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Handed out, not yet written (its connection is being set up): no timer runs, and
    /// it fails only as never sent. Java builds no request for a node that is not ready
    /// (`Sender.sendProducerData`, `NetworkClient.ready`). An `acks=0` Produce request
    /// also stays here after its bytes were handed to a socket, until the driver reports
    /// them written: its connection lost meanwhile fails it as possibly written, and
    /// the driver times the write (`kacrab-driver`'s `network/write_reports.rs`).
    Unwritten,
    /// Written; `request.timeout.ms` runs from the write (Java's `InFlightRequest.
    /// sendTimeMs`, `NetworkClient.handleTimedOutRequests`) and ends at `deadline`.
    Written {
        /// When it times out.
        deadline: Timestamp,
    },
}

impl Phase {
    fn deadline(self) -> Option<Timestamp> {
        match self {
            Phase::Unwritten => None,
            Phase::Written { deadline } => Some(deadline),
        }
    }
}

/// A request handed to the driver and not yet answered.
#[derive(Debug)]
pub(crate) struct Outstanding {
    pub(crate) id: RequestId,
    pub(crate) kind: OutstandingKind,
    /// Whether it was written, and then its timeout.
    pub(crate) phase: Phase,
}

/// One broker connection's Produce bookkeeping.
#[derive(Debug)]
struct NodeState {
    id: NodeId,
    /// Produce requests outstanding on this node's connection. Stored for the O(1)
    /// capacity check; invariant: equals the count of outstanding Produce requests to
    /// `id`, and never exceeds `max.in.flight.requests.per.connection`.
    in_flight: u32,
    /// The broker asked for no request before then (a Produce answer's throttle).
    throttled_until: Option<Timestamp>,
}

/// Everything about requests handed out (see the module documentation).
#[derive(Debug)]
pub(crate) struct Requests {
    /// Outstanding requests. Invariant: strictly ordered by id (ids are handed out in
    /// increasing order and appended), so lookups are binary searches.
    outstanding: VecDeque<Outstanding>,
    nodes: Vec<NodeState>,
    /// The id the next request gets. Invariant: above every outstanding id.
    next_id: u64,
    tickets: TicketSequencer,
    /// The metadata lookup on the wire. Invariant: `Some(id)` only while a
    /// [`OutstandingKind::Metadata`] request `id` is outstanding.
    metadata_in_flight: Option<RequestId>,
    /// Connections the driver must close (a Produce request on them timed out).
    close_queue: VecDeque<NodeId>,
}

impl Requests {
    pub(crate) fn new() -> Self {
        Self {
            outstanding: VecDeque::new(),
            nodes: Vec::new(),
            next_id: 0,
            tickets: TicketSequencer::new(),
            metadata_in_flight: None,
            close_queue: VecDeque::new(),
        }
    }

    /// A fresh request id.
    pub(crate) fn next_id(&mut self) -> RequestId {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        id
    }

    /// A ticket for a Produce request (the order its bytes must reach the socket).
    pub(crate) fn reserve_ticket(&mut self) -> Ticket {
        self.tickets.reserve(1)
    }

    /// Books request `id` as outstanding and not yet written. A Produce request counts
    /// against its node's in-flight limit until it is taken off again.
    pub(crate) fn push(&mut self, id: RequestId, kind: OutstandingKind) {
        debug_assert!(self.outstanding.back().is_none_or(|o| o.id < id));
        match kind {
            OutstandingKind::Produce { node, .. } => self.node_mut(node).in_flight += 1,
            OutstandingKind::Metadata => self.metadata_in_flight = Some(id),
            OutstandingKind::InitProducerId | OutstandingKind::Transactional => {}
        }
        self.outstanding.push_back(Outstanding {
            id,
            kind,
            phase: Phase::Unwritten,
        });
    }

    /// Request `id` was written: it times out at `deadline`. Returns what it is, or
    /// `None` when it is not outstanding or was already written (nothing changes).
    pub(crate) fn written(
        &mut self,
        id: RequestId,
        deadline: Timestamp,
    ) -> Option<&OutstandingKind> {
        let pos = self.outstanding.binary_search_by_key(&id, |o| o.id).ok()?;
        let o = &mut self.outstanding[pos];
        if o.phase != Phase::Unwritten {
            return None;
        }
        o.phase = Phase::Written { deadline };
        Some(&o.kind)
    }

    /// Takes request `id` off the books, whatever it is.
    pub(crate) fn take(&mut self, id: RequestId) -> Option<Outstanding> {
        let pos = self.outstanding.binary_search_by_key(&id, |o| o.id).ok()?;
        let o = self.outstanding.remove(pos)?;
        match o.kind {
            OutstandingKind::Produce { node, .. } => {
                let n = self.node_mut(node);
                n.in_flight = n.in_flight.saturating_sub(1);
            }
            OutstandingKind::Metadata if self.metadata_in_flight == Some(id) => {
                self.metadata_in_flight = None;
            }
            _ => {}
        }
        Some(o)
    }

    /// Takes request `id` off the books if it is a Produce request: its node and batches.
    pub(crate) fn take_produce(&mut self, id: RequestId) -> Option<(NodeId, Vec<BatchId>)> {
        let pos = self.outstanding.binary_search_by_key(&id, |o| o.id).ok()?;
        if !matches!(self.outstanding[pos].kind, OutstandingKind::Produce { .. }) {
            return None;
        }
        match self.take(id)?.kind {
            OutstandingKind::Produce { node, batches } => Some((node, batches)),
            _ => None,
        }
    }

    /// Whether request `id` is outstanding.
    pub(crate) fn contains(&self, id: RequestId) -> bool {
        self.outstanding.binary_search_by_key(&id, |o| o.id).is_ok()
    }

    /// How many requests are outstanding.
    pub(crate) fn len(&self) -> usize {
        self.outstanding.len()
    }

    /// The first outstanding request (by id) whose deadline has passed at `now`, and
    /// the node of its connection if it is a Produce request. A request not yet
    /// written has no deadline.
    pub(crate) fn first_expired(&self, now: Timestamp) -> Option<(RequestId, Option<NodeId>)> {
        self.outstanding
            .iter()
            .find(|o| o.phase.deadline().is_some_and(|d| d <= now))
            .map(|o| match o.kind {
                OutstandingKind::Produce { node, .. } => (o.id, Some(node)),
                _ => (o.id, None),
            })
    }

    /// The Produce requests written on `node`'s connection and outstanding, by id (one
    /// not yet written fails as never sent when the connection goes).
    pub(crate) fn written_produce_on(&self, node: NodeId) -> Vec<RequestId> {
        self.outstanding
            .iter()
            .filter(|o| o.phase != Phase::Unwritten)
            .filter(|o| matches!(o.kind, OutstandingKind::Produce { node: n, .. } if n == node))
            .map(|o| o.id)
            .collect()
    }

    /// The earliest request deadline (request.timeout.ms), over written requests.
    pub(crate) fn next_deadline(&self) -> Option<Timestamp> {
        self.outstanding
            .iter()
            .filter_map(|o| o.phase.deadline())
            .min()
    }

    /// Whether `node` can take another Produce request at `now`.
    pub(crate) fn has_capacity(&self, node: NodeId, max_in_flight: u32, now: Timestamp) -> bool {
        match self.nodes.iter().find(|n| n.id == node) {
            None => true,
            Some(n) => n.in_flight < max_in_flight && n.throttled_until.is_none_or(|t| t <= now),
        }
    }

    /// `node` asked for no request before `until` (a Produce answer's throttle time).
    pub(crate) fn throttle(&mut self, node: NodeId, until: Timestamp) {
        self.node_mut(node).throttled_until = Some(until);
    }

    /// The earliest throttle still running at `now`.
    pub(crate) fn throttle_deadline_after(&self, now: Timestamp) -> Option<Timestamp> {
        self.nodes
            .iter()
            .filter_map(|n| n.throttled_until.filter(|&t| t > now))
            .min()
    }

    /// The metadata lookup on the wire, if any.
    pub(crate) fn metadata_in_flight(&self) -> Option<RequestId> {
        self.metadata_in_flight
    }

    /// The driver must close `node`'s connection.
    pub(crate) fn close_connection(&mut self, node: NodeId) {
        self.close_queue.push_back(node);
    }

    /// The next connection to close, if any.
    pub(crate) fn pop_close(&mut self) -> Option<NodeId> {
        self.close_queue.pop_front()
    }

    fn node_mut(&mut self, node: NodeId) -> &mut NodeState {
        let pos = match self.nodes.iter().position(|n| n.id == node) {
            Some(pos) => pos,
            None => {
                self.nodes.push(NodeState {
                    id: node,
                    in_flight: 0,
                    throttled_until: None,
                });
                self.nodes.len() - 1
            }
        };
        &mut self.nodes[pos]
    }

    /// The outstanding requests, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Outstanding> {
        self.outstanding.iter()
    }

    /// Checks the invariants documented on the fields.
    pub(crate) fn assert_invariants(&self, max_in_flight: u32) {
        for w in self.outstanding.iter().collect::<Vec<_>>().windows(2) {
            assert!(w[0].id < w[1].id, "outstanding requests out of order");
        }
        if let Some(last) = self.outstanding.back() {
            assert!(
                last.id.0 < self.next_id,
                "outstanding id not yet handed out"
            );
        }
        for n in &self.nodes {
            let count = self
                .outstanding
                .iter()
                .filter(|o| matches!(o.kind, OutstandingKind::Produce { node, .. } if node == n.id))
                .count();
            assert_eq!(n.in_flight as usize, count, "node {} in-flight count", n.id);
            assert!(
                n.in_flight <= max_in_flight,
                "node {} exceeds max.in.flight",
                n.id
            );
        }
        for o in &self.outstanding {
            if let OutstandingKind::Produce { node, .. } = o.kind {
                assert!(
                    self.nodes.iter().any(|n| n.id == node),
                    "produce request to an unknown node"
                );
            }
        }
        if let Some(id) = self.metadata_in_flight {
            assert!(
                self.outstanding
                    .iter()
                    .any(|o| o.id == id && matches!(o.kind, OutstandingKind::Metadata)),
                "metadata_in_flight names no outstanding Metadata request"
            );
        }
    }
}
