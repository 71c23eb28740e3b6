//! Transactions in the world: the model
//! [`TransactionCoordinator`](crate::coordinator::TransactionCoordinator) answering
//! transactional requests on its node, and the partition leaders' checks of
//! transactional Produce with it. The coordinator's timing and faults are in
//! `txn_faults`; the transactional script is the cluster's (`cluster::script`).
//!
//! The coordinator lives on one broker ([`SimConfig::coordinator_node`](crate::SimConfig));
//! FindCoordinator (any live broker) names it; every other transactional request sent
//! to another node is answered NOT_COORDINATOR. When its node crashes the coordinator
//! moves to another live broker with a bumped coordinator epoch (its state is kept: the
//! transaction log is replicated), and loads it first. Markers are written into the model
//! partitions a drawn delay after the coordinator prepares a transaction
//! (`txn_faults`).

use kacrab_idempotence::{
    InitProducerIdRequest, KafkaError, NodeId, ProduceRequest, ProducerIdAndEpoch, Request,
    TopicPartition,
};

use super::{SimPartition, World};
use crate::batch;
use crate::broker::{TxnMarker, NONE, UNKNOWN_TOPIC_OR_PARTITION};
use crate::checker::ViolationKind;
use crate::coordinator::{produce_error_from_coordinator, Partition, TxnState};
use crate::faults::FaultKind;
use crate::net::{txn_request_id, ToClient, TxnAnswer};
use crate::observers::Observers;

fn partition_of(tp: &TopicPartition) -> Partition {
    (tp.topic.as_str().to_owned(), tp.partition)
}

/// A marker writer over the cluster's partitions.
pub(crate) fn marker_writer(
    parts: &mut [SimPartition],
    now_ms: u64,
) -> impl FnMut(&Partition, &TxnMarker) -> Result<(), i16> + '_ {
    move |tp, marker| match parts
        .iter_mut()
        .find(|p| p.tp.topic.as_str() == tp.0 && p.tp.partition == tp.1)
    {
        Some(p) => p
            .state
            .append_marker(marker, now_ms)
            .map(|_| ())
            .map_err(|e| e.code),
        None => Err(UNKNOWN_TOPIC_OR_PARTITION),
    }
}

fn codes(v: Vec<(Partition, i16)>, tps: &[TopicPartition]) -> Vec<(TopicPartition, KafkaError)> {
    v.into_iter()
        .map(|((t, p), code)| {
            let tp = tps
                .iter()
                .find(|tp| tp.topic.as_str() == t && tp.partition == p)
                .cloned()
                .unwrap_or_else(|| TopicPartition::new(t.as_str(), p));
            (tp, KafkaError::from_code(code))
        })
        .collect()
}

impl World {
    /// A second producer's InitProducerId, answered directly by the coordinator (on a
    /// reliable path) after it wrote its outstanding markers.
    pub(crate) fn rival_init_producer_id(
        &mut self,
        obs: &mut Observers,
        r: &InitProducerIdRequest,
        txn_id: &str,
    ) -> Result<ProducerIdAndEpoch, KafkaError> {
        self.write_due_markers(obs, true);
        self.init_at_coordinator(r, txn_id)
    }

    /// Writes the coordinator's outstanding markers if they are due.
    fn deliver_markers(&mut self, obs: &mut Observers) {
        self.write_due_markers(obs, false);
    }

    /// The coordinator moves off a crashed `node` (to another live broker).
    pub(crate) fn coordinator_node_crashed(&mut self, obs: &mut Observers, node: NodeId) {
        if node != self.coordinator_node {
            return;
        }
        if let Some(to) = self
            .brokers
            .iter()
            .find(|b| b.up && b.id != node)
            .map(|b| b.id)
        {
            self.move_coordinator(obs, to);
        }
    }

    /// InitProducerId with a transactional id, at `node`.
    pub(crate) fn coordinator_init_producer_id(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        r: &InitProducerIdRequest,
        txn_id: &str,
    ) -> Result<ProducerIdAndEpoch, KafkaError> {
        self.draw_coordinator_faults(obs, node, txn_id);
        let refused = if node != self.coordinator_node {
            Some(KafkaError::NotCoordinator)
        } else if self.coordinator_loading() {
            Some(KafkaError::CoordinatorLoadInProgress)
        } else if self.fault_rng.chance(self.rates.coordinator_error) {
            self.faults.add(FaultKind::CoordinatorError);
            Some(KafkaError::CoordinatorLoadInProgress)
        } else {
            None
        };
        let result = match refused {
            Some(e) => Err(e),
            None => {
                self.deliver_markers(obs);
                let fences_late = self.fences_a_late_transaction(node, txn_id);
                let result = self.init_at_coordinator(r, txn_id);
                if fences_late {
                    self.txn_env.record_late_fence(txn_id);
                    obs.trace(self.now, || {
                        format!("InitProducerId fenced a transaction of {txn_id} that a late request opened or that a late InitProducerId met")
                    });
                }
                result
            }
        };
        if let Err(e) = &result {
            self.count_coordinator_answer(e.code());
        }
        result
    }

    fn init_at_coordinator(
        &mut self,
        r: &InitProducerIdRequest,
        txn_id: &str,
    ) -> Result<ProducerIdAndEpoch, KafkaError> {
        let now_ms = self.now.as_millis();
        let timeout_ms = u64::try_from(r.transaction_timeout.as_millis()).unwrap_or(u64::MAX);
        let expected = Some((r.current.id.0, r.current.epoch.0));
        let result = {
            let mut w = marker_writer(&mut self.partitions, now_ms);
            self.coordinator
                .init_producer_id(txn_id, timeout_ms, expected, now_ms, &mut w)
                .map(|(pid, epoch)| ProducerIdAndEpoch::new(pid, epoch))
                .map_err(KafkaError::from_code)
        };
        self.schedule_markers();
        result
    }

    /// A transactional request reaches `node`.
    pub(crate) fn answer_txn(&mut self, obs: &mut Observers, node: NodeId, req: Request) {
        let id = txn_request_id(&req);
        let now_ms = self.now.as_millis();
        let unavailable = self.fault_rng.chance(self.rates.coordinator_error);
        if unavailable {
            self.faults.add(FaultKind::CoordinatorError);
        }
        if let Some(txn_id) = transactional_id_of(&req) {
            self.draw_coordinator_faults(obs, node, &txn_id);
            self.check_request_version(obs, &req, &txn_id);
        }
        let refuse = match (&req, unavailable) {
            (Request::FindCoordinator(_), true) => Some(KafkaError::CoordinatorNotAvailable),
            (Request::FindCoordinator(_), false) => None,
            (_, _) if node != self.coordinator_node => Some(KafkaError::NotCoordinator),
            (_, _) if self.coordinator_loading() => Some(KafkaError::CoordinatorLoadInProgress),
            (_, true) => Some(KafkaError::CoordinatorLoadInProgress),
            _ => None,
        };
        if !matches!(req, Request::FindCoordinator(_)) && refuse.is_none() {
            self.deliver_markers(obs);
        }
        let tps: Vec<TopicPartition> = self.partitions.iter().map(|p| p.tp.clone()).collect();
        let late_add = self.late_add(node, &req);
        let answer = match req {
            Request::FindCoordinator(_) => {
                TxnAnswer::FindCoordinator(refuse.map_or(Ok(self.coordinator_node), Err))
            }
            Request::AddPartitionsToTxn(r) => TxnAnswer::AddPartitions(match refuse {
                Some(e) => r.partitions.iter().map(|tp| (tp.clone(), e)).collect(),
                None => {
                    let parts: Vec<Partition> = r.partitions.iter().map(partition_of).collect();
                    let v = self.coordinator.add_partitions(
                        &r.transactional_id,
                        r.producer.id.0,
                        r.producer.epoch.0,
                        &parts,
                        now_ms,
                    );
                    codes(v, &tps)
                }
            }),
            Request::AddOffsetsToTxn(r) => TxnAnswer::AddOffsets(match refuse {
                Some(e) => e,
                None => KafkaError::from_code(self.coordinator.add_offsets(
                    &r.transactional_id,
                    r.producer.id.0,
                    r.producer.epoch.0,
                    &r.group_id,
                    now_ms,
                )),
            }),
            Request::TxnOffsetCommit(r) => TxnAnswer::TxnOffsetCommit(match refuse {
                Some(e) => r.offsets.iter().map(|o| (o.partition.clone(), e)).collect(),
                None => {
                    let offsets: Vec<(Partition, i64)> = r
                        .offsets
                        .iter()
                        .map(|o| (partition_of(&o.partition), o.offset))
                        .collect();
                    let offset_tps: Vec<TopicPartition> =
                        r.offsets.iter().map(|o| o.partition.clone()).collect();
                    let v = self.coordinator.txn_offset_commit(
                        &r.transactional_id,
                        &r.group.group_id,
                        r.producer.id.0,
                        r.producer.epoch.0,
                        &offsets,
                        r.transaction_v2,
                        now_ms,
                    );
                    codes(v, &offset_tps)
                }
            }),
            Request::EndTxn(r) => TxnAnswer::EndTxn(match refuse {
                Some(e) => Err(e),
                None => {
                    let mut w = marker_writer(&mut self.partitions, now_ms);
                    self.coordinator
                        .end_txn(
                            &r.transactional_id,
                            r.producer.id.0,
                            r.producer.epoch.0,
                            r.commit,
                            r.transaction_v2,
                            now_ms,
                            &mut w,
                        )
                        .map(|o| o.map(|(pid, epoch)| ProducerIdAndEpoch::new(pid, epoch)))
                        .map_err(KafkaError::from_code)
                }
            }),
            other => {
                obs.checker_mut().violation(
                    ViolationKind::Protocol,
                    format!("not a transactional request: {other:?}"),
                );
                return;
            }
        };
        if let Some((txn_id, was_open)) = late_add {
            self.record_late_open(obs, &txn_id, was_open);
        }
        self.schedule_markers();
        for code in answer_codes(&answer) {
            self.count_coordinator_answer(code);
        }
        obs.trace(self.now, || format!("node {node} txn req {id}: {answer:?}"));
        self.respond(obs, node, id, ToClient::Txn(id, answer), &[]);
    }

    /// For an AddPartitionsToTxn or AddOffsetsToTxn applied after its connection was
    /// closed (the client timed it out and retried it): its transactional id and
    /// whether that id's transaction was open before it.
    fn late_add(&self, node: NodeId, req: &Request) -> Option<(String, bool)> {
        let txn_id = match req {
            Request::AddPartitionsToTxn(r) => &r.transactional_id,
            Request::AddOffsetsToTxn(r) => &r.transactional_id,
            _ => return None,
        };
        let late = !self.net.is_current(node, self.reply_generation);
        let open = self.coordinator.state(txn_id) == Some(TxnState::Ongoing);
        late.then(|| (txn_id.clone(), open))
    }

    /// Whether an InitProducerId for `txn_id` arriving at `node` now fences an
    /// `Ongoing` transaction that only a late request explains (`TxnEnv::late_fenced`):
    /// the InitProducerId itself is late (read before its connection closed, applied
    /// after the client retried it and began its next transaction), or the open
    /// transaction is one a late AddPartitionsToTxn/AddOffsetsToTxn opened.
    fn fences_a_late_transaction(&self, node: NodeId, txn_id: &str) -> bool {
        let Some(meta) = self.coordinator.metadata(txn_id) else {
            return false;
        };
        let late_request = !self.net.is_current(node, self.reply_generation);
        meta.state == TxnState::Ongoing
            && (late_request || self.txn_env.late_opened(txn_id) == Some(meta.start_ms))
    }

    /// Remembers a transaction the late request just opened (`TxnEnv::late_opened`).
    fn record_late_open(&mut self, obs: &mut Observers, txn_id: &str, was_open: bool) {
        let Some(meta) = self.coordinator.metadata(txn_id) else {
            return;
        };
        if was_open || meta.state != TxnState::Ongoing {
            return;
        }
        let start_ms = meta.start_ms;
        self.txn_env.record_late_open(txn_id, start_ms);
        obs.trace(self.now, || {
            format!("a late request opened a transaction of {txn_id}: it hangs until its timeout")
        });
    }

    /// The partition leader's check of a transactional batch with the coordinator
    /// (TV1: verification; TV2: the implicit add of Produce v12), asked only when
    /// `verify` (no transaction of the producer open on the partition at the batch's
    /// epoch: `ReplicaManager.handleProduceAppend` verifies only the partitions that
    /// got a verification guard). `Some(error)` refuses the batch.
    pub(crate) fn txn_produce_check(
        &mut self,
        obs: &mut Observers,
        r: &ProduceRequest,
        data: &[u8],
        tp: &TopicPartition,
        verify: bool,
    ) -> Option<KafkaError> {
        let txn_id = r.transactional_id.as_deref()?;
        let h = batch::decode_header(data).ok()?;
        if !h.is_transactional() {
            return None;
        }
        let part = partition_of(tp);
        self.check_version_latch(
            obs,
            txn_id,
            h.producer_id,
            h.producer_epoch,
            r.transaction_v2,
            "Produce",
        );
        if !verify {
            return None;
        }
        let code = if !self.is_up(self.coordinator_node) {
            crate::coordinator::COORDINATOR_NOT_AVAILABLE
        } else if self.coordinator_loading() {
            crate::coordinator::COORDINATOR_LOAD_IN_PROGRESS
        } else if r.transaction_v2 {
            let now_ms = self.now.as_millis();
            self.coordinator.add_partition_implicit(
                txn_id,
                h.producer_id,
                h.producer_epoch,
                &part,
                now_ms,
            )
        } else {
            self.coordinator
                .verify_partition(txn_id, h.producer_id, h.producer_epoch, &part)
        };
        if code == NONE {
            return None;
        }
        self.count_coordinator_answer(code);
        let version = if r.transaction_v2 { 12 } else { 11 };
        let error = KafkaError::from_code(produce_error_from_coordinator(code, version));
        obs.trace(self.now, || {
            format!("{tp}: coordinator check of txn batch failed: {code} -> {error}")
        });
        Some(error)
    }
}

/// The transactional id a coordinator request names (`None` for FindCoordinator).
fn transactional_id_of(req: &Request) -> Option<String> {
    match req {
        Request::AddPartitionsToTxn(r) => Some(r.transactional_id.clone()),
        Request::AddOffsetsToTxn(r) => Some(r.transactional_id.clone()),
        Request::TxnOffsetCommit(r) => Some(r.transactional_id.clone()),
        Request::EndTxn(r) => Some(r.transactional_id.clone()),
        _ => None,
    }
}

/// Every error code in a coordinator's answer, once each.
fn answer_codes(answer: &TxnAnswer) -> Vec<i16> {
    let mut codes: Vec<i16> = match answer {
        TxnAnswer::FindCoordinator(r) => r.as_ref().err().map(|e| e.code()).into_iter().collect(),
        TxnAnswer::AddPartitions(v) | TxnAnswer::TxnOffsetCommit(v) => {
            v.iter().map(|(_, e)| e.code()).collect()
        }
        TxnAnswer::AddOffsets(e) => vec![e.code()],
        TxnAnswer::EndTxn(r) => r.as_ref().err().map(|e| e.code()).into_iter().collect(),
    };
    codes.sort_unstable();
    codes.dedup();
    codes
}
