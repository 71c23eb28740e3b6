//! The session's timers against model brokers on virtual time: request timeouts (the
//! core's and the session's own), connection setup, the `max.block.ms` backlog, flush
//! ids, close with a timeout, partition lookups.

use std::time::Duration;

use crate::pair::{Cluster, ConnectPolicy, Pair, Verdict};
use kacrab_driver::{CloseReason, Completion, ProduceError};
use kacrab_idempotence::SendError;
use kafka_protocol::messages::ApiKey;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// `buffer.memory` that holds one record of these tests (a value padded with [`PAD`])
/// and not two: a record larger than all of `buffer.memory` is refused as too large
/// (Java's `KafkaProducer.ensureValidRecordSize`), so a buffer too small for every
/// record can no longer stand for "full after one".
const ONE_RECORD: &str = "200";
/// Pads a value to some 100 bytes: one such record fits in [`ONE_RECORD`], two do not.
const PAD: &str = "----------------------------------------------------------------------------------------------------";

/// A Produce the broker never answers: the core gives up on it after
/// `request.timeout.ms`, the session closes the connection it was on (a late answer
/// can never arrive), and the retry on a fresh connection delivers the record once.
#[test]
fn a_produce_never_answered_times_out_and_closes_its_connection() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("request.timeout.ms", "500")],
    );
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed)).then_some(Verdict::Ignore)
    });
    let a = p.send("t", 0, "a");
    assert!(p.run_until(10 * SECOND, |p| p.cluster.count(ApiKey::Produce) == 1));
    let sent = p.now;
    let produce_conn = p.cluster.seen.last().unwrap().conn;
    p.settle(10 * SECOND);
    let (at, conn, reason) = p.closes.first().expect("a close").clone();
    assert_eq!((conn, reason), (produce_conn, CloseReason::RequestTimeout));
    let waited = at.saturating_duration_since(sent);
    assert!(
        waited >= 490 * MS && waited <= 510 * MS,
        "closed {waited:?} after the Produce reached the broker"
    );
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.cluster.values("t", 0), ["a"]);
}

/// A broker that never answers ApiVersions: the session times its own request out
/// after `request.timeout.ms`, closes the connection, and gets the record through on
/// a new one.
#[test]
fn a_broker_that_never_answers_api_versions_is_closed_by_the_session() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("request.timeout.ms", "700")],
    );
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::ApiVersions && std::mem::take(&mut armed)).then_some(Verdict::Ignore)
    });
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let (at, conn, reason) = p.closes.first().expect("a close").clone();
    assert_eq!(reason, CloseReason::RequestTimeout);
    let opened = p.connects.iter().find(|c| c.1 == conn).unwrap().0;
    let waited = at.saturating_duration_since(opened);
    // latency: 1 ms to connect, then the request is written and times out.
    assert!(
        waited >= 700 * MS && waited <= 710 * MS,
        "closed {waited:?} after the connect"
    );
    assert_eq!(p.acked(a).offset, Some(0));
}

/// The core times its requests from when it hands them over; one queued behind a slow
/// ApiVersions can time out before the connection is ready. The session must not
/// write it then (its answer would be one the core no longer expects, and a healthy
/// connection would close as a protocol violation); the core retries it.
#[test]
fn a_request_the_core_gave_up_on_while_queued_is_never_written() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("request.timeout.ms", "700")],
    );
    let mut armed = true;
    p.hook(move |inc, _| {
        // Sent at 1001 ms, received at 1002 ms, answered at 1700.5 ms: after the core
        // gave up on the requests it queued at 1000 ms, before the session's own
        // ApiVersions deadline (1701 ms).
        (inc.api == ApiKey::ApiVersions && std::mem::take(&mut armed))
            .then_some(Verdict::Delay(Duration::from_micros(697_500)))
    });
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert!(
        !p.closes
            .iter()
            .any(|c| matches!(c.2, CloseReason::Protocol(_))),
        "{:?}",
        p.closes
    );
}

/// A connect that never completes is abandoned after
/// `socket.connection.setup.timeout.ms` (±20 %); the next bootstrap address is tried.
#[test]
fn a_connect_never_completed_times_out_and_the_next_address_is_tried() {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.move_leader("t", 0, 1);
    let mut p = Pair::new(
        cluster,
        &[
            ("bootstrap.servers", "b0:9092,b1:9092"),
            ("socket.connection.setup.timeout.ms", "300"),
        ],
    );
    p.connect.insert("b0:9092".into(), ConnectPolicy::Hang);
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let (at, conn, reason) = p.closes.first().expect("a close").clone();
    assert_eq!(reason, CloseReason::ConnectTimeout);
    let (opened, _, addr) = p.connects.iter().find(|c| c.1 == conn).unwrap().clone();
    assert_eq!(addr, "b0:9092");
    // The first attempt's timeout is the setting ±20 % (Java's `ExponentialBackoff`
    // jitters it too).
    let took = at.saturating_duration_since(opened);
    assert!(240 * MS <= took && took <= 360 * MS, "{took:?}");
    assert_eq!(p.acked(a).offset, Some(0));
    assert!(p.connects.iter().any(|c| c.2 == "b1:9092"));
}

/// A refused connect is reported by the driver; the session tries elsewhere.
#[test]
fn a_refused_connect_is_tried_elsewhere() {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.move_leader("t", 0, 1);
    let mut p = Pair::new(cluster, &[("bootstrap.servers", "b0:9092,b1:9092")]);
    p.connect.insert("b0:9092".into(), ConnectPolicy::Refuse);
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert!(p
        .resets
        .iter()
        .any(|r| p.connects.iter().any(|c| c.1 == r.1 && c.2 == "b0:9092")));
}

/// With `buffer.memory` full, later sends wait in call order; once the broker answers
/// they go in, in order. A flush called behind them completes after all of them.
#[test]
fn sends_behind_a_full_buffer_wait_in_order_and_a_flush_behind_them_waits_too() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("buffer.memory", ONE_RECORD), ("max.block.ms", "5000")],
    );
    let ids: Vec<_> = (0..4)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    let flush = p.flush();
    p.settle(10 * SECOND);
    let positions: Vec<usize> = ids
        .iter()
        .map(|id| {
            p.position(|c| matches!(c, Completion::Record { id: i, .. } if i == id))
                .unwrap()
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert!(p.run_until(SECOND, |p| p.op(flush).is_some()));
    let flushed = p.position(|c| matches!(c, Completion::Flushed { op } if *op == flush));
    assert!(
        flushed > positions.last().copied(),
        "{flushed:?} {positions:?}"
    );
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).offset, Some(i as i64));
    }
    let values: Vec<String> = (0..4).map(|i| format!("r{i}{PAD}")).collect();
    assert_eq!(p.cluster.values("t", 0), values);
}

/// While the broker sits on the first record, sends behind the full buffer fail with
/// BufferFull after `max.block.ms`, in order, written nowhere; a flush queued behind
/// them completes after them and after the first record's outcome.
#[test]
fn sends_behind_a_full_buffer_fail_after_max_block_and_the_flush_completes_after_them() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("buffer.memory", ONE_RECORD),
            ("max.block.ms", "200"),
            ("request.timeout.ms", "1000"),
        ],
    );
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed)).then_some(Verdict::Ignore)
    });
    let start = p.now;
    let first = p.send("t", 0, &format!("first{PAD}"));
    let waiting: Vec<_> = (0..3)
        .map(|i| p.send("t", 0, &format!("w{i}{PAD}")))
        .collect();
    let flush = p.flush();
    assert!(p.run_until(10 * SECOND, |p| p.op(flush).is_some()));
    for id in &waiting {
        let at = p.done_at(*id).unwrap();
        assert_eq!(at.saturating_duration_since(start), 200 * MS);
        assert!(matches!(
            p.outcome(*id),
            Some(Err(ProduceError::Send(SendError::BufferFull { .. })))
        ));
    }
    let pos = |p: &Pair, id| {
        p.position(|c| matches!(c, Completion::Record { id: i, .. } if *i == id))
            .unwrap()
    };
    let order: Vec<usize> = waiting.iter().map(|&id| pos(&p, id)).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]));
    let flushed = p
        .position(|c| matches!(c, Completion::Flushed { op } if *op == flush))
        .unwrap();
    assert!(flushed > pos(&p, first) && flushed > *order.last().unwrap());
    assert_eq!(p.acked(first).offset, Some(0));
    assert_eq!(p.cluster.values("t", 0), [format!("first{PAD}")]);
}

/// Every flush completes once, naming its own id, after every record sent before it
/// and before the records sent after it.
#[test]
fn each_flush_completes_with_its_own_id_after_the_records_before_it() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[("linger.ms", "50")]);
    let a = p.send("t", 0, "a");
    let f0 = p.flush();
    let b = p.send("t", 0, "b");
    let c = p.send("t", 0, "c");
    let f1 = p.flush();
    let f2 = p.flush();
    assert!(f0 != f1 && f1 != f2);
    p.settle(10 * SECOND);
    assert!(p.run_until(SECOND, |p| p.op(f2).is_some()));
    let rec = |p: &Pair, id| {
        p.position(|x| matches!(x, Completion::Record { id: i, .. } if *i == id))
            .unwrap()
    };
    let fl = |p: &Pair, op| {
        p.position(|x| matches!(x, Completion::Flushed { op: o } if *o == op))
            .unwrap()
    };
    assert!(rec(&p, a) < fl(&p, f0));
    assert!(fl(&p, f0) < fl(&p, f1) && fl(&p, f1) < fl(&p, f2));
    assert!(rec(&p, b) < fl(&p, f1) && rec(&p, c) < fl(&p, f1));
    // linger.ms 50 did not hold the flushed records back.
    assert!(
        p.done_at(c)
            .unwrap()
            .saturating_duration_since(p.connects[0].0)
            < 50 * MS
    );
}

/// close(timeout) while the broker sits on a Produce: when the timeout passes, the
/// record on the wire fails possibly written, the one never sent fails not written,
/// the close completes, every connection closes and the session is finished.
#[test]
fn close_with_a_timeout_fails_what_is_left_possibly_written_if_on_the_wire() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("max.in.flight.requests.per.connection", "1"),
            ("request.timeout.ms", "30000"),
        ],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let on_wire = p.send("t", 0, "a");
    assert!(p.run_until(10 * SECOND, |p| p.cluster.count(ApiKey::Produce) == 1));
    let queued = p.send("t", 0, "b");
    let closed_at = p.now;
    let close = p.close(Some(300 * MS));
    let late = p.send("t", 0, "late");
    assert!(matches!(
        p.outcome(late),
        Some(Err(ProduceError::Send(SendError::Closed)))
    ));
    assert!(p.run_until(10 * SECOND, |p| p.op(close).is_some()));
    assert_eq!(p.since(closed_at), 300 * MS);
    let a = p.outcome(on_wire).unwrap().as_ref().unwrap_err();
    let b = p.outcome(queued).unwrap().as_ref().unwrap_err();
    assert!(a.possibly_written(), "{a:?}");
    assert!(!b.possibly_written(), "{b:?}");
    assert!(p.session.is_finished());
    p.assert_every_ticket_ended();
    assert_eq!(p.session.connection_count(), 0);
    assert!(p.links().is_empty(), "every connection was closed");
    assert!(p.closes.iter().any(|c| c.2 == CloseReason::Finished));
}

/// A partition lookup is answered from Metadata; a second one from what the session
/// already knows, without asking again.
#[test]
fn a_partition_lookup_is_answered() {
    let mut p = Pair::new(Cluster::new(2).with_topic("t", 7), &[]);
    let op = p.partition_count("t");
    assert!(p.run_until(10 * SECOND, |p| p.op(op).is_some()));
    assert!(matches!(
        p.op(op),
        Some((_, Completion::PartitionCount { count: Some(7), .. }))
    ));
    let asked = p.cluster.count(ApiKey::Metadata);
    let again = p.partition_count("t");
    assert!(matches!(
        p.op(again),
        Some((_, Completion::PartitionCount { count: Some(7), .. }))
    ));
    assert_eq!(p.cluster.count(ApiKey::Metadata), asked);
}

/// A lookup of a topic that does not exist keeps asking until `max.block.ms`, then
/// answers `None`.
#[test]
fn a_lookup_of_an_unknown_topic_answers_none_after_max_block() {
    let mut p = Pair::new(
        Cluster::new(1),
        &[("max.block.ms", "1000"), ("retry.backoff.ms", "100")],
    );
    let start = p.now;
    let op = p.partition_count("nope");
    assert!(p.run_until(10 * SECOND, |p| p.op(op).is_some()));
    let (at, done) = p.op(op).unwrap();
    assert!(matches!(
        done,
        Completion::PartitionCount { count: None, .. }
    ));
    assert_eq!(at.saturating_duration_since(start), SECOND);
    assert!(
        p.cluster.count(ApiKey::Metadata) >= 5,
        "asked again after each backoff"
    );
}

/// The Metadata a lookup asked for is lost with its connection: the lookup asks again
/// after the backoff, on a new connection, and is answered within `max.block.ms`.
#[test]
fn a_lookup_survives_a_reset_of_its_metadata_request() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 3),
        &[("max.block.ms", "5000"), ("retry.backoff.ms", "100")],
    );
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Metadata && std::mem::take(&mut armed)).then_some(Verdict::Reset)
    });
    let start = p.now;
    let op = p.partition_count("t");
    assert!(p.run_until(10 * SECOND, |p| p.op(op).is_some()));
    let (at, done) = p.op(op).unwrap();
    assert!(matches!(
        done,
        Completion::PartitionCount { count: Some(3), .. }
    ));
    assert!(at.saturating_duration_since(start) < SECOND);
    assert_eq!(p.resets.len(), 1);
}

/// A second close with a shorter timeout shortens the first: both complete when it
/// passes, with what is left failed.
#[test]
fn a_second_close_with_a_shorter_timeout_shortens_the_first() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("request.timeout.ms", "30000")],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let a = p.send("t", 0, "a");
    assert!(p.run_until(10 * SECOND, |p| p.cluster.count(ApiKey::Produce) == 1));
    let start = p.now;
    let first = p.close(None);
    p.run_for(50 * MS);
    let second = p.close(Some(100 * MS));
    assert!(p.run_until(10 * SECOND, |p| p.op(first).is_some()
        && p.op(second).is_some()));
    let (t1, _) = p.op(first).unwrap();
    let (t2, _) = p.op(second).unwrap();
    assert_eq!(t1, t2);
    assert_eq!(t1.saturating_duration_since(start), 150 * MS);
    assert!(p
        .outcome(a)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .possibly_written());
    assert!(p.session.is_finished());
}

/// abort() with a flush still queued behind sends waiting for `buffer.memory`: the
/// flush completes after every record sent before it, the one the core holds
/// included (found by the session property).
#[test]
fn on_abort_a_flush_queued_behind_the_backlog_completes_after_the_records_before_it() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("buffer.memory", ONE_RECORD), ("max.block.ms", "5000")],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let ids: Vec<_> = (0..3)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    let flush = p.flush();
    p.session.abort(p.now);
    p.pump();
    let flushed = p
        .position(|c| matches!(c, Completion::Flushed { op } if *op == flush))
        .expect("the flush completed");
    for id in &ids {
        let done = p
            .position(|c| matches!(c, Completion::Record { id: i, .. } if i == id))
            .expect("an outcome");
        assert!(done < flushed, "{id:?} completed after the flush");
    }
}
