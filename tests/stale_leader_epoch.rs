//! Leadership from a Metadata answer older than what the core last saw is stale
//! (Java's `Metadata.updateLatestMetadata`: a leader epoch below the last one seen for
//! the same topic id keeps the cached partition and ignores the answer). The core
//! forgets a partition's leader after a wire failure or a leadership error, so that the
//! retry waits for fresh metadata; the epoch it last saw stays, and an older answer
//! must not bring back a leader the cluster already moved away from.

mod support;

use kacrab_idempotence::*;
use support::*;

fn leadership(node: i32, epoch: i32) -> Metadata {
    Metadata::new(vec![PartitionMetadata::new(
        tp(0),
        Some(NodeId(node)),
        epoch,
    )])
}

/// After NOT_LEADER_OR_FOLLOWER (no KIP-951 hint) forgot the leader of epoch 5, an
/// answer at epoch 3 (a broker whose metadata cache lags) is ignored, as Java's
/// `Metadata.updateLatestMetadata` ignores it: the retry does not go to the epoch-3
/// leader, and waits for an answer at epoch 5 or later.
#[test]
fn an_older_leader_epoch_does_not_bring_back_a_forgotten_leader() {
    let mut h = Harness::new(config().build().unwrap());
    h.leaders.push((0, 1, 5));
    h.warm(0);
    h.answer_metadata = false;
    let record = h.send(0, "a");
    let r = h.outstanding.back().expect("sent").clone();
    assert_eq!(r.node, NodeId(1));
    h.respond(r.id, &[(0, KafkaError::NotLeaderOrFollower, -1)]);
    let now = h.now;
    // A lagging broker still names the leader of epoch 3.
    let _ = h.p.handle_metadata(None, &leadership(2, 3), now);
    let sent = h.advance(200);
    assert!(
        sent.iter().all(|r| r.node != NodeId(2)),
        "the retry went to the stale leader of epoch 3: {sent:?}"
    );
    assert!(
        h.outstanding.is_empty(),
        "no leader known at epoch 5 or later"
    );
    // Fresh metadata: epoch 6, node 3.
    let _ = h.p.handle_metadata(None, &leadership(3, 6), h.now);
    let sent = h.advance(200);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].node, NodeId(3));
    h.respond(sent[0].id, &[(0, KafkaError::None, 1)]);
    assert_eq!(h.delivered(record), Some(Some(1)));
    assert_eq!(h.outcomes(record), 1);
}

/// The same after a lost connection forgot the leader.
#[test]
fn an_older_leader_epoch_after_a_lost_connection_is_ignored() {
    let mut h = Harness::new(config().build().unwrap());
    h.leaders.push((0, 1, 5));
    h.warm(0);
    h.answer_metadata = false;
    let record = h.send(0, "a");
    let r = h.outstanding.back().expect("sent").clone();
    h.fail(r.id, RequestFailure::Disconnected);
    let now = h.now;
    let _ = h.p.handle_metadata(None, &leadership(2, 4), now);
    let sent = h.advance(200);
    assert!(
        sent.is_empty(),
        "the retry went to the stale leader: {sent:?}"
    );
    // The same epoch again is not older: the leader of epoch 5 is taken back.
    let _ = h.p.handle_metadata(None, &leadership(1, 5), h.now);
    let sent = h.advance(200);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].node, NodeId(1));
    h.respond(sent[0].id, &[(0, KafkaError::None, 1)]);
    assert_eq!(h.outcomes(record), 1);
}
