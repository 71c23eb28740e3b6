//! The SASL phase of a connection (SASL_PLAINTEXT, SASL_SSL; KIP-43, KIP-152) and its
//! KIP-368 re-authentication, on the network half.
//!
//! After ApiVersions, a connection of a SASL protocol runs one [`SaslExchange`]
//! (SaslHandshake v1, then SaslAuthenticate at the highest version both sides speak)
//! before it is ready; the requests routed to it wait in its queue meanwhile. The
//! exchange's requests are the session's own (tagged and timed as ApiVersions is).
//!
//! When the broker grants a session lifetime (SaslAuthenticate v1+,
//! `connections.max.reauth.ms` on the broker), the connection re-authenticates before
//! it ends, at 85-95% of the lifetime as Java's `SaslClientAuthenticator` computes it
//! (the jitter derived from the connection id: deterministic). KIP-368 forbids a
//! SaslHandshake while responses are outstanding, so a due connection first stops
//! taking requests (they queue), lets the answers in flight arrive, then runs the
//! exchange again and resumes: nothing in flight is lost. A broker that omits the
//! lifetime (or gives 0) is never re-authenticated with.
//!
//! Every failure of an exchange, first or renewal, is final (see `crate::phases`):
//! Kafka closes the connection after a failed authentication and the same credentials
//! fail again (`SaslServerAuthenticator`; Java's `NetworkClient` surfaces the
//! `AuthenticationException` instead of reconnecting).

use kacrab_idempotence::{Producer, Timestamp};
use kacrab_wire::messages::UNSUPPORTED_VERSION;
use kacrab_wire::{SaslRequest, SaslResponse};

use super::secure::Gone;
use super::{ConnState, Network};
use crate::output::{CloseReason, ConnId};
use crate::sasl::{reauthenticate_after, SaslError, SaslStep};

/// Which authentication of its connection an exchange is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AuthRound {
    /// Between ApiVersions and ready.
    First,
    /// A KIP-368 re-authentication of a connection that was ready.
    Renewal,
}

impl Network {
    /// Version negotiation finished: a SASL protocol authenticates, else the connection
    /// is ready.
    pub(super) fn after_negotiation(&mut self, core: &mut Producer, conn: ConnId, now: Timestamp) {
        if self.security.uses_sasl() {
            self.start_sasl(core, conn, AuthRound::First, now);
        } else {
            self.become_ready(core, conn, now);
        }
    }

    /// Starts an exchange on `conn` (nothing may be in flight on it).
    fn start_sasl(&mut self, core: &mut Producer, conn: ConnId, round: AuthRound, now: Timestamp) {
        let exchange = match self.security.sasl_exchange(now) {
            Some(Ok(x)) => x,
            Some(Err(e)) => return self.fail(core, conn, e, Gone::Open, now),
            None => return self.become_ready(core, conn, now),
        };
        let Some(c) = self.conn_mut(conn) else { return };
        debug_assert_eq!(c.wire.in_flight_count(), 0, "KIP-368: nothing outstanding");
        c.state = ConnState::Authenticating(round);
        c.reauth_at = None;
        let mut exchange = Box::new(exchange);
        let step = exchange.start();
        c.sasl = Some(exchange);
        self.sasl_step(core, conn, Ok(step), now);
    }

    /// An answer to a SaslHandshake or SaslAuthenticate on `conn`.
    pub(super) fn handle_sasl(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        answer: SaslResponse,
        now: Timestamp,
    ) {
        let Some(c) = self.conn_mut(conn) else { return };
        let (ConnState::Authenticating(_), Some(exchange)) = (&c.state, c.sasl.as_mut()) else {
            // A SASL answer nobody asked for: the broker broke the protocol.
            let reason = CloseReason::Malformed(format!(
                "unexpected {} answer outside the SASL phase",
                answer.api_key()
            ));
            return self.drop_conn(core, conn, now, Some(reason));
        };
        let step = exchange.handle_response(answer);
        self.sasl_step(core, conn, step, now);
    }

    fn sasl_step(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        step: Result<SaslStep, SaslError>,
        now: Timestamp,
    ) {
        match step {
            Ok(SaslStep::Send(request)) => self.send_sasl(core, conn, request, now),
            Ok(SaslStep::Done { session_lifetime }) => {
                let Some(c) = self.conn_mut(conn) else { return };
                let renewal = c.state == ConnState::Authenticating(AuthRound::Renewal);
                if let Some(exchange) = c.sasl.take() {
                    crate::trace::connection_authenticated(conn, exchange.mechanism_name());
                }
                // Java: 85% of the lifetime plus a jitter of up to 10%; here the jitter
                // comes from the connection id, so the session stays deterministic.
                let jitter = (c.id.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % 101;
                c.reauth_at = session_lifetime
                    .map(|l| now + reauthenticate_after(l, jitter as u16).max(MIN_REAUTH));
                if renewal {
                    self.tally.reauthenticated();
                }
                self.become_ready(core, conn, now);
            }
            Err(e) => self.fail(core, conn, e, Gone::Open, now),
        }
    }

    fn send_sasl(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        request: SaslRequest,
        now: Timestamp,
    ) {
        let tag = self.session_tag();
        let deadline = now + self.request_timeout;
        let Some(c) = self.conn_mut(conn) else { return };
        let request = kacrab_wire::Request::Sasl(request);
        let api = request.api_key();
        let versions = c
            .versions
            .as_ref()
            .expect("authenticating after negotiation");
        let encoded = versions
            .version_for(&request)
            .and_then(|v| c.wire.encode(request, v, tag));
        match encoded {
            Ok(e) => {
                c.deadlines.push_back((tag, deadline));
                self.transmit(core, conn, e.frame, None, now);
            }
            // The listener offers no SASL version we speak (a listener that is not
            // SASL, or too old): final, as a refused mechanism.
            Err(e) => {
                let cause = SaslError::BrokerError {
                    api,
                    error_code: UNSUPPORTED_VERSION,
                    message: Some(format!("no {api} version both sides speak: {e}")),
                };
                self.fail(core, conn, cause, Gone::Open, now);
            }
        }
    }

    /// The earliest KIP-368 re-authentication due on a ready connection.
    pub(super) fn reauth_timeout(&self) -> Option<Timestamp> {
        self.conns
            .iter()
            .filter(|c| c.state == ConnState::Ready)
            .filter_map(|c| c.reauth_at)
            .min()
    }

    /// Connections whose re-authentication is due stop taking requests; those with
    /// nothing in flight start the exchange now, the others when their answers are in
    /// ([`Network::resume_reauth`]).
    pub(super) fn handle_reauth_timeout(&mut self, core: &mut Producer, now: Timestamp) {
        for c in &mut self.conns {
            if c.state == ConnState::Ready && c.reauth_at.is_some_and(|t| t <= now) {
                c.state = ConnState::Draining;
                c.reauth_at = None;
            }
        }
        let due: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|c| c.state == ConnState::Draining)
            .map(|c| c.id)
            .collect();
        for conn in due {
            self.resume_reauth(core, conn, now);
        }
    }

    /// A draining connection with nothing left in flight re-authenticates.
    pub(super) fn resume_reauth(&mut self, core: &mut Producer, conn: ConnId, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        if c.state == ConnState::Draining && c.wire.in_flight_count() == 0 {
            self.start_sasl(core, conn, AuthRound::Renewal, now);
        }
    }
}

/// The shortest wait before a re-authentication: a broker granting a lifetime of a
/// millisecond must not make the connection re-authenticate without pause.
const MIN_REAUTH: std::time::Duration = std::time::Duration::from_millis(1);
