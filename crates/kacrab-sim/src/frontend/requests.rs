//! Wire requests as the model brokers' messages.

use std::time::Duration;

use kacrab_idempotence as core;
use kacrab_idempotence::ticket::Ticket;
use kacrab_idempotence::{
    Acks, ConsumerGroupMetadata, NodeId, OffsetToCommit, ProducerIdAndEpoch, RequestId, Topic,
    TopicPartition,
};
use kacrab_wire::messages as wire;
use kacrab_wire::{ApiKey, Request};

use super::FrontendError;
use crate::net::ToBroker;

/// A wire request as the model's message (see the `frontend` module docs for the client-only
/// fields).
pub(super) fn to_broker(
    node: NodeId,
    id: RequestId,
    version: i16,
    r: Request,
) -> Result<ToBroker, FrontendError> {
    let producer = |pid: i64, epoch: i16| ProducerIdAndEpoch::new(pid, epoch);
    Ok(match r {
        Request::Produce(p) => {
            let acks = match p.acks {
                0 => Acks::None,
                1 => Acks::Leader,
                -1 => Acks::All,
                _ => {
                    return Err(FrontendError::Unsupported {
                        api: ApiKey::Produce,
                        what: "acks other than 0, 1 and -1",
                    })
                }
            };
            let batches = p
                .topics
                .into_iter()
                .flat_map(|t| {
                    let topic = Topic::new(&t.name);
                    t.partitions.into_iter().map(move |part| {
                        core::ProduceBatch::new(
                            TopicPartition::new(topic.clone(), part.index),
                            part.records,
                        )
                    })
                })
                .collect();
            ToBroker::Produce(
                core::ProduceRequest::new(id, node, acks, millis(p.timeout_ms), batches)
                    .with_ticket(Ticket { seq: 0, parts: 1 })
                    .with_transactional_id(p.transactional_id)
                    .with_transaction_v2(version >= 12),
            )
        }
        Request::InitProducerId(r) => ToBroker::InitProducerId(
            core::InitProducerIdRequest::new(id, millis(r.transaction_timeout_ms))
                .with_node(Some(node))
                .with_transactional_id(r.transactional_id)
                .with_current(producer(r.producer_id, r.producer_epoch)),
        ),
        // "Every topic" (null) becomes no topic: the producer never asks for it.
        Request::Metadata(r) => ToBroker::Metadata(core::MetadataRequest::new(
            id,
            r.topics
                .unwrap_or_default()
                .iter()
                .map(|t| Topic::new(t))
                .collect(),
        )),
        Request::FindCoordinator(r) => ToBroker::Txn(core::Request::FindCoordinator(
            core::FindCoordinatorRequest::new(
                id,
                match r.key_type {
                    wire::CoordinatorType::Group => core::CoordinatorType::Group,
                    wire::CoordinatorType::Transaction => core::CoordinatorType::Transaction,
                },
                r.key,
            ),
        )),
        Request::AddPartitionsToTxn(r) => ToBroker::Txn(core::Request::AddPartitionsToTxn(
            core::AddPartitionsToTxnRequest::new(
                id,
                node,
                r.transactional_id,
                producer(r.producer_id, r.producer_epoch),
                r.topics
                    .iter()
                    .flat_map(|t| {
                        let topic = Topic::new(&t.name);
                        t.partitions
                            .iter()
                            .map(move |&p| TopicPartition::new(topic.clone(), p))
                    })
                    .collect(),
            ),
        )),
        Request::AddOffsetsToTxn(r) => ToBroker::Txn(core::Request::AddOffsetsToTxn(
            core::AddOffsetsToTxnRequest::new(
                id,
                node,
                r.transactional_id,
                producer(r.producer_id, r.producer_epoch),
                r.group_id,
            ),
        )),
        Request::TxnOffsetCommit(r) => {
            let offsets = r
                .topics
                .iter()
                .flat_map(|t| {
                    let topic = Topic::new(&t.name);
                    t.partitions.iter().map(move |p| {
                        OffsetToCommit::new(
                            TopicPartition::new(topic.clone(), p.partition_index),
                            p.committed_offset,
                        )
                        .with_leader_epoch(
                            (p.committed_leader_epoch >= 0).then_some(p.committed_leader_epoch),
                        )
                        .with_metadata(p.committed_metadata.clone())
                    })
                })
                .collect();
            let group = ConsumerGroupMetadata::new(r.group_id)
                .with_member(r.generation_id, r.member_id)
                .with_group_instance_id(r.group_instance_id);
            ToBroker::Txn(core::Request::TxnOffsetCommit(
                core::TxnOffsetCommitRequest::new(
                    id,
                    node,
                    r.transactional_id,
                    producer(r.producer_id, r.producer_epoch),
                    group,
                    offsets,
                )
                .with_transaction_v2(version >= 5),
            ))
        }
        Request::EndTxn(r) => ToBroker::Txn(core::Request::EndTxn(
            core::EndTxnRequest::new(
                id,
                node,
                r.transactional_id,
                producer(r.producer_id, r.producer_epoch),
                r.committed,
            )
            .with_transaction_v2(version >= 5),
        )),
        // Answered by the front end itself; `decode` never gets here with it.
        Request::ApiVersions(_) => {
            return Err(FrontendError::Unsupported {
                api: ApiKey::ApiVersions,
                what: "a body for the model broker",
            })
        }
        // The model brokers run no authentication (PLAINTEXT listeners only).
        Request::Sasl(r) => {
            return Err(FrontendError::Unsupported {
                api: r.api_key(),
                what: "SASL: the model brokers have no authentication",
            })
        }
        // Not advertised (Kafka advertises them only with a telemetry plugin).
        Request::GetTelemetrySubscriptions(_) | Request::PushTelemetry(_) => {
            return Err(FrontendError::Unsupported {
                api: r.api_key(),
                what: "KIP-714 client telemetry: the model brokers have no telemetry plugin",
            })
        }
    })
}

/// Milliseconds from the wire; a negative value is read as zero.
fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
