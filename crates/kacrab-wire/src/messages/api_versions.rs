//! ApiVersions (key 18), v0–v3.

use bytes::Bytes;
use kafka_protocol::messages as kp;

use crate::api::ApiKey;
use crate::encode::sb;
use crate::reader::{Reader, R};

/// Kafka's `UNSUPPORTED_VERSION` error code.
pub const UNSUPPORTED_VERSION: i16 = 35;

/// ApiVersions request. The software name and version go on the wire from v3 on; brokers
/// reject (INVALID_REQUEST) values outside `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`,
/// empty ones included. The default names this crate: `kacrab` and its version.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiVersionsRequest {
    /// The client's software name (v3+).
    pub client_software_name: String,
    /// The client's software version (v3+).
    pub client_software_version: String,
}

impl Default for ApiVersionsRequest {
    fn default() -> Self {
        Self {
            client_software_name: "kacrab".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

impl ApiVersionsRequest {
    /// The ApiVersions version to send first.
    pub const FIRST_VERSION: i16 = 3;

    pub(crate) fn into_kp(self) -> kp::ApiVersionsRequest {
        kp::ApiVersionsRequest::default()
            .with_client_software_name(sb(self.client_software_name))
            .with_client_software_version(sb(self.client_software_version))
    }
}

/// One API's version range as advertised by the broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ApiVersion {
    /// The API's protocol id (any API, not only those this crate speaks).
    pub api_key: i16,
    /// The lowest version the broker accepts.
    pub min_version: i16,
    /// The highest version the broker accepts.
    pub max_version: i16,
}

/// A feature the broker supports (v3+).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SupportedFeature {
    /// The feature's name, e.g. `transaction.version`.
    pub name: String,
    /// The lowest supported level.
    pub min_version: i16,
    /// The highest supported level.
    pub max_version: i16,
}

/// A cluster-wide finalized feature (v3+).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FinalizedFeature {
    /// The feature's name, e.g. `transaction.version`.
    pub name: String,
    /// The finalized maximum level: the level in force.
    pub max_version_level: i16,
    /// The finalized minimum level.
    pub min_version_level: i16,
}

/// ApiVersions response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ApiVersionsResponse {
    /// Top-level error code; [`UNSUPPORTED_VERSION`] means "retry at a lower version", see
    /// [`ApiVersionsResponse::retry_version`].
    pub error_code: i16,
    /// The broker's ranges, one per API it supports.
    pub api_keys: Vec<ApiVersion>,
    /// Throttle time (v1+; 0 before).
    pub throttle_time_ms: i32,
    /// Features the broker supports (v3+).
    pub supported_features: Vec<SupportedFeature>,
    /// Epoch of the finalized features, -1 when absent (v3+).
    pub finalized_features_epoch: i64,
    /// Finalized features (v3+).
    pub finalized_features: Vec<FinalizedFeature>,
}

impl ApiVersionsResponse {
    /// After an [`UNSUPPORTED_VERSION`] answer to a request sent at `sent_version`: the
    /// version to try next, as the Java client picks it (the broker's advertised
    /// ApiVersions maximum, else 0), kept below `sent_version` so retries end. `None` when
    /// no retry applies.
    #[must_use]
    pub fn retry_version(&self, sent_version: i16) -> Option<i16> {
        if self.error_code != UNSUPPORTED_VERSION || sent_version <= 0 {
            return None;
        }
        let advertised = self
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::ApiVersions.id())
            .map_or(0, |k| k.max_version);
        Some(advertised.clamp(0, sent_version - 1))
    }

    /// The version to read a body sent in answer to a request at `version` with. A broker
    /// that does not support that version answers with a v0 body carrying
    /// [`UNSUPPORTED_VERSION`], so such a body is read as v0 whatever was asked.
    pub(crate) fn body_version(body: &Bytes, version: i16) -> i16 {
        if version > 0 && body.get(..2) == Some(&UNSUPPORTED_VERSION.to_be_bytes()[..]) {
            0
        } else {
            version
        }
    }

    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let error_code = r.i16()?;
        let api_keys = r.array(|r| {
            let k = ApiVersion {
                api_key: r.i16()?,
                min_version: r.i16()?,
                max_version: r.i16()?,
            };
            r.skip_tagged_fields()?;
            Ok(k)
        })?;
        let throttle_time_ms = if version >= 1 { r.i32()? } else { 0 };
        let mut resp = Self {
            error_code,
            api_keys,
            throttle_time_ms,
            supported_features: Vec::new(),
            finalized_features_epoch: -1,
            finalized_features: Vec::new(),
        };
        r.tagged_fields(|tag, f| {
            match tag {
                0 => {
                    resp.supported_features = f.array(|r| {
                        let feature = SupportedFeature {
                            name: r.string()?,
                            min_version: r.i16()?,
                            max_version: r.i16()?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(feature)
                    })?;
                }
                1 => resp.finalized_features_epoch = f.i64()?,
                2 => {
                    resp.finalized_features = f.array(|r| {
                        let feature = FinalizedFeature {
                            name: r.string()?,
                            max_version_level: r.i16()?,
                            min_version_level: r.i16()?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(feature)
                    })?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(resp)
    }
}
