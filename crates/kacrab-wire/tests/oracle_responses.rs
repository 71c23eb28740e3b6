//! Our response decoders against kafka-protocol's (broker-side) response encoders, for
//! every API and every version we support: random responses, built as our types, are
//! converted to kafka-protocol's, encoded by it, and must decode back to the same value —
//! both as a bare body and as a whole frame through a `Connection`.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use kacrab_wire::messages::*;
use kacrab_wire::{ApiKey, Connection, Request, Response};
use kafka_protocol::messages as kp;
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn s() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._ü€-]{0,10}"
}

fn os() -> impl Strategy<Value = Option<String>> {
    option::of(s())
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn osb(s: &Option<String>) -> Option<StrBytes> {
    s.as_deref().map(sb)
}

/// Unknown tagged fields (tags a future Kafka might add) that the decoders must skip.
fn unknown_tags() -> impl Strategy<Value = BTreeMap<i32, Bytes>> {
    proptest::collection::btree_map(
        40..50i32,
        vec(any::<u8>(), 0..6).prop_map(Bytes::from),
        0..3,
    )
}

fn versions(api: ApiKey) -> impl Strategy<Value = i16> {
    api.supported().min..=api.supported().max
}

/// A request of `api` that encodes at every supported version and expects an answer.
fn request_for(api: ApiKey) -> Request {
    match api {
        ApiKey::Produce => kacrab_wire::message!(ProduceRequest {
            acks: -1,
            ..Default::default()
        })
        .into(),
        ApiKey::Metadata => MetadataRequest::all_topics().into(),
        ApiKey::FindCoordinator => FindCoordinatorRequest::default().into(),
        ApiKey::ApiVersions => ApiVersionsRequest::default().into(),
        ApiKey::InitProducerId => InitProducerIdRequest::default().into(),
        ApiKey::AddPartitionsToTxn => AddPartitionsToTxnRequest::default().into(),
        ApiKey::AddOffsetsToTxn => AddOffsetsToTxnRequest::default().into(),
        ApiKey::TxnOffsetCommit => TxnOffsetCommitRequest::default().into(),
        ApiKey::EndTxn => EndTxnRequest::default().into(),
        ApiKey::SaslHandshake => SaslHandshakeRequest::default().into(),
        ApiKey::SaslAuthenticate => SaslAuthenticateRequest::default().into(),
        ApiKey::GetTelemetrySubscriptions => GetTelemetrySubscriptionsRequest::default().into(),
        ApiKey::PushTelemetry => PushTelemetryRequest::default().into(),
    }
}

/// Encodes `body` with kafka-protocol, decodes it with ours both bare and framed.
fn check<K: Encodable>(
    api: ApiKey,
    version: i16,
    body: &K,
    header_tags: BTreeMap<i32, Bytes>,
    expected: Response,
) -> Result<(), TestCaseError> {
    let mut encoded = BytesMut::new();
    body.encode(&mut encoded, version)
        .map_err(|e| TestCaseError::fail(format!("oracle encode: {e}")))?;
    let encoded = encoded.freeze();
    let decoded = Response::decode(api, version, encoded.clone())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&decoded, &expected);

    let mut conn = Connection::new(Some("oracle".into()));
    let sent = conn.encode(request_for(api), version, 0xfeed).unwrap();
    let header_version = api.response_header_version(version);
    let mut frame = BytesMut::new();
    let header = kp::ResponseHeader::default()
        .with_correlation_id(sent.correlation_id)
        .with_unknown_tagged_fields(if header_version >= 1 {
            header_tags
        } else {
            BTreeMap::new()
        });
    header.encode(&mut frame, header_version).unwrap();
    frame.put_slice(&encoded);
    let got = conn
        .decode(frame.freeze())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(got.tag, 0xfeed);
    prop_assert_eq!(got.version, version);
    prop_assert_eq!(got.response, expected);
    prop_assert_eq!(conn.in_flight_count(), 0);
    Ok(())
}

fn flex_tags(api: ApiKey, v: i16, tags: BTreeMap<i32, Bytes>) -> BTreeMap<i32, Bytes> {
    if api.is_flexible(v) {
        tags
    } else {
        BTreeMap::new()
    }
}

// ---------------------------------------------------------------------------------------

fn api_versions(v: i16) -> impl Strategy<Value = ApiVersionsResponse> {
    let api_key = (any::<i16>(), any::<i16>(), any::<i16>()).prop_map(
        |(api_key, min_version, max_version)| {
            kacrab_wire::message!(ApiVersion {
                api_key,
                min_version,
                max_version,
            })
        },
    );
    let supported =
        (s(), any::<i16>(), any::<i16>()).prop_map(|(name, min_version, max_version)| {
            kacrab_wire::message!(SupportedFeature {
                name,
                min_version,
                max_version,
            })
        });
    let finalized = (s(), any::<i16>(), any::<i16>()).prop_map(
        |(name, max_version_level, min_version_level)| {
            kacrab_wire::message!(FinalizedFeature {
                name,
                max_version_level,
                min_version_level,
            })
        },
    );
    // 35 (UNSUPPORTED_VERSION) bodies are read as v0 by design; tested separately.
    let error_code = any::<i16>().prop_filter("not 35", |e| *e != UNSUPPORTED_VERSION);
    (
        error_code,
        vec(api_key, 0..5),
        any::<i32>(),
        vec(supported, 0..3),
        any::<i64>(),
        vec(finalized, 0..3),
    )
        .prop_map(
            move |(
                error_code,
                api_keys,
                throttle,
                supported_features,
                epoch,
                finalized_features,
            )| {
                let v3 = v >= 3;
                kacrab_wire::message!(ApiVersionsResponse {
                    error_code,
                    api_keys,
                    throttle_time_ms: if v >= 1 { throttle } else { 0 },
                    supported_features: if v3 { supported_features } else { vec![] },
                    finalized_features_epoch: if v3 { epoch } else { -1 },
                    finalized_features: if v3 { finalized_features } else { vec![] },
                })
            },
        )
}

fn api_versions_kp(
    r: &ApiVersionsResponse,
    zk: bool,
    tags: BTreeMap<i32, Bytes>,
) -> kp::ApiVersionsResponse {
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
        .with_zk_migration_ready(zk)
        .with_unknown_tagged_fields(tags)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn api_versions_matches_oracle(
        (v, r) in versions(ApiKey::ApiVersions).prop_flat_map(|v| (Just(v), api_versions(v))),
        zk in any::<bool>(), tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::ApiVersions;
        let body = api_versions_kp(&r, zk && v >= 3, flex_tags(api, v, tags));
        check(api, v, &body, header_tags, r.into())?;
    }
}

// ---------------------------------------------------------------------------------------

fn metadata(v: i16) -> impl Strategy<Value = MetadataResponse> {
    let broker = (any::<i32>(), s(), any::<i32>(), os()).prop_map(|(node_id, host, port, rack)| {
        kacrab_wire::message!(MetadataBroker {
            node_id,
            host,
            port,
            rack,
        })
    });
    let partition = (
        any::<i16>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        vec(any::<i32>(), 0..4),
        vec(any::<i32>(), 0..4),
        vec(any::<i32>(), 0..3),
    )
        .prop_map(
            move |(
                error_code,
                partition_index,
                leader_id,
                epoch,
                replica_nodes,
                isr_nodes,
                offline,
            )| {
                kacrab_wire::message!(MetadataPartition {
                    error_code,
                    partition_index,
                    leader_id,
                    leader_epoch: if v >= 7 { epoch } else { -1 },
                    replica_nodes,
                    isr_nodes,
                    offline_replicas: if v >= 5 { offline } else { vec![] },
                })
            },
        );
    let topic = (
        any::<i16>(),
        os(),
        any::<[u8; 16]>(),
        any::<bool>(),
        vec(partition, 0..4),
    )
        .prop_map(
            move |(error_code, name, topic_id, is_internal, partitions)| {
                kacrab_wire::message!(MetadataTopic {
                    error_code,
                    name: if v >= 12 {
                        name
                    } else {
                        Some(name.unwrap_or_default())
                    },
                    topic_id: if v >= 10 { topic_id } else { [0; 16] },
                    is_internal,
                    partitions,
                })
            },
        );
    (
        any::<i32>(),
        vec(broker, 0..4),
        os(),
        any::<i32>(),
        vec(topic, 0..4),
    )
        .prop_map(
            move |(throttle, brokers, cluster_id, controller_id, topics)| {
                kacrab_wire::message!(MetadataResponse {
                    throttle_time_ms: if v >= 3 { throttle } else { 0 },
                    brokers,
                    cluster_id: if v >= 2 { cluster_id } else { None },
                    controller_id,
                    topics,
                })
            },
        )
}

fn metadata_kp(
    r: &MetadataResponse,
    v: i16,
    ops: i32,
    tags: BTreeMap<i32, Bytes>,
) -> kp::MetadataResponse {
    use kp::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    let ids = |v: &[i32]| v.iter().map(|&i| BrokerId(i)).collect::<Vec<_>>();
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
                        .with_rack(osb(&b.rack))
                })
                .collect(),
        )
        .with_cluster_id(osb(&r.cluster_id))
        .with_controller_id(BrokerId(r.controller_id))
        .with_topics(
            r.topics
                .iter()
                .map(|t| {
                    MetadataResponseTopic::default()
                        .with_error_code(t.error_code)
                        .with_name(t.name.as_deref().map(|n| TopicName(sb(n))))
                        .with_topic_id(uuid::Uuid::from_bytes(t.topic_id))
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
                        .with_topic_authorized_operations(if v >= 8 { ops } else { i32::MIN })
                })
                .collect(),
        )
        .with_cluster_authorized_operations(if (8..=10).contains(&v) { ops } else { i32::MIN })
        .with_unknown_tagged_fields(tags)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn metadata_matches_oracle(
        (v, r) in versions(ApiKey::Metadata).prop_flat_map(|v| (Just(v), metadata(v))),
        ops in any::<i32>(), tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::Metadata;
        let body = metadata_kp(&r, v, ops, flex_tags(api, v, tags));
        check(api, v, &body, header_tags, r.into())?;
    }
}

// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn init_producer_id_matches_oracle(
        v in versions(ApiKey::InitProducerId),
        (throttle_time_ms, error_code, producer_id, producer_epoch) in any::<(i32, i16, i64, i16)>(),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::InitProducerId;
        let body = kp::InitProducerIdResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_error_code(error_code)
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch)
            .with_unknown_tagged_fields(flex_tags(api, v, tags));
        let r = kacrab_wire::message!(InitProducerIdResponse { throttle_time_ms, error_code, producer_id, producer_epoch });
        check(api, v, &body, header_tags, r.into())?;
    }

    #[test]
    fn add_offsets_to_txn_matches_oracle(
        v in versions(ApiKey::AddOffsetsToTxn),
        (throttle_time_ms, error_code) in any::<(i32, i16)>(),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::AddOffsetsToTxn;
        let body = kp::AddOffsetsToTxnResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_error_code(error_code)
            .with_unknown_tagged_fields(flex_tags(api, v, tags));
        check(api, v, &body, header_tags, kacrab_wire::message!(AddOffsetsToTxnResponse { throttle_time_ms, error_code }).into())?;
    }

    #[test]
    fn end_txn_matches_oracle(
        v in versions(ApiKey::EndTxn),
        (throttle_time_ms, error_code, pid, epoch) in any::<(i32, i16, i64, i16)>(),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::EndTxn;
        let (producer_id, producer_epoch) = if v >= 5 { (pid, epoch) } else { (-1, -1) };
        let body = kp::EndTxnResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_error_code(error_code)
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch)
            .with_unknown_tagged_fields(flex_tags(api, v, tags));
        let r = kacrab_wire::message!(EndTxnResponse { throttle_time_ms, error_code, producer_id, producer_epoch });
        check(api, v, &body, header_tags, r.into())?;
    }
}

// ---------------------------------------------------------------------------------------

fn topic_results() -> impl Strategy<Value = Vec<TopicResult>> {
    let partition = any::<(i32, i16)>().prop_map(|(partition_index, error_code)| {
        kacrab_wire::message!(PartitionResult {
            partition_index,
            error_code,
        })
    });
    vec(
        (s(), vec(partition, 0..4))
            .prop_map(|(name, partitions)| kacrab_wire::message!(TopicResult { name, partitions })),
        0..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn add_partitions_to_txn_matches_oracle(
        v in versions(ApiKey::AddPartitionsToTxn),
        throttle_time_ms in any::<i32>(), topics in topic_results(),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        use kp::add_partitions_to_txn_response::{AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult};
        let api = ApiKey::AddPartitionsToTxn;
        let body = kp::AddPartitionsToTxnResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_results_by_topic_v3_and_below(
                topics
                    .iter()
                    .map(|t| {
                        AddPartitionsToTxnTopicResult::default().with_name(TopicName(sb(&t.name))).with_results_by_partition(
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
            .with_unknown_tagged_fields(flex_tags(api, v, tags));
        check(api, v, &body, header_tags, kacrab_wire::message!(AddPartitionsToTxnResponse { throttle_time_ms, topics }).into())?;
    }

    #[test]
    fn txn_offset_commit_matches_oracle(
        v in versions(ApiKey::TxnOffsetCommit),
        throttle_time_ms in any::<i32>(), topics in topic_results(),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        use kp::txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
        let api = ApiKey::TxnOffsetCommit;
        let body = kp::TxnOffsetCommitResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_topics(
                topics
                    .iter()
                    .map(|t| {
                        TxnOffsetCommitResponseTopic::default().with_name(TopicName(sb(&t.name))).with_partitions(
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
            .with_unknown_tagged_fields(flex_tags(api, v, tags));
        check(api, v, &body, header_tags, kacrab_wire::message!(TxnOffsetCommitResponse { throttle_time_ms, topics }).into())?;
    }

    #[test]
    fn find_coordinator_matches_oracle(
        v in versions(ApiKey::FindCoordinator),
        (throttle, error_code, node_id, port) in any::<(i32, i16, i32, i32)>(),
        key in s(), host in s(), message in os(),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        use kp::find_coordinator_response::Coordinator;
        let api = ApiKey::FindCoordinator;
        let throttle_time_ms = if v >= 1 { throttle } else { 0 };
        let error_message = if v >= 1 { message } else { None };
        let body = if v >= 4 {
            kp::FindCoordinatorResponse::default().with_coordinators(vec![Coordinator::default()
                .with_key(sb(&key))
                .with_node_id(BrokerId(node_id))
                .with_host(sb(&host))
                .with_port(port)
                .with_error_code(error_code)
                .with_error_message(osb(&error_message))])
        } else {
            kp::FindCoordinatorResponse::default()
                .with_error_code(error_code)
                .with_error_message(if v >= 1 { osb(&error_message) } else { Some(StrBytes::default()) })
                .with_node_id(BrokerId(node_id))
                .with_host(sb(&host))
                .with_port(port)
        }
        .with_throttle_time_ms(throttle_time_ms)
        .with_unknown_tagged_fields(flex_tags(api, v, tags));
        let r = kacrab_wire::message!(FindCoordinatorResponse {
            throttle_time_ms,
            key: (v >= 4).then_some(key),
            error_code,
            error_message,
            node_id,
            host,
            port,
        });
        check(api, v, &body, header_tags, r.into())?;
    }
}

// ---------------------------------------------------------------------------------------

fn produce(v: i16) -> impl Strategy<Value = ProduceResponse> {
    let record_error = (any::<i32>(), os()).prop_map(|(batch_index, message)| {
        kacrab_wire::message!(RecordError {
            batch_index,
            message,
        })
    });
    let leader = option::of(
        (0..i32::MAX, any::<i32>()).prop_map(|(leader_id, leader_epoch)| {
            kacrab_wire::message!(LeaderIdAndEpoch {
                leader_id,
                leader_epoch,
            })
        }),
    );
    let partition = (
        any::<(i32, i16, i64, i64, i64)>(),
        vec(record_error, 0..3),
        os(),
        leader,
    )
        .prop_map(
            move |(
                (index, error_code, base_offset, log_append_time_ms, log_start),
                record_errors,
                message,
                leader,
            )| {
                kacrab_wire::message!(ProducePartitionResponse {
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset: if v >= 5 { log_start } else { -1 },
                    record_errors: if v >= 8 { record_errors } else { vec![] },
                    error_message: if v >= 8 { message } else { None },
                    current_leader: if v >= 10 { leader } else { None },
                })
            },
        );
    let topic = (s(), vec(partition, 0..4)).prop_map(|(name, partitions)| {
        kacrab_wire::message!(ProduceTopicResponse { name, partitions })
    });
    let endpoint =
        (any::<i32>(), s(), any::<i32>(), os()).prop_map(|(node_id, host, port, rack)| {
            kacrab_wire::message!(NodeEndpoint {
                node_id,
                host,
                port,
                rack,
            })
        });
    (vec(topic, 0..4), any::<i32>(), vec(endpoint, 0..3)).prop_map(
        move |(topics, throttle_time_ms, endpoints)| {
            kacrab_wire::message!(ProduceResponse {
                topics,
                throttle_time_ms,
                node_endpoints: if v >= 10 { endpoints } else { vec![] },
            })
        },
    )
}

fn produce_kp(r: &ProduceResponse, tags: BTreeMap<i32, Bytes>) -> kp::ProduceResponse {
    use kp::produce_response::{
        BatchIndexAndErrorMessage, LeaderIdAndEpoch as L, NodeEndpoint as N,
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
                                    let leader = p.current_leader.map_or_else(L::default, |l| {
                                        L::default()
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
                                                        .with_batch_index_error_message(osb(
                                                            &e.message
                                                        ))
                                                })
                                                .collect(),
                                        )
                                        .with_error_message(osb(&p.error_message))
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
                    N::default()
                        .with_node_id(BrokerId(e.node_id))
                        .with_host(sb(&e.host))
                        .with_port(e.port)
                        .with_rack(osb(&e.rack))
                })
                .collect(),
        )
        .with_unknown_tagged_fields(tags)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn produce_matches_oracle(
        (v, r) in versions(ApiKey::Produce).prop_flat_map(|v| (Just(v), produce(v))),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::Produce;
        let body = produce_kp(&r, flex_tags(api, v, tags));
        check(api, v, &body, header_tags, r.into())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sasl_handshake_matches_oracle(
        v in versions(ApiKey::SaslHandshake),
        error_code in any::<i16>(),
        mechanisms in vec(s(), 0..4),
        header_tags in unknown_tags(),
    ) {
        let body = kp::SaslHandshakeResponse::default()
            .with_error_code(error_code)
            .with_mechanisms(mechanisms.iter().map(|m| sb(m)).collect());
        let r = kacrab_wire::message!(SaslHandshakeResponse { error_code, mechanisms });
        check(ApiKey::SaslHandshake, v, &body, header_tags, r.into())?;
    }

    #[test]
    fn sasl_authenticate_matches_oracle(
        v in versions(ApiKey::SaslAuthenticate),
        (error_code, lifetime) in any::<(i16, i64)>(),
        error_message in os(),
        auth in vec(any::<u8>(), 0..40),
        tags in unknown_tags(), header_tags in unknown_tags(),
    ) {
        let api = ApiKey::SaslAuthenticate;
        let session_lifetime_ms = if v >= 1 { lifetime } else { 0 };
        let body = kp::SaslAuthenticateResponse::default()
            .with_error_code(error_code)
            .with_error_message(osb(&error_message))
            .with_auth_bytes(Bytes::from(auth.clone()))
            .with_session_lifetime_ms(session_lifetime_ms)
            .with_unknown_tagged_fields(flex_tags(api, v, tags));
        let r = kacrab_wire::message!(SaslAuthenticateResponse {
            error_code,
            error_message,
            auth_bytes: Bytes::from(auth),
            session_lifetime_ms,
        });
        check(api, v, &body, header_tags, r.into())?;
    }
}
