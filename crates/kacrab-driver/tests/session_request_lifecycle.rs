//! A request's life between the core handing it out and its answer, through the
//! session: a request that waits for its connection (a dial refused while the broker
//! restarts, a slow setup) is not written yet, so it costs no attempt under `retries`,
//! its `request.timeout.ms` has not started, and an `acks=0` record is not delivered.
//! Java builds requests only for nodes `NetworkClient.ready` accepts
//! (`Sender.sendProducerData`), times a request from its send (`InFlightRequest.
//! sendTimeMs`, `NetworkClient.handleTimedOutRequests`) and completes an `acks=0` send
//! once written (`NetworkClient.handleCompletedSends`).

use std::time::Duration;

use crate::pair::{Cluster, ConnectPolicy, Pair};
use kacrab_driver::{CloseReason, Completion};
use kafka_protocol::messages::ApiKey;

const SECOND: Duration = Duration::from_secs(1);

/// Node 1 (partition 1's leader) restarts for four seconds while records are sent to
/// it, with `retries=3`: every dial refused in the meantime left the Produce request
/// unwritten, so no attempt is used up, and every record is delivered once, in order,
/// when the broker is back (Java: `Sender.sendProducerData` drains no batch for a node
/// `NetworkClient.ready` refuses; `ProducerBatch.attempts` grows only in
/// `Sender.reenqueueBatch` after a sent request failed).
#[test]
fn a_broker_restart_with_retries_3_delivers_every_record() {
    let mut p = Pair::new(
        Cluster::new(2).with_topic("t", 2),
        &[
            ("retries", "3"),
            ("reconnect.backoff.ms", "50"),
            ("reconnect.backoff.max.ms", "500"),
            ("retry.backoff.ms", "50"),
        ],
    );
    let before = p.send("t", 1, "before");
    p.settle(SECOND);
    assert_eq!(p.acked(before).offset, Some(0));
    p.crash(1);
    let during: Vec<_> = (0..5).map(|i| p.send("t", 1, &format!("r{i}"))).collect();
    p.run_for(4 * SECOND);
    assert!(
        during.iter().all(|&id| p.outcome(id).is_none()),
        "a record failed while its broker restarted: {:?}",
        during.iter().map(|&id| p.outcome(id)).collect::<Vec<_>>()
    );
    p.restart(1);
    p.settle(20 * SECOND);
    for (i, &id) in during.iter().enumerate() {
        assert_eq!(p.acked(id).offset, Some(i as i64 + 1), "record {i}");
    }
    assert_eq!(
        p.cluster.values("t", 1),
        ["before", "r0", "r1", "r2", "r3", "r4"]
    );
    p.assert_every_ticket_ended();
}

/// A TCP setup that takes 1.5 s (within `socket.connection.setup.timeout.ms`) with
/// `request.timeout.ms=1000` and `retries=0`: the Produce request waiting for it is
/// not written, so its timeout has not started; it is written once the connection is
/// ready and the record is delivered (Java times a request from
/// `NetworkClient.doSend`: `InFlightRequest.sendTimeMs`).
#[test]
fn a_request_waiting_for_a_slow_setup_is_timed_from_its_write() {
    let cluster = Cluster::new(2).with_topic("t", 2);
    let addr = cluster.brokers[&1].addr.clone();
    let mut p = Pair::new(
        cluster,
        &[
            ("request.timeout.ms", "1000"),
            ("retries", "0"),
            ("socket.connection.setup.timeout.ms", "5000"),
            ("socket.connection.setup.timeout.max.ms", "5000"),
        ],
    );
    p.connect
        .insert(addr, ConnectPolicy::Slow(Duration::from_millis(1500)));
    let id = p.send("t", 1, "x");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(id).offset, Some(0), "{:?}", p.outcome(id));
    assert_eq!(p.cluster.values("t", 1), ["x"]);
    assert!(
        !p.closes.iter().any(|c| c.2 == CloseReason::RequestTimeout),
        "{:?}",
        p.closes
    );
}

/// The transaction coordinator's connection takes from 0.99 s to 1.5 s to set up with
/// `request.timeout.ms=1000`, while InitProducerId waits for it: the request is
/// written once, when the connection is ready, and answered on it; the connection is
/// never closed, for a timeout or for a stale answer, not even when it becomes ready
/// at the instant the request would have timed out counted from its hand-out (Java
/// builds a transactional request only once the coordinator's connection is ready:
/// `Sender.maybeSendAndPollTransactionalRequest`, `NetworkClient.ready`).
#[test]
fn a_coordinator_request_waiting_for_a_slow_setup_is_written_once_and_answered() {
    for setup_ms in (990..=1010).chain([1500]) {
        coordinator_request_behind_a_setup_of(Duration::from_millis(setup_ms));
    }
}

fn coordinator_request_behind_a_setup_of(setup: Duration) {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.coordinator = 1;
    let addr = cluster.brokers[&1].addr.clone();
    let mut p = Pair::new(
        cluster,
        &[
            ("transactional.id", "tx"),
            ("request.timeout.ms", "1000"),
            ("socket.connection.setup.timeout.ms", "5000"),
            ("socket.connection.setup.timeout.max.ms", "5000"),
        ],
    );
    p.connect.insert(addr, ConnectPolicy::Slow(setup));
    let init = p.session.init_transactions(p.now);
    p.pump();
    assert!(
        p.run_until(10 * SECOND, |p| p.op(init).is_some()),
        "setup {setup:?}: init_transactions never completed; closes {:?}, {} InitProducerId",
        p.closes,
        p.cluster.count(ApiKey::InitProducerId)
    );
    assert!(
        matches!(
            p.op(init),
            Some((_, Completion::Transaction { result: Ok(()), .. }))
        ),
        "setup {setup:?}: {:?}",
        p.op(init)
    );
    assert_eq!(
        p.cluster.count(ApiKey::InitProducerId),
        1,
        "setup {setup:?}"
    );
    assert!(p.closes.is_empty(), "setup {setup:?}: {:?}", p.closes);
}

/// With `acks=0`, a record whose leader's connection is refused before its request is
/// written is not delivered: it waits, is written once the broker accepts the
/// connection, and only then is delivered (Java completes an `acks=0` send in
/// `NetworkClient.handleCompletedSends`, after the write).
#[test]
fn an_acks_zero_record_is_delivered_only_once_written() {
    let cluster = Cluster::new(2).with_topic("t", 2);
    let addr = cluster.brokers[&1].addr.clone();
    let mut p = Pair::new(
        cluster,
        &[
            ("acks", "0"),
            ("enable.idempotence", "false"),
            ("reconnect.backoff.ms", "50"),
            ("reconnect.backoff.max.ms", "200"),
        ],
    );
    p.connect.insert(addr.clone(), ConnectPolicy::Refuse);
    let id = p.send("t", 1, "x");
    p.run_for(SECOND);
    assert!(
        p.outcome(id).is_none(),
        "reported before any byte was written: {:?}",
        p.outcome(id)
    );
    p.connect.remove(&addr);
    p.settle(10 * SECOND);
    assert_eq!(p.acked(id).offset, None);
    p.run_for(SECOND);
    assert_eq!(p.cluster.values("t", 1), ["x"]);
    p.assert_every_ticket_ended();
}
