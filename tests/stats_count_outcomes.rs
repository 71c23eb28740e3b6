//! The core's counters (`Producer::stats`, `Producer::buffered_bytes`) count what the
//! application saw: every delivered and failed record once, every retried record once per
//! attempt (Kafka's `record-error-total`, `record-retry-total`,
//! `buffer-total-bytes - buffer-available-bytes`, `Sender.SenderMetrics`).

mod support;

use kacrab_idempotence::*;
use support::*;

#[test]
fn counters_follow_deliveries_retries_and_failures() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let before = h.p.stats();
    assert_eq!(h.p.buffered_bytes(), 0, "the warm-up record was delivered");

    let a = h.send(0, "a");
    assert!(
        h.p.buffered_bytes() > 0,
        "a record without an outcome holds memory"
    );
    // The first answer is retriable: the record goes back for another attempt.
    h.respond_oldest(0, 1, KafkaError::NotEnoughReplicas, -1);
    let stats = h.p.stats();
    assert_eq!(stats.records_retried - before.records_retried, 1);
    assert_eq!(stats.retries - before.retries, 1);
    h.advance(60);
    h.respond_oldest(0, 1, KafkaError::None, 1);

    let b = h.send(0, "b");
    let c = h.send(0, "c");
    h.respond_oldest(0, 2, KafkaError::None, 2);
    // c is refused with an error that says it was not appended: it fails for good.
    h.respond_oldest(0, 3, KafkaError::TopicAuthorizationFailed, -1);
    assert!(h.delivered(a).is_some() && h.delivered(b).is_some());
    assert_eq!(h.possibly_written(c), Some(false));

    // d's request is lost after it was written, so d may be in the log; it then runs out
    // of delivery.timeout.ms before any answer says where it is.
    let d = h.send(0, "d");
    let lost = h.outstanding.back().expect("d sent").id;
    h.fail(lost, RequestFailure::Disconnected);
    h.advance(16_000);
    assert_eq!(h.possibly_written(d), Some(true));

    let stats = h.p.stats();
    assert_eq!(stats.records_delivered - before.records_delivered, 2);
    assert_eq!(stats.records_failed - before.records_failed, 2);
    assert_eq!(
        stats.possibly_written_failures - before.possibly_written_failures,
        1
    );
    assert_eq!(stats.producer_id_changes, 1, "the first producer id");
    assert_eq!(h.p.buffered_bytes(), 0, "every record has its outcome");
}
