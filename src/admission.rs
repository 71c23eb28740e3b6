//! Admission of sends: the checks a record (or a handed batch) passes before it is
//! queued, and the one rule for a send refused inside a transaction.
//!
//! # The checks
//! In Java's order (`KafkaProducer.doSend`): a closed producer, then (for the core, a
//! partition named by the caller) a negative partition, then the record's size against
//! `max.request.size` and against `buffer.memory` (`KafkaProducer.ensureValidRecordSize`,
//! both a `RecordTooLargeException`: a record larger than all of `buffer.memory` could
//! never be buffered, even alone), then room in `buffer.memory` for it now.
//!
//! # A send refused inside a transaction
//! Java's `KafkaProducer.doSend` passes every `ApiException` a send fails with to
//! `TransactionManager.maybeTransitionToErrorState`, which makes the transaction
//! abortable: the application meant the record for the transaction, the log will not
//! have it, so the transaction must not commit. [`Producer::send_refused`] is that rule,
//! the one place it lives: the core's own refusals go through it, and a driver that
//! refuses a send itself (`max.block.ms` ran out, the topic is unknown or not
//! authorized) calls it. Which refusals are `ApiException`s is
//! [`SendError::transaction_abort_cause`].

use crate::error::{KafkaError, RecordSizeLimit, SendError};
use crate::producer::{Lifecycle, Producer};
use crate::txn::TransactionState as S;
use crate::types::TopicPartition;

impl Producer {
    /// A send of the application was refused with `cause` before its record was queued,
    /// and will not be retried: a driver that gave up on it itself (`max.block.ms` ran
    /// out waiting for `buffer.memory` or for metadata: `REQUEST_TIMED_OUT`, Java's
    /// `TimeoutException`; the topic is not authorized or invalid) reports it here.
    /// [`Producer::send`] and [`Producer::send_batch`] apply the same rule to their own
    /// refusals.
    ///
    /// Inside a transaction, the transaction may only be aborted from now on
    /// (`TransactionState::AbortableError` with `cause`): Java's `KafkaProducer.doSend`
    /// hands the `ApiException` to `TransactionManager.maybeTransitionToErrorState`.
    /// The states it applies in are Java's `transitionToAbortableError` sources (a
    /// transaction open or committing, or `init_transactions` running); in any other
    /// state (no transaction open, already aborting or in error) nothing changes, as in
    /// Java, where the transition is skipped or refused. Reporting a refusal twice is
    /// harmless. Does nothing for a producer without `transactional.id`.
    pub fn send_refused(&mut self, cause: KafkaError) {
        let Some(t) = self.txn.as_ref() else { return };
        if matches!(
            t.state,
            S::InTransaction | S::CommittingTransaction | S::Initializing
        ) {
            debug_assert!(t.state.can_transition_to(S::AbortableError));
            self.txn_abortable(cause);
        }
    }

    /// `error`, after applying [`Producer::send_refused`] for it when it is final (every
    /// refusal but `BufferFull`, which the caller may retry: the refusal is final only
    /// when the caller gives up on it).
    pub(crate) fn refuse(&mut self, error: SendError) -> SendError {
        if !matches!(error, SendError::BufferFull { .. }) {
            if let Some(cause) = error.transaction_abort_cause() {
                self.send_refused(cause);
            }
        }
        error
    }

    /// The first checks of [`Producer::send`] and [`Producer::send_batch`], on the
    /// producer and the partition the caller named.
    pub(crate) fn admit_caller(&self, partition: &TopicPartition) -> Result<(), SendError> {
        if let Some(e) = self.fatal {
            return Err(SendError::Fatal(e));
        }
        if self.lifecycle == Lifecycle::Closing {
            return Err(SendError::Closed);
        }
        if partition.partition < 0 {
            return Err(SendError::InvalidPartition(partition.partition));
        }
        Ok(())
    }

    /// The size checks of [`Producer::send`] and [`Producer::send_batch`], for a record
    /// (or batch) of `upper_bound` bytes framed alone in a batch (Java's
    /// `estimateSizeInBytesUpperBound`) that charges `charge` bytes of `buffer.memory`.
    pub(crate) fn admit_size(&self, upper_bound: usize, charge: usize) -> Result<(), SendError> {
        let too_large = |limit, max| SendError::RecordTooLarge {
            size: upper_bound,
            max,
            limit,
        };
        let max_request_size = self.config.max_request_size();
        if upper_bound > max_request_size {
            return Err(too_large(RecordSizeLimit::MaxRequestSize, max_request_size));
        }
        let buffer_memory = self.config.buffer_memory();
        if upper_bound > buffer_memory {
            return Err(too_large(RecordSizeLimit::BufferMemory, buffer_memory));
        }
        // Alone, it fits (`charge` never exceeds the upper bound): an empty buffer takes
        // it whatever its size.
        debug_assert!(
            charge <= upper_bound,
            "{charge} charged, {upper_bound} framed"
        );
        let buffered = self.acc.buffered_bytes();
        if buffered + charge > buffer_memory {
            return Err(SendError::BufferFull { buffered });
        }
        Ok(())
    }
}
