//! Model brokers for the session harness: they decode the real request frames the
//! session writes (with `kafka-protocol`, independently of `kacrab-wire`) and encode
//! real response frames, following Kafka's broker rules for what the tests exercise:
//! ApiVersions (an UNSUPPORTED_VERSION answer is a v0 body, as `ApiVersionsRequest`
//! handling in Kafka's `KafkaApis` does), Metadata, leadership (NOT_LEADER_OR_FOLLOWER
//! with the KIP-951 `current_leader` and `node_endpoints`), and `LogValidator`'s key check
//! on compacted topics. Each partition's log and the idempotent producer's rules
//! (`ProducerStateManager`, `ProducerAppendInfo`, `UnifiedLog`'s dedup) are the workspace's
//! one model of Kafka's broker, `kacrab_broker_model::broker::PartitionState`, the one
//! the simulator answers from.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kacrab_broker_model::broker::{PartitionState, TxnMarker, CORRUPT_MESSAGE, NONE};
/// Kafka error codes the model answers with, as the model broker names them.
pub use kacrab_broker_model::broker::{
    INVALID_RECORD, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
};
use kacrab_broker_model::coordinator::{produce_error_from_coordinator, TransactionCoordinator};
use kacrab_broker_model::verification::CoordinatorCheck;
use kacrab_driver::ConnId;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ApiVersionsRequest,
    ApiVersionsResponse, BrokerId, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GetTelemetrySubscriptionsRequest, InitProducerIdRequest,
    InitProducerIdResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
    ProducerId, PushTelemetryRequest, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslHandshakeRequest, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;

/// A partition without a leader (also: a topic being auto-created).
pub const LEADER_NOT_AVAILABLE: i16 = 5;
/// ApiVersions at a version the broker does not speak.
pub const UNSUPPORTED_VERSION: i16 = 35;

/// One model broker.
#[derive(Clone, Debug)]
pub struct BrokerSpec {
    /// `host:port`.
    pub addr: String,
    /// A dead broker refuses connections.
    pub alive: bool,
    /// `(api key, min, max)` as its ApiVersions answer lists them.
    pub api_versions: Vec<(i16, i16, i16)>,
    /// The finalized `transaction.version` level it reports, if any.
    pub transaction_version: Option<i16>,
    /// The epoch of its finalized features (-1: none).
    pub features_epoch: i64,
}

impl BrokerSpec {
    /// A Kafka 4.0 broker at `addr`, without finalized features.
    pub fn new(addr: impl Into<String>) -> Self {
        Self {
            addr: addr.into(),
            alive: true,
            api_versions: vec![
                (0, 3, 12), // Produce
                (3, 0, 12), // Metadata
                (10, 0, 6), // FindCoordinator
                (18, 0, 4), // ApiVersions
                (22, 0, 5), // InitProducerId
                (24, 0, 5), // AddPartitionsToTxn
                (25, 0, 4), // AddOffsetsToTxn
                (26, 0, 5), // EndTxn
                (28, 0, 5), // TxnOffsetCommit
                (17, 0, 1), // SaslHandshake
                (36, 0, 2), // SaslAuthenticate
            ],
            transaction_version: None,
            features_epoch: -1,
        }
    }

    /// The broker's highest version of `api`, if it lists it.
    pub fn max_version(&self, api: ApiKey) -> Option<i16> {
        self.api_versions
            .iter()
            .find(|(k, _, _)| *k == api as i16)
            .map(|&(_, _, max)| max)
    }

    fn host_port(&self) -> (StrBytes, i32) {
        let (host, port) = self.addr.rsplit_once(':').expect("host:port");
        (
            StrBytes::from_string(host.to_owned()),
            port.parse().expect("port"),
        )
    }
}

/// A record in a partition's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    /// Its offset.
    pub offset: i64,
    /// Its value.
    pub value: Option<Bytes>,
    /// The producer that wrote it.
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
    /// Its sequence.
    pub sequence: i32,
}

/// One partition.
#[derive(Clone, Debug)]
pub struct Partition {
    /// The leader's node id.
    pub leader: i32,
    /// The leader epoch.
    pub leader_epoch: i32,
    /// The topic's config, as the partition's log applies it.
    pub config: TopicConfig,
    /// The log and its producers' state, by Kafka's broker rules.
    state: PartitionState,
}

impl Partition {
    /// An empty partition led by `leader`, at leader epoch 0.
    fn new(leader: i32) -> Self {
        Self {
            leader,
            leader_epoch: 0,
            config: TopicConfig::default(),
            state: PartitionState::new(),
        }
    }

    /// The records in the log, in offset order.
    pub fn log(&self) -> Vec<Logged> {
        self.state
            .records()
            .map(|r| Logged {
                offset: r.offset,
                value: r.value.clone(),
                producer_id: r.producer_id,
                producer_epoch: r.producer_epoch,
                sequence: r.sequence,
            })
            .collect()
    }
}

/// The topic configs the model's log validation follows (Kafka's `LogValidator`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopicConfig {
    /// `message.timestamp.type=LogAppendTime` at this broker time (milliseconds since
    /// the Unix epoch): the leader stamps every appended batch with it and answers it
    /// as `log_append_time_ms`. `None`: CreateTime (the answer carries -1).
    pub log_append_time: Option<i64>,
    /// `cleanup.policy=compact`: a record without a key makes the leader reject its
    /// whole batch with INVALID_RECORD, naming that record (KIP-467;
    /// `LogValidator.validateKey`).
    pub compacted: bool,
}

/// A decoded request.
#[derive(Clone, Debug)]
pub enum Req {
    /// ApiVersions.
    ApiVersions(ApiVersionsRequest),
    /// Metadata.
    Metadata(MetadataRequest),
    /// Produce.
    Produce(ProduceRequest),
    /// InitProducerId.
    InitProducerId(InitProducerIdRequest),
    /// FindCoordinator.
    FindCoordinator(FindCoordinatorRequest),
    /// AddPartitionsToTxn.
    AddPartitionsToTxn(AddPartitionsToTxnRequest),
    /// EndTxn.
    EndTxn(EndTxnRequest),
    /// AddOffsetsToTxn.
    AddOffsetsToTxn(AddOffsetsToTxnRequest),
    /// TxnOffsetCommit.
    TxnOffsetCommit(TxnOffsetCommitRequest),
    /// SaslHandshake.
    SaslHandshake(SaslHandshakeRequest),
    /// SaslAuthenticate.
    SaslAuthenticate(SaslAuthenticateRequest),
    /// GetTelemetrySubscriptions (KIP-714).
    GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest),
    /// PushTelemetry (KIP-714).
    PushTelemetry(PushTelemetryRequest),
}

/// A request as a broker received it.
#[derive(Clone, Debug)]
pub struct Incoming {
    /// The broker.
    pub node: i32,
    /// The connection it came on.
    pub conn: ConnId,
    /// Its API.
    pub api: ApiKey,
    /// Its version.
    pub version: i16,
    /// Its correlation id.
    pub correlation_id: i32,
    /// Its body.
    pub req: Req,
}

/// A request the cluster saw (for assertions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The broker.
    pub node: i32,
    /// The connection.
    pub conn: ConnId,
    /// The API.
    pub api: ApiKey,
    /// The version.
    pub version: i16,
}

/// The model cluster: brokers, topics, producer ids.
#[derive(Debug)]
pub struct Cluster {
    /// Broker time in milliseconds (the harness's virtual clock), for the log's append
    /// times.
    pub now_ms: u64,
    /// Brokers by node id.
    pub brokers: BTreeMap<i32, BrokerSpec>,
    /// Topics and their partitions.
    pub topics: BTreeMap<String, Vec<Partition>>,
    /// The transaction coordinator's node.
    pub coordinator: i32,
    /// Every request received, in order.
    pub seen: Vec<Seen>,
    /// Partitions added to the transaction (AddPartitionsToTxn), in order.
    pub txn_partitions: BTreeSet<(String, i32)>,
    /// EndTxn calls (`committed`), in order.
    pub end_txns: Vec<bool>,
    /// Groups added to the transaction (AddOffsetsToTxn), in order.
    pub offset_groups: Vec<String>,
    /// Offsets committed in transactions (TxnOffsetCommit), in order.
    pub committed_offsets: Vec<(String, i32, i64)>,
    /// Brokers left out of Metadata's broker list (reachable all the same).
    pub hidden_in_metadata: BTreeSet<i32>,
    /// Topics Metadata answers with this error code instead of their partitions.
    pub metadata_errors: BTreeMap<String, i16>,
    /// Nodes whose address Produce answers leave out of `node_endpoints` (KIP-951): a
    /// leader hint naming one comes without the node's address.
    pub endpoints_withheld: BTreeSet<i32>,
    /// Partitions being created: Metadata answers them LEADER_NOT_AVAILABLE with no
    /// leader, and their broker refuses Produce with NOT_LEADER_OR_FOLLOWER.
    pub leaderless: BTreeSet<(String, i32)>,
    /// Topics being created: Metadata answers them without error and without
    /// partitions.
    pub partitionless: BTreeSet<String>,
    /// Topics Metadata lists but whose leaders have not loaded their partitions yet:
    /// Produce is answered UNKNOWN_TOPIC_OR_PARTITION, nothing appended.
    pub not_loaded: BTreeSet<String>,
    /// The brokers' SASL listener (`None`: the listeners do not authenticate).
    pub sasl: Option<super::sasl::SaslListener>,
    /// The brokers' client-telemetry plugin (`None`: none, and the telemetry APIs are
    /// not advertised, as Kafka's brokers do without one).
    pub telemetry: Option<super::telemetry::TelemetryPlugin>,
    /// The broker's `auto.create.topics.enable`, with `num.partitions`: a Metadata
    /// request naming an unknown topic and allowing auto-creation creates it (answered
    /// LEADER_NOT_AVAILABLE while it is created, as Kafka's `KafkaApis` answers topics
    /// it auto-creates). `None`: disabled.
    pub auto_create_partitions: Option<i32>,
    /// Topic ids (KIP-516) of the topics created with one (`with_topic`,
    /// `recreate_topic`); others are answered with Kafka's zero UUID.
    pub topic_ids: BTreeMap<String, [u8; 16]>,
    /// The transaction coordinator's state and rules (and the producer ids it hands
    /// out): the model's.
    pub txn_coordinator: TransactionCoordinator,
}

impl Cluster {
    /// `brokers` brokers, nodes `0..brokers` at `b{n}:9092`, no topics.
    pub fn new(brokers: i32) -> Self {
        Self {
            now_ms: 0,
            brokers: (0..brokers)
                .map(|n| (n, BrokerSpec::new(format!("b{n}:9092"))))
                .collect(),
            topics: BTreeMap::new(),
            coordinator: 0,
            seen: Vec::new(),
            txn_partitions: BTreeSet::new(),
            end_txns: Vec::new(),
            hidden_in_metadata: BTreeSet::new(),
            metadata_errors: BTreeMap::new(),
            endpoints_withheld: BTreeSet::new(),
            leaderless: BTreeSet::new(),
            partitionless: BTreeSet::new(),
            not_loaded: BTreeSet::new(),
            auto_create_partitions: None,
            offset_groups: Vec::new(),
            committed_offsets: Vec::new(),
            sasl: None,
            telemetry: None,
            txn_coordinator: TransactionCoordinator::new(1000),
            topic_ids: BTreeMap::new(),
        }
    }

    /// A fresh topic id: distinct from every id given before.
    fn new_topic_id(&self) -> [u8; 16] {
        let n = self.topic_ids.len() as u8 + 1;
        let mut id = [n; 16];
        id[0] = 0x7a;
        id
    }

    /// Deletes `topic` and creates it again with `partitions` partitions led by
    /// `leader`: a new topic id, leader epochs from 0, empty logs and no producer state
    /// (Kafka's `kafka-topics --delete` then `--create`).
    pub fn recreate_topic(&mut self, topic: &str, partitions: i32, leader: i32) {
        let id = self.new_topic_id();
        self.topic_ids.insert(topic.to_owned(), id);
        let parts = (0..partitions).map(|_| Partition::new(leader)).collect();
        self.topics.insert(topic.to_owned(), parts);
    }

    /// Adds `topic` with `partitions` partitions, partition `p` led by node
    /// `p % brokers`.
    pub fn with_topic(mut self, topic: &str, partitions: i32) -> Self {
        let n = self.brokers.len() as i32;
        let parts = (0..partitions).map(|p| Partition::new(p % n)).collect();
        self.topics.insert(topic.to_owned(), parts);
        let id = self.new_topic_id();
        self.topic_ids.insert(topic.to_owned(), id);
        self
    }

    /// Adds a partition to `topic`, led by node `leader` (Kafka's
    /// `kafka-topics --alter --partitions`).
    pub fn add_partition(&mut self, topic: &str, leader: i32) {
        self.topics
            .get_mut(topic)
            .expect("topic")
            .push(Partition::new(leader));
    }

    /// Sets the config of every partition of `topic`.
    pub fn configure(&mut self, topic: &str, config: TopicConfig) {
        for p in self.topics.get_mut(topic).expect("topic") {
            p.config = config;
        }
    }

    /// The partition.
    pub fn partition(&self, topic: &str, partition: i32) -> &Partition {
        &self.topics[topic][partition as usize]
    }

    /// Moves the leadership of a partition, bumping its leader epoch.
    pub fn move_leader(&mut self, topic: &str, partition: i32, to: i32) {
        let p = &mut self.topics.get_mut(topic).expect("topic")[partition as usize];
        p.leader = to;
        p.leader_epoch += 1;
    }

    /// The log's values, as strings.
    pub fn values(&self, topic: &str, partition: i32) -> Vec<String> {
        self.partition(topic, partition)
            .log()
            .iter()
            .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
            .collect()
    }

    /// The node at `addr`, if a broker lives there.
    pub fn node_at(&self, addr: &str) -> Option<i32> {
        self.brokers
            .iter()
            .find(|(_, b)| b.addr == addr)
            .map(|(&n, _)| n)
    }

    /// How many requests of `api` the cluster received.
    pub fn count(&self, api: ApiKey) -> usize {
        self.seen.iter().filter(|s| s.api == api).count()
    }

    /// Decodes one request frame (without its size prefix) received by `node` on `conn`.
    pub fn decode(node: i32, conn: ConnId, frame: &Bytes) -> Result<Incoming, String> {
        let mut buf = frame.clone();
        if buf.len() < 4 {
            return Err("short request".into());
        }
        let api_key = i16::from_be_bytes([buf[0], buf[1]]);
        let version = i16::from_be_bytes([buf[2], buf[3]]);
        let api = ApiKey::try_from(api_key).map_err(|()| format!("unknown api {api_key}"))?;
        let header = RequestHeader::decode(&mut buf, api.request_header_version(version))
            .map_err(|e| e.to_string())?;
        let req = match api {
            ApiKey::ApiVersions => {
                Req::ApiVersions(ApiVersionsRequest::decode(&mut buf, version).map_err(text)?)
            }
            ApiKey::Metadata => {
                Req::Metadata(MetadataRequest::decode(&mut buf, version).map_err(text)?)
            }
            ApiKey::Produce => {
                Req::Produce(ProduceRequest::decode(&mut buf, version).map_err(text)?)
            }
            ApiKey::InitProducerId => {
                Req::InitProducerId(InitProducerIdRequest::decode(&mut buf, version).map_err(text)?)
            }
            ApiKey::FindCoordinator => Req::FindCoordinator(
                FindCoordinatorRequest::decode(&mut buf, version).map_err(text)?,
            ),
            ApiKey::AddPartitionsToTxn => Req::AddPartitionsToTxn(
                AddPartitionsToTxnRequest::decode(&mut buf, version).map_err(text)?,
            ),
            ApiKey::EndTxn => Req::EndTxn(EndTxnRequest::decode(&mut buf, version).map_err(text)?),
            ApiKey::AddOffsetsToTxn => Req::AddOffsetsToTxn(
                AddOffsetsToTxnRequest::decode(&mut buf, version).map_err(text)?,
            ),
            ApiKey::TxnOffsetCommit => Req::TxnOffsetCommit(
                TxnOffsetCommitRequest::decode(&mut buf, version).map_err(text)?,
            ),
            ApiKey::SaslHandshake => {
                Req::SaslHandshake(SaslHandshakeRequest::decode(&mut buf, version).map_err(text)?)
            }
            ApiKey::SaslAuthenticate => Req::SaslAuthenticate(
                SaslAuthenticateRequest::decode(&mut buf, version).map_err(text)?,
            ),
            ApiKey::GetTelemetrySubscriptions => Req::GetTelemetrySubscriptions(
                GetTelemetrySubscriptionsRequest::decode(&mut buf, version).map_err(text)?,
            ),
            ApiKey::PushTelemetry => {
                Req::PushTelemetry(PushTelemetryRequest::decode(&mut buf, version).map_err(text)?)
            }
            other => return Err(format!("the model broker does not speak {other:?}")),
        };
        if buf.has_remaining() {
            return Err(format!("{} bytes after the {api:?} body", buf.remaining()));
        }
        Ok(Incoming {
            node,
            conn,
            api,
            version,
            correlation_id: header.correlation_id,
            req,
        })
    }

    /// Applies the request as the broker would, and returns its answer as a whole
    /// response frame (size prefix included).
    pub fn answer(&mut self, inc: &Incoming) -> Bytes {
        let v = inc.version;
        let body = match &inc.req {
            Req::ApiVersions(_) => {
                let b = &self.brokers[&inc.node];
                let max = b.max_version(ApiKey::ApiVersions).unwrap_or(0);
                if v > max {
                    // Kafka answers an ApiVersions version it does not know with a v0 body
                    // listing its own ApiVersions range.
                    let answer = ApiVersionsResponse::default()
                        .with_error_code(UNSUPPORTED_VERSION)
                        .with_api_keys(vec![ApiVersion::default()
                            .with_api_key(ApiKey::ApiVersions as i16)
                            .with_min_version(0)
                            .with_max_version(max)]);
                    return frame(inc, &answer, 0);
                }
                encode(&self.api_versions(inc.node), v)
            }
            Req::SaslHandshake(r) => {
                let listener = self.sasl.as_mut().expect("a SASL listener");
                encode(&listener.handshake(inc.conn, r), v)
            }
            Req::SaslAuthenticate(r) => {
                let listener = self.sasl.as_mut().expect("a SASL listener");
                encode(&listener.authenticate(inc.conn, r, v), v)
            }
            Req::GetTelemetrySubscriptions(r) => {
                let plugin = self.telemetry.as_mut().expect("a telemetry plugin");
                encode(&plugin.subscribe(r), v)
            }
            Req::PushTelemetry(r) => {
                let plugin = self.telemetry.as_mut().expect("a telemetry plugin");
                encode(&plugin.push(r), v)
            }
            Req::Metadata(r) => encode(&self.metadata(r), v),
            Req::Produce(r) => encode(&self.produce(inc.node, r, v), v),
            Req::InitProducerId(r) => encode(&self.init_producer_id(r), v),
            Req::FindCoordinator(r) => encode(&self.find_coordinator(r, v), v),
            Req::AddPartitionsToTxn(r) => encode(&self.add_partitions(r), v),
            Req::EndTxn(r) => encode(&self.end_txn(r, v), v),
            Req::AddOffsetsToTxn(r) => {
                self.offset_groups.push(r.group_id.0.to_string());
                let code = self.txn_coordinator.add_offsets(
                    &r.transactional_id.0,
                    r.producer_id.0,
                    r.producer_epoch,
                    &r.group_id.0,
                    self.now_ms,
                );
                encode(&AddOffsetsToTxnResponse::default().with_error_code(code), v)
            }
            Req::TxnOffsetCommit(r) => {
                let mut offsets = Vec::new();
                for t in &r.topics {
                    for p in &t.partitions {
                        let tp = (t.name.0.to_string(), p.partition_index);
                        self.committed_offsets
                            .push((tp.0.clone(), tp.1, p.committed_offset));
                        offsets.push((tp, p.committed_offset));
                    }
                }
                // TxnOffsetCommit v5 is transaction version 2's (the group joins
                // implicitly, KIP-890).
                let codes = self.txn_coordinator.txn_offset_commit(
                    &r.transactional_id.0,
                    &r.group_id.0,
                    r.producer_id.0,
                    r.producer_epoch,
                    &offsets,
                    v >= 5,
                    self.now_ms,
                );
                // The coordinator answers one code per offset, in request order.
                let mut codes = codes.into_iter().map(|(_, code)| code);
                let topics = r
                    .topics
                    .iter()
                    .map(|t| {
                        TxnOffsetCommitResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        TxnOffsetCommitResponsePartition::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(codes.next().unwrap_or(NONE))
                                    })
                                    .collect(),
                            )
                    })
                    .collect();
                encode(&TxnOffsetCommitResponse::default().with_topics(topics), v)
            }
        };
        with_header(inc, &body)
    }

    /// The ApiVersions answer of `node`.
    pub fn api_versions(&self, node: i32) -> ApiVersionsResponse {
        let b = &self.brokers[&node];
        let mut answer = ApiVersionsResponse::default().with_api_keys(
            b.api_versions
                .iter()
                .map(|&(k, min, max)| {
                    ApiVersion::default()
                        .with_api_key(k)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        );
        if self.telemetry.is_some() {
            for key in [ApiKey::GetTelemetrySubscriptions, ApiKey::PushTelemetry] {
                answer.api_keys.push(
                    ApiVersion::default()
                        .with_api_key(key as i16)
                        .with_min_version(0)
                        .with_max_version(0),
                );
            }
        }
        answer.finalized_features_epoch = b.features_epoch;
        if let Some(level) = b.transaction_version {
            answer.finalized_features = vec![FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str("transaction.version"))
                .with_max_version_level(level)
                .with_min_version_level(level)];
        }
        answer
    }

    fn brokers_list(&self) -> Vec<MetadataResponseBroker> {
        self.brokers
            .iter()
            .filter(|(n, b)| b.alive && !self.hidden_in_metadata.contains(n))
            .map(|(&n, b)| {
                let (host, port) = b.host_port();
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(n))
                    .with_host(host)
                    .with_port(port)
            })
            .collect()
    }

    fn metadata(&mut self, r: &MetadataRequest) -> MetadataResponse {
        let names: Vec<String> = match &r.topics {
            None => self.topics.keys().cloned().collect(),
            Some(ts) => ts
                .iter()
                .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                .collect(),
        };
        let mut created = Vec::new();
        let topics = names
            .into_iter()
            .map(|name| {
                let t = MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(name.clone()))));
                if let Some(&code) = self.metadata_errors.get(&name) {
                    return t.with_error_code(code);
                }
                match self.topics.get(&name) {
                    None if r.allow_auto_topic_creation
                        && self.auto_create_partitions.is_some() =>
                    {
                        let partitions = self.auto_create_partitions.unwrap_or(1);
                        created.push((name, partitions));
                        t.with_error_code(LEADER_NOT_AVAILABLE)
                    }
                    None => t.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                    Some(_) if self.partitionless.contains(&name) => {
                        t.with_topic_id(uuid::Uuid::from_bytes(
                            self.topic_ids.get(&name).copied().unwrap_or_default(),
                        ))
                    }
                    Some(parts) => t
                        .with_topic_id(uuid::Uuid::from_bytes(
                            self.topic_ids.get(&name).copied().unwrap_or_default(),
                        ))
                        .with_partitions(
                            parts
                                .iter()
                                .enumerate()
                                .map(|(i, p)| {
                                    if self.leaderless.contains(&(name.clone(), i as i32)) {
                                        return MetadataResponsePartition::default()
                                            .with_error_code(LEADER_NOT_AVAILABLE)
                                            .with_partition_index(i as i32)
                                            .with_leader_id(BrokerId(-1))
                                            .with_leader_epoch(p.leader_epoch);
                                    }
                                    MetadataResponsePartition::default()
                                        .with_partition_index(i as i32)
                                        .with_leader_id(BrokerId(p.leader))
                                        .with_leader_epoch(p.leader_epoch)
                                        .with_replica_nodes(vec![BrokerId(p.leader)])
                                        .with_isr_nodes(vec![BrokerId(p.leader)])
                                })
                                .collect(),
                        ),
                }
            })
            .collect();
        for (name, partitions) in created {
            *self = std::mem::replace(self, Cluster::new(0)).with_topic(&name, partitions);
        }
        MetadataResponse::default()
            .with_brokers(self.brokers_list())
            .with_cluster_id(Some(StrBytes::from_static_str("harness")))
            .with_controller_id(BrokerId(0))
            .with_topics(topics)
    }

    fn produce(&mut self, node: i32, r: &ProduceRequest, version: i16) -> ProduceResponse {
        let mut responses = Vec::new();
        let mut endpoints = BTreeSet::new();
        for td in &r.topic_data {
            let name = td.name.0.to_string();
            let mut parts = Vec::new();
            for pd in &td.partition_data {
                let mut answer = PartitionProduceResponse::default()
                    .with_index(pd.index)
                    .with_base_offset(-1)
                    .with_log_append_time_ms(-1)
                    .with_log_start_offset(0)
                    .with_current_leader(
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(-1))
                            .with_leader_epoch(-1),
                    );
                let loaded = !self.not_loaded.contains(&name);
                let Some(p) = self
                    .topics
                    .get_mut(&name)
                    .and_then(|ps| ps.get_mut(usize::try_from(pd.index).ok()?))
                    .filter(|_| loaded)
                else {
                    parts.push(answer.with_error_code(UNKNOWN_TOPIC_OR_PARTITION));
                    continue;
                };
                if self.leaderless.contains(&(name.clone(), pd.index)) {
                    parts.push(answer.with_error_code(NOT_LEADER_OR_FOLLOWER));
                    continue;
                }
                if p.leader != node {
                    // KIP-951: the new leader and its address come with the error.
                    answer.current_leader = LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(p.leader))
                        .with_leader_epoch(p.leader_epoch);
                    if !self.endpoints_withheld.contains(&p.leader) {
                        endpoints.insert(p.leader);
                    }
                    parts.push(answer.with_error_code(NOT_LEADER_OR_FOLLOWER));
                    continue;
                }
                let records = pd.records.clone().unwrap_or_default();
                // KIP-890 part 1: a transactional batch's producer is checked with the
                // coordinator before anything is appended.
                let checked = p
                    .state
                    .begin_append(&records, self.now_ms, version >= 12)
                    .map_err(|refused| refused.code)
                    .and_then(|check| {
                        let tp = (name.clone(), pd.index);
                        let coordinator = &mut self.txn_coordinator;
                        Self::check_with_coordinator(
                            coordinator,
                            r,
                            version,
                            check,
                            &tp,
                            self.now_ms,
                        )
                    });
                if let Err(code) = checked {
                    parts.push(answer.with_error_code(code));
                    continue;
                }
                match append(p, &records, self.now_ms) {
                    Ok(base) => parts.push(
                        answer
                            .with_base_offset(base)
                            .with_log_append_time_ms(p.config.log_append_time.unwrap_or(-1)),
                    ),
                    Err(Refusal::Code(code)) => parts.push(answer.with_error_code(code)),
                    Err(Refusal::InvalidRecords(indices)) => {
                        // KIP-467: per-record errors from Produce v8, the message from v8.
                        let message = "One or more records have been rejected";
                        parts.push(
                            answer
                                .with_error_code(INVALID_RECORD)
                                .with_error_message(Some(StrBytes::from_static_str(message)))
                                .with_record_errors(
                                    indices
                                        .into_iter()
                                        .map(|i| {
                                            BatchIndexAndErrorMessage::default()
                                                .with_batch_index(i)
                                                .with_batch_index_error_message(Some(
                                                    StrBytes::from_string(format!(
                                                        "Compacted topic cannot accept message \
                                                         without key in topic partition \
                                                         {name}-{}.",
                                                        pd.index
                                                    )),
                                                ))
                                        })
                                        .collect(),
                                ),
                        );
                    }
                }
            }
            responses.push(
                TopicProduceResponse::default()
                    .with_name(td.name.clone())
                    .with_partition_responses(parts),
            );
        }
        let mut answer = ProduceResponse::default().with_responses(responses);
        if version >= 10 {
            answer.node_endpoints = endpoints
                .into_iter()
                .map(|n| {
                    let (host, port) = self.brokers[&n].host_port();
                    NodeEndpoint::default()
                        .with_node_id(BrokerId(n))
                        .with_host(host)
                        .with_port(port)
                })
                .collect();
        }
        answer
    }

    fn init_producer_id(&mut self, r: &InitProducerIdRequest) -> InitProducerIdResponse {
        let answer = match &r.transactional_id {
            Some(t) => {
                let timeout = u64::try_from(r.transaction_timeout_ms).unwrap_or(0);
                let expected = Some((r.producer_id.0, r.producer_epoch));
                let (now, topics) = (self.now_ms, &mut self.topics);
                self.txn_coordinator.init_producer_id(
                    &t.0,
                    timeout,
                    expected,
                    now,
                    &mut marker_writer(topics, now),
                )
            }
            // Without a transactional id Kafka hands out a new producer id at epoch 0,
            // whatever id and epoch the request names (`TransactionCoordinator.
            // handleInitProducerId`).
            None => Ok(self.txn_coordinator.init_idempotent()),
        };
        match answer {
            Ok((id, epoch)) => InitProducerIdResponse::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(epoch),
            Err(code) => InitProducerIdResponse::default()
                .with_error_code(code)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        }
    }

    fn find_coordinator(
        &self,
        r: &FindCoordinatorRequest,
        version: i16,
    ) -> FindCoordinatorResponse {
        let node = self.coordinator;
        let (host, port) = self.brokers[&node].host_port();
        if version >= 4 {
            FindCoordinatorResponse::default().with_coordinators(
                r.coordinator_keys
                    .iter()
                    .map(|k| {
                        Coordinator::default()
                            .with_key(k.clone())
                            .with_node_id(BrokerId(node))
                            .with_host(host.clone())
                            .with_port(port)
                    })
                    .collect(),
            )
        } else {
            FindCoordinatorResponse::default()
                .with_node_id(BrokerId(node))
                .with_host(host)
                .with_port(port)
        }
    }

    fn add_partitions(&mut self, r: &AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
        let results = r
            .v3_and_below_topics
            .iter()
            .map(|t| {
                let partitions: Vec<(String, i32)> = t
                    .partitions
                    .iter()
                    .map(|&p| (t.name.0.to_string(), p))
                    .collect();
                self.txn_partitions.extend(partitions.iter().cloned());
                let codes = self.txn_coordinator.add_partitions(
                    &r.v3_and_below_transactional_id.0,
                    r.v3_and_below_producer_id.0,
                    r.v3_and_below_producer_epoch,
                    &partitions,
                    self.now_ms,
                );
                AddPartitionsToTxnTopicResult::default()
                    .with_name(t.name.clone())
                    .with_results_by_partition(
                        codes
                            .into_iter()
                            .map(|((_, p), code)| {
                                AddPartitionsToTxnPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_partition_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect();
        AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
    }

    fn end_txn(&mut self, r: &EndTxnRequest, version: i16) -> EndTxnResponse {
        self.end_txns.push(r.committed);
        let (now, topics) = (self.now_ms, &mut self.topics);
        // EndTxn v5 is transaction version 2's: every transaction ends with a new epoch
        // (KIP-890), which the answer carries.
        let ended = self.txn_coordinator.end_txn(
            &r.transactional_id.0,
            r.producer_id.0,
            r.producer_epoch,
            r.committed,
            version >= 5,
            now,
            &mut marker_writer(topics, now),
        );
        let answer = EndTxnResponse::default()
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        match ended {
            Ok(Some((id, epoch))) => answer
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(epoch),
            Ok(None) => answer,
            Err(code) => answer.with_error_code(code),
        }
    }

    /// The leader's question to the coordinator before it appends a transactional
    /// batch (KIP-890: TV1 verifies the partition is in the transaction, TV2 adds it);
    /// the Produce error code when the coordinator refuses.
    fn check_with_coordinator(
        coordinator: &mut TransactionCoordinator,
        r: &ProduceRequest,
        version: i16,
        check: CoordinatorCheck,
        tp: &(String, i32),
        now_ms: u64,
    ) -> Result<(), i16> {
        let CoordinatorCheck::Verify {
            producer_id,
            producer_epoch,
        } = check
        else {
            return Ok(());
        };
        let Some(txn_id) = r.transactional_id.as_ref() else {
            return Ok(());
        };
        let code = if version >= 12 {
            coordinator.add_partition_implicit(&txn_id.0, producer_id, producer_epoch, tp, now_ms)
        } else {
            coordinator.verify_partition(&txn_id.0, producer_id, producer_epoch, tp)
        };
        if code == NONE {
            Ok(())
        } else {
            Err(produce_error_from_coordinator(code, version))
        }
    }
}

/// Writes the coordinator's transaction markers to the model's partitions at broker time
/// `now_ms`.
fn marker_writer(
    topics: &mut BTreeMap<String, Vec<Partition>>,
    now_ms: u64,
) -> impl FnMut(&(String, i32), &TxnMarker) -> Result<(), i16> + '_ {
    move |(topic, index), marker| {
        let p = topics
            .get_mut(topic)
            .and_then(|ps| ps.get_mut(usize::try_from(*index).ok()?))
            .ok_or(UNKNOWN_TOPIC_OR_PARTITION)?;
        p.state
            .append_marker(marker, now_ms)
            .map(|_| ())
            .map_err(|e| e.code)
    }
}

/// Why the model refused a partition's records.
enum Refusal {
    /// An error code for the whole batch.
    Code(i16),
    /// INVALID_RECORD naming these records of the batch (KIP-467).
    InvalidRecords(Vec<i32>),
}

impl From<i16> for Refusal {
    fn from(code: i16) -> Self {
        Self::Code(code)
    }
}

/// Appends one partition's records at broker time `now_ms`: `LogValidator`'s checks of
/// the topic's config first (they refuse the whole batch before producer state is
/// looked at), then the model broker's producer-state rules. The base offset or why not.
fn append(p: &mut Partition, records: &Bytes, now_ms: u64) -> Result<i64, Refusal> {
    if p.config.compacted {
        let sets =
            RecordBatchDecoder::decode_all(&mut records.clone()).map_err(|_| CORRUPT_MESSAGE)?;
        for set in sets {
            let keyless: Vec<i32> = (0..)
                .zip(&set.records)
                .filter(|(_, r)| r.key.is_none())
                .map(|(i, _)| i)
                .collect();
            if !keyless.is_empty() {
                return Err(Refusal::InvalidRecords(keyless));
            }
        }
    }
    p.state
        .append(records, now_ms)
        .map(|appended| appended.base_offset())
        .map_err(|refused| Refusal::Code(refused.code))
}

/// A message body at `version`.
pub fn encode<M: Encodable>(message: &M, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    message
        .encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("the model cannot encode its answer at v{version}: {e}"));
    buf.freeze()
}

/// A response frame for `inc` whose body is `message` at `body_version`.
pub fn frame<M: Encodable>(inc: &Incoming, message: &M, body_version: i16) -> Bytes {
    with_header(inc, &encode(message, body_version))
}

/// A response frame for `inc` with `body` (already encoded).
pub fn with_header(inc: &Incoming, body: &[u8]) -> Bytes {
    with_correlation(inc, inc.correlation_id, body)
}

/// A response frame with the header of `inc`'s answer but correlation id `correlation`.
pub fn with_correlation(inc: &Incoming, correlation: i32, body: &[u8]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation)
        .encode(&mut out, inc.api.response_header_version(inc.version))
        .expect("header");
    out.put_slice(body);
    let len = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&len.to_be_bytes());
    out.freeze()
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}
