//! The application half's reading of the core's events, and its invariant checks.

use kacrab_idempotence::{Event, Producer, Timestamp};

use super::{Application, Life, Queued};
use crate::completion::{Completion, ProduceError, SendId};
use crate::record::{RecordMetadata, TimestampType};

impl Application {
    /// Turns a core event into completions. Returns whether it freed buffer space.
    pub(super) fn on_event(&mut self, event: Event) -> bool {
        crate::trace::core_event(&event);
        match event {
            Event::Delivered {
                partition,
                records,
                base_offset,
                log_append_time,
            } => {
                for (i, rid) in records.into_iter().enumerate() {
                    if let Some(w) = self.waiters.take(rid) {
                        let (timestamp, timestamp_type) = match log_append_time {
                            Some(t) => (t, TimestampType::LogAppendTime),
                            None => (w.timestamp, TimestampType::CreateTime),
                        };
                        let meta = RecordMetadata {
                            topic: partition.topic.clone(),
                            partition: partition.partition,
                            offset: base_offset.map(|b| b + i as i64),
                            timestamp,
                            timestamp_type,
                        };
                        self.record_done(w.id, Ok(meta));
                    }
                }
                true
            }
            Event::Failed {
                records,
                error,
                possibly_written,
                ..
            } => {
                for rid in records {
                    if let Some(w) = self.waiters.take(rid) {
                        self.record_done(
                            w.id,
                            Err(ProduceError::Delivery {
                                error: error.clone(),
                                possibly_written,
                            }),
                        );
                    }
                }
                true
            }
            Event::TransactionCompleted { op: kind, result } => {
                let mut i = 0;
                while i < self.txn_waiters.len() {
                    if self.txn_waiters[i].0 == kind {
                        let (_, op) = self.txn_waiters.remove(i);
                        self.completions.push_back(Completion::Transaction {
                            op,
                            kind,
                            result: result.clone(),
                        });
                    } else {
                        i += 1;
                    }
                }
                false
            }
            // Every record is failed by its own event; later sends fail in `send`.
            Event::Fatal { .. } | Event::ProducerIdChanged { .. } => false,
        }
    }

    /// Checks the application half's invariants (see its fields).
    pub(crate) fn assert_invariants(&self, core: &Producer) {
        assert!(!matches!(self.waiters.slots.front(), Some(None)));
        let ids: Vec<SendId> = self.waiters.slots.iter().flatten().map(|w| w.id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "waiters ascend");
        assert_eq!(
            self.waiters.len() as u64,
            core.unreported_records(),
            "one waiter per record the core has not reported"
        );
        if let Some(front) = self.backlog.front() {
            assert!(
                matches!(front, Queued::Send { .. }),
                "the backlog's front is a send"
            );
        }
        let deadlines: Vec<Timestamp> = self
            .backlog
            .iter()
            .filter_map(|q| match q {
                Queued::Send { deadline, .. } => Some(*deadline),
                _ => None,
            })
            .collect();
        assert!(deadlines.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(
            deadlines.len(),
            self.backlog.sends(),
            "the backlog counts its sends"
        );
        assert!(self
            .flushes
            .iter()
            .zip(self.flushes.iter().skip(1))
            .all(|(a, b)| a.0 <= b.0));
        if self.life == Life::Finished {
            assert!(self.backlog.is_empty() && self.closes.is_empty() && self.lookups.is_empty());
            assert!(
                self.flushes.is_empty() && self.txn_waiters.is_empty(),
                "a finished session answered every flush and transactional call"
            );
        }
    }
}
