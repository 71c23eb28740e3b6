//! A complete kacrab driver on `mio`, written only against the session's public API: a
//! guide for writing one. The [`Session`] does everything Kafka-specific (routing,
//! metadata, version negotiation, retries, timers, the backlog, flush, close); the
//! driver moves bytes and time, and maps the session's ids to the application's waiters.
//!
//! One thread runs the loop. The application's calls reach it as closures over the
//! session through a channel, with a [`Waker`] to interrupt `Poll::poll`.

use std::collections::{HashMap, VecDeque};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Buf;
use kacrab_driver::{
    Completion, ConnId, ConnectOptions, ConnectionError, Frame, MetricsSnapshot, OpId, Output,
    SendId, Session, SessionConfig, Timestamp, UnresolvableBootstrap,
};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};

/// The loop's own token; connections use their [`ConnId`] as theirs.
const WAKER: Token = Token(usize::MAX);

/// Commands applied per turn of the loop before the sockets are served: an application
/// that calls faster than the loop takes its calls would otherwise keep the loop taking
/// them, its sockets unread and unwritten, for as long as it keeps calling.
const COMMAND_BATCH: usize = 1024;

/// What a command returned: the id whose [`Completion`] its caller waits for.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Id {
    /// A send.
    Send(SendId),
    /// Any other command.
    Op(OpId),
}

/// Receives the completion of one command, on the loop's thread.
pub type Reply = Box<dyn FnOnce(Completion) + Send>;
type Command = (Box<dyn FnOnce(&mut Session, Timestamp) -> Id + Send>, Reply);
/// A look at the session that completes at once (a metrics snapshot).
type Inspect = Box<dyn FnOnce(&mut Session, Timestamp) + Send>;

/// A producer whose session runs on its own thread, in a `mio` loop.
pub struct MioProducer {
    commands: mpsc::Sender<Command>,
    inspects: mpsc::Sender<Inspect>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl MioProducer {
    /// Starts the loop for `config`, once its bootstrap servers resolved (the session
    /// does no I/O: resolving them is the driver's, once, as Java's constructor does).
    /// An unresolvable list fails with `InvalidInput` holding the
    /// [`UnresolvableBootstrap`] that names each server.
    pub fn start(config: SessionConfig) -> io::Result<Self> {
        UnresolvableBootstrap::check(config.bootstrap(), |server| {
            server.to_socket_addrs().map(Iterator::count)
        })
        .map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))?;
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let (commands, rx) = mpsc::channel();
        let (inspects, inspect_rx) = mpsc::channel();
        // The loop holds the waker too: dropping the last handle right after its wake
        // would close the eventfd and take the pending wake-up with it.
        let held = Arc::clone(&waker);
        let thread = thread::Builder::new()
            .name("kacrab-mio".into())
            .spawn(move || run(config, poll, rx, inspect_rx, &held))?;
        Ok(Self {
            commands,
            inspects,
            waker,
            thread: Some(thread),
        })
    }

    /// Runs `call` on the session; `reply` gets the completion of the id it returns. If
    /// the loop has ended, `reply` is dropped unanswered.
    pub fn call(
        &self,
        call: impl FnOnce(&mut Session, Timestamp) -> Id + Send + 'static,
        reply: impl FnOnce(Completion) + Send + 'static,
    ) {
        let command: Command = (Box::new(call), Box::new(reply));
        if self.commands.send(command).is_ok() {
            let _ = self.waker.wake();
        }
    }

    /// Runs `call` and blocks until its completion; `None` if the loop has ended.
    pub fn call_wait(
        &self,
        call: impl FnOnce(&mut Session, Timestamp) -> Id + Send + 'static,
    ) -> Option<Completion> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.call(call, move |done| drop(tx.send(done)));
        rx.recv().ok()
    }

    /// Every metric of the session (see [`Session::metrics`]); `None` if the loop has
    /// ended.
    pub fn metrics(&self) -> Option<MetricsSnapshot> {
        let (tx, rx) = mpsc::sync_channel(1);
        let inspect: Inspect = Box::new(move |s, now| drop(tx.send(s.metrics(now))));
        self.inspects.send(inspect).ok()?;
        let _ = self.waker.wake();
        rx.recv().ok()
    }

    /// Closes the producer (see [`Session::close`]) and waits for the loop to end.
    /// Returns whether the session reported it closed (not if the loop had ended).
    pub fn close(mut self, timeout: Option<Duration>) -> bool {
        let done = self.call_wait(move |s, now| Id::Op(s.close(timeout, now)));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        matches!(done, Some(Completion::Closed { .. }))
    }
}

impl Drop for MioProducer {
    /// A producer dropped without `close` closes at once (what is left fails, as Java's
    /// `close(Duration.ZERO)`), so its thread ends.
    fn drop(&mut self) {
        self.call(|s, now| Id::Op(s.close(Some(Duration::ZERO), now)), drop);
    }
}

/// One socket and what is still to be written to it, in order.
struct Conn {
    stream: TcpStream,
    connected: bool,
    out: VecDeque<Frame>,
}

/// The loop: commands in, outputs to sockets, completions out, then wait for a socket, a
/// command or the session's next deadline.
fn run(
    config: SessionConfig,
    mut poll: Poll,
    commands: mpsc::Receiver<Command>,
    inspects: mpsc::Receiver<Inspect>,
    _waker: &Waker,
) {
    let start = Instant::now();
    let clock = || Timestamp::from_micros(start.elapsed().as_micros() as u64);
    let unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let mut config = config;
    seed_sasl_nonces(&mut config);
    let mut session = Session::new(config, clock(), unix_ms);
    let (mut conns, mut waiters) = (HashMap::new(), HashMap::<Id, Reply>::new());
    let mut events = Events::with_capacity(256);
    loop {
        let now = clock();
        let mut taken = 0;
        for (call, reply) in commands.try_iter().take(COMMAND_BATCH) {
            waiters.insert(call(&mut session, now), reply);
            taken += 1;
        }
        while let Ok(inspect) = inspects.try_recv() {
            inspect(&mut session, now);
        }
        while let Some(output) = session.poll_output(now) {
            match output {
                Output::Connect { conn, addr } => {
                    match connect(&poll, conn, &addr, session.connect_options(conn)) {
                        Ok(c) => drop(conns.insert(conn, c)),
                        Err(e) => session.handle_connect_error(conn, (&e).into(), now),
                    }
                }
                Output::Transmit { conn, frame, .. } => {
                    let Some(c) = conns.get_mut(&conn) else {
                        continue;
                    };
                    c.out.push_back(frame);
                    if !c.connected {
                        continue;
                    }
                    if let Err(e) = write_queued(c, conn, &mut session, now) {
                        drop(conns.remove(&conn));
                        session.handle_connection_lost(conn, (&e).into(), now);
                    }
                }
                // One thread writes every socket in the session's order: no ticket sequencer.
                Output::Release { .. } => {}
                Output::Close { conn, .. } => {
                    if let Some(mut c) = conns.remove(&conn) {
                        let _ = poll.registry().deregister(&mut c.stream);
                    }
                }
            }
        }
        while let Some(done) = session.poll_completion() {
            let id = match &done {
                Completion::Record { id, .. } => Id::Send(*id),
                Completion::Flushed { op }
                | Completion::Transaction { op, .. }
                | Completion::PartitionCount { op, .. }
                | Completion::Closed { op } => Id::Op(*op),
                _ => continue,
            };
            if let Some(reply) = waiters.remove(&id) {
                reply(done);
            }
        }
        if session.is_finished() {
            return;
        }
        // Commands left over were already signalled: their wake-ups are spent, so only
        // look at the sockets before taking the rest.
        let timeout = if taken == COMMAND_BATCH {
            Some(Duration::ZERO)
        } else {
            session
                .poll_timeout()
                .map(|t| Duration::from_micros(t.as_micros().saturating_sub(now.as_micros())))
        };
        if poll
            .poll(&mut events, timeout)
            .is_err_and(|e| e.kind() != ErrorKind::Interrupted)
        {
            return; // Nothing can be waited for: the waiters see the loop gone.
        }
        let now = clock();
        for event in &events {
            let conn = ConnId(event.token().0 as u64);
            let Some(c) = conns.get_mut(&conn) else {
                continue;
            };
            if let Err(e) = pump(c, conn, &mut session, now) {
                // Before the session heard `handle_connected`, the connect failed.
                let opened = c.connected;
                conns.remove(&conn);
                let cause = ConnectionError::from(&e);
                if opened {
                    session.handle_connection_lost(conn, cause, now);
                } else {
                    session.handle_connect_error(conn, cause, now);
                }
            }
        }
        if session.poll_timeout().is_some_and(|t| t <= now) {
            session.handle_timeout(now);
        }
    }
}

/// Starts a non-blocking connect as the session asked (the name is resolved here,
/// blocking: a real driver would resolve on another thread): to the resolved address
/// its options pick, with the socket buffers set before connecting.
fn connect(
    poll: &Poll,
    conn: ConnId,
    addr: &str,
    options: Option<ConnectOptions>,
) -> io::Result<Conn> {
    use socket2::{Domain, Protocol, Socket, Type};
    let resolved: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    let (target, send, receive) = match options {
        Some(o) => (o.pick(&resolved), o.send_buffer, o.receive_buffer),
        None => (resolved.first(), None, None),
    };
    let target = *target.ok_or(ErrorKind::AddrNotAvailable)?;
    let socket = Socket::new(
        Domain::for_address(target),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_nonblocking(true)?;
    if let Some(n) = send {
        socket.set_send_buffer_size(n)?;
    }
    if let Some(n) = receive {
        socket.set_recv_buffer_size(n)?;
    }
    match socket.connect(&target.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc_einprogress()) => {}
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    let mut stream = TcpStream::from_std(socket.into());
    poll.registry().register(
        &mut stream,
        Token(conn.0 as usize),
        Interest::READABLE | Interest::WRITABLE,
    )?;
    let (connected, out) = (false, VecDeque::new());
    Ok(Conn {
        stream,
        connected,
        out,
    })
}

/// `EINPROGRESS`: a non-blocking connect under way (Linux and macOS numbers; std has
/// no `ErrorKind` for it).
fn libc_einprogress() -> i32 {
    if cfg!(target_os = "linux") {
        115
    } else {
        36
    }
}

/// Acts on a readiness event: finishes the connect, reads everything there is into the
/// session, writes what is queued. An error means the connection is gone.
fn pump(c: &mut Conn, conn: ConnId, session: &mut Session, now: Timestamp) -> io::Result<()> {
    if !c.connected {
        if let Some(e) = c.stream.take_error()? {
            return Err(e);
        }
        match c.stream.peer_addr() {
            Ok(_) => c.connected = true,
            Err(e) if e.kind() == ErrorKind::NotConnected => return Ok(()),
            Err(e) => return Err(e),
        }
        let _ = c.stream.set_nodelay(true);
        session.handle_connected(conn, now);
    }
    let mut buf = [0u8; 64 * 1024];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "closed by the broker",
                ))
            }
            Ok(n) => session.handle_bytes(conn, &buf[..n], now),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    write_queued(c, conn, session, now)
}

/// Writes queued frames until the socket would block (mio then reports it writable):
/// each frame's parts in one vectored write. The frames the socket took whole are
/// reported to the session (`handle_transmitted`: an `acks=0` Produce request is
/// complete only then), even when a later write fails.
fn write_queued(
    c: &mut Conn,
    conn: ConnId,
    session: &mut Session,
    now: Timestamp,
) -> io::Result<()> {
    let mut written = 0;
    let result = loop {
        let Some(front) = c.out.front_mut() else {
            break Ok(());
        };
        let mut slices = [io::IoSlice::new(&[]); 64];
        let n = front.chunks_vectored(&mut slices);
        match c.stream.write_vectored(&slices[..n]) {
            Ok(0) => break Err(ErrorKind::WriteZero.into()),
            Ok(n) if n == front.len() => {
                drop(c.out.pop_front());
                written += 1;
            }
            Ok(n) => front.advance(n),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    if written > 0 {
        session.handle_transmitted(conn, written, now);
    }
    result
}

/// Fills the SCRAM nonce seed from the operating system unless the application gave
/// one: the session is deterministic and has no randomness of its own.
fn seed_sasl_nonces(config: &mut kacrab_driver::SessionConfig) {
    if config.sasl().nonce_seed_setting().is_none() {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the operating system's random source");
        config.set_sasl_nonce_seed(kacrab_driver::NonceSeed::new(seed));
    }
}
