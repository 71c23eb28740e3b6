//! Red-team tests of the session's application half: close(timeout) semantics, the
//! backlog under close and abort, and every command completing exactly once.

use std::time::Duration;

use crate::pair::{Cluster, Pair, Verdict};
use kacrab_driver::{Completion, ProduceError};
use kafka_protocol::messages::ApiKey;

const MS: Duration = Duration::from_millis(1);

/// `buffer.memory` that holds one record of these tests (a value padded with [`PAD`])
/// and not two: a record larger than all of `buffer.memory` is refused as too large
/// (Java's `KafkaProducer.ensureValidRecordSize`), so a buffer too small for every
/// record can no longer stand for "full after one".
const ONE_RECORD: &str = "200";
/// Pads a value to some 100 bytes: one such record fits in [`ONE_RECORD`], two do not.
const PAD: &str = "----------------------------------------------------------------------------------------------------";

/// A session whose Produce requests are never answered, with a buffer so small that
/// the second send waits in the backlog, and a long `max.block.ms`.
fn stuck_with_backlog() -> (Pair, Vec<kacrab_driver::SendId>) {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("buffer.memory", ONE_RECORD),
            ("max.block.ms", "60000"),
            ("delivery.timeout.ms", "120000"),
            ("request.timeout.ms", "30000"),
        ],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let mut ids = vec![p.send("t", 0, &format!("r0{PAD}"))];
    p.run_for(50 * MS);
    assert_eq!(p.cluster.count(ApiKey::Produce), 1, "r0 is on the wire");
    ids.extend((1..3).map(|i| p.send("t", 0, &format!("r{i}{PAD}"))));
    assert!(
        p.session.oldest_blocked_send().is_some(),
        "a send waits for buffer.memory"
    );
    (p, ids)
}

/// Java's `close(Duration)` bounds the call by its timeout from the moment it is
/// called: sends still waiting for `buffer.memory` do not extend it to their
/// `max.block.ms`. The close completes by its timeout, and every send has an outcome.
#[test]
fn close_with_a_timeout_behind_blocked_sends_completes_by_its_timeout() {
    let (mut p, ids) = stuck_with_backlog();
    let start = p.now;
    let close = p.close(Some(100 * MS));
    assert!(p.run_until(Duration::from_secs(200), |p| p.op(close).is_some()));
    let (at, _) = p.op(close).unwrap();
    assert!(
        at.saturating_duration_since(start) <= 200 * MS,
        "close(100ms) completed after {:?}",
        at.saturating_duration_since(start)
    );
    for id in ids {
        assert!(p.outcome(id).is_some(), "{id:?} has no outcome");
    }
}

/// A second close with a shorter timeout shortens the first, even while the first
/// still waits in the backlog.
#[test]
fn a_shorter_second_close_shortens_a_close_still_in_the_backlog() {
    let (mut p, _ids) = stuck_with_backlog();
    let start = p.now;
    let first = p.close(None);
    let second = p.close(Some(100 * MS));
    assert!(p.run_until(Duration::from_secs(300), |p| p.op(second).is_some()));
    let (at, _) = p.op(second).unwrap();
    assert!(
        at.saturating_duration_since(start) <= 200 * MS,
        "close(100ms) completed after {:?}",
        at.saturating_duration_since(start)
    );
    assert!(p.op(first).is_some());
}

/// abort() with sends in the backlog: each gets exactly one outcome, failed and not
/// possibly written (they never entered the producer); the one on the wire is possibly
/// written; a flush and a close queued behind them complete.
#[test]
fn abort_with_a_backlog_completes_every_command_once() {
    let (mut p, ids) = stuck_with_backlog();
    let flush = p.flush();
    let close = p.close(None);
    p.session.abort(p.now);
    p.pump();
    assert!(p.run_until(Duration::from_secs(1), |p| p.op(close).is_some()));
    assert!(p.op(flush).is_some());
    match p.outcome(ids[0]) {
        Some(Err(ProduceError::Delivery {
            possibly_written: true,
            ..
        })) => {}
        other => panic!("the record on the wire: {other:?}"),
    }
    for id in &ids[1..] {
        assert!(
            matches!(p.outcome(*id), Some(Err(_))),
            "{id:?}: {:?}",
            p.outcome(*id)
        );
    }
    assert!(p.session.is_finished());
    let late = p.send("t", 0, "late");
    assert!(matches!(p.outcome(late), Some(Err(ProduceError::Send(_)))));
    let _ = Completion::Closed { op: close };
}

/// An init_transactions the coordinator never answers, then close(timeout): when the
/// timeout passes the operation completes (with an error), and so does the close.
#[test]
fn close_with_a_timeout_completes_a_pending_init_transactions() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("transactional.id", "tx"), ("max.block.ms", "60000")],
    );
    p.hook(|inc, _| {
        (inc.api == ApiKey::FindCoordinator || inc.api == ApiKey::InitProducerId)
            .then_some(Verdict::Ignore)
    });
    let init = p.session.init_transactions(p.now);
    p.run_for(50 * MS);
    assert!(p.op(init).is_none());
    let start = p.now;
    let close = p.close(Some(100 * MS));
    assert!(p.run_until(Duration::from_secs(5), |p| p.op(close).is_some()));
    assert!(
        p.since(start) <= 200 * MS,
        "close took {:?}",
        p.since(start)
    );
    assert!(
        matches!(
            p.op(init),
            Some((_, Completion::Transaction { result: Err(_), .. }))
        ),
        "{:?}",
        p.op(init)
    );
    assert!(p.session.is_finished());
}

/// A lookup of a topic no broker knows, then close: the close completes, and the lookup
/// is answered (no count) rather than left without a completion.
#[test]
fn a_lookup_pending_at_close_is_answered() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("max.block.ms", "60000")],
    );
    let lookup = p.partition_count("missing");
    p.run_for(50 * MS);
    assert!(p.op(lookup).is_none());
    let close = p.close(None);
    assert!(p.run_until(Duration::from_secs(5), |p| p.op(close).is_some()));
    assert!(
        matches!(
            p.op(lookup),
            Some((_, Completion::PartitionCount { count: None, .. }))
        ),
        "{:?}",
        p.op(lookup)
    );
    let after = p.partition_count("t");
    assert!(
        p.op(after).is_some(),
        "a lookup after finishing is answered"
    );
}

/// A commit waiting in the backlog when abort() arrives completes once, with an error;
/// nothing of the transaction is committed.
#[test]
fn abort_with_a_commit_in_the_backlog_fails_it_once() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("transactional.id", "tx"),
            ("buffer.memory", ONE_RECORD),
            ("max.block.ms", "60000"),
        ],
    );
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(init).is_some()));
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(p.op(begin).is_some());
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let ids: Vec<_> = (0..3)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    let commit = p.session.commit_transaction(p.now);
    p.pump();
    assert!(p.op(commit).is_none());
    p.session.abort(p.now);
    p.pump();
    p.settle(Duration::from_secs(5));
    assert!(matches!(
        p.op(commit),
        Some((_, Completion::Transaction { result: Err(_), .. }))
    ));
    for id in ids {
        assert!(matches!(p.outcome(id), Some(Err(_))), "{id:?}");
    }
    assert!(
        p.cluster.end_txns.iter().all(|c| !c),
        "{:?}",
        p.cluster.end_txns
    );
    assert!(p.session.is_finished());
}

/// A send of an open transaction that fails waiting for `buffer.memory`
/// (`max.block.ms`) never reaches the log, so the transaction can not commit: Java's
/// `KafkaProducer.doSend` hands the `BufferExhaustedException` (an `ApiException`) to
/// `TransactionManager.maybeTransitionToErrorState`, which makes the transaction
/// abortable. A commit called after it fails and commits nothing; the transaction can
/// then be aborted.
#[test]
fn a_transactional_send_that_fails_for_buffer_memory_makes_the_commit_fail() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("transactional.id", "tx"),
            ("buffer.memory", ONE_RECORD),
            ("max.block.ms", "100"),
        ],
    );
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(init).is_some()));
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(p.op(begin).is_some());
    // The first Produce is answered late, so the sends behind it time out.
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed))
            .then_some(Verdict::Delay(Duration::from_millis(500)))
    });
    let ids: Vec<_> = (0..3)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    p.run_for(300 * MS);
    assert!(
        matches!(p.outcome(ids[2]), Some(Err(ProduceError::Send(_)))),
        "{:?}",
        p.outcome(ids[2])
    );
    let commit = p.session.commit_transaction(p.now);
    p.pump();
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(commit).is_some()));
    assert!(
        matches!(
            p.op(commit),
            Some((_, Completion::Transaction { result: Err(_), .. }))
        ),
        "the commit of a transaction that lost a record: {:?}",
        p.op(commit)
    );
    assert!(
        !p.cluster.end_txns.contains(&true),
        "committed: {:?}",
        p.cluster.end_txns
    );
    let abort = p.session.abort_transaction(p.now);
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(abort).is_some()));
    assert!(
        matches!(
            p.op(abort),
            Some((_, Completion::Transaction { result: Ok(()), .. }))
        ),
        "{:?}",
        p.op(abort)
    );
}

/// close(timeout) whose deadline falls at the same instant as the blocked sends'
/// `max.block.ms`: one `handle_timeout` acts on both (the harness checks the timer
/// rule), every send gets one outcome, and the close completes at that instant.
#[test]
fn a_close_deadline_equal_to_max_block_fires_once_with_the_sends() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("buffer.memory", ONE_RECORD), ("max.block.ms", "200")],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let ids: Vec<_> = (0..3)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    let start = p.now;
    let close = p.close(Some(200 * MS));
    assert!(p.run_until(Duration::from_secs(5), |p| p.op(close).is_some()));
    assert!(
        p.since(start) <= 201 * MS,
        "close took {:?}",
        p.since(start)
    );
    for id in ids {
        assert!(p.outcome(id).is_some(), "{id:?}");
    }
    assert!(p.session.is_finished());
}

/// After a transactional send failed for `buffer.memory`, send_offsets_to_transaction
/// is refused too (the transaction may only be aborted), and after the abort a new
/// transaction commits.
#[test]
fn after_a_lost_transactional_send_only_abort_is_accepted_then_a_new_transaction_commits() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("transactional.id", "tx"),
            ("buffer.memory", ONE_RECORD),
            ("max.block.ms", "100"),
        ],
    );
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(init).is_some()));
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(p.op(begin).is_some());
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed))
            .then_some(Verdict::Delay(Duration::from_millis(500)))
    });
    let _ids: Vec<_> = (0..3)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    p.run_for(800 * MS);
    let offsets = p.session.send_offsets_to_transaction(
        Vec::new(),
        kacrab_idempotence::ConsumerGroupMetadata::new("g"),
        p.now,
    );
    p.pump();
    assert!(
        matches!(
            p.op(offsets),
            Some((_, Completion::Transaction { result: Err(_), .. }))
        ),
        "{:?}",
        p.op(offsets)
    );
    let abort = p.session.abort_transaction(p.now);
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(abort).is_some()));
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(p.op(begin).is_some());
    let last = p.send("t", 0, "again");
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(Duration::from_secs(10), |p| p.op(commit).is_some()));
    assert!(
        matches!(
            p.op(commit),
            Some((_, Completion::Transaction { result: Ok(()), .. }))
        ),
        "{:?}",
        p.op(commit)
    );
    assert!(p.outcome(last).is_some_and(Result::is_ok));
}
