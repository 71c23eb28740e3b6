//! The model brokers' answers as wire responses, at the request's version.

use std::time::Duration;

use kacrab_idempotence as core;
use kacrab_idempotence::{KafkaError, NodeId, TopicPartition};
use kacrab_wire::messages as wire;

use super::{
    BrokerEndpoint, BrokerFeatures, KAFKA_4_API_VERSIONS, MAX_TRANSACTION_VERSION, SIM_CLUSTER_ID,
};

fn throttle_ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

pub(super) fn endpoint(node: NodeId, brokers: &[BrokerEndpoint]) -> BrokerEndpoint {
    brokers
        .iter()
        .find(|b| b.node == node)
        .cloned()
        .unwrap_or_else(|| BrokerEndpoint::sim(node))
}

/// ApiVersions at `version`: the features exist from v3 (tagged fields, KIP-584).
pub(super) fn api_versions(features: &BrokerFeatures, version: i16) -> wire::ApiVersionsResponse {
    let v3 = version >= 3;
    let tv = features.transaction_version.filter(|_| v3);
    kacrab_wire::message!(wire::ApiVersionsResponse {
        error_code: 0,
        api_keys: KAFKA_4_API_VERSIONS
            .iter()
            .map(|(api, range)| kacrab_wire::message!(wire::ApiVersion {
                api_key: api.id(),
                min_version: range.min,
                max_version: range.max,
            }))
            .collect(),
        throttle_time_ms: 0,
        supported_features: tv
            .map(|_| kacrab_wire::message!(wire::SupportedFeature {
                name: kacrab_wire::TRANSACTION_VERSION_FEATURE.into(),
                min_version: 0,
                max_version: MAX_TRANSACTION_VERSION,
            }))
            .into_iter()
            .collect(),
        finalized_features_epoch: if v3 { features.features_epoch } else { -1 },
        finalized_features: tv
            .map(|level| kacrab_wire::message!(wire::FinalizedFeature {
                name: kacrab_wire::TRANSACTION_VERSION_FEATURE.into(),
                max_version_level: level,
                min_version_level: level,
            }))
            .into_iter()
            .collect(),
    })
}

/// Groups `(partition, value)` by topic, topics in order of first appearance.
fn by_topic<T>(
    items: impl IntoIterator<Item = (TopicPartition, T)>,
) -> Vec<(String, Vec<(i32, T)>)> {
    let mut out: Vec<(String, Vec<(i32, T)>)> = Vec::new();
    for (tp, value) in items {
        let name = tp.topic.as_str();
        match out.iter_mut().find(|(t, _)| t == name) {
            Some((_, parts)) => parts.push((tp.partition, value)),
            None => out.push((name.to_owned(), vec![(tp.partition, value)])),
        }
    }
    out
}

pub(super) fn topic_results(results: &[(TopicPartition, KafkaError)]) -> Vec<wire::TopicResult> {
    by_topic(results.iter().cloned())
        .into_iter()
        .map(|(name, parts)| {
            kacrab_wire::message!(wire::TopicResult {
                name,
                partitions: parts
                    .into_iter()
                    .map(
                        |(partition_index, e)| kacrab_wire::message!(wire::PartitionResult {
                            partition_index,
                            error_code: e.code(),
                        })
                    )
                    .collect(),
            })
        })
        .collect()
}

/// A Produce answer at `v`: the log start offset from v5, the current leader and its
/// endpoint from v10 (KIP-951: the endpoints of every leader named).
pub(super) fn produce_response(
    r: &core::ProduceResponse,
    v: i16,
    brokers: &[BrokerEndpoint],
) -> wire::ProduceResponse {
    let kip_951 = v >= 10;
    let mut leaders: Vec<NodeId> = Vec::new();
    let topics = by_topic(r.partitions.iter().map(|p| (p.partition.clone(), p)))
        .into_iter()
        .map(|(name, parts)| {
            kacrab_wire::message!(wire::ProduceTopicResponse {
                name,
                partitions: parts
                    .into_iter()
                    .map(|(index, p)| {
                        let current_leader = p.current_leader.filter(|_| kip_951).map(|h| {
                            if !leaders.contains(&h.leader) {
                                leaders.push(h.leader);
                            }
                            kacrab_wire::message!(wire::LeaderIdAndEpoch {
                                leader_id: h.leader.0,
                                leader_epoch: h.leader_epoch,
                            })
                        });
                        kacrab_wire::message!(wire::ProducePartitionResponse {
                            index,
                            error_code: p.error.code(),
                            base_offset: p.base_offset,
                            log_append_time_ms: p.log_append_time,
                            log_start_offset: if v >= 5 { p.log_start_offset } else { -1 },
                            record_errors: Vec::new(),
                            error_message: None,
                            current_leader,
                        })
                    })
                    .collect(),
            })
        })
        .collect();
    kacrab_wire::message!(wire::ProduceResponse {
        topics,
        throttle_time_ms: throttle_ms(r.throttle),
        node_endpoints: leaders
            .into_iter()
            .map(|node| {
                let e = endpoint(node, brokers);
                kacrab_wire::message!(wire::NodeEndpoint {
                    node_id: e.node.0,
                    host: e.host,
                    port: e.port,
                    rack: None,
                })
            })
            .collect(),
    })
}

/// A Metadata answer at `v`: `brokers`, then every topic the model answered, in order;
/// a partition without a leader is reported LEADER_NOT_AVAILABLE with leader -1 (Kafka's
/// `KRaftMetadataCache`), a topic error with no partitions.
pub(super) fn metadata_response(
    md: &core::Metadata,
    v: i16,
    brokers: &[BrokerEndpoint],
) -> wire::MetadataResponse {
    let mut topics: Vec<wire::MetadataTopic> =
        by_topic(md.partitions.iter().map(|p| (p.partition.clone(), p)))
            .into_iter()
            .map(|(name, parts)| {
                kacrab_wire::message!(wire::MetadataTopic {
                    error_code: 0,
                    name: Some(name),
                    topic_id: [0; 16],
                    is_internal: false,
                    partitions: parts
                        .into_iter()
                        .map(|(partition_index, p)| {
                            let replicas: Vec<i32> = p.leader.map(|n| n.0).into_iter().collect();
                            kacrab_wire::message!(wire::MetadataPartition {
                                error_code: if p.leader.is_some() {
                                    0
                                } else {
                                    KafkaError::LeaderNotAvailable.code()
                                },
                                partition_index,
                                leader_id: p.leader.map_or(-1, |n| n.0),
                                leader_epoch: if v >= 7 { p.leader_epoch } else { -1 },
                                replica_nodes: replicas.clone(),
                                isr_nodes: replicas,
                                offline_replicas: Vec::new(),
                            })
                        })
                        .collect(),
                })
            })
            .collect();
    topics.extend(md.topic_errors.iter().map(|(topic, e)| {
        kacrab_wire::message!(wire::MetadataTopic {
            error_code: e.code(),
            name: Some(topic.as_str().to_owned()),
            topic_id: [0; 16],
            is_internal: false,
            partitions: Vec::new(),
        })
    }));
    kacrab_wire::message!(wire::MetadataResponse {
        throttle_time_ms: 0,
        brokers: brokers
            .iter()
            .map(|b| kacrab_wire::message!(wire::MetadataBroker {
                node_id: b.node.0,
                host: b.host.clone(),
                port: b.port,
                rack: None,
            }))
            .collect(),
        cluster_id: (v >= 2).then(|| SIM_CLUSTER_ID.to_owned()),
        controller_id: brokers.first().map_or(-1, |b| b.node.0),
        topics,
    })
}
