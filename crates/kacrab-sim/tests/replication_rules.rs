//! Replication rules of the model: followers, the high watermark, acks=all purgatory
//! (NOT_LEADER_OR_FOLLOWER after the append), truncation on failover, elections from
//! the ISR only, producer-state snapshot restore, and KIP-890's lowest-sequence rule.

use std::time::Duration;

use kacrab_idempotence::{NodeId, RecordId};
use kacrab_sim::broker::*;
use kacrab_sim::checker::decode_value;
use kacrab_sim::{Cluster, FaultKind, FaultRates, Outcome, PartitionFault, Script, SimConfig};

// The model crate's rule tests share their v2 batch encoder with these.
use crate::common::*;

// ---------------------------------------------------------------- one replica

/// A follower copies the leader's log and builds the same producer state; a replica
/// that follows a new leader truncates what it alone had (KIP-279) and rebuilds
/// producer state for the shorter log.
#[test]
fn a_follower_truncates_to_its_new_leader_and_rebuilds_producer_state() {
    let mut leader = PartitionState::new();
    produce(&mut leader, 0, 0).unwrap();
    let mut follower = PartitionState::new();
    assert_eq!(follower.fetch_from(&leader, 0, EXP), 0);
    assert_eq!(follower.entries(), leader.entries());
    assert_eq!(follower.producers(), leader.producers());

    // Appended to the old leader only, then the follower leads and takes sequence 1
    // for two other records.
    produce(&mut leader, 0, 1).unwrap();
    produce_n(&mut follower, 0, 1, 2, false, 5).unwrap();
    assert_eq!(leader.fetch_from(&follower, 10, EXP), 1);
    assert_eq!(leader.entries(), follower.entries());
    assert_eq!(leader.producer(PID).unwrap().last_seq(), 2);
    assert_eq!(leader.producer(PID).unwrap().batches().len(), 2);
    assert!(produce(&mut leader, 0, 3).is_ok());
}

/// A restart loads the snapshot and replays the log after it: from an old snapshot
/// (an unclean shutdown) the whole dedup window survives; from the snapshot a clean
/// shutdown writes at the log end only the newest batch does (one batch per producer
/// in Kafka's snapshot format).
#[test]
fn a_restart_replays_the_log_after_the_snapshot() {
    let mut p = PartitionState::new();
    for seq in 0..5 {
        produce(&mut p, 0, seq).unwrap();
    }
    let mut unclean = p.clone();
    unclean.restart_from_snapshot_at(0, 0, EXP);
    assert_eq!(unclean.producer(PID).unwrap().batches().len(), 5);
    assert!(produce(&mut unclean, 0, 0).unwrap().is_duplicate());

    let mut mid = p.clone();
    mid.restart_from_snapshot_at(3, 0, EXP);
    assert_eq!(mid.producer(PID).unwrap().batches().len(), 3);
    assert!(produce(&mut mid, 0, 2).unwrap().is_duplicate());
    assert_eq!(code(produce(&mut mid, 0, 1)), OUT_OF_ORDER_SEQUENCE_NUMBER);

    let mut clean = p.clone();
    let len = clean.entries().len();
    clean.restart_from_snapshot_at(len, 0, EXP);
    assert_eq!(clean.producer(PID).unwrap().batches().len(), 1);
    assert!(produce(&mut clean, 0, 4).unwrap().is_duplicate());
    assert_eq!(
        code(produce(&mut clean, 0, 0)),
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
}

/// Consumers read up to the high watermark; the last stable offset never exceeds it.
#[test]
fn consumers_read_up_to_the_high_watermark() {
    let mut p = PartitionState::new();
    produce(&mut p, 0, 0).unwrap();
    produce(&mut p, 0, 1).unwrap();
    assert_eq!(p.high_watermark(), 2);
    p.set_high_watermark(1);
    assert_eq!(p.read_uncommitted().len(), 1);
    assert_eq!(p.read_committed().len(), 1);
    assert_eq!(p.last_stable_offset(), 1);
    assert_eq!(p.advance_log_start_offset(5), 1);
}

/// KIP-890: while the leader verifies a producer's transaction on a partition, a batch
/// above the lowest verified sequence is OUT_OF_ORDER_SEQUENCE_NUMBER
/// (`ProducerAppendInfo.checkSequence`); a lower sequence lowers the bar, a newer epoch
/// resets it, the first transactional append clears it, and expiry drops it. The first
/// sequence itself need not be 0 (an unknown producer may start anywhere).
#[test]
fn kip890_a_batch_above_the_lowest_verified_sequence_is_refused() {
    let mut p = PartitionState::new();
    assert!(p.start_transaction_verification(PID, 3, 0, 0));
    assert!(p.start_transaction_verification(PID, 1, 0, 0));
    assert_eq!(p.verification(PID).unwrap().lowest_sequence(), 1);
    assert_eq!(
        code(produce_txn(&mut p, 0, 3)),
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert!(produce_txn(&mut p, 0, 1).is_ok());
    assert!(p.verification(PID).is_none());
    assert!(!p.start_transaction_verification(PID, 2, 0, 0), "ongoing");
    assert!(produce_txn(&mut p, 0, 2).is_ok());

    let mut q = PartitionState::new();
    q.start_transaction_verification(PID, 5, 0, 0);
    q.start_transaction_verification(PID, 7, 1, 0);
    let v = *q.verification(PID).unwrap();
    assert_eq!((v.epoch(), v.lowest_sequence()), (1, 7));
    q.expire_producers(EXP, EXP);
    assert!(q.verification(PID).is_none());
}

// ---------------------------------------------------------------- the cluster

fn cluster(brokers: u32, rates: FaultRates, lag: Duration) -> Cluster {
    let mut sim = SimConfig::new(3);
    sim.brokers = brokers;
    sim.partitions = 1;
    sim.trace = true;
    sim.faults = rates;
    sim.replica_lag_min = lag;
    sim.replica_lag_max = lag;
    let mut producer = SimConfig::producer_config(3);
    producer.linger(Duration::ZERO);
    sim.producer = producer.build().expect("valid");
    Cluster::new(sim)
}

fn lagging() -> FaultRates {
    FaultRates {
        replica_lag: 1.0,
        ..FaultRates::NONE
    }
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

fn log_of(c: &Cluster) -> Vec<u32> {
    c.partition(0)
        .state
        .read_uncommitted()
        .iter()
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

fn appended(c: &mut Cluster) {
    assert!(c.run_until(Duration::from_secs(1), |c| c
        .partition(0)
        .state
        .records()
        .count()
        == 1));
}

/// An acks=all answer waits until every in-sync replica has the batch.
#[test]
fn an_acks_all_answer_waits_for_the_followers() {
    let mut c = cluster(3, lagging(), Duration::from_millis(50));
    let id = c.send(0).unwrap();
    appended(&mut c);
    assert_eq!(c.partition(0).state.high_watermark(), 0);
    assert_eq!(outcome(&c, id), Outcome::Pending);
    assert!(c.run_until_idle(Duration::from_secs(5)));
    assert_eq!(outcome(&c, id), Outcome::Delivered);
    assert!(c.now().as_millis() >= 50);
    assert_eq!(c.partition(0).state.high_watermark(), 1);
    assert_eq!(c.stats().delayed_produces, 1);
    assert!(c.faults().get(FaultKind::ReplicaLag) >= 2);
    assert_clean(&mut c);
}

/// Leadership moves while the produce waits: the old leader appended, then answers
/// NOT_LEADER_OR_FOLLOWER; the new leader (caught up by the reassignment) holds the
/// batch and recognises the retry.
#[test]
fn leadership_moving_during_the_wait_answers_not_leader_after_the_append() {
    let mut c = cluster(3, lagging(), Duration::from_millis(200));
    let id = c.send(0).unwrap();
    appended(&mut c);
    c.move_leader(0, NodeId(2));
    assert_eq!(c.faults().get(FaultKind::NotLeaderAfterAppend), 1);
    assert_eq!(c.faults().get(FaultKind::TruncationOnFailover), 0);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    assert_eq!(outcome(&c, id), Outcome::Delivered);
    assert_eq!(log_of(&c), vec![0]);
    assert!(c.stats().duplicate_batches >= 1);
    assert_clean(&mut c);
}

/// Leadership moves to a follower that has not fetched yet: the old leader's append is
/// truncated and answered NOT_LEADER_OR_FOLLOWER; the retry writes it once.
#[test]
fn a_move_to_a_lagging_follower_truncates_and_answers_not_leader() {
    let rates = FaultRates {
        purgatory_leader_move: 1.0,
        ..lagging()
    };
    let mut c = cluster(3, rates, Duration::from_millis(200));
    let id = c.send(0).unwrap();
    assert!(c.run_until(Duration::from_secs(1), |c| c
        .faults()
        .get(FaultKind::NotLeaderAfterAppend)
        == 1));
    c.set_fault_rates(lagging());
    assert_eq!(c.faults().get(FaultKind::TruncationOnFailover), 1);
    assert_eq!(c.checker().truncated_records(), 1);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    assert_eq!(outcome(&c, id), Outcome::Delivered);
    assert_eq!(log_of(&c), vec![0]);
    assert_clean(&mut c);
}

/// The leader crashes before its followers fetched: a follower from the ISR leads, the
/// unreplicated batch vanishes (it was never acknowledged), and the retry writes it
/// again exactly once.
#[test]
fn a_crash_truncates_what_was_not_replicated() {
    let mut c = cluster(3, lagging(), Duration::from_millis(200));
    let id = c.send(0).unwrap();
    appended(&mut c);
    c.crash(NodeId(1));
    assert_ne!(c.partition(0).leader, NodeId(1));
    assert_eq!(c.faults().get(FaultKind::TruncationOnFailover), 1);
    assert_eq!(c.stats().truncated_records, 1);
    assert!(c.partition(0).state.records().next().is_none());
    assert!(c.run_until_idle(Duration::from_secs(10)));
    assert_eq!(outcome(&c, id), Outcome::Delivered);
    assert_eq!(log_of(&c), vec![0]);
    assert_clean(&mut c);
}

/// No unclean election: with every in-sync replica down the partition stays offline on
/// its crashed leader, a restarted out-of-sync replica is never elected, and what was
/// acknowledged is there when the leader returns.
#[test]
fn no_replica_out_of_the_isr_is_ever_elected() {
    let mut c = cluster(2, FaultRates::NONE, Duration::ZERO);
    let first = c.send(0).unwrap();
    assert!(c.run_until_idle(Duration::from_secs(5)));
    c.crash(NodeId(2));
    let second = c.send(0).unwrap();
    assert!(c.run_until_idle(Duration::from_secs(5)));
    assert_eq!(outcome(&c, second), Outcome::Delivered);
    c.crash(NodeId(1));
    assert_eq!(c.partition(0).leader, NodeId(1), "offline, not moved");
    c.restart(NodeId(2));
    c.move_leader(0, NodeId(2));
    assert_eq!(c.partition(0).leader, NodeId(1), "no unclean election");
    c.restart(NodeId(1));
    let third = c.send(0).unwrap();
    assert!(c.run_until_idle(Duration::from_secs(30)));
    for id in [first, second, third] {
        assert_eq!(outcome(&c, id), Outcome::Delivered);
    }
    assert_eq!(log_of(&c), vec![0, 1, 2]);
    let follower = &c.partition(0).followers[0];
    assert_eq!(follower.state.entries(), c.partition(0).state.entries());
    assert_clean(&mut c);
}

/// The new faults are on in the rates the chaos job and the property tests use.
#[test]
fn replication_faults_are_on_by_default() {
    let rates = FaultRates::uniform(0.05);
    assert!(rates.replica_lag > 0.0);
    assert!(rates.purgatory_leader_move > 0.0);
    assert!(!SimConfig::new(1).snapshot_restore, "a crash is unclean");
}

/// Kafka writes a response only to the connection its request came on
/// (`RequestChannel.sendResponse` by the request's connection id) and drops it if that
/// connection closed. A request held past the producer's request timeout (which closed
/// the connection) is applied late; its append moves the leadership, which completes the
/// retry parked in purgatory on the new connection. The retry is answered there; the
/// late request's own answer must not follow it onto the new connection.
#[test]
fn a_late_request_is_not_answered_on_the_connection_of_the_produce_it_completes() {
    let mut c = cluster(3, lagging(), Duration::from_millis(800));
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(1_500),
    });
    let id = c.send(0).unwrap();
    // The producer times the held request out, closes the connection and retries; the
    // retry waits in purgatory for the lagging followers.
    assert!(
        c.run_until(Duration::from_millis(1_400), |c| c.stats().delayed_produces
            == 1)
    );
    assert_eq!(
        c.stats().late_applications,
        0,
        "the held request is still held"
    );
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotLeaderAfterAppend,
        times: 1,
    });
    assert!(c.run_until_idle(Duration::from_secs(10)));
    assert_eq!(c.stats().late_applications, 1);
    // The scripted fault, and the parked retry it answers NOT_LEADER_OR_FOLLOWER.
    assert_eq!(c.faults().get(FaultKind::NotLeaderAfterAppend), 2);
    assert_eq!(outcome(&c, id), Outcome::Delivered);
    assert_eq!(log_of(&c), vec![0]);
    assert_clean(&mut c);
}
