//! Java's stale AddPartitionsToTxn against the core's end of an abort, where the
//! coordinator's scripted answers then fail both aborts alike (docs/design.md, "Java's
//! AddPartitionsToTxn requests outlive their reason"). The rule the widened detectors
//! (`txn_add_partitions2::java_asks_new_partitions_ending_abort`,
//! `txn_refusals::java_asks_pending_partitions_while_aborting`) share for that ending.

use super::field;
use super::lines::{identity, is_request};
use super::txn::{is_add_partitions, parts, same};

/// Whether `line` is a request or an answer of the coordinator's conversation.
fn conversation(line: &str) -> bool {
    is_request(line) || field(line, "ev") == Some("coord_answered")
}

/// The lines of `h[from..to]` that belong to the conversation (`talk`), or the others.
fn lines<'a>(h: &[(usize, &'a str)], from: usize, to: usize, talk: bool) -> Vec<&'a str> {
    h[from..to]
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| conversation(l) == talk)
        .collect()
}

/// Whether `line` is a FindCoordinator request or its answer.
fn lookup(line: &str) -> bool {
    field(line, "api") == Some("find_coordinator")
}

/// The codes an answer line names, one per partition (`p=CODE`) or one (`CODE`).
fn codes(answer: &str) -> Vec<&str> {
    field(answer, "error")
        .unwrap_or_default()
        .split(',')
        .map(|e| e.rsplit('=').next().unwrap_or_default())
        .collect()
}

/// Whether `line` completes the application's abort with an error.
fn abort_failed(line: &str) -> bool {
    field(line, "ev") == Some("txn_done")
        && field(line, "call") == Some("abort")
        && field(line, "result").is_some_and(|r| r.starts_with("err:"))
}

/// At the first difference `i` Java sends a stale AddPartitionsToTxn (built before the
/// abort: the callers establish that) and the core its EndTxn(ABORT) under the same
/// producer id and epoch; Java would end the abort with that same EndTxn once its
/// request is answered, but the coordinator's answers fail the abort first, on both
/// sides alike. Exactly: from `i` up to each side's first completion, the two sides
/// differ only in which request took the scripted answers:
/// * Java's requests there are AddPartitionsToTxn under that identity naming only
///   partitions of its request at `i` (that request again, after a retriable error, or
///   an older one for fewer of them) and lookups; the core's are EndTxn(ABORT) under
///   that identity and lookups; the two sequences pair up in order, a lookup with a
///   lookup, an AddPartitionsToTxn with an EndTxn (or with the core's InitProducerId
///   under that identity right after its EndTxn was answered UNKNOWN_PRODUCER_ID, and
///   their answers alike: `txn_java_keeps_asking::bump_pair`);
/// * their answers pair up in order too: a lookup's answered alike, and each answer to
///   Java's AddPartitionsToTxn gives some partition the code the core's EndTxn got (the
///   harness answers the outstanding request with the script's code, optionally one
///   partition another);
/// * every other line there (application calls and refused sends) is the same on both
///   sides, in order;
/// * both first completions fail the abort (the same code, or Java's -1 wrapping it:
///   [`same`]), and every later line of the two histories is the same.
///
/// The answer that failed both is one both request kinds fail on (a fatal code such as
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, or a lookup's fatal error), so Java never
/// sends its EndTxn and nothing else differs: the stale request changed only which
/// request the failure answered.
pub(super) fn aborts_fail_alike(java: &[(usize, &str)], core: &[(usize, &str)], i: usize) -> bool {
    let Some(&(_, j)) = java.get(i) else {
        return false;
    };
    if !is_add_partitions(j) {
        return false;
    }
    let done = |h: &[(usize, &str)]| {
        h[i..]
            .iter()
            .position(|&(_, l)| field(l, "ev") == Some("txn_done"))
            .map(|k| i + k)
    };
    let (Some(kj), Some(kc)) = (done(java), done(core)) else {
        return false;
    };
    if !abort_failed(java[kj].1) || !abort_failed(core[kc].1) || !same(java[kj].1, core[kc].1) {
        return false;
    }
    let rest_same = java.len() - kj == core.len() - kc
        && java[kj + 1..]
            .iter()
            .zip(&core[kc + 1..])
            .all(|(&(_, a), &(_, b))| same(a, b));
    if !rest_same {
        return false;
    }
    let jp = parts(j);
    let (jt, ct) = (lines(java, i, kj, true), lines(core, i, kc, true));
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
    let paired = |a: &str, b: &str| {
        if is_request(a) || is_request(b) {
            return (lookup(a) && a == b) || (stale_add(a) && ends_abort(b));
        }
        if lookup(a) || lookup(b) {
            return a == b;
        }
        field(a, "api") == Some("add_partitions")
            && field(b, "api") == Some("end_txn")
            && codes(b).len() == 1
            && codes(a).contains(&codes(b)[0])
    };
    jt.len() == ct.len()
        && (0..jt.len()).all(|k| {
            paired(jt[k], ct[k]) || super::txn_java_keeps_asking::bump_pair(&jt, &ct, k, j)
        })
        && lines(java, i, kj, false) == lines(core, i, kc, false)
}
