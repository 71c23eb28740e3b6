//! The sequences of a batch split on MESSAGE_TOO_LARGE.
//!
//! Java's `ProducerBatch.split` gives the pieces of a sequenced batch the parent's
//! producer id and epoch and consecutive base sequences from the parent's, each piece
//! advancing by its own record count (`sequence += newBatch.recordCount`), and
//! `Sender.completeBatch` re-enqueues them in the parent's place
//! (`RecordAccumulator.splitAndReenqueue`). The port of `SenderTest.
//! testIdempotentSplitBatchAndSend` (`tests/sender_test.rs`) splits a two-record batch,
//! whose one-record pieces cannot tell "by record count" from "by one"; this splits
//! larger batches.

mod support;

use kacrab_idempotence::*;
use support::*;

/// A batch of `n` records refused as too large is split; the pieces, sent and
/// acknowledged one after another, carry gap-free, non-overlapping sequences covering
/// exactly `0..n`, and every record is delivered once, at the offset of its sequence.
fn split_pieces_cover_the_parent_sequences(n: usize) {
    let mut h = Harness::new(config().build().unwrap());
    let records: Vec<RecordId> = (0..n)
        .map(|_| h.p.send(&tp(0), &record("aaaaaaaa"), h.now).unwrap())
        .collect();
    h.p.flush();
    h.pump();
    let first = wire(h.outstanding.front().expect("the batch is sent"));
    assert_eq!(
        (first.len(), first[0].base_sequence, first[0].count),
        (1, 0, n as i32),
        "one batch of every record"
    );
    h.respond_oldest(0, 0, KafkaError::MessageTooLarge, -1);
    assert_eq!(h.p.stats().splits, 1);
    let mut next = 0i32;
    let mut counts: Vec<i32> = Vec::new();
    while let Some(r) = h.outstanding.front().cloned() {
        let pieces = wire(&r);
        let answers: Vec<(i32, KafkaError, i64)> = pieces
            .iter()
            .map(|w| {
                assert_eq!(
                    w.base_sequence, next,
                    "a piece starts where the previous one ended: {pieces:?}"
                );
                counts.push(w.count);
                let offset = i64::from(w.base_sequence);
                next += w.count;
                (w.partition, KafkaError::None, offset)
            })
            .collect();
        h.respond(r.id, &answers);
    }
    assert_eq!(next, n as i32, "the pieces cover the parent's sequences");
    // Several pieces, some of several records: one-record pieces cannot tell a piece's
    // record count from one.
    assert!(
        counts.len() > 1 && counts.iter().any(|&c| c > 1),
        "pieces {counts:?}"
    );
    assert_eq!(h.state(0).next_sequence, Sequence(n as i32));
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(n as i32 - 1)));
    for (i, &id) in records.iter().enumerate() {
        assert_eq!(h.outcomes(id), 1, "record {i}: one outcome");
        assert_eq!(h.delivered(id), Some(Some(i as i64)), "record {i}");
    }
}

// Halving is by bytes, and a piece repeats the 61-byte batch header: with these
// records, nine make pieces of two records and sixteen pieces of four or five.

#[test]
fn a_split_nine_record_batch_keeps_its_sequences_gap_free() {
    split_pieces_cover_the_parent_sequences(9);
}

#[test]
fn a_split_sixteen_record_batch_keeps_its_sequences_gap_free() {
    split_pieces_cover_the_parent_sequences(16);
}
