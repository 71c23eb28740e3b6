//! The [`Cluster`]: the world (model brokers, coordinator, a lying network), the
//! driver (one [`Producer`], bare or inside a `kacrab_driver::Session`, driven exactly as
//! a real driver drives it; see [`DriverKind`]), the application's [`Workload`] and the
//! observers, composed and stepped on a virtual clock, one input per step.
//!
//! The step loop (shaped like quinn-proto's test `Pair` and str0m's `progress`):
//! after every input the world settles and the driver drains `poll_request` (routing
//! each request to its broker's connection) and `poll_event`; the checker and the
//! core's invariants run. Then the earliest of: a failure report the driver owes the
//! producer (now), a world event (a broker restart, a network delivery, a held request
//! applied, replication), the workload's next send, the coordinator's marker write and
//! the producer's `poll_timeout`; the clock moves to it and that one input is given.
//!
//! * `script`: the transactional script (transactions, offsets, a rival producer).
//! * `checks`: the transactional properties, checked against the world.

mod checks;
mod script;

use std::time::Duration;

use kacrab_idempotence::{
    NodeId, Producer, ProducerConfig, RecordId, SendError, Timestamp, Topic, TopicPartition,
};

use crate::checker::{encode_value, Checker, FatalPolicy, ViolationKind};
use crate::config::{DriverKind, SimConfig, SimStats};
use crate::coordinator::TransactionCoordinator;
use crate::driver::CoreDriver;
use crate::drivers::Driver;
use crate::faults::{FaultCounts, FaultRates, Script};
use crate::net::Net;
use crate::observers::Observers;
use crate::rng::Rng;
use crate::session_driver::SessionDriver;
use crate::txn_sim::TxnTracker;
use crate::workload::Workload;
use crate::world::{BrokerNode, SimPartition, World, WorldEvent};

/// What the next step will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    World(WorldEvent),
    Send,
    Markers,
    Timer,
}

/// A simulated Kafka cluster with a producer attached. See the module documentation.
#[derive(Debug)]
pub struct Cluster {
    config: SimConfig,
    /// Brokers, partitions, coordinator, network, fault streams; owns the clock.
    world: World,
    /// The producer under test and the driver's state.
    driver: Driver,
    /// The application's send schedule, if one runs.
    workload: Option<Workload>,
    /// The application's random stream (bursts, partitions, commit choices).
    app_rng: Rng,
    /// Checker, counters, trace, transaction tracker.
    obs: Observers,
    /// A second producer with the same `transactional.id`, once one fenced the first.
    rival: Option<Producer>,
    /// Transactional waits that found nothing scheduled (see [`Cluster::txn_ticks`]).
    txn_ticks: u64,
}

impl Cluster {
    /// A cluster as `config` describes, with a fresh producer, at time zero.
    ///
    /// # Panics
    /// When `config` has no broker or no partition, or a leader outside `1..=brokers`.
    #[must_use]
    pub fn new(config: SimConfig) -> Self {
        let world = World::new(&config);
        let mut checker = Checker::new(world.partitions().iter().map(|p| p.tp.clone()).collect());
        if let Some(leaders_at) = world.topic_leaders_at() {
            // Records sent before the late topic has its leaders wait for them.
            checker.fault_window(
                crate::failure_bound::FaultScope::Everywhere,
                Timestamp::ZERO,
                leaders_at.saturating_duration_since(Timestamp::ZERO),
            );
        }
        let driver = match config.driver {
            DriverKind::Core => {
                let mut producer = Producer::new(config.producer.clone(), Timestamp::ZERO);
                if config.producer.is_transactional() {
                    producer.handle_transaction_version(config.transaction_version);
                }
                Driver::Core(Box::new(CoreDriver::new(producer)))
            }
            // The session learns the transaction version from the brokers' ApiVersions.
            DriverKind::Session => Driver::Session(Box::new(SessionDriver::new(
                config.producer.clone(),
                &world,
            ))),
        };
        Self {
            world,
            driver,
            workload: None,
            app_rng: Rng::stream(config.seed, 3),
            obs: Observers::new(checker, config.trace, config.trace_live),
            rival: None,
            txn_ticks: 0,
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
        self.driver.producer()
    }

    /// The session's metrics snapshot now, when the session drives ([`DriverKind::Session`]).
    pub fn session_metrics(&mut self) -> Option<kacrab_driver::metrics::MetricsSnapshot> {
        let now = self.now();
        self.driver.session_metrics(now)
    }

    /// The producer's configuration.
    #[must_use]
    pub fn producer_config(&self) -> &ProducerConfig {
        &self.config.producer
    }

    /// Virtual time.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.world.now()
    }

    /// Steps taken so far.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.obs.stats().steps
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &SimStats {
        self.obs.stats()
    }

    /// Faults injected so far, by kind.
    #[must_use]
    pub fn faults(&self) -> &FaultCounts {
        self.world.faults()
    }

    /// The oracle: records, outcomes, the wire log, violations.
    #[must_use]
    pub fn checker(&self) -> &Checker {
        self.obs.checker()
    }

    /// Every silent connection of the run and how the producer got out of it
    /// ([`FaultKind::SilentConnection`](crate::FaultKind)).
    #[must_use]
    pub fn silence_recoveries(&self) -> Vec<crate::Recovery> {
        self.obs.silences().recoveries()
    }

    /// The brokers.
    #[must_use]
    pub fn brokers(&self) -> &[BrokerNode] {
        self.world.brokers()
    }

    /// Every partition, by global index.
    #[must_use]
    pub fn partitions(&self) -> &[SimPartition] {
        self.world.partitions()
    }

    /// Partition `gp` (global index).
    #[must_use]
    pub fn partition(&self, gp: usize) -> &SimPartition {
        &self.world.partitions()[gp]
    }

    /// The global index of `tp`.
    #[must_use]
    pub fn partition_index(&self, tp: &TopicPartition) -> Option<usize> {
        self.world.partition_index(tp)
    }

    /// The topics.
    #[must_use]
    pub fn topics(&self) -> &[Topic] {
        self.world.topics()
    }

    /// The network.
    #[must_use]
    pub fn net(&self) -> &Net {
        self.world.net()
    }

    /// The step trace, if [`SimConfig::trace`] is on.
    #[must_use]
    pub fn trace(&self) -> &[String] {
        self.obs.trace_lines()
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
        self.driver.is_idle(&self.world)
    }

    /// The model transaction coordinator.
    #[must_use]
    pub fn coordinator(&self) -> &TransactionCoordinator {
        self.world.coordinator()
    }

    /// The node the transaction coordinator runs on.
    #[must_use]
    pub fn coordinator_node(&self) -> NodeId {
        self.world.coordinator_node()
    }

    /// The transactions of the workload and their outcomes.
    #[must_use]
    pub fn transactions(&self) -> &TxnTracker {
        self.obs.txns()
    }

    /// The second producer with the same `transactional.id`, once one fenced the first.
    #[must_use]
    pub fn rival(&self) -> Option<&Producer> {
        self.rival.as_ref()
    }

    /// The finalized `transaction.version` and the finalized-features epoch it came with.
    #[must_use]
    pub fn finalized_transaction_version(&self) -> (i16, i64) {
        self.world.finalized_transaction_version()
    }

    /// Whether the coordinator is loading its state (it answers
    /// COORDINATOR_LOAD_IN_PROGRESS).
    #[must_use]
    pub fn coordinator_loading(&self) -> bool {
        self.world.coordinator_loading()
    }

    // ------------------------------------------------------------------ controls

    /// Whether the producer going fatal is a violation (the default) or expected, in
    /// runs that inject fatal errors ([`FaultRates::with_fatal`]).
    pub fn set_fatal_policy(&mut self, policy: FatalPolicy) {
        self.obs.checker_mut().set_fatal_policy(policy);
    }

    /// Changes the fault rates (for example to [`FaultRates::NONE`] for a quiet phase).
    pub fn set_fault_rates(&mut self, rates: FaultRates) {
        self.world.set_fault_rates(rates);
    }

    /// Queues a scripted fault; it fires at its next opportunity.
    pub fn script(&mut self, script: Script) {
        self.world.script(script);
    }

    /// Drops every scripted fault that has not fired yet.
    pub fn clear_scripts(&mut self) {
        self.world.clear_scripts();
    }

    /// Changes the one-way base latency to `node`.
    pub fn set_latency(&mut self, node: NodeId, latency: Duration) {
        self.world.set_latency(node, latency);
    }

    /// Moves partition `gp`'s leadership to `to` (a leadership move without a crash),
    /// once `to` has caught up with the leader (a reassignment waits for it). Nothing
    /// happens if `to` is down, already leads, or can not get in sync (the leader is
    /// down): only an in-sync replica is ever elected.
    pub fn move_leader(&mut self, gp: usize, to: NodeId) {
        self.world.move_leader(&mut self.obs, gp, to);
    }

    /// Drops the connection to `node` now; everything in flight on it is reported
    /// `Disconnected` at the next step.
    pub fn drop_connection(&mut self, node: NodeId) {
        self.world.drop_connection(&mut self.obs, node);
    }

    /// Crashes `node` (no automatic restart): its connection drops and its partitions
    /// move to other live brokers.
    pub fn crash(&mut self, node: NodeId) {
        self.world.crash(&mut self.obs, node);
    }

    /// Restarts a crashed `node`: its replicas reload producer state (snapshot plus
    /// replay) and catch up. It leads only the partitions that stayed offline on it,
    /// until leadership moves back to it.
    pub fn restart(&mut self, node: NodeId) {
        self.world.restart(&mut self.obs, node);
    }

    /// Restarts every crashed broker.
    pub fn restart_all(&mut self) {
        self.world.restart_all(&mut self.obs);
    }

    /// Ends every fault (the start of a quiet phase): no more random faults, scripted
    /// ones dropped, crashed brokers restarted, ISR shrink episodes over. Messages
    /// already delayed on the network keep their delay.
    pub fn heal(&mut self) {
        self.world.heal(&mut self.obs);
    }

    /// Moves the coordinator to `to` (a bumped coordinator epoch); it loads its state
    /// first.
    pub fn move_coordinator(&mut self, to: NodeId) {
        self.world.move_coordinator(&mut self.obs, to);
    }

    /// The controller finalizes `transaction.version` = `level` (a higher features
    /// epoch); the brokers' ApiVersions answers carry it to the producer.
    pub fn set_finalized_transaction_version(&mut self, level: i16) {
        self.world
            .set_finalized_transaction_version(&mut self.obs, level);
        self.after_input();
    }

    /// Every transactional id with no open transaction expires, as after
    /// `transactional.id.expiration.ms` of idleness. Returns them.
    pub fn expire_transactional_ids(&mut self) -> Vec<String> {
        self.world.expire_transactional_ids(&mut self.obs)
    }

    /// The coordinator aborts the open transaction of `txn_id` on its own, as its
    /// transaction timeout would. Returns whether one was open.
    pub fn coordinator_aborts(&mut self, txn_id: &str) -> bool {
        self.world.coordinator_aborts(&mut self.obs, txn_id)
    }

    /// Starts an application workload sending `records` records in bursts.
    pub fn set_workload(&mut self, records: u64, burst_max: u32, interval: Duration) {
        self.workload = Some(Workload::new(records, burst_max, interval, self.now()));
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
        self.driver.flush(self.world.now());
        self.after_input();
    }

    /// The application calls `close`.
    pub fn close(&mut self) {
        self.driver.close(self.world.now());
        self.after_input();
    }

    /// The application calls `abort` (a forced close): every record without an outcome
    /// fails at once, while the requests on the wire still reach their brokers.
    pub fn abort(&mut self) {
        self.driver.abort(self.world.now());
        self.after_input();
    }

    /// The application sends one record to partition `gp` now (then the driver drains).
    ///
    /// # Errors
    /// What `Producer::send` refused. A session never refuses at once (a refusal is the
    /// record's outcome); its records are named by their send ids.
    pub fn send(&mut self, gp: usize) -> Result<RecordId, SendError> {
        let r = self.send_record(gp);
        self.after_input();
        r
    }

    fn send_record(&mut self, gp: usize) -> Result<RecordId, SendError> {
        let now = self.now();
        let index = self.obs.checker().next_index(gp);
        let value = encode_value(gp as u32, index, self.config.value_size);
        let tp = self.world.partitions()[gp].tp.clone();
        let r = self.driver.send(&tp, value, now.as_millis() as i64, now);
        if let Ok(id) = r {
            self.obs.checker_mut().on_sent(id, gp, index);
            self.obs.txns_mut().on_sent(id);
            self.obs
                .trace(now, || format!("send {tp} #{index} -> id {id}"));
        }
        r
    }

    // ------------------------------------------------------------------ the loop

    /// Gives the producer (or a broker) one input: the earliest thing that happens
    /// next. Returns false when nothing at all is scheduled.
    pub fn step(&mut self) -> bool {
        self.driver.take_notices(&mut self.world);
        if self.driver.owes_reports(&self.world) {
            self.obs.begin_step(self.now());
            self.driver.report_next_failure(&self.world, &mut self.obs);
            self.after_input();
            return true;
        }
        let Some((at, next)) = self.next_event() else {
            return false;
        };
        self.world.advance_to(at);
        self.obs.begin_step(self.now());
        self.world.run_expiry_checks(&mut self.obs);
        match next {
            Next::World(WorldEvent::Restart(node)) => self.world.restart(&mut self.obs, node),
            Next::World(WorldEvent::RequestArrives(node)) => {
                if self.world.deliver_request(&mut self.obs, node) {
                    self.after_input();
                }
            }
            Next::World(WorldEvent::ResponseArrives(node)) => {
                if self
                    .driver
                    .deliver_response(&mut self.world, &mut self.obs, node)
                {
                    self.after_input();
                }
            }
            Next::World(WorldEvent::Apply) => {
                if self.world.apply_held(&mut self.obs) {
                    self.after_input();
                }
            }
            Next::World(WorldEvent::Replication) => {
                self.world.replication_step(&mut self.obs);
                self.after_input();
            }
            Next::Send => self.workload_step(),
            Next::Markers => self.world.write_due_markers(&mut self.obs, false),
            Next::Timer => {
                let now = self.now();
                self.driver.fire_timer(&mut self.obs, now);
                let progress = self.after_input();
                self.driver.after_timer(&mut self.obs, now, progress);
            }
        }
        true
    }

    /// When the next step happens and what it is (ties go to the first of: world
    /// events, the workload's send, marker writes, the producer's timer).
    fn next_event(&self) -> Option<(Timestamp, Next)> {
        let mut best: Option<(Timestamp, Next)> = None;
        let mut consider = |t: Timestamp, n: Next| {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, n));
            }
        };
        if let Some((t, e)) = self.world.next_event() {
            consider(t, Next::World(e));
        }
        if let Some(t) = self.workload.as_ref().and_then(Workload::due) {
            consider(t, Next::Send);
        }
        if let Some(t) = self.world.markers_due() {
            consider(t, Next::Markers);
        }
        if let Some(t) = self.driver.timer(self.now()) {
            consider(t, Next::Timer);
        }
        best
    }

    /// Whether the driver owes the producer a report (given before time moves on).
    fn owes_reports(&self) -> bool {
        self.driver.owes_reports(&self.world)
    }

    /// Steps until `pred` holds, nothing is scheduled, or `max` virtual time passed.
    /// Returns whether `pred` held.
    pub fn run_until(&mut self, max: Duration, mut pred: impl FnMut(&Cluster) -> bool) -> bool {
        let deadline = self.now() + max;
        loop {
            if pred(self) {
                return true;
            }
            match self.next_event() {
                _ if self.owes_reports() => {}
                Some((t, _)) if t <= deadline => {}
                _ => {
                    self.world.advance_to(deadline);
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

    /// Steps until the coordinator has written every outstanding marker (at most `max`).
    /// Returns whether it has.
    pub fn run_until_markers_written(&mut self, max: Duration) -> bool {
        self.run_until(max, |c| c.coordinator().pending_marker_writes().is_empty())
    }

    fn workload_step(&mut self) {
        let now = self.now();
        let Some(w) = self.workload.as_mut() else {
            return;
        };
        if let Some(until) = w.gap_until(now) {
            // An idle gap: only the first partition stays active.
            let sent = self.send_record(0).is_ok();
            if let Some(w) = self.workload.as_mut() {
                w.trickled(now, until, sent);
            }
            self.after_input();
            return;
        }
        let burst = w.draw_burst(&mut self.app_rng);
        let mut sent = 0;
        let mut buffer_full = false;
        for _ in 0..burst {
            let gp = self.app_rng.below(self.world.partitions().len() as u64) as usize;
            match self.send_record(gp) {
                Ok(_) => sent += 1,
                Err(SendError::BufferFull { .. }) => {
                    buffer_full = true;
                    break;
                }
                Err(e) => {
                    self.obs.trace(now, || format!("send refused: {e}"));
                    self.workload = None;
                    self.after_input();
                    return;
                }
            }
        }
        if let Some(w) = self.workload.as_mut() {
            w.after_burst(now, sent, buffer_full, &mut self.app_rng);
        }
        self.after_input();
    }

    /// After every input: the world settles, the driver drains requests, then events;
    /// everything is checked. Returns whether the producer produced any output.
    fn after_input(&mut self) -> bool {
        self.world.settle(&mut self.obs);
        self.driver.drain(&mut self.world, &mut self.obs)
    }

    /// Records a property violation found outside the checker (liveness, for example).
    pub fn violation(&mut self, kind: ViolationKind, detail: impl Into<String>) {
        let now = self.now();
        self.obs.violation(now, kind, detail);
    }

    /// The end-of-run checks: the brokers apply every request they still hold (a late
    /// application after the run ended must be checked too), a last scan of the logs,
    /// and every record resolved.
    pub fn final_check(&mut self) {
        while let Some(at) = self.world.net().next_application() {
            self.world.advance_to(at);
            self.obs.begin_step(self.now());
            if self.world.apply_held(&mut self.obs) {
                self.after_input();
            }
        }
        self.obs.set_clock(self.now());
        self.world.scan_logs(&mut self.obs);
        self.obs.checker_mut().check_all_resolved();
        if self.config.producer.is_transactional() {
            self.world.write_due_markers(&mut self.obs, true);
            self.check_transactions(true);
        }
    }
}
