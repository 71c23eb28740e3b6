//! `metrics::publish` (feature `metrics`): a recording `metrics` recorder sees every
//! metric of the snapshot under `<group>.<name>` with Kafka's tags as labels, after one
//! produce against the model broker; and the session publishes on its own timer
//! (`kacrab.metrics.publish.interval.ms`), with virtual time.
//!
//! Run with `cargo test -p kacrab-driver --features metrics --test session_metrics_publish`.
#![cfg(feature = "metrics")]

mod pair;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kacrab_idempotence::Timestamp;
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

/// Runs `p` until the virtual clock reads `at` (events due at `at` included).
fn run_to(p: &mut Pair, at: Timestamp) {
    let d = at.saturating_duration_since(p.now);
    p.run_for(d);
    assert_eq!(p.now, at);
}

fn seen(recording: &Recording) -> BTreeMap<String, f64> {
    recording.0.lock().unwrap().clone()
}

const SENT: &str = "producer-metrics.record-send-total{client-id=app}";

/// With `kacrab.metrics.publish.interval.ms` the session publishes its snapshot through
/// the facade on its own timer, driven by `poll_timeout` / `handle_timeout`: nothing
/// before the first interval has passed, every metric at it, and the values of each
/// later instant at each later interval. Kafka's producer has no such timer (its
/// reporters pull: `JmxReporter` reads `KafkaMetric.metricValue` on demand); a facade
/// exporter only serves what is pushed to it.
#[test]
fn the_session_publishes_at_each_interval_and_not_before() {
    let recording = Recording::default();
    metrics::with_local_recorder(&recording, || {
        let mut p = Pair::new(
            Cluster::new(1).with_topic("t", 1),
            &[
                ("client.id", "app"),
                ("kacrab.metrics.publish.interval.ms", "1000"),
            ],
        );
        let start = p.now;
        let first = start + Duration::from_millis(1000);
        assert!(
            p.session.poll_timeout().is_some_and(|t| t <= first),
            "the publication is one of the session's deadlines"
        );
        let id = p.send("t", 0, "a");
        p.settle(Duration::from_millis(500));
        assert!(p.outcome(id).is_some_and(Result::is_ok));
        run_to(&mut p, start + Duration::from_millis(999));
        assert!(seen(&recording).is_empty(), "nothing before the interval");

        run_to(&mut p, first);
        let at_first = seen(&recording);
        let count = p.session.metrics(first).metrics().len();
        assert_eq!(at_first.len(), count, "every metric, at the interval");
        assert_eq!(at_first.get(SENT), Some(&1.0));

        let id = p.send("t", 0, "b");
        p.settle(Duration::from_millis(500));
        assert!(p.outcome(id).is_some_and(Result::is_ok));
        run_to(&mut p, first + Duration::from_millis(999));
        assert_eq!(
            seen(&recording).get(SENT),
            Some(&1.0),
            "the second send is not published before the next interval"
        );
        run_to(&mut p, first + Duration::from_millis(1000));
        assert_eq!(seen(&recording).get(SENT), Some(&2.0));
    });
}

/// Without the key the interval is 30 s (Kafka's `metrics.sample.window.ms` default,
/// `CommonClientConfigs.METRICS_SAMPLE_WINDOW_MS_CONFIG`): nothing at 29.999 s, every
/// metric at 30 s.
#[test]
fn the_default_interval_is_thirty_seconds() {
    let recording = Recording::default();
    metrics::with_local_recorder(&recording, || {
        let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[("client.id", "app")]);
        let start = p.now;
        p.send("t", 0, "a");
        run_to(&mut p, start + Duration::from_millis(29_999));
        assert!(seen(&recording).is_empty());
        run_to(&mut p, start + Duration::from_secs(30));
        assert_eq!(seen(&recording).get(SENT), Some(&1.0));
    });
}

/// `kacrab.metrics.publish.interval.ms=0` disables the timer: nothing is ever published,
/// and no deadline of the session is the publication's.
#[test]
fn zero_disables_publishing() {
    let recording = Recording::default();
    metrics::with_local_recorder(&recording, || {
        let mut p = Pair::new(
            Cluster::new(1).with_topic("t", 1),
            &[
                ("client.id", "app"),
                ("kacrab.metrics.publish.interval.ms", "0"),
            ],
        );
        let start = p.now;
        p.send("t", 0, "a");
        p.settle(Duration::from_secs(1));
        run_to(&mut p, start + Duration::from_secs(600));
        assert!(seen(&recording).is_empty(), "{:#?}", seen(&recording));
    });
}

/// Once the session is finished (closed, every outcome given) the timer stops: a driver
/// still waiting on `poll_timeout` publishes nothing for a producer that is gone.
#[test]
fn publishing_stops_once_the_session_is_finished() {
    let recording = Recording::default();
    metrics::with_local_recorder(&recording, || {
        let mut p = Pair::new(
            Cluster::new(1).with_topic("t", 1),
            &[
                ("client.id", "app"),
                ("kacrab.metrics.publish.interval.ms", "1000"),
            ],
        );
        p.send("t", 0, "a");
        p.settle(Duration::from_secs(1));
        p.close(None);
        assert!(p.run_until(Duration::from_secs(5), |p| p.session.is_finished()));
        recording.0.lock().unwrap().clear();
        let now = p.now;
        run_to(&mut p, now + Duration::from_secs(10));
        assert!(seen(&recording).is_empty());
    });
}
