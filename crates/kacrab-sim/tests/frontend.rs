//! The model broker's front end against the real client stack: a `kacrab_driver::Session`
//! talking, in memory and in real Kafka frames, to front ends of simulated brokers whose
//! "model" is a few lines here; and the front end alone against frames a
//! `kacrab_wire::Connection` encodes, for every transactional API.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kacrab_driver::{ConnId, Output, Session};
use kacrab_idempotence::{
    KafkaError, LeaderHint, Metadata, NodeId, PartitionMetadata, PartitionResponse,
    ProduceResponse, Producer, ProducerConfig, ProducerIdAndEpoch, Record, Request, RequestId,
    Timestamp, TopicPartition,
};
use kacrab_sim::frontend::{
    BrokerEndpoint, BrokerFeatures, Frontend, FrontendError, FrontendRequest,
};
use kacrab_sim::net::{ToBroker, ToClient, TxnAnswer};
use kacrab_wire::messages as wire;
use kacrab_wire::{ApiKey, Connection, FrameDecoder, Response, WireError};

const PID: ProducerIdAndEpoch = ProducerIdAndEpoch::new(4000, 0);

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

fn record(i: u8) -> Record {
    Record::from_value(Bytes::from(vec![b'v', i]), 1_700_000_000_000 + i64::from(i))
}

// The application's side: every use of the session's application API is in these three
// items (that API is being rewritten; adapt here).

/// What the application knows a record by.
type AppId = kacrab_driver::SendId;

fn new_session() -> Session {
    let config = kacrab_driver::SessionConfig::builder()
        .bootstrap_servers(["sim-broker-1:9092"])
        .client_id("frontend-test")
        .build()
        .expect("a valid configuration");
    Session::new(config, Timestamp::ZERO, 0)
}

fn send(session: &mut Session, i: u8, now: Timestamp) -> AppId {
    let r = record(i);
    let value = r.value.expect("a value");
    let record = kacrab_driver::ProducerRecord::new(tp().topic, tp().partition, value)
        .with_timestamp(r.timestamp);
    session.send(record, now)
}

/// Takes what the session reports to the application; appends each record delivered
/// with its offset. Returns whether anything was reported.
fn poll_deliveries(session: &mut Session, delivered: &mut Vec<(AppId, Option<i64>)>) -> bool {
    let mut any = false;
    while let Some(c) = session.poll_completion() {
        any = true;
        if let kacrab_driver::Completion::Record {
            id,
            outcome: Ok(md),
        } = c
        {
            delivered.push((id, md.offset));
        }
    }
    any
}

/// A model broker that knows one partition, led by `leader` at `leader_epoch`, and
/// answers Produce with `produce`.
struct Model {
    leader: NodeId,
    leader_epoch: i32,
    next_offset: i64,
    /// Produce requests seen, with the broker that read them.
    produced: Vec<(NodeId, kacrab_idempotence::ProduceRequest)>,
    /// The answer to the next Produce, if not a success.
    refuse_next: Option<PartitionResponse>,
}

impl Model {
    fn answer(&mut self, node: NodeId, msg: ToBroker) -> Option<ToClient> {
        Some(match msg {
            ToBroker::Metadata(r) => {
                let mut md = Metadata::default();
                for t in &r.topics {
                    if t.as_str() == "orders" {
                        md.partitions.push(PartitionMetadata::new(
                            tp(),
                            Some(self.leader),
                            self.leader_epoch,
                        ));
                    } else {
                        md.topic_errors
                            .push((t.clone(), KafkaError::UnknownTopicOrPartition));
                    }
                }
                ToClient::Metadata(r.id, md)
            }
            ToBroker::InitProducerId(r) => ToClient::InitProducerId(r.id, Ok(PID)),
            ToBroker::Produce(r) => {
                let id = r.id;
                let partitions: Vec<_> = r.batches.iter().map(|b| b.partition.clone()).collect();
                self.produced.push((node, r));
                let resp = match self.refuse_next.take() {
                    Some(p) => p,
                    None => {
                        let p = PartitionResponse::ok(partitions[0].clone(), self.next_offset);
                        self.next_offset += 1;
                        p
                    }
                };
                ToClient::Produce(
                    id,
                    ProduceResponse::new(vec![resp]).with_throttle(Duration::ZERO),
                )
            }
            ToBroker::Txn(_) => return None,
        })
    }
}

/// A session and the brokers' front ends, in memory: every frame written is read at once.
struct World {
    session: Session,
    frontends: BTreeMap<ConnId, Frontend>,
    brokers: Vec<BrokerEndpoint>,
    features: BrokerFeatures,
    model: Model,
    now: Timestamp,
    /// Records delivered, with their offsets, as the application learnt them.
    delivered: Vec<(AppId, Option<i64>)>,
    /// Connections opened, and ApiVersions answers the front ends gave.
    connections: usize,
    negotiated: usize,
}

impl World {
    fn new(brokers: u8, model: Model) -> Self {
        Self {
            session: new_session(),
            frontends: BTreeMap::new(),
            brokers: (1..=i32::from(brokers))
                .map(|n| BrokerEndpoint::sim(NodeId(n)))
                .collect(),
            features: BrokerFeatures {
                transaction_version: Some(0),
                features_epoch: 3,
            },
            model,
            now: Timestamp::ZERO,
            delivered: Vec::new(),
            connections: 0,
            negotiated: 0,
        }
    }

    /// Moves every output of the session to the brokers and their answers back, until
    /// nothing moves.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            while let Some(out) = self.session.poll_output(self.now) {
                moved = true;
                match out {
                    Output::Connect { conn, addr } => {
                        let node = BrokerEndpoint::parse_sim(&addr).expect("a simulated broker");
                        self.frontends
                            .insert(conn, Frontend::new(node, RequestId(conn.0 << 32)));
                        self.connections += 1;
                        self.session.handle_connected(conn, self.now);
                    }
                    Output::Transmit { conn, frame, .. } => {
                        // The in-memory socket takes every frame whole at once.
                        self.session.handle_transmitted(conn, 1, self.now);
                        let fe = self.frontends.get_mut(&conn).expect("open connection");
                        let node = fe.node();
                        let mut replies = Vec::new();
                        for req in fe
                            .handle_bytes(&frame.to_bytes())
                            .expect("a valid request frame")
                        {
                            match req {
                                FrontendRequest::ApiVersions { id, .. } => {
                                    self.negotiated += 1;
                                    replies
                                        .push(fe.answer_api_versions(id, &self.features).unwrap());
                                }
                                FrontendRequest::Model(msg) => {
                                    if let Some(answer) = self.model.answer(node, msg) {
                                        replies.push(fe.encode(&answer, &self.brokers).unwrap());
                                    }
                                }
                            }
                        }
                        for bytes in replies {
                            self.session.handle_bytes(conn, &bytes, self.now);
                        }
                    }
                    Output::Release { .. } => {}
                    Output::Close { conn, .. } => {
                        self.frontends.remove(&conn);
                    }
                }
            }
            moved |= poll_deliveries(&mut self.session, &mut self.delivered);
            if !moved {
                return;
            }
        }
    }

    /// Pumps, advancing the clock to each timeout, until `done` or a virtual second passed.
    fn run_until(&mut self, done: impl Fn(&Self) -> bool) {
        let end = self.now + Duration::from_secs(1);
        loop {
            self.pump();
            if done(self) {
                return;
            }
            let Some(t) = self.session.poll_timeout() else {
                return;
            };
            assert!(t <= end, "nothing happened within a second");
            self.now = self.now.max(t);
            self.session.handle_timeout(self.now);
        }
    }

    fn delivered(&self) -> Vec<(AppId, Option<i64>)> {
        self.delivered.clone()
    }
}

/// The batches a bare core makes of the same records sent at the same times, with the
/// same producer id: what the session's core must have put in its Produce requests.
fn batches_of_a_bare_core(sends: &[(u8, Timestamp)], leader: NodeId) -> Vec<Bytes> {
    let mut core = Producer::new(ProducerConfig::default(), Timestamp::ZERO);
    let mut now = Timestamp::ZERO;
    let mut out = Vec::new();
    let mut pending = sends.iter().peekable();
    for _ in 0..1000 {
        while let Some(&&(i, at)) = pending.peek() {
            if at > now {
                break;
            }
            core.send(&tp(), &record(i), now).expect("send accepted");
            pending.next();
        }
        while let Some(req) = core.poll_request(now) {
            match req {
                Request::InitProducerId(r) => core.handle_producer_id(r.id, Ok(PID), now).unwrap(),
                Request::Metadata(r) => {
                    let md = Metadata::new(vec![PartitionMetadata::new(tp(), Some(leader), 0)]);
                    core.handle_metadata(Some(r.id), &md, now).unwrap();
                }
                Request::Produce(r) => {
                    out.extend(r.batches.iter().map(|b| b.data.clone()));
                    let resp = ProduceResponse::new(vec![PartitionResponse::ok(tp(), 0)])
                        .with_throttle(Duration::ZERO);
                    core.handle_produce_response(r.id, &resp, now).unwrap();
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        if pending.peek().is_none() && core.poll_timeout().is_none() {
            break;
        }
        let next_send = pending.peek().map(|&&(_, at)| at);
        let next = match (core.poll_timeout(), next_send) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).expect("something to wait for"),
        };
        now = now.max(next);
        core.handle_timeout(now);
    }
    out
}

#[test]
fn a_session_negotiates_and_produces_through_the_front_end() {
    let model = Model {
        leader: NodeId(2),
        leader_epoch: 0,
        next_offset: 0,
        produced: Vec::new(),
        refuse_next: None,
    };
    let mut w = World::new(3, model);
    let ids: Vec<AppId> = (0..3)
        .map(|i| send(&mut w.session, i, Timestamp::ZERO))
        .collect();
    w.run_until(|w| w.delivered().len() == 3);

    // One ApiVersions per connection, answered at the first version tried: the
    // bootstrap connection and the leader's.
    assert_eq!((w.connections, w.negotiated), (2, 2));

    // Routed by the Metadata answer's broker list: the produce went to the leader, over a
    // connection of its own.
    assert_eq!(w.model.produced.len(), 1, "one Produce request");
    let (node, produce) = &w.model.produced[0];
    assert_eq!(*node, NodeId(2));
    assert_eq!(
        produce.node,
        NodeId(2),
        "the node is the broker that read the frame"
    );
    assert!(!produce.transaction_v2, "Produce v11 or below without TV2");
    let got: Vec<Bytes> = produce.batches.iter().map(|b| b.data.clone()).collect();
    let expected = batches_of_a_bare_core(
        &[
            (0, Timestamp::ZERO),
            (1, Timestamp::ZERO),
            (2, Timestamp::ZERO),
        ],
        NodeId(2),
    );
    assert_eq!(got, expected, "the batches are the core's, byte for byte");

    // The encoded answer made the core report the records delivered, at the offsets given.
    let delivered = w.delivered();
    assert_eq!(
        delivered,
        ids.iter()
            .enumerate()
            .map(|(i, &r)| (r, Some(i as i64)))
            .collect::<Vec<_>>()
    );
    assert!(
        w.frontends.values().all(|f| f.awaiting() == 0),
        "every request answered"
    );
}

#[test]
fn a_kip_951_leader_hint_moves_the_retry_to_the_new_leader() {
    // The first Produce reaches broker 2, which answers NOT_LEADER_OR_FOLLOWER naming
    // broker 3 at epoch 1, a broker the session has never heard of.
    let mut refusal = PartitionResponse::error(tp(), KafkaError::NotLeaderOrFollower);
    refusal.current_leader = Some(LeaderHint::new(NodeId(3), 1));
    let model = Model {
        leader: NodeId(2),
        leader_epoch: 0,
        next_offset: 10,
        produced: Vec::new(),
        refuse_next: Some(refusal),
    };
    // Metadata lists brokers 1 and 2 only: broker 3's address comes from the Produce
    // answer's node endpoints.
    let mut w = World::new(2, model);
    let id = send(&mut w.session, 7, Timestamp::ZERO);
    w.run_until(|w| !w.delivered().is_empty());

    let nodes: Vec<NodeId> = w.model.produced.iter().map(|(n, _)| *n).collect();
    assert_eq!(nodes.first(), Some(&NodeId(2)));
    assert_eq!(
        nodes.last(),
        Some(&NodeId(3)),
        "retried at the hinted leader"
    );
    let first = &w.model.produced[0].1.batches[0].data;
    let last = &w.model.produced.last().unwrap().1.batches[0].data;
    assert_eq!(first, last, "the retry is the same batch, same sequence");
    assert_eq!(w.delivered(), vec![(id, Some(10))]);
}

// ------------------------------------------------------------- the front end alone

/// A client connection and the front end of broker 5 at the other end.
struct Pair {
    client: Connection,
    fe: Frontend,
    frames: FrameDecoder,
}

impl Pair {
    fn new() -> Self {
        Self {
            client: Connection::new(Some("pair".into())),
            fe: Frontend::new(NodeId(5), RequestId(100)),
            frames: FrameDecoder::new(),
        }
    }

    /// The client writes `request` at `v`; the front end reads it.
    fn send(&mut self, request: impl Into<kacrab_wire::Request>, v: i16) -> FrontendRequest {
        let sent = self.client.encode(request, v, 0).unwrap();
        let mut got = self.fe.handle_bytes(&sent.frame.to_bytes()).unwrap();
        assert_eq!(got.len(), 1);
        got.remove(0)
    }

    fn model(&mut self, request: impl Into<kacrab_wire::Request>, v: i16) -> ToBroker {
        match self.send(request, v) {
            FrontendRequest::Model(m) => m,
            other => panic!("not for the model: {other:?}"),
        }
    }

    /// The front end answers; the client reads the answer.
    fn answer(&mut self, answer: &ToClient) -> Response {
        let frame = self
            .fe
            .encode(answer, &[BrokerEndpoint::sim(NodeId(5))])
            .unwrap();
        self.frames.extend(&frame);
        self.client
            .decode(self.frames.decode().unwrap().unwrap())
            .unwrap()
            .response
    }
}

fn txn(m: ToBroker) -> Request {
    match m {
        ToBroker::Txn(r) => r,
        other => panic!("not transactional: {other:?}"),
    }
}

#[test]
fn find_coordinator_at_v4_names_its_key_and_the_coordinator_s_address() {
    let mut p = Pair::new();
    let req = kacrab_wire::message!(wire::FindCoordinatorRequest {
        key: "txn-1".into(),
        key_type: wire::CoordinatorType::Transaction,
    });
    let Request::FindCoordinator(r) = txn(p.model(req, 4)) else {
        panic!()
    };
    assert_eq!(r.key, "txn-1");
    assert_eq!(r.key_type, kacrab_idempotence::CoordinatorType::Transaction);
    assert_eq!(r.id, RequestId(100));
    let Response::FindCoordinator(a) = p.answer(&ToClient::Txn(
        r.id,
        TxnAnswer::FindCoordinator(Ok(NodeId(7))),
    )) else {
        panic!()
    };
    assert_eq!(
        (a.key.as_deref(), a.error_code, a.node_id),
        (Some("txn-1"), 0, 7)
    );
    assert_eq!(
        (a.host.as_str(), a.port),
        ("sim-broker-7", 9092),
        "absent from the list: the simulator's naming"
    );
}

#[test]
fn transaction_version_2_is_read_from_the_versions() {
    let mut p = Pair::new();
    let end = kacrab_wire::message!(wire::EndTxnRequest {
        transactional_id: "t".into(),
        producer_id: 9,
        producer_epoch: 3,
        committed: true,
    });
    for (v, tv2) in [(4, false), (5, true)] {
        let Request::EndTxn(r) = txn(p.model(end.clone(), v)) else {
            panic!()
        };
        assert_eq!(r.transaction_v2, tv2, "EndTxn v{v}");
        assert_eq!(
            (r.producer, r.commit, r.node),
            (ProducerIdAndEpoch::new(9, 3), true, NodeId(5))
        );
        let bumped = ProducerIdAndEpoch::new(9, 4);
        let answer = ToClient::Txn(r.id, TxnAnswer::EndTxn(Ok(tv2.then_some(bumped))));
        let Response::EndTxn(a) = p.answer(&answer) else {
            panic!()
        };
        assert_eq!(a.error_code, 0);
        assert_eq!(a.producer_epoch, if tv2 { 4 } else { -1 });
    }
    let commit = kacrab_wire::message!(wire::TxnOffsetCommitRequest {
        transactional_id: "t".into(),
        group_id: "g".into(),
        producer_id: 9,
        producer_epoch: 3,
        generation_id: 2,
        member_id: "m".into(),
        group_instance_id: None,
        topics: vec![kacrab_wire::message!(wire::TxnOffsetCommitTopic {
            name: "orders".into(),
            partitions: vec![kacrab_wire::message!(wire::TxnOffsetCommitPartition {
                partition_index: 1,
                committed_offset: 55,
                committed_leader_epoch: -1,
                committed_metadata: Some("md".into()),
            })],
        })],
    });
    let Request::TxnOffsetCommit(r) = txn(p.model(commit, 5)) else {
        panic!()
    };
    assert!(r.transaction_v2);
    assert_eq!(r.group.generation_id, 2);
    assert_eq!(r.offsets.len(), 1);
    assert_eq!((r.offsets[0].offset, r.offsets[0].leader_epoch), (55, None));
    let answer =
        TxnAnswer::TxnOffsetCommit(vec![(TopicPartition::new("orders", 1), KafkaError::None)]);
    let Response::TxnOffsetCommit(a) = p.answer(&ToClient::Txn(r.id, answer)) else {
        panic!()
    };
    assert_eq!(a.topics[0].partitions[0].partition_index, 1);
    // Produce v12 is TV2.
    let produce = kacrab_wire::message!(wire::ProduceRequest {
        transactional_id: Some("t".into()),
        acks: -1,
        timeout_ms: 30_000,
        topics: vec![],
    });
    let ToBroker::Produce(r) = p.model(produce.clone(), 12) else {
        panic!()
    };
    assert!(r.transaction_v2);
    let ToBroker::Produce(r) = p.model(produce, 11) else {
        panic!()
    };
    assert!(!r.transaction_v2);
}

#[test]
fn add_partitions_and_offsets_round_trip_per_partition_errors() {
    let mut p = Pair::new();
    let req = kacrab_wire::message!(wire::AddPartitionsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 1,
        producer_epoch: 0,
        topics: vec![
            kacrab_wire::message!(wire::TopicPartitions {
                name: "a".into(),
                partitions: vec![0, 1],
            }),
            kacrab_wire::message!(wire::TopicPartitions {
                name: "b".into(),
                partitions: vec![2],
            }),
        ],
    });
    let Request::AddPartitionsToTxn(r) = txn(p.model(req, 3)) else {
        panic!()
    };
    assert_eq!(
        r.partitions,
        vec![
            TopicPartition::new("a", 0),
            TopicPartition::new("a", 1),
            TopicPartition::new("b", 2)
        ]
    );
    let errors: Vec<_> = r
        .partitions
        .iter()
        .map(|tp| (tp.clone(), KafkaError::ConcurrentTransactions))
        .collect();
    let Response::AddPartitionsToTxn(a) =
        p.answer(&ToClient::Txn(r.id, TxnAnswer::AddPartitions(errors)))
    else {
        panic!()
    };
    assert_eq!(a.topics.len(), 2);
    assert_eq!(a.topics[0].partitions.len(), 2);
    assert!(a
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .all(|p| p.error_code == KafkaError::ConcurrentTransactions.code()));

    let req = kacrab_wire::message!(wire::AddOffsetsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 1,
        producer_epoch: 0,
        group_id: "g".into(),
    });
    let Request::AddOffsetsToTxn(r) = txn(p.model(req, 4)) else {
        panic!()
    };
    assert_eq!(r.group_id, "g");
    let Response::AddOffsetsToTxn(a) = p.answer(&ToClient::Txn(
        r.id,
        TxnAnswer::AddOffsets(KafkaError::NotCoordinator),
    )) else {
        panic!()
    };
    assert_eq!(a.error_code, KafkaError::NotCoordinator.code());
}

#[test]
fn api_versions_reports_the_features_at_v3_and_none_before() {
    let mut p = Pair::new();
    let features = BrokerFeatures {
        transaction_version: Some(2),
        features_epoch: 12,
    };
    for v in [3, 2] {
        let FrontendRequest::ApiVersions { id, version } =
            p.send(wire::ApiVersionsRequest::default(), v)
        else {
            panic!()
        };
        assert_eq!(version, v);
        let frame = p.fe.answer_api_versions(id, &features).unwrap();
        p.frames.extend(&frame);
        let Response::ApiVersions(a) = p
            .client
            .decode(p.frames.decode().unwrap().unwrap())
            .unwrap()
            .response
        else {
            panic!()
        };
        let versions = kacrab_wire::Versions::from_response(&a).unwrap();
        assert_eq!(
            versions.get(ApiKey::Produce).unwrap(),
            11,
            "capped below TV2 by the client"
        );
        assert_eq!(
            versions.get(ApiKey::AddPartitionsToTxn).unwrap(),
            3,
            "the client stops at v3"
        );
        if v == 3 {
            assert_eq!(
                (
                    versions.transaction_version(),
                    versions.finalized_features_epoch()
                ),
                (2, 12)
            );
        } else {
            assert_eq!(
                (
                    versions.transaction_version(),
                    versions.finalized_features_epoch()
                ),
                (0, -1)
            );
        }
    }
}

#[test]
fn acks_0_is_not_awaited_and_stray_answers_are_refused() {
    let mut p = Pair::new();
    let produce = kacrab_wire::message!(wire::ProduceRequest {
        transactional_id: None,
        acks: 0,
        timeout_ms: 1000,
        topics: vec![],
    });
    let ToBroker::Produce(r) = p.model(produce, 9) else {
        panic!()
    };
    assert_eq!(p.fe.awaiting(), 0);
    let answer = ToClient::Produce(r.id, ProduceResponse::default());
    assert!(
        matches!(p.fe.encode(&answer, &[]), Err(FrontendError::UnknownRequest(id)) if id == r.id)
    );

    let ToBroker::Metadata(m) = p.model(wire::MetadataRequest::topics(["orders"]), 12) else {
        panic!()
    };
    assert_eq!(p.fe.request_version(m.id), Some((ApiKey::Metadata, 12)));
    let wrong = ToClient::InitProducerId(m.id, Ok(PID));
    assert!(matches!(
        p.fe.encode(&wrong, &[]),
        Err(FrontendError::WrongAnswer {
            api: ApiKey::Metadata,
            ..
        })
    ));

    let Request::EndTxn(e) = txn(p.model(wire::EndTxnRequest::default(), 3)) else {
        panic!()
    };
    let too_new = ToClient::Txn(e.id, TxnAnswer::EndTxn(Ok(Some(PID))));
    assert!(matches!(
        p.fe.encode(&too_new, &[]),
        Err(FrontendError::Unrepresentable { .. })
    ));
}

#[test]
fn frames_split_anywhere_are_read_whole_and_garbage_is_a_typed_error() {
    let mut client = Connection::new(None);
    let a = client
        .encode(wire::MetadataRequest::topics(["x"]), 9, 0)
        .unwrap()
        .frame;
    let b = client
        .encode(wire::InitProducerIdRequest::default(), 4, 0)
        .unwrap()
        .frame;
    let stream: Vec<u8> = [&a.to_bytes()[..], &b.to_bytes()[..]].concat();
    for cut in 0..stream.len() {
        let mut fe = Frontend::new(NodeId(1), RequestId(0));
        let mut got = fe.handle_bytes(&stream[..cut]).unwrap();
        got.extend(fe.handle_bytes(&stream[cut..]).unwrap());
        assert_eq!(got.len(), 2, "cut at {cut}");
        assert!(matches!(
            got[0],
            FrontendRequest::Model(ToBroker::Metadata(_))
        ));
        assert!(
            matches!(&got[1], FrontendRequest::Model(ToBroker::InitProducerId(r)) if r.id == RequestId(1))
        );
    }
    let mut fe = Frontend::new(NodeId(1), RequestId(0));
    let garbage = [0, 0, 0, 6, 0, 0, 0, 3, 0xff, 0xff];
    assert!(matches!(
        fe.handle_bytes(&garbage),
        Err(FrontendError::Wire(_))
    ));
    let mut fe = Frontend::new(NodeId(1), RequestId(0));
    assert!(matches!(
        fe.handle_bytes(&[0x80, 0, 0, 0]),
        Err(FrontendError::Wire(WireError::NegativeLength(_)))
    ));
}

#[test]
fn api_versions_too_new_for_the_front_end_is_answered_unsupported_in_v0() {
    // ApiVersions v7 from a future client: header v2, a body the front end does not read.
    let frame: &[u8] = &[
        0, 0, 0, 14, 0, 18, 0, 7, 0, 0, 0, 9, 0, 1, b'x', 0, 0xde, 0xad,
    ];
    let mut fe = Frontend::new(NodeId(1), RequestId(0));
    let got = fe.handle_bytes(frame).unwrap();
    let [FrontendRequest::ApiVersions { id, version: 7 }] = got[..] else {
        panic!("{got:?}")
    };
    let features = BrokerFeatures {
        transaction_version: Some(2),
        features_epoch: 1,
    };
    let answer = fe.answer_api_versions(id, &features).unwrap();
    // v0 header and body: UNSUPPORTED_VERSION, ApiVersions 0..=3 only.
    let expected: &[u8] = &[
        0, 0, 0, 16, 0, 0, 0, 9, 0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 3,
    ];
    assert_eq!(&answer[..], expected);
    assert_eq!(fe.awaiting(), 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Whatever a client writes, the front end returns requests or a typed error: it
    /// never panics, and one frame is at most one request.
    #[test]
    fn arbitrary_bytes_never_panic_the_front_end(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let mut fe = Frontend::new(NodeId(1), RequestId(0));
        let _ = fe.handle_bytes(&bytes);
        let mut framed = (bytes.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&bytes);
        let mut fe = Frontend::new(NodeId(1), RequestId(0));
        if let Ok(got) = fe.handle_bytes(&framed) {
            proptest::prop_assert!(got.len() <= 1);
        }
    }
}
