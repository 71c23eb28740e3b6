//! `acks=0`: the broker never answers a Produce request, so its write is its completion.
//! The session delivers its records when the driver reports the frame written
//! (`Session::handle_transmitted`), not when it hands the frame over: Java completes
//! such a send in `NetworkClient.handleCompletedSends`, called after `Selector.poll`
//! finished writing it; a connection lost before then fails it
//! (`NetworkClient.processDisconnection`), and a send that never finishes times out
//! under `request.timeout.ms` from the hand-off (`InFlightRequest.sendTimeMs`,
//! `NetworkClient.handleTimedOutRequests`).

use std::time::Duration;

use crate::pair::{Cluster, Pair, Req, Verdict};
use bytes::Bytes;
use kacrab_driver::CloseReason;
use kafka_protocol::messages::ApiKey;

const SECOND: Duration = Duration::from_secs(1);

fn acks_zero(props: &[(&'static str, &'static str)]) -> Pair {
    let mut all = vec![
        ("acks", "0"),
        ("enable.idempotence", "false"),
        ("retry.backoff.ms", "50"),
        ("reconnect.backoff.ms", "50"),
    ];
    all.extend_from_slice(props);
    Pair::new(Cluster::new(1).with_topic("t", 1), &all)
}

/// The frame was handed to the driver and reached the broker, but the driver has not
/// reported it written: the record is not delivered. Once the driver reports the
/// write, it is delivered without an offset, no answer having come.
#[test]
fn an_acks_zero_record_is_delivered_when_its_write_is_reported() {
    let mut p = acks_zero(&[]);
    p.hold_write_reports = true;
    let id = p.send("t", 0, "x");
    p.run_for(SECOND);
    assert_eq!(p.cluster.values("t", 0), ["x"], "the bytes travelled");
    assert!(
        p.outcome(id).is_none(),
        "delivered before its write was reported: {:?}",
        p.outcome(id)
    );
    p.report_writes();
    assert_eq!(p.acked(id).offset, None);
    p.run_for(SECOND);
    assert!(p.closes.is_empty(), "{:?}", p.closes);
    p.assert_every_ticket_ended();
}

/// The connection is lost after the session handed the Produce frame to the driver and
/// before the driver reported it written (here the broker resets it on receipt, having
/// applied nothing): the record is not delivered; its request fails as possibly
/// written and is retried on a new connection, and the record is delivered once that
/// write is reported, exactly once in the log.
#[test]
fn an_acks_zero_record_whose_connection_is_lost_before_its_write_is_reported_is_retried() {
    let mut p = acks_zero(&[]);
    p.hold_write_reports = true;
    let mut reset_first = true;
    p.hook(move |inc, _| match inc.req {
        Req::Produce(_) if std::mem::take(&mut reset_first) => Some(Verdict::Reset),
        _ => None,
    });
    let id = p.send("t", 0, "x");
    p.run_until(5 * SECOND, |p| p.cluster.values("t", 0) == ["x"]);
    assert_eq!(p.resets.len(), 1, "{:?}", p.resets);
    assert_eq!(p.cluster.count(ApiKey::Produce), 2, "retried once");
    assert!(
        p.outcome(id).is_none(),
        "delivered though its first connection was lost before the write was reported, \
         and the retry's write is not reported yet: {:?}",
        p.outcome(id)
    );
    p.report_writes();
    assert_eq!(p.acked(id).offset, None);
    p.run_for(SECOND);
    assert_eq!(p.cluster.values("t", 0), ["x"]);
    p.assert_every_ticket_ended();
}

/// A driver that never reports the write: the frame's send never finishes, so the
/// connection is closed at `request.timeout.ms` from the hand-off, as for any request in
/// flight, and the record, retried the same way, fails at `delivery.timeout.ms` as
/// possibly written (its bytes reached the broker each time).
#[test]
fn an_acks_zero_write_never_reported_times_out_and_fails_possibly_written() {
    let mut p = acks_zero(&[
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "3000"),
        ("linger.ms", "0"),
    ]);
    p.hold_write_reports = true;
    let start = p.now;
    let id = p.send("t", 0, "x");
    p.settle(10 * SECOND);
    let err = p.outcome(id).expect("an outcome").as_ref().unwrap_err();
    assert!(err.possibly_written(), "{err:?}");
    let at = p.done_at(id).unwrap().saturating_duration_since(start);
    assert!(at >= 3 * SECOND && at < 4 * SECOND, "{at:?}");
    let first_timeout = p
        .closes
        .iter()
        .find(|c| c.2 == CloseReason::RequestTimeout)
        .map(|c| c.0.saturating_duration_since(start))
        .expect("the unfinished write timed out");
    assert!(
        first_timeout >= SECOND && first_timeout < SECOND + Duration::from_millis(100),
        "{first_timeout:?}"
    );
    p.assert_every_ticket_ended();
}

/// A broker that answers an `acks=0` Produce request (Kafka never does; krafka's
/// FakeBroker does), its answer processed before the driver reported the write: the
/// answer proves the broker read the whole request, so the record is delivered, once;
/// the answer is dropped and the connection kept (closing it would fail the `acks=0`
/// requests written after it as possibly written, and a non-idempotent producer would
/// write them twice). Java completes the send first by ordering (`NetworkClient.poll`
/// runs `handleCompletedSends` before `handleCompletedReceives`); a driver whose reads
/// and writes run on different threads gives no such order. This failed as a duplicate
/// in the log (the request retried as if lost before its write) on the blocking
/// driver's FakeBroker test under load.
#[test]
fn an_answer_to_an_acks_zero_request_proves_its_write() {
    let mut p = acks_zero(&[]);
    p.hold_write_reports = true;
    p.hook(|inc, _| match inc.req {
        Req::Produce(_) => Some(Verdict::Delay(Duration::ZERO)),
        _ => None,
    });
    let id = p.send("t", 0, "x");
    p.run_until(5 * SECOND, |p| p.outcome(id).is_some());
    assert_eq!(p.acked(id).offset, None);
    let second = p.send("t", 0, "y");
    p.run_for(SECOND);
    p.report_writes();
    p.run_for(SECOND);
    assert_eq!(p.acked(second).offset, None);
    assert_eq!(p.cluster.count(ApiKey::Produce), 2, "not retried");
    assert_eq!(p.cluster.values("t", 0), ["x", "y"]);
    assert!(
        p.closes.is_empty(),
        "the connection is kept: {:?}",
        p.closes
    );
    p.assert_every_ticket_ended();
}

/// Any other answer nobody asked for (an unknown correlation id) still closes the
/// connection: only an answer to one of the connection's own `acks=0` requests is
/// recognised.
#[test]
fn an_answer_to_no_request_still_closes_the_connection() {
    let mut p = acks_zero(&[]);
    // A whole response frame with correlation id 999, which no request has.
    let mut frame = Vec::new();
    frame.extend_from_slice(&8u32.to_be_bytes());
    frame.extend_from_slice(&999i32.to_be_bytes());
    frame.extend_from_slice(&0i32.to_be_bytes());
    let frame = Bytes::from(frame);
    let mut first = true;
    p.hook(move |inc, _| match inc.req {
        Req::Produce(_) if std::mem::take(&mut first) => Some(Verdict::AnswerAfter(frame.clone())),
        _ => None,
    });
    let id = p.send("t", 0, "x");
    p.run_for(5 * SECOND);
    assert!(
        p.closes
            .iter()
            .any(|c| matches!(&c.2, CloseReason::Malformed(m) if m.contains("999"))),
        "{:?}",
        p.closes
    );
    assert_eq!(p.acked(id).offset, None);
    p.assert_every_ticket_ended();
}
