//! KIP-714 client telemetry through the session, against the harness's brokers with a
//! telemetry plugin (`pair/telemetry.rs`, after Kafka's `ClientMetricsManager`). The
//! rules are Kafka's client's (`ClientTelemetryReporter`, `ClientTelemetryUtils`): see
//! the session's `telemetry` module.

use std::time::Duration;

use crate::pair::broker::{Incoming, Req};
use crate::pair::telemetry::{
    decode_metrics, TelemetryPlugin, INSTANCE_ID, UNKNOWN_SUBSCRIPTION_ID,
};
use crate::pair::{Cluster, Pair, Verdict};
use kafka_protocol::messages::ApiKey;

const SECOND: Duration = Duration::from_secs(1);
const PREFIX: &str = "org.apache.kafka.producer.";
/// OTLP's `AGGREGATION_TEMPORALITY_DELTA`.
const DELTA: i32 = 1;

fn with_plugin(plugin: TelemetryPlugin, props: &[(&str, &str)]) -> Pair {
    let mut cluster = Cluster::new(1).with_topic("t", 2);
    cluster.telemetry = Some(plugin);
    Pair::new(cluster, props)
}

fn plugin(p: &Pair) -> &TelemetryPlugin {
    p.cluster.telemetry.as_ref().expect("a plugin")
}

/// A broker asking for the producer's metrics gets them every push interval: the first
/// subscription request has a zero id and is given one, every push names it and the
/// subscription, uncompressed, with only the metrics asked for; counters are monotonic
/// delta sums whose deltas add up to the records sent; per-broker metrics carry
/// `node_id`.
#[test]
fn metrics_are_pushed_every_interval_once_a_broker_asks_for_them() {
    let mut p = with_plugin(TelemetryPlugin::new(&[PREFIX], 1000), &[]);
    for i in 0..10 {
        p.send("t", i % 2, "x");
    }
    p.run_for(SECOND * 2);
    for i in 0..5 {
        p.send("t", i % 2, "y");
    }
    p.run_for(SECOND * 3);
    assert_eq!(plugin(&p).subscription_requests, vec![[0; 16]]);
    assert_eq!(p.session.client_instance_id(), Some(INSTANCE_ID));
    let pushes = &plugin(&p).pushes;
    // First after 0.75 intervals (the id's first byte, 0x40), then every interval.
    assert!(
        (4..=5).contains(&pushes.len()),
        "{} pushes in 5 s at a 1 s interval",
        pushes.len()
    );
    let mut sent_total = 0.0;
    for push in pushes {
        assert_eq!(push.client_instance_id, INSTANCE_ID);
        assert_eq!((push.subscription_id, push.compression_type), (1, 0));
        assert!(!push.terminating);
        let metrics = decode_metrics(&push.metrics).expect("an OTLP MetricsData payload");
        assert!(
            metrics.iter().all(|m| m.name.starts_with(PREFIX)),
            "{metrics:?}"
        );
        let total = metrics
            .iter()
            .find(|m| m.name == "org.apache.kafka.producer.record.send.total")
            .expect("record.send.total pushed");
        assert_eq!(total.sum, Some((DELTA, true)));
        sent_total += total.value;
        assert!(
            metrics
                .iter()
                .filter(|m| m.name.starts_with("org.apache.kafka.producer.node."))
                .all(|m| m.attributes.iter().any(|(k, _)| k == "node_id")),
            "per-broker metrics carry node_id"
        );
    }
    assert_eq!(sent_total, 15.0, "the deltas add up to every record sent");
    p.assert_every_ticket_ended();
}

/// A subscription naming prefixes gets only the metrics under them; one asking for
/// nothing gets no push, and is asked again after its interval.
#[test]
fn only_the_metrics_asked_for_are_pushed_and_none_when_none_are() {
    let mut p = with_plugin(
        TelemetryPlugin::new(&["org.apache.kafka.producer.record.send"], 500),
        &[],
    );
    p.send("t", 0, "x");
    p.run_for(SECOND * 2);
    let names: Vec<String> = plugin(&p)
        .pushes
        .iter()
        .flat_map(|push| decode_metrics(&push.metrics).unwrap())
        .map(|m| m.name)
        .collect();
    assert!(!names.is_empty());
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("org.apache.kafka.producer.record.send")),
        "{names:?}"
    );

    let mut quiet = with_plugin(TelemetryPlugin::new(&[], 1000), &[]);
    quiet.send("t", 0, "x");
    quiet.run_for(SECOND * 3 + SECOND / 2);
    assert!(plugin(&quiet).pushes.is_empty());
    let asked = &plugin(&quiet).subscription_requests;
    assert_eq!(asked.len(), 4, "at 0, 1, 2 and 3 s: {asked:?}");
    assert!(
        asked[1..].iter().all(|id| *id == INSTANCE_ID),
        "the id is kept"
    );
}

/// Closing sends one last push marked terminating, and the connections close (and the
/// close completes) only after it was answered. The push counts everything the close
/// waited for: the responses it reports add up to every answer the broker sent before
/// it.
#[test]
fn closing_sends_one_terminating_push_then_closes_the_connections() {
    let mut p = with_plugin(TelemetryPlugin::new(&["*"], 1000), &[]);
    p.send("t", 0, "x");
    p.run_for(SECOND * 2);
    let before = plugin(&p).pushes.len();
    assert!(before >= 1);
    let closes_before = p.closes.len();
    for i in 0..5 {
        p.send("t", i % 2, "last");
    }
    let op = p.close(None);
    assert!(p.run_until(SECOND, |p| p.cluster.count(ApiKey::PushTelemetry) > before));
    assert!(!p.session.is_finished(), "not before the push is answered");
    assert!(p.op(op).is_none(), "the close waits for the push's answer");
    assert_eq!(p.closes.len(), closes_before, "no connection closed yet");
    p.run_for(SECOND);
    assert!(p.op(op).is_some(), "the close completed");
    let pushes = &plugin(&p).pushes;
    assert_eq!(pushes.len(), before + 1);
    assert!(pushes.last().unwrap().terminating);
    assert_eq!(pushes.iter().filter(|x| x.terminating).count(), 1);
    assert!(p.session.is_finished());
    let last_push = p
        .cluster
        .seen
        .iter()
        .rposition(|s| s.api == ApiKey::PushTelemetry)
        .unwrap();
    assert_eq!(
        last_push,
        p.cluster.seen.len() - 1,
        "nothing after the last push"
    );
    assert!(p.closes.len() > closes_before, "the connections closed");
    let responses: f64 = pushes
        .iter()
        .flat_map(|push| decode_metrics(&push.metrics).unwrap())
        .filter(|m| m.name == "org.apache.kafka.producer.response.total")
        .map(|m| m.value)
        .sum();
    assert_eq!(
        responses as usize,
        p.cluster.seen.len() - 1,
        "every answer before the terminating push is counted in the pushes"
    );
}

/// A forced close (`abort`, or `close` with no time left) sends no terminating push and
/// finishes at once; a graceful close whose push is never answered finishes when
/// `request.timeout.ms` has passed.
#[test]
fn a_forced_close_pushes_nothing_and_an_unanswered_push_is_given_up() {
    for zero in [false, true] {
        let mut p = with_plugin(TelemetryPlugin::new(&["*"], 1000), &[]);
        p.send("t", 0, "x");
        p.run_for(SECOND * 2);
        let pushes = p.cluster.count(ApiKey::PushTelemetry);
        if zero {
            p.close(Some(Duration::ZERO));
        } else {
            let now = p.now;
            p.session.abort(now);
        }
        p.run_for(SECOND / 10);
        assert!(p.session.is_finished(), "zero timeout {zero}");
        assert_eq!(
            p.cluster.count(ApiKey::PushTelemetry),
            pushes,
            "no terminating push"
        );
    }

    let mut p = with_plugin(
        TelemetryPlugin::new(&["*"], 1000),
        &[("request.timeout.ms", "3000")],
    );
    p.hook(|inc, _| terminating(inc).then_some(Verdict::Ignore));
    p.send("t", 0, "x");
    p.run_for(SECOND * 2);
    let closed_at = p.now;
    let op = p.close(None);
    assert!(p.run_until(SECOND * 10, |p| p.session.is_finished()));
    let waited = p.since(closed_at);
    assert!(
        waited >= SECOND * 3 && waited < SECOND * 4,
        "given up after request.timeout.ms: {waited:?}"
    );
    assert!(p.op(op).is_some());
}

fn terminating(inc: &Incoming) -> bool {
    matches!(&inc.req, Req::PushTelemetry(r) if r.terminating)
}

/// Without a plugin the brokers do not advertise the APIs and nothing is asked; with
/// `enable.metrics.push=false` nothing is asked of a broker that has one. Either way
/// the producer closes at once.
#[test]
fn no_request_without_a_plugin_or_with_push_disabled() {
    let mut none = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    none.send("t", 0, "x");
    none.run_for(SECOND * 2);
    none.close(None);
    none.run_for(SECOND);
    assert!(none.session.is_finished());
    assert_eq!(none.cluster.count(ApiKey::GetTelemetrySubscriptions), 0);
    assert_eq!(none.session.client_instance_id(), None);

    let mut off = with_plugin(
        TelemetryPlugin::new(&["*"], 1000),
        &[("enable.metrics.push", "false")],
    );
    off.send("t", 0, "x");
    off.run_for(SECOND * 3);
    off.close(None);
    off.run_for(SECOND);
    assert!(off.session.is_finished());
    assert_eq!(off.cluster.count(ApiKey::GetTelemetrySubscriptions), 0);
    assert_eq!(off.cluster.count(ApiKey::PushTelemetry), 0);
}

/// A push naming a subscription the broker replaced is answered
/// UNKNOWN_SUBSCRIPTION_ID: the subscription is fetched again at once (not after an
/// interval), with the id kept, and pushes go on under the new one.
#[test]
fn a_replaced_subscription_is_fetched_again_at_once() {
    let mut p = with_plugin(TelemetryPlugin::new(&["*"], 1000), &[]);
    p.send("t", 0, "x");
    p.run_for(SECOND * 2);
    let pushed = plugin(&p).pushes.len();
    p.cluster.telemetry.as_mut().unwrap().subscription_id = 2;
    assert!(p.run_until(SECOND * 2, |p| !plugin(p).refused.is_empty()));
    assert_eq!(plugin(&p).refused, vec![UNKNOWN_SUBSCRIPTION_ID]);
    p.run_for(SECOND / 20);
    let asked = &plugin(&p).subscription_requests;
    assert_eq!(asked.len(), 2, "fetched again within 50 ms of the refusal");
    assert_eq!(asked[1], INSTANCE_ID);
    p.run_for(SECOND * 3);
    let plugin = plugin(&p);
    assert!(plugin.pushes[pushed..]
        .iter()
        .all(|x| x.subscription_id == 2));
    assert!(plugin.pushes.len() > pushed + 1, "pushes go on");
}

/// INVALID_RECORD (the broker could not read the payload) stops telemetry for the
/// session's life; records are unaffected.
#[test]
fn a_payload_refused_as_invalid_stops_telemetry() {
    let mut plugin_spec = TelemetryPlugin::new(&["*"], 500);
    plugin_spec.push_errors.push_back(87);
    let mut p = with_plugin(plugin_spec, &[]);
    p.run_for(SECOND * 3);
    assert_eq!(p.cluster.count(ApiKey::PushTelemetry), 1);
    assert_eq!(p.cluster.count(ApiKey::GetTelemetrySubscriptions), 1);
    let id = p.send("t", 0, "x");
    p.run_for(SECOND);
    assert_eq!(p.acked(id).offset, Some(0));
}
