//! A topic created while the producer runs, against real Apache Kafka
//! (`scripts/kafka.sh start-single`, `KACRAB_KAFKA_BOOTSTRAP`; skips with a message
//! without it).
//!
//! The records are sent before the topic exists, so the producer sends the first
//! batches of every partition the moment its metadata shows the topic, while the
//! partitions' leaders may still be opening. A leader that answers the first batch
//! NOT_LEADER_OR_FOLLOWER and then accepts a pipelined second batch at its non-zero
//! sequence (an unknown producer's first sequence is not checked before Kafka 4.5,
//! KIP-360) leaves Java 4.4's first batch retried OUT_OF_ORDER_SEQUENCE_NUMBER until
//! `delivery.timeout.ms` (KAFKA-15591). The core keeps one batch in flight per partition
//! until its first ack (docs/design.md, departure 7), so every record must be delivered,
//! once, in send order. The simulator's fault "NOT_LEADER_OR_FOLLOWER on an opening
//! partition" forces the refusal (`crates/kacrab-sim/tests/opening_partition.rs`); here
//! it happens only if the broker's timing makes it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kacrab_testkit::real_kafka::{create_topic, script};
use kacrab_tokio::{Producer, ProducerRecord};

const PARTITIONS: i32 = 6;
const PER_PARTITION: usize = 200;

fn bootstrap(test: &str) -> Option<String> {
    let b = std::env::var("KACRAB_KAFKA_BOOTSTRAP").ok();
    if b.is_none() {
        eprintln!(
            "{test}: skipped, KACRAB_KAFKA_BOOTSTRAP is not set (scripts/kafka.sh start-single)"
        );
    }
    b
}

fn fresh(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

/// `(partition, value)` of every record of `topic`, read by Kafka's console consumer.
fn consume(bootstrap: &str, topic: &str, max: usize) -> Vec<(i32, String)> {
    let out = script(&["consume", bootstrap, topic, &max.to_string()]).expect("consume");
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 4).then(|| (f[0].parse().unwrap(), f[3].to_owned()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_batch_on_a_topic_created_while_the_producer_runs_keeps_its_order() {
    let Some(bs) =
        bootstrap("first_batch_on_a_topic_created_while_the_producer_runs_keeps_its_order")
    else {
        return;
    };
    // The producer runs (it knows the cluster and has a producer id) before the topic
    // exists.
    let warm = fresh("kacrab-opening-warm");
    create_topic(&bs, &warm, 1, 1).expect("create warm-up topic");
    let producer = Producer::from_properties(&[
        ("bootstrap.servers", bs.as_str()),
        ("linger.ms", "0"),
        ("batch.size", "256"),
        ("metadata.max.age.ms", "1000"),
        ("max.block.ms", "120000"),
    ])
    .unwrap();
    producer
        .send(ProducerRecord::new(warm.as_str(), 0, "warm"))
        .await
        .expect("queued")
        .await
        .expect("warm-up delivered");

    let topic = fresh("kacrab-opening");
    let creator = tokio::task::spawn_blocking({
        let (bs, topic) = (bs.clone(), topic.clone());
        move || {
            // Let the producer start asking for the missing topic first.
            std::thread::sleep(Duration::from_millis(500));
            create_topic(&bs, &topic, PARTITIONS, 1)
        }
    });
    let mut pending = Vec::new();
    for i in 0..PER_PARTITION {
        for p in 0..PARTITIONS {
            let value = format!("{p}:{i:05}");
            pending.push(
                producer
                    .send(ProducerRecord::new(topic.as_str(), p, value))
                    .await
                    .expect("queued"),
            );
        }
    }
    creator.await.expect("creator task").expect("create topic");
    for d in pending {
        d.await.expect("delivered");
    }
    producer.close().await;

    let total = PER_PARTITION * PARTITIONS as usize;
    let records = consume(&bs, &topic, total);
    assert_eq!(records.len(), total, "every record read back once");
    for p in 0..PARTITIONS {
        let values: Vec<&str> = records
            .iter()
            .filter(|r| r.0 == p)
            .map(|r| r.1.as_str())
            .collect();
        let expected: Vec<String> = (0..PER_PARTITION).map(|i| format!("{p}:{i:05}")).collect();
        assert_eq!(
            values, expected,
            "partition {p}: each record once, in send order"
        );
    }
}
