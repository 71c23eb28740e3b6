//! The [`Cluster`]: model brokers, a lying network and one [`Producer`] driven exactly
//! as a real driver drives it, on a virtual clock, one input per step.
//!
//! The driver loop (shaped like quinn-proto's test `Pair` and str0m's `progress`):
//! after every input, drain `poll_request` (routing each produce request to its
//! broker's connection, InitProducerId and Metadata to any live broker, and acting on
//! `CloseConnection`), then drain `poll_event`, then check the properties and the
//! core's invariants. Then take the earliest of: a failure report the driver owes the
//! producer (now), a broker restart, a network delivery, the workload's next send and
//! `poll_timeout`; advance the clock to it and give that one input.
//!
//! The driver's side (routing requests, reporting failures, feeding answers back) lives
//! in `driver.rs`, the brokers' side (what a request does when it reaches a broker,
//! crashes, leadership) in `brokers.rs`.

use std::collections::VecDeque;
use std::time::Duration;

use kacrab_idempotence::record::Record;
use kacrab_idempotence::{
    NodeId, Producer, ProducerConfig, RecordId, RequestFailure, RequestId, SendError, Timestamp,
    Topic, TopicPartition,
};

use crate::broker::PartitionState;
use crate::checker::{encode_value, Checker, ViolationKind};
use crate::config::{SimConfig, SimStats};
use crate::coordinator::TransactionCoordinator;
use crate::faults::{FaultCounts, FaultRates, Script};
use crate::net::{Direction, Net};
use crate::replication::{new_followers, tracked_state, DelayedProduce, Follower};
use crate::rng::Rng;
use crate::txn_sim::TxnTracker;

/// One model broker's liveness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerNode {
    /// Its node id.
    pub id: NodeId,
    /// Whether it is running.
    pub up: bool,
    /// When a crashed broker comes back, if scheduled.
    pub restart_at: Option<Timestamp>,
}

/// One partition of the cluster: its leader's replica, its followers and who leads it.
#[derive(Clone, Debug)]
pub struct SimPartition {
    /// The partition.
    pub tp: TopicPartition,
    /// The current leader.
    pub leader: NodeId,
    /// The current leader epoch.
    pub leader_epoch: i32,
    /// The leader's replica: its log (whose high watermark says what is committed,
    /// and whose journal is the partition's audit trail) and producer states.
    pub state: PartitionState,
    /// Every other broker's replica (replication factor = brokers), by node id.
    pub followers: Vec<Follower>,
    /// While set and in the future, the ISR is too small: appends are refused with
    /// NOT_ENOUGH_REPLICAS.
    pub isr_shrunk_until: Option<Timestamp>,
    /// The leader and leader epoch before the last change (what a lagging metadata
    /// cache still reports).
    pub previous_leader: Option<(NodeId, i32)>,
}

/// An application sending records on a schedule, drawn from its own random stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Records still to send.
    pub remaining: u64,
    /// Each send is a burst of `1..=burst_max` records.
    pub burst_max: u32,
    /// The mean time between bursts (drawn from `0..=2*interval`).
    pub interval: Duration,
    /// The next burst.
    pub next_at: Timestamp,
    /// Idle gaps (see [`Cluster::set_idle_gaps`]): how long each lasts (zero: none).
    pub idle_gap: Duration,
    /// A gap starts each time this many records were sent since the last one.
    pub gap_every: u64,
    /// Records sent since the last gap.
    pub since_gap: u64,
    /// The end of the gap under way, if one is.
    pub quiet_until: Option<Timestamp>,
}

/// What the next step will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Restart(NodeId),
    Net(NodeId, Direction),
    Apply,
    Replication,
    Send,
    Timer,
    Markers,
}

/// A simulated Kafka cluster with a producer attached. See the module documentation.
#[derive(Debug)]
pub struct Cluster {
    pub(crate) config: SimConfig,
    pub(crate) producer: Producer,
    pub(crate) now: Timestamp,
    pub(crate) net: Net,
    pub(crate) brokers: Vec<BrokerNode>,
    pub(crate) partitions: Vec<SimPartition>,
    pub(crate) topics: Vec<Topic>,
    /// Failure reports the driver owes the producer, given before time moves on.
    pub(crate) local: VecDeque<(RequestId, RequestFailure)>,
    pub(crate) fault_rng: Rng,
    pub(crate) net_rng: Rng,
    pub(crate) app_rng: Rng,
    pub(crate) rates: FaultRates,
    pub(crate) faults: FaultCounts,
    pub(crate) scripts: Vec<(Script, u32)>,
    pub(crate) checker: Checker,
    pub(crate) stats: SimStats,
    pub(crate) next_producer_id: i64,
    workload: Option<Workload>,
    pub(crate) trace: Option<Vec<String>>,
    /// `now` at which `handle_timeout` left `poll_timeout` in the past with no output.
    timer_stuck_at: Option<Timestamp>,
    timer_stuck_reported: bool,
    /// The model transaction coordinator (one for the cluster).
    pub(crate) coordinator: TransactionCoordinator,
    /// The node it runs on.
    pub(crate) coordinator_node: NodeId,
    /// Which transaction each record belongs to, and how each ended.
    pub(crate) txns: TxnTracker,
    /// A second producer with the same `transactional.id`, once one fenced the first.
    pub(crate) rival: Option<Producer>,
    /// Transactional waits that found nothing scheduled (see [`Cluster::txn_ticks`]).
    pub(crate) txn_ticks: u64,
    /// The generation of the connection the request being applied was read from: its
    /// response goes back only while that connection is open.
    pub(crate) reply_generation: u64,
    /// When the brokers next run producer expiry.
    pub(crate) next_expiry_check: Timestamp,
    /// acks=all produce requests waiting for replication (`DelayedProduce`).
    pub(crate) purgatory: Vec<DelayedProduce>,
    /// The coordinator's timing (markers, loading) and the finalized
    /// `transaction.version`.
    pub(crate) txn_env: crate::txn_faults::TxnEnv,
}

impl Cluster {
    /// A cluster as `config` describes, with a fresh producer, at time zero.
    ///
    /// # Panics
    /// When `config` has no broker or no partition, or a leader outside `1..=brokers`.
    #[must_use]
    pub fn new(config: SimConfig) -> Self {
        assert!(config.brokers >= 1, "a cluster needs a broker");
        assert!(config.partitions >= 1, "a cluster needs a partition");
        let mut net_rng = Rng::stream(config.seed, 1);
        let latencies: Vec<Duration> = match &config.latencies {
            Some(l) => {
                assert_eq!(l.len(), config.brokers as usize, "one latency per broker");
                l.clone()
            }
            None => (0..config.brokers)
                .map(|_| {
                    let lo = config.latency_min.as_micros() as u64;
                    let hi = config.latency_max.as_micros() as u64;
                    Duration::from_micros(net_rng.range(lo, hi))
                })
                .collect(),
        };
        let topics_n = config.topics.clamp(1, config.partitions);
        let topics: Vec<Topic> = (0..topics_n)
            .map(|t| Topic::new(&format!("t{t}")))
            .collect();
        let mut per_topic = vec![0i32; topics_n as usize];
        let mut partitions = Vec::new();
        for gp in 0..config.partitions {
            let t = (gp % topics_n) as usize;
            let tp = TopicPartition::new(topics[t].clone(), per_topic[t]);
            per_topic[t] += 1;
            let leader = match &config.leaders {
                Some(l) => l[gp as usize],
                None => (gp % config.brokers) as i32 + 1,
            };
            assert!(
                (1..=config.brokers as i32).contains(&leader),
                "leader {leader} is not a broker"
            );
            partitions.push(SimPartition {
                tp,
                leader: NodeId(leader),
                leader_epoch: 0,
                state: tracked_state(),
                followers: new_followers(NodeId(leader), config.brokers),
                isr_shrunk_until: None,
                previous_leader: None,
            });
        }
        let brokers = (1..=config.brokers as i32)
            .map(|id| BrokerNode {
                id: NodeId(id),
                up: true,
                restart_at: None,
            })
            .collect();
        let checker = Checker::new(partitions.iter().map(|p| p.tp.clone()).collect());
        let mut producer = Producer::new(config.producer.clone(), Timestamp::ZERO);
        if config.producer.is_transactional() {
            producer.handle_transaction_version(config.transaction_version);
        }
        let coordinator_node = NodeId(config.coordinator_node.clamp(1, config.brokers as i32));
        Self {
            producer,
            now: Timestamp::ZERO,
            net: Net::new(latencies),
            brokers,
            partitions,
            topics,
            local: VecDeque::new(),
            fault_rng: Rng::stream(config.seed, 2),
            net_rng,
            app_rng: Rng::stream(config.seed, 3),
            rates: config.faults,
            faults: FaultCounts::default(),
            scripts: Vec::new(),
            checker,
            stats: SimStats::default(),
            next_producer_id: 1000,
            workload: None,
            trace: (config.trace || config.trace_live).then(Vec::new),
            timer_stuck_at: None,
            timer_stuck_reported: false,
            coordinator: crate::txn_faults::asynchronous_coordinator(),
            coordinator_node,
            txns: TxnTracker::default(),
            rival: None,
            txn_ticks: 0,
            reply_generation: 0,
            next_expiry_check: Timestamp::ZERO + config.producer_id_expiration_check_interval,
            purgatory: Vec::new(),
            txn_env: crate::txn_faults::TxnEnv::new(config.seed, config.transaction_version),
            config,
        }
    }

    // ------------------------------------------------------------------ getters

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The producer under test.
    #[must_use]
    pub fn producer(&self) -> &Producer {
        &self.producer
    }

    /// The producer's configuration.
    #[must_use]
    pub fn producer_config(&self) -> &ProducerConfig {
        &self.config.producer
    }

    /// Virtual time.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Steps taken so far.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.stats.steps
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &SimStats {
        &self.stats
    }

    /// Faults injected so far, by kind.
    #[must_use]
    pub fn faults(&self) -> &FaultCounts {
        &self.faults
    }

    /// The oracle: records, outcomes, the wire log, violations.
    #[must_use]
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// The brokers.
    #[must_use]
    pub fn brokers(&self) -> &[BrokerNode] {
        &self.brokers
    }

    /// Every partition, by global index.
    #[must_use]
    pub fn partitions(&self) -> &[SimPartition] {
        &self.partitions
    }

    /// Partition `gp` (global index).
    #[must_use]
    pub fn partition(&self, gp: usize) -> &SimPartition {
        &self.partitions[gp]
    }

    /// The global index of `tp`.
    #[must_use]
    pub fn partition_index(&self, tp: &TopicPartition) -> Option<usize> {
        self.partitions.iter().position(|p| &p.tp == tp)
    }

    /// The topics.
    #[must_use]
    pub fn topics(&self) -> &[Topic] {
        &self.topics
    }

    /// The network.
    #[must_use]
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The step trace, if [`SimConfig::trace`] is on.
    #[must_use]
    pub fn trace(&self) -> &[String] {
        self.trace.as_deref().unwrap_or_default()
    }

    /// The workload still to send, if any.
    #[must_use]
    pub fn workload(&self) -> Option<&Workload> {
        self.workload.as_ref()
    }

    /// Records the workload still has to send.
    #[must_use]
    pub fn workload_remaining(&self) -> u64 {
        self.workload.as_ref().map_or(0, |w| w.remaining)
    }

    /// Whether every record sent so far has an outcome and the driver owes nothing.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.producer.is_idle() && self.local.is_empty()
    }

    // ------------------------------------------------------------------ controls

    /// Whether the producer going fatal is a violation (the default) or expected, in
    /// runs that inject fatal errors ([`FaultRates::with_fatal`]).
    pub fn set_fatal_policy(&mut self, policy: crate::checker::FatalPolicy) {
        self.checker.set_fatal_policy(policy);
    }

    /// Changes the fault rates (for example to [`FaultRates::NONE`] for a quiet phase).
    pub fn set_fault_rates(&mut self, rates: FaultRates) {
        self.rates = rates;
    }

    /// Queues a scripted fault; it fires at its next opportunity.
    pub fn script(&mut self, script: Script) {
        let times = match script {
            Script::PartitionError { times, .. } => times,
            _ => 1,
        };
        if times > 0 {
            self.scripts.push((script, times));
        }
    }

    /// Drops every scripted fault that has not fired yet.
    pub fn clear_scripts(&mut self) {
        self.scripts.clear();
    }

    /// Changes the one-way base latency to `node`.
    pub fn set_latency(&mut self, node: NodeId, latency: Duration) {
        self.net.set_latency(node, latency);
    }

    /// Starts an application workload sending `records` records in bursts.
    pub fn set_workload(&mut self, records: u64, burst_max: u32, interval: Duration) {
        self.workload = Some(Workload {
            remaining: records,
            burst_max: burst_max.max(1),
            interval,
            next_at: self.now,
            idle_gap: Duration::ZERO,
            gap_every: 0,
            since_gap: 0,
            quiet_until: None,
        });
    }

    /// Makes the workload pause every `every` records for `gap`: every partition but
    /// the first goes idle (the first gets a record every few seconds, so the producer
    /// stays busy), long enough for the brokers' producer-state expiry when `gap`
    /// exceeds `producer.id.expiration.ms` plus its check interval.
    pub fn set_idle_gaps(&mut self, gap: Duration, every: u64) {
        if let Some(w) = self.workload.as_mut() {
            w.idle_gap = gap;
            w.gap_every = every;
        }
    }

    /// Stops the workload.
    pub fn stop_workload(&mut self) {
        self.workload = None;
    }

    /// The application calls `flush`.
    pub fn flush(&mut self) {
        self.producer.flush();
        self.after_input();
    }

    /// The application calls `close`.
    pub fn close(&mut self) {
        self.producer.close();
        self.after_input();
    }

    /// The application calls `abort` (a forced close): every record without an outcome
    /// fails at once, while the requests on the wire still reach their brokers.
    pub fn abort(&mut self) {
        self.producer.abort();
        self.after_input();
    }

    /// The application sends one record to partition `gp` now (then the driver drains).
    ///
    /// # Errors
    /// What `Producer::send` refused.
    pub fn send(&mut self, gp: usize) -> Result<RecordId, SendError> {
        let r = self.send_record(gp);
        self.after_input();
        r
    }

    pub(crate) fn send_record(&mut self, gp: usize) -> Result<RecordId, SendError> {
        let index = self.checker.next_index(gp);
        let value = encode_value(gp as u32, index, self.config.value_size);
        let record = Record::from_value(value, self.now.as_millis() as i64);
        let tp = self.partitions[gp].tp.clone();
        let r = self.producer.send(&tp, &record, self.now);
        if let Ok(id) = r {
            self.checker.on_sent(id, gp, index);
            self.txns.on_sent(id);
            self.trace_line(|| format!("send {tp} #{index} -> id {id}"));
        }
        r
    }

    // ------------------------------------------------------------------ the loop

    /// Gives the producer (or a broker) one input: the earliest thing that happens
    /// next. Returns false when nothing at all is scheduled.
    pub fn step(&mut self) -> bool {
        if let Some((id, failure)) = self.local.pop_front() {
            self.stats.steps += 1;
            self.checker.set_clock(self.stats.steps, self.now);
            self.report_failure(id, failure);
            self.after_input();
            return true;
        }
        let Some((at, next)) = self.next_event() else {
            return false;
        };
        self.stats.steps += 1;
        self.now = self.now.max(at);
        self.checker.set_clock(self.stats.steps, self.now);
        self.run_expiry_checks();
        match next {
            Next::Restart(node) => self.restart(node),
            Next::Net(node, Direction::ToBroker) => self.deliver_request(node),
            Next::Net(node, Direction::ToClient) => self.deliver_response(node),
            Next::Apply => self.apply_held(),
            Next::Replication => {
                self.replication_step();
                self.after_input();
            }
            Next::Send => self.workload_step(),
            Next::Markers => self.write_due_markers(false),
            Next::Timer => {
                self.trace_line(|| "handle_timeout".to_string());
                self.producer.handle_timeout(self.now);
                let progress = self.after_input();
                let stuck =
                    !progress && self.producer.poll_timeout().is_some_and(|t| t <= self.now);
                if stuck {
                    self.timer_stuck_at = Some(self.now);
                    if !self.timer_stuck_reported {
                        self.timer_stuck_reported = true;
                        let t = self.producer.poll_timeout();
                        self.checker.violation(
                            ViolationKind::TimerStuck,
                            format!("poll_timeout {t:?} <= now {:?} after handle_timeout, nothing to do", self.now),
                        );
                    }
                }
            }
        }
        true
    }

    /// When the next step happens and what it is.
    fn next_event(&self) -> Option<(Timestamp, Next)> {
        let mut best: Option<(Timestamp, Next)> = None;
        let mut consider = |t: Timestamp, n: Next| {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, n));
            }
        };
        for b in &self.brokers {
            if let Some(t) = b.restart_at {
                consider(t, Next::Restart(b.id));
            }
        }
        if let Some((t, node, dir)) = self.net.next_delivery() {
            consider(t, Next::Net(node, dir));
        }
        if let Some(t) = self.net.next_application() {
            consider(t, Next::Apply);
        }
        if let Some(t) = self.next_replication_event() {
            consider(t, Next::Replication);
        }
        if let Some(w) = self.workload.as_ref().filter(|w| w.remaining > 0) {
            consider(w.next_at, Next::Send);
        }
        if let Some(t) = self.txn_env.markers_due() {
            consider(t, Next::Markers);
        }
        if let Some(mut t) = self.producer.poll_timeout() {
            if self.timer_stuck_at == Some(self.now) && t <= self.now {
                // A real driver's clock moves on while it spins.
                t = self.now + Duration::from_millis(1);
            }
            consider(t, Next::Timer);
        }
        best
    }

    /// Steps until `pred` holds, nothing is scheduled, or `max` virtual time passed.
    /// Returns whether `pred` held.
    pub fn run_until(&mut self, max: Duration, mut pred: impl FnMut(&Cluster) -> bool) -> bool {
        let deadline = self.now + max;
        loop {
            if pred(self) {
                return true;
            }
            match self.next_event() {
                _ if !self.local.is_empty() => {}
                Some((t, _)) if t <= deadline => {}
                _ => {
                    self.now = self.now.max(deadline);
                    return pred(self);
                }
            }
            self.step();
        }
    }

    /// Steps for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }

    /// Steps until every record has an outcome, or `max` virtual time passed.
    pub fn run_until_idle(&mut self, max: Duration) -> bool {
        self.run_until(max, Cluster::is_idle)
    }

    fn workload_step(&mut self) {
        let Some(w) = self.workload.clone() else {
            return;
        };
        if let Some(until) = w.quiet_until {
            if self.now < until {
                // An idle gap: only the first partition stays active.
                let sent = u64::from(self.send_record(0).is_ok());
                let next = (self.now + Duration::from_secs(5)).min(until);
                if let Some(w) = self.workload.as_mut() {
                    w.remaining -= sent.min(w.remaining);
                    w.next_at = next;
                }
                self.after_input();
                return;
            }
            if let Some(w) = self.workload.as_mut() {
                w.quiet_until = None;
            }
        }
        let burst = self
            .app_rng
            .range(1, u64::from(w.burst_max))
            .min(w.remaining);
        let mut sent = 0;
        let mut retry_soon = false;
        for _ in 0..burst {
            let gp = self.app_rng.below(self.partitions.len() as u64) as usize;
            match self.send_record(gp) {
                Ok(_) => sent += 1,
                Err(SendError::BufferFull { .. }) => {
                    retry_soon = true;
                    break;
                }
                Err(e) => {
                    self.trace_line(|| format!("send refused: {e}"));
                    self.workload = None;
                    self.after_input();
                    return;
                }
            }
        }
        let gap = if retry_soon {
            Duration::from_millis(1)
        } else {
            let max = w.interval.as_micros() as u64 * 2;
            Duration::from_micros(self.app_rng.range(0, max))
        };
        let now = self.now;
        if let Some(w) = self.workload.as_mut() {
            w.remaining -= sent;
            w.next_at = now + gap;
            w.since_gap += sent;
            if w.gap_every > 0 && !w.idle_gap.is_zero() && w.since_gap >= w.gap_every {
                w.since_gap = 0;
                w.quiet_until = Some(now + w.idle_gap);
            }
        }
        self.after_input();
    }

    /// After every input: drain requests, then events; check everything. Returns
    /// whether the producer produced any output.
    pub(crate) fn after_input(&mut self) -> bool {
        self.sync_markers();
        self.complete_delayed();
        self.checker
            .scan_logs(self.partitions.iter().map(|p| &p.state));
        let mut progress = false;
        while let Some(request) = self.producer.poll_request(self.now) {
            progress = true;
            self.route(request);
        }
        while let Some(event) = self.producer.poll_event() {
            progress = true;
            self.on_event(&event);
        }
        self.producer.assert_invariants();
        if progress {
            self.timer_stuck_at = None;
        }
        progress
    }

    pub(crate) fn trace_line(&mut self, line: impl FnOnce() -> String) {
        if self.trace.is_some() {
            let s = format!(
                "[{:>6} {:>10.3}ms] {}",
                self.stats.steps,
                self.now.as_micros() as f64 / 1000.0,
                line()
            );
            if self.config.trace_live {
                eprintln!("{s}");
            }
            if let Some(t) = self.trace.as_mut() {
                t.push(s);
            }
        }
    }

    /// Records a property violation found outside the checker (liveness, for example).
    pub fn violation(&mut self, kind: ViolationKind, detail: impl Into<String>) {
        self.checker.set_clock(self.stats.steps, self.now);
        self.checker.violation(kind, detail);
    }

    /// The end-of-run checks: the brokers apply every request they still hold (a late
    /// application after the run ended must be checked too), a last scan of the logs,
    /// and every record resolved.
    pub fn final_check(&mut self) {
        while let Some(at) = self.net.next_application() {
            self.stats.steps += 1;
            self.now = self.now.max(at);
            self.checker.set_clock(self.stats.steps, self.now);
            self.apply_held();
        }
        self.checker.set_clock(self.stats.steps, self.now);
        self.checker
            .scan_logs(self.partitions.iter().map(|p| &p.state));
        self.checker.check_all_resolved();
        if self.config.producer.is_transactional() {
            self.write_due_markers(true);
            self.check_transactions(true);
        }
    }
}
