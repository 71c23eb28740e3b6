//! The session's transactional commands against model brokers: ordering behind the
//! backlog, joined calls, close with an open transaction.

use std::time::Duration;

use crate::pair::{Cluster, Pair, Verdict};
use kacrab_driver::Completion;
use kafka_protocol::messages::ApiKey;

const SECOND: Duration = Duration::from_secs(1);

/// `buffer.memory` that holds one record of these tests (a value padded with [`PAD`])
/// and not two: a record larger than all of `buffer.memory` is refused as too large
/// (Java's `KafkaProducer.ensureValidRecordSize`), so a buffer too small for every
/// record can no longer stand for "full after one".
const ONE_RECORD: &str = "200";
/// Pads a value to some 100 bytes: one such record fits in [`ONE_RECORD`], two do not.
const PAD: &str = "----------------------------------------------------------------------------------------------------";

fn ok(p: &Pair, op: kacrab_driver::OpId) -> bool {
    matches!(
        p.op(op),
        Some((_, Completion::Transaction { result: Ok(()), .. }))
    )
}

fn initialized(props: &[(&str, &str)]) -> Pair {
    let mut all = vec![("transactional.id", "tx")];
    all.extend_from_slice(props);
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &all);
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    assert!(ok(&p, init), "{:?}", p.op(init));
    p
}

/// A commit called while sends wait for `buffer.memory` waits behind them and covers
/// them: it completes after every one of them is acknowledged, and commits.
#[test]
fn a_commit_behind_sends_waiting_for_buffer_memory_covers_them() {
    let mut p = initialized(&[("buffer.memory", ONE_RECORD), ("max.block.ms", "5000")]);
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(ok(&p, begin));
    let ids: Vec<_> = (0..4)
        .map(|i| p.send("t", 0, &format!("r{i}{PAD}")))
        .collect();
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    assert!(ok(&p, commit), "{:?}", p.op(commit));
    let committed = p
        .position(|c| matches!(c, Completion::Transaction { op, .. } if *op == commit))
        .unwrap();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).offset, Some(i as i64));
        let done = p
            .position(|c| matches!(c, Completion::Record { id: r, .. } if r == id))
            .unwrap();
        assert!(done < committed, "{id:?} after the commit");
    }
    assert_eq!(p.cluster.end_txns, [true]);
    let values: Vec<String> = (0..4).map(|i| format!("r{i}{PAD}")).collect();
    assert_eq!(p.cluster.values("t", 0), values);
}

/// init_transactions called again while the first is pending joins it: both complete,
/// with one producer id.
#[test]
fn a_second_init_transactions_while_pending_joins_the_first() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("transactional.id", "tx")],
    );
    let first = p.session.init_transactions(p.now);
    let second = p.session.init_transactions(p.now);
    p.pump();
    assert_ne!(first, second);
    assert!(p.run_until(10 * SECOND, |p| p.op(first).is_some()
        && p.op(second).is_some()));
    assert!(ok(&p, first) && ok(&p, second));
    assert_eq!(p.cluster.count(ApiKey::InitProducerId), 1);
}

/// close() with a transaction open aborts it (EndTxn with `committed: false`) and
/// finishes; the record sent in it gets its outcome first.
#[test]
fn close_with_an_open_transaction_aborts_it() {
    let mut p = initialized(&[]);
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(ok(&p, begin));
    let a = p.send("t", 0, "a");
    assert!(p.run_until(10 * SECOND, |p| p.outcome(a).is_some()));
    let close = p.close(None);
    assert!(p.run_until(10 * SECOND, |p| p.op(close).is_some()));
    assert!(p.session.is_finished());
    assert_eq!(p.cluster.end_txns, [false]);
    p.assert_every_ticket_ended();
}

/// The EndTxn answer is lost with its connection: the session retries it on a new
/// connection and the commit completes once.
#[test]
fn a_commit_whose_answer_is_lost_with_its_connection_completes_once() {
    let mut p = initialized(&[]);
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(ok(&p, begin));
    let a = p.send("t", 0, "a");
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::EndTxn && std::mem::take(&mut armed)).then_some(Verdict::ApplyThenReset)
    });
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    assert!(ok(&p, commit), "{:?}", p.op(commit));
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.cluster.count(ApiKey::EndTxn), 2);
}

/// send_offsets_to_transaction reaches the group coordinator: under TV1 through
/// AddOffsetsToTxn then TxnOffsetCommit (at v4 at most), under TV2 (KIP-890)
/// TxnOffsetCommit v5 alone; the commit then completes.
#[test]
fn offsets_go_to_the_group_coordinator_the_tv1_or_tv2_way() {
    use kacrab_idempotence::{ConsumerGroupMetadata, OffsetToCommit, TopicPartition};
    for tv2 in [false, true] {
        let mut cluster = Cluster::new(2).with_topic("t", 1).with_topic("in", 1);
        cluster.coordinator = 1;
        if tv2 {
            for b in cluster.brokers.values_mut() {
                b.transaction_version = Some(2);
                b.features_epoch = 1;
            }
        }
        let mut p = Pair::new(cluster, &[("transactional.id", "tx")]);
        let init = p.session.init_transactions(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
        assert!(ok(&p, init), "{:?}", p.op(init));
        let begin = p.session.begin_transaction(p.now);
        p.pump();
        assert!(ok(&p, begin));
        let a = p.send("t", 0, "a");
        let offsets = vec![OffsetToCommit::new(
            TopicPartition {
                topic: "in".into(),
                partition: 0,
            },
            42,
        )];
        let group = ConsumerGroupMetadata::new("g");
        let send_offsets = p.session.send_offsets_to_transaction(offsets, group, p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(send_offsets).is_some()));
        assert!(ok(&p, send_offsets), "tv2 {tv2}: {:?}", p.op(send_offsets));
        let commit = p.session.commit_transaction(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
        assert!(ok(&p, commit), "tv2 {tv2}: {:?}", p.op(commit));
        assert_eq!(p.acked(a).offset, Some(0));
        assert_eq!(p.cluster.committed_offsets, [("in".to_owned(), 0, 42)]);
        let commits: Vec<_> = p
            .cluster
            .seen
            .iter()
            .filter(|s| s.api == ApiKey::TxnOffsetCommit)
            .collect();
        assert_eq!(commits.len(), 1);
        assert_eq!(commits[0].node, 1, "to the group coordinator");
        if tv2 {
            assert!(p.cluster.offset_groups.is_empty());
            assert_eq!(commits[0].version, 5);
        } else {
            assert_eq!(p.cluster.offset_groups, ["g"]);
            assert!(commits[0].version <= 4);
        }
    }
}

/// The consume-transform-produce loop whose poll returned nothing, through the session:
/// `send_offsets_to_transaction` with no offsets completes with nothing sent (Java's
/// `KafkaProducer.sendOffsetsToTransaction` skips an empty map), and the commit of that
/// empty transaction completes without EndTxn (`TransactionManager.nextRequest`,
/// KAFKA-18401); the next transaction then runs as usual. Under TV2 the core sent an
/// empty TxnOffsetCommit v5 and an EndTxn(COMMIT) that a real coordinator refuses, for a
/// transaction it never saw. Failed before the fix (one TxnOffsetCommit under TV2, an
/// AddOffsetsToTxn under TV1).
#[test]
fn empty_offsets_and_an_empty_commit_send_nothing() {
    use kacrab_idempotence::ConsumerGroupMetadata;
    for tv2 in [false, true] {
        let mut cluster = Cluster::new(2).with_topic("t", 1);
        cluster.coordinator = 1;
        if tv2 {
            for b in cluster.brokers.values_mut() {
                b.transaction_version = Some(2);
                b.features_epoch = 1;
            }
        }
        let mut p = Pair::new(cluster, &[("transactional.id", "tx")]);
        let init = p.session.init_transactions(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
        assert!(ok(&p, init), "{:?}", p.op(init));
        let begin = p.session.begin_transaction(p.now);
        p.pump();
        assert!(ok(&p, begin));
        let group = ConsumerGroupMetadata::new("g").with_member(2, "m");
        let send_offsets = p
            .session
            .send_offsets_to_transaction(Vec::new(), group, p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(send_offsets).is_some()));
        assert!(ok(&p, send_offsets), "tv2 {tv2}: {:?}", p.op(send_offsets));
        let commit = p.session.commit_transaction(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
        assert!(ok(&p, commit), "tv2 {tv2}: {:?}", p.op(commit));
        for api in [
            ApiKey::AddOffsetsToTxn,
            ApiKey::TxnOffsetCommit,
            ApiKey::EndTxn,
        ] {
            assert_eq!(p.cluster.count(api), 0, "tv2 {tv2}: {api:?} sent");
        }
        // The producer goes on: a transaction with a record ends with EndTxn.
        let begin = p.session.begin_transaction(p.now);
        p.pump();
        assert!(ok(&p, begin));
        let a = p.send("t", 0, "a");
        let commit = p.session.commit_transaction(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
        assert!(ok(&p, commit), "tv2 {tv2}: {:?}", p.op(commit));
        assert_eq!(p.acked(a).offset, Some(0));
        assert_eq!(p.cluster.count(ApiKey::EndTxn), 1);
    }
}

/// Brokers learn a feature change at different times: the partition's leader still
/// reports no finalized features while the coordinator reports `transaction.version` 2
/// at a newer epoch. The newest view wins whichever connection carried it (Java's
/// `ApiVersions.maxFinalizedFeaturesEpoch`): the transaction runs the TV2 way, its
/// Produce at v12 on the lagging leader.
#[test]
fn a_lagging_brokers_older_features_view_does_not_lower_the_transaction_version() {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.move_leader("t", 0, 1);
    cluster.coordinator = 0;
    let b0 = cluster.brokers.get_mut(&0).unwrap();
    b0.transaction_version = Some(2);
    b0.features_epoch = 5;
    let mut p = Pair::new(cluster, &[("transactional.id", "tx")]);
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    assert!(ok(&p, init));
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    assert!(ok(&p, begin));
    let a = p.send("t", 0, "a");
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    assert!(ok(&p, commit), "{:?}", p.op(commit));
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.cluster.count(ApiKey::AddPartitionsToTxn), 0);
    let produce: Vec<_> = p
        .cluster
        .seen
        .iter()
        .filter(|s| s.api == ApiKey::Produce)
        .map(|s| (s.node, s.version))
        .collect();
    assert_eq!(produce, [(1, 12)]);
}
