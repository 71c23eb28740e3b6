//! What the session knows of each topic from Metadata answers: its partitions and their
//! leaders, or the error that makes a send to it fail at once. The partitioner reads
//! it; the core keeps its own per-partition leadership (fed the same answers).
//!
//! Two views of one answer, on purpose: they follow different rules. The core's
//! leadership is per partition and only moves forward (a leader epoch below the last
//! one seen is ignored unless the topic id changed, Java's
//! `Metadata.updateLatestMetadata`), because it routes batches. This view is the
//! partitioner's and `waitOnMetadata`'s (Java's `Cluster`): the latest answer's whole
//! partition list per topic, replaced at once, a topic forgotten when an answer names
//! it with a retriable error or when `metadata.max.idle.ms` passes without a send to
//! it, and a refused topic kept as refused; the core has none of these. The core
//! keeps no partition count and no broker list: the counts live only here and the
//! broker addresses only in the network layer (its `brokers`, learned from the
//! converted `Metadata`).

use std::collections::BTreeMap;

use kacrab_idempotence::KafkaError;
use kacrab_wire::messages::MetadataResponse;

/// One partition of a topic, as the latest Metadata answer described it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionInfo {
    /// The partition index.
    pub partition: i32,
    /// Its leader's node id; `None` while it has none (Java's
    /// `Cluster.availablePartitionsForTopic` leaves such partitions out).
    pub leader: Option<i32>,
}

impl PartitionInfo {
    /// Partition `partition`, led by `leader` (`None` while it has no leader).
    #[must_use]
    pub fn new(partition: i32, leader: Option<i32>) -> Self {
        Self { partition, leader }
    }
}

/// A topic the session has metadata for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicMeta {
    /// The topic id (all zero from brokers before Metadata v10).
    pub(crate) id: [u8; 16],
    /// Invariant: sorted by partition index, indices `0..len` (a Metadata answer
    /// missing an index leaves the topic unknown instead).
    pub(crate) partitions: Vec<PartitionInfo>,
}

/// What the session knows of one topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TopicState {
    /// Metadata names it with its partitions.
    Known(TopicMeta),
    /// The broker refused it in a way that waiting cannot fix: Java's
    /// `Metadata.checkUnauthorizedTopics` (TOPIC_AUTHORIZATION_FAILED) and
    /// `checkInvalidTopics` (INVALID_TOPIC_EXCEPTION) fail the waiting send at once.
    Refused(KafkaError),
}

/// Every topic some Metadata answer described.
#[derive(Debug, Default)]
pub(crate) struct Topics {
    topics: BTreeMap<String, TopicState>,
    /// The retriable error the last answer naming each unknown topic carried
    /// (UNKNOWN_TOPIC_OR_PARTITION while it does not exist, LEADER_NOT_AVAILABLE while
    /// it is created): logged once per topic and change, not once per lookup.
    missing: BTreeMap<String, KafkaError>,
    /// Metadata answers applied, ever (the session notices fresh answers by it).
    answers: u64,
}

impl Topics {
    pub(crate) fn answers(&self) -> u64 {
        self.answers
    }

    pub(crate) fn get(&self, topic: &str) -> Option<&TopicState> {
        self.topics.get(topic)
    }

    pub(crate) fn partition_count(&self, topic: &str) -> Option<i32> {
        match self.topics.get(topic)? {
            TopicState::Known(m) => i32::try_from(m.partitions.len()).ok(),
            TopicState::Refused(_) => None,
        }
    }

    /// Forgets a topic (`metadata.max.idle.ms` passed without a send to it).
    pub(crate) fn forget(&mut self, topic: &str) {
        self.topics.remove(topic);
        self.missing.remove(topic);
    }

    /// Applies a Metadata answer. A topic the answer names without error replaces what
    /// was known (new partitions, moved leaders, a new topic id); one it names with a
    /// refusing error becomes refused; one it names with another error (the topic does
    /// not exist yet, a leader election) is forgotten, so sends wait for it again.
    /// Topics the answer does not name are kept.
    pub(crate) fn learn(&mut self, answer: &MetadataResponse) {
        self.answers += 1;
        for t in &answer.topics {
            let Some(name) = &t.name else { continue };
            let error = KafkaError::from_code(t.error_code);
            let state = match error {
                KafkaError::None => known(t),
                e @ (KafkaError::TopicAuthorizationFailed | KafkaError::InvalidTopicException) => {
                    Some(TopicState::Refused(e))
                }
                _ => None,
            };
            crate::trace::topic_changed(name, self.topics.get(name), state.as_ref());
            match state {
                Some(s) => {
                    self.missing.remove(name);
                    self.topics.insert(name.clone(), s);
                }
                None => {
                    self.topics.remove(name);
                    if error != KafkaError::None
                        && self.missing.insert(name.clone(), error) != Some(error)
                    {
                        crate::trace::topic_missing(name, error);
                    }
                }
            }
        }
    }

    /// Checks the invariants of the known topics.
    pub(crate) fn assert_invariants(&self) {
        for state in self.topics.values() {
            if let TopicState::Known(m) = state {
                assert!(
                    m.partitions
                        .iter()
                        .enumerate()
                        .all(|(i, p)| i32::try_from(i) == Ok(p.partition)),
                    "partitions are 0..len in order"
                );
            }
        }
    }
}

fn known(t: &kacrab_wire::messages::MetadataTopic) -> Option<TopicState> {
    let mut partitions: Vec<PartitionInfo> = t
        .partitions
        .iter()
        .map(|p| PartitionInfo {
            partition: p.partition_index,
            leader: (p.leader_id >= 0).then_some(p.leader_id),
        })
        .collect();
    partitions.sort_by_key(|p| p.partition);
    partitions.dedup_by_key(|p| p.partition);
    let complete = !partitions.is_empty()
        && partitions
            .iter()
            .enumerate()
            .all(|(i, p)| i32::try_from(i) == Ok(p.partition));
    complete.then_some(TopicState::Known(TopicMeta {
        id: t.topic_id,
        partitions,
    }))
}

/// Kafka's rules for a topic name (`org.apache.kafka.common.internals.Topic.validate`):
/// not empty, not `.` or `..`, at most 249 characters of ASCII letters, digits, `.`,
/// `_` and `-`. Java's producer learns of a bad name from the broker's
/// INVALID_TOPIC_EXCEPTION; checking here fails the send without a round trip.
pub(crate) fn invalid_topic_name(name: &str) -> Option<&'static str> {
    const MAX_NAME_LENGTH: usize = 249;
    if name.is_empty() {
        Some("the topic name is empty")
    } else if name == "." || name == ".." {
        Some("the topic name cannot be \".\" or \"..\"")
    } else if name.len() > MAX_NAME_LENGTH {
        Some("the topic name is longer than 249 characters")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Some("the topic name has a character other than ASCII alphanumerics, '.', '_' and '-'")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafkas_rules() {
        for ok in ["t", "a.b_c-D9", &"x".repeat(249)] {
            assert_eq!(invalid_topic_name(ok), None, "{ok}");
        }
        for bad in ["", ".", "..", "a b", "é", "a/b", &"x".repeat(250)] {
            assert!(invalid_topic_name(bad).is_some(), "{bad}");
        }
    }
}
