//! The network half of KIP-714 client telemetry: which connection carries the session's
//! GetTelemetrySubscriptions and PushTelemetry requests, and what became of them. The
//! schedule itself is `crate::telemetry`'s; this module reports answers, losses and
//! closed connections to it as events the session drains after each input.
//!
//! Only a ready connection whose broker advertised both APIs carries them: a broker
//! without a telemetry plugin does not advertise them (Kafka's `ApiVersionsResponse`
//! leaves them out), and telemetry is never worth dialling a broker of its own.

use kacrab_idempotence::{Producer, Timestamp};
use kacrab_wire::messages::{GetTelemetrySubscriptionsResponse, PushTelemetryResponse};
use kacrab_wire::ApiKey;

use super::{ConnState, Network};
use crate::output::ConnId;

/// What happened to the session's telemetry requests and connections.
#[derive(Debug)]
pub(crate) enum TelemetryEvent {
    /// GetTelemetrySubscriptions with this tag was answered.
    Subscribed(u64, GetTelemetrySubscriptionsResponse),
    /// PushTelemetry with this tag was answered.
    Pushed(u64, PushTelemetryResponse),
    /// The session request with this tag will get no answer (it could not be encoded).
    Lost(u64),
    /// The connection went (with whatever was on it).
    ConnGone(ConnId),
}

impl Network {
    /// The connection for the next telemetry request: `sticky` while it is ready and
    /// speaks both APIs, else the least loaded ready one that does;
    /// `None` once the network failed for good (a connection that could not be
    /// secured): no request of any kind goes out then.
    pub(crate) fn telemetry_conn(&self, sticky: Option<ConnId>) -> Option<ConnId> {
        if self.has_failed() {
            return None;
        }
        let speaks = |c: &&super::Conn| {
            c.state == ConnState::Ready
                && c.versions.as_ref().is_some_and(|v| {
                    v.get(ApiKey::GetTelemetrySubscriptions).is_ok()
                        && v.get(ApiKey::PushTelemetry).is_ok()
                })
        };
        if let Some(c) = self
            .conns
            .iter()
            .filter(speaks)
            .find(|c| Some(c.id) == sticky)
        {
            return Some(c.id);
        }
        self.conns
            .iter()
            .filter(speaks)
            .min_by_key(|c| c.wire.in_flight_count())
            .map(|c| c.id)
    }

    /// Writes telemetry `request` on `conn` (from [`Network::telemetry_conn`]) as a
    /// session request, timed by `request.timeout.ms` like the others; returns its tag.
    pub(crate) fn send_telemetry(
        &mut self,
        core: &mut Producer,
        conn: ConnId,
        request: kacrab_wire::Request,
        now: Timestamp,
    ) -> u64 {
        let tag = self.session_tag();
        self.send_session_request(core, conn, request, tag, now);
        tag
    }

    /// The broker (`None` for a bootstrap address) and address of live connection
    /// `conn`.
    pub(crate) fn peer(&self, conn: ConnId) -> Option<(Option<i32>, &str)> {
        self.conns
            .iter()
            .find(|c| c.id == conn)
            .map(|c| (c.node, c.addr.as_str()))
    }

    /// The telemetry events since the last call, in order.
    pub(crate) fn take_telemetry_events(&mut self) -> Vec<TelemetryEvent> {
        std::mem::take(&mut self.telemetry_events)
    }
}
