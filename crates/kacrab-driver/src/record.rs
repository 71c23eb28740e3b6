//! What the application sends and what it gets back: shared by both adapters so a
//! program can switch between them without touching its records.

use bytes::Bytes;
use kacrab_idempotence::{Header, Topic};

/// One record to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerRecord {
    /// The topic. Cheap to clone: keep one [`Topic`] and build records from it.
    pub topic: Topic,
    /// The partition (explicit; see [`ProducerRecord::keyed`]).
    pub partition: i32,
    /// The key; `None` differs from an empty key.
    pub key: Option<Bytes>,
    /// The value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
    /// Milliseconds since the Unix epoch (CreateTime); `None` for the time of sending.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a value, no key, for `partition` of `topic`.
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

    /// A keyed record, for the partition Kafka's default partitioner picks for `key`
    /// among `partitions` (murmur2, as the Java client).
    pub fn keyed(
        topic: impl Into<Topic>,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        partitions: i32,
    ) -> Self {
        let key = key.into();
        Self {
            topic: topic.into(),
            partition: crate::partition_for_key(&key, partitions),
            key: Some(key),
            value: Some(value.into()),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    /// Sets the key (the partition stays as it is).
    #[must_use]
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Appends a header.
    #[must_use]
    pub fn with_header(mut self, key: impl Into<Bytes>, value: Option<Bytes>) -> Self {
        self.headers.push(Header {
            key: key.into(),
            value,
        });
        self
    }

    /// Sets the timestamp (milliseconds since the Unix epoch).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
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
    /// The record's offset; `None` when the broker acknowledged a duplicate without
    /// one (the record is in the log once), or with `acks=0`.
    pub offset: Option<i64>,
    /// The record's timestamp as sent (CreateTime, milliseconds since the Unix epoch).
    pub timestamp: i64,
}
