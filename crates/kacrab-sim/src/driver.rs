//! The driver half of the [`Cluster`]: what a real driver does with the producer's
//! outputs and the network's answers. Produce requests go on their broker's
//! connection, InitProducerId and Metadata on any live broker's; a request that
//! cannot be written is reported `NotSent`, everything in flight on a connection that
//! drops is reported `Disconnected`; on `CloseConnection` the connection's remaining
//! traffic is dropped and nothing more is reported for the produce requests the core
//! already failed; answers are fed back with their request id.

use std::fmt::Write as _;
use std::time::Duration;

use kacrab_idempotence::{Event, NodeId, Request, RequestFailure, RequestId};

use crate::checker::ViolationKind;
use crate::cluster::{BrokerNode, Cluster};
use crate::faults::FaultKind;
use crate::net::{ToBroker, ToClient, TxnAnswer};

impl Cluster {
    pub(crate) fn on_event(&mut self, event: &Event) {
        match event {
            Event::Delivered {
                partition,
                records,
                base_offset,
            } => {
                self.stats.delivered_records += records.len() as u64;
                self.trace_line(|| {
                    format!(
                        "delivered {partition} {} records at {base_offset:?}",
                        records.len()
                    )
                });
            }
            Event::Failed {
                partition,
                records,
                error,
                possibly_written,
            } => {
                self.stats.failed_records += records.len() as u64;
                self.trace_line(|| {
                    format!("failed {partition} {} records: {error} (possibly written: {possibly_written})", records.len())
                });
            }
            Event::ProducerIdChanged { id } => {
                self.stats.producer_id_changes += 1;
                self.trace_line(|| format!("producer id now {id}"));
            }
            Event::Fatal { error } => self.trace_line(|| format!("FATAL {error}")),
            Event::TransactionCompleted { op, result } => {
                self.trace_line(|| format!("transaction {op:?}: {result:?}"));
                self.txns.on_completed(*op, result);
            }
        }
        self.checker.on_event(event);
    }

    /// Routes one request from `poll_request`.
    pub(crate) fn route(&mut self, request: Request) {
        match request {
            Request::Produce(r) => {
                self.stats.produce_requests += 1;
                self.checker.on_wire(r.node.0, &r);
                if self.trace.is_some() {
                    let mut s = format!("produce req {} -> node {}:", r.id, r.node);
                    for line in self
                        .checker
                        .wire_log()
                        .iter()
                        .rev()
                        .take(r.batches.len())
                        .rev()
                    {
                        let tp = &self.partitions[line.partition as usize].tp;
                        let _ = write!(
                            s,
                            " [{tp} {}/{} seq {}+{} #{}]",
                            line.producer_id,
                            line.epoch,
                            line.base_sequence,
                            line.count,
                            line.first_index
                        );
                    }
                    self.trace_line(|| s);
                }
                let node = r.node;
                if self.broker(node).is_none() {
                    self.checker.violation(
                        ViolationKind::Protocol,
                        format!("produce to unknown node {node}"),
                    );
                    self.local.push_back((r.id, RequestFailure::NotSent));
                    return;
                }
                self.write(node, ToBroker::Produce(r));
            }
            Request::InitProducerId(r) => {
                self.stats.init_producer_id_requests += 1;
                match r.node {
                    Some(node) => self.write(node, ToBroker::InitProducerId(r)),
                    None => self.write_any(ToBroker::InitProducerId(r)),
                }
            }
            Request::Metadata(r) => {
                self.stats.metadata_requests += 1;
                self.write_any(ToBroker::Metadata(r));
            }
            Request::CloseConnection { node } => self.close_connection(node),
            // A producer without transactional.id never asks for these.
            r @ (Request::FindCoordinator(_)
            | Request::AddPartitionsToTxn(_)
            | Request::AddOffsetsToTxn(_)
            | Request::TxnOffsetCommit(_)
            | Request::EndTxn(_))
                if !self.config.producer.is_transactional() =>
            {
                self.checker.violation(
                    ViolationKind::Protocol,
                    format!(
                        "transactional request from a producer without transactional.id: {r:?}"
                    ),
                );
            }
            Request::FindCoordinator(r) => {
                self.trace_line(|| format!("req {} FindCoordinator {}", r.id, r.key));
                self.write_any(ToBroker::Txn(Request::FindCoordinator(r)));
            }
            r @ (Request::AddPartitionsToTxn(_)
            | Request::AddOffsetsToTxn(_)
            | Request::TxnOffsetCommit(_)
            | Request::EndTxn(_)) => {
                let node = match &r {
                    Request::AddPartitionsToTxn(x) => x.node,
                    Request::AddOffsetsToTxn(x) => x.node,
                    Request::TxnOffsetCommit(x) => x.node,
                    Request::EndTxn(x) => x.node,
                    _ => unreachable!(),
                };
                self.trace_line(|| format!("txn req -> node {node}: {r:?}"));
                if self.broker(node).is_none() {
                    self.checker.violation(
                        ViolationKind::Protocol,
                        format!("transactional request to unknown node {node}"),
                    );
                    self.local
                        .push_back((crate::net::txn_request_id(&r), RequestFailure::NotSent));
                    return;
                }
                self.write(node, ToBroker::Txn(r));
            }
        }
    }

    pub(crate) fn broker(&self, node: NodeId) -> Option<&BrokerNode> {
        self.brokers.iter().find(|b| b.id == node)
    }

    pub(crate) fn is_up(&self, node: NodeId) -> bool {
        self.broker(node).is_some_and(|b| b.up)
    }

    /// Writes a request for "any broker" to a live one.
    fn write_any(&mut self, msg: ToBroker) {
        let live: Vec<NodeId> = self.brokers.iter().filter(|b| b.up).map(|b| b.id).collect();
        match self.net_rng.pick(live.len()) {
            Some(i) => self.write(live[i], msg),
            None => {
                self.trace_line(|| format!("req {} not sent: no live broker", msg.id()));
                self.local.push_back((msg.id(), RequestFailure::NotSent));
            }
        }
    }

    /// Writes a request on the connection to `node`, opening it if needed.
    fn write(&mut self, node: NodeId, msg: ToBroker) {
        let id = msg.id();
        if !self.is_up(node) {
            self.trace_line(|| format!("req {id} not sent: node {node} is down"));
            self.local.push_back((id, RequestFailure::NotSent));
            return;
        }
        self.net.connect(node);
        if self.fault_rng.chance(self.rates.connection_drop) {
            self.faults.add(FaultKind::ConnectionDrop);
            self.trace_line(|| {
                format!("FAULT connection to node {node} broken on write of req {id}")
            });
            self.connection_lost(node, None);
            self.local.push_back((id, RequestFailure::NotSent));
            return;
        }
        let delay = self.one_way(node);
        self.net.send_request(node, self.now, delay, msg);
    }

    /// A one-way latency to `node`: its base latency plus jitter.
    pub(crate) fn one_way(&mut self, node: NodeId) -> Duration {
        let jitter = self.net_rng.range(0, self.config.jitter.as_micros() as u64);
        self.net.latency(node) + Duration::from_micros(jitter)
    }

    /// The connection to `node` dropped (not at the producer's request): every request
    /// in flight on it is reported `Disconnected`, and so is `current` (a request the
    /// broker had already taken off the connection).
    pub(crate) fn connection_lost(&mut self, node: NodeId, current: Option<RequestId>) {
        let mut ids: Vec<RequestId> = self
            .net
            .drop_connection(node)
            .into_iter()
            .map(|l| l.id)
            .collect();
        ids.extend(current);
        ids.sort();
        self.trace_line(|| format!("connection to node {node} dropped, lost {ids:?}"));
        for id in ids {
            self.local.push_back((id, RequestFailure::Disconnected));
        }
    }

    /// `Request::CloseConnection`: the producer already failed every produce request on
    /// the connection; other requests on it are reported `Disconnected`.
    fn close_connection(&mut self, node: NodeId) {
        self.stats.close_connections += 1;
        let lost = self.net.drop_connection(node);
        self.trace_line(|| {
            format!("close connection to node {node} (producer asked), dropping {lost:?}")
        });
        for l in lost {
            if l.produce {
                // The core must have failed it already; feeding the failure again must be
                // refused and change nothing.
                let r = self.producer.handle_request_failed(
                    l.id,
                    RequestFailure::Disconnected,
                    self.now,
                );
                if r.is_ok() {
                    self.checker.violation(
                        ViolationKind::Protocol,
                        format!(
                            "produce request {} still outstanding after CloseConnection({node})",
                            l.id
                        ),
                    );
                }
            } else {
                self.local.push_back((l.id, RequestFailure::Disconnected));
            }
        }
    }

    pub(crate) fn report_failure(&mut self, id: RequestId, failure: RequestFailure) {
        match failure {
            RequestFailure::NotSent => self.stats.not_sent_reports += 1,
            RequestFailure::Disconnected => self.stats.disconnected_reports += 1,
        }
        self.trace_line(|| format!("report req {id} {failure:?}"));
        // An InitProducerId or Metadata the producer already timed out is unknown to
        // it by now; that is fine. Produce requests are never timed out without a
        // CloseConnection, which removes them from the network first.
        let _ = self.producer.handle_request_failed(id, failure, self.now);
    }

    pub(crate) fn deliver_response(&mut self, node: NodeId) {
        let Some(t) = self.net.pop_response(node) else {
            return;
        };
        self.stats.responses += 1;
        let now = self.now;
        match t.msg {
            ToClient::Produce(id, resp) => {
                self.trace_line(|| {
                    let mut s = format!("response req {id} from node {node}:");
                    for p in &resp.partitions {
                        let _ = write!(s, " [{} {} @{}]", p.partition, p.error, p.base_offset);
                    }
                    if !resp.throttle.is_zero() {
                        let _ = write!(s, " throttle {:?}", resp.throttle);
                    }
                    s
                });
                if let Err(e) = self.producer.handle_produce_response(id, &resp, now) {
                    self.checker.violation(
                        ViolationKind::Protocol,
                        format!("produce response refused: {e}"),
                    );
                }
            }
            ToClient::InitProducerId(id, result) => {
                self.trace_line(|| format!("response req {id}: producer id {result:?}"));
                let _ = self.producer.handle_producer_id(id, result, now);
            }
            ToClient::Metadata(id, md) => {
                self.trace_line(|| {
                    let mut s = format!("response req {id}: metadata");
                    for p in &md.partitions {
                        let _ = write!(
                            s,
                            " {}={:?}/{}",
                            p.partition,
                            p.leader.map(|n| n.0),
                            p.leader_epoch
                        );
                    }
                    s
                });
                let _ = self.producer.handle_metadata(Some(id), &md, now);
            }
            ToClient::Txn(id, answer) => {
                self.trace_line(|| format!("response req {id}: {answer:?}"));
                // An answer to a request the core already timed out is unknown to it.
                let _ = match answer {
                    TxnAnswer::FindCoordinator(r) => {
                        self.producer.handle_find_coordinator(id, r, now)
                    }
                    TxnAnswer::AddPartitions(r) => self.producer.handle_add_partitions(id, &r, now),
                    TxnAnswer::AddOffsets(e) => self.producer.handle_add_offsets(id, e, now),
                    TxnAnswer::TxnOffsetCommit(r) => {
                        self.producer.handle_txn_offset_commit(id, &r, now)
                    }
                    TxnAnswer::EndTxn(r) => self.producer.handle_end_txn(id, r, now),
                };
            }
        }
        self.after_input();
    }
}
