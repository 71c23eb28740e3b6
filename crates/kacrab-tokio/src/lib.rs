//! A Tokio Kafka idempotent producer.
//!
//! Records land in their partition's log exactly once and in send order, across retries,
//! reconnects and leader moves: the rules are those of the Java client, implemented by
//! the sans-IO core ([`kacrab_idempotence`]) and its session ([`kacrab_driver`]). This
//! crate only moves bytes and time for them.
//!
//! # Usage
//!
//! ```no_run
//! use kacrab_tokio::{Producer, ProducerRecord};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let producer = Producer::from_properties(&[
//!     ("bootstrap.servers", "localhost:9092"),
//!     ("client.id", "example"),
//!     ("linger.ms", "5"),
//! ])?;
//!
//! // `send` queues the record at once, in call order, and returns a future of its
//! // outcome: keep sending without waiting for acknowledgements.
//! let first = producer.send(ProducerRecord::new("events", 0, "hello"));
//! let second = producer.send(ProducerRecord::keyed("events", "user-7", "world", 6));
//! let meta = first.await?;
//! println!("{}-{} at offset {:?}", meta.topic, meta.partition, meta.offset);
//! second.await?;
//!
//! producer.flush().await; // every record sent so far has an outcome
//! producer.close().await; // flush, then stop; later sends fail with `Closed`
//! # Ok(())
//! # }
//! ```
//!
//! [`Producer::from_properties`] takes Kafka's property names: `bootstrap.servers` and
//! `client.id`, `max.block.ms` (how long a send waits for `buffer.memory` to free up
//! before failing with [`SendError::BufferFull`]; default 60000), and every key of the
//! core ([`kacrab_idempotence::config::keys`]: `acks`, `linger.ms`, `batch.size`,
//! `request.timeout.ms`, `delivery.timeout.ms`, `retry.backoff.ms`, ...). An unknown key
//! is an error. [`ProducerBuilder`] is the typed alternative.
//!
//! Partitions are explicit: [`ProducerRecord::new`] names one,
//! [`ProducerRecord::keyed`] hashes the key as Kafka's default partitioner does, given
//! the topic's partition count ([`Producer::partition_count`] asks the cluster).
//!
//! # Architecture
//!
//! ```text
//!  Producer handles ──mpsc (Send / Flush / Close)──▶ driver task ──▶ Session (core + wire)
//!        ▲                                            │   ▲
//!        └──────────── oneshot per record ────────────┘   │ bytes, connected, failed
//!                                          frames (FIFO)  ▼   │
//!                                        connection task per broker socket
//! ```
//!
//! * **One driver task owns the `kacrab_driver::Session`**, and with it all of
//!   the core's state; nothing else touches it. Commands from the application and events
//!   from connection tasks arrive over channels. After each wake-up the driver applies
//!   everything ready (commands in batches), then follows the contract: drain
//!   `poll_output` and execute it (open a connection, queue a frame, close a connection),
//!   drain `poll_event` and resolve each record's future, and sleep until
//!   `poll_timeout`. It converts the core's [`Timestamp`]s to Tokio instants against the
//!   instant it started, resets its one `Sleep` only when the deadline changes, and
//!   compares the clock with the deadline itself before calling `handle_timeout`.
//! * **One task per broker connection** connects (bounded by `request.timeout.ms`),
//!   writes the frames it receives in order, and sends what it reads back to the driver.
//!   Pipelining up to `max.in.flight.requests.per.connection` is the core's decision;
//!   a connection task just writes. Reconnection is the session's: when the core retries,
//!   it asks for a new connection; a failed connect is reported and the core backs off.
//! * **Order across connections.** Per connection, the FIFO channel keeps the session's
//!   order. Across connections (a partition whose leader moved between two requests) the
//!   core's enqueue tickets decide: every Produce frame carries its ticket
//!   ([`kacrab_idempotence::ticket`]), and the connection tasks share one
//!   [`TicketSequencer`](kacrab_idempotence::ticket::TicketSequencer) (a std mutex plus a
//!   Tokio `Notify`). A task waits until `may_enqueue(ticket)` before writing a ticketed
//!   frame and calls `enqueued(ticket)` as soon as the write is handed to the socket; a
//!   dead connection abandons the tickets it will never write, and the session releases
//!   the tickets of Produce requests it never transmits, so no task waits forever. A later
//!   Produce therefore never reaches its socket before an earlier one. The price: while a
//!   new connection is being opened and negotiated, ticketed writes on other connections
//!   wait for the Produce queued on it (at most `request.timeout.ms`).
//! * **No retry, sequence or batching logic lives here**: those are the core's.
//!
//! `send` never blocks: when `buffer.memory` is full the record waits inside the
//! producer, in order, for deliveries to free space, for at most `max.block.ms`. Records
//! waiting there are held in memory, so bound how many sends you keep outstanding (the
//! `produce` example uses a semaphore).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod conn;
mod driver;
mod error;
mod sequencer;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use kacrab_driver::Session;
use kacrab_idempotence::{ProducerConfigBuilder, Timestamp};
use tokio::sync::{mpsc, oneshot};

pub use conn::{BrokerStream, ConnectFuture, Connector};
pub use error::{Error, ProduceError};
pub use kacrab_idempotence::{
    ConfigError, ConsumerGroupMetadata, DeliveryError, Header, KafkaError, OffsetToCommit,
    SendError, Topic, TopicPartition, TransactionState, TxnError, TxnOp,
};

use driver::{Command, Driver, Settings, TxnCall};

/// `bootstrap.servers`: comma-separated `host:port`s.
pub const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";
/// `client.id`: sent in every request header.
pub const CLIENT_ID: &str = "client.id";
/// `max.block.ms`: how long a send waits for `buffer.memory`.
pub const MAX_BLOCK_MS: &str = "max.block.ms";

/// Kafka's default `max.block.ms`.
const DEFAULT_MAX_BLOCK: Duration = Duration::from_millis(60_000);

pub use kacrab_driver::{ProducerRecord, RecordMetadata};

/// The outcome of one [`Producer::send`]: the record's metadata once acknowledged, or
/// why it was not delivered. Dropping it does not cancel the send.
#[derive(Debug)]
#[must_use = "the record is sent anyway; await this to learn its outcome"]
pub struct DeliveryFuture {
    state: DeliveryState,
}

#[derive(Debug)]
enum DeliveryState {
    Waiting(oneshot::Receiver<Result<RecordMetadata, ProduceError>>),
    Ready(Option<Result<RecordMetadata, ProduceError>>),
}

impl Future for DeliveryFuture {
    type Output = Result<RecordMetadata, ProduceError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            DeliveryState::Waiting(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(ProduceError::Terminated))),
            DeliveryState::Ready(r) => {
                Poll::Ready(r.take().expect("DeliveryFuture polled after completion"))
            }
        }
    }
}

/// A Kafka idempotent producer on Tokio. Cheap to clone: every clone is a handle on the
/// same producer. When the last handle is dropped, the producer closes itself once every
/// record has an outcome.
#[derive(Clone, Debug)]
pub struct Producer {
    commands: mpsc::UnboundedSender<Command>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Send { .. } => "Send",
            Self::Flush(_) => "Flush",
            Self::Close(_) => "Close",
            Self::PartitionCount { .. } => "PartitionCount",
            Self::Transaction { .. } => "Transaction",
        })
    }
}

impl Producer {
    /// A producer from Kafka property pairs. Must be called inside a Tokio runtime; the
    /// producer's tasks run on it.
    ///
    /// # Errors
    /// As [`ProducerBuilder::set`] and [`ProducerBuilder::build`].
    pub fn from_properties(props: &[(&str, &str)]) -> Result<Self, Error> {
        let mut builder = ProducerBuilder::new();
        for (key, value) in props {
            builder.set(key, value)?;
        }
        builder.build()
    }

    /// A builder.
    #[must_use]
    pub fn builder() -> ProducerBuilder {
        ProducerBuilder::new()
    }

    /// Sends `record`. It is queued now, in call order across every handle; the future
    /// resolves once the record has an outcome. Do not wait for one send before the
    /// next: records are batched and pipelined.
    ///
    /// If `buffer.memory` is full the record waits, in order, for up to `max.block.ms`,
    /// then fails with [`SendError::BufferFull`].
    pub fn send(&self, record: ProducerRecord) -> DeliveryFuture {
        let (reply, rx) = oneshot::channel();
        let state = match self.commands.send(Command::Send { record, reply }) {
            Ok(()) => DeliveryState::Waiting(rx),
            Err(_) => DeliveryState::Ready(Some(Err(ProduceError::Send(SendError::Closed)))),
        };
        DeliveryFuture { state }
    }

    /// Sends every queued record without waiting for `linger.ms`, and resolves once
    /// every record sent before this call has an outcome.
    pub fn flush(&self) -> impl Future<Output = ()> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self.commands.send(Command::Flush(reply)).is_ok();
        async move {
            if sent {
                let _ = rx.await;
            }
        }
    }

    /// Closes the producer: later sends fail with [`SendError::Closed`]; records already
    /// sent are delivered (or fail, by `delivery.timeout.ms` at the latest); then the
    /// producer's tasks stop. Resolves once that is done.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self.commands.send(Command::Close(reply)).is_ok();
        async move {
            if sent {
                let _ = rx.await;
            }
        }
    }

    /// The number of partitions of `topic`, from the cluster's metadata (fetched if the
    /// producer does not know it yet), for [`ProducerRecord::keyed`]. `None` if it could
    /// not be learned within `max.block.ms` (the topic does not exist, or no broker
    /// answered), or the producer is closed.
    pub fn partition_count(
        &self,
        topic: &str,
    ) -> impl Future<Output = Option<i32>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self
            .commands
            .send(Command::PartitionCount {
                topic: topic.to_owned(),
                reply,
            })
            .is_ok();
        async move {
            if sent {
                rx.await.ok().flatten()
            } else {
                None
            }
        }
    }

    fn transaction(
        &self,
        call: TxnCall,
    ) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self
            .commands
            .send(Command::Transaction { call, reply })
            .is_ok();
        async move {
            if !sent {
                return Err(TxnError::Fatal(
                    kacrab_idempotence::KafkaError::UnknownServerError,
                ));
            }
            rx.await.unwrap_or(Err(TxnError::Fatal(
                kacrab_idempotence::KafkaError::UnknownServerError,
            )))
        }
    }

    /// Gets a producer id for `transactional.id`, fencing older producers with the same
    /// id. Call once, before any transaction. If the future is dropped (a timeout), call
    /// it again: it completes the same pending work.
    pub fn init_transactions(&self) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        self.transaction(TxnCall::Init)
    }

    /// Opens a transaction; records sent until commit or abort belong to it.
    pub fn begin_transaction(&self) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        self.transaction(TxnCall::Begin)
    }

    /// Commits consumer offsets with the open transaction (a consume-transform-produce
    /// loop): they count only if the transaction commits.
    pub fn send_offsets_to_transaction(
        &self,
        offsets: Vec<OffsetToCommit>,
        group: ConsumerGroupMetadata,
    ) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        self.transaction(TxnCall::SendOffsets(offsets, group))
    }

    /// Commits the open transaction once every record sent in it is acknowledged.
    pub fn commit_transaction(
        &self,
    ) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        self.transaction(TxnCall::Commit)
    }

    /// Aborts the open transaction: unsent records fail; read_committed readers never
    /// see the sent ones.
    pub fn abort_transaction(&self) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        self.transaction(TxnCall::Abort)
    }

    /// Whether the producer has stopped (closed, or its runtime shut down).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }
}

/// Builds a [`Producer`].
#[derive(Clone)]
pub struct ProducerBuilder {
    core: ProducerConfigBuilder,
    bootstrap: Vec<String>,
    client_id: Option<String>,
    max_block: Duration,
    connector: Option<Arc<dyn Connector>>,
}

impl std::fmt::Debug for ProducerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerBuilder")
            .field("core", &self.core)
            .field("bootstrap", &self.bootstrap)
            .field("client_id", &self.client_id)
            .field("max_block", &self.max_block)
            .field("connector", &self.connector.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl Default for ProducerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ProducerBuilder {
    /// Kafka's defaults, no bootstrap servers yet.
    #[must_use]
    pub fn new() -> Self {
        Self {
            core: ProducerConfigBuilder::default(),
            bootstrap: Vec::new(),
            client_id: None,
            max_block: DEFAULT_MAX_BLOCK,
            connector: None,
        }
    }

    /// Sets a property by its Kafka name: `bootstrap.servers`, `client.id`,
    /// `max.block.ms`, or any key of [`ProducerConfigBuilder::set`].
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for a malformed adapter key; [`Error::Config`] for an
    /// unknown key ([`ConfigError::UnknownKey`]) or a core value that does not parse.
    pub fn set(&mut self, key: &str, value: &str) -> Result<&mut Self, Error> {
        match key {
            BOOTSTRAP_SERVERS => {
                let servers = parse_bootstrap(value)?;
                self.bootstrap = servers;
            }
            CLIENT_ID => {
                let id = value.trim();
                self.client_id = (!id.is_empty()).then(|| id.to_owned());
            }
            MAX_BLOCK_MS => {
                let ms: u64 = value.trim().parse().map_err(|_| Error::InvalidValue {
                    key: MAX_BLOCK_MS,
                    value: value.to_owned(),
                    reason: "expected a non-negative number of milliseconds",
                })?;
                self.max_block = Duration::from_millis(ms);
            }
            _ => {
                self.core.set(key, value)?;
            }
        }
        Ok(self)
    }

    /// Sets `bootstrap.servers` from `host:port` strings.
    pub fn bootstrap_servers<I, S>(&mut self, servers: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.bootstrap = servers.into_iter().map(Into::into).collect();
        self
    }

    /// Sets `client.id`.
    pub fn client_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.client_id = Some(id.into());
        self
    }

    /// Sets `max.block.ms`: how long a send waits for `buffer.memory` before failing.
    pub fn max_block(&mut self, max_block: Duration) -> &mut Self {
        self.max_block = max_block;
        self
    }

    /// The core's configuration, for typed settings (`linger`, `batch_size`, ...).
    pub fn core_config(&mut self) -> &mut ProducerConfigBuilder {
        &mut self.core
    }

    /// Opens broker connections with `connector` instead of plain TCP.
    pub fn connector(&mut self, connector: impl Connector) -> &mut Self {
        self.connector = Some(Arc::new(connector));
        self
    }

    /// Validates the configuration and starts the producer's driver task on the current
    /// Tokio runtime.
    ///
    /// # Errors
    /// [`Error::Config`] if the core's configuration is invalid,
    /// [`Error::MissingBootstrap`] without bootstrap servers, [`Error::NoRuntime`]
    /// outside a Tokio runtime.
    pub fn build(&self) -> Result<Producer, Error> {
        let config = self.core.build()?;
        if self.bootstrap.is_empty() {
            return Err(Error::MissingBootstrap);
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let settings = Settings {
            max_block: self.max_block,
            retry_backoff: config.retry_backoff().max(Duration::from_millis(1)),
            connect_timeout: config.request_timeout(),
            transport: match &self.connector {
                Some(c) => conn::Transport::Custom(Arc::clone(c)),
                None => conn::Transport::Tcp,
            },
        };
        let session = Session::new(
            config,
            self.bootstrap.clone(),
            self.client_id.clone(),
            Timestamp::ZERO,
        );
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let _guard = runtime.enter();
        let (driver, conn_events) = Driver::new(session, tokio::time::Instant::now(), settings);
        runtime.spawn(driver.run(commands_rx, conn_events));
        Ok(Producer { commands })
    }
}

/// Parses `bootstrap.servers`: comma-separated `host:port`s, whitespace ignored.
fn parse_bootstrap(value: &str) -> Result<Vec<String>, Error> {
    let mut servers = Vec::new();
    for part in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let valid = part.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !valid {
            return Err(Error::InvalidValue {
                key: BOOTSTRAP_SERVERS,
                value: value.to_owned(),
                reason: "expected comma-separated host:port entries",
            });
        }
        servers.push(part.to_owned());
    }
    if servers.is_empty() {
        return Err(Error::MissingBootstrap);
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_parsing() {
        assert_eq!(parse_bootstrap(" a:1 , b:2,").unwrap(), vec!["a:1", "b:2"]);
        assert_eq!(parse_bootstrap("[::1]:9092").unwrap(), vec!["[::1]:9092"]);
        assert!(matches!(parse_bootstrap(""), Err(Error::MissingBootstrap)));
        assert!(matches!(
            parse_bootstrap("nohost"),
            Err(Error::InvalidValue { .. })
        ));
        assert!(matches!(
            parse_bootstrap("h:0"),
            Err(Error::InvalidValue { .. })
        ));
    }

    #[test]
    fn unknown_key_is_an_error() {
        let err = ProducerBuilder::new()
            .set("no.such.key", "1")
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(err, Error::Config(ConfigError::UnknownKey(k)) if k == "no.such.key"));
    }

    #[test]
    fn building_outside_a_runtime_fails() {
        let err =
            Producer::from_properties(&[("bootstrap.servers", "localhost:9092")]).unwrap_err();
        assert!(matches!(err, Error::NoRuntime));
    }

    #[test]
    fn keyed_records_use_murmur2() {
        let r = ProducerRecord::keyed("t", "21", "v", 6);
        assert_eq!(r.partition, kacrab_driver::partition_for_key(b"21", 6));
        assert_eq!(r.key.as_deref(), Some(&b"21"[..]));
    }
}
