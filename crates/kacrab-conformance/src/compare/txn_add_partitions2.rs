//! More detectors for AddPartitionsToTxn requests that differ between the two sides
//! (docs/design.md, "Transactional traces"), beside `txn_add_partitions.rs`.

use super::field;
use super::lines::{
    add_partitions_pair, identity, unknown_producer_id_stamps, ABORT_OK, BEGIN_OK, FOUND,
};
use super::txn::{asked_in_transaction, is_add_partitions, parts};
use super::txn_add_partitions3::{added_by_answer, older_request_first, retry_answer_ends_adding};
use super::txn_held_add_partitions as held;
use super::txn_refusals::{coordinator_retriable, produce_retriable};

/// [`super::Verdict::JavaAsksNewPartitionsWhileAborting`], the forms where Java's
/// request is not right after a lookup or the core ends the transaction: at the first
/// difference Java sends an AddPartitionsToTxn, after the application's abort was
/// accepted in this transaction; every partition of Java's request was asked for before
/// in this transaction by both sides (Java's `pendingPartitionsInTransaction` joins
/// every request it builds) or by neither, and at least one by neither (new at the
/// abort), or else Java's request is an older one for pending partitions, going out
/// right after the answer that failed the adding ([`older_after_failure`]). The core
/// there sends its EndTxn(ABORT_OK) under the same producer id and
/// epoch, or first writes only refused calls and sends and then that EndTxn (it has
/// nothing left to ask for), or an AddPartitionsToTxn under that identity for some of
/// Java's partitions asked for by both (pending ones, asked again) and then, after
/// AddPartitionsToTxn and lookups only, that EndTxn. From the difference on Java sends
/// only AddPartitionsToTxn under that identity naming partitions of its first one or
/// partitions both asked for before (requests it built before the abort) and lookups,
/// until its next other request, the core's EndTxn line for line. Where no answer in
/// this transaction added a partition on the core's side, the core's request in place
/// of that EndTxn may be its KIP-360 bump under that identity (InitProducerId: the TV1
/// abort after an abortable error with nothing to end, `AbortEndsWithEpochBump`), and
/// Java's next other request is then its EndTxn(ABORT_OK) under that identity (its
/// pre-built request added partitions). "Added" there is the core's rule (and Java's):
/// an answer adds its partitions only when it names every one it lists NONE. Or Java
/// never sends that EndTxn because the answers to its requests, the same the core's
/// EndTxn got, fail both aborts alike
/// ([`super::txn_stale_add_partitions::aborts_fail_alike`]), or because the last of
/// them gives one partition of Java's request a code the core's EndTxn did not get, on
/// which Java's abort fails
/// ([`super::txn_held_add_partitions::java_abort_fails_on_another_code`]).
///
/// Java built those requests before the abort: `TransactionManager.nextRequest` builds
/// one whenever partitions are new, also while another (a retry, re-enqueued, or one
/// waiting behind a FindCoordinator) is queued, and `beginAbort` clears
/// `newPartitionsInTransaction` but not the queue, so Java still asks to add partitions
/// to the transaction it aborts. The core drops new partitions at the abort, asks again
/// only for pending ones, and then ends the transaction.
pub(super) fn java_asks_new_partitions_ending_abort(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(_, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    if !is_add_partitions(j) {
        return false;
    }
    let request = |l: &str| field(l, "ev") == Some("txn");
    let ends_abort = |l: &str| {
        request(l)
            && field(l, "api") == Some("end_txn")
            && field(l, "commit") == Some("0")
            && identity(l) == identity(j)
    };
    let since = java[..i]
        .iter()
        .rposition(|(_, l)| *l == BEGIN_OK)
        .unwrap_or(0);
    let aborted = java[since..i].iter().any(|(_, l)| *l == ABORT_OK)
        && core[since..i].iter().any(|(_, l)| *l == ABORT_OK);
    let both = |p: i32| asked_in_transaction(java, i, p) && asked_in_transaction(core, i, p);
    let neither = |p: i32| !asked_in_transaction(java, i, p) && !asked_in_transaction(core, i, p);
    let jp = parts(j);
    let shape = jp.iter().all(|&p| both(p) || neither(p)) && jp.iter().any(|&p| neither(p));
    if !aborted || !(shape || older_after_failure(java, core, i)) {
        return false;
    }
    // The core's EndTxn: at `i`, after only refused calls and sends, or after asking
    // again for pending partitions of Java's request (and lookups).
    let other = |l: &str| {
        request(l) && !is_add_partitions(l) && field(l, "api") != Some("find_coordinator")
    };
    let Some(&(_, end)) = core[i..].iter().find(|(_, l)| other(l)) else {
        return false;
    };
    let asks_pending = is_add_partitions(c)
        && identity(c) == identity(j)
        && parts(c).iter().all(|p| jp.contains(p) && both(*p))
        && core[i..]
            .iter()
            .take_while(|(_, l)| !other(l))
            .all(|(_, l)| {
                !request(l)
                    || field(l, "api") == Some("find_coordinator")
                    || (identity(l) == identity(j) && parts(l).iter().all(|p| both(*p)))
            });
    let only_refusals = core[i..]
        .iter()
        .take_while(|(_, l)| !other(l))
        .all(|(_, l)| {
            field(l, "ev") == Some("send_refused")
                || (field(l, "ev") == Some("txn_call") && field(l, "result") == Some("refused"))
        });
    // Or, with nothing added in this transaction (no answer added a partition), the
    // core's abort ends with a KIP-360 bump under that identity
    // (`AbortEndsWithEpochBump`), where Java's pre-built request adds partitions and
    // Java ends them with its EndTxn(ABORT_OK).
    // The core counts a partition added only from an answer that names every partition
    // it lists NONE (one naming an error adds none: Java's `AddPartitionsToTxnHandler`
    // returns or fails before `partitionsInTransaction.addAll`).
    let added = core[since..i].iter().any(|(_, l)| {
        field(l, "ev") == Some("coord_answered")
            && field(l, "api") == Some("add_partitions")
            && field(l, "error").is_some_and(|e| e.split(',').all(|c| c.ends_with("=NONE")))
    });
    let bumps = field(end, "api") == Some("init") && identity(end) == identity(j) && !added;
    if !(ends_abort(end) || bumps) || !(asks_pending || only_refusals) {
        return false;
    }
    for &(_, l) in &java[i + 1..] {
        if !request(l) || field(l, "api") == Some("find_coordinator") {
            continue;
        }
        if !is_add_partitions(l) {
            return l == end || (bumps && ends_abort(l));
        }
        let built_before =
            identity(l) == identity(j) && parts(l).iter().all(|p| jp.contains(p) || both(*p));
        if !built_before {
            return false;
        }
    }
    // Java never sends that EndTxn: the coordinator's answers to its requests, and the
    // same answers to the core's EndTxn, fail both aborts alike.
    ends_abort(end)
        && (super::txn_stale_add_partitions::aborts_fail_alike(java, core, i)
            || held::java_abort_fails_on_another_code(java, core, i))
}

/// The other shape [`java_asks_new_partitions_ending_abort`] accepts for Java's request
/// at `i`: an older one, for pending partitions, going out after the answer that ended
/// the adding. The line before `i` is, on both sides, the answer to the same last
/// AddPartitionsToTxn, giving at least one partition an error that makes the
/// transaction abortable (TOPIC_AUTHORIZATION_FAILED, TRANSACTION_ABORTABLE,
/// UNKNOWN_PRODUCER_ID) and every other one such an error or NONE (neither side adds
/// any partition from it: `AddPartitionsToTxnHandler.handleResponse` returns or fails
/// before `partitionsInTransaction.addAll`); Java's request names, under its identity, a strict subset of
/// its partitions: a request Java built earlier, when fewer partitions were pending,
/// which waited in its queue (the error does not empty it). The answer may also carry
/// other errors on later entries when both walking orders come first to one of those
/// abortable errors (`txn_java_keeps_asking::abortable_in_both_orders`).
fn older_after_failure(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    if i == 0 || java[i - 1].1 != core[i - 1].1 {
        return false;
    }
    let answer = java[i - 1].1;
    let failed = field(answer, "ev") == Some("coord_answered")
        && field(answer, "api") == Some("add_partitions")
        && field(answer, "error").is_some_and(|e| {
            let failing = |x: &str| {
                x.split_once('=').is_some_and(|(_, c)| {
                    matches!(
                        c,
                        "TOPIC_AUTHORIZATION_FAILED"
                            | "TRANSACTION_ABORTABLE"
                            | "UNKNOWN_PRODUCER_ID"
                    )
                })
            };
            e.split(',').all(|x| failing(x) || x.ends_with("=NONE")) && e.split(',').any(failing)
        });
    let (Some(a), Some(ca)) = (last_add_partitions(java, i), last_add_partitions(core, i)) else {
        return false;
    };
    let j = java[i].1;
    let (jp, ap) = (parts(j), parts(a));
    (failed || super::txn_java_keeps_asking::abortable_in_both_orders(answer))
        && a == ca
        && identity(j) == identity(a)
        && jp.len() < ap.len()
        && jp.iter().all(|p| ap.contains(p))
}

/// The last AddPartitionsToTxn of `h` before index `i`.
fn last_add_partitions<'a>(h: &[(usize, &'a str)], i: usize) -> Option<&'a str> {
    h[..i]
        .iter()
        .rev()
        .find(|(_, l)| is_add_partitions(l))
        .map(|(_, l)| *l)
}

/// Index of the first `begin` accepted at or after `from` in `h`, or its length.
fn next_begin(h: &[(usize, &str)], from: usize) -> usize {
    h.iter()
        .skip(from)
        .position(|(_, l)| *l == BEGIN_OK)
        .map_or(h.len(), |k| from + k)
}

/// Whether Java's adding of partitions ended in `java[from..to]`: the application's
/// abort was accepted (`beginAbort` clears the new partitions), an operation failed,
/// or the transaction had failed (a refused commit, which only an error state refuses
/// in an open transaction, or a refused send: see `txn_add_partitions::failed`).
/// In each case no AddPartitionsToTxn for new partitions follows in the transaction
/// (`nextRequest` fails any it builds in an error state:
/// `maybeTerminateRequestWithError`).
pub(super) fn adding_ended(java: &[(usize, &str)], from: usize, to: usize) -> bool {
    const COMMIT_REFUSED: &str = r#"{"ev":"txn_call","call":"commit","result":"refused"}"#;
    java[from..to].iter().any(|(_, l)| {
        *l == ABORT_OK
            || *l == COMMIT_REFUSED
            || (field(l, "ev") == Some("txn_done")
                && field(l, "result").is_some_and(|r| r.starts_with("err:")))
    }) || (from + 1..=to).any(|k| super::txn_add_partitions::failed(java, k))
}

/// [`super::Verdict::JavaReasksPendingPartitions`], the stale retry where the core asks
/// for new partitions: at the first difference Java sends again an AddPartitionsToTxn
/// it sent before in this transaction (the same line), under the identity of the last
/// such request of both sides, for partitions both sides asked for before (a newer
/// request of Java's took them while this one waited: `nextRequest` builds one with
/// the pending and the new partitions while the retry is queued); the core sends its
/// next AddPartitionsToTxn, under that identity, for partitions neither side asked for
/// before. Java asks for them later, in its next AddPartitionsToTxn that asks for any
/// partition new to it, which names every partition of the core's request and
/// otherwise only partitions both asked for before or the core asked for after it (it
/// joins them: the core asked for them one request at a time); or Java never asks for
/// anything new again in the transaction, because its adding ended first (the answer
/// its stale retry took, or a later one, failed the transaction, or the application
/// aborted: see [`adding_ended`]). Java's request may also name partitions new to both
/// at the difference that the core never asks for because its own adding ended after
/// the difference (`txn_core_stops_adding::core_stopped_adding`). Java's request need
/// not be one it sent before where every partition it names was already added on both
/// sides (`txn_core_stops_adding::added_by_both`: a request Java built earlier, with
/// the then pending partitions, for partitions the coordinator has since added).
pub(super) fn java_stale_retry_while_core_asks_new(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some((j, c)) = add_partitions_pair(java, core, i) else {
        return false;
    };
    let since = java[..i]
        .iter()
        .rposition(|(_, l)| *l == BEGIN_OK)
        .unwrap_or(0);
    let both = |p: i32| asked_in_transaction(java, i, p) && asked_in_transaction(core, i, p);
    let neither = |p: i32| !asked_in_transaction(java, i, p) && !asked_in_transaction(core, i, p);
    let (jp, cp) = (parts(j), parts(c));
    let stale = (java[since..i].iter().any(|(_, l)| *l == j)
        || super::txn_core_stops_adding::added_by_both(java, core, i, &jp))
        && last_add_partitions(java, i).map(identity) == Some(identity(j))
        && last_add_partitions(core, i).map(identity) == Some(identity(j))
        && jp.iter().all(|&p| both(p));
    if !stale || cp.is_empty() || !cp.iter().all(|&p| neither(p)) {
        return false;
    }
    let end = next_begin(java, i + 1);
    let asks_new = |k: usize| {
        is_add_partitions(java[k].1)
            && parts(java[k].1)
                .iter()
                .any(|&p| !asked_in_transaction(java, k, p))
    };
    let Some(k) = (i + 1..end).find(|&k| asks_new(k)) else {
        return adding_ended(java, i + 1, end);
    };
    let core_end = next_begin(core, i + 1);
    let core_later = |p: i32| {
        core[i + 1..core_end]
            .iter()
            .any(|(_, l)| is_add_partitions(l) && parts(l).contains(&p))
    };
    let kp = parts(java[k].1);
    let core_stopped = super::txn_core_stops_adding::core_stopped_adding(core, i, core_end);
    identity(java[k].1) == identity(c)
        && cp.iter().all(|p| kp.contains(p))
        && kp
            .iter()
            .all(|&p| cp.contains(&p) || both(p) || core_later(p) || (neither(p) && core_stopped))
}

/// [`super::Verdict::RetriedAddPartitionsTakesNewPartitions`], the never-asked form
/// where the two histories part after the difference: at the first difference the
/// core's AddPartitionsToTxn asks for the partitions of Java's (a retry, or a request
/// Java built before a coordinator lookup: `txn::retried_subset`) and for partitions
/// added meanwhile; Java's adding ended (see [`adding_ended`]) after the difference, or
/// after its last AddPartitionsToTxn of the transaction naming any of those (built
/// before the rest were new to it), so it never asks for the rest. The core's request,
/// with more partitions,
/// takes another answer than Java's (an answer lists every partition asked for, and may
/// give one of them another code), and its Produce requests for the partitions only it
/// added take answers scripted for others, so the lines after the difference may part
/// in any way: by the comparison rule they are its consequences. Or the answer to
/// Java's request at the difference ends its adding and its history
/// (`txn_add_partitions3::retry_answer_ends_adding`). What the detector
/// establishes is the difference itself, and that Java's not asking is the end of its
/// adding, not a request the core would lack.
pub(super) fn retried_add_partitions_never_asked_adding_ended(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(missing) = super::txn::retried_subset(java, core, i) else {
        return false;
    };
    let end = next_begin(java, i + 1);
    // After Java's last AddPartitionsToTxn naming some of them (if any), its adding
    // ended before it asked for the rest.
    let last_asking = java[i + 1..end]
        .iter()
        .rposition(|(_, l)| is_add_partitions(l) && parts(l).iter().any(|p| missing.contains(p)))
        .map_or(i + 1, |k| i + 1 + k + 1);
    adding_ended(java, last_asking, end) || retry_answer_ends_adding(java, core, i)
}

/// What `AddPartitionsToTxnHandler.handleResponse` does with one answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: look the coordinator up, ask again.
    Lookup,
    /// A retriable error (CONCURRENT_TRANSACTIONS among them): ask again.
    Retry,
    /// The transaction fails (fatal or abortable) with this error.
    Fails(&'static str),
    /// Every partition added.
    Done,
}

/// The action Java's handler takes at once for one partition's error, by name; `None`
/// where it only notes the error and looks further (NONE, TOPIC_AUTHORIZATION_FAILED,
/// OPERATION_NOT_ATTEMPTED, an error it does not expect).
fn acted_at_once(code: &str) -> Option<Action> {
    Some(match code {
        "COORDINATOR_NOT_AVAILABLE" | "NOT_COORDINATOR" => Action::Lookup,
        "CONCURRENT_TRANSACTIONS"
        | "COORDINATOR_LOAD_IN_PROGRESS"
        | "REQUEST_TIMED_OUT"
        | "UNKNOWN_TOPIC_OR_PARTITION" => Action::Retry,
        "INVALID_PRODUCER_EPOCH" | "PRODUCER_FENCED" => Action::Fails("PRODUCER_FENCED"),
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" => {
            Action::Fails("TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        }
        "INVALID_TXN_STATE" => Action::Fails("INVALID_TXN_STATE"),
        "UNKNOWN_PRODUCER_ID" => Action::Fails("UNKNOWN_PRODUCER_ID"),
        "TRANSACTION_ABORTABLE" => Action::Fails("TRANSACTION_ABORTABLE"),
        _ => return None,
    })
}

/// The errors [`Action::Fails`] names that make Java's transaction abortable, not
/// fatal (`AddPartitionsToTxnHandler.handleResponse`: `abortableError`, or
/// `abortableErrorIfPossible` for UNKNOWN_PRODUCER_ID): the application's abort is then
/// accepted.
pub(super) const ABORTABLE: &[&str] = &[
    "UNKNOWN_PRODUCER_ID",
    "TRANSACTION_ABORTABLE",
    "TOPIC_AUTHORIZATION_FAILED",
];

/// The error codes, by the names the harness writes, of the errors [`Action::Fails`]
/// names.
pub(super) fn code_of(name: &str) -> Option<i32> {
    Some(match name {
        "TOPIC_AUTHORIZATION_FAILED" => 29,
        "INVALID_TXN_STATE" => 48,
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" => 53,
        "UNKNOWN_PRODUCER_ID" => 59,
        "PRODUCER_FENCED" => 90,
        "TRANSACTION_ABORTABLE" => 120,
        _ => return None,
    })
}

/// The action on an answer's entries taken in this order: the first error acted on at
/// once, else TOPIC_AUTHORIZATION_FAILED (abortable), else Done when every partition
/// was added. `None` for anything else (not a case the detector takes).
pub(super) fn decide(entries: &[(i32, &str)]) -> Option<Action> {
    if let Some(a) = entries.iter().find_map(|(_, c)| acted_at_once(c)) {
        return Some(a);
    }
    if entries
        .iter()
        .any(|(_, c)| *c == "TOPIC_AUTHORIZATION_FAILED")
    {
        return Some(Action::Fails("TOPIC_AUTHORIZATION_FAILED"));
    }
    entries
        .iter()
        .all(|(_, c)| *c == "NONE")
        .then_some(Action::Done)
}

/// The order in which Java's `HashMap<TopicPartition, Errors>` (built by
/// `AddPartitionsToTxnResponse.errorsForTransaction`) yields the partitions of the
/// harness's topic `t`: by bucket of a 16-slot table (fewer than 13 entries), the
/// spread `TopicPartition.hashCode`, `31 * (31 + partition) + "t".hashCode()`; equal
/// buckets keep the answer's order. For partitions 0 to 3 that is 3, 2, 1, 0.
pub(super) fn java_order<'a>(entries: &[(i32, &'a str)]) -> Vec<(i32, &'a str)> {
    let bucket = |p: i32| {
        let topic_hash = i32::from(b't');
        let h = 31i32
            .wrapping_mul(31i32.wrapping_add(p))
            .wrapping_add(topic_hash);
        let h = h as u32;
        (h ^ (h >> 16)) & 15
    };
    let mut ordered = entries.to_vec();
    ordered.sort_by_key(|(p, _)| bucket(*p));
    ordered
}

/// [`super::Verdict::AddPartitionsErrorsTakenInAnotherOrder`]: one AddPartitionsToTxn
/// answer gives its partitions different errors, and Java acts on another of them than
/// the core. Java's `AddPartitionsToTxnHandler.handleResponse` walks the answer's
/// `HashMap` and acts on the first error that asks for a lookup, a retry or ends the
/// transaction ([`java_order`]: highest partition first for the harness's topic); the
/// core on the first the answer lists (lowest partition first). Which error of one
/// answer wins is the map's hash order in Java, not a Kafka rule. Exact: at the first
/// difference the line before is the same AddPartitionsToTxn answer on both sides, the
/// action [`decide`] gives for Java's order differs from the one for the answer's
/// order, and each side's line there is its action's first line: a coordinator lookup
/// (lookup); an AddPartitionsToTxn under the answered request's identity naming its
/// partitions (retry); a failed completion with the error's code (or Java's -1), a
/// refused send or a refused call (the transaction failed). Java's history may also end
/// at `i` where its action fails the transaction (the application calls nothing more),
/// and then Java's output (`java_out`) fails a record with that error's code: a fatal
/// error fails the unsent batches with it (`Sender.runOnce`, `maybeAbortBatches`), an
/// abortable one the undrained batches (`Sender.maybeSendAndPollTransactionalRequest`,
/// `RecordAccumulator.abortUndrainedBatches`). Where Java's action makes the
/// transaction abortable (UNKNOWN_PRODUCER_ID, TRANSACTION_ABORTABLE,
/// TOPIC_AUTHORIZATION_FAILED) it sends nothing, so its line at `i` may also be the
/// application's abort, accepted, when Java's next request is its EndTxn(ABORT) and
/// `java_out` fails a record with that error's code. Likewise where the core's action
/// makes its transaction abortable: its line at `i` may be the application's abort,
/// accepted, when its next request is its EndTxn(ABORT) and Java's next line of the
/// two, an accepted abort or a completion, is that abort. Where Java retries and the
/// core looks up, Java's older request may go first and be answered abortably
/// (`txn_older_request_abortable::older_request_answered_abortable`).
pub(super) fn add_partitions_errors_taken_in_another_order(
    java_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if i == 0 || java.len() < i || core.len() <= i || java[i - 1].1 != core[i - 1].1 {
        return false;
    }
    let answer = java[i - 1].1;
    if field(answer, "ev") != Some("coord_answered")
        || field(answer, "api") != Some("add_partitions")
    {
        return false;
    }
    let entries: Vec<(i32, &str)> = field(answer, "error")
        .unwrap_or_default()
        .split(',')
        .filter_map(|e| {
            let (p, code) = e.split_once('=')?;
            Some((p.parse().ok()?, code))
        })
        .collect();
    let (Some(ja), Some(ca)) = (decide(&java_order(&entries)), decide(&entries)) else {
        return false;
    };
    let fatal = matches!(ca, Action::Fails(n) if !ABORTABLE.contains(&n));
    let calls = super::txn_core_fatal_beside_older_request::window_calls(java, core, i, fatal);
    let first_line = |h: &[(usize, &str)], action: &Action, java_side: bool| {
        let line = h[i].1;
        match action {
            Action::Lookup => line == r#"{"ev":"txn","api":"find_coordinator"}"#,
            Action::Retry => last_add_partitions(h, i - 1).is_some_and(|a| {
                let retry = |l: &str| {
                    is_add_partitions(l)
                        && identity(l) == identity(a)
                        && parts(a).iter().all(|p| parts(l).contains(p))
                };
                retry(line) || (java_side && older_request_first(h, i, a, retry, &calls))
            }),
            Action::Fails(name) => {
                let code = code_of(name).map(|c| format!("err:{c}"));
                let done = field(line, "ev") == Some("txn_done")
                    && field(line, "result").is_some_and(|r| {
                        Some(r) == code.as_deref() || (java_side && r == "err:-1")
                    });
                let refused = field(line, "ev") == Some("send_refused")
                    || (field(line, "ev") == Some("txn_call")
                        && field(line, "result") == Some("refused"));
                done || refused
            }
            Action::Done => false,
        }
    };
    let java_ends_failing = |action: &Action| {
        let Action::Fails(name) = action else {
            return false;
        };
        let Some(code) = code_of(name) else {
            return false;
        };
        let result = format!("err:{code}");
        java_out.iter().any(|l| {
            field(l, "ev") == Some("outcome") && field(l, "result") == Some(result.as_str())
        })
    };
    // Java's abortable error sends nothing: its next line may be the application's
    // abort, accepted, with Java's next request its EndTxn(ABORT) (no lookup, no retry
    // of the answered partitions between).
    let java_aborts = |action: &Action| {
        let Action::Fails(name) = action else {
            return false;
        };
        let next_request = java[i + 1..]
            .iter()
            .find(|&&(_, l)| field(l, "ev") == Some("txn"))
            .map(|&(_, l)| l);
        ABORTABLE.contains(name)
            && java[i].1 == ABORT_OK
            && next_request.is_some_and(|l| {
                field(l, "api") == Some("end_txn") && field(l, "commit") == Some("0")
            })
            && java_ends_failing(action)
    };
    let java_first = if java.len() == i {
        java_ends_failing(&ja)
    } else {
        first_line(java, &ja, true) || java_aborts(&ja)
    };
    let older_aborts = matches!((&ja, &ca), (Action::Retry, Action::Lookup))
        && last_add_partitions(java, i - 1).is_some_and(|a| {
            super::txn_older_request_abortable::older_request_answered_abortable(
                java_out, java, core, i, a,
            )
        });
    ja != ca
        && ((java_first
            && (first_line(core, &ca, false)
                || super::txn_older_request_abortable::core_aborts(java, core, i, &ca)))
            || older_aborts)
}

/// The failed records (`rec` numbers) with REQUEST_TIMED_OUT (an expiry by
/// `delivery.timeout.ms`) among `out`.
fn expired_records(out: &[String]) -> Vec<&str> {
    out.iter()
        .filter(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:7"))
        .filter_map(|l| field(l, "rec"))
        .collect()
}

/// Whether the only cause the core's output shows before its line `at` (history index
/// `i`) for its transaction to be abortable is an expiry: it failed a record with
/// REQUEST_TIMED_OUT (its outcome lines come at the end of its output, so their moment
/// is not known), and since the transaction began (the last `begin` accepted before
/// `i`) every Produce answer before `at` and every coordinator answer before `i`
/// carried only errors both sides retry. Also the records the core failed so.
fn only_expiry<'a>(
    core_out: &'a [String],
    core: &[(usize, &str)],
    i: usize,
    at: usize,
) -> Option<Vec<&'a str>> {
    let began = core[..i].iter().rposition(|&(_, l)| l == BEGIN_OK)?;
    let produce = core_out[core[began].0..at]
        .iter()
        .filter(|l| field(l, "ev") == Some("answered"))
        .all(|l| produce_retriable(l));
    let coordinator = core[began..i]
        .iter()
        .filter(|&&(_, l)| field(l, "ev") == Some("coord_answered"))
        .all(|&(_, l)| coordinator_retriable(l));
    let expired = expired_records(core_out);
    (produce && coordinator && !expired.is_empty()).then_some(expired)
}

/// Whether `line` belongs to Java's AddPartitionsToTxn conversation or is a lookup.
fn adding_or_lookup(line: &str) -> bool {
    matches!(field(line, "ev"), Some("txn" | "coord_answered"))
        && matches!(
            field(line, "api"),
            Some("add_partitions" | "find_coordinator")
        )
}

/// Whether `java_out` fails record `rec` with `codes`.
fn java_fails(java_out: &[String], rec: &str, codes: &[&str]) -> bool {
    java_out.iter().any(|l| {
        field(l, "ev") == Some("outcome")
            && field(l, "rec") == Some(rec)
            && field(l, "result").is_some_and(|r| codes.contains(&r))
    })
}

/// [`super::Verdict::CoreExpiresWhileCoordinatorRequestOut`], the form where the core's
/// transactional history ends at the first difference `i`: the line before `i` is, on
/// both sides, a coordinator lookup answered NONE (a lookup is a transactional request,
/// out until then); the only cause the core's output shows for its transaction to be
/// abortable is an expiry (a record failed with REQUEST_TIMED_OUT, every Produce and
/// coordinator answer since `begin` retriable), and it fails no record otherwise (but
/// records of an earlier transaction Java fails alike:
/// [`super::txn_held_add_partitions::other_failures_from_earlier_transaction`]); it
/// writes no transactional line from `i` on (abortable, it does not ask for the
/// partitions, and the script calls nothing more). Java, which checks expiry only in
/// `Sender.sendProducerData` and skips it while a transactional request is in flight or
/// about to be sent (`Sender.runOnce` returns after
/// `maybeSendAndPollTransactionalRequest`; the same in the 4.3.1 jar), sends at `i` the
/// AddPartitionsToTxn that waited for the lookup, and from there writes only its
/// AddPartitionsToTxn conversation and lookups (no application call or its completion,
/// no refused send, no EndTxn, no InitProducerId); and Java too fails with
/// REQUEST_TIMED_OUT at least one of the records the core expired (it expires them once
/// its conversation lets `sendProducerData` run). Timing only, as the other forms.
pub(super) fn core_expires_during_lookup_history_ends(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if i == 0 || core.len() != i || java.len() <= i {
        return false;
    }
    if java[i - 1].1 != FOUND || core[i - 1].1 != FOUND || !is_add_partitions(java[i].1) {
        return false;
    }
    let Some(expired) = only_expiry(core_out, core, i, core_out.len()) else {
        return false;
    };
    let conversation = java[i..].iter().all(|&(_, l)| adding_or_lookup(l));
    let only_expired = core_out
        .iter()
        .filter(|l| field(l, "ev") == Some("outcome"))
        .filter_map(|l| field(l, "result"))
        .all(|r| r == "err:7" || r.starts_with("ok:") || r == "refused")
        || held::other_failures_from_earlier_transaction(java_out, core_out, core, i);
    let java_expires_too = expired.iter().any(|r| java_fails(java_out, r, &["err:7"]));
    conversation && only_expired && java_expires_too
}

/// [`super::Verdict::CoreExpiresWhileCoordinatorRequestOut`], the form where the
/// transaction then ends in an abort on both sides: the line before the first
/// difference `i` is, on both sides, a coordinator lookup answered NONE; the only cause
/// the core's output shows for its transaction to be abortable is an expiry (as in
/// [`core_expires_during_lookup_history_ends`]), so it does not ask for the partitions
/// again: its line at `i` is the application's abort accepted, or (the abort accepted
/// before in this transaction) its EndTxn(ABORT_OK) or its KIP-360 bump (InitProducerId)
/// under the identity of Java's request. Java, which skips its expiry check while a
/// transactional request is out or about to be sent, sends at `i` the
/// AddPartitionsToTxn that waited for the lookup, and from there writes only its
/// AddPartitionsToTxn conversation and lookups (and, the abort accepted before, refused
/// sends and refused calls) up to its next other line, which is the application's abort accepted, or its
/// EndTxn(ABORT_OK) when the abort was accepted before in this transaction: Java's transaction ends aborted too, and every record
/// the core expired Java fails too (expired later, REQUEST_TIMED_OUT, or aborted
/// unsent, -1, or TRANSACTION_ABORTABLE, its last error naming an expiry of its own:
/// `txn_java_keeps_asking::java_fails_expired`), delivering none. What follows (Java ending the partitions its request
/// added; the core bumping its epoch after the expiry where Java, which aborted the
/// batches unsent, does not) is the consequence.
pub(super) fn core_expires_during_lookup_java_aborts(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(at, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    if i == 0 || java[i - 1].1 != FOUND || core[i - 1].1 != FOUND || !is_add_partitions(j) {
        return false;
    }
    let Some(expired) = only_expiry(core_out, core, i, at) else {
        return false;
    };
    let Some(began) = core[..i].iter().rposition(|&(_, l)| l == BEGIN_OK) else {
        return false;
    };
    let aborted_before = |h: &[(usize, &str)]| h[began..i].iter().any(|&(_, l)| l == ABORT_OK);
    let same_identity = identity(c) == identity(j);
    let core_line = match (field(c, "ev"), field(c, "api")) {
        (Some("txn_call"), _) => c == ABORT_OK,
        (Some("txn"), Some("init")) => same_identity && aborted_before(core),
        (Some("txn"), Some("end_txn")) => {
            same_identity && field(c, "commit") == Some("0") && aborted_before(core)
        }
        _ => false,
    };
    // While aborting, Java refuses every send (`TransactionManager.maybeFailWithError`
    // in ABORTING_TRANSACTION), as the core does, and every begin and commit (no
    // transition to them from ABORTING_TRANSACTION).
    let refused = |l: &str| {
        field(l, "ev") == Some("send_refused")
            || (field(l, "ev") == Some("txn_call") && field(l, "result") == Some("refused"))
    };
    let refused_aborting = |l: &str| refused(l) && aborted_before(java);
    let Some(k) = java[i..]
        .iter()
        .position(|&(_, l)| !adding_or_lookup(l) && !refused_aborting(l))
    else {
        return false;
    };
    let next = java[i + k].1;
    let java_aborts = next == ABORT_OK
        || (field(next, "api") == Some("end_txn")
            && field(next, "commit") == Some("0")
            && aborted_before(java));
    let java_failed_them = expired
        .iter()
        .all(|r| super::txn_java_keeps_asking::java_fails_expired(java_out, r));
    core_line && java_aborts && java_failed_them
}

/// [`super::Verdict::RetriedAddPartitionsTakesNewPartitions`], the form where Java's
/// request was built earlier but never sent (`txn::retried_subset` takes one Java sent
/// before, or sends right after a lookup): at the first difference `i` both sides send
/// AddPartitionsToTxn under the same identity; the core's is the last AddPartitionsToTxn
/// both sides sent before (its retry, after an answer that added nothing), and Java's
/// names a strict subset of its partitions. Every partition of the core's request was
/// asked for by both sides since `begin` and added by neither (all pending: an answer
/// adds its partitions only when it lists every one NONE,
/// `txn_add_partitions3::added_by_answer`; one that lists some NONE beside a retriable
/// error adds none, and its retry names them all again). Java built
/// its request earlier, naming the partitions pending then, and it waited in its queue
/// beside the newer one (Java builds one request each time partitions are new while
/// another waits; equal-priority requests leave `TransactionManager.pendingRequests`, a
/// priority queue, in heap order); the core keeps one request naming all pending
/// partitions. Accepted when Java asks for every partition only the core asked for
/// there in a later AddPartitionsToTxn of the same transaction (before its next `begin`).
pub(super) fn java_sends_older_pending_request(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some((j, c)) = add_partitions_pair(java, core, i) else {
        return false;
    };
    let (jp, cp) = (parts(j), parts(c));
    if jp.len() >= cp.len() || !jp.iter().all(|p| cp.contains(p)) {
        return false;
    }
    let retry = last_add_partitions(core, i) == Some(c) && last_add_partitions(java, i) == Some(c);
    let pending = cp.iter().all(|&p| {
        asked_in_transaction(java, i, p)
            && asked_in_transaction(core, i, p)
            && !added_by_answer(java, i, p)
            && !added_by_answer(core, i, p)
    });
    let end = next_begin(java, i + 1);
    let asked_later = cp.iter().filter(|p| !jp.contains(p)).all(|p| {
        java[i + 1..end]
            .iter()
            .any(|&(_, l)| is_add_partitions(l) && parts(l).contains(p))
    });
    retry && pending && asked_later
}

/// [`super::Verdict::UnknownProducerIdAbortsTransaction`], the form where the core's
/// transactional history ends at the first difference `i`: the core's last Produce
/// answer before the lookup's answer on the line before `i` failed batches with
/// UNKNOWN_PRODUCER_ID and the core made its transaction
/// abortable (the simplification "UNKNOWN_PRODUCER_ID with a truncated log also
/// aborts"): it fails records with that error (59) and writes no transactional line
/// from `i` on (it does not ask for the partitions; the script calls nothing more).
/// Java got the same answer and kept those batches to retry
/// (`TransactionManager.canRetry`): it fails no record with 59, and sends each of them
/// again with the same stamp, or nothing of its partition again. The line before `i` is,
/// on both sides, a coordinator lookup answered NONE, and Java sends at `i` the
/// AddPartitionsToTxn that waited for it (or the line before is, on both sides, the
/// AddPartitionsToTxn answer Java retries on, and Java's line is that retry:
/// `txn_java_keeps_asking::retry_of_answered`), and from there writes only its
/// AddPartitionsToTxn conversation and lookups.
pub(super) fn unknown_producer_id_history_ends(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    if i == 0 || core.len() != i || java.len() <= i {
        return false;
    }
    let after_lookup = java[i - 1].1 == FOUND && core[i - 1].1 == FOUND;
    let retry = super::txn_java_keeps_asking::retry_of_answered(java, core, i);
    if !(after_lookup || retry) || !is_add_partitions(java[i].1) {
        return false;
    }
    if !java[i..].iter().all(|&(_, l)| adding_or_lookup(l)) {
        return false;
    }
    let Some(answer) = core_out[..core[i - 1].0]
        .iter()
        .rev()
        .find(|l| field(l, "ev") == Some("answered"))
    else {
        return false;
    };
    let failed = unknown_producer_id_stamps(answer);
    let Some(answered) = java_out.iter().position(|l| l == answer) else {
        return false;
    };
    let partition = |stamp: &str| stamp.split(':').next().unwrap_or_default().to_string();
    let resent_or_never = |stamp: &&str| {
        let p = partition(stamp);
        let mut sent = java_out[answered + 1..]
            .iter()
            .filter(|l| field(l, "ev") == Some("produce"))
            .flat_map(|l| field(l, "batches").unwrap_or_default().split(','))
            .filter(|b| partition(b) == p)
            .peekable();
        sent.peek().is_none() || sent.any(|b| b == *stamp)
    };
    let fails = |out: &[String]| {
        out.iter()
            .any(|l| field(l, "ev") == Some("outcome") && field(l, "result") == Some("err:59"))
    };
    !failed.is_empty() && failed.iter().all(resent_or_never) && fails(core_out) && !fails(java_out)
}
