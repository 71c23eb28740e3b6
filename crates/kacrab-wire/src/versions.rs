//! Version negotiation from a broker's ApiVersions response.

use crate::api::{ApiKey, VersionRange};
use crate::error::WireError;
use crate::messages::{ApiVersionsResponse, FinalizedFeature, Request, SupportedFeature};

/// The name of the transaction protocol feature (KIP-890).
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";

/// The versions to use with one broker: per API, the highest version both sides support,
/// plus the broker's features.
///
/// Our side is [`ApiKey::supported`], lowered by caps:
///
/// * Transaction version 2 (KIP-890 part 2) changes the meaning of Produce v12 (the broker
///   adds partitions to the transaction itself), TxnOffsetCommit v5 (no AddOffsetsToTxn
///   needed) and EndTxn v5 (a new epoch after every transaction). Until
///   [`Versions::set_transaction_v2`] enables it, those three APIs stop at v11, v4 and v4,
///   as in the Java client, so idempotent and TV1 transactional producers never use them.
/// * [`Versions::cap`] lowers (or restores) any API's maximum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versions {
    broker: [Option<VersionRange>; ApiKey::ALL.len()],
    caps: [i16; ApiKey::ALL.len()],
    transaction_v2: bool,
    supported_features: Vec<SupportedFeature>,
    finalized_features_epoch: i64,
    finalized_features: Vec<FinalizedFeature>,
}

/// The API's position in [`ApiKey::ALL`], which both tables follow.
fn index(api: ApiKey) -> usize {
    match api {
        ApiKey::Produce => 0,
        ApiKey::Metadata => 1,
        ApiKey::FindCoordinator => 2,
        ApiKey::SaslHandshake => 3,
        ApiKey::ApiVersions => 4,
        ApiKey::InitProducerId => 5,
        ApiKey::AddPartitionsToTxn => 6,
        ApiKey::AddOffsetsToTxn => 7,
        ApiKey::EndTxn => 8,
        ApiKey::TxnOffsetCommit => 9,
        ApiKey::SaslAuthenticate => 10,
        ApiKey::GetTelemetrySubscriptions => 11,
        ApiKey::PushTelemetry => 12,
    }
}

impl Versions {
    /// The table for a broker's successful ApiVersions answer. APIs this crate does not
    /// speak are ignored; when an API is listed twice the first entry counts.
    ///
    /// # Errors
    /// [`WireError::ErrorResponse`] when the answer carries an error (for
    /// UNSUPPORTED_VERSION, retry first: [`ApiVersionsResponse::retry_version`]).
    pub fn from_response(response: &ApiVersionsResponse) -> Result<Self, WireError> {
        if response.error_code != 0 {
            return Err(WireError::ErrorResponse {
                api: ApiKey::ApiVersions,
                error_code: response.error_code,
            });
        }
        let ranges = response.api_keys.iter().filter_map(|k| {
            ApiKey::from_id(k.api_key)
                .map(|api| (api, VersionRange::new(k.min_version, k.max_version)))
        });
        let mut versions = Self::from_broker_ranges(ranges);
        versions.supported_features = response.supported_features.clone();
        versions.finalized_features_epoch = response.finalized_features_epoch;
        versions.finalized_features = response.finalized_features.clone();
        Ok(versions)
    }

    /// A table from the broker's ranges given directly (tests, or brokers known in
    /// advance). No features.
    pub fn from_broker_ranges(ranges: impl IntoIterator<Item = (ApiKey, VersionRange)>) -> Self {
        let mut broker = [None; ApiKey::ALL.len()];
        for (api, range) in ranges {
            broker[index(api)].get_or_insert(range);
        }
        Self {
            broker,
            caps: ApiKey::ALL.map(|api| api.supported().max),
            transaction_v2: false,
            supported_features: Vec::new(),
            finalized_features_epoch: -1,
            finalized_features: Vec::new(),
        }
    }

    /// The version to use for `api`: the highest both sides support.
    ///
    /// # Errors
    /// [`WireError::ApiNotAdvertised`] when the broker does not list the API,
    /// [`WireError::NoCommonVersion`] when the ranges do not overlap.
    pub fn get(&self, api: ApiKey) -> Result<i16, WireError> {
        let broker = self.broker[index(api)].ok_or(WireError::ApiNotAdvertised { api })?;
        let ours = self.ours(api);
        ours.intersect(broker)
            .map(|r| r.max)
            .ok_or(WireError::NoCommonVersion { api, ours, broker })
    }

    /// The version to send `request` at: [`Versions::get`] of its API.
    ///
    /// # Errors
    /// As [`Versions::get`].
    pub fn version_for(&self, request: &Request) -> Result<i16, WireError> {
        self.get(request.api_key())
    }

    /// Our range for `api` after caps.
    #[must_use]
    pub fn ours(&self, api: ApiKey) -> VersionRange {
        let supported = api.supported();
        let tv1_limit = match api {
            ApiKey::Produce if !self.transaction_v2 => 11,
            ApiKey::EndTxn | ApiKey::TxnOffsetCommit if !self.transaction_v2 => 4,
            _ => supported.max,
        };
        VersionRange::new(supported.min, self.caps[index(api)].min(tv1_limit))
    }

    /// The broker's advertised range for `api`, if it listed one.
    #[must_use]
    pub fn broker_range(&self, api: ApiKey) -> Option<VersionRange> {
        self.broker[index(api)]
    }

    /// Sets our maximum for `api` (clamped to [`ApiKey::supported`]; a cap below the
    /// supported minimum makes [`Versions::get`] fail).
    pub fn cap(&mut self, api: ApiKey, max: i16) {
        self.caps[index(api)] = max.min(api.supported().max);
    }

    /// Enables or disables the transaction-version-2 versions (Produce v12,
    /// TxnOffsetCommit v5, EndTxn v5). Off by default. Enable it only when the producer
    /// runs transactions the TV2 way, which needs
    /// [`Versions::transaction_version`] `>= 2`.
    pub fn set_transaction_v2(&mut self, enabled: bool) {
        self.transaction_v2 = enabled;
    }

    /// Whether the transaction-version-2 versions are enabled.
    #[must_use]
    pub fn transaction_v2(&self) -> bool {
        self.transaction_v2
    }

    /// The finalized (in-force) maximum level of a cluster feature, from ApiVersions v3+.
    #[must_use]
    pub fn finalized_feature(&self, name: &str) -> Option<i16> {
        self.finalized_features
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.max_version_level)
    }

    /// All finalized features.
    #[must_use]
    pub fn finalized_features(&self) -> &[FinalizedFeature] {
        &self.finalized_features
    }

    /// The finalized features' epoch, -1 when unknown.
    #[must_use]
    pub fn finalized_features_epoch(&self) -> i64 {
        self.finalized_features_epoch
    }

    /// The range of a feature the broker supports, from ApiVersions v3+.
    #[must_use]
    pub fn supported_feature(&self, name: &str) -> Option<VersionRange> {
        self.supported_features
            .iter()
            .find(|f| f.name == name)
            .map(|f| VersionRange::new(f.min_version, f.max_version))
    }

    /// The finalized `transaction.version` level, 0 when the broker does not report it
    /// (older brokers: transaction version 1 semantics, written 0 by Kafka).
    #[must_use]
    pub fn transaction_version(&self) -> i16 {
        self.finalized_feature(TRANSACTION_VERSION_FEATURE)
            .unwrap_or(0)
    }
}
