//! A topic deleted and created again under the same name gets a new topic id (KIP-516)
//! and leader epochs that start again at 0. Java's `Metadata.updateLatestMetadata`
//! accepts a partition's metadata regardless of its leader epoch when the topic id
//! changed; without the id, an epoch lower than the one last seen is stale and ignored.
//! The partition's sequencing state is kept, as Java's `TransactionManager` keeps it:
//! a recreated partition has no state for the producer, and a Kafka leader accepts any
//! sequence from a producer it has no state for (`ProducerAppendInfo.checkSequence`).

mod support;

use kacrab_idempotence::*;
use support::*;

fn leadership(node: i32, epoch: i32, id: Option<u8>) -> Metadata {
    let pm = PartitionMetadata::new(tp(0), Some(NodeId(node)), epoch);
    Metadata::new(vec![match id {
        Some(b) => pm.with_topic_id(TopicId([b; 16])),
        None => pm,
    }])
}

/// Sends one record to partition 0; returns the node its Produce went to and its base
/// sequence, and acknowledges it.
fn send_and_ack(h: &mut Harness, value: &str, offset: i64) -> (NodeId, i32) {
    h.send(0, value);
    let r = h.outstanding.back().expect("sent").clone();
    let seq = wire(&r)[0].base_sequence;
    h.respond(r.id, &[(0, KafkaError::None, offset)]);
    (r.node, seq)
}

#[test]
fn a_new_topic_id_replaces_the_leader_whatever_its_epoch() {
    let mut h = Harness::new(config().build().unwrap());
    h.leaders.push((0, 1, 5));
    let now = h.now;
    h.p.handle_metadata(None, &leadership(1, 5, Some(0xa)), now)
        .unwrap();
    assert_eq!(send_and_ack(&mut h, "a", 0), (NodeId(1), 0));
    // Recreated: a new id, epoch 0, another leader.
    h.leaders.clear();
    h.leaders.push((0, 2, 0));
    h.p.handle_metadata(None, &leadership(2, 0, Some(0xb)), now)
        .unwrap();
    let (node, seq) = send_and_ack(&mut h, "b", 0);
    assert_eq!(node, NodeId(2), "the recreated topic's leader");
    assert_eq!(seq, 1, "sequences continue, as Java's");
    // Now at epoch 0 under the new id: epoch 3 of the same id is newer.
    h.p.handle_metadata(None, &leadership(3, 3, Some(0xb)), now)
        .unwrap();
    h.leaders.clear();
    h.leaders.push((0, 3, 3));
    assert_eq!(send_and_ack(&mut h, "c", 1).0, NodeId(3));
}

#[test]
fn the_same_topic_id_at_a_lower_epoch_is_stale() {
    let mut h = Harness::new(config().build().unwrap());
    h.leaders.push((0, 1, 5));
    let now = h.now;
    h.p.handle_metadata(None, &leadership(1, 5, Some(0xa)), now)
        .unwrap();
    h.p.handle_metadata(None, &leadership(2, 0, Some(0xa)), now)
        .unwrap();
    h.p.handle_metadata(None, &leadership(2, 0, None), now)
        .unwrap();
    assert_eq!(send_and_ack(&mut h, "a", 0).0, NodeId(1));
}

#[test]
fn a_partition_without_a_leader_epoch_is_taken_as_given_and_the_epoch_forgotten() {
    // Java's `Metadata.updateLatestMetadata`: metadata without a leader epoch (a broker
    // before Metadata v7) is applied as it is and drops the epoch last seen, so the next
    // answer that carries an epoch is newer whatever its value.
    let mut h = Harness::new(config().build().unwrap());
    h.leaders.push((0, 1, 5));
    let now = h.now;
    h.p.handle_metadata(None, &leadership(1, 5, None), now)
        .unwrap();
    assert_eq!(send_and_ack(&mut h, "a", 0).0, NodeId(1));
    h.leaders.clear();
    h.leaders.push((0, 2, -1));
    h.p.handle_metadata(None, &leadership(2, -1, None), now)
        .unwrap();
    assert_eq!(
        send_and_ack(&mut h, "b", 1).0,
        NodeId(2),
        "no epoch: as given"
    );
    h.leaders.clear();
    h.leaders.push((0, 3, 0));
    h.p.handle_metadata(None, &leadership(3, 0, None), now)
        .unwrap();
    assert_eq!(
        send_and_ack(&mut h, "c", 2).0,
        NodeId(3),
        "epoch 0 after none"
    );
}
