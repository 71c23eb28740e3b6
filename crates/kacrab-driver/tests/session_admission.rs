//! Sends refused inside a transaction, through the session against model brokers.
//!
//! Java's `KafkaProducer.doSend` passes every `ApiException` a send fails with to
//! `TransactionManager.maybeTransitionToErrorState`: the transaction lost a record the
//! application meant for it, so it may only be aborted (the commit fails, nothing of it
//! is committed). It rethrows the other refusals (`IllegalStateException`,
//! `IllegalArgumentException`) before the transaction is touched. One test per refusal
//! path of the session and the core.

use std::time::Duration;

use crate::pair::{Cluster, Pair, Verdict};
use bytes::Bytes;
use kacrab_driver::{
    Completion, Partitioner, ProduceError, ProducerRecord, SendId, TopicPartitions,
};
use kacrab_idempotence::{KafkaError, SendError, TxnError};
use kafka_protocol::messages::ApiKey;

const SECOND: Duration = Duration::from_secs(1);

/// A transactional session on topic `t` (2 partitions) with `props`, initialized, its
/// transaction open, and one record sent in it that the broker acknowledges.
fn in_transaction(cluster: Cluster, props: &[(&str, &str)]) -> (Pair, SendId) {
    let mut all = vec![("transactional.id", "tx"), ("max.block.ms", "200")];
    all.extend_from_slice(props);
    let mut p = Pair::new(cluster, &all);
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(matches!(
        p.op(begin),
        Some((_, Completion::Transaction { result: Ok(()), .. }))
    ));
    let kept = p.send("t", 0, "kept");
    assert!(p.run_until(10 * SECOND, |p| p.outcome(kept).is_some()));
    assert!(p.outcome(kept).is_some_and(Result::is_ok));
    (p, kept)
}

fn cluster() -> Cluster {
    Cluster::new(1).with_topic("t", 2)
}

/// Waits for `refused`'s outcome (a refusal), then commits: returns the refusal and the
/// commit's result.
fn refuse_then_commit(p: &mut Pair, refused: SendId) -> (ProduceError, Result<(), TxnError>) {
    assert!(p.run_until(10 * SECOND, |p| p.outcome(refused).is_some()));
    let error = match p.outcome(refused) {
        Some(Err(e)) => e.clone(),
        other => panic!("not refused: {other:?}"),
    };
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    let result = match p.op(commit) {
        Some((_, Completion::Transaction { result, .. })) => result.clone(),
        other => panic!("{other:?}"),
    };
    (error, result)
}

/// The commit failed as abortable with `cause`, nothing was committed, and the abort
/// ends the transaction.
fn only_abort_remains(p: &mut Pair, result: Result<(), TxnError>, cause: KafkaError) {
    assert_eq!(result, Err(TxnError::Abortable(cause)));
    assert!(
        !p.cluster.end_txns.contains(&true),
        "committed: {:?}",
        p.cluster.end_txns
    );
    let abort = p.session.abort_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(abort).is_some()));
    assert!(
        matches!(
            p.op(abort),
            Some((_, Completion::Transaction { result: Ok(()), .. }))
        ),
        "{:?}",
        p.op(abort)
    );
    assert_eq!(p.cluster.end_txns, [false]);
}

/// The commit went through with the kept record.
fn committed(p: &Pair, result: Result<(), TxnError>) {
    assert_eq!(result, Ok(()));
    assert_eq!(p.cluster.end_txns, [true]);
}

/// A record larger than `max.request.size`: Java's `ensureValidRecordSize` throws
/// `RecordTooLargeException`, an `ApiException`, so the transaction may only abort.
/// Before, the commit succeeded without the record.
#[test]
fn a_record_over_max_request_size_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[("max.request.size", "2000")]);
    let big = p.send_record(ProducerRecord::new("t", 1, Bytes::from(vec![1; 4_000])));
    let (error, result) = refuse_then_commit(&mut p, big);
    assert!(
        matches!(error, ProduceError::Send(SendError::RecordTooLarge { .. })),
        "{error:?}"
    );
    only_abort_remains(&mut p, result, KafkaError::MessageTooLarge);
}

/// A record larger than all of `buffer.memory` (the second check of Java's
/// `ensureValidRecordSize`, the same exception). Before, it was accepted into the
/// empty buffer.
#[test]
fn a_record_over_buffer_memory_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[("buffer.memory", "2000")]);
    let big = p.send_record(ProducerRecord::new("t", 1, Bytes::from(vec![1; 4_000])));
    let (error, result) = refuse_then_commit(&mut p, big);
    assert!(
        matches!(error, ProduceError::Send(SendError::RecordTooLarge { .. })),
        "{error:?}"
    );
    only_abort_remains(&mut p, result, KafkaError::MessageTooLarge);
}

/// `buffer.memory` full for `max.block.ms`: Java's `BufferExhaustedException`, a
/// `TimeoutException`.
#[test]
fn buffer_memory_full_past_max_block_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[("buffer.memory", "200")]);
    // The broker holds the first produce: the buffer stays full behind it.
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed))
            .then_some(Verdict::Delay(2 * SECOND))
    });
    let _held = p.send("t", 1, &"h".repeat(100));
    let blocked = p.send("t", 1, &"b".repeat(100));
    let (error, result) = refuse_then_commit(&mut p, blocked);
    assert!(
        matches!(error, ProduceError::Send(SendError::BufferFull { .. })),
        "{error:?}"
    );
    only_abort_remains(&mut p, result, KafkaError::RequestTimedOut);
}

/// A topic no metadata names within `max.block.ms`: Java's `waitOnMetadata` throws
/// `TimeoutException`.
#[test]
fn a_topic_not_in_metadata_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[]);
    let lost = p.send_record(ProducerRecord::unkeyed("nowhere", "x"));
    let (error, result) = refuse_then_commit(&mut p, lost);
    assert!(matches!(error, ProduceError::Topic { .. }), "{error:?}");
    only_abort_remains(&mut p, result, KafkaError::RequestTimedOut);
}

/// A partition beyond the topic's partition count within `max.block.ms`: Java's
/// `waitOnMetadata` throws `TimeoutException`.
#[test]
fn a_partition_not_in_metadata_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[]);
    let lost = p.send_record(ProducerRecord::new("t", 5, "x"));
    let (error, result) = refuse_then_commit(&mut p, lost);
    assert!(matches!(error, ProduceError::Topic { .. }), "{error:?}");
    only_abort_remains(&mut p, result, KafkaError::RequestTimedOut);
}

/// A topic the broker refuses (TOPIC_AUTHORIZATION_FAILED): Java's `waitOnMetadata`
/// throws `TopicAuthorizationException`, an `ApiException`; the transaction aborts with
/// it.
#[test]
fn an_unauthorized_topic_fails_the_commit() {
    let mut cluster = cluster();
    cluster
        .metadata_errors
        .insert("secret".into(), KafkaError::TopicAuthorizationFailed.code());
    let (mut p, _) = in_transaction(cluster, &[]);
    let lost = p.send_record(ProducerRecord::unkeyed("secret", "x"));
    let (error, result) = refuse_then_commit(&mut p, lost);
    assert!(matches!(error, ProduceError::Topic { .. }), "{error:?}");
    only_abort_remains(&mut p, result, KafkaError::TopicAuthorizationFailed);
}

/// A topic name Kafka refuses: Java's metadata answers INVALID_TOPIC_EXCEPTION
/// (`InvalidTopicException`, an `ApiException`); the session refuses it before asking.
#[test]
fn an_invalid_topic_name_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[]);
    let lost = p.send_record(ProducerRecord::unkeyed("no spaces", "x"));
    let (error, result) = refuse_then_commit(&mut p, lost);
    assert!(matches!(error, ProduceError::Topic { .. }), "{error:?}");
    only_abort_remains(&mut p, result, KafkaError::InvalidTopicException);
}

#[derive(Debug)]
struct Beyond;

impl Partitioner for Beyond {
    fn partition(
        &mut self,
        _topic: &str,
        _key: Option<&[u8]>,
        _value: Option<&[u8]>,
        partitions: TopicPartitions<'_>,
    ) -> Option<i32> {
        Some(partitions.count())
    }
}

/// The application's partitioner names a partition the topic does not have. Java's
/// `KafkaProducer.partition` checks only for a negative one; the record would wait in
/// the accumulator and expire (`TimeoutException` through `Sender`'s failed batch, which
/// `maybeTransitionToErrorState` makes abortable too). The session refuses it at once,
/// with the same consequence for the transaction.
#[test]
fn a_partitioner_choosing_a_missing_partition_fails_the_commit() {
    let (mut p, _) = in_transaction(cluster(), &[]);
    p.session.set_partitioner(Box::new(Beyond));
    let lost = p.send_record(ProducerRecord::unkeyed("t", "x"));
    let (error, result) = refuse_then_commit(&mut p, lost);
    assert!(matches!(error, ProduceError::Topic { .. }), "{error:?}");
    only_abort_remains(&mut p, result, KafkaError::UnknownTopicOrPartition);
}

/// A negative partition is the caller's error: Java's `ProducerRecord` throws
/// `IllegalArgumentException`, which `doSend` never sees, so the transaction goes on
/// and commits what it holds.
#[test]
fn a_negative_partition_leaves_the_transaction_committable() {
    let (mut p, kept) = in_transaction(cluster(), &[]);
    let refused = p.send_record(ProducerRecord::new("t", -1, "x"));
    let (error, result) = refuse_then_commit(&mut p, refused);
    assert!(
        matches!(error, ProduceError::Send(SendError::InvalidPartition(-1))),
        "{error:?}"
    );
    committed(&p, result);
    assert!(p.outcome(kept).is_some_and(Result::is_ok));
}

/// A send when no transaction is open is refused and changes nothing: Java's
/// `TransactionManager.maybeAddPartition` throws `IllegalStateException`, rethrown by
/// `doSend` untouched. The next transaction commits.
#[test]
fn a_send_outside_a_transaction_changes_nothing() {
    let mut p = Pair::new(cluster(), &[("transactional.id", "tx")]);
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    let early = p.send("t", 0, "early");
    assert!(p.run_until(10 * SECOND, |p| p.outcome(early).is_some()));
    assert!(
        matches!(
            p.outcome(early),
            Some(Err(ProduceError::Send(SendError::NotInTransaction)))
        ),
        "{:?}",
        p.outcome(early)
    );
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(matches!(
        p.op(begin),
        Some((_, Completion::Transaction { result: Ok(()), .. }))
    ));
    let kept = p.send("t", 0, "kept");
    let (_, result) = {
        let commit = p.session.commit_transaction(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
        match p.op(commit) {
            Some((_, Completion::Transaction { result, .. })) => ((), result.clone()),
            other => panic!("{other:?}"),
        }
    };
    committed(&p, result);
    assert!(p.outcome(kept).is_some_and(Result::is_ok));
}
