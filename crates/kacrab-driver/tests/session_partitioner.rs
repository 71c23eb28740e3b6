//! Records without a partition against model brokers: the session waits for the
//! topic's metadata (in call order, up to `max.block.ms`), then Kafka's built-in
//! partitioner (KIP-794) or the application's [`Partitioner`] decides; refused and
//! invalid topics fail at once.

use std::time::Duration;

use kacrab_driver::{
    partition_for_key, KafkaError, Partitioner, ProduceError, ProducerRecord, TopicError,
    TopicPartitions,
};
use kafka_protocol::messages::ApiKey;
use std::cell::RefCell;
use std::rc::Rc;

use crate::pair::broker::Req;
use crate::pair::{Cluster, Pair};

const SECOND: Duration = Duration::from_secs(1);

fn topic_error(p: &Pair, id: kacrab_driver::SendId) -> (String, TopicError) {
    match p.outcome(id) {
        Some(Err(ProduceError::Topic { topic, error })) => (topic.to_string(), error.clone()),
        other => panic!("expected a topic error, got {other:?}"),
    }
}

/// `send(topic, key, value)` with nothing else: each key lands in the partition Java's
/// `BuiltInPartitioner.partitionForKey` picks for it among the topic's six.
#[test]
fn a_keyed_record_lands_where_javas_partitioner_puts_its_key() {
    let mut p = Pair::new(Cluster::new(3).with_topic("t", 6), &[]);
    let keys: Vec<String> = (0..40).map(|i| format!("key-{i}")).collect();
    let ids: Vec<_> = keys
        .iter()
        .map(|k| p.send_record(("t", k.clone(), format!("v-{k}")).into()))
        .collect();
    p.settle(10 * SECOND);
    for (k, id) in keys.iter().zip(ids) {
        let expected = partition_for_key(k.as_bytes(), 6);
        assert_eq!(p.acked(id).partition, expected, "{k}");
        assert!(p.cluster.values("t", expected).contains(&format!("v-{k}")));
    }
}

/// Records without a key stick to one partition until `batch.size` bytes went there,
/// then move; over many switches every partition is used.
#[test]
fn records_without_a_key_stick_to_a_partition_for_batch_size_bytes() {
    let mut p = Pair::new(
        Cluster::new(2).with_topic("t", 4),
        &[("batch.size", "2000")],
    );
    let ids: Vec<_> = (0..400)
        .map(|i| p.send_record(ProducerRecord::unkeyed("t", format!("{i:0>100}"))))
        .collect();
    p.settle(30 * SECOND);
    let parts: Vec<i32> = ids.iter().map(|&id| p.acked(id).partition).collect();
    let mut runs: Vec<usize> = Vec::new();
    for w in parts.windows(2) {
        if runs.is_empty() {
            runs.push(1);
        }
        if w[0] == w[1] {
            *runs.last_mut().unwrap() += 1;
        } else {
            runs.push(1);
        }
    }
    // A record takes ~110 bytes of the estimate: 2000 bytes is 17 or 18 records. Two
    // draws in a row may pick the same partition, so a run may be a multiple.
    assert!(
        runs.len() >= 8,
        "the partition changed {} times",
        runs.len()
    );
    assert!(
        runs.iter().all(|&n| n % 17 == 0 || n % 18 == 0 || n >= 17),
        "{runs:?}"
    );
    assert!(
        runs[..runs.len() - 1].iter().all(|&n| n >= 17),
        "no switch before batch.size bytes: {runs:?}"
    );
    for part in 0..4 {
        assert!(
            parts.contains(&part),
            "partition {part} never used: {parts:?}"
        );
    }
}

/// An unknown topic: the send waits for its metadata, asking again every
/// `retry.backoff.ms`, and fails after `max.block.ms` naming the topic, unwritten. A
/// send for a known topic made after it waits behind it (call order), then goes.
#[test]
fn a_send_for_an_unknown_topic_fails_after_max_block_naming_the_topic() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("max.block.ms", "500"), ("retry.backoff.ms", "50")],
    );
    let start = p.now;
    let missing = p.send_record(ProducerRecord::unkeyed("nope", "x"));
    let after = p.send_record(ProducerRecord::keyed("t", "k", "y"));
    p.settle(10 * SECOND);
    let (topic, error) = topic_error(&p, missing);
    assert_eq!(topic, "nope");
    assert_eq!(
        error,
        TopicError::NotPresent {
            waited: Duration::from_millis(500),
            connection_failures: kacrab_driver::ConnectionFailures::default(),
        }
    );
    assert!(!p
        .outcome(missing)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .possibly_written());
    let failed_at = p.done_at(missing).unwrap();
    assert_eq!(
        failed_at.saturating_duration_since(start),
        Duration::from_millis(500)
    );
    assert!(p.done_at(after).unwrap() >= failed_at, "call order kept");
    assert_eq!(p.acked(after).offset, Some(0));
    let asked = p.cluster.count(ApiKey::Metadata);
    assert!(asked >= 5, "metadata asked {asked} times in 500 ms");
    let text = p
        .outcome(missing)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .to_string();
    assert!(text.contains("nope") && text.contains("500 ms"), "{text}");
}

/// A topic created while a send waits for it is used as soon as metadata names it.
#[test]
fn a_topic_created_while_a_send_waits_is_used() {
    let mut p = Pair::new(
        Cluster::new(1),
        &[("max.block.ms", "5000"), ("retry.backoff.ms", "100")],
    );
    let id = p.send_record(ProducerRecord::keyed("late", "k", "v"));
    p.run_for(SECOND);
    assert!(p.outcome(id).is_none(), "still waiting");
    p.cluster = std::mem::replace(&mut p.cluster, Cluster::new(1)).with_topic("late", 3);
    p.settle(2 * SECOND);
    assert_eq!(p.acked(id).partition, partition_for_key(b"k", 3));
}

/// TOPIC_AUTHORIZATION_FAILED and INVALID_TOPIC_EXCEPTION in Metadata fail the send at
/// once, not after `max.block.ms` (Java's `Metadata.checkUnauthorizedTopics`,
/// `checkInvalidTopics`).
#[test]
fn a_refused_topic_fails_at_once() {
    for code in [
        KafkaError::TopicAuthorizationFailed,
        KafkaError::InvalidTopicException,
    ] {
        let mut cluster = Cluster::new(1).with_topic("t", 1);
        cluster.metadata_errors.insert("secret".into(), code.code());
        let mut p = Pair::new(cluster, &[("max.block.ms", "60000")]);
        let start = p.now;
        let id = p.send_record(ProducerRecord::unkeyed("secret", "x"));
        p.settle(SECOND);
        assert_eq!(
            topic_error(&p, id),
            ("secret".into(), TopicError::Refused(code))
        );
        assert!(p.done_at(id).unwrap().saturating_duration_since(start) < SECOND);
        // Known now: a later send to it fails without waiting, with an explicit partition
        // too.
        let again = p.send_record(ProducerRecord::new("secret", 0, "y"));
        assert_eq!(topic_error(&p, again).1, TopicError::Refused(code));
    }
}

/// A name Kafka refuses (`Topic.validate`) fails at once, before any request.
#[test]
fn an_invalid_topic_name_fails_without_a_request() {
    let mut p = Pair::new(Cluster::new(1), &[]);
    let id = p.send_record(ProducerRecord::unkeyed("no spaces", "x"));
    assert!(matches!(topic_error(&p, id).1, TopicError::InvalidName(_)));
    assert_eq!(p.cluster.count(ApiKey::Metadata), 0);
}

#[derive(Debug)]
struct LastByte;

impl Partitioner for LastByte {
    fn partition(
        &mut self,
        _topic: &str,
        key: Option<&[u8]>,
        _value: Option<&[u8]>,
        partitions: TopicPartitions<'_>,
    ) -> Option<i32> {
        let last = *key?.last()?;
        (last != b'x').then(|| i32::from(last - b'0') % (partitions.count() + 1))
    }
}

/// The application's partitioner decides; `None` leaves the record to the built-in
/// one; a partition it invents fails the record; an explicit partition wins over both.
#[test]
fn an_applications_partitioner_decides_and_an_explicit_partition_wins() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 4), &[]);
    p.session.set_partitioner(Box::new(LastByte));
    let two = p.send_record(ProducerRecord::keyed("t", "a2", "v"));
    let built_in = p.send_record(ProducerRecord::keyed("t", "ax", "v"));
    let invented = p.send_record(ProducerRecord::keyed("t", "a4", "v"));
    let explicit = p.send_record(ProducerRecord::keyed("t", "a2", "v").with_partition(3));
    p.settle(10 * SECOND);
    assert_eq!(p.acked(two).partition, 2);
    assert_eq!(p.acked(built_in).partition, partition_for_key(b"ax", 4));
    assert_eq!(
        topic_error(&p, invented).1,
        TopicError::NoSuchPartition {
            partition: 4,
            count: 4
        }
    );
    assert_eq!(p.acked(explicit).partition, 3);
}

/// `partitioner.ignore.keys=true`: keyed records are sticky like records without a key.
#[test]
fn ignored_keys_make_keyed_records_sticky() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 8),
        &[("partitioner.ignore.keys", "true")],
    );
    let ids: Vec<_> = (0..20)
        .map(|i| p.send_record(ProducerRecord::keyed("t", format!("key-{i}"), "v")))
        .collect();
    p.settle(10 * SECOND);
    let first = p.acked(ids[0]).partition;
    assert!(
        ids.iter().all(|&id| p.acked(id).partition == first),
        "20 small records fit batch.size: one partition"
    );
}

/// Records the topics of every Metadata request the cluster receives, in order.
fn record_metadata_topics(p: &mut Pair) -> Rc<RefCell<Vec<Vec<String>>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = Rc::clone(&seen);
    p.hook(move |inc, _| {
        if let Req::Metadata(m) = &inc.req {
            log.borrow_mut().push(
                m.topics
                    .iter()
                    .flatten()
                    .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                    .collect(),
            );
        }
        None
    });
    seen
}

/// A partition added to a live topic is discovered by the `metadata.max.age.ms`
/// refresh and gets records without a key (the sticky partitioner draws over it).
#[test]
fn a_partition_added_to_a_live_topic_is_used_after_metadata_max_age() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("metadata.max.age.ms", "500"), ("batch.size", "100")],
    );
    let asked = record_metadata_topics(&mut p);
    let first = p.send_record(ProducerRecord::unkeyed("t", "a"));
    p.settle(SECOND);
    assert_eq!(p.acked(first).partition, 0);
    p.cluster.add_partition("t", 0);
    p.run_for(SECOND);
    let ids: Vec<_> = (0..40)
        .map(|i| p.send_record(ProducerRecord::unkeyed("t", format!("{i:0>100}"))))
        .collect();
    p.settle(5 * SECOND);
    assert!(
        ids.iter().any(|&id| p.acked(id).partition == 1),
        "the new partition is used"
    );
    assert!(asked.borrow().iter().any(|t| t == &["t"]));
}

/// A topic no send used for `metadata.max.idle.ms` is dropped from the refresh, and a
/// later send to it waits for its metadata again.
#[test]
fn a_topic_idle_for_metadata_max_idle_is_no_longer_refreshed() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("busy", 1).with_topic("idle", 1),
        &[
            ("metadata.max.age.ms", "1000"),
            ("metadata.max.idle.ms", "5000"),
        ],
    );
    let asked = record_metadata_topics(&mut p);
    let a = p.send_record(ProducerRecord::unkeyed("idle", "x"));
    for _ in 0..8 {
        p.send_record(ProducerRecord::unkeyed("busy", "x"));
        p.run_for(SECOND);
    }
    p.settle(SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    let refreshes = asked.borrow().clone();
    let last = refreshes.last().unwrap();
    assert_eq!(last, &["busy"], "{refreshes:?}");
    assert!(
        refreshes.iter().any(|t| t.contains(&"idle".to_owned())),
        "asked while in use: {refreshes:?}"
    );
    let before = p.cluster.count(ApiKey::Metadata);
    let again = p.send_record(ProducerRecord::unkeyed("idle", "y"));
    p.settle(SECOND);
    assert_eq!(p.acked(again).offset, Some(1));
    assert!(
        p.cluster.count(ApiKey::Metadata) > before,
        "asked for it again"
    );
}
