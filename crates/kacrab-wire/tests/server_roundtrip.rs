//! The broker half (feature `server`) against the client half, for every API and every
//! version the client can pick: a request the client encodes decodes back to itself on
//! the server; a response the server encodes decodes back to itself on the client.
//! Malformed request frames give typed errors, never panics.

use bytes::{BufMut, Bytes, BytesMut};
use kacrab_wire::messages::*;
use kacrab_wire::server::{
    decode_request, encode_response, unsupported_api_versions, RequestBody, ServerRequest,
};
use kacrab_wire::{
    ApiKey, Connection, DecodeError, FrameDecoder, Request, Response, VersionRange, WireError,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn s() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._ü€-]{0,10}"
}

fn os() -> impl Strategy<Value = Option<String>> {
    option::of(s())
}

fn versions(api: ApiKey) -> impl Strategy<Value = i16> {
    api.supported().min..=api.supported().max
}

/// Strips the length prefix, checking it.
fn payload(frame: &Bytes) -> Bytes {
    let len = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
    assert_eq!(len as usize, frame.len() - 4);
    frame.slice(4..)
}

// ------------------------------------------------------------------------ requests

/// A random request of `api` that the client can encode at `v`, and what the server
/// must read back (fields the version lacks hold their defaults).
fn same(r: Request) -> (Request, Request) {
    (r.clone(), r)
}

fn request(api: ApiKey, v: i16) -> BoxedStrategy<(Request, Request)> {
    match api {
        ApiKey::ApiVersions => (s(), s())
            .prop_map(move |(name, version)| {
                let sent = kacrab_wire::message!(ApiVersionsRequest {
                    client_software_name: name,
                    client_software_version: version,
                });
                let read = if v >= 3 {
                    sent.clone()
                } else {
                    kacrab_wire::message!(ApiVersionsRequest {
                        client_software_name: String::new(),
                        client_software_version: String::new(),
                    })
                };
                (sent.into(), read.into())
            })
            .boxed(),
        ApiKey::Metadata => (option::of(vec(s(), 0..4)), any::<bool>())
            .prop_map(move |(topics, auto)| {
                same(
                    kacrab_wire::message!(MetadataRequest {
                        topics,
                        allow_auto_topic_creation: auto || v < 4,
                    })
                    .into(),
                )
            })
            .boxed(),
        ApiKey::InitProducerId => (os(), any::<i32>(), any::<i64>(), any::<i16>())
            .prop_map(move |(transactional_id, timeout, pid, epoch)| {
                let (producer_id, producer_epoch) = if v >= 3 { (pid, epoch) } else { (-1, -1) };
                same(
                    kacrab_wire::message!(InitProducerIdRequest {
                        transactional_id,
                        transaction_timeout_ms: timeout,
                        producer_id,
                        producer_epoch,
                    })
                    .into(),
                )
            })
            .boxed(),
        ApiKey::Produce => {
            let partition = (any::<i32>(), vec(any::<u8>(), 0..40)).prop_map(|(index, b)| {
                kacrab_wire::message!(ProducePartition {
                    index,
                    records: Bytes::from(b),
                })
            });
            let topic = (s(), vec(partition, 0..3)).prop_map(|(name, partitions)| {
                kacrab_wire::message!(ProduceTopic { name, partitions })
            });
            (
                os(),
                prop_oneof![Just(-1i16), Just(0), Just(1)],
                any::<i32>(),
                vec(topic, 0..3),
            )
                .prop_map(move |(transactional_id, acks, timeout_ms, topics)| {
                    same(
                        kacrab_wire::message!(ProduceRequest {
                            transactional_id,
                            acks,
                            timeout_ms,
                            topics,
                        })
                        .into(),
                    )
                })
                .boxed()
        }
        ApiKey::FindCoordinator => (s(), any::<bool>())
            .prop_map(move |(key, txn)| {
                let key_type = if txn && v >= 1 {
                    CoordinatorType::Transaction
                } else {
                    CoordinatorType::Group
                };
                same(kacrab_wire::message!(FindCoordinatorRequest { key, key_type }).into())
            })
            .boxed(),
        ApiKey::AddPartitionsToTxn => {
            let topic = (s(), vec(any::<i32>(), 0..4)).prop_map(|(name, partitions)| {
                kacrab_wire::message!(TopicPartitions { name, partitions })
            });
            (s(), any::<i64>(), any::<i16>(), vec(topic, 0..3))
                .prop_map(|(transactional_id, producer_id, producer_epoch, topics)| {
                    same(
                        kacrab_wire::message!(AddPartitionsToTxnRequest {
                            transactional_id,
                            producer_id,
                            producer_epoch,
                            topics,
                        })
                        .into(),
                    )
                })
                .boxed()
        }
        ApiKey::AddOffsetsToTxn => (s(), any::<i64>(), any::<i16>(), s())
            .prop_map(
                |(transactional_id, producer_id, producer_epoch, group_id)| {
                    same(
                        kacrab_wire::message!(AddOffsetsToTxnRequest {
                            transactional_id,
                            producer_id,
                            producer_epoch,
                            group_id,
                        })
                        .into(),
                    )
                },
            )
            .boxed(),
        ApiKey::EndTxn => (s(), any::<i64>(), any::<i16>(), any::<bool>())
            .prop_map(
                |(transactional_id, producer_id, producer_epoch, committed)| {
                    same(
                        kacrab_wire::message!(EndTxnRequest {
                            transactional_id,
                            producer_id,
                            producer_epoch,
                            committed,
                        })
                        .into(),
                    )
                },
            )
            .boxed(),
        ApiKey::SaslHandshake => s()
            .prop_map(|mechanism| {
                same(kacrab_wire::message!(SaslHandshakeRequest { mechanism }).into())
            })
            .boxed(),
        ApiKey::SaslAuthenticate => vec(any::<u8>(), 0..40)
            .prop_map(|b| {
                same(
                    kacrab_wire::message!(SaslAuthenticateRequest {
                        auth_bytes: Bytes::from(b),
                    })
                    .into(),
                )
            })
            .boxed(),
        ApiKey::GetTelemetrySubscriptions => any::<[u8; 16]>()
            .prop_map(|id| same(GetTelemetrySubscriptionsRequest::new(id).into()))
            .boxed(),
        ApiKey::PushTelemetry => (
            any::<[u8; 16]>(),
            any::<(i32, bool, i8)>(),
            vec(any::<u8>(), 0..40),
        )
            .prop_map(
                |(client_instance_id, (subscription_id, terminating, compression_type), m)| {
                    same(
                        kacrab_wire::message!(PushTelemetryRequest {
                            client_instance_id,
                            subscription_id,
                            terminating,
                            compression_type,
                            metrics: Bytes::from(m),
                        })
                        .into(),
                    )
                },
            )
            .boxed(),
        ApiKey::TxnOffsetCommit => {
            let partition = (any::<i32>(), any::<i64>(), any::<i32>(), os()).prop_map(
                move |(partition_index, committed_offset, epoch, committed_metadata)| {
                    kacrab_wire::message!(TxnOffsetCommitPartition {
                        partition_index,
                        committed_offset,
                        committed_leader_epoch: if v >= 2 { epoch } else { -1 },
                        committed_metadata,
                    })
                },
            );
            let topic = (s(), vec(partition, 0..3)).prop_map(|(name, partitions)| {
                kacrab_wire::message!(TxnOffsetCommitTopic { name, partitions })
            });
            (
                (s(), s(), any::<i64>(), any::<i16>()),
                (any::<i32>(), s(), os()),
                vec(topic, 0..3),
            )
                .prop_map(
                    move |(
                        (transactional_id, group_id, producer_id, producer_epoch),
                        (generation, member, instance),
                        topics,
                    )| {
                        let v3 = v >= 3;
                        same(
                            kacrab_wire::message!(TxnOffsetCommitRequest {
                                transactional_id,
                                group_id,
                                producer_id,
                                producer_epoch,
                                generation_id: if v3 { generation } else { -1 },
                                member_id: if v3 { member } else { String::new() },
                                group_instance_id: if v3 { instance } else { None },
                                topics,
                            })
                            .into(),
                        )
                    },
                )
                .boxed()
        }
    }
}

fn api() -> impl Strategy<Value = ApiKey> {
    proptest::sample::select(ApiKey::ALL.to_vec())
}

fn api_request() -> impl Strategy<Value = (ApiKey, i16, Request, Request)> {
    api()
        .prop_flat_map(|api| (Just(api), versions(api)))
        .prop_flat_map(|(api, v)| {
            request(api, v).prop_map(move |(sent, read)| (api, v, sent, read))
        })
}

/// Every record batch of a Produce request lies inside `frame`'s buffer: not copied.
fn records_share(request: &Request, frame: &Bytes) -> bool {
    let Request::Produce(p) = request else {
        return true;
    };
    let range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len() + 1;
    p.topics
        .iter()
        .flat_map(|t| &t.partitions)
        .filter(|p| !p.records.is_empty())
        .all(|p| range.contains(&(p.records.as_ptr() as usize)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Client encode, server decode: the same request, header and all.
    #[test]
    fn every_request_decodes_back_on_the_server(
        (api, v, sent, read) in api_request(),
        client_id in os(),
        first_id in 0..1000i32,
    ) {
        let mut conn = Connection::new(client_id.clone());
        for _ in 0..first_id % 3 {
            // Move the correlation ids on a little.
            conn.encode(MetadataRequest::all_topics(), 1, 0).unwrap();
        }
        let encoded = conn.encode(sent, v, 7).unwrap();
        let frame = payload(&encoded.frame.to_bytes());
        let got = decode_request(frame.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(got.header.api, api);
        prop_assert_eq!(got.header.version, v);
        prop_assert_eq!(got.header.correlation_id, encoded.correlation_id);
        prop_assert_eq!(&got.header.client_id, &client_id);
        let RequestBody::Request(body) = got.body else {
            return Err(TestCaseError::fail("not a request body"));
        };
        prop_assert!(records_share(&body, &frame), "record batches were copied");
        prop_assert_eq!(body, read);
    }

    /// A frame cut short anywhere is a typed error: truncated header or body.
    #[test]
    fn a_truncated_request_is_a_typed_error((_, v, sent, _) in api_request(), cut in any::<prop::sample::Index>()) {
        let mut conn = Connection::new(Some("c".into()));
        let frame = payload(&conn.encode(sent, v, 0).unwrap().frame.to_bytes());
        let cut = cut.index(frame.len());
        match decode_request(frame.slice(..cut)) {
            Err(WireError::Truncated { .. } | WireError::RequestHeader { source: None }) => {}
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }

    /// Arbitrary bytes never panic (and allocate only what arrived).
    #[test]
    fn arbitrary_request_frames_never_panic(bytes in vec(any::<u8>(), 0..200), api in api(), v in 0..14i16) {
        let _ = decode_request(Bytes::from(bytes.clone()));
        // The same bytes behind a valid header of a known API and version.
        let mut frame = BytesMut::new();
        frame.put_i16(api.id());
        frame.put_i16(v);
        frame.put_i32(1);
        frame.put_i16(-1);
        if api.request_header_version(v) >= 2 {
            frame.put_u8(0);
        }
        frame.put_slice(&bytes);
        let _ = decode_request(frame.freeze());
    }
}

// ----------------------------------------------------------------------- responses

fn api_versions_response(v: i16) -> impl Strategy<Value = ApiVersionsResponse> {
    let key = any::<(i16, i16, i16)>().prop_map(|(api_key, min_version, max_version)| {
        kacrab_wire::message!(ApiVersion {
            api_key,
            min_version,
            max_version,
        })
    });
    let supported = (s(), any::<(i16, i16)>()).prop_map(|(name, (min_version, max_version))| {
        kacrab_wire::message!(SupportedFeature {
            name,
            min_version,
            max_version,
        })
    });
    let finalized = (s(), any::<(i16, i16)>()).prop_map(|(name, (max, min))| {
        kacrab_wire::message!(FinalizedFeature {
            name,
            max_version_level: max,
            min_version_level: min,
        })
    });
    let error_code = any::<i16>().prop_filter("not 35", |e| *e != UNSUPPORTED_VERSION);
    (
        error_code,
        vec(key, 0..5),
        any::<i32>(),
        vec(supported, 0..3),
        any::<i64>(),
        vec(finalized, 0..3),
    )
        .prop_map(
            move |(error_code, api_keys, throttle, supported, epoch, finalized)| {
                let v3 = v >= 3;
                kacrab_wire::message!(ApiVersionsResponse {
                    error_code,
                    api_keys,
                    throttle_time_ms: if v >= 1 { throttle } else { 0 },
                    supported_features: if v3 { supported } else { vec![] },
                    finalized_features_epoch: if v3 { epoch } else { -1 },
                    finalized_features: if v3 { finalized } else { vec![] },
                })
            },
        )
}

fn metadata_response(v: i16) -> impl Strategy<Value = MetadataResponse> {
    let broker = (any::<i32>(), s(), any::<i32>(), os()).prop_map(|(node_id, host, port, rack)| {
        kacrab_wire::message!(MetadataBroker {
            node_id,
            host,
            port,
            rack,
        })
    });
    let partition = (
        any::<(i16, i32, i32, i32)>(),
        vec(any::<i32>(), 0..4),
        vec(any::<i32>(), 0..4),
        vec(any::<i32>(), 0..3),
    )
        .prop_map(
            move |((error_code, partition_index, leader_id, epoch), replicas, isr, offline)| {
                kacrab_wire::message!(MetadataPartition {
                    error_code,
                    partition_index,
                    leader_id,
                    leader_epoch: if v >= 7 { epoch } else { -1 },
                    replica_nodes: replicas,
                    isr_nodes: isr,
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
        vec(topic, 0..3),
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

fn produce_response(v: i16) -> impl Strategy<Value = ProduceResponse> {
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
                errors,
                message,
                leader,
            )| {
                kacrab_wire::message!(ProducePartitionResponse {
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset: if v >= 5 { log_start } else { -1 },
                    record_errors: if v >= 8 { errors } else { vec![] },
                    error_message: if v >= 8 { message } else { None },
                    current_leader: if v >= 10 { leader } else { None },
                })
            },
        );
    let topic = (s(), vec(partition, 0..3)).prop_map(|(name, partitions)| {
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
    (vec(topic, 0..3), any::<i32>(), vec(endpoint, 0..3)).prop_map(
        move |(topics, throttle_time_ms, endpoints)| {
            kacrab_wire::message!(ProduceResponse {
                topics,
                throttle_time_ms,
                node_endpoints: if v >= 10 { endpoints } else { vec![] },
            })
        },
    )
}

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
        0..3,
    )
}

/// A random response of `api` valid at `v` (fields the version lacks at their defaults).
fn response(api: ApiKey, v: i16) -> BoxedStrategy<Response> {
    match api {
        ApiKey::ApiVersions => api_versions_response(v).prop_map(Response::from).boxed(),
        ApiKey::Metadata => metadata_response(v).prop_map(Response::from).boxed(),
        ApiKey::Produce => produce_response(v).prop_map(Response::from).boxed(),
        ApiKey::InitProducerId => any::<(i32, i16, i64, i16)>()
            .prop_map(
                |(throttle_time_ms, error_code, producer_id, producer_epoch)| {
                    kacrab_wire::message!(InitProducerIdResponse {
                        throttle_time_ms,
                        error_code,
                        producer_id,
                        producer_epoch,
                    })
                    .into()
                },
            )
            .boxed(),
        ApiKey::FindCoordinator => (any::<(i32, i16, i32, i32)>(), s(), s(), os())
            .prop_map(
                move |((throttle, error_code, node_id, port), key, host, message)| {
                    kacrab_wire::message!(FindCoordinatorResponse {
                        throttle_time_ms: if v >= 1 { throttle } else { 0 },
                        key: (v >= 4).then_some(key),
                        error_code,
                        error_message: if v >= 1 { message } else { None },
                        node_id,
                        host,
                        port,
                    })
                    .into()
                },
            )
            .boxed(),
        ApiKey::AddPartitionsToTxn => (any::<i32>(), topic_results())
            .prop_map(|(throttle_time_ms, topics)| {
                kacrab_wire::message!(AddPartitionsToTxnResponse {
                    throttle_time_ms,
                    topics,
                })
                .into()
            })
            .boxed(),
        ApiKey::TxnOffsetCommit => (any::<i32>(), topic_results())
            .prop_map(|(throttle_time_ms, topics)| {
                kacrab_wire::message!(TxnOffsetCommitResponse {
                    throttle_time_ms,
                    topics,
                })
                .into()
            })
            .boxed(),
        ApiKey::AddOffsetsToTxn => any::<(i32, i16)>()
            .prop_map(|(throttle_time_ms, error_code)| {
                kacrab_wire::message!(AddOffsetsToTxnResponse {
                    throttle_time_ms,
                    error_code,
                })
                .into()
            })
            .boxed(),
        ApiKey::EndTxn => any::<(i32, i16, i64, i16)>()
            .prop_map(move |(throttle_time_ms, error_code, pid, epoch)| {
                let (producer_id, producer_epoch) = if v >= 5 { (pid, epoch) } else { (-1, -1) };
                kacrab_wire::message!(EndTxnResponse {
                    throttle_time_ms,
                    error_code,
                    producer_id,
                    producer_epoch,
                })
                .into()
            })
            .boxed(),
        ApiKey::SaslHandshake => (any::<i16>(), vec(s(), 0..4))
            .prop_map(|(error_code, mechanisms)| {
                kacrab_wire::message!(SaslHandshakeResponse {
                    error_code,
                    mechanisms,
                })
                .into()
            })
            .boxed(),
        ApiKey::SaslAuthenticate => (any::<i16>(), os(), vec(any::<u8>(), 0..40), any::<i64>())
            .prop_map(move |(error_code, error_message, b, lifetime)| {
                kacrab_wire::message!(SaslAuthenticateResponse {
                    error_code,
                    error_message,
                    auth_bytes: Bytes::from(b),
                    session_lifetime_ms: if v >= 1 { lifetime } else { 0 },
                })
                .into()
            })
            .boxed(),
        ApiKey::GetTelemetrySubscriptions => (
            any::<(i32, i16, [u8; 16], i32)>(),
            vec(any::<i8>(), 0..4),
            any::<(i32, i32, bool)>(),
            vec(s(), 0..4),
        )
            .prop_map(
                |(
                    (throttle_time_ms, error_code, client_instance_id, subscription_id),
                    accepted_compression_types,
                    (push_interval_ms, telemetry_max_bytes, delta_temporality),
                    requested_metrics,
                )| {
                    kacrab_wire::message!(GetTelemetrySubscriptionsResponse {
                        throttle_time_ms,
                        error_code,
                        client_instance_id,
                        subscription_id,
                        accepted_compression_types,
                        push_interval_ms,
                        telemetry_max_bytes,
                        delta_temporality,
                        requested_metrics,
                    })
                    .into()
                },
            )
            .boxed(),
        ApiKey::PushTelemetry => any::<(i32, i16)>()
            .prop_map(|(throttle_time_ms, error_code)| {
                kacrab_wire::message!(PushTelemetryResponse {
                    throttle_time_ms,
                    error_code,
                })
                .into()
            })
            .boxed(),
    }
}

fn api_response() -> impl Strategy<Value = (ApiKey, i16, Response)> {
    api()
        .prop_flat_map(|api| (Just(api), versions(api)))
        .prop_flat_map(|(api, v)| response(api, v).prop_map(move |r| (api, v, r)))
}

/// A request of `api` the client can send at every version, expecting an answer.
fn any_request_of(api: ApiKey) -> Request {
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

/// The client sends `request` at `v`; the server reads it, answers `response`; the
/// client reads the answer. Returns what the client read.
fn exchange(request: Request, v: i16, response: &Response) -> Result<Response, TestCaseError> {
    let mut conn = Connection::new(Some("client".into()));
    let sent = conn.encode(request, v, 42).unwrap();
    let read: ServerRequest = decode_request(payload(&sent.frame.to_bytes()))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let frame = encode_response(
        read.header.correlation_id,
        read.header.api,
        read.header.version,
        response,
    )
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut frames = FrameDecoder::new();
    frames.extend(&frame);
    let got = conn
        .decode(frames.decode().unwrap().expect("a whole frame"))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(frames.buffered(), 0);
    prop_assert_eq!(got.tag, 42);
    prop_assert_eq!(conn.in_flight_count(), 0);
    Ok(got.response)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Server encode, client decode: the same response.
    #[test]
    fn every_response_decodes_back_on_the_client((api, v, resp) in api_response()) {
        let got = exchange(any_request_of(api), v, &resp)?;
        prop_assert_eq!(got, resp);
    }
}

// ------------------------------------------------------------------ fixed cases

#[test]
fn an_api_versions_request_too_new_is_answered_unsupported_in_v0() {
    // ApiVersions v9, header v2, with a body from the future.
    let mut frame = BytesMut::new();
    frame.put_i16(ApiKey::ApiVersions.id());
    frame.put_i16(9);
    frame.put_i32(77);
    frame.put_i16(3);
    frame.put_slice(b"new");
    frame.put_u8(0);
    frame.put_slice(&[1, 2, 3, 4, 5]);
    let read = decode_request(frame.freeze()).unwrap();
    assert_eq!(read.header.correlation_id, 77);
    assert_eq!(read.header.client_id.as_deref(), Some("new"));
    assert_eq!(read.body, RequestBody::UnsupportedApiVersions);

    let answer = unsupported_api_versions(ApiKey::ApiVersions.supported());
    let out = encode_response(77, ApiKey::ApiVersions, 9, &answer.clone().into()).unwrap();
    // Header v0 (correlation id only), v0 body: error, one api key, no throttle field.
    let expected: &[u8] = &[
        0, 0, 0, 16, 0, 0, 0, 77, 0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 3,
    ];
    assert_eq!(&out[..], expected);
}

#[test]
fn an_old_broker_s_unsupported_answer_makes_the_client_retry_lower() {
    // The client sends v3 to a broker that only reads v0..=2.
    let mut conn = Connection::new(None);
    let sent = conn.encode(ApiVersionsRequest::default(), 3, 1).unwrap();
    let read = decode_request(payload(&sent.frame.to_bytes())).unwrap();
    let answer = unsupported_api_versions(VersionRange::new(0, 2));
    let frame = encode_response(
        read.header.correlation_id,
        ApiKey::ApiVersions,
        3,
        &answer.into(),
    )
    .unwrap();
    let got = conn.decode(payload(&frame)).unwrap();
    assert_eq!(got.version, 0, "read as v0");
    let Response::ApiVersions(r) = got.response else {
        panic!("not ApiVersions")
    };
    assert_eq!(r.retry_version(3), Some(2));
}

#[test]
fn unknown_api_and_unsupported_version_are_typed_errors() {
    let header = |api: i16, v: i16| {
        let mut f = BytesMut::new();
        f.put_i16(api);
        f.put_i16(v);
        f.put_i32(5);
        f.put_i16(-1);
        f.put_u8(0);
        f.freeze()
    };
    assert!(matches!(
        decode_request(header(1, 12)),
        Err(WireError::UnknownApiKey {
            api_key: 1,
            correlation_id: 5
        })
    ));
    assert!(matches!(
        decode_request(header(0, 13)),
        Err(WireError::UnsupportedVersion {
            api: ApiKey::Produce,
            version: 13,
            ..
        })
    ));
    assert!(matches!(
        decode_request(header(24, 4)),
        Err(WireError::UnsupportedVersion {
            api: ApiKey::AddPartitionsToTxn,
            version: 4,
            ..
        })
    ));
    assert!(matches!(
        decode_request(Bytes::from_static(&[0, 0, 0])),
        Err(WireError::RequestHeader { source: None })
    ));
    // A client id that is not UTF-8.
    let bad = Bytes::from_static(&[0, 3, 0, 1, 0, 0, 0, 0, 0, 1, 0xff]);
    assert!(matches!(
        decode_request(bad),
        Err(WireError::RequestHeader { source: Some(_) })
    ));
}

#[test]
fn a_hostile_array_length_fails_without_allocating() {
    // Produce v3: null transactional id, acks, timeout, then 2^31-1 topics claimed.
    let mut f = BytesMut::new();
    f.put_i16(0);
    f.put_i16(3);
    f.put_i32(1);
    f.put_i16(-1);
    f.put_i16(-1);
    f.put_i16(-1);
    f.put_i32(30_000);
    f.put_i32(i32::MAX);
    assert!(matches!(
        decode_request(f.freeze()),
        Err(WireError::Truncated {
            api: ApiKey::Produce,
            version: 3
        })
    ));
}

#[test]
fn trailing_bytes_after_a_request_are_refused() {
    let mut conn = Connection::new(None);
    let sent = conn.encode(EndTxnRequest::default(), 2, 0).unwrap();
    let mut frame = BytesMut::from(&payload(&sent.frame.to_bytes())[..]);
    frame.put_u8(0);
    assert!(matches!(
        decode_request(frame.freeze()),
        Err(WireError::Decode {
            api: ApiKey::EndTxn,
            version: 2,
            source: DecodeError::TrailingBytes(1)
        })
    ));
}

#[test]
fn a_response_of_another_api_is_refused() {
    let r: Response = AddOffsetsToTxnResponse::default().into();
    assert!(matches!(
        encode_response(1, ApiKey::EndTxn, 1, &r),
        Err(WireError::Encode { .. })
    ));
}
