//! INVALID_PRODUCER_ID_MAPPING from the transaction coordinator is fatal (KAFKA-18019,
//! Kafka 4.0: `TransactionManager`'s AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
//! handlers no longer take it as abortable). The coordinator has forgotten the
//! transactional id (`transactional.id.expiration.ms`); recovering with a new epoch could
//! let a fenced instance process input its successor already processed, and duplicate it.

mod support;

use kacrab_idempotence::*;
use support::*;

fn in_txn_v1() -> Harness {
    let mut cfg = config();
    cfg.transactional_id("tx-1");
    let mut h = Harness::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
    h.p.handle_transaction_version(1);
    h.p.init_transactions().unwrap();
    let Request::InitProducerId(r) = h.next_txn() else {
        panic!("InitProducerId expected")
    };
    h.p.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(7, 0)), h.now)
        .unwrap();
    h.pump();
    h.events.clear();
    h.p.begin_transaction().unwrap();
    h
}

const FATAL: TxnError = TxnError::Fatal(KafkaError::InvalidProducerIdMapping);

fn assert_fatal(h: &Harness) {
    assert_eq!(h.p.transaction_state(), Some(TransactionState::FatalError));
}

/// AddPartitionsToTxn answered INVALID_PRODUCER_ID_MAPPING: fatal, and the commit is
/// refused with it.
#[test]
fn invalid_producer_id_mapping_in_add_partitions_is_fatal() {
    let mut h = in_txn_v1();
    h.send(0, "a");
    let Request::AddPartitionsToTxn(a) = h.next_txn() else {
        panic!("AddPartitionsToTxn")
    };
    h.p.handle_add_partitions(
        a.id,
        &[(tp(0), KafkaError::InvalidProducerIdMapping)],
        h.now,
    )
    .unwrap();
    h.pump();
    assert_fatal(&h);
    assert_eq!(h.p.commit_transaction(), Err(FATAL));
}

/// AddOffsetsToTxn answered INVALID_PRODUCER_ID_MAPPING: the offsets fail fatally.
#[test]
fn invalid_producer_id_mapping_in_add_offsets_is_fatal() {
    let mut h = in_txn_v1();
    let offsets = vec![OffsetToCommit::new(TopicPartition::new("in", 0), 3)];
    let group = ConsumerGroupMetadata::new("g").with_member(1, "m");
    h.p.send_offsets_to_transaction(offsets, group).unwrap();
    let Request::AddOffsetsToTxn(a) = h.next_txn() else {
        panic!("AddOffsetsToTxn")
    };
    h.p.handle_add_offsets(a.id, KafkaError::InvalidProducerIdMapping, h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.completed(TxnOp::SendOffsets), Some(Err(FATAL)));
    assert_fatal(&h);
}

/// EndTxn(COMMIT) answered INVALID_PRODUCER_ID_MAPPING: the commit fails fatally.
#[test]
fn invalid_producer_id_mapping_in_end_txn_is_fatal() {
    let mut h = in_txn_v1();
    h.send(0, "a");
    let Request::AddPartitionsToTxn(a) = h.next_txn() else {
        panic!("AddPartitionsToTxn")
    };
    h.p.handle_add_partitions(a.id, &[(tp(0), KafkaError::None)], h.now)
        .unwrap();
    h.pump();
    let r = h.outstanding.front().expect("the record goes out").id;
    h.respond(r, &[(0, KafkaError::None, 0)]);
    h.p.commit_transaction().unwrap();
    let Request::EndTxn(e) = h.next_txn() else {
        panic!("EndTxn")
    };
    h.p.handle_end_txn(e.id, Err(KafkaError::InvalidProducerIdMapping), h.now)
        .unwrap();
    h.pump();
    assert_eq!(h.completed(TxnOp::Commit), Some(Err(FATAL)));
    assert_fatal(&h);
}
