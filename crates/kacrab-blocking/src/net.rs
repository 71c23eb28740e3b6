//! The sockets: each connection has two threads of its own, one that opens it and then
//! reads it (forwarding what it reads to the I/O thread), and one that writes the frames
//! the I/O thread hands it. The I/O thread itself never touches a socket, so it never
//! blocks on one.
//!
//! Why a writer thread per connection: a peer that stops reading (a partition dropping
//! packets, a frozen broker) fills the socket's send buffer, and a blocking write then
//! waits until it drains. Written from the I/O thread, that wait stalled every other
//! connection, every timer and every completion with it (issue 18, item 3). Non-blocking
//! writes with a pending buffer per connection would need a readiness poller, which
//! `std` does not have; a thread that may block costs nothing else. The stall is then
//! the session's business: its request timeout closes the connection, and the shutdown
//! ends the blocked write. What waits in a writer's queue is bounded by the session: at
//! most `max.in.flight.requests.per.connection` Produce requests of at most
//! `max.request.size` each per connection, plus the session's own requests (at most one
//! lookup at a time).

use std::collections::HashMap;
use std::io::{IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread;

use kacrab_driver::Frame;
use kacrab_driver::{ConnId, ConnectOptions, ConnectionError};

use crate::io::Msg;

/// What a connection's thread tells the I/O thread.
pub(crate) enum NetEvent {
    /// The socket is open and its writer runs.
    Connected { conn: ConnId, open: OpenConn },
    /// It could not be opened, for `cause` (refused, unresolvable, ...).
    ConnectFailed {
        conn: ConnId,
        cause: ConnectionError,
    },
    /// Bytes read.
    Bytes { conn: ConnId, data: Vec<u8> },
    /// The next `frames` frames queued on the writer were written to the socket
    /// completely (the session's `handle_transmitted`).
    Written { conn: ConnId, frames: usize },
    /// End of stream, a read error, or a write error (the writer shuts the socket, so
    /// its reader ends too), for `cause`.
    Eof {
        conn: ConnId,
        cause: ConnectionError,
    },
}

/// An open connection as the I/O thread holds it.
pub(crate) struct OpenConn {
    /// Its writer thread's queue, in the session's order.
    frames: Sender<Frame>,
    /// To shut it (which also ends its reader's `read` and its writer's `write`).
    socket: TcpStream,
}

const READ_BUFFER: usize = 64 * 1024;
/// Frames handed to one vectored write, at most (well under `IOV_MAX`).
const FRAMES_PER_WRITE: usize = 64;

enum Conn {
    /// Its thread is opening it. Invariant: `abandoned` is set once this entry is gone.
    Connecting { abandoned: Arc<AtomicBool> },
    Open {
        open: OpenConn,
        abandoned: Arc<AtomicBool>,
    },
}

impl Conn {
    /// Drops the socket (and its unwritten frames) and lets its threads go quietly.
    fn shut(self) {
        match self {
            Self::Connecting { abandoned } => abandoned.store(true, Ordering::Release),
            Self::Open { open, abandoned } => {
                abandoned.store(true, Ordering::Release);
                // Ends a blocked read or write; the writer drops what it still holds.
                let _ = open.socket.shutdown(Shutdown::Both);
            }
        }
    }
}

/// The I/O thread's sockets.
pub(crate) struct Net {
    conns: HashMap<ConnId, Conn>,
    tx: Sender<Msg>,
}

/// A connection whose writer is gone (its write failed).
pub(crate) struct WriteFailed(pub(crate) ConnId);

impl Net {
    pub(crate) fn new(tx: Sender<Msg>) -> Self {
        Self {
            conns: HashMap::new(),
            tx,
        }
    }

    /// Starts opening `conn` on a thread of its own (DNS and a slow connect never stall
    /// the loop; the session times the attempt). `false` if no thread could start.
    pub(crate) fn connect(
        &mut self,
        conn: ConnId,
        addr: String,
        options: Option<ConnectOptions>,
    ) -> bool {
        let abandoned = Arc::new(AtomicBool::new(false));
        let tx = self.tx.clone();
        let flag = Arc::clone(&abandoned);
        let spawned = thread::Builder::new()
            .name(format!("kacrab-conn-{}", conn.0))
            .spawn(move || connection_thread(conn, &addr, options, &flag, &tx));
        if spawned.is_ok() {
            self.conns.insert(conn, Conn::Connecting { abandoned });
        }
        spawned.is_ok()
    }

    /// `conn`'s thread opened it. `false` if the session closed it meanwhile (the
    /// socket is shut).
    pub(crate) fn opened(&mut self, conn: ConnId, open: OpenConn) -> bool {
        match self.conns.remove(&conn) {
            Some(Conn::Connecting { abandoned }) => {
                self.conns.insert(conn, Conn::Open { open, abandoned });
                true
            }
            other => {
                if let Some(c) = other {
                    self.conns.insert(conn, c);
                }
                let _ = open.socket.shutdown(Shutdown::Both);
                false
            }
        }
    }

    /// Whether `conn` is still the session's.
    pub(crate) fn knows(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    /// Forgets and shuts `conn`. `false` if it was already gone.
    pub(crate) fn remove(&mut self, conn: ConnId) -> bool {
        self.conns.remove(&conn).map(Conn::shut).is_some()
    }

    /// Queues `frame` on `conn`'s writer (after every earlier frame); never blocks.
    pub(crate) fn write(&mut self, conn: ConnId, frame: Frame) -> Result<(), WriteFailed> {
        match self.conns.get(&conn) {
            Some(Conn::Open { open, .. }) => open.frames.send(frame).map_err(|_| WriteFailed(conn)),
            Some(Conn::Connecting { .. }) => {
                debug_assert!(false, "the session wrote on {conn:?} before it was open");
                Ok(())
            }
            // Already lost or closed: the session was told, and the frame is moot.
            None => Ok(()),
        }
    }

    pub(crate) fn shut_all(&mut self) {
        for (_, c) in self.conns.drain() {
            c.shut();
        }
    }
}

/// One connection: open it, start its writer, hand the writer's queue to the I/O thread,
/// then read until the stream ends.
fn connection_thread(
    conn: ConnId,
    addr: &str,
    options: Option<ConnectOptions>,
    abandoned: &AtomicBool,
    tx: &Sender<Msg>,
) {
    let (frames, queue) = mpsc::channel();
    let opened = open(addr, options).and_then(|stream| {
        let writer = stream.try_clone()?;
        let socket = stream.try_clone()?;
        let reports = tx.clone();
        thread::Builder::new()
            .name(format!("kacrab-write-{}", conn.0))
            .spawn(move || write_loop(conn, writer, &queue, &reports))?;
        Ok((stream, socket))
    });
    let (stream, socket) = match opened {
        Ok(s) => s,
        Err(e) => {
            let cause = ConnectionError::from(&e);
            let _ = tx.send(Msg::Net(NetEvent::ConnectFailed { conn, cause }));
            return;
        }
    };
    if abandoned.load(Ordering::Acquire) {
        let _ = stream.shutdown(Shutdown::Both);
        return;
    }
    let connected = NetEvent::Connected {
        conn,
        open: OpenConn { frames, socket },
    };
    if tx.send(Msg::Net(connected)).is_ok() {
        read_loop(conn, stream, abandoned, tx);
    }
}

/// Opens a TCP connection to `addr` as the session asked: the resolved address its
/// `address_index` picks (`client.dns.lookup=use_all_dns_ips`: each attempt to a host
/// dials its next address, so a dead one costs one setup timeout), with `SO_SNDBUF` /
/// `SO_RCVBUF` set before connecting (as Java's `Selector.configureSocketChannel`: a
/// receive buffer above 64 KiB must be set before the handshake for TCP window scaling
/// to use it) and `TCP_NODELAY`.
fn open(addr: &str, options: Option<ConnectOptions>) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let resolved: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    let (target, send, receive) = match options {
        Some(o) => (o.pick(&resolved), o.send_buffer, o.receive_buffer),
        None => (resolved.first(), None, None),
    };
    let target = *target.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "resolved to no address",
        )
    })?;
    let socket = Socket::new(
        Domain::for_address(target),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    if let Some(n) = send {
        socket.set_send_buffer_size(n)?;
    }
    if let Some(n) = receive {
        socket.set_recv_buffer_size(n)?;
    }
    socket.set_tcp_nodelay(true)?;
    socket.connect(&target.into())?;
    Ok(socket.into())
}

fn read_loop(conn: ConnId, mut stream: TcpStream, abandoned: &AtomicBool, tx: &Sender<Msg>) {
    let mut buf = vec![0u8; READ_BUFFER];
    let cause = loop {
        match stream.read(&mut buf) {
            Ok(0) => break ConnectionError::closed_by_peer(),
            Ok(n) => {
                let data = buf[..n].to_vec();
                if tx.send(Msg::Net(NetEvent::Bytes { conn, data })).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break ConnectionError::from(&e),
        }
    };
    if !abandoned.load(Ordering::Acquire) {
        let _ = tx.send(Msg::Net(NetEvent::Eof { conn, cause }));
    }
}

/// Writes a connection's frames in order, every frame queued so far in one vectored
/// write of their parts (no copies: a Produce frame's batches are parts of their own),
/// until the I/O thread drops the queue or a write fails, and reports each write's
/// frames written once the socket took all of them (an `acks=0` Produce request is
/// complete only then, as Java's `NetworkClient.handleCompletedSends`). A failed write
/// shuts the socket: its reader then reports the connection lost, once.
fn write_loop(conn: ConnId, mut stream: TcpStream, queue: &Receiver<Frame>, tx: &Sender<Msg>) {
    let mut frames = Vec::with_capacity(FRAMES_PER_WRITE);
    while let Ok(first) = queue.recv() {
        frames.push(first);
        frames.extend(queue.try_iter().take(FRAMES_PER_WRITE - 1));
        if write_all(&mut stream, &frames).is_err() {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
        let written = NetEvent::Written {
            conn,
            frames: frames.len(),
        };
        if tx.send(Msg::Net(written)).is_err() {
            return;
        }
        frames.clear();
    }
}

fn write_all(stream: &mut TcpStream, frames: &[Frame]) -> std::io::Result<()> {
    // More slices than the system's IOV_MAX are fine: std writes the first IOV_MAX.
    let mut slices: Vec<IoSlice<'_>> = frames
        .iter()
        .flat_map(Frame::parts)
        .map(|p| IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match stream.write_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
