//! The session's logs (feature `tracing`): a collecting subscriber sees a connection
//! open, ready and close, a retry with its cause (error code and partition), and an
//! epoch bump, in pair-harness scenarios against the model broker.
//!
//! Run with `cargo test -p kacrab-driver --features tracing --test session_tracing`.
#![cfg(feature = "tracing")]

mod pair;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, ProduceResponse};
use pair::broker::{self, Req};
use pair::{Cluster, Pair, Verdict};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event the subscriber saw: its level, target, message and fields as text, and
/// the span it was logged in (its parent, explicit or the current one).
#[derive(Clone, Debug)]
struct Seen {
    level: Level,
    target: String,
    message: String,
    fields: BTreeMap<String, String>,
    span: Option<u64>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// One span the subscriber saw: its name, target, level and fields (recorded later
/// ones included).
#[derive(Clone, Debug)]
struct SeenSpan {
    name: String,
    target: String,
    level: Level,
    fields: BTreeMap<String, String>,
}

impl SeenSpan {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

#[derive(Default)]
struct Log {
    events: Vec<Seen>,
    spans: BTreeMap<u64, SeenSpan>,
    /// The entered spans, innermost last (the scenarios run on one thread).
    stack: Vec<u64>,
}

/// Collects every event and span.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Log>>);

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let mut log = self.0.lock().unwrap();
        let id = log.spans.len() as u64 + 1;
        log.spans.insert(
            id,
            SeenSpan {
                name: attrs.metadata().name().to_owned(),
                target: attrs.metadata().target().to_owned(),
                level: *attrs.metadata().level(),
                fields: fields.0,
            },
        );
        Id::from_u64(id)
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(span) = self.0.lock().unwrap().spans.get_mut(&id.into_u64()) {
            span.fields.extend(fields.0);
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut fields = fields.0;
        let message = fields.remove("message").unwrap_or_default();
        let mut log = self.0.lock().unwrap();
        let span = if event.is_root() {
            None
        } else if let Some(parent) = event.parent() {
            Some(parent.into_u64())
        } else {
            log.stack.last().copied()
        };
        log.events.push(Seen {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            message,
            fields,
            span,
        });
    }
    fn enter(&self, id: &Id) {
        self.0.lock().unwrap().stack.push(id.into_u64());
    }
    fn exit(&self, id: &Id) {
        let mut log = self.0.lock().unwrap();
        if let Some(at) = log.stack.iter().rposition(|&s| s == id.into_u64()) {
            log.stack.remove(at);
        }
    }
}

/// Runs `scenario` under a collecting subscriber and returns what it logged.
fn logged(scenario: impl FnOnce()) -> Vec<Seen> {
    logged_with_spans(scenario).0
}

/// Runs `scenario` under a collecting subscriber: its events and its spans by id.
fn logged_with_spans(scenario: impl FnOnce()) -> (Vec<Seen>, BTreeMap<u64, SeenSpan>) {
    let collect = Collect::default();
    tracing::subscriber::with_default(collect.clone(), scenario);
    let log = std::mem::take(&mut *collect.0.lock().unwrap());
    (log.events, log.spans)
}

/// Answers the first Produce with `error` for every partition, later ones normally.
fn first_produce_fails(p: &mut Pair, error: i16) {
    let mut first = true;
    p.hook(move |inc, _| {
        if inc.api != ApiKey::Produce || !first {
            return None;
        }
        first = false;
        let Req::Produce(r) = &inc.req else {
            panic!("not a produce request")
        };
        let responses = r
            .topic_data
            .iter()
            .map(|td| {
                let parts = td
                    .partition_data
                    .iter()
                    .map(|pd| {
                        PartitionProduceResponse::default()
                            .with_index(pd.index)
                            .with_error_code(error)
                            .with_base_offset(-1)
                            .with_log_append_time_ms(-1)
                    })
                    .collect();
                TopicProduceResponse::default()
                    .with_name(td.name.clone())
                    .with_partition_responses(parts)
            })
            .collect();
        let answer = ProduceResponse::default().with_responses(responses);
        Some(Verdict::Raw(broker::frame(inc, &answer, inc.version)))
    });
}

fn find<'a>(seen: &'a [Seen], message: &str) -> Vec<&'a Seen> {
    seen.iter().filter(|s| s.message == message).collect()
}

/// A retried record: the connection is logged opening and ready (with its negotiated
/// Produce version), the retry with its cause (NOT_ENOUGH_REPLICAS, code 19) and
/// partition, and the close at the end with its reason. Every event has target
/// `kacrab`, and none per record is above TRACE.
#[test]
fn a_connection_and_a_retry_with_its_cause_are_logged() {
    let seen = logged(|| {
        let mut p = Pair::new(Cluster::new(1).with_topic("t", 3), &[]);
        first_produce_fails(&mut p, 19);
        let id = p.send("t", 2, "a");
        p.settle(Duration::from_secs(10));
        assert!(p.acked(id).offset.is_some());
        p.close(None);
        p.settle(Duration::from_secs(10));
    });
    assert!(seen.iter().all(|s| s.target == "kacrab"));
    let opening = find(&seen, "connection opening");
    assert!(!opening.is_empty(), "{seen:#?}");
    assert!(opening[0].field("addr").is_some());
    assert_eq!(opening[0].level, Level::INFO);
    let ready = find(&seen, "connection ready (versions negotiated)");
    assert!(
        ready
            .iter()
            .any(|s| s.field("produce").is_some_and(|v| v.starts_with("Some("))),
        "{ready:#?}"
    );
    let retried = find(&seen, "batch retried");
    assert_eq!(retried.len(), 1, "{seen:#?}");
    let r = retried[0];
    assert_eq!(r.field("error_code"), Some("19"));
    assert_eq!(r.field("error"), Some("NotEnoughReplicas"));
    assert_eq!(r.field("partition"), Some("2"));
    assert_eq!(r.field("topic"), Some("t"));
    assert_eq!(r.field("records"), Some("1"));
    let closed = find(&seen, "connection closed");
    assert!(
        closed
            .iter()
            .any(|s| s.field("reason") == Some("the producer is closed")),
        "{closed:#?}"
    );
    assert!(
        find(&seen, "topic metadata learned")
            .iter()
            .any(|s| s.field("topic") == Some("t") && s.field("partitions") == Some("3")),
        "{seen:#?}"
    );
    let per_record = ["record failed", "records delivered", "request written"];
    assert!(seen
        .iter()
        .filter(|s| per_record.contains(&s.message.as_str()))
        .all(|s| s.level == Level::TRACE));
}

/// OUT_OF_ORDER_SEQUENCE_NUMBER for the next expected batch bumps the epoch (KIP-360):
/// the log names it an epoch bump under the same producer id, with both epochs.
#[test]
fn an_epoch_bump_is_logged_with_both_epochs() {
    let seen = logged(|| {
        let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
        first_produce_fails(
            &mut p,
            kacrab_broker_model::broker::OUT_OF_ORDER_SEQUENCE_NUMBER,
        );
        let id = p.send("t", 0, "a");
        p.settle(Duration::from_secs(10));
        assert!(p.outcome(id).is_some_and(Result::is_ok));
    });
    let first = find(&seen, "producer id changed");
    assert_eq!(first.len(), 1, "the first id: {seen:#?}");
    let bumps = find(&seen, "epoch bumped");
    assert_eq!(bumps.len(), 1, "{seen:#?}");
    let b = bumps[0];
    assert_eq!(b.field("producer_id"), b.field("previous_producer_id"));
    let epoch: i64 = b.field("epoch").unwrap().parse().unwrap();
    let previous: i64 = b.field("previous_epoch").unwrap().parse().unwrap();
    assert_eq!(epoch, previous + 1);
    assert_eq!(b.field("epoch_bump"), Some("true"));
    let retried = find(&seen, "batch retried");
    assert_eq!(retried[0].field("error_code"), Some("45"));
}

/// Every broker connection has a `connection` span (target `kacrab`, level INFO) with
/// its id and address, and the broker id when it goes to a known broker; what happens on the connection
/// (its opening, negotiation, the retry its answer caused, its close) is logged inside
/// that span. Nothing per record is a span.
#[test]
fn a_connection_span_carries_its_address_and_holds_its_events() {
    let (seen, spans) = logged_with_spans(|| {
        let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
        first_produce_fails(&mut p, 19);
        let id = p.send("t", 0, "a");
        p.settle(Duration::from_secs(10));
        assert!(p.acked(id).offset.is_some());
        p.close(None);
        p.settle(Duration::from_secs(10));
    });
    let connections: Vec<(&u64, &SeenSpan)> = spans
        .iter()
        .filter(|(_, s)| s.name == "connection")
        .collect();
    assert!(!connections.is_empty(), "{spans:#?}");
    for (_, s) in &connections {
        assert_eq!(s.target, "kacrab");
        assert_eq!(s.level, Level::INFO);
        assert!(
            s.field("conn").is_some() && s.field("addr").is_some(),
            "{s:#?}"
        );
    }
    assert!(
        connections
            .iter()
            .any(|(_, s)| s.field("node") == Some("0")),
        "the broker's connection names its node: {connections:#?}"
    );
    let inside = |message: &str| {
        let events = find(&seen, message);
        assert!(!events.is_empty(), "no {message:?}: {seen:#?}");
        events.iter().all(|e| {
            e.span
                .and_then(|id| spans.get(&id))
                .is_some_and(|s| s.name == "connection")
        })
    };
    assert!(inside("connection opening"), "{seen:#?}");
    assert!(
        inside("connection ready (versions negotiated)"),
        "{seen:#?}"
    );
    assert!(
        inside("batch retried"),
        "the answer that caused it: {seen:#?}"
    );
    assert!(inside("connection closed"), "{seen:#?}");
    // The span of each event names the same connection as the event.
    for e in seen
        .iter()
        .filter(|e| e.field("conn").is_some() && e.span.is_some())
    {
        let s = &spans[&e.span.unwrap()];
        if s.name == "connection" {
            assert_eq!(s.field("conn"), e.field("conn"), "{e:#?} in {s:#?}");
        }
    }
    assert!(spans.values().all(|s| s.name == "connection"), "{spans:#?}");
}

/// A transaction has a `transaction` span with its `transactional.id`, producer id and
/// epoch, from `begin_transaction` to the end of its commit; its state changes are
/// logged inside it, and the next transaction gets a span of its own.
#[test]
fn a_transaction_span_carries_its_id_producer_id_and_epoch() {
    let (seen, spans) = logged_with_spans(|| {
        let mut p = Pair::new(
            Cluster::new(1).with_topic("t", 1),
            &[("transactional.id", "tx-span")],
        );
        let init = p.session.init_transactions(p.now);
        assert!(p.run_until(Duration::from_secs(10), |p| p.op(init).is_some()));
        for round in 0..2 {
            let _ = p.session.begin_transaction(p.now);
            p.pump();
            p.send("t", 0, &format!("r{round}"));
            let commit = p.session.commit_transaction(p.now);
            assert!(p.run_until(Duration::from_secs(10), |p| p.op(commit).is_some()));
        }
    });
    let txns: Vec<(&u64, &SeenSpan)> = spans
        .iter()
        .filter(|(_, s)| s.name == "transaction")
        .collect();
    assert_eq!(txns.len(), 2, "one per transaction: {spans:#?}");
    for (&id, s) in &txns {
        assert_eq!(s.field("transactional_id"), Some("tx-span"), "{s:#?}");
        assert!(s
            .field("producer_id")
            .is_some_and(|v| v.parse::<i64>().unwrap() >= 0));
        assert!(s.field("epoch").is_some_and(|v| v.parse::<i64>().is_ok()));
        let changes: Vec<&Seen> = find(&seen, "transaction state changed")
            .into_iter()
            .filter(|e| e.span == Some(id))
            .collect();
        let to: Vec<&str> = changes.iter().filter_map(|e| e.field("to")).collect();
        assert!(to.contains(&"Some(InTransaction)"), "{to:?}");
        assert!(to.contains(&"Some(CommittingTransaction)"), "{to:?}");
        assert!(to.contains(&"Some(Ready)"), "{to:?}");
    }
    // init_transactions' changes are outside any transaction.
    assert!(find(&seen, "transaction state changed")
        .iter()
        .filter(|e| e.field("to") == Some("Some(Initializing)"))
        .all(|e| e.span.is_none_or(|id| spans[&id].name != "transaction")));
}

/// A topic that does not exist yet: Metadata answers UNKNOWN_TOPIC_OR_PARTITION to
/// every lookup while the send waits, but the warning is logged once (once per topic
/// and change of error, not once per lookup); once the topic is created, it is learned
/// and the record acknowledged. Java's `NetworkClient` warns on each such answer.
#[test]
fn a_topic_that_does_not_exist_yet_is_warned_about_once() {
    let mut lookups = 0;
    let seen = logged(|| {
        let mut p = Pair::new(Cluster::new(1), &[("retry.backoff.ms", "50")]);
        let id = p.send("t", 0, "a");
        p.run_for(Duration::from_secs(1));
        lookups = p.cluster.count(ApiKey::Metadata);
        p.cluster.recreate_topic("t", 1, 0);
        p.settle(Duration::from_secs(5));
        assert!(p.acked(id).offset.is_some());
    });
    assert!(lookups >= 5, "the session kept asking: {lookups} lookups");
    let warned = find(&seen, "topic metadata unavailable; sends to it wait");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert_eq!(warned[0].level, Level::WARN);
    assert_eq!(warned[0].field("topic"), Some("t"));
    assert_eq!(warned[0].field("error_code"), Some("3"));
    assert!(
        find(&seen, "topic metadata learned")
            .iter()
            .any(|s| s.field("topic") == Some("t")),
        "{seen:#?}"
    );
}

/// Nothing listens at the bootstrap address: every connect is refused. The first
/// failure is logged once at WARN naming the broker, its address and the cause; each
/// reconnect's failure only at DEBUG. A send to a topic then fails at `max.block.ms`
/// with an error that names the address and "connection refused", where it used to
/// say only "not present in metadata". Java's `NetworkClient.processDisconnection` /
/// `handleServerDisconnect` log the node and its address when a connection cannot be
/// established; the wait is `KafkaProducer.waitOnMetadata`.
#[test]
fn a_refused_bootstrap_warns_once_and_the_metadata_wait_names_the_cause() {
    let mut outcome = None;
    let seen = logged(|| {
        let mut cluster = Cluster::new(1).with_topic("eco", 1);
        cluster.brokers.get_mut(&0).expect("node 0").alive = false;
        let mut p = Pair::new(
            cluster,
            &[
                ("max.block.ms", "2000"),
                ("reconnect.backoff.ms", "50"),
                ("reconnect.backoff.max.ms", "100"),
            ],
        );
        let id = p.send_record(kacrab_driver::ProducerRecord::unkeyed("eco", "x"));
        p.settle(Duration::from_secs(10));
        outcome = p.outcome(id).cloned();
    });
    let error = outcome.expect("an outcome").expect_err("nothing listens");
    assert_eq!(
        error.to_string(),
        "topic eco: not present in metadata after 2000 ms; b0:9092: connection refused"
    );
    let warned = find(&seen, "connection to broker failed");
    assert_eq!(warned.len(), 1, "{seen:#?}");
    let w = warned[0];
    assert_eq!(w.level, Level::WARN);
    assert_eq!(w.field("addr"), Some("b0:9092"));
    assert_eq!(w.field("broker"), Some("bootstrap"));
    assert_eq!(w.field("error"), Some("connection refused"));
    assert_eq!(w.field("kind"), Some("ConnectionRefused"));
    let again = find(&seen, "connection to broker failed again");
    assert!(again.len() >= 5, "{seen:#?}");
    assert!(again.iter().all(|s| s.level == Level::DEBUG), "{again:#?}");
}

/// A broker that was reachable and fails again warns again (its first failure since it
/// was last ready): an operator sees each outage once.
#[test]
fn a_broker_lost_after_it_was_ready_warns_again() {
    let seen = logged(|| {
        let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
        let id = p.send("t", 0, "a");
        p.settle(Duration::from_secs(10));
        assert!(p.acked(id).offset.is_some());
        p.crash(0);
        p.run_for(Duration::from_secs(2));
    });
    let warned = find(&seen, "connection to broker failed");
    assert!(!warned.is_empty(), "{seen:#?}");
    assert!(warned.iter().all(|s| s.level == Level::WARN));
    assert!(
        warned
            .iter()
            .any(|s| s.field("addr") == Some("b0:9092")
                && s.field("error") == Some("connection reset")),
        "{warned:#?}"
    );
    // One warning per address: the reconnects that fail after it are DEBUG.
    let mut addrs: Vec<&str> = warned.iter().filter_map(|s| s.field("addr")).collect();
    let all = addrs.len();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), all, "{warned:#?}");
}

/// Telemetry that stops for good warns once, naming its cause: the broker and address
/// that refused it and Kafka's error code (here INVALID_RECORD, 87, on a push, which
/// Java's `ClientTelemetryReporter` treats as terminal too).
#[test]
fn telemetry_stopped_for_good_warns_naming_the_broker_and_the_code() {
    let seen = logged(|| {
        let mut plugin = pair::telemetry::TelemetryPlugin::new(&["*"], 500);
        plugin.push_errors.push_back(87);
        let mut cluster = Cluster::new(1).with_topic("t", 1);
        cluster.telemetry = Some(plugin);
        let mut p = Pair::new(cluster, &[]);
        p.run_for(Duration::from_secs(3));
    });
    let stopped = find(&seen, "client telemetry stopped");
    assert_eq!(stopped.len(), 1, "{seen:#?}");
    let s = stopped[0];
    assert_eq!(s.level, Level::WARN);
    // The one broker is reached through its bootstrap address.
    assert_eq!(s.field("broker"), Some("bootstrap"), "{s:#?}");
    assert_eq!(s.field("addr"), Some("b0:9092"), "{s:#?}");
    assert_eq!(s.field("error_code"), Some("87"), "{s:#?}");
    assert_eq!(
        s.field("cause"),
        Some("the broker refused it with INVALID_RECORD (87)"),
        "{s:#?}"
    );
}

/// Telemetry whose requests go unanswered three times in a row stops with a warning
/// naming how many were lost and the broker the last one went to.
#[test]
fn telemetry_stopped_after_lost_requests_warns_naming_the_broker() {
    let seen = logged(|| {
        let plugin = pair::telemetry::TelemetryPlugin::new(&["*"], 500);
        let mut cluster = Cluster::new(1).with_topic("t", 1);
        cluster.telemetry = Some(plugin);
        let mut p = Pair::new(cluster, &[("request.timeout.ms", "1000")]);
        // The first subscription is answered (a 500 ms interval); every telemetry
        // request after it is ignored until it times out.
        let mut answered = false;
        p.hook(move |inc, _| {
            let telemetry =
                inc.api == ApiKey::GetTelemetrySubscriptions || inc.api == ApiKey::PushTelemetry;
            if !telemetry {
                return None;
            }
            if !answered {
                answered = true;
                return None;
            }
            Some(Verdict::Ignore)
        });
        // Records keep a connection open (telemetry never dials one of its own).
        for _ in 0..30 {
            p.send("t", 0, "x");
            p.run_for(Duration::from_secs(1));
        }
    });
    let stopped = find(&seen, "client telemetry stopped");
    assert_eq!(stopped.len(), 1, "{seen:#?}");
    let s = stopped[0];
    assert_eq!(s.level, Level::WARN);
    assert_eq!(s.field("addr"), Some("b0:9092"), "{s:#?}");
    assert!(
        s.field("cause").is_some_and(|c| c.contains("3 requests")),
        "{s:#?}"
    );
}

/// Brokers without a telemetry plugin do not advertise KIP-714's APIs, and the session
/// never asks them: no telemetry request is tried, so none is lost and no warning is
/// logged, however long the producer runs (Java's `ClientTelemetryReporter` sends only
/// to a node whose ApiVersions lists both APIs).
#[test]
fn brokers_without_a_telemetry_plugin_are_never_asked() {
    let seen = logged(|| {
        let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
        for _ in 0..20 {
            p.send("t", 0, "x");
            p.run_for(Duration::from_secs(60));
        }
        assert_eq!(p.cluster.count(ApiKey::GetTelemetrySubscriptions), 0);
    });
    assert!(
        find(&seen, "client telemetry stopped").is_empty(),
        "{seen:#?}"
    );
}
