//! What an application plugs into the blocking producer
//! (`Producer::with_extensions`): a partitioner and interceptors, against krafka's
//! FakeBroker.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use kacrab_blocking::{
    Acknowledgement, Extensions, Header, InterceptorError, Partitioner, ProduceError, Producer,
    ProducerInterceptor, ProducerRecord, SessionConfig, TopicPartitions,
};

/// Sends every record without a partition to the topic's last partition.
#[derive(Clone, Debug)]
struct LastPartition;

impl Partitioner for LastPartition {
    fn partition(
        &mut self,
        _topic: &str,
        _key: Option<&[u8]>,
        _value: Option<&[u8]>,
        partitions: TopicPartitions<'_>,
    ) -> Option<i32> {
        Some(partitions.count() - 1)
    }
}

/// One record's outcome as an interceptor saw it: topic, and (partition, offset) or
/// whether it was possibly written.
type Seen = (String, Result<(i32, Option<i64>), bool>);

/// Adds a `traced` header and records every outcome.
#[derive(Default)]
struct Tracer {
    seen: Mutex<Vec<Seen>>,
}

impl ProducerInterceptor for Tracer {
    fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
        record.headers.push(Header {
            key: "traced".into(),
            value: Some("yes".into()),
        });
        Ok(())
    }

    fn on_acknowledgement(&self, ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
        let outcome = ack
            .outcome
            .map(|m| (m.partition, m.offset))
            .map_err(ProduceError::possibly_written);
        self.seen
            .lock()
            .unwrap()
            .push((ack.topic.as_str().to_owned(), outcome));
        Ok(())
    }
}

/// Breaks every record it sees, then fails; counts the outcomes it is shown.
#[derive(Default)]
struct Broken {
    acks: AtomicU32,
}

impl ProducerInterceptor for Broken {
    fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
        record.value = Some("broken".into());
        record.headers.clear();
        Err("this interceptor always fails".into())
    }

    fn on_acknowledgement(&self, _ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
        self.acks.fetch_add(1, Ordering::SeqCst);
        Err("this interceptor always fails".into())
    }
}

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
