//! The shared adapter test suite's FakeBroker scenarios (leader moves, crash and restart
//! mid-burst, apply-then-disconnect, injected errors, delays past request.timeout.ms, the
//! lying proxy), run against the blocking producer. FakeBroker runs on the testkit's own
//! Tokio runtime; the producer under test uses none.

use crate::support;

// Kacrab acknowledges every record under injected sequence errors (Java's rule), so the
// strict variants run too.
kacrab_testkit::fake_broker_tests!(support::factory; out_of_order_sequence_all_acked, unknown_producer_id_all_acked);

// Transactions, version 1 and 2: commit, abort, fencing, read_committed.
kacrab_testkit::fake_broker_txn_tests!(support::factory);

/// `send.buffer.bytes` and `receive.buffer.bytes` reach the sockets the blocking
/// producer opens (set before connecting, as Java's `Selector` does). Linux reports
/// twice the value set (`socket(7)`); the defaults it would otherwise report differ.
#[cfg(target_os = "linux")]
#[test]
fn socket_buffers_are_set_on_every_connection() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("buffers", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let peer: std::net::SocketAddr = bootstrap.parse().expect("an ip:port");
    let p = kacrab_blocking::Producer::from_properties(&[
        ("bootstrap.servers", &bootstrap),
        ("send.buffer.bytes", "50000"),
        ("receive.buffer.bytes", "40000"),
    ])
    .expect("producer");
    p.send(kacrab_blocking::ProducerRecord::new("buffers", 0, "v"))
        .expect("queued")
        .wait()
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
    p.close().expect("closed");
}

/// A final connection failure (TLS offered to a listener that closes on the
/// ClientHello, as Kafka's plaintext listener does) ends the producer; a send after it
/// is refused with that cause, not only "closed".
#[test]
fn a_send_after_a_final_connection_failure_carries_its_cause() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let addr = listener.local_addr().expect("address").to_string();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut hello = [0u8; 64];
            let _ = stream.read(&mut hello);
        }
    });
    let ca = include_str!("../../kacrab-driver/tests/fixtures/tls/ca.pem");
    let p = kacrab_blocking::Producer::from_properties(&[
        ("bootstrap.servers", &addr),
        ("security.protocol", "SSL"),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", ca),
    ])
    .expect("producer");
    let first = p
        .send(kacrab_blocking::ProducerRecord::new("t", 0, "a"))
        .expect("queued")
        .wait();
    let Err(kacrab_blocking::ProduceError::Connection { error, .. }) = first else {
        panic!("the record failed with the connection's cause: {first:?}");
    };
    // The I/O thread ends once the session finished; then the gate refuses.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match p.send(kacrab_blocking::ProducerRecord::new("t", 0, "b")) {
            Err(kacrab_blocking::SendError::Connection(cause)) => {
                assert_eq!(cause, error);
                break;
            }
            Err(other) => panic!("refused without the cause: {other}"),
            Ok(delivery) => match delivery.wait() {
                Err(kacrab_blocking::ProduceError::Connection {
                    error: cause,
                    possibly_written: false,
                }) => assert_eq!(cause, error),
                other => panic!("refused without the cause: {other:?}"),
            },
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the I/O thread never stopped"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

// Link faults (issue 18): blackholes, refused dials, slow links; all acknowledged once healed.
kacrab_testkit::fake_broker_link_tests!(support::factory; stalled_peer_spares_the_others);

/// With `acks=0` the broker answers nothing: each record is delivered, without an
/// offset, once its writer thread reports the frame written to the socket (the
/// session's `handle_transmitted`; Java completes such a send in
/// `NetworkClient.handleCompletedSends`, after the write), and every record reaches the
/// log once, in order.
#[test]
fn acks_zero_records_are_delivered_once_written() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("fire", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let p = kacrab_blocking::Producer::from_properties(&[
        ("bootstrap.servers", &bootstrap),
        ("acks", "0"),
        ("enable.idempotence", "false"),
    ])
    .expect("producer");
    let handles: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|v| {
            p.send(kacrab_blocking::ProducerRecord::new("fire", 0, v))
                .expect("queued")
        })
        .collect();
    for h in handles {
        let delivered = h.wait().expect("delivered");
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
