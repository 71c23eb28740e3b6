//! Metadata (key 3), v1–v12.

use kafka_protocol::messages as kp;

use crate::encode::sb;
use crate::reader::{Reader, R};

/// Metadata request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetadataRequest {
    /// Topic names, or `None` for every topic. `Some(vec![])` asks for brokers only.
    pub topics: Option<Vec<String>>,
    /// Whether the broker may create missing topics (v4+). `false` cannot be encoded
    /// before v4, where brokers always may.
    pub allow_auto_topic_creation: bool,
}

impl Default for MetadataRequest {
    fn default() -> Self {
        Self::all_topics()
    }
}

impl MetadataRequest {
    /// Every topic.
    #[must_use]
    pub fn all_topics() -> Self {
        Self {
            topics: None,
            allow_auto_topic_creation: true,
        }
    }

    /// These topics.
    #[must_use]
    pub fn topics<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            topics: Some(names.into_iter().map(Into::into).collect()),
            allow_auto_topic_creation: true,
        }
    }

    pub(crate) fn into_kp(self) -> kp::MetadataRequest {
        kp::MetadataRequest::default()
            .with_topics(self.topics.map(|names| {
                names
                    .into_iter()
                    .map(|n| {
                        kp::metadata_request::MetadataRequestTopic::default()
                            .with_name(Some(kp::TopicName(sb(n))))
                    })
                    .collect()
            }))
            .with_allow_auto_topic_creation(self.allow_auto_topic_creation)
    }
}

/// A broker in a Metadata response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MetadataBroker {
    /// The broker's node id.
    pub node_id: i32,
    /// Its host name.
    pub host: String,
    /// Its port.
    pub port: i32,
    /// Its rack, if any.
    pub rack: Option<String>,
}

/// A partition in a Metadata response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MetadataPartition {
    /// The partition's error code.
    pub error_code: i16,
    /// The partition index.
    pub partition_index: i32,
    /// The leader's node id, -1 when there is none.
    pub leader_id: i32,
    /// The leader epoch (v7+; -1 before).
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replica_nodes: Vec<i32>,
    /// In-sync replica node ids.
    pub isr_nodes: Vec<i32>,
    /// Offline replica node ids (v5+; empty before).
    pub offline_replicas: Vec<i32>,
}

/// A topic in a Metadata response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MetadataTopic {
    /// The topic's error code.
    pub error_code: i16,
    /// The topic's name; `None` only in v12+ answers about topics asked for by id, which
    /// this crate never does.
    pub name: Option<String>,
    /// The topic id (v10+; all zero before).
    pub topic_id: [u8; 16],
    /// Whether the topic is internal.
    pub is_internal: bool,
    /// Its partitions.
    pub partitions: Vec<MetadataPartition>,
}

/// Metadata response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MetadataResponse {
    /// Throttle time (v3+; 0 before).
    pub throttle_time_ms: i32,
    /// The brokers.
    pub brokers: Vec<MetadataBroker>,
    /// The cluster id (v2+).
    pub cluster_id: Option<String>,
    /// The controller's node id, -1 when unknown.
    pub controller_id: i32,
    /// The topics.
    pub topics: Vec<MetadataTopic>,
}

impl MetadataResponse {
    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let throttle_time_ms = if version >= 3 { r.i32()? } else { 0 };
        let brokers = r.array(|r| {
            let b = MetadataBroker {
                node_id: r.i32()?,
                host: r.string()?,
                port: r.i32()?,
                rack: r.nullable_string()?,
            };
            r.skip_tagged_fields()?;
            Ok(b)
        })?;
        let cluster_id = if version >= 2 {
            r.nullable_string()?
        } else {
            None
        };
        let controller_id = r.i32()?;
        let topics = r.array(|r| read_topic(r, version))?;
        if (8..=10).contains(&version) {
            let _cluster_authorized_operations = r.i32()?;
        }
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            brokers,
            cluster_id,
            controller_id,
            topics,
        })
    }
}

fn read_topic(r: &mut Reader, version: i16) -> R<MetadataTopic> {
    let error_code = r.i16()?;
    let name = if version >= 12 {
        r.nullable_string()?
    } else {
        Some(r.string()?)
    };
    let topic_id = if version >= 10 { r.uuid()? } else { [0; 16] };
    let is_internal = r.bool()?;
    let partitions = r.array(|r| {
        let error_code = r.i16()?;
        let partition_index = r.i32()?;
        let leader_id = r.i32()?;
        let leader_epoch = if version >= 7 { r.i32()? } else { -1 };
        let replica_nodes = r.array(Reader::i32)?;
        let isr_nodes = r.array(Reader::i32)?;
        let offline_replicas = if version >= 5 {
            r.array(Reader::i32)?
        } else {
            Vec::new()
        };
        r.skip_tagged_fields()?;
        Ok(MetadataPartition {
            error_code,
            partition_index,
            leader_id,
            leader_epoch,
            replica_nodes,
            isr_nodes,
            offline_replicas,
        })
    })?;
    if version >= 8 {
        let _topic_authorized_operations = r.i32()?;
    }
    r.skip_tagged_fields()?;
    Ok(MetadataTopic {
        error_code,
        name,
        topic_id,
        is_internal,
        partitions,
    })
}
