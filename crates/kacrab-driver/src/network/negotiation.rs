//! Version negotiation on a connection (KIP-35, KIP-511): ApiVersions from the newest
//! version the wire speaks, a retry at the version a broker names when it answers
//! UNSUPPORTED_VERSION, then (after the SASL phase, on a SASL protocol) the connection
//! is ready and its queued requests go out.
//! The finalized `transaction.version` (KIP-890) every answer carries reaches the core
//! here.

use kacrab_idempotence::{Producer, Timestamp};
use kacrab_wire::messages::ApiVersionsRequest;
use kacrab_wire::Versions;

use super::{ConnState, Network, Pending};
use crate::output::{CloseReason, ConnId};

impl Network {
    /// The transport is up: version negotiation starts.
    pub(super) fn negotiate(&mut self, core: &mut Producer, conn: ConnId, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        let version = ApiVersionsRequest::FIRST_VERSION;
        c.state = ConnState::Negotiating(version);
        self.send_api_versions(core, conn, version, now);
    }

    pub(super) fn handle_api_versions(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        answer: &kacrab_wire::messages::ApiVersionsResponse,
        now: Timestamp,
    ) {
        let Some(c) = self.conn_mut(conn) else { return };
        let ConnState::Negotiating(sent) = c.state else {
            return;
        };
        if answer.error_code == kacrab_wire::messages::UNSUPPORTED_VERSION {
            match answer.retry_version(sent) {
                Some(v) => {
                    crate::trace::negotiation_retry(conn, v);
                    c.state = ConnState::Negotiating(v);
                    self.send_api_versions(core, conn, v, now);
                }
                None => self.drop_conn(core, conn, now, Some(CloseReason::Negotiation)),
            }
            return;
        }
        match Versions::from_response(answer) {
            Ok(versions) if answer.error_code == 0 => {
                // The finalized transaction.version (KIP-890) decides TV1 or TV2; the
                // newest view across every connection counts, not the latest answer.
                if let Some(level) = self.features.observe(&versions) {
                    core.handle_transaction_version(level);
                }
                let Some(c) = self.conn_mut(conn) else { return };
                crate::trace::connection_ready(conn, &versions);
                c.versions = Some(versions);
                self.after_negotiation(core, conn, now);
            }
            _ => self.drop_conn(core, conn, now, Some(CloseReason::Negotiation)),
        }
    }

    /// The connection is ready (negotiated, and authenticated on a SASL protocol): its
    /// queued requests go out, in order.
    pub(super) fn become_ready(&mut self, core: &mut Producer, conn: ConnId, now: Timestamp) {
        let Some(c) = self.conn_mut(conn) else { return };
        c.state = ConnState::Ready;
        let addr = c.addr.clone();
        self.reconnects.ready(&addr);
        self.last_errors.ready(&addr);
        let Some(c) = self.conn_mut(conn) else { return };
        let queued: Vec<Pending> = c.queued.drain(..).collect();
        for p in queued {
            match p {
                Pending::Core(r) => self.write_core_request(core, conn, r, now),
                Pending::Session(r, tag) => {
                    self.send_session_request(core, conn, r, tag, now);
                }
            }
        }
    }

    fn send_api_versions(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        version: i16,
        now: Timestamp,
    ) {
        let tag = self.session_tag();
        let deadline = now + self.request_timeout;
        let Some(c) = self.conn_mut(conn) else { return };
        let hello = kacrab_wire::message!(ApiVersionsRequest {
            client_software_name: "kacrab".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
        });
        match c.wire.encode(hello, version, tag) {
            Ok(e) => {
                c.deadlines.push_back((tag, deadline));
                self.transmit(core, conn, e.frame, None, now);
            }
            Err(e) => {
                let reason = CloseReason::Malformed(e.to_string());
                self.drop_conn(core, conn, now, Some(reason));
            }
        }
    }
}
