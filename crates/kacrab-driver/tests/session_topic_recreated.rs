//! A topic deleted and created again (a new topic id, KIP-516) while the producer runs:
//! the session carries the id from Metadata v10+ into the core, which takes the new
//! topic's leadership even though its leader epochs restarted below the last ones seen
//! (Java's `Metadata.updateLatestMetadata`). Records sent after the recreation land in
//! the new topic's log, once each; nothing of the old log is mixed in.

use std::time::Duration;

use crate::pair::{Cluster, Pair};
use kafka_protocol::messages::ApiKey;

#[test]
fn records_after_a_topic_is_recreated_reach_the_new_topics_leader() {
    let mut p = Pair::new(
        Cluster::new(2).with_topic("t", 1),
        &[
            ("metadata.max.age.ms", "1000"),
            ("delivery.timeout.ms", "40000"),
        ],
    );
    let a = p.send("t", 0, "a");
    p.settle(Duration::from_secs(5));
    assert!(matches!(p.outcome(a), Some(Ok(_))));
    // Three leader moves: the session has seen epoch 3, led by node 1.
    for to in [1, 0, 1] {
        p.cluster.move_leader("t", 0, to);
        let id = p.send("t", 0, "moved");
        p.settle(Duration::from_secs(10));
        assert!(matches!(p.outcome(id), Some(Ok(_))), "{:?}", p.outcome(id));
    }
    assert_eq!(p.cluster.partition("t", 0).leader_epoch, 3);
    // Deleted and created again, led by node 0 at epoch 0: node 1 no longer leads it.
    p.cluster.recreate_topic("t", 1, 0);
    // A periodic refresh (metadata.max.age.ms) brings the new id and epoch 0: the
    // session routes to node 0 at once, without a wasted NOT_LEADER_OR_FOLLOWER round
    // trip to node 1 (the stale leader the last epoch 3 named).
    p.run_for(Duration::from_secs(3));
    let seen = p.cluster.seen.len();
    let c = p.send("t", 0, "c");
    p.settle(Duration::from_secs(15));
    let md = p.acked(c).clone();
    assert_eq!(md.offset, Some(0), "the first record of the new log");
    assert_eq!(p.cluster.values("t", 0), ["c"], "only records sent after");
    let produce_nodes: Vec<i32> = p.cluster.seen[seen..]
        .iter()
        .filter(|s| s.api == ApiKey::Produce)
        .map(|s| s.node)
        .collect();
    assert_eq!(produce_nodes, [0], "straight to the new topic's leader");
    p.session.assert_invariants();
}
