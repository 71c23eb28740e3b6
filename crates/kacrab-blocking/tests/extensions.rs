//! What an application plugs into the blocking producer
//! (`Producer::with_extensions`): a partitioner and interceptors, against krafka's
//! FakeBroker.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kacrab_blocking::{Extensions, ProduceError, Producer, ProducerRecord, SessionConfig};
use kacrab_testkit::extensions::{Broken, LastPartition, Seen, Tracer};

/// The installed partitioner places every record without a partition; interceptors run
/// in order, so the header the first adds reaches the broker, and the second, failing,
/// loses no record (its changes are dropped, as Java's `ProducerInterceptors.onSend`
/// logs and goes on with the record as it was); each sees every record's outcome once,
/// the delivered ones with partition and offset, and the one refused before it was
/// sent (an invalid topic name: Java's `ProducerInterceptors.onSendError`) with
/// `possibly_written: false`.
#[test]
fn interceptors_and_a_partitioner_installed_with_extensions() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("ext", 3).expect("topic");
    let bootstrap = cluster.bootstrap();
    let tracer = Arc::new(Tracer::default());
    let broken = Arc::new(Broken::default());
    let mut extensions = Extensions::new();
    extensions
        .partitioner(LastPartition)
        .interceptor(Arc::clone(&tracer))
        .interceptor(Arc::clone(&broken));
    let config = SessionConfig::from_properties([("bootstrap.servers", bootstrap.as_str())])
        .expect("config");
    let p = Producer::with_extensions(config, &extensions).expect("producer");
    let mut handles = Vec::new();
    for i in 0..5 {
        handles.push(
            p.send(ProducerRecord::unkeyed("ext", format!("v{i}")))
                .expect("queued"),
        );
    }
    handles.push(
        p.send(ProducerRecord::unkeyed("not a topic!", "x"))
            .expect("queued"),
    );
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.wait()).collect();
    p.close().expect("closed");

    assert!(outcomes[..5].iter().all(Result::is_ok), "{outcomes:?}");
    assert!(matches!(outcomes[5], Err(ProduceError::Topic { .. })));
    let logs = cluster.broker().all_records("ext").expect("log");
    assert_eq!(logs.len(), 5);
    for (i, r) in logs.iter().enumerate() {
        assert_eq!(r.partition, 2, "the installed partitioner placed it");
        assert_eq!(r.value.as_deref(), Some(format!("v{i}").as_bytes()));
        assert_eq!(r.headers, vec![("traced".to_owned(), Some("yes".into()))]);
    }
    let seen = tracer.seen.lock().unwrap().clone();
    let mut expected: Vec<Seen> = (0..5)
        .map(|i| ("ext".to_owned(), Ok((2, Some(i)))))
        .collect();
    expected.push(("not a topic!".to_owned(), Err(false)));
    let mut sorted = seen.clone();
    sorted.sort_by_key(|(topic, _)| topic.clone());
    assert_eq!(sorted, expected, "every outcome once: {seen:?}");
    assert_eq!(broken.acks.load(Ordering::SeqCst), 6);
}
