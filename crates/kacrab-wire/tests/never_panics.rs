//! Arbitrary bytes into every decoder: errors, never panics (the fuzz target's property,
//! run here on every `cargo test`).

use bytes::Bytes;
use kacrab_wire::messages::*;
use kacrab_wire::{ApiKey, Connection, FrameDecoder, Request, Response};
use proptest::collection::vec;
use proptest::prelude::*;

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

fn decode_everywhere(data: &[u8]) {
    let body = Bytes::copy_from_slice(data);
    for api in ApiKey::ALL {
        for version in api.supported().iter() {
            let _ = Response::decode(api, version, body.clone());
            let mut conn = Connection::new(None);
            let sent = conn.encode(request_for(api), version, 0).unwrap();
            let mut frame = sent.correlation_id.to_be_bytes().to_vec();
            frame.extend_from_slice(data);
            let _ = conn.decode(Bytes::from(frame));
        }
    }
}

/// A few valid bodies to mutate, so mutations reach past the first fields.
fn seeds() -> Vec<Vec<u8>> {
    let produce_v9: Vec<u8> = [
        &[0x02, 0x02, b't', 0x02][..],
        &3i32.to_be_bytes(),
        &[0, 0],
        &42i64.to_be_bytes(),
        &(-1i64).to_be_bytes(),
        &7i64.to_be_bytes(),
        &[0x02],
        &1i32.to_be_bytes(),
        &[0x00, 0x00, 0x04, b'b', b'a', b'd', 0x00, 0x00],
        &10i32.to_be_bytes(),
        &[0x00],
    ]
    .concat();
    let api_versions_v3: Vec<u8> = [
        &[0, 0, 0x02, 0, 18, 0, 0, 0, 3, 0][..],
        &0i32.to_be_bytes(),
        &[0x02, 0x01, 0x08],
        &5i64.to_be_bytes(),
        &[0x02, 0x08, 0x02, 0x02, b'x', 0, 2, 0, 1, 0],
    ]
    .concat();
    vec![produce_v9, api_versions_v3]
}

#[test]
fn seeds_are_valid() {
    let seeds = seeds();
    Response::decode(ApiKey::Produce, 9, Bytes::from(seeds[0].clone())).unwrap();
    let Response::ApiVersions(r) =
        Response::decode(ApiKey::ApiVersions, 3, Bytes::from(seeds[1].clone())).unwrap()
    else {
        panic!()
    };
    assert_eq!(r.finalized_features_epoch, 5);
    assert_eq!(r.finalized_features[0].max_version_level, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bodies(data in vec(any::<u8>(), 0..64)) {
        decode_everywhere(&data);
    }

    #[test]
    fn mutated_bodies(
        seed in prop::sample::select(seeds()),
        edits in vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..4),
    ) {
        let mut data = seed;
        for (at, byte, kind) in edits {
            let i = at.index(data.len() + 1);
            match kind {
                0 if i < data.len() => data[i] = byte,
                1 => data.insert(i, byte),
                _ if i < data.len() => {
                    data.remove(i);
                }
                _ => {}
            }
        }
        decode_everywhere(&data);
    }

    #[test]
    fn random_streams(data in vec(any::<u8>(), 0..256), chunk in 1..16usize) {
        let mut frames = FrameDecoder::with_max_frame_size(1 << 16);
        let mut conn = Connection::new(None);
        conn.encode(kacrab_wire::message!(ProduceRequest { acks: -1, ..Default::default() }), 9, 0).unwrap();
        'feed: for piece in data.chunks(chunk) {
            frames.extend(piece);
            loop {
                match frames.decode() {
                    Ok(Some(frame)) => {
                        let _ = conn.decode(frame);
                    }
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
    }
}
