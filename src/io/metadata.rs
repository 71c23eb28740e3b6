//! What a Metadata answer says, as the core takes it: the brokers, each topic's
//! partitions and their leaders, and the topics the broker refused.

use alloc::string::String;
use alloc::vec::Vec;

use crate::error::KafkaError;
use crate::types::{NodeId, Topic, TopicId, TopicPartition};

/// A Metadata answer: the brokers, the partitions of each topic and their leaders, and
/// the topics the broker reported an error for.
///
/// The core routes batches by the partitions' leaders (and their leader epochs and
/// topic ids); the brokers and the partition counts are carried for the embedder, whose
/// connections and partitioner need them, so one conversion of the wire answer serves
/// both. Like Kafka's answer, it lists every partition of each topic it names without
/// error, so [`Metadata::partition_count`] is that topic's partition count.
///
/// Built with [`Metadata::new`] (or `default()`) and the `with_*` methods; the fields
/// stay public to read and to set, and new ones may come (the struct is
/// `#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Metadata {
    /// The brokers the answer lists (the core itself does not read them).
    pub brokers: Vec<BrokerMetadata>,
    /// Partitions and their leaders.
    pub partitions: Vec<PartitionMetadata>,
    /// Topics the broker reported an error for (unknown topic, not authorized).
    pub topic_errors: Vec<(Topic, KafkaError)>,
}

impl Metadata {
    /// An answer with these partitions and no topic errors.
    #[must_use]
    pub fn new(partitions: Vec<PartitionMetadata>) -> Self {
        Self {
            brokers: Vec::new(),
            partitions,
            topic_errors: Vec::new(),
        }
    }

    /// Adds one broker.
    #[must_use]
    pub fn with_broker(mut self, broker: BrokerMetadata) -> Self {
        self.brokers.push(broker);
        self
    }

    /// The broker with this node id, if the answer lists it.
    #[must_use]
    pub fn broker(&self, node: NodeId) -> Option<&BrokerMetadata> {
        self.brokers.iter().find(|b| b.node == node)
    }

    /// How many partitions `topic` has: the number the answer lists for it, when they
    /// are exactly `0..n` (Kafka lists every partition of a topic it names, leaderless
    /// ones included). `None` when the answer lists none of the topic's partitions or
    /// skips an index (an answer that cannot give the count; Java's partitioner then
    /// treats the topic as unknown, as the driver's does).
    #[must_use]
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        let mut indices: Vec<i32> = self
            .partitions
            .iter()
            .filter(|p| p.partition.topic.as_str() == topic)
            .map(|p| p.partition.partition)
            .collect();
        indices.sort_unstable();
        indices.dedup();
        let count = i32::try_from(indices.len()).ok()?;
        let complete = count > 0 && indices.iter().zip(0..).all(|(&i, n)| i == n);
        complete.then_some(count)
    }

    /// Adds one partition.
    #[must_use]
    pub fn with_partition(mut self, partition: PartitionMetadata) -> Self {
        self.partitions.push(partition);
        self
    }

    /// Sets the topics the broker reported an error for.
    #[must_use]
    pub fn with_topic_errors(mut self, topic_errors: Vec<(Topic, KafkaError)>) -> Self {
        self.topic_errors = topic_errors;
        self
    }

    /// Adds a topic the broker reported an error for.
    #[must_use]
    pub fn with_topic_error(mut self, topic: Topic, error: KafkaError) -> Self {
        self.topic_errors.push((topic, error));
        self
    }
}

/// One partition inside [`Metadata`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PartitionMetadata {
    /// The partition.
    pub partition: TopicPartition,
    /// Its leader, if it has one.
    pub leader: Option<NodeId>,
    /// The leader epoch (-1 when unknown).
    pub leader_epoch: i32,
    /// The topic's id, when the broker reported one (Metadata v10+, not Kafka's zero
    /// UUID). A different id than the partition's last one means the topic was
    /// recreated: its metadata then replaces the last, whatever the leader epochs
    /// (Java's `Metadata.updateLatestMetadata`, KIP-516).
    pub topic_id: Option<TopicId>,
}

impl PartitionMetadata {
    /// `partition`, led by `leader` (if any) at `leader_epoch` (-1 when unknown).
    #[must_use]
    pub fn new(partition: TopicPartition, leader: Option<NodeId>, leader_epoch: i32) -> Self {
        Self {
            partition,
            leader,
            leader_epoch,
            topic_id: None,
        }
    }

    /// Sets the topic's id.
    #[must_use]
    pub fn with_topic_id(mut self, topic_id: TopicId) -> Self {
        self.topic_id = Some(topic_id);
        self
    }
}

/// One broker inside [`Metadata`]: where to connect to a node id.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokerMetadata {
    /// The broker's node id.
    pub node: NodeId,
    /// Its host name or address.
    pub host: String,
    /// Its port.
    pub port: i32,
    /// Its rack (`broker.rack`), if it has one.
    pub rack: Option<String>,
}

impl BrokerMetadata {
    /// Node `node` at `host`:`port`, with no rack.
    #[must_use]
    pub fn new(node: NodeId, host: impl Into<String>, port: i32) -> Self {
        Self {
            node,
            host: host.into(),
            port,
            rack: None,
        }
    }

    /// Sets the rack.
    #[must_use]
    pub fn with_rack(mut self, rack: Option<String>) -> Self {
        self.rack = rack;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn led(topic: &str, partition: i32) -> PartitionMetadata {
        PartitionMetadata::new(TopicPartition::new(topic, partition), Some(NodeId(1)), 0)
    }

    #[test]
    fn partition_count_is_the_listed_partitions_when_they_are_whole() {
        let md = Metadata::new(vec![led("a", 2), led("a", 0), led("b", 0), led("a", 1)])
            .with_partition(PartitionMetadata::new(
                TopicPartition::new("a", 3),
                None,
                -1,
            ))
            .with_partition(led("c", 1))
            .with_broker(BrokerMetadata::new(NodeId(1), "h", 9092).with_rack(Some("r".into())));
        assert_eq!(
            md.partition_count("a"),
            Some(4),
            "a leaderless partition counts"
        );
        assert_eq!(md.partition_count("b"), Some(1));
        assert_eq!(md.partition_count("c"), None, "partition 0 missing");
        assert_eq!(md.partition_count("unknown"), None);
        assert_eq!(
            md.broker(NodeId(1)).map(|b| b.rack.as_deref()),
            Some(Some("r"))
        );
        assert_eq!(md.broker(NodeId(2)), None);
        // A partition listed twice counts once.
        let twice = Metadata::new(vec![led("a", 0), led("a", 0), led("a", 1)]);
        assert_eq!(twice.partition_count("a"), Some(2));
    }
}
