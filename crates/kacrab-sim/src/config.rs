//! The simulator's configuration and counters.

use std::time::Duration;

use kacrab_idempotence::ProducerConfig;

use crate::faults::FaultRates;

/// The brokers' `producer.id.expiration.ms` in simulations (virtual time): short, so
/// the workload's idle gaps make the brokers forget the producer, and longer than the
/// largest `delivery.timeout.ms + request.timeout.ms` the simulator's producers use.
pub const SIM_PRODUCER_ID_EXPIRATION: Duration = Duration::from_secs(150);

/// How to build a [`Cluster`](crate::Cluster).
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Seeds every random choice (latencies, faults, the workload).
    pub seed: u64,
    /// Brokers, with node ids `1..=brokers`.
    pub brokers: u32,
    /// Topics, named `t0`, `t1`, ...
    pub topics: u32,
    /// Partitions in total, dealt round-robin over the topics (at least one each).
    pub partitions: u32,
    /// The producer's configuration.
    pub producer: ProducerConfig,
    /// Fault rates while the scenario is not quiet.
    pub faults: FaultRates,
    /// One-way base latency to each broker is drawn from `latency_min..=latency_max`.
    pub latency_min: Duration,
    /// See `latency_min`.
    pub latency_max: Duration,
    /// Per-message random extra latency, `0..=jitter`.
    pub jitter: Duration,
    /// The largest extra delay of a [`FaultKind::ResponseDelay`](crate::FaultKind).
    pub response_delay_max: Duration,
    /// An ISR shrink episode lasts a duration drawn from `isr_shrink_min..=isr_shrink_max`.
    pub isr_shrink_min: Duration,
    /// See `isr_shrink_min`.
    pub isr_shrink_max: Duration,
    /// A crashed broker restarts after a downtime drawn from this range.
    pub downtime_min: Duration,
    /// See `downtime_min`.
    pub downtime_max: Duration,
    /// Every crashed broker comes back as after a clean shutdown: producer state from
    /// the snapshot written at the log end, newest batch per producer only
    /// (`ProducerStateManager.takeSnapshot` at `UnifiedLog.close`). Off by default,
    /// where each restart draws clean or unclean (even odds): an unclean one reloads
    /// the newest snapshot (a segment roll's, every [`SimConfig::segment_entries`]
    /// entries, or an earlier rebuild's) and replays the log after it. After a clean
    /// one the restarted broker, leading again, no longer recognises the retry of an
    /// older in-flight batch and answers it OUT_OF_ORDER_SEQUENCE_NUMBER although it is
    /// in the log, which the core must not take as proof of absence.
    pub snapshot_restore: bool,
    /// Every producer-state rebuild (a restart, a truncation) leaves a snapshot at the
    /// log end that a later restart or truncation of the same replica reloads from
    /// (`UnifiedLog.rebuildProducerState` ends with `takeSnapshot`). That
    /// is Kafka's rule, and it shrinks the dedup window of a replica that restarted
    /// or truncated before to the newest batch per producer at that point: a retry of
    /// an older batch that is in the log gets OUT_OF_ORDER_SEQUENCE_NUMBER although the
    /// batch is there (regression `a_retry_the_reloaded_window_forgot_is_written_twice`
    /// in `tests/broker_model_rules.rs`: the core took that answer as proof of absence and wrote
    /// the batch again, until wave 6). On by default, as in Kafka; off, only
    /// segment-roll snapshots are reloaded.
    pub rebuild_snapshots: bool,
    /// A stricter broker than Kafka: a producer it has no state for must start at
    /// sequence 0 (anything else gets OUT_OF_ORDER_SEQUENCE_NUMBER). Off by default,
    /// since Kafka 2.5+ accepts any sequence from an unknown producer (KIP-360). On, it
    /// emulates a client that keeps one batch in flight per partition until its first
    /// ack (franz-go's gate), which closes the overtaking hole that acceptance opens; it
    /// exists to look for other bugs behind that one.
    pub strict_first_sequence: bool,
    /// A follower's fetch, when [`FaultRates::replica_lag`] makes it lag, comes after a
    /// delay drawn from `replica_lag_min..=replica_lag_max` (otherwise at once).
    pub replica_lag_min: Duration,
    /// See `replica_lag_min`.
    pub replica_lag_max: Duration,
    /// Log entries per segment: producer-state snapshots are written at each roll.
    pub segment_entries: usize,
    /// The brokers' `max.message.bytes`: a larger batch is refused with
    /// MESSAGE_TOO_LARGE. Kafka's default is 1,048,588.
    pub max_message_bytes: usize,
    /// The epoch InitProducerId hands out with a new producer id (0 in Kafka), and the
    /// one the coordinator hands a transactional id new to it. Close to `i16::MAX`, a
    /// few epoch bumps exhaust it and the producer needs a new id (a long-lived producer
    /// or transactional id; under TV2 every transaction bumps the epoch).
    pub initial_producer_epoch: i16,
    /// `producer.id.expiration.ms` of the brokers: a producer whose last batch on a
    /// partition is older than this (by its max timestamp) is forgotten there at the
    /// next check. Kafka's default is one day; the simulator's is
    /// [`SIM_PRODUCER_ID_EXPIRATION`], which [`SimConfig::producer_config`] also tells
    /// the producer (`kacrab.producer.id.expiration.ms`).
    pub producer_id_expiration: Duration,
    /// `producer.id.expiration.check.interval.ms` of the brokers: how often expiry runs
    /// (Kafka's default: 10 minutes; the simulator's: 10 s).
    pub producer_id_expiration_check_interval: Duration,
    /// The initial leader (node id) of each partition; round-robin when `None`.
    pub leaders: Option<Vec<i32>>,
    /// The one-way base latency of each broker; drawn from the range when `None`.
    pub latencies: Option<Vec<Duration>>,
    /// Size of each record value in bytes (at least 8).
    pub value_size: usize,
    /// The brokers' finalized `transaction.version` feature level, reported to a
    /// transactional producer at start (2 or more: KIP-890 transaction version 2).
    pub transaction_version: i16,
    /// The node the transaction coordinator starts on (it moves to another live broker
    /// when this one crashes).
    pub coordinator_node: i32,
    /// The longest a broker holds a request it read before applying it
    /// ([`FaultKind::ProcessingDelay`](crate::FaultKind)); longer than
    /// `request.timeout.ms` so that some are applied after the client gave up.
    pub processing_delay_max: Duration,
    /// How long a [`FaultKind::SilentConnection`](crate::FaultKind) holds a connection
    /// silent (40 s, as the lying proxy of the real-Kafka runs): far past
    /// `request.timeout.ms`, so only the client's timeout ends it.
    pub silence_hold: Duration,
    /// A silence is followed by up to `silence_run_max - 1` more, each on the next
    /// connection to the same broker (back-to-back silences; at least 1).
    pub silence_run_max: u32,
    /// Keep a human-readable trace of every step (for minimising failures).
    pub trace: bool,
    /// Also print every trace line to stderr as it happens (to see the steps before a
    /// panic in the core).
    pub trace_live: bool,
    /// The coordinator writes a completed transaction's markers after a delay drawn
    /// from `0..=marker_delay_max` (Kafka answers EndTxn once `PrepareCommit` or
    /// `PrepareAbort` is in the transaction log and sends the markers afterwards, from
    /// `TransactionMarkerChannelManager`); until then the transactional id answers
    /// CONCURRENT_TRANSACTIONS and read_committed readers wait.
    pub marker_delay_max: Duration,
    /// A coordinator that moved loads its transaction-log partition for a duration
    /// drawn from `0..=coordinator_load_max`, answering COORDINATOR_LOAD_IN_PROGRESS
    /// meanwhile (`TransactionStateManager.loadTransactionsForTxnTopicPartition`).
    pub coordinator_load_max: Duration,
    /// Which driver runs the producer: the bare core with the simulator's router, or
    /// a `kacrab_driver::Session` on real Kafka frames ([`DriverKind`]).
    pub driver: DriverKind,
}

/// Which driver a [`Cluster`](crate::Cluster) runs the producer with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DriverKind {
    /// The bare core, routed by the simulator on typed messages (the fastest).
    #[default]
    Core,
    /// A `kacrab_driver::Session`: its routing, connections, version negotiation and
    /// request timeouts over the lying network, which carries real Kafka frames.
    Session,
}

impl SimConfig {
    /// Three brokers, one topic of three partitions, no faults, the simulator's default
    /// producer configuration (see [`SimConfig::producer_config`]).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            brokers: 3,
            topics: 1,
            partitions: 3,
            producer: Self::producer_config(seed).build().expect("valid config"),
            faults: FaultRates::NONE,
            latency_min: Duration::from_micros(200),
            latency_max: Duration::from_millis(5),
            jitter: Duration::from_micros(500),
            response_delay_max: Duration::from_millis(50),
            isr_shrink_min: Duration::from_millis(50),
            isr_shrink_max: Duration::from_millis(5_000),
            downtime_min: Duration::from_millis(20),
            downtime_max: Duration::from_millis(1_500),
            snapshot_restore: false,
            rebuild_snapshots: true,
            replica_lag_min: Duration::from_millis(1),
            replica_lag_max: Duration::from_millis(400),
            segment_entries: 1_000,
            strict_first_sequence: false,
            max_message_bytes: 1_048_588,
            initial_producer_epoch: 0,
            producer_id_expiration: SIM_PRODUCER_ID_EXPIRATION,
            producer_id_expiration_check_interval: Duration::from_secs(10),
            leaders: None,
            latencies: None,
            value_size: 16,
            transaction_version: 2,
            coordinator_node: 1,
            processing_delay_max: Duration::from_millis(1_500),
            silence_hold: Duration::from_secs(40),
            silence_run_max: 3,
            trace: false,
            trace_live: false,
            marker_delay_max: Duration::from_millis(30),
            coordinator_load_max: Duration::from_millis(300),
            driver: DriverKind::Core,
        }
    }

    /// [`SimConfig::new`] with a transactional producer (`transactional.id` =
    /// `transactional_id`) and the brokers at `transaction.version` = `version`.
    #[must_use]
    pub fn transactional(seed: u64, transactional_id: &str, version: i16) -> Self {
        let mut c = Self::new(seed);
        c.producer = Self::producer_config(seed)
            .transactional_id(transactional_id)
            .build()
            .expect("valid config");
        c.transaction_version = version;
        c
    }

    /// The producer configuration simulations start from: Kafka's defaults with
    /// `request.timeout.ms` = 1 s and `delivery.timeout.ms` = 30 s (virtual time is
    /// free, but shorter timeouts make more of them happen per run), and the backoff
    /// jitter seeded from `seed`, and the brokers' producer-state expiry
    /// ([`SIM_PRODUCER_ID_EXPIRATION`]) as the one the producer assumes.
    #[must_use]
    pub fn producer_config(seed: u64) -> kacrab_idempotence::ProducerConfigBuilder {
        let mut b = ProducerConfig::builder();
        b.request_timeout(Duration::from_millis(1_000))
            .delivery_timeout(Duration::from_millis(30_000))
            .producer_id_expiration(SIM_PRODUCER_ID_EXPIRATION)
            .jitter_seed(seed);
        b
    }
}

/// What the simulator did (not faults: those are in [`FaultCounts`](crate::FaultCounts)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Steps taken (inputs given to the producer or the brokers).
    pub steps: u64,
    /// Produce requests the driver wrote.
    pub produce_requests: u64,
    /// Metadata requests the driver wrote.
    pub metadata_requests: u64,
    /// InitProducerId requests the driver wrote.
    pub init_producer_id_requests: u64,
    /// Responses fed to the producer.
    pub responses: u64,
    /// Requests reported as `Disconnected`.
    pub disconnected_reports: u64,
    /// Requests reported as `NotSent`.
    pub not_sent_reports: u64,
    /// `CloseConnection` requests from the producer.
    pub close_connections: u64,
    /// Batches appended by the brokers.
    pub appended_batches: u64,
    /// Batches the brokers recognised as duplicates (answered with the original offset).
    pub duplicate_batches: u64,
    /// Batches appended with a first sequence other than 0 by a broker that had no
    /// state for the producer on that partition (Kafka accepts any sequence then,
    /// KIP-360): the opening for a later batch to overtake an earlier one.
    pub unknown_producer_accepts: u64,
    /// OUT_OF_ORDER_SEQUENCE_NUMBER answers.
    pub out_of_order_answers: u64,
    /// INVALID_PRODUCER_EPOCH answers.
    pub invalid_epoch_answers: u64,
    /// NOT_LEADER_OR_FOLLOWER answers because the leader had really moved.
    pub stale_leader_answers: u64,
    /// Leadership changes (moves and crashes).
    pub leader_changes: u64,
    /// Produce requests held in purgatory until their batches were committed.
    pub delayed_produces: u64,
    /// Log entries of a leader that a failover truncated (never committed).
    pub truncated_entries: u64,
    /// Records in those entries.
    pub truncated_records: u64,
    /// Records delivered (from events).
    pub delivered_records: u64,
    /// Records failed (from events).
    pub failed_records: u64,
    /// `ProducerIdChanged` events.
    pub producer_id_changes: u64,
    /// Held requests applied after the connection they came on had dropped (their
    /// response lost; the client already gave up on them).
    pub late_applications: u64,
    /// Connections the session driver opened to a broker.
    pub session_connections: u64,
    /// ApiVersions requests the brokers' front ends answered (the session's
    /// negotiation, once per connection and again after an UNSUPPORTED_VERSION).
    pub api_versions_answered: u64,
}
