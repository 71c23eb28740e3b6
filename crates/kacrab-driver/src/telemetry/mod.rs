//! KIP-714 client telemetry: the producer pushes its metrics to a broker that asks for
//! them. The schedule and the broker's answers are kept here, as Kafka's
//! `ClientTelemetryReporter.DefaultClientTelemetrySender` keeps them; the network half
//! carries the two requests (`network::telemetry`), and the session builds each payload
//! from its metrics snapshot (`otlp`).
//!
//! The rules, each as Kafka's client has them:
//! - The first GetTelemetrySubscriptions goes out as soon as a connection to a broker
//!   that speaks it is ready, with a zero client instance id; the broker assigns one,
//!   kept for the session's life (`createSubscriptionRequest`).
//! - A subscription that asks for no metric is fetched again after its push interval;
//!   one that asks for some is pushed first after 0.5 to 1.5 push intervals (spreading
//!   clients started together: `updateSubscriptionResult`), then every interval after
//!   an answered push.
//! - Errors (`ClientTelemetryUtils.maybeFetchErrorIntervalMs`): UNKNOWN_SUBSCRIPTION_ID
//!   and UNSUPPORTED_COMPRESSION_TYPE fetch the subscription again at once;
//!   TELEMETRY_TOO_LARGE and THROTTLING_QUOTA_EXCEEDED after the push interval;
//!   INVALID_REQUEST, INVALID_RECORD, UNSUPPORTED_VERSION and any other error stop
//!   telemetry for the session's life.
//! - Requests stay on one broker while they can (KIP-714's sticky node).
//! - Closing gracefully sends one last push marked `terminating` if a subscription with
//!   metrics is held (`initiateClose`, called by `KafkaProducer.close` only with time
//!   left); the connections close once it is answered, lost, or the close's time is up
//!   (its timeout, and at most `request.timeout.ms`). A forced close (`abort`, a
//!   timeout that ran out, a connection that could not be secured) sends none.
//! - An answer with a zero client instance id is invalid
//!   (`ClientTelemetryUtils.validateClientInstanceId`): telemetry stops.
//!
//! Departures, each decided:
//! - The first push's spread comes from the client instance id the broker assigned
//!   (its first two bytes), not from a random number, so a session given the same
//!   inputs does the same thing; instance ids are random, so clients still spread.
//! - A request lost with its connection (a disconnect, or its own timeout, which
//!   closes the connection) asks the subscription again after one push interval, on
//!   another broker if need be; three losses in a row, with no answer between them,
//!   stop telemetry. Java stops at the first (`NetworkClient` fails the request with no
//!   exception, so `handleFailedRequest` disables the sender), so one broker restart
//!   ends a Java producer's telemetry for its life; retrying at once instead would let
//!   a broker whose plugin stalls close a connection (and its Produce requests) every
//!   `retry.backoff.ms`.

pub(crate) mod otlp;

use std::time::Duration;

use kacrab_idempotence::Timestamp;
use kacrab_wire::messages::{
    ClientInstanceId, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};

use crate::metrics::MetricsSnapshot;
use crate::output::ConnId;

/// Kafka's `ClientTelemetryReporter.DEFAULT_PUSH_INTERVAL_MS`: the wait when the broker
/// gave no usable interval.
const DEFAULT_PUSH_INTERVAL: Duration = Duration::from_secs(300);

const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
const THROTTLING_QUOTA_EXCEEDED: i16 = 89;
const UNKNOWN_SUBSCRIPTION_ID: i16 = 117;
const TELEMETRY_TOO_LARGE: i16 = 118;

/// Requests lost in a row (no answer between them) after which telemetry stops.
const LOSSES_TOLERATED: u32 = 3;

/// How the producer closes, for the terminating push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closing {
    /// Forced: no terminating push.
    Forced,
    /// Graceful, within the close's timeout if it has one.
    Within(Option<Timestamp>),
}

/// The subscription the broker gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Subscription {
    pub(crate) client_instance_id: ClientInstanceId,
    pub(crate) subscription_id: i32,
    pub(crate) push_interval: Duration,
    pub(crate) delta_temporality: bool,
    /// `None`: the subscription asks for no metric.
    pub(crate) requested: Option<Vec<String>>,
}

/// Where the schedule stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `enable.metrics.push=false`.
    Off,
    /// A GetTelemetrySubscriptions is due at `at`.
    SubscriptionNeeded { at: Timestamp },
    /// A push is due at `at`.
    PushNeeded { at: Timestamp },
    /// A request is on the wire or queued on `conn`, with session tag `tag`.
    InFlight {
        tag: u64,
        conn: ConnId,
        kind: RequestKind,
    },
    /// The producer closes: the terminating push is due now.
    TerminatingPushNeeded,
    /// The producer closed, or the broker refused telemetry for good.
    Done,
}

/// Why telemetry stopped for good before the producer closed: the cause a warning names
/// (non-negotiable: a failure names its cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The broker refused a request with this Kafka error code, one Kafka's client
    /// treats as terminal.
    Refused(i16),
    /// The broker's subscription named no client instance id.
    NoClientInstanceId,
    /// This many requests in a row got no answer.
    Unanswered(u32),
}

impl core::fmt::Display for Stopped {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Refused(code) => write!(
                f,
                "the broker refused it with {}",
                kacrab_idempotence::KafkaError::from_code(*code)
            ),
            Self::NoClientInstanceId => {
                f.write_str("the broker's subscription named no client instance id")
            }
            Self::Unanswered(n) => write!(f, "{n} requests in a row got no answer"),
        }
    }
}

/// Which request is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// GetTelemetrySubscriptions.
    Subscription,
    /// PushTelemetry.
    Push,
    /// The last PushTelemetry, `terminating`.
    TerminatingPush,
}

/// What is due now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Ask for the subscription with this client instance id (zero: none yet).
    Subscription(ClientInstanceId),
    /// Push the metrics (the last push when `terminating`).
    Push { terminating: bool },
}

/// The push schedule. See the module documentation.
#[derive(Debug)]
pub(crate) struct Telemetry {
    state: State,
    subscription: Option<Subscription>,
    /// The broker the requests go to while it stays ready.
    sticky: Option<ConnId>,
    /// `request.timeout.ms`: the longest a closing producer waits for its terminating
    /// push.
    request_timeout: Duration,
    /// Requests lost in a row.
    losses: u32,
    /// When a closing producer stops waiting for its terminating push.
    give_up: Option<Timestamp>,
    /// The due request found no connection: it is retried on the next input.
    waiting_for_connection: bool,
    /// Why telemetry stopped for good, until the session takes it to log it.
    stopped: Option<Stopped>,
    /// The broker (node, `None` for a bootstrap address) and address the last request
    /// went to: the one a stop names.
    last_broker: Option<(Option<i32>, String)>,
    /// The counters' values at the last push (delta temporality).
    ledger: otlp::Ledger,
    /// The session's clock and the wall clock (ms since the Unix epoch) at its start:
    /// a payload's times are wall-clock times.
    clock_origin: Timestamp,
    wall_origin_ms: i64,
}

impl Telemetry {
    /// The schedule of a session started at `now` (`unix_ms` on the wall clock); `Off`
    /// unless `enabled`.
    pub(crate) fn new(
        enabled: bool,
        request_timeout: Duration,
        now: Timestamp,
        unix_ms: i64,
    ) -> Self {
        Self {
            state: if enabled {
                State::SubscriptionNeeded { at: now }
            } else {
                State::Off
            },
            subscription: None,
            sticky: None,
            request_timeout,
            losses: 0,
            give_up: None,
            waiting_for_connection: false,
            stopped: None,
            last_broker: None,
            ledger: otlp::Ledger::default(),
            clock_origin: now,
            wall_origin_ms: unix_ms,
        }
    }

    /// The push of `snapshot` (the last one when `terminating`), taken at `now`: the
    /// metrics the subscription asks for, uncompressed (every broker accepts that).
    /// `None` without a subscription asking for metrics.
    pub(crate) fn push_request(
        &mut self,
        snapshot: &MetricsSnapshot,
        terminating: bool,
        now: Timestamp,
    ) -> Option<PushTelemetryRequest> {
        let s = self.subscription.as_ref()?;
        let selection = otlp::Selection::of(s.requested.as_deref()?)?;
        let temporality = if s.delta_temporality {
            otlp::Temporality::Delta
        } else {
            otlp::Temporality::Cumulative
        };
        let nanos = |at: Timestamp| -> u64 {
            let since = at.saturating_duration_since(self.clock_origin).as_nanos();
            let origin = u128::try_from(self.wall_origin_ms).unwrap_or(0) * 1_000_000;
            u64::try_from(origin + since).unwrap_or(u64::MAX)
        };
        let times = otlp::Times {
            now_unix_nano: nanos(now),
            start_unix_nano: nanos(self.clock_origin),
        };
        let metrics = otlp::encode(snapshot, &selection, temporality, &mut self.ledger, times);
        Some(kacrab_wire::message!(PushTelemetryRequest {
            client_instance_id: s.client_instance_id,
            subscription_id: s.subscription_id,
            terminating,
            compression_type: 0,
            metrics,
        }))
    }

    /// The subscription held, if any.
    pub(crate) fn subscription(&self) -> Option<&Subscription> {
        self.subscription.as_ref()
    }

    /// The connection requests prefer.
    pub(crate) fn sticky(&self) -> Option<ConnId> {
        self.sticky
    }

    /// When a request is next due (`None`: none waits on the clock).
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        if self.waiting_for_connection {
            return None;
        }
        match self.state {
            State::SubscriptionNeeded { at } | State::PushNeeded { at } => Some(at),
            State::TerminatingPushNeeded
            | State::InFlight {
                kind: RequestKind::TerminatingPush,
                ..
            } => self.give_up,
            _ => None,
        }
    }

    /// A closing producer's time for its terminating push is up at `now`: telemetry
    /// ends (the push, if on the wire, goes with its connection).
    pub(crate) fn expire(&mut self, now: Timestamp) {
        if self.give_up.is_some_and(|t| t <= now) && !self.is_done() {
            self.state = State::Done;
        }
    }

    /// The request due at `now`, if any.
    pub(crate) fn due(&self, now: Timestamp) -> Option<Due> {
        let id = self.subscription.as_ref().map(|s| s.client_instance_id);
        match self.state {
            State::SubscriptionNeeded { at } if at <= now => {
                Some(Due::Subscription(id.unwrap_or([0; 16])))
            }
            State::PushNeeded { at } if at <= now => Some(Due::Push { terminating: false }),
            State::TerminatingPushNeeded => Some(Due::Push { terminating: true }),
            _ => None,
        }
    }

    /// The due request went out on `conn` with session tag `tag`.
    pub(crate) fn sent(&mut self, due: Due, conn: ConnId, tag: u64) {
        let kind = match due {
            Due::Subscription(_) => RequestKind::Subscription,
            Due::Push { terminating: false } => RequestKind::Push,
            Due::Push { terminating: true } => RequestKind::TerminatingPush,
        };
        self.sticky = Some(conn);
        self.waiting_for_connection = false;
        self.state = State::InFlight { tag, conn, kind };
    }

    /// No connection could carry the due request: it waits, off the clock, for the
    /// session's next input to find one (a connection becoming ready is an input); a
    /// timer would only wake an idle producer whose brokers have no telemetry plugin.
    /// When closing, the terminating push is given up.
    pub(crate) fn no_connection(&mut self) {
        self.sticky = None;
        if self.state == State::TerminatingPushNeeded {
            self.state = State::Done;
        } else {
            self.waiting_for_connection = true;
        }
    }

    /// The in-flight request's tag and kind, if `tag` is it.
    fn in_flight(&self, tag: u64) -> Option<RequestKind> {
        match self.state {
            State::InFlight { tag: t, kind, .. } if t == tag => Some(kind),
            _ => None,
        }
    }

    /// Whether `tag` names the request in flight.
    #[cfg(test)]
    pub(crate) fn owns(&self, tag: u64) -> bool {
        self.in_flight(tag).is_some()
    }

    /// The broker answered GetTelemetrySubscriptions `tag` at `now`.
    pub(crate) fn subscribed(
        &mut self,
        tag: u64,
        answer: &GetTelemetrySubscriptionsResponse,
        now: Timestamp,
    ) {
        if self.in_flight(tag) != Some(RequestKind::Subscription) {
            return;
        }
        self.losses = 0;
        if answer.error_code != 0 {
            self.refused(answer.error_code, now);
            return;
        }
        if answer.client_instance_id == [0; 16] {
            self.stop(Stopped::NoClientInstanceId);
            return;
        }
        let push_interval = u64::try_from(answer.push_interval_ms)
            .ok()
            .filter(|&ms| ms > 0)
            .map_or(DEFAULT_PUSH_INTERVAL, Duration::from_millis);
        let subscription = Subscription {
            client_instance_id: answer.client_instance_id,
            subscription_id: answer.subscription_id,
            push_interval,
            delta_temporality: answer.delta_temporality,
            requested: (!answer.requested_metrics.is_empty())
                .then(|| answer.requested_metrics.clone()),
        };
        if self
            .subscription
            .as_ref()
            .is_some_and(|old| old.delta_temporality != subscription.delta_temporality)
        {
            self.ledger.reset();
        }
        self.state = if subscription.requested.is_some() {
            State::PushNeeded {
                at: now + first_push_delay(&subscription),
            }
        } else {
            State::SubscriptionNeeded {
                at: now + push_interval,
            }
        };
        self.subscription = Some(subscription);
    }

    /// The broker answered PushTelemetry `tag` at `now`.
    pub(crate) fn pushed(&mut self, tag: u64, answer: &PushTelemetryResponse, now: Timestamp) {
        if self.in_flight(tag).is_some() {
            self.losses = 0;
        }
        match self.in_flight(tag) {
            Some(RequestKind::TerminatingPush) => self.state = State::Done,
            Some(RequestKind::Push) if answer.error_code != 0 => {
                self.refused(answer.error_code, now);
            }
            Some(RequestKind::Push) => {
                let interval = self.interval();
                self.state = State::PushNeeded { at: now + interval };
            }
            _ => {}
        }
    }

    /// Request `tag` will get no answer (its connection went, it timed out, or it could
    /// not be encoded): the subscription is asked again after a push interval, on
    /// another broker if need be; after `LOSSES_TOLERATED` in a row, telemetry stops.
    pub(crate) fn lost(&mut self, tag: u64, now: Timestamp) {
        let Some(kind) = self.in_flight(tag) else {
            return;
        };
        self.sticky = None;
        self.losses += 1;
        self.state = match kind {
            RequestKind::TerminatingPush => State::Done,
            _ if self.losses >= LOSSES_TOLERATED => {
                return self.stop(Stopped::Unanswered(self.losses))
            }
            RequestKind::Subscription | RequestKind::Push => State::SubscriptionNeeded {
                at: now + self.interval(),
            },
        };
    }

    /// Telemetry stops for good, `why`.
    fn stop(&mut self, why: Stopped) {
        self.state = State::Done;
        self.stopped = Some(why);
    }

    /// Why telemetry stopped for good, once: the session logs it.
    pub(crate) fn take_stopped(&mut self) -> Option<Stopped> {
        self.stopped.take()
    }

    /// The request just sent went to broker `node` (`None`: a bootstrap address) at
    /// `addr`.
    pub(crate) fn sent_to(&mut self, node: Option<i32>, addr: &str) {
        if self
            .last_broker
            .as_ref()
            .is_none_or(|(n, a)| *n != node || a != addr)
        {
            self.last_broker = Some((node, addr.to_owned()));
        }
    }

    /// The broker and address the last request went to, if any went.
    pub(crate) fn last_broker(&self) -> Option<(Option<i32>, &str)> {
        self.last_broker.as_ref().map(|(n, a)| (*n, a.as_str()))
    }

    /// Connection `conn` went: a request on it is lost, and it is no longer preferred.
    pub(crate) fn conn_gone(&mut self, conn: ConnId, now: Timestamp) {
        if let State::InFlight { tag, conn: c, .. } = self.state {
            if c == conn {
                self.lost(tag, now);
            }
        }
        if self.sticky == Some(conn) {
            self.sticky = None;
        }
    }

    /// The producer closed at `now`, `how`: gracefully, the terminating push is due if a
    /// subscription with metrics is held, until the close's time is up; forced, or
    /// with no such subscription, telemetry ends. A request in flight is overtaken (its
    /// answer is ignored), as Kafka's terminating state does.
    pub(crate) fn close(&mut self, how: Closing, now: Timestamp) {
        let pushing = self
            .subscription
            .as_ref()
            .is_some_and(|s| s.requested.is_some());
        let within = match how {
            Closing::Within(deadline) if pushing => deadline,
            _ => {
                if !self.is_done() {
                    self.state = State::Done;
                }
                return;
            }
        };
        let latest = now + self.request_timeout;
        self.give_up = Some(within.map_or(latest, |d| d.min(latest)));
        self.state = match self.state {
            State::PushNeeded { .. }
            | State::SubscriptionNeeded { .. }
            | State::InFlight {
                kind: RequestKind::Push | RequestKind::Subscription,
                ..
            } => State::TerminatingPushNeeded,
            other => other,
        };
        self.expire(now);
    }

    /// Whether nothing more will be sent: off, closed, or refused for good. A closing
    /// session closes its connections once this holds.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.state, State::Off | State::Done)
    }

    fn interval(&self) -> Duration {
        self.subscription
            .as_ref()
            .map_or(DEFAULT_PUSH_INTERVAL, |s| s.push_interval)
    }

    /// The broker refused a request with `code` (see the module documentation). Java's
    /// table names UNSUPPORTED_VERSION, INVALID_REQUEST and INVALID_RECORD as terminal
    /// and treats any code it does not know the same way, so both end here.
    fn refused(&mut self, code: i16, now: Timestamp) {
        self.state = match code {
            UNKNOWN_SUBSCRIPTION_ID | UNSUPPORTED_COMPRESSION_TYPE => {
                State::SubscriptionNeeded { at: now }
            }
            TELEMETRY_TOO_LARGE | THROTTLING_QUOTA_EXCEEDED => State::SubscriptionNeeded {
                at: now + self.interval(),
            },
            _ => return self.stop(Stopped::Refused(code)),
        };
    }

    /// Checks the schedule's invariants (debug builds).
    pub(crate) fn assert_invariants(&self) {
        if let State::PushNeeded { .. } = self.state {
            assert!(
                self.subscription
                    .as_ref()
                    .is_some_and(|s| s.requested.is_some()),
                "a push is due only under a subscription that asks for metrics"
            );
        }
        if let State::InFlight { conn, .. } = self.state {
            assert_eq!(
                self.sticky,
                Some(conn),
                "a request in flight is on the sticky broker"
            );
        }
    }
}

/// 0.5 to 1.5 push intervals, by the instance id's first two bytes.
fn first_push_delay(s: &Subscription) -> Duration {
    let spread = u32::from(u16::from_be_bytes([
        s.client_instance_id[0],
        s.client_instance_id[1],
    ]));
    // interval * (0.5 + spread / 65536), in whole milliseconds.
    let ms = u64::try_from(s.push_interval.as_millis()).unwrap_or(u64::MAX);
    let scaled = (u128::from(ms) * (32_768 + u128::from(spread)) / 65_536) as u64;
    Duration::from_millis(scaled)
}

#[cfg(test)]
mod tests;
