//! The form of `txn_add_partitions2::add_partitions_errors_taken_in_another_order`
//! where the core's action on the answer is fatal and Java's first line is an older
//! AddPartitionsToTxn (`txn_add_partitions3::older_request_first`): the application's
//! calls Java answers meanwhile cannot match the core's, which refuses every one of them
//! after its fatal error (docs/design.md, "Transactional traces").

use super::field;
use super::txn_add_partitions3::calls_from;

/// Whether `line` is a refused send or a refused application call.
fn refusal(line: &str) -> bool {
    field(line, "ev") == Some("send_refused")
        || (field(line, "ev") == Some("txn_call") && field(line, "result") == Some("refused"))
}

/// The calls Java's older request's window is compared with in
/// `add_partitions_errors_taken_in_another_order`. Normally the core's calls from the
/// difference `i` on ([`calls_from`]): the script drives them and both sides answer
/// them alike. Where the core's action on the answer fails the transaction fatally
/// (`fatal`: an error Java's `AddPartitionsToTxnHandler.handleResponse` passes to
/// `fatalError`, PRODUCER_FENCED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED or
/// INVALID_TXN_STATE) and the core's whole history from `i` on is refusals (a fatal
/// producer sends no request and refuses every send and call:
/// `TransactionManager.maybeFailWithError`), Java, whose transaction goes on, answers
/// those calls otherwise (accepting sends and a commit or abort): its own calls are
/// then the ones taken, and only the rest of the older request's window (lookups, that
/// request's conversation, the retry of the answered request) is checked.
pub(super) fn window_calls<'a>(
    java: &[(usize, &'a str)],
    core: &[(usize, &'a str)],
    i: usize,
    fatal: bool,
) -> Vec<&'a str> {
    let core_refuses_all = core[i.min(core.len())..].iter().all(|&(_, l)| refusal(l));
    if fatal && core_refuses_all && core.len() > i {
        calls_from(java, i)
    } else {
        calls_from(core, i)
    }
}
