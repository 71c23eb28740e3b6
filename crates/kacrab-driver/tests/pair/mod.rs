//! An in-memory, byte-level harness for [`Session`] on virtual time, in the shape of
//! quinn-proto's test `Pair`: the session on one end; on the other, model brokers
//! ([`broker::Cluster`]) that decode the real request frames and encode real response
//! frames. Between them, one link per connection with a queue each way and a latency,
//! connects that succeed, are refused or hang, and resets.
//!
//! The clock only moves when the harness advances it, to the earliest of the session's
//! `poll_timeout` and the next delivery on a link. After every step the harness calls
//! [`Session::assert_invariants`], checks the timer rule (after `handle_timeout(now)`,
//! `poll_timeout()` is `None` or later than `now`), and checks what the driver sees:
//! frames only on connections that are open, every Produce ticket ends in exactly one
//! Transmit or Release, and every command id gets at most one completion.
#![allow(dead_code)]

pub mod broker;
mod final_failure;
pub mod sasl;
pub mod telemetry;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kacrab_driver::{
    CloseReason, Completion, ConnId, ConnectOptions, OpId, Output, ProduceError, ProducerRecord,
    RecordMetadata, SendId, Session, SessionConfig,
};
use kacrab_idempotence::ticket::{Ticket, TicketSequencer};
use kacrab_idempotence::Timestamp;

pub use broker::{Cluster, Incoming, Req};

/// What happens to a connect to an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectPolicy {
    /// Completes after the latency (the default for a live broker's address).
    Accept,
    /// Fails after the latency (the default for an address no live broker has).
    Refuse,
    /// Never completes.
    Hang,
    /// Completes after this long instead of the latency (a slow TCP or proxy setup).
    Slow(Duration),
}

/// What a broker does with one request. Hooks ([`Pair::hook`]) choose it.
pub enum Verdict {
    /// The model applies it and answers.
    Answer,
    /// The model neither applies nor answers it. The connection stalls: as Kafka reads
    /// the next request of a connection only once it answered the last one
    /// (`SocketServer`'s `Processor` mutes the channel until the response is sent),
    /// later requests on it are neither applied nor answered.
    Ignore,
    /// The model applies it; the answer never comes, and the connection stalls (see
    /// [`Verdict::Ignore`]).
    ApplyAndIgnore,
    /// The model applies it, then the connection resets before the answer.
    ApplyThenReset,
    /// The connection resets; nothing is applied.
    Reset,
    /// These bytes go back instead of an answer (a whole frame, or garbage); nothing is
    /// applied.
    Raw(Bytes),
    /// The model applies it and answers; these bytes are sent first.
    AnswerAfter(Bytes),
    /// The model applies it and answers this much later than it would.
    Delay(Duration),
}

type Hook = Box<dyn FnMut(&Incoming, &Cluster) -> Option<Verdict>>;

#[derive(Debug)]
struct Link {
    addr: String,
    /// The broker behind the address (`None`: nobody).
    node: Option<i32>,
    /// When the pending connect completes (or fails); `None` once open, or hanging.
    connect_at: Option<Timestamp>,
    refuse: bool,
    open: bool,
    /// The broker sits on a request: nothing more on this connection is read.
    stalled: bool,
    to_broker: VecDeque<(Timestamp, Bytes)>,
    to_client: VecDeque<(Timestamp, Bytes)>,
    /// The broker's TLS half, on a TLS listener.
    tls: Option<rustls::ServerConnection>,
    /// Decrypted request bytes not yet a whole frame.
    plain: Vec<u8>,
    /// The frames transmitted on it and their write reports.
    writes: Writes,
}

/// One link's `Transmit` frames, and which of them the harness wrote: the session is
/// told, in order, of the written prefix (`Session::handle_transmitted`), as a driver
/// reports a frame once its socket took all of it.
#[derive(Debug, Default)]
struct Writes {
    /// Frames handed over by the session.
    handed: u64,
    /// Frames written, by position, beyond the written prefix.
    written: BTreeSet<u64>,
    /// The written prefix: frames `0..prefix` are written.
    prefix: u64,
    /// Of the prefix, frames reported to the session.
    reported: u64,
}

impl Writes {
    fn hand(&mut self) -> u64 {
        self.handed += 1;
        self.handed - 1
    }

    fn written(&mut self, index: u64) {
        self.written.insert(index);
        while self.written.remove(&self.prefix) {
            self.prefix += 1;
        }
    }

    /// The frames written and not yet reported, now reported.
    fn take_report(&mut self) -> usize {
        let n = self.prefix - self.reported;
        self.reported = self.prefix;
        usize::try_from(n).expect("a frame count")
    }
}

impl Link {
    fn next_event(&self) -> Option<Timestamp> {
        [
            self.connect_at,
            self.to_broker.front().map(|f| f.0),
            self.to_client.front().map(|f| f.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// A tiny deterministic generator (xorshift64*) for latencies and chunking.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The session, the model cluster and the links between them.
pub struct Pair {
    /// The session under test.
    pub session: Session,
    /// The virtual clock.
    pub now: Timestamp,
    /// The model brokers.
    pub cluster: Cluster,
    /// One-way latency of every frame and connect.
    pub latency: Duration,
    /// Extra random latency, up to this much, per frame (order per direction kept).
    pub jitter: Duration,
    /// Deliver response frames in two pieces, split at a random point, the second a
    /// microsecond later; and hand everything due on a connection to one
    /// `handle_bytes` call (frames coalesced as in one socket read).
    pub split_responses: bool,
    /// Connect behaviour by address (else [`ConnectPolicy::Accept`] for a live broker,
    /// [`ConnectPolicy::Refuse`] otherwise).
    pub connect: BTreeMap<String, ConnectPolicy>,
    /// Per mille of connects (to addresses without an explicit policy) refused, and
    /// per mille left hanging.
    pub connect_faults: (u64, u64),
    /// The brokers' TLS listener configuration: `None` for plaintext listeners. A
    /// plaintext listener closes a connection whose first frame is larger than
    /// `socket.request.max.bytes`, as Kafka does with a TLS ClientHello.
    pub tls_server: Option<Arc<rustls::ServerConfig>>,
    /// Write Produce frames in ticket order, as a driver writing each connection from
    /// its own task must ([`TicketSequencer`]): a frame whose turn has not come waits;
    /// a Release, or the close of its connection, abandons a ticket.
    pub ticket_order: bool,
    /// Hold the write reports (`Session::handle_transmitted`) back, as a driver whose
    /// socket has not yet taken the frames: the bytes still travel, and
    /// [`Pair::report_writes`] reports them.
    pub hold_write_reports: bool,
    /// Every completion, with when it came.
    pub completions: Vec<(Timestamp, Completion)>,
    /// Every `Output::Connect`: when, which, where.
    pub connects: Vec<(Timestamp, ConnId, String)>,
    /// The session's `connect_options` for each of `connects` it still knew when asked.
    pub connect_options: Vec<ConnectOptions>,
    /// Every `Output::Close`.
    pub closes: Vec<(Timestamp, ConnId, CloseReason)>,
    /// Connections the harness reset (or refused), with when.
    pub resets: Vec<(Timestamp, ConnId)>,
    /// Frames that reached a broker but did not decode (the test fails on any).
    pub undecodable: Vec<String>,
    /// Per frame transmitted, in order: its connection and how many parts it came in
    /// (a Produce frame on plain TCP carries each batch as a part of its own).
    pub frame_parts: Vec<(ConnId, usize)>,
    /// The generator for jitter and chunking.
    pub rng: Rng,
    hooks: Vec<Hook>,
    links: BTreeMap<ConnId, Link>,
    tickets: BTreeSet<Ticket>,
    /// Whether a command id was completed (to check "exactly once").
    records_done: BTreeSet<SendId>,
    ops_done: BTreeSet<OpId>,
    /// Every send made through [`Pair::send`].
    sent: BTreeSet<SendId>,
    /// The ticket-ordering driver's sequencer and its frames waiting for their turn.
    sequencer: TicketSequencer,
    parked: VecDeque<(ConnId, Bytes, Ticket, u64)>,
    /// Steps taken without the clock moving (a session that keeps itself busy at one
    /// instant would never let virtual time pass).
    steps_at_now: u32,
}

/// The properties every test starts from: no linger, short timeouts for virtual time.
pub const BASE: &[(&str, &str)] = &[("linger.ms", "0"), ("client.id", "harness")];

impl Pair {
    /// A session for `cluster`, bootstrapped at node 0's address, with [`BASE`] and then
    /// `props` (later keys win).
    pub fn new(cluster: Cluster, props: &[(&str, &str)]) -> Self {
        let bootstrap = cluster.brokers[&0].addr.clone();
        let mut all: Vec<(&str, &str)> = vec![("bootstrap.servers", bootstrap.as_str())];
        all.extend_from_slice(BASE);
        all.extend_from_slice(props);
        let config = SessionConfig::from_properties(all).expect("valid configuration");
        let now = Timestamp::from_millis(1_000);
        let session = Session::new(config, now, 1_700_000_000_000);
        session.assert_invariants();
        Self {
            session,
            now,
            cluster,
            latency: Duration::from_millis(1),
            jitter: Duration::ZERO,
            split_responses: false,
            connect: BTreeMap::new(),
            connect_faults: (0, 0),
            ticket_order: false,
            hold_write_reports: false,
            tls_server: None,
            sequencer: TicketSequencer::new(),
            parked: VecDeque::new(),
            completions: Vec::new(),
            connects: Vec::new(),
            connect_options: Vec::new(),
            closes: Vec::new(),
            resets: Vec::new(),
            undecodable: Vec::new(),
            frame_parts: Vec::new(),
            rng: Rng::new(1),
            hooks: Vec::new(),
            links: BTreeMap::new(),
            tickets: BTreeSet::new(),
            records_done: BTreeSet::new(),
            ops_done: BTreeSet::new(),
            sent: BTreeSet::new(),
            steps_at_now: 0,
        }
    }

    /// Adds a hook: it sees every request a broker receives, before the model applies it,
    /// and may choose what happens (`None`: the next hook, else [`Verdict::Answer`]).
    pub fn hook(&mut self, f: impl FnMut(&Incoming, &Cluster) -> Option<Verdict> + 'static) {
        self.hooks.push(Box::new(f));
    }

    // ------------------------------------------------------------------ commands

    /// Sends `value` to `topic`/`partition`.
    pub fn send(&mut self, topic: &str, partition: i32, value: &str) -> SendId {
        let record =
            ProducerRecord::new(topic, partition, Bytes::copy_from_slice(value.as_bytes()));
        let id = self.session.send(record, self.now);
        assert!(self.sent.insert(id), "send ids are never reused");
        self.pump();
        id
    }

    /// Sends `record` as it is (a partition of its own, or none for the partitioner).
    pub fn send_record(&mut self, record: ProducerRecord) -> SendId {
        let id = self.session.send(record, self.now);
        assert!(self.sent.insert(id), "send ids are never reused");
        self.pump();
        id
    }

    /// Flushes.
    pub fn flush(&mut self) -> OpId {
        let op = self.session.flush(self.now);
        self.pump();
        op
    }

    /// Closes with `timeout`.
    pub fn close(&mut self, timeout: Option<Duration>) -> OpId {
        let op = self.session.close(timeout, self.now);
        self.pump();
        op
    }

    /// Asks for `topic`'s partition count.
    pub fn partition_count(&mut self, topic: &str) -> OpId {
        let op = self.session.partition_count(topic, self.now);
        self.pump();
        op
    }

    /// Resets `conn` now (the driver reports it disconnected).
    pub fn reset(&mut self, conn: ConnId) {
        if self.links.remove(&conn).is_some() {
            self.drop_parked(conn);
            self.resets.push((self.now, conn));
            let cause = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
            self.session
                .handle_connection_lost(conn, cause.into(), self.now);
            self.pump();
        }
    }

    /// Stops broker `node`: its connections reset, new ones are refused, Metadata no
    /// longer lists it.
    pub fn crash(&mut self, node: i32) {
        self.cluster.brokers.get_mut(&node).expect("node").alive = false;
        let conns: Vec<ConnId> = self
            .links
            .iter()
            .filter(|(_, l)| l.node == Some(node))
            .map(|(&c, _)| c)
            .collect();
        for c in conns {
            self.reset(c);
        }
    }

    /// Starts broker `node` again (its logs and producer state kept).
    pub fn restart(&mut self, node: i32) {
        self.cluster.brokers.get_mut(&node).expect("node").alive = true;
    }

    /// Sends `value` to `topic`/`partition`, runs until every send has its outcome (at
    /// most 10 s of virtual time) and returns this one's (panics if it has none).
    pub fn send_settled(
        &mut self,
        topic: &str,
        partition: i32,
        value: &str,
    ) -> Result<RecordMetadata, ProduceError> {
        let id = self.send(topic, partition, value);
        self.settle(Duration::from_secs(10));
        self.outcome(id)
            .cloned()
            .unwrap_or_else(|| panic!("{id:?} has no outcome"))
    }

    // ------------------------------------------------------------------ queries

    /// The outcome of a send, if it has one.
    pub fn outcome(&self, id: SendId) -> Option<&Result<RecordMetadata, ProduceError>> {
        self.completions.iter().find_map(|(_, c)| match c {
            Completion::Record { id: i, outcome } if *i == id => Some(outcome),
            _ => None,
        })
    }

    /// The acknowledged metadata of a send (panics otherwise).
    pub fn acked(&self, id: SendId) -> &RecordMetadata {
        match self.outcome(id) {
            Some(Ok(m)) => m,
            other => panic!("{id:?} not acknowledged: {other:?}"),
        }
    }

    /// When the completion of `op` came, and what it was.
    pub fn op(&self, op: OpId) -> Option<(Timestamp, &Completion)> {
        self.completions.iter().find_map(|(t, c)| {
            let id = match c {
                Completion::Flushed { op }
                | Completion::Transaction { op, .. }
                | Completion::PartitionCount { op, .. }
                | Completion::Closed { op } => *op,
                _ => return None,
            };
            (id == op).then_some((*t, c))
        })
    }

    /// When the completion of `id` came.
    pub fn done_at(&self, id: SendId) -> Option<Timestamp> {
        self.completions.iter().find_map(|(t, c)| match c {
            Completion::Record { id: i, .. } if *i == id => Some(*t),
            _ => None,
        })
    }

    /// The position of `id`'s completion in the completion stream.
    pub fn position(&self, pred: impl Fn(&Completion) -> bool) -> Option<usize> {
        self.completions.iter().position(|(_, c)| pred(c))
    }

    /// The open (or opening) connections, with their addresses.
    pub fn links(&self) -> Vec<(ConnId, String)> {
        self.links
            .iter()
            .map(|(&c, l)| (c, l.addr.clone()))
            .collect()
    }

    /// Every Produce ticket handed out so far ended in one Transmit or one Release: the
    /// tickets seen are exactly `0..n` (the core reserves them consecutively). For the
    /// end of a test, when nothing is queued any more.
    pub fn assert_every_ticket_ended(&self) {
        assert!(
            self.parked.is_empty(),
            "frames still waiting for their ticket's turn: {:?}",
            self.parked.iter().map(|p| p.2).collect::<Vec<_>>()
        );
        for (i, t) in self.tickets.iter().enumerate() {
            assert_eq!(
                t.seq, i as u64,
                "ticket {i} never ended: {:?}",
                self.tickets
            );
        }
    }

    /// Elapsed virtual time since `t`.
    pub fn since(&self, t: Timestamp) -> Duration {
        self.now.saturating_duration_since(t)
    }

    // ------------------------------------------------------------------ driving

    /// Drains the session's outputs and completions, acting on each, then checks the
    /// invariants.
    pub fn pump(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(out) = self.session.poll_output(self.now) {
                progressed = true;
                self.on_output(out);
            }
            while let Some(c) = self.session.poll_completion() {
                progressed = true;
                self.on_completion(c);
            }
            if !progressed {
                break;
            }
        }
        self.session.assert_invariants();
        assert_eq!(
            self.session.connection_count(),
            self.links.len(),
            "the session's connections are the driver's"
        );
        assert!(
            self.undecodable.is_empty(),
            "a broker received undecodable frames: {:?}",
            self.undecodable
        );
    }

    fn trace(&self, what: std::fmt::Arguments<'_>) {
        if std::env::var_os("PAIR_TRACE").is_some() {
            eprintln!("[{:>9.3} ms] {what}", self.now.as_micros() as f64 / 1000.0);
        }
    }

    fn on_output(&mut self, out: Output) {
        let now = self.now;
        match &out {
            Output::Transmit {
                conn,
                frame,
                ticket,
            } => {
                self.trace(format_args!(
                    "Transmit {conn:?} {} bytes {ticket:?}",
                    frame.len()
                ));
            }
            other => self.trace(format_args!("{other:?}")),
        }
        match out {
            Output::Connect { conn, addr } => {
                assert!(!self.links.contains_key(&conn), "{conn:?} connected twice");
                let node = self
                    .cluster
                    .node_at(&addr)
                    .filter(|n| self.cluster.brokers[n].alive);
                let default = if node.is_some() {
                    ConnectPolicy::Accept
                } else {
                    ConnectPolicy::Refuse
                };
                let (refuse, hang) = self.connect_faults;
                let roll = if refuse + hang > 0 {
                    self.rng.below(1000)
                } else {
                    1000
                };
                let default = if roll < refuse {
                    ConnectPolicy::Refuse
                } else if roll < refuse + hang {
                    ConnectPolicy::Hang
                } else {
                    default
                };
                let policy = self.connect.get(&addr).copied().unwrap_or(default);
                // `None`: the session gave this attempt up after queueing its Connect
                // (its Close follows in the queue); a driver opens it with the
                // operating system's defaults, as the real drivers do.
                if let Some(options) = self.session.connect_options(conn) {
                    self.connect_options.push(options);
                }
                self.connects.push((now, conn, addr.clone()));
                self.links.insert(
                    conn,
                    Link {
                        addr,
                        node,
                        connect_at: match policy {
                            ConnectPolicy::Hang => None,
                            ConnectPolicy::Slow(setup) => Some(now + setup),
                            ConnectPolicy::Accept | ConnectPolicy::Refuse => {
                                Some(now + self.latency)
                            }
                        },
                        refuse: policy == ConnectPolicy::Refuse,
                        open: false,
                        stalled: false,
                        to_broker: VecDeque::new(),
                        to_client: VecDeque::new(),
                        tls: self.tls_server.clone().map(|c| {
                            rustls::ServerConnection::new(c).expect("server TLS configuration")
                        }),
                        plain: Vec::new(),
                        writes: Writes::default(),
                    },
                );
            }
            Output::Transmit {
                conn,
                frame,
                ticket,
            } => {
                self.frame_parts.push((conn, frame.parts().len()));
                let frame = frame.to_bytes();
                let index = self
                    .links
                    .get_mut(&conn)
                    .unwrap_or_else(|| panic!("Transmit on {conn:?}, which is not open"))
                    .writes
                    .hand();
                if let Some(t) = ticket {
                    assert!(self.tickets.insert(t), "ticket {t:?} ended twice");
                    if self.ticket_order {
                        assert!(self.links.get(&conn).is_some_and(|l| l.open));
                        self.parked.push_back((conn, frame, t, index));
                        self.unpark();
                        return;
                    }
                }
                self.write(conn, frame, index);
            }
            Output::Release { ticket } => {
                assert!(self.tickets.insert(ticket), "ticket {ticket:?} ended twice");
                if self.ticket_order {
                    self.sequencer.abandon(ticket);
                    self.unpark();
                }
            }
            Output::Close { conn, reason } => {
                assert!(
                    self.links.remove(&conn).is_some(),
                    "Close of {conn:?}, which is not open ({reason})"
                );
                self.closes.push((now, conn, reason));
                self.drop_parked(conn);
            }
        }
    }

    /// Writes the parked frames whose turn came, in ticket order.
    fn unpark(&mut self) {
        loop {
            let Some(i) = self
                .parked
                .iter()
                .position(|(_, _, t, _)| self.sequencer.may_enqueue(*t))
            else {
                return;
            };
            let (conn, frame, t, index) = self.parked.remove(i).expect("parked");
            self.sequencer.enqueued(t);
            self.write(conn, frame, index);
        }
    }

    /// The connection is gone: its parked frames will never be written.
    fn drop_parked(&mut self, conn: ConnId) {
        if !self.ticket_order {
            return;
        }
        let (gone, kept): (VecDeque<_>, VecDeque<_>) =
            self.parked.drain(..).partition(|(c, _, _, _)| *c == conn);
        self.parked = kept;
        for (_, _, t, _) in gone {
            self.sequencer.abandon(t);
        }
        self.unpark();
    }

    /// Writes frame `index` of `conn`: its socket takes all of it now, and the written
    /// prefix is reported unless reports are held.
    fn write(&mut self, conn: ConnId, frame: Bytes, index: u64) {
        let now = self.now;
        let delay = self.delay();
        let link = self
            .links
            .get_mut(&conn)
            .unwrap_or_else(|| panic!("Transmit on {conn:?}, which is not open"));
        assert!(link.open, "Transmit on {conn:?} before it was connected");
        let at = link.to_broker.back().map_or(now, |f| f.0).max(now + delay);
        link.to_broker.push_back((at, frame));
        link.writes.written(index);
        if !self.hold_write_reports {
            self.report_written(conn);
        }
    }

    /// Reports `conn`'s written frames not yet reported.
    fn report_written(&mut self, conn: ConnId) {
        let Some(link) = self.links.get_mut(&conn) else {
            return;
        };
        let frames = link.writes.take_report();
        if frames > 0 {
            self.trace(format_args!("{conn:?} {frames} frames written"));
            self.session.handle_transmitted(conn, frames, self.now);
        }
    }

    /// Reports every frame written and held back (see [`Pair::hold_write_reports`]).
    pub fn report_writes(&mut self) {
        let conns: Vec<ConnId> = self.links.keys().copied().collect();
        for conn in conns {
            self.report_written(conn);
        }
        self.pump();
    }

    fn on_completion(&mut self, c: Completion) {
        self.trace(format_args!("completion {c:?}"));
        match &c {
            Completion::Record { id, .. } => {
                assert!(self.records_done.insert(*id), "{id:?} completed twice");
            }
            Completion::Flushed { op }
            | Completion::Transaction { op, .. }
            | Completion::PartitionCount { op, .. }
            | Completion::Closed { op } => {
                assert!(self.ops_done.insert(*op), "{op:?} completed twice");
            }
            Completion::ConnectionFailed { .. } => {}
            other => panic!("a completion the harness does not know: {other:?}"),
        }
        self.completions.push((self.now, c));
    }

    fn delay(&mut self) -> Duration {
        let jitter = self.jitter.as_micros() as u64;
        self.latency + Duration::from_micros(self.rng.below(jitter + 1))
    }

    /// When something next happens: a link event or the session's timeout.
    pub fn next_event(&self) -> Option<Timestamp> {
        let links = self.links.values().filter_map(Link::next_event).min();
        [links, self.session.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Advances the clock to the next event and handles everything due then. Returns
    /// `false` when nothing will ever happen again.
    pub fn step(&mut self) -> bool {
        self.pump();
        let Some(t) = self.next_event() else {
            return false;
        };
        if t > self.now {
            self.now = t;
            self.steps_at_now = 0;
        } else {
            self.steps_at_now += 1;
            assert!(
                self.steps_at_now < 10_000,
                "10000 steps at {:?} without the clock moving: a busy loop",
                self.now
            );
        }
        // Network events first, one at a time, in time order.
        while let Some((conn, at)) = self
            .links
            .iter()
            .filter_map(|(&c, l)| l.next_event().map(|t| (c, t)))
            .min_by_key(|&(_, t)| t)
        {
            if at > self.now {
                break;
            }
            self.link_event(conn);
            self.pump();
        }
        if self.session.poll_timeout().is_some_and(|t| t <= self.now) {
            self.trace(format_args!("handle_timeout"));
            self.session.handle_timeout(self.now);
            let next = self.session.poll_timeout();
            assert!(
                next.is_none_or(|t| t > self.now),
                "after handle_timeout({:?}), poll_timeout() is {next:?}",
                self.now
            );
            self.pump();
        }
        true
    }

    fn link_event(&mut self, conn: ConnId) {
        let now = self.now;
        let link = self.links.get_mut(&conn).expect("link");
        if link.connect_at.is_some_and(|t| t <= now) {
            link.connect_at = None;
            let refuse = link.refuse;
            self.trace(format_args!("{conn:?} connect done (refused: {refuse})"));
            let link = self.links.get_mut(&conn).expect("link");
            if refuse {
                self.links.remove(&conn);
                self.resets.push((now, conn));
                let cause = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
                self.session.handle_connect_error(conn, cause.into(), now);
            } else {
                link.open = true;
                self.session.handle_connected(conn, now);
            }
            return;
        }
        if link.to_client.front().is_some_and(|f| f.0 <= now) {
            let (_, mut bytes) = link.to_client.pop_front().expect("frame");
            if self.split_responses {
                // Split mode also coalesces: whatever else is due arrives in the same
                // read, as a socket would hand it over.
                let mut all = bytes.to_vec();
                while let Some((_, more)) = link.to_client.front().filter(|f| f.0 <= now) {
                    all.extend_from_slice(more);
                    link.to_client.pop_front();
                }
                bytes = Bytes::from(all);
            }
            let n = bytes.len();
            self.trace(format_args!("{conn:?} <- {n} bytes"));
            self.session.handle_bytes(conn, &bytes, now);
            return;
        }
        if link.to_broker.front().is_some_and(|f| f.0 <= now) {
            let (_, frame) = link.to_broker.pop_front().expect("frame");
            if link.stalled {
                return;
            }
            let node = link.node.expect("an open link reaches a broker");
            if link.tls.is_some() {
                self.at_tls_broker(conn, node, &frame);
            } else {
                self.at_broker(conn, node, &frame);
            }
        }
    }

    /// Ciphertext reached `node`'s TLS listener: the server half answers the handshake
    /// (or an alert), and every whole decrypted frame goes to [`Pair::at_broker`].
    fn at_tls_broker(&mut self, conn: ConnId, node: i32, bytes: &Bytes) {
        let link = self.links.get_mut(&conn).expect("link");
        let server = link.tls.as_mut().expect("a TLS link");
        let mut input: &[u8] = bytes;
        let mut failed = false;
        let mut buf = [0u8; 16 * 1024];
        while !input.is_empty() {
            if server.read_tls(&mut input).expect("read_tls from memory") == 0 {
                break;
            }
            if let Err(e) = server.process_new_packets() {
                self.trace_tls(format_args!("{conn:?} server TLS error: {e}"));
                failed = true;
                break;
            }
            // Drain as we go: rustls holds at most 64 KiB of received plaintext.
            loop {
                match server.reader().read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => link.plain.extend_from_slice(&buf[..n]),
                }
            }
        }
        let link = self.links.get_mut(&conn).expect("link");
        let server = link.tls.as_mut().expect("a TLS link");
        let mut reply = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut reply).expect("write_tls to memory");
        }
        if !reply.is_empty() {
            self.send_raw_to_client(conn, Bytes::from(reply));
        }
        if failed {
            // The alert is on its way; the server then stops reading.
            self.stall(conn);
            return;
        }
        loop {
            let link = self.links.get_mut(&conn).expect("link");
            let Some(size) = link
                .plain
                .get(..4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            else {
                return;
            };
            if link.plain.len() < 4 + size {
                return;
            }
            let frame = Bytes::from(link.plain.drain(..4 + size).collect::<Vec<u8>>());
            self.at_broker(conn, node, &frame);
            if !self.links.contains_key(&conn) {
                return;
            }
        }
    }

    fn trace_tls(&self, what: std::fmt::Arguments<'_>) {
        self.trace(what);
    }

    /// Bytes already in TLS (or plaintext bytes on a plaintext link) to the client.
    fn send_raw_to_client(&mut self, conn: ConnId, bytes: Bytes) {
        let delay = self.delay();
        let now = self.now;
        let Some(link) = self.links.get_mut(&conn) else {
            return;
        };
        let at = link.to_client.back().map_or(now, |f| f.0).max(now + delay);
        link.to_client.push_back((at, bytes));
    }

    /// A request frame (size prefix included) reached `node`.
    fn at_broker(&mut self, conn: ConnId, node: i32, frame: &Bytes) {
        let size = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        // `socket.request.max.bytes` (100 MiB): Kafka's `NetworkReceive` refuses a larger
        // size and the `Selector` closes the connection. A TLS ClientHello sent to a
        // plaintext listener reads as one (0x16 0x03 ...).
        if size as u32 > 104_857_600 {
            self.reset(conn);
            return;
        }
        assert_eq!(
            size as usize,
            frame.len() - 4,
            "a Transmit is one whole frame"
        );
        let inc = match Cluster::decode(node, conn, &frame.slice(4..)) {
            Ok(inc) => inc,
            Err(e) => {
                self.undecodable.push(e);
                return;
            }
        };
        self.cluster.seen.push(broker::Seen {
            node,
            conn,
            api: inc.api,
            version: inc.version,
        });
        self.trace(format_args!(
            "{conn:?} -> node {node}: {:?} v{} #{}",
            inc.api, inc.version, inc.correlation_id
        ));
        if let Some(listener) = self.cluster.sasl.as_mut() {
            listener.now = self.now;
            if let Err(why) = listener.admit(conn, inc.api) {
                // Kafka's authenticator closes such a connection.
                listener.violations.push(why);
                self.reset(conn);
                return;
            }
            // KIP-368: the client sends no SaslHandshake while answers are outstanding
            // (here: still on their way to it).
            let outstanding = self.links.get(&conn).map_or(0, |l| l.to_client.len());
            if inc.api == kafka_protocol::messages::ApiKey::SaslHandshake && outstanding > 0 {
                listener.violations.push(format!(
                    "{conn:?}: SaslHandshake with {outstanding} answers outstanding"
                ));
            }
        }
        self.cluster.now_ms = self.now.as_millis();
        let mut verdict = Verdict::Answer;
        for hook in &mut self.hooks {
            if let Some(v) = hook(&inc, &self.cluster) {
                verdict = v;
                break;
            }
        }
        // With acks=0 the broker applies the Produce and never answers.
        if let (Verdict::Answer, Req::Produce(r)) = (&verdict, &inc.req) {
            if r.acks == 0 {
                let _ = self.cluster.answer(&inc);
                return;
            }
        }
        let mut extra = Duration::ZERO;
        let reply = match verdict {
            Verdict::Delay(d) => {
                extra = d;
                vec![self.cluster.answer(&inc)]
            }
            Verdict::Answer => vec![self.cluster.answer(&inc)],
            Verdict::Ignore => {
                self.stall(conn);
                Vec::new()
            }
            Verdict::ApplyAndIgnore => {
                let _ = self.cluster.answer(&inc);
                self.stall(conn);
                Vec::new()
            }
            Verdict::ApplyThenReset => {
                let _ = self.cluster.answer(&inc);
                self.reset(conn);
                return;
            }
            Verdict::Reset => {
                self.reset(conn);
                return;
            }
            Verdict::Raw(bytes) => vec![bytes],
            Verdict::AnswerAfter(bytes) => vec![bytes, self.cluster.answer(&inc)],
        };
        for bytes in reply {
            self.answer_to_client(conn, bytes, extra);
        }
    }

    /// The broker stops reading `conn`: nothing more on it is answered.
    pub fn stall_link(&mut self, conn: ConnId) {
        self.stall(conn);
    }

    fn stall(&mut self, conn: ConnId) {
        if let Some(link) = self.links.get_mut(&conn) {
            link.stalled = true;
        }
    }

    fn answer_to_client(&mut self, conn: ConnId, bytes: Bytes, extra: Duration) {
        let bytes = match self.links.get_mut(&conn).and_then(|l| l.tls.as_mut()) {
            Some(server) => {
                server.writer().write_all(&bytes).expect("write to TLS");
                let mut sealed = Vec::new();
                while server.wants_write() {
                    server.write_tls(&mut sealed).expect("write_tls to memory");
                }
                Bytes::from(sealed)
            }
            None => bytes,
        };
        let delay = self.delay() + extra;
        let split = self.split_responses && bytes.len() > 1;
        let cut = if split {
            1 + self.rng.below(bytes.len() as u64 - 1) as usize
        } else {
            bytes.len()
        };
        let now = self.now;
        let Some(link) = self.links.get_mut(&conn) else {
            return;
        };
        let at = link.to_client.back().map_or(now, |f| f.0).max(now + delay);
        link.to_client.push_back((at, bytes.slice(..cut)));
        if cut < bytes.len() {
            // The rest a moment later, in a read of its own.
            link.to_client
                .push_back((at + Duration::from_micros(1), bytes.slice(cut..)));
        }
    }

    /// Steps until `done` holds (then `true`) or `limit` of virtual time passed or nothing
    /// is left to happen (then `false`).
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Pair) -> bool) -> bool {
        let end = self.now + limit;
        loop {
            self.pump();
            if done(self) {
                return true;
            }
            if self.next_event().is_none_or(|t| t > end) {
                self.now = self.now.max(end);
                self.pump();
                return done(self);
            }
            self.step();
        }
    }

    /// Steps for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }

    /// Steps until every send so far has an outcome (panics after `limit`).
    pub fn settle(&mut self, limit: Duration) {
        let ok = self.run_until(limit, |p| p.unresolved().is_empty());
        assert!(
            ok,
            "sends still without an outcome after {limit:?}: {:?}",
            self.unresolved()
        );
    }

    /// The sends without an outcome.
    pub fn unresolved(&self) -> Vec<SendId> {
        self.sent.difference(&self.records_done).copied().collect()
    }
}
