//! The sockets: one thread per connection opens it and then reads it, forwarding what
//! it reads to the I/O thread; the I/O thread owns every write half.

use std::collections::HashMap;
use std::io::{BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use kacrab_driver::{ConnId, ConnectOptions};

use crate::io::Msg;

/// What a connection's thread tells the I/O thread.
pub(crate) enum NetEvent {
    /// The socket is open; here is its write half.
    Connected { conn: ConnId, stream: TcpStream },
    /// It could not be opened.
    ConnectFailed { conn: ConnId },
    /// Bytes read.
    Bytes { conn: ConnId, data: Vec<u8> },
    /// End of stream or a read error.
    Eof { conn: ConnId },
}

/// Each connection's write buffer; the frames of one wake-up go out together.
const WRITE_BUFFER: usize = 64 * 1024;
const READ_BUFFER: usize = 64 * 1024;

enum Conn {
    /// Its thread is opening it. Invariant: `abandoned` is set once this entry is gone.
    Connecting { abandoned: Arc<AtomicBool> },
    Open {
        writer: BufWriter<TcpStream>,
        /// Frames written to `writer` since it was last flushed.
        unflushed: bool,
        abandoned: Arc<AtomicBool>,
    },
}

impl Conn {
    /// Drops the socket (and its unwritten frames) and lets its thread go quietly.
    fn shut(self) {
        match self {
            Self::Connecting { abandoned } => abandoned.store(true, Ordering::Release),
            Self::Open {
                writer, abandoned, ..
            } => {
                abandoned.store(true, Ordering::Release);
                // Not flushed, as BufWriter's drop would: the session dropped these.
                let (stream, _unwritten) = writer.into_parts();
                // Also ends the reader's blocking `read`.
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

/// The I/O thread's sockets.
pub(crate) struct Net {
    conns: HashMap<ConnId, Conn>,
    tx: Sender<Msg>,
    /// A socket write that cannot progress for this long fails (the connection is lost),
    /// so one stalled broker cannot stall the loop: `request.timeout.ms`, past which the
    /// session would give up on the request anyway.
    write_timeout: Duration,
}

/// A connection whose write failed.
pub(crate) struct WriteFailed(pub(crate) ConnId);

impl Net {
    pub(crate) fn new(tx: Sender<Msg>, write_timeout: Duration) -> Self {
        Self {
            conns: HashMap::new(),
            tx,
            write_timeout: write_timeout.max(Duration::from_millis(1)),
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
        let write_timeout = self.write_timeout;
        let spawned = thread::Builder::new()
            .name(format!("kacrab-conn-{}", conn.0))
            .spawn(move || connection_thread(conn, &addr, options, write_timeout, &flag, &tx));
        if spawned.is_ok() {
            self.conns.insert(conn, Conn::Connecting { abandoned });
        }
        spawned.is_ok()
    }

    /// `conn`'s thread opened it. `false` if the session closed it meanwhile (the
    /// stream is shut).
    pub(crate) fn opened(&mut self, conn: ConnId, stream: TcpStream) -> bool {
        match self.conns.remove(&conn) {
            Some(Conn::Connecting { abandoned }) => {
                let writer = BufWriter::with_capacity(WRITE_BUFFER, stream);
                self.conns.insert(
                    conn,
                    Conn::Open {
                        writer,
                        unflushed: false,
                        abandoned,
                    },
                );
                true
            }
            other => {
                if let Some(c) = other {
                    self.conns.insert(conn, c);
                }
                let _ = stream.shutdown(Shutdown::Both);
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

    /// Buffers `frame` on `conn` (after every earlier frame).
    pub(crate) fn write(&mut self, conn: ConnId, frame: &[u8]) -> Result<(), WriteFailed> {
        match self.conns.get_mut(&conn) {
            Some(Conn::Open {
                writer, unflushed, ..
            }) => {
                *unflushed = true;
                writer.write_all(frame).map_err(|_| WriteFailed(conn))
            }
            Some(Conn::Connecting { .. }) => {
                debug_assert!(false, "the session wrote on {conn:?} before it was open");
                Ok(())
            }
            // Already lost or closed: the session was told, and the frame is moot.
            None => Ok(()),
        }
    }

    /// Writes out every buffered frame; returns the connections whose write failed.
    pub(crate) fn flush(&mut self) -> Vec<WriteFailed> {
        let mut failed = Vec::new();
        for (&conn, c) in &mut self.conns {
            if let Conn::Open {
                writer, unflushed, ..
            } = c
            {
                if std::mem::take(unflushed) && writer.flush().is_err() {
                    failed.push(WriteFailed(conn));
                }
            }
        }
        failed
    }

    pub(crate) fn shut_all(&mut self) {
        for (_, c) in self.conns.drain() {
            c.shut();
        }
    }
}

/// One connection: open it, hand the write half to the I/O thread, then read until the
/// stream ends.
fn connection_thread(
    conn: ConnId,
    addr: &str,
    options: Option<ConnectOptions>,
    write_timeout: Duration,
    abandoned: &AtomicBool,
    tx: &Sender<Msg>,
) {
    let opened = open(addr, options).and_then(|stream| {
        stream.set_write_timeout(Some(write_timeout))?;
        let writer = stream.try_clone()?;
        Ok((stream, writer))
    });
    let (stream, writer) = match opened {
        Ok(halves) => halves,
        Err(_) => {
            let _ = tx.send(Msg::Net(NetEvent::ConnectFailed { conn }));
            return;
        }
    };
    if abandoned.load(Ordering::Acquire) {
        let _ = stream.shutdown(Shutdown::Both);
        return;
    }
    let connected = NetEvent::Connected {
        conn,
        stream: writer,
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
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let data = buf[..n].to_vec();
                if tx.send(Msg::Net(NetEvent::Bytes { conn, data })).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if !abandoned.load(Ordering::Acquire) {
        let _ = tx.send(Msg::Net(NetEvent::Eof { conn }));
    }
}
