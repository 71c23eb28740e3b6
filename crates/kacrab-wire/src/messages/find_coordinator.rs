//! FindCoordinator (key 10), v0–v6.

use kafka_protocol::messages as kp;

use crate::encode::sb;
use crate::error::DecodeError;
use crate::reader::{Reader, R};

/// Which kind of coordinator to find.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CoordinatorType {
    /// A consumer group's coordinator (key type 0). The only kind v0 knows.
    #[default]
    Group,
    /// A transactional id's coordinator (key type 1, v1+).
    Transaction,
}

impl CoordinatorType {
    /// The key type on the wire.
    #[must_use]
    pub const fn id(self) -> i8 {
        match self {
            CoordinatorType::Group => 0,
            CoordinatorType::Transaction => 1,
        }
    }
}

/// FindCoordinator request for one key. From v4 on it is sent in the batched form (a
/// one-element `coordinator_keys`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FindCoordinatorRequest {
    /// The group id or transactional id.
    pub key: String,
    /// What the key is.
    pub key_type: CoordinatorType,
}

impl FindCoordinatorRequest {
    pub(crate) fn into_kp(self, version: i16) -> kp::FindCoordinatorRequest {
        let req = kp::FindCoordinatorRequest::default().with_key_type(self.key_type.id());
        if version >= 4 {
            req.with_coordinator_keys(vec![sb(self.key)])
        } else {
            req.with_key(sb(self.key))
        }
    }
}

/// FindCoordinator response, one coordinator whatever the version: v4+ batched answers
/// must hold exactly one entry (the one key asked for), as the Java client requires.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FindCoordinatorResponse {
    /// Throttle time (v1+; 0 before).
    pub throttle_time_ms: i32,
    /// The key the entry answers (v4+; `None` before, where the answer has no key).
    pub key: Option<String>,
    /// Error code.
    pub error_code: i16,
    /// Error message (v1+).
    pub error_message: Option<String>,
    /// The coordinator's node id.
    pub node_id: i32,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: i32,
}

impl FindCoordinatorResponse {
    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let throttle_time_ms = if version >= 1 { r.i32()? } else { 0 };
        let resp = if version >= 4 {
            let mut entries = r.array(|r| {
                let key = r.string()?;
                let node_id = r.i32()?;
                let host = r.string()?;
                let port = r.i32()?;
                let error_code = r.i16()?;
                let error_message = r.nullable_string()?;
                r.skip_tagged_fields()?;
                Ok(Self {
                    throttle_time_ms,
                    key: Some(key),
                    error_code,
                    error_message,
                    node_id,
                    host,
                    port,
                })
            })?;
            if entries.len() != 1 {
                return Err(DecodeError::Invalid(
                    "FindCoordinator v4+ response must hold exactly one coordinator",
                )
                .into());
            }
            entries.swap_remove(0)
        } else {
            let error_code = r.i16()?;
            let error_message = if version >= 1 {
                r.nullable_string()?
            } else {
                None
            };
            let node_id = r.i32()?;
            let host = r.string()?;
            let port = r.i32()?;
            Self {
                throttle_time_ms,
                key: None,
                error_code,
                error_message,
                node_id,
                host,
                port,
            }
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }
}
