//! The blocking producer against krafka's FakeBroker on loopback, checked against the
//! broker's own log. FakeBroker needs Tokio: it runs on a runtime of its own (background
//! worker threads); the producer under test uses none.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kacrab_blocking::{
    ProduceError, Producer, ProducerRecord, RecordMetadata, SendError, WaitError,
};
use krafka::testing::{ApiKey, Control, FakeBroker};

struct Fake {
    broker: FakeBroker,
    _rt: tokio::runtime::Runtime,
}

fn fake(brokers: usize) -> Fake {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let broker = rt.block_on(FakeBroker::start_cluster(brokers)).unwrap();
    Fake { broker, _rt: rt }
}

fn producer(f: &Fake, extra: &[(&str, &str)]) -> Producer {
    let bootstrap = f.broker.bootstrap_servers();
    let mut props = vec![
        ("bootstrap.servers", bootstrap.as_str()),
        ("client.id", "smoke"),
    ];
    props.extend_from_slice(extra);
    Producer::from_properties(&props).unwrap()
}

/// Every acknowledged record exactly once, in send order, at the offset reported.
fn check_log(f: &Fake, topic: &str, sent: &BTreeMap<i32, Vec<(String, RecordMetadata)>>) {
    let records = f.broker.all_records(topic).unwrap();
    let mut log: BTreeMap<i32, Vec<(String, i64)>> = BTreeMap::new();
    for r in records {
        let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
        log.entry(r.partition).or_default().push((key, r.offset));
    }
    for (partition, acked) in sent {
        let got = log.remove(partition).unwrap_or_default();
        let got_keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        let want_keys: Vec<&str> = acked.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            got_keys, want_keys,
            "partition {partition}: log differs from acknowledged sends"
        );
        for ((key, md), (_, offset)) in acked.iter().zip(&got) {
            if let Some(o) = md.offset {
                assert_eq!(
                    o, *offset,
                    "partition {partition} key {key}: reported offset differs"
                );
            }
        }
    }
    assert!(
        log.is_empty(),
        "records in partitions nothing was sent to: {log:?}"
    );
}

#[test]
fn ten_thousand_records_six_partitions_exactly_once() {
    let f = fake(1);
    assert!(f.broker.create_topic("smoke", 6));
    let p = producer(&f, &[("linger.ms", "5")]);
    let mut handles = Vec::new();
    for i in 0..10_000u32 {
        let record = ProducerRecord::new("smoke", (i % 6) as i32, format!("value-{i}"))
            .with_key(i.to_string());
        handles.push((i, p.send(record).unwrap()));
    }
    p.flush().unwrap();
    let mut sent: BTreeMap<i32, Vec<(String, RecordMetadata)>> = BTreeMap::new();
    for (i, h) in handles {
        assert!(
            h.is_done(),
            "flush returned before record {i} had an outcome"
        );
        let md = h.wait().unwrap();
        assert_eq!(md.partition, (i % 6) as i32);
        sent.entry(md.partition)
            .or_default()
            .push((i.to_string(), md));
    }
    p.close().unwrap();
    check_log(&f, "smoke", &sent);
}

#[test]
fn callbacks_apply_then_disconnect_and_leader_moves() {
    let f = fake(3);
    assert!(f.broker.create_topic("moves", 6));
    // Every 7th Produce is applied, then its connection dropped before the answer.
    let n = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&n);
    f.broker.on(ApiKey::Produce, move |_| {
        if counter.fetch_add(1, Ordering::Relaxed) % 7 == 3 {
            Control::ApplyThen(Box::new(Control::Disconnect))
        } else {
            Control::Pass
        }
    });
    let p = producer(&f, &[("linger.ms", "2"), ("retry.backoff.ms", "10")]);
    type Outcomes = Arc<Mutex<Vec<(u32, Result<RecordMetadata, ProduceError>)>>>;
    let results: Outcomes = Arc::default();
    for i in 0..6_000u32 {
        if i == 2_000 || i == 4_000 {
            for part in 0..6 {
                f.broker
                    .set_leader("moves", part, (i as i32 / 2_000 + part) % 3);
            }
        }
        let record = ProducerRecord::new("moves", (i % 6) as i32, "v").with_key(i.to_string());
        let results = Arc::clone(&results);
        p.send_with_callback(record, move |r| results.lock().unwrap().push((i, r)))
            .unwrap();
    }
    p.close().unwrap();
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    assert_eq!(results.len(), 6_000, "every send resolved once");
    results.sort_by_key(|(i, _)| *i);
    let mut sent: BTreeMap<i32, Vec<(String, RecordMetadata)>> = BTreeMap::new();
    for (i, r) in results {
        let md = r.unwrap_or_else(|e| panic!("record {i}: {e}"));
        sent.entry(md.partition)
            .or_default()
            .push((i.to_string(), md));
    }
    check_log(&f, "moves", &sent);
    assert!(n.load(Ordering::Relaxed) > 0);
}

#[test]
fn close_then_send_fails_and_flush_is_ok() {
    let f = fake(1);
    assert!(f.broker.create_topic("c", 1));
    let p = producer(&f, &[]);
    let md = p
        .send(ProducerRecord::new("c", 0, "x"))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(md.offset, Some(0));
    let q = p.clone();
    p.close().unwrap();
    assert!(matches!(
        q.send(ProducerRecord::new("c", 0, "y")),
        Err(SendError::Rejected(kacrab_idempotence::SendError::Closed))
    ));
    q.flush().unwrap();
    q.close().unwrap();
}

#[test]
fn partition_count_and_keyed_records() {
    let f = fake(1);
    assert!(f.broker.create_topic("k", 4));
    let p = producer(&f, &[("max.block.ms", "3000")]);
    assert_eq!(p.partition_count("k").unwrap(), 4);
    // The session's partitioner hashes the key over the topic's four partitions.
    let r = ProducerRecord::keyed("k", "foobar", "v");
    assert_eq!(r.partition, None);
    let md = p.send(r).unwrap().wait().unwrap();
    assert_eq!(md.partition, kacrab_driver::partition_for_key(b"foobar", 4));
    // FakeBroker creates unknown topics on Metadata, so no Timeout can be provoked here.
    let _ = WaitError::Timeout;
    p.close().unwrap();
}

#[test]
fn record_too_large_is_reported_through_the_handle() {
    let f = fake(1);
    assert!(f.broker.create_topic("big", 1));
    let p = producer(&f, &[("max.request.size", "1000")]);
    let err = p
        .send(ProducerRecord::new("big", 0, vec![0u8; 5000]))
        .unwrap()
        .wait()
        .unwrap_err();
    assert!(matches!(
        err,
        ProduceError::Send(kacrab_idempotence::SendError::RecordTooLarge { .. })
    ));
    assert!(!err.possibly_written());
    p.close().unwrap();
}

#[test]
fn buffer_full_blocks_then_times_out() {
    let f = fake(1);
    assert!(f.broker.create_topic("slow", 1));
    // Nothing is answered: the buffer fills and stays full.
    f.broker.on(ApiKey::Produce, |_| Control::Silence);
    let p = producer(
        &f,
        &[
            ("buffer.memory", "20000"),
            ("batch.size", "1000"),
            ("max.block.ms", "300"),
            ("linger.ms", "0"),
        ],
    );
    let mut handles = Vec::new();
    let mut refused = None;
    for i in 0..1000 {
        match p.send(ProducerRecord::new("slow", 0, vec![b'x'; 500])) {
            Ok(h) => handles.push(h),
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
    }
    let (i, e) = refused.expect("send blocked and timed out");
    assert_eq!(e, SendError::Timeout(Duration::from_millis(300)));
    assert!(i > 10, "refused too early: {i}");
    p.close_timeout(Duration::from_millis(100)).unwrap();
    for h in handles {
        assert!(h.wait().is_err());
    }
}

#[test]
fn send_blocks_while_the_buffer_is_full_then_resumes_in_order() {
    let f = fake(1);
    assert!(f.broker.create_topic("full", 1));
    // Slow answers: buffer.memory holds a few dozen records, so sends wait for room.
    f.broker.on(ApiKey::Produce, |_| {
        Control::Delay(Duration::from_millis(40))
    });
    let p = producer(
        &f,
        &[
            ("buffer.memory", "20000"),
            ("batch.size", "1000"),
            ("max.block.ms", "20000"),
            ("linger.ms", "0"),
        ],
    );
    let start = std::time::Instant::now();
    let handles: Vec<_> = (0..150u32)
        .map(|i| {
            let record = ProducerRecord::new("full", 0, vec![b'x'; 500]).with_key(i.to_string());
            p.send(record).expect("room comes before max.block.ms")
        })
        .collect();
    let sending = start.elapsed();
    let unfinished = handles.iter().filter(|h| !h.is_done()).count();
    // At most what buffer.memory holds, plus what was on the channel (at most
    // buffer.memory's worth) when the I/O thread saw the buffer full: ~2 x 36 here.
    assert!(
        unfinished <= 80,
        "send returned while {unfinished} records were without an outcome: it did not block"
    );
    let mut sent: BTreeMap<i32, Vec<(String, RecordMetadata)>> = BTreeMap::new();
    for (i, h) in handles.into_iter().enumerate() {
        let md = h.wait().unwrap_or_else(|e| panic!("record {i}: {e}"));
        sent.entry(md.partition)
            .or_default()
            .push((i.to_string(), md));
    }
    p.close().unwrap();
    check_log(&f, "full", &sent);
    assert!(sending >= Duration::from_millis(200), "{sending:?}");
}

#[test]
fn bootstrap_must_name_host_and_port() {
    for bad in ["", " , ", "localhost", "host:port", ":9092"] {
        assert!(
            Producer::from_properties(&[("bootstrap.servers", bad)]).is_err(),
            "{bad:?}"
        );
    }
    let p = Producer::from_properties(&[("bootstrap.servers", "localhost:1, [::1]:2")]).unwrap();
    p.close().unwrap();
    assert!(matches!(
        Producer::from_properties(&[("bootstrap.servers", "localhost:1"), ("lingerr.ms", "1")]),
        Err(kacrab_blocking::BuildError::Config(_))
    ));
    // A transactional producer builds; without init_transactions it may not send (its
    // record first waits for its topic's metadata, which "localhost:1" never gives, so
    // max.block.ms is short).
    let txn = Producer::from_properties(&[
        ("bootstrap.servers", "localhost:1"),
        ("transactional.id", "t"),
        ("max.block.ms", "100"),
    ])
    .expect("transactional producer");
    let refused = txn.send(ProducerRecord::new("t", 0, "x"));
    assert!(refused.is_err() || refused.unwrap().wait().is_err());
    txn.close_timeout(std::time::Duration::from_millis(100))
        .unwrap();
}

#[test]
fn producer_is_send_sync_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Producer>();
}

#[test]
fn callbacks_cannot_wait_and_may_panic_and_drop_closes_in_the_background() {
    let f = fake(1);
    assert!(f.broker.create_topic("cb", 1));
    let p = producer(&f, &[]);
    let (tx, rx) = std::sync::mpsc::channel();
    // A callback runs on the I/O thread: flush and close refuse to wait there.
    let q = p.clone();
    let t = tx.clone();
    p.send_with_callback(ProducerRecord::new("cb", 0, "a"), move |r| {
        t.send((r.is_ok(), q.flush(), q.close())).unwrap();
    })
    .unwrap();
    let (ok, flushed, closed) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(ok);
    assert_eq!(flushed, Err(WaitError::OnIoThread));
    assert_eq!(closed, Err(WaitError::OnIoThread));
    // A panicking callback does not take the I/O thread down.
    p.send_with_callback(ProducerRecord::new("cb", 0, "b"), |_| {
        panic!("callback panics")
    })
    .unwrap();
    let md = p
        .send(ProducerRecord::new("cb", 0, "c"))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(md.offset, Some(2));
    // Dropping every handle without close still delivers what was sent.
    let t = tx.clone();
    p.send_with_callback(ProducerRecord::new("cb", 0, "d"), move |r| {
        t.send((r.is_ok(), Ok(()), Ok(()))).unwrap();
    })
    .unwrap();
    drop(p);
    let (ok, _, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(ok);
    assert_eq!(f.broker.all_records("cb").unwrap().len(), 4);
}

#[test]
fn unreachable_bootstrap_fails_records_after_max_block() {
    // A port nothing listens on: every connect fails (redialled on the reconnect
    // backoff); the record waits for its topic's metadata until max.block.ms fails it,
    // as Java's `KafkaProducer.waitOnMetadata` does for an explicit partition too.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let p = Producer::from_properties(&[
        ("bootstrap.servers", addr.as_str()),
        ("request.timeout.ms", "200"),
        ("delivery.timeout.ms", "500"),
        ("max.block.ms", "500"),
        ("linger.ms", "0"),
    ])
    .unwrap();
    let err = p
        .send(ProducerRecord::new("t", 0, "x"))
        .unwrap()
        .wait()
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ProduceError::Topic {
                error: kacrab_driver::TopicError::NotPresent { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let stats = p.io_stats();
    assert!(stats.connect_failures > 0, "{stats:?}");
    eprintln!("{stats:?}");
    p.close().unwrap();
}

/// The metrics snapshot through the blocking driver: against FakeBroker, every
/// acknowledged record counts once in `record-send-total` (no retries), per topic too.
#[test]
fn the_metrics_snapshot_counts_every_delivered_record() {
    let f = fake(1);
    assert!(f.broker.create_topic("m", 2));
    let p = producer(&f, &[]);
    let handles: Vec<_> = (0..10)
        .map(|i| p.send(ProducerRecord::new("m", i % 2, "v")).unwrap())
        .collect();
    p.flush().unwrap();
    for h in handles {
        h.wait().unwrap();
    }
    let m = p.metrics().expect("the I/O thread runs");
    assert_eq!(m.client_id, "smoke");
    assert_eq!(m.producer.record_send_total, 10.0);
    assert_eq!(m.producer.record_error_total, 0.0);
    assert_eq!(m.topics["m"].record_send_total, 10.0);
    assert!(m.producer.connection_count >= 1.0);
    assert!(m.producer.request_latency_max >= 0.0);
    let present: Vec<(&str, &str)> = m.metrics().iter().map(|x| (x.group, x.name)).collect();
    let missing = kacrab_testkit::metric_names::missing(&present);
    assert!(
        missing.is_empty(),
        "metrics missing from the snapshot: {missing:?}"
    );
    p.close().unwrap();
    assert!(p.metrics().is_none(), "stopped");
}

/// Makes `f`'s broker never answer a Produce; the count is of the Produce requests it saw.
fn silence_produce(f: &Fake) -> Arc<AtomicUsize> {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    f.broker.on(ApiKey::Produce, move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Control::Silence
    });
    seen
}

/// Waits (up to 30 s) until `seen` counts a request.
fn until_seen(seen: &AtomicUsize) {
    let start = std::time::Instant::now();
    while seen.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no Produce reached the broker"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// close_timeout(d): a record the broker never answers fails once `d` passed (possibly
/// written: it was on the wire), long before delivery.timeout.ms; the producer stops.
#[test]
fn close_with_a_timeout_fails_what_is_left_when_it_passes() {
    let f = fake(1);
    assert!(f.broker.create_topic("deadline", 1));
    let seen = silence_produce(&f);
    let p = producer(
        &f,
        &[
            ("linger.ms", "0"),
            ("delivery.timeout.ms", "60000"),
            ("request.timeout.ms", "30000"),
        ],
    );
    let h = p
        .send(ProducerRecord::new("deadline", 0, "a"))
        .expect("queued");
    until_seen(&seen);
    let start = std::time::Instant::now();
    p.close_timeout(Duration::from_millis(200)).unwrap();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(10),
        "close took {took:?}"
    );
    match h.wait() {
        Err(e @ ProduceError::Delivery { .. }) => assert!(e.possibly_written(), "{e}"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        p.send(ProducerRecord::new("deadline", 0, "b")),
        Err(SendError::Rejected(kacrab_idempotence::SendError::Closed))
    ));
}

/// abort(): every record without an outcome fails at once and the I/O thread
/// stops; the broker never answered, and nothing waits for delivery.timeout.ms.
#[test]
fn abort_fails_every_record_without_an_outcome_at_once() {
    let f = fake(1);
    assert!(f.broker.create_topic("aborted", 1));
    let seen = silence_produce(&f);
    let p = producer(&f, &[("linger.ms", "0"), ("delivery.timeout.ms", "60000")]);
    let handles: Vec<_> = (0..5)
        .map(|i| {
            p.send(ProducerRecord::new("aborted", 0, format!("{i}")))
                .expect("queued")
        })
        .collect();
    until_seen(&seen);
    let start = std::time::Instant::now();
    p.abort().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "abort took {:?}",
        start.elapsed()
    );
    for h in handles {
        // Aborted, or given up on the wire (possibly written): never delivered.
        match h.wait() {
            Err(ProduceError::Delivery { .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(matches!(
        p.send(ProducerRecord::new("aborted", 0, "late")),
        Err(SendError::Rejected(kacrab_idempotence::SendError::Closed))
    ));
    assert!(matches!(p.flush(), Ok(()) | Err(WaitError::Terminated)));
}

/// A Java producer's `.properties` file loads with `Producer::from_properties_file`; one
/// that cannot be read is refused naming its path and the operating system's error.
#[test]
fn a_producer_is_built_from_a_java_properties_file() {
    let dir = std::env::temp_dir().join(format!("kacrab-blocking-props-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("producer.properties");
    std::fs::write(
        &path,
        "bootstrap.servers=localhost:1\nschema.registry.url=http://registry:8081\nlinger.ms=5\n",
    )
    .unwrap();
    Producer::from_properties_file(&path)
        .unwrap()
        .close()
        .unwrap();
    let missing = dir.join("missing.properties");
    let err = Producer::from_properties_file(&missing).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&missing.display().to_string()) && text.contains("os error"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
