//! What the session asks of the driver on the network.

use kacrab_idempotence::ticket::Ticket;
use kacrab_idempotence::InputError;
use kacrab_wire::Frame;

/// Names one connection for the life of a session. Never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Why the session closes a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The core asked for it (Kafka's rule after some Produce errors and abandoned
    /// requests).
    Requested,
    /// A request on it passed `request.timeout.ms` unanswered.
    RequestTimeout,
    /// Opening it took longer than `socket.connection.setup.timeout.ms`.
    ConnectTimeout,
    /// The broker sent bytes that are not a valid Kafka response.
    Malformed(String),
    /// The broker answered what was not asked, or did not match the request; the core
    /// refused the answer with this error.
    Protocol(InputError),
    /// ApiVersions failed: no version both sides speak, or an error answer.
    Negotiation,
    /// Metadata moved the broker to another address.
    BrokerMoved,
    /// The producer is closed: nothing more will be sent.
    Finished,
    /// A security phase failed (TLS); final for the session.
    Security(crate::phases::ConnectError),
    /// The broker ended the TLS session (close_notify).
    ClosedByBroker,
    /// Nothing was in flight on it and no bytes moved for `connections.max.idle.ms`.
    Idle,
}

impl core::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Requested => f.write_str("closed at the producer's request"),
            Self::RequestTimeout => f.write_str("a request timed out (request.timeout.ms)"),
            Self::ConnectTimeout => {
                f.write_str("connection setup timed out (socket.connection.setup.timeout.ms)")
            }
            Self::Malformed(e) => write!(f, "malformed response: {e}"),
            Self::Protocol(e) => write!(f, "protocol violation: {e}"),
            Self::Negotiation => f.write_str("ApiVersions negotiation failed"),
            Self::BrokerMoved => f.write_str("the broker moved to another address"),
            Self::Finished => f.write_str("the producer is closed"),
            Self::Security(e) => write!(f, "{e}"),
            Self::ClosedByBroker => f.write_str("the broker closed the TLS session"),
            Self::Idle => f.write_str("idle for connections.max.idle.ms"),
        }
    }
}

/// What the driver must do on the network.
#[derive(Clone, Debug)]
#[must_use]
pub enum Output {
    /// Open a TCP connection to `addr` (`host:port`), then call
    /// [`Session::handle_connected`](crate::Session::handle_connected), or
    /// [`Session::handle_disconnected`](crate::Session::handle_disconnected) if it
    /// failed. The session times the attempt itself
    /// (`socket.connection.setup.timeout.ms`): a driver needs no timer of its own.
    Connect {
        /// The connection.
        conn: ConnId,
        /// Where to connect.
        addr: String,
    },
    /// Write `frame` to the connection's socket, after every frame written before it;
    /// once the socket took all of it, report it with
    /// [`Session::handle_transmitted`](crate::Session::handle_transmitted) (frames are
    /// counted per connection in this order; several written together are one report).
    /// The report is required: an `acks=0` Produce request, which gets no answer, is
    /// delivered only on it (Java completes such a send after the write, in
    /// `NetworkClient.handleCompletedSends`); without it its records are retried after
    /// `request.timeout.ms` and fail at `delivery.timeout.ms`.
    Transmit {
        /// The connection.
        conn: ConnId,
        /// A whole size-prefixed Kafka frame (sealed into TLS records on a TLS
        /// connection), in parts: a Produce request's record batches are their own parts,
        /// never copied. Write it with one vectored write (`writev`) of its
        /// [`chunks_vectored`](kacrab_wire::bytes::Buf::chunks_vectored), advancing by
        /// what was written (Tokio's `write_all_buf` does both).
        frame: Frame,
        /// For a Produce request, the core's enqueue ticket
        /// ([`ProduceRequest::ticket`](kacrab_idempotence::ProduceRequest::ticket)); `None`
        /// for every other request. A driver writing from one loop ignores it, and so
        /// does one that hands each frame, from one loop and in this order, to a queue
        /// its connection's task or thread writes (the Tokio and blocking drivers): the
        /// hand-over is the enqueue point, as Java's `Selector` send is. A driver whose
        /// tasks enqueue concurrently passes the frame on only when
        /// [`TicketSequencer::may_enqueue`](kacrab_idempotence::ticket::TicketSequencer::may_enqueue)
        /// allows, so that a later Produce never overtakes an earlier one across
        /// connections; note that a Produce the session queued behind its connection's
        /// negotiation is transmitted after later tickets, so such a driver holds every
        /// later Produce back until that negotiation ends.
        ticket: Option<Ticket>,
    },
    /// The Produce request holding `ticket` will never be transmitted (its leader has no
    /// known address, its connection was dropped before the request could be written, or
    /// no version can encode it); the core was told. A driver ordering writes with a
    /// [`TicketSequencer`](kacrab_idempotence::ticket::TicketSequencer) must
    /// [`abandon`](kacrab_idempotence::ticket::TicketSequencer::abandon) it, or later
    /// tickets wait forever. Every Produce ticket the core hands out ends in exactly one
    /// `Transmit` or one `Release`.
    Release {
        /// The ticket.
        ticket: Ticket,
    },
    /// Close the connection and drop what is still in its socket. Do not report it
    /// disconnected: the session already forgot it.
    Close {
        /// The connection.
        conn: ConnId,
        /// Why (for the driver's log).
        reason: CloseReason,
    },
}

/// How to open one connection the session asked for with [`Output::Connect`]: read it
/// with [`Session::connect_options`](crate::Session::connect_options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// `SO_SNDBUF` to set before connecting (`send.buffer.bytes`); `None`: leave the
    /// operating system's default.
    pub send_buffer: Option<usize>,
    /// `SO_RCVBUF` to set before connecting (`receive.buffer.bytes`); `None`: leave the
    /// operating system's default.
    pub receive_buffer: Option<usize>,
    /// Which of the addresses the host resolves to this attempt dials
    /// (`client.dns.lookup=use_all_dns_ips`): Java's `ClusterConnectionStates` moves to
    /// the next resolved address on each new attempt to the same host, so a dead
    /// address costs one setup timeout, never every attempt. Taken modulo the number of
    /// addresses: see [`ConnectOptions::pick`].
    pub address_index: usize,
}

impl ConnectOptions {
    /// The address this attempt dials, of those the host resolved to (in the
    /// resolver's order); `None` if it resolved to none.
    #[must_use]
    pub fn pick<'a, T>(&self, resolved: &'a [T]) -> Option<&'a T> {
        match resolved.len() {
            0 => None,
            n => resolved.get(self.address_index % n),
        }
    }
}
