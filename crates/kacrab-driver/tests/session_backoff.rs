//! Connections and metadata lookups back off as Java's do: a broker whose connection
//! failed is dialled again only after `reconnect.backoff.ms`, doubling per consecutive
//! failure up to `reconnect.backoff.max.ms` (`ClusterConnectionStates`), and the
//! session's own metadata lookups go one at a time, `retry.backoff.ms` apart
//! (`NetworkClient.DefaultMetadataUpdater`, KIP-580), so a record waiting for its
//! topic's metadata costs neither a reconnect storm nor a queue of lookups. And a
//! connection idle for `connections.max.idle.ms` is closed (Java's `Selector`).

use crate::pair;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use kacrab_driver::{CloseReason, ConnId, ProducerRecord, Timestamp};
use kafka_protocol::messages::ApiKey;

use crate::pair::{Cluster, ConnectPolicy, Pair, Verdict};

const SECOND: Duration = Duration::from_secs(1);

/// A refused broker over ten seconds of waiting for metadata (lookups wanted every
/// 20 ms): dialled on the reconnect backoff's schedule (50 ms doubling to 1 s, ±20 %),
/// about 15 times, not once per lookup.
#[test]
fn a_refused_broker_is_dialled_on_the_reconnect_backoff_schedule_not_per_lookup() {
    let mut p = Pair::new(
        Cluster::new(1),
        &[
            ("max.block.ms", "10000"),
            ("retry.backoff.ms", "20"),
            ("retry.backoff.max.ms", "20"),
            ("reconnect.backoff.ms", "50"),
            ("reconnect.backoff.max.ms", "1000"),
        ],
    );
    let addr = p.cluster.brokers[&0].addr.clone();
    p.connect.insert(addr, ConnectPolicy::Refuse);
    let start = p.now;
    let id = p.send_record(ProducerRecord::unkeyed("t", "x"));
    p.run_for(10 * SECOND + Duration::from_millis(100));
    let dials: Vec<Timestamp> = p.connects.iter().map(|c| c.0).collect();
    assert!(
        (8..=20).contains(&dials.len()),
        "{} dials in 10 s: {:?}",
        dials.len(),
        dials
            .iter()
            .map(|t| t.saturating_duration_since(start))
            .collect::<Vec<_>>()
    );
    // Each wait is the backoff of the failures before it: 50 ms * 2^(n-1), capped at
    // 1 s, less 20 % jitter (the refusal itself takes the harness's 1 ms latency).
    for (n, gap) in dials
        .windows(2)
        .map(|w| w[1].saturating_duration_since(w[0]))
        .enumerate()
    {
        let backoff = Duration::from_millis((50u64 << n.min(10)).min(1000));
        assert!(
            gap >= backoff * 8 / 10,
            "wait {n} was {gap:?}, backoff {backoff:?}"
        );
    }
    assert!(p.outcome(id).is_some(), "failed after max.block.ms");
    p.session.assert_invariants();
}

/// A handshake that takes a second, then every Metadata answer takes 200 ms, while a
/// send and a partition-count call wait for metadata (lookups wanted every 20 ms): the
/// session has at most one lookup outstanding, so nothing queues behind the handshake
/// and the broker sees at most one Metadata request per answer time.
#[test]
fn at_most_one_metadata_lookup_is_outstanding_during_a_slow_handshake() {
    let mut p = Pair::new(
        Cluster::new(1),
        &[
            ("max.block.ms", "3000"),
            ("retry.backoff.ms", "20"),
            ("retry.backoff.max.ms", "20"),
        ],
    );
    p.hook(|inc, _| match inc.api {
        ApiKey::ApiVersions => Some(Verdict::Delay(SECOND)),
        ApiKey::Metadata => Some(Verdict::Delay(Duration::from_millis(200))),
        _ => None,
    });
    let id = p.send_record(ProducerRecord::unkeyed("nope", "x"));
    let op = p.partition_count("nope2");
    p.run_for(SECOND + Duration::from_millis(100));
    assert!(
        p.cluster.count(ApiKey::Metadata) <= 1,
        "{} lookups queued behind the handshake",
        p.cluster.count(ApiKey::Metadata)
    );
    p.run_for(3 * SECOND);
    assert!(p.outcome(id).is_some() && p.op(op).is_some());
    // Two seconds of answers taking 200 ms (+ 20 ms backoff) after the handshake.
    let metadata = p.cluster.count(ApiKey::Metadata);
    assert!((5..=12).contains(&metadata), "{metadata} Metadata requests");
    p.session.assert_invariants();
}

/// `connections.max.idle.ms`: a connection with nothing in flight and no traffic for
/// that long is closed (and the next send opens a new one); the connection of a request
/// still waiting for its answer is not, however long the answer takes.
#[test]
fn an_idle_connection_closes_after_connections_max_idle_but_not_one_awaiting_an_answer() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("connections.max.idle.ms", "1000")],
    );
    let idle_closes = |p: &Pair| {
        p.closes
            .iter()
            .filter(|c| c.2 == CloseReason::Idle)
            .map(|c| c.1)
            .collect::<Vec<ConnId>>()
    };
    let start = p.now;
    p.send("t", 0, "a");
    p.settle(SECOND);
    p.run_for(2 * SECOND);
    assert!(!idle_closes(&p).is_empty(), "idle connections closed");
    assert!(
        p.closes
            .iter()
            .filter(|c| c.2 == CloseReason::Idle)
            .all(|c| c.0.saturating_duration_since(start) >= SECOND),
        "not before a second of idleness: {:?}",
        p.closes
    );
    assert_eq!(p.session.connection_count(), 0);
    // An answer that takes three seconds: its connection stays.
    let produce_conn: Rc<Cell<Option<ConnId>>> = Rc::default();
    let seen = Rc::clone(&produce_conn);
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce).then(|| {
            seen.set(Some(inc.conn));
            Verdict::Delay(3 * SECOND)
        })
    });
    let b = p.send("t", 0, "b");
    p.settle(10 * SECOND);
    let conn = produce_conn.get().expect("b was produced");
    assert!(
        !idle_closes(&p).contains(&conn),
        "closed while its Produce awaited the answer"
    );
    assert_eq!(p.cluster.values("t", 0), ["a", "b"]);
    assert!(p.outcome(b).is_some_and(Result::is_ok));
    p.session.assert_invariants();
}

/// `connections.max.idle.ms` negative: idle connections stay open.
#[test]
fn a_negative_connections_max_idle_keeps_idle_connections() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("connections.max.idle.ms", "-1")],
    );
    p.send("t", 0, "a");
    p.settle(SECOND);
    let open = p.session.connection_count();
    p.run_for(3600 * SECOND);
    assert!(p.closes.iter().all(|c| c.2 != CloseReason::Idle));
    assert_eq!(p.session.connection_count(), open);
}

/// A broker whose connects never complete: each attempt is abandoned at its setup
/// timeout, which starts at `socket.connection.setup.timeout.ms` and doubles per
/// consecutive failed attempt up to `socket.connection.setup.timeout.max.ms`, ±20 %
/// jitter, never past the max (Java's `ClusterConnectionStates.
/// updateConnectionSetupTimeout`). Each attempt also moves to the host's next resolved
/// address (`use_all_dns_ips`).
#[test]
fn setup_timeouts_grow_per_failed_attempt_up_to_the_max() {
    let mut p = Pair::new(
        Cluster::new(1),
        &[
            ("max.block.ms", "60000"),
            ("socket.connection.setup.timeout.ms", "1000"),
            ("socket.connection.setup.timeout.max.ms", "5000"),
            ("reconnect.backoff.ms", "10"),
            ("reconnect.backoff.max.ms", "10"),
        ],
    );
    let addr = p.cluster.brokers[&0].addr.clone();
    p.connect.insert(addr, pair::ConnectPolicy::Hang);
    let _ = p.send_record(ProducerRecord::unkeyed("t", "x"));
    p.run_for(40 * SECOND);
    let timeouts: Vec<Duration> = p
        .connects
        .iter()
        .filter_map(|&(at, conn, _)| {
            let closed = p
                .closes
                .iter()
                .find(|c| c.1 == conn && c.2 == CloseReason::ConnectTimeout)?;
            Some(closed.0.saturating_duration_since(at))
        })
        .collect();
    assert!(timeouts.len() >= 6, "{timeouts:?}");
    for (n, t) in timeouts.iter().enumerate() {
        let expected = (1000u64 << n.min(10)).min(5000);
        let low = Duration::from_millis(expected * 8 / 10);
        let high = Duration::from_millis((expected * 12 / 10).min(5000));
        assert!(
            low <= *t && *t <= high,
            "attempt {n}: {t:?} not in [{low:?}, {high:?}]: {timeouts:?}"
        );
    }
    let indices: Vec<usize> = p.connect_options.iter().map(|o| o.address_index).collect();
    assert_eq!(indices, (0..indices.len()).collect::<Vec<_>>());
    let o = p.connect_options[0];
    assert_eq!(
        (o.send_buffer, o.receive_buffer),
        (Some(131_072), Some(32_768))
    );
    assert_eq!(o.pick(&["a", "b"]), Some(&"a"));
    assert_eq!(p.connect_options[3].pick(&["a", "b"]), Some(&"b"));
    assert_eq!(o.pick::<&str>(&[]), None);
    p.session.assert_invariants();
}

/// An attempt that timed out, then one that became ready: the next setup timeout is
/// back to `socket.connection.setup.timeout.ms` (Java's `resetConnectionSetupTimeout`).
#[test]
fn a_ready_connection_resets_the_setup_timeout() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("socket.connection.setup.timeout.ms", "1000"),
            ("socket.connection.setup.timeout.max.ms", "8000"),
            ("reconnect.backoff.ms", "10"),
            ("reconnect.backoff.max.ms", "10"),
        ],
    );
    let addr = p.cluster.brokers[&0].addr.clone();
    p.connect.insert(addr.clone(), pair::ConnectPolicy::Hang);
    let id = p.send("t", 0, "x");
    p.run_for(4 * SECOND);
    assert!(
        p.closes.len() >= 2,
        "two attempts timed out: {:?}",
        p.closes
    );
    p.connect.remove(&addr);
    p.settle(20 * SECOND);
    assert!(matches!(p.outcome(id), Some(Ok(_))));
    let ready = p.connects.len();
    let conn = p.connects[ready - 1].1;
    p.connect.insert(addr, pair::ConnectPolicy::Hang);
    p.reset(conn);
    p.send("t", 0, "y");
    p.run_for(3 * SECOND);
    let (at, next, _) = p.connects[ready];
    let closed = p
        .closes
        .iter()
        .find(|c| c.1 == next)
        .expect("the attempt after a ready connection timed out");
    let took = closed.0.saturating_duration_since(at);
    assert!(took <= Duration::from_millis(1200), "{took:?}");
}
