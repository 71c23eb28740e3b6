//! Metadata and leader knowledge in the session: which connection a metadata request
//! goes on (Java's `NetworkClient.leastLoadedNode`), which KIP-951 leader hints are
//! taken (`Metadata.updatePartitionLeadership`), and a topic that appears while the
//! producer waits for it (`KafkaProducer.waitOnMetadata` with
//! `Metadata.handleMetadataResponse` asking again for a topic answered
//! UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE).

use std::time::Duration;

use crate::pair::{Cluster, ConnectPolicy, Pair};
use kacrab_driver::SendId;
use kafka_protocol::messages::ApiKey;

const SECOND: Duration = Duration::from_secs(1);

/// With no ready connection, a metadata request goes to a broker that can be reached
/// soonest, not to the first connection in the list, which may be waiting out a long
/// reconnect backoff (Java's `NetworkClient.leastLoadedNode`: ready nodes first, then
/// nodes being connected, then nodes not in reconnect backoff; a node in backoff is
/// passed over).
///
/// Node 0 refuses every connect, so its reconnect backoff grows to 8 s while the core
/// keeps a connection to it waiting (a record for the partition it leads). Then both
/// connections to node 1 reset: node 1 is in a short backoff. A record for a new topic
/// led by node 1 needs a lookup: it must not wait behind node 0's backoff.
#[test]
fn a_lookup_with_no_ready_connection_passes_over_a_broker_in_reconnect_backoff() {
    let mut p = Pair::new(
        Cluster::new(2).with_topic("t", 2).with_topic("u", 2),
        &[
            ("bootstrap.servers", "b1:9092"),
            ("reconnect.backoff.ms", "100"),
            ("reconnect.backoff.max.ms", "8000"),
            ("delivery.timeout.ms", "600000"),
            ("request.timeout.ms", "300000"),
        ],
    );
    p.connect.insert("b0:9092".into(), ConnectPolicy::Refuse);
    // u is led by node 1 only.
    p.cluster.move_leader("u", 0, 1);
    let stuck = p.send("t", 0, "for node 0");
    let ok = p.send("t", 1, "for node 1");
    p.run_for(40 * SECOND);
    assert!(matches!(p.outcome(ok), Some(Ok(_))), "{:?}", p.outcome(ok));
    assert!(p.outcome(stuck).is_none(), "node 0 refuses");
    // Right after a dial of node 0 (so its next dial is 6.4 s to 9.6 s away).
    let dials = p.connects.len();
    assert!(p.run_until(20 * SECOND, |p| p.connects[dials..]
        .iter()
        .any(|c| c.2 == "b0:9092")));
    // The retry of node 0's record (`retry.backoff.max.ms` after the refusal) queues
    // on a new connection to node 0, waiting out the backoff: the first in the list.
    p.run_for(Duration::from_millis(1_500));
    for (conn, addr) in p.links() {
        if addr == "b1:9092" {
            p.reset(conn);
        }
    }
    let start = p.now;
    let id = p.send("u", 0, "needs a lookup");
    assert!(
        p.run_until(5 * SECOND, |p| p.outcome(id).is_some()),
        "no outcome 5 s after the resets"
    );
    assert!(matches!(p.outcome(id), Some(Ok(_))), "{:?}", p.outcome(id));
    let took = p.since(start);
    assert!(
        took < 2 * SECOND,
        "the lookup waited {took:?}, behind node 0's reconnect backoff"
    );
    assert!(p.cluster.count(ApiKey::Metadata) > 0);
    p.session.assert_invariants();
}

/// A KIP-951 leader hint (NOT_LEADER_OR_FOLLOWER with `current_leader`) naming a node
/// the session has no address for (neither in the answer's `node_endpoints` nor from
/// Metadata) is not taken: Java's `Metadata.updatePartitionLeadership` skips a
/// partition whose new leader is missing from the answer's nodes and the known ones,
/// and the retry waits for Metadata instead. Taken, the retry would be routed at once
/// to a node it cannot reach and spend an attempt on it.
///
/// `retries=1`: the NOT_LEADER_OR_FOLLOWER spends the one retry, so the record is
/// acknowledged only if the retry goes to the leader Metadata names.
#[test]
fn a_leader_hint_naming_a_node_without_an_address_is_not_taken() {
    let mut cluster = Cluster::new(3).with_topic("t", 1);
    cluster.hidden_in_metadata.insert(2);
    cluster.endpoints_withheld.insert(2);
    let mut p = Pair::new(cluster, &[("retries", "1"), ("retry.backoff.ms", "50")]);
    let a = p.send("t", 0, "a");
    p.settle(5 * SECOND);
    assert!(matches!(p.outcome(a), Some(Ok(_))), "{:?}", p.outcome(a));
    // Node 2 takes the partition over; the session has no address for it.
    p.cluster.move_leader("t", 0, 2);
    let b = p.send("t", 0, "b");
    // The NOT_LEADER_OR_FOLLOWER answer comes; from then on Metadata lists node 2.
    assert!(p.run_until(5 * SECOND, |p| p
        .cluster
        .seen
        .iter()
        .filter(|s| s.api == ApiKey::Produce)
        .count()
        >= 2));
    p.cluster.hidden_in_metadata.clear();
    p.settle(10 * SECOND);
    assert!(matches!(p.outcome(b), Some(Ok(_))), "{:?}", p.outcome(b));
    assert_eq!(p.cluster.values("t", 0), ["a", "b"], "each once, in order");
    p.session.assert_invariants();
}

/// A producer started just before its topic exists: records for six partitions are
/// sent from the start; the topic is created at 0.5 s (Metadata answers
/// UNKNOWN_TOPIC_OR_PARTITION before), is listed without partitions until 0.8 s, its
/// leaders refuse Produce with UNKNOWN_TOPIC_OR_PARTITION until 1 s (they have not
/// loaded it yet), and three of its partitions are LEADER_NOT_AVAILABLE with no leader
/// until 1.7 s. Java's `KafkaProducer.waitOnMetadata` asks again
/// (`Metadata.requestUpdateForTopic`, and `Metadata.handleMetadataResponse` requests an
/// update for a topic or partition answered with an `InvalidMetadataException`) on
/// `retry.backoff.ms` until the topic and its leaders appear: every record is
/// acknowledged soon after, once each, in send order per partition.
#[test]
fn records_sent_before_their_topic_exists_are_acknowledged_once_it_appears() {
    topic_created_while_sending(2);
}

/// The same against one broker, the bootstrap server, as in the real run that stalled
/// (`scripts/kafka.sh start-single`, then `create-topic` 0.5 s after the producer).
#[test]
fn records_sent_before_their_topic_exists_on_one_broker_are_acknowledged() {
    topic_created_while_sending(1);
}

fn topic_created_while_sending(brokers: i32) {
    let mut p = Pair::new(
        Cluster::new(brokers),
        &[
            ("retry.backoff.ms", "100"),
            ("retry.backoff.max.ms", "1000"),
        ],
    );
    let mut sent: Vec<(i32, String, SendId)> = Vec::new();
    let mut n = 0;
    let mut send_some = |p: &mut Pair, count: usize, sent: &mut Vec<_>| {
        for _ in 0..count {
            let partition = n % 6;
            let value = format!("r{n}");
            let id = p.send("t", partition, &value);
            sent.push((partition, value, id));
            n += 1;
        }
    };
    send_some(&mut p, 43, &mut sent);
    p.run_for(Duration::from_millis(500));
    send_some(&mut p, 43, &mut sent);
    p.cluster.recreate_topic("t", 6, 0);
    for i in 0..6 {
        p.cluster.move_leader("t", i, i % brokers);
    }
    p.cluster.partitionless.insert("t".into());
    p.run_for(Duration::from_millis(300));
    p.cluster.partitionless.clear();
    // Listed, but its leaders have not loaded it: Produce gets
    // UNKNOWN_TOPIC_OR_PARTITION for another 200 ms.
    p.cluster.not_loaded.insert("t".into());
    p.run_for(Duration::from_millis(200));
    p.cluster.not_loaded.clear();
    for i in [1, 3, 4] {
        p.cluster.leaderless.insert(("t".into(), i));
    }
    send_some(&mut p, 43, &mut sent);
    p.run_for(Duration::from_millis(700));
    p.cluster.leaderless.clear();
    let created = p.now;
    send_some(&mut p, 43, &mut sent);
    let all_done = p.run_until(10 * SECOND, |p| p.unresolved().is_empty());
    let failed: Vec<_> = sent
        .iter()
        .filter(|s| !matches!(p.outcome(s.2), Some(Ok(_))))
        .map(|s| (s.1.clone(), p.outcome(s.2).cloned()))
        .collect();
    assert!(
        all_done && failed.is_empty(),
        "not acknowledged: {failed:?}"
    );
    let last = sent
        .iter()
        .filter_map(|s| p.done_at(s.2))
        .max()
        .expect("outcomes");
    assert!(
        last.saturating_duration_since(created) < 3 * SECOND,
        "acknowledged {:?} after the leaders appeared",
        last.saturating_duration_since(created)
    );
    for partition in 0..6 {
        let expected: Vec<String> = sent
            .iter()
            .filter(|s| s.0 == partition)
            .map(|s| s.1.clone())
            .collect();
        assert_eq!(
            p.cluster.values("t", partition),
            expected,
            "partition {partition}"
        );
    }
    p.session.assert_invariants();
}
