//! Attacks on the idempotent core's expiry and buffer accounting: scenarios read against Kafka's
//! broker and Java client rules, each a test that failed on the core it was written
//! against or pins a rule the attack checked.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

/// A batch resent after a lost attempt goes on the wire behind a later batch of the same
/// partition that is still out. `delivery.timeout.ms` counts from the resent batch's
/// creation, which is earlier: the producer must wake up for it then (Java's
/// `RecordAccumulator.expiredBatches`/`Sender.getExpiredInflightBatches` look at every
/// in-flight batch), not only when the later batch's request times out.
#[test]
fn a_resent_batch_behind_a_later_one_wakes_the_producer_at_its_delivery_timeout() {
    let mut h = Harness::new(
        config()
            .request_timeout(Duration::from_millis(10_000))
            .delivery_timeout(Duration::from_millis(15_000))
            .build()
            .unwrap(),
    );
    h.warm(0);
    let a = h.send(0, "a");
    let req_a = h.outstanding.back().unwrap().id;
    h.advance(5_500);
    let b = h.send(0, "b");
    assert_eq!(h.outstanding.len(), 2, "b is pipelined behind a");
    // a's attempt is lost; it is resent after the backoff while b is still out.
    h.advance(500);
    h.fail(req_a, RequestFailure::Disconnected);
    let resent = h.advance(50);
    assert_eq!(resent.len(), 1, "a is resent");
    assert_eq!(wire(&resent[0])[0].base_sequence, 1);
    // a was created at 0: its delivery timeout is at 15 s.
    let deadline = Timestamp::ZERO + Duration::from_millis(15_000);
    let wake = h.p.poll_timeout().expect("something waits");
    assert!(
        wake <= deadline,
        "the producer sleeps until {wake:?}, past a's delivery timeout at {deadline:?}"
    );
    h.advance(15_000 - 6_050);
    assert!(h.failed(a).is_some(), "a is failed at its delivery timeout");
    assert!(h.failed(b).is_none() && h.delivered(b).is_none());
}

/// `buffer.memory` accounting: a record is charged its estimated size when it is
/// accepted (the deltas at their longest encodings) and the batch's encoded size is
/// released when it is reported. Both must cover the same bytes, or the difference
/// leaks with every batch of many records, until the producer refuses every send with
/// BUFFER_FULL although nothing is buffered (Java's `BufferPool` frees exactly what the
/// batch allocated).
#[test]
fn buffer_memory_is_released_in_full_once_every_record_has_an_outcome() {
    let mut h = Harness::new(
        config()
            .buffer_memory(64 * 1024)
            .batch_size(16 * 1024)
            .build()
            .unwrap(),
    );
    let mut offset = 0i64;
    for round in 0..40 {
        let mut sent = 0;
        for i in 0..200 {
            match h.p.send(&tp(0), &record(&format!("r{i}")), h.now) {
                Ok(_) => sent += 1,
                Err(e) => panic!(
                    "round {round}: send {i} refused with {e:?} while {} records are unreported",
                    h.p.unreported_records()
                ),
            }
        }
        h.pump();
        let r = h.outstanding.front().expect("a batch is out").id;
        h.respond(r, &[(0, KafkaError::None, offset)]);
        offset += sent;
        assert!(h.p.is_idle(), "round {round}: every record has an outcome");
    }
}
