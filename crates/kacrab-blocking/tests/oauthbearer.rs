//! The blocking producer authenticates with an OAUTHBEARER token provider installed in
//! its `SessionConfig` (`SessionConfigBuilder::sasl`), against a minimal
//! `SASL_PLAINTEXT` listener over `std::net` (krafka's FakeBroker speaks only PLAIN).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use kacrab_blocking::{
    OAuthBearerToken, OAuthBearerTokenProvider, Producer, ProducerRecord, Secret, SessionConfig,
};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Hands out `token-1`, `token-2`, ...
#[derive(Default)]
struct CountingProvider {
    calls: AtomicU32,
}

impl OAuthBearerTokenProvider for CountingProvider {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(OAuthBearerToken::new(
            Secret::from(format!("token-{n}")),
            i64::MAX,
            "alice",
        ))
    }
}

/// Each SaslAuthenticate's auth bytes, and how many Produce requests were answered.
#[derive(Default)]
struct Seen {
    auth: Vec<String>,
    produced: usize,
}

/// One connection: ApiVersions, SaslHandshake (OAUTHBEARER only), SaslAuthenticate
/// (any token), then Metadata (topic `t`, one partition led by node 1 at `port`),
/// InitProducerId and Produce; any request before authentication other than those
/// three ends the connection, as a `SASL_PLAINTEXT` listener's does.
fn serve(mut stream: TcpStream, port: u16, seen: &Mutex<Seen>) {
    let mut authenticated = false;
    loop {
        let mut len = [0u8; 4];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let mut frame = vec![0; usize::try_from(i32::from_be_bytes(len)).unwrap()];
        stream.read_exact(&mut frame).unwrap();
        let mut frame = Bytes::from(frame);
        let api = kp::ApiKey::try_from(i16::from_be_bytes([frame[0], frame[1]])).unwrap();
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let header =
            kp::RequestHeader::decode(&mut frame, api.request_header_version(version)).unwrap();
        let before_auth = matches!(
            api,
            kp::ApiKey::ApiVersions | kp::ApiKey::SaslHandshake | kp::ApiKey::SaslAuthenticate
        );
        if !authenticated && !before_auth {
            return;
        }
        let body = match api {
            kp::ApiKey::ApiVersions => {
                let key = |k: kp::ApiKey, min: i16, max: i16| {
                    kp::api_versions_response::ApiVersion::default()
                        .with_api_key(k as i16)
                        .with_min_version(min)
                        .with_max_version(max)
                };
                encode(
                    &kp::ApiVersionsResponse::default().with_api_keys(vec![
                        key(kp::ApiKey::Produce, 9, 9),
                        key(kp::ApiKey::Metadata, 12, 12),
                        key(kp::ApiKey::ApiVersions, 0, 3),
                        key(kp::ApiKey::InitProducerId, 4, 4),
                        key(kp::ApiKey::SaslHandshake, 1, 1),
                        key(kp::ApiKey::SaslAuthenticate, 0, 2),
                    ]),
                    version,
                )
            }
            kp::ApiKey::SaslHandshake => {
                let req = kp::SaslHandshakeRequest::decode(&mut frame, version).unwrap();
                let error = if req.mechanism.as_str() == "OAUTHBEARER" {
                    0
                } else {
                    33
                };
                encode(
                    &kp::SaslHandshakeResponse::default()
                        .with_error_code(error)
                        .with_mechanisms(vec![StrBytes::from_static_str("OAUTHBEARER")]),
                    version,
                )
            }
            kp::ApiKey::SaslAuthenticate => {
                let req = kp::SaslAuthenticateRequest::decode(&mut frame, version).unwrap();
                let auth = String::from_utf8(req.auth_bytes.to_vec()).unwrap();
                seen.lock().unwrap().auth.push(auth);
                authenticated = true;
                encode(&kp::SaslAuthenticateResponse::default(), version)
            }
            kp::ApiKey::Metadata => {
                let broker = kp::metadata_response::MetadataResponseBroker::default()
                    .with_node_id(kp::BrokerId(1))
                    .with_host(StrBytes::from_static_str("127.0.0.1"))
                    .with_port(i32::from(port));
                let partition = kp::metadata_response::MetadataResponsePartition::default()
                    .with_partition_index(0)
                    .with_leader_id(kp::BrokerId(1))
                    .with_replica_nodes(vec![kp::BrokerId(1)])
                    .with_isr_nodes(vec![kp::BrokerId(1)]);
                let topic = kp::metadata_response::MetadataResponseTopic::default()
                    .with_name(Some(kp::TopicName(StrBytes::from_static_str("t"))))
                    .with_partitions(vec![partition]);
                encode(
                    &kp::MetadataResponse::default()
                        .with_brokers(vec![broker])
                        .with_topics(vec![topic]),
                    version,
                )
            }
            kp::ApiKey::InitProducerId => encode(
                &kp::InitProducerIdResponse::default()
                    .with_producer_id(kp::ProducerId(7))
                    .with_producer_epoch(0),
                version,
            ),
            kp::ApiKey::Produce => {
                let req = kp::ProduceRequest::decode(&mut frame, version).unwrap();
                let topics = req
                    .topic_data
                    .iter()
                    .map(|t| {
                        let parts = t
                            .partition_data
                            .iter()
                            .map(|p| {
                                kp::produce_response::PartitionProduceResponse::default()
                                    .with_index(p.index)
                                    .with_base_offset(0)
                            })
                            .collect();
                        kp::produce_response::TopicProduceResponse::default()
                            .with_name(t.name.clone())
                            .with_partition_responses(parts)
                    })
                    .collect();
                seen.lock().unwrap().produced += 1;
                encode(
                    &kp::ProduceResponse::default().with_responses(topics),
                    version,
                )
            }
            other => panic!("unexpected {other:?}"),
        };
        let mut out = BytesMut::new();
        out.put_i32(0);
        kp::ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
            .encode(&mut out, api.response_header_version(version))
            .unwrap();
        out.put_slice(&body);
        let len = i32::try_from(out.len() - 4).unwrap();
        out[..4].copy_from_slice(&len.to_be_bytes());
        if stream.write_all(&out).is_err() {
            return;
        }
    }
}

fn encode<T: Encodable>(m: &T, version: i16) -> Bytes {
    let mut b = BytesMut::new();
    m.encode(&mut b, version).unwrap();
    b.freeze()
}

/// A provider installed with `SessionConfigBuilder::sasl().oauthbearer(..)` reaches the
/// blocking producer's session: every connection (the bootstrap one and the leader's)
/// authenticates with the client's first message of RFC 7628 (`n,,^Aauth=Bearer
/// <token>^A^A`, Kafka's `OAuthBearerClientInitialResponse`), a token from the provider
/// per authentication, and the record is delivered.
#[test]
fn an_oauthbearer_provider_authenticates_the_blocking_producer() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    {
        let seen = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve(stream.unwrap(), port, &seen));
            }
        });
    }
    let provider = Arc::new(CountingProvider::default());
    let mut config = SessionConfig::builder();
    config
        .set("bootstrap.servers", &format!("127.0.0.1:{port}"))
        .unwrap()
        .set("security.protocol", "SASL_PLAINTEXT")
        .unwrap();
    config.sasl().oauthbearer(provider.clone());
    let p = Producer::new(config.build().expect("config")).expect("producer");
    p.send(ProducerRecord::new("t", 0, "v"))
        .expect("queued")
        .wait()
        .expect("delivered");
    p.close().expect("closed");

    let seen = seen.lock().unwrap();
    assert_eq!(seen.produced, 1);
    let calls = provider.calls.load(Ordering::SeqCst);
    assert_eq!(seen.auth.len(), usize::try_from(calls).unwrap());
    assert_eq!(calls, 2, "the bootstrap connection and the leader's");
    for (i, auth) in seen.auth.iter().enumerate() {
        assert_eq!(
            auth,
            &format!("n,,\u{1}auth=Bearer token-{}\u{1}\u{1}", i + 1)
        );
    }
}
