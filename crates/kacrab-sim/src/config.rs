//! The simulator's configuration and counters.

use std::time::Duration;

use kacrab_idempotence::ProducerConfig;

use crate::faults::FaultRates;

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
    /// Unclean state loss: when a broker crashes, the partitions it led come back on
    /// their new leader with producer state restored from a snapshot (newest batch per
    /// producer only) instead of the replicated state. Off by default: with it, even a
    /// correct client can duplicate (a retry of an older in-flight batch is no longer
    /// recognised, gets OUT_OF_ORDER_SEQUENCE_NUMBER, and the epoch bump that follows
    /// re-sends it under a new epoch). Kafka rebuilds producer state from the log on a
    /// clean restart, which is what the default models.
    pub snapshot_restore: bool,
    /// A stricter broker than Kafka: a producer it has no state for must start at
    /// sequence 0 (anything else gets OUT_OF_ORDER_SEQUENCE_NUMBER). Off by default,
    /// since Kafka 2.5+ accepts any sequence from an unknown producer (KIP-360). On, it
    /// emulates a client that keeps one batch in flight per partition until its first
    /// ack (franz-go's gate), which closes the overtaking hole that acceptance opens; it
    /// exists to look for other bugs behind that one.
    pub strict_first_sequence: bool,
    /// The brokers' `max.message.bytes`: a larger batch is refused with
    /// MESSAGE_TOO_LARGE. Kafka's default is 1,048,588.
    pub max_message_bytes: usize,
    /// The epoch InitProducerId hands out with a new producer id (0 in Kafka). Close to
    /// `i16::MAX`, a few epoch bumps exhaust it and the producer needs a new id.
    pub initial_producer_epoch: i16,
    /// `producer.id.expiration.ms` of the brokers (Kafka's default: one day).
    pub producer_id_expiration: Duration,
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
            strict_first_sequence: false,
            max_message_bytes: 1_048_588,
            initial_producer_epoch: 0,
            producer_id_expiration: Duration::from_millis(86_400_000),
            leaders: None,
            latencies: None,
            value_size: 16,
            transaction_version: 2,
            coordinator_node: 1,
            trace: false,
            trace_live: false,
            marker_delay_max: Duration::from_millis(30),
            coordinator_load_max: Duration::from_millis(300),
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
    /// jitter seeded from `seed`.
    #[must_use]
    pub fn producer_config(seed: u64) -> kacrab_idempotence::ProducerConfigBuilder {
        let mut b = ProducerConfig::builder();
        b.request_timeout(Duration::from_millis(1_000))
            .delivery_timeout(Duration::from_millis(30_000))
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
    /// Records delivered (from events).
    pub delivered_records: u64,
    /// Records failed (from events).
    pub failed_records: u64,
    /// `ProducerIdChanged` events.
    pub producer_id_changes: u64,
}
