//! Rules of the simulated network and of the brokers' request handling: a request a
//! broker read is applied even after its connection dropped (late application), the
//! order of application across connections is not the order of sending, the partition
//! errors Kafka answers without appending, and a fatal error while other requests are
//! on the wire.

use std::time::Duration;

use kacrab_idempotence::{NodeId, RecordId};
use kacrab_sim::checker::decode_value;
use kacrab_sim::{
    Cluster, FaultKind, FaultRates, Outcome, PartitionFault, Script, SimConfig, TxnOutcome,
    ViolationKind,
};
use proptest::prelude::*;

const MAX: Duration = Duration::from_secs(120);

fn cluster(brokers: u32, partitions: u32, setup: impl FnOnce(&mut SimConfig)) -> Cluster {
    let mut sim = SimConfig::new(11);
    sim.brokers = brokers;
    sim.partitions = partitions;
    sim.trace = true;
    let mut producer = SimConfig::producer_config(11);
    producer.linger(Duration::ZERO);
    sim.producer = producer.build().expect("valid");
    setup(&mut sim);
    Cluster::new(sim)
}

/// The violations other than `allowed`, after the end-of-run checks.
fn violations(c: &mut Cluster, allowed: &[ViolationKind]) -> Vec<String> {
    c.final_check();
    c.checker()
        .violations()
        .iter()
        .filter(|v| !allowed.contains(&v.kind))
        .map(|v| format!("{v:?}"))
        .collect()
}

fn assert_clean(c: &mut Cluster, allowed: &[ViolationKind]) {
    let v = violations(c, allowed);
    assert!(v.is_empty(), "{v:#?}\n{}", c.trace().join("\n"));
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

fn outcome(c: &Cluster, id: RecordId) -> Outcome {
    c.checker().record(id).expect("sent").outcome
}

/// The broker read the produce request, then held it past `request.timeout.ms`: the
/// client closed the connection and retried on a new one; the retry is appended, and
/// the original, applied afterwards on the broker, is recognised as a duplicate.
#[test]
fn a_request_applied_after_the_client_closed_its_connection_is_deduplicated() {
    let mut c = cluster(1, 1, |_| {});
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(1_500),
    });
    let a = c.send(0).expect("sent");
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.run_for(Duration::from_secs(2));
    assert_clean(&mut c, &[]);
    assert_eq!(c.faults().get(FaultKind::ProcessingDelay), 1);
    assert_eq!(c.stats().close_connections, 1, "the client timed out");
    assert_eq!(c.stats().late_applications, 1, "applied after the close");
    assert_eq!(c.stats().appended_batches, 1);
    assert_eq!(
        c.stats().duplicate_batches,
        1,
        "the late one is deduplicated"
    );
    assert_eq!(log_of(&c, 0), vec![0]);
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert!(c.net().held().is_empty());
}

/// Held for less than `request.timeout.ms`: the response still comes back on the same
/// connection, and the request after it on that connection is only read (so applied)
/// once the held one was: on one connection application order is send order.
#[test]
fn a_held_request_is_answered_and_keeps_its_connection_in_order() {
    let mut c = cluster(1, 1, |_| {});
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(300),
    });
    let a = c.send(0).expect("sent");
    c.run_for(Duration::from_millis(20));
    let b = c.send(0).expect("sent");
    assert!(c.run_until_idle(Duration::from_secs(5)));
    assert_clean(&mut c, &[]);
    assert_eq!(c.stats().late_applications, 0);
    assert_eq!(c.stats().close_connections, 0);
    assert_eq!(c.stats().appended_batches, 2);
    assert_eq!(log_of(&c, 0), vec![0, 1]);
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert_eq!(outcome(&c, b), Outcome::Delivered);
}

/// Two requests to two brokers: the first sent is held, the second applied first.
#[test]
fn application_order_across_connections_is_not_send_order() {
    let mut c = cluster(2, 2, |s| {
        s.latencies = Some(vec![Duration::from_millis(1); 2])
    });
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(200),
    });
    let a = c.send(0).expect("sent");
    c.run_for(Duration::from_millis(5));
    let b = c.send(1).expect("sent");
    assert!(c.run_until(Duration::from_millis(100), |c| outcome(c, b)
        == Outcome::Delivered));
    assert_eq!(log_of(&c, 1), vec![0]);
    assert!(log_of(&c, 0).is_empty(), "sent first, not applied yet");
    assert!(c.run_until_idle(Duration::from_secs(5)));
    assert_clean(&mut c, &[]);
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert_eq!(log_of(&c, 0), vec![0]);
}

/// A broker that crashes loses the requests it read and had not applied.
#[test]
fn a_crash_loses_the_requests_the_broker_held() {
    let mut c = cluster(2, 1, |_| {});
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(500),
    });
    let a = c.send(0).expect("sent");
    c.run_for(Duration::from_millis(50));
    assert_eq!(c.net().held().len(), 1);
    c.crash(NodeId(1));
    assert!(c.net().held().is_empty());
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.run_for(Duration::from_secs(1));
    assert_clean(&mut c, &[]);
    assert_eq!(c.stats().late_applications, 0);
    assert_eq!(c.stats().duplicate_batches, 0);
    assert_eq!(log_of(&c, 0), vec![0]);
    assert_eq!(outcome(&c, a), Outcome::Delivered);
}

/// The errors Kafka answers for a batch before appending it (`LogValidator`,
/// `KafkaApis.handleProduceRequest`): the batch is not in the log; CORRUPT_MESSAGE is
/// retriable (Java's `CorruptRecordException`), the others fail the batch as not
/// written.
#[test]
fn rejected_batches_are_not_appended() {
    let cases = [
        (PartitionFault::InvalidRecord, false),
        (PartitionFault::InvalidTimestamp, false),
        (PartitionFault::TopicAuthorizationFailed, false),
        (PartitionFault::CorruptMessage, true),
    ];
    for (fault, retried) in cases {
        let mut c = cluster(1, 1, |_| {});
        c.send(0).expect("warm");
        assert!(c.run_until_idle(Duration::from_secs(5)));
        c.script(Script::PartitionError {
            partition: 0,
            fault,
            times: 1,
        });
        let a = c.send(0).expect("sent");
        assert!(c.run_until_idle(Duration::from_secs(5)));
        let b = c.send(0).expect("sent after");
        assert!(c.run_until_idle(Duration::from_secs(5)));
        assert_clean(&mut c, &[]);
        assert_eq!(c.faults().get(fault.kind()), 1, "{fault:?}");
        assert_eq!(outcome(&c, b), Outcome::Delivered, "{fault:?}");
        if retried {
            assert_eq!(outcome(&c, a), Outcome::Delivered, "{fault:?}");
            assert_eq!(log_of(&c, 0), vec![0, 1, 2], "{fault:?}");
        } else {
            assert_eq!(
                outcome(&c, a),
                Outcome::Failed {
                    possibly_written: false
                },
                "{fault:?}"
            );
            assert_eq!(log_of(&c, 0), vec![0, 2], "{fault:?}");
        }
    }
}

/// A fatal CLUSTER_AUTHORIZATION_FAILED from broker 2 while a request to broker 1 is
/// on the wire (held by broker 1, applied after the fatal error, even after the run's
/// end): the core must not report that batch as not written. The checker sees the
/// late append whenever it happens.
#[test]
fn a_fatal_error_fails_batches_on_the_wire_as_possibly_written() {
    for hold in [Duration::from_millis(200), Duration::from_secs(600)] {
        let mut c = cluster(2, 2, |s| {
            s.latencies = Some(vec![Duration::from_millis(1); 2])
        });
        c.script(Script::HoldRequest {
            partition: 0,
            by: hold,
        });
        c.script(Script::RefuseRequest { partition: 1 });
        let a = c.send(0).expect("sent");
        c.run_for(Duration::from_millis(5));
        let b = c.send(1).expect("sent");
        c.run_until(MAX, |c| c.producer().fatal_error().is_some() && c.is_idle());
        assert!(c.producer().fatal_error().is_some(), "{hold:?}");
        assert_eq!(c.faults().get(FaultKind::ClusterAuthorizationFailed), 1);
        assert_eq!(
            outcome(&c, b),
            Outcome::Failed {
                possibly_written: false
            },
            "refused before any append"
        );
        assert_eq!(
            outcome(&c, a),
            Outcome::Failed {
                possibly_written: true
            },
            "{hold:?}: on the wire when the producer went fatal"
        );
        assert_clean(&mut c, &[ViolationKind::Fatal]);
        assert_eq!(log_of(&c, 0), vec![0], "{hold:?}: applied late");
        assert!(log_of(&c, 1).is_empty());
    }
}

/// Found by `op_sequences_hold` once brokers held requests: the request of a batch is
/// held past `delivery.timeout.ms`; the batch fails as possibly written, the epoch is
/// exhausted so the producer takes a new producer id, a later record is delivered under
/// it, then the broker applies the held request: the old id's record lands behind the
/// new id's (no broker fences one producer id with another). Not a reordering of
/// acknowledged records; acknowledging it would be.
#[test]
fn a_retired_producer_ids_late_write_is_not_an_acknowledged_reorder() {
    let mut c = cluster(1, 1, |s| {
        s.initial_producer_epoch = i16::MAX;
        let mut p = SimConfig::producer_config(11);
        p.linger(Duration::ZERO)
            .delivery_timeout(Duration::from_millis(3_000));
        s.producer = p.build().expect("valid");
    });
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_secs(8),
    });
    let a = c.send(0).expect("sent");
    c.run_for(Duration::from_millis(10));
    assert_eq!(c.net().held().len(), 1);
    for _ in 0..100 {
        c.script(Script::LoseRequest { partition: 0 });
    }
    assert!(c.run_until(Duration::from_secs(5), |c| outcome(c, a)
        != Outcome::Pending));
    assert_eq!(
        outcome(&c, a),
        Outcome::Failed {
            possibly_written: true
        }
    );
    c.clear_scripts();
    let b = c.send(0).expect("sent");
    assert!(c.run_until_idle(Duration::from_secs(5)));
    assert_eq!(outcome(&c, b), Outcome::Delivered);
    assert_eq!(
        c.stats().producer_id_changes,
        2,
        "a new id after the exhausted epoch"
    );
    c.run_for(Duration::from_secs(10));
    assert_eq!(c.stats().late_applications, 1);
    assert_eq!(
        log_of(&c, 0),
        vec![1, 0],
        "the retired id's record lands last"
    );
    assert_eq!(c.checker().retired_producer_writes(), 1);
    assert_clean(&mut c, &[]);
}

fn txn_cluster(version: i16) -> Cluster {
    let mut sim = SimConfig::transactional(5, "tx-1", version);
    sim.partitions = 1;
    sim.brokers = 2;
    sim.coordinator_node = 2;
    sim.trace = true;
    Cluster::new(sim)
}

/// A transactional produce held past `request.timeout.ms`: the client retries it on a
/// new connection and commits; the original is applied after the EndTxn markers. Kafka
/// refuses it (TV2: the markers bumped the epoch, INVALID_PRODUCER_EPOCH; TV1: KIP-890
/// verification finds the partition in no transaction) instead of starting a new,
/// hanging transaction: the next transaction commits and is visible.
fn a_produce_applied_after_the_markers_opens_no_transaction(version: i16) {
    let mut c = txn_cluster(version);
    c.init_transactions(MAX).expect("init");
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(3_000),
    });
    c.begin_and_send(1);
    assert_eq!(c.finish_open_transaction(true, MAX), TxnOutcome::Committed);
    c.run_for(Duration::from_secs(4));
    assert_eq!(c.stats().late_applications, 1, "applied after the commit");
    assert_eq!(log_of(&c, 0), vec![0]);
    if version == 1 {
        // The refused late produce left the leader a KIP-890 verification entry whose
        // lowest sequence is 0 (`ProducerStateManager.maybeCreateVerificationStateEntry`
        // keeps the lowest sequence seen for the epoch until a transactional append or
        // expiry clears it). TV1 continues sequences under the same epoch, so the next
        // transaction's first batch (sequence 1) is above it and refused
        // OUT_OF_ORDER_SEQUENCE_NUMBER, as Kafka's `ProducerAppendInfo.checkSequence`
        // does: that transaction aborts, the abort's bump starts a new epoch, and the one
        // after commits.
        assert_eq!(c.run_transaction(2, true, MAX), TxnOutcome::Aborted);
    }
    assert_eq!(c.run_transaction(2, true, MAX), TxnOutcome::Committed);
    // The coordinator writes its markers after it answers EndTxn.
    assert!(c.run_until_markers_written(MAX));
    assert_eq!(c.partition(0).state.read_committed().len(), 3);
    assert_clean(&mut c, &[]);
}

#[test]
fn a_produce_applied_after_the_markers_opens_no_transaction_tv1() {
    a_produce_applied_after_the_markers_opens_no_transaction(1);
}

#[test]
fn a_produce_applied_after_the_markers_opens_no_transaction_tv2() {
    a_produce_applied_after_the_markers_opens_no_transaction(2);
}

fn cases() -> u32 {
    std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(64, |n: u32| (n / 16).max(4))
}

/// Fatal errors in runs of their own (a fatal error ends the producer, so the default
/// chaos run does not draw them): under every other fault, a producer that goes fatal
/// resolves every record, and none failed as not written is in the log, late
/// applications after the end of the run included.
fn fatal_run(seed: u64, rate: f64, fatal: f64) -> Cluster {
    let mut sim = SimConfig::new(seed);
    sim.partitions = 6;
    sim.faults = FaultRates::uniform(rate).with_fatal(fatal);
    let mut c = Cluster::new(sim);
    c.set_workload(2_000, 8, Duration::from_millis(1));
    while c.workload_remaining() > 0 && c.producer().fatal_error().is_none() && c.steps() < 400_000
    {
        if !c.step() {
            break;
        }
    }
    c.stop_workload();
    c.heal();
    c.flush();
    c.run_until_idle(MAX);
    c
}

/// The case generator's seed: `KACRAB_SIM_SEED` (a number, or `random`), fixed by
/// default so that CI is reproducible.
fn sim_seed() -> proptest::test_runner::RngSeed {
    use proptest::test_runner::RngSeed;
    match std::env::var("KACRAB_SIM_SEED").ok().as_deref() {
        Some("random") => RngSeed::Random,
        Some(s) => RngSeed::Fixed(s.parse().expect("KACRAB_SIM_SEED is a number or `random`")),
        None => RngSeed::Fixed(0x6b61_6372_6162),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        rng_seed: sim_seed(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_fatal_error_leaves_no_record_wrongly_reported(
        seed in any::<u64>(),
        rate in 0.0f64..0.1,
        fatal in 0.002f64..0.03,
    ) {
        let mut c = fatal_run(seed, rate, fatal);
        let v = violations(&mut c, &[ViolationKind::Fatal]);
        prop_assert!(v.is_empty(), "seed {} rate {} fatal {}: {:#?}", seed, rate, fatal, v);
    }
}

/// A produce the broker held past `request.timeout.ms` is applied after the client
/// closed that connection and retried the batch on a new one, while the retry waits in
/// purgatory for lagging followers. Two rules meet here: the late original, which nobody
/// waits for, must not be parked on (and answered over) the new connection that never
/// carried it; and the retry's answer must still go back on the new connection when its
/// replication completes (it went nowhere, and the client timed out a second time).
#[test]
fn a_late_application_neither_answers_on_nor_silences_a_newer_connection() {
    let mut c = cluster(2, 1, |sim| {
        sim.faults = FaultRates {
            replica_lag: 1.0,
            ..FaultRates::NONE
        };
        sim.replica_lag_min = Duration::from_millis(500);
        sim.replica_lag_max = Duration::from_millis(500);
    });
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(1_300),
    });
    let a = c.send(0).expect("sent");
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.run_for(Duration::from_secs(3));

    assert_clean(&mut c, &[]);
    assert_eq!(c.stats().late_applications, 1, "applied after the close");
    assert!(
        c.stats().duplicate_batches >= 1,
        "the late one is a duplicate"
    );
    assert_eq!(
        c.stats().close_connections,
        1,
        "the retry, parked on the new connection, is answered there"
    );
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert_eq!(log_of(&c, 0), vec![0]);
}

/// The same late original, answered with a leadership move (NOT_LEADER_OR_FOLLOWER after
/// the append) that also completes the retry parked on the new connection: the retry's
/// answer goes back on the new connection, and the late original's answer on none (it
/// was answered over the new connection, to a request the core had already failed).
#[test]
fn a_late_application_that_moves_the_leadership_answers_only_the_parked_retry() {
    let mut c = cluster(2, 1, |sim| {
        sim.faults = FaultRates {
            replica_lag: 1.0,
            ..FaultRates::NONE
        };
        sim.replica_lag_min = Duration::from_millis(500);
        sim.replica_lag_max = Duration::from_millis(500);
    });
    c.script(Script::HoldRequest {
        partition: 0,
        by: Duration::from_millis(1_300),
    });
    let a = c.send(0).expect("sent");
    // The client times out at 1 s and retries; the retry waits for the followers.
    c.run_for(Duration::from_millis(1_200));
    assert_eq!(c.stats().delayed_produces, 1, "the retry is parked");
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotLeaderAfterAppend,
        times: 1,
    });
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.run_for(Duration::from_secs(3));
    assert_clean(&mut c, &[]);
    assert_eq!(c.stats().late_applications, 1);
    assert!(c.faults().get(FaultKind::NotLeaderAfterAppend) >= 1);
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert_eq!(log_of(&c, 0), vec![0]);
}
