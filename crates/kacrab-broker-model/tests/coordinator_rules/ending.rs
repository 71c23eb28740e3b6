//! Ending a transaction: EndTxn and its markers for TV1 and TV2, fencing, the
//! transaction timeout, marker failures and availability, the coordinator's own abort.

use super::*;

// ---------------------------------------------------------------- EndTxn

/// `handleEndTransaction` and `appendEndTxnMarker`, TV1: the markers carry the
/// transaction's own epoch, so each partition keeps its sequence history and
/// the next transaction continues the sequences.
#[test]
fn tv1_end_txn_writes_markers_at_the_same_epoch_and_sequences_continue() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    w.produce(1, pid, 0, 0, 1).unwrap();
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.meta().producer_epoch, 0);
    for p in 0..2 {
        let m = w.markers(p);
        assert_eq!(m.len(), 1);
        assert_eq!(marker_summary(&m[0]), (pid, 0, 0, MarkerKind::Commit));
    }
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1"]);
    assert_eq!(w.committed(1), ["1000:0:0"]);
    assert_eq!(w.part(0).producer(pid).unwrap().last_seq(), 1);

    assert_eq!(w.add(pid, 0, &[0]), NONE);
    assert_eq!(w.produce_code(0, pid, 0, 0), OUT_OF_ORDER_SEQUENCE_NUMBER);
    w.produce(0, pid, 0, 2, 1).unwrap();
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1", "1000:0:2"]);
}

/// `handleEndTransaction` and `appendEndTxnMarker`, TV2: EndTxn bumps the
/// epoch, the markers carry the new epoch, the response hands it to the client,
/// and the next transaction starts at sequence 0.
#[test]
fn tv2_end_txn_bumps_the_epoch_and_sequences_restart_at_zero() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.produce(0, pid, 0, 0, 3).unwrap();
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(
        (w.meta().producer_epoch, w.meta().last_producer_epoch),
        (1, 0)
    );
    let m = w.markers(0);
    assert_eq!(marker_summary(&m[0]), (pid, 1, 0, MarkerKind::Commit));
    assert!(
        w.markers(1).is_empty(),
        "only partitions in the transaction"
    );
    assert_eq!(w.committed(0).len(), 3);

    assert_eq!(w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0), NONE);
    assert_eq!(w.produce_code(0, pid, 1, 3), OUT_OF_ORDER_SEQUENCE_NUMBER);
    w.produce(0, pid, 1, 0, 1).unwrap();
    assert_eq!(w.produce_code(0, pid, 0, 3), INVALID_PRODUCER_EPOCH);
    assert_eq!(w.end(pid, 1, false, true), Ok(Some((pid, 2))));
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1", "1000:0:2"]);
}

/// `handleEndTransaction`, TV1 retries: the same result in Complete* is NONE,
/// the other result INVALID_TXN_STATE; the same result in Prepare* (markers
/// outstanding) CONCURRENT_TRANSACTIONS, the other result INVALID_TXN_STATE
/// (`logInvalidStateTransitionAndReturnError`; the model answered
/// CONCURRENT_TRANSACTIONS to both); Empty INVALID_TXN_STATE.
#[test]
fn tv1_end_txn_retry_semantics() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.end(pid, 0, true, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.end(pid, 0, false, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    assert_eq!(
        w.end(pid + 1, 0, true, false),
        Err(INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(w.end(pid, 1, true, false), Err(PRODUCER_FENCED));
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.end(pid, 0, true, false), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.end(pid, 0, false, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.coord.pending_marker_writes().len(), 1);
    w.release();
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.end(pid, 0, false, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.markers(0).len(), 1, "a retry writes no marker");
    let mut write = never_write();
    let unknown = w
        .coord
        .end_txn("nobody", pid, 0, true, false, 0, &mut write);
    assert_eq!(unknown, Err(INVALID_PRODUCER_ID_MAPPING));
}

/// `handleEndTransaction`, TV2 retries: in Prepare* CONCURRENT_TRANSACTIONS
/// (also for the next EndTxn at the new epoch, KAFKA-18464); in Complete* a
/// retry at the old epoch is NONE with the current identity; a commit of
/// nothing is INVALID_TXN_STATE; an abort of nothing bumps.
#[test]
fn tv2_end_txn_retry_semantics() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(
        w.end(pid, 0, true, true),
        Err(INVALID_TXN_STATE),
        "commit from Empty"
    );
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(w.end(pid, 0, true, true), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.end(pid, 1, false, true), Err(CONCURRENT_TRANSACTIONS));
    w.release();
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(w.end(pid, 0, false, true), Err(INVALID_TXN_STATE));
    assert_eq!(
        w.end(pid, 1, true, true),
        Err(INVALID_TXN_STATE),
        "commit of nothing"
    );
    assert_eq!(w.markers(0).len(), 1);

    assert_eq!(w.end(pid, 1, false, true), Ok(Some((pid, 2))));
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.markers(0).len(), 1, "an empty abort writes no marker");
    assert_eq!(w.end(pid, 1, false, true), Ok(Some((pid, 2))));
    assert_eq!(w.end(pid, 0, false, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 3, false, true), Err(PRODUCER_FENCED));
    assert_eq!(
        w.end(pid + 1, 2, false, true),
        Err(INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(w.end(pid, 2, false, true), Ok(Some((pid, 3))));

    assert_eq!(w.init(None), Ok((pid, 4)));
    assert_eq!(
        w.end(pid, 3, false, true),
        Err(PRODUCER_FENCED),
        "Empty needs the current epoch"
    );
    assert_eq!(w.end(pid, 4, false, true), Ok(Some((pid, 5))));
}

/// `handleEndTransaction`, TV2 at an exhausted epoch: the markers close the old
/// producer id at epoch i16::MAX and the client continues with a new producer
/// id at epoch 0; a retry naming the old id gets the new one.
#[test]
fn tv2_end_txn_with_an_exhausted_epoch_rotates_the_producer_id() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let new = FIRST_PID + 1;
    let e = i16::MAX - 1;
    assert_eq!(w.coord.add_partition_implicit(ID, old, e, &tp(0), 0), NONE);
    w.produce(0, old, e, 0, 1).unwrap();
    assert_eq!(w.end(old, e, true, true), Ok(Some((new, 0))));
    let m = w.markers(0);
    assert_eq!(
        marker_summary(&m[0]),
        (old, i16::MAX, 0, MarkerKind::Commit)
    );
    assert_eq!(w.committed(0).len(), 1);
    let meta = w.meta();
    assert_eq!(
        (meta.producer_id, meta.producer_epoch, meta.prev_producer_id),
        (new, 0, old)
    );
    assert_eq!(w.end(old, e, true, true), Ok(Some((new, 0))));
    assert_eq!(
        w.end(old, e - 1, true, true),
        Err(INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(w.coord.add_partition_implicit(ID, new, 0, &tp(0), 0), NONE);
    w.produce(0, new, 0, 0, 1).unwrap();
    assert_eq!(w.end(new, 0, true, true), Ok(Some((new, 1))));
    assert_eq!(w.committed(0).len(), 2);
}

/// Aborted transactions are hidden from read_committed readers, committed
/// ones are visible, and an open one holds the last stable offset back.
#[test]
fn abort_hides_records_from_read_committed() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    assert!(
        w.committed(0).is_empty(),
        "open transaction: LSO at its start"
    );
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    w.produce(0, pid, 0, 2, 2).unwrap();
    assert_eq!(w.end(pid, 0, false, false), Ok(None));
    assert_eq!(w.markers(0).len(), 2);
    assert_eq!(w.markers(0)[1].kind, MarkerKind::Abort);
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1"]);
    assert_eq!(w.uncommitted(0).len(), 4);
    assert_eq!(w.part(0).log().aborted_transactions().len(), 1);
}

// ---------------------------------------------------------------- fencing, timeout

/// A second InitProducerId for the same transactional id fences the first
/// producer: its coordinator requests get PRODUCER_FENCED and its produces
/// INVALID_PRODUCER_EPOCH once the fencing markers landed.
#[test]
fn a_second_producer_fences_the_first() {
    let mut w = World::new();
    let (pid, a) = w.init(None).unwrap();
    assert_eq!(w.add(pid, a, &[0]), NONE);
    w.produce(0, pid, a, 0, 1).unwrap();
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    let (_, b) = w.init(None).unwrap();
    assert_eq!(b, 2);
    assert_eq!(w.add(pid, a, &[1]), PRODUCER_FENCED);
    assert_eq!(w.end(pid, a, true, false), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, a, false, false), Err(PRODUCER_FENCED));
    assert_eq!(w.coord.add_offsets(ID, pid, a, GROUP, 0), PRODUCER_FENCED);
    assert_eq!(w.produce_code(0, pid, a, 1), INVALID_PRODUCER_EPOCH);
    assert_eq!(w.init(Some((pid, a))), Err(PRODUCER_FENCED));

    assert_eq!(w.add(pid, b, &[0]), NONE);
    w.produce(0, pid, b, 0, 1).unwrap();
    assert_eq!(w.end(pid, b, true, false), Ok(None));
    assert_eq!(w.committed(0), ["1000:2:0"]);
}

/// TV2 fencing: the fenced producer's commit is fenced (KAFKA-20785); its
/// abort may still be answered as a retry of the coordinator's abort, but the
/// second producer's bump leaves it fenced. A producer with no open
/// transaction is fenced through the implicit add of its next Produce.
#[test]
fn tv2_second_producer_fences_the_first() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.produce(0, pid, 0, 0, 1).unwrap();
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.end(pid, 0, true, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 0, false, true), Ok(Some((pid, 1))));
    assert_eq!(w.init(None), Ok((pid, 2)));
    let fenced = w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0);
    assert_eq!(
        produce_error_from_coordinator(fenced, 12),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(w.end(pid, 1, false, true), Err(PRODUCER_FENCED));
    assert!(w.committed(0).is_empty());

    // No open transaction: the new instance's bump alone fences the old one.
    assert_eq!(w.init(None), Ok((pid, 3)));
    let fenced = w.coord.add_partition_implicit(ID, pid, 2, &tp(1), 0);
    assert_eq!(
        produce_error_from_coordinator(fenced, 12),
        INVALID_PRODUCER_EPOCH
    );
}

/// The transaction timeout fences (epoch+1) and aborts an Ongoing transaction
/// open longer than its timeout, with ABORT markers at the new epoch.
#[test]
fn transaction_timeout_fences_and_aborts() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    w.now = 100;
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    w.now = 100 + TIMEOUT;
    assert!(w.expire().is_empty());
    w.now += 1;
    assert_eq!(w.expire(), [ID.to_owned()]);
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.meta().producer_epoch, 1);
    for p in 0..2 {
        assert_eq!(
            marker_summary(&w.markers(p)[0]),
            (pid, 1, 0, MarkerKind::Abort)
        );
    }
    assert!(w.committed(0).is_empty());
    assert_eq!(w.add(pid, 0, &[0]), PRODUCER_FENCED);
    assert_eq!(w.end(pid, 0, true, false), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 0, false, false), Err(PRODUCER_FENCED));
    assert_eq!(w.produce_code(0, pid, 0, 2), INVALID_PRODUCER_EPOCH);
    w.now += 10 * TIMEOUT;
    assert!(w.expire().is_empty(), "only Ongoing transactions time out");
}

/// TV2 after a timeout: the client's abort is a retry of the coordinator's
/// abort and hands it the bumped epoch; a commit is fenced.
#[test]
fn tv2_transaction_timeout_lets_the_client_abort() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.produce(0, pid, 0, 0, 1).unwrap();
    w.now = TIMEOUT + 1;
    assert_eq!(w.expire(), [ID.to_owned()]);
    assert_eq!(w.markers(0)[0].producer_epoch, 1);
    assert_eq!(w.end(pid, 0, true, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 0, false, true), Ok(Some((pid, 1))));
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0), NONE);
    w.produce(0, pid, 1, 0, 1).unwrap();
    assert_eq!(w.end(pid, 1, true, true), Ok(Some((pid, 2))));
    assert_eq!(w.committed(0), ["1000:1:0"]);
}

/// TV2 timeout at an exhausted epoch: the fencing abort closes the old
/// producer id at i16::MAX and rotates (KAFKA-20090); the client's delayed
/// abort naming the old id is a retry that hands it the new id.
#[test]
fn tv2_timeout_at_an_exhausted_epoch_rotates_the_producer_id() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let e = i16::MAX - 1;
    assert_eq!(w.coord.add_partition_implicit(ID, old, e, &tp(0), 0), NONE);
    w.produce(0, old, e, 0, 1).unwrap();
    w.now = TIMEOUT + 1;
    assert_eq!(w.expire(), [ID.to_owned()]);
    let m = w.markers(0);
    assert_eq!(marker_summary(&m[0]), (old, i16::MAX, 0, MarkerKind::Abort));
    let new = FIRST_PID + 1;
    assert_eq!(w.coord.producer_id_and_epoch(ID), Some((new, 0)));
    assert_eq!(w.end(old, e, true, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(old, e, false, true), Ok(Some((new, 0))));
    assert!(w.committed(0).is_empty());
}

/// TV2 EndTxn at an exhausted epoch answers with the new producer id while the
/// markers (the old id at the last epoch) are still being written. An add from the new
/// id in that window is CONCURRENT_TRANSACTIONS, retried until the markers land:
/// `handleAddPartitionsToTransaction` checks a pending transition before the producer
/// id (since Kafka 4.0, KAFKA-18660), and `endTransaction` sets the transition to
/// Complete* (`prepareComplete`) before it answers, so the window always has one. An add at an older epoch in the window is
/// CONCURRENT_TRANSACTIONS too, for the same reason. Verification (TV1,
/// `handleVerifyPartitionsInTransaction`) keeps the other order: producer id, epoch,
/// then the pending transition.
#[test]
fn tv2_add_from_the_rotated_id_waits_for_the_markers() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let e = i16::MAX - 1;
    w.coord.set_hold_markers(true);
    assert_eq!(w.coord.add_partition_implicit(ID, old, e, &tp(0), 0), NONE);
    w.produce(0, old, e, 0, 1).unwrap();
    let new = FIRST_PID + 1;
    assert_eq!(w.end(old, e, true, true), Ok(Some((new, 0))));
    assert_eq!(w.state(), TxnState::PrepareCommit);
    assert_eq!(
        w.coord.add_partition_implicit(ID, new, 0, &tp(1), 0),
        CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        w.coord.add_partition_implicit(ID, old, e - 1, &tp(1), 0),
        CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        w.coord.verify_partition(ID, new, 0, &tp(1)),
        INVALID_PRODUCER_ID_MAPPING
    );
    // An EndTxn from the new id (an empty abort) waits the same way: the pending
    // transition is checked before the producer id (`endTransaction`, KAFKA-18660).
    assert_eq!(w.end(new, 0, false, true), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.release(), 1);
    assert_eq!(w.coord.producer_id_and_epoch(ID), Some((new, 0)));
    assert_eq!(w.coord.add_partition_implicit(ID, new, 0, &tp(1), 0), NONE);
    w.produce(1, new, 0, 0, 1).unwrap();
    // Markers are no longer held: this EndTxn writes them at once.
    assert_eq!(w.end(new, 0, true, true), Ok(Some((new, 1))));
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.committed(0), [format!("{old}:{e}:0")]);
    assert_eq!(w.committed(1), [format!("{new}:0:0")]);
}

// ---------------------------------------------------------------- markers, availability

/// A marker that fails to land stays outstanding (the transaction stays in
/// Prepare*) until a later delivery; a failover re-sends it with the new
/// coordinator epoch.
#[test]
fn failed_marker_writes_stay_outstanding() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    let mut flaky = |p: &Partition, m: &TxnMarker| -> Result<(), i16> {
        if p.1 == 1 {
            return Err(NOT_LEADER_OR_FOLLOWER);
        }
        w.parts
            .get_mut(p)
            .unwrap()
            .append_marker(m, 0)
            .map(|_| ())
            .map_err(|e| e.code)
    };
    assert_eq!(
        w.coord.end_txn(ID, pid, 0, true, false, 0, &mut flaky),
        Ok(None)
    );
    assert_eq!(w.state(), TxnState::PrepareCommit);
    let pending = w.coord.pending_marker_writes();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].0, tp(1));
    assert_eq!(w.add(pid, 0, &[0]), CONCURRENT_TRANSACTIONS);
    assert_eq!(w.coord.bump_coordinator_epoch(), 1);
    let delivered = {
        let mut write = write_markers_to(&mut w.parts, 0);
        w.coord.deliver_markers(0, &mut write)
    };
    assert_eq!(delivered, 1);
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(
        marker_summary(&w.markers(0)[0]),
        (pid, 0, 0, MarkerKind::Commit)
    );
    assert_eq!(
        marker_summary(&w.markers(1)[0]),
        (pid, 0, 1, MarkerKind::Commit)
    );
    assert!(w.coord.pending_marker_writes().is_empty());
}

/// Coordinator unavailability and authorization failures answer every request.
#[test]
fn unavailable_and_unauthorized_coordinator() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    w.coord.set_unavailable(Some(COORDINATOR_LOAD_IN_PROGRESS));
    assert_eq!(w.init(None), Err(COORDINATOR_LOAD_IN_PROGRESS));
    assert_eq!(w.add(pid, 0, &[0]), COORDINATOR_LOAD_IN_PROGRESS);
    assert_eq!(
        w.end(pid, 0, true, false),
        Err(COORDINATOR_LOAD_IN_PROGRESS)
    );
    w.coord.set_unavailable(None);
    w.coord.set_authorized(ID, false);
    assert_eq!(w.init(None), Err(TRANSACTIONAL_ID_AUTHORIZATION_FAILED));
    assert_eq!(w.add(pid, 0, &[0]), TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    w.coord.set_authorized(ID, true);
    assert_eq!(w.add(pid, 0, &[0]), NONE);
}

/// `transactional.id.expiration.ms`: an idle id becomes Dead, is unknown to
/// every request, and starts afresh with a new producer id.
#[test]
fn an_expired_transactional_id_starts_afresh() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    w.init(None).unwrap();
    assert!(w.coord.expire_transactional_ids(999, 1_000).is_empty());
    assert_eq!(
        w.coord.expire_transactional_ids(1_000, 1_000),
        [ID.to_owned()]
    );
    assert_eq!(w.state(), TxnState::Dead);
    assert_eq!(w.add(pid, 1, &[0]), INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(w.end(pid, 1, false, true), Err(INVALID_PRODUCER_ID_MAPPING));
    assert_eq!(w.init(Some((pid, 1))), Ok((pid + 1, 0)));
}

// ---------------------------------------------------------------- the coordinator's own abort

/// The coordinator's own abort of an open transaction (what its timeout does,
/// `TransactionCoordinator.abortTimedOutTransactions`), with the markers held as
/// the simulator holds them: the abort bumps the epoch at once. While the markers
/// are outstanding an add is CONCURRENT_TRANSACTIONS whatever its epoch (since Kafka
/// 4.0 `handleAddPartitionsToTransaction` checks the pending transition first,
/// KAFKA-18660); a TV1 verification of the old epoch is PRODUCER_FENCED
/// (`handleVerifyPartitionsInTransaction` checks the epoch first); once the markers
/// are written, the old epoch is PRODUCER_FENCED everywhere.
#[test]
fn coordinator_abort_is_concurrent_until_its_markers_are_written_then_fenced() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    w.coord.set_hold_markers(true);
    assert!(w.coordinator_abort());
    assert_eq!(w.state(), TxnState::PrepareAbort);
    assert_eq!(w.meta().producer_epoch, 1);
    assert_eq!(w.add(pid, 0, &[0]), CONCURRENT_TRANSACTIONS);
    assert_eq!(w.add(pid, 1, &[0]), CONCURRENT_TRANSACTIONS);
    // TV1 EndTxn checks the epoch before the pending transition
    // (`TransactionCoordinator.handleEndTransaction`).
    assert_eq!(w.end(pid, 0, true, false), Err(PRODUCER_FENCED));
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        PRODUCER_FENCED
    );
    assert_eq!(w.release(), 2);
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.add(pid, 0, &[0]), PRODUCER_FENCED);
    assert_eq!(w.end(pid, 0, false, false), Err(PRODUCER_FENCED));
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        PRODUCER_FENCED
    );
    assert!(w.committed(0).is_empty());
    assert!(
        !w.coordinator_abort(),
        "only an open transaction is aborted"
    );
}
