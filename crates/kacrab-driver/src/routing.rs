//! Where a record goes: its explicit partition, the application's [`Partitioner`], or
//! Kafka's built-in one, once the session has the topic's metadata; or why it cannot
//! go anywhere.
//!
//! A record waits for its topic's metadata in the session's backlog, in call order with
//! every other send, for up to `max.block.ms` (Java's `KafkaProducer.waitOnMetadata`);
//! one with an explicit partition also waits for a partition count above it. The
//! lookups it waits on go one at a time and back off (`network::lookup`), so waiting
//! costs no reconnect storm. It fails at once for a topic name Kafka refuses
//! (`Topic.validate`) or a topic the broker refused (TOPIC_AUTHORIZATION_FAILED,
//! INVALID_TOPIC_EXCEPTION).

use kacrab_idempotence::record::BatchBuilder;
use kacrab_idempotence::{Producer, Record, Timestamp, Topic, TopicPartition};

use crate::completion::TopicError;
use crate::partitioner::{BuiltIn, Load, Partitioner, TopicPartitions};
use crate::topics::{invalid_topic_name, TopicState, Topics};

/// Where one record goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// To this partition.
    To(i32),
    /// Nowhere yet: the topic's metadata is not known.
    Wait,
    /// Nowhere: the record fails.
    Refuse(TopicError),
}

/// The partitioners of a session.
#[derive(Debug)]
pub(crate) struct Router {
    built_in: BuiltIn,
    custom: Option<Box<dyn Partitioner>>,
}

/// The core's queues of one topic, as the built-in partitioner reads them.
struct CoreLoad<'a> {
    core: &'a Producer,
    topic: &'a Topic,
}

impl Load for CoreLoad<'_> {
    fn queued(&self, partition: i32) -> usize {
        self.core.queued_batches(&TopicPartition {
            topic: self.topic.clone(),
            partition,
        })
    }
}

impl Router {
    pub(crate) fn new(built_in: BuiltIn) -> Self {
        Self {
            built_in,
            custom: None,
        }
    }

    pub(crate) fn set_partitioner(&mut self, partitioner: Box<dyn Partitioner>) {
        self.custom = Some(partitioner);
    }

    /// A leader took a Produce request (for the built-in partitioner's
    /// `partitioner.availability.timeout.ms`).
    pub(crate) fn drained(&mut self, leader: i32, now: Timestamp) {
        self.built_in.drained(leader, now);
    }

    /// Forgets what the partitioners keep of `topic`.
    pub(crate) fn forget(&mut self, topic: &str) {
        self.built_in.forget(topic);
    }

    /// Where a record of `topic` goes, given its explicit `partition` if any.
    pub(crate) fn place(
        &mut self,
        topic: &Topic,
        partition: Option<i32>,
        record: &Record,
        topics: &Topics,
        core: &Producer,
        now: Timestamp,
    ) -> Placement {
        if let Some(reason) = invalid_topic_name(topic.as_str()) {
            return Placement::Refuse(TopicError::InvalidName(reason));
        }
        let meta = match topics.get(topic.as_str()) {
            Some(TopicState::Refused(e)) => return Placement::Refuse(TopicError::Refused(*e)),
            Some(TopicState::Known(meta)) => meta,
            None => return Placement::Wait,
        };
        if let Some(p) = partition {
            // Java's `waitOnMetadata`: a partition beyond the known count waits for
            // metadata that has it (a negative one is the core's to refuse).
            let count = i32::try_from(meta.partitions.len()).unwrap_or(i32::MAX);
            return if p >= count {
                Placement::Wait
            } else {
                Placement::To(p)
            };
        }
        let view = TopicPartitions::new(&meta.partitions);
        let key = record.key.as_deref();
        if let Some(custom) = self.custom.as_mut() {
            if let Some(p) = custom.partition(topic.as_str(), key, record.value.as_deref(), view) {
                return if (0..view.count()).contains(&p) {
                    Placement::To(p)
                } else {
                    Placement::Refuse(TopicError::NoSuchPartition {
                        partition: p,
                        count: view.count(),
                    })
                };
            }
        }
        let size = BatchBuilder::estimated_record_size(record);
        let load = CoreLoad { core, topic };
        Placement::To(
            self.built_in
                .partition(topic.as_str(), key, size, view, &load, now),
        )
    }
}
