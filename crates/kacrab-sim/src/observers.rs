//! The observers of a run: the [`Checker`] (the properties), the [`SimStats`]
//! counters, the step trace and the [`TxnTracker`]. They watch the world and the driver
//! and never act on either; both write to them, so they sit below both in the module
//! graph.

use kacrab_idempotence::{Event, Timestamp};

use crate::checker::{Checker, ViolationKind};
use crate::config::SimStats;
use crate::silence_watch::SilenceWatch;
use crate::txn_sim::TxnTracker;

/// Everything that watches a run. See the module documentation.
#[derive(Debug)]
pub(crate) struct Observers {
    /// The oracle: records, outcomes, the wire log, violations.
    checker: Checker,
    /// Counters; `steps` is the step number every trace line and violation carries.
    stats: SimStats,
    /// The step trace, when tracing is on.
    trace: Option<Vec<String>>,
    /// Whether trace lines also go to stderr as they happen.
    trace_live: bool,
    /// Which transaction each record belongs to, and how each ended.
    txns: TxnTracker,
    /// How the producer gets out of silent connections.
    silences: SilenceWatch,
}

impl Observers {
    /// Fresh observers; the trace is kept when `trace` or `trace_live`.
    pub(crate) fn new(checker: Checker, trace: bool, trace_live: bool) -> Self {
        Self {
            checker,
            stats: SimStats::default(),
            trace: (trace || trace_live).then(Vec::new),
            trace_live,
            txns: TxnTracker::default(),
            silences: SilenceWatch::default(),
        }
    }

    pub(crate) fn checker(&self) -> &Checker {
        &self.checker
    }

    pub(crate) fn checker_mut(&mut self) -> &mut Checker {
        &mut self.checker
    }

    pub(crate) fn stats(&self) -> &SimStats {
        &self.stats
    }

    pub(crate) fn stats_mut(&mut self) -> &mut SimStats {
        &mut self.stats
    }

    pub(crate) fn txns(&self) -> &TxnTracker {
        &self.txns
    }

    pub(crate) fn txns_mut(&mut self) -> &mut TxnTracker {
        &mut self.txns
    }

    pub(crate) fn silences(&self) -> &SilenceWatch {
        &self.silences
    }

    pub(crate) fn silences_mut(&mut self) -> &mut SilenceWatch {
        &mut self.silences
    }

    /// Whether trace lines are kept (building one is skipped otherwise).
    pub(crate) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// The trace so far (empty when tracing is off).
    pub(crate) fn trace_lines(&self) -> &[String] {
        self.trace.as_deref().unwrap_or_default()
    }

    /// One step: counts it and sets the checker's clock.
    pub(crate) fn begin_step(&mut self, now: Timestamp) {
        self.stats.steps += 1;
        self.checker.set_clock(self.stats.steps, now);
    }

    /// Sets the checker's clock to the current step at `now`.
    pub(crate) fn set_clock(&mut self, now: Timestamp) {
        self.checker.set_clock(self.stats.steps, now);
    }

    /// Appends a trace line stamped with the step and `now` (built only when tracing).
    pub(crate) fn trace(&mut self, now: Timestamp, line: impl FnOnce() -> String) {
        if self.trace.is_some() {
            let s = format!(
                "[{:>6} {:>10.3}ms] {}",
                self.stats.steps,
                now.as_micros() as f64 / 1000.0,
                line()
            );
            if self.trace_live {
                eprintln!("{s}");
            }
            if let Some(t) = self.trace.as_mut() {
                t.push(s);
            }
        }
    }

    /// Records a property violation at `now` (the clock set first).
    pub(crate) fn violation(
        &mut self,
        now: Timestamp,
        kind: ViolationKind,
        detail: impl Into<String>,
    ) {
        self.checker.set_clock(self.stats.steps, now);
        self.checker.violation(kind, detail);
    }

    /// A producer event: counted, traced, recorded by the tracker and the checker.
    pub(crate) fn on_event(&mut self, now: Timestamp, event: &Event) {
        match event {
            Event::Delivered {
                partition,
                records,
                base_offset,
                ..
            } => {
                self.stats.delivered_records += records.len() as u64;
                self.trace(now, || {
                    format!(
                        "delivered {partition} {} records at {base_offset:?}",
                        records.len()
                    )
                });
            }
            Event::Failed {
                partition,
                records,
                error,
                possibly_written,
            } => {
                self.stats.failed_records += records.len() as u64;
                self.trace(now, || {
                    format!("failed {partition} {} records: {error} (possibly written: {possibly_written})", records.len())
                });
            }
            Event::ProducerIdChanged { id } => {
                self.stats.producer_id_changes += 1;
                self.trace(now, || format!("producer id now {id}"));
            }
            Event::Fatal { error } => self.trace(now, || format!("FATAL {error}")),
            Event::TransactionCompleted { op, result } => {
                self.trace(now, || format!("transaction {op:?}: {result:?}"));
                self.txns.on_completed(*op, result);
            }
        }
        self.checker.on_event(event);
        if self.silences.is_waiting() {
            if let Event::Delivered { records, .. } | Event::Failed { records, .. } = event {
                for id in records {
                    if let Some(r) = self.checker.record(*id) {
                        let (partition, index) = (r.partition, r.index);
                        self.silences.resolved(now, partition, index);
                    }
                }
            }
        }
    }
}
