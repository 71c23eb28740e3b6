//! A deterministic Kafka cluster simulator with a lying network, for testing
//! `kacrab-idempotence`.
//!
//! * [`batch`], [`log`], [`broker`], [`coordinator`]: the model broker and transaction
//!   coordinator, Kafka's rules, re-exported from `kacrab-broker-model` (the one model of
//!   Kafka in the workspace, which the session's own test harness answers from too).
//! * `world`: the brokers, their partitions and replication, the coordinator, the
//!   lying [`net::Net`] and the fault streams, on the virtual clock. It knows nothing of
//!   the producer; a driver talks to it through the client's side of the network
//!   (write a request on the connection to broker N, take what the network delivers,
//!   close a connection, learn of a dropped connection).
//! * `driver`: one [`Producer`](kacrab_idempotence::Producer) driven exactly as a real
//!   driver drives it (routing, failure reports, feeding answers), on typed messages.
//! * `session_driver`: a `kacrab_driver::Session` driven over the world's network on real
//!   Kafka frames, through the brokers' [`frontend`] ([`DriverKind::Session`]).
//! * `drivers`: the two behind one face; [`SimConfig::driver`] picks one.
//! * `workload`: the application's send schedule ([`Workload`]).
//! * `observers`: the [`checker`] (exactly once, in order, every record resolved once,
//!   gap-free sequences on the wire, offsets as logged), the [`SimStats`], the trace,
//!   the [`TxnTracker`], and the [`silence_watch`] (how long each silent connection
//!   holds the producer).
//! * [`Cluster`]: composes the four and runs the step loop; its transactional script
//!   and transactional properties are its own submodules.
//! * [`faults`]: what the network and brokers lie about, drawn at configurable rates or
//!   scripted.
//! * [`oracle`]: the record encoding, the outcome type and the log-side check shared
//!   with the adapter suite.
//! * [`scenario`]: a whole run (chaos phase, quiet phase, liveness probes) and its
//!   [`Report`]; [`summary`]: the main job's violations by kind and its last line;
//!   [`failure_bound`]: whether the faults explain the records a run failed.
//! * [`ops`]: decodes an arbitrary byte string into a scripted run, for fuzzing.
//!
//! The modules import one another along a DAG (besides the leaves every module may use:
//! `config`, `faults`, `rng`, `net`, `broker`, `log`, `batch`, `coordinator`):
//!
//! ```text
//!   ops ──> scenario ──> cluster
//!   cluster ──> drivers, workload, world, observers      (cluster::script, cluster::checks
//!   drivers ──> driver, session_driver                    also ──> txn_offsets)
//!   driver ─────────> world, observers
//!   session_driver ─> world, observers, frontend
//!   world ──> observers                                  (world::* ──> their parent)
//!   txn_offsets ──> txn_sim
//!   observers ──> checker, txn_sim, silence_watch
//! ```
//!
//! No module imports one that imports it back; a submodule (`world::brokers`,
//! `cluster::script`, ...) extends its parent's type and is imported by no one.
//!
//! Everything is a pure function of the seed: the same configuration always takes the
//! same steps.
#![warn(missing_docs)]

pub use kacrab_broker_model::{batch, broker, coordinator, log, verification};
pub mod checker;
pub mod cluster;
pub mod config;
mod driver;
mod drivers;
pub mod failure_bound;
pub mod faults;
pub mod frontend;
pub mod net;
mod observers;
pub mod ops;
pub mod oracle;
pub mod rng;
pub mod scenario;
mod session_driver;
pub mod silence_watch;
pub mod summary;
pub mod txn_offsets;
pub mod txn_sim;
mod workload;
mod world;

pub use checker::{Checker, FatalPolicy, Outcome, Tally, Violation, ViolationKind, WireBatch};
pub use cluster::Cluster;
pub use config::{DriverKind, SimConfig, SimStats, SIM_PRODUCER_ID_EXPIRATION};
pub use failure_bound::{FailureBound, FaultScope};
pub use faults::{FaultCounts, FaultKind, FaultRates, PartitionFault, Script};
pub use rng::Rng;
pub use scenario::{Progress, Report, Scenario};
pub use silence_watch::Recovery;
pub use summary::{ChaosSummary, ViolationCounts};
pub use txn_sim::{TxnOutcome, TxnRecord, TxnTracker};
pub use workload::Workload;
pub use world::{BrokerNode, SimPartition};
