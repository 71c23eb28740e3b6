//! What the broker says comes back to the application: the broker's append time on a
//! `LogAppendTime` topic (Java's `ProducerBatch.complete` with the Produce answer's
//! `log_append_time_ms`), and KIP-467's per-record errors and error message (Java's
//! `Sender.failBatch` with `recordExceptions`), against model brokers that answer as
//! Kafka's `LogValidator` does.

use crate::pair;

use std::time::Duration;

use kacrab_driver::{
    DeliveryError, KafkaError, ProduceError, ProducerRecord, TimestampType, TopicError,
};
use kafka_protocol::messages::ApiKey;

use crate::pair::broker::TopicConfig;
use crate::pair::{Cluster, Pair};

const SECOND: Duration = Duration::from_secs(1);

/// A `LogAppendTime` topic: every record of the batch gets the broker's append time,
/// not the timestamp it was sent with; a `CreateTime` topic keeps the record's own.
#[test]
fn a_log_append_time_topic_gives_every_record_the_brokers_time() {
    let mut cluster = Cluster::new(1)
        .with_topic("appended", 1)
        .with_topic("created", 1);
    let broker_time = 1_650_000_000_123;
    cluster.configure(
        "appended",
        TopicConfig {
            log_append_time: Some(broker_time),
            ..TopicConfig::default()
        },
    );
    let mut p = Pair::new(cluster, &[("linger.ms", "20")]);
    let appended: Vec<_> = (0..3)
        .map(|i| {
            p.send_record(
                ProducerRecord::new("appended", 0, format!("v{i}")).with_timestamp(42 + i),
            )
        })
        .collect();
    let created = p.send_record(ProducerRecord::new("created", 0, "c").with_timestamp(7));
    p.settle(10 * SECOND);
    for (i, id) in appended.into_iter().enumerate() {
        let m = p.acked(id);
        assert_eq!(m.offset, Some(i as i64));
        assert_eq!(m.timestamp, broker_time, "record {i}");
        assert_eq!(m.timestamp_type, TimestampType::LogAppendTime);
    }
    let m = p.acked(created);
    assert_eq!(
        (m.timestamp, m.timestamp_type),
        (7, TimestampType::CreateTime)
    );
}

fn delivery_error(p: &Pair, id: kacrab_driver::SendId) -> (DeliveryError, bool) {
    match p.outcome(id) {
        Some(Err(ProduceError::Delivery {
            error,
            possibly_written,
        })) => (error.clone(), *possibly_written),
        other => panic!("expected a delivery error, got {other:?}"),
    }
}

/// A compacted topic refuses records without a key: the broker rejects the whole batch
/// with INVALID_RECORD and names the keyless records (KIP-467). Those fail with their
/// own message; the others with the batch's error and message; none is in the log,
/// so every one is reported unwritten; and the producer goes on (the next batch lands,
/// its sequences gap-free).
#[test]
fn invalid_records_fail_with_their_own_message_and_the_rest_of_the_batch_with_the_batchs() {
    let mut cluster = Cluster::new(1).with_topic("compacted", 1);
    cluster.configure(
        "compacted",
        TopicConfig {
            compacted: true,
            ..TopicConfig::default()
        },
    );
    let mut p = Pair::new(cluster, &[("linger.ms", "20")]);
    let keyed = |v: &str| ProducerRecord::new("compacted", 0, v.to_owned()).with_key(v.to_owned());
    let keyless = |v: &str| ProducerRecord::new("compacted", 0, v.to_owned());
    let ids = [
        p.send_record(keyed("a")),
        p.send_record(keyless("b")),
        p.send_record(keyless("c")),
        p.send_record(keyed("d")),
    ];
    p.settle(10 * SECOND);
    for (i, &id) in ids.iter().enumerate() {
        let (error, possibly_written) = delivery_error(&p, id);
        assert!(
            !possibly_written,
            "record {i}: the batch was rejected whole"
        );
        assert_eq!(error.kafka_error(), Some(KafkaError::InvalidRecord));
        let text = error.to_string();
        match i {
            1 | 2 => {
                assert!(
                    matches!(error, DeliveryError::InvalidRecord { batch_index, .. } if batch_index == i as i32),
                    "record {i}: {error:?}"
                );
                assert!(
                    text.contains("Compacted topic cannot accept message without key"),
                    "{text}"
                );
            }
            _ => {
                assert!(
                    matches!(error, DeliveryError::BatchHadInvalidRecords { .. }),
                    "record {i}: {error:?}"
                );
                assert_eq!(
                    error.broker_message(),
                    Some("One or more records have been rejected")
                );
            }
        }
    }
    assert!(p.cluster.values("compacted", 0).is_empty());
    let next = p.send_record(keyed("e"));
    p.settle(10 * SECOND);
    assert_eq!(p.acked(next).offset, Some(0));
    assert_eq!(p.cluster.values("compacted", 0), ["e"]);
}

fn topic_error(p: &Pair, id: kacrab_driver::SendId) -> (String, TopicError) {
    match p.outcome(id) {
        Some(Err(ProduceError::Topic { topic, error })) => (topic.to_string(), error.clone()),
        other => panic!("expected a topic error, got {other:?}"),
    }
}

/// A record with its own partition for a topic no metadata names waits for the topic
/// up to `max.block.ms` (Java's `KafkaProducer.waitOnMetadata`), then fails naming the
/// topic, unwritten, without a Produce request.
#[test]
fn an_explicit_partition_of_an_unknown_topic_waits_for_max_block_and_fails_naming_it() {
    let mut p = Pair::new(
        Cluster::new(1),
        &[("max.block.ms", "500"), ("retry.backoff.ms", "50")],
    );
    let start = p.now;
    let id = p.send_record(ProducerRecord::new("nope", 0, "x"));
    p.settle(10 * SECOND);
    assert_eq!(
        topic_error(&p, id),
        (
            "nope".into(),
            TopicError::NotPresent {
                waited: Duration::from_millis(500),
                connection_failures: kacrab_driver::ConnectionFailures::default(),
            }
        )
    );
    assert_eq!(
        p.done_at(id).unwrap().saturating_duration_since(start),
        Duration::from_millis(500)
    );
    assert_eq!(p.cluster.count(ApiKey::Produce), 0);
    assert!(p.cluster.count(ApiKey::Metadata) >= 5);
}

/// An explicit partition beyond the topic's count waits for metadata with more
/// partitions: used once the partition is added, and failed after `max.block.ms`
/// naming the partition and the count if it never is.
#[test]
fn an_explicit_partition_beyond_the_count_waits_for_it_then_fails_naming_it() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 2),
        &[("max.block.ms", "800"), ("retry.backoff.ms", "50")],
    );
    let late = p.send_record(ProducerRecord::new("t", 2, "late"));
    p.run_for(Duration::from_millis(300));
    assert!(p.outcome(late).is_none(), "waits for partition 2");
    p.cluster.add_partition("t", 0);
    p.settle(10 * SECOND);
    assert_eq!(p.acked(late).partition, 2);
    assert_eq!(p.cluster.values("t", 2), ["late"]);
    let never = p.send_record(ProducerRecord::new("t", 7, "never"));
    p.settle(10 * SECOND);
    let (topic, error) = topic_error(&p, never);
    assert_eq!(topic, "t");
    assert_eq!(
        error,
        TopicError::PartitionNotPresent {
            partition: 7,
            count: 3,
            waited: Duration::from_millis(800)
        }
    );
    let text = p.outcome(never).unwrap().as_ref().unwrap_err().to_string();
    assert!(text.contains("partition 7") && text.contains("t"), "{text}");
}

/// Every Metadata request the session sends allows auto-creation, as Java's producer's
/// do (`ProducerMetadata.newMetadataRequestBuilder`); the broker's
/// `auto.create.topics.enable` decides. A broker that creates topics: a send to a new
/// topic is delivered. One that does not: the send fails after `max.block.ms`.
#[test]
fn metadata_requests_ask_for_auto_creation_and_the_broker_decides() {
    for auto_create in [Some(3), None] {
        let mut cluster = Cluster::new(1);
        cluster.auto_create_partitions = auto_create;
        let mut p = Pair::new(
            cluster,
            &[("max.block.ms", "1000"), ("retry.backoff.ms", "50")],
        );
        let asked = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen = asked.clone();
        p.hook(move |inc, _| {
            if let pair::Req::Metadata(r) = &inc.req {
                seen.borrow_mut().push(r.allow_auto_topic_creation);
            }
            None
        });
        let id = p.send_record(ProducerRecord::keyed("fresh", "k", "v"));
        p.settle(10 * SECOND);
        assert!(!asked.borrow().is_empty());
        assert!(asked.borrow().iter().all(|&allowed| allowed), "{asked:?}");
        match auto_create {
            Some(n) => {
                let m = p.acked(id);
                assert_eq!(m.partition, kacrab_driver::partition_for_key(b"k", n));
            }
            None => assert!(matches!(
                topic_error(&p, id).1,
                TopicError::NotPresent { .. }
            )),
        }
    }
}
