//! Connection: correlation, hand-built response frames, truncation and malformed input.

use bytes::Bytes;
use kacrab_wire::messages::*;
use kacrab_wire::{ApiKey, Connection, DecodeError, FrameDecoder, InFlight, Response, WireError};

fn be32(v: i32) -> [u8; 4] {
    v.to_be_bytes()
}

fn be64(v: i64) -> [u8; 8] {
    v.to_be_bytes()
}

/// A response frame's payload: correlation id, then the rest.
fn payload(correlation_id: i32, parts: &[&[u8]]) -> Bytes {
    let mut v = be32(correlation_id).to_vec();
    for p in parts {
        v.extend_from_slice(p);
    }
    Bytes::from(v)
}

/// ApiVersions v0 body: error 0; Produce 3..=9, ApiVersions 0..=3, Metadata 0..=12.
fn api_versions_v0_body() -> Vec<u8> {
    [
        &[0u8, 0][..],
        &be32(3),
        &[0, 0, 0, 3, 0, 9],
        &[0, 18, 0, 0, 0, 3],
        &[0, 3, 0, 0, 0, 12],
    ]
    .concat()
}

#[test]
fn hand_built_api_versions_v0() {
    let mut conn = Connection::new(Some("c".into()));
    let sent = conn.encode(ApiVersionsRequest::default(), 0, 42).unwrap();
    let got = conn
        .decode(payload(sent.correlation_id, &[&api_versions_v0_body()]))
        .unwrap();
    assert_eq!((got.tag, got.version), (42, 0));
    let expected = kacrab_wire::message!(ApiVersionsResponse {
        error_code: 0,
        api_keys: vec![
            kacrab_wire::message!(ApiVersion {
                api_key: 0,
                min_version: 3,
                max_version: 9,
            }),
            kacrab_wire::message!(ApiVersion {
                api_key: 18,
                min_version: 0,
                max_version: 3,
            }),
            kacrab_wire::message!(ApiVersion {
                api_key: 3,
                min_version: 0,
                max_version: 12,
            }),
        ],
        throttle_time_ms: 0,
        supported_features: vec![],
        finalized_features_epoch: -1,
        finalized_features: vec![],
    });
    assert_eq!(got.response, Response::ApiVersions(expected));
}

/// Produce v9 body (flexible): one topic "t", partition 3, error 0, offset 42, append time
/// -1, log start 7, one record error (index 1, null message), error message "bad";
/// throttle 10.
fn produce_v9_body() -> Vec<u8> {
    [
        &[0x02, 0x02, b't', 0x02][..],
        &be32(3),
        &[0, 0],
        &be64(42),
        &be64(-1),
        &be64(7),
        &[0x02],
        &be32(1),
        &[0x00, 0x00],
        &[0x04, b'b', b'a', b'd'],
        &[0x00], // partition tagged fields
        &[0x00], // topic tagged fields
        &be32(10),
        &[0x00], // response tagged fields
    ]
    .concat()
}

fn produce_v9_expected() -> ProduceResponse {
    kacrab_wire::message!(ProduceResponse {
        topics: vec![kacrab_wire::message!(ProduceTopicResponse {
            name: "t".into(),
            partitions: vec![kacrab_wire::message!(ProducePartitionResponse {
                index: 3,
                error_code: 0,
                base_offset: 42,
                log_append_time_ms: -1,
                log_start_offset: 7,
                record_errors: vec![kacrab_wire::message!(RecordError {
                    batch_index: 1,
                    message: None,
                })],
                error_message: Some("bad".into()),
                current_leader: None,
            })],
        })],
        throttle_time_ms: 10,
        node_endpoints: vec![],
    })
}

fn produce_request() -> ProduceRequest {
    kacrab_wire::message!(ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        ..Default::default()
    })
}

#[test]
fn hand_built_produce_v9() {
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 9, 1).unwrap();
    // header v1: correlation id + empty tagged fields
    let got = conn
        .decode(payload(sent.correlation_id, &[&[0x00], &produce_v9_body()]))
        .unwrap();
    assert_eq!(got.tag, 1);
    assert_eq!(got.response, Response::Produce(produce_v9_expected()));
}

#[test]
fn hand_built_produce_v10_with_kip_951_leader_and_endpoints() {
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 10, 1).unwrap();
    let body = [
        &[0x02, 0x02, b't', 0x02][..],
        &be32(0),
        &[0, 6], // NOT_LEADER_OR_FOLLOWER
        &be64(-1),
        &be64(-1),
        &be64(-1),
        &[0x01], // no record errors
        &[0x00], // null error message
        &[0x01, 0x00, 0x09],
        &be32(2),
        &be32(5),
        &[0x00], // current_leader: tag 0, 9 bytes
        &[0x00], // topic tagged fields
        &be32(0),
        &[0x01, 0x00, 0x0d, 0x02],
        &be32(2),
        &[0x02, b'h'],
        &be32(9092),
        &[0x00, 0x00], // node_endpoints: tag 0, 13 bytes
    ]
    .concat();
    let got = conn
        .decode(payload(sent.correlation_id, &[&[0x00], &body]))
        .unwrap();
    let Response::Produce(p) = got.response else {
        panic!()
    };
    let part = &p.topics[0].partitions[0];
    assert_eq!(part.error_code, 6);
    assert_eq!(part.record_errors, vec![]);
    assert_eq!(part.error_message, None);
    assert_eq!(
        part.current_leader,
        Some(kacrab_wire::message!(LeaderIdAndEpoch {
            leader_id: 2,
            leader_epoch: 5
        }))
    );
    assert_eq!(
        p.node_endpoints,
        vec![kacrab_wire::message!(NodeEndpoint {
            node_id: 2,
            host: "h".into(),
            port: 9092,
            rack: None
        })]
    );
}

#[test]
fn every_truncation_of_a_response_is_a_typed_error() {
    let full = [&[0x00][..], &produce_v9_body()].concat();
    for cut in 0..full.len() {
        let mut conn = Connection::new(None);
        let sent = conn.encode(produce_request(), 9, 1).unwrap();
        let err = conn
            .decode(payload(sent.correlation_id, &[&full[..cut]]))
            .unwrap_err();
        assert!(
            matches!(
                err,
                WireError::Truncated {
                    api: ApiKey::Produce,
                    version: 9
                }
            ),
            "cut {cut}: {err:?}"
        );
        assert_eq!(conn.in_flight_count(), 0, "the request is forgotten anyway");
    }
    let body = api_versions_v0_body();
    for cut in 0..body.len() {
        let mut conn = Connection::new(None);
        let sent = conn.encode(ApiVersionsRequest::default(), 0, 1).unwrap();
        let err = conn
            .decode(payload(sent.correlation_id, &[&body[..cut]]))
            .unwrap_err();
        assert!(
            matches!(
                err,
                WireError::Truncated {
                    api: ApiKey::ApiVersions,
                    ..
                }
            ),
            "cut {cut}: {err:?}"
        );
    }
}

#[test]
fn trailing_bytes_are_malformed() {
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 9, 1).unwrap();
    let err = conn
        .decode(payload(
            sent.correlation_id,
            &[&[0x00], &produce_v9_body(), &[0xaa]],
        ))
        .unwrap_err();
    assert!(matches!(
        err,
        WireError::Decode {
            api: ApiKey::Produce,
            version: 9,
            source: DecodeError::TrailingBytes(1)
        }
    ));
}

#[test]
fn frames_too_short_for_a_header() {
    let mut conn = Connection::new(None);
    conn.encode(produce_request(), 9, 1).unwrap();
    for len in 0..4 {
        let err = conn.decode(Bytes::from(vec![0; len])).unwrap_err();
        assert!(matches!(err, WireError::ShortFrame { len: l } if l == len));
    }
    assert_eq!(conn.in_flight_count(), 1);
}

#[test]
fn unknown_correlation_id() {
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 9, 1).unwrap();
    let err = conn
        .decode(payload(
            sent.correlation_id + 1,
            &[&[0x00], &produce_v9_body()],
        ))
        .unwrap_err();
    assert!(matches!(err, WireError::UnknownCorrelationId(1)));
    assert_eq!(conn.in_flight_count(), 1);
    // answered once, a second answer with the same id is unknown
    conn.decode(payload(sent.correlation_id, &[&[0x00], &produce_v9_body()]))
        .unwrap();
    let err = conn
        .decode(payload(sent.correlation_id, &[&[0x00], &produce_v9_body()]))
        .unwrap_err();
    assert!(matches!(err, WireError::UnknownCorrelationId(0)));
}

#[test]
fn responses_are_matched_by_correlation_id_not_order() {
    let mut conn = Connection::new(None);
    let a = conn.encode(ApiVersionsRequest::default(), 0, 100).unwrap();
    let b = conn.encode(produce_request(), 9, 200).unwrap();
    let c = conn.encode(ApiVersionsRequest::default(), 0, 300).unwrap();
    assert_eq!(
        conn.in_flight().copied().collect::<Vec<_>>(),
        vec![
            InFlight {
                correlation_id: 0,
                api: ApiKey::ApiVersions,
                version: 0,
                tag: 100
            },
            InFlight {
                correlation_id: 1,
                api: ApiKey::Produce,
                version: 9,
                tag: 200
            },
            InFlight {
                correlation_id: 2,
                api: ApiKey::ApiVersions,
                version: 0,
                tag: 300
            },
        ]
    );
    let got = conn
        .decode(payload(b.correlation_id, &[&[0x00], &produce_v9_body()]))
        .unwrap();
    assert_eq!(got.tag, 200);
    let got = conn
        .decode(payload(c.correlation_id, &[&api_versions_v0_body()]))
        .unwrap();
    assert_eq!(got.tag, 300);
    let left = conn.take_in_flight();
    assert_eq!(
        left.iter()
            .map(|f| (f.correlation_id, f.tag))
            .collect::<Vec<_>>(),
        vec![(a.correlation_id, 100)]
    );
    assert_eq!(conn.in_flight_count(), 0);
}

#[test]
fn response_header_tagged_fields_are_skipped() {
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 9, 1).unwrap();
    // header v1 with one unknown tag (7, 2 bytes)
    let got = conn
        .decode(payload(
            sent.correlation_id,
            &[&[0x01, 0x07, 0x02, 0xab, 0xcd], &produce_v9_body()],
        ))
        .unwrap();
    assert_eq!(got.response, Response::Produce(produce_v9_expected()));
}

#[test]
fn api_versions_unsupported_version_answer_is_read_as_v0() {
    let mut conn = Connection::new(None);
    let sent = conn
        .encode(
            kacrab_wire::message!(ApiVersionsRequest {
                client_software_name: "kacrab".into(),
                client_software_version: "1".into(),
            }),
            3,
            9,
        )
        .unwrap();
    // v0 body: UNSUPPORTED_VERSION, ApiVersions 0..=2 (header v0: no tagged fields)
    let got = conn
        .decode(payload(
            sent.correlation_id,
            &[&[0, 35], &be32(1), &[0, 18, 0, 0, 0, 2]],
        ))
        .unwrap();
    assert_eq!(got.version, 0);
    let Response::ApiVersions(r) = got.response else {
        panic!()
    };
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    assert_eq!(r.retry_version(3), Some(2));
    assert_eq!(
        r.retry_version(2),
        Some(1),
        "always below the version that failed"
    );
    assert_eq!(r.retry_version(0), None);
    let none_advertised = kacrab_wire::message!(ApiVersionsResponse {
        api_keys: vec![],
        ..r.clone()
    });
    assert_eq!(none_advertised.retry_version(3), Some(0));
    let ok = kacrab_wire::message!(ApiVersionsResponse { error_code: 0, ..r });
    assert_eq!(ok.retry_version(3), None);
}

#[test]
fn find_coordinator_v4_needs_exactly_one_coordinator() {
    for count in [0u8, 2] {
        let mut conn = Connection::new(None);
        let sent = conn
            .encode(
                kacrab_wire::message!(FindCoordinatorRequest {
                    key: "tx".into(),
                    key_type: CoordinatorType::Transaction,
                }),
                4,
                0,
            )
            .unwrap();
        let entry: &[u8] = &[
            &[0x03, b't', b'x'][..],
            &be32(1),
            &[0x02, b'h'],
            &be32(9092),
            &[0, 0],
            &[0x00],
            &[0x00],
        ]
        .concat();
        let mut body = vec![0x00];
        body.extend_from_slice(&be32(0));
        body.push(count + 1);
        for _ in 0..count {
            body.extend_from_slice(entry);
        }
        body.push(0x00);
        let err = conn
            .decode(payload(sent.correlation_id, &[&body]))
            .unwrap_err();
        assert!(matches!(
            err,
            WireError::Decode {
                api: ApiKey::FindCoordinator,
                source: DecodeError::Invalid(_),
                ..
            }
        ));
    }
}

#[test]
fn nulls_and_negative_lengths_where_not_allowed() {
    // Produce v8 (classic): topic name null (-1)
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 8, 0).unwrap();
    let err = conn
        .decode(payload(sent.correlation_id, &[&be32(1), &[0xff, 0xff]]))
        .unwrap_err();
    assert!(matches!(
        err,
        WireError::Decode {
            source: DecodeError::UnexpectedNull,
            ..
        }
    ));
    // Produce v8: topics array of length -2
    let sent = conn.encode(produce_request(), 8, 0).unwrap();
    let err = conn
        .decode(payload(sent.correlation_id, &[&be32(-2)]))
        .unwrap_err();
    assert!(matches!(
        err,
        WireError::Decode {
            source: DecodeError::NegativeLength(-2),
            ..
        }
    ));
}

#[test]
fn the_five_bytes_that_abort_kafka_protocol_are_a_plain_error_here() {
    // A compact array claiming u32::MAX - 1 entries: kafka-protocol's ProduceResponse
    // decoder reserves ~400 GB for it and aborts.
    let mut conn = Connection::new(None);
    let sent = conn.encode(produce_request(), 9, 0).unwrap();
    let err = conn
        .decode(payload(
            sent.correlation_id,
            &[&[0x00, 0xff, 0xff, 0xff, 0xff, 0x0f]],
        ))
        .unwrap_err();
    assert!(matches!(
        err,
        WireError::Truncated {
            api: ApiKey::Produce,
            version: 9
        }
    ));
}

#[test]
fn frames_from_a_stream_into_a_connection() {
    let mut conn = Connection::new(None);
    let a = conn.encode(produce_request(), 9, 1).unwrap();
    let b = conn.encode(ApiVersionsRequest::default(), 0, 2).unwrap();
    let mut stream = Vec::new();
    for p in [
        payload(a.correlation_id, &[&[0x00], &produce_v9_body()]),
        payload(b.correlation_id, &[&api_versions_v0_body()]),
    ] {
        stream.extend_from_slice(&(p.len() as i32).to_be_bytes());
        stream.extend_from_slice(&p);
    }
    let mut frames = FrameDecoder::new();
    frames.extend(&stream);
    let mut tags = Vec::new();
    while let Some(frame) = frames.decode().unwrap() {
        tags.push(conn.decode(frame).unwrap().tag);
    }
    assert_eq!(tags, vec![1, 2]);
}
