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
