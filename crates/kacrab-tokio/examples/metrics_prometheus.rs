//! The producer's metrics as Prometheus text through `metrics-exporter-prometheus`.
//!
//! ```text
//! cargo run -p kacrab-tokio --features metrics --example metrics_prometheus [-- RECORDS]
//! ```
//!
//! The exporter's recorder is installed as the `metrics` facade's; the session publishes
//! its snapshot to it on its own timer (`kacrab.metrics.publish.interval.ms`, here
//! 100 ms; default 30 s), with no timer of the application's. The example starts
//! krafka's FakeBroker on loopback (no Kafka needed), produces `RECORDS` records
//! (default 100), waits for a publication that counts them all and prints what a scrape
//! would get, e.g. `producer_metrics_record_send_total{client_id="metrics-example"} 100`.
//! A server would answer `/metrics` with the same `render()` (or enable the exporter's
//! `http-listener` feature).
//!
//! Its `#[test]` runs the same workload and checks the text (CI: `.ci/run`'s
//! observability step).

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;

/// Produces `records` records to a FakeBroker and returns the scrape text once the
/// session has published a snapshot counting all of them.
fn run(records: u32) -> String {
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder");
    let cluster = kacrab_testkit::Cluster::start(1).expect("FakeBroker starts");
    cluster.create_topic("metrics-example", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[
            ("bootstrap.servers", bootstrap.as_str()),
            ("client.id", "metrics-example"),
            ("linger.ms", "5"),
            ("kacrab.metrics.publish.interval.ms", "100"),
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
        let all_sent = format!(
            "producer_metrics_record_send_total{{client_id=\"metrics-example\"}} {records}\n"
        );
        let mut text = prometheus.render();
        for _ in 0..200 {
            if text.contains(&all_sent) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            text = prometheus.render();
        }
        p.close().await;
        text
    })
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
    /// The session's own publications reach the exporter: Kafka's names, types and tags
    /// as labels, and the counts of the workload.
    #[test]
    fn prints_every_metric_as_prometheus_text() {
        let text = super::run(20);
        for expected in [
            "# TYPE producer_metrics_record_send_total counter\n",
            "producer_metrics_record_send_total{client_id=\"metrics-example\"} 20\n",
            "producer_topic_metrics_record_send_total{client_id=\"metrics-example\",topic=\"metrics-example\"} 20\n",
            "# TYPE producer_metrics_record_send_rate gauge\n",
            "producer_node_metrics_request_total{client_id=\"metrics-example\",node_id=\"node-",
        ] {
            assert!(text.contains(expected), "{expected} missing: {text}");
        }
        for (group, name) in kacrab_testkit::metric_names::REQUIRED {
            let series = format!("{group}_{name}").replace('-', "_");
            assert!(
                text.contains(&format!("\n{series}{{")),
                "{series} missing: {text}"
            );
        }
    }
}
