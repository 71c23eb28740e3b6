//! Kafka's broker and transaction coordinator rules as a pure model.
//!
//! * [`batch`], [`log`], [`broker`]: one partition of a broker, written from Kafka's
//!   broker rules (`ProducerStateEntry`, `ProducerAppendInfo`, `UnifiedLog`), an
//!   independent oracle not derived from the client; [`verification`]: KIP-890 part 1.
//! * `replica`: replication, truncation and producer-state snapshots (methods of
//!   [`broker::PartitionState`]).
//! * [`coordinator`]: the transaction coordinator.
//!
//! The modules import one another along a DAG: `batch` <- `log` <- `broker` <-
//! `coordinator`. One pair remains: `verification` and `replica` extend
//! `broker::PartitionState`, and `broker` calls them.
//!
//! No I/O, clock or randomness: time is a parameter (`now_ms`), and every answer is a
//! pure function of the calls made.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod batch;
pub mod broker;
pub mod coordinator;
pub mod log;
mod replica;
pub mod verification;
