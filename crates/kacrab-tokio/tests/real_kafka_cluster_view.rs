//! A producer that knows its cluster, against real Apache Kafka (`scripts/kafka.sh
//! start-single`, `KACRAB_KAFKA_BOOTSTRAP`; each test skips with a message without it):
//! keyed records land where Java's producer puts the same keys, a partition added to a
//! live topic is used within `metadata.max.age.ms`, and a record for a topic that does
//! not exist fails after `max.block.ms` naming it (the script's broker runs with
//! `auto.create.topics.enable=false`), a `LogAppendTime` topic returns the broker's
//! timestamps, a topic deleted and recreated while the producer lives gets the
//! records sent after, each once, in order, and records sent before their topic is
//! created are acknowledged once it is.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kacrab_driver::{TimestampType, TopicError};
use kacrab_testkit::real_kafka::{create_topic, kafka_sh, script};
use kacrab_tokio::{ProduceError, Producer, ProducerRecord};

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

/// `(partition, key, value)` of every record of `topic`, read by Kafka's console
/// consumer.
fn consume(bootstrap: &str, topic: &str, max: usize) -> Vec<(i32, String, String)> {
    let out = script(&["consume", bootstrap, topic, &max.to_string()]).expect("consume");
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 4).then(|| (f[0].parse().unwrap(), f[2].to_owned(), f[3].to_owned()))
        })
        .collect()
}

/// Produces `key<TAB>value` lines with Java's console producer (its built-in
/// partitioner).
fn produce_with_java(bootstrap: &str, topic: &str, lines: &str) {
    let mut child = Command::new("bash")
        .arg(kafka_sh())
        .args(["produce-keyed", bootstrap, topic])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("scripts/kafka.sh produce-keyed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    assert!(
        child.wait().unwrap().success(),
        "Java's console producer failed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_records_land_where_javas_producer_puts_them() {
    let Some(bs) = bootstrap("keyed_records_land_where_javas_producer_puts_them") else {
        return;
    };
    let topic = fresh("kacrab-keys");
    create_topic(&bs, &topic, 7, 1).expect("create topic");
    let keys: Vec<String> = (0..200).map(|i| format!("user-{i}")).collect();
    let producer = Producer::from_properties(&[("bootstrap.servers", bs.as_str())]).unwrap();
    let mut pending = Vec::new();
    for k in &keys {
        pending.push(
            producer
                .send((topic.as_str(), k.clone(), "kacrab"))
                .await
                .expect("queued"),
        );
    }
    for d in pending {
        d.await.expect("delivered");
    }
    producer.close().await;
    let lines: String = keys.iter().map(|k| format!("{k}\tjava\n")).collect();
    produce_with_java(&bs, &topic, &lines);
    let mut by_key: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
    for (partition, key, value) in consume(&bs, &topic, 2 * keys.len()) {
        by_key.entry(key).or_default().insert(value, partition);
    }
    assert_eq!(by_key.len(), keys.len(), "every key read back");
    let spread: std::collections::BTreeSet<i32> = by_key
        .values()
        .filter_map(|m| m.get("java").copied())
        .collect();
    assert!(
        spread.len() >= 5,
        "the keys spread over the partitions: {spread:?}"
    );
    for (key, at) in &by_key {
        assert_eq!(at.get("kacrab"), at.get("java"), "key {key}: {at:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_added_to_a_live_topic_is_used_within_metadata_max_age() {
    let Some(bs) = bootstrap("a_partition_added_to_a_live_topic_is_used_within_metadata_max_age")
    else {
        return;
    };
    let topic = fresh("kacrab-grow");
    create_topic(&bs, &topic, 1, 1).expect("create topic");
    let producer = Producer::from_properties(&[
        ("bootstrap.servers", bs.as_str()),
        ("metadata.max.age.ms", "2000"),
        // Sticky partitions change after every record or so.
        ("batch.size", "100"),
    ])
    .unwrap();
    let first = producer
        .send(ProducerRecord::unkeyed(topic.as_str(), "before"))
        .await
        .expect("queued")
        .await;
    assert_eq!(first.expect("delivered").partition, 0);
    script(&["add-partitions", &bs, &topic, "3"]).expect("add partitions");
    let added = Instant::now();
    let mut seen_new = None;
    while added.elapsed() < Duration::from_secs(20) {
        let meta = producer
            .send(ProducerRecord::unkeyed(topic.as_str(), "x".repeat(120)))
            .await
            .expect("queued")
            .await
            .expect("delivered");
        if meta.partition > 0 {
            seen_new = Some(added.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    producer.close().await;
    let took = seen_new.expect("a new partition was used within 20 s");
    // metadata.max.age.ms (2 s) after the last refresh, plus the admin tool's own time.
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_for_a_missing_topic_fails_after_max_block_naming_it() {
    let Some(bs) = bootstrap("a_record_for_a_missing_topic_fails_after_max_block_naming_it") else {
        return;
    };
    let topic = fresh("kacrab-missing");
    let producer =
        Producer::from_properties(&[("bootstrap.servers", bs.as_str()), ("max.block.ms", "1500")])
            .unwrap();
    let start = Instant::now();
    let err = producer
        .send((topic.as_str(), "k", "v"))
        .await
        .expect("queued")
        .await
        .expect_err("the topic does not exist");
    let took = start.elapsed();
    producer.close().await;
    let text = err.to_string();
    assert!(text.contains(&topic), "{text}");
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(
        matches!(
            err,
            ProduceError::Topic {
                error: TopicError::NotPresent { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

/// A producer started 0.5 s before its topic is created (`scripts/kafka.sh create-topic`),
/// driven as `examples/tokio_produce.rs` drives it: one task on a current-thread runtime
/// sends records for six partitions as fast as `send` admits them. The first ones wait
/// for the topic's metadata (Java's `KafkaProducer.waitOnMetadata`, asked again every
/// `retry.backoff.ms`); once the topic exists every record is acknowledged, in send
/// order per partition, long before `max.block.ms`.
#[tokio::test(flavor = "current_thread")]
async fn records_sent_before_their_topic_exists_are_acknowledged_once_it_is_created() {
    let Some(bs) =
        bootstrap("records_sent_before_their_topic_exists_are_acknowledged_once_it_is_created")
    else {
        return;
    };
    let topic = fresh("kacrab-late");
    let producer = Producer::from_properties(&[("bootstrap.servers", bs.as_str())]).unwrap();
    let creator = {
        let (bs, topic) = (bs.clone(), topic.clone());
        tokio::task::spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(500));
            create_topic(&bs, &topic, 6, 1).expect("create topic");
            Instant::now()
        })
    };
    let start = Instant::now();
    let mut pending = Vec::new();
    for i in 0..6000 {
        let partition = i % 6;
        let record =
            ProducerRecord::new(topic.as_str(), partition, format!("r{i}")).with_key(i.to_string());
        pending.push((partition, producer.send(record).await.expect("admitted")));
    }
    let created = creator.await.unwrap();
    let mut next_offset = [0i64; 6];
    for (partition, delivery) in pending {
        let meta = delivery.await.expect("acknowledged");
        let slot = &mut next_offset[usize::try_from(partition).unwrap()];
        assert_eq!(
            meta.offset,
            Some(*slot),
            "partition {partition}: send order"
        );
        *slot += 1;
    }
    let after_creation = created.elapsed();
    producer.close().await;
    assert!(
        start.elapsed() < Duration::from_secs(30) && after_creation < Duration::from_secs(10),
        "acknowledged {after_creation:?} after the topic was created ({:?} in all)",
        start.elapsed()
    );
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_append_time_topic_returns_the_brokers_timestamps() {
    let Some(bs) = bootstrap("a_log_append_time_topic_returns_the_brokers_timestamps") else {
        return;
    };
    let topic = fresh("kacrab-appended");
    script(&[
        "create-topic-with",
        &bs,
        &topic,
        "1",
        "1",
        "message.timestamp.type=LogAppendTime",
    ])
    .expect("create topic");
    let producer = Producer::from_properties(&[("bootstrap.servers", bs.as_str())]).unwrap();
    let before = wall_ms();
    // Sent with a timestamp from 1970: the broker's own clock replaces it.
    let mut pending = Vec::new();
    for i in 0..20 {
        pending.push(
            producer
                .send(ProducerRecord::new(topic.as_str(), 0, format!("v{i}")).with_timestamp(1_000))
                .await
                .expect("queued"),
        );
    }
    let mut metas = Vec::new();
    for d in pending {
        metas.push(d.await.expect("delivered"));
    }
    let after = wall_ms();
    producer.close().await;
    for m in &metas {
        assert_eq!(m.timestamp_type, TimestampType::LogAppendTime, "{m:?}");
        assert!(
            (before..=after).contains(&m.timestamp),
            "{} not in {before}..={after}",
            m.timestamp
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_deleted_and_recreated_while_the_producer_lives_gets_the_later_records() {
    let Some(bs) =
        bootstrap("a_topic_deleted_and_recreated_while_the_producer_lives_gets_the_later_records")
    else {
        return;
    };
    let topic = fresh("kacrab-reborn");
    create_topic(&bs, &topic, 1, 1).expect("create topic");
    let producer = Producer::from_properties(&[
        ("bootstrap.servers", bs.as_str()),
        ("metadata.max.age.ms", "1000"),
        ("delivery.timeout.ms", "60000"),
    ])
    .unwrap();
    for i in 0..3 {
        producer
            .send(ProducerRecord::new(topic.as_str(), 0, format!("old-{i}")))
            .await
            .expect("queued")
            .await
            .expect("delivered to the first topic");
    }
    script(&["delete-topic", &bs, &topic]).expect("delete topic");
    let mut created = Err(String::new());
    for _ in 0..10 {
        created = create_topic(&bs, &topic, 1, 1);
        if created.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    created.expect("recreate topic");
    let mut pending = Vec::new();
    for i in 0..5 {
        pending.push(
            producer
                .send(ProducerRecord::new(topic.as_str(), 0, format!("new-{i}")))
                .await
                .expect("queued"),
        );
    }
    let mut offsets = Vec::new();
    for d in pending {
        offsets.push(d.await.expect("delivered to the recreated topic").offset);
    }
    producer.close().await;
    assert_eq!(offsets, (0..5).map(Some).collect::<Vec<_>>(), "a fresh log");
    let values: Vec<String> = consume(&bs, &topic, 5).into_iter().map(|r| r.2).collect();
    let expected: Vec<String> = (0..5).map(|i| format!("new-{i}")).collect();
    assert_eq!(
        values, expected,
        "each record once, in order, none of the old topic's"
    );
}
