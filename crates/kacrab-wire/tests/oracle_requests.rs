//! Our request frames against kafka-protocol's (broker-side) request decoders: every
//! request, at every version we support, must decode back to what was asked for, under a
//! correct header and length prefix.

use bytes::{Buf, Bytes};
use kacrab_wire::messages::*;
use kacrab_wire::{ApiKey, Connection, Request, WireError};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, HeaderVersion};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn s() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._ü€-]{0,10}"
}

fn os() -> impl Strategy<Value = Option<String>> {
    option::of(s())
}

fn str_of(s: &kafka_protocol::protocol::StrBytes) -> String {
    s.as_str().to_owned()
}

/// Encodes through a fresh `Connection`, checks prefix and header, returns the body.
fn encode_and_open(
    request: Request,
    version: i16,
    header_version: i16,
) -> Result<Bytes, TestCaseError> {
    let api = request.api_key();
    let mut conn = Connection::new(Some("client-1".into()));
    conn.encode(MetadataRequest::all_topics(), 1, 0).unwrap(); // correlation id 0 taken
    let sent = conn
        .encode(request, version, 1)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(sent.correlation_id, 1);
    let mut frame = sent.frame.to_bytes();
    let len = frame.get_i32();
    prop_assert_eq!(len as usize, frame.len());
    prop_assert_eq!(api.request_header_version(version), header_version);
    let header = kp::RequestHeader::decode(&mut frame, header_version).unwrap();
    prop_assert_eq!(header.request_api_key, api.id());
    prop_assert_eq!(header.request_api_version, version);
    prop_assert_eq!(header.correlation_id, 1);
    prop_assert_eq!(header.client_id.as_deref(), Some("client-1"));
    Ok(frame)
}

fn decode_all<T: Decodable>(mut body: Bytes, version: i16) -> T {
    let value = T::decode(&mut body, version).unwrap();
    assert_eq!(body.len(), 0, "trailing bytes");
    value
}

fn versions(api: ApiKey) -> impl Strategy<Value = i16> {
    api.supported().min..=api.supported().max
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn api_versions_request(v in versions(ApiKey::ApiVersions), name in s(), ver in s()) {
        let req = kacrab_wire::message!(ApiVersionsRequest { client_software_name: name.clone(), client_software_version: ver.clone() });
        let body = encode_and_open(req.into(), v, kp::ApiVersionsRequest::header_version(v))?;
        let got: kp::ApiVersionsRequest = decode_all(body, v);
        if v >= 3 {
            prop_assert_eq!(str_of(&got.client_software_name), name);
            prop_assert_eq!(str_of(&got.client_software_version), ver);
        }
    }

    #[test]
    fn metadata_request(v in versions(ApiKey::Metadata), topics in option::of(vec(s(), 0..4)), allow in any::<bool>()) {
        let allow = allow || v < 4;
        let req = kacrab_wire::message!(MetadataRequest { topics: topics.clone(), allow_auto_topic_creation: allow });
        let body = encode_and_open(req.into(), v, kp::MetadataRequest::header_version(v))?;
        let got: kp::MetadataRequest = decode_all(body, v);
        let names = got.topics.map(|ts| ts.into_iter().map(|t| str_of(&t.name.unwrap().0)).collect::<Vec<_>>());
        prop_assert_eq!(names, topics);
        prop_assert_eq!(got.allow_auto_topic_creation, allow);
    }

    #[test]
    fn init_producer_id_request(
        v in versions(ApiKey::InitProducerId), txn in os(), timeout in any::<i32>(), pid in any::<i64>(), epoch in any::<i16>(),
    ) {
        let (pid, epoch) = if v >= 3 { (pid, epoch) } else { (-1, -1) };
        let req = kacrab_wire::message!(InitProducerIdRequest { transactional_id: txn.clone(), transaction_timeout_ms: timeout, producer_id: pid, producer_epoch: epoch });
        let body = encode_and_open(req.into(), v, kp::InitProducerIdRequest::header_version(v))?;
        let got: kp::InitProducerIdRequest = decode_all(body, v);
        prop_assert_eq!(got.transactional_id.map(|t| str_of(&t.0)), txn);
        prop_assert_eq!(got.transaction_timeout_ms, timeout);
        prop_assert_eq!((got.producer_id.0, got.producer_epoch), (pid, epoch));
    }

    #[test]
    fn produce_request(
        v in versions(ApiKey::Produce), txn in os(), acks in prop_oneof![Just(-1i16), Just(1)], timeout in any::<i32>(),
        topics in vec((s(), vec((any::<i32>(), vec(any::<u8>(), 0..64)), 0..3)), 0..3),
    ) {
        let topics: Vec<ProduceTopic> = topics
            .into_iter()
            .map(|(name, ps)| kacrab_wire::message!(ProduceTopic {
                name,
                partitions: ps.into_iter().map(|(index, r)| kacrab_wire::message!(ProducePartition { index, records: Bytes::from(r) })).collect(),
            }))
            .collect();
        let req = kacrab_wire::message!(ProduceRequest { transactional_id: txn.clone(), acks, timeout_ms: timeout, topics: topics.clone() });
        let body = encode_and_open(req.into(), v, kp::ProduceRequest::header_version(v))?;
        let got: kp::ProduceRequest = decode_all(body, v);
        prop_assert_eq!(got.transactional_id.map(|t| str_of(&t.0)), txn);
        prop_assert_eq!((got.acks, got.timeout_ms), (acks, timeout));
        let back: Vec<ProduceTopic> = got
            .topic_data
            .into_iter()
            .map(|t| kacrab_wire::message!(ProduceTopic {
                name: str_of(&t.name.0),
                partitions: t.partition_data.into_iter().map(|p| kacrab_wire::message!(ProducePartition { index: p.index, records: p.records.unwrap() })).collect(),
            }))
            .collect();
        prop_assert_eq!(back, topics);
    }

    #[test]
    fn find_coordinator_request(v in versions(ApiKey::FindCoordinator), key in s(), txn in any::<bool>()) {
        let key_type = if txn && v >= 1 { CoordinatorType::Transaction } else { CoordinatorType::Group };
        let req = kacrab_wire::message!(FindCoordinatorRequest { key: key.clone(), key_type });
        let body = encode_and_open(req.into(), v, kp::FindCoordinatorRequest::header_version(v))?;
        let got: kp::FindCoordinatorRequest = decode_all(body, v);
        if v >= 4 {
            prop_assert_eq!(got.coordinator_keys.iter().map(str_of).collect::<Vec<_>>(), vec![key]);
            prop_assert_eq!(str_of(&got.key), "");
        } else {
            prop_assert_eq!(str_of(&got.key), key);
            prop_assert!(got.coordinator_keys.is_empty());
        }
        prop_assert_eq!(got.key_type, key_type.id());
    }

    #[test]
    fn add_partitions_to_txn_request(
        v in versions(ApiKey::AddPartitionsToTxn), txn in s(), pid in any::<i64>(), epoch in any::<i16>(),
        topics in vec((s(), vec(any::<i32>(), 0..4)), 0..3),
    ) {
        let topics: Vec<TopicPartitions> = topics.into_iter().map(|(name, partitions)| kacrab_wire::message!(TopicPartitions { name, partitions })).collect();
        let req = kacrab_wire::message!(AddPartitionsToTxnRequest { transactional_id: txn.clone(), producer_id: pid, producer_epoch: epoch, topics: topics.clone() });
        let body = encode_and_open(req.into(), v, kp::AddPartitionsToTxnRequest::header_version(v))?;
        let got: kp::AddPartitionsToTxnRequest = decode_all(body, v);
        prop_assert_eq!(str_of(&got.v3_and_below_transactional_id.0), txn);
        prop_assert_eq!((got.v3_and_below_producer_id.0, got.v3_and_below_producer_epoch), (pid, epoch));
        let back: Vec<TopicPartitions> = got
            .v3_and_below_topics
            .into_iter()
            .map(|t| kacrab_wire::message!(TopicPartitions { name: str_of(&t.name.0), partitions: t.partitions }))
            .collect();
        prop_assert_eq!(back, topics);
    }

    #[test]
    fn add_offsets_to_txn_request(v in versions(ApiKey::AddOffsetsToTxn), txn in s(), pid in any::<i64>(), epoch in any::<i16>(), group in s()) {
        let req = kacrab_wire::message!(AddOffsetsToTxnRequest { transactional_id: txn.clone(), producer_id: pid, producer_epoch: epoch, group_id: group.clone() });
        let body = encode_and_open(req.into(), v, kp::AddOffsetsToTxnRequest::header_version(v))?;
        let got: kp::AddOffsetsToTxnRequest = decode_all(body, v);
        prop_assert_eq!(str_of(&got.transactional_id.0), txn);
        prop_assert_eq!((got.producer_id.0, got.producer_epoch), (pid, epoch));
        prop_assert_eq!(str_of(&got.group_id.0), group);
    }

    #[test]
    fn end_txn_request(v in versions(ApiKey::EndTxn), txn in s(), pid in any::<i64>(), epoch in any::<i16>(), committed in any::<bool>()) {
        let req = kacrab_wire::message!(EndTxnRequest { transactional_id: txn.clone(), producer_id: pid, producer_epoch: epoch, committed });
        let body = encode_and_open(req.into(), v, kp::EndTxnRequest::header_version(v))?;
        let got: kp::EndTxnRequest = decode_all(body, v);
        prop_assert_eq!(str_of(&got.transactional_id.0), txn);
        prop_assert_eq!((got.producer_id.0, got.producer_epoch, got.committed), (pid, epoch, committed));
    }

    #[test]
    fn txn_offset_commit_request(
        v in versions(ApiKey::TxnOffsetCommit), txn in s(), group in s(), pid in any::<i64>(), epoch in any::<i16>(),
        generation in any::<i32>(), member in s(), instance in os(),
        topics in vec((s(), vec((any::<i32>(), any::<i64>(), any::<i32>(), os()), 0..3)), 0..3),
    ) {
        let mut req = kacrab_wire::message!(TxnOffsetCommitRequest {
            transactional_id: txn.clone(),
            group_id: group.clone(),
            producer_id: pid,
            producer_epoch: epoch,
            topics: topics
                .into_iter()
                .map(|(name, ps)| kacrab_wire::message!(TxnOffsetCommitTopic {
                    name,
                    partitions: ps
                        .into_iter()
                        .map(|(partition_index, committed_offset, committed_leader_epoch, committed_metadata)| kacrab_wire::message!(TxnOffsetCommitPartition {
                            partition_index,
                            committed_offset,
                            committed_leader_epoch,
                            committed_metadata,
                        }))
                        .collect(),
                }))
                .collect(),
            ..Default::default()
        });
        if v >= 3 {
            req.generation_id = generation;
            req.member_id = member;
            req.group_instance_id = instance;
        }
        let body = encode_and_open(req.clone().into(), v, kp::TxnOffsetCommitRequest::header_version(v))?;
        let got: kp::TxnOffsetCommitRequest = decode_all(body, v);
        let back = kacrab_wire::message!(TxnOffsetCommitRequest {
            transactional_id: str_of(&got.transactional_id.0),
            group_id: str_of(&got.group_id.0),
            producer_id: got.producer_id.0,
            producer_epoch: got.producer_epoch,
            generation_id: got.generation_id,
            member_id: str_of(&got.member_id),
            group_instance_id: got.group_instance_id.as_ref().map(str_of),
            topics: got
                .topics
                .into_iter()
                .map(|t| kacrab_wire::message!(TxnOffsetCommitTopic {
                    name: str_of(&t.name.0),
                    partitions: t
                        .partitions
                        .into_iter()
                        .map(|p| kacrab_wire::message!(TxnOffsetCommitPartition {
                            partition_index: p.partition_index,
                            committed_offset: p.committed_offset,
                            committed_leader_epoch: p.committed_leader_epoch,
                            committed_metadata: p.committed_metadata.as_ref().map(str_of),
                        }))
                        .collect(),
                }))
                .collect(),
        });
        // The leader epoch is ignorable before v2: dropped, and read back as -1.
        if v < 2 {
            for p in req.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                p.committed_leader_epoch = -1;
            }
        }
        prop_assert_eq!(back, req);
    }
}

#[test]
fn produce_acks_zero_expects_no_response_and_is_not_tracked() {
    let mut conn = Connection::new(None);
    let req = kacrab_wire::message!(ProduceRequest {
        acks: 0,
        timeout_ms: 1000,
        ..Default::default()
    });
    let sent = conn.encode(req, 9, 5).unwrap();
    assert!(!sent.expects_response);
    assert_eq!(conn.in_flight_count(), 0);
    // its correlation id is used up all the same
    let next = conn.encode(MetadataRequest::all_topics(), 9, 6).unwrap();
    assert_eq!((sent.correlation_id, next.correlation_id), (0, 1));
    assert!(next.expects_response);
}

#[test]
fn record_batches_are_parts_of_the_frame_never_copied() {
    let records = Bytes::from(vec![7u8; 10_000]);
    let req = kacrab_wire::message!(ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topics: vec![kacrab_wire::message!(ProduceTopic {
            name: "t".into(),
            partitions: vec![kacrab_wire::message!(ProducePartition {
                index: 0,
                records: records.clone(),
            })],
        })],
        ..Default::default()
    });
    let sent = Connection::new(None).encode(req, 11, 0).unwrap();
    // Three parts: the bytes before the batch, the batch itself (the same memory), and the
    // partition, topic and request tagged-field counts (v9+).
    let parts: Vec<&Bytes> = sent.frame.parts().collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[1].as_ptr(), records.as_ptr(), "the batch was copied");
    assert_eq!(parts[1].len(), records.len());
    assert_eq!(&parts[2][..], &[0, 0, 0]);
    let whole = sent.frame.to_bytes();
    assert_eq!(whole.len(), sent.frame.len());
    assert_eq!(
        i32::from_be_bytes(whole[..4].try_into().unwrap()) as usize,
        whole.len() - 4
    );
}

#[test]
fn versions_outside_our_ranges_are_refused() {
    let mut conn = Connection::new(None);
    for (req, v) in [
        (
            Request::from(kacrab_wire::message!(ProduceRequest {
                acks: -1,
                ..Default::default()
            })),
            13,
        ),
        (
            kacrab_wire::message!(ProduceRequest {
                acks: -1,
                ..Default::default()
            })
            .into(),
            2,
        ),
        (MetadataRequest::all_topics().into(), 0),
        (AddPartitionsToTxnRequest::default().into(), 4),
        (ApiVersionsRequest::default().into(), 4),
        (InitProducerIdRequest::default().into(), 6),
    ] {
        let api = req.api_key();
        match conn.encode(req, v, 0) {
            Err(WireError::UnsupportedVersion {
                api: a,
                version,
                supported,
            }) => {
                assert_eq!((a, version, supported), (api, v, api.supported()));
            }
            other => panic!("{api} v{v}: {other:?}"),
        }
    }
    assert_eq!(conn.in_flight_count(), 0);
}

#[test]
fn fields_a_version_lacks_fail_to_encode() {
    let mut conn = Connection::new(None);
    let bump = kacrab_wire::message!(InitProducerIdRequest {
        producer_id: 5,
        producer_epoch: 1,
        ..Default::default()
    });
    assert!(matches!(
        conn.encode(bump.clone(), 2, 0),
        Err(WireError::Encode {
            api: ApiKey::InitProducerId,
            version: 2,
            ..
        })
    ));
    conn.encode(bump, 3, 0).unwrap();
    let txn_find = kacrab_wire::message!(FindCoordinatorRequest {
        key: "tx".into(),
        key_type: CoordinatorType::Transaction,
    });
    assert!(matches!(
        conn.encode(txn_find, 0, 0),
        Err(WireError::Encode { .. })
    ));
    let group_meta = kacrab_wire::message!(TxnOffsetCommitRequest {
        generation_id: 3,
        ..Default::default()
    });
    let err = conn.encode(group_meta, 2, 0).unwrap_err();
    assert!(
        std::error::Error::source(&err).is_some(),
        "kafka-protocol's complaint is kept as the source"
    );
}
