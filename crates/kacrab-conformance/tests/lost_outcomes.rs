//! Records Java's producer leaves without an outcome get exactly one from the core.

mod common;

use kacrab_conformance::core_side;

use common::recorded;

/// Recorded transactional traces in which kafka-clients 4.3.1 leaves a record without
/// an outcome: after UNKNOWN_PRODUCER_ID (or an epoch bump) drops a partition's
/// `TxnPartitionEntry` while another batch of it is unsettled, that batch's answer
/// throws inside `Sender` (`TxnPartitionMap.get`, `RecordAccumulator.
/// insertInSequenceOrder`), and the batch is neither retried nor completed.
const JAVA_LOSES_AN_OUTCOME: &[&str] = &[
    "txn_java_tracking_failure_after_first_difference",
    "txn_java_loses_track_of_retried_batch",
    "txn_java_loses_track_send_in_another_step",
    "txn_commit_fails_java_pipelines_then_loses_track",
    "txn_commit_fails_early_java_never_completes",
    "txn_commit_fails_early_java_never_completes_after_abort",
];

const NO_OUTCOME: &str = r#""result":"none"}"#;

/// The record numbers of a side's `outcome` lines, in order.
fn outcome_records(out: &[String]) -> Vec<usize> {
    out.iter()
        .filter(|l| l.starts_with(r#"{"ev":"outcome","rec":"#))
        .map(|l| {
            let rest = &l[r#"{"ev":"outcome","rec":"#.len()..];
            rest[..rest.find(',').expect("a result follows")]
                .parse()
                .expect("a record number")
        })
        .collect()
}

/// The invariant "every record gets exactly one outcome", on the traces where Java's
/// own producer breaks it (docs/why-kacrab.md, case 7): Java's recorded output names a
/// record whose outcome is `none`, and the core, run on the same trace, reports every
/// record once, that one included.
#[test]
fn the_core_gives_the_record_java_loses_track_of_one_outcome() {
    for name in JAVA_LOSES_AN_OUTCOME {
        let (trace, java) = recorded(name);
        let lost: Vec<&String> = java.iter().filter(|l| l.ends_with(NO_OUTCOME)).collect();
        assert!(!lost.is_empty(), "{name}: Java reported every record");
        let (core, _) = core_side::run(&trace);
        assert_eq!(
            outcome_records(&core),
            outcome_records(&java),
            "{name}: both sides report on the same records"
        );
        let unreported: Vec<&String> = core.iter().filter(|l| l.ends_with(NO_OUTCOME)).collect();
        assert!(
            unreported.is_empty(),
            "{name}: the core left records without an outcome: {unreported:?}"
        );
    }
}
