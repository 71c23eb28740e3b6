//! The testkit's FakeBroker scenarios against the Tokio producer: one `#[test]` each.
//! The producer runs on its own runtime inside the `TestProducer` impl; the scenarios run
//! on plain test threads.

use crate::support;

// Kacrab acknowledges every record under injected sequence errors (Java's rule), so the
// strict variants run too.
kacrab_testkit::fake_broker_tests!(
    support::factory;
    out_of_order_sequence_all_acked,
    unknown_producer_id_all_acked,
);

// Transactions, version 1 and 2: commit, abort, fencing, read_committed.
kacrab_testkit::fake_broker_txn_tests!(support::factory);

/// The metrics snapshot through the Tokio driver: against FakeBroker, one acknowledged
/// record counts once in `record-send-total`, per topic too, and the snapshot has every
/// metric issue 14 lists (`kacrab_testkit::metric_names::REQUIRED`).
#[test]
fn the_metrics_snapshot_counts_a_delivered_record() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("metrics", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[("bootstrap.servers", &bootstrap)])
            .expect("producer");
        p.send(kacrab_tokio::ProducerRecord::new("metrics", 0, "v"))
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        let m = p.metrics().await.expect("the driver runs");
        assert_eq!(m.producer.record_send_total, 1.0);
        assert_eq!(m.topics["metrics"].record_send_total, 1.0);
        assert!(m.producer.connection_creation_total >= 1.0);
        let present: Vec<(&str, &str)> = m.metrics().iter().map(|x| (x.group, x.name)).collect();
        let missing = kacrab_testkit::metric_names::missing(&present);
        assert!(
            missing.is_empty(),
            "metrics missing from the snapshot: {missing:?}"
        );
        p.close().await;
    });
}

/// The metrics move as Kafka's do against krafka's FakeBroker, through the Tokio
/// driver: one injected NOT_ENOUGH_REPLICAS counts its record in `record-retry-total`
/// (globally and for the topic; `Sender.reenqueueBatch`) and not in
/// `record-error-total`; Produce answers throttled 100 ms set `produce-throttle-time-max`
/// to 100 and the average below it (every response counts, as Kafka's `NetworkClient`
/// records it); one injected OUT_OF_ORDER_SEQUENCE_NUMBER bumps the epoch (KIP-360); and
/// every request was answered (`request-total` = `response-total`, none in flight).
#[test]
fn metrics_move_on_a_retry_a_throttle_and_an_epoch_bump() {
    use kacrab_testkit::cluster::{ApiKey, Control, ErrorCode};
    use kacrab_testkit::Trigger;
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("moves", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[
            ("bootstrap.servers", &bootstrap),
            ("retry.backoff.ms", "10"),
        ])
        .expect("producer");
        let send = |v: &'static str| p.send(kacrab_tokio::ProducerRecord::new("moves", 0, v));
        send("warm")
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        let before = p.metrics().await.expect("the driver runs").producer;
        assert_eq!(before.record_retry_total, 0.0);
        assert_eq!(
            before.produce_throttle_time_max, 0.0,
            "nothing throttled yet"
        );

        let fired = cluster.inject(
            ApiKey::Produce,
            Trigger::always().times(1),
            Control::Error(ErrorCode::NotEnoughReplicas),
        );
        send("retried")
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        assert_eq!(fired.count(), 1);
        cluster.clear_faults();

        cluster.set_throttle(ApiKey::Produce, std::time::Duration::from_millis(100));
        send("throttled")
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        cluster.clear_faults();

        let bumped = cluster.inject(
            ApiKey::Produce,
            Trigger::always().times(1),
            Control::Error(ErrorCode::OutOfOrderSequenceNumber),
        );
        send("bumped")
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        assert_eq!(bumped.count(), 1);

        let m = p.metrics().await.expect("the driver runs");
        let pm = &m.producer;
        assert_eq!(
            pm.record_retry_total, 2.0,
            "one NOT_ENOUGH_REPLICAS, one OUT_OF_ORDER"
        );
        assert_eq!(m.topics["moves"].record_retry_total, 2.0);
        assert_eq!(pm.record_error_total, 0.0);
        assert_eq!(pm.produce_throttle_time_max, 100.0);
        assert!(
            pm.produce_throttle_time_avg > 0.0 && pm.produce_throttle_time_avg < 100.0,
            "{}",
            pm.produce_throttle_time_avg
        );
        assert_eq!(pm.epoch_bump_total, 1.0);
        assert_eq!(pm.request_total, pm.response_total);
        assert_eq!(pm.requests_in_flight, 0.0);
        assert!(pm.response_rate > 0.0 && pm.request_rate > 0.0);
        assert!(pm.connection_creation_total >= 1.0);
        p.close().await;
    });
}

/// `send.buffer.bytes` and `receive.buffer.bytes` reach the sockets the Tokio producer
/// opens (set before connecting, as Java's `Selector` does). Linux reports twice the
/// value set (`socket(7)`); the defaults it would otherwise report differ.
#[cfg(target_os = "linux")]
#[test]
fn socket_buffers_are_set_on_every_connection() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("buffers", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let peer: std::net::SocketAddr = bootstrap.parse().expect("an ip:port");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[
            ("bootstrap.servers", &bootstrap),
            ("send.buffer.bytes", "50000"),
            ("receive.buffer.bytes", "40000"),
        ])
        .expect("producer");
        p.send(kacrab_tokio::ProducerRecord::new("buffers", 0, "v"))
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        let buffers = kacrab_testkit::sockets::buffers_of_sockets_connected_to(peer);
        assert!(!buffers.is_empty(), "no connection to {peer}");
        for (send, receive) in buffers {
            assert!(send >= 50_000 && receive >= 40_000, "{send} {receive}");
            assert_eq!(
                (send, receive),
                (100_000, 80_000),
                "Linux doubles the value set"
            );
        }
        p.close().await;
    });
}

/// A final connection failure (TLS offered to a listener that closes on the
/// ClientHello, as Kafka's plaintext listener does) ends the producer; a send after it
/// is refused with that cause, not only "closed" (Java's `KafkaProducer.send` rethrows
/// the AuthenticationException).
#[test]
fn a_send_after_a_final_connection_failure_carries_its_cause() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let addr = listener.local_addr().expect("address").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut hello = [0u8; 64];
            let _ = stream.read(&mut hello);
        }
    });
    let ca = include_str!("../../kacrab-driver/tests/fixtures/tls/ca.pem");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[
            ("bootstrap.servers", &addr),
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", ca),
        ])
        .expect("producer");
        let first = p
            .send(kacrab_tokio::ProducerRecord::new("t", 0, "a"))
            .await
            .expect("queued")
            .await;
        let Err(kacrab_tokio::ProduceError::Connection { error, .. }) = first else {
            panic!("the record failed with the connection's cause: {first:?}");
        };
        let later = p.send(kacrab_tokio::ProducerRecord::new("t", 0, "b")).await;
        match later {
            Err(kacrab_tokio::ProduceError::Connection {
                error: cause,
                possibly_written: false,
            }) => assert_eq!(cause, error),
            Err(other) => panic!("refused without the cause: {other}"),
            Ok(delivery) => match delivery.await {
                Err(kacrab_tokio::ProduceError::Connection {
                    error: cause,
                    possibly_written: false,
                }) => assert_eq!(cause, error),
                other => panic!("refused without the cause: {other:?}"),
            },
        }
    });
}

// Link faults (issue 18): blackholes, refused dials, slow links; all acknowledged once healed.
// `stalled_peer_spares_the_others` (a broker that stops reading must not stall the others,
// item 3) failed while connection tasks waited for the core's Produce ticket turn: a write
// blocked on the stalled socket held it, and so did a Produce the session queued on the
// stalled broker's new connection until its negotiation ended, so later Produce frames to
// the healthy brokers sat unwritten past their delivery timeout.
kacrab_testkit::fake_broker_link_tests!(support::factory; stalled_peer_spares_the_others);

/// With `acks=0` the broker answers nothing: each record is delivered, without an
/// offset, once its connection task reports the frame written and flushed (the
/// session's `handle_transmitted`; Java completes such a send in
/// `NetworkClient.handleCompletedSends`, after the write), and every record reaches the
/// log once, in order.
#[test]
fn acks_zero_records_are_delivered_once_written() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("fire", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[
            ("bootstrap.servers", &bootstrap),
            ("acks", "0"),
            ("enable.idempotence", "false"),
        ])
        .expect("producer");
        let mut pending = Vec::new();
        for v in ["a", "b", "c"] {
            let record = kacrab_tokio::ProducerRecord::new("fire", 0, v);
            pending.push(p.send(record).await.expect("queued"));
        }
        for delivery in pending {
            let delivered = delivery.await.expect("delivered");
            assert_eq!(delivered.offset, None, "acks=0 learns no offset");
        }
        p.close().await;
    });
    let values: Vec<_> = cluster
        .log("fire", 0)
        .expect("log")
        .into_iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, ["a", "b", "c"]);
}
