//! Whether the faults of a run explain the records it failed: a liveness bound.
//!
//! The safety properties hold trivially for a producer that fails every record; the
//! probes catch one that stops delivering once faults end, but not one that gives up
//! on records *during* the chaos far more often than its faults force it to. The rule
//! here: a record may fail only if, between its send and its failure, a fault able to
//! fail it touched its partition. The faults able to fail a record, each with the
//! window in which it can, as the simulator injects them:
//!
//! * a refusal no retry gets past, on the partition (INVALID_RECORD,
//!   INVALID_TIMESTAMP, TOPIC_AUTHORIZATION_FAILED, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE):
//!   the instant of the refusal (Java's `Sender.completeBatch` fails the batch; the
//!   records then in flight or queued behind it may be failed or re-sequenced with it);
//! * an ISR shrink episode on the partition: from its start to its end, its length is
//!   known (every produce meanwhile is answered NOT_ENOUGH_REPLICAS, and a record
//!   sent before or during it may reach `delivery.timeout.ms`);
//! * the partition's producer state expiring on its leader, and a failover truncating
//!   its leader's log: the instant (the next batch may be answered
//!   OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID);
//! * everywhere: a broker crash until its restart (its partitions offline, its
//!   connections gone), a silent connection for as long as the simulator holds it, a
//!   topic created while producing until its leaders are elected, a fatal error and a
//!   producer id or epoch change (`TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded`
//!   fails or re-sequences what is in flight): their window.
//!
//! A record is explained when its life `[sent, failed]` meets such a window. This is
//! the per-record form of "at most the records in flight or queued on the partition
//! when the fault struck, plus those sent while it lasted": it never needs to know how
//! many records a fault actually failed, only whether one could have. It assumes that
//! the faults left out (response losses, delays, throttles, retriable partition errors,
//! processing delays) stall a partition for less than `delivery.timeout.ms` each and
//! cannot chain long enough to expire a record on their own: true for the main job's
//! configuration (10 s against at most 1.5 s per fault, and the consecutive faults it
//! would take on one batch are drawn at 0.05 each), not for a property test's 1.5 s
//! delivery timeout, so the bound is checked only when a [`Scenario`](crate::Scenario)
//! asks for it ([`FailureBound::Checked`]).

use std::time::Duration;

use kacrab_idempotence::{RecordId, Timestamp};

/// Whether a run checks that its faults explain its failed records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailureBound {
    /// Not checked (short delivery timeouts, where chained short faults expire records).
    #[default]
    Unchecked,
    /// Checked at the end of the run: a partition with a failed record no fault explains
    /// is a [`ViolationKind::UnexplainedFailures`](crate::ViolationKind).
    Checked,
}

/// Where a fault can fail records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultScope {
    /// One partition (global index).
    Partition(usize),
    /// Every partition.
    Everywhere,
}

/// When a fault can fail records: from its start to its end, both included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    from: Timestamp,
    until: Timestamp,
}

impl Window {
    fn meets(self, sent: Timestamp, failed: Timestamp) -> bool {
        self.from <= failed && sent <= self.until
    }
}

/// One partition whose failed records the faults do not explain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unexplained {
    /// The partition (global index).
    pub partition: usize,
    /// Failed records no fault explains.
    pub unexplained: u64,
    /// Failed records in all.
    pub failed: u64,
}

/// The windows of the faults able to fail records, and each failed record's life. See
/// the module documentation.
#[derive(Clone, Debug, Default)]
pub struct FailureAccount {
    by_partition: Vec<Vec<Window>>,
    everywhere: Vec<Window>,
    /// Partition and send time of every record, by [`RecordId`] (assigned from 0 in
    /// send order).
    sent: Vec<(usize, Timestamp)>,
    /// Partition, send time and failure time of every failed record.
    failed: Vec<(usize, Timestamp, Timestamp)>,
}

impl FailureAccount {
    /// An account for `partitions` partitions.
    #[must_use]
    pub fn new(partitions: usize) -> Self {
        Self {
            by_partition: vec![Vec::new(); partitions],
            ..Self::default()
        }
    }

    /// A fault able to fail records in `scope` struck at `from` and lasts `length`.
    pub fn fault(&mut self, scope: FaultScope, from: Timestamp, length: Duration) {
        let w = Window {
            from,
            until: from.saturating_add(length),
        };
        match scope {
            FaultScope::Partition(p) => {
                debug_assert!(p < self.by_partition.len(), "partition {p} unknown");
                if let Some(ws) = self.by_partition.get_mut(p) {
                    ws.push(w);
                }
            }
            FaultScope::Everywhere => self.everywhere.push(w),
        }
    }

    /// Record `id` was sent to `partition` at `now`.
    pub fn on_sent(&mut self, id: RecordId, partition: usize, now: Timestamp) {
        let i = id.0 as usize;
        if self.sent.len() <= i {
            self.sent.resize(i + 1, (usize::MAX, Timestamp::ZERO));
        }
        self.sent[i] = (partition, now);
    }

    /// Record `id` was reported failed at `now` (its first outcome).
    pub fn on_failed(&mut self, id: RecordId, now: Timestamp) {
        if let Some(&(p, sent)) = self.sent.get(id.0 as usize) {
            if p != usize::MAX {
                self.failed.push((p, sent, now));
            }
        }
    }

    /// The partitions with failed records no fault explains, in partition order.
    #[must_use]
    pub fn unexplained(&self) -> Vec<Unexplained> {
        let mut out: Vec<Unexplained> = (0..self.by_partition.len())
            .map(|partition| Unexplained {
                partition,
                unexplained: 0,
                failed: 0,
            })
            .collect();
        for &(p, sent, failed) in &self.failed {
            let Some(u) = out.get_mut(p) else { continue };
            u.failed += 1;
            let explained = self.by_partition[p]
                .iter()
                .chain(&self.everywhere)
                .any(|w| w.meets(sent, failed));
            if !explained {
                u.unexplained += 1;
            }
        }
        out.retain(|u| u.unexplained > 0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::{Checker, ViolationKind};
    use kacrab_idempotence::{DeliveryError, Event, TopicPartition};

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_micros(ms * 1_000)
    }

    /// Partition 1 fails 500 records sent and failed far from any fault: flagged, and
    /// only partition 1 (partition 0's failures fall in its ISR shrink episode).
    #[test]
    fn failures_no_fault_explains_are_flagged_by_partition() {
        let mut a = FailureAccount::new(3);
        a.fault(FaultScope::Partition(0), at(1_000), Duration::from_secs(15));
        for i in 0..1_000u64 {
            let p = if i < 500 { 0 } else { 1 };
            a.on_sent(RecordId(i), p, at(2_000));
            a.on_failed(RecordId(i), at(12_000));
        }
        assert_eq!(
            a.unexplained(),
            vec![Unexplained {
                partition: 1,
                unexplained: 500,
                failed: 500
            }]
        );
    }

    /// The same failures, with a broker crash during the records' life: explained.
    #[test]
    fn failures_in_a_fault_window_are_explained() {
        let mut a = FailureAccount::new(2);
        a.fault(
            FaultScope::Everywhere,
            at(5_000),
            Duration::from_millis(1_500),
        );
        for i in 0..500u64 {
            a.on_sent(RecordId(i), 1, at(2_000));
            a.on_failed(RecordId(i), at(12_000));
        }
        assert_eq!(a.unexplained(), vec![]);
    }

    /// A run's checker: 300 records sent to `t-1` at 2 s, all failed by delivery
    /// timeout at 12 s, with `window` (if any) as the only fault able to fail them.
    fn checker_after_expiries(window: Option<(FaultScope, u64, Duration)>) -> Checker {
        let tps = vec![TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
        let mut c = Checker::new(tps.clone());
        c.set_clock(1, at(2_000));
        let ids: Vec<RecordId> = (0..300u64).map(RecordId).collect();
        for (i, &id) in ids.iter().enumerate() {
            c.on_sent(id, 1, i as u32);
        }
        if let Some((scope, from_ms, length)) = window {
            c.fault_window(scope, at(from_ms), length);
        }
        c.set_clock(2, at(12_000));
        c.on_event(&Event::Failed {
            partition: tps[1].clone(),
            records: ids,
            possibly_written: true,
            error: DeliveryError::Timeout {
                partition: tps[1].clone(),
            },
        });
        c
    }

    /// The checker end to end: a partition that failed 300 records no fault explains
    /// is one violation naming it; with an ISR shrink on it during their life, or an
    /// epoch bump, none.
    #[test]
    fn the_checker_names_the_partition_with_unexplained_failures() {
        let mut c = checker_after_expiries(None);
        c.check_failures_explained();
        assert_eq!(c.violation_count(), 1, "{:?}", c.violations());
        let v = &c.violations()[0];
        assert_eq!(v.kind, ViolationKind::UnexplainedFailures);
        assert!(
            v.detail.starts_with("t-1: 300 of its 300 failed"),
            "{}",
            v.detail
        );

        let shrink = (FaultScope::Partition(1), 3_000, Duration::from_secs(15));
        let mut c = checker_after_expiries(Some(shrink));
        c.check_failures_explained();
        assert_eq!(c.violations(), &[]);

        let elsewhere = (FaultScope::Partition(0), 3_000, Duration::from_secs(15));
        let mut c = checker_after_expiries(Some(elsewhere));
        c.check_failures_explained();
        assert_eq!(
            c.violation_count(),
            1,
            "a shrink of t-0 does not explain t-1"
        );

        let mut c = checker_after_expiries(None);
        c.set_clock(3, at(5_000));
        c.on_event(&Event::ProducerIdChanged {
            id: kacrab_idempotence::ProducerIdAndEpoch {
                id: kacrab_idempotence::ProducerId(1),
                epoch: kacrab_idempotence::ProducerEpoch(1),
            },
        });
        c.check_failures_explained();
        assert_eq!(
            c.violations(),
            &[],
            "an epoch bump during their life explains them"
        );
    }

    /// The world's hooks on a real run: a batch refused with INVALID_RECORD fails its
    /// records, and the refusal explains them; records failed by delivery timeout
    /// while the partition's leader is down (a crash with no restart, its only
    /// replica) are explained by the crash.
    #[test]
    fn the_worlds_faults_explain_the_failures_they_cause() {
        use crate::cluster::Cluster;
        use crate::config::SimConfig;
        use crate::faults::{PartitionFault, Script};

        let mut c = Cluster::new(SimConfig::new(3));
        c.script(Script::PartitionError {
            partition: 0,
            fault: PartitionFault::InvalidRecord,
            times: 1,
        });
        for _ in 0..5 {
            let _ = c.send(0);
        }
        c.flush();
        assert!(c.run_until_idle(Duration::from_secs(60)));
        assert!(
            c.checker().tally(Some(0)).failed > 0,
            "the refusal failed records"
        );
        c.check_failures_explained();
        assert_eq!(c.checker().violations(), &[]);

        let mut sim = SimConfig::new(4);
        sim.brokers = 1;
        sim.partitions = 1;
        let mut producer = SimConfig::producer_config(4);
        producer.delivery_timeout(Duration::from_secs(3));
        sim.producer = producer.build().expect("valid producer configuration");
        let mut c = Cluster::new(sim);
        c.crash(kacrab_idempotence::NodeId(1));
        for _ in 0..5 {
            let _ = c.send(0);
        }
        c.flush();
        assert!(c.run_until_idle(Duration::from_secs(60)));
        assert_eq!(
            c.checker().tally(None).failed,
            5,
            "expired while the broker is down"
        );
        c.check_failures_explained();
        assert_eq!(c.checker().violations(), &[]);
    }

    /// A fault on another partition, or one that ended before the record was sent,
    /// explains nothing.
    #[test]
    fn a_fault_elsewhere_or_earlier_explains_nothing() {
        let mut a = FailureAccount::new(2);
        a.fault(FaultScope::Partition(0), at(3_000), Duration::ZERO);
        a.fault(FaultScope::Everywhere, at(0), Duration::from_millis(1_000));
        a.on_sent(RecordId(0), 1, at(2_000));
        a.on_failed(RecordId(0), at(12_000));
        assert_eq!(a.unexplained().len(), 1);
    }
}
