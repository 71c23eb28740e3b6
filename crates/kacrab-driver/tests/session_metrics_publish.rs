//! `metrics::publish` (feature `metrics`): a recording `metrics` recorder sees every
//! metric of the snapshot under `<group>.<name>` with Kafka's tags as labels, after one
//! produce against the model broker.
//!
//! Run with `cargo test -p kacrab-driver --features metrics --test session_metrics_publish`.
#![cfg(feature = "metrics")]

mod pair;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};
use pair::{Cluster, Pair};

type Store = Arc<Mutex<BTreeMap<String, f64>>>;

/// `name{label=value,...}` (labels sorted), the key the test reads values by.
fn render(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

struct Cell {
    key: String,
    store: Store,
}

impl CounterFn for Cell {
    fn increment(&self, _: u64) {
        panic!("publish sets totals absolutely");
    }
    fn absolute(&self, value: u64) {
        self.store
            .lock()
            .unwrap()
            .insert(self.key.clone(), value as f64);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, _: f64) {
        panic!("publish sets gauges");
    }
    fn decrement(&self, _: f64) {
        panic!("publish sets gauges");
    }
    fn set(&self, value: f64) {
        self.store.lock().unwrap().insert(self.key.clone(), value);
    }
}

/// Records the last value of every counter and gauge by its rendered key.
#[derive(Default)]
struct Recording(Store);

impl Recording {
    fn cell(&self, key: &Key) -> Arc<Cell> {
        Arc::new(Cell {
            key: render(key),
            store: self.0.clone(),
        })
    }
}

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// After one acknowledged record the recorder holds every metric of the snapshot, by
/// Kafka's group and name with `client-id` (and `topic` / `node-id`) labels; a total is
/// its count, a rate a gauge.
#[test]
fn a_recorder_sees_every_metric_by_kafkas_name_and_tags_after_one_produce() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[("client.id", "app")]);
    let id = p.send("t", 0, "a");
    p.settle(Duration::from_secs(10));
    assert!(p.outcome(id).is_some_and(Result::is_ok));
    let now = p.now;
    let snapshot = p.session.metrics(now);
    let recording = Recording::default();
    metrics::with_local_recorder(&recording, || kacrab_driver::metrics::publish(&snapshot));
    let seen = recording.0.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        snapshot.metrics().len(),
        "one series per metric"
    );
    assert_eq!(
        seen.get("producer-metrics.record-send-total{client-id=app}"),
        Some(&1.0),
        "{seen:#?}"
    );
    assert_eq!(
        seen.get("producer-topic-metrics.record-send-total{client-id=app,topic=t}"),
        Some(&1.0)
    );
    assert!(seen["producer-metrics.record-send-rate{client-id=app}"] > 0.0);
    assert!(seen
        .keys()
        .any(|k| k.starts_with("producer-node-metrics.request-total{client-id=app,node-id=node-")));
    assert_eq!(
        seen.get("producer-metrics.buffer-total-bytes{client-id=app}"),
        Some(&snapshot.producer.buffer_total_bytes)
    );
}
