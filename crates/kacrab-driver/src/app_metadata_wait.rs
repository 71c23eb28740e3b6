//! Sends waiting for their topic's metadata: queued in the backlog until metadata names
//! the topic (with the application's own partition, if it chose one), failed naming
//! the topic (and partition) at `max.block.ms`.

use kacrab_idempotence::{Producer, Record, Timestamp, Topic};

use super::{Application, Queued};
use crate::completion::{ProduceError, SendId, TopicError};

impl Application {
    /// Queues a send until metadata names its topic (with its partition `wanted`, if
    /// the application chose one), for at most `max.block.ms`.
    pub(super) fn wait_for_metadata(
        &mut self,
        core: &mut Producer,
        id: SendId,
        topic: Topic,
        wanted: Option<i32>,
        record: Record,
        now: Timestamp,
    ) {
        if self.max_block.is_zero() {
            let failures = crate::ConnectionFailures::default();
            self.not_present(core, id, topic, wanted, None, failures);
            return;
        }
        self.backlog.push_back(Queued::Send {
            id,
            topic,
            partition: None,
            wanted,
            record,
            deadline: now + self.max_block,
        });
    }

    /// A send waited `max.block.ms` for its topic's metadata (with `count` partitions
    /// when known, which did not include the partition `wanted`); `connection_failures`
    /// is why the brokers still failing could not be reached, for the error to name.
    pub(super) fn not_present(
        &mut self,
        core: &mut Producer,
        id: SendId,
        topic: Topic,
        wanted: Option<i32>,
        count: Option<i32>,
        connection_failures: crate::ConnectionFailures,
    ) {
        let waited = self.max_block;
        let error = match (wanted, count) {
            (Some(partition), Some(count)) => TopicError::PartitionNotPresent {
                partition,
                count,
                waited,
            },
            _ => TopicError::NotPresent {
                waited,
                connection_failures,
            },
        };
        self.refuse(core, id, ProduceError::Topic { topic, error });
    }
}
