//! Admission of sends in the core: the size limits a record must keep (Java's
//! `KafkaProducer.ensureValidRecordSize`), and a send refused inside a transaction,
//! which makes the transaction abortable exactly when Java's `KafkaProducer.doSend`
//! hands the refusal to `TransactionManager.maybeTransitionToErrorState` (an
//! `ApiException`).

mod support;

use bytes::{Bytes, BytesMut};
use kacrab_idempotence::record::{BatchBuilder, Record};
use kacrab_idempotence::*;
use support::*;

const PID: i64 = 4242;

fn big(len: usize) -> Record {
    Record {
        key: None,
        value: Some(Bytes::from(vec![7; len])),
        headers: vec![],
        timestamp: 0,
    }
}

fn batch_of(record: &Record) -> BytesMut {
    let mut b = BatchBuilder::new(Compression::None, 1024);
    b.append(record);
    b.finish()
}

/// A transactional producer with `max.request.size` and `buffer.memory` as given, its
/// transaction open.
fn in_transaction(max_request_size: usize, buffer_memory: usize) -> Harness {
    let mut cfg = config();
    cfg.transactional_id("tx-1")
        .max_request_size(max_request_size)
        .buffer_memory(buffer_memory);
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(2);
    h.p.init_transactions().unwrap();
    h.pump();
    let Some(Request::InitProducerId(r)) = h.txn_requests.pop_front() else {
        panic!("InitProducerId expected")
    };
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(PID, 0)), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    h.p.begin_transaction().unwrap();
    h
}

fn commit_refused_with(h: &mut Harness) -> Option<KafkaError> {
    match h.p.commit_transaction() {
        Err(TxnError::Abortable(e)) => Some(e),
        Ok(()) => None,
        Err(e) => panic!("commit refused otherwise: {e:?}"),
    }
}

/// A record larger than all of `buffer.memory` is refused as too large even when
/// nothing is buffered: it could never be buffered. Java's
/// `KafkaProducer.ensureValidRecordSize` throws `RecordTooLargeException` for a record
/// over `max.request.size` or over `buffer.memory`.
#[test]
fn a_record_larger_than_buffer_memory_is_refused_even_with_nothing_buffered() {
    let mut cfg = config();
    cfg.buffer_memory(1_000);
    let mut h = Harness::new(cfg.build().unwrap());
    let refused = h.p.send(&tp(0), &big(2_000), h.now);
    let Err(error @ SendError::RecordTooLarge { size, .. }) = refused else {
        panic!("accepted or refused otherwise: {refused:?}")
    };
    assert!(size > 2_000, "{size}");
    assert!(error.to_string().contains("buffer.memory"), "{error}");
    assert!(matches!(
        error,
        SendError::RecordTooLarge {
            max: 1_000,
            limit: RecordSizeLimit::BufferMemory,
            ..
        }
    ));
    assert_eq!(h.p.unreported_records(), 0);
    // A handed batch too.
    let refused = h.p.send_batch(&tp(0), batch_of(&big(2_000)), h.now);
    assert!(
        matches!(
            refused,
            Err(SendError::RecordTooLarge {
                limit: RecordSizeLimit::BufferMemory,
                ..
            })
        ),
        "{refused:?}"
    );
    // One that fits alone is taken into the empty buffer, as before.
    h.p.send(&tp(0), &big(800), h.now).expect("fits alone");
}

/// A record refused as larger than `max.request.size` inside a transaction makes the
/// transaction abortable: Java's `KafkaProducer.doSend` passes the
/// `RecordTooLargeException` (an `ApiException`) to
/// `TransactionManager.maybeTransitionToErrorState`. The commit is refused, and the
/// abort ends the transaction.
#[test]
fn a_record_too_large_inside_a_transaction_makes_it_abortable() {
    let mut h = in_transaction(1_000, 1 << 20);
    h.send(0, "kept");
    let refused = h.p.send(&tp(0), &big(2_000), h.now);
    assert!(
        matches!(refused, Err(SendError::RecordTooLarge { .. })),
        "{refused:?}"
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    assert_eq!(
        commit_refused_with(&mut h),
        Some(KafkaError::MessageTooLarge)
    );
    h.p.abort_transaction().unwrap();
}

/// The same for a record larger than `buffer.memory` (the second check of Java's
/// `ensureValidRecordSize`, the same exception).
#[test]
fn a_record_larger_than_buffer_memory_inside_a_transaction_makes_it_abortable() {
    let mut h = in_transaction(1 << 20, 1_000);
    let refused = h.p.send(&tp(0), &big(2_000), h.now);
    assert!(
        matches!(refused, Err(SendError::RecordTooLarge { .. })),
        "{refused:?}"
    );
    assert_eq!(
        commit_refused_with(&mut h),
        Some(KafkaError::MessageTooLarge)
    );
}

/// A handed batch refused as too large inside a transaction makes it abortable, as a
/// record does.
#[test]
fn a_handed_batch_too_large_inside_a_transaction_makes_it_abortable() {
    let mut h = in_transaction(1_000, 1 << 20);
    let refused = h.p.send_batch(&tp(0), batch_of(&big(2_000)), h.now);
    assert!(
        matches!(refused, Err(SendError::RecordTooLarge { .. })),
        "{refused:?}"
    );
    assert_eq!(
        commit_refused_with(&mut h),
        Some(KafkaError::MessageTooLarge)
    );
}

/// The refusals Java's `KafkaProducer.doSend` rethrows without touching the
/// transaction leave it open and committable: a negative partition
/// (`IllegalArgumentException` from `ProducerRecord`) and a malformed handed batch (the
/// caller's error, like a malformed record). See `SendError::transaction_abort_cause`.
#[test]
fn a_callers_error_leaves_the_transaction_committable() {
    let mut h = in_transaction(1 << 20, 1 << 20);
    h.send(0, "kept");
    assert_eq!(
        h.p.send(&tp(-1), &record("x"), h.now),
        Err(SendError::InvalidPartition(-1))
    );
    let refused =
        h.p.send_batch(&tp(0), BytesMut::from(&[0u8; 70][..]), h.now);
    assert!(
        matches!(refused, Err(SendError::InvalidBatch(_))),
        "{refused:?}"
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::InTransaction)
    );
    assert_eq!(commit_refused_with(&mut h), None);
}

/// `BufferFull` from the core is not a final refusal (the caller may wait and retry, as
/// the session does for `max.block.ms`): the transaction stays open. Giving up is
/// reported with `send_refused` (Java's `BufferExhaustedException`, a
/// `TimeoutException`), which makes it abortable.
#[test]
fn a_full_buffer_makes_the_transaction_abortable_only_when_given_up() {
    let mut h = in_transaction(1 << 20, 300);
    h.p.send(&tp(0), &big(200), h.now).expect("fits alone");
    let refused = h.p.send(&tp(0), &big(200), h.now);
    assert!(
        matches!(refused, Err(SendError::BufferFull { .. })),
        "{refused:?}"
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::InTransaction)
    );
    h.p.send_refused(KafkaError::RequestTimedOut);
    assert_eq!(
        commit_refused_with(&mut h),
        Some(KafkaError::RequestTimedOut)
    );
}

/// With no transaction open a refusal changes nothing (Java's transition from `READY`
/// is invalid: the send fails and the state stays), and a second report while the
/// transaction is already abortable keeps the first cause.
#[test]
fn a_refusal_outside_an_open_transaction_changes_nothing() {
    let mut h = in_transaction(1_000, 1 << 20);
    h.p.abort_transaction().unwrap();
    h.pump();
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    let refused = h.p.send(&tp(0), &big(2_000), h.now);
    assert!(
        matches!(refused, Err(SendError::RecordTooLarge { .. })),
        "{refused:?}"
    );
    h.p.send_refused(KafkaError::RequestTimedOut);
    assert_eq!(h.p.transaction_state(), Some(TransactionState::Ready));
    h.p.begin_transaction().unwrap();
    let _ = h.p.send(&tp(0), &big(2_000), h.now);
    h.p.send_refused(KafkaError::RequestTimedOut);
    assert_eq!(
        commit_refused_with(&mut h),
        Some(KafkaError::MessageTooLarge)
    );
}

/// A record refused as too large while the commit runs fails the commit: Java's
/// `transitionToAbortableError` is valid from `COMMITTING_TRANSACTION`, and
/// `ensureValidRecordSize` runs before `maybeAddPartition` could refuse the send for the
/// state. Mirrored as it is (see "A send refused inside a transaction" in
/// `docs/design.md`).
#[test]
fn a_record_too_large_while_committing_fails_the_commit() {
    let mut h = in_transaction(1_000, 1 << 20);
    h.send(0, "kept");
    h.p.commit_transaction().unwrap();
    h.pump();
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::CommittingTransaction)
    );
    let refused = h.p.send(&tp(0), &big(2_000), h.now);
    assert!(
        matches!(refused, Err(SendError::RecordTooLarge { .. })),
        "{refused:?}"
    );
    h.pump();
    let commit = h.events.iter().find_map(|e| match e {
        Event::TransactionCompleted {
            op: TxnOp::Commit,
            result,
        } => Some(result.clone()),
        _ => None,
    });
    assert_eq!(
        commit,
        Some(Err(TxnError::Abortable(KafkaError::MessageTooLarge)))
    );
    assert_eq!(
        h.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
}
