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
//! // `send` has two stages: awaiting it hands the record over (waiting only while
//! // `buffer.memory` is full), and gives a future of its outcome. Keep sending without
//! // waiting for acknowledgements; the producer bounds its memory by itself.
//! let first = producer.send(ProducerRecord::new("events", 0, "hello")).await?;
//! // Topic, key, value: the partition is Kafka's for the key (murmur2, as Java's).
//! let second = producer.send(("events", "user-7", "world")).await?;
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
//! [`Producer::from_properties`] takes Kafka's property names, parsed and validated
//! once by [`kacrab_driver::SessionConfig`]: `bootstrap.servers`, `client.id`,
//! `max.block.ms` (how long a send waits for `buffer.memory` to free up before failing
//! with [`SendError::BufferFull`]; default 60000), `buffer.memory`, `socket.connection.setup.timeout.ms`,
//! and every key of the core ([`kacrab_idempotence::config::keys`]: `acks`, `linger.ms`,
//! `batch.size`, `request.timeout.ms`, `delivery.timeout.ms`, `retry.backoff.ms`, ...).
//! A typo of a known key is an error ("did you mean ..."); a key no Kafka client defines
//! (`schema.registry.url`, ...) is ignored, as Java ignores it, and listed by
//! `SessionConfig::ignored_keys`. [`Producer::from_properties_file`] reads a Java
//! producer's `.properties` file. [`ProducerBuilder`] is the typed alternative.
//!
//! Partitions come from the topic's metadata unless a record names one
//! ([`ProducerRecord::new`]): a keyed record ([`ProducerRecord::keyed`], or a `(topic,
//! key, value)` triple) goes where Java's producer puts the same key (murmur2), one
//! without a key ([`ProducerRecord::unkeyed`], or `(topic, value)`) sticks to a
//! partition for `batch.size` bytes (KIP-794). See [`kacrab_driver::Partitioner`].
//!
//! What Java loads by class name installs as code on the builder: a [`Partitioner`]
//! ([`ProducerBuilder::partitioner`]), [`ProducerInterceptor`]s
//! ([`ProducerBuilder::interceptor`]), and any [`SaslConfig`], an OAUTHBEARER
//! [`OAuthBearerTokenProvider`] included ([`ProducerBuilder::sasl`]).
//!
//! # Architecture
//!
//! ```text
//!  Producer handles ──mpsc (commands)──▶ driver task ──▶ kacrab_driver::Session
//!        ▲                                 │   ▲
//!        └────── oneshot per command ──────┘   │ bytes, connected, disconnected
//!                           frames (FIFO)  ▼   │
//!                          connection task per broker socket
//! ```
//!
//! Everything a producer decides (routing, metadata, version negotiation, retries, the
//! `max.block.ms` backlog, flushes, closes, transactions, every timer) is the
//! [`kacrab_driver::Session`]'s; this crate moves bytes and time for it:
//!
//! * **One driver task owns the session.** It turns each handle's command into the
//!   session command of the same name, each connection task's event into
//!   `handle_connected`, `handle_bytes`, `handle_connect_error` or
//!   `handle_connection_lost` (with the socket's error), and the clock reaching
//!   `poll_timeout` into `handle_timeout`; it carries out every `poll_output` and
//!   resolves the oneshot each `poll_completion` names. Commands and events that are
//!   ready together are applied in one batch. The clock is Tokio's, as microseconds
//!   since the producer was built; the wall clock is read once, at build.
//! * **One task per broker connection** opens the stream (TCP, or a [`Connector`]),
//!   writes the frames it receives in order, and sends what it reads back to the driver
//!   task. It has no timer: the session closes a connection whose setup or request took
//!   too long.
//! * **Order, and a peer that stops reading.** The driver task hands every frame to its
//!   connection's FIFO channel in the session's order, and that hand-over is the enqueue
//!   point (as Java's `Selector` send is, and as the blocking driver's writer queues
//!   are): one loop enqueues everything, as a driver writing every socket from one loop
//!   does, so the core's Produce enqueue tickets ([`kacrab_idempotence::ticket`]) need
//!   no sequencer and are ignored. Each
//!   task then writes at its own socket's pace, so a broker that stops reading blocks
//!   only its own connection's writes, until the session's request timeout closes it
//!   (issue 18, item 3).
//!
//! **Bounded memory.** [`Producer::send`]'s first stage waits (asynchronously) until the
//! producer can hold the record: for the driver task to take earlier records off its
//! channel (at most `min(buffer.memory, 1 MiB)` of bytes on it), and while the session
//! holds sends behind a full `buffer.memory`, for the session to take this one in, or to
//! refuse it after `max.block.ms` ([`SendError::BufferFull`]). The session decides and
//! times; the driver task only publishes whether it holds sends. So a sender that never
//! awaits a delivery keeps at most `buffer.memory` in the core plus about twice the
//! channel's bytes elsewhere; every other command is one message per call.
//!
//! **Ends.** [`Producer::close`] waits for every record's outcome,
//! [`Producer::close_timeout`] fails what is left once its timeout passed (Java's
//! `close(Duration)`), and [`Producer::abort`] fails it at once. A record's outcome is
//! the session's [`ProduceError`], the same type the blocking driver reports.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod conn;
mod driver;
mod error;
mod gate;
#[cfg(feature = "oidc")]
#[cfg_attr(docsrs, doc(cfg(feature = "oidc")))]
pub mod oidc;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use kacrab_driver::Session;
use kacrab_idempotence::{ProducerConfigBuilder, Timestamp};
use tokio::sync::{mpsc, oneshot};

pub use conn::{BrokerStream, ConnectFuture, Connector};
pub use error::Error;
pub use kacrab_driver::metrics;
pub use kacrab_driver::ProduceError;
/// OpenTelemetry producer spans (feature `opentelemetry`), re-exported from the session.
#[cfg(feature = "opentelemetry")]
pub use kacrab_driver::{otel, OtelInterceptor};
pub use kacrab_driver::{
    Acknowledgement, Extensions, InterceptorError, OAuthBearerToken, OAuthBearerTokenHandle,
    OAuthBearerTokenProvider, Partitioner, ProducerInterceptor, SaslConfig, SaslMechanism, Secret,
    SessionConfig, SessionConfigBuilder, TopicPartitions,
};
pub use kacrab_driver::{
    MetricsSnapshot, ProducerRecord, RecordMetadata, SessionConfigError, BOOTSTRAP_SERVERS,
    CLIENT_ID, MAX_BLOCK_MS, SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
};
pub use kacrab_driver::{OidcClientCredentials, OidcTiming};
pub use kacrab_idempotence::{
    ConfigError, ConsumerGroupMetadata, DeliveryError, Header, KafkaError, OffsetToCommit,
    SendError, Topic, TopicPartition, TransactionState, TxnError, TxnOp,
};

use driver::{Clock, Command, Driver};
use gate::{Buffer, Gate};
use kacrab_driver::TxnCall;

/// The outcome of one [`Producer::send`]: the record's metadata once acknowledged, or
/// why it was not delivered. Dropping it does not cancel the send.
#[derive(Debug)]
#[must_use = "the record is sent anyway; await this to learn its outcome"]
pub struct DeliveryFuture {
    rx: oneshot::Receiver<Result<RecordMetadata, ProduceError>>,
}

impl Future for DeliveryFuture {
    type Output = Result<RecordMetadata, ProduceError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(ProduceError::Terminated)))
    }
}

/// A Kafka idempotent producer on Tokio. Cheap to clone: every clone is a handle on the
/// same producer. When the last handle is dropped, the producer closes itself once every
/// record has an outcome.
#[derive(Clone, Debug)]
pub struct Producer {
    /// Sends are bounded by `gate`; every other command is one per call, answered once.
    commands: mpsc::UnboundedSender<Command>,
    gate: Arc<Gate>,
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

    /// A producer from a Java producer's `.properties` file (read as
    /// `java.util.Properties` reads it), every refused line reported at once. Must be
    /// called inside a Tokio runtime.
    ///
    /// # Errors
    /// [`Error::Config`]: [`SessionConfigError::ReadFile`] naming the path and the
    /// operating system's error, or as [`SessionConfigBuilder::from_properties_file`]
    /// and [`ProducerBuilder::build`].
    pub fn from_properties_file(path: impl AsRef<std::path::Path>) -> Result<Self, Error> {
        ProducerBuilder::from(SessionConfigBuilder::from_properties_file(path)?).build()
    }

    /// A builder.
    #[must_use]
    pub fn builder() -> ProducerBuilder {
        ProducerBuilder::new()
    }

    /// Sends `record`, in two stages: the returned future resolves once the producer took
    /// the record in, to a [`DeliveryFuture`] of its outcome. Await the first stage before
    /// the next send (that is where backpressure happens), not the delivery: records are
    /// batched and pipelined, in call order across every handle.
    ///
    /// The first stage waits while the producer holds as much as it may: for the driver
    /// task to take earlier records off its channel, and, while `buffer.memory` is full,
    /// for deliveries to free room, for at most `max.block.ms` (as Java's `send` blocks
    /// in `BufferPool.allocate`); the session times that wait.
    ///
    /// # Errors
    /// The record was not queued and will have no other outcome:
    /// [`ProduceError::Send`] with [`SendError::BufferFull`] when `buffer.memory` stayed
    /// full for `max.block.ms` (Java's `BufferExhaustedException`), with
    /// [`SendError::Closed`] after [`Producer::close`] or once the producer stopped
    /// ([`ProduceError::Connection`], with the cause, when a final connection failure
    /// such as a failed authentication stopped it); a
    /// refusal of the session's ([`ProduceError::Topic`] for a topic unknown after
    /// `max.block.ms` while the buffer was full, or a record the core refuses). A refusal
    /// the producer finds only once the record reached it without waiting (a record
    /// over `max.request.size`, an unknown topic) comes through the [`DeliveryFuture`]
    /// instead, as Java reports it through the send's future.
    ///
    /// Dropping this future while it waits for room on the channel sends nothing; once
    /// it waits for the session's admission the record is already in the producer and
    /// is sent anyway, its outcome unseen.
    ///
    /// `record` is a [`ProducerRecord`] or anything that converts into one:
    /// `send(("events", "user-7", "hello"))` sends a keyed record, `send(("events",
    /// "hello"))` one without a key, and the session's partitioner picks the partition.
    pub async fn send(
        &self,
        record: impl Into<ProducerRecord>,
    ) -> Result<DeliveryFuture, ProduceError> {
        let record = record.into();
        let closed = || self.gate.refusal();
        let permit = self.gate.room_for(&record).await.map_err(|_| closed())?;
        let (reply, rx) = oneshot::channel();
        let (admission, admitted) = match self.gate.buffer() {
            Buffer::Blocked => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
            Buffer::HasRoom => (None, None),
        };
        // The weight is the driver task's to give back once it takes the command (a
        // failed post means the driver task is gone, and the gate with it).
        let command = Command::Send {
            record,
            reply,
            weight: permit.posted(),
            admission,
        };
        if self.commands.send(command).is_err() {
            return Err(closed());
        }
        if let Some(admitted) = admitted {
            // Otherwise taken in; or the driver task ended, and the delivery says so.
            if let Ok(Err(refused)) = admitted.await {
                return Err(refused);
            }
        }
        Ok(DeliveryFuture { rx })
    }

    /// Sends `command` built around a fresh oneshot; resolves to its answer, or to
    /// `stopped` if the driver task is gone.
    fn ask<T: Send + 'static>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> Command,
        stopped: T,
    ) -> impl Future<Output = T> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self.commands.send(command(reply)).is_ok();
        async move {
            if sent {
                rx.await.unwrap_or(stopped)
            } else {
                stopped
            }
        }
    }

    /// Sends every queued record without waiting for `linger.ms`, and resolves once
    /// every record sent before this call has an outcome.
    pub fn flush(&self) -> impl Future<Output = ()> + Send + 'static {
        self.ask(Command::Flush, ())
    }

    /// Closes the producer: later sends fail with [`SendError::Closed`]; records already
    /// sent are delivered (or fail, by `delivery.timeout.ms` at the latest), an open
    /// transaction is aborted; then the producer's tasks stop. Resolves once that is
    /// done.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        self.ask(
            |reply| Command::Close {
                timeout: None,
                reply,
            },
            (),
        )
    }

    /// As [`Producer::close`], but whatever is still without an outcome once `timeout`
    /// passed fails (possibly written if it was on the wire): Java's `close(Duration)`.
    /// A zero timeout fails everything at once (a forced close).
    pub fn close_timeout(&self, timeout: Duration) -> impl Future<Output = ()> + Send + 'static {
        self.ask(
            move |reply| Command::Close {
                timeout: Some(timeout),
                reply,
            },
            (),
        )
    }

    /// Aborts the producer: every record without an outcome fails now (possibly written
    /// if it was on the wire), an open transaction is abandoned (the coordinator aborts
    /// it after `transaction.timeout.ms`), later sends fail with [`SendError::Closed`],
    /// and the producer's tasks stop. Resolves once every record has its outcome. The
    /// same as [`Producer::close_timeout`] with a zero timeout.
    pub fn abort(&self) -> impl Future<Output = ()> + Send + 'static {
        self.ask(Command::Abort, ())
    }

    /// The number of partitions of `topic`, from the cluster's metadata (fetched if the
    /// producer does not know it yet), for [`ProducerRecord::keyed`]. `None` if it could
    /// not be learned within `max.block.ms` (the topic does not exist, or no broker
    /// answered), or the producer is closed.
    pub fn partition_count(
        &self,
        topic: &str,
    ) -> impl Future<Output = Option<i32>> + Send + 'static {
        let topic = topic.to_owned();
        self.ask(|reply| Command::PartitionCount { topic, reply }, None)
    }

    fn transaction(
        &self,
        call: TxnCall,
    ) -> impl Future<Output = Result<(), TxnError>> + Send + 'static {
        self.ask(
            |reply| Command::Transaction { call, reply },
            Err(TxnError::Closed),
        )
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

    /// Every metric of the producer, with Kafka's names and meanings (see
    /// [`MetricsSnapshot`]), taken on the driver task. `None` once the producer has
    /// stopped.
    pub fn metrics(&self) -> impl Future<Output = Option<MetricsSnapshot>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self.commands.send(Command::Metrics(reply)).is_ok();
        async move {
            if sent {
                rx.await.ok()
            } else {
                None
            }
        }
    }

    /// The client instance id a broker with a KIP-714 telemetry plugin assigned (Java's
    /// `KafkaProducer.clientInstanceId`, without its wait): `None` before the first
    /// subscription was fetched, with `enable.metrics.push=false`, when no broker has a
    /// plugin, or once the producer has stopped.
    pub fn client_instance_id(&self) -> impl Future<Output = Option<[u8; 16]>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self.commands.send(Command::ClientInstanceId(reply)).is_ok();
        async move {
            if sent {
                rx.await.ok().flatten()
            } else {
                None
            }
        }
    }

    /// Whether the producer has stopped (closed, or its runtime shut down).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }
}

/// Builds a [`Producer`]: a [`SessionConfigBuilder`], the application's
/// [`Extensions`] (a partitioner, interceptors), and how to open connections.
#[derive(Clone, Default)]
pub struct ProducerBuilder {
    config: SessionConfigBuilder,
    extensions: Extensions,
    connector: Option<Arc<dyn Connector>>,
}

impl From<SessionConfigBuilder> for ProducerBuilder {
    /// A builder starting from `config`.
    fn from(config: SessionConfigBuilder) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }
}

impl std::fmt::Debug for ProducerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerBuilder")
            .field("config", &self.config)
            .field("extensions", &self.extensions)
            .field("connector", &self.connector.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl ProducerBuilder {
    /// Kafka's defaults, no bootstrap servers yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a property by its Kafka name: `bootstrap.servers`, `client.id`,
    /// `max.block.ms`, `socket.connection.setup.timeout.ms`, or any key of
    /// [`ProducerConfigBuilder::set`].
    ///
    /// # Errors
    /// [`Error::Config`] for an unknown key ([`SessionConfigError::UnknownKey`]) or a value that
    /// does not parse.
    pub fn set(&mut self, key: &str, value: &str) -> Result<&mut Self, Error> {
        self.config.set(key, value)?;
        Ok(self)
    }

    /// Sets `bootstrap.servers` from `host:port` strings.
    pub fn bootstrap_servers<I, S>(&mut self, servers: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.bootstrap_servers(servers);
        self
    }

    /// Sets `client.id`.
    pub fn client_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.config.client_id(id);
        self
    }

    /// Sets `max.block.ms`: how long a send waits for `buffer.memory` before failing,
    /// and a partition lookup for metadata.
    pub fn max_block(&mut self, max_block: Duration) -> &mut Self {
        self.config.max_block(max_block);
        self
    }

    /// Sets `socket.connection.setup.timeout.ms`: how long opening a connection may take.
    pub fn connection_setup_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.config.connection_setup_timeout(timeout);
        self
    }

    /// The core's configuration, for typed settings (`linger`, `batch_size`, ...).
    pub fn core_config(&mut self) -> &mut ProducerConfigBuilder {
        self.config.core()
    }

    /// The session's whole configuration, for every typed setting: security, TLS,
    /// compression, metrics, and SASL ([`SessionConfigBuilder::sasl`]), an OAUTHBEARER
    /// token provider included ([`SaslConfig::oauthbearer`]).
    pub fn session_config(&mut self) -> &mut SessionConfigBuilder {
        &mut self.config
    }

    /// The SASL settings: `builder.sasl().oauthbearer(provider)` installs an
    /// [`OAuthBearerTokenProvider`], `plain` and `scram` set credentials (with
    /// `security.protocol` `SASL_PLAINTEXT` or `SASL_SSL`).
    pub fn sasl(&mut self) -> &mut SaslConfig {
        self.config.sasl()
    }

    /// Partitions records sent without a partition with (a clone of) `partitioner`
    /// instead of Kafka's built-in one (Java's `partitioner.class`), which still decides
    /// when it returns `None`. Each producer built gets its own clone.
    pub fn partitioner<P>(&mut self, partitioner: P) -> &mut Self
    where
        P: Partitioner + Clone + Sync + 'static,
    {
        self.extensions.partitioner(partitioner);
        self
    }

    /// Adds an interceptor after those already added (Java's `interceptor.classes`): it
    /// sees, and may change, every record before the producer takes it in, and every
    /// record's outcome. See [`ProducerInterceptor`].
    pub fn interceptor(&mut self, interceptor: impl ProducerInterceptor) -> &mut Self {
        self.extensions.interceptor(interceptor);
        self
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
    /// [`Error::Config`] if the configuration is invalid (or has no bootstrap servers),
    /// [`Error::NoRuntime`] outside a Tokio runtime, [`Error::UnresolvableBootstrap`]
    /// when no bootstrap server resolves (over plain TCP: resolved once, here, blocking
    /// as Java's constructor does).
    ///
    /// With the feature `oidc` and OIDC client credentials configured, it also starts
    /// the token refresh task, and the producer connects once the first token fetch
    /// finished (see the `oidc` module: "The first token").
    pub fn build(&self) -> Result<Producer, Error> {
        #[cfg(feature = "oidc")]
        let (config, oidc_login) = {
            let mut config = self.config.clone();
            let login = oidc::install(&mut config)?;
            (config.build()?, login)
        };
        #[cfg(not(feature = "oidc"))]
        let config = self.config.build()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let transport = match &self.connector {
            Some(c) => conn::Transport::Custom(Arc::clone(c)),
            None => {
                kacrab_driver::UnresolvableBootstrap::check(config.bootstrap(), |server| {
                    std::net::ToSocketAddrs::to_socket_addrs(server).map(Iterator::count)
                })?;
                conn::Transport::Tcp
            }
        };
        let unix_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let _guard = runtime.enter();
        let clock = Clock::new(tokio::time::Instant::now());
        let config_buffer_memory = config.core().buffer_memory();
        let mut config = config;
        seed_sasl_nonces(&mut config);
        let mut session = Session::new(config, Timestamp::ZERO, unix_ms);
        session.install(&self.extensions);
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let gate = Arc::new(Gate::new(config_buffer_memory));
        let (driver, conn_events) = Driver::new(session, clock, transport, Arc::clone(&gate));
        #[cfg(feature = "oidc")]
        if let Some(login) = oidc_login {
            // No authentication before the first fetch finished: Java logs in within its
            // constructor.
            let first_token = login.start(&runtime);
            runtime.spawn(async move {
                let _ = first_token.await;
                driver.run(commands_rx, conn_events).await;
            });
            return Ok(Producer { commands, gate });
        }
        runtime.spawn(driver.run(commands_rx, conn_events));
        Ok(Producer { commands, gate })
    }
}

/// Fills the SCRAM nonce seed from the operating system unless the application gave
/// one: the session is deterministic and has no randomness of its own.
fn seed_sasl_nonces(config: &mut SessionConfig) {
    if config.sasl().nonce_seed_setting().is_none() {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the operating system's random source");
        config.set_sasl_nonce_seed(kacrab_driver::NonceSeed::new(seed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_of_a_known_key_is_an_error() {
        let err = ProducerBuilder::new()
            .set("lingerr.ms", "1")
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(
            err,
            Error::Config(SessionConfigError::UnknownKey { key, .. }) if key == "lingerr.ms"
        ));
    }

    #[test]
    fn a_properties_file_that_cannot_be_read_names_its_path_and_the_os_error() {
        let path = std::env::temp_dir().join("kacrab-tokio-no-such-producer.properties");
        let err = Producer::from_properties_file(&path).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, Error::Config(SessionConfigError::ReadFile { .. })),
            "{err:?}"
        );
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains("os error"), "{text}");
    }

    #[test]
    fn building_outside_a_runtime_fails() {
        let err =
            Producer::from_properties(&[("bootstrap.servers", "localhost:9092")]).unwrap_err();
        assert!(matches!(err, Error::NoRuntime));
    }

    #[test]
    fn a_bad_configuration_fails_before_the_runtime_is_needed() {
        let err = Producer::from_properties(&[("linger.ms", "1")]).unwrap_err();
        assert!(matches!(
            err,
            Error::Config(SessionConfigError::MissingBootstrap)
        ));
    }

    #[test]
    fn a_topic_key_value_triple_is_a_keyed_record_for_the_partitioner() {
        let r: ProducerRecord = ("t", "21", "v").into();
        assert_eq!(r, ProducerRecord::keyed("t", "21", "v"));
        assert_eq!(r.partition, None, "the session's partitioner decides");
        assert_eq!(r.key.as_deref(), Some(&b"21"[..]));
    }
}

// The README is the crate's page on the registry: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
