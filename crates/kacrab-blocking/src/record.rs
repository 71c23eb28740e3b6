//! What the application sends and what it gets back.

use bytes::Bytes;
use kacrab_idempotence::{Header, Topic};

/// A record to send: its topic and partition, key, value, headers and timestamp.
///
/// The partition is explicit; [`ProducerRecord::keyed`] picks it from the key the way
/// Kafka's default partitioner does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerRecord {
    /// The topic.
    pub topic: Topic,
    /// The partition (non-negative).
    pub partition: i32,
    /// The key; `None` differs from an empty key.
    pub key: Option<Bytes>,
    /// The value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
    /// CreateTime in milliseconds since the Unix epoch; `None` takes the time of `send`.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a value and no key, for `partition` of `topic`.
    #[must_use]
    pub fn new(topic: impl Into<Topic>, partition: i32, value: impl Into<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            partition,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    /// A keyed record whose partition is the one Kafka's default partitioner picks for
    /// `key` among `partitions` partitions (murmur2, as the Java client;
    /// [`Producer::partition_count`](crate::Producer::partition_count) tells `partitions`).
    #[must_use]
    pub fn keyed(
        topic: impl Into<Topic>,
        partitions: i32,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Self {
        let key = key.into();
        let partition = kacrab_driver::partition_for_key(&key, partitions);
        Self::new(topic, partition, value).with_key(key)
    }

    /// Sets the key (it does not change the partition).
    #[must_use]
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Appends a header.
    #[must_use]
    pub fn with_header(mut self, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        self.headers.push(Header {
            key: key.into(),
            value: Some(value.into()),
        });
        self
    }

    /// Sets the CreateTime timestamp (milliseconds since the Unix epoch).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp_ms: i64) -> Self {
        self.timestamp = Some(timestamp_ms);
        self
    }
}

/// Where an acknowledged record landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordMetadata {
    /// The topic.
    pub topic: Topic,
    /// The partition.
    pub partition: i32,
    /// The record's offset; `None` when the broker reported a duplicate without one.
    pub offset: Option<i64>,
    /// The record's CreateTime (milliseconds since the Unix epoch).
    pub timestamp: i64,
}
