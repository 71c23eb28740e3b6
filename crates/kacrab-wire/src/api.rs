//! API keys, version ranges and header versions.

use std::fmt;

use kafka_protocol::messages as kp;
use kafka_protocol::protocol::HeaderVersion;

/// An inclusive range of API versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VersionRange {
    /// The lowest version.
    pub min: i16,
    /// The highest version.
    pub max: i16,
}

impl VersionRange {
    /// `min..=max`.
    #[must_use]
    pub const fn new(min: i16, max: i16) -> Self {
        Self { min, max }
    }

    /// Whether `version` lies in the range.
    #[must_use]
    pub const fn contains(self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }

    /// Whether the range holds no version (`min > max`).
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.min > self.max
    }

    /// The versions both ranges hold, or `None` when they do not overlap.
    #[must_use]
    pub fn intersect(self, other: Self) -> Option<Self> {
        let r = Self::new(self.min.max(other.min), self.max.min(other.max));
        (!r.is_empty()).then_some(r)
    }

    /// Every version in the range, lowest first.
    pub fn iter(self) -> impl Iterator<Item = i16> {
        self.min..=self.max
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}..=v{}", self.min, self.max)
    }
}

/// The Kafka APIs this crate speaks, with their protocol ids as discriminants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i16)]
pub enum ApiKey {
    /// Produce (0).
    Produce = 0,
    /// Metadata (3).
    Metadata = 3,
    /// FindCoordinator (10).
    FindCoordinator = 10,
    /// SaslHandshake (17), KIP-43.
    SaslHandshake = 17,
    /// ApiVersions (18).
    ApiVersions = 18,
    /// InitProducerId (22).
    InitProducerId = 22,
    /// AddPartitionsToTxn (24), client versions only.
    AddPartitionsToTxn = 24,
    /// AddOffsetsToTxn (25).
    AddOffsetsToTxn = 25,
    /// EndTxn (26).
    EndTxn = 26,
    /// TxnOffsetCommit (28).
    TxnOffsetCommit = 28,
    /// SaslAuthenticate (36), KIP-152.
    SaslAuthenticate = 36,
    /// GetTelemetrySubscriptions (71), KIP-714.
    GetTelemetrySubscriptions = 71,
    /// PushTelemetry (72), KIP-714.
    PushTelemetry = 72,
}

impl ApiKey {
    /// Every API this crate speaks, in id order.
    pub const ALL: [ApiKey; 13] = [
        ApiKey::Produce,
        ApiKey::Metadata,
        ApiKey::FindCoordinator,
        ApiKey::SaslHandshake,
        ApiKey::ApiVersions,
        ApiKey::InitProducerId,
        ApiKey::AddPartitionsToTxn,
        ApiKey::AddOffsetsToTxn,
        ApiKey::EndTxn,
        ApiKey::TxnOffsetCommit,
        ApiKey::SaslAuthenticate,
        ApiKey::GetTelemetrySubscriptions,
        ApiKey::PushTelemetry,
    ];

    /// The protocol id.
    #[must_use]
    pub const fn id(self) -> i16 {
        self as i16
    }

    /// The API with this protocol id, if this crate speaks it.
    #[must_use]
    pub fn from_id(id: i16) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.id() == id)
    }

    /// Kafka's name for the API.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ApiKey::Produce => "Produce",
            ApiKey::Metadata => "Metadata",
            ApiKey::FindCoordinator => "FindCoordinator",
            ApiKey::ApiVersions => "ApiVersions",
            ApiKey::InitProducerId => "InitProducerId",
            ApiKey::AddPartitionsToTxn => "AddPartitionsToTxn",
            ApiKey::AddOffsetsToTxn => "AddOffsetsToTxn",
            ApiKey::EndTxn => "EndTxn",
            ApiKey::TxnOffsetCommit => "TxnOffsetCommit",
            ApiKey::SaslHandshake => "SaslHandshake",
            ApiKey::SaslAuthenticate => "SaslAuthenticate",
            ApiKey::GetTelemetrySubscriptions => "GetTelemetrySubscriptions",
            ApiKey::PushTelemetry => "PushTelemetry",
        }
    }

    /// The versions this crate can encode and decode.
    ///
    /// Produce stops at v12 (v13 addresses topics by id), AddPartitionsToTxn at v3 (v4+ is
    /// broker to broker), SaslHandshake is v1 only (v0 sent the mechanism's tokens as raw
    /// frames). Whether a transactional producer may use the top versions of
    /// Produce, EndTxn and TxnOffsetCommit is [`crate::Versions`]' business.
    #[must_use]
    pub const fn supported(self) -> VersionRange {
        match self {
            ApiKey::Produce => VersionRange::new(3, 12),
            ApiKey::Metadata => VersionRange::new(1, 12),
            ApiKey::FindCoordinator => VersionRange::new(0, 6),
            ApiKey::ApiVersions => VersionRange::new(0, 3),
            ApiKey::InitProducerId => VersionRange::new(0, 5),
            ApiKey::AddPartitionsToTxn => VersionRange::new(0, 3),
            ApiKey::AddOffsetsToTxn => VersionRange::new(0, 4),
            ApiKey::EndTxn => VersionRange::new(0, 5),
            ApiKey::TxnOffsetCommit => VersionRange::new(0, 5),
            ApiKey::SaslHandshake => VersionRange::new(1, 1),
            ApiKey::SaslAuthenticate => VersionRange::new(0, 2),
            ApiKey::GetTelemetrySubscriptions => VersionRange::new(0, 0),
            ApiKey::PushTelemetry => VersionRange::new(0, 0),
        }
    }

    /// The request header version for a request at `version`.
    #[must_use]
    pub fn request_header_version(self, version: i16) -> i16 {
        match self {
            ApiKey::Produce => kp::ProduceRequest::header_version(version),
            ApiKey::Metadata => kp::MetadataRequest::header_version(version),
            ApiKey::FindCoordinator => kp::FindCoordinatorRequest::header_version(version),
            ApiKey::ApiVersions => kp::ApiVersionsRequest::header_version(version),
            ApiKey::InitProducerId => kp::InitProducerIdRequest::header_version(version),
            ApiKey::AddPartitionsToTxn => kp::AddPartitionsToTxnRequest::header_version(version),
            ApiKey::AddOffsetsToTxn => kp::AddOffsetsToTxnRequest::header_version(version),
            ApiKey::EndTxn => kp::EndTxnRequest::header_version(version),
            ApiKey::TxnOffsetCommit => kp::TxnOffsetCommitRequest::header_version(version),
            ApiKey::SaslHandshake => kp::SaslHandshakeRequest::header_version(version),
            ApiKey::SaslAuthenticate => kp::SaslAuthenticateRequest::header_version(version),
            ApiKey::GetTelemetrySubscriptions => {
                kp::GetTelemetrySubscriptionsRequest::header_version(version)
            }
            ApiKey::PushTelemetry => kp::PushTelemetryRequest::header_version(version),
        }
    }

    /// The response header version for a response at `version` (always 0 for
    /// ApiVersions, so a client can read the header of any ApiVersions answer).
    #[must_use]
    pub fn response_header_version(self, version: i16) -> i16 {
        match self {
            ApiKey::Produce => kp::ProduceResponse::header_version(version),
            ApiKey::Metadata => kp::MetadataResponse::header_version(version),
            ApiKey::FindCoordinator => kp::FindCoordinatorResponse::header_version(version),
            ApiKey::ApiVersions => 0,
            ApiKey::InitProducerId => kp::InitProducerIdResponse::header_version(version),
            ApiKey::AddPartitionsToTxn => kp::AddPartitionsToTxnResponse::header_version(version),
            ApiKey::AddOffsetsToTxn => kp::AddOffsetsToTxnResponse::header_version(version),
            ApiKey::EndTxn => kp::EndTxnResponse::header_version(version),
            ApiKey::TxnOffsetCommit => kp::TxnOffsetCommitResponse::header_version(version),
            ApiKey::SaslHandshake => kp::SaslHandshakeResponse::header_version(version),
            ApiKey::SaslAuthenticate => kp::SaslAuthenticateResponse::header_version(version),
            ApiKey::GetTelemetrySubscriptions => {
                kp::GetTelemetrySubscriptionsResponse::header_version(version)
            }
            ApiKey::PushTelemetry => kp::PushTelemetryResponse::header_version(version),
        }
    }

    /// Whether the body at `version` uses the flexible (compact, tagged-field) encoding.
    #[must_use]
    pub const fn is_flexible(self, version: i16) -> bool {
        let first = match self {
            ApiKey::Produce => 9,
            ApiKey::Metadata => 9,
            ApiKey::FindCoordinator => 3,
            ApiKey::ApiVersions => 3,
            ApiKey::InitProducerId => 2,
            ApiKey::AddPartitionsToTxn => 3,
            ApiKey::AddOffsetsToTxn => 3,
            ApiKey::EndTxn => 3,
            ApiKey::TxnOffsetCommit => 3,
            // No flexible version.
            ApiKey::SaslHandshake => i16::MAX,
            ApiKey::SaslAuthenticate => 2,
            ApiKey::GetTelemetrySubscriptions | ApiKey::PushTelemetry => 0,
        };
        version >= first
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
