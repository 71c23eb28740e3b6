//! What an application plugs into a producer, for the drivers' tests of the session's
//! extension points: a partitioner and two interceptors, one that works and one that
//! always fails.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use kacrab_driver::{
    Acknowledgement, Header, InterceptorError, Partitioner, ProduceError, ProducerInterceptor,
    ProducerRecord, TopicPartitions,
};

/// Sends every record without a partition to the topic's last partition.
#[derive(Clone, Debug)]
pub struct LastPartition;

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
pub type Seen = (String, Result<(i32, Option<i64>), bool>);

/// Adds a `traced` header and records every outcome.
#[derive(Default)]
pub struct Tracer {
    /// Every outcome seen, in order.
    pub seen: Mutex<Vec<Seen>>,
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
pub struct Broken {
    /// How many outcomes it was shown.
    pub acks: AtomicU32,
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
