//! The cluster's finalized features as the producer sees them, across connections.
//!
//! Every broker answers ApiVersions with its view of the finalized features and the
//! epoch of that view. Brokers learn a feature change at different times, so a later
//! answer may be older: the view with the highest epoch wins, whichever connection
//! carried it (Java's `ApiVersions.update` keeps `maxFinalizedFeaturesEpoch`, and
//! `TransactionManager.maybeUpdateTransactionV2Enabled` reads only a newer epoch). A
//! broker that reports no finalized features reports the lowest epoch (-1), so it never
//! overrides a view it is behind.

use kacrab_wire::Versions;

/// The newest finalized-features view seen, reduced to what the core needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FinalizedFeatures {
    /// The epoch of the newest view; -1 before any view.
    epoch: i64,
    /// Its `transaction.version` level (0 when not finalized: transaction version 1).
    transaction_version: i16,
}

impl FinalizedFeatures {
    pub(crate) const fn new() -> Self {
        Self {
            epoch: -1,
            transaction_version: 0,
        }
    }

    /// Takes one broker's ApiVersions view. Returns the `transaction.version` level to
    /// tell the core when the view is newer than every one seen.
    pub(crate) fn observe(&mut self, versions: &Versions) -> Option<i16> {
        let epoch = versions.finalized_features_epoch();
        if epoch <= self.epoch {
            return None;
        }
        self.epoch = epoch;
        self.transaction_version = versions.transaction_version();
        Some(self.transaction_version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kacrab_wire::messages::{ApiVersionsResponse, FinalizedFeature};

    fn view(epoch: i64, transaction_version: Option<i16>) -> Versions {
        let mut answer = kacrab_wire::message!(ApiVersionsResponse {
            error_code: 0,
            api_keys: Vec::new(),
            throttle_time_ms: 0,
            supported_features: Vec::new(),
            finalized_features_epoch: epoch,
            finalized_features: Vec::new(),
        });
        if let Some(level) = transaction_version {
            answer
                .finalized_features
                .push(kacrab_wire::message!(FinalizedFeature {
                    name: kacrab_wire::TRANSACTION_VERSION_FEATURE.into(),
                    max_version_level: level,
                    min_version_level: level,
                }));
        }
        Versions::from_response(&answer).unwrap()
    }

    #[test]
    fn an_older_view_from_another_broker_does_not_lower_the_transaction_version() {
        let mut f = FinalizedFeatures::new();
        assert_eq!(f.observe(&view(5, Some(2))), Some(2));
        // A broker that has not yet heard of epoch 5, and one with no features at all.
        assert_eq!(f.observe(&view(4, Some(1))), None);
        assert_eq!(f.observe(&view(-1, None)), None);
        assert_eq!(f.observe(&view(0, None)), None);
        assert_eq!(f.transaction_version, 2);
    }

    #[test]
    fn a_newer_view_changes_the_transaction_version_either_way() {
        let mut f = FinalizedFeatures::new();
        assert_eq!(f.observe(&view(-1, None)), None, "level 0 is the default");
        assert_eq!(f.observe(&view(3, Some(1))), Some(1));
        assert_eq!(f.observe(&view(3, Some(2))), None, "same epoch, same view");
        assert_eq!(f.observe(&view(7, Some(2))), Some(2));
        assert_eq!(
            f.observe(&view(9, Some(1))),
            Some(1),
            "a downgrade is newer too"
        );
    }
}
