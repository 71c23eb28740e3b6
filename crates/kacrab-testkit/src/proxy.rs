//! A lying TCP proxy for the Kafka protocol (std threads, loopback only, bounded).
//!
//! [`Proxy::start`] listens on one loopback port per upstream broker address. The
//! producer bootstraps from [`Proxy::bootstrap`]; because Kafka clients learn broker
//! addresses from Metadata, the proxy decodes Metadata responses (and FindCoordinator
//! responses, and the leader endpoints of Produce responses, KIP-951) and rewrites every
//! broker's host and port to a proxy listener for that broker, creating listeners as new
//! brokers appear. So every connection the client makes goes through the proxy.
//!
//! Frames are read whole (4-byte length prefix). The proxy remembers each request's API
//! key, version and correlation id per connection, so it knows which response answers
//! which request. Per request it can, chosen by [`ProxyAction`] rules with a
//! [`Trigger`]: forward it and then drop the response and the connection ("apply then
//! drop"), delay the response, cut the response frame in the middle and close, or cut the
//! request frame in the middle and close. It counts what it injected.
//!
//! Per broker (or for all of them) it can also degrade the link itself with a [`Link`]:
//! a *blackhole* (connections stay open while nothing passes, one way or both: the proxy
//! stops reading that way, so the sender's socket buffers fill as behind a real
//! partition; what was held passes once the link heals, as TCP retransmits it),
//! *refused dials* (a new connection is accepted and closed at once), and a *slow link*
//! (latency per frame, a bandwidth ceiling). Brokers are named by their upstream
//! `host:port` or, once a Metadata response has named them, by node id ([`Target`]).
//!
//! It works in front of a FakeBroker node as well as in front of a real Kafka broker.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey as Kp, FindCoordinatorResponse, MetadataResponse, ProduceResponse, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::cluster::ApiKey;
use crate::trigger::{Fired, Trigger, TriggerState};

/// Largest frame the proxy relays (either direction).
const MAX_FRAME: usize = 128 * 1024 * 1024;

/// What the proxy does to a request a rule picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyAction {
    /// Forward the request, wait for the broker's response, then throw the response away
    /// and close the connection (both sides): the write happened, the client can't know.
    DropResponse,
    /// Forward the request and hold its response back this long (everything behind it on
    /// the connection waits too, as Kafka responses are ordered per connection).
    DelayResponse(Duration),
    /// Forward the request, then send only the first half of the response frame and close.
    CutResponse,
    /// Send only the first half of the request frame to the broker, then close both sides.
    CutRequest,
}

mod link;
use link::Flow;
pub use link::{Blackhole, Dial, Link, Target};

/// What the proxy has seen and done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Client connections accepted (and connected upstream).
    pub connections: u64,
    /// Connections refused: at the bound, the broker did not accept, or the link refuses
    /// dials ([`Dial::Refuse`]).
    pub refused: u64,
    /// Frames a blackhole held back (each counted once, however long it was held).
    pub held: u64,
    /// Requests relayed.
    pub requests: u64,
    /// Responses relayed (whole, possibly late or rewritten).
    pub responses: u64,
    /// Responses dropped after the write ([`ProxyAction::DropResponse`]).
    pub dropped: u64,
    /// Responses delayed.
    pub delayed: u64,
    /// Responses cut in the middle.
    pub cut_responses: u64,
    /// Requests cut in the middle.
    pub cut_requests: u64,
    /// Responses whose broker addresses were rewritten.
    pub rewritten: u64,
    /// Responses that should have been rewritten but did not decode (relayed as they were).
    pub rewrite_failures: u64,
}

impl ProxyStats {
    /// Faults injected: dropped + delayed + cut responses + cut requests.
    pub fn injected(&self) -> u64 {
        self.dropped + self.delayed + self.cut_responses + self.cut_requests
    }
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    refused: AtomicU64,
    held: AtomicU64,
    requests: AtomicU64,
    responses: AtomicU64,
    dropped: AtomicU64,
    delayed: AtomicU64,
    cut_responses: AtomicU64,
    cut_requests: AtomicU64,
    rewritten: AtomicU64,
    rewrite_failures: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

struct Rule {
    api: Option<i16>,
    action: ProxyAction,
    trigger: TriggerState,
}

struct Shared {
    stop: AtomicBool,
    rules: Mutex<Vec<Rule>>,
    /// Upstream `host:port` → the proxy listener standing in for it.
    listeners: Mutex<HashMap<String, SocketAddr>>,
    /// Node id → upstream `host:port`, from the Metadata responses relayed.
    nodes: Mutex<HashMap<i32, String>>,
    /// Upstream `host:port` → its link; `None` → the link of every broker without its own.
    links: Mutex<HashMap<Option<String>, Link>>,
    /// Both sockets of every open connection, to shut them down on drop.
    conns: Mutex<HashMap<u64, (TcpStream, TcpStream)>>,
    next_conn: AtomicU64,
    open: AtomicUsize,
    max_connections: usize,
    max_listeners: usize,
    /// `SO_RCVBUF` of every socket the proxy reads from, if capped.
    receive_buffer: Option<usize>,
    counters: Counters,
}

/// The lying proxy. Dropping it closes every listener and connection.
pub struct Proxy {
    shared: Arc<Shared>,
    bootstrap: Vec<SocketAddr>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("bootstrap", &self.bootstrap())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Proxy {
    /// Starts a proxy in front of `upstream`, a bootstrap list (`host:port,...`), with one
    /// loopback listener per address. At most 64 client connections at a time.
    pub fn start(upstream: &str) -> Result<Self, String> {
        Self::with_limits(upstream, 64)
    }

    /// As [`Proxy::start`], with a bound on concurrent client connections (two threads
    /// each); connections over it are closed at once.
    pub fn with_limits(upstream: &str, max_connections: usize) -> Result<Self, String> {
        Self::build(upstream, max_connections, None)
    }

    /// As [`Proxy::start`], with the kernel receive buffer (`SO_RCVBUF`) of every socket
    /// the proxy reads from capped at `bytes`: set on each listener before it listens (the
    /// client's connections inherit it) and on each upstream socket before it connects.
    /// Uncapped, loopback receive buffers grow to `net.ipv4.tcp_rmem`'s maximum (tens of
    /// MiB), so a blackhole, which stops reading, swallows everything a producer has in
    /// flight and never pushes back on its writes; capped, the producer's socket send
    /// buffer fills within a request or two, as behind a real partition.
    pub fn with_receive_buffer(upstream: &str, bytes: usize) -> Result<Self, String> {
        Self::build(upstream, 64, Some(bytes))
    }

    fn build(
        upstream: &str,
        max_connections: usize,
        receive_buffer: Option<usize>,
    ) -> Result<Self, String> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            rules: Mutex::default(),
            listeners: Mutex::default(),
            nodes: Mutex::default(),
            links: Mutex::default(),
            conns: Mutex::default(),
            next_conn: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            max_connections: max_connections.max(1),
            max_listeners: 32,
            receive_buffer,
            counters: Counters::default(),
        });
        let mut bootstrap = Vec::new();
        for addr in upstream.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            bootstrap
                .push(listener_for(&shared, addr).map_err(|e| format!("proxy for {addr}: {e}"))?);
        }
        if bootstrap.is_empty() {
            return Err(format!("proxy: no upstream address in {upstream:?}"));
        }
        Ok(Self { shared, bootstrap })
    }

    /// The bootstrap list a client should use: the listeners for the upstream addresses.
    pub fn bootstrap(&self) -> String {
        let v: Vec<String> = self.bootstrap.iter().map(SocketAddr::to_string).collect();
        v.join(",")
    }

    /// Every listener: upstream `host:port` → proxy address.
    pub fn listeners(&self) -> Vec<(String, SocketAddr)> {
        let mut v: Vec<_> = lock(&self.shared.listeners)
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        v.sort();
        v
    }

    /// Applies `action` to requests of `api` (every API if `None`) picked by `trigger`.
    /// Rules are tried in the order they were added; the first that fires applies.
    pub fn inject(&self, api: Option<ApiKey>, trigger: Trigger, action: ProxyAction) -> Fired {
        let trigger = trigger.start();
        let fired = trigger.fired.clone();
        lock(&self.shared.rules).push(Rule {
            api: api.map(ApiKey::to_i16),
            action,
            trigger,
        });
        fired
    }

    /// Sets the link to `target`: [`Link::healthy`] heals it. A broker's own link wins
    /// over the one for [`Target::All`]. Open connections follow the change at their next
    /// frame (a blackhole holds the frame in flight; a heal releases it). Fails for a node
    /// id no relayed Metadata response named.
    pub fn set_link(&self, target: Target, link: Link) -> Result<(), String> {
        let key = match target {
            Target::All => None,
            Target::Upstream(u) => Some(u),
            Target::Node(n) => Some(
                lock(&self.shared.nodes)
                    .get(&n)
                    .cloned()
                    .ok_or_else(|| format!("proxy: no Metadata response named node {n} yet"))?,
            ),
        };
        let mut links = lock(&self.shared.links);
        if key.is_some() && link == Link::healthy() {
            links.remove(&key);
        } else {
            links.insert(key, link);
        }
        Ok(())
    }

    /// Heals every link (rules stay).
    pub fn heal_all(&self) {
        lock(&self.shared.links).clear();
    }

    /// Node id → upstream `host:port`, as the relayed Metadata responses named them.
    pub fn nodes(&self) -> Vec<(i32, String)> {
        let mut v: Vec<_> = lock(&self.shared.nodes)
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        v.sort();
        v
    }

    /// Removes every rule; the proxy relays faithfully from now on.
    pub fn clear_rules(&self) {
        lock(&self.shared.rules).clear();
    }

    /// What the proxy has seen and done so far.
    pub fn stats(&self) -> ProxyStats {
        let c = &self.shared.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ProxyStats {
            connections: g(&c.connections),
            refused: g(&c.refused),
            held: g(&c.held),
            requests: g(&c.requests),
            responses: g(&c.responses),
            dropped: g(&c.dropped),
            delayed: g(&c.delayed),
            cut_responses: g(&c.cut_responses),
            cut_requests: g(&c.cut_requests),
            rewritten: g(&c.rewritten),
            rewrite_failures: g(&c.rewrite_failures),
        }
    }

    /// Faults injected so far (all kinds).
    pub fn injected(&self) -> u64 {
        self.stats().injected()
    }

    /// Closes every open connection now (the listeners stay).
    pub fn disconnect_all(&self) {
        for (c, u) in lock(&self.shared.conns).values() {
            let _ = c.shutdown(Shutdown::Both);
            let _ = u.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.disconnect_all();
        // Wake every accept loop so it sees `stop`.
        for addr in lock(&self.shared.listeners).values() {
            let _ = TcpStream::connect_timeout(addr, Duration::from_millis(200));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The link to `upstream` now.
fn link_of(shared: &Shared, upstream: &str) -> Link {
    let links = lock(&shared.links);
    links
        .get(&Some(upstream.to_string()))
        .or_else(|| links.get(&None))
        .copied()
        .unwrap_or_default()
}

/// The listener for `upstream`, started on first use.
fn listener_for(shared: &Arc<Shared>, upstream: &str) -> io::Result<SocketAddr> {
    let mut listeners = lock(&shared.listeners);
    if let Some(addr) = listeners.get(upstream) {
        return Ok(*addr);
    }
    if listeners.len() >= shared.max_listeners {
        return Err(io::Error::other("too many upstream brokers"));
    }
    let listener = listen(shared.receive_buffer)?;
    let local = listener.local_addr()?;
    listeners.insert(upstream.to_string(), local);
    let shared2 = Arc::clone(shared);
    let upstream = upstream.to_string();
    std::thread::Builder::new()
        .name(format!("proxy-accept-{}", local.port()))
        .spawn(move || accept_loop(listener, upstream, shared2))?;
    Ok(local)
}

fn accept_loop(listener: TcpListener, upstream: String, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        if link_of(&shared, &upstream).dial == Dial::Refuse {
            bump(&shared.counters.refused);
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        if shared.open.load(Ordering::SeqCst) >= shared.max_connections {
            bump(&shared.counters.refused);
            continue; // dropped: the client sees the connection close
        }
        let up = upstream
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .and_then(|a| dial(a, shared.receive_buffer).ok());
        let Some(up) = up else {
            bump(&shared.counters.refused);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = up.set_nodelay(true);
        let (Ok(c2), Ok(u2), Ok(c3), Ok(u3)) = (
            client.try_clone(),
            up.try_clone(),
            client.try_clone(),
            up.try_clone(),
        ) else {
            continue;
        };
        let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
        shared.open.fetch_add(1, Ordering::SeqCst);
        bump(&shared.counters.connections);
        lock(&shared.conns).insert(id, (c3, u3));
        let conn = Arc::new(Conn {
            id,
            upstream: upstream.clone(),
            pending: Mutex::default(),
            closed: AtomicBool::new(false),
            shared: Arc::clone(&shared),
        });
        let c1 = Arc::clone(&conn);
        let spawned = std::thread::Builder::new()
            .name(format!("proxy-req-{id}"))
            .spawn(move || c1.requests(client, up))
            .and_then(|_| {
                std::thread::Builder::new()
                    .name(format!("proxy-resp-{id}"))
                    .spawn(move || conn.responses(u2, c2))
            });
        if spawned.is_err() {
            // Out of threads: the half that runs (if any) closes the connection.
            bump(&shared.counters.refused);
        }
    }
}

/// A loopback listener, its receive buffer capped first if `receive_buffer` says so
/// (accepted sockets inherit it; set before `listen` so the window scale fits it).
fn listen(receive_buffer: Option<usize>) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    if let Some(n) = receive_buffer {
        socket.set_recv_buffer_size(n)?;
    }
    socket.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
    socket.listen(128)?;
    Ok(socket.into())
}

/// Connects to the broker at `addr`, the receive buffer capped first if asked.
fn dial(addr: SocketAddr, receive_buffer: Option<usize>) -> io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if let Some(n) = receive_buffer {
        socket.set_recv_buffer_size(n)?;
    }
    socket.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    Ok(socket.into())
}

/// A request waiting for its response.
struct Pending {
    correlation: i32,
    api: i16,
    version: i16,
    action: Option<ProxyAction>,
}

struct Conn {
    id: u64,
    /// The broker's `host:port`, whose [`Link`] this connection follows.
    upstream: String,
    pending: Mutex<VecDeque<Pending>>,
    closed: AtomicBool,
    shared: Arc<Shared>,
}

impl Conn {
    /// Shuts both sockets so the other pump returns too; forgets the connection once.
    fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some((c, u)) = lock(&self.shared.conns).remove(&self.id) {
            let _ = c.shutdown(Shutdown::Both);
            let _ = u.shutdown(Shutdown::Both);
        }
        self.shared.open.fetch_sub(1, Ordering::SeqCst);
    }

    /// Applies the link to a frame about to go `flow`: holds it while a blackhole stops
    /// that direction, then for the latency; returns `false` if the connection closed or
    /// the proxy stopped meanwhile. `counted`: the frame was already counted as held
    /// (waiting unread in the socket).
    fn pass(&self, flow: Flow, counted: Held) -> bool {
        let read_at = Instant::now();
        let mut held = counted == Held::Counted;
        loop {
            if self.closed.load(Ordering::SeqCst) || self.shared.stop.load(Ordering::SeqCst) {
                return false;
            }
            let link = link_of(&self.shared, &self.upstream);
            if link.blackhole.holds(flow) {
                if !held {
                    held = true;
                    bump(&self.shared.counters.held);
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            // Latency counts from when the frame was read, so time held counts too.
            let until = read_at + link.latency;
            let now = Instant::now();
            if now >= until {
                return true;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }

    /// Before reading the next frame going `flow` from `from`: waits while a blackhole
    /// stops that direction, so the socket is not read and the sender's buffers fill as
    /// behind a real partition (TCP stops acknowledging). A frame that arrives meanwhile
    /// is held in the socket's buffer and counted as held once (the pump may come back
    /// for it after the blackhole was set: a frame held there is still held). `None` if
    /// the connection closed or the proxy stopped meanwhile.
    fn readable(&self, flow: Flow, from: &TcpStream) -> Option<Held> {
        let mut held = Held::NotCounted;
        loop {
            if self.closed.load(Ordering::SeqCst) || self.shared.stop.load(Ordering::SeqCst) {
                return None;
            }
            if !link_of(&self.shared, &self.upstream).blackhole.holds(flow) {
                return Some(held);
            }
            if held == Held::NotCounted && waiting(from) {
                held = Held::Counted;
                bump(&self.shared.counters.held);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// After `bytes` went out: waits as long as the link's bandwidth says they take.
    fn pace(&self, bytes: usize) {
        if let Some(bps) = link_of(&self.shared, &self.upstream).bandwidth {
            let secs = bytes as f64 / bps.max(1) as f64;
            std::thread::sleep(Duration::from_secs_f64(secs.min(60.0)));
        }
    }

    fn choose(&self, api: i16) -> Option<ProxyAction> {
        let mut rules = lock(&self.shared.rules);
        rules
            .iter_mut()
            .filter(|r| r.api.is_none_or(|a| a == api))
            .find_map(|r| r.trigger.fire().then_some(r.action))
    }

    /// Client → broker.
    fn requests(self: Arc<Self>, mut client: TcpStream, mut up: TcpStream) {
        let c = &self.shared.counters;
        while let Some(held) = self.readable(Flow::ToBroker, &client) {
            let Ok(frame) = read_frame(&mut client) else {
                break;
            };
            if frame.len() < 12 {
                break;
            }
            let api = i16::from_be_bytes([frame[4], frame[5]]);
            let version = i16::from_be_bytes([frame[6], frame[7]]);
            let correlation = i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]);
            if !self.pass(Flow::ToBroker, held) {
                break;
            }
            let action = self.choose(api);
            if action == Some(ProxyAction::CutRequest) {
                bump(&c.cut_requests);
                let _ = up.write_all(&frame[..frame.len() / 2]);
                let _ = up.flush();
                break;
            }
            lock(&self.pending).push_back(Pending {
                correlation,
                api,
                version,
                action,
            });
            if up.write_all(&frame).is_err() {
                break;
            }
            bump(&c.requests);
            self.pace(frame.len());
        }
        self.close();
    }

    /// Broker → client.
    fn responses(self: Arc<Self>, mut up: TcpStream, mut client: TcpStream) {
        let c = &self.shared.counters;
        while let Some(held) = self.readable(Flow::ToClient, &up) {
            let Ok(frame) = read_frame(&mut up) else {
                break;
            };
            if frame.len() < 8 {
                break;
            }
            let correlation = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            let pending = {
                let mut q = lock(&self.pending);
                // Requests without a response (acks=0) leave entries behind: skip them.
                match q.iter().position(|p| p.correlation == correlation) {
                    Some(i) => {
                        q.drain(..i);
                        q.pop_front()
                    }
                    None => None,
                }
            };
            let mut out = frame;
            if let Some(p) = &pending {
                match p.action {
                    Some(ProxyAction::DropResponse) => {
                        bump(&c.dropped);
                        break;
                    }
                    Some(ProxyAction::CutResponse) => {
                        bump(&c.cut_responses);
                        let _ = client.write_all(&out[..out.len() / 2]);
                        let _ = client.flush();
                        break;
                    }
                    Some(ProxyAction::DelayResponse(d)) => {
                        bump(&c.delayed);
                        let until = Instant::now() + d;
                        while Instant::now() < until && !self.shared.stop.load(Ordering::SeqCst) {
                            std::thread::sleep(
                                (until - Instant::now()).min(Duration::from_millis(20)),
                            );
                        }
                    }
                    Some(ProxyAction::CutRequest) | None => {}
                }
                match rewrite(&self.shared, p, &out[4..]) {
                    Ok(Some(body)) => {
                        bump(&c.rewritten);
                        out = body;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        bump(&c.rewrite_failures);
                        eprintln!(
                            "kacrab-testkit proxy: relaying api {} v{} unchanged: {e}",
                            p.api, p.version
                        );
                    }
                }
            }
            if !self.pass(Flow::ToClient, held) || client.write_all(&out).is_err() {
                break;
            }
            bump(&c.responses);
            self.pace(out.len());
        }
        self.close();
    }
}

/// Whether a frame's first bytes wait unread in `s`'s receive buffer (or the peer
/// closed it). Peeks with a short read timeout, then restores blocking reads: only the
/// pump calling this reads from `s`, so the timeout affects nobody else.
fn waiting(s: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    if s.set_read_timeout(Some(Duration::from_millis(1))).is_err() {
        return false;
    }
    let peeked = s.peek(&mut byte);
    let _ = s.set_read_timeout(None);
    matches!(peeked, Ok(n) if n > 0)
}

/// Whether a frame was already counted as held before it was read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    Counted,
    NotCounted,
}

/// Reads one length-prefixed frame (prefix included).
fn read_frame(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = i32::from_be_bytes(len);
    if n < 0 || n as usize > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {n}"),
        ));
    }
    let mut frame = vec![0u8; 4 + n as usize];
    frame[..4].copy_from_slice(&len);
    s.read_exact(&mut frame[4..])?;
    Ok(frame)
}

/// The proxy's stand-in for an upstream broker as (host, port).
fn stand_in(shared: &Arc<Shared>, host: &str, port: i32) -> Result<(StrBytes, i32), String> {
    let local = listener_for(shared, &format!("{host}:{port}")).map_err(|e| e.to_string())?;
    Ok((
        StrBytes::from_string(local.ip().to_string()),
        i32::from(local.port()),
    ))
}

/// Rewrites broker addresses in a response `body` (header included, length prefix not),
/// returning the new frame (length prefix included), or `None` if nothing needs it.
fn rewrite(shared: &Arc<Shared>, p: &Pending, body: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let api = match Kp::try_from(p.api) {
        Ok(k @ (Kp::Metadata | Kp::FindCoordinator)) => k,
        Ok(Kp::Produce) if p.version >= 10 => Kp::Produce,
        _ => return Ok(None),
    };
    let v = p.version;
    let mut buf = Bytes::copy_from_slice(body);
    let header = ResponseHeader::decode(&mut buf, api.response_header_version(v)).map_err(text)?;
    let mut out = BytesMut::with_capacity(body.len() + 64);
    out.put_i32(0);
    header
        .encode(&mut out, api.response_header_version(v))
        .map_err(text)?;
    match api {
        Kp::Metadata => {
            let mut m = MetadataResponse::decode(&mut buf, v).map_err(text)?;
            for b in &mut m.brokers {
                lock(&shared.nodes).insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
                (b.host, b.port) = stand_in(shared, b.host.as_str(), b.port)?;
            }
            m.encode(&mut out, v).map_err(text)?;
        }
        Kp::FindCoordinator => {
            let mut m = FindCoordinatorResponse::decode(&mut buf, v).map_err(text)?;
            if v < 4 {
                if m.node_id.0 < 0 || m.host.is_empty() {
                    return Ok(None);
                }
                (m.host, m.port) = stand_in(shared, m.host.as_str(), m.port)?;
            }
            for c in &mut m.coordinators {
                if c.node_id.0 >= 0 && !c.host.is_empty() {
                    (c.host, c.port) = stand_in(shared, c.host.as_str(), c.port)?;
                }
            }
            m.encode(&mut out, v).map_err(text)?;
        }
        _ => {
            let mut m = ProduceResponse::decode(&mut buf, v).map_err(text)?;
            if m.node_endpoints.is_empty() {
                return Ok(None);
            }
            for n in &mut m.node_endpoints {
                (n.host, n.port) = stand_in(shared, n.host.as_str(), n.port)?;
            }
            m.encode(&mut out, v).map_err(text)?;
        }
    }
    let len = i32::try_from(out.len() - 4).map_err(|_| "response too large".to_string())?;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(Some(out.to_vec()))
}

/// kafka-protocol's errors are `anyhow::Error`: keep that type out of our signatures.
fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests;
