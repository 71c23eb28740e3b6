//! An idempotent producer's batch that fails with OUT_OF_ORDER_SEQUENCE_NUMBER bumps the
//! partition's epoch.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

/// Java's `TransactionManager.handleFailedBatch`: a non-transactional batch failed with
/// an `OutOfOrderSequenceException` means a gap in the log, so the partition's epoch is
/// bumped (`requestIdempotentEpochBumpForPartition`, KIP-360) and its sequences restart
/// at 0. That holds even when a later batch is acknowledged before the bump happens:
/// the next batch goes under the new epoch from sequence 0, not on from the old run.
///
/// The leader's producer state is not surely held here (`kacrab.producer.id.expiration.ms`
/// runs out within a batch's lifetime once 2 s pass), so no probe of the later batch can
/// settle the refused one: it fails as possibly written.
#[test]
fn an_out_of_order_failure_bumps_the_epoch_even_after_a_later_ack() {
    let mut cfg = config();
    cfg.producer_id_expiration(Duration::from_millis(21_000));
    let mut h = Harness::new(cfg.build().unwrap());
    h.warm(0);
    let a = h.send(0, "a");
    let b = h.send(0, "b");
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    assert_eq!(sent.len(), 2, "a and b pipelined");
    // a's answer is lost; b's attempt is still out.
    h.fail(sent[0].id, RequestFailure::Disconnected);
    h.advance(2000);
    let retry = h
        .outstanding
        .iter()
        .find(|r| r.id != sent[1].id)
        .expect("a resent")
        .clone();
    assert_eq!(wire(&retry)[0].base_sequence, 1);
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert!(
        matches!(
            h.failed(a),
            Some(DeliveryError::Broker {
                error: KafkaError::OutOfOrderSequenceNumber,
                ..
            })
        ),
        "{:?}",
        h.events
    );
    assert_eq!(h.possibly_written(a), Some(true));
    h.respond(sent[1].id, &[(0, KafkaError::None, 2)]);
    assert_eq!(h.delivered(b), Some(Some(2)));

    let c = h.send(0, "c");
    h.advance(100);
    let r = h.outstanding.front().expect("c sent").clone();
    let w = wire(&r);
    assert_eq!(
        (w[0].producer_id, w[0].epoch, w[0].base_sequence),
        (343434, 1, 0),
        "the next batch goes under the bumped epoch from sequence 0"
    );
    h.respond(r.id, &[(0, KafkaError::None, 3)]);
    assert_eq!(h.delivered(c), Some(Some(3)));
    // The bump kept the producer id: the counters tell an epoch change from a new id.
    let stats = h.p.stats();
    assert_eq!(
        (stats.epoch_changes, stats.producer_id_changes),
        (1, 1),
        "one id (the first), one epoch change"
    );
}
