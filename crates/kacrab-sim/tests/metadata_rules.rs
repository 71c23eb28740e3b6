//! Faults aimed at the producer's metadata and leader knowledge, through both drivers:
//! a topic created while the producer runs (UNKNOWN_TOPIC_OR_PARTITION, then some
//! partitions LEADER_NOT_AVAILABLE, then the topic), and every connection dropping with
//! a broker crash (no ready connection while the crashed broker is in its reconnect
//! backoff, and metadata needed for the leadership the crash moved).

use std::time::Duration;

use kacrab_sim::{DriverKind, FaultKind, FaultRates, Report, Scenario, SimConfig};

fn run(seed: u64, driver: DriverKind, faults: FaultRates) -> Report {
    let mut sim = SimConfig::new(seed);
    sim.driver = driver;
    sim.brokers = 3;
    sim.topics = 2;
    sim.partitions = 6;
    sim.faults = faults;
    let mut producer = SimConfig::producer_config(seed);
    producer.linger(Duration::from_millis(1));
    sim.producer = producer.build().expect("valid");
    Scenario::new(sim, 1_500).run()
}

/// Java's `KafkaProducer.waitOnMetadata` and `Metadata.handleMetadataResponse` ask
/// again for a topic answered UNKNOWN_TOPIC_OR_PARTITION or with partitions
/// LEADER_NOT_AVAILABLE until it and its leaders appear: with the default
/// `max.block.ms` and `delivery.timeout.ms`, every record sent before the topic
/// existed is acknowledged once, in order.
#[test]
fn a_topic_created_while_the_producer_runs_gets_every_record_once() {
    let rates = FaultRates {
        topic_created_late: 1.0,
        ..FaultRates::NONE
    };
    for driver in [DriverKind::Core, DriverKind::Session] {
        for seed in 1..4 {
            let report = run(seed, driver, rates);
            assert!(report.is_clean(), "{driver:?} {seed}: {}", report.render());
            assert_eq!(report.faults.get(FaultKind::TopicCreatedLate), 1);
            let t = &report.tally;
            assert_eq!(
                (t.acked, t.failed, t.pending),
                (t.records, 0, 0),
                "{driver:?} {seed}: {}",
                report.render()
            );
        }
    }
}

/// Every connection drops with a crash, often: the runs stay clean, and the session's
/// lookups find a reachable broker (Java's `NetworkClient.leastLoadedNode`).
#[test]
fn every_connection_dropping_with_a_crash_is_drawn_and_survived() {
    let rates = FaultRates {
        broker_crash: 0.02,
        connections_drop_with_crash: 1.0,
        ..FaultRates::NONE
    };
    let mut drawn = 0;
    for driver in [DriverKind::Core, DriverKind::Session] {
        for seed in 1..4 {
            let report = run(seed, driver, rates);
            assert!(report.is_clean(), "{driver:?} {seed}: {}", report.render());
            drawn += report.faults.get(FaultKind::ConnectionsDropWithCrash);
        }
    }
    assert!(drawn > 0, "never drawn");
}
