//! The shared adapter test suite (FakeBroker scenarios, transactions, and the real-Kafka
//! scenarios, which skip without a broker) run against the `mio` example driver: a third
//! driver, written only against the session's public API, passes what the Tokio and
//! blocking drivers pass.

#[path = "../examples/mio_driver/driver.rs"]
mod driver;

use std::sync::mpsc;

use bytes::Bytes;
use driver::{Id, MioProducer};
use kacrab_driver::{Completion, ProducerRecord, SessionConfig, TxnCall};
use kacrab_idempotence::TxnError;
use kacrab_testkit::{Delivery, DeliveryFailure, DeliveryReport, TestProducer};

/// The example driver as the testkit drives it.
struct Mio(MioProducer);

impl TestProducer for Mio {
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery {
        let record = ProducerRecord::new(topic, partition, value).with_key(key);
        let (tx, rx) = mpsc::sync_channel(1);
        self.0.call(
            move |s, now| Id::Send(s.send(record, now)),
            move |done| drop(tx.send(done)),
        );
        Delivery(Box::new(move || match rx.recv() {
            Ok(Completion::Record { outcome, .. }) => outcome
                .map(|md| DeliveryReport {
                    partition: md.partition,
                    offset: md.offset,
                })
                .map_err(|e| DeliveryFailure::new(&e, e.possibly_written())),
            other => Err(DeliveryFailure::new(
                format!("no outcome for the record: {other:?}"),
                true,
            )),
        }))
    }

    fn flush(&self) -> Result<(), String> {
        match self.0.call_wait(|s, now| Id::Op(s.flush(now))) {
            Some(Completion::Flushed { .. }) => Ok(()),
            other => Err(format!("flush did not complete: {other:?}")),
        }
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        if self.0.close(None) {
            Ok(())
        } else {
            Err("the loop ended before the close completed".into())
        }
    }

    fn transaction(&self, call: TxnCall) -> Result<(), TxnError> {
        match self
            .0
            .call_wait(move |s, now| Id::Op(s.transaction(call, now)))
        {
            Some(Completion::Transaction { result, .. }) => result,
            // The loop ended before completing the call: as the drivers report it.
            None => Err(TxnError::Closed),
            Some(other) => panic!("a transactional call completed as {other:?}"),
        }
    }
}

/// The testkit's factory for the example driver.
fn factory(properties: &[(&str, &str)]) -> Result<Box<dyn TestProducer>, String> {
    let config =
        SessionConfig::from_properties(properties.iter().copied()).map_err(|e| e.to_string())?;
    let producer = MioProducer::start(config).map_err(|e| e.to_string())?;
    Ok(Box::new(Mio(producer)))
}

// The same FakeBroker scenarios as the Tokio and blocking drivers, strict variants too.
kacrab_testkit::fake_broker_tests!(factory; out_of_order_sequence_all_acked, unknown_producer_id_all_acked);
kacrab_testkit::fake_broker_link_tests!(factory; stalled_peer_spares_the_others);

// Transactions, version 1 and 2: commit, abort, fencing, read_committed.
kacrab_testkit::fake_broker_txn_tests!(factory);

/// The real-Kafka scenarios (skipped unless KACRAB_KAFKA_BOOTSTRAP or
/// KACRAB_KAFKA_CLUSTER names a broker), in a module so CI can run only them.
mod real_kafka {
    use super::factory;
    kacrab_testkit::real_kafka_tests!(factory);
}

/// The Jepsen-style runs on a three-node cluster (skipped unless KACRAB_KAFKA_CLUSTER
/// names one): idempotent and transactional, in a module so CI runs them with the other
/// drivers' (`-- jepsen::`).
mod jepsen {
    use super::factory;
    kacrab_testkit::real_kafka_jepsen_tests!(factory);
}

/// The suite's `request_timeouts` scenario delays answers past `request.timeout.ms` but
/// still sends them, so a driver that never calls `handle_timeout` passes it. Here the
/// first Produce is never answered on a connection held open: only the session's
/// request timeout (reached through the driver's `poll_timeout`/`handle_timeout`) closes
/// that connection and lets the retry through.
#[test]
fn a_produce_left_unanswered_is_retried_after_request_timeout_ms() {
    use kacrab_testkit::{ApiKey, Cluster, Control, Trigger};
    use std::time::{Duration, Instant};

    let cluster = Cluster::start(1).expect("cluster");
    cluster.create_topic("silent", 1).expect("topic");
    let silenced = cluster.inject(
        ApiKey::Produce,
        Trigger::always().times(1),
        Control::Silence,
    );
    let bootstrap = cluster.bootstrap();
    let producer = factory(&[
        ("bootstrap.servers", bootstrap.as_str()),
        ("request.timeout.ms", "300"),
        ("delivery.timeout.ms", "60000"),
    ])
    .expect("producer");
    let start = Instant::now();
    let delivery = producer.send("silent", 0, Bytes::new(), Bytes::from_static(b"v"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(delivery.wait()));
    let outcome = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("no outcome 20 s after a 300 ms request timeout");
    assert_eq!(silenced.count(), 1, "the first Produce was silenced");
    let report = outcome.expect("the retry is acknowledged");
    assert_eq!(report.offset, Some(0), "in the log once");
    assert!(start.elapsed() >= Duration::from_millis(300));
    producer.close().expect("close");
}

/// Dropping the driver without `close` closes at once: a record whose Produce is never
/// answered fails (possibly written: it was on the wire) instead of waiting for ever.
#[test]
fn a_producer_dropped_without_close_fails_what_is_left() {
    use kacrab_testkit::{ApiKey, Cluster, Control, Trigger};
    use std::time::Duration;

    let cluster = Cluster::start(1).expect("cluster");
    cluster.create_topic("dropped", 1).expect("topic");
    let silenced = cluster.inject(ApiKey::Produce, Trigger::always(), Control::Silence);
    let bootstrap = cluster.bootstrap();
    let producer = factory(&[("bootstrap.servers", bootstrap.as_str())]).expect("producer");
    let delivery = producer.send("dropped", 0, Bytes::new(), Bytes::from_static(b"v"));
    while silenced.count() == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(producer);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(delivery.wait()));
    let outcome = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("an outcome soon after the drop");
    let error = outcome.expect_err("never acknowledged");
    assert!(error.possibly_written, "{error}");
}

/// A refused connect is reported at once (mio signals it as a writable event with a
/// pending socket error), so the session moves on to the next bootstrap server long
/// before `socket.connection.setup.timeout.ms`.
#[test]
fn a_refused_connect_moves_on_to_the_next_bootstrap_server() {
    use kacrab_testkit::Cluster;
    use std::time::Duration;

    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr")
    };
    let cluster = Cluster::start(1).expect("cluster");
    cluster.create_topic("refused", 1).expect("topic");
    let servers = format!("{refused},{}", cluster.bootstrap());
    let producer = factory(&[
        ("bootstrap.servers", servers.as_str()),
        ("socket.connection.setup.timeout.ms", "60000"),
    ])
    .expect("producer");
    let delivery = producer.send("refused", 0, Bytes::new(), Bytes::from_static(b"v"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(delivery.wait()));
    let outcome = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("acknowledged well before the 60 s connect timeout");
    assert_eq!(outcome.expect("acknowledged").offset, Some(0));
    producer.close().expect("close");
}

/// The example driver gives the session's metrics snapshot: against FakeBroker, one
/// acknowledged record counts once in `record-send-total`, its connection in
/// `connection-creation-total`.
#[test]
fn the_metrics_snapshot_counts_a_delivered_record() {
    use kacrab_testkit::Cluster;

    let cluster = Cluster::start(1).expect("cluster");
    cluster.create_topic("metrics", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let config = SessionConfig::from_properties([("bootstrap.servers", bootstrap.as_str())])
        .expect("config");
    let producer = MioProducer::start(config).expect("start");
    let record = ProducerRecord::new("metrics", 0, Bytes::from_static(b"v"));
    let done = producer.call_wait(move |s, now| Id::Send(s.send(record, now)));
    assert!(
        matches!(done, Some(Completion::Record { outcome: Ok(_), .. })),
        "{done:?}"
    );
    let m = producer.metrics().expect("the loop runs");
    assert_eq!(m.producer.record_send_total, 1.0);
    assert_eq!(m.topics["metrics"].record_send_total, 1.0);
    assert!(m.producer.connection_creation_total >= 1.0);
    assert!(m.producer.outgoing_byte_total > 0.0);
    let present: Vec<(&str, &str)> = m.metrics().iter().map(|x| (x.group, x.name)).collect();
    let missing = kacrab_testkit::metric_names::missing(&present);
    assert!(
        missing.is_empty(),
        "metrics missing from the snapshot: {missing:?}"
    );
    assert!(producer.close(None));
}

/// `send.buffer.bytes` and `receive.buffer.bytes` reach the sockets the example driver
/// opens, through `Session::connect_options`. Linux reports twice the value set
/// (`socket(7)`); the defaults it would otherwise report differ.
#[cfg(target_os = "linux")]
#[test]
fn socket_buffers_are_set_on_every_connection() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("buffers", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let peer: std::net::SocketAddr = bootstrap.parse().expect("an ip:port");
    let producer = factory(&[
        ("bootstrap.servers", bootstrap.as_str()),
        ("send.buffer.bytes", "50000"),
        ("receive.buffer.bytes", "40000"),
    ])
    .expect("producer");
    producer
        .send("buffers", 0, Bytes::new(), Bytes::from_static(b"v"))
        .wait()
        .expect("acknowledged");
    let buffers = kacrab_testkit::sockets::buffers_of_sockets_connected_to(peer);
    assert!(!buffers.is_empty(), "no connection to {peer}");
    for (send, receive) in buffers {
        assert_eq!(
            (send, receive),
            (100_000, 80_000),
            "Linux doubles the value set"
        );
    }
    producer.close().expect("close");
}

/// With `acks=0` the broker answers nothing: through the mio example driver each record
/// is delivered, without an offset, once the socket took its frame whole (the driver
/// reports it with `Session::handle_transmitted`; Java completes such a send in
/// `NetworkClient.handleCompletedSends`, after the write), and reaches the log once, in
/// order.
#[test]
fn acks_zero_records_are_delivered_once_written() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("fire", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let p = factory(&[
        ("bootstrap.servers", &bootstrap),
        ("acks", "0"),
        ("enable.idempotence", "false"),
    ])
    .expect("producer");
    let pending: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|v| p.send("fire", 0, Bytes::new(), Bytes::from(v)))
        .collect();
    for delivery in pending {
        let delivered = delivery.wait().expect("delivered");
        assert_eq!(delivered.offset, None, "acks=0 learns no offset");
    }
    p.close().expect("closed");
    let values: Vec<_> = cluster
        .log("fire", 0)
        .expect("log")
        .into_iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, ["a", "b", "c"]);
}

/// The loop takes a bounded batch of commands per turn before it serves its sockets: an
/// application that keeps calling does not leave an answer unread behind its calls.
/// Here the loop is held in one command while a Produce answer arrives and 4,096 more
/// calls queue behind it; the last of them runs after the answer was read.
#[test]
fn a_stream_of_commands_does_not_keep_an_answer_unread() {
    use kacrab_testkit::{ApiKey, Cluster, Control, Trigger};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    let cluster = Cluster::start(1).expect("cluster");
    cluster.create_topic("busy", 1).expect("topic");
    let answer_in = Duration::from_millis(100);
    let delayed = cluster.inject(
        ApiKey::Produce,
        Trigger::always().times(1),
        Control::Delay(answer_in),
    );
    let bootstrap = cluster.bootstrap();
    let config = SessionConfig::from_properties([("bootstrap.servers", bootstrap.as_str())])
        .expect("config");
    let producer = MioProducer::start(config).expect("start");
    let acked = Arc::new(AtomicBool::new(false));
    let record = ProducerRecord::new("busy", 0, Bytes::from_static(b"v"));
    let flag = Arc::clone(&acked);
    producer.call(
        move |s, now| Id::Send(s.send(record, now)),
        move |done| {
            let ok = matches!(done, Completion::Record { outcome: Ok(_), .. });
            flag.store(ok, Ordering::SeqCst);
        },
    );
    while delayed.count() == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (release, hold) = mpsc::channel::<()>();
    producer.call(
        move |s, now| {
            let _ = hold.recv();
            Id::Op(s.flush(now))
        },
        drop,
    );
    let seen = Arc::new(AtomicBool::new(false));
    for _ in 0..4096 {
        let (acked, seen) = (Arc::clone(&acked), Arc::clone(&seen));
        producer.call(
            move |s, now| {
                seen.store(acked.load(Ordering::SeqCst), Ordering::SeqCst);
                Id::Op(s.flush(now))
            },
            drop,
        );
    }
    // The answer is written while the loop is held, and waits in the socket.
    std::thread::sleep(answer_in * 4);
    release.send(()).expect("the loop holds the receiver");
    let flushed = producer.call_wait(|s, now| Id::Op(s.flush(now)));
    assert!(matches!(flushed, Some(Completion::Flushed { .. })));
    assert!(acked.load(Ordering::SeqCst), "acknowledged");
    assert!(
        seen.load(Ordering::SeqCst),
        "the last queued call ran before the answer waiting in the socket was read"
    );
    assert!(producer.close(None));
}
