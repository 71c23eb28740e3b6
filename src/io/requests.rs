//! The requests the core hands its driver (inside [`Request`](crate::Request)). The core
//! builds them; the constructors serve drivers' tests and simulators that decode a
//! request back into these types. Fields stay public to read; new ones may come (each
//! struct is `#[non_exhaustive]`).

use alloc::string::String;
use alloc::vec::Vec;
use bytes::Bytes;
use core::time::Duration;

use crate::config::Acks;
use crate::ticket::Ticket;
use crate::txn::{ConsumerGroupMetadata, CoordinatorType, OffsetToCommit};
use crate::types::{NodeId, ProducerIdAndEpoch, RequestId, Topic, TopicPartition};

/// A Produce request: at most one batch per partition, all led by `node`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProduceRequest {
    /// Feed the response back with this id.
    pub id: RequestId,
    /// The broker leading every partition in the request.
    pub node: NodeId,
    /// The request's place in the enqueue order, for drivers that write from several
    /// tasks (see [`ticket`](crate::ticket)).
    pub ticket: Ticket,
    /// `acks`. With [`Acks::None`] the broker sends no response and the core has
    /// already reported the batches delivered.
    pub acks: Acks,
    /// The broker-side timeout (`request.timeout.ms`).
    pub timeout: Duration,
    /// The transactional id, if any.
    pub transactional_id: Option<String>,
    /// Transaction version 2 (KIP-890): Produce v12, which adds partitions implicitly.
    pub transaction_v2: bool,
    /// The batches, ready to go on the wire as they are.
    pub batches: Vec<ProduceBatch>,
}

impl ProduceRequest {
    /// A request `id` to `node` with these batches, outside any transaction, with the
    /// first [`Ticket`] of a one-part sequence (the core builds its own; this is for
    /// drivers' tests and simulators that decode a request back).
    #[must_use]
    pub fn new(
        id: RequestId,
        node: NodeId,
        acks: Acks,
        timeout: Duration,
        batches: Vec<ProduceBatch>,
    ) -> Self {
        Self {
            id,
            node,
            ticket: Ticket { seq: 0, parts: 1 },
            acks,
            timeout,
            transactional_id: None,
            transaction_v2: false,
            batches,
        }
    }

    /// Sets the request's place in the enqueue order.
    #[must_use]
    pub fn with_ticket(mut self, ticket: Ticket) -> Self {
        self.ticket = ticket;
        self
    }

    /// Sets the transactional id.
    #[must_use]
    pub fn with_transactional_id(mut self, transactional_id: Option<String>) -> Self {
        self.transactional_id = transactional_id;
        self
    }

    /// Sets transaction version 2 (Produce v12).
    #[must_use]
    pub fn with_transaction_v2(mut self, transaction_v2: bool) -> Self {
        self.transaction_v2 = transaction_v2;
        self
    }
}

/// One partition's record batch inside a [`ProduceRequest`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProduceBatch {
    /// The partition.
    pub partition: TopicPartition,
    /// An encoded, stamped RecordBatch v2. Shared, never copied.
    pub data: Bytes,
}

impl ProduceBatch {
    /// `partition`'s batch, encoded and stamped.
    #[must_use]
    pub fn new(partition: TopicPartition, data: Bytes) -> Self {
        Self { partition, data }
    }
}

/// An InitProducerId request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct InitProducerIdRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// The transaction coordinator, or `None` for any broker (idempotent producer).
    pub node: Option<NodeId>,
    /// The transactional id, if any.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms`.
    pub transaction_timeout: Duration,
    /// The current id and epoch for a KIP-360 bump, or [`ProducerIdAndEpoch::NONE`].
    pub current: ProducerIdAndEpoch,
}

impl InitProducerIdRequest {
    /// An idempotent producer's request `id` to any broker: no transactional id, no
    /// current identity.
    #[must_use]
    pub fn new(id: RequestId, transaction_timeout: Duration) -> Self {
        Self {
            id,
            node: None,
            transactional_id: None,
            transaction_timeout,
            current: ProducerIdAndEpoch::NONE,
        }
    }

    /// Sets the transaction coordinator it goes to.
    #[must_use]
    pub fn with_node(mut self, node: Option<NodeId>) -> Self {
        self.node = node;
        self
    }

    /// Sets the transactional id.
    #[must_use]
    pub fn with_transactional_id(mut self, transactional_id: Option<String>) -> Self {
        self.transactional_id = transactional_id;
        self
    }

    /// Sets the current id and epoch (a KIP-360 bump).
    #[must_use]
    pub fn with_current(mut self, current: ProducerIdAndEpoch) -> Self {
        self.current = current;
        self
    }
}

/// A FindCoordinator request. Feed the answer back with
/// [`Producer::handle_find_coordinator`](crate::Producer::handle_find_coordinator).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FindCoordinatorRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// Which coordinator.
    pub key_type: CoordinatorType,
    /// The transactional id or the group id.
    pub key: String,
}

impl FindCoordinatorRequest {
    /// A request `id` for the `key_type` coordinator of `key`.
    #[must_use]
    pub fn new(id: RequestId, key_type: CoordinatorType, key: String) -> Self {
        Self { id, key_type, key }
    }
}

/// An AddPartitionsToTxn request (client versions, v0 to v3).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AddPartitionsToTxnRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// The transaction coordinator.
    pub node: NodeId,
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id and epoch.
    pub producer: ProducerIdAndEpoch,
    /// Every partition the transaction gained since the last such request.
    pub partitions: Vec<TopicPartition>,
}

impl AddPartitionsToTxnRequest {
    /// A request `id` to `node` adding `partitions` to `producer`'s transaction.
    #[must_use]
    pub fn new(
        id: RequestId,
        node: NodeId,
        transactional_id: String,
        producer: ProducerIdAndEpoch,
        partitions: Vec<TopicPartition>,
    ) -> Self {
        Self {
            id,
            node,
            transactional_id,
            producer,
            partitions,
        }
    }
}

/// An AddOffsetsToTxn request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AddOffsetsToTxnRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// The transaction coordinator.
    pub node: NodeId,
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id and epoch.
    pub producer: ProducerIdAndEpoch,
    /// The consumer group.
    pub group_id: String,
}

impl AddOffsetsToTxnRequest {
    /// A request `id` to `node` adding `group_id`'s offsets to `producer`'s transaction.
    #[must_use]
    pub fn new(
        id: RequestId,
        node: NodeId,
        transactional_id: String,
        producer: ProducerIdAndEpoch,
        group_id: String,
    ) -> Self {
        Self {
            id,
            node,
            transactional_id,
            producer,
            group_id,
        }
    }
}

/// A TxnOffsetCommit request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TxnOffsetCommitRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// The group coordinator.
    pub node: NodeId,
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id and epoch.
    pub producer: ProducerIdAndEpoch,
    /// The consumer group.
    pub group: ConsumerGroupMetadata,
    /// The offsets still to commit.
    pub offsets: Vec<OffsetToCommit>,
    /// Transaction version 2: TxnOffsetCommit v5, which adds the group implicitly.
    pub transaction_v2: bool,
}

impl TxnOffsetCommitRequest {
    /// A request `id` to `node` committing `offsets` for `group` in `producer`'s
    /// transaction (transaction version 1).
    #[must_use]
    pub fn new(
        id: RequestId,
        node: NodeId,
        transactional_id: String,
        producer: ProducerIdAndEpoch,
        group: ConsumerGroupMetadata,
        offsets: Vec<OffsetToCommit>,
    ) -> Self {
        Self {
            id,
            node,
            transactional_id,
            producer,
            group,
            offsets,
            transaction_v2: false,
        }
    }

    /// Sets transaction version 2 (TxnOffsetCommit v5).
    #[must_use]
    pub fn with_transaction_v2(mut self, transaction_v2: bool) -> Self {
        self.transaction_v2 = transaction_v2;
        self
    }
}

/// An EndTxn request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EndTxnRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// The transaction coordinator.
    pub node: NodeId,
    /// The transactional id.
    pub transactional_id: String,
    /// The producer id and epoch.
    pub producer: ProducerIdAndEpoch,
    /// Commit, or abort.
    pub commit: bool,
    /// Transaction version 2: EndTxn v5, whose answer carries the bumped epoch.
    pub transaction_v2: bool,
}

impl EndTxnRequest {
    /// A request `id` to `node` ending `producer`'s transaction: commit if `commit`,
    /// else abort (transaction version 1).
    #[must_use]
    pub fn new(
        id: RequestId,
        node: NodeId,
        transactional_id: String,
        producer: ProducerIdAndEpoch,
        commit: bool,
    ) -> Self {
        Self {
            id,
            node,
            transactional_id,
            producer,
            commit,
            transaction_v2: false,
        }
    }

    /// Sets transaction version 2 (EndTxn v5).
    #[must_use]
    pub fn with_transaction_v2(mut self, transaction_v2: bool) -> Self {
        self.transaction_v2 = transaction_v2;
        self
    }
}

/// A Metadata request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MetadataRequest {
    /// Feed the answer back with this id.
    pub id: RequestId,
    /// The topics whose partition leaders the core needs.
    pub topics: Vec<Topic>,
}

impl MetadataRequest {
    /// A request `id` for these topics.
    #[must_use]
    pub fn new(id: RequestId, topics: Vec<Topic>) -> Self {
        Self { id, topics }
    }
}
