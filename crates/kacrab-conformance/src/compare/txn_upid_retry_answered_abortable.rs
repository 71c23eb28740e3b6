//! `UnknownProducerIdAbortsTransaction` where the core drops the AddPartitionsToTxn
//! retry Java sends, and that retry's answer makes Java's transaction abortable too
//! (docs/design.md, "Transactional traces").

use super::field;
use super::lines::{answer_entries as entries, java_resends_unknown_producer_id_batches};
use super::txn::{is_add_partitions, parts};
use super::txn_add_partitions2::{decide, java_order, Action, ABORTABLE};

/// [`super::Verdict::UnknownProducerIdAbortsTransaction`]: a batch is answered
/// UNKNOWN_PRODUCER_ID while an AddPartitionsToTxn is out; the core makes its
/// transaction abortable (the simplification "UNKNOWN_PRODUCER_ID with a truncated log
/// also aborts") and so sends no retry of that request after its retriable answer;
/// Java kept the batch to retry (`TransactionManager.canRetry`) and sends the retry,
/// whose answer makes Java's transaction abortable as well. Exact:
/// * Java's line at the first difference `i` is, line for line, the last
///   AddPartitionsToTxn both sides sent before `i`; the core's is not a request;
/// * Java's next line answers it naming exactly its partitions, and Java's handler (in
///   its map order) fails the transaction abortably on it (UNKNOWN_PRODUCER_ID,
///   TRANSACTION_ABORTABLE, TOPIC_AUTHORIZATION_FAILED);
/// * every later line of Java's history is the core's from `i` on, line for line;
/// * the last Produce answer before the core's line at `i` that failed a batch failed
///   batches with UNKNOWN_PRODUCER_ID and came after that AddPartitionsToTxn was sent;
///   Java got the same answer, sends each of those batches again with the same stamp
///   after it, and fails no record with UNKNOWN_PRODUCER_ID.
pub(super) fn unknown_producer_id_java_retry_answered_abortable(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(at, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    if !is_add_partitions(j) || field(c, "ev") == Some("txn") || java.len() != core.len() + 2 {
        return false;
    }
    let Some(last) = core[..i].iter().rposition(|&(_, l)| is_add_partitions(l)) else {
        return false;
    };
    if core[last].1 != j || java[last].1 != j {
        return false;
    }
    let answer = java[i + 1].1;
    if field(answer, "ev") != Some("coord_answered")
        || field(answer, "api") != Some("add_partitions")
    {
        return false;
    }
    let e = entries(answer);
    let mut ep: Vec<i32> = e.iter().map(|(p, _)| *p).collect();
    ep.sort_unstable();
    let mut own = parts(j);
    own.sort_unstable();
    let abortable =
        matches!(decide(&java_order(&e)), Some(Action::Fails(n)) if ABORTABLE.contains(&n));
    if ep != own || !abortable {
        return false;
    }
    if !java[i + 2..]
        .iter()
        .zip(&core[i..])
        .all(|(&(_, a), &(_, b))| a == b)
    {
        return false;
    }
    java_resends_unknown_producer_id_batches(java_out, core_out, at, core[last].0)
}
