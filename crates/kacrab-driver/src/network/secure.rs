//! The security phases of a connection on the network half: the TLS handshake between
//! TCP connected and ApiVersions, every frame sealed and every read opened through the
//! connection's [`Transport`], and the failure that ends the session (see
//! [`crate::phases`]).

use kacrab_idempotence::ticket::Ticket;
use kacrab_idempotence::{Producer, Timestamp};
use kacrab_wire::Frame;

use super::write_reports::FrameIndex;
use super::{ConnState, Network};
use crate::output::{CloseReason, ConnId, Output};
use crate::phases::{ConnectError, ConnectFailure, TlsFailure};
use crate::tls::Opened;

/// Whether the session may still open connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Health {
    Healthy,
    /// A security phase failed, first with this error: final.
    SecurityFailed(ConnectError),
}

/// Whether the driver still holds the failed connection's socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Gone {
    /// The session asks the driver to close it.
    Open,
    /// The driver reported it gone.
    Reported,
}

impl Network {
    /// The security failure that ends the session, once.
    pub(crate) fn take_failure(&mut self) -> Option<ConnectError> {
        self.failure.take()
    }

    /// The security failure that ended the session, if one did.
    pub(crate) fn security_failure(&self) -> Option<&ConnectError> {
        match &self.health {
            Health::Healthy => None,
            Health::SecurityFailed(e) => Some(e),
        }
    }

    /// Whether a security failure ended the session.
    pub(super) fn has_failed(&self) -> bool {
        self.health != Health::Healthy
    }

    /// Whether `conn` is in its TLS handshake.
    pub(super) fn in_handshake(&self, conn: ConnId) -> bool {
        self.conns
            .iter()
            .any(|c| c.id == conn && matches!(c.state, ConnState::TlsHandshake { .. }))
    }

    /// TCP is up: the TLS handshake starts (the ClientHello goes out), under the same
    /// setup deadline as the connect.
    pub(super) fn start_tls(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        deadline: Timestamp,
        now: Timestamp,
    ) {
        self.security.tick(now);
        let Some(c) = self.conns.iter_mut().find(|c| c.id == conn) else {
            return;
        };
        match self.security.transport(&c.addr) {
            Ok(transport) => {
                c.transport = transport;
                c.state = ConnState::TlsHandshake { deadline };
                let hello = c.transport.take_outgoing();
                let _ = self.push_transmit(conn, Frame::new(hello), None);
            }
            Err(e) => self.fail(core, conn, e, Gone::Open, now),
        }
    }

    /// Bytes read from `conn`, through its transport: the decrypted bytes, or `None` if
    /// the connection failed. Handshake replies are transmitted, and a finished
    /// handshake starts version negotiation.
    pub(super) fn open_bytes(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        bytes: &[u8],
        now: Timestamp,
    ) -> Option<Opened> {
        self.security.tick(now);
        let c = self.conn_mut(conn)?;
        let mut opened = match c.transport.open(bytes) {
            Ok(o) => o,
            Err(e) => {
                self.fail(core, conn, e, Gone::Open, now);
                return None;
            }
        };
        if !opened.reply.is_empty() {
            let reply = Frame::new(std::mem::take(&mut opened.reply));
            let _ = self.push_transmit(conn, reply, None);
        }
        let c = self.conn_mut(conn)?;
        if let ConnState::TlsHandshake { .. } = c.state {
            if opened.closed {
                self.fail(
                    core,
                    conn,
                    TlsFailure::ClosedDuringHandshake,
                    Gone::Open,
                    now,
                );
                return None;
            }
            if !c.transport.is_handshaking() {
                crate::trace::tls_established(conn);
                self.negotiate(core, conn, now);
            }
        }
        Some(opened)
    }

    /// Writes `frame` on `conn` through its transport; returns its position among the
    /// connection's frames, or `None` when it was not handed to the driver (sealing it
    /// failed the connection, or the connection is gone).
    pub(super) fn transmit(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        frame: Frame,
        ticket: Option<Ticket>,
        now: Timestamp,
    ) -> Option<FrameIndex> {
        let c = self.conn_mut(conn)?;
        c.last_active = now;
        match c.transport.seal(frame) {
            Ok(frame) => self.push_transmit(conn, frame, ticket),
            Err(e) => {
                if let Some(ticket) = ticket {
                    self.out.push_back(Output::Release { ticket });
                }
                self.fail(core, conn, e, Gone::Open, now);
                None
            }
        }
    }

    /// Fails `conn` for good: the session learns why (the first failure only), no
    /// connection opens again, and this one closes.
    pub(super) fn fail(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        cause: impl Into<ConnectFailure>,
        gone: Gone,
        now: Timestamp,
    ) {
        let Some(c) = self.conn_mut(conn) else { return };
        let error = ConnectError {
            broker: c.addr.clone(),
            node: c.node,
            cause: cause.into(),
        };
        if self.health == Health::Healthy {
            self.failure = Some(error.clone());
            self.health = Health::SecurityFailed(error.clone());
        }
        let close = (gone == Gone::Open).then_some(CloseReason::Security(error));
        self.drop_conn(core, conn, now, close);
    }
}
