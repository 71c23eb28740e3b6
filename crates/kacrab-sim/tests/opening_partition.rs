//! A first batch answered NOT_LEADER_OR_FOLLOWER on a partition still opening for the
//! producer ([`FaultKind::OpeningNotLeader`]).
//!
//! Java 4.4 pipelines the next batch behind it; a leader with no state for the producer
//! accepts that one at any sequence (KIP-360, `ProducerAppendInfo.checkSequence`), and
//! the first batch's retries are then answered OUT_OF_ORDER_SEQUENCE_NUMBER until
//! `delivery.timeout.ms` (KAFKA-15591, fixed on the broker only in Kafka 4.5). The core's
//! first-batch gate (`src/drain.rs`: one batch in flight per partition until the first
//! ack while the broker may not know the producer) must make that impossible. The model
//! broker accepts the non-zero first sequence as Kafka before 4.5 does
//! (`SimStats::unknown_producer_accepts`), so the hazard is real here.

use std::time::Duration;

use kacrab_idempotence::RecordId;
use kacrab_sim::checker::decode_value;
use kacrab_sim::{Cluster, DriverKind, FaultKind, FaultRates, Outcome, Scenario, SimConfig};

fn cluster(driver: DriverKind) -> Cluster {
    let mut sim = SimConfig::new(9);
    sim.brokers = 1;
    sim.partitions = 2;
    sim.trace = true;
    sim.driver = driver;
    sim.faults = FaultRates {
        opening_not_leader: 1.0,
        ..FaultRates::NONE
    };
    let mut producer = SimConfig::producer_config(9);
    producer.linger(Duration::ZERO);
    sim.producer = producer.build().expect("valid");
    Cluster::new(sim)
}

fn log_of(c: &Cluster) -> Vec<u32> {
    c.partition(0)
        .state
        .records()
        .map(|r| {
            decode_value(r.value.as_deref().unwrap_or_default())
                .expect("ours")
                .1
        })
        .collect()
}

fn outcome(c: &Cluster, id: RecordId) -> Outcome {
    c.checker().record(id).expect("sent").outcome
}

/// Three batches sent back to back to a partition whose leader refuses the producer's
/// first batch NOT_LEADER_OR_FOLLOWER (KAFKA-15591): nothing goes on the wire behind
/// the first batch until it is acknowledged, so no later batch is accepted at a
/// non-zero first sequence, and the log holds the three once, in send order.
fn the_first_batch_is_not_overtaken(driver: DriverKind) {
    let mut c = cluster(driver);
    // The producer id and the metadata first (partition 1, refused once too).
    c.send(1).expect("warm-up");
    assert!(c.run_until_idle(Duration::from_secs(5)), "warm-up");
    let a = c.send(0).expect("a");
    c.run_for(Duration::from_micros(300)); // a is on the wire
    let b = c.send(0).expect("b");
    c.run_for(Duration::from_micros(100));
    let cc = c.send(0).expect("c");
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    c.final_check();
    let trace = c.trace().join("\n");
    assert_eq!(
        c.checker().violation_count(),
        0,
        "{:#?}\n{trace}",
        c.checker().violations()
    );
    assert_eq!(c.faults().get(FaultKind::OpeningNotLeader), 2, "{trace}");
    for id in [a, b, cc] {
        assert_eq!(outcome(&c, id), Outcome::Delivered, "{trace}");
    }
    assert_eq!(log_of(&c), vec![0, 1, 2], "{trace}");
    assert_eq!(
        c.stats().unknown_producer_accepts,
        0,
        "a later batch was accepted at a non-zero first sequence: {trace}"
    );
    // On the wire: the refused first batch, then its retry, before any later batch.
    let firsts: Vec<u32> = c
        .checker()
        .wire_log()
        .iter()
        .filter(|w| w.partition == 0)
        .map(|w| w.first_index)
        .collect();
    assert_eq!(
        &firsts[..2],
        &[0, 0],
        "the gate held the later batches: {trace}"
    );
}

#[test]
fn the_first_batch_refused_on_an_opening_partition_is_not_overtaken_core() {
    the_first_batch_is_not_overtaken(DriverKind::Core);
}

#[test]
fn the_first_batch_refused_on_an_opening_partition_is_not_overtaken_session() {
    the_first_batch_is_not_overtaken(DriverKind::Session);
}

/// The fault is drawn by default ([`FaultRates::uniform`]) on every partition's first
/// batch, and again after each idle gap that made the brokers forget the producer
/// ([`FaultKind::ProducerStateExpiry`]); over many seeds and both drivers every run
/// stays clean (a batch that overtook the refused one, both acknowledged, would show as
/// reordered). Without idle gaps no leader ever accepts a non-zero
/// first sequence: only a batch overtaking the first one could be accepted that way.
#[test]
fn opening_partitions_refusing_the_first_batch_keep_every_run_clean() {
    let seeds: u64 = std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(12, |n| (n / 10).clamp(4, 64));
    let mut drawn = 0;
    for seed in 0..seeds {
        for driver in [DriverKind::Core, DriverKind::Session] {
            for idle_gaps in [0, 2] {
                let mut sim = SimConfig::new(seed);
                sim.partitions = 6;
                sim.driver = driver;
                sim.faults = FaultRates::uniform(0.1);
                let mut scenario = Scenario::new(sim, 1_200);
                scenario.idle_gaps = idle_gaps;
                let report = scenario.run();
                let run = format!("seed {seed} {driver:?} idle gaps {idle_gaps}");
                assert!(report.is_clean(), "{run}\n{}", report.render());
                if idle_gaps == 0 {
                    assert_eq!(
                        report.sim.unknown_producer_accepts,
                        0,
                        "{run}: a non-zero first sequence accepted\n{}",
                        report.render()
                    );
                }
                drawn += report.faults.get(FaultKind::OpeningNotLeader);
            }
        }
    }
    assert!(drawn > 0, "the fault was never drawn");
}
