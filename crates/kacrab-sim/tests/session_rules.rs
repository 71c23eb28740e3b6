//! The simulator driving a `kacrab_driver::Session` ([`DriverKind::Session`]): the
//! session's routing, connection handling and version negotiation meet the lying
//! network, which carries real Kafka frames through the model brokers' front ends.

use std::time::Duration;

use kacrab_idempotence::{NodeId, RecordId};
use kacrab_sim::checker::decode_value;
use kacrab_sim::{Cluster, DriverKind, Outcome, Script, SimConfig};

fn session_cluster(brokers: u32, partitions: u32, setup: impl FnOnce(&mut SimConfig)) -> Cluster {
    let mut sim = SimConfig::new(11);
    sim.brokers = brokers;
    sim.partitions = partitions;
    sim.trace = true;
    sim.driver = DriverKind::Session;
    let mut producer = SimConfig::producer_config(11);
    producer.linger(Duration::ZERO);
    sim.producer = producer.build().expect("valid");
    setup(&mut sim);
    Cluster::new(sim)
}

fn assert_clean(c: &mut Cluster) {
    c.final_check();
    assert_eq!(
        c.checker().violation_count(),
        0,
        "{:#?}\n{}",
        c.checker().violations(),
        c.trace().join("\n")
    );
}

fn log_of(c: &Cluster, gp: usize) -> Vec<u32> {
    c.partition(gp)
        .state
        .records()
        .map(|r| {
            decode_value(r.value.as_deref().unwrap_or_default())
                .expect("ours")
                .1
        })
        .collect()
}

fn delivered(c: &Cluster, ids: &[RecordId]) -> bool {
    ids.iter()
        .all(|id| c.checker().record(*id).expect("sent").outcome == Outcome::Delivered)
}

#[test]
fn a_quiet_cluster_delivers_through_the_session_in_order() {
    let mut c = session_cluster(3, 3, |_| {});
    let ids: Vec<RecordId> = (0..30).map(|i| c.send(i % 3).expect("sent")).collect();
    assert!(
        c.run_until_idle(Duration::from_secs(10)),
        "{}",
        c.trace().join("\n")
    );
    assert_clean(&mut c);
    assert!(delivered(&c, &ids));
    for gp in 0..3 {
        assert_eq!(log_of(&c, gp), (0..10).collect::<Vec<u32>>());
    }
    assert!(c.stats().produce_requests > 0);
}

#[test]
fn after_a_leader_move_the_session_routes_to_the_new_leader() {
    let mut c = session_cluster(3, 1, |sim| sim.leaders = Some(vec![1]));
    let mut ids: Vec<RecordId> = (0..5).map(|_| c.send(0).expect("sent")).collect();
    assert!(c.run_until_idle(Duration::from_secs(10)));
    let before = c.checker().wire_log().len();
    assert!(c.checker().wire_log().iter().all(|b| b.node == 1));
    c.move_leader(0, NodeId(2));
    assert_eq!(c.partition(0).leader, NodeId(2));
    ids.extend((0..5).map(|_| c.send(0).expect("sent")));
    assert!(
        c.run_until_idle(Duration::from_secs(10)),
        "{}",
        c.trace().join("\n")
    );
    assert_clean(&mut c);
    assert!(delivered(&c, &ids));
    assert_eq!(log_of(&c, 0), (0..10).collect::<Vec<u32>>());
    // The first write after the move may still reach the old leader (which refuses it
    // with a leader hint); the retry and every later write go to the new one.
    let after = &c.checker().wire_log()[before..];
    assert!(!after.is_empty());
    assert_eq!(after.last().map(|b| b.node), Some(2), "{after:#?}");
    assert!(after
        .iter()
        .skip_while(|b| b.node == 1)
        .all(|b| b.node == 2));
}

#[test]
fn a_connection_reset_mid_request_is_retried_once_without_duplicates() {
    let mut c = session_cluster(3, 1, |sim| sim.leaders = Some(vec![1]));
    c.script(Script::LoseResponseAfterApply { partition: 0 });
    let ids: Vec<RecordId> = (0..6).map(|_| c.send(0).expect("sent")).collect();
    assert!(
        c.run_until_idle(Duration::from_secs(20)),
        "{}",
        c.trace().join("\n")
    );
    assert_clean(&mut c);
    assert!(delivered(&c, &ids));
    // The broker applied the request whose answer was lost with the connection; the
    // session saw the reset, the core retried on a new connection, the broker
    // recognised the duplicate: the log holds each record once, in order.
    assert!(c.stats().disconnected_reports >= 1, "{:?}", c.stats());
    assert!(c.stats().duplicate_batches >= 1, "{:?}", c.stats());
    assert!(c.stats().session_connections >= 2, "{:?}", c.stats());
    assert_eq!(log_of(&c, 0), (0..6).collect::<Vec<u32>>());
}

#[test]
fn the_session_negotiates_versions_on_every_connection_before_its_requests() {
    let mut c = session_cluster(3, 3, |_| {});
    let mut ids: Vec<RecordId> = (0..9).map(|i| c.send(i % 3).expect("sent")).collect();
    assert!(c.run_until_idle(Duration::from_secs(10)));
    let first = c.stats().session_connections;
    assert!(first >= 1);
    // Every connection dropped: the session reconnects and negotiates again.
    for node in 1..=3 {
        c.drop_connection(NodeId(node));
    }
    ids.extend((0..9).map(|i| c.send(i % 3).expect("sent")));
    assert!(
        c.run_until_idle(Duration::from_secs(20)),
        "{}",
        c.trace().join("\n")
    );
    // A request before its connection's ApiVersions answer is a violation.
    assert_clean(&mut c);
    assert!(delivered(&c, &ids));
    let stats = c.stats();
    assert!(stats.session_connections > first, "{stats:?}");
    assert_eq!(
        stats.api_versions_answered, stats.session_connections,
        "{stats:?}"
    );
}

/// The session's metrics move on the simulator's faults as Kafka's do: a response lost
/// with its connection counts the connection's close (Kafka's `Selector`
/// `connection-close-total`), a new connection's creation, and the batch's retry in
/// `record-retry-total` (Kafka's `Sender.reenqueueBatch`), globally and for the topic;
/// the records delivered count no error.
#[test]
fn a_lost_connection_moves_the_retry_and_connection_metrics() {
    let mut c = session_cluster(3, 1, |sim| sim.leaders = Some(vec![1]));
    c.script(Script::LoseResponseAfterApply { partition: 0 });
    let ids: Vec<RecordId> = (0..6).map(|_| c.send(0).expect("sent")).collect();
    assert!(c.run_until_idle(Duration::from_secs(20)));
    assert_clean(&mut c);
    assert!(delivered(&c, &ids));
    let m = c.session_metrics().expect("the session drives");
    let p = &m.producer;
    let retried = c.producer().stats().records_retried as f64;
    assert!(retried >= 1.0, "{:?}", c.producer().stats());
    assert_eq!(p.record_retry_total, retried);
    assert_eq!(p.record_error_total, 0.0);
    assert!(p.connection_close_total >= 1.0, "{p:?}");
    assert!(p.connection_creation_total >= 2.0, "{p:?}");
    assert!(p.connection_creation_total >= p.connection_close_total);
    let topic = m.topics.values().next().expect("one topic");
    assert_eq!(topic.record_retry_total, retried);
    assert!(
        p.record_send_total >= 6.0 + retried,
        "every attempt of every record counts as a send: {p:?}"
    );
}
