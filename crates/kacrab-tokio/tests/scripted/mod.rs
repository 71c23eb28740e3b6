//! A scripted single-node broker over in-memory streams (`tokio::io::duplex`), for tests
//! under paused Tokio time: nothing touches the OS network, so virtual time only moves
//! when every task is idle and timings are exact.
//!
//! It answers ApiVersions, Metadata (one topic, every partition led by node 1) and
//! InitProducerId, and applies Produce batches with Kafka's idempotence rules (duplicate
//! of an appended batch -> its offset; next sequence -> append; else
//! OUT_OF_ORDER_SEQUENCE_NUMBER). What it does with each Produce request is scripted.
//! With [`Broker::require_oauthbearer`] it is a `SASL_PLAINTEXT` listener taking
//! OAUTHBEARER (SaslHandshake v1, SaslAuthenticate v0-2), accepting any token, granting
//! a session lifetime (KIP-368) and logging each token it was given.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use kacrab_idempotence::record;
use kacrab_tokio::{BrokerStream, ConnectFuture, Connector};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::time::Instant;

pub const ADDR: &str = "broker-1:9092";
pub const TOPIC: &str = "t";

/// What the broker does with one Produce request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Apply and answer.
    Answer,
    /// Apply, then never answer (the connection stays open).
    ApplyThenSilence,
    /// Neither apply nor answer.
    Silence,
    /// Answer every partition with this error code, without applying.
    Error(i16),
}

/// What a connection attempt does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectAction {
    Accept,
    Refuse,
    /// Accept, but never answer anything (not even ApiVersions).
    Mute,
    /// Answer ApiVersions, then nothing more.
    MuteAfterHandshake,
    /// Take `connect_ms` to open and `handshake_ms` to answer ApiVersions, then serve.
    Slow {
        connect_ms: u64,
        handshake_ms: u64,
    },
}

#[derive(Debug, Default)]
pub struct State {
    pub partitions: i32,
    /// Scripted Produce actions, in arrival order; `Answer` when empty.
    pub produce: VecDeque<Action>,
    /// Scripted connect actions; `Accept` when empty.
    pub connects: VecDeque<ConnectAction>,
    /// When each connection attempt happened, and what it did.
    pub connect_log: Vec<(Instant, ConnectAction)>,
    /// When each Produce request arrived, with its (partition, base sequence) pairs.
    pub produce_log: Vec<(Instant, Vec<(i32, i32)>)>,
    pub metadata_requests: usize,
    /// Per partition: appended batches (base sequence, count, base offset).
    pub logs: BTreeMap<i32, Vec<(i32, i32, i64)>>,
    /// With SASL: the session lifetime each SaslAuthenticate answer grants (ms).
    pub sasl_lifetime_ms: Option<i64>,
    /// Each SaslAuthenticate: when, on which connection (its index in `connect_log`), and
    /// its auth bytes.
    pub auth_log: Vec<(Instant, usize, Bytes)>,
}

impl State {
    /// Records in the log of `partition`.
    pub fn records(&self, partition: i32) -> i64 {
        self.logs
            .get(&partition)
            .map_or(0, |l| l.iter().map(|b| i64::from(b.1)).sum())
    }
}

#[derive(Clone, Debug)]
pub struct Broker {
    pub state: Arc<Mutex<State>>,
}

impl Broker {
    pub fn new(partitions: i32) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                partitions,
                ..State::default()
            })),
        }
    }

    pub fn script_produce(&self, actions: &[Action]) {
        self.state
            .lock()
            .unwrap()
            .produce
            .extend(actions.iter().copied());
    }

    pub fn script_connects(&self, actions: &[ConnectAction]) {
        self.state
            .lock()
            .unwrap()
            .connects
            .extend(actions.iter().copied());
    }

    /// Requires OAUTHBEARER, granting `lifetime_ms` per authentication.
    pub fn require_oauthbearer(&self, lifetime_ms: i64) {
        self.state.lock().unwrap().sasl_lifetime_ms = Some(lifetime_ms);
    }

    pub fn connector(&self) -> impl Connector {
        let state = Arc::clone(&self.state);
        move |addr: &str| -> ConnectFuture {
            let state = Arc::clone(&state);
            let addr = addr.to_owned();
            Box::pin(async move {
                if addr != ADDR {
                    return Err(io::Error::new(io::ErrorKind::NotFound, addr));
                }
                let action = {
                    let mut s = state.lock().unwrap();
                    let a = s.connects.pop_front().unwrap_or(ConnectAction::Accept);
                    s.connect_log.push((Instant::now(), a));
                    (a, s.connect_log.len() - 1)
                };
                let (action, conn) = action;
                match action {
                    ConnectAction::Refuse => Err(io::ErrorKind::ConnectionRefused.into()),
                    accept => {
                        if let ConnectAction::Slow { connect_ms, .. } = accept {
                            tokio::time::sleep(std::time::Duration::from_millis(connect_ms)).await;
                        }
                        let (client, server) = tokio::io::duplex(1 << 20);
                        tokio::spawn(serve(server, state, accept, conn));
                        Ok(Box::new(client) as Box<dyn BrokerStream>)
                    }
                }
            })
        }
    }
}

async fn serve(
    mut stream: DuplexStream,
    state: Arc<Mutex<State>>,
    how: ConnectAction,
    conn: usize,
) {
    loop {
        let Ok(len) = stream.read_i32().await else {
            return;
        };
        let mut frame = vec![0; usize::try_from(len).unwrap_or(0)];
        if stream.read_exact(&mut frame).await.is_err() {
            return;
        }
        let mut frame = Bytes::from(frame);
        let api = kp::ApiKey::try_from(i16::from_be_bytes([frame[0], frame[1]])).expect("api key");
        let mute = match how {
            ConnectAction::Mute => true,
            ConnectAction::MuteAfterHandshake => api != kp::ApiKey::ApiVersions,
            _ => false,
        };
        if mute {
            continue;
        }
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let header =
            kp::RequestHeader::decode(&mut frame, api.request_header_version(version)).unwrap();
        let body = match api {
            kp::ApiKey::ApiVersions => {
                if let ConnectAction::Slow { handshake_ms, .. } = how {
                    tokio::time::sleep(std::time::Duration::from_millis(handshake_ms)).await;
                }
                let sasl = state.lock().unwrap().sasl_lifetime_ms.is_some();
                Some(encode(&api_versions(sasl), version))
            }
            kp::ApiKey::SaslHandshake => {
                let req = kp::SaslHandshakeRequest::decode(&mut frame, version).unwrap();
                let ok = req.mechanism.as_str() == "OAUTHBEARER";
                let r = kp::SaslHandshakeResponse::default()
                    .with_error_code(if ok { 0 } else { 33 }) // UNSUPPORTED_SASL_MECHANISM
                    .with_mechanisms(vec![StrBytes::from_static_str("OAUTHBEARER")]);
                Some(encode(&r, version))
            }
            kp::ApiKey::SaslAuthenticate => {
                let req = kp::SaslAuthenticateRequest::decode(&mut frame, version).unwrap();
                let lifetime = {
                    let mut s = state.lock().unwrap();
                    s.auth_log
                        .push((Instant::now(), conn, req.auth_bytes.clone()));
                    s.sasl_lifetime_ms.unwrap_or(0)
                };
                let r = kp::SaslAuthenticateResponse::default().with_session_lifetime_ms(lifetime);
                Some(encode(&r, version))
            }
            kp::ApiKey::Metadata => {
                let _req = kp::MetadataRequest::decode(&mut frame, version).unwrap();
                let partitions = {
                    let mut s = state.lock().unwrap();
                    s.metadata_requests += 1;
                    s.partitions
                };
                Some(encode(&metadata(partitions), version))
            }
            kp::ApiKey::InitProducerId => {
                let r = kp::InitProducerIdResponse::default()
                    .with_producer_id(kp::ProducerId(77))
                    .with_producer_epoch(0);
                Some(encode(&r, version))
            }
            kp::ApiKey::Produce => {
                let req = kp::ProduceRequest::decode(&mut frame, version).unwrap();
                produce(&state, &req).map(|r| encode(&r, version))
            }
            other => panic!("scripted broker: unexpected {other:?}"),
        };
        let Some(body) = body else { continue };
        let mut out = BytesMut::new();
        out.put_i32(0);
        kp::ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
            .encode(&mut out, api.response_header_version(version))
            .unwrap();
        out.put_slice(&body);
        let len = i32::try_from(out.len() - 4).unwrap();
        out[..4].copy_from_slice(&len.to_be_bytes());
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn encode<T: Encodable>(m: &T, version: i16) -> Bytes {
    let mut b = BytesMut::new();
    m.encode(&mut b, version).unwrap();
    b.freeze()
}

fn api_versions(sasl: bool) -> kp::ApiVersionsResponse {
    let key = |k: kp::ApiKey, min: i16, max: i16| {
        kp::api_versions_response::ApiVersion::default()
            .with_api_key(k as i16)
            .with_min_version(min)
            .with_max_version(max)
    };
    let mut keys = vec![
        key(kp::ApiKey::Produce, 9, 9),
        key(kp::ApiKey::Metadata, 12, 12),
        key(kp::ApiKey::ApiVersions, 0, 3),
        key(kp::ApiKey::InitProducerId, 4, 4),
    ];
    if sasl {
        keys.push(key(kp::ApiKey::SaslHandshake, 1, 1));
        keys.push(key(kp::ApiKey::SaslAuthenticate, 0, 2));
    }
    kp::ApiVersionsResponse::default().with_api_keys(keys)
}

fn metadata(partitions: i32) -> kp::MetadataResponse {
    let broker = kp::metadata_response::MetadataResponseBroker::default()
        .with_node_id(kp::BrokerId(1))
        .with_host(StrBytes::from_static_str("broker-1"))
        .with_port(9092);
    let parts = (0..partitions)
        .map(|p| {
            kp::metadata_response::MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(kp::BrokerId(1))
                .with_leader_epoch(0)
                .with_replica_nodes(vec![kp::BrokerId(1)])
                .with_isr_nodes(vec![kp::BrokerId(1)])
        })
        .collect();
    let topic = kp::metadata_response::MetadataResponseTopic::default()
        .with_name(Some(kp::TopicName(StrBytes::from_static_str(TOPIC))))
        .with_partitions(parts);
    kp::MetadataResponse::default()
        .with_brokers(vec![broker])
        .with_topics(vec![topic])
}

/// Applies (or not) a Produce request as scripted; `None` when it must not be answered.
fn produce(state: &Mutex<State>, req: &kp::ProduceRequest) -> Option<kp::ProduceResponse> {
    let mut s = state.lock().unwrap();
    let action = s.produce.pop_front().unwrap_or(Action::Answer);
    let mut seen = Vec::new();
    let mut topics = Vec::new();
    for t in &req.topic_data {
        let mut parts = Vec::new();
        for p in &t.partition_data {
            let data = p.records.clone().unwrap_or_default();
            let h = record::read_header(&data).expect("a record batch");
            seen.push((p.index, h.base_sequence));
            let (error, offset) = match action {
                Action::Error(code) => (code, -1),
                Action::Silence => (0, -1),
                Action::Answer | Action::ApplyThenSilence => {
                    let log = s.logs.entry(p.index).or_default();
                    if let Some(dup) = log
                        .iter()
                        .find(|b| b.0 == h.base_sequence && b.1 == h.record_count)
                    {
                        (0, dup.2)
                    } else if h.base_sequence == log.last().map_or(0, |b| b.0 + b.1) {
                        let offset = log.last().map_or(0, |b| b.2 + i64::from(b.1));
                        log.push((h.base_sequence, h.record_count, offset));
                        (0, offset)
                    } else {
                        (45, -1) // OUT_OF_ORDER_SEQUENCE_NUMBER
                    }
                }
            };
            parts.push(
                kp::produce_response::PartitionProduceResponse::default()
                    .with_index(p.index)
                    .with_error_code(error)
                    .with_base_offset(offset)
                    .with_log_start_offset(0),
            );
        }
        topics.push(
            kp::produce_response::TopicProduceResponse::default()
                .with_name(t.name.clone())
                .with_partition_responses(parts),
        );
    }
    s.produce_log.push((Instant::now(), seen));
    match action {
        Action::Silence | Action::ApplyThenSilence => None,
        Action::Answer | Action::Error(_) => {
            Some(kp::ProduceResponse::default().with_responses(topics))
        }
    }
}
