//! The main job's verdict: violations counted by kind over every run it made, and the
//! one summary line that names each kind with its count.
//!
//! The line is the job's last output, read by people at a glance and by scripts with
//! grep, so it must never look clean when a checker found anything: its
//! `violations=N` is the total over every kind and every run, `by_kind=` names each
//! kind with its count (in [`ViolationKind::ALL`]'s order, zeros included, so the
//! field's shape never changes), and the job exits non-zero exactly when `N` is not
//! zero ([`ChaosSummary::is_clean`]).

use std::process::ExitCode;

use crate::checker::ViolationKind;
use crate::oracle::Tally;
use crate::scenario::Report;

/// Violations counted by kind (all of them, not only those a checker kept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViolationCounts {
    counts: [u64; ViolationKind::ALL.len()],
}

fn index(kind: ViolationKind) -> usize {
    let i = ViolationKind::ALL.iter().position(|&k| k == kind);
    debug_assert!(i.is_some(), "{kind:?} missing from ViolationKind::ALL");
    i.unwrap_or(0)
}

impl ViolationCounts {
    /// Counts one violation of `kind`.
    pub fn add(&mut self, kind: ViolationKind) {
        self.add_n(kind, 1);
    }

    /// Counts `n` violations of `kind`.
    pub fn add_n(&mut self, kind: ViolationKind, n: u64) {
        self.counts[index(kind)] += n;
    }

    /// Violations of `kind`.
    #[must_use]
    pub fn get(&self, kind: ViolationKind) -> u64 {
        self.counts[index(kind)]
    }

    /// Violations of every kind.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// These counts without the violations of `kind` (a run that expects the producer
    /// to go fatal excuses [`ViolationKind::Fatal`]).
    #[must_use]
    pub fn without(&self, kind: ViolationKind) -> Self {
        let mut c = self.clone();
        c.counts[index(kind)] = 0;
        c
    }

    /// Adds another run's counts to these.
    pub fn merge(&mut self, other: &ViolationCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
    }

    /// `(kind, count)` for every kind, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (ViolationKind, u64)> + '_ {
        ViolationKind::ALL.iter().map(|&k| (k, self.get(k)))
    }

    /// `violations=N by_kind=duplicate:0,reordered:0,...`: the total, then every kind
    /// with its count, in one whitespace-free field (its names never clash with the
    /// summary's other `name=value` fields).
    #[must_use]
    pub fn fields(&self) -> String {
        let by_kind: Vec<String> = self
            .iter()
            .map(|(k, n)| format!("{}:{n}", k.short_name()))
            .collect();
        format!("violations={} by_kind={}", self.total(), by_kind.join(","))
    }
}

/// The main job's result over all its runs: the main run's totals and every run's
/// violations. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChaosSummary {
    tally: Tally,
    epoch_bumps: u64,
    retries: u64,
    violations: ViolationCounts,
}

impl ChaosSummary {
    /// The summary of one run, with its violations.
    #[must_use]
    pub fn of(report: &Report) -> Self {
        Self {
            tally: report.tally,
            epoch_bumps: report.producer.epoch_bumps,
            retries: report.producer.retries,
            violations: report.violations_by_kind.clone(),
        }
    }

    /// Adds the violations another run of the job found (the fatal runs, the
    /// transactional runs): the line's records stay the main run's.
    pub fn add_violations(&mut self, other: &ViolationCounts) {
        self.violations.merge(other);
    }

    /// Every violation counted, by kind.
    #[must_use]
    pub fn violations(&self) -> &ViolationCounts {
        &self.violations
    }

    /// Whether no checker of any run found anything: the job's exit status is success
    /// exactly then.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.violations.total() == 0
    }

    /// The job's exit status: failure exactly when a violation was counted.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        if self.is_clean() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    /// The last line:
    /// `chaos: records=N acked=A failed=F duplicates=D reordered=R lost=L epoch_bumps=E
    /// retries=T violations=V by_kind=duplicate:0,...`. `duplicates`, `reordered` and
    /// `lost` count records of the main run; `violations` counts every violation of
    /// every run (a duplicated record, a gap in a wire sequence, a record resolved
    /// twice, ... each once).
    #[must_use]
    pub fn line(&self) -> String {
        let t = &self.tally;
        format!(
            "chaos: records={} acked={} failed={} duplicates={} reordered={} lost={} epoch_bumps={} retries={} {}",
            t.records,
            t.acked,
            t.failed,
            t.duplicates,
            t.reordered,
            t.lost,
            self.epoch_bumps,
            self.retries,
            self.violations.fields()
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cluster::Cluster;
    use crate::config::SimConfig;

    /// A finished quiet run of 20 records, with `kinds` reported to its checker.
    fn report_with(kinds: &[ViolationKind]) -> Report {
        let mut c = Cluster::new(SimConfig::new(7));
        for gp in 0..20 {
            let _ = c.send(gp % 3);
        }
        c.flush();
        assert!(c.run_until_idle(Duration::from_secs(30)));
        for &k in kinds {
            c.violation(k, "made up for the summary's test");
        }
        c.final_check();
        Report::new(&c, Duration::ZERO, None, 0)
    }

    /// The old last line said `duplicates=0 reordered=0 lost=0` and the job exited 1
    /// for a gap in a wire sequence it did not name: every kind is on the line now,
    /// counted, and the exit status follows the total.
    #[test]
    fn a_violation_other_than_a_duplicate_is_on_the_last_line_and_fails_the_job() {
        let r = report_with(&[ViolationKind::WireSequence, ViolationKind::ResolvedTwice]);
        let s = ChaosSummary::of(&r);
        let line = s.line();
        assert!(line.contains(" duplicates=0 reordered=0 lost=0 "), "{line}");
        assert!(line.contains(" violations=2 by_kind="), "{line}");
        assert!(line.contains("wire_sequence:1"), "{line}");
        assert!(line.contains("resolved_twice:1"), "{line}");
        assert!(!s.is_clean());
        assert_eq!(s.exit_code(), ExitCode::FAILURE);
    }

    /// Another run's violations (a fatal or transactional run) count on the main
    /// run's line; a clean job's line says `violations=0` and it exits 0.
    #[test]
    fn every_run_counts_and_a_clean_job_succeeds() {
        let r = report_with(&[]);
        let mut s = ChaosSummary::of(&r);
        assert!(s.line().contains(" violations=0 "), "{}", s.line());
        assert_eq!(s.exit_code(), ExitCode::SUCCESS);
        let mut other = ViolationCounts::default();
        other.add(ViolationKind::FailedButWritten);
        s.add_violations(&other);
        assert!(s.line().contains(" violations=1 "), "{}", s.line());
        assert!(s.line().contains("failed_but_written:1"), "{}", s.line());
        assert_eq!(s.exit_code(), ExitCode::FAILURE);
    }

    /// Every kind is named once on the line, in a stable order, whatever the counts.
    #[test]
    fn the_line_names_every_kind() {
        let fields = ViolationCounts::default().fields();
        let by_kind = fields.split("by_kind=").nth(1).unwrap_or_default();
        let names: Vec<&str> = by_kind
            .split(',')
            .filter_map(|f| f.split(':').next())
            .collect();
        let expected: Vec<&str> = ViolationKind::ALL.iter().map(|k| k.short_name()).collect();
        assert_eq!(names, expected);
        let mut unique = expected.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), expected.len());
    }
}
