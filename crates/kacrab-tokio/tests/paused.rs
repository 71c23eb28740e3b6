//! The driver loop's timers and backoff under paused Tokio time, against a scripted
//! in-memory broker: virtual time only moves when every task is idle, so each assertion
//! about *when* something happened is exact.

use std::time::Duration;

use crate::scripted::{Action, Broker, ConnectAction, ADDR, TOPIC};
use kacrab_tokio::{DeliveryError, ProduceError, Producer, ProducerRecord, SendError};
use tokio::time::Instant;

/// A producer on `broker`: no linger, 100 ms backoff, 1 s request timeout, 10 s delivery
/// timeout, unless `extra` says otherwise.
fn producer(broker: &Broker, extra: &[(&str, &str)]) -> Producer {
    let mut b = Producer::builder();
    let base = [
        ("bootstrap.servers", ADDR),
        ("linger.ms", "0"),
        ("retry.backoff.ms", "100"),
        ("retry.backoff.max.ms", "100"),
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "10000"),
    ];
    for (k, v) in base.iter().chain(extra) {
        b.set(k, v).unwrap();
    }
    b.connector(broker.connector());
    b.build().unwrap()
}

fn record(partition: i32, value: &str) -> ProducerRecord {
    ProducerRecord::new(TOPIC, partition, value.to_owned())
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// A Produce the broker applied but never answered: the core times the request out after
/// exactly request.timeout.ms of (virtual) time, the connection is closed, and the retry
/// goes after the backoff; the broker de-duplicates it, so the record is in the log once
/// and acknowledged with its first offset.
#[tokio::test(start_paused = true)]
async fn unanswered_produce_times_out_then_retries_after_backoff() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::ApplyThenSilence]);
    let p = producer(&broker, &[]);
    let meta = p
        .send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered");
    assert_eq!(meta.offset, Some(0));

    let s = broker.state.lock().unwrap();
    assert_eq!(s.produce_log.len(), 2, "first attempt and one retry");
    let gap = s.produce_log[1].0 - s.produce_log[0].0;
    // request.timeout.ms, then retry.backoff.ms (100 ms, +-20% jitter).
    assert!(
        gap >= Duration::from_millis(1000 + 80),
        "retried after {} ms",
        ms(gap)
    );
    assert!(
        gap <= Duration::from_millis(1000 + 120 + 5),
        "retried after {} ms",
        ms(gap)
    );
    assert_eq!(
        s.produce_log[1].1, s.produce_log[0].1,
        "the retry resends the same sequence"
    );
    assert_eq!(s.records(0), 1, "exactly once in the log");
    // Bootstrap connection, the leader's, and the leader's again after the timeout.
    assert_eq!(s.connect_log.len(), 3);
}

/// A broker that never answers Produce: the record fails with a delivery timeout at
/// exactly delivery.timeout.ms after it was sent, possibly written.
#[tokio::test(start_paused = true)]
async fn delivery_timeout_fails_the_record_at_the_right_virtual_time() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::Silence; 64]);
    let p = producer(&broker, &[("delivery.timeout.ms", "2500")]);
    let start = Instant::now();
    let err = p
        .send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .unwrap_err();
    let took = start.elapsed();
    match &err {
        ProduceError::Delivery {
            error: DeliveryError::Timeout { partition },
            possibly_written,
        } => {
            assert_eq!(partition.partition, 0);
            assert!(*possibly_written, "it was written to a socket");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        took >= Duration::from_millis(2500),
        "failed after {} ms",
        ms(took)
    );
    assert!(
        took < Duration::from_millis(2502),
        "failed after {} ms",
        ms(took)
    );
    // Sent at 0, timed out at 1000 ms, resent at ~1100, timed out at ~2100, resent at
    // ~2200, expired at 2500.
    let s = broker.state.lock().unwrap();
    assert_eq!(s.produce_log.len(), 3);
    assert_eq!(s.records(0), 0);
}

/// The linger timer: a lone record is sent exactly linger.ms after it was queued.
#[tokio::test(start_paused = true)]
async fn linger_timer_wakes_at_the_deadline() {
    let broker = Broker::new(1);
    let p = producer(&broker, &[("linger.ms", "500")]);
    let start = Instant::now();
    p.send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered");
    let s = broker.state.lock().unwrap();
    let sent = s.produce_log[0].0 - start;
    assert!(
        sent >= Duration::from_millis(500),
        "sent after {} ms",
        ms(sent)
    );
    assert!(
        sent < Duration::from_millis(502),
        "sent after {} ms",
        ms(sent)
    );
}

/// flush() sends at once, without waiting for linger.ms, and returns once every record
/// sent before it has an outcome.
#[tokio::test(start_paused = true)]
async fn flush_ignores_linger_and_waits_for_outcomes() {
    let broker = Broker::new(2);
    let p = producer(
        &broker,
        &[("linger.ms", "60000"), ("delivery.timeout.ms", "120000")],
    );
    let start = Instant::now();
    let mut futures = Vec::new();
    for i in 0..10 {
        futures.push(p.send(record(i % 2, &i.to_string())).await.expect("queued"));
    }
    p.flush().await;
    assert!(
        start.elapsed() < Duration::from_millis(10),
        "flush took {:?}",
        start.elapsed()
    );
    {
        let s = broker.state.lock().unwrap();
        assert_eq!(s.records(0) + s.records(1), 10);
    }
    for (i, f) in futures.into_iter().enumerate() {
        let meta = f.await.expect("delivered");
        assert_eq!(meta.partition, (i % 2) as i32);
        assert_eq!(meta.offset, Some((i / 2) as i64), "send order is log order");
    }
}

/// Connection attempts that fail are retried after retry.backoff.ms (the core's
/// InitProducerId and Metadata retries, each backing off exponentially), never in a
/// tight loop.
#[tokio::test(start_paused = true)]
async fn refused_connections_back_off() {
    let broker = Broker::new(1);
    broker.script_connects(&[ConnectAction::Refuse; 6]);
    let start = Instant::now();
    let p = producer(&broker, &[("retry.backoff.max.ms", "1000")]);
    p.send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered once the broker accepts");
    let s = broker.state.lock().unwrap();
    let attempts: Vec<u128> = s.connect_log.iter().map(|(t, _)| ms(*t - start)).collect();
    assert_eq!(
        s.connect_log
            .iter()
            .filter(|(_, a)| *a == ConnectAction::Refuse)
            .count(),
        6,
        "{attempts:?}"
    );
    // The first attempt at once; the next after a backoff of 100 ms (+-20%).
    assert_eq!(attempts[0], 0, "{attempts:?}");
    assert!(attempts[1] >= 80, "{attempts:?}");
    // Two retry streams, each doubling: six refusals take well over 100+200+400 ms.
    assert!(attempts[6] >= 500, "{attempts:?}");
    // The refusals come one at a time (the reconnect backoff is per address); once the
    // address accepts, the bootstrap connection and the broker's own may both open.
    assert!(
        attempts[..6].windows(2).all(|w| w[1] > w[0]),
        "never two refused attempts at once: {attempts:?}"
    );
    assert_eq!(s.records(0), 1);
}

/// A broker that accepts the connection but never answers (not even ApiVersions) must
/// not wedge the producer: the connection is given up after request.timeout.ms and a new
/// one is opened.
#[tokio::test(start_paused = true)]
async fn a_mute_broker_is_given_up_after_the_request_timeout() {
    let broker = Broker::new(1);
    broker.script_connects(&[ConnectAction::Mute]);
    let p = producer(&broker, &[]);
    let start = Instant::now();
    p.send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered through a fresh connection");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(1000), "took {} ms", ms(took));
    assert!(
        took < Duration::from_millis(1000 + 1000),
        "took {} ms",
        ms(took)
    );
    assert_eq!(broker.state.lock().unwrap().records(0), 1);
}

/// The same once versions are negotiated: a broker that stops answering Metadata and
/// InitProducerId (requests the core retries without closing anything itself) loses its
/// connection after request.timeout.ms.
#[tokio::test(start_paused = true)]
async fn a_broker_mute_after_the_handshake_is_given_up_after_the_request_timeout() {
    let broker = Broker::new(1);
    broker.script_connects(&[ConnectAction::MuteAfterHandshake]);
    let p = producer(&broker, &[]);
    let start = Instant::now();
    p.send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered through a fresh connection");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(1000), "took {} ms", ms(took));
    assert!(
        took < Duration::from_millis(1000 + 1000),
        "took {} ms",
        ms(took)
    );
    assert_eq!(broker.state.lock().unwrap().records(0), 1);
}

/// A connection that opens and negotiates slowly: the core times out the requests
/// queued behind the negotiation (request.timeout.ms) and retries them after the backoff.
/// The timed-out ones are never written once the connection is ready (the core would
/// refuse their answers and the connection would be dropped), only their retries.
#[tokio::test(start_paused = true)]
async fn requests_timed_out_behind_a_slow_handshake_are_not_written_after_it() {
    let broker = Broker::new(1);
    broker.script_connects(&[ConnectAction::Slow {
        connect_ms: 600,
        handshake_ms: 600,
    }]);
    let p = producer(&broker, &[]);
    let meta = p
        .send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered");
    assert_eq!(meta.offset, Some(0));
    let s = broker.state.lock().unwrap();
    assert_eq!(s.metadata_requests, 1, "only the retry of the first lookup");
    assert_eq!(
        s.connect_log.len(),
        2,
        "the bootstrap connection and the leader's"
    );
    assert_eq!(s.records(0), 1);
}

/// A connection attempt that hangs is given up at socket.connection.setup.timeout.ms
/// (the session's timer: the connection task has none) and a new one is opened.
#[tokio::test(start_paused = true)]
async fn a_hanging_connect_is_given_up_at_the_setup_timeout() {
    let broker = Broker::new(1);
    broker.script_connects(&[ConnectAction::Slow {
        connect_ms: 60_000,
        handshake_ms: 0,
    }]);
    let p = producer(&broker, &[("socket.connection.setup.timeout.ms", "700")]);
    let start = Instant::now();
    p.send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered");
    let took = start.elapsed();
    // Java's setup timeout carries ±20 % jitter (`ClusterConnectionStates`), drawn from
    // a generator the driver seeds from the operating system: 560..=840 ms, plus the
    // paused clock's few steps for the next attempts.
    assert!(
        took >= Duration::from_millis(560) && took < Duration::from_millis(840 + 200),
        "took {} ms",
        ms(took)
    );
    let s = broker.state.lock().unwrap();
    assert_eq!(
        s.connect_log.len(),
        3,
        "the hung attempt, its successor, the leader"
    );
    assert_eq!(s.records(0), 1);
}

/// close_timeout: what is still without an outcome when the timeout passes fails,
/// possibly written if it was on the wire; the close resolves then, not at
/// delivery.timeout.ms.
#[tokio::test(start_paused = true)]
async fn close_with_a_timeout_fails_what_is_left_when_it_passes() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::Silence; 64]);
    let p = producer(&broker, &[("delivery.timeout.ms", "60000")]);
    let pending = p.send(record(0, "a")).await.expect("queued");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let start = Instant::now();
    p.close_timeout(Duration::from_millis(500)).await;
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_millis(502),
        "took {} ms",
        ms(took)
    );
    assert!(p.is_closed());
    match pending.await {
        Err(e @ ProduceError::Delivery { .. }) => {
            assert!(e.possibly_written(), "it was on the wire: {e}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(broker.state.lock().unwrap().records(0), 0);
}

/// Bootstrap fallback: a dead first bootstrap server is skipped for the next one.
#[tokio::test(start_paused = true)]
async fn a_dead_bootstrap_server_falls_back_to_the_next() {
    let broker = Broker::new(1);
    let mut b = Producer::builder();
    b.set("bootstrap.servers", &format!("dead-1:9092,{ADDR}"))
        .unwrap();
    b.set("linger.ms", "0").unwrap();
    b.connector(broker.connector());
    let p = b.build().unwrap();
    let start = Instant::now();
    p.send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered through the second bootstrap server");
    // One lookup lost with its connection, then the next after the backoff of one
    // failed metadata update (Java's `Metadata.failedUpdate` / `refreshBackoff`,
    // KIP-580: retry.backoff.ms doubled, 200 ms +-20%), on the other bootstrap server.
    assert!(
        start.elapsed() <= Duration::from_millis(250),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(broker.state.lock().unwrap().records(0), 1);
}

/// NOT_LEADER_OR_FOLLOWER: the core forgets the leader and asks for metadata; the
/// adapter routes that request and the retry, and the record lands once.
#[tokio::test(start_paused = true)]
async fn not_leader_refreshes_metadata_and_retries() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::Error(6)]);
    let p = producer(&broker, &[]);
    let meta = p
        .send(record(0, "a"))
        .await
        .expect("queued")
        .await
        .expect("delivered");
    assert_eq!(meta.offset, Some(0));
    let s = broker.state.lock().unwrap();
    assert_eq!(s.metadata_requests, 2, "the initial lookup and the refresh");
    assert_eq!(s.produce_log.len(), 2);
    assert_eq!(s.records(0), 1);
}

/// partition_count fetches the topic's metadata; a topic the cluster does not report
/// gives `None` after max.block.ms, asking again every retry.backoff.ms meanwhile.
#[tokio::test(start_paused = true)]
async fn partition_count_from_metadata() {
    let broker = Broker::new(3);
    let p = producer(&broker, &[("max.block.ms", "1000")]);
    assert_eq!(p.partition_count(TOPIC).await, Some(3));
    let start = Instant::now();
    assert_eq!(p.partition_count("no-such-topic").await, None);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_millis(1002),
        "{took:?}"
    );
    let asked = broker.state.lock().unwrap().metadata_requests;
    assert!((10..=12).contains(&asked), "asked {asked} times");
    // A keyed record needs no partition count from the caller: the session's
    // partitioner hashes the key over the topic's partitions, as Java's does.
    let meta = p
        .send(ProducerRecord::keyed(TOPIC, "user-7", "v"))
        .await
        .expect("queued")
        .await
        .unwrap();
    assert_eq!(
        meta.partition,
        kacrab_driver::partition_for_key(b"user-7", 3)
    );
}

/// buffer.memory full: sends wait in order (max.block.ms) and go once deliveries free
/// space; none is refused, and send order stays log order.
#[tokio::test(start_paused = true)]
async fn full_buffer_waits_for_deliveries() {
    let broker = Broker::new(1);
    // The first request is lost: nothing is freed until its retry at ~1.1 s.
    broker.script_produce(&[Action::Silence]);
    let p = producer(
        &broker,
        &[("buffer.memory", "2048"), ("max.block.ms", "5000")],
    );
    let value = "x".repeat(500);
    let mut futures = Vec::new();
    for _ in 0..10 {
        futures.push(p.send(record(0, &value)).await.expect("queued"));
    }
    for (i, f) in futures.into_iter().enumerate() {
        let meta = f.await.expect("delivered");
        assert_eq!(meta.offset, Some(i as i64));
    }
    assert_eq!(broker.state.lock().unwrap().records(0), 10);
}

/// buffer.memory full for longer than max.block.ms: the waiting sends fail with
/// BufferFull at max.block.ms; the records already accepted are unaffected.
#[tokio::test(start_paused = true)]
async fn full_buffer_fails_after_max_block() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::Silence]);
    let p = producer(
        &broker,
        &[("buffer.memory", "2048"), ("max.block.ms", "300")],
    );
    let value = "x".repeat(500);
    let start = Instant::now();
    let mut outcomes = Vec::new();
    let mut refused_at_send = 0;
    for _ in 0..10 {
        let called = Instant::now();
        match p.send(record(0, &value)).await {
            Ok(f) => outcomes.push(tokio::spawn(async move { (f.await, called.elapsed()) })),
            Err(ProduceError::Send(SendError::BufferFull { .. })) => {
                let t = called.elapsed();
                assert!(
                    t >= Duration::from_millis(300) && t < Duration::from_millis(302),
                    "the send waited {t:?}"
                );
                refused_at_send += 1;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(
        refused_at_send > 0,
        "a send waited for buffer.memory and was refused"
    );
    let mut accepted = 0;
    for o in outcomes {
        match o.await.unwrap() {
            (Ok(_), _) => {
                accepted += 1;
                assert!(
                    start.elapsed() >= Duration::from_millis(1000),
                    "delivered by the retry"
                );
            }
            // Posted before the driver saw the buffer full: refused in the backlog.
            (Err(ProduceError::Send(SendError::BufferFull { .. })), t) => {
                assert!(
                    t >= Duration::from_millis(300) && t < Duration::from_millis(302),
                    "{t:?}"
                );
            }
            (Err(e), _) => panic!("unexpected {e}"),
        }
    }
    assert!((1..10).contains(&accepted), "{accepted} accepted");
    assert_eq!(broker.state.lock().unwrap().records(0), accepted);
}

/// close() flushes, then stops: later sends fail with Closed, flush returns at once.
#[tokio::test(start_paused = true)]
async fn close_flushes_then_refuses() {
    let broker = Broker::new(1);
    let p = producer(
        &broker,
        &[("linger.ms", "60000"), ("delivery.timeout.ms", "120000")],
    );
    let pending = p.send(record(0, "a")).await.expect("queued");
    let other = p.clone();
    p.close().await;
    assert!(p.is_closed() && other.is_closed());
    assert_eq!(pending.await.expect("delivered by close").offset, Some(0));
    let err = other.send(record(0, "b")).await.unwrap_err();
    assert_eq!(err, ProduceError::Send(SendError::Closed));
    other.flush().await;
    assert_eq!(broker.state.lock().unwrap().records(0), 1);
}

/// Dropping every handle closes the producer once every record has an outcome.
#[tokio::test(start_paused = true)]
async fn dropping_every_handle_still_delivers() {
    let broker = Broker::new(1);
    let p = producer(&broker, &[("linger.ms", "200")]);
    let pending = p.send(record(0, "a")).await.expect("queued");
    drop(p);
    assert_eq!(pending.await.expect("delivered").offset, Some(0));
}

/// A core configuration key the producer does not know is an error, as is a malformed
/// adapter key.
#[tokio::test(start_paused = true)]
async fn configuration_errors() {
    let e =
        Producer::from_properties(&[("bootstrap.servers", ADDR), ("lingerr.ms", "1")]).unwrap_err();
    assert!(e.to_string().contains("lingerr.ms"), "{e}");
    assert!(
        Producer::from_properties(&[("linger.ms", "1")]).is_err(),
        "no bootstrap.servers"
    );
    assert!(
        Producer::from_properties(&[("bootstrap.servers", ADDR), ("max.block.ms", "-1")]).is_err()
    );
    assert!(Producer::from_properties(&[
        ("bootstrap.servers", ADDR),
        ("acks", "1"),
        ("enable.idempotence", "true")
    ])
    .is_err());
}

/// A producer started before its topic exists, driven as `examples/tokio_produce.rs`
/// drives it: one task sends records for six partitions as fast as `send` admits them
/// while Metadata lists the topic without partitions (a broker answering while the topic
/// is created); at 500 ms the topic has its partitions. The first sends wait in the
/// session's backlog (Java's `KafkaProducer.waitOnMetadata`), the driver task asks again
/// every `retry.backoff.ms`, and once the topic is listed every record is acknowledged,
/// each once and in send order per partition, within a few backoffs of the creation.
#[tokio::test(start_paused = true)]
async fn records_sent_before_their_topic_exists_are_acknowledged_once_it_appears() {
    let broker = Broker::new(0);
    let p = producer(&broker, &[]);
    let state = std::sync::Arc::clone(&broker.state);
    let created = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        state.lock().unwrap().partitions = 6;
        Instant::now()
    });
    let mut pending = Vec::new();
    for i in 0..600 {
        let partition = i % 6;
        let queued = p
            .send(record(partition, &format!("r{i}")))
            .await
            .expect("admitted");
        pending.push((partition, queued));
    }
    let created = created.await.unwrap();
    let mut next_offset = [0i64; 6];
    for (partition, queued) in pending {
        let meta = tokio::time::timeout(Duration::from_secs(5), queued)
            .await
            .expect("an outcome within 5 s")
            .expect("acknowledged");
        let slot = &mut next_offset[usize::try_from(partition).unwrap()];
        assert_eq!(
            meta.offset,
            Some(*slot),
            "partition {partition}: send order"
        );
        *slot += 1;
    }
    let took = created.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "acknowledged {took:?} after the topic appeared"
    );
    let s = broker.state.lock().unwrap();
    for partition in 0..6 {
        assert_eq!(
            s.records(partition),
            100,
            "partition {partition}: each once"
        );
    }
}
