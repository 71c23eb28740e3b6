//! A blocking Kafka idempotent producer over `std::net`, with no async runtime.
//!
//! This is kacrab's sans-IO core ([`kacrab_idempotence`]) and session
//! ([`kacrab_driver::Session`]) driven by the loop the core's documentation describes,
//! over plain threads and sockets. Use it where there is no async runtime: a
//! thread-per-connection service, a command-line tool, an FFI host. It has the same
//! configuration and the same shape as the Tokio adapter (`kacrab-tokio`): a record's
//! outcome comes back through a [`DeliveryHandle`] the caller can wait on, or through a
//! callback; [`Producer::flush`] and [`Producer::close`] block until records have
//! outcomes.
//!
//! # Example
//!
//! ```no_run
//! use kacrab_blocking::{Producer, ProducerRecord};
//!
//! let producer = Producer::from_properties(&[
//!     ("bootstrap.servers", "localhost:9092"),
//!     ("client.id", "example"),
//!     ("linger.ms", "5"),
//! ])?;
//!
//! // Wait for one record...
//! let metadata = producer.send(ProducerRecord::new("events", 0, "hello"))?.wait()?;
//! println!("written at offset {:?}", metadata.offset);
//!
//! // ...or pipeline many, each with a callback (run on the producer's I/O thread).
//! for i in 0..1000 {
//!     // The session's partitioner picks the partition for the key, as Java's does.
//!     let record = ProducerRecord::keyed("events", i.to_string(), "value");
//!     producer.send_with_callback(record, move |outcome| {
//!         if let Err(e) = outcome {
//!             eprintln!("record {i} failed: {e}");
//!         }
//!     })?;
//! }
//! producer.flush()?;
//! producer.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Configuration
//!
//! [`Producer::from_properties`] takes Kafka property names and hands them to
//! [`SessionConfig::from_properties`]: `bootstrap.servers` (required), `client.id`,
//! `max.block.ms` (default 60000), `socket.connection.setup.timeout.ms`, and every key
//! of [`ProducerConfigBuilder::set`](kacrab_idempotence::ProducerConfigBuilder::set)
//! (`acks`, `linger.ms`, `batch.size`, `request.timeout.ms`, `delivery.timeout.ms`,
//! `buffer.memory`, `max.in.flight.requests.per.connection`, ...), with Kafka 4.x
//! defaults. A bad configuration is refused here ([`BuildError::Config`]), not later.
//! [`Producer::new`] takes a whole [`SessionConfig`] (any [`SaslConfig`], an OAUTHBEARER
//! [`OAuthBearerTokenProvider`] included); [`Producer::with_extensions`] adds a
//! [`Partitioner`] and [`ProducerInterceptor`]s ([`Extensions`]).
//!
//! # How it works
//!
//! ```text
//!  application threads ──send/flush/close──┐
//!  connection threads (connect, then read) ─┼─ one mpsc channel ─> I/O thread
//!  (and one writer thread per connection,   │                     owns the Session:
//!   fed by the I/O thread)                  │                     one input per message,
//!                                           │                     then poll_output (connect,
//!                                           │                     queue writes, close) and
//!                                           │                     poll_completion (wake the
//!                                           │                     waiter), recv_timeout until
//!                                           │                     poll_timeout
//! ```
//!
//! * **One I/O thread** owns the [`Session`](kacrab_driver::Session) and never blocks on a socket. It
//!   waits on the channel with `recv_timeout` until the session's `poll_timeout` (a
//!   [`Timestamp`](kacrab_idempotence::Timestamp) is the time since the producer started, against a start `Instant`),
//!   and calls `handle_timeout` once the clock passed it.
//! * **Outputs**: `Connect` starts a connection thread that resolves the address and
//!   connects (so DNS and slow connects never stall the loop; the session times the
//!   attempt with `socket.connection.setup.timeout.ms` and closes it when it is late),
//!   starts the connection's writer thread, then blocks on `read` and forwards bytes or
//!   end-of-stream over the channel. `Transmit` queues the frame (a `Bytes`, not copied)
//!   on the connection's writer, which writes what is queued in order, blocking only
//!   itself: a peer that stops reading stalls its own connection until the session's
//!   request timeout closes it, never the loop or the other connections. `Close` shuts
//!   the socket down (ending a blocked write or read). A failed write shuts the socket,
//!   so its reader reports the disconnect (`handle_disconnected`).
//! * **Completions** go to whoever waits, by the id the command returned: a record's to
//!   its [`DeliveryHandle`] or callback, a flush's, close's, transactional operation's or
//!   partition lookup's to the thread blocked in that call.
//! * **No logic of its own**: the backlog behind a full `buffer.memory` and its
//!   `max.block.ms`, flush and close ordering, lookups and their deadlines, transactional
//!   calls, retries, sequences, batching, request and connect timeouts, metadata and
//!   routing are the session's and the core's. Because one thread queues every frame in
//!   the session's order, the core's enqueue tickets (which keep a later request from
//!   overtaking an earlier one when several tasks enqueue concurrently) are honoured by
//!   construction and ignored here.
//!
//! # Sending, blocking and errors
//!
//! [`Producer::send`] hands the record to the I/O thread and returns at once with a
//! [`DeliveryHandle`], so sends pipeline. While the session holds sends behind a full
//! `buffer.memory`, `send` blocks until the session takes its record in, and returns
//! [`SendError::Timeout`] if the session gave up on it after `max.block.ms` (Java's
//! `send` blocks the same way). It also returns an error at once when the producer is
//! closed or fatal. A refusal the calling thread could not foresee (a record over
//! `max.request.size`, a negative partition, a close or fatal error racing the send, a
//! record that reached a full buffer before `send` could see it) arrives through the
//! handle as [`ProduceError::Send`], as the Java client reports such errors through its
//! future.
//!
//! Callbacks run on the I/O thread: keep them short. From a callback, `send` never
//! blocks, and [`Producer::flush`], [`Producer::close`] and [`DeliveryHandle::wait`]
//! must not be called ([`WaitError::OnIoThread`] for the first two).
//!
//! Dropping the last [`Producer`] handle without [`Producer::close`] starts a graceful
//! close that finishes in the background; call `close` to wait for it.
//!
//! # Embedding the core directly
//!
//! To drive the core from your own event loop instead, start from the workspace's
//! `crates/kacrab-examples/examples/custom_event_loop.rs`: a single-threaded loop showing every `handle_*` and
//! `poll_*` call against an in-process toy broker.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod gate;
mod io;
mod net;
mod oneshot;

use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use kacrab_idempotence::KafkaError;

pub use error::{BuildError, SendError, WaitError};
pub use io::IoStats;
pub use kacrab_driver::metrics;
pub use kacrab_driver::ProduceError;
/// OpenTelemetry producer spans (feature `opentelemetry`), re-exported from the session.
#[cfg(feature = "opentelemetry")]
pub use kacrab_driver::{otel, OtelInterceptor};
/// Re-exported from the session: the configuration (every SASL mechanism, an
/// OAUTHBEARER token provider included) and the application's extension points.
pub use kacrab_driver::{
    Acknowledgement, Extensions, InterceptorError, OAuthBearerToken, OAuthBearerTokenHandle,
    OAuthBearerTokenProvider, Partitioner, ProducerInterceptor, SaslConfig, SaslMechanism, Secret,
    SessionConfig, SessionConfigBuilder, TopicPartitions,
};
pub use kacrab_driver::{MetricsSnapshot, ProducerRecord, RecordMetadata};

/// Re-exported from the core: a topic name, a record header, transactional types.
pub use kacrab_idempotence::{
    ConsumerGroupMetadata, Header, OffsetToCommit, Topic, TransactionState, TxnError, TxnOp,
};

use gate::{Buffer, Gate, IoThread, Life};
use io::{Done, Io, Msg};
use kacrab_driver::TxnCall;

/// The most bytes of records on their way to the I/O thread before `send` waits for it
/// to take them (at most `buffer.memory`).
const HAND_OFF_LIMIT: usize = 1 << 20;

/// A blocking idempotent producer. Cheap to clone (every clone drives the same I/O
/// thread); `Send + Sync`.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

struct Inner {
    tx: mpsc::Sender<Msg>,
    gate: Arc<Gate>,
    stats: Arc<Mutex<IoStats>>,
    io_thread: ThreadId,
    join: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone: close gracefully in the background.
        let _ = self.tx.send(Msg::Close {
            timeout: None,
            reply: None,
        });
    }
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
    }
}

impl Producer {
    /// Builds a producer from Kafka property names and starts its I/O thread. Nothing
    /// connects until the first record (or [`Producer::partition_count`]) needs it.
    ///
    /// # Errors
    /// [`BuildError::Config`] for a configuration the session refuses (see
    /// [`SessionConfig::from_properties`]); [`BuildError::UnresolvableBootstrap`] if no
    /// bootstrap server resolves; [`BuildError::Spawn`] if the thread could not start.
    pub fn from_properties(properties: &[(&str, &str)]) -> Result<Self, BuildError> {
        Self::new(SessionConfig::from_properties(properties.iter().copied())?)
    }

    /// Builds a producer from a Java producer's `.properties` file (read as
    /// `java.util.Properties` reads it) and starts its I/O thread.
    ///
    /// # Errors
    /// [`BuildError::Config`]: a [`SessionConfigError::ReadFile`](kacrab_driver::SessionConfigError::ReadFile)
    /// naming the path and the operating system's error, or every refused line at once
    /// (see [`SessionConfig::from_properties_file`]); [`BuildError::UnresolvableBootstrap`];
    /// [`BuildError::Spawn`].
    pub fn from_properties_file(path: impl AsRef<std::path::Path>) -> Result<Self, BuildError> {
        Self::new(SessionConfig::from_properties_file(path)?)
    }

    /// Starts a producer for a validated configuration. Its bootstrap servers are
    /// resolved once, here (blocking, as Java's constructor does).
    ///
    /// # Errors
    /// [`BuildError::UnresolvableBootstrap`] if no bootstrap server resolves;
    /// [`BuildError::Spawn`] if the I/O thread could not start.
    pub fn new(config: SessionConfig) -> Result<Self, BuildError> {
        Self::with_extensions(config, &Extensions::new())
    }

    /// Starts a producer for a validated configuration with the application's
    /// partitioner and interceptors (see [`Extensions`]). Any [`SaslConfig`] installs
    /// through `config` ([`SessionConfigBuilder::sasl`]), an OAUTHBEARER token provider
    /// included.
    ///
    /// # Errors
    /// [`BuildError::UnresolvableBootstrap`] if no bootstrap server resolves;
    /// [`BuildError::Spawn`] if the I/O thread could not start.
    pub fn with_extensions(
        config: SessionConfig,
        extensions: &Extensions,
    ) -> Result<Self, BuildError> {
        kacrab_driver::UnresolvableBootstrap::check(config.bootstrap(), |server| {
            std::net::ToSocketAddrs::to_socket_addrs(server).map(Iterator::count)
        })?;
        let gate = Arc::new(Gate::new(config.core().buffer_memory().min(HAND_OFF_LIMIT)));
        let stats = Arc::new(Mutex::new(IoStats::default()));
        let (tx, rx) = mpsc::channel();
        let io = Io::new(
            config,
            extensions,
            rx,
            tx.clone(),
            Arc::clone(&gate),
            Arc::clone(&stats),
        );
        let join = thread::Builder::new()
            .name("kacrab-io".into())
            .spawn(move || io.run())
            .map_err(|e| BuildError::Spawn(e.to_string()))?;
        let io_thread = join.thread().id();
        Ok(Self {
            inner: Arc::new(Inner {
                tx,
                gate,
                stats,
                io_thread,
                join: Mutex::new(Some(join)),
            }),
        })
    }

    fn on_io_thread(&self) -> bool {
        thread::current().id() == self.inner.io_thread
    }

    /// Sends a record; wait for its outcome with the returned [`DeliveryHandle`].
    ///
    /// Returns as soon as the I/O thread has the record, without waiting for it. Blocks
    /// only while the producer's buffer is full, for at most `max.block.ms`.
    ///
    /// # Errors
    /// The producer is closed or fatal, its I/O thread stopped, or `max.block.ms`
    /// passed with the buffer full. The record was not queued.
    ///
    /// `record` is a [`ProducerRecord`] or anything that converts into one:
    /// `send(("events", "user-7", "hello"))` sends a keyed record for the session's
    /// partitioner.
    pub fn send(&self, record: impl Into<ProducerRecord>) -> Result<DeliveryHandle, SendError> {
        let (tx, rx) = oneshot::channel();
        self.post(record.into(), Done::handle(tx))?;
        Ok(DeliveryHandle { rx })
    }

    /// Sends a record; `callback` gets its outcome, exactly once, on the producer's I/O
    /// thread (keep it short). If this returns an error the callback is never called.
    ///
    /// # Errors
    /// As [`Producer::send`].
    pub fn send_with_callback<F>(
        &self,
        record: ProducerRecord,
        callback: F,
    ) -> Result<(), SendError>
    where
        F: FnOnce(Result<RecordMetadata, ProduceError>) + Send + 'static,
    {
        self.post(record, Done::callback(Box::new(callback)))
    }

    /// Hands `record` to the I/O thread. On an error `done` is dropped unused.
    fn post(&self, record: ProducerRecord, done: Done) -> Result<(), SendError> {
        // What the record weighs on the channel (the core counts `buffer.memory`).
        let size = record.key.as_ref().map_or(0, |k| k.len())
            + record.value.as_ref().map_or(0, |v| v.len())
            + 64;
        let admitted = match self.inner.gate.admit(size, self.on_io_thread()) {
            Ok(a) => a,
            Err(e) => {
                done.disarm();
                return Err(e);
            }
        };
        let (admission, admitted_rx) = match admitted.buffer {
            Buffer::Blocked => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
            Buffer::HasRoom => (None, None),
        };
        let msg = Msg::Send {
            record,
            done,
            size,
            admission,
        };
        if let Err(mpsc::SendError(msg)) = self.inner.tx.send(msg) {
            drop(admitted);
            if let Msg::Send { done, .. } = msg {
                done.disarm();
            }
            return Err(SendError::Terminated);
        }
        admitted.posted();
        match admitted_rx.and_then(|rx| rx.wait()) {
            Some(Err(refused)) => Err(refused),
            // Taken in; or the I/O thread died, and the record's outcome says so.
            Some(Ok(())) | None => Ok(()),
        }
    }

    /// Blocks until every record sent before this call has an outcome (delivered or
    /// failed), sending queued records without waiting for `linger.ms`.
    ///
    /// # Errors
    /// [`WaitError::OnIoThread`] from a callback; [`WaitError::Terminated`] if the I/O
    /// thread died.
    pub fn flush(&self) -> Result<(), WaitError> {
        if self.on_io_thread() {
            return Err(WaitError::OnIoThread);
        }
        let (tx, rx) = oneshot::channel();
        if self.inner.tx.send(Msg::Flush(tx)).is_err() {
            return self.after_stop();
        }
        match rx.wait() {
            Some(()) => Ok(()),
            None => self.after_stop(),
        }
    }

    /// Stops accepting records, sends everything queued, waits until every record has an
    /// outcome (at most `delivery.timeout.ms`), and stops the I/O thread. Later sends
    /// fail with [`kacrab_idempotence::SendError::Closed`].
    ///
    /// # Errors
    /// [`WaitError::OnIoThread`] from a callback; [`WaitError::Terminated`] if the I/O
    /// thread died.
    pub fn close(&self) -> Result<(), WaitError> {
        self.close_inner(None)
    }

    /// As [`Producer::close`], but after `timeout` fails every record still without an
    /// outcome ([`DeliveryError::Aborted`](kacrab_idempotence::DeliveryError::Aborted);
    /// records already written may still be in the log) and stops.
    ///
    /// # Errors
    /// As [`Producer::close`].
    pub fn close_timeout(&self, timeout: Duration) -> Result<(), WaitError> {
        self.close_inner(Some(timeout))
    }

    /// Stops accepting records, fails every record without an outcome at once
    /// ([`DeliveryError::Aborted`](kacrab_idempotence::DeliveryError::Aborted), possibly
    /// written if it was on the wire), abandons an open transaction, and stops the I/O
    /// thread: Java's forced close. The same as [`Producer::close_timeout`] with a zero
    /// timeout.
    ///
    /// # Errors
    /// As [`Producer::close`].
    pub fn abort(&self) -> Result<(), WaitError> {
        self.stop_with(Msg::Abort)
    }

    fn close_inner(&self, timeout: Option<Duration>) -> Result<(), WaitError> {
        self.stop_with(|reply| Msg::Close {
            timeout,
            reply: Some(reply),
        })
    }

    /// Shuts the gate, sends the message that stops the session, waits for its answer
    /// and for the I/O thread to end.
    fn stop_with(&self, msg: impl FnOnce(oneshot::Sender<()>) -> Msg) -> Result<(), WaitError> {
        if self.on_io_thread() {
            return Err(WaitError::OnIoThread);
        }
        self.inner.gate.close();
        let (tx, rx) = oneshot::channel();
        let msg = msg(tx);
        if self.inner.tx.send(msg).is_ok() {
            let _ = rx.wait();
        }
        let join = self
            .inner
            .join
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(join) = join {
            if join.join().is_err() {
                return Err(WaitError::Terminated);
            }
        }
        self.after_stop()
    }

    /// After the I/O thread ended: fine if it ended because of a close.
    fn after_stop(&self) -> Result<(), WaitError> {
        let g = self.inner.gate.lock();
        if g.thread == IoThread::Stopped && g.life == Life::Closed {
            Ok(())
        } else {
            Err(WaitError::Terminated)
        }
    }

    fn transaction(&self, call: TxnCall) -> Result<(), TxnError> {
        let gone = || {
            if self.after_stop().is_ok() {
                TxnError::Closed
            } else {
                TxnError::Fatal(KafkaError::UnknownServerError)
            }
        };
        if self.on_io_thread() {
            return Err(TxnError::Fatal(KafkaError::UnknownServerError));
        }
        let (reply, rx) = oneshot::channel();
        if self
            .inner
            .tx
            .send(Msg::Transaction { call, reply })
            .is_err()
        {
            return Err(gone());
        }
        rx.wait().unwrap_or_else(|| Err(gone()))
    }

    /// Gets a producer id for `transactional.id`, fencing older producers with the same
    /// id; blocks until done. Call once, before any transaction.
    ///
    /// # Errors
    /// As [`kacrab_idempotence::Producer::init_transactions`], or its completion.
    pub fn init_transactions(&self) -> Result<(), TxnError> {
        self.transaction(TxnCall::Init)
    }

    /// Opens a transaction; records sent until commit or abort belong to it.
    ///
    /// # Errors
    /// Not ready (not initialized, a transaction already open, an error state).
    pub fn begin_transaction(&self) -> Result<(), TxnError> {
        self.transaction(TxnCall::Begin)
    }

    /// Commits consumer offsets with the open transaction; blocks until they are added.
    ///
    /// # Errors
    /// No transaction open, or the offsets could not be added.
    pub fn send_offsets_to_transaction(
        &self,
        offsets: Vec<OffsetToCommit>,
        group: ConsumerGroupMetadata,
    ) -> Result<(), TxnError> {
        self.transaction(TxnCall::SendOffsets(offsets, group))
    }

    /// Commits the open transaction once every record sent in it is acknowledged;
    /// blocks until the commit completes.
    ///
    /// # Errors
    /// The transaction must be aborted, or the producer is fenced or fatal.
    pub fn commit_transaction(&self) -> Result<(), TxnError> {
        self.transaction(TxnCall::Commit)
    }

    /// Aborts the open transaction; blocks until the abort completes.
    ///
    /// # Errors
    /// No transaction to abort, or the producer is fenced or fatal.
    pub fn abort_transaction(&self) -> Result<(), TxnError> {
        self.transaction(TxnCall::Abort)
    }

    /// The number of partitions of `topic`, from the cluster's metadata (asked for if
    /// not known yet), waiting up to `max.block.ms`. Use it with
    /// [`ProducerRecord::keyed`].
    ///
    /// # Errors
    /// [`WaitError::Timeout`] when the topic is unknown or the cluster unreachable for
    /// `max.block.ms`; [`WaitError::OnIoThread`]; [`WaitError::Terminated`].
    pub fn partition_count(&self, topic: &str) -> Result<i32, WaitError> {
        if self.on_io_thread() {
            return Err(WaitError::OnIoThread);
        }
        let (reply, rx) = oneshot::channel();
        let msg = Msg::PartitionCount {
            topic: topic.to_owned(),
            reply,
        };
        if self.inner.tx.send(msg).is_err() {
            return self.after_stop().and(Err(WaitError::Timeout));
        }
        match rx.wait() {
            Some(Some(n)) => Ok(n),
            Some(None) => Err(WaitError::Timeout),
            // Raced a close: the count was not learned.
            None => self.after_stop().and(Err(WaitError::Timeout)),
        }
    }

    /// Every metric of the producer, with Kafka's names and meanings (see
    /// [`MetricsSnapshot`]), taken on the I/O thread. `None` once it has stopped, or
    /// when called on the I/O thread (from a delivery callback).
    #[must_use]
    pub fn metrics(&self) -> Option<MetricsSnapshot> {
        if self.on_io_thread() {
            return None;
        }
        let (reply, rx) = oneshot::channel();
        self.inner.tx.send(Msg::Metrics(reply)).ok()?;
        rx.wait()
    }

    /// The client instance id a broker with a KIP-714 telemetry plugin assigned (Java's
    /// `KafkaProducer.clientInstanceId`, without its wait): `None` before the first
    /// subscription was fetched, with `enable.metrics.push=false`, when no broker has a
    /// plugin, once the I/O thread has stopped, or when called on it.
    #[must_use]
    pub fn client_instance_id(&self) -> Option<[u8; 16]> {
        if self.on_io_thread() {
            return None;
        }
        let (reply, rx) = oneshot::channel();
        self.inner.tx.send(Msg::ClientInstanceId(reply)).ok()?;
        rx.wait().flatten()
    }

    /// Counters of the I/O thread (connections, bytes, timeouts), updated after every
    /// wake-up of the loop.
    #[must_use]
    pub fn io_stats(&self) -> IoStats {
        *self
            .inner
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A sent record's outcome, to wait for.
#[must_use = "a DeliveryHandle is how a record's outcome is learned"]
pub struct DeliveryHandle {
    rx: oneshot::Receiver<Result<RecordMetadata, ProduceError>>,
}

impl std::fmt::Debug for DeliveryHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryHandle")
            .field("done", &self.rx.is_ready())
            .finish()
    }
}

impl DeliveryHandle {
    /// Blocks until the record has an outcome. Do not call it from a delivery callback.
    ///
    /// # Errors
    /// The record failed ([`ProduceError`]).
    pub fn wait(self) -> Result<RecordMetadata, ProduceError> {
        self.rx.wait().unwrap_or(Err(ProduceError::Terminated))
    }

    /// As [`DeliveryHandle::wait`], for at most `timeout`; gives the handle back
    /// (`Err`) if the record has no outcome by then.
    ///
    /// # Errors
    /// `Err(self)` on timeout.
    pub fn wait_timeout(
        self,
        timeout: Duration,
    ) -> Result<Result<RecordMetadata, ProduceError>, Self> {
        match self.rx.wait_until(Instant::now() + timeout) {
            Ok(outcome) => Ok(outcome.unwrap_or(Err(ProduceError::Terminated))),
            Err(()) => Err(self),
        }
    }

    /// Whether the record has an outcome ([`DeliveryHandle::wait`] would not block).
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.rx.is_ready()
    }
}

// The README is the crate's page on the registry: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
