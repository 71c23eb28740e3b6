//! A deterministic Kafka cluster simulator with a lying network, for testing
//! `kacrab-idempotence`.
//!
//! * [`batch`], [`log`], [`broker`]: the model broker, written from Kafka's broker rules
//!   (an independent oracle, not derived from the client).
//! * [`Cluster`]: N model brokers, partitions with leaders and leader epochs, a virtual
//!   clock, a seeded RNG and a [`net::Net`] of per-broker connections, driving one
//!   [`Producer`](kacrab_idempotence::Producer) exactly as a real driver does.
//! * [`faults`]: what the network and brokers lie about, drawn at configurable rates or
//!   scripted.
//! * [`oracle`]: the record encoding, the outcome type and the log-side check shared
//!   with the adapter suite; [`checker`]: the properties (exactly once, in order, every
//!   record resolved once, gap-free sequences on the wire, offsets as logged).
//! * [`scenario`]: a whole run (chaos phase, quiet phase, liveness probes) and its
//!   [`Report`].
//! * [`ops`]: decodes an arbitrary byte string into a scripted run, for fuzzing.
//!
//! Everything is a pure function of the seed: the same configuration always takes the
//! same steps.
#![warn(missing_docs)]

pub mod batch;
pub mod broker;
mod brokers;
pub mod checker;
pub mod cluster;
pub mod config;
pub mod coordinator;
mod driver;
pub mod faults;
pub mod log;
pub mod net;
pub mod ops;
pub mod oracle;
mod replica;
mod replication;
pub mod rng;
pub mod scenario;
mod txn_checks;
pub mod txn_faults;
pub mod txn_offsets;
pub mod txn_sim;
pub mod verification;

pub use checker::{Checker, FatalPolicy, Outcome, Tally, Violation, ViolationKind, WireBatch};
pub use cluster::{BrokerNode, Cluster, SimPartition, Workload};
pub use config::{SimConfig, SimStats, SIM_PRODUCER_ID_EXPIRATION};
pub use faults::{FaultCounts, FaultKind, FaultRates, PartitionFault, Script};
pub use rng::Rng;
pub use scenario::{Progress, Report, Scenario};
pub use txn_sim::{TxnOutcome, TxnRecord, TxnTracker};
