//! The transaction APIs: AddPartitionsToTxn (24, v0–v3), AddOffsetsToTxn (25, v0–v4),
//! EndTxn (26, v0–v5) and TxnOffsetCommit (28, v0–v5).

use kafka_protocol::messages as kp;

use crate::encode::sb;
use crate::reader::{Reader, R};

/// A topic and some of its partitions.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TopicPartitions {
    /// The topic name.
    pub name: String,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

/// A per-partition error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PartitionResult {
    /// The partition index.
    pub partition_index: i32,
    /// Error code.
    pub error_code: i16,
}

/// A topic's per-partition error codes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TopicResult {
    /// The topic name.
    pub name: String,
    /// One result per partition.
    pub partitions: Vec<PartitionResult>,
}

fn read_topic_results(r: &mut Reader) -> R<Vec<TopicResult>> {
    r.array(|r| {
        let name = r.string()?;
        let partitions = r.array(|r| {
            let p = PartitionResult {
                partition_index: r.i32()?,
                error_code: r.i16()?,
            };
            r.skip_tagged_fields()?;
            Ok(p)
        })?;
        r.skip_tagged_fields()?;
        Ok(TopicResult { name, partitions })
    })
}

/// AddPartitionsToTxn request, in its client form (v0–v3; v4+ is broker to broker).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AddPartitionsToTxnRequest {
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The partitions to add to the transaction.
    pub topics: Vec<TopicPartitions>,
}

impl AddPartitionsToTxnRequest {
    pub(crate) fn into_kp(self) -> kp::AddPartitionsToTxnRequest {
        kp::AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(kp::TransactionalId(sb(self.transactional_id)))
            .with_v3_and_below_producer_id(kp::ProducerId(self.producer_id))
            .with_v3_and_below_producer_epoch(self.producer_epoch)
            .with_v3_and_below_topics(
                self.topics
                    .into_iter()
                    .map(|t| {
                        kp::add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                            .with_name(kp::TopicName(sb(t.name)))
                            .with_partitions(t.partitions)
                    })
                    .collect(),
            )
    }
}

/// AddPartitionsToTxn response (v0–v3).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AddPartitionsToTxnResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Per-partition results.
    pub topics: Vec<TopicResult>,
}

impl AddPartitionsToTxnResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        let throttle_time_ms = r.i32()?;
        let topics = read_topic_results(r)?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            topics,
        })
    }
}

/// AddOffsetsToTxn request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AddOffsetsToTxnRequest {
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The consumer group whose offsets join the transaction.
    pub group_id: String,
}

impl AddOffsetsToTxnRequest {
    pub(crate) fn into_kp(self) -> kp::AddOffsetsToTxnRequest {
        kp::AddOffsetsToTxnRequest::default()
            .with_transactional_id(kp::TransactionalId(sb(self.transactional_id)))
            .with_producer_id(kp::ProducerId(self.producer_id))
            .with_producer_epoch(self.producer_epoch)
            .with_group_id(kp::GroupId(sb(self.group_id)))
    }
}

/// AddOffsetsToTxn response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AddOffsetsToTxnResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
}

impl AddOffsetsToTxnResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        let resp = Self {
            throttle_time_ms: r.i32()?,
            error_code: r.i16()?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }
}

/// A partition's offset in a TxnOffsetCommit request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TxnOffsetCommitPartition {
    /// The partition index.
    pub partition_index: i32,
    /// The offset to commit.
    pub committed_offset: i64,
    /// The leader epoch of the last consumed record, -1 if unknown (v2+; dropped before).
    pub committed_leader_epoch: i32,
    /// Metadata stored with the offset.
    pub committed_metadata: Option<String>,
}

impl Default for TxnOffsetCommitPartition {
    fn default() -> Self {
        Self {
            partition_index: 0,
            committed_offset: 0,
            committed_leader_epoch: -1,
            committed_metadata: None,
        }
    }
}

/// A topic's offsets in a TxnOffsetCommit request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TxnOffsetCommitTopic {
    /// The topic name.
    pub name: String,
    /// The partitions' offsets.
    pub partitions: Vec<TxnOffsetCommitPartition>,
}

/// TxnOffsetCommit request. The group metadata (`generation_id`, `member_id`,
/// `group_instance_id`, KIP-447) needs v3+: left at its defaults (-1, "", `None`) it is not
/// sent; set, it fails to encode before v3.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TxnOffsetCommitRequest {
    /// The transactional id.
    pub transactional_id: String,
    /// The consumer group id.
    pub group_id: String,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The group generation, -1 for none (v3+).
    pub generation_id: i32,
    /// The group member id, "" for none (v3+).
    pub member_id: String,
    /// The static member id (v3+).
    pub group_instance_id: Option<String>,
    /// The offsets to commit.
    pub topics: Vec<TxnOffsetCommitTopic>,
}

impl Default for TxnOffsetCommitRequest {
    fn default() -> Self {
        Self {
            transactional_id: String::new(),
            group_id: String::new(),
            producer_id: -1,
            producer_epoch: -1,
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            topics: Vec::new(),
        }
    }
}

impl TxnOffsetCommitRequest {
    pub(crate) fn into_kp(self) -> kp::TxnOffsetCommitRequest {
        kp::TxnOffsetCommitRequest::default()
            .with_transactional_id(kp::TransactionalId(sb(self.transactional_id)))
            .with_group_id(kp::GroupId(sb(self.group_id)))
            .with_producer_id(kp::ProducerId(self.producer_id))
            .with_producer_epoch(self.producer_epoch)
            .with_generation_id(self.generation_id)
            .with_member_id(sb(self.member_id))
            .with_group_instance_id(self.group_instance_id.map(sb))
            .with_topics(
                self.topics
                    .into_iter()
                    .map(|t| {
                        kp::txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                            .with_name(kp::TopicName(sb(t.name)))
                            .with_partitions(
                                t.partitions
                                    .into_iter()
                                    .map(|p| {
                                        kp::txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                                            .with_partition_index(p.partition_index)
                                            .with_committed_offset(p.committed_offset)
                                            .with_committed_leader_epoch(p.committed_leader_epoch)
                                            .with_committed_metadata(p.committed_metadata.map(sb))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            )
    }
}

/// TxnOffsetCommit response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TxnOffsetCommitResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Per-partition results.
    pub topics: Vec<TopicResult>,
}

impl TxnOffsetCommitResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        let throttle_time_ms = r.i32()?;
        let topics = read_topic_results(r)?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            topics,
        })
    }
}

/// EndTxn request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EndTxnRequest {
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// `true` to commit, `false` to abort.
    pub committed: bool,
}

impl EndTxnRequest {
    pub(crate) fn into_kp(self) -> kp::EndTxnRequest {
        kp::EndTxnRequest::default()
            .with_transactional_id(kp::TransactionalId(sb(self.transactional_id)))
            .with_producer_id(kp::ProducerId(self.producer_id))
            .with_producer_epoch(self.producer_epoch)
            .with_committed(self.committed)
    }
}

/// EndTxn response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EndTxnResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
    /// The producer id to use from now on (v5+, transaction version 2; -1 before).
    pub producer_id: i64,
    /// The producer epoch to use from now on (v5+; -1 before).
    pub producer_epoch: i16,
}

impl EndTxnResponse {
    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let throttle_time_ms = r.i32()?;
        let error_code = r.i16()?;
        let (producer_id, producer_epoch) = if version >= 5 {
            (r.i64()?, r.i16()?)
        } else {
            (-1, -1)
        };
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            producer_id,
            producer_epoch,
        })
    }
}
