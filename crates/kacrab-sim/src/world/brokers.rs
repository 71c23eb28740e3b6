//! The broker side of the world: what a request does when it reaches a broker,
//! the faults drawn there, crashes, restarts and leadership moves.
//!
//! The per-partition rules (dedup, epoch and sequence checks) are the model broker's
//! ([`PartitionState::append`](crate::broker::PartitionState::append)); this module
//! only decides whether this broker leads the partition, which lie it tells around the
//! append, and what the response looks like on the wire.

use std::time::Duration;

use kacrab_idempotence::{
    Acks, KafkaError, LeaderHint, Metadata, MetadataRequest, NodeId, PartitionMetadata,
    PartitionResponse, ProduceRequest, ProduceResponse, ProducerIdAndEpoch, RequestId,
};

use super::replication::Wait;
use super::World;
use crate::batch;
use crate::broker;
use crate::failure_bound::FaultScope;
use crate::faults::{FaultKind, PartitionFault, Script};
use crate::net::{ToBroker, ToClient};
use crate::observers::Observers;
use crate::verification::CoordinatorCheck;

impl World {
    /// The request at the head of `node`'s connection reaches the broker: it is lost
    /// with the connection, held for a while (applied later, see [`crate::net`]), or
    /// applied now. Returns whether there was one.
    pub(crate) fn deliver_request(&mut self, obs: &mut Observers, node: NodeId) -> bool {
        let Some(t) = self.net.pop_request(node) else {
            return false;
        };
        let id = t.msg.id();
        let gps = match &t.msg {
            ToBroker::Produce(r) => self.request_partitions(r),
            _ => Vec::new(),
        };
        let scripted = self
            .take_script(
                |s| matches!(s, Script::LoseRequest { partition } if gps.contains(partition)),
            )
            .is_some();
        if scripted || self.fault_rng.chance(self.rates.request_lost) {
            self.faults.add(FaultKind::RequestLost);
            obs.trace(self.now, || {
                format!("FAULT req {id} lost before node {node} applied it")
            });
            self.connection_lost(obs, node, Some(id));
        } else if let Some(by) = self.draw_hold(&gps) {
            self.faults.add(FaultKind::ProcessingDelay);
            obs.trace(self.now, || {
                format!("FAULT node {node} read req {id}, applies it in {by:?}")
            });
            self.net.hold(node, self.now, by, t.msg);
        } else {
            let generation = self.net.connection(node).map_or(0, |c| c.generation);
            self.apply_request(obs, node, generation, t.msg, &gps);
        }
        true
    }

    /// How long the broker holds a request it just read, if it does.
    fn draw_hold(&mut self, gps: &[usize]) -> Option<Duration> {
        let scripted = self.take_script(
            |s| matches!(s, Script::HoldRequest { partition, .. } if gps.contains(partition)),
        );
        if let Some(Script::HoldRequest { by, .. }) = scripted {
            return Some(by);
        }
        if !self.fault_rng.chance(self.rates.processing_delay) {
            return None;
        }
        let max = self.config.processing_delay_max.as_micros() as u64;
        Some(Duration::from_micros(self.fault_rng.range(1, max.max(1))))
    }

    /// The broker applies the earliest request it held, whether or not the connection
    /// it came on is still open.
    /// Returns whether there was one.
    pub(crate) fn apply_held(&mut self, obs: &mut Observers) -> bool {
        let Some(t) = self.net.take_application() else {
            return false;
        };
        let (node, generation, msg) = (t.msg.node, t.msg.generation, t.msg.request);
        let id = msg.id();
        let late = !self.net.is_current(node, generation);
        if late {
            obs.stats_mut().late_applications += 1;
        }
        obs.trace(self.now, || {
            format!(
                "node {node} applies held req {id}{}",
                if late {
                    " (its connection is gone)"
                } else {
                    ""
                }
            )
        });
        let gps = match &msg {
            ToBroker::Produce(r) => self.request_partitions(r),
            _ => Vec::new(),
        };
        self.apply_request(obs, node, generation, msg, &gps);
        true
    }

    /// Applies a request `node` read from its connection of generation `generation`.
    fn apply_request(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        generation: u64,
        msg: ToBroker,
        gps: &[usize],
    ) {
        self.reply_generation = generation;
        match msg {
            ToBroker::Produce(r) => self.broker_produce(obs, node, &r, gps),
            ToBroker::InitProducerId(r) if r.transactional_id.is_some() => {
                let txn_id = r.transactional_id.clone().unwrap_or_default();
                let result = self.coordinator_init_producer_id(obs, node, &r, &txn_id);
                obs.trace(self.now, || {
                    format!(
                        "node {node} InitProducerId({txn_id}) req {}: {result:?}",
                        r.id
                    )
                });
                self.respond(obs, node, r.id, ToClient::InitProducerId(r.id, result), &[]);
            }
            ToBroker::Txn(req) => self.answer_txn(obs, node, req),
            ToBroker::InitProducerId(r) => {
                let result = if self.fault_rng.chance(self.rates.coordinator_error) {
                    self.faults.add(FaultKind::CoordinatorError);
                    Err(KafkaError::CoordinatorNotAvailable)
                } else {
                    let pid = self.next_producer_id;
                    self.next_producer_id += 1;
                    Ok(ProducerIdAndEpoch::new(
                        pid,
                        self.config.initial_producer_epoch,
                    ))
                };
                obs.trace(self.now, || {
                    format!("node {node} InitProducerId req {}: {result:?}", r.id)
                });
                self.respond(obs, node, r.id, ToClient::InitProducerId(r.id, result), &[]);
            }
            ToBroker::Metadata(r) => {
                let md = self.metadata(obs, &r);
                self.respond(obs, node, r.id, ToClient::Metadata(r.id, md), &[]);
            }
        }
    }

    /// `id`, if the request being applied still has its connection (the driver reports
    /// it `Disconnected` when that drops); `None` for a late application, which the
    /// driver reported when its connection dropped.
    fn still_connected(&self, node: NodeId, id: RequestId) -> Option<RequestId> {
        self.net
            .is_current(node, self.reply_generation)
            .then_some(id)
    }

    fn request_partitions(&self, r: &ProduceRequest) -> Vec<usize> {
        r.batches
            .iter()
            .filter_map(|b| self.partition_index(&b.partition))
            .collect()
    }

    pub(crate) fn take_script(&mut self, pred: impl Fn(&Script) -> bool) -> Option<Script> {
        let pos = self.scripts.iter().position(|(s, _)| pred(s))?;
        let (script, times) = &mut self.scripts[pos];
        let script = *script;
        *times -= 1;
        if *times == 0 {
            self.scripts.remove(pos);
        }
        Some(script)
    }

    fn broker_produce(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        r: &ProduceRequest,
        gps: &[usize],
    ) {
        let refused = self
            .take_script(
                |s| matches!(s, Script::RefuseRequest { partition } if gps.contains(partition)),
            )
            .is_some();
        if refused || self.fault_rng.chance(self.rates.fatal_error) {
            // KafkaApis.handleProduceRequest: an idempotent produce without
            // IDEMPOTENT_WRITE on the cluster is refused whole, before any append.
            self.faults.add(FaultKind::ClusterAuthorizationFailed);
            // Fatal: every record pending now or sent later fails.
            self.fault_window(obs, FaultScope::Everywhere, Duration::MAX);
            obs.trace(self.now, || {
                format!(
                    "FAULT node {node} refuses req {}: CLUSTER_AUTHORIZATION_FAILED",
                    r.id
                )
            });
            let resp = ProduceResponse::new(
                r.batches
                    .iter()
                    .map(|b| {
                        PartitionResponse::error(
                            b.partition.clone(),
                            KafkaError::ClusterAuthorizationFailed,
                        )
                    })
                    .collect(),
            );
            if r.acks != Acks::None {
                self.respond(obs, node, r.id, ToClient::Produce(r.id, resp), gps);
            }
            return;
        }
        if self.fault_rng.chance(self.rates.leader_move) {
            self.random_leader_move(obs);
        }
        let crash = self.fault_rng.chance(self.rates.broker_crash) && self.live_brokers() > 1;
        let crash_before = crash && self.fault_rng.chance(0.5);
        if crash_before {
            self.random_crash(obs, node, r.id, "before applying");
            return;
        }
        let (resp, waits) = self.answer_produce(obs, node, r, gps);
        if crash {
            self.random_crash(obs, node, r.id, "after applying");
            return;
        }
        if r.acks == Acks::None {
            return;
        }
        if r.acks == Acks::All && !self.committed(&waits) {
            self.park(obs, node, r, resp, gps, waits.clone());
            if self.fault_rng.chance(self.rates.purgatory_leader_move) {
                if let Some(w) = self.fault_rng.pick(waits.len()) {
                    let gp = waits[w].gp();
                    if let Some(to) = self.elect(gp, node) {
                        self.faults.add(FaultKind::LeaderMove);
                        let tp = self.partitions[gp].tp.clone();
                        obs.trace(self.now, || {
                            format!("FAULT leadership of {tp} moves while req {} waits", r.id)
                        });
                        self.change_leader(obs, gp, to);
                    }
                }
            }
            self.complete_delayed(obs);
            return;
        }
        self.respond(obs, node, r.id, ToClient::Produce(r.id, resp), gps);
    }

    fn random_crash(&mut self, obs: &mut Observers, node: NodeId, current: RequestId, when: &str) {
        let current = self.still_connected(node, current);
        let lo = self.config.downtime_min.as_micros() as u64;
        let hi = self.config.downtime_max.as_micros() as u64;
        let downtime = Duration::from_micros(self.fault_rng.range(lo, hi));
        obs.trace(self.now, || {
            format!("FAULT node {node} crashes {when} req {current:?}, down for {downtime:?}")
        });
        self.crash_inner(obs, node, current, Some(downtime));
        self.maybe_drop_every_connection_with(obs, node);
    }

    /// Sends a response back on `node`'s connection, drawing the response faults.
    pub(crate) fn respond(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        id: RequestId,
        msg: ToClient,
        gps: &[usize],
    ) {
        self.respond_on(obs, node, self.reply_generation, id, msg, gps);
    }

    /// [`World::respond`] for a request read from `node`'s connection of generation
    /// `generation` (a produce answered from purgatory, after other requests were
    /// applied): the answer goes back only on that connection, if it is still open.
    pub(crate) fn respond_on(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        generation: u64,
        id: RequestId,
        msg: ToClient,
        gps: &[usize],
    ) {
        if !self.net.is_current(node, generation) {
            obs.trace(self.now, || {
                format!("node {node} answers req {id}: its connection is gone")
            });
            return;
        }
        let scripted_loss = self
            .take_script(|s| matches!(s, Script::LoseResponseAfterApply { partition } if gps.contains(partition)))
            .is_some();
        if scripted_loss || self.fault_rng.chance(self.rates.response_lost) {
            self.faults.add(FaultKind::ResponseLostAfterApply);
            obs.trace(self.now, || {
                format!("FAULT node {node} applied req {id}, response lost, connection drops")
            });
            self.connection_lost(obs, node, Some(id));
            return;
        }
        let mut delay = self.one_way(node);
        let timeout = self.config.producer.request_timeout();
        let scripted = self.take_script(
            |s| matches!(s, Script::DelayResponse { partition, .. } if gps.contains(partition)),
        );
        if let Some(Script::DelayResponse { by, .. }) = scripted {
            let kind = if by >= timeout {
                FaultKind::ResponseTimeout
            } else {
                FaultKind::ResponseDelay
            };
            self.faults.add(kind);
            delay += by;
        } else if self.fault_rng.chance(self.rates.response_timeout) {
            self.faults.add(FaultKind::ResponseTimeout);
            let half = (timeout.as_micros() as u64 / 2).max(1);
            delay += timeout + Duration::from_micros(self.fault_rng.range(1, half));
        } else if self.fault_rng.chance(self.rates.response_delay) {
            self.faults.add(FaultKind::ResponseDelay);
            let max = self.config.response_delay_max.as_micros() as u64;
            delay += Duration::from_micros(self.fault_rng.range(1, max.max(1)));
        }
        if matches!(msg, ToClient::Txn(..)) {
            if let Some(late) = self.draw_late_coordinator_answer() {
                obs.trace(self.now, || {
                    format!("FAULT node {node} holds its coordinator answer to req {id}")
                });
                delay += late;
            }
        }
        obs.trace(self.now, || {
            format!("node {node} answers req {id}, arriving in {delay:?}")
        });
        self.net.send_response(node, self.now, delay, msg);
    }

    /// Kafka's periodic `removeExpiredProducers` (every
    /// `producer.id.expiration.check.interval.ms`): runs the last check due by now, at
    /// its own time, on every partition. Called before each step, so no append sees a
    /// state a due check would have dropped.
    pub(crate) fn run_expiry_checks(&mut self, obs: &mut Observers) {
        if self.now < self.next_expiry_check {
            return;
        }
        let interval = self
            .config
            .producer_id_expiration_check_interval
            .max(Duration::from_millis(1));
        let behind = self.now.as_micros() - self.next_expiry_check.as_micros();
        let ticks = behind / interval.as_micros() as u64;
        let check = self.next_expiry_check
            + Duration::from_micros((interval.as_micros() as u64).saturating_mul(ticks));
        self.next_expiry_check = check + interval;
        let check_ms = check.as_millis();
        let expiration =
            u64::try_from(self.config.producer_id_expiration.as_millis()).unwrap_or(u64::MAX);
        for gp in 0..self.partitions.len() {
            let gone = self.partitions[gp]
                .state
                .expire_producers(check_ms, expiration);
            // Every replica runs the check on its own state (a follower elected later
            // must not remember what its leader forgot).
            for f in &mut self.partitions[gp].followers {
                f.state.expire_producers(check_ms, expiration);
            }
            for pid in gone {
                self.faults.add(FaultKind::ProducerStateExpiry);
                self.fault_window(obs, FaultScope::Partition(gp), Duration::ZERO);
                let tp = self.partitions[gp].tp.clone();
                obs.trace(self.now, || {
                    format!(
                        "FAULT {tp}: producer {pid} expired (idle past producer.id.expiration.ms)"
                    )
                });
            }
        }
    }

    /// The broker's answer to a produce request, partition by partition, and what an
    /// acks=all answer must wait for (the batches appended or found duplicate).
    fn answer_produce(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        r: &ProduceRequest,
        gps: &[usize],
    ) -> (ProduceResponse, Vec<Wait>) {
        let mut waits = Vec::new();
        let now_ms = self.now.as_millis();
        let mut resp = ProduceResponse::default();
        for pb in &r.batches {
            let tp = pb.partition.clone();
            let Some(gp) = self
                .partition_index(&tp)
                .filter(|_| self.topic_exists(&tp.topic))
            else {
                resp.partitions.push(PartitionResponse::error(
                    tp,
                    KafkaError::UnknownTopicOrPartition,
                ));
                continue;
            };
            if self.awaits_first_leader(gp) {
                // Being created: no broker leads it yet, and none can name a leader.
                resp.partitions.push(PartitionResponse::error(
                    tp,
                    KafkaError::NotLeaderOrFollower,
                ));
                continue;
            }
            let (leader, leader_epoch) =
                (self.partitions[gp].leader, self.partitions[gp].leader_epoch);
            let hint = LeaderHint::new(leader, leader_epoch);
            if leader != node {
                obs.stats_mut().stale_leader_answers += 1;
                let mut pr = PartitionResponse::error(tp, KafkaError::NotLeaderOrFollower);
                if self.is_up(leader) && self.fault_rng.chance(0.5) {
                    pr.current_leader = Some(hint);
                }
                resp.partitions.push(pr);
                continue;
            }
            if pb.data.len() > self.config.max_message_bytes {
                self.faults.add(FaultKind::MessageTooLarge);
                self.fault_window(obs, FaultScope::Partition(gp), Duration::ZERO);
                let len = pb.data.len();
                obs.trace(self.now, || {
                    format!("node {node} refuses {tp}: batch of {len} bytes, MESSAGE_TOO_LARGE")
                });
                let mut pr = PartitionResponse::error(tp, KafkaError::MessageTooLarge);
                pr.log_start_offset = self.partitions[gp].state.log_start_offset();
                resp.partitions.push(pr);
                continue;
            }
            if let Some(pr) = self.refuse_opening(obs, node, gp, &pb.data) {
                resp.partitions.push(pr);
                continue;
            }
            let shrunk = self.partitions[gp]
                .isr_shrunk_until
                .is_some_and(|t| t > self.now);
            let fault = match self.take_script(
                |s| matches!(s, Script::PartitionError { partition, .. } if *partition == gp),
            ) {
                Some(Script::PartitionError { fault, .. }) => Some(fault),
                _ if shrunk => Some(PartitionFault::NotEnoughReplicas),
                _ if self.fault_rng.chance(self.rates.message_too_large) => {
                    Some(PartitionFault::MessageTooLarge)
                }
                _ if self.fault_rng.chance(self.rates.rejected_batch) => {
                    Some(match self.fault_rng.below(4) {
                        0 => PartitionFault::InvalidRecord,
                        1 => PartitionFault::InvalidTimestamp,
                        2 => PartitionFault::TopicAuthorizationFailed,
                        _ => PartitionFault::CorruptMessage,
                    })
                }
                _ if self.fault_rng.chance(self.rates.isr_shrink) => {
                    let lo = self.config.isr_shrink_min.as_micros() as u64;
                    let hi = self.config.isr_shrink_max.as_micros() as u64;
                    let until = self.now + Duration::from_micros(self.fault_rng.range(lo, hi));
                    self.partitions[gp].isr_shrunk_until = Some(until);
                    self.faults.add(FaultKind::IsrShrink);
                    let length = until.saturating_duration_since(self.now);
                    self.fault_window(obs, FaultScope::Partition(gp), length);
                    obs.trace(self.now, || {
                        format!("FAULT ISR of {tp} shrinks until {until:?}")
                    });
                    Some(PartitionFault::NotEnoughReplicasAfterAppend)
                }
                _ if self.fault_rng.chance(self.rates.partition_error) => {
                    Some(match self.fault_rng.below(4) {
                        0 => PartitionFault::NotLeader {
                            hint: self.fault_rng.chance(0.5),
                        },
                        1 => PartitionFault::NotEnoughReplicas,
                        2 => PartitionFault::NotEnoughReplicasAfterAppend,
                        _ => PartitionFault::RequestTimedOutAfterAppend,
                    })
                }
                _ if self.live_brokers() > 1
                    && self.fault_rng.chance(self.rates.not_leader_after_append) =>
                {
                    Some(PartitionFault::NotLeaderAfterAppend)
                }
                _ => None,
            };
            if let Some(f) = fault {
                self.faults.add(f.kind());
                if f.fails_records() {
                    self.fault_window(obs, FaultScope::Partition(gp), Duration::ZERO);
                }
                if let Some(error) = f.refusal() {
                    let hint = match f {
                        PartitionFault::NotLeader { hint: h } => h.then_some(hint),
                        _ => None,
                    };
                    obs.trace(self.now, || {
                        format!("FAULT node {node} answers {tp}: {error}")
                    });
                    let mut pr = PartitionResponse::error(tp, error);
                    pr.log_start_offset = self.partitions[gp].state.log_start_offset();
                    pr.current_leader = hint;
                    resp.partitions.push(pr);
                    continue;
                }
            }
            // KIP-890 part 1: a stale epoch is refused before verification starts; a
            // transaction already open here at the batch's epoch needs no coordinator.
            let state = &mut self.partitions[gp].state;
            let verify = match state.begin_append(&pb.data, now_ms, r.transaction_v2) {
                Ok(check) => check != CoordinatorCheck::None,
                Err(e) => {
                    obs.stats_mut().invalid_epoch_answers += 1;
                    let mut pr = PartitionResponse::error(tp, KafkaError::from_code(e.code));
                    pr.log_start_offset = state.log_start_offset();
                    resp.partitions.push(pr);
                    continue;
                }
            };
            if let Some(error) = self.txn_produce_check(obs, r, &pb.data, &tp, verify) {
                let mut pr = PartitionResponse::error(tp, error);
                pr.log_start_offset = self.partitions[gp].state.log_start_offset();
                resp.partitions.push(pr);
                continue;
            }
            let state = &mut self.partitions[gp].state;
            let header = batch::decode_header(&pb.data).ok();
            let unknown = header
                .is_some_and(|h| h.producer_id >= 0 && state.producer(h.producer_id).is_none());
            let refuse = self.config.strict_first_sequence
                && unknown
                && header.is_some_and(|h| h.base_sequence != 0);
            let appended = if refuse {
                Err(broker::AppendError {
                    code: broker::OUT_OF_ORDER_SEQUENCE_NUMBER,
                    log_start_offset: state.log_start_offset(),
                    reason: "unknown producer must start at sequence 0 (strict_first_sequence)",
                })
            } else {
                state.append(&pb.data, now_ms)
            };
            let appended_new = matches!(appended, Ok(o) if !o.is_duplicate());
            let pr = match appended {
                Ok(outcome) => {
                    if outcome.is_duplicate() {
                        obs.stats_mut().duplicate_batches += 1;
                    } else {
                        obs.stats_mut().appended_batches += 1;
                        if unknown && header.is_some_and(|h| h.base_sequence != 0) {
                            obs.stats_mut().unknown_producer_accepts += 1;
                            let seq = header.map_or(0, |h| h.base_sequence);
                            obs.trace(self.now, || format!("node {node} knows no state for the producer on {tp}: sequence {seq} accepted (KIP-360)"));
                        }
                    }
                    match fault {
                        Some(PartitionFault::NotLeaderAfterAppend) => {
                            // Leadership lost while the produce waited for replication,
                            // to a follower that had fetched the batch (see
                            // `FaultRates::purgatory_leader_move` for one that had not).
                            if let Some(to) = self.elect(gp, node) {
                                self.catch_up(obs, gp, to);
                                self.change_leader(obs, gp, to);
                            }
                            let offset = outcome.base_offset();
                            obs.trace(self.now, || {
                                format!(
                                    "FAULT node {node} appended {tp} at {offset}, lost leadership, answers NOT_LEADER_OR_FOLLOWER"
                                )
                            });
                            let mut pr =
                                PartitionResponse::error(tp, KafkaError::NotLeaderOrFollower);
                            pr.log_start_offset = outcome.log_start_offset();
                            pr
                        }
                        Some(f) => {
                            let error = match f {
                                PartitionFault::RequestTimedOutAfterAppend => {
                                    KafkaError::RequestTimedOut
                                }
                                _ => KafkaError::NotEnoughReplicasAfterAppend,
                            };
                            obs.trace(self.now, || {
                                format!(
                                    "FAULT node {node} appended {tp} at {}, answers {error}",
                                    outcome.base_offset()
                                )
                            });
                            let mut pr = PartitionResponse::error(tp, error);
                            pr.log_start_offset = outcome.log_start_offset();
                            pr
                        }
                        None => {
                            waits.push(Wait::new(
                                resp.partitions.len(),
                                gp,
                                leader_epoch,
                                outcome.last_offset(),
                            ));
                            let mut pr = PartitionResponse::ok(tp, outcome.base_offset());
                            pr.log_start_offset = outcome.log_start_offset();
                            pr
                        }
                    }
                }
                Err(e) => {
                    match e.code {
                        broker::OUT_OF_ORDER_SEQUENCE_NUMBER => {
                            obs.stats_mut().out_of_order_answers += 1
                        }
                        broker::INVALID_PRODUCER_EPOCH => {
                            obs.stats_mut().invalid_epoch_answers += 1
                        }
                        _ => {}
                    }
                    let mut pr = PartitionResponse::error(tp, KafkaError::from_code(e.code));
                    pr.log_start_offset = e.log_start_offset;
                    pr
                }
            };
            resp.partitions.push(pr);
            if appended_new {
                self.schedule_fetches(obs, gp);
            }
        }
        let scripted = self.take_script(
            |s| matches!(s, Script::Throttle { partition, .. } if gps.contains(partition)),
        );
        if let Some(Script::Throttle { by, .. }) = scripted {
            self.faults.add(FaultKind::Throttle);
            resp.throttle = by;
        } else if self.fault_rng.chance(self.rates.throttle) {
            self.faults.add(FaultKind::Throttle);
            resp.throttle = Duration::from_millis(self.fault_rng.range(1, 100));
        }
        (resp, waits)
    }

    /// Leaders of every partition of the requested topics, as the cluster sees them now
    /// (or, with a stale-metadata fault, one partition as it was before its last
    /// leadership change).
    fn metadata(&mut self, obs: &mut Observers, r: &MetadataRequest) -> Metadata {
        let mut md = Metadata::default();
        let stale = if self.fault_rng.chance(self.rates.stale_metadata) {
            self.fault_rng.pick(self.partitions.len()).filter(|&gp| {
                self.partitions[gp].previous_leader.is_some()
                    && r.topics.contains(&self.partitions[gp].tp.topic)
            })
        } else {
            None
        };
        if let Some(gp) = stale {
            self.faults.add(FaultKind::StaleMetadata);
            let tp = self.partitions[gp].tp.clone();
            obs.trace(self.now, || {
                format!("FAULT metadata reports the previous leader of {tp}")
            });
        }
        for topic in &r.topics {
            if !self.topic_exists(topic) {
                obs.trace(self.now, || {
                    format!("metadata: {topic} does not exist (yet)")
                });
                md.topic_errors
                    .push((topic.clone(), KafkaError::UnknownTopicOrPartition));
                continue;
            }
            for (gp, p) in self.partitions.iter().enumerate() {
                if &p.tp.topic != topic {
                    continue;
                }
                let (leader, leader_epoch) = match p.previous_leader {
                    Some(prev) if stale == Some(gp) => prev,
                    _ => (p.leader, p.leader_epoch),
                };
                let elected = !self.awaits_first_leader(gp);
                md.partitions.push(PartitionMetadata::new(
                    p.tp.clone(),
                    (elected && self.is_up(leader)).then_some(leader),
                    leader_epoch,
                ));
            }
        }
        md
    }

    fn live_brokers(&self) -> usize {
        self.brokers.iter().filter(|b| b.up).count()
    }

    fn random_leader_move(&mut self, obs: &mut Observers) {
        let Some(gp) = self.fault_rng.pick(self.partitions.len()) else {
            return;
        };
        let Some(to) = self.elect(gp, self.partitions[gp].leader) else {
            return;
        };
        self.faults.add(FaultKind::LeaderMove);
        self.change_leader(obs, gp, to);
    }

    /// Moves partition `gp`'s leadership to `to` (a leadership move without a crash),
    /// once `to` has caught up with the leader (a reassignment waits for it). Nothing
    /// happens if `to` is down, already leads, or can not get in sync (the leader is
    /// down): only an in-sync replica is ever elected.
    pub fn move_leader(&mut self, obs: &mut Observers, gp: usize, to: NodeId) {
        if !self.is_up(to) || self.partitions[gp].leader == to {
            return;
        }
        if !self.catch_up(obs, gp, to) {
            let tp = self.partitions[gp].tp.clone();
            obs.trace(self.now, || {
                format!("node {to} is not in sync on {tp}: no leadership move")
            });
            return;
        }
        self.faults.add(FaultKind::LeaderMove);
        self.change_leader(obs, gp, to);
    }

    /// Crashes `node` (no automatic restart): its connection drops and its partitions
    /// move to other live brokers.
    pub fn crash(&mut self, obs: &mut Observers, node: NodeId) {
        self.crash_inner(obs, node, None, None);
    }

    fn crash_inner(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        current: Option<RequestId>,
        restart_after: Option<Duration>,
    ) {
        self.faults.add(FaultKind::BrokerCrash);
        let now = self.now;
        // Its partitions are offline or moving until it restarts (a crash with no
        // restart scheduled lasts until the heal).
        self.fault_window(
            obs,
            FaultScope::Everywhere,
            restart_after.unwrap_or(Duration::MAX),
        );
        if let Some(b) = self.brokers.iter_mut().find(|b| b.id == node) {
            b.up = false;
            b.restart_at = restart_after.map(|d| now + d);
        }
        self.connection_lost(obs, node, current);
        let held = self.net.crash(node);
        obs.trace(self.now, || {
            format!("node {node} loses the requests it held: {held:?}")
        });
        self.coordinator_node_crashed(obs, node);
        self.replicas_crashed(node);
        for gp in 0..self.partitions.len() {
            if self.partitions[gp].leader == node {
                if let Some(to) = self.elect(gp, node) {
                    self.change_leader(obs, gp, to);
                } else {
                    let tp = self.partitions[gp].tp.clone();
                    obs.trace(self.now, || {
                        format!("{tp} is offline: no live in-sync replica")
                    });
                }
            }
        }
        self.complete_delayed(obs);
    }

    /// Restarts a crashed `node`: its replicas reload producer state (snapshot plus
    /// replay) and catch up. It leads only the partitions that stayed offline on it,
    /// until leadership moves back to it.
    pub fn restart(&mut self, obs: &mut Observers, node: NodeId) {
        let Some(b) = self.brokers.iter_mut().find(|b| b.id == node) else {
            return;
        };
        if b.up {
            return;
        }
        b.up = true;
        b.restart_at = None;
        obs.trace(self.now, || format!("node {node} restarted"));
        self.replicas_restarted(obs, node);
    }

    /// Restarts every crashed broker.
    pub fn restart_all(&mut self, obs: &mut Observers) {
        let down: Vec<NodeId> = self
            .brokers
            .iter()
            .filter(|b| !b.up)
            .map(|b| b.id)
            .collect();
        for node in down {
            self.restart(obs, node);
        }
    }

    /// Ends every fault (the start of a quiet phase): no more random faults, scripted
    /// ones dropped, crashed brokers restarted, ISR shrink episodes over. Messages
    /// already delayed on the network keep their delay.
    pub fn heal(&mut self, obs: &mut Observers) {
        self.set_fault_rates(crate::faults::FaultRates::NONE);
        self.clear_scripts();
        self.restart_all(obs);
        for p in &mut self.partitions {
            p.isr_shrunk_until = None;
        }
        self.finish_topic_creation(obs);
        obs.trace(self.now, || "faults stop".to_string());
    }
}
