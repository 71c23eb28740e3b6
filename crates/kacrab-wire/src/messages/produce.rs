//! Produce (key 0), v3–v12.

use bytes::Bytes;
use kafka_protocol::messages as kp;

use crate::encode::sb;
use crate::reader::{Reader, R};

/// Produce request. `acks = 0` gets no response (see
/// [`crate::EncodedRequest::expects_response`]).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceRequest {
    /// The transactional id, `None` outside transactions.
    pub transactional_id: Option<String>,
    /// Required acknowledgements: -1 (all in-sync replicas), 0 (none) or 1 (leader).
    pub acks: i16,
    /// How long the broker may wait for the acknowledgements.
    pub timeout_ms: i32,
    /// Data per topic.
    pub topics: Vec<ProduceTopic>,
}

/// A topic's data in a Produce request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceTopic {
    /// The topic name.
    pub name: String,
    /// Data per partition.
    pub partitions: Vec<ProducePartition>,
}

/// A partition's data in a Produce request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProducePartition {
    /// The partition index.
    pub index: i32,
    /// The record batch(es), already encoded (magic v2). Not copied until the frame is
    /// written.
    pub records: Bytes,
}

impl ProduceRequest {
    pub(crate) fn into_kp(self) -> kp::ProduceRequest {
        kp::ProduceRequest::default()
            .with_transactional_id(self.transactional_id.map(|t| kp::TransactionalId(sb(t))))
            .with_acks(self.acks)
            .with_timeout_ms(self.timeout_ms)
            .with_topic_data(
                self.topics
                    .into_iter()
                    .map(|t| {
                        kp::produce_request::TopicProduceData::default()
                            .with_name(kp::TopicName(sb(t.name)))
                            .with_partition_data(
                                t.partitions
                                    .into_iter()
                                    .map(|p| {
                                        kp::produce_request::PartitionProduceData::default()
                                            .with_index(p.index)
                                            .with_records(Some(p.records))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            )
    }
}

/// Produce response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceResponse {
    /// Results per topic.
    pub topics: Vec<ProduceTopicResponse>,
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Endpoints of the leaders named in `current_leader` fields (v10+, KIP-951).
    pub node_endpoints: Vec<NodeEndpoint>,
}

/// A topic's results in a Produce response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceTopicResponse {
    /// The topic name.
    pub name: String,
    /// Results per partition.
    pub partitions: Vec<ProducePartitionResponse>,
}

/// A partition's result in a Produce response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProducePartitionResponse {
    /// The partition index.
    pub index: i32,
    /// Error code.
    pub error_code: i16,
    /// Offset of the first record appended.
    pub base_offset: i64,
    /// Append time set by the broker with LogAppendTime topics, -1 otherwise.
    pub log_append_time_ms: i64,
    /// The partition's log start offset (v5+; -1 before).
    pub log_start_offset: i64,
    /// Records that caused the batch to be dropped (v8+).
    pub record_errors: Vec<RecordError>,
    /// Error message (v8+).
    pub error_message: Option<String>,
    /// The current leader, when the broker tells it (v10+, KIP-951; on
    /// NOT_LEADER_OR_FOLLOWER and the like).
    pub current_leader: Option<LeaderIdAndEpoch>,
}

/// A record that made the broker drop its batch.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RecordError {
    /// Index of the record in the batch.
    pub batch_index: i32,
    /// What was wrong with it.
    pub message: Option<String>,
}

/// A partition leader and its epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LeaderIdAndEpoch {
    /// The leader's node id, -1 when unknown.
    pub leader_id: i32,
    /// The leader epoch, -1 when unknown.
    pub leader_epoch: i32,
}

/// A broker's endpoint in a Produce response (v10+).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct NodeEndpoint {
    /// The node id.
    pub node_id: i32,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: i32,
    /// Its rack.
    pub rack: Option<String>,
}

impl ProduceResponse {
    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| read_partition(r, version))?;
            r.skip_tagged_fields()?;
            Ok(ProduceTopicResponse { name, partitions })
        })?;
        let throttle_time_ms = r.i32()?;
        let mut node_endpoints = Vec::new();
        r.tagged_fields(|tag, f| {
            if tag != 0 || version < 10 {
                return Ok(false);
            }
            node_endpoints = f.array(|r| {
                let e = NodeEndpoint {
                    node_id: r.i32()?,
                    host: r.string()?,
                    port: r.i32()?,
                    rack: r.nullable_string()?,
                };
                r.skip_tagged_fields()?;
                Ok(e)
            })?;
            Ok(true)
        })?;
        Ok(Self {
            topics,
            throttle_time_ms,
            node_endpoints,
        })
    }
}

fn read_partition(r: &mut Reader, version: i16) -> R<ProducePartitionResponse> {
    let index = r.i32()?;
    let error_code = r.i16()?;
    let base_offset = r.i64()?;
    let log_append_time_ms = r.i64()?;
    let log_start_offset = if version >= 5 { r.i64()? } else { -1 };
    let (record_errors, error_message) = if version >= 8 {
        let errors = r.array(|r| {
            let e = RecordError {
                batch_index: r.i32()?,
                message: r.nullable_string()?,
            };
            r.skip_tagged_fields()?;
            Ok(e)
        })?;
        (errors, r.nullable_string()?)
    } else {
        (Vec::new(), None)
    };
    let mut current_leader = None;
    r.tagged_fields(|tag, f| {
        if tag != 0 || version < 10 {
            return Ok(false);
        }
        let leader = LeaderIdAndEpoch {
            leader_id: f.i32()?,
            leader_epoch: f.i32()?,
        };
        f.skip_tagged_fields()?;
        current_leader = Some(leader);
        Ok(true)
    })?;
    Ok(ProducePartitionResponse {
        index,
        error_code,
        base_offset,
        log_append_time_ms,
        log_start_offset,
        record_errors,
        error_message,
        current_leader,
    })
}
