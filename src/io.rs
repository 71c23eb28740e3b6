//! What goes in and out of the [`Producer`](crate::Producer): requests for the driver to
//! send, responses and failures it feeds back, and events for the application.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use crate::error::{DeliveryError, KafkaError};
use crate::txn::{TxnError, TxnOp};
use crate::types::{
    NodeId, ProducerIdAndEpoch, RecordId, RequestId, Topic, TopicId, TopicPartition,
};

mod requests;

pub use requests::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest,
    InitProducerIdRequest, MetadataRequest, ProduceBatch, ProduceRequest, TxnOffsetCommitRequest,
};

/// Something the driver must do on the network. Returned by
/// [`Producer::poll_request`](crate::Producer::poll_request).
///
/// Exhaustive on purpose: a driver must handle every request, since one it ignored
/// would never be answered and the producer would wait for it until it timed out. A
/// new variant is a breaking release, so a driver that does not know it fails to
/// compile instead of hanging. The request structs inside are `#[non_exhaustive]`.
#[derive(Clone, Debug)]
#[must_use]
pub enum Request {
    /// Send a Produce request to `node`.
    Produce(ProduceRequest),
    /// Send InitProducerId to any broker (the least loaded one).
    InitProducerId(InitProducerIdRequest),
    /// Send a Metadata request for these topics to any broker.
    Metadata(MetadataRequest),
    /// Find a coordinator (transactions): send FindCoordinator to any broker.
    FindCoordinator(FindCoordinatorRequest),
    /// Send AddPartitionsToTxn (v3 or below) to the transaction coordinator.
    AddPartitionsToTxn(AddPartitionsToTxnRequest),
    /// Send AddOffsetsToTxn to the transaction coordinator.
    AddOffsetsToTxn(AddOffsetsToTxnRequest),
    /// Send TxnOffsetCommit to the group coordinator.
    TxnOffsetCommit(TxnOffsetCommitRequest),
    /// Send EndTxn to the transaction coordinator.
    EndTxn(EndTxnRequest),
    /// Close the connection to `node`: a request on it timed out. The core has already
    /// treated every request outstanding on that connection as possibly written; answers
    /// still in the socket must be dropped, not fed back.
    CloseConnection {
        /// The broker.
        node: NodeId,
    },
}

impl Request {
    /// The id its answer or failure report names; `None` for
    /// [`Request::CloseConnection`], which expects neither.
    #[must_use]
    pub fn id(&self) -> Option<RequestId> {
        Some(match self {
            Self::Produce(r) => r.id,
            Self::InitProducerId(r) => r.id,
            Self::Metadata(r) => r.id,
            Self::FindCoordinator(r) => r.id,
            Self::AddPartitionsToTxn(r) => r.id,
            Self::AddOffsetsToTxn(r) => r.id,
            Self::TxnOffsetCommit(r) => r.id,
            Self::EndTxn(r) => r.id,
            Self::CloseConnection { .. } => return None,
        })
    }
}

/// The answer to a [`ProduceRequest`], one entry per partition.
///
/// Built with [`ProduceResponse::new`] (or `default()`) and
/// [`ProduceResponse::with_throttle`]; the fields stay public to read and to set, and
/// new ones may come (the struct is `#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ProduceResponse {
    /// Per partition.
    pub partitions: Vec<PartitionResponse>,
    /// How long the broker asked us to hold off (`throttle_time_ms`).
    pub throttle: Duration,
}

impl ProduceResponse {
    /// An answer with these partitions and no throttle.
    #[must_use]
    pub fn new(partitions: Vec<PartitionResponse>) -> Self {
        Self {
            partitions,
            throttle: Duration::ZERO,
        }
    }

    /// Sets the throttle the broker asked for.
    #[must_use]
    pub fn with_throttle(mut self, throttle: Duration) -> Self {
        self.throttle = throttle;
        self
    }
}

/// One partition's answer inside a [`ProduceResponse`].
///
/// Built with [`PartitionResponse::ok`] or [`PartitionResponse::error`] and the
/// `with_*` methods; the fields stay public to read and to set, and new ones may come
/// (the struct is `#[non_exhaustive]`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PartitionResponse {
    /// The partition.
    pub partition: TopicPartition,
    /// The error, or [`KafkaError::None`].
    pub error: KafkaError,
    /// The offset of the batch's first record, or -1.
    pub base_offset: i64,
    /// The partition's log start offset, or -1 (needed for UNKNOWN_PRODUCER_ID).
    pub log_start_offset: i64,
    /// The time the broker appended the batch (milliseconds since the Unix epoch) when
    /// the topic's `message.timestamp.type` is `LogAppendTime`; -1 for `CreateTime`.
    /// A success with a value other than -1 gives every record of the batch this
    /// timestamp (`log_append_time` of [`Event::Delivered`]), as Java's
    /// `ProducerBatch.complete` does with `PartitionResponse.logAppendTime`.
    pub log_append_time: i64,
    /// KIP-951: the new leader, when the broker knows it.
    pub current_leader: Option<LeaderHint>,
    /// KIP-467 (Produce v8+): the records that made the broker reject the batch (for
    /// INVALID_RECORD and the other `LogValidator` refusals), by index in the batch.
    /// When the batch fails with some, the records named fail with
    /// [`DeliveryError::InvalidRecord`] and the others with
    /// [`DeliveryError::BatchHadInvalidRecords`] (Java's `Sender.failBatch` with
    /// `recordExceptions`). Indices outside the batch are ignored.
    pub record_errors: Vec<RecordError>,
    /// KIP-467 (Produce v8+): the broker's message for `error`, carried to the
    /// records' [`DeliveryError`].
    pub error_message: Option<String>,
}

impl PartitionResponse {
    /// A success at `base_offset`.
    #[must_use]
    pub fn ok(partition: TopicPartition, base_offset: i64) -> Self {
        Self {
            partition,
            error: KafkaError::None,
            base_offset,
            log_start_offset: 0,
            log_append_time: -1,
            current_leader: None,
            record_errors: Vec::new(),
            error_message: None,
        }
    }

    /// An error answer.
    #[must_use]
    pub fn error(partition: TopicPartition, error: KafkaError) -> Self {
        Self {
            partition,
            error,
            base_offset: -1,
            log_start_offset: -1,
            log_append_time: -1,
            current_leader: None,
            record_errors: Vec::new(),
            error_message: None,
        }
    }

    /// Sets the offset of the batch's first record.
    #[must_use]
    pub fn with_base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    /// Sets the log start offset.
    #[must_use]
    pub fn with_log_start_offset(mut self, log_start_offset: i64) -> Self {
        self.log_start_offset = log_start_offset;
        self
    }

    /// Sets the log append time (milliseconds since the Unix epoch; -1 for none).
    #[must_use]
    pub fn with_log_append_time(mut self, log_append_time: i64) -> Self {
        self.log_append_time = log_append_time;
        self
    }

    /// Sets the KIP-951 leader hint.
    #[must_use]
    pub fn with_current_leader(mut self, current_leader: Option<LeaderHint>) -> Self {
        self.current_leader = current_leader;
        self
    }

    /// Sets the KIP-467 per-record errors.
    #[must_use]
    pub fn with_record_errors(mut self, record_errors: Vec<RecordError>) -> Self {
        self.record_errors = record_errors;
        self
    }

    /// Sets the broker's error message.
    #[must_use]
    pub fn with_error_message(mut self, error_message: Option<String>) -> Self {
        self.error_message = error_message;
        self
    }
}

/// KIP-467: one record the broker named as the reason it rejected a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordError {
    /// The record's index in the batch (0 for its first record).
    pub batch_index: i32,
    /// What was wrong with it, if the broker said.
    pub message: Option<String>,
}

impl RecordError {
    /// The record at `batch_index`, with the broker's message.
    #[must_use]
    pub fn new(batch_index: i32, message: Option<String>) -> Self {
        Self {
            batch_index,
            message,
        }
    }
}

/// A partition's leader and leader epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderHint {
    /// The leader.
    pub leader: NodeId,
    /// Its leader epoch.
    pub leader_epoch: i32,
}

impl LeaderHint {
    /// `leader` at `leader_epoch`.
    #[must_use]
    pub fn new(leader: NodeId, leader_epoch: i32) -> Self {
        Self {
            leader,
            leader_epoch,
        }
    }
}

/// A Metadata answer: the brokers, the partitions of each topic and their leaders, and
/// the topics the broker reported an error for.
///
/// The core routes batches by the partitions' leaders (and their leader epochs and
/// topic ids); the brokers and the partition counts are carried for the embedder, whose
/// connections and partitioner need them, so one conversion of the wire answer serves
/// both. Like Kafka's answer, it lists every partition of each topic it names without
/// error, so [`Metadata::partition_count`] is that topic's partition count.
///
/// Built with [`Metadata::new`] (or `default()`) and the `with_*` methods; the fields
/// stay public to read and to set, and new ones may come (the struct is
/// `#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Metadata {
    /// The brokers the answer lists (the core itself does not read them).
    pub brokers: Vec<BrokerMetadata>,
    /// Partitions and their leaders.
    pub partitions: Vec<PartitionMetadata>,
    /// Topics the broker reported an error for (unknown topic, not authorized).
    pub topic_errors: Vec<(Topic, KafkaError)>,
}

impl Metadata {
    /// An answer with these partitions and no topic errors.
    #[must_use]
    pub fn new(partitions: Vec<PartitionMetadata>) -> Self {
        Self {
            brokers: Vec::new(),
            partitions,
            topic_errors: Vec::new(),
        }
    }

    /// Adds one broker.
    #[must_use]
    pub fn with_broker(mut self, broker: BrokerMetadata) -> Self {
        self.brokers.push(broker);
        self
    }

    /// The broker with this node id, if the answer lists it.
    #[must_use]
    pub fn broker(&self, node: NodeId) -> Option<&BrokerMetadata> {
        self.brokers.iter().find(|b| b.node == node)
    }

    /// How many partitions `topic` has: the number the answer lists for it, when they
    /// are exactly `0..n` (Kafka lists every partition of a topic it names, leaderless
    /// ones included). `None` when the answer lists none of the topic's partitions or
    /// skips an index (an answer that cannot give the count; Java's partitioner then
    /// treats the topic as unknown, as the driver's does).
    #[must_use]
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        let mut indices: Vec<i32> = self
            .partitions
            .iter()
            .filter(|p| p.partition.topic.as_str() == topic)
            .map(|p| p.partition.partition)
            .collect();
        indices.sort_unstable();
        indices.dedup();
        let count = i32::try_from(indices.len()).ok()?;
        let complete = count > 0 && indices.iter().zip(0..).all(|(&i, n)| i == n);
        complete.then_some(count)
    }

    /// Adds one partition.
    #[must_use]
    pub fn with_partition(mut self, partition: PartitionMetadata) -> Self {
        self.partitions.push(partition);
        self
    }

    /// Sets the topics the broker reported an error for.
    #[must_use]
    pub fn with_topic_errors(mut self, topic_errors: Vec<(Topic, KafkaError)>) -> Self {
        self.topic_errors = topic_errors;
        self
    }

    /// Adds a topic the broker reported an error for.
    #[must_use]
    pub fn with_topic_error(mut self, topic: Topic, error: KafkaError) -> Self {
        self.topic_errors.push((topic, error));
        self
    }
}

/// One partition inside [`Metadata`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PartitionMetadata {
    /// The partition.
    pub partition: TopicPartition,
    /// Its leader, if it has one.
    pub leader: Option<NodeId>,
    /// The leader epoch (-1 when unknown).
    pub leader_epoch: i32,
    /// The topic's id, when the broker reported one (Metadata v10+, not Kafka's zero
    /// UUID). A different id than the partition's last one means the topic was
    /// recreated: its metadata then replaces the last, whatever the leader epochs
    /// (Java's `Metadata.updateLatestMetadata`, KIP-516).
    pub topic_id: Option<TopicId>,
}

impl PartitionMetadata {
    /// `partition`, led by `leader` (if any) at `leader_epoch` (-1 when unknown).
    #[must_use]
    pub fn new(partition: TopicPartition, leader: Option<NodeId>, leader_epoch: i32) -> Self {
        Self {
            partition,
            leader,
            leader_epoch,
            topic_id: None,
        }
    }

    /// Sets the topic's id.
    #[must_use]
    pub fn with_topic_id(mut self, topic_id: TopicId) -> Self {
        self.topic_id = Some(topic_id);
        self
    }
}

/// One broker inside [`Metadata`]: where to connect to a node id.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokerMetadata {
    /// The broker's node id.
    pub node: NodeId,
    /// Its host name or address.
    pub host: String,
    /// Its port.
    pub port: i32,
    /// Its rack (`broker.rack`), if it has one.
    pub rack: Option<String>,
}

impl BrokerMetadata {
    /// Node `node` at `host`:`port`, with no rack.
    #[must_use]
    pub fn new(node: NodeId, host: impl Into<String>, port: i32) -> Self {
        Self {
            node,
            host: host.into(),
            port,
            rack: None,
        }
    }

    /// Sets the rack.
    #[must_use]
    pub fn with_rack(mut self, rack: Option<String>) -> Self {
        self.rack = rack;
        self
    }
}

/// How a request failed without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum RequestFailure {
    /// The request never left this process (no connection, or the write failed before
    /// any byte was sent). Nothing it carried can have been written, and its batches go
    /// back to their queues without using up an attempt under `retries`.
    NotSent,
    /// The connection failed after the request was written: the broker may have applied
    /// it. Every batch in it is possibly written.
    Disconnected,
}

/// Something the application should learn. Returned by
/// [`Producer::poll_event`](crate::Producer::poll_event).
///
/// Exhaustive on purpose, variants and their fields: every record gets exactly one
/// outcome only if the embedder handles every event, so a new variant or field is a
/// breaking release that the embedder's match must take in. (Embedders that translate
/// their own completions into events, as the simulator does, can build every variant.)
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Event {
    /// These records were acknowledged, in this order, at consecutive offsets.
    Delivered {
        /// The partition.
        partition: TopicPartition,
        /// The records, in send (and log) order.
        records: Vec<RecordId>,
        /// The offset of the first record, or `None` when the broker reported a
        /// duplicate without an offset (or `acks=0`).
        base_offset: Option<i64>,
        /// The broker's append time (milliseconds since the Unix epoch), the timestamp
        /// of every record here, when the topic uses `LogAppendTime`; `None` for
        /// `CreateTime` (the records keep the timestamps they were sent with), for a
        /// duplicate answered without one and for `acks=0`.
        log_append_time: Option<i64>,
    },
    /// These records will not be delivered by this producer.
    Failed {
        /// The partition.
        partition: TopicPartition,
        /// The records.
        records: Vec<RecordId>,
        /// Why.
        error: DeliveryError,
        /// Whether some attempt may have reached the log. A failed record may be in the
        /// log at most once, never out of order.
        possibly_written: bool,
    },
    /// The producer id or epoch changed (assigned, or bumped after a sequence problem).
    ProducerIdChanged {
        /// The new identity.
        id: ProducerIdAndEpoch,
    },
    /// A transactional operation completed.
    TransactionCompleted {
        /// The operation.
        op: TxnOp,
        /// Its outcome.
        result: Result<(), TxnError>,
    },
    /// The producer hit a fatal error; every pending and later record fails.
    Fatal {
        /// The error.
        error: KafkaError,
    },
}

#[cfg(test)]
mod metadata_tests {
    use super::*;
    use alloc::vec;

    fn led(topic: &str, partition: i32) -> PartitionMetadata {
        PartitionMetadata::new(TopicPartition::new(topic, partition), Some(NodeId(1)), 0)
    }

    #[test]
    fn partition_count_is_the_listed_partitions_when_they_are_whole() {
        let md = Metadata::new(vec![led("a", 2), led("a", 0), led("b", 0), led("a", 1)])
            .with_partition(PartitionMetadata::new(
                TopicPartition::new("a", 3),
                None,
                -1,
            ))
            .with_partition(led("c", 1))
            .with_broker(BrokerMetadata::new(NodeId(1), "h", 9092).with_rack(Some("r".into())));
        assert_eq!(
            md.partition_count("a"),
            Some(4),
            "a leaderless partition counts"
        );
        assert_eq!(md.partition_count("b"), Some(1));
        assert_eq!(md.partition_count("c"), None, "partition 0 missing");
        assert_eq!(md.partition_count("unknown"), None);
        assert_eq!(
            md.broker(NodeId(1)).map(|b| b.rack.as_deref()),
            Some(Some("r"))
        );
        assert_eq!(md.broker(NodeId(2)), None);
        // A partition listed twice counts once.
        let twice = Metadata::new(vec![led("a", 0), led("a", 0), led("a", 1)]);
        assert_eq!(twice.partition_count("a"), Some(2));
    }
}
