//! Places where the model broker was kinder or harsher than Kafka's, each
//! test written failing first against the model as it was, citing the Kafka rule.

use std::time::Duration;

use kacrab_sim::broker::*;
use kacrab_sim::{Cluster, FaultRates, SimConfig};

// The model crate's rule tests share their v2 batch encoder with these.
use crate::common::*;

const MAX: Duration = Duration::from_secs(60);

/// KIP-890 part 1 starts verification only for a producer with no transaction open on
/// the partition *at the batch's epoch*: `UnifiedLog.maybeStartTransactionVerification`
/// returns the sentinel guard when `hasOngoingTransaction(producerId, producerEpoch)`
/// (an entry with `currentTxnFirstOffset` set and the same epoch). A batch at a newer
/// epoch (TV2's next transaction, before the previous one's marker is written here)
/// must be verified; the model skipped it because a transaction of any epoch was open.
#[test]
fn verification_is_skipped_only_for_a_transaction_open_at_the_batchs_epoch() {
    let mut p = PartitionState::new();
    assert!(p.start_transaction_verification(PID, 0, 0, 0));
    assert!(produce_txn(&mut p, 0, 0).is_ok());
    assert!(
        !p.start_transaction_verification(PID, 1, 0, 0),
        "open at epoch 0"
    );
    assert!(
        p.start_transaction_verification(PID, 0, 1, 0),
        "a transaction open at epoch 0 is not one at epoch 1"
    );
    assert_eq!(p.verification(PID).map(|v| v.epoch()), Some(1));
}

/// A transactional batch for a partition where the producer's transaction is already
/// open at its epoch goes straight to the log: `ReplicaManager.handleProduceAppend`
/// asks the coordinator (`AddPartitionsToTxnManager.verifyTransaction`) only for the
/// partitions whose `maybeStartTransactionVerification` returned a real guard, never
/// for one with `hasOngoingTransaction`. The model asked the coordinator for every
/// transactional batch, so a loading (or unavailable, or busy) coordinator refused a
/// batch Kafka appends (NOT_ENOUGH_REPLICAS, translated from
/// COORDINATOR_LOAD_IN_PROGRESS).
#[test]
fn a_batch_for_a_partition_already_in_the_transaction_is_not_verified_again() {
    for version in [1, 2] {
        let mut found = false;
        for seed in 1..40 {
            let mut sim = SimConfig::transactional(seed, "tx-r3", version);
            sim.partitions = 1;
            sim.faults = FaultRates::NONE;
            sim.coordinator_load_max = Duration::from_secs(5);
            sim.trace = true;
            let mut c = Cluster::new(sim);
            c.init_transactions(MAX).expect("init_transactions");
            c.begin_and_send(1);
            assert!(c.run_until(MAX, |c| c.checker().tally(Some(0)).acked == 1));
            assert!(c
                .partition(0)
                .state
                .producer(c.producer().producer_id().id.0)
                .is_some());
            let to = c
                .brokers()
                .iter()
                .map(|b| b.id)
                .find(|&id| id != c.coordinator_node() && id != c.partition(0).leader)
                .expect("a third broker");
            c.move_coordinator(to);
            c.send(0).expect("send");
            let acked = c.run_until(Duration::from_millis(400), |c| {
                c.checker().tally(Some(0)).acked == 2
            });
            if !c.coordinator_loading() {
                continue; // the load was drawn too short to tell
            }
            found = true;
            assert!(
                acked,
                "TV{version} seed {seed}: a batch of an open transaction waited for the loading coordinator:\n{}",
                c.trace().join("\n")
            );
            break;
        }
        assert!(found, "no seed drew a load long enough");
    }
}

/// A replica that truncates reloads producer state from its newest snapshot at or below
/// the truncation point and replays the log after it, and then takes a snapshot there
/// (`UnifiedLog.truncateTo` → `rebuildProducerState` → `ProducerStateManager.
/// truncateAndReload`, which deletes the snapshots above the point). A snapshot keeps
/// only the newest batch per producer (`ProducerStateManager.writeSnapshot`), so a
/// replica that truncated before keeps, after its next truncation, only the newest of
/// the batches it had at the first one. The model replayed the whole log at every
/// truncation and kept the full dedup window, so a retry Kafka answers
/// OUT_OF_ORDER_SEQUENCE_NUMBER (the batch is in the log) was deduplicated.
#[test]
fn a_second_truncation_reloads_producer_state_from_the_first_ones_snapshot() {
    let mut leader = PartitionState::new();
    let mut follower = PartitionState::new();
    produce(&mut leader, 0, 0).unwrap();
    produce(&mut leader, 0, 1).unwrap();
    follower.fetch_from(&leader, 0, EXP);
    // An entry the follower alone had (it led for a moment): truncated away, and the
    // rebuild snapshots producer state at two entries.
    produce(&mut follower, 0, 2).unwrap();
    assert_eq!(follower.fetch_from(&leader, 0, EXP), 1);
    produce(&mut leader, 0, 2).unwrap();
    produce(&mut leader, 0, 3).unwrap();
    follower.fetch_from(&leader, 0, EXP);
    assert_eq!(
        entry(&follower).batches().len(),
        4,
        "replication keeps the window"
    );
    produce(&mut follower, 0, 4).unwrap();
    assert_eq!(follower.fetch_from(&leader, 0, EXP), 1);
    let window: Vec<i32> = entry(&follower).batches().map(|b| b.first_seq).collect();
    assert_eq!(
        window,
        [1, 2, 3],
        "snapshot at two entries (newest batch), then replay"
    );
    assert_eq!(
        code(produce(&mut follower, 0, 0)),
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert!(produce(&mut follower, 0, 1).unwrap().is_duplicate());
}

/// Under transaction version 2 a transactional producer with no batch on the partition
/// must start at sequence 0: `ProducerAppendInfo.checkSequence` refuses a non-zero first
/// sequence with OUT_OF_ORDER_SEQUENCE_NUMBER when the verification entry supports the
/// epoch bump (created for Produce v12, `TransactionSupportedOperation.ADD_PARTITION`)
/// and the producer's entry is empty. The model accepted any first sequence from an
/// unknown producer under TV2 too (KIP-360's rule, which TV1 keeps).
#[test]
fn tv2_a_transactional_producer_without_state_must_start_at_sequence_zero() {
    let mut p = PartitionState::new();
    assert!(p.start_verification(PID, 1, 0, 0, true));
    assert_eq!(
        code(produce_txn(&mut p, 0, 1)),
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert!(p.start_verification(PID, 0, 0, 0, true));
    assert!(produce_txn(&mut p, 0, 0).is_ok());

    let mut tv1 = PartitionState::new();
    assert!(tv1.start_verification(PID, 1, 0, 0, false));
    assert!(
        produce_txn(&mut tv1, 0, 1).is_ok(),
        "TV1 keeps KIP-360's rule"
    );
}

/// Core hole exposed by [`SimConfig::rebuild_snapshots`] (Kafka's rule: every restart
/// or truncation leaves a producer-state snapshot at the log end, and the next reload
/// of that replica starts from it, `UnifiedLog.rebuildProducerState`). Shrunk by
/// `op_sequences_hold`: records #8 and #9 of t1-0 (single-record batches, sequences 8
/// and 9) are written at offsets 8 and 9 while their answers are lost; their follower
/// (node 1) crashes and restarts twice, the second reload keeping only the newest batch
/// (sequence 9) from the first one's snapshot; node 1 leads again and answers the retry
/// of sequence 8 OUT_OF_ORDER_SEQUENCE_NUMBER although it is in the log. The core took
/// that answer as proof of absence, moved to a new producer id (epoch exhausted) and
/// wrote #8 and #9 again at offsets 10 and 11 (Java's KIP-360 bump renumbers the batch
/// the same way). Now an OUT_OF_ORDER answer never lowers a batch's fate: the next
/// batch, possibly written under its stamp, fails as possibly written instead of being
/// renumbered. Failed before the fix in `complete.rs`; the run without rebuild
/// snapshots stays clean too.
#[test]
fn a_retry_the_reloaded_window_forgot_is_written_twice() {
    let data: Vec<u8> = vec![
        25, 29, 67, 70, 96, 28, 107, 0, 182, 125, 112, 205, 91, 5, 4, 0, 64, 2, 6, 0, 48, 183, 31,
        0, 31, 0, 116, 9, 164, 3, 91, 121, 4, 59, 188, 148, 136, 3, 120, 107, 4, 5, 70, 62, 6, 22,
        173, 82, 16, 241, 22, 162, 0, 66, 15, 34, 112, 194, 72, 185, 41, 90, 70, 21, 48, 227, 6, 0,
        154, 152, 202, 105, 32, 5, 6, 1, 47, 11, 59, 11, 16, 187, 10, 205, 54, 0, 127, 56, 52, 21,
        4, 219, 38, 38, 6, 88, 30, 25, 87, 71, 123, 46, 205, 59, 48, 93, 0, 0, 119, 0, 16, 99, 93,
        91, 29, 5, 39, 57, 7, 42, 153, 170, 84, 71, 11, 11, 0, 25, 0, 61, 36, 144, 0, 0, 0, 0, 0,
        0, 0, 1, 0, 29, 0, 30, 0, 30, 0, 12, 0, 13, 0, 106, 45, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 24, 36, 24, 170, 20, 7, 0, 6, 13, 0, 0, 0, 6, 0, 47, 4, 88, 0, 104, 0, 14,
        12, 170, 50, 13, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 69, 31, 0, 0,
        0, 0, 22, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 12, 66, 14, 63, 0, 108, 0, 0, 0,
        2, 0, 218, 0, 0, 212, 144, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 144, 0, 0, 0, 0, 0, 0, 0, 87, 126,
        0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 103, 0, 0, 0, 0, 57, 0,
        6, 0, 70, 230, 74, 12, 0, 0, 102, 138, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 151, 30, 0, 0, 23, 0, 71, 0, 7, 0, 0, 0, 0, 0, 0, 22, 0, 82, 119, 1, 102,
        91,
    ];
    let options = kacrab_sim::ops::Options {
        rebuild_snapshots: true,
        ..kacrab_sim::ops::Options::default()
    };
    let report = kacrab_sim::ops::run_with(&data, options);
    assert!(report.is_clean(), "{}", report.render());
    let off = kacrab_sim::ops::Options {
        rebuild_snapshots: false,
        ..kacrab_sim::ops::Options::default()
    };
    assert!(kacrab_sim::ops::run_with(&data, off).is_clean());
}

/// A throttled answer mutes the connection: the broker reads nothing more from it until
/// the throttle time has passed (`SocketServer.Processor`: `StartThrottlingResponse`
/// mutes the channel, `EndThrottlingResponse` unmutes it once the response is sent,
/// KIP-219). The model answered with a throttle time and kept reading the connection,
/// so a client that ignored the throttle was served at once.
#[test]
fn a_throttled_answer_mutes_the_connection_for_the_throttle_time() {
    use kacrab_idempotence::{MetadataRequest, NodeId, ProduceResponse, RequestId, Timestamp};
    use kacrab_sim::net::{Direction, Net, ToBroker, ToClient};

    let mut net = Net::new(vec![Duration::from_millis(1)]);
    net.connect(NodeId(1));
    let t0 = Timestamp::from_millis(10);
    let mut resp = ProduceResponse::default();
    resp.throttle = Duration::from_millis(500);
    net.send_response(
        NodeId(1),
        t0,
        Duration::from_millis(1),
        ToClient::Produce(RequestId(1), resp),
    );
    assert_eq!(
        net.pop_response(NodeId(1)).map(|t| t.at),
        Some(Timestamp::from_millis(11))
    );
    let md = ToBroker::Metadata(MetadataRequest::new(RequestId(2), vec![]));
    net.send_request(
        NodeId(1),
        Timestamp::from_millis(12),
        Duration::from_millis(1),
        md,
    );
    let (at, node, dir) = net.next_delivery().expect("the request is on the wire");
    assert_eq!((node, dir), (NodeId(1), Direction::ToBroker));
    assert_eq!(
        at,
        Timestamp::from_millis(510),
        "read once the throttle is over"
    );
}

/// A replica that builds producer state from the log (a follower's fetch, a reload)
/// records a batch's max timestamp as its producer's last timestamp, as the leader
/// does (`ProducerAppendInfo.appendDataBatch` gets `batch.maxTimestamp()` whatever the
/// origin), so expiry (`ProducerStateManager.isProducerExpired`) measures idleness the
/// same on every replica. The model's replay used the leader's append time, later than
/// a CreateTime timestamp by up to the batch's delivery timeout: followers and reloaded
/// replicas kept an idle producer longer than Kafka.
#[test]
fn a_follower_expires_a_producer_by_the_batch_timestamp_like_its_leader() {
    let mut leader = PartitionState::new();
    let mut b = tbatch(PID, 0, 0, 1, false);
    b.timestamp = 1_000;
    leader.append(&encode(&b), 20_000).unwrap();
    let mut follower = PartitionState::new();
    follower.fetch_from(&leader, 20_000, EXP);
    assert_eq!(entry(&leader).last_timestamp_ms(), 1_000);
    assert_eq!(entry(&follower).last_timestamp_ms(), 1_000);
    assert_eq!(follower.expire_producers(1_000 + EXP, EXP), [PID]);
}

/// A leader that reloaded its producer state from a snapshot deduplicates only the
/// producer's newest batch (`ProducerStateManager.writeSnapshot`), so the retry of an
/// older batch that is in the log is answered OUT_OF_ORDER_SEQUENCE_NUMBER. Under one
/// (producer id, epoch) the leader appends only the next sequence, so the newest batch
/// in the log proves every earlier one there: resent alone, it is the duplicate the
/// leader recognises, and the whole window is acknowledged. The core failed the window
/// as possibly written (34 records on a real cluster after a SIGSTOP, all of them in
/// the log); it now probes from the highest batch down (`src/probe.rs`).
#[test]
fn a_leader_that_forgot_older_batches_acknowledges_them_all() {
    use kacrab_idempotence::NodeId;
    use kacrab_sim::{Outcome, Script};
    let mut sim = SimConfig::new(3);
    sim.brokers = 1;
    sim.partitions = 1;
    sim.snapshot_restore = true;
    let mut producer = SimConfig::producer_config(3);
    producer.linger(Duration::ZERO);
    sim.producer = producer.build().expect("valid");
    let mut c = Cluster::new(sim);
    let warm = c.send(0).expect("sent");
    assert!(c.run_until_idle(MAX));
    // Three batches, each appended while its answer is held back.
    let mut window = Vec::new();
    for _ in 0..3 {
        c.script(Script::DelayResponse {
            partition: 0,
            by: Duration::from_secs(3_600),
        });
        window.push(c.send(0).expect("sent"));
        let appended = c.stats().appended_batches + 1;
        assert!(c.run_until(MAX, |c| c.stats().appended_batches == appended));
    }
    // A clean restart: the snapshot at the log end keeps only the newest batch.
    c.crash(NodeId(1));
    c.restart(NodeId(1));
    assert!(c.run_until_idle(MAX));
    c.final_check();
    assert_eq!(
        c.checker().violation_count(),
        0,
        "{:#?}",
        c.checker().violations()
    );
    assert!(c.stats().out_of_order_answers >= 1, "the leader forgot");
    for id in std::iter::once(warm).chain(window) {
        assert_eq!(
            c.checker().record(id).expect("sent").outcome,
            Outcome::Delivered,
            "{id:?}"
        );
    }
    assert_eq!(c.producer().stats().probes, 1);
    assert_eq!(c.producer().stats().epoch_bumps, 0);
}
