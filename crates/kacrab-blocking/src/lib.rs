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
//!     let record = ProducerRecord::keyed("events", i.to_string(), "value", 6);
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
//! [`Producer::from_properties`] takes Kafka property names. `bootstrap.servers`
//! (required), `client.id` and `max.block.ms` (default 60000) are this adapter's; every
//! other key goes to [`ProducerConfigBuilder::set`](kacrab_idempotence::ProducerConfigBuilder::set)
//! (`acks`, `linger.ms`, `batch.size`, `request.timeout.ms`, `delivery.timeout.ms`,
//! `buffer.memory`, `max.in.flight.requests.per.connection`, ...), with Kafka 4.x
//! defaults. `request.timeout.ms` also bounds each TCP connect and socket write.
//!
//! # How it works
//!
//! ```text
//!  application threads ──send/flush/close──┐
//!  connection threads (connect, then read) ─┼─ one mpsc channel ─> I/O thread
//!                                           │                     owns the Session:
//!                                           │                     handle_* each message,
//!                                           │                     drain poll_output (connect,
//!                                           │                     write, close sockets) and
//!                                           │                     poll_event (complete records),
//!                                           │                     recv_timeout until poll_timeout
//! ```
//!
//! * **One I/O thread** owns the [`Session`] (and so the core)
//!   and the write half of every socket. It waits on the channel with `recv_timeout`
//!   until the session's `poll_timeout` (a [`Timestamp`]
//!   is microseconds since the producer started, against a start `Instant`), calls
//!   `handle_timeout` once the clock passed it, and after every input drains
//!   `poll_output` and `poll_event`.
//! * **Outputs**: `Connect` starts a connection thread that resolves the address and
//!   calls `TcpStream::connect_timeout` (so DNS and slow connects never stall the loop),
//!   sets `TCP_NODELAY` and read/write timeouts, hands the write half back, then blocks
//!   on `read` and forwards bytes or end-of-stream over the channel. `Transmit` is a
//!   `write_all` on the I/O thread, in the order the session produced the frames (frames
//!   of one wake-up are buffered and written when it ends). `Close` shuts the socket
//!   down. A failed write is a disconnect (`handle_disconnected`).
//! * **No logic of its own**: retries, sequences, batching, request timeouts, metadata
//!   refresh and leader routing are the core's and the session's. Because one thread
//!   writes every frame in order, the core's enqueue tickets (which keep a later request
//!   from overtaking an earlier one when several tasks write concurrently) are
//!   honoured by construction and ignored here.
//!
//! # Sending, blocking and errors
//!
//! [`Producer::send`] hands the record to the I/O thread and returns at once with a
//! [`DeliveryHandle`]; it does not wait for the I/O thread to look at it, so sends
//! pipeline. It returns an error ([`SendError`]) when the producer is closed or fatal, or
//! after blocking for `max.block.ms` while the core's `buffer.memory` is full (the core
//! refused a record with `BufferFull`; it waits on the I/O thread, in send order, until
//! deliveries free memory). A refusal the calling thread could not foresee (a record over
//! `max.request.size`, a negative partition, a close or fatal error racing the send)
//! arrives through the handle as [`ProduceError::Send`], as the Java client reports
//! such errors through its future.
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
//! To drive the core from your own event loop instead, start from the root package's
//! `examples/custom_event_loop.rs`: a single-threaded loop showing every `handle_*` and
//! `poll_*` call against an in-process toy broker.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod io;
mod oneshot;

use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kacrab_driver::Session;
use kacrab_idempotence::record::BatchBuilder;
use kacrab_idempotence::{ProducerConfig, Record, Timestamp, TopicPartition};

pub use error::{BuildError, ProduceError, SendError, WaitError};
pub use io::IoStats;
pub use kacrab_driver::{ProducerRecord, RecordMetadata};

/// Re-exported from the core: a topic name, a record header.
pub use kacrab_idempotence::{
    ConsumerGroupMetadata, Header, OffsetToCommit, Topic, TransactionState, TxnError, TxnOp,
};

use io::{Completion, Gate, Io, Msg, Posted};

/// The default `max.block.ms`, as in Kafka.
pub const DEFAULT_MAX_BLOCK: Duration = Duration::from_millis(60_000);

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
            done: None,
            abort_at: None,
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
    /// A missing `bootstrap.servers`, a key the core does not know, a value out of
    /// range, or a thread that could not start.
    pub fn from_properties(properties: &[(&str, &str)]) -> Result<Self, BuildError> {
        let mut bootstrap: Vec<String> = Vec::new();
        let mut client_id: Option<String> = None;
        let mut max_block = DEFAULT_MAX_BLOCK;
        let mut builder = ProducerConfig::builder();
        for &(key, value) in properties {
            match key {
                "bootstrap.servers" => {
                    bootstrap = value
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                }
                "client.id" => client_id = Some(value.trim().to_owned()).filter(|s| !s.is_empty()),
                "max.block.ms" => {
                    let ms: u64 = value.trim().parse().map_err(|_| BuildError::InvalidValue {
                        key: "max.block.ms",
                        value: value.to_owned(),
                        reason: "not a non-negative integer",
                    })?;
                    max_block = Duration::from_millis(ms);
                }
                _ => {
                    builder.set(key, value)?;
                }
            }
        }
        if bootstrap.is_empty() {
            return Err(BuildError::MissingBootstrap);
        }
        if let Some(bad) = bootstrap.iter().find(|a| !is_host_port(a)) {
            return Err(BuildError::InvalidValue {
                key: "bootstrap.servers",
                value: bad.clone(),
                reason: "expected host:port",
            });
        }
        let config = builder.build()?;
        Self::start(config, bootstrap, client_id, max_block)
    }

    fn start(
        config: ProducerConfig,
        bootstrap: Vec<String>,
        client_id: Option<String>,
        max_block: Duration,
    ) -> Result<Self, BuildError> {
        let start = Instant::now();
        let gate = Arc::new(Gate::new(config.buffer_memory(), max_block));
        let stats = Arc::new(Mutex::new(IoStats::default()));
        let (tx, rx) = mpsc::channel();
        let request_timeout = config.request_timeout();
        let metadata_retry = config.retry_backoff_max().max(config.retry_backoff());
        let session = Session::new(config, bootstrap, client_id, Timestamp::ZERO);
        let io = Io::new(
            session,
            rx,
            tx.clone(),
            Arc::clone(&gate),
            Arc::clone(&stats),
            start,
            request_timeout,
            metadata_retry,
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
    /// only while the producer's buffers are full, for at most `max.block.ms`.
    ///
    /// # Errors
    /// The producer is closed or fatal, its I/O thread stopped, or `max.block.ms`
    /// passed with the buffer full. The record was not queued.
    pub fn send(&self, record: ProducerRecord) -> Result<DeliveryHandle, SendError> {
        let (tx, rx) = oneshot::channel();
        self.post(record, Completion::handle(tx))
            .map_err(|(e, _)| e)?;
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
        let done = Completion::callback(Box::new(callback));
        match self.post(record, done) {
            Ok(()) => Ok(()),
            Err((e, done)) => {
                // Not queued: the callback must not run.
                done.disarm();
                Err(e)
            }
        }
    }

    fn post(
        &self,
        record: ProducerRecord,
        done: Completion,
    ) -> Result<(), (SendError, Completion)> {
        let ProducerRecord {
            topic,
            partition,
            key,
            value,
            headers,
            timestamp,
        } = record;
        let timestamp = timestamp.unwrap_or_else(now_millis);
        let record = Record {
            key,
            value,
            headers,
            timestamp,
        };
        let size = BatchBuilder::estimated_record_size(&record);
        if let Err(e) = self.inner.gate.admit(size, self.on_io_thread()) {
            return Err((e, done));
        }
        let posted = Posted {
            partition: TopicPartition::new(topic, partition),
            record,
            done,
            size,
            block_deadline: Instant::now() + self.inner.gate.max_block,
        };
        match self.inner.tx.send(Msg::Send(Box::new(posted))) {
            Ok(()) => Ok(()),
            Err(mpsc::SendError(msg)) => {
                self.inner.gate.unadmit(size);
                let Msg::Send(posted) = msg else {
                    unreachable!("sent a Send")
                };
                Err((SendError::Terminated, posted.done))
            }
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
    /// outcome, and stops the I/O thread. Later sends fail with
    /// [`kacrab_idempotence::SendError::Closed`].
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
        self.close_inner(Some(Instant::now() + timeout))
    }

    fn close_inner(&self, abort_at: Option<Instant>) -> Result<(), WaitError> {
        if self.on_io_thread() {
            return Err(WaitError::OnIoThread);
        }
        self.inner.gate.lock().closed = true;
        self.inner.gate.notify();
        let (tx, rx) = oneshot::channel();
        if self
            .inner
            .tx
            .send(Msg::Close {
                done: Some(tx),
                abort_at,
            })
            .is_ok()
        {
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

    /// After the I/O thread ended: fine if it ended because of `close`.
    fn transaction(&self, call: io::TxnCall) -> Result<(), TxnError> {
        let dead = || TxnError::Fatal(kacrab_idempotence::KafkaError::UnknownServerError);
        if self.on_io_thread() {
            return Err(dead());
        }
        let (reply, rx) = oneshot::channel();
        if self
            .inner
            .tx
            .send(io::Msg::Transaction { call, reply })
            .is_err()
        {
            return Err(dead());
        }
        rx.wait().unwrap_or_else(|| Err(dead()))
    }

    /// Gets a producer id for `transactional.id`, fencing older producers with the same
    /// id; blocks until done. Call once, before any transaction.
    ///
    /// # Errors
    /// As [`kacrab_idempotence::Producer::init_transactions`], or its completion.
    pub fn init_transactions(&self) -> Result<(), TxnError> {
        self.transaction(io::TxnCall::Init)
    }

    /// Opens a transaction; records sent until commit or abort belong to it.
    ///
    /// # Errors
    /// Not ready (not initialized, a transaction already open, an error state).
    pub fn begin_transaction(&self) -> Result<(), TxnError> {
        self.transaction(io::TxnCall::Begin)
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
        self.transaction(io::TxnCall::SendOffsets(offsets, group))
    }

    /// Commits the open transaction once every record sent in it is acknowledged;
    /// blocks until the commit completes.
    ///
    /// # Errors
    /// The transaction must be aborted, or the producer is fenced or fatal.
    pub fn commit_transaction(&self) -> Result<(), TxnError> {
        self.transaction(io::TxnCall::Commit)
    }

    /// Aborts the open transaction; blocks until the abort completes.
    ///
    /// # Errors
    /// No transaction to abort, or the producer is fenced or fatal.
    pub fn abort_transaction(&self) -> Result<(), TxnError> {
        self.transaction(io::TxnCall::Abort)
    }

    fn after_stop(&self) -> Result<(), WaitError> {
        let g = self.inner.gate.lock();
        if g.stopped && g.closed {
            Ok(())
        } else {
            Err(WaitError::Terminated)
        }
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
        let deadline = Instant::now() + self.inner.gate.max_block;
        let msg = Msg::PartitionCount {
            topic: topic.to_owned(),
            deadline,
            reply,
        };
        if self.inner.tx.send(msg).is_err() {
            return Err(WaitError::Terminated);
        }
        match rx.wait() {
            Some(Some(n)) => Ok(n),
            Some(None) => Err(WaitError::Timeout),
            None => Err(WaitError::Terminated),
        }
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

/// `host:port` with a non-empty host and a port number (`[::1]:9092` included).
fn is_host_port(addr: &str) -> bool {
    addr.rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
