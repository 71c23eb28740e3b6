//! The transactional half of a comparison: the coordinator's conversation (every
//! transactional request with its producer id, epoch, partitions and commit flag, and
//! every answer), the application's calls and their completions, and refused sends, in
//! order, must be identical on both sides.

use super::field;

/// The output events of one side that make up its transactional history.
const EVENTS: &[&str] = &["txn", "coord_answered", "txn_call", "txn_done", "send_refused"];

/// One side's transactional history: its lines, in output order.
pub(super) fn history(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| field(l, "ev").is_some_and(|ev| EVENTS.contains(&ev)))
        .map(String::as_str)
        .collect()
}

/// Where the two sides' transactional histories first differ (index into each), if they
/// do.
pub(super) fn first_difference(java: &[&str], core: &[&str]) -> Option<usize> {
    let n = java.len().max(core.len());
    (0..n).find(|&i| java.get(i) != core.get(i))
}
