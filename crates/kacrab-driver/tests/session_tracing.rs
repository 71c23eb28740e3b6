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

/// One event the subscriber saw: its level, target, message and fields as text.
#[derive(Clone, Debug)]
struct Seen {
    level: Level,
    target: String,
    message: String,
    fields: BTreeMap<String, String>,
}

impl Seen {
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

/// Collects every event; spans are accepted and ignored.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Seen>>>);

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut fields = fields.0;
        let message = fields.remove("message").unwrap_or_default();
        self.0.lock().unwrap().push(Seen {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            message,
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `scenario` under a collecting subscriber and returns what it logged.
fn logged(scenario: impl FnOnce()) -> Vec<Seen> {
    let collect = Collect::default();
    tracing::subscriber::with_default(collect.clone(), scenario);
    let seen = collect.0.lock().unwrap().clone();
    seen
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
        first_produce_fails(&mut p, broker::OUT_OF_ORDER_SEQUENCE_NUMBER);
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
