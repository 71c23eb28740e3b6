//! A request's life between the core handing it out and its answer: a request never
//! written costs its batches no attempt under `retries` and no retry backoff; a request
//! the driver holds back (behind its connection's setup) has no `request.timeout.ms`
//! running until it is written; an `acks=0` request delivers its records only once
//! written. Java: `Sender.sendProducerData` drains only for nodes `NetworkClient.ready`
//! accepts; `ProducerBatch.attempts` grows in `Sender.reenqueueBatch` after a sent
//! request failed; `NetworkClient.handleTimedOutRequests` times a request from its send
//! (`InFlightRequest.sendTimeMs`); `NetworkClient.handleCompletedSends` completes a
//! send that expects no answer.

mod support;

use std::time::Duration;

use kacrab_idempotence::*;
use support::*;

/// With `retries=1`, a Produce request reported never sent five times in a row (its
/// leader's connection refused while the broker restarts) uses up no attempt and grows
/// no backoff: each time the batch goes again after the first step of
/// `retry.backoff.ms` (50 ms here, never doubled), which paces the lookup of its
/// leader, and it is delivered by the sixth request, which is answered.
#[test]
fn a_request_never_sent_costs_no_attempt_and_no_growing_backoff() {
    let mut c = config();
    c.retries(1);
    let mut h = Harness::new(c.build().unwrap());
    let id = h.send(0, "x");
    for attempt in 0..5 {
        let r = h.outstanding.back().expect("handed out").clone();
        let next = h.fail(r.id, RequestFailure::NotSent);
        assert_eq!(h.outcomes(id), 0, "failed after {attempt} refused dials");
        assert!(next.is_empty(), "the leader's lookup is paced");
        assert!(
            h.advance(49).is_empty(),
            "attempt {attempt}: went before 50 ms"
        );
        assert_eq!(
            h.advance(1).len(),
            1,
            "attempt {attempt}: waited past 50 ms"
        );
    }
    let r = h.outstanding.back().expect("handed out").clone();
    h.respond(r.id, &[(0, KafkaError::None, 0)]);
    assert_eq!(h.delivered(id), Some(Some(0)));
    assert_eq!(h.outcomes(id), 1);
}

/// A request never sent still ends at `delivery.timeout.ms`, certainly not written.
#[test]
fn a_request_never_sent_past_the_delivery_timeout_fails_unwritten() {
    let mut h = Harness::new(config().build().unwrap());
    let id = h.send(0, "x");
    h.now = h.now + Duration::from_millis(15_000);
    let r = h.outstanding.back().expect("handed out").clone();
    h.fail(r.id, RequestFailure::NotSent);
    assert!(
        matches!(h.failed(id), Some(DeliveryError::Timeout { .. })),
        "{:?}",
        h.failed(id)
    );
    assert_eq!(h.possibly_written(id), Some(false));
}

fn drive_unwritten(p: &mut Producer, now: Timestamp) -> Vec<ProduceRequest> {
    let mut produce = Vec::new();
    while let Some(r) = p.poll_request_unwritten(now) {
        match r {
            Request::InitProducerId(r) => {
                let pid = ProducerIdAndEpoch::new(7, 0);
                p.handle_producer_id(r.id, Ok(pid), now).unwrap();
            }
            Request::Metadata(r) => {
                let mut md = Metadata::default();
                md.partitions
                    .push(PartitionMetadata::new(tp(0), Some(NodeId(1)), 0));
                p.handle_metadata(Some(r.id), &md, now).unwrap();
            }
            Request::Produce(r) => produce.push(r),
            other => panic!("unexpected {other:?}"),
        }
    }
    produce
}

fn at(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

/// A Produce request held back unwritten for longer than `request.timeout.ms` does
/// not time out; once written, it times out `request.timeout.ms` after the write, as
/// possibly written.
#[test]
fn request_timeout_runs_from_the_write() {
    let mut c = config();
    c.retries(0);
    let mut p = Producer::new(c.build().unwrap(), Timestamp::ZERO);
    let id = p.send(&tp(0), &record("x"), Timestamp::ZERO).unwrap();
    let sent = drive_unwritten(&mut p, Timestamp::ZERO);
    assert_eq!(sent.len(), 1);
    let rid = sent[0].id;
    p.handle_timeout(at(6_000));
    assert!(p.is_outstanding(rid), "timed out before it was written");
    assert!(p.poll_timeout().is_none_or(|t| t > at(11_000)));
    p.handle_request_written(rid, at(6_000)).unwrap();
    assert_eq!(
        p.handle_request_written(rid, at(6_000)),
        Err(InputError::UnknownRequest(rid)),
        "a write is reported once"
    );
    p.handle_timeout(at(10_999));
    assert!(p.is_outstanding(rid));
    p.handle_timeout(at(11_000));
    assert!(!p.is_outstanding(rid));
    let failed = std::iter::from_fn(|| p.poll_event()).find_map(|e| match e {
        Event::Failed {
            records,
            possibly_written,
            ..
        } if records.contains(&id) => Some(possibly_written),
        _ => None,
    });
    assert_eq!(failed, Some(true));
}

/// With `acks=0`, a request handed out unwritten delivers nothing; reported never
/// sent, its batch waits (the first step of `retry.backoff.ms`) and goes again; written, its records are delivered without
/// an offset.
#[test]
fn acks_zero_records_are_delivered_at_the_write() {
    let mut c = config();
    c.acks(Acks::None).enable_idempotence(false);
    let mut p = Producer::new(c.build().unwrap(), Timestamp::ZERO);
    let id = p.send(&tp(0), &record("x"), Timestamp::ZERO).unwrap();
    let sent = drive_unwritten(&mut p, Timestamp::ZERO);
    assert_eq!(sent.len(), 1);
    assert!(std::iter::from_fn(|| p.poll_event()).next().is_none());
    p.handle_request_failed(sent[0].id, RequestFailure::NotSent, at(1))
        .unwrap();
    assert!(std::iter::from_fn(|| p.poll_event()).next().is_none());
    assert!(
        drive_unwritten(&mut p, at(1)).is_empty(),
        "paced by retry.backoff.ms"
    );
    p.handle_timeout(at(51));
    let again = drive_unwritten(&mut p, at(51));
    assert_eq!(again.len(), 1, "sent again");
    p.handle_request_written(again[0].id, at(52)).unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| p.poll_event()).collect();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Delivered { records, base_offset: None, .. } if records == &[id]
        )),
        "{events:?}"
    );
    assert!(!p.is_outstanding(again[0].id));
    p.assert_invariants();
}

/// With `acks=0`, a request handed to a socket whose connection is lost before the
/// driver reported it written is not delivered: it fails as possibly written (some of
/// its bytes may have left), its batch is retried after `retry.backoff.ms`, and it is
/// delivered once the retry's write is reported; past `delivery.timeout.ms` instead it
/// fails possibly written. Java fails an unfinished send with its connection
/// (`NetworkClient.processDisconnection`) and completes an `acks=0` send only in
/// `NetworkClient.handleCompletedSends`.
#[test]
fn an_acks_zero_request_lost_before_its_write_is_reported_is_retried_not_delivered() {
    let mut c = config();
    c.acks(Acks::None).enable_idempotence(false);
    let mut p = Producer::new(c.build().unwrap(), Timestamp::ZERO);
    let id = p.send(&tp(0), &record("x"), Timestamp::ZERO).unwrap();
    let sent = drive_unwritten(&mut p, Timestamp::ZERO);
    assert_eq!(sent.len(), 1);
    p.handle_request_failed(sent[0].id, RequestFailure::Disconnected, at(1))
        .unwrap();
    assert!(
        std::iter::from_fn(|| p.poll_event())
            .all(|e| !matches!(e, Event::Delivered { .. } | Event::Failed { .. })),
        "neither delivered nor failed"
    );
    p.handle_timeout(at(60));
    let again = drive_unwritten(&mut p, at(60));
    assert_eq!(again.len(), 1, "retried");
    p.handle_request_written(again[0].id, at(61)).unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| p.poll_event()).collect();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Delivered { records, base_offset: None, .. } if records == &[id]
        )),
        "{events:?}"
    );
    p.assert_invariants();

    // Lost again and again until delivery.timeout.ms: it fails, possibly written.
    let mut p = Producer::new(c.build().unwrap(), Timestamp::ZERO);
    let id = p.send(&tp(0), &record("y"), Timestamp::ZERO).unwrap();
    let mut failed = None;
    for ms in (0..=16_000).step_by(50) {
        p.handle_timeout(at(ms));
        for r in drive_unwritten(&mut p, at(ms)) {
            p.handle_request_failed(r.id, RequestFailure::Disconnected, at(ms))
                .unwrap();
        }
        failed = std::iter::from_fn(|| p.poll_event()).find_map(|e| match e {
            Event::Failed {
                records,
                possibly_written,
                ..
            } if records.contains(&id) => Some(possibly_written),
            _ => None,
        });
        if failed.is_some() {
            break;
        }
    }
    assert_eq!(failed, Some(true));
    p.assert_invariants();
}

/// Without idempotence, three batches of one partition reported never sent one after
/// another go back in send order, not reversed as retries put at the head of the queue
/// would be (Java never took them out of the deque): the log keeps send order.
#[test]
fn batches_never_sent_keep_their_send_order_without_idempotence() {
    let mut c = config();
    c.enable_idempotence(false).acks(Acks::Leader);
    let mut h = Harness::new(c.build().unwrap());
    let ids: Vec<RecordId> = ["a", "b", "c"].iter().map(|v| h.send(0, v)).collect();
    let first: Vec<RequestId> = h.outstanding.iter().map(|r| r.id).collect();
    assert_eq!(first.len(), 3, "one request per batch");
    for id in first {
        h.fail(id, RequestFailure::NotSent);
    }
    let mut order = Vec::new();
    for _ in 0..10 {
        for r in h.advance(50) {
            order.push(r.id);
        }
        if order.len() == 3 {
            break;
        }
    }
    assert_eq!(order.len(), 3);
    for (i, rid) in order.iter().enumerate() {
        h.respond(*rid, &[(0, KafkaError::None, i as i64)]);
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(h.delivered(*id), Some(Some(i as i64)), "record {i}");
    }
}
