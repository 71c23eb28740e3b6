//! One task per broker connection: connect, write frames in order, read bytes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kacrab_driver::{ConnId, ConnectOptions};
use kacrab_idempotence::ticket::Ticket;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot};

use crate::sequencer::SharedSequencer;

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

/// A frame for a connection task, with the Produce ticket it holds.
#[derive(Debug)]
pub(crate) struct OutFrame {
    pub(crate) frame: Bytes,
    pub(crate) ticket: Option<Ticket>,
}

/// What a connection task tells the driver task.
#[derive(Debug)]
pub(crate) enum ConnEvent {
    Connected,
    Bytes(Bytes),
    /// The socket failed, or could not be opened.
    Disconnected,
}

/// The driver task's side of one connection task.
#[derive(Debug)]
pub(crate) struct ConnHandle {
    pub(crate) frames: mpsc::UnboundedSender<OutFrame>,
    /// Dropped or fired: close the socket now, even mid-write or while a frame waits for
    /// its ticket's turn, and drop the frames not yet written.
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
    pub(crate) sequencer: Arc<SharedSequencer>,
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
        mut frames: mpsc::UnboundedReceiver<OutFrame>,
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
        let stream = match connected {
            // The driver closed the connection (the session dropped it) while connecting.
            None => return abandon_all(&mut frames, None, &self.sequencer),
            Some(Err(_)) => {
                abandon_all(&mut frames, None, &self.sequencer);
                let _ = self.events.send((self.conn, ConnEvent::Disconnected));
                return;
            }
            Some(Ok(s)) => s,
        };
        let _ = self.events.send((self.conn, ConnEvent::Connected));
        let mut current: Option<Ticket> = None;
        let closed_by_driver = match stream {
            Stream::Tcp(mut tcp) => {
                let (r, w) = tcp.split();
                self.serve(r, w, &mut frames, &mut close, &mut current)
                    .await
            }
            Stream::Custom(s) => {
                let (r, w) = tokio::io::split(s);
                self.serve(r, w, &mut frames, &mut close, &mut current)
                    .await
            }
        };
        abandon_all(&mut frames, current, &self.sequencer);
        if !closed_by_driver {
            let _ = self.events.send((self.conn, ConnEvent::Disconnected));
        }
    }

    /// Reads and writes until the socket fails or the driver closes it. Returns whether
    /// the driver closed it.
    async fn serve<R, W>(
        &self,
        mut r: R,
        mut w: W,
        frames: &mut mpsc::UnboundedReceiver<OutFrame>,
        close: &mut oneshot::Receiver<()>,
        current: &mut Option<Ticket>,
    ) -> bool
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
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let chunk = buf.split().freeze();
                        if self
                            .events
                            .send((self.conn, ConnEvent::Bytes(chunk)))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
        };
        let write = async {
            while let Some(f) = frames.recv().await {
                match f.ticket {
                    Some(ticket) => {
                        *current = Some(ticket);
                        self.sequencer.wait_turn(ticket).await;
                        if w.write_all(&f.frame).await.is_err() {
                            return false;
                        }
                        self.sequencer.enqueued(ticket);
                        *current = None;
                    }
                    None => {
                        if w.write_all(&f.frame).await.is_err() {
                            return false;
                        }
                    }
                }
            }
            // The driver task is gone: nothing more will come.
            true
        };
        tokio::select! {
            biased;
            _ = close => true,
            () = read => false,
            by_driver = write => by_driver,
        }
    }
}

/// Gives up every ticket this connection will never write: the one it was waiting on or
/// writing, and those still in its channel.
fn abandon_all(
    frames: &mut mpsc::UnboundedReceiver<OutFrame>,
    current: Option<Ticket>,
    sequencer: &SharedSequencer,
) {
    if let Some(t) = current {
        sequencer.abandon(t);
    }
    // After `close`, a send from the driver fails and the driver abandons that ticket.
    frames.close();
    while let Ok(f) = frames.try_recv() {
        if let Some(t) = f.ticket {
            sequencer.abandon(t);
        }
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

    /// A connector over in-memory pipes whose broker ends are handed to the test.
    fn pipes() -> (
        Transport,
        mpsc::UnboundedReceiver<(String, tokio::io::DuplexStream)>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let tx = Mutex::new(tx);
        let connector = move |addr: &str| -> ConnectFuture {
            let (client, server) = tokio::io::duplex(1 << 16);
            let _ = tx.lock().unwrap().send((addr.to_owned(), server));
            Box::pin(async move { Ok(Box::new(client) as Box<dyn BrokerStream>) })
        };
        (Transport::Custom(Arc::new(connector)), rx)
    }

    fn task(
        conn: u64,
        transport: &Transport,
        events: &mpsc::UnboundedSender<(ConnId, ConnEvent)>,
        sequencer: &Arc<SharedSequencer>,
    ) -> ConnHandle {
        ConnTask {
            conn: ConnId(conn),
            addr: format!("broker-{conn}:9092"),
            options: None,
            transport: transport.clone(),
            events: events.clone(),
            sequencer: Arc::clone(sequencer),
        }
        .spawn()
    }

    fn frame(ticket: u64) -> OutFrame {
        OutFrame {
            frame: Bytes::from(vec![ticket as u8; 4]),
            ticket: Some(Ticket {
                seq: ticket,
                parts: 1,
            }),
        }
    }

    /// Reads one 4-byte frame from a broker end, or `None` if nothing comes soon.
    async fn read(server: &mut tokio::io::DuplexStream) -> Option<u8> {
        let mut buf = [0u8; 4];
        tokio::time::timeout(Duration::from_millis(50), server.read_exact(&mut buf))
            .await
            .ok()?
            .ok()?;
        Some(buf[0])
    }

    /// A later ticket on one connection waits until the earlier ticket on another
    /// connection was handed to its socket.
    #[tokio::test]
    async fn a_later_ticket_never_overtakes_an_earlier_one_across_connections() {
        let (transport, mut accepted) = pipes();
        let (events, _events_rx) = mpsc::unbounded_channel();
        let sequencer = Arc::new(SharedSequencer::default());
        let a = task(0, &transport, &events, &sequencer);
        let b = task(1, &transport, &events, &sequencer);
        let mut servers = BTreeMap::new();
        for _ in 0..2 {
            let (addr, s) = accepted.recv().await.unwrap();
            servers.insert(addr, s);
        }
        let mut sa = servers.remove("broker-0:9092").unwrap();
        let mut sb = servers.remove("broker-1:9092").unwrap();
        // Ticket 1 reaches connection B first: it must wait.
        b.frames.send(frame(1)).unwrap();
        assert_eq!(read(&mut sb).await, None, "ticket 1 went before ticket 0");
        a.frames.send(frame(0)).unwrap();
        assert_eq!(read(&mut sa).await, Some(0));
        assert_eq!(read(&mut sb).await, Some(1));
        // Untagged frames never wait.
        b.frames
            .send(OutFrame {
                frame: Bytes::from_static(b"meta"),
                ticket: None,
            })
            .unwrap();
        assert_eq!(read(&mut sb).await, Some(b'm'));
    }

    /// A connection closed by the driver with a ticket still waiting gives it up, so a
    /// later ticket on another connection goes.
    #[tokio::test]
    async fn a_closed_connection_abandons_its_tickets() {
        let (transport, mut accepted) = pipes();
        let (events, _events_rx) = mpsc::unbounded_channel();
        let sequencer = Arc::new(SharedSequencer::default());
        let a = task(0, &transport, &events, &sequencer);
        let b = task(1, &transport, &events, &sequencer);
        let mut servers = BTreeMap::new();
        for _ in 0..2 {
            let (addr, s) = accepted.recv().await.unwrap();
            servers.insert(addr, s);
        }
        let mut sa = servers.remove("broker-0:9092").unwrap();
        let mut sb = servers.remove("broker-1:9092").unwrap();
        a.frames.send(frame(1)).unwrap();
        b.frames.send(frame(2)).unwrap();
        assert_eq!(read(&mut sb).await, None, "ticket 2 waits for 0 and 1");
        a.close(); // A gives up ticket 1 ...
        sequencer.abandon(Ticket { seq: 0, parts: 1 }); // ... and the session released 0.
        assert_eq!(read(&mut sb).await, Some(2));
        assert_eq!(read(&mut sa).await, None, "A wrote nothing");
    }

    /// A connection whose socket dies with a ticket waiting gives it up too.
    #[tokio::test]
    async fn a_dead_connection_abandons_its_tickets() {
        let (transport, mut accepted) = pipes();
        let (events, mut events_rx) = mpsc::unbounded_channel();
        let sequencer = Arc::new(SharedSequencer::default());
        let a = task(0, &transport, &events, &sequencer);
        let b = task(1, &transport, &events, &sequencer);
        let mut servers = BTreeMap::new();
        for _ in 0..2 {
            let (addr, s) = accepted.recv().await.unwrap();
            servers.insert(addr, s);
        }
        let mut sb = servers.remove("broker-1:9092").unwrap();
        a.frames.send(frame(1)).unwrap();
        b.frames.send(frame(2)).unwrap();
        drop(servers.remove("broker-0:9092")); // A's broker goes away.
        loop {
            if let (ConnId(0), ConnEvent::Disconnected) = events_rx.recv().await.unwrap() {
                break;
            }
        }
        assert_eq!(read(&mut sb).await, None, "ticket 2 still waits for 0");
        sequencer.abandon(Ticket { seq: 0, parts: 1 });
        assert_eq!(read(&mut sb).await, Some(2));
        // A frame sent to the dead connection comes back to the sender to abandon.
        assert!(a.frames.send(frame(3)).is_err());
    }
}
