//! A whole simulated run and its [`Report`].
//!
//! 1. **Chaos**: the workload sends its records in bursts while faults are drawn at the
//!    configured rates, with idle gaps on all partitions but the first that are longer
//!    than the brokers' producer-state expiry ([`Scenario::idle_gaps`]).
//! 2. **Quiet**: faults stop, crashed brokers restart, the application flushes. The
//!    producer must give every record an outcome within `delivery.timeout.ms +
//!    3 × request.timeout.ms + 5 s` of virtual time (liveness, property f).
//! 3. **Probes**: the last few records (one per partition, up to a tenth of the
//!    workload) are sent only now; with no fault left, each must be *delivered*
//!    within `2 × request.timeout.ms + 4 × retry.backoff.max.ms + linger.ms + 5 s`.
//! 4. **Close**, then the final checks.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use kacrab_idempotence::{NodeId, RecordId, Stats, TopicPartition};

use crate::checker::{FatalPolicy, Outcome, Tally, Violation, ViolationKind};
use crate::cluster::Cluster;
use crate::config::{SimConfig, SimStats};
use crate::failure_bound::FailureBound;
use crate::faults::FaultCounts;
use crate::summary::{ChaosSummary, ViolationCounts};

/// Which part of the run a [`Progress`] report comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Faults are drawn; the workload sends.
    Chaos,
    /// Faults stopped; waiting for every record to resolve.
    Quiet,
    /// Liveness probes.
    Probe,
    /// Finished.
    Done,
}

/// A snapshot for progress lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Virtual time.
    pub now: Duration,
    /// Steps so far.
    pub steps: u64,
    /// Records accepted by `send`.
    pub sent: u64,
    /// Records delivered.
    pub delivered: u64,
    /// Records failed.
    pub failed: u64,
    /// Faults injected.
    pub faults: u64,
    /// Violations seen.
    pub violations: u64,
}

/// A run: a cluster configuration and a workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The cluster.
    pub sim: SimConfig,
    /// Records to send in total (probes included).
    pub records: u64,
    /// Each application send is a burst of `1..=burst_max` records.
    pub burst_max: u32,
    /// Mean time between bursts.
    pub interval: Duration,
    /// Whether to keep the last records as liveness probes (see the module docs).
    pub probes: bool,
    /// A step bound: a run that takes more steps is a liveness failure.
    pub max_steps: u64,
    /// Call the progress callback every time this many more records were sent (and at
    /// every phase change).
    pub progress_every: u64,
    /// Whether the producer may go fatal (runs with [`FaultRates::with_fatal`](crate::FaultRates::with_fatal)):
    /// then the workload stops at the fatal error and no probe is sent.
    pub fatal: FatalPolicy,
    /// Idle gaps in the chaos phase (see [`Cluster::set_idle_gaps`]): how many, evenly
    /// spread over the workload, so the brokers forget the producer on the idle
    /// partitions (`producer.id.expiration.ms`). Zero: none.
    pub idle_gaps: u32,
    /// How long each idle gap lasts: by default the brokers' expiry plus its check
    /// interval plus 5 s.
    pub idle_gap: Duration,
    /// Whether the run checks that its faults explain every record it failed (see
    /// [`crate::failure_bound`]; off by default, sound only when
    /// `delivery.timeout.ms` is far above what one short fault stalls).
    pub failure_bound: FailureBound,
}

impl Scenario {
    /// A run of `records` records on `sim`, with bursts of up to 8 records about every
    /// millisecond.
    #[must_use]
    pub fn new(sim: SimConfig, records: u64) -> Self {
        Self {
            records,
            burst_max: 8,
            interval: Duration::from_millis(1),
            probes: true,
            max_steps: records.saturating_mul(400).saturating_add(200_000),
            progress_every: (records / 10).max(1),
            fatal: FatalPolicy::Violation,
            idle_gaps: 2,
            failure_bound: FailureBound::Unchecked,
            idle_gap: sim.producer_id_expiration
                + sim.producer_id_expiration_check_interval
                + Duration::from_secs(5),
            sim,
        }
    }

    /// Runs the scenario.
    #[must_use]
    pub fn run(&self) -> Report {
        self.run_with(&mut |_| {})
    }

    /// Runs the scenario, calling `progress` now and then.
    pub fn run_with(&self, progress: &mut dyn FnMut(&Progress)) -> Report {
        let mut c = Cluster::new(self.sim.clone());
        c.set_fatal_policy(self.fatal);
        let partitions = c.partitions().len() as u64;
        let probes = if self.probes {
            (self.records / 10).min(partitions)
        } else {
            0
        };
        c.set_workload(self.records - probes, self.burst_max, self.interval);
        if self.idle_gaps > 0 {
            let every = ((self.records - probes) / (u64::from(self.idle_gaps) + 1)).max(1);
            c.set_idle_gaps(self.idle_gap, every);
        }
        let max_steps = self.max_steps;
        let every = self.progress_every.max(1);
        let mut next_progress = every;

        // 1. Chaos.
        while c.workload_remaining() > 0 {
            if c.steps() >= max_steps {
                c.violation(
                    ViolationKind::Liveness,
                    format!("step bound {max_steps} reached while sending"),
                );
                break;
            }
            if !c.step() {
                break;
            }
            if c.checker().records().len() as u64 >= next_progress {
                next_progress += every;
                progress(&snapshot(&c, Phase::Chaos));
            }
        }
        c.stop_workload();

        // 2. Quiet.
        c.heal();
        c.flush();
        let quiet_at = c.now();
        progress(&snapshot(&c, Phase::Quiet));
        let pc = c.producer_config().clone();
        let bound = pc.delivery_timeout() + pc.request_timeout() * 3 + Duration::from_secs(5);
        let idle = c.run_until(bound, |c| c.is_idle() || c.steps() >= max_steps) && c.is_idle();
        let drained_after = idle.then(|| c.now().saturating_duration_since(quiet_at));
        if !idle {
            let pending = c.producer().unreported_records();
            c.violation(
                ViolationKind::Liveness,
                format!(
                    "{pending} records still without an outcome {bound:?} after faults stopped"
                ),
            );
        }

        // 3. Probes (a fatal producer delivers nothing more).
        if probes > 0 && idle && c.producer().fatal_error().is_none() {
            progress(&snapshot(&c, Phase::Probe));
            let mut ids: Vec<RecordId> = Vec::new();
            for gp in 0..probes as usize {
                match c.send(gp) {
                    Ok(id) => ids.push(id),
                    Err(e) => {
                        c.violation(ViolationKind::Liveness, format!("probe send refused: {e}"))
                    }
                }
            }
            c.flush();
            let bound = pc.request_timeout() * 2
                + pc.retry_backoff_max() * 4
                + pc.linger()
                + Duration::from_secs(5);
            if !c.run_until(bound, |c| c.is_idle() || c.steps() >= max_steps) {
                c.violation(
                    ViolationKind::Liveness,
                    format!("probes not resolved within {bound:?} of quiet"),
                );
            }
            for id in ids {
                let outcome = c.checker().record(id).map(|r| r.outcome);
                if outcome != Some(Outcome::Delivered) {
                    c.violation(
                        ViolationKind::Liveness,
                        format!("probe record {id} not delivered: {outcome:?}"),
                    );
                }
            }
        }

        // 4. Close.
        c.close();
        c.run_until(Duration::from_secs(60), |c| {
            c.producer().is_closed() || c.steps() >= max_steps
        });
        c.final_check();
        if self.failure_bound == FailureBound::Checked {
            c.check_failures_explained();
        }
        progress(&snapshot(&c, Phase::Done));
        Report::new(
            &c,
            quiet_at.saturating_duration_since(Default::default()),
            drained_after,
            probes,
        )
    }
}

fn snapshot(c: &Cluster, phase: Phase) -> Progress {
    Progress {
        phase,
        now: c.now().saturating_duration_since(Default::default()),
        steps: c.steps(),
        sent: c.checker().records().len() as u64,
        delivered: c.stats().delivered_records,
        failed: c.stats().failed_records,
        faults: c.faults().total(),
        violations: c.checker().violation_count(),
    }
}

/// One partition at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionReport {
    /// The partition.
    pub tp: TopicPartition,
    /// Its leader at the end.
    pub leader: NodeId,
    /// Its leader epoch at the end (one per leadership change).
    pub leader_epoch: i32,
    /// Its log end offset.
    pub log_end_offset: i64,
    /// Its records.
    pub tally: Tally,
}

/// What a run did and whether the properties held.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Brokers.
    pub brokers: u32,
    /// Totals over every record.
    pub tally: Tally,
    /// Per partition.
    pub partitions: Vec<PartitionReport>,
    /// The producer's own counters.
    pub producer: Stats,
    /// Faults injected.
    pub faults: FaultCounts,
    /// The simulator's counters.
    pub sim: SimStats,
    /// Virtual time at the end.
    pub virtual_time: Duration,
    /// Virtual time when faults stopped.
    pub quiet_at: Duration,
    /// How long after faults stopped every record had an outcome.
    pub drained_after: Option<Duration>,
    /// Liveness probes sent.
    pub probes: u64,
    /// Failed records by reason.
    pub failure_reasons: BTreeMap<String, u64>,
    /// The violations kept (the first 64).
    pub violations: Vec<Violation>,
    /// Violations seen in all.
    pub violation_count: u64,
    /// Every violation seen, by kind.
    pub violations_by_kind: ViolationCounts,
    /// The step trace, when the configuration asked for one.
    pub trace: Vec<String>,
    /// The fatal error the producer reported, if any.
    pub fatal: Option<String>,
    /// See [`Checker::retired_producer_writes`](crate::Checker::retired_producer_writes).
    pub retired_producer_writes: u64,
}

impl Report {
    /// The report of the run `c` just finished.
    #[must_use]
    pub fn new(
        c: &Cluster,
        quiet_at: Duration,
        drained_after: Option<Duration>,
        probes: u64,
    ) -> Self {
        let partitions = c
            .partitions()
            .iter()
            .enumerate()
            .map(|(gp, p)| PartitionReport {
                tp: p.tp.clone(),
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                log_end_offset: p.state.log().log_end_offset(),
                tally: c.checker().tally(Some(gp)),
            })
            .collect();
        Self {
            seed: c.config().seed,
            brokers: c.config().brokers,
            tally: c.checker().tally(None),
            partitions,
            producer: c.producer().stats(),
            faults: c.faults().clone(),
            sim: *c.stats(),
            virtual_time: c.now().saturating_duration_since(Default::default()),
            quiet_at,
            drained_after,
            probes,
            failure_reasons: c.checker().failure_reasons().clone(),
            violations: c.checker().violations().to_vec(),
            violation_count: c.checker().violation_count(),
            violations_by_kind: c.checker().violation_counts().clone(),
            trace: c.trace().to_vec(),
            fatal: c.checker().fatal().map(str::to_owned),
            retired_producer_writes: c.checker().retired_producer_writes(),
        }
    }

    /// Whether every property held.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.violation_count == 0
    }

    /// The one-line summary of this run alone (see [`ChaosSummary::line`]):
    /// `chaos: records=N acked=A failed=F duplicates=D reordered=R lost=L epoch_bumps=E
    /// retries=T violations=V by_kind=duplicate:0,...`.
    #[must_use]
    pub fn chaos_line(&self) -> String {
        ChaosSummary::of(self).line()
    }

    /// A readable multi-line report (everything but the chaos line).
    #[must_use]
    pub fn render(&self) -> String {
        let mut s = String::new();
        let t = &self.tally;
        let _ = writeln!(s, "== sent");
        let _ = writeln!(
            s,
            "  {} records over {} partitions on {} brokers (seed {}), {} of them liveness probes",
            t.records,
            self.partitions.len(),
            self.brokers,
            self.seed,
            self.probes
        );
        let p = &self.producer;
        let _ = writeln!(
            s,
            "  {} produce requests, {} metadata requests, {} InitProducerId requests",
            self.sim.produce_requests,
            self.sim.metadata_requests,
            self.sim.init_producer_id_requests
        );
        let _ = writeln!(
            s,
            "  virtual time {:.3} s ({} steps); faults stopped at {:.3} s, all resolved {} later",
            self.virtual_time.as_secs_f64(),
            self.sim.steps,
            self.quiet_at.as_secs_f64(),
            self.drained_after
                .map_or("never".to_string(), |d| format!("{:.3} s", d.as_secs_f64()))
        );
        let _ = writeln!(s, "== faults injected ({} in all)", self.faults.total());
        // A scenario's producer is idempotent: the coordinator's kinds are listed by
        // the transactional runs, and only when one was drawn here.
        for (kind, n) in self.faults.iter() {
            if !kind.is_transactional() || n > 0 {
                let _ = writeln!(s, "  {:<36} {n}", kind.name());
            }
        }
        let _ = writeln!(s, "== what the producer did");
        let _ = writeln!(
            s,
            "  retries {}, epoch bumps {}, request timeouts {}, expired batches {}, splits {}",
            p.retries, p.epoch_bumps, p.request_timeouts, p.expired_batches, p.splits
        );
        let sim = &self.sim;
        let _ = writeln!(
            s,
            "  connections closed on timeout {}, requests reported disconnected {}, not sent {}",
            sim.close_connections, sim.disconnected_reports, sim.not_sent_reports
        );
        let _ = writeln!(s, "== what the brokers did");
        let _ = writeln!(
            s,
            "  batches appended {}, duplicates recognised {}, OUT_OF_ORDER {}, INVALID_PRODUCER_EPOCH {}, stale-leader answers {}, leader changes {}",
            sim.appended_batches,
            sim.duplicate_batches,
            sim.out_of_order_answers,
            sim.invalid_epoch_answers,
            sim.stale_leader_answers,
            sim.leader_changes
        );
        let _ = writeln!(
            s,
            "  requests applied after their connection dropped {}, records a retired producer id appended late {}",
            sim.late_applications, self.retired_producer_writes
        );
        let _ = writeln!(
            s,
            "  acks=all produces held for replication {}, log entries truncated on failover {} ({} records)",
            sim.delayed_produces, sim.truncated_entries, sim.truncated_records
        );
        if let Some(e) = &self.fatal {
            let _ = writeln!(s, "  the producer went fatal: {e}");
        }
        let _ = writeln!(s, "== deliveries");
        let _ =
            writeln!(
            s,
            "  acked {} ({:.2} %), failed {} ({} of them in the log once anyway), no outcome {}",
            t.acked,
            if t.records == 0 { 0.0 } else { t.acked as f64 * 100.0 / t.records as f64 },
            t.failed,
            t.failed_in_log,
            t.pending
        );
        for (reason, n) in &self.failure_reasons {
            let _ = writeln!(s, "  failed: {reason}: {n}");
        }
        let _ = writeln!(s, "== logs");
        for pr in &self.partitions {
            let pt = &pr.tally;
            let ok = pt.duplicates == 0 && pt.reordered == 0 && pt.lost == 0;
            let _ = writeln!(
                s,
                "  {:<6} leader {} (epoch {:>3}) log {:>7} records: acked {:>7}, failed {:>5} ({} logged), dup {} reordered {} lost {}  {}",
                pr.tp.to_string(),
                pr.leader,
                pr.leader_epoch,
                pr.log_end_offset,
                pt.acked,
                pt.failed,
                pt.failed_in_log,
                pt.duplicates,
                pt.reordered,
                pt.lost,
                if ok { "OK" } else { "BROKEN" }
            );
        }
        let _ = writeln!(s, "== properties: {} violations", self.violation_count);
        for v in self.violations.iter().take(12) {
            let _ = writeln!(s, "  {v}");
        }
        if self.violation_count > 12 {
            let _ = writeln!(s, "  ... and {} more", self.violation_count - 12);
        }
        s
    }
}
