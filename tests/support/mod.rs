//! A scripted driver for the core: it answers InitProducerId and Metadata itself and
//! lets each test answer Produce requests partition by partition, like Java's
//! `SenderTest` client mock. Shared by the integration tests.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use kacrab_idempotence::record::{self, Record};
use kacrab_idempotence::*;

pub const TOPIC: &str = "t";
/// The node the harness names as every coordinator.
pub const COORDINATOR: i32 = 9;

pub fn tp(p: i32) -> TopicPartition {
    TopicPartition::new(TOPIC, p)
}

pub fn record(value: &str) -> Record {
    Record {
        key: None,
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        headers: vec![],
        timestamp: 0,
    }
}

/// A stamped batch as seen on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wire {
    pub partition: i32,
    pub producer_id: i64,
    pub epoch: i16,
    pub base_sequence: i32,
    pub count: i32,
}

pub fn wire(r: &ProduceRequest) -> Vec<Wire> {
    r.batches
        .iter()
        .map(|b| {
            let h = record::read_header(&b.data).expect("valid batch");
            Wire {
                partition: b.partition.partition,
                producer_id: h.producer_id.0,
                epoch: h.producer_epoch.0,
                base_sequence: h.base_sequence,
                count: h.record_count,
            }
        })
        .collect()
}

pub struct Harness {
    pub p: Producer,
    pub now: Timestamp,
    /// Produce requests handed out and not yet answered, oldest first.
    pub outstanding: VecDeque<ProduceRequest>,
    pub events: Vec<Event>,
    /// The producer id the next InitProducerId gets.
    pub next_pid: ProducerIdAndEpoch,
    /// Leaders: partition -> node. Unlisted partitions are led by node 1.
    pub leaders: Vec<(i32, i32, i32)>,
    pub answer_metadata: bool,
    pub init_requests: usize,
    /// Transactional requests handed out (FindCoordinator is answered by the harness).
    pub txn_requests: VecDeque<Request>,
    pub metadata_requests: usize,
    /// The coordinators looked up (FindCoordinator, answered by the harness), in order.
    pub lookups: Vec<CoordinatorType>,
}

pub fn config() -> ProducerConfigBuilder {
    let mut b = ProducerConfig::builder();
    b.linger(Duration::ZERO)
        .retry_backoff(Duration::from_millis(50))
        .retry_backoff_max(Duration::from_millis(50))
        .request_timeout(Duration::from_millis(5000))
        .delivery_timeout(Duration::from_millis(15000));
    b
}

impl Harness {
    pub fn new(config: ProducerConfig) -> Self {
        Self::with_pid(config, ProducerIdAndEpoch::new(343434, 0))
    }

    pub fn with_pid(config: ProducerConfig, pid: ProducerIdAndEpoch) -> Self {
        let mut h = Self {
            p: Producer::new(config, Timestamp::ZERO),
            now: Timestamp::ZERO,
            outstanding: VecDeque::new(),
            events: Vec::new(),
            next_pid: pid,
            leaders: Vec::new(),
            answer_metadata: true,
            init_requests: 0,
            txn_requests: VecDeque::new(),
            metadata_requests: 0,
            lookups: Vec::new(),
        };
        h.pump();
        h
    }

    /// Sends one record to `partition` and acknowledges it at offset 0, so the partition
    /// has an ack under the current identity. The core sends one batch at a time on a
    /// partition until its first ack (a broker without state for the producer accepts
    /// any first sequence, KIP-360), so scenarios that need pipelining start warm; their
    /// sequences and offsets then start at 1.
    pub fn warm(&mut self, partition: i32) {
        self.send(partition, "warm-up");
        let r = self.outstanding.back().expect("warm-up sent").clone();
        self.respond(r.id, &[(partition, KafkaError::None, 0)]);
        self.events.clear();
    }

    /// A transactional producer (`transactional.id` = "tx-1") on brokers at
    /// `transaction.version` = `version`, with no producer id yet.
    pub fn transactional(version: i16) -> Self {
        let mut cfg = config();
        cfg.transactional_id("tx-1");
        let mut h = Self::with_pid(cfg.build().unwrap(), ProducerIdAndEpoch::NONE);
        h.p.handle_transaction_version(version);
        h
    }

    /// Drains every output, then takes the oldest transactional request the core sent.
    pub fn next_txn(&mut self) -> Request {
        self.pump();
        self.txn_requests
            .pop_front()
            .expect("a transactional request")
    }

    /// `init_transactions`, its InitProducerId answered with `id`.
    pub fn init_transactions_as(&mut self, id: ProducerIdAndEpoch) {
        self.p.init_transactions().unwrap();
        let Request::InitProducerId(r) = self.next_txn() else {
            panic!("InitProducerId expected")
        };
        self.p.handle_producer_id(r.id, Ok(id), self.now).unwrap();
        self.pump();
    }

    /// Answers the next transactional request, an AddPartitionsToTxn for `partition`
    /// alone, with `error`.
    pub fn answer_add_partitions(&mut self, partition: i32, error: KafkaError) {
        let Request::AddPartitionsToTxn(r) = self.next_txn() else {
            panic!("AddPartitionsToTxn expected")
        };
        self.p
            .handle_add_partitions(r.id, &[(tp(partition), error)], self.now)
            .unwrap();
        self.pump();
    }

    /// Answers the next transactional request, an AddPartitionsToTxn, with no error for
    /// every partition it names.
    pub fn add_all_partitions(&mut self) {
        self.answer_all_add_partitions(KafkaError::None);
    }

    /// Answers the next transactional request, an AddPartitionsToTxn, with `error` for
    /// every partition it names.
    pub fn answer_all_add_partitions(&mut self, error: KafkaError) {
        let Request::AddPartitionsToTxn(r) = self.next_txn() else {
            panic!("AddPartitionsToTxn expected")
        };
        let answers: Vec<_> = r.partitions.iter().map(|tp| (tp.clone(), error)).collect();
        self.p
            .handle_add_partitions(r.id, &answers, self.now)
            .unwrap();
        self.pump();
    }

    /// The transaction can only be aborted: it is in `AbortableError` and a commit is
    /// refused as abortable.
    pub fn assert_only_abortable(&mut self) {
        assert_eq!(
            self.p.transaction_state(),
            Some(TransactionState::AbortableError)
        );
        assert!(matches!(
            self.p.commit_transaction(),
            Err(TxnError::Abortable(_))
        ));
    }

    /// The result of the newest completion of transactional operation `op`, if any.
    pub fn completed(&self, op: TxnOp) -> Option<Result<(), TxnError>> {
        self.events.iter().rev().find_map(|e| match e {
            Event::TransactionCompleted { op: o, result } if *o == op => Some(result.clone()),
            _ => None,
        })
    }

    /// Every transactional completion so far, in order.
    pub fn txn_completions(&self) -> Vec<(TxnOp, Result<(), TxnError>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::TransactionCompleted { op, result } => Some((*op, result.clone())),
                _ => None,
            })
            .collect()
    }

    pub fn send(&mut self, partition: i32, value: &str) -> RecordId {
        let id = self
            .p
            .send(&tp(partition), &record(value), self.now)
            .expect("send accepted");
        self.pump();
        id
    }

    fn leader_of(&self, partition: i32) -> (i32, i32) {
        self.leaders
            .iter()
            .find(|l| l.0 == partition)
            .map_or((1, 0), |l| (l.1, l.2))
    }

    /// Drains every output. Returns the produce requests handed out by this call.
    pub fn pump(&mut self) -> Vec<ProduceRequest> {
        let mut out = Vec::new();
        loop {
            let mut progressed = false;
            while let Some(r) = self.p.poll_request(self.now) {
                progressed = true;
                match r {
                    Request::InitProducerId(r) if r.transactional_id.is_some() => {
                        self.init_requests += 1;
                        self.txn_requests.push_back(Request::InitProducerId(r));
                    }
                    Request::InitProducerId(r) => {
                        self.init_requests += 1;
                        let pid = self.next_pid;
                        self.p.handle_producer_id(r.id, Ok(pid), self.now).unwrap();
                    }
                    Request::FindCoordinator(r) => {
                        self.lookups.push(r.key_type);
                        self.p
                            .handle_find_coordinator(r.id, Ok(NodeId(COORDINATOR)), self.now)
                            .unwrap();
                    }
                    r @ (Request::AddPartitionsToTxn(_)
                    | Request::AddOffsetsToTxn(_)
                    | Request::TxnOffsetCommit(_)
                    | Request::EndTxn(_)) => self.txn_requests.push_back(r),
                    Request::Metadata(r) => {
                        self.metadata_requests += 1;
                        if !self.answer_metadata {
                            continue;
                        }
                        let mut md = Metadata::default();
                        for topic in &r.topics {
                            for partition in 0..8 {
                                let (node, epoch) = self.leader_of(partition);
                                md.partitions.push(PartitionMetadata::new(
                                    TopicPartition {
                                        topic: topic.clone(),
                                        partition,
                                    },
                                    Some(NodeId(node)),
                                    epoch,
                                ));
                            }
                        }
                        self.p.handle_metadata(Some(r.id), &md, self.now).unwrap();
                    }
                    Request::Produce(r) => {
                        self.outstanding.push_back(r.clone());
                        out.push(r);
                    }
                    Request::CloseConnection { .. } => {}
                }
            }
            while let Some(e) = self.p.poll_event() {
                progressed = true;
                self.events.push(e);
            }
            self.p.assert_invariants();
            if !progressed {
                return out;
            }
        }
    }

    /// Answers the outstanding request `id` with one entry per partition.
    pub fn respond(
        &mut self,
        id: RequestId,
        answers: &[(i32, KafkaError, i64)],
    ) -> Vec<ProduceRequest> {
        self.respond_with(id, answers, -1)
    }

    pub fn respond_with(
        &mut self,
        id: RequestId,
        answers: &[(i32, KafkaError, i64)],
        log_start: i64,
    ) -> Vec<ProduceRequest> {
        let pos = self
            .outstanding
            .iter()
            .position(|r| r.id == id)
            .expect("request outstanding");
        self.outstanding.remove(pos);
        let mut response = ProduceResponse::default();
        for &(partition, error, offset) in answers {
            let mut pr = if error == KafkaError::None {
                PartitionResponse::ok(tp(partition), offset)
            } else {
                PartitionResponse::error(tp(partition), error)
            };
            pr.log_start_offset = log_start;
            if error == KafkaError::None {
                pr.log_start_offset = log_start.max(0);
            }
            response.partitions.push(pr);
        }
        self.p
            .handle_produce_response(id, &response, self.now)
            .unwrap();
        self.pump()
    }

    /// Answers the oldest outstanding request, asserting it carries exactly one batch
    /// for `partition` with base sequence `seq` (SenderTest's `sendIdempotentProducerResponse`).
    pub fn respond_oldest(
        &mut self,
        partition: i32,
        seq: i32,
        error: KafkaError,
        offset: i64,
    ) -> Vec<ProduceRequest> {
        let r = self
            .outstanding
            .front()
            .expect("a request is outstanding")
            .clone();
        let w = wire(&r);
        assert_eq!(w.len(), 1, "expected one batch, got {w:?}");
        assert_eq!(
            (w[0].partition, w[0].base_sequence),
            (partition, seq),
            "oldest request"
        );
        self.respond(r.id, &[(partition, error, offset)])
    }

    pub fn fail(&mut self, id: RequestId, failure: RequestFailure) -> Vec<ProduceRequest> {
        let pos = self
            .outstanding
            .iter()
            .position(|r| r.id == id)
            .expect("request outstanding");
        self.outstanding.remove(pos);
        self.p.handle_request_failed(id, failure, self.now).unwrap();
        self.pump()
    }

    pub fn advance(&mut self, ms: u64) -> Vec<ProduceRequest> {
        self.now = self.now + Duration::from_millis(ms);
        self.p.handle_timeout(self.now);
        let out = self.pump();
        // Requests the core timed out are gone from its view.
        out
    }

    pub fn state(&self, partition: i32) -> SequenceState {
        self.p
            .sequence_state(&tp(partition))
            .expect("partition known")
    }

    pub fn delivered(&self, id: RecordId) -> Option<Option<i64>> {
        self.events.iter().find_map(|e| match e {
            Event::Delivered {
                records,
                base_offset,
                ..
            } => records
                .iter()
                .position(|&r| r == id)
                .map(|i| base_offset.map(|b| b + i as i64)),
            _ => None,
        })
    }

    pub fn failed(&self, id: RecordId) -> Option<DeliveryError> {
        self.events.iter().find_map(|e| match e {
            Event::Failed { records, error, .. } if records.contains(&id) => Some(error.clone()),
            _ => None,
        })
    }

    /// The `possibly_written` flag of the failure that carries `id`.
    pub fn possibly_written(&self, id: RecordId) -> Option<bool> {
        self.events.iter().find_map(|e| match e {
            Event::Failed {
                records,
                possibly_written,
                ..
            } if records.contains(&id) => Some(*possibly_written),
            _ => None,
        })
    }

    pub fn outcomes(&self, id: RecordId) -> usize {
        self.events
            .iter()
            .filter(|e| match e {
                Event::Delivered { records, .. } | Event::Failed { records, .. } => {
                    records.contains(&id)
                }
                _ => false,
            })
            .count()
    }
}
