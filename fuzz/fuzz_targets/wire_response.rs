//! Arbitrary bytes from a "broker" must never panic kacrab-wire: not the frame decoder,
//! not the correlation, not any response decoder at any supported version.

#![no_main]

use kacrab_wire::bytes::Bytes;
use kacrab_wire::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiVersionsRequest, EndTxnRequest, FindCoordinatorRequest,
    GetTelemetrySubscriptionsRequest, InitProducerIdRequest, MetadataRequest, ProduceRequest, PushTelemetryRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest, TxnOffsetCommitRequest,
};
use kacrab_wire::{ApiKey, Connection, FrameDecoder, Request, Response};
use libfuzzer_sys::fuzz_target;

/// A request of `api` that encodes at every supported version and expects an answer.
fn request_for(api: ApiKey) -> Request {
    match api {
        ApiKey::Produce => kacrab_wire::message!(ProduceRequest { acks: -1 }).into(),
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

fuzz_target!(|data: &[u8]| {
    // 1. As a socket stream: a connection with one request of every API in flight
    //    (one correlation id per API, versions picked by the first byte), fed in chunks whose size
    //    the second byte picks, each frame decoded until the stream turns bad.
    let (pick, chunk, stream) = match data {
        [a, b, rest @ ..] => (*a as usize, usize::from(*b % 32) + 1, rest),
        _ => (0, 1, data),
    };
    let mut conn = Connection::new(Some("fuzz".into()));
    for (i, api) in ApiKey::ALL.into_iter().enumerate() {
        let range = api.supported();
        let span = (range.max - range.min + 1) as usize;
        let version = range.min + ((pick + i) % span) as i16;
        conn.encode(request_for(api), version, i as u64).expect("default requests encode at every version");
    }
    let mut frames = FrameDecoder::with_max_frame_size(1 << 20);
    'stream: for piece in stream.chunks(chunk) {
        frames.extend(piece);
        loop {
            match frames.decode() {
                Ok(Some(frame)) => {
                    if conn.decode(frame).is_err() {
                        break 'stream;
                    }
                }
                Ok(None) => break,
                Err(_) => break 'stream,
            }
        }
    }

    // 2. As the body of every response, at every version we support, bare and behind a
    //    matching correlation id (header parsing included).
    let body = Bytes::copy_from_slice(data);
    for api in ApiKey::ALL {
        for version in api.supported().iter() {
            let _ = Response::decode(api, version, body.clone());
            let mut conn = Connection::new(None);
            let sent = conn.encode(request_for(api), version, 0).expect("default requests encode at every version");
            let mut frame = sent.correlation_id.to_be_bytes().to_vec();
            frame.extend_from_slice(data);
            let _ = conn.decode(Bytes::from(frame));
        }
    }
});
