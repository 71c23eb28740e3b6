//! Red-team attacks on the idempotent core (helper r1): scenarios read against Kafka's
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
    assert!(
        h.failed(a).is_some(),
        "a is failed at its delivery timeout"
    );
    assert!(h.failed(b).is_none() && h.delivered(b).is_none());
}
