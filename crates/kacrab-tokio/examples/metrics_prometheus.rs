//! The producer's metrics through the `metrics` crate facade, printed as Prometheus
//! text: a small hand-written recorder (the role `metrics-exporter-prometheus` or any
//! other exporter plays in production) receives what `metrics::publish` sends and
//! renders it in Prometheus's text exposition format.
//!
//! ```text
//! cargo run -p kacrab-tokio --features metrics --example metrics_prometheus [-- RECORDS]
//! ```
//!
//! It starts krafka's FakeBroker on loopback (no Kafka needed), produces `RECORDS`
//! records (default 100) with the Tokio driver, takes the snapshot, publishes it through
//! a local recorder and prints every metric, e.g.
//! `producer_metrics_record_send_total{client_id="metrics-example"} 100`.
//!
//! Its `#[test]` runs the same workload and checks the text, so CI runs it with
//! `cargo test --workspace --features kacrab-tokio/metrics --example metrics_prometheus`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// What a Prometheus series is: its type line says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

/// One series: its metric name, kind, labels and value cell (`metrics` implements
/// `CounterFn` and `GaugeFn` for `AtomicU64`, a gauge storing its `f64`'s bits).
struct Series {
    kind: Kind,
    labels: Vec<(String, String)>,
    value: Arc<AtomicU64>,
}

/// A recorder keeping the last value of every counter and gauge, by metric name.
#[derive(Clone, Default)]
struct PrometheusText(Arc<Mutex<BTreeMap<String, Vec<Series>>>>);

/// Prometheus's metric and label names allow `[a-zA-Z0-9_:]`: Kafka's `-` and the
/// group separator `.` become `_` (`producer-metrics.record-send-rate` is
/// `producer_metrics_record_send_rate`).
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl PrometheusText {
    fn cell(&self, key: &Key, kind: Kind) -> Arc<AtomicU64> {
        let labels: Vec<(String, String)> = key
            .labels()
            .map(|l| (sanitize(l.key()), l.value().to_owned()))
            .collect();
        let mut all = self.0.lock().expect("not poisoned");
        let series = all.entry(sanitize(key.name())).or_default();
        if let Some(s) = series.iter().find(|s| s.labels == labels) {
            return Arc::clone(&s.value);
        }
        let value = Arc::new(AtomicU64::new(0));
        series.push(Series {
            kind,
            labels,
            value: Arc::clone(&value),
        });
        value
    }

    /// The text exposition format: a `# TYPE` line per metric, a line per series.
    fn render(&self) -> String {
        let mut out = String::new();
        for (name, series) in self.0.lock().expect("not poisoned").iter() {
            let kind = match series[0].kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for s in series {
                let labels: Vec<String> = s
                    .labels
                    .iter()
                    .map(|(k, v)| {
                        format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
                    })
                    .collect();
                let raw = s.value.load(Ordering::Relaxed);
                let value = match s.kind {
                    Kind::Counter => raw.to_string(),
                    Kind::Gauge => {
                        let v = f64::from_bits(raw);
                        if v.is_nan() {
                            "NaN".to_owned()
                        } else {
                            v.to_string()
                        }
                    }
                };
                let _ = writeln!(out, "{name}{{{}}} {value}", labels.join(","));
            }
        }
        out
    }
}

impl Recorder for PrometheusText {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key, Kind::Counter))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key, Kind::Gauge))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        // `publish` sends counters and gauges only.
        Histogram::noop()
    }
}

/// Produces `records` records to a FakeBroker and returns the metrics as Prometheus
/// text.
fn run(records: u32) -> String {
    let cluster = kacrab_testkit::Cluster::start(1).expect("FakeBroker starts");
    cluster
        .create_topic("metrics-example", 1)
        .expect("topic created");
    let bootstrap = cluster.bootstrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let snapshot = rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[
            ("bootstrap.servers", bootstrap.as_str()),
            ("client.id", "metrics-example"),
            ("linger.ms", "5"),
        ])
        .expect("producer");
        let mut deliveries = Vec::new();
        for i in 0..records {
            let record = kacrab_tokio::ProducerRecord::new("metrics-example", 0, format!("v{i}"));
            deliveries.push(p.send(record).await.expect("queued"));
        }
        for d in deliveries {
            d.await.expect("acknowledged");
        }
        let snapshot = p.metrics().await.expect("the driver runs");
        p.close().await;
        snapshot
    });
    let recorder = PrometheusText::default();
    metrics::with_local_recorder(&recorder, || kacrab_tokio::metrics::publish(&snapshot));
    recorder.render()
}

fn main() {
    let records = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("RECORDS is a count"))
        .unwrap_or(100);
    print!("{}", run(records));
}

#[cfg(test)]
mod tests {
    /// The published metrics come out as Prometheus text with Kafka's names, types and
    /// tags as labels, and the counts of the workload.
    #[test]
    fn prints_every_metric_as_prometheus_text() {
        let text = super::run(20);
        assert!(
            text.contains("# TYPE producer_metrics_record_send_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("producer_metrics_record_send_total{client_id=\"metrics-example\"} 20\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "producer_topic_metrics_record_send_total{client_id=\"metrics-example\",topic=\"metrics-example\"} 20\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE producer_metrics_record_send_rate gauge\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "producer_node_metrics_request_total{client_id=\"metrics-example\",node_id=\"node-"
            ),
            "{text}"
        );
        for (group, name) in kacrab_testkit::metric_names::REQUIRED {
            let series = super::sanitize(&format!("{group}.{name}"));
            assert!(
                text.contains(&format!("\n{series}{{")) || text.starts_with(&format!("{series}{{")),
                "{series} missing: {text}"
            );
        }
    }
}
