//! The model broker's rules, checked against Kafka's own broker scenarios
//! (ports of `ProducerStateManagerTest`) and the rules of `ProducerStateEntry`,
//! `ProducerAppendInfo` and `UnifiedLog.analyzeAndValidateProducerState`.
//!
//! Batches are built by a small encoder written here from the v2 format, so
//! the oracle depends on neither the core's writer nor the reader under test.

use kacrab_broker_model::batch::{self, BatchError};
use kacrab_broker_model::broker::*;
use kacrab_broker_model::log::{LogEntry, MarkerKind};

mod common;
use common::*;
use proptest::prelude::*;

// ---------------------------------------- ProducerStateManagerTest ports

/// Port of ProducerStateManagerTest.testBasicIdMapping: in-sequence appends,
/// a retry (duplicate at the log level, OOOS for the bare sequence check), a
/// gap, a new epoch at 0 and a fenced old epoch.
#[test]
fn basic_id_mapping() {
    let mut p = PartitionState::new();
    assert!(produce(&mut p, 0, 0).is_ok());
    let first = produce(&mut p, 0, 1).unwrap();
    // The pure sequence check, like the Java PSM, rejects seq 1 again...
    assert_eq!(
        check_sequence(p.producer(PID), 0, 1).unwrap_err().code,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    // ...while the append path dedups it first and returns the original offsets.
    let again = produce(&mut p, 0, 1).unwrap();
    assert_eq!(
        again,
        AppendOutcome::Duplicate {
            base_offset: 1,
            last_offset: 1,
            log_start_offset: 0
        }
    );
    assert_eq!(again.base_offset(), first.base_offset());
    assert_eq!(code(produce(&mut p, 0, 5)), OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert!(produce(&mut p, 1, 0).is_ok());
    assert_eq!(code(produce(&mut p, 0, 2)), INVALID_PRODUCER_EPOCH);
    assert_eq!(
        check_producer_epoch(p.producer(PID), 0).unwrap_err().code,
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(p.high_watermark(), 3);
}

/// Port of ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState: a
/// marker creates the entry with its epoch and no history; fencing and the
/// restart at seq 0 follow.
#[test]
fn append_txn_marker_with_no_producer_state() {
    let mut p = PartitionState::new();
    p.append_marker(&marker(2, 0, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap();
    let e = entry(&p);
    assert_eq!(
        (
            e.producer_epoch(),
            e.last_seq(),
            e.current_txn_first_offset()
        ),
        (2, NO_SEQUENCE, None)
    );
    assert_eq!(code(produce(&mut p, 0, 0)), INVALID_PRODUCER_EPOCH);
    assert_eq!(code(produce(&mut p, 2, 17)), OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert!(produce(&mut p, 2, 0).is_ok());
}

/// Port of ProducerStateManagerTest.testProducerSequenceWrapAround: last
/// sequence `i32::MAX`, then 0 is in sequence.
#[test]
fn producer_sequence_wrap_around() {
    let mut p = PartitionState::new();
    assert!(produce(&mut p, 0, i32::MAX).is_ok()); // unknown producer: any sequence
    assert_eq!(entry(&p).last_seq(), i32::MAX);
    assert!(produce(&mut p, 0, 0).is_ok());
    assert_eq!(entry(&p).last_seq(), 0);
}

/// Port of ProducerStateManagerTest.testProducerSequenceWithWrapAroundBatchRecord:
/// one batch whose sequences run across `i32::MAX` into 0.
#[test]
fn producer_sequence_with_wrap_around_batch_record() {
    let mut q = PartitionState::new();
    let out = produce_n(&mut q, 0, i32::MAX - 10, 20, false, 0).unwrap();
    let e = entry(&q);
    let b = e.batches().last().copied().unwrap();
    assert_eq!((b.first_seq, b.last_seq), (i32::MAX - 10, 8));
    assert_eq!((b.first_offset, b.last_offset), (0, 19));
    let seqs: Vec<i32> = q.records().map(|r| r.sequence).collect();
    assert_eq!(seqs[10], i32::MAX);
    assert_eq!(seqs[11], 0);
    // The retry of the wrapping batch is recognised; the next batch continues at 9.
    assert!(produce_n(&mut q, 0, i32::MAX - 10, 20, false, 0)
        .unwrap()
        .is_duplicate());
    assert_eq!(out.base_offset(), 0);
    assert!(produce(&mut q, 0, 9).is_ok());
}

/// Port of ProducerStateManagerTest.testProducerSequenceInvalidWrapAround:
/// after `i32::MAX` only 0 is in sequence.
#[test]
fn producer_sequence_invalid_wrap_around() {
    let mut p = PartitionState::new();
    assert!(produce(&mut p, 0, i32::MAX).is_ok());
    assert_eq!(code(produce(&mut p, 0, 1)), OUT_OF_ORDER_SEQUENCE_NUMBER);
}

/// Port of ProducerStateManagerTest.testControlRecordBumpsProducerEpoch: an
/// ABORT at epoch+1 clears the history and the open transaction; seq 0 at the
/// new epoch is accepted.
#[test]
fn control_record_bumps_producer_epoch() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    assert_eq!(entry(&p).current_txn_first_offset(), Some(0));
    p.append_marker(&marker(1, 1, MarkerKind::Abort, TransactionVersion::V1), 0)
        .unwrap();
    let e = entry(&p);
    assert_eq!(
        (e.producer_epoch(), e.coordinator_epoch(), e.last_seq()),
        (1, 1, NO_SEQUENCE)
    );
    assert_eq!(e.current_txn_first_offset(), None);
    assert!(produce(&mut p, 1, 0).is_ok());
}

/// Port of ProducerStateManagerTest.testOutOfSequenceAfterControlRecordEpochBump:
/// after a fencing abort, a non-zero sequence is rejected at the marker's epoch
/// and at a newer one; seq 0 is accepted.
#[test]
fn out_of_sequence_after_control_record_epoch_bump() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    produce_txn(&mut p, 0, 1).unwrap();
    p.append_marker(&marker(1, 1, MarkerKind::Abort, TransactionVersion::V1), 0)
        .unwrap();
    assert_eq!(code(produce(&mut p, 1, 2)), OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_eq!(code(produce(&mut p, 2, 2)), OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert!(produce(&mut p, 1, 0).is_ok());
}

/// Port of ProducerStateManagerTest.testNonTransactionalAppendWithOngoingTransaction.
#[test]
fn non_transactional_append_with_ongoing_transaction() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    assert_eq!(code(produce(&mut p, 0, 1)), INVALID_TXN_STATE);
    assert!(produce_txn(&mut p, 0, 1).is_ok());
}

/// Port of ProducerStateManagerTest.testOldEpochForControlRecord.
#[test]
fn old_epoch_for_control_record() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 3, 0).unwrap();
    let err = p
        .append_marker(&marker(1, 0, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap_err();
    assert_eq!(err.code, INVALID_PRODUCER_EPOCH);
    assert_eq!(entry(&p).current_txn_first_offset(), Some(0));
}

/// Port of ProducerStateManagerTest.testCoordinatorFencing: a marker from an
/// older coordinator epoch is fenced.
#[test]
fn coordinator_fencing() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    p.append_marker(&marker(0, 2, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap();
    produce_txn(&mut p, 0, 1).unwrap();
    let err = p
        .append_marker(&marker(0, 1, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap_err();
    assert_eq!(err.code, TRANSACTION_COORDINATOR_FENCED);
    assert_eq!(entry(&p).current_txn_first_offset(), Some(2));
}

/// Port of ProducerStateManagerTest.testCoordinatorFencedAfterReload: the
/// coordinator epoch survives a snapshot restore.
#[test]
fn coordinator_fenced_after_reload() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    p.append_marker(&marker(0, 2, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap();
    produce_txn(&mut p, 0, 1).unwrap();
    p.restart_from_snapshot();
    let err = p
        .append_marker(&marker(0, 1, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap_err();
    assert_eq!(err.code, TRANSACTION_COORDINATOR_FENCED);
}

/// Port of ProducerStateManagerTest.testProducerStateAfterFencingAbortMarker:
/// the entry keeps the fencing epoch, and the marker's time counts for expiry
/// (KAFKA-9144).
#[test]
fn producer_state_after_fencing_abort_marker() {
    let mut p = PartitionState::new();
    produce_n(&mut p, 0, 0, 1, true, 0).unwrap();
    p.append_marker(
        &marker(1, 0, MarkerKind::Abort, TransactionVersion::V1),
        1_000,
    )
    .unwrap();
    let e = entry(&p);
    assert_eq!(
        (
            e.producer_epoch(),
            e.current_txn_first_offset(),
            e.last_timestamp_ms()
        ),
        (1, None, 1_000)
    );
    assert!(p.expire_producers(1_000 + EXP - 1, EXP).is_empty());
    assert_eq!(code(produce(&mut p, 0, 1)), INVALID_PRODUCER_EPOCH);
    assert_eq!(p.expire_producers(1_000 + EXP, EXP), vec![PID]);
}

/// Port of ProducerStateManagerTest.testPidExpirationTimeout: an idle producer
/// expires, after which any sequence is accepted.
#[test]
fn pid_expiration_timeout() {
    let mut p = PartitionState::new();
    produce_n(&mut p, 5, 0, 1, false, 0).unwrap();
    assert!(p.expire_producers(EXP - 1, EXP).is_empty());
    assert_eq!(p.expire_producers(EXP, EXP), vec![PID]);
    assert!(p.producer(PID).is_none());
    assert!(produce_n(&mut p, 5, 1, 1, false, EXP).is_ok());
    assert_eq!(entry(&p).last_seq(), 1);
}

/// Kafka measures idleness from the last batch's max timestamp (CreateTime: the
/// producer's clock, `ProducerStateManager.isProducerExpired`), not from when the
/// broker appended it: a batch appended late with old timestamps expires early.
#[test]
fn expiry_is_measured_from_the_last_batch_max_timestamp() {
    let mut p = PartitionState::new();
    let mut b = tbatch(PID, 0, 0, 1, false);
    b.timestamp = 1_000;
    p.append(&encode(&b), 20_000).unwrap();
    assert_eq!(entry(&p).last_timestamp_ms(), 1_000);
    assert!(p.expire_producers(1_000 + EXP - 1, EXP).is_empty());
    assert_eq!(p.expire_producers(1_000 + EXP, EXP), vec![PID]);
    // Forgotten: any sequence is accepted again (KIP-360).
    assert!(produce_n(&mut p, 0, 7, 1, false, 1_000 + EXP).is_ok());
}

/// Port of ProducerStateManagerTest.testProducersWithOngoingTransactionsDontExpire.
#[test]
fn producers_with_ongoing_transactions_dont_expire() {
    let mut p = PartitionState::new();
    produce_n(&mut p, 0, 99, 1, true, 0).unwrap();
    assert!(p.expire_producers(10 * EXP, EXP).is_empty());
    assert_eq!(p.last_stable_offset(), 0);
    p.append_marker(
        &marker(0, 0, MarkerKind::Commit, TransactionVersion::V1),
        10 * EXP,
    )
    .unwrap();
    assert!(p.expire_producers(11 * EXP - 1, EXP).is_empty());
    assert_eq!(p.expire_producers(11 * EXP, EXP), vec![PID]);
}

/// Port of ProducerStateManagerTest.testRemoveExpiredPidsOnReload: a reload
/// followed by expiry forgets the producer; seq 2 from it is then accepted
/// (it is unknown) and starts a fresh history.
#[test]
fn remove_expired_pids_on_reload() {
    let mut p = PartitionState::new();
    produce_n(&mut p, 0, 0, 1, false, 0).unwrap();
    let mut other = tbatch(PID + 1, 0, 0, 1, false);
    other.timestamp = EXP as i64;
    p.append(&encode(&other), EXP).unwrap();
    p.restart_from_snapshot();
    assert_eq!(p.expire_producers(EXP + 1, EXP), vec![PID]);
    assert!(p.producer(PID + 1).is_some());
    assert!(produce_n(&mut p, 0, 2, 1, false, EXP + 1).is_ok());
    assert_eq!((entry(&p).first_seq(), entry(&p).last_seq()), (2, 2));
}

/// Port of ProducerStateManagerTest.testRejectNonZeroSequenceForDirectEpochBump:
/// epoch 0 to 1 must restart at seq 0.
#[test]
fn reject_non_zero_sequence_for_direct_epoch_bump() {
    let mut p = PartitionState::new();
    produce(&mut p, 0, 0).unwrap();
    produce(&mut p, 0, 1).unwrap();
    let err = produce(&mut p, 1, 5).unwrap_err();
    assert_eq!(
        (err.code, err.reason),
        (
            OUT_OF_ORDER_SEQUENCE_NUMBER,
            "invalid sequence for new epoch"
        )
    );
    assert!(produce(&mut p, 1, 0).is_ok());
}

/// Port of ProducerStateManagerTest.testIdempotentTransactionMarkerRetryTV2: a
/// TV2 marker repeated at the same epoch is an accepted retry once the
/// transaction is closed; at the same epoch with an open transaction it is
/// stale.
#[test]
fn idempotent_transaction_marker_retry_tv2() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    let commit = marker(1, 0, MarkerKind::Commit, TransactionVersion::V2);
    p.append_marker(&commit, 0).unwrap();
    assert!(p.append_marker(&commit, 0).is_ok());
    assert_eq!(
        (
            entry(&p).producer_epoch(),
            entry(&p).current_txn_first_offset()
        ),
        (1, None)
    );
    // Next TV2 transaction at epoch 1 (seq 0 after the bump), then a stale marker.
    produce_txn(&mut p, 1, 0).unwrap();
    assert_eq!(
        p.append_marker(&commit, 0).unwrap_err().code,
        INVALID_PRODUCER_EPOCH
    );
    assert!(p
        .append_marker(&marker(2, 0, MarkerKind::Commit, TransactionVersion::V2), 0)
        .is_ok());
}

// ---------------------------------------------------------------- model rules

/// The dedup window holds the last five batches: the sixth-oldest retry is
/// out of order, not a duplicate.
#[test]
fn dedup_window_is_five_batches() {
    let mut p = PartitionState::new();
    for seq in 0..6 {
        produce(&mut p, 0, seq).unwrap();
    }
    assert_eq!(entry(&p).batches().len(), NUM_BATCHES_TO_RETAIN);
    for seq in 1..6 {
        let d = produce(&mut p, 0, seq).unwrap();
        assert_eq!(
            d,
            AppendOutcome::Duplicate {
                base_offset: seq as i64,
                last_offset: seq as i64,
                log_start_offset: 0
            }
        );
    }
    assert_eq!(code(produce(&mut p, 0, 0)), OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_eq!(p.high_watermark(), 6);
}

/// A duplicate answers with the original offsets, even with other producers
/// written in between, and appends nothing.
#[test]
fn duplicate_returns_original_offsets() {
    let mut p = PartitionState::new();
    let first = produce_n(&mut p, 0, 0, 3, false, 0).unwrap();
    p.append(&encode(&tbatch(7, 0, 0, 2, false)), 0).unwrap();
    p.advance_log_start_offset(4);
    let dup = produce_n(&mut p, 0, 0, 3, false, 0).unwrap();
    assert_eq!(
        first,
        AppendOutcome::Appended {
            base_offset: 0,
            last_offset: 2,
            log_start_offset: 0
        }
    );
    assert_eq!(
        dup,
        AppendOutcome::Duplicate {
            base_offset: 0,
            last_offset: 2,
            log_start_offset: 4
        }
    );
    assert_eq!((p.entries().len(), p.high_watermark()), (2, 5));
    // The same range at a newer epoch is not a duplicate.
    assert!(!produce_n(&mut p, 1, 0, 3, false, 0).unwrap().is_duplicate());
}

/// A new leader restored from a snapshot keeps only the newest batch per
/// producer; a replicated follower keeps all five.
#[test]
fn snapshot_restore_keeps_only_the_last_batch() {
    let mut old = PartitionState::new();
    for seq in 0..3 {
        produce(&mut old, 0, seq).unwrap();
    }
    assert_eq!(
        old.snapshot_producer_state(true)
            .get(PID)
            .unwrap()
            .batches()
            .len(),
        3
    );
    assert_eq!(
        old.snapshot_producer_state(false)
            .get(PID)
            .unwrap()
            .batches()
            .len(),
        1
    );

    let mut restored = PartitionState::new();
    restored.transfer_from(&old, StateTransfer::SnapshotRestore);
    assert_eq!(restored.entries(), old.entries());
    assert!(produce(&mut restored, 0, 2).unwrap().is_duplicate());
    assert_eq!(
        code(produce(&mut restored, 0, 1)),
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert!(produce(&mut restored, 0, 3).is_ok());

    let mut follower = PartitionState::new();
    follower.transfer_from(&old, StateTransfer::Replicated);
    assert_eq!(follower.producers(), old.producers());
    assert!(produce(&mut follower, 0, 1).unwrap().is_duplicate());
}

/// read_committed hides aborted transactions and stops at the first open
/// transaction; read_uncommitted sees all data.
#[test]
fn read_committed_hides_aborted_records() {
    let mut p = PartitionState::new();
    let other = |p: &mut PartitionState, seq: i32, txn: bool| {
        p.append(&encode(&tbatch(9, 0, seq, 1, txn)), 0)
    };
    produce_txn(&mut p, 0, 0).unwrap(); // 0: pid 1 txn A
    other(&mut p, 0, false).unwrap(); // 1: pid 9 plain
    p.append_marker(&marker(0, 0, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap(); // 2
    produce_txn(&mut p, 0, 1).unwrap(); // 3: pid 1 txn B
    p.append_marker(&marker(0, 0, MarkerKind::Abort, TransactionVersion::V1), 0)
        .unwrap(); // 4
    other(&mut p, 1, true).unwrap(); // 5: pid 9 txn, still open
    produce(&mut p, 0, 2).unwrap(); // 6: pid 1 plain, above the LSO
    assert_eq!(p.last_stable_offset(), 5);
    assert_eq!(p.log().aborted_transactions().len(), 1);
    let committed: Vec<i64> = p.read_committed().iter().map(|r| r.offset).collect();
    assert_eq!(committed, vec![0, 1]);
    let all: Vec<i64> = p.read_uncommitted().iter().map(|r| r.offset).collect();
    assert_eq!(all, vec![0, 1, 3, 5, 6]);
    assert!(matches!(p.entries()[4], LogEntry::Marker(m) if m.kind == MarkerKind::Abort));
    let m9 = TxnMarker {
        producer_id: 9,
        ..marker(0, 0, MarkerKind::Commit, TransactionVersion::V1)
    };
    p.append_marker(&m9, 0).unwrap();
    let committed: Vec<i64> = p.read_committed().iter().map(|r| r.offset).collect();
    assert_eq!(committed, vec![0, 1, 5, 6]);
}

/// A TV1 commit keeps the sequence history: the next transaction continues.
#[test]
fn tv1_commit_keeps_sequence_history() {
    let mut p = PartitionState::new();
    produce_txn(&mut p, 0, 0).unwrap();
    produce_txn(&mut p, 0, 1).unwrap();
    p.append_marker(&marker(0, 0, MarkerKind::Commit, TransactionVersion::V1), 0)
        .unwrap();
    assert_eq!(entry(&p).last_seq(), 1);
    assert_eq!(
        code(produce_txn(&mut p, 0, 5)),
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert!(produce_txn(&mut p, 0, 1).unwrap().is_duplicate());
    assert!(produce_txn(&mut p, 0, 2).is_ok());
    assert_eq!(entry(&p).current_txn_first_offset(), Some(3));
}

/// Moving the log start offset keeps producer state (KAFKA-7190), and every
/// response carries the log start offset.
#[test]
fn log_start_offset_keeps_producer_state() {
    let mut p = PartitionState::new();
    produce(&mut p, 0, 0).unwrap();
    produce(&mut p, 0, 1).unwrap();
    assert_eq!(p.advance_log_start_offset(100), 2); // clamped to the high watermark
    assert_eq!(p.advance_log_start_offset(1), 2); // never backwards
    assert!(p.read_uncommitted().is_empty());
    assert_eq!(p.records().count(), 2);
    assert_eq!(produce(&mut p, 0, 2).unwrap().log_start_offset(), 2);
    assert_eq!(produce(&mut p, 0, 9).unwrap_err().log_start_offset, 2);
}

/// Non-idempotent batches are appended without any check.
#[test]
fn non_idempotent_batches_are_not_checked() {
    let mut p = PartitionState::new();
    let b = encode(&tbatch(-1, -1, -1, 2, false));
    assert!(!p.append(&b, 0).unwrap().is_duplicate());
    assert!(!p.append(&b, 0).unwrap().is_duplicate());
    assert!(p.producers().is_empty());
    assert_eq!(
        p.records().map(|r| r.sequence).collect::<Vec<_>>(),
        vec![-1; 4]
    );
}

/// Request-level validation: bad sequence, control batch, CRC, counts,
/// compression, framing.
#[test]
fn invalid_batches_are_rejected() {
    let mut p = PartitionState::new();
    let mut b = tbatch(PID, 0, -1, 1, false);
    assert_eq!(code(p.append(&encode(&b), 0)), INVALID_RECORD);
    b.base_seq = 0;
    b.attributes = 0x20;
    assert_eq!(code(p.append(&encode(&b), 0)), INVALID_RECORD);
    b.attributes = 0x01;
    assert_eq!(code(p.append(&encode(&b), 0)), UNSUPPORTED_COMPRESSION_TYPE);
    b.attributes = 0;
    b.last_offset_delta = Some(3);
    assert_eq!(code(p.append(&encode(&b), 0)), INVALID_RECORD);
    assert_eq!(
        code(p.append(&encode(&tbatch(PID, 0, 0, 0, false)), 0)),
        INVALID_RECORD
    );
    let mut bytes = encode(&tbatch(PID, 0, 0, 1, false));
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    assert_eq!(code(p.append(&bytes, 0)), CORRUPT_MESSAGE);
    let mut two = encode(&tbatch(PID, 0, 0, 1, false));
    two.extend(encode(&tbatch(PID, 0, 1, 1, false)));
    assert_eq!(code(p.append(&two, 0)), CORRUPT_MESSAGE);
    assert_eq!(p.high_watermark(), 0);
    assert!(p.producers().is_empty());
}

// ---------------------------------------------------------------- batch reader

/// The reader returns what the independent encoder wrote: nulls, keys, headers.
#[test]
fn batch_reader_round_trip() {
    let mut b = tbatch(42, 3, i32::MAX - 1, 0, true);
    b.records = vec![
        TRecord {
            key: Some(b"k".to_vec()),
            value: None,
            headers: vec![(b"h".to_vec(), None), (b"i".to_vec(), Some(vec![1, 2]))],
        },
        TRecord {
            key: None,
            value: Some(vec![0; 300]),
            headers: vec![],
        },
        TRecord {
            key: Some(vec![]),
            value: Some(vec![]),
            headers: vec![],
        },
    ];
    let bytes = encode(&b);
    let d = batch::decode(&bytes).unwrap();
    let h = d.header;
    assert_eq!(
        (
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.record_count
        ),
        (42, 3, i32::MAX - 1, 3)
    );
    assert!(h.is_transactional() && !h.is_control());
    assert_eq!(h.last_sequence(), 0);
    assert_eq!(batch::decode_header(&bytes).unwrap(), h);
    assert_eq!(d.records.len(), 3);
    assert_eq!(d.records[0].key.as_deref(), Some(&b"k"[..]));
    assert_eq!(d.records[0].value, None);
    assert_eq!(
        d.records[0].headers[1].value.as_deref(),
        Some(&[1u8, 2][..])
    );
    assert_eq!(d.records[1].value.as_ref().map(|v| v.len()), Some(300));
    assert_eq!(d.records[2].key.as_deref(), Some(&[][..]));
    assert_eq!(d.records[2].offset_delta, 2);
}

/// Kafka's sequence arithmetic wraps past `i32::MAX` to 0.
#[test]
fn sequence_arithmetic_wraps_to_zero() {
    assert_eq!(batch::increment_sequence(i32::MAX, 1), 0);
    assert_eq!(batch::increment_sequence(i32::MAX - 10, 19), 8);
    assert_eq!(batch::increment_sequence(5, 3), 8);
    assert_eq!(batch::decrement_sequence(0, 1), i32::MAX);
    assert_eq!(batch::decrement_sequence(8, 19), i32::MAX - 10);
    assert!(in_sequence(i32::MAX, 0) && in_sequence(-1, 0) && !in_sequence(i32::MAX, 1));
}

/// Framing errors map to CORRUPT_MESSAGE, structural ones to INVALID_RECORD.
#[test]
fn batch_reader_error_codes() {
    let good = encode(&tbatch(1, 0, 0, 2, false));
    assert_eq!(
        batch::decode(&good[..30]).unwrap_err(),
        BatchError::Truncated
    );
    assert_eq!(
        batch::decode(&good[..good.len() - 1]).unwrap_err().code(),
        CORRUPT_MESSAGE
    );
    let mut magic = good.clone();
    magic[16] = 1;
    assert_eq!(batch::decode(&magic).unwrap_err(), BatchError::BadMagic(1));
    // A record body one byte short of its declared length, CRC fixed up.
    let mut short = good.clone();
    short[61] = short[61].wrapping_add(2); // record length varint +1
    reseal(&mut short);
    assert_eq!(batch::decode(&short).unwrap_err().code(), INVALID_RECORD);
    let mut count = good.clone();
    count[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    reseal(&mut count);
    assert_eq!(batch::decode(&count).unwrap_err().code(), INVALID_RECORD);
}

proptest! {
    /// Arbitrary bytes never panic the reader or the broker.
    #[test]
    fn reader_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = batch::decode(&bytes);
        let _ = PartitionState::new().append(&bytes, 0);
    }

    /// Corrupting a valid batch's records (with a correct CRC and length, so
    /// the record parser runs) never panics, and a successful decode has the
    /// announced record count.
    #[test]
    fn reader_never_panics_on_resealed_corruption(
        n in 0usize..4,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
        extra in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let mut bytes = encode(&tbatch(1, 0, 0, n, false));
        for (at, v) in edits {
            let i = 57 + at % (bytes.len() - 57);
            bytes[i] = v;
        }
        let keep = 61 + cut % (bytes.len() - 60);
        bytes.truncate(keep);
        bytes.extend(extra);
        reseal(&mut bytes);
        if let Ok(d) = batch::decode(&bytes) {
            prop_assert_eq!(d.records.len() as i32, d.header.record_count);
        }
        let _ = PartitionState::new().append(&bytes, 0);
    }
}
