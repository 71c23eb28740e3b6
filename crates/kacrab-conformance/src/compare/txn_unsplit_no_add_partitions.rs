//! [`Verdict::NoRenumberOfPossiblyWritten`](super::Verdict) (departure 2: a batch that
//! may be in the log is never renumbered or split) ending a transaction where Java asks
//! to add a partition the core, its transaction abortable, never asks for.

use super::field;
use super::txn_core_turns_abortable::core_fails_unsplit_possibly_written;

/// The form of `txn_core_turns_abortable::core_never_splits_refusing` where the
/// difference is Java's next AddPartitionsToTxn: at the first difference (history index
/// `i`) Java sends an AddPartitionsToTxn and the core sends no transactional request from
/// there on; the lines between the last Produce answer before it and the difference are
/// only coordinator lookups (FindCoordinator requests and answers), the outputs being the
/// same up to the difference; that answer is the one
/// [`core_fails_unsplit_possibly_written`] describes (batches of more than one record
/// failed with MESSAGE_TOO_LARGE that may be in the log, which the core fails rather
/// than split, its transaction turning abortable, while Java splits them and sends the
/// first piece again); and the core fails records with MESSAGE_TOO_LARGE (10). Java,
/// its transaction going on, asks for the partition a record arrived at meanwhile; the
/// core's abortable transaction asks for none (`TransactionManager.nextRequest` sends no
/// AddPartitionsToTxn in an abortable transaction either) and fails that record.
pub(super) fn java_adds_where_core_failed_unsplit(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(at, j)) = java.get(i) else {
        return false;
    };
    let java_adds = field(j, "ev") == Some("txn") && field(j, "api") == Some("add_partitions");
    let core_asks_nothing = !core[i.min(core.len())..]
        .iter()
        .any(|(_, l)| field(l, "ev") == Some("txn"));
    if !java_adds || !core_asks_nothing || java_out.get(..at) != core_out.get(..at) {
        return false;
    }
    let Some(answer) = java_out[..at]
        .iter()
        .rposition(|l| field(l, "ev") == Some("answered"))
    else {
        return false;
    };
    let lookups_between = java_out[answer + 1..at].iter().all(|l| {
        matches!(field(l, "ev"), Some("txn" | "coord_answered"))
            && field(l, "api") == Some("find_coordinator")
    });
    let fails_10 = core_out
        .iter()
        .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:10"));
    lookups_between
        && fails_10
        && core_fails_unsplit_possibly_written(java_out, core_out, answer + 1)
}
