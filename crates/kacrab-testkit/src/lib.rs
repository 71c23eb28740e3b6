//! One adapter test suite, run against every kacrab producer adapter.
//!
//! Each adapter implements [`TestProducer`] for its producer; the scenarios in
//! [`scenarios`] start brokers, inject faults, drive the producer through the trait and
//! check every partition's log: each acknowledged record exactly once, in send order,
//! every send resolved once.
//!
//! * [`Cluster`]: a krafka FakeBroker cluster on its own Tokio runtime, driven from plain
//!   threads: topics, leader moves, crashes, fault injection with counts, log reading.
//! * [`Proxy`]: a lying TCP proxy (std threads) in front of any broker, FakeBroker or real
//!   Kafka: drops responses after the write, delays them, cuts frames.
//! * [`checker`]: the record format and the exactly-once / order / "failed as not
//!   written means absent" check, the simulator's [`kacrab_sim::oracle`] applied to
//!   logs read back from FakeBroker or real Kafka.
//! * [`nemesis`]: the fault controller for real clusters: a schedule drawn from a seed
//!   (printed, repeatable) of proxy faults, SIGSTOP pauses and SIGKILL restarts.
//! * [`scenarios`]: the FakeBroker scenarios, one `pub fn` each; [`real_kafka`]: the
//!   real-broker scenarios, skipped unless their environment variable is set.
//!
//! An adapter runs them all with one macro per family, which writes one `#[test]` per
//! scenario:
//!
//! ```ignore
//! fn factory(props: &[(&str, &str)]) -> Result<Box<dyn kacrab_testkit::TestProducer>, String> {
//!     /* build the adapter's producer from the properties */
//! #   unimplemented!()
//! }
//! kacrab_testkit::fake_broker_tests!(factory);
//! kacrab_testkit::real_kafka_tests!(factory);
//! ```
//!
//! Scenarios block the calling thread: call them from a plain `#[test]`, not from inside
//! a Tokio runtime. Each FakeBroker scenario takes about a second (a few for the
//! request-timeout one) and runs in parallel with the others.
//!
//! Environment:
//!
//! * `KACRAB_TESTKIT_SCALE`: multiply every FakeBroker burst (default 1: 6,000 records);
//! * `KACRAB_TESTKIT_DEADLINE_S`: how long flush, the delivery waits and close may take
//!   before a FakeBroker scenario fails as stuck (default 120);
//! * `KACRAB_KAFKA_BOOTSTRAP`, `KACRAB_KAFKA_CLUSTER`: the real brokers (see [`real_kafka`]);
//!   `KACRAB_REAL_RECORDS` overrides the real scenarios' record counts.
#![warn(missing_docs)]

use bytes::Bytes;

pub mod burst;
pub mod checker;
pub mod cluster;
pub mod compression_scenarios;
pub mod extensions;
pub mod metric_names;
pub mod nemesis;
pub mod proxy;
pub mod real_kafka;
pub mod scenarios;
pub mod soak_stats;
pub mod sockets;
mod trigger;
pub mod txn_scenarios;

pub use checker::{check, Expect, LogRecord, Outcome, Tally};
pub use cluster::{ApiKey, Cluster, Control, ErrorCode};
pub use proxy::{Blackhole, Dial, Link, Proxy, ProxyAction, ProxyStats, Target};
pub use scenarios::Report;
pub use trigger::{Fired, Trigger};

pub use kacrab_driver::TxnCall;
pub use kacrab_idempotence::{ConsumerGroupMetadata, OffsetToCommit, TopicPartition, TxnError};

/// The outcome of one send, waited for by the scenario thread.
pub struct Delivery(pub Box<dyn FnOnce() -> Result<DeliveryReport, DeliveryFailure> + Send>);

impl Delivery {
    /// Blocks until the record has an outcome.
    pub fn wait(self) -> Result<DeliveryReport, DeliveryFailure> {
        (self.0)()
    }
}

/// Why a send failed, and whether the record may be in the log anyway: the adapter's
/// `possibly_written`, which the check holds it to (a record failed with
/// `possibly_written == false` must not be in any log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryFailure {
    /// The adapter's error, as text.
    pub error: String,
    /// Whether some attempt may have reached the log. `false` for a record refused
    /// before it was queued.
    pub possibly_written: bool,
}

impl DeliveryFailure {
    /// A failure with this error and flag.
    pub fn new(error: impl std::fmt::Display, possibly_written: bool) -> Self {
        Self {
            error: error.to_string(),
            possibly_written,
        }
    }
}

impl std::fmt::Display for DeliveryFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The session's errors already say it; other adapters' may not.
        let flag = format!("(possibly written: {})", self.possibly_written);
        if self.error.ends_with(&flag) {
            f.write_str(&self.error)
        } else {
            write!(f, "{} {flag}", self.error)
        }
    }
}

impl From<DeliveryFailure> for String {
    fn from(f: DeliveryFailure) -> Self {
        f.to_string()
    }
}

/// Where an acknowledged record landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryReport {
    /// The partition.
    pub partition: i32,
    /// The record's offset, when the broker reported one.
    pub offset: Option<i64>,
}

/// What a scenario needs from a producer adapter. Implementations block the calling
/// (scenario) thread where they must; the adapter's own runtime, if any, runs elsewhere.
pub trait TestProducer: Send {
    /// Sends one record to `topic`/`partition`; returns immediately with a waiter.
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery;
    /// Blocks until every record sent so far has an outcome.
    fn flush(&self) -> Result<(), String>;
    /// Flushes and closes the producer.
    fn close(self: Box<Self>) -> Result<(), String>;

    /// Runs one transactional call (`init_transactions`, `begin_transaction`,
    /// `send_offsets_to_transaction`, `commit_transaction`, `abort_transaction`),
    /// blocking until it completes, and returns the producer's own error, so that a
    /// workload can follow Java's contract (abortable: abort and retry; fenced or fatal:
    /// stop). `init_transactions` gets a producer id for the `transactional.id` in the
    /// factory's properties (the transactional scenarios pass one), fencing older
    /// producers with the same id. Adapters without transactions keep the default, an
    /// error.
    fn transaction(&self, call: TxnCall) -> Result<(), TxnError> {
        let _ = call;
        Err(TxnError::NotTransactional)
    }

    /// [`TestProducer::transaction`] with [`TxnCall::Init`], the error as text.
    fn init_transactions(&self) -> Result<(), String> {
        self.transaction(TxnCall::Init).map_err(txn_error_text)
    }
    /// Opens a transaction; records sent until commit or abort belong to it.
    fn begin_transaction(&self) -> Result<(), String> {
        self.transaction(TxnCall::Begin).map_err(txn_error_text)
    }
    /// Commits the open transaction, blocking until the commit completes.
    fn commit_transaction(&self) -> Result<(), String> {
        self.transaction(TxnCall::Commit).map_err(txn_error_text)
    }
    /// Aborts the open transaction, blocking until the abort completes.
    fn abort_transaction(&self) -> Result<(), String> {
        self.transaction(TxnCall::Abort).map_err(txn_error_text)
    }
}

/// A transactional error as the String-returning calls of [`TestProducer`] report it:
/// its message and its variant.
fn txn_error_text(e: TxnError) -> String {
    format!("{e} ({e:?})")
}

/// Builds a producer from Kafka property pairs (`bootstrap.servers`, `client.id`,
/// `linger.ms`, `request.timeout.ms`, ...; `transactional.id` for the transactional
/// scenarios, which merge it into the properties they pass).
pub type Factory<'a> = &'a dyn Fn(&[(&str, &str)]) -> Result<Box<dyn TestProducer>, String>;

/// Writes one `#[test]` per FakeBroker scenario for `$factory` (a path to a function or
/// closure usable as a [`Factory`]), plus one per extra scenario named after a `;` (e.g.
/// `fake_broker_tests!(factory; out_of_order_sequence_all_acked)`).
#[macro_export]
macro_rules! fake_broker_tests {
    ($factory:expr; $($extra:ident),+ $(,)?) => {
        $crate::fake_broker_tests!($factory);
        $crate::__scenario_tests!($factory, scenarios; $($extra),+);
    };
    ($factory:expr) => {
        $crate::__scenario_tests!(
            $factory, scenarios;
            smoke,
            leader_moves,
            crash_restart,
            crash_failover,
            apply_then_disconnect,
            not_leader_or_follower,
            not_enough_replicas,
            not_enough_replicas_after_append,
            out_of_order_sequence,
            unknown_producer_id,
            throttled,
            request_timeouts,
            silent_broker,
            proxy_drop_after_write,
            proxy_mixed,
            failed_written_or_not,
        );
        $crate::__scenario_tests!($factory, compression_scenarios; fake_compression_every_codec);
    };
}

/// Writes one `#[test]` per FakeBroker link-fault scenario (blackholes, refused dials,
/// slow links; every record must be acknowledged once the link heals) for `$factory`,
/// plus one per extra scenario named after a `;` (e.g.
/// `fake_broker_link_tests!(factory; stalled_peer_spares_the_others)`).
#[macro_export]
macro_rules! fake_broker_link_tests {
    ($factory:expr; $($extra:ident),+ $(,)?) => {
        $crate::fake_broker_link_tests!($factory);
        $crate::__scenario_tests!($factory, scenarios; $($extra),+);
    };
    ($factory:expr) => {
        $crate::__scenario_tests!(
            $factory, scenarios;
            blackhole_heals,
            blackhole_one_way_heals,
            refused_dials_and_slow_link,
            blackhole_within_budget,
        );
    };
}

/// Writes one `#[test]` per FakeBroker transactional scenario (transaction versions 1
/// and 2) for `$factory`.
#[macro_export]
macro_rules! fake_broker_txn_tests {
    ($factory:expr) => {
        $crate::__scenario_tests!($factory, txn_scenarios; transactions_v1, transactions_v2);
    };
}

/// Writes one `#[test]` per real-Kafka scenario for `$factory`; each skips (and passes)
/// with a message when its environment variable is not set.
#[macro_export]
macro_rules! real_kafka_tests {
    ($factory:expr) => {
        $crate::__scenario_tests!(
            $factory, real_kafka;
            real_exactly_once,
            real_leader_kill,
            real_proxy_drops,
            real_blackhole_within_budget,
            real_txn_read_committed,
            real_txn_fencing,
            real_txn_coordinator_killed,
        );
        $crate::__scenario_tests!(
            $factory, compression_scenarios;
            real_compression_every_codec,
        );
    };
}

/// Writes the kernel-blackhole `#[test]` ([`real_kafka::real_kernel_blackhole`]: a 40 s
/// `iptables` DROP on the broker's port under Kafka's default timeouts) for `$factory`;
/// it skips unless `KACRAB_KAFKA_BOOTSTRAP` and `KACRAB_KERNEL_BLACKHOLE_S` are set and it
/// runs as root with `iptables`.
#[macro_export]
macro_rules! real_kafka_kernel_tests {
    ($factory:expr) => {
        $crate::__scenario_tests!($factory, real_kafka; real_kernel_blackhole);
    };
}

/// Writes the Jepsen-style `#[test]`s for `$factory` (a seeded schedule of partitions,
/// pauses and kills on a three-node cluster): [`real_kafka::real_jepsen`] (idempotent)
/// and [`real_kafka::real_jepsen_txn`] (transactions, the coordinator killed
/// mid-commit); each skips unless `KACRAB_KAFKA_CLUSTER` is set. The transactional one
/// also skips when `KACRAB_JEPSEN_TXN_DRIVERS` (a comma-separated list of package names)
/// is set and does not name the calling package (CI runs it for one driver per run).
#[macro_export]
macro_rules! real_kafka_jepsen_tests {
    ($factory:expr) => {
        $crate::__scenario_tests!($factory, real_kafka; real_jepsen);
        #[test]
        fn real_jepsen_txn() {
            let factory: $crate::Factory<'_> = &$factory;
            match $crate::real_kafka::real_jepsen_txn_for(env!("CARGO_PKG_NAME"), factory) {
                Ok(report) => println!("{report}"),
                Err(e) => panic!("{e}"),
            }
        }
    };
}

/// Writes the soak's `#[test]` ([`real_kafka::real_soak`]: constant load under a mild
/// fault schedule for `KACRAB_SOAK_MINUTES`, one row per minute, a flatness verdict) for
/// `$factory`, `#[ignore]`d: it runs only with `--ignored`, and skips unless
/// `KACRAB_KAFKA_CLUSTER` is set.
#[macro_export]
macro_rules! real_kafka_soak_tests {
    ($factory:expr) => {
        #[test]
        #[ignore = "a 30-minute soak on a three-node cluster: run with --ignored (docs/real-kafka.md)"]
        fn real_soak() {
            let factory: $crate::Factory<'_> = &$factory;
            match $crate::real_kafka::real_soak(factory) {
                Ok(report) => println!("{report}"),
                Err(e) => panic!("{e}"),
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __scenario_tests {
    ($factory:expr, $module:ident; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let factory: $crate::Factory<'_> = &$factory;
                match $crate::$module::$name(factory) {
                    Ok(report) => println!("{report}"),
                    Err(e) => panic!("{e}"),
                }
            }
        )*
    };
}
