//! The three correctness defects found in kacrab 0.4, the client this core replaces,
//! each as a regression test against the core: a multi-broker dispatch that released
//! its ordering turn too early, a sequence reused after a batch that may have been
//! appended, and a whole request retried for one partition's error. The simulator's
//! `sim_regressions` tests replay the same defects against model brokers.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

/// Defect 2: sequence reuse after an "apparently definitive" error. The first attempt
/// was appended (NOT_ENOUGH_REPLICAS_AFTER_APPEND), the retries were rejected
/// (NOT_ENOUGH_REPLICAS) until the delivery timeout. The record is reported failed but
/// possibly written, and the next record must not be stamped with the same
/// (producer id, epoch, sequence): a broker would take it for a duplicate of the first
/// and acknowledge it without writing it.
#[test]
fn no_sequence_reuse_after_maybe_appended_batch_times_out() {
    let mut h = Harness::new(
        config()
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Duration::from_millis(1000))
            .build()
            .unwrap(),
    );
    let a = h.send(0, "a");
    let first = wire(h.outstanding.front().unwrap())[0].clone();
    h.respond_oldest(0, 0, KafkaError::NotEnoughReplicasAfterAppend, -1);
    while h.outcomes(a) == 0 {
        h.advance(60);
        if let Some(r) = h.outstanding.front().cloned() {
            h.respond(r.id, &[(0, KafkaError::NotEnoughReplicas, -1)]);
        }
    }
    let failed = h.events.iter().find_map(|e| match e {
        Event::Failed {
            records,
            possibly_written,
            ..
        } if records.contains(&a) => Some(*possibly_written),
        _ => None,
    });
    assert_eq!(
        failed,
        Some(true),
        "the record may be in the log and must say so"
    );
    h.advance(60);
    h.send(0, "x");
    let x = wire(h.outstanding.back().expect("x is sent"))[0].clone();
    assert!(
        !(x.producer_id == first.producer_id
            && x.epoch == first.epoch
            && x.base_sequence == first.base_sequence),
        "x reuses a's (producer id, epoch, sequence): {x:?}"
    );
    assert_eq!(
        (x.epoch, x.base_sequence),
        (1, 0),
        "a new epoch makes sequence 0 safe again"
    );
}

/// Defect 3: group-level retry. One request carries p0 and p1; the broker appends p0 and
/// answers NOT_LEADER_OR_FOLLOWER for p1. Only p1 may be sent again; p0's record is
/// delivered exactly once and never re-sent.
#[test]
fn one_partition_error_never_resends_an_acknowledged_partition() {
    for idempotence in [true, false] {
        let mut h = Harness::new(config().enable_idempotence(idempotence).build().unwrap());
        h.p.flush();
        let a = h.p.send(&tp(0), &record("a"), h.now).unwrap();
        let b = h.p.send(&tp(1), &record("b"), h.now).unwrap();
        let sent = h.pump();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].batches.len(), 2, "both partitions in one request");
        h.respond(
            sent[0].id,
            &[
                (0, KafkaError::None, 0),
                (1, KafkaError::NotLeaderOrFollower, -1),
            ],
        );
        assert_eq!(h.delivered(a), Some(Some(0)));
        let mut resent = Vec::new();
        for _ in 0..3 {
            resent.extend(h.advance(100));
        }
        let partitions: Vec<i32> = resent
            .iter()
            .flat_map(|r| r.batches.iter().map(|b| b.partition.partition))
            .collect();
        assert_eq!(
            partitions,
            vec![1],
            "only p1 is retried (idempotence {idempotence})"
        );
        h.respond(resent[0].id, &[(1, KafkaError::None, 0)]);
        assert_eq!((h.outcomes(a), h.outcomes(b)), (1, 1));
    }
}

/// Defect 1: the enqueue turn was released after the first broker of a multi-broker
/// dispatch, so a later dispatch could put a higher sequence for a partition on the
/// wire first. In the core every produce request targets one node and carries a ticket
/// in drain order; for one partition, tickets and sequences rise together even when its
/// leader moves between requests.
#[test]
fn tickets_follow_sequence_order_across_brokers() {
    let mut h = Harness::new(config().build().unwrap());
    h.leaders = vec![(0, 7, 0), (1, 8, 0)];
    h.p.handle_metadata(
        None,
        &Metadata::new(vec![
            PartitionMetadata::new(tp(0), Some(NodeId(7)), 0),
            PartitionMetadata::new(tp(1), Some(NodeId(8)), 0),
        ]),
        h.now,
    )
    .unwrap();
    h.warm(1); // pipelining starts after a partition's first ack
    h.send(0, "a");
    h.send(1, "b");
    // p1 moves to broker 7 before c is sent.
    h.p.handle_metadata(
        None,
        &Metadata::new(vec![PartitionMetadata::new(tp(1), Some(NodeId(7)), 1)]),
        h.now,
    )
    .unwrap();
    h.send(1, "c");
    let p1: Vec<(u64, i32, NodeId)> = h
        .outstanding
        .iter()
        .flat_map(|r| {
            wire(r)
                .into_iter()
                .filter(|w| w.partition == 1)
                .map(move |w| (r.ticket.seq, w.base_sequence, r.node))
        })
        .collect();
    assert_eq!(p1.len(), 2);
    assert!(
        p1[0].0 < p1[1].0 && p1[0].1 < p1[1].1,
        "tickets and sequences rise together: {p1:?}"
    );
    assert_ne!(p1[0].2, p1[1].2, "the two requests go to different brokers");
    // A driver that honours the tickets enqueues b (broker 8) before c (broker 7).
    let mut gate = ticket::TicketSequencer::new();
    let (tb, tc) = (
        h.outstanding
            .iter()
            .find(|r| r.node == NodeId(8))
            .unwrap()
            .ticket,
        h.outstanding
            .iter()
            .rev()
            .find(|r| r.node == NodeId(7))
            .unwrap()
            .ticket,
    );
    // Every earlier request (warm-up, a) was enqueued in its turn.
    for seq in 0..tb.seq {
        gate.enqueued(ticket::Ticket { seq, parts: 1 });
    }
    assert!(!gate.may_enqueue(tc), "c must wait for b");
    gate.enqueued(tb);
    assert!(gate.may_enqueue(tc));
}
