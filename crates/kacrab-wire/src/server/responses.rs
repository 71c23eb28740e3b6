//! This crate's responses as kafka-protocol's, for its (broker-side) encoders. Nothing is
//! decoded here, so kafka-protocol's unbounded decoders are never involved.

use kafka_protocol::messages as kp;
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::messages::*;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn osb(s: Option<&String>) -> Option<StrBytes> {
    s.map(|s| sb(s))
}

fn ids(nodes: &[i32]) -> Vec<BrokerId> {
    nodes.iter().map(|&n| BrokerId(n)).collect()
}

pub(super) fn api_versions(r: &ApiVersionsResponse) -> kp::ApiVersionsResponse {
    use kp::api_versions_response::{ApiVersion as K, FinalizedFeatureKey, SupportedFeatureKey};
    kp::ApiVersionsResponse::default()
        .with_error_code(r.error_code)
        .with_api_keys(
            r.api_keys
                .iter()
                .map(|k| {
                    K::default()
                        .with_api_key(k.api_key)
                        .with_min_version(k.min_version)
                        .with_max_version(k.max_version)
                })
                .collect(),
        )
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_supported_features(
            r.supported_features
                .iter()
                .map(|f| {
                    SupportedFeatureKey::default()
                        .with_name(sb(&f.name))
                        .with_min_version(f.min_version)
                        .with_max_version(f.max_version)
                })
                .collect(),
        )
        .with_finalized_features_epoch(r.finalized_features_epoch)
        .with_finalized_features(
            r.finalized_features
                .iter()
                .map(|f| {
                    FinalizedFeatureKey::default()
                        .with_name(sb(&f.name))
                        .with_max_version_level(f.max_version_level)
                        .with_min_version_level(f.min_version_level)
                })
                .collect(),
        )
}

pub(super) fn metadata(r: &MetadataResponse) -> kp::MetadataResponse {
    use kp::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    kp::MetadataResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_brokers(
            r.brokers
                .iter()
                .map(|b| {
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(b.node_id))
                        .with_host(sb(&b.host))
                        .with_port(b.port)
                        .with_rack(osb(b.rack.as_ref()))
                })
                .collect(),
        )
        .with_cluster_id(osb(r.cluster_id.as_ref()))
        .with_controller_id(BrokerId(r.controller_id))
        .with_topics(
            r.topics
                .iter()
                .map(|t| {
                    MetadataResponseTopic::default()
                        .with_error_code(t.error_code)
                        .with_name(t.name.as_deref().map(|n| TopicName(sb(n))))
                        .with_topic_id(uuid_of(t.topic_id))
                        .with_is_internal(t.is_internal)
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    MetadataResponsePartition::default()
                                        .with_error_code(p.error_code)
                                        .with_partition_index(p.partition_index)
                                        .with_leader_id(BrokerId(p.leader_id))
                                        .with_leader_epoch(p.leader_epoch)
                                        .with_replica_nodes(ids(&p.replica_nodes))
                                        .with_isr_nodes(ids(&p.isr_nodes))
                                        .with_offline_replicas(ids(&p.offline_replicas))
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

fn uuid_of(id: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}

pub(super) fn init_producer_id(r: &InitProducerIdResponse) -> kp::InitProducerIdResponse {
    kp::InitProducerIdResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_error_code(r.error_code)
        .with_producer_id(ProducerId(r.producer_id))
        .with_producer_epoch(r.producer_epoch)
}

pub(super) fn produce(r: &ProduceResponse) -> kp::ProduceResponse {
    use kp::produce_response::{
        BatchIndexAndErrorMessage, LeaderIdAndEpoch as KLeader, NodeEndpoint as KEndpoint,
        PartitionProduceResponse, TopicProduceResponse,
    };
    kp::ProduceResponse::default()
        .with_responses(
            r.topics
                .iter()
                .map(|t| {
                    TopicProduceResponse::default()
                        .with_name(TopicName(sb(&t.name)))
                        .with_partition_responses(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    let leader =
                                        p.current_leader.map_or_else(KLeader::default, |l| {
                                            KLeader::default()
                                                .with_leader_id(BrokerId(l.leader_id))
                                                .with_leader_epoch(l.leader_epoch)
                                        });
                                    PartitionProduceResponse::default()
                                        .with_index(p.index)
                                        .with_error_code(p.error_code)
                                        .with_base_offset(p.base_offset)
                                        .with_log_append_time_ms(p.log_append_time_ms)
                                        .with_log_start_offset(p.log_start_offset)
                                        .with_record_errors(
                                            p.record_errors
                                                .iter()
                                                .map(|e| {
                                                    BatchIndexAndErrorMessage::default()
                                                        .with_batch_index(e.batch_index)
                                                        .with_batch_index_error_message(osb(e
                                                            .message
                                                            .as_ref()))
                                                })
                                                .collect(),
                                        )
                                        .with_error_message(osb(p.error_message.as_ref()))
                                        .with_current_leader(leader)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_node_endpoints(
            r.node_endpoints
                .iter()
                .map(|e| {
                    KEndpoint::default()
                        .with_node_id(BrokerId(e.node_id))
                        .with_host(sb(&e.host))
                        .with_port(e.port)
                        .with_rack(osb(e.rack.as_ref()))
                })
                .collect(),
        )
}

/// Before v4 the one coordinator sits at the top level; from v4 it is the one entry of
/// `coordinators`, under the key asked for.
pub(super) fn find_coordinator(
    r: &FindCoordinatorResponse,
    version: i16,
) -> kp::FindCoordinatorResponse {
    let base = kp::FindCoordinatorResponse::default().with_throttle_time_ms(r.throttle_time_ms);
    if version >= 4 {
        base.with_coordinators(vec![kp::find_coordinator_response::Coordinator::default()
            .with_key(sb(r.key.as_deref().unwrap_or_default()))
            .with_node_id(BrokerId(r.node_id))
            .with_host(sb(&r.host))
            .with_port(r.port)
            .with_error_code(r.error_code)
            .with_error_message(osb(r.error_message.as_ref()))])
    } else {
        base.with_error_code(r.error_code)
            .with_error_message(osb(r.error_message.as_ref()))
            .with_node_id(BrokerId(r.node_id))
            .with_host(sb(&r.host))
            .with_port(r.port)
    }
}

pub(super) fn add_partitions_to_txn(
    r: &AddPartitionsToTxnResponse,
) -> kp::AddPartitionsToTxnResponse {
    use kp::add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
    };
    kp::AddPartitionsToTxnResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_results_by_topic_v3_and_below(
            r.topics
                .iter()
                .map(|t| {
                    AddPartitionsToTxnTopicResult::default()
                        .with_name(TopicName(sb(&t.name)))
                        .with_results_by_partition(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    AddPartitionsToTxnPartitionResult::default()
                                        .with_partition_index(p.partition_index)
                                        .with_partition_error_code(p.error_code)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

pub(super) fn add_offsets_to_txn(r: &AddOffsetsToTxnResponse) -> kp::AddOffsetsToTxnResponse {
    kp::AddOffsetsToTxnResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_error_code(r.error_code)
}

pub(super) fn txn_offset_commit(r: &TxnOffsetCommitResponse) -> kp::TxnOffsetCommitResponse {
    use kp::txn_offset_commit_response::{
        TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
    };
    kp::TxnOffsetCommitResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_topics(
            r.topics
                .iter()
                .map(|t| {
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(TopicName(sb(&t.name)))
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    TxnOffsetCommitResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(p.error_code)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

pub(super) fn end_txn(r: &EndTxnResponse) -> kp::EndTxnResponse {
    kp::EndTxnResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_error_code(r.error_code)
        .with_producer_id(ProducerId(r.producer_id))
        .with_producer_epoch(r.producer_epoch)
}

pub(super) fn sasl_handshake(r: &SaslHandshakeResponse) -> kp::SaslHandshakeResponse {
    kp::SaslHandshakeResponse::default()
        .with_error_code(r.error_code)
        .with_mechanisms(r.mechanisms.iter().map(|m| sb(m)).collect())
}

pub(super) fn sasl_authenticate(r: &SaslAuthenticateResponse) -> kp::SaslAuthenticateResponse {
    kp::SaslAuthenticateResponse::default()
        .with_error_code(r.error_code)
        .with_error_message(osb(r.error_message.as_ref()))
        .with_auth_bytes(r.auth_bytes.clone())
        .with_session_lifetime_ms(r.session_lifetime_ms)
}

pub(super) fn get_telemetry_subscriptions(
    r: &GetTelemetrySubscriptionsResponse,
) -> kp::GetTelemetrySubscriptionsResponse {
    kp::GetTelemetrySubscriptionsResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_error_code(r.error_code)
        .with_client_instance_id(uuid_of(r.client_instance_id))
        .with_subscription_id(r.subscription_id)
        .with_accepted_compression_types(r.accepted_compression_types.clone())
        .with_push_interval_ms(r.push_interval_ms)
        .with_telemetry_max_bytes(r.telemetry_max_bytes)
        .with_delta_temporality(r.delta_temporality)
        .with_requested_metrics(r.requested_metrics.iter().map(|m| sb(m)).collect())
}

pub(super) fn push_telemetry(r: &PushTelemetryResponse) -> kp::PushTelemetryResponse {
    kp::PushTelemetryResponse::default()
        .with_throttle_time_ms(r.throttle_time_ms)
        .with_error_code(r.error_code)
}
