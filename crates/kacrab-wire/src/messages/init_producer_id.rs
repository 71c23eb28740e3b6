//! InitProducerId (key 22), v0–v5.

use kafka_protocol::messages as kp;

use crate::encode::sb;
use crate::reader::{Reader, R};

/// InitProducerId request.
///
/// The default is an idempotent (non-transactional) producer's first request: no
/// transactional id, the timeout the Java client uses then (`i32::MAX`), and no current
/// producer id/epoch (-1/-1). Setting `producer_id`/`producer_epoch` (KIP-360 epoch bump)
/// needs v3+; an older version fails to encode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InitProducerIdRequest {
    /// The transactional id, `None` for an idempotent producer.
    pub transactional_id: Option<String>,
    /// The transaction timeout.
    pub transaction_timeout_ms: i32,
    /// The current producer id, -1 for none (v3+).
    pub producer_id: i64,
    /// The current producer epoch, -1 for none (v3+).
    pub producer_epoch: i16,
}

impl Default for InitProducerIdRequest {
    fn default() -> Self {
        Self {
            transactional_id: None,
            transaction_timeout_ms: i32::MAX,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

impl InitProducerIdRequest {
    pub(crate) fn into_kp(self) -> kp::InitProducerIdRequest {
        kp::InitProducerIdRequest::default()
            .with_transactional_id(self.transactional_id.map(|t| kp::TransactionalId(sb(t))))
            .with_transaction_timeout_ms(self.transaction_timeout_ms)
            .with_producer_id(kp::ProducerId(self.producer_id))
            .with_producer_epoch(self.producer_epoch)
    }
}

/// InitProducerId response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct InitProducerIdResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
    /// The producer id assigned.
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
}

impl InitProducerIdResponse {
    pub(crate) fn read(r: &mut Reader, _version: i16) -> R<Self> {
        let resp = Self {
            throttle_time_ms: r.i32()?,
            error_code: r.i16()?,
            producer_id: r.i64()?,
            producer_epoch: r.i16()?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }
}
