//! KIP-714 client telemetry from the blocking producer, against krafka's FakeBroker
//! acting as a cluster with a telemetry plugin (`FakeBroker::set_telemetry`): another
//! implementation of GetTelemetrySubscriptions and PushTelemetry than this workspace's,
//! so the wire format is checked against it. (The payload's OTLP content is judged by
//! Kafka's own classes in kacrab-tokio's `real_kafka_telemetry`.)

use std::time::Duration;

use kacrab_blocking::{Producer, ProducerRecord, SessionConfig};
use krafka::testing::TelemetrySubscription;

/// The producer takes the instance id the broker assigns, pushes every interval under
/// the subscription, and its last push (only that one) is marked terminating.
#[test]
fn the_blocking_producer_pushes_to_a_broker_with_a_telemetry_plugin() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("tel", 1).expect("topic");
    let subscription =
        TelemetrySubscription::new(["org.apache.kafka.producer."], Duration::from_millis(200));
    let assigned = subscription.client_instance_id;
    cluster.broker().set_telemetry(Some(subscription));
    let bootstrap = cluster.bootstrap();
    let config = SessionConfig::from_properties([
        ("bootstrap.servers", bootstrap.as_str()),
        ("client.id", "blocking-telemetry"),
    ])
    .expect("config");
    let p = Producer::new(config).expect("producer");
    for i in 0..20 {
        p.send(ProducerRecord::new("tel", 0, format!("v{i}")))
            .expect("queued")
            .wait()
            .expect("delivered");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(p.client_instance_id(), Some(assigned));
    p.close().expect("closed");
    let pushes = cluster.broker().telemetry_pushes();
    assert!(
        pushes.len() >= 3,
        "{} pushes in ~1 s at 200 ms",
        pushes.len()
    );
    for (i, push) in pushes.iter().enumerate() {
        assert_eq!(push.client_instance_id, assigned);
        assert_eq!((push.subscription_id, push.compression_type), (1, 0));
        assert!(!push.metrics.is_empty());
        assert_eq!(push.terminating, i + 1 == pushes.len(), "push {i}");
    }
}
