//! Conversions between the core's request/response types and the wire's messages.

use std::time::Duration;

use kacrab_idempotence as core;
use kacrab_idempotence::{
    KafkaError, LeaderHint, NodeId, PartitionResponse, Topic, TopicPartition,
};
use kacrab_wire::messages as wire;

/// A core Produce request as a wire Produce request (batches shared, not copied).
pub(crate) fn produce_request(r: &core::ProduceRequest) -> wire::ProduceRequest {
    let mut topics: Vec<wire::ProduceTopic> = Vec::new();
    for b in &r.batches {
        let name = b.partition.topic.as_str();
        let partition = wire::ProducePartition {
            index: b.partition.partition,
            records: b.data.clone(),
        };
        match topics.iter_mut().find(|t| t.name == name) {
            Some(t) => t.partitions.push(partition),
            None => topics.push(wire::ProduceTopic {
                name: name.to_owned(),
                partitions: vec![partition],
            }),
        }
    }
    wire::ProduceRequest {
        transactional_id: r.transactional_id.clone(),
        acks: r.acks.as_i16(),
        timeout_ms: i32::try_from(r.timeout.as_millis()).unwrap_or(i32::MAX),
        topics,
    }
}

pub(crate) fn init_producer_id_request(
    r: &core::InitProducerIdRequest,
) -> wire::InitProducerIdRequest {
    wire::InitProducerIdRequest {
        transactional_id: r.transactional_id.clone(),
        transaction_timeout_ms: i32::try_from(r.transaction_timeout.as_millis())
            .unwrap_or(i32::MAX),
        producer_id: r.current.id.0,
        producer_epoch: r.current.epoch.0,
    }
}

pub(crate) fn metadata_request(topics: &[Topic]) -> wire::MetadataRequest {
    wire::MetadataRequest::topics(topics.iter().map(|t| t.as_str().to_owned()))
}

pub(crate) fn produce_response(r: &wire::ProduceResponse) -> core::ProduceResponse {
    let mut partitions = Vec::new();
    for t in &r.topics {
        let topic = Topic::new(&t.name);
        for p in &t.partitions {
            partitions.push(PartitionResponse {
                partition: TopicPartition {
                    topic: topic.clone(),
                    partition: p.index,
                },
                error: KafkaError::from_code(p.error_code),
                base_offset: p.base_offset,
                log_start_offset: p.log_start_offset,
                log_append_time: p.log_append_time_ms,
                current_leader: p
                    .current_leader
                    .filter(|l| l.leader_id >= 0)
                    .map(|l| LeaderHint {
                        leader: NodeId(l.leader_id),
                        leader_epoch: l.leader_epoch,
                    }),
            });
        }
    }
    core::ProduceResponse {
        partitions,
        throttle: Duration::from_millis(u64::try_from(r.throttle_time_ms).unwrap_or(0)),
    }
}

pub(crate) fn metadata(r: &wire::MetadataResponse) -> core::Metadata {
    let mut md = core::Metadata::default();
    for t in &r.topics {
        let Some(name) = &t.name else { continue };
        let topic = Topic::new(name);
        if t.error_code != 0 {
            md.topic_errors
                .push((topic, KafkaError::from_code(t.error_code)));
            continue;
        }
        for p in &t.partitions {
            md.partitions.push(core::PartitionMetadata {
                partition: TopicPartition {
                    topic: topic.clone(),
                    partition: p.partition_index,
                },
                leader: (p.leader_id >= 0).then_some(NodeId(p.leader_id)),
                leader_epoch: p.leader_epoch,
            });
        }
    }
    md
}
