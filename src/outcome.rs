//! A batch's outcome as the application learns it: an acknowledgement (with the
//! broker's append time on `LogAppendTime` topics), one error for every record, or
//! KIP-467's per-record errors, turned into [`Event`]s.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::error::{DeliveryError, KafkaError};
use crate::io::{Event, PartitionResponse};
use crate::types::{RecordId, TopicPartition};

/// How a batch ended.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    /// Acknowledged.
    Delivered {
        /// The first record's offset, if the broker gave one.
        base_offset: Option<i64>,
        /// The broker's append time, on a `LogAppendTime` topic.
        log_append_time: Option<i64>,
    },
    /// Given up.
    Failed(Failure),
}

impl Outcome {
    /// Acknowledged by `r` (a success answer).
    pub(crate) fn acked(r: &PartitionResponse) -> Self {
        Self::Delivered {
            base_offset: (r.base_offset >= 0).then_some(r.base_offset),
            // -1 is Kafka's `RecordBatch.NO_TIMESTAMP`: the topic uses CreateTime.
            log_append_time: (r.log_append_time != -1).then_some(r.log_append_time),
        }
    }
}

impl From<Result<Option<i64>, DeliveryError>> for Outcome {
    fn from(r: Result<Option<i64>, DeliveryError>) -> Self {
        match r {
            Ok(base_offset) => Self::Delivered {
                base_offset,
                log_append_time: None,
            },
            Err(e) => Self::Failed(Failure::Batch(e)),
        }
    }
}

/// Why a batch's records failed.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    /// Every record for the same reason.
    Batch(DeliveryError),
    /// KIP-467: the records the broker named fail with their own error; the others with
    /// `rest`.
    PerRecord {
        /// `(index in the batch, error)`, ascending by index, each index once.
        named: Vec<(usize, DeliveryError)>,
        /// The error of every record not named.
        rest: DeliveryError,
    },
}

impl From<DeliveryError> for Failure {
    fn from(e: DeliveryError) -> Self {
        Self::Batch(e)
    }
}

impl Failure {
    /// The failure a broker's final error answer `r` gives a batch of `records` records
    /// on `partition`: Java's `Sender.failBatch`. Without per-record errors every record
    /// gets the broker's error and message. With them, a named record gets its own
    /// message (else the batch's), under the partition's error when it is the only one
    /// named and INVALID_RECORD when several are; the others get a generic error saying
    /// the batch held invalid records. Indices outside the batch are ignored (the
    /// broker's answer is input, not trusted).
    pub(crate) fn from_answer(
        partition: TopicPartition,
        r: &PartitionResponse,
        records: usize,
    ) -> Self {
        let broker = DeliveryError::Broker {
            partition: partition.clone(),
            error: r.error,
            message: r.error_message.clone(),
        };
        let mut named: Vec<(usize, DeliveryError)> = Vec::new();
        let error = if r.record_errors.len() == 1 {
            r.error
        } else {
            KafkaError::InvalidRecord
        };
        for e in &r.record_errors {
            let Some(index) = usize::try_from(e.batch_index).ok().filter(|&i| i < records) else {
                continue;
            };
            let failure = DeliveryError::InvalidRecord {
                partition: partition.clone(),
                error,
                batch_index: e.batch_index,
                message: e.message.clone().or_else(|| r.error_message.clone()),
            };
            match named.binary_search_by_key(&index, |n| n.0) {
                Ok(pos) => named[pos].1 = failure,
                Err(pos) => named.insert(pos, (index, failure)),
            }
        }
        if named.is_empty() {
            return Self::Batch(broker);
        }
        Self::PerRecord {
            named,
            rest: DeliveryError::BatchHadInvalidRecords {
                partition,
                error: r.error,
                message: r.error_message.clone(),
            },
        }
    }
}

/// Queues the events of a batch's `outcome`: one per batch, except that per-record
/// errors give one [`Event::Failed`] per run of consecutive records sharing an error, in
/// batch order, so each record still gets exactly one outcome.
pub(crate) fn push_events(
    events: &mut VecDeque<Event>,
    partition: TopicPartition,
    records: Vec<RecordId>,
    outcome: Outcome,
    possibly_written: bool,
) {
    match outcome {
        Outcome::Delivered {
            base_offset,
            log_append_time,
        } => events.push_back(Event::Delivered {
            partition,
            records,
            base_offset,
            log_append_time,
        }),
        Outcome::Failed(Failure::Batch(error)) => events.push_back(Event::Failed {
            partition,
            records,
            error,
            possibly_written,
        }),
        Outcome::Failed(Failure::PerRecord { named, rest }) => {
            let error_of = |i: usize| {
                named
                    .binary_search_by_key(&i, |n| n.0)
                    .map_or(&rest, |pos| &named[pos].1)
            };
            let mut start = 0;
            while start < records.len() {
                let error = error_of(start);
                let mut end = start + 1;
                while end < records.len() && error_of(end) == error {
                    end += 1;
                }
                events.push_back(Event::Failed {
                    partition: partition.clone(),
                    records: records[start..end].to_vec(),
                    error: error.clone(),
                    possibly_written,
                });
                start = end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::RecordError;
    use alloc::string::ToString;

    /// KIP-467: a batch of five whose records 1 and 2 the broker named gets one event per
    /// run of records sharing an error, in batch order: [0], [1], [2] (a named record's
    /// error carries its index), then [3, 4]; every record once (Java's `Sender.failBatch`
    /// fails each record with its own exception).
    #[test]
    fn per_record_errors_give_one_event_per_run() {
        let tp = TopicPartition::new("t", 0);
        let answer = PartitionResponse::error(tp.clone(), KafkaError::InvalidRecord)
            .with_record_errors(alloc::vec![
                RecordError::new(2, Some("bad key".to_string())),
                RecordError::new(1, Some("bad key".to_string())),
            ]);
        let failure = Failure::from_answer(tp.clone(), &answer, 5);
        let mut events = VecDeque::new();
        let records: Vec<RecordId> = (10..15).map(RecordId).collect();
        push_events(&mut events, tp, records, Outcome::Failed(failure), false);
        let runs: Vec<Vec<u64>> = events
            .iter()
            .map(|e| match e {
                Event::Failed { records, .. } => records.iter().map(|r| r.0).collect(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            runs,
            [
                alloc::vec![10],
                alloc::vec![11],
                alloc::vec![12],
                alloc::vec![13, 14]
            ]
        );
    }

    /// An error answer built by `PartitionResponse::error` knows no offsets: Kafka's -1
    /// (`ProduceResponse.INVALID_OFFSET`) for the base offset, the log start and the
    /// append time, so an embedder's error answer never reads as an offset.
    #[test]
    fn an_error_answer_carries_no_offsets() {
        let r =
            PartitionResponse::error(TopicPartition::new("t", 0), KafkaError::NotEnoughReplicas);
        assert_eq!(
            (r.base_offset, r.log_start_offset, r.log_append_time),
            (-1, -1, -1)
        );
    }
}
