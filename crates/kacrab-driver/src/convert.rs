//! Conversions between the core's request/response types and the wire's messages.

use std::time::Duration;

use kacrab_idempotence as core;
use kacrab_idempotence::{
    KafkaError, LeaderHint, NodeId, PartitionResponse, RecordError, Topic, TopicPartition,
};
use kacrab_wire::messages as wire;

/// A core Produce request as a wire Produce request (batches shared, not copied).
pub(crate) fn produce_request(r: &core::ProduceRequest) -> wire::ProduceRequest {
    let mut topics: Vec<wire::ProduceTopic> = Vec::new();
    for b in &r.batches {
        let name = b.partition.topic.as_str();
        let partition = kacrab_wire::message!(wire::ProducePartition {
            index: b.partition.partition,
            records: b.data.clone(),
        });
        match topics.iter_mut().find(|t| t.name == name) {
            Some(t) => t.partitions.push(partition),
            None => topics.push(kacrab_wire::message!(wire::ProduceTopic {
                name: name.to_owned(),
                partitions: vec![partition],
            })),
        }
    }
    kacrab_wire::message!(wire::ProduceRequest {
        transactional_id: r.transactional_id.clone(),
        acks: r.acks.as_i16(),
        timeout_ms: i32::try_from(r.timeout.as_millis()).unwrap_or(i32::MAX),
        topics,
    })
}

pub(crate) fn init_producer_id_request(
    r: &core::InitProducerIdRequest,
) -> wire::InitProducerIdRequest {
    kacrab_wire::message!(wire::InitProducerIdRequest {
        transactional_id: r.transactional_id.clone(),
        transaction_timeout_ms: i32::try_from(r.transaction_timeout.as_millis())
            .unwrap_or(i32::MAX),
        producer_id: r.current.id.0,
        producer_epoch: r.current.epoch.0,
    })
}

pub(crate) fn metadata_request(topics: &[Topic]) -> wire::MetadataRequest {
    wire::MetadataRequest::topics(topics.iter().map(|t| t.as_str().to_owned()))
}

/// The core's view of a Produce answer. A KIP-951 leader hint is kept only if its node
/// has an address: one the answer's `node_endpoints` gives, or one `knows_node` (the
/// brokers the session learned) says is known. Java's `Metadata.
/// updatePartitionLeadership` skips a new leader whose node is missing from both, so
/// the retry waits for Metadata instead of being routed at once to a node it cannot
/// reach (pinned by `a_leader_hint_naming_a_node_without_an_address_is_not_taken` in
/// `tests/session_metadata.rs`).
pub(crate) fn produce_response(
    r: &wire::ProduceResponse,
    knows_node: impl Fn(i32) -> bool,
) -> core::ProduceResponse {
    let reachable =
        |node: i32| knows_node(node) || r.node_endpoints.iter().any(|e| e.node_id == node);
    let mut partitions = Vec::with_capacity(r.topics.iter().map(|t| t.partitions.len()).sum());
    for t in &r.topics {
        let topic = Topic::new(&t.name);
        for p in &t.partitions {
            let tp = TopicPartition {
                topic: topic.clone(),
                partition: p.index,
            };
            partitions.push(
                PartitionResponse::error(tp, KafkaError::from_code(p.error_code))
                    .with_base_offset(p.base_offset)
                    .with_log_start_offset(p.log_start_offset)
                    .with_log_append_time(p.log_append_time_ms)
                    .with_current_leader(
                        p.current_leader
                            .filter(|l| l.leader_id >= 0 && reachable(l.leader_id))
                            .map(|l| LeaderHint::new(NodeId(l.leader_id), l.leader_epoch)),
                    )
                    .with_record_errors(
                        p.record_errors
                            .iter()
                            .map(|e| RecordError::new(e.batch_index, e.message.clone()))
                            .collect(),
                    )
                    .with_error_message(p.error_message.clone()),
            );
        }
    }
    core::ProduceResponse::new(partitions).with_throttle(Duration::from_millis(
        u64::try_from(r.throttle_time_ms).unwrap_or(0),
    ))
}

pub(crate) fn metadata(r: &wire::MetadataResponse) -> core::Metadata {
    let mut md = core::Metadata::default();
    md.brokers = r
        .brokers
        .iter()
        .map(|b| {
            core::BrokerMetadata::new(NodeId(b.node_id), b.host.clone(), b.port)
                .with_rack(b.rack.clone())
        })
        .collect();
    for t in &r.topics {
        let Some(name) = &t.name else { continue };
        let topic = Topic::new(name);
        if t.error_code != 0 {
            md.topic_errors
                .push((topic, KafkaError::from_code(t.error_code)));
            continue;
        }
        // Kafka's zero UUID: no id (Metadata before v10, or a broker without ids).
        let id = (t.topic_id != [0; 16]).then_some(core::TopicId(t.topic_id));
        for p in &t.partitions {
            let pm = core::PartitionMetadata::new(
                TopicPartition {
                    topic: topic.clone(),
                    partition: p.partition_index,
                },
                (p.leader_id >= 0).then_some(NodeId(p.leader_id)),
                p.leader_epoch,
            );
            md.partitions.push(match id {
                Some(id) => pm.with_topic_id(id),
                None => pm,
            });
        }
    }
    md
}

pub(crate) fn find_coordinator(r: &core::FindCoordinatorRequest) -> kacrab_wire::Request {
    kacrab_wire::Request::FindCoordinator(kacrab_wire::message!(wire::FindCoordinatorRequest {
        key: r.key.clone(),
        key_type: match r.key_type {
            core::CoordinatorType::Group => wire::CoordinatorType::Group,
            core::CoordinatorType::Transaction => wire::CoordinatorType::Transaction,
        },
    }))
}

fn by_topic(partitions: &[TopicPartition]) -> Vec<wire::TopicPartitions> {
    let mut topics: Vec<wire::TopicPartitions> = Vec::new();
    for tp in partitions {
        match topics.iter_mut().find(|t| t.name == tp.topic.as_str()) {
            Some(t) => t.partitions.push(tp.partition),
            None => topics.push(kacrab_wire::message!(wire::TopicPartitions {
                name: tp.topic.as_str().to_owned(),
                partitions: vec![tp.partition],
            })),
        }
    }
    topics
}

pub(crate) fn add_partitions(r: &core::AddPartitionsToTxnRequest) -> kacrab_wire::Request {
    kacrab_wire::Request::AddPartitionsToTxn(kacrab_wire::message!(
        wire::AddPartitionsToTxnRequest {
            transactional_id: r.transactional_id.clone(),
            producer_id: r.producer.id.0,
            producer_epoch: r.producer.epoch.0,
            topics: by_topic(&r.partitions),
        }
    ))
}

pub(crate) fn add_offsets(r: &core::AddOffsetsToTxnRequest) -> kacrab_wire::Request {
    kacrab_wire::Request::AddOffsetsToTxn(kacrab_wire::message!(wire::AddOffsetsToTxnRequest {
        transactional_id: r.transactional_id.clone(),
        producer_id: r.producer.id.0,
        producer_epoch: r.producer.epoch.0,
        group_id: r.group_id.clone(),
    }))
}

pub(crate) fn txn_offset_commit(r: &core::TxnOffsetCommitRequest) -> kacrab_wire::Request {
    let mut topics: Vec<wire::TxnOffsetCommitTopic> = Vec::new();
    for o in &r.offsets {
        let partition = kacrab_wire::message!(wire::TxnOffsetCommitPartition {
            partition_index: o.partition.partition,
            committed_offset: o.offset,
            committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
            committed_metadata: o.metadata.clone(),
        });
        match topics
            .iter_mut()
            .find(|t| t.name == o.partition.topic.as_str())
        {
            Some(t) => t.partitions.push(partition),
            None => topics.push(kacrab_wire::message!(wire::TxnOffsetCommitTopic {
                name: o.partition.topic.as_str().to_owned(),
                partitions: vec![partition],
            })),
        }
    }
    kacrab_wire::Request::TxnOffsetCommit(kacrab_wire::message!(wire::TxnOffsetCommitRequest {
        transactional_id: r.transactional_id.clone(),
        group_id: r.group.group_id.clone(),
        producer_id: r.producer.id.0,
        producer_epoch: r.producer.epoch.0,
        generation_id: r.group.generation_id,
        member_id: r.group.member_id.clone(),
        group_instance_id: r.group.group_instance_id.clone(),
        topics,
    }))
}

pub(crate) fn end_txn(r: &core::EndTxnRequest) -> kacrab_wire::Request {
    kacrab_wire::Request::EndTxn(kacrab_wire::message!(wire::EndTxnRequest {
        transactional_id: r.transactional_id.clone(),
        producer_id: r.producer.id.0,
        producer_epoch: r.producer.epoch.0,
        committed: r.commit,
    }))
}

/// Per-partition errors of AddPartitionsToTxn / TxnOffsetCommit answers.
pub(crate) fn topic_results(topics: &[wire::TopicResult]) -> Vec<(TopicPartition, KafkaError)> {
    let mut out = Vec::new();
    for t in topics {
        let topic = Topic::new(&t.name);
        for p in &t.partitions {
            out.push((
                TopicPartition {
                    topic: topic.clone(),
                    partition: p.partition_index,
                },
                KafkaError::from_code(p.error_code),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(index: i32, leader: i32) -> wire::MetadataPartition {
        kacrab_wire::message!(wire::MetadataPartition {
            error_code: 0,
            partition_index: index,
            leader_id: leader,
            leader_epoch: 4,
            replica_nodes: vec![leader],
            isr_nodes: vec![leader],
            offline_replicas: Vec::new(),
        })
    }

    fn topic(
        name: &str,
        error_code: i16,
        partitions: Vec<wire::MetadataPartition>,
    ) -> wire::MetadataTopic {
        kacrab_wire::message!(wire::MetadataTopic {
            error_code,
            name: Some(name.to_owned()),
            topic_id: [7; 16],
            is_internal: false,
            partitions,
        })
    }

    /// The brokers, every partition (leaderless ones too, so the count is whole) and
    /// the refused topics reach the core's `Metadata` from one conversion.
    #[test]
    fn metadata_carries_brokers_partition_counts_and_errors() {
        let answer = kacrab_wire::message!(wire::MetadataResponse {
            throttle_time_ms: 0,
            brokers: vec![
                kacrab_wire::message!(wire::MetadataBroker {
                    node_id: 1,
                    host: "b1".into(),
                    port: 9092,
                    rack: Some("r1".into()),
                }),
                kacrab_wire::message!(wire::MetadataBroker {
                    node_id: 2,
                    host: "b2".into(),
                    port: 9093,
                    rack: None,
                }),
            ],
            cluster_id: None,
            controller_id: 1,
            topics: vec![
                topic(
                    "a",
                    0,
                    vec![partition(1, 2), partition(0, 1), partition(2, -1)],
                ),
                topic("gap", 0, vec![partition(0, 1), partition(2, 1)]),
                topic("refused", 29, Vec::new()),
            ],
        });
        let md = metadata(&answer);
        let b1 = md.broker(NodeId(1)).expect("broker 1");
        assert_eq!(
            (b1.host.as_str(), b1.port, b1.rack.as_deref()),
            ("b1", 9092, Some("r1"))
        );
        assert_eq!(md.broker(NodeId(2)).map(|b| b.port), Some(9093));
        assert_eq!(md.broker(NodeId(3)), None);
        assert_eq!(md.partition_count("a"), Some(3));
        assert_eq!(
            md.partition_count("gap"),
            None,
            "a skipped index gives no count"
        );
        assert_eq!(md.partition_count("refused"), None);
        let leaderless = md
            .partitions
            .iter()
            .find(|p| p.partition == TopicPartition::new("a", 2))
            .expect("a leaderless partition is carried");
        assert_eq!(leaderless.leader, None);
        assert_eq!(leaderless.topic_id, Some(core::TopicId([7; 16])));
        assert_eq!(
            md.topic_errors,
            vec![(Topic::new("refused"), KafkaError::TopicAuthorizationFailed)]
        );
    }
}
