//! One task per broker connection: connect, write frames in order, read bytes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kacrab_driver::Frame;
use kacrab_driver::{ConnId, ConnectOptions, ConnectionError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// A byte stream to a broker: what a [`Connector`] opens.
pub trait BrokerStream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> BrokerStream for T {}

/// The future a [`Connector`] returns.
pub type ConnectFuture = Pin<Box<dyn Future<Output = io::Result<Box<dyn BrokerStream>>> + Send>>;

/// Opens connections to brokers. The default is plain TCP (with `TCP_NODELAY`, the
/// session's `send.buffer.bytes` / `receive.buffer.bytes`, and each attempt to a host
/// dialling its next resolved address, as `client.dns.lookup=use_all_dns_ips`); supply
/// your own with [`ProducerBuilder::connector`](crate::ProducerBuilder::connector) to
/// run over TLS, a proxy, or in-memory streams in tests.
///
/// The producer bounds each attempt by `socket.connection.setup.timeout.ms`: past it the
/// connect future is dropped.
pub trait Connector: Send + Sync + 'static {
    /// Opens a stream to `addr` (`host:port`, as `bootstrap.servers` or Metadata name it).
    fn connect(&self, addr: &str) -> ConnectFuture;
}

impl<F> Connector for F
where
    F: Fn(&str) -> ConnectFuture + Send + Sync + 'static,
{
    fn connect(&self, addr: &str) -> ConnectFuture {
        self(addr)
    }
}

/// How connection tasks reach brokers.
#[derive(Clone)]
pub(crate) enum Transport {
    Tcp,
    Custom(Arc<dyn Connector>),
}

/// What a connection task tells the driver task.
#[derive(Debug)]
pub(crate) enum ConnEvent {
    Connected,
    Bytes(Bytes),
    /// The next this many frames handed to the task were written to the socket
    /// completely (and flushed): the session's `handle_transmitted`.
    Written(usize),
    /// The socket could not be opened, for this cause (refused, unresolvable, ...).
    ConnectFailed(ConnectionError),
    /// The socket failed, for this cause (reset, closed by the broker, ...).
    Disconnected(ConnectionError),
}

/// How a connection's reading and writing ended.
enum Ended {
    /// The driver closed it (or is gone).
    ByDriver,
    /// The socket failed or the broker closed it.
    Lost(ConnectionError),
}

/// The driver task's side of one connection task.
#[derive(Debug)]
pub(crate) struct ConnHandle {
    /// The connection's write queue, fed in the session's order. Handing a frame to it
    /// is the enqueue point (Java's `Selector` send): the task writes at the socket's
    /// pace, so a peer that stops reading holds back only its own queue.
    pub(crate) frames: mpsc::UnboundedSender<Frame>,
    /// Dropped or fired: close the socket now, even mid-write, and drop the frames not
    /// yet written.
    stop: oneshot::Sender<()>,
}

impl ConnHandle {
    /// Closes the socket now (dropping the handle does the same).
    pub(crate) fn close(self) {
        let _ = self.stop.send(());
    }
}

/// Everything a connection task needs.
pub(crate) struct ConnTask {
    pub(crate) conn: ConnId,
    pub(crate) addr: String,
    /// The session's answer for this connection (`None`: the session did not know it,
    /// which it always does right after asking; the defaults of the OS then apply).
    pub(crate) options: Option<ConnectOptions>,
    pub(crate) transport: Transport,
    pub(crate) events: mpsc::UnboundedSender<(ConnId, ConnEvent)>,
}

/// Opens a TCP connection to `addr` as the session asked: the resolved address its
/// `address_index` picks, the socket buffers set before connecting (Java's
/// `Selector.configureSocketChannel` sets them before `connect` too: a receive buffer
/// above 64 KiB must be set before the handshake for TCP window scaling to use it).
async fn connect_tcp(addr: &str, options: Option<ConnectOptions>) -> io::Result<TcpStream> {
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host(addr).await?.collect();
    let (target, send, receive) = match options {
        Some(o) => (o.pick(&resolved), o.send_buffer, o.receive_buffer),
        None => (resolved.first(), None, None),
    };
    let target = *target
        .ok_or_else(|| io::Error::new(io::ErrorKind::AddrNotAvailable, "resolved to no address"))?;
    let socket = if target.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(n) = send {
        socket.set_send_buffer_size(u32::try_from(n).unwrap_or(u32::MAX))?;
    }
    if let Some(n) = receive {
        socket.set_recv_buffer_size(u32::try_from(n).unwrap_or(u32::MAX))?;
    }
    socket.set_nodelay(true)?;
    socket.connect(target).await
}

/// Size of each read from a socket (responses are small; this is a ceiling per read).
const READ_CHUNK: usize = 64 * 1024;

/// At most this many frames already queued are written before their writes are
/// reported together: a busy connection still reports as it goes.
const WRITE_REPORT_BATCH: usize = 64;

impl ConnTask {
    /// Spawns the task; returns the driver's handle on it.
    pub(crate) fn spawn(self) -> ConnHandle {
        let (frames_tx, frames_rx) = mpsc::unbounded_channel();
        let (close_tx, close_rx) = oneshot::channel();
        tokio::spawn(self.run(frames_rx, close_rx));
        ConnHandle {
            frames: frames_tx,
            stop: close_tx,
        }
    }

    async fn run(
        self,
        mut frames: mpsc::UnboundedReceiver<Frame>,
        mut close: oneshot::Receiver<()>,
    ) {
        let connect = async {
            match &self.transport {
                Transport::Tcp => connect_tcp(&self.addr, self.options).await.map(Stream::Tcp),
                Transport::Custom(c) => c.connect(&self.addr).await.map(Stream::Custom),
            }
        };
        // The session times the attempt: past its deadline it closes the connection.
        let connected: Option<io::Result<Stream>> = tokio::select! {
            r = connect => Some(r),
            _ = &mut close => None,
        };
        // Frames not yet written when the task ends are dropped with `frames`: the session
        // learns of the loss from the close it asked for or from `Disconnected`.
        let stream = match connected {
            // The driver closed the connection (the session dropped it) while connecting.
            None => return,
            Some(Err(e)) => {
                let cause = ConnectionError::from(&e);
                let _ = self
                    .events
                    .send((self.conn, ConnEvent::ConnectFailed(cause)));
                return;
            }
            Some(Ok(s)) => s,
        };
        let _ = self.events.send((self.conn, ConnEvent::Connected));
        let ended = match stream {
            Stream::Tcp(mut tcp) => {
                let (r, w) = tcp.split();
                self.serve(r, w, &mut frames, &mut close).await
            }
            Stream::Custom(s) => {
                let (r, w) = tokio::io::split(s);
                self.serve(r, w, &mut frames, &mut close).await
            }
        };
        if let Ended::Lost(cause) = ended {
            let _ = self
                .events
                .send((self.conn, ConnEvent::Disconnected(cause)));
        }
    }

    /// Reads and writes until the socket fails or the driver closes it. Returns how it
    /// ended (with the socket's error when it failed).
    async fn serve<R, W>(
        &self,
        mut r: R,
        mut w: W,
        frames: &mut mpsc::UnboundedReceiver<Frame>,
        close: &mut oneshot::Receiver<()>,
    ) -> Ended
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let read = async {
            let mut buf = BytesMut::with_capacity(READ_CHUNK);
            loop {
                if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                    buf.reserve(READ_CHUNK);
                }
                match r.read_buf(&mut buf).await {
                    Ok(0) => return Ended::Lost(ConnectionError::closed_by_peer()),
                    Err(e) => return Ended::Lost(ConnectionError::from(&e)),
                    Ok(_) => {
                        let chunk = buf.split().freeze();
                        if self
                            .events
                            .send((self.conn, ConnEvent::Bytes(chunk)))
                            .is_err()
                        {
                            return Ended::ByDriver;
                        }
                    }
                }
            }
        };
        // A write blocked on a peer that stopped reading waits here, in this task only;
        // the session's request timeout closes the connection.
        let write = async {
            while let Some(mut frame) = frames.recv().await {
                // The frames already queued are written together, then flushed (a
                // stream that buffers, as a TLS one may, has written nothing before),
                // then reported written: an acks=0 Produce request is complete only
                // then (Java's `NetworkClient.handleCompletedSends`).
                let mut written = 0;
                loop {
                    // One vectored write per frame: its header and its batches' own bytes.
                    if let Err(e) = w.write_all_buf(&mut frame).await {
                        return Ended::Lost(ConnectionError::from(&e));
                    }
                    written += 1;
                    if written == WRITE_REPORT_BATCH {
                        break;
                    }
                    match frames.try_recv() {
                        Ok(next) => frame = next,
                        Err(_) => break,
                    }
                }
                if let Some(ended) = self.report_written(&mut w, written).await {
                    return ended;
                }
            }
            // The driver task is gone: nothing more will come.
            Ended::ByDriver
        };
        tokio::select! {
            biased;
            _ = close => Ended::ByDriver,
            ended = read => ended,
            ended = write => ended,
        }
    }

    /// Flushes `w` and reports `frames` frames written; `Some` when the connection
    /// ended instead.
    async fn report_written<W: AsyncWrite + Unpin>(
        &self,
        w: &mut W,
        frames: usize,
    ) -> Option<Ended> {
        if let Err(e) = w.flush().await {
            return Some(Ended::Lost(ConnectionError::from(&e)));
        }
        self.events
            .send((self.conn, ConnEvent::Written(frames)))
            .is_err()
            .then_some(Ended::ByDriver)
    }
}

enum Stream {
    Tcp(TcpStream),
    Custom(Box<dyn BrokerStream>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    /// Each side's buffer in the in-memory pipes: a frame larger than this blocks its
    /// writer until the broker end reads.
    const PIPE: usize = 1 << 16;

    /// A connector over in-memory pipes whose broker ends are handed to the test.
    fn pipes() -> (
        Transport,
        mpsc::UnboundedReceiver<(String, tokio::io::DuplexStream)>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let tx = Mutex::new(tx);
        let connector = move |addr: &str| -> ConnectFuture {
            let (client, server) = tokio::io::duplex(PIPE);
            let _ = tx.lock().unwrap().send((addr.to_owned(), server));
            Box::pin(async move { Ok(Box::new(client) as Box<dyn BrokerStream>) })
        };
        (Transport::Custom(Arc::new(connector)), rx)
    }

    fn task(
        conn: u64,
        transport: &Transport,
        events: &mpsc::UnboundedSender<(ConnId, ConnEvent)>,
    ) -> ConnHandle {
        ConnTask {
            conn: ConnId(conn),
            addr: format!("broker-{conn}:9092"),
            options: None,
            transport: transport.clone(),
            events: events.clone(),
        }
        .spawn()
    }

    /// Reads `n` bytes from a broker end. The timeout only turns a hang into a failure.
    async fn read(server: &mut tokio::io::DuplexStream, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        tokio::time::timeout(Duration::from_secs(10), server.read_exact(&mut buf))
            .await
            .expect("the frame never came")
            .expect("the pipe failed");
        buf
    }

    /// Issue 18, item 3: a broker that stops reading blocks the write to its own socket
    /// only. Another connection's frames, handed over later, still go out; once the
    /// stalled broker reads again it gets its frames whole and in order.
    #[tokio::test]
    async fn a_peer_that_stops_reading_holds_back_only_its_own_connection() {
        let (transport, mut accepted) = pipes();
        let (events, _events_rx) = mpsc::unbounded_channel();
        let stalled = task(0, &transport, &events);
        let healthy = task(1, &transport, &events);
        let mut servers = BTreeMap::new();
        for _ in 0..2 {
            let (addr, s) = accepted.recv().await.unwrap();
            servers.insert(addr, s);
        }
        let mut sa = servers.remove("broker-0:9092").unwrap();
        let mut sb = servers.remove("broker-1:9092").unwrap();
        // More than the pipe holds: the write blocks until broker 0 reads.
        let big = Bytes::from(vec![7u8; 4 * PIPE]);
        stalled.frames.send(big.clone().into()).unwrap();
        stalled
            .frames
            .send(Bytes::from_static(b"next").into())
            .unwrap();
        healthy
            .frames
            .send(Bytes::from_static(b"late").into())
            .unwrap();
        assert_eq!(read(&mut sb, 4).await, b"late");
        assert_eq!(read(&mut sa, big.len()).await, big);
        assert_eq!(read(&mut sa, 4).await, b"next");
    }

    /// A connection the driver closes drops the frames it has not written, and later
    /// frames are refused (the driver forgot the connection already).
    #[tokio::test]
    async fn a_closed_connection_writes_nothing_more() {
        let (transport, mut accepted) = pipes();
        let (events, _events_rx) = mpsc::unbounded_channel();
        let a = task(0, &transport, &events);
        let (_, mut sa) = accepted.recv().await.unwrap();
        let frames = a.frames.clone();
        a.close();
        // The broker end sees the stream end, with nothing written on it.
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), sa.read_to_end(&mut rest))
            .await
            .expect("the stream never ended")
            .expect("the pipe failed");
        assert!(rest.is_empty());
        assert!(frames.send(Bytes::from_static(b"gone").into()).is_err());
    }
}
