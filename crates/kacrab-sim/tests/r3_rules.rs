//! Red team r3: places where the model broker was kinder or harsher than Kafka's, each
//! test written failing first against the model as it was, citing the Kafka rule.

use std::time::Duration;

use kacrab_sim::broker::*;
use kacrab_sim::{Cluster, FaultRates, SimConfig};

mod common;
use common::*;

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
