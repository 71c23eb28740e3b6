//! AddPartitionsToTxn requests Java holds (a retry re-enqueued, one waiting behind a
//! FindCoordinator, one built before the abort) and sends where the core has none
//! (docs/design.md, "Java's AddPartitionsToTxn requests outlive their reason"): the
//! core's transaction turned abortable after an UNKNOWN_PRODUCER_ID answer and the
//! application aborts; the answer scripted for the core's EndTxn(ABORT) fails Java's
//! stale request on a code only an AddPartitionsToTxn answer can carry; and a widening
//! of an existing form (records of an earlier transaction beside an expiry).

use super::field;
use super::lines::{
    answer_entries as entries, identity, is_request, java_resends_unknown_producer_id_batches,
    refused_send, ABORT_OK, BEGIN_OK,
};
use super::txn::{is_add_partitions, parts};
use super::txn_add_partitions2::{code_of, decide, java_order, Action, ABORTABLE};

/// Whether `line` is a coordinator lookup or its answer.
fn lookup(line: &str) -> bool {
    field(line, "api") == Some("find_coordinator")
}

/// Whether `line` is a request or an answer of the coordinator's conversation.
fn conversation(line: &str) -> bool {
    is_request(line) || field(line, "ev") == Some("coord_answered")
}

/// Java's stale AddPartitionsToTxn at the first difference `i` against the core's
/// EndTxn(ABORT) under the same identity (the callers establish the rest of the form),
/// where the answer scripted for the core's EndTxn fails Java's abort on a code the
/// EndTxn did not get: the harness answers the outstanding request with the script's
/// code and optionally gives one partition of an AddPartitionsToTxn another, which an
/// EndTxn answer cannot carry. Exactly, from `i` up to Java's first completion:
/// * Java's requests are AddPartitionsToTxn under that identity naming only partitions
///   of its request at `i`, and lookups; the core's first as many requests are
///   EndTxn(ABORT) under that identity and lookups, paired in order (a lookup with the
///   same lookup, an AddPartitionsToTxn with an EndTxn);
/// * the answers pair up in order: a lookup's alike; each answer to Java's
///   AddPartitionsToTxn but the last gives some partition the code the core's EndTxn
///   got; the last gives every partition but one that code, and the one another code,
///   on which Java's `AddPartitionsToTxnHandler.handleResponse` (walked in Java's map
///   order) fails the transaction;
/// * every other line there (application calls and refused sends) is the same on both
///   sides, in order, and the core completes nothing there;
/// * Java's completion fails the abort with that code as Java reports it
///   (`txn_add_partitions2::code_of`), or -1.
///
/// What follows (the core's abort going on with the answer its EndTxn got, Java's
/// having failed) is the consequence of which request took the scripted answers.
/// `txn_stale_add_partitions::aborts_fail_alike` takes the form where both aborts fail
/// alike.
pub(super) fn java_abort_fails_on_another_code(
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(&(_, j)) = java.get(i) else {
        return false;
    };
    if !is_add_partitions(j) {
        return false;
    }
    let Some(kj) = (i..java.len()).find(|&k| field(java[k].1, "ev") == Some("txn_done")) else {
        return false;
    };
    let done = java[kj].1;
    let abort_failed = field(done, "call") == Some("abort")
        && field(done, "result").is_some_and(|r| r.starts_with("err:"));
    if !abort_failed {
        return false;
    }
    let jt: Vec<&str> = java[i..kj]
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| conversation(l))
        .collect();
    // The core's window: up to its line pairing with Java's last conversation line.
    let mut kc = i;
    let mut ct = Vec::new();
    while ct.len() < jt.len() {
        let Some(&(_, l)) = core.get(kc) else {
            return false;
        };
        if conversation(l) {
            ct.push(l);
        }
        kc += 1;
    }
    let jp = parts(j);
    let stale_add = |l: &str| {
        is_add_partitions(l)
            && identity(l) == identity(j)
            && parts(l).iter().all(|p| jp.contains(p))
    };
    let ends_abort = |l: &str| {
        is_request(l)
            && field(l, "api") == Some("end_txn")
            && field(l, "commit") == Some("0")
            && identity(l) == identity(j)
    };
    let core_code = |b: &str| field(b, "error").unwrap_or_default().to_string();
    let add_answer_to_end_txn = |a: &str, b: &str| {
        field(a, "ev") == Some("coord_answered")
            && field(a, "api") == Some("add_partitions")
            && field(b, "ev") == Some("coord_answered")
            && field(b, "api") == Some("end_txn")
    };
    let paired = |a: &str, b: &str, last: bool| {
        if last && !add_answer_to_end_txn(a, b) {
            return false;
        }
        if is_request(a) || is_request(b) {
            return (lookup(a) && a == b) || (stale_add(a) && ends_abort(b));
        }
        if lookup(a) || lookup(b) {
            return a == b;
        }
        if !add_answer_to_end_txn(a, b) {
            return false;
        }
        let code = core_code(b);
        let e = entries(a);
        if !last {
            return e.iter().any(|(_, c)| *c == code);
        }
        // The one entry with another code, on which Java's handler fails.
        let others: Vec<(i32, &str)> = e.iter().copied().filter(|&(_, c)| c != code).collect();
        let (Some(Action::Fails(name)), [odd]) = (decide(&java_order(&e)), others.as_slice())
        else {
            return false;
        };
        let reported = code_of(name).map(|c| format!("err:{c}"));
        decide(&[*odd]) == Some(Action::Fails(name))
            && field(done, "result")
                .is_some_and(|r| Some(r) == reported.as_deref() || r == "err:-1")
    };
    fn other_lines<'a>(h: &[(usize, &'a str)], from: usize, to: usize) -> Vec<&'a str> {
        h[from..to]
            .iter()
            .map(|&(_, l)| l)
            .filter(|l| !conversation(l))
            .collect()
    }
    let n = jt.len();
    n > 0
        && jt
            .iter()
            .zip(&ct)
            .enumerate()
            .all(|(k, (a, b))| paired(a, b, k + 1 == n))
        && !core[i..kc]
            .iter()
            .any(|&(_, l)| field(l, "ev") == Some("txn_done"))
        && other_lines(java, i, kj) == other_lines(core, i, kc)
}

/// [`super::Verdict::UnknownProducerIdAbortsTransaction`], the form where the core's
/// line at the first difference `i` is the application's abort, accepted: a batch was
/// answered UNKNOWN_PRODUCER_ID while an AddPartitionsToTxn was out or waiting for a
/// lookup, and the core made its transaction abortable (the simplification
/// "UNKNOWN_PRODUCER_ID with a truncated log also aborts"), so it dropped the request
/// (an abortable transaction sends only lookups: `txn_abortable_sends_only_lookups`);
/// Java kept the batch to retry it (`TransactionManager.canRetry`), its transaction is
/// not abortable, and it sends at `i` the retry of that request (after a retriable
/// answer, or the lookup it waited for). Exactly:
/// * Java's line at `i` is the last AddPartitionsToTxn both sides sent before `i`, line
///   for line; the core's is the abort accepted, and Java writes it too, after only its
///   AddPartitionsToTxn conversation and lookups;
/// * the core sends no AddPartitionsToTxn from `i` up to its next completion;
/// * the last Produce answer before the core's line at `i` that failed a batch
///   (`lines::last_failing_answer`) failed batches with UNKNOWN_PRODUCER_ID and came
///   after that AddPartitionsToTxn was sent (while it was out or waiting); Java got the
///   same answer, sends each of those batches again with the same stamp after it, and
///   fails no record with UNKNOWN_PRODUCER_ID.
///
/// What follows (Java's abort ends the partitions its request added with an EndTxn, the
/// core's ends with the EndTxn and the KIP-360 bump its abortable error asks for, and the
/// scripted answers fall to other requests) is the consequence.
pub(super) fn unknown_producer_id_core_drops_retry_and_aborts(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(_, j)), Some(&(at, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    if c != ABORT_OK || !is_add_partitions(j) {
        return false;
    }
    let Some(last) = core[..i].iter().rposition(|&(_, l)| is_add_partitions(l)) else {
        return false;
    };
    if core[last].1 != j || java[last].1 != j {
        return false;
    }
    let Some(k) = java[i + 1..].iter().position(|&(_, l)| {
        !(matches!(field(l, "ev"), Some("txn" | "coord_answered"))
            && matches!(field(l, "api"), Some("add_partitions" | "find_coordinator")))
    }) else {
        return false;
    };
    if java[i + 1 + k].1 != ABORT_OK {
        return false;
    }
    let core_done = (i..core.len())
        .find(|&n| field(core[n].1, "ev") == Some("txn_done"))
        .unwrap_or(core.len());
    if core[i..core_done]
        .iter()
        .any(|&(_, l)| is_add_partitions(l))
    {
        return false;
    }
    java_resends_unknown_producer_id_batches(java_out, core_out, at, core[last].0)
}

/// For `txn_add_partitions2::core_expires_during_lookup_history_ends`: whether every
/// record the core failed with another code than REQUEST_TIMED_OUT (an outcome other
/// than `err:7`, `ok:` or `refused`) belongs to an earlier transaction and Java failed
/// it alike: Java writes the same outcome line, and its number is below that of a send
/// refused (on the core's side) before the last `begin` accepted before `i` (records
/// are numbered in the order the script sends them, so it was sent before that
/// refusal, in an earlier transaction). Such a record cannot have made the current
/// transaction abortable.
pub(super) fn other_failures_from_earlier_transaction(
    java_out: &[String],
    core_out: &[String],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(began) = core[..i].iter().rposition(|&(_, l)| l == BEGIN_OK) else {
        return false;
    };
    let refused_before = core[..began]
        .iter()
        .filter(|&&(_, l)| refused_send(l))
        .filter_map(|&(_, l)| field(l, "rec")?.parse::<u64>().ok())
        .max();
    core_out
        .iter()
        .filter(|l| field(l, "ev") == Some("outcome"))
        .filter(|l| {
            field(l, "result")
                .is_some_and(|r| r != "err:7" && !r.starts_with("ok:") && r != "refused")
        })
        .all(|l| {
            let earlier = field(l, "rec")
                .and_then(|r| r.parse::<u64>().ok())
                .zip(refused_before)
                .is_some_and(|(r, before)| r < before);
            earlier && java_out.iter().any(|x| x == l)
        })
}

/// The output lines of `out[from..]` that show what went on the wire and every record's
/// outcome (Produce requests and answers, closed connections, outcomes), in order.
fn wire_and_outcomes(out: &[String], from: usize) -> Vec<&str> {
    out[from..]
        .iter()
        .map(String::as_str)
        .filter(|l| {
            matches!(
                field(l, "ev"),
                Some("produce" | "answered" | "disconnected" | "outcome")
            )
        })
        .collect()
}

/// The codes an AddPartitionsToTxn answer line gives, each once.
fn answer_codes(line: &str) -> Vec<&str> {
    let mut codes: Vec<&str> = entries(line).into_iter().map(|(_, c)| c).collect();
    codes.sort_unstable();
    codes.dedup();
    codes
}

/// [`super::Verdict::JavaReasksPendingPartitions`], the form where Java's stale retry
/// takes every answer the script gives from the first difference `i` on: Java's line at
/// `i` is a stale AddPartitionsToTxn retry (`txn::java_stale_retry`: a request
/// `TransactionManager` re-enqueued after a retriable answer, for partitions a newer
/// request has since added), and the core's is an AddPartitionsToTxn for new partitions
/// under the same identity. The harness answers whichever request is out, so the
/// answers meant for the core's request go to Java's, and where they end the transaction
/// before Java's retry is answered NONE (a fatal code), Java never sends its own request
/// for the new partitions. Exactly, from `i` to the end of both histories:
/// * Java's requests are lookups and that retry again (the same line), the core's are
///   lookups and its request again; the two conversations pair up in order, a lookup
///   with the same lookup, the retry with the core's request, each answer to the retry
///   with an answer to the core's request giving the same one code;
/// * no other history line follows on either side (no call, completion or refused send);
/// * from `i` on, what went on the wire and every record's outcome is the same on both
///   sides, line for line (the core alone writes that it turned fatal): the new
///   partitions' records were never sent, and both failed every record alike.
///
/// What differs is only which partitions the request that took the answers named.
pub(super) fn stale_retry_takes_answers_alike(
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let (Some(&(ja, j)), Some(&(ca, c))) = (java.get(i), core.get(i)) else {
        return false;
    };
    if !is_add_partitions(c)
        || identity(c) != identity(j)
        || !super::txn::java_stale_retry(java, core, i)
    {
        return false;
    }
    let (jt, ct) = (&java[i..], &core[i..]);
    if jt.len() != ct.len() || !jt.iter().chain(ct).all(|&(_, l)| conversation(l)) {
        return false;
    }
    let paired = |a: &str, b: &str| {
        if lookup(a) || lookup(b) {
            return a == b;
        }
        if is_request(a) || is_request(b) {
            return a == j && b == c;
        }
        let (codes_a, codes_b) = (answer_codes(a), answer_codes(b));
        field(a, "api") == Some("add_partitions")
            && field(b, "api") == Some("add_partitions")
            && codes_a.len() == 1
            && codes_a == codes_b
    };
    jt.iter().zip(ct).all(|(&(_, a), &(_, b))| paired(a, b))
        && wire_and_outcomes(java_out, ja) == wire_and_outcomes(core_out, ca)
}

/// Whether [`one_answer_parts_by_request`] names the first difference of the two
/// transactional histories, the outputs the same before it.
pub(super) fn one_answer_parts_the_two(
    trace: &crate::trace::Trace,
    java_out: &[String],
    core_out: &[String],
) -> bool {
    let (jh, ch) = (super::txn::history(java_out), super::txn::history(core_out));
    super::txn::first_difference(&jh, &ch).is_some_and(|(i, when)| {
        java_out.get(..when) == core_out.get(..when)
            && one_answer_parts_by_request(trace, java_out, core_out, &jh, &ch, i)
    })
}

/// Each record's outcome in `out`, by record number.
fn outcomes(out: &[String]) -> std::collections::BTreeMap<&str, &str> {
    out.iter()
        .filter(|l| field(l, "ev") == Some("outcome"))
        .filter_map(|l| Some((field(l, "rec")?, field(l, "result")?)))
        .collect()
}

/// [`super::Verdict::RetriedAddPartitionsTakesNewPartitions`], the form where one
/// scripted answer parts the two producers because their requests name different
/// partitions: at the first difference `i` Java sends the request it built earlier, a
/// strict subset of the core's (`txn::retried_subset`), and the answer (`i + 1` on both
/// sides) is the trace's partial one, which gives one partition its own code and the
/// rest of a request naming it another (Kafka checks the partitions before the
/// producer's epoch: `KafkaApis.handleAddPartitionsToTxnRequest` answers an unknown
/// partition UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED without
/// asking the coordinator, where a request without it meets the transaction's state in
/// `TransactionCoordinator.handleAddPartitionsToTransaction`).
/// That partition is one only the core's request names, so Java's answer gives its
/// partitions the answer's one code, on which Java's handler fails the transaction
/// fatally. From there each side follows its own answer, so only each side's keeping to
/// its inputs and state is checked:
/// * both outputs take the coordinator's answers in the script's order
///   (`txn_state_split::follows_script`) and hold together on their own
///   (`consistency::holds_together`);
/// * Java, fatal, sends no transactional request after that answer but lookups, and
///   each of its records is delivered only where the core delivered it at the same
///   offset, else failed with that error's code or with none (-1).
fn one_answer_parts_by_request(
    trace: &crate::trace::Trace,
    java_out: &[String],
    core_out: &[String],
    java: &[(usize, &str)],
    core: &[(usize, &str)],
    i: usize,
) -> bool {
    let Some(missing) = super::txn::retried_subset(java, core, i) else {
        return false;
    };
    let (Some(&(_, ja)), Some(&(_, ca))) = (java.get(i + 1), core.get(i + 1)) else {
        return false;
    };
    let add_answer = |l: &str| {
        field(l, "ev") == Some("coord_answered") && field(l, "api") == Some("add_partitions")
    };
    if !add_answer(ja) || !add_answer(ca) {
        return false;
    }
    let java_codes = answer_codes(ja);
    let [e] = java_codes.as_slice() else {
        return false;
    };
    let ce = entries(ca);
    // One partition only the core names has its own code, the rest share another.
    let apart = missing.iter().any(|&q| {
        let (own, rest): (Vec<_>, Vec<_>) = ce.iter().partition(|&&(p, _)| p == q);
        let mut rest_codes: Vec<&str> = rest.iter().map(|&&(_, c)| c).collect();
        rest_codes.sort_unstable();
        rest_codes.dedup();
        matches!(own.as_slice(), [&(_, qc)] if qc != *e) && rest_codes.len() == 1
    });
    let Some(Action::Fails(name)) = decide(&entries(ja)) else {
        return false;
    };
    let Some(code) = code_of(name).filter(|_| !ABORTABLE.contains(&name)) else {
        return false;
    };
    let java_quiet = java[i + 2..]
        .iter()
        .all(|&(_, l)| !is_request(l) || lookup(l));
    let core_outcomes = outcomes(core_out);
    let java_failed_all = outcomes(java_out).iter().all(|(rec, result)| {
        (result.starts_with("ok:") && core_outcomes.get(rec) == Some(result))
            || *result == format!("err:{code}")
            || *result == "err:-1"
    });
    apart
        && java_quiet
        && java_failed_all
        && super::txn_state_split::follows_script(trace, java_out)
        && super::txn_state_split::follows_script(trace, core_out)
        && super::consistency::holds_together(trace, java_out)
        && super::consistency::holds_together(trace, core_out)
}
