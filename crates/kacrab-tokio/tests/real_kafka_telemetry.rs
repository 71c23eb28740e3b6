//! KIP-714 client telemetry against real Apache Kafka whose broker loads the telemetry
//! judge (`KACRAB_KAFKA_TELEMETRY=1 scripts/kafka.sh start-single`, which prints
//! `KACRAB_KAFKA_TELEMETRY_FILE`; skips with a message without it). The judge is a
//! broker plugin (`scripts/kafka/telemetry/KacrabTelemetryJudge.java`) that decodes every
//! push with the OTLP classes Kafka ships and writes it as one JSON line: Kafka's broker
//! accepts the requests (it records only pushes it accepted) and Kafka's OTLP decoder
//! reads the payload, independently of this crate's encoder.
//!
//! The subscription the script creates asks the clients whose `client.id` starts with
//! `kacrab-telemetry` for every metric, every second, as deltas.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kacrab_testkit::real_kafka::create_topic;
use kacrab_tokio::{Producer, ProducerRecord};
use serde_json::Value;

const RECORDS: usize = 300;

fn env(test: &str) -> Option<(String, String)> {
    let b = std::env::var("KACRAB_KAFKA_BOOTSTRAP").ok();
    let f = std::env::var("KACRAB_KAFKA_TELEMETRY_FILE").ok();
    if b.is_none() || f.is_none() {
        eprintln!(
            "{test}: skipped, KACRAB_KAFKA_BOOTSTRAP and KACRAB_KAFKA_TELEMETRY_FILE are not \
             both set (KACRAB_KAFKA_TELEMETRY=1 scripts/kafka.sh start-single)"
        );
    }
    b.zip(f)
}

/// The judge's lines for `client_id`, in order.
fn pushes_of(file: &str, client_id: &str) -> Vec<Value> {
    std::fs::read_to_string(file)
        .expect("the judge's file")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["client_id"] == client_id)
        .collect()
}

/// A producer sends for a few push intervals and closes: the broker accepted pushes
/// naming one client instance id (the one `Producer::client_instance_id` reports), every payload decoded as OTLP with no field outside
/// the schema, the counters are monotonic delta sums whose deltas add up to the records
/// sent, and the last push (only the last) is the terminating one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_pushes_its_metrics_to_a_broker_that_asks_for_them() {
    let test = "a_producer_pushes_its_metrics_to_a_broker_that_asks_for_them";
    let Some((bs, file)) = env(test) else { return };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = format!("{}-{}", std::process::id(), nanos % 1_000_000_000);
    let topic = format!("kacrab-telemetry-{unique}");
    let client_id = format!("kacrab-telemetry-{unique}");
    create_topic(&bs, &topic, 2, 1).expect("create topic");
    let producer = Producer::from_properties(&[
        ("bootstrap.servers", bs.as_str()),
        ("client.id", client_id.as_str()),
        ("linger.ms", "5"),
    ])
    .unwrap();
    let started = Instant::now();
    // Records spread over ~3.5 push intervals.
    for i in 0..RECORDS {
        producer
            .send(ProducerRecord::new(
                topic.as_str(),
                (i % 2) as i32,
                format!("v{i}"),
            ))
            .await
            .expect("queued")
            .await
            .expect("delivered");
        tokio::time::sleep(Duration::from_millis(12)).await;
    }
    let instance_id = producer
        .client_instance_id()
        .await
        .expect("a client instance id after the first subscription");
    producer.close().await;
    let elapsed = started.elapsed();

    // The judge writes a line when the broker hands it the push: shortly after close.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut pushes = pushes_of(&file, &client_id);
    while !pushes.last().is_some_and(|p| p["terminating"] == true) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        pushes = pushes_of(&file, &client_id);
    }
    eprintln!("{test}: {} pushes in {elapsed:?}", pushes.len());
    assert!(
        pushes.len() >= 3,
        "{} pushes in {elapsed:?}: {pushes:#?}",
        pushes.len()
    );
    let instance = &pushes[0]["client_instance_id"];
    // Kafka prints a UUID as URL-safe base64 without padding (`Uuid.toString`).
    use base64::Engine as _;
    let ours = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(instance_id);
    assert_eq!(instance, &ours, "the id the producer holds is the broker's");
    let mut sent = 0.0;
    for (i, push) in pushes.iter().enumerate() {
        assert!(push.get("decode_error").is_none(), "push {i}: {push}");
        assert_eq!(
            push["unknown_fields"],
            serde_json::json!({}),
            "push {i}: {push}"
        );
        assert_eq!(&push["client_instance_id"], instance, "one instance id");
        assert_eq!(push["software_name"], "kacrab", "ApiVersions v3's name");
        assert_eq!(push["terminating"], i + 1 == pushes.len(), "push {i}");
        let metrics = push["metrics"].as_array().expect("metrics");
        let total = metrics
            .iter()
            .find(|m| m["name"] == "org.apache.kafka.producer.record.send.total")
            .unwrap_or_else(|| panic!("push {i}: no record.send.total: {push}"));
        assert_eq!(total["kind"], "sum", "{total}");
        assert_eq!(
            total["temporality"], "AGGREGATION_TEMPORALITY_DELTA",
            "{total}"
        );
        assert_eq!(total["monotonic"], true, "{total}");
        sent += total["first_value"].as_f64().expect("a number");
        let rate = metrics
            .iter()
            .find(|m| m["name"] == "org.apache.kafka.producer.record.send.rate")
            .unwrap_or_else(|| panic!("push {i}: no record.send.rate"));
        assert_eq!(rate["kind"], "gauge", "{rate}");
        for node in metrics.iter().filter(|m| {
            m["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("org.apache.kafka.producer.node."))
        }) {
            assert!(node["first_attributes"]["node_id"].is_string(), "{node}");
        }
    }
    assert_eq!(
        sent, RECORDS as f64,
        "the deltas add up to the records sent"
    );
}
