//! The simulated network: one TCP-like connection per broker, each a FIFO of requests
//! travelling to the broker and a FIFO of responses travelling back, every message
//! stamped with its delivery time.
//!
//! The lies are told by the [`Cluster`](crate::Cluster), which decides delays and drops;
//! this module only keeps the two rules a real connection keeps: messages on one
//! connection arrive in the order they were written, and when a connection drops,
//! everything still in it is gone.
//!
//! Between "read off the connection" and "applied" a request may wait on the broker
//! (Kafka's `RequestChannel` queue, a produce waiting on a slow disk): a *held* request.
//! A held request does not belong to the connection any more: when the connection drops
//! (the client timed out and closed it, or the network broke it), the broker still
//! applies it later, and only its response is lost (Kafka's `SocketServer` drops the
//! response of a closed connection, `KafkaApis` has already handled the request). Only
//! a request the broker had not read yet is lost with its connection, and a crash
//! loses the held ones. While a request of a connection is held, the broker reads
//! nothing more from that connection (`SocketServer` mutes a channel until the
//! response to its current request is sent), so on one connection application order
//! is send order; across connections (a dropped one and its successor, or two brokers)
//! it is not.

use std::collections::VecDeque;
use std::time::Duration;

use kacrab_idempotence::{
    InitProducerIdRequest, KafkaError, Metadata, MetadataRequest, NodeId, ProduceRequest,
    ProduceResponse, ProducerIdAndEpoch, Request, RequestId, Timestamp, TopicPartition,
};

/// A request on its way to a broker.
#[derive(Clone, Debug)]
pub enum ToBroker {
    /// Produce.
    Produce(ProduceRequest),
    /// InitProducerId.
    InitProducerId(InitProducerIdRequest),
    /// Metadata.
    Metadata(MetadataRequest),
    /// A transactional request (FindCoordinator, AddPartitionsToTxn, AddOffsetsToTxn,
    /// TxnOffsetCommit, EndTxn), as the core asked for it.
    Txn(Request),
}

impl ToBroker {
    /// The request id.
    #[must_use]
    pub fn id(&self) -> RequestId {
        match self {
            ToBroker::Produce(r) => r.id,
            ToBroker::InitProducerId(r) => r.id,
            ToBroker::Metadata(r) => r.id,
            ToBroker::Txn(r) => txn_request_id(r),
        }
    }

    /// Whether this is a produce request.
    #[must_use]
    pub fn is_produce(&self) -> bool {
        matches!(self, ToBroker::Produce(_))
    }
}

/// A response on its way back to the client.
#[derive(Clone, Debug)]
pub enum ToClient {
    /// The answer to a produce request.
    Produce(RequestId, ProduceResponse),
    /// The answer to InitProducerId.
    InitProducerId(RequestId, Result<ProducerIdAndEpoch, KafkaError>),
    /// The answer to Metadata.
    Metadata(RequestId, Metadata),
    /// The answer to a transactional request.
    Txn(RequestId, TxnAnswer),
}

/// The answer to a [`ToBroker::Txn`] request.
#[derive(Clone, Debug)]
pub enum TxnAnswer {
    /// FindCoordinator: the coordinator's node.
    FindCoordinator(Result<NodeId, KafkaError>),
    /// AddPartitionsToTxn: one error per partition.
    AddPartitions(Vec<(TopicPartition, KafkaError)>),
    /// AddOffsetsToTxn.
    AddOffsets(KafkaError),
    /// TxnOffsetCommit: one error per partition.
    TxnOffsetCommit(Vec<(TopicPartition, KafkaError)>),
    /// EndTxn: the new identity under TV2.
    EndTxn(Result<Option<ProducerIdAndEpoch>, KafkaError>),
}

/// The id of a transactional request (any other request's id too).
#[must_use]
pub fn txn_request_id(r: &Request) -> RequestId {
    match r {
        Request::Produce(r) => r.id,
        Request::InitProducerId(r) => r.id,
        Request::Metadata(r) => r.id,
        Request::FindCoordinator(r) => r.id,
        Request::AddPartitionsToTxn(r) => r.id,
        Request::AddOffsetsToTxn(r) => r.id,
        Request::TxnOffsetCommit(r) => r.id,
        Request::EndTxn(r) => r.id,
        Request::CloseConnection { .. } => RequestId(u64::MAX),
    }
}

impl ToClient {
    /// The id of the request answered.
    #[must_use]
    pub fn id(&self) -> RequestId {
        match self {
            ToClient::Produce(id, _)
            | ToClient::InitProducerId(id, _)
            | ToClient::Metadata(id, _)
            | ToClient::Txn(id, _) => *id,
        }
    }

    /// Whether this answers a produce request.
    #[must_use]
    pub fn is_produce(&self) -> bool {
        matches!(self, ToClient::Produce(..))
    }
}

/// A message in flight with its delivery time.
#[derive(Clone, Debug)]
pub struct Timed<T> {
    /// When it arrives.
    pub at: Timestamp,
    /// Global write order, to break ties deterministically.
    pub seq: u64,
    /// The message.
    pub msg: T,
}

/// A request that was in flight on a connection when it dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    /// The request.
    pub id: RequestId,
    /// Whether it was a produce request.
    pub produce: bool,
    /// Whether the broker applied it or will (its response was lost, not the request).
    pub applied: bool,
}

/// A request the broker read off a connection and has not applied yet.
#[derive(Clone, Debug)]
pub struct Held {
    /// The broker holding it.
    pub node: NodeId,
    /// The generation of the connection it was read from: the response goes back only
    /// while that connection is still open.
    pub generation: u64,
    /// The request.
    pub request: ToBroker,
}

/// One connection from the client to a broker.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    /// Incremented on every (re)connect.
    pub generation: u64,
    to_broker: VecDeque<Timed<ToBroker>>,
    to_client: VecDeque<Timed<ToClient>>,
    /// Arrival time of the last request written (FIFO floor).
    last_request_at: Timestamp,
    /// Arrival time of the last response written (FIFO floor).
    last_response_at: Timestamp,
    /// A produce request the broker read and holds in purgatory (acks=all waiting
    /// for replication). The broker reads nothing more from this connection until
    /// it answers (Kafka mutes the channel while a request is processed).
    parked: Option<RequestId>,
    /// The broker reads nothing from this connection before this time: it answered
    /// with a throttle time and muted the channel for it (`SocketServer.Processor`,
    /// `StartThrottlingResponse`/`EndThrottlingResponse`, KIP-219).
    throttled_until: Timestamp,
}

impl Connection {
    /// Requests and responses still in flight.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.to_broker.len() + self.to_client.len() + usize::from(self.parked.is_some())
    }
}

/// Which way a message travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to broker.
    ToBroker,
    /// Broker to client.
    ToClient,
}

/// The network: a connection slot per broker (node ids `1..=n`), open or not.
#[derive(Clone, Debug)]
pub struct Net {
    conns: Vec<Option<Connection>>,
    latency: Vec<Duration>,
    generations: Vec<u64>,
    /// Requests read by their broker and applied at their `at` (see the module
    /// documentation). At most one per (node, generation): a held request mutes its
    /// connection.
    held: Vec<Timed<Held>>,
    next_seq: u64,
}

impl Net {
    /// A network to `brokers` brokers with these one-way base latencies (one per broker).
    #[must_use]
    pub fn new(latency: Vec<Duration>) -> Self {
        let n = latency.len();
        Self {
            conns: vec![None; n],
            latency,
            generations: vec![0; n],
            held: Vec::new(),
            next_seq: 0,
        }
    }

    fn slot(node: NodeId) -> usize {
        usize::try_from(node.0 - 1).expect("node ids start at 1")
    }

    /// The one-way base latency to `node`.
    #[must_use]
    pub fn latency(&self, node: NodeId) -> Duration {
        self.latency[Self::slot(node)]
    }

    /// Changes the one-way base latency to `node`.
    pub fn set_latency(&mut self, node: NodeId, latency: Duration) {
        self.latency[Self::slot(node)] = latency;
    }

    /// Whether a connection to `node` is open.
    #[must_use]
    pub fn is_open(&self, node: NodeId) -> bool {
        self.conns[Self::slot(node)].is_some()
    }

    /// The connection to `node`, if open.
    #[must_use]
    pub fn connection(&self, node: NodeId) -> Option<&Connection> {
        self.conns[Self::slot(node)].as_ref()
    }

    /// Opens a connection to `node` if none is open. Returns its generation.
    pub fn connect(&mut self, node: NodeId) -> u64 {
        let s = Self::slot(node);
        if self.conns[s].is_none() {
            self.generations[s] += 1;
            self.conns[s] = Some(Connection {
                generation: self.generations[s],
                ..Connection::default()
            });
        }
        self.generations[s]
    }

    /// Writes a request on the (open) connection to `node`, arriving after `delay`
    /// but never before a request written earlier on the same connection.
    pub fn send_request(&mut self, node: NodeId, now: Timestamp, delay: Duration, msg: ToBroker) {
        let seq = self.bump_seq();
        let c = self.conns[Self::slot(node)]
            .as_mut()
            .expect("connection open");
        let at = (now + delay).max(c.last_request_at);
        c.last_request_at = at;
        c.to_broker.push_back(Timed { at, seq, msg });
    }

    /// Writes a response on the (open) connection to `node`, arriving after `delay`
    /// but never before a response written earlier on the same connection.
    pub fn send_response(&mut self, node: NodeId, now: Timestamp, delay: Duration, msg: ToClient) {
        let seq = self.bump_seq();
        let c = self.conns[Self::slot(node)]
            .as_mut()
            .expect("connection open");
        let at = (now + delay).max(c.last_response_at);
        c.last_response_at = at;
        if let ToClient::Produce(_, r) = &msg {
            c.throttled_until = c.throttled_until.max(now + r.throttle);
        }
        c.to_client.push_back(Timed { at, seq, msg });
    }

    /// The open connection to `node` goes silent until `until`: nothing on it arrives
    /// before then, either way (a proxy holding it, a peer that stopped reading), and it
    /// stays open; what the broker answers meanwhile waits behind the silence too (the
    /// FIFO floors). Returns its generation, `None` when no connection is open.
    pub fn silence(&mut self, node: NodeId, until: Timestamp) -> Option<u64> {
        let c = self.conns[Self::slot(node)].as_mut()?;
        for t in &mut c.to_broker {
            t.at = t.at.max(until);
        }
        for t in &mut c.to_client {
            t.at = t.at.max(until);
        }
        c.last_request_at = c.last_request_at.max(until);
        c.last_response_at = c.last_response_at.max(until);
        Some(c.generation)
    }

    /// The produce requests the client still waits on over the open connection to
    /// `node`: not yet read by the broker, held or parked by it, or answered but the
    /// answer not yet delivered.
    #[must_use]
    pub fn unanswered_produce(&self, node: NodeId) -> Vec<RequestId> {
        let Some(c) = self.connection(node) else {
            return Vec::new();
        };
        let held = self
            .held
            .iter()
            .filter(|h| h.msg.node == node && h.msg.generation == c.generation)
            .filter(|h| h.msg.request.is_produce())
            .map(|h| h.msg.request.id());
        c.to_broker
            .iter()
            .filter(|t| t.msg.is_produce())
            .map(|t| t.msg.id())
            .chain(held)
            .chain(c.parked)
            .chain(
                c.to_client
                    .iter()
                    .filter(|t| t.msg.is_produce())
                    .map(|t| t.msg.id()),
            )
            .collect()
    }

    fn bump_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// The earliest pending delivery: its time, node and direction.
    #[must_use]
    pub fn next_delivery(&self) -> Option<(Timestamp, NodeId, Direction)> {
        let mut best: Option<(Timestamp, u64, NodeId, Direction)> = None;
        for (i, c) in self.conns.iter().enumerate() {
            let Some(c) = c else { continue };
            let node = NodeId(i as i32 + 1);
            // Held for processing or parked in purgatory: the broker reads no further.
            let muted = self.is_muted(node, c.generation) || c.parked.is_some();
            let heads = [
                c.to_broker
                    .front()
                    .filter(|_| !muted)
                    .map(|t| (t.at.max(c.throttled_until), t.seq, Direction::ToBroker)),
                c.to_client
                    .front()
                    .map(|t| (t.at, t.seq, Direction::ToClient)),
            ];
            for (at, seq, dir) in heads.into_iter().flatten() {
                if best.is_none_or(|(bat, bseq, ..)| (at, seq) < (bat, bseq)) {
                    best = Some((at, seq, node, dir));
                }
            }
        }
        best.map(|(at, _, node, dir)| (at, node, dir))
    }

    fn is_muted(&self, node: NodeId, generation: u64) -> bool {
        self.held
            .iter()
            .any(|h| h.msg.node == node && h.msg.generation == generation)
    }

    /// The broker read `request` off its (open) connection to `node` and holds it until
    /// `now + delay`; the connection is muted until then.
    pub fn hold(&mut self, node: NodeId, now: Timestamp, delay: Duration, request: ToBroker) {
        let seq = self.bump_seq();
        let generation = self.connection(node).expect("connection open").generation;
        debug_assert!(
            !self.is_muted(node, generation),
            "one held request per connection"
        );
        self.held.push(Timed {
            at: now + delay,
            seq,
            msg: Held {
                node,
                generation,
                request,
            },
        });
    }

    /// When the earliest held request is applied.
    #[must_use]
    pub fn next_application(&self) -> Option<Timestamp> {
        self.held.iter().map(|h| h.at).min()
    }

    /// Takes the earliest held request (ties in hold order).
    pub fn take_application(&mut self) -> Option<Timed<Held>> {
        let pos = (0..self.held.len()).min_by_key(|&i| (self.held[i].at, self.held[i].seq))?;
        Some(self.held.remove(pos))
    }

    /// Requests held by brokers.
    #[must_use]
    pub fn held(&self) -> &[Timed<Held>] {
        &self.held
    }

    /// Whether the connection of generation `generation` to `node` is still open (a
    /// response to a request read from it can still be written).
    #[must_use]
    pub fn is_current(&self, node: NodeId, generation: u64) -> bool {
        self.connection(node)
            .is_some_and(|c| c.generation == generation)
    }

    /// `node` crashed: the requests it held are never applied. Returns them.
    pub fn crash(&mut self, node: NodeId) -> Vec<Held> {
        let (gone, kept): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|h| h.msg.node == node);
        self.held = kept;
        gone.into_iter().map(|h| h.msg).collect()
    }

    /// Takes the request at the head of `node`'s connection.
    pub fn pop_request(&mut self, node: NodeId) -> Option<Timed<ToBroker>> {
        self.conns[Self::slot(node)].as_mut()?.to_broker.pop_front()
    }

    /// Takes the response at the head of `node`'s connection.
    pub fn pop_response(&mut self, node: NodeId) -> Option<Timed<ToClient>> {
        self.conns[Self::slot(node)].as_mut()?.to_client.pop_front()
    }

    /// Drops the connection to `node`. Returns every request still in flight on it
    /// (requests not yet read by the broker, the request it holds, whose response can not
    /// come back any more, and responses not yet read by the client), by request id.
    pub fn drop_connection(&mut self, node: NodeId) -> Vec<Lost> {
        let Some(c) = self.conns[Self::slot(node)].take() else {
            return Vec::new();
        };
        let held = self
            .held
            .iter()
            .filter(|h| h.msg.node == node && h.msg.generation == c.generation)
            .map(|h| Lost {
                id: h.msg.request.id(),
                produce: h.msg.request.is_produce(),
                applied: true,
            });
        let mut lost: Vec<Lost> = held
            .chain(c.to_broker.iter().map(|t| Lost {
                id: t.msg.id(),
                produce: t.msg.is_produce(),
                applied: false,
            }))
            .chain(c.to_client.iter().map(|t| Lost {
                id: t.msg.id(),
                produce: t.msg.is_produce(),
                applied: true,
            }))
            .chain(c.parked.map(|id| Lost {
                id,
                produce: true,
                applied: true,
            }))
            .collect();
        lost.sort_by_key(|l| l.id);
        lost
    }

    /// The broker holds request `id` read from `node`'s (open) connection and reads
    /// no more from it until [`Net::unpark`].
    pub fn park(&mut self, node: NodeId, id: RequestId) {
        if let Some(c) = self.conns[Self::slot(node)].as_mut() {
            c.parked = Some(id);
        }
    }

    /// The broker answers the request it held on `node`'s connection: returns it if
    /// the connection is still open with generation `generation`.
    pub fn unpark(&mut self, node: NodeId, generation: u64) -> Option<RequestId> {
        let c = self.conns[Self::slot(node)].as_mut()?;
        if c.generation != generation {
            return None;
        }
        c.parked.take()
    }

    /// Messages in flight on every connection.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.conns.iter().flatten().map(Connection::in_flight).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(id: u64) -> ToBroker {
        ToBroker::Metadata(MetadataRequest::new(RequestId(id), vec![]))
    }

    #[test]
    fn fifo_per_connection_and_earliest_first() {
        let mut net = Net::new(vec![Duration::from_millis(10), Duration::from_millis(1)]);
        net.connect(NodeId(1));
        net.connect(NodeId(2));
        let t0 = Timestamp::ZERO;
        net.send_request(NodeId(1), t0, Duration::from_millis(10), md(1));
        // Written later with a shorter delay: still behind request 1 on its connection.
        net.send_request(NodeId(1), t0, Duration::from_millis(2), md(2));
        net.send_request(NodeId(2), t0, Duration::from_millis(1), md(3));
        let (at, node, dir) = net.next_delivery().unwrap();
        assert_eq!(
            (at, node, dir),
            (Timestamp::from_millis(1), NodeId(2), Direction::ToBroker)
        );
        assert_eq!(net.pop_request(NodeId(2)).unwrap().msg.id(), RequestId(3));
        let first = net.pop_request(NodeId(1)).unwrap();
        let second = net.pop_request(NodeId(1)).unwrap();
        assert_eq!(first.msg.id(), RequestId(1));
        assert_eq!(second.msg.id(), RequestId(2));
        assert!(second.at >= first.at);
    }

    #[test]
    fn drop_loses_everything_in_flight() {
        let mut net = Net::new(vec![Duration::from_millis(1)]);
        let g1 = net.connect(NodeId(1));
        net.send_request(NodeId(1), Timestamp::ZERO, Duration::from_millis(1), md(5));
        net.send_response(
            NodeId(1),
            Timestamp::ZERO,
            Duration::from_millis(1),
            ToClient::Metadata(RequestId(4), Metadata::default()),
        );
        let lost = net.drop_connection(NodeId(1));
        assert_eq!(lost.len(), 2);
        assert_eq!(
            lost[0],
            Lost {
                id: RequestId(4),
                produce: false,
                applied: true
            }
        );
        assert_eq!(
            lost[1],
            Lost {
                id: RequestId(5),
                produce: false,
                applied: false
            }
        );
        assert!(!net.is_open(NodeId(1)));
        assert!(net.next_delivery().is_none());
        assert!(net.connect(NodeId(1)) > g1);
    }

    #[test]
    fn a_held_request_mutes_its_connection_and_survives_the_drop() {
        let mut net = Net::new(vec![Duration::from_millis(1)]);
        let g1 = net.connect(NodeId(1));
        let t0 = Timestamp::ZERO;
        net.send_request(NodeId(1), t0, Duration::from_millis(1), md(1));
        net.send_request(NodeId(1), t0, Duration::from_millis(1), md(2));
        let first = net.pop_request(NodeId(1)).unwrap();
        net.hold(NodeId(1), first.at, Duration::from_millis(50), first.msg);
        // Request 2 has arrived but is not read while request 1 is held.
        assert!(net.next_delivery().is_none());
        assert_eq!(net.next_application(), Some(Timestamp::from_millis(51)));
        let lost = net.drop_connection(NodeId(1));
        let ids: Vec<(u64, bool)> = lost.iter().map(|l| (l.id.0, l.applied)).collect();
        assert_eq!(
            ids,
            vec![(1, true), (2, false)],
            "1 will be applied, 2 never"
        );
        let g2 = net.connect(NodeId(1));
        net.send_request(NodeId(1), t0, Duration::from_millis(1), md(3));
        // The new connection is not muted by the old connection's held request.
        assert!(net.next_delivery().is_some());
        let held = net.take_application().unwrap();
        assert_eq!(held.msg.request.id(), RequestId(1));
        assert_eq!(held.msg.generation, g1);
        assert!(!net.is_current(NodeId(1), g1));
        assert!(net.is_current(NodeId(1), g2));
    }

    #[test]
    fn a_crash_loses_what_the_broker_held() {
        let mut net = Net::new(vec![Duration::from_millis(1); 2]);
        net.connect(NodeId(1));
        net.connect(NodeId(2));
        net.hold(NodeId(1), Timestamp::ZERO, Duration::from_millis(5), md(1));
        net.hold(NodeId(2), Timestamp::ZERO, Duration::from_millis(5), md(2));
        let gone = net.crash(NodeId(1));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].request.id(), RequestId(1));
        assert_eq!(net.held().len(), 1);
        assert_eq!(net.held()[0].msg.node, NodeId(2));
    }
}
