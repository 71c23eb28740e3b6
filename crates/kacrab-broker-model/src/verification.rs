//! KIP-890 part 1 on the partition leader: the verification state a leader keeps
//! for a transactional producer that has no open transaction on the partition yet.
//!
//! Kafka (`ReplicaManager.appendRecords` → `UnifiedLog.maybeStartTransactionVerification`)
//! starts verification for a transactional batch of a producer with no ongoing
//! transaction on the partition, creating a `VerificationStateEntry` that remembers
//! the lowest first sequence seen at the newest epoch
//! (`VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch`). While the entry
//! exists, `ProducerAppendInfo.checkSequence` refuses a batch whose first sequence is
//! above that lowest sequence with OUT_OF_ORDER_SEQUENCE_NUMBER: a later batch of the
//! transaction can not be written before an earlier one that is still being verified
//! (or was refused). The entry goes when the producer's transactional batch or marker
//! is appended (`UnifiedLog.updateProducers`) or after `producer.id.expiration.ms`
//! (`ProducerStateManager.removeExpiredProducers`).
//!
//! With no producer state the sequence check accepts any first sequence under transaction
//! version 1 (KIP-360); under version 2 (Produce v12, an entry that "supports the epoch
//! bump") a producer with no batch on the partition must start at 0.
//!
//! Verification starts only when the producer has no transaction open here at the
//! batch's epoch (`UnifiedLog.hasOngoingTransaction(producerId, producerEpoch)`).

use crate::batch;
use crate::broker::{
    check_producer_epoch, PartitionState, Rejection, OUT_OF_ORDER_SEQUENCE_NUMBER,
};

/// What the partition leader must ask the transaction coordinator before it appends a
/// batch ([`PartitionState::begin_append`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordinatorCheck {
    /// Nothing: the batch is not transactional, or its producer has a transaction open
    /// here at the batch's epoch.
    None,
    /// Whether this producer's transaction includes the partition (TV1:
    /// `verifyOnly`), or to add it (TV2: the implicit add of Produce v12).
    Verify {
        /// The batch's producer id.
        producer_id: i64,
        /// The batch's epoch.
        producer_epoch: i16,
    },
}

/// Kafka's `VerificationStateEntry` (the `VerificationGuard` itself is not needed:
/// verification and append are one step in the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerificationStateEntry {
    created_ms: u64,
    /// The lowest first sequence verified at `epoch`.
    lowest_sequence: i32,
    epoch: i16,
    /// Created for a TV2 request (Produce v12): the producer bumps its epoch at every
    /// transaction's end, so a first batch must carry sequence 0.
    supports_epoch_bump: bool,
}

impl VerificationStateEntry {
    /// Broker time the entry was created (for expiry).
    pub fn created_ms(&self) -> u64 {
        self.created_ms
    }

    /// The lowest first sequence verified at [`VerificationStateEntry::epoch`].
    pub fn lowest_sequence(&self) -> i32 {
        self.lowest_sequence
    }

    /// The newest epoch verified.
    pub fn epoch(&self) -> i16 {
        self.epoch
    }

    /// Whether the entry was created for a TV2 request (Produce v12).
    pub fn supports_epoch_bump(&self) -> bool {
        self.supports_epoch_bump
    }

    /// Kafka's `maybeUpdateLowestSequenceAndEpoch`: a lower sequence at the same
    /// epoch lowers the bar; a newer epoch resets it.
    fn update(&mut self, sequence: i32, epoch: i16) {
        if epoch == self.epoch && sequence < self.lowest_sequence {
            self.lowest_sequence = sequence;
        }
        if epoch > self.epoch {
            self.epoch = epoch;
            self.lowest_sequence = sequence;
        }
    }
}

/// The verification part of `ProducerAppendInfo.checkSequence`: under TV2 a producer
/// with no batch here (`producer_empty`) must start at sequence 0; and no batch above
/// the lowest sequence verified may be written first.
pub(crate) fn check_lowest_sequence(
    entry: Option<&VerificationStateEntry>,
    producer_empty: bool,
    first_seq: i32,
) -> Result<(), Rejection> {
    match entry {
        Some(v) if v.supports_epoch_bump && producer_empty && first_seq != 0 => Err(Rejection {
            code: OUT_OF_ORDER_SEQUENCE_NUMBER,
            reason: "a TV2 transactional producer with no state must start at sequence 0",
        }),
        Some(v) if first_seq > v.lowest_sequence => Err(Rejection {
            code: OUT_OF_ORDER_SEQUENCE_NUMBER,
            reason: "sequence above the lowest one verified for the transaction (KIP-890)",
        }),
        _ => Ok(()),
    }
}

impl PartitionState {
    /// The leader's steps before appending the batch `raw` of a Produce request at
    /// broker time `now_ms`, `tv2` for Produce v12 (`ReplicaManager.handleProduceAppend`
    /// and `UnifiedLog.maybeStartTransactionVerification`, KIP-890 part 1): a
    /// transactional batch with a stale epoch is refused before verification starts
    /// (KAFKA-19690, INVALID_PRODUCER_EPOCH); otherwise verification state is started
    /// and the answer says whether the coordinator must be asked. A batch whose header
    /// can not be read is left to [`PartitionState::append`] to refuse.
    pub fn begin_append(
        &mut self,
        raw: &[u8],
        now_ms: u64,
        tv2: bool,
    ) -> Result<CoordinatorCheck, Rejection> {
        let Some(h) = batch::decode_header(raw)
            .ok()
            .filter(|h| h.is_transactional() && h.producer_id >= 0)
        else {
            return Ok(CoordinatorCheck::None);
        };
        check_producer_epoch(self.producer(h.producer_id), h.producer_epoch)?;
        let verify = self.start_verification(
            h.producer_id,
            h.base_sequence,
            h.producer_epoch,
            now_ms,
            tv2,
        );
        Ok(if verify {
            CoordinatorCheck::Verify {
                producer_id: h.producer_id,
                producer_epoch: h.producer_epoch,
            }
        } else {
            CoordinatorCheck::None
        })
    }

    /// Kafka's `maybeStartTransactionVerification`: for a transactional batch of a
    /// producer with no transaction open here at the batch's epoch, create (or update)
    /// its verification state with the batch's first sequence and epoch. Returns
    /// whether verification is needed: false only when a transaction is open at this
    /// very epoch (`UnifiedLog.hasOngoingTransaction(producerId, producerEpoch)`; one
    /// open at an older epoch may already be decided, TV2's next transaction must be
    /// verified). Only then does the leader ask the coordinator at all
    /// (`ReplicaManager.handleProduceAppend`).
    pub fn start_transaction_verification(
        &mut self,
        producer_id: i64,
        sequence: i32,
        epoch: i16,
        now_ms: u64,
    ) -> bool {
        self.start_verification(producer_id, sequence, epoch, now_ms, false)
    }

    /// [`Self::start_transaction_verification`] for a request of either transaction
    /// version: `supports_epoch_bump` for TV2 (Produce v12), kept from the entry's
    /// creation (`ProducerStateManager.maybeCreateVerificationStateEntry`).
    pub fn start_verification(
        &mut self,
        producer_id: i64,
        sequence: i32,
        epoch: i16,
        now_ms: u64,
        supports_epoch_bump: bool,
    ) -> bool {
        let ongoing = self
            .producers
            .get(producer_id)
            .is_some_and(|e| e.current_txn_first_offset().is_some() && e.producer_epoch() == epoch);
        if ongoing {
            return false;
        }
        self.verifications
            .entry(producer_id)
            .or_insert(VerificationStateEntry {
                created_ms: now_ms,
                lowest_sequence: sequence,
                epoch,
                supports_epoch_bump,
            })
            .update(sequence, epoch);
        true
    }

    /// The verification state of `producer_id`, if any.
    pub fn verification(&self, producer_id: i64) -> Option<&VerificationStateEntry> {
        self.verifications.get(&producer_id)
    }
}
