//! The chaos job's last line tells the truth at a glance: a run whose only violation is
//! not a duplicate, a reordering or a loss must not read clean.

use std::time::Duration;

use kacrab_sim::{Cluster, Report, SimConfig, ViolationKind};

/// A finished quiet run of 30 records on 3 partitions, with `kind` reported once to its
/// checker (as the wire check reports a sequence gap).
fn finished_run_with(kind: ViolationKind) -> Report {
    let mut c = Cluster::new(SimConfig::new(11));
    for i in 0..30 {
        c.send(i % 3).expect("accepted");
    }
    c.flush();
    assert!(c.run_until_idle(Duration::from_secs(30)));
    c.violation(kind, "sequence gap: expected 4, got 5");
    c.final_check();
    Report::new(&c, Duration::ZERO, None, 0)
}

/// The old line, `chaos: records=30 acked=30 failed=0 duplicates=0 reordered=0 lost=0
/// epoch_bumps=0 retries=0`, read clean while the run had a wire-sequence violation
/// (the job still exited 1, for a reason its last line did not name). Failed on the
/// line before `ChaosSummary`.
#[test]
fn a_run_whose_only_violation_is_a_wire_sequence_gap_does_not_read_clean() {
    let r = finished_run_with(ViolationKind::WireSequence);
    assert_eq!(r.tally.duplicates + r.tally.reordered + r.tally.lost, 0);
    let line = r.chaos_line();
    assert!(line.contains(" violations=1 "), "{line}");
    assert!(line.contains("wire_sequence:1"), "{line}");
}
