//! Opening a transaction: InitProducerId, AddPartitionsToTxn (and TV2's implicit add,
//! with TV1's verification), and the offsets a transaction commits.

use super::*;

// ---------------------------------------------------------------- InitProducerId

/// `handleInitProducerId`: a new transactional id gets a fresh producer id with
/// epoch 0 (and an idempotent producer a fresh id at epoch 0 too).
#[test]
fn init_new_transactional_id_gets_a_fresh_producer_id_at_epoch_zero() {
    let mut w = World::new();
    assert_eq!(w.init(None), Ok((FIRST_PID, 0)));
    assert_eq!(w.init_id("txn-b", None), Ok((FIRST_PID + 1, 0)));
    assert_eq!(w.coord.init_idempotent(), (FIRST_PID + 2, 0));
    let meta = w.meta();
    assert_eq!(meta.state, TxnState::Empty);
    assert_eq!(meta.timeout_ms, TIMEOUT);
    assert_eq!(meta.last_producer_epoch, NO_PRODUCER_EPOCH);
    // An expected identity the coordinator has never seen is no obstacle.
    assert_eq!(w.init_id("txn-c", Some((77, 3))), Ok((FIRST_PID + 3, 0)));
}

/// `handleInitProducerId`: an existing id in Empty or Complete* is bumped and
/// goes to Empty.
#[test]
fn init_existing_transactional_id_bumps_the_epoch() {
    let mut w = World::new();
    assert_eq!(w.init(None), Ok((FIRST_PID, 0)));
    assert_eq!(w.init(None), Ok((FIRST_PID, 1)));
    assert_eq!(w.add(FIRST_PID, 1, &[0]), NONE);
    assert_eq!(w.end(FIRST_PID, 1, true, false), Ok(None));
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.init(None), Ok((FIRST_PID, 2)));
    assert_eq!(w.state(), TxnState::Empty);
}

/// `handleInitProducerId`, KIP-360: the expected epoch equal to the current one
/// bumps; equal to the last one is a retry that gets the current epoch;
/// anything else, or another producer id, is fenced.
#[test]
fn init_retry_with_the_last_epoch_returns_the_current_epoch() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.init(Some((pid, 0))), Ok((pid, 1)));
    assert_eq!(w.meta().last_producer_epoch, 0);
    // The response was lost: the retry names epoch 0 again.
    assert_eq!(w.init(Some((pid, 0))), Ok((pid, 1)));
    assert_eq!(w.init(Some((pid, 5))), Err(PRODUCER_FENCED));
    assert_eq!(w.init(Some((pid + 50, 1))), Err(PRODUCER_FENCED));
    assert_eq!(w.init(Some((pid, 1))), Ok((pid, 2)));
    // A negative expected identity means "none".
    assert_eq!(w.init(Some((-1, -1))), Ok((pid, 3)));
}

/// An InitProducerId without an expected epoch forgets the last epoch, so the
/// instance it fenced cannot pass its epoch off as a retry.
#[test]
fn init_by_a_new_instance_fences_the_old_instances_kip360_bump() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.init(None), Ok((pid, 1)));
    assert_eq!(w.init(Some((pid, 0))), Err(PRODUCER_FENCED));
}

/// `handleInitProducerId`: InitProducerId on an Ongoing transaction fences
/// (epoch+1), aborts with markers at the fencing epoch and answers
/// CONCURRENT_TRANSACTIONS; the retry is bumped once more.
#[test]
fn init_on_an_ongoing_transaction_fences_aborts_and_is_concurrent() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.meta().producer_epoch, 1);
    for p in 0..2 {
        let markers = w.markers(p);
        assert_eq!(markers.len(), 1);
        assert_eq!(marker_summary(&markers[0]), (pid, 1, 0, MarkerKind::Abort));
    }
    assert!(w.committed(0).is_empty());
    assert_eq!(w.uncommitted(0).len(), 2);
    assert_eq!(w.produce_code(0, pid, 0, 2), INVALID_PRODUCER_EPOCH);
    assert_eq!(w.init(None), Ok((pid, 2)));
    assert_eq!(w.state(), TxnState::Empty);
}

/// `TransactionMetadata`'s pending state: while markers are outstanding
/// (Prepare*, a pending transition) every request answers
/// CONCURRENT_TRANSACTIONS.
#[test]
fn init_while_markers_are_outstanding_is_concurrent() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.state(), TxnState::PrepareCommit);
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.init(Some((pid, 0))), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.add(pid, 0, &[1]), CONCURRENT_TRANSACTIONS);
    assert!(w.markers(0).is_empty());
    assert_eq!(w.release(), 1);
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.init(None), Ok((pid, 1)));
}

/// `handleInitProducerId`, KIP-360: an exhausted epoch (>= i16::MAX - 1)
/// rotates to a new producer id at epoch 0; a retry naming the old id and its
/// last epoch gets the new id.
#[test]
fn init_with_an_exhausted_epoch_rotates_the_producer_id() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let new = FIRST_PID + 1;
    assert_eq!(w.init(Some((old, i16::MAX - 1))), Ok((new, 0)));
    let meta = w.meta();
    assert_eq!(
        (meta.prev_producer_id, meta.last_producer_epoch),
        (old, i16::MAX - 1)
    );
    assert_eq!(w.init(Some((old, i16::MAX - 1))), Ok((new, 0)));
    assert_eq!(w.init(Some((old, 5))), Err(PRODUCER_FENCED));
    assert_eq!(w.init(Some((new, 0))), Ok((new, 1)));

    // Without an expected identity the rotation happens as well.
    let mut w = World::new();
    w.init_to_epoch(i16::MAX - 1);
    assert_eq!(w.init(None), Ok((FIRST_PID + 1, 0)));
}

/// The timeout must be positive and at most `transaction.max.timeout.ms`.
#[test]
fn init_with_an_invalid_timeout_is_rejected() {
    let mut coord = TransactionCoordinator::new(1).with_max_transaction_timeout_ms(1_000);
    let mut write = never_write();
    for timeout in [0, 1_001] {
        assert_eq!(
            coord.init_producer_id(ID, timeout, None, 0, &mut write),
            Err(INVALID_TRANSACTION_TIMEOUT)
        );
    }
    assert_eq!(
        coord.init_producer_id(ID, 1_000, None, 0, &mut write),
        Ok((1, 0))
    );
}

// ---------------------------------------------------------------- AddPartitions, verification

/// `handleAddPartitionsToTransaction`: unknown id or another producer id is
/// INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED; a good add opens
/// the transaction. Since Kafka 4.0 (KAFKA-18660) an add checks a pending
/// transition or outstanding markers (CONCURRENT_TRANSACTIONS) before the producer
/// id and epoch, so that a TV2 producer whose id rotated retries rather than fails;
/// `handleVerifyPartitionsInTransaction` keeps the older order (producer id, epoch,
/// then the markers).
#[test]
fn add_partitions_error_codes() {
    let mut w = World::new();
    assert_eq!(w.add(FIRST_PID, 0, &[0]), INVALID_PRODUCER_ID_MAPPING);
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid + 1, 0, &[0, 1]), INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(w.add(pid, 1, &[0, 1]), PRODUCER_FENCED);
    assert_eq!(w.state(), TxnState::Empty);
    w.now = 42;
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    assert_eq!(w.state(), TxnState::Ongoing);
    assert_eq!(w.meta().start_ms, 42);
    assert_eq!(w.meta().version, TransactionVersion::V1);
    w.now = 50;
    assert_eq!(w.add(pid, 0, &[1]), NONE);
    assert_eq!(w.meta().start_ms, 42, "an open transaction keeps its start");
    assert_eq!(w.meta().partitions.len(), 2);
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, false, false), Ok(None));
    assert_eq!(w.add(pid, 0, &[0]), CONCURRENT_TRANSACTIONS);
    assert_eq!(w.add(pid, 1, &[0]), CONCURRENT_TRANSACTIONS);
    assert_eq!(w.add(pid + 1, 0, &[0]), CONCURRENT_TRANSACTIONS);
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        w.coord.verify_partition(ID, pid, 1, &tp(0)),
        PRODUCER_FENCED
    );
    assert_eq!(w.release(), 2);
    assert_eq!(w.add(pid, 1, &[0]), PRODUCER_FENCED);
    assert_eq!(w.add(pid + 1, 0, &[0]), INVALID_PRODUCER_ID_MAPPING);
}

/// KIP-890 (`AddPartitionsToTxnManager`): the implicit add of a TV2 Produce
/// (v12) and the codes the leader answers with: fenced becomes
/// INVALID_PRODUCER_EPOCH, concurrent stays for TV2 (NOT_ENOUGH_REPLICAS below
/// v12), coordinator errors NOT_ENOUGH_REPLICAS.
#[test]
fn implicit_add_partition_for_tv2_produce() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    assert_eq!(w.state(), TxnState::Ongoing);
    assert_eq!(w.meta().version, TransactionVersion::V2);
    let fenced = w.coord.add_partition_implicit(ID, pid, 1, &tp(1), 0);
    assert_eq!(fenced, PRODUCER_FENCED);
    assert_eq!(
        produce_error_from_coordinator(fenced, 12),
        INVALID_PRODUCER_EPOCH
    );
    let wrong_pid = w.coord.add_partition_implicit(ID, pid + 9, 0, &tp(1), 0);
    assert_eq!(wrong_pid, INVALID_PRODUCER_ID_MAPPING);

    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    // The client moves on to epoch 1 while the markers are outstanding.
    let busy = w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0);
    assert_eq!(busy, CONCURRENT_TRANSACTIONS);
    assert_eq!(
        produce_error_from_coordinator(busy, 12),
        CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        produce_error_from_coordinator(busy, 11),
        NOT_ENOUGH_REPLICAS
    );
    w.release();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0), NONE);

    for code in [
        NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS,
    ] {
        w.coord.set_unavailable(Some(code));
        let got = w.coord.add_partition_implicit(ID, pid, 1, &tp(1), 0);
        assert_eq!(got, code);
        assert_eq!(produce_error_from_coordinator(got, 12), NOT_ENOUGH_REPLICAS);
    }
}

/// KIP-890 part 1: a TV1 Produce to a partition not added to the transaction
/// fails verification (TRANSACTION_ABORTABLE, INVALID_TXN_STATE below v11).
#[test]
fn verification_of_a_tv1_produce() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        TRANSACTION_ABORTABLE
    );
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    assert_eq!(w.coord.verify_partition(ID, pid, 0, &tp(0)), NONE);
    let missing = w.coord.verify_partition(ID, pid, 0, &tp(1));
    assert_eq!(missing, TRANSACTION_ABORTABLE);
    assert_eq!(
        produce_error_from_coordinator(missing, 11),
        TRANSACTION_ABORTABLE
    );
    assert_eq!(
        produce_error_from_coordinator(missing, 10),
        INVALID_TXN_STATE
    );
    let stale = w.coord.verify_partition(ID, pid, 1, &tp(0));
    assert_eq!(stale, PRODUCER_FENCED);
    assert_eq!(
        produce_error_from_coordinator(stale, 9),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        w.coord.verify_partition("nobody", pid, 0, &tp(0)),
        INVALID_PRODUCER_ID_MAPPING
    );
}

// ---------------------------------------------------------------- offsets

/// TV1: AddOffsetsToTxn then TxnOffsetCommit; the offsets are committed by a
/// COMMIT only, and a group that was not added fails verification.
#[test]
fn group_offsets_commit_only_when_the_transaction_commits() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    let offsets = [(tp(0), 10), (tp(1), 20)];
    let codes = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, false, 0);
    assert!(
        codes.iter().all(|(_, c)| *c == TRANSACTION_ABORTABLE),
        "{codes:?}"
    );
    assert_eq!(w.coord.add_offsets(ID, pid, 1, GROUP, 0), PRODUCER_FENCED);
    assert_eq!(w.coord.add_offsets(ID, pid, 0, GROUP, 0), NONE);
    assert_eq!(w.state(), TxnState::Ongoing);
    let codes = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, false, 0);
    assert_eq!(codes, vec![(tp(0), NONE), (tp(1), NONE)]);
    assert!(w.coord.committed_offsets(GROUP).is_empty());
    // A transaction with only a group commits under TV1 (no partition marker).
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    let want: BTreeMap<Partition, i64> = offsets.iter().cloned().collect();
    assert_eq!(w.coord.committed_offsets(GROUP), want);

    assert_eq!(w.coord.add_offsets(ID, pid, 0, GROUP, 0), NONE);
    let later = [(tp(0), 99)];
    assert_eq!(
        w.coord
            .txn_offset_commit(ID, GROUP, pid, 0, &later, false, 0),
        vec![(tp(0), NONE)]
    );
    assert_eq!(w.end(pid, 0, false, false), Ok(None));
    assert_eq!(
        w.coord.committed_offsets(GROUP),
        want,
        "an abort discards them"
    );
    assert!(w.coord.committed_offsets("other").is_empty());
}

/// TV2: TxnOffsetCommit v5 adds the group implicitly, and EndTxn commits it.
#[test]
fn tv2_txn_offset_commit_adds_the_group_implicitly() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    let offsets = [(tp(1), 7)];
    let codes = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, true, 0);
    assert_eq!(codes, vec![(tp(1), NONE)]);
    assert_eq!(w.state(), TxnState::Ongoing);
    assert!(w.meta().groups.contains(GROUP));
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(
        w.coord.committed_offsets(GROUP),
        offsets.iter().cloned().collect()
    );
    let stale = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, true, 0);
    assert_eq!(stale, vec![(tp(1), PRODUCER_FENCED)]);
}
