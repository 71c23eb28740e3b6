//! What the application sends and what it gets back: shared by both adapters so a
//! program can switch between them without touching its records.

use bytes::Bytes;
use kacrab_idempotence::{Header, Topic};

/// One record to send.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducerRecord {
    /// The topic. Cheap to clone: keep one [`Topic`] and build records from it.
    pub topic: Topic,
    /// The partition, if the application chose one (it always wins). `None` lets the
    /// session's partitioner choose from the topic's metadata: Kafka's built-in one
    /// (murmur2 of the key, or sticky for records without a key; KIP-794) unless a
    /// [`Partitioner`](crate::Partitioner) of the application's was installed.
    pub partition: Option<i32>,
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
    /// A record with a value, no key, for `partition` of `topic` (an explicit partition:
    /// no partitioner is asked).
    pub fn new(topic: impl Into<Topic>, partition: i32, value: impl Into<Bytes>) -> Self {
        Self {
            partition: Some(partition),
            ..Self::unkeyed(topic, value)
        }
    }

    /// A keyed record whose partition the session's partitioner picks from the topic's
    /// metadata: with Kafka's built-in partitioner, the partition Java's producer picks
    /// for the same key and partition count (`BuiltInPartitioner.partitionForKey`:
    /// murmur2 of the key, made positive, modulo the count).
    pub fn keyed(topic: impl Into<Topic>, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        Self {
            key: Some(key.into()),
            ..Self::unkeyed(topic, value)
        }
    }

    /// A record without a key or partition: the built-in partitioner sticks to one
    /// partition until `batch.size` bytes went there, then moves on (KIP-794).
    pub fn unkeyed(topic: impl Into<Topic>, value: impl Into<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            partition: None,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    /// Sets an explicit partition (the partitioner is not asked).
    #[must_use]
    pub fn with_partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// Sets the key (an explicit partition stays as it is).
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

/// `(topic, key, value)`: a keyed record for the partitioner, so that a driver's
/// `send(("events", "user-7", "hello"))` needs nothing else.
impl<T, K, V> From<(T, K, V)> for ProducerRecord
where
    T: Into<Topic>,
    K: Into<Bytes>,
    V: Into<Bytes>,
{
    fn from((topic, key, value): (T, K, V)) -> Self {
        Self::keyed(topic, key, value)
    }
}

/// `(topic, value)`: a record without a key, for the partitioner.
impl<T, V> From<(T, V)> for ProducerRecord
where
    T: Into<Topic>,
    V: Into<Bytes>,
{
    fn from((topic, value): (T, V)) -> Self {
        Self::unkeyed(topic, value)
    }
}

/// Where an acknowledged record landed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordMetadata {
    /// The topic.
    pub topic: Topic,
    /// The partition.
    pub partition: i32,
    /// The record's offset; `None` when the broker acknowledged a duplicate without
    /// one (the record is in the log once), or with `acks=0`.
    pub offset: Option<i64>,
    /// The record's timestamp in the log (milliseconds since the Unix epoch): the
    /// broker's append time when the topic's `message.timestamp.type` is
    /// `LogAppendTime`, else the timestamp it was sent with. As Java's
    /// `RecordMetadata.timestamp()` (`ProducerBatch.complete` passes the Produce
    /// answer's `log_append_time_ms` when it is not -1).
    pub timestamp: i64,
    /// Which of the two `timestamp` is.
    pub timestamp_type: TimestampType,
}

/// Whose clock a record's timestamp comes from (the topic's `message.timestamp.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimestampType {
    /// The producer's: the record's own timestamp, as sent.
    CreateTime,
    /// The broker's: when the leader appended the batch.
    LogAppendTime,
}
