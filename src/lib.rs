//! A sans-IO state machine for Kafka's idempotent producer.
//!
//! Kafka's idempotent producer promises that every record lands in its partition's log
//! exactly once and in send order, across retries, reconnects and leader moves. The
//! client keeps that promise by stamping every batch with (producer id, epoch, base
//! sequence) and by a per-partition state machine that decides which batch may go
//! next, when a retry keeps its sequence, and when only a new epoch makes the next
//! sequence safe. This crate is that machine, rule for rule the Java client's
//! `TransactionManager`, `Sender` and `RecordAccumulator`, with no I/O, no clock, no
//! threads, no async and no randomness: the same inputs always give the same outputs.
//!
//! **The invariant.** Per partition, the sequences on the wire form a gap-free ascending
//! run per (producer id, epoch); the log holds every acknowledged record exactly once,
//! in send order; every record gets exactly one outcome.
//!
//! # The driving contract
//!
//! A [`Producer`] has four families of methods, named as in `quinn-proto`:
//!
//! 1. getters (`&self`, no side effects): [`Producer::producer_id`],
//!    [`Producer::sequence_state`], [`Producer::is_idle`], [`Producer::stats`];
//! 2. application commands: [`Producer::send`], [`Producer::flush`],
//!    [`Producer::close`], [`Producer::abort`];
//! 3. inputs from the network and the clock, `handle_*`:
//!    [`Producer::handle_produce_response`], [`Producer::handle_producer_id`],
//!    [`Producer::handle_metadata`], [`Producer::handle_request_failed`],
//!    [`Producer::handle_timeout`];
//! 4. outputs, `poll_*`: [`Producer::poll_request`] (what to send),
//!    [`Producer::poll_event`] (what the application should learn) and
//!    [`Producer::poll_timeout`] (when to call `handle_timeout` next).
//!
//! > **After every command or input, drain `poll_request` until it returns `None`,
//! > then `poll_event` until it returns `None`; then wait until `poll_timeout` or the
//! > next input.**
//!
//! Time is an input: every call that depends on it takes a [`Timestamp`], and time must
//! never go backwards. Requests carry a [`RequestId`]; feed each answer back with it.
//! Write the requests for one broker in the order `poll_request` returned them (one
//! connection per broker, FIFO). A driver that writes from several tasks uses the
//! [`ticket`] on each produce request to keep that order across connections.
//! When the connection carrying requests fails, report each with
//! [`RequestFailure::Disconnected`] if it may have been written, or
//! [`RequestFailure::NotSent`] if it certainly was not (a never-sent batch costs no
//! attempt under `retries`). On [`Request::CloseConnection`], close that connection and
//! drop what is still in it. A driver that may hold a request back (while its
//! connection is set up) takes it with [`Producer::poll_request_unwritten`] and reports
//! its write with [`Producer::handle_request_written`]: `request.timeout.ms` runs from
//! the write, and an `acks=0` request delivers its records then.
//!
//! Batches travel as [`bytes::Bytes`]: the core builds and stamps them, the driver puts
//! the same bytes on the socket.
//!
//! # A complete driver loop
//!
//! A broker that answers everything at once, to show every call a real driver makes.
//! The blocking adapter (`kacrab-blocking`) is this loop over real sockets.
//!
//! ```
//! use kacrab_idempotence::*;
//!
//! let config = ProducerConfig::default();
//! let mut now = Timestamp::ZERO;
//! let mut producer = Producer::new(config, now);
//! let tp = TopicPartition::new("events", 0);
//! let mut next_offset = 0i64;
//!
//! for i in 0..10u32 {
//!     let record = Record::from_value(bytes::Bytes::from(i.to_string()), 0);
//!     producer.send(&tp, &record, now).expect("queued");
//! }
//! producer.flush();
//!
//! let mut delivered = 0;
//! while !producer.is_idle() {
//!     // 1. Everything the producer wants sent.
//!     while let Some(request) = producer.poll_request(now) {
//!         match request {
//!             Request::InitProducerId(r) => {
//!                 producer.handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(7, 0)), now).unwrap();
//!             }
//!             Request::Metadata(r) => {
//!                 let partitions = vec![PartitionMetadata::new(tp.clone(), Some(NodeId(1)), 0)];
//!                 let md = Metadata::new(partitions);
//!                 producer.handle_metadata(Some(r.id), &md, now).unwrap();
//!             }
//!             Request::Produce(r) => {
//!                 // A real driver writes r.batches to r.node and reads the answer later.
//!                 let mut response = ProduceResponse::default();
//!                 for batch in &r.batches {
//!                     let count = record::read_header(&batch.data).unwrap().record_count;
//!                     response.partitions.push(PartitionResponse::ok(batch.partition.clone(), next_offset));
//!                     next_offset += i64::from(count);
//!                 }
//!                 producer.handle_produce_response(r.id, &response, now).unwrap();
//!             }
//!             Request::CloseConnection { .. } => {}
//!             // Transactional requests come only with a transactional.id.
//!             _ => unreachable!(),
//!         }
//!     }
//!     // 2. Everything the application should learn.
//!     while let Some(event) = producer.poll_event() {
//!         if let Event::Delivered { records, .. } = event {
//!             delivered += records.len();
//!         }
//!     }
//!     // 3. Sleep until the next deadline (here: jump to it).
//!     if let Some(deadline) = producer.poll_timeout() {
//!         now = now.max(deadline);
//!         producer.handle_timeout(now);
//!     }
//! }
//! assert_eq!(delivered, 10);
//! ```
//!
//! # Where the rules come from
//!
//! Sequencing follows the Java client (Kafka 4.x): sequences are assigned at drain and
//! never re-stamped except by an epoch-bump rewrite or a split; only the first
//! in-flight batch of a partition may be resent; a batch whose fate is unknown marks
//! its partition unresolved until later acks prove it landed or an epoch bump makes the
//! next sequence safe. The few deliberate deviations (each safer than Java's) are listed
//! in `docs/design.md`.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
// `arbitrary`'s derives need `std`; so do the tests.
#[cfg(any(test, feature = "arbitrary"))]
extern crate std;

mod accumulator;
mod admission;
pub mod backoff;
mod batch;
mod complete;
pub mod compression;
pub mod config;
mod drain;
pub mod error;
mod expiry;
pub mod handed;
mod identity;
mod invariants;
pub mod io;
pub mod metrics;
mod outcome;
mod partition;
mod probe;
mod producer;
pub mod record;
mod recycle;
mod requests;
mod retry;
mod sequence_entry;
mod sequencing;
pub mod ticket;
mod timers;
pub mod txn;
mod txn_complete;
mod txn_ops;
mod txn_partitions;
mod txn_queue;
mod txn_version;
pub mod types;
mod written;

pub use compression::{Codec, Compression, Compressor};
pub use config::{Acks, ConfigError, ProducerConfig, ProducerConfigBuilder};
pub use error::{DeliveryError, ErrorClass, InputError, KafkaError, RecordSizeLimit, SendError};
pub use handed::BatchRecords;
pub use io::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, BrokerMetadata, EndTxnRequest, Event,
    FindCoordinatorRequest, InitProducerIdRequest, LeaderHint, Metadata, MetadataRequest,
    PartitionMetadata, PartitionResponse, ProduceBatch, ProduceRequest, ProduceResponse,
    RecordError, Request, RequestFailure, TxnOffsetCommitRequest,
};
pub use metrics::{MetricSample, Stats};
pub use producer::{Producer, SequenceState};
pub use record::{Header, Record};
pub use txn::{
    ConsumerGroupMetadata, CoordinatorType, OffsetToCommit, TransactionState, TxnError, TxnOp,
};
pub use types::*;

// The README is the crate's page on the registry: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
