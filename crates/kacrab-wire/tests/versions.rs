//! Version negotiation against synthetic broker tables.

use kacrab_wire::messages::{
    ApiVersion, ApiVersionsResponse, FinalizedFeature, MetadataRequest, SupportedFeature,
};
use kacrab_wire::{ApiKey, VersionRange, Versions, WireError};

fn table(ranges: &[(ApiKey, i16, i16)]) -> Versions {
    Versions::from_broker_ranges(
        ranges
            .iter()
            .map(|&(api, min, max)| (api, VersionRange::new(min, max))),
    )
}

/// A Kafka 4.x-like broker.
fn modern() -> Versions {
    table(&[
        (ApiKey::Produce, 3, 13),
        (ApiKey::Metadata, 0, 13),
        (ApiKey::FindCoordinator, 0, 6),
        (ApiKey::ApiVersions, 0, 4),
        (ApiKey::InitProducerId, 0, 6),
        (ApiKey::AddPartitionsToTxn, 0, 5),
        (ApiKey::AddOffsetsToTxn, 0, 4),
        (ApiKey::EndTxn, 0, 5),
        (ApiKey::TxnOffsetCommit, 0, 5),
    ])
}

#[test]
fn min_of_both_maxima() {
    let v = modern();
    assert_eq!(v.get(ApiKey::Metadata).unwrap(), 12);
    assert_eq!(v.get(ApiKey::FindCoordinator).unwrap(), 6);
    assert_eq!(v.get(ApiKey::ApiVersions).unwrap(), 3);
    assert_eq!(v.get(ApiKey::InitProducerId).unwrap(), 5);
    assert_eq!(
        v.get(ApiKey::AddPartitionsToTxn).unwrap(),
        3,
        "v4+ is broker-only"
    );
    assert_eq!(v.get(ApiKey::AddOffsetsToTxn).unwrap(), 4);
    let old = table(&[
        (ApiKey::Produce, 0, 7),
        (ApiKey::Metadata, 0, 5),
        (ApiKey::InitProducerId, 0, 1),
    ]);
    assert_eq!(old.get(ApiKey::Produce).unwrap(), 7);
    assert_eq!(old.get(ApiKey::Metadata).unwrap(), 5);
    assert_eq!(old.get(ApiKey::InitProducerId).unwrap(), 1);
    assert_eq!(
        old.version_for(&MetadataRequest::all_topics().into())
            .unwrap(),
        5
    );
}

#[test]
fn transaction_v2_versions_are_off_until_enabled() {
    let mut v = modern();
    assert!(!v.transaction_v2());
    assert_eq!(v.get(ApiKey::Produce).unwrap(), 11);
    assert_eq!(v.get(ApiKey::EndTxn).unwrap(), 4);
    assert_eq!(v.get(ApiKey::TxnOffsetCommit).unwrap(), 4);
    assert_eq!(v.ours(ApiKey::Produce), VersionRange::new(3, 11));
    v.set_transaction_v2(true);
    assert_eq!(v.get(ApiKey::Produce).unwrap(), 12);
    assert_eq!(v.get(ApiKey::EndTxn).unwrap(), 5);
    assert_eq!(v.get(ApiKey::TxnOffsetCommit).unwrap(), 5);
}

#[test]
fn caps() {
    let mut v = modern();
    v.cap(ApiKey::Metadata, 8);
    assert_eq!(v.get(ApiKey::Metadata).unwrap(), 8);
    v.cap(ApiKey::Metadata, 100);
    assert_eq!(
        v.get(ApiKey::Metadata).unwrap(),
        12,
        "a cap never lifts past what we support"
    );
    v.set_transaction_v2(true);
    v.cap(ApiKey::Produce, 9);
    assert_eq!(v.get(ApiKey::Produce).unwrap(), 9);
    v.cap(ApiKey::Metadata, 0);
    assert!(matches!(
        v.get(ApiKey::Metadata),
        Err(WireError::NoCommonVersion { .. })
    ));
}

#[test]
fn no_overlap_and_not_advertised() {
    let v = table(&[(ApiKey::Produce, 0, 2), (ApiKey::Metadata, 13, 20)]);
    match v.get(ApiKey::Produce) {
        Err(WireError::NoCommonVersion { api, ours, broker }) => {
            assert_eq!(
                (api, ours, broker),
                (
                    ApiKey::Produce,
                    VersionRange::new(3, 11),
                    VersionRange::new(0, 2)
                )
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        v.get(ApiKey::Metadata),
        Err(WireError::NoCommonVersion {
            api: ApiKey::Metadata,
            ..
        })
    ));
    assert!(matches!(
        v.get(ApiKey::EndTxn),
        Err(WireError::ApiNotAdvertised {
            api: ApiKey::EndTxn
        })
    ));
    assert_eq!(
        v.broker_range(ApiKey::Produce),
        Some(VersionRange::new(0, 2))
    );
    assert_eq!(v.broker_range(ApiKey::EndTxn), None);
}

fn response(error_code: i16) -> ApiVersionsResponse {
    kacrab_wire::message!(ApiVersionsResponse {
        error_code,
        api_keys: vec![
            kacrab_wire::message!(ApiVersion {
                api_key: 0,
                min_version: 3,
                max_version: 12,
            }),
            kacrab_wire::message!(ApiVersion {
                api_key: 0,
                min_version: 0,
                max_version: 5,
            }), // duplicate: ignored
            kacrab_wire::message!(ApiVersion {
                api_key: 1,
                min_version: 0,
                max_version: 17,
            }), // Fetch: not ours
            kacrab_wire::message!(ApiVersion {
                api_key: -7,
                min_version: 0,
                max_version: 1,
            }),
            kacrab_wire::message!(ApiVersion {
                api_key: 26,
                min_version: 0,
                max_version: 5,
            }),
        ],
        throttle_time_ms: 0,
        supported_features: vec![kacrab_wire::message!(SupportedFeature {
            name: "transaction.version".into(),
            min_version: 0,
            max_version: 2,
        })],
        finalized_features_epoch: 17,
        finalized_features: vec![
            kacrab_wire::message!(FinalizedFeature {
                name: "metadata.version".into(),
                max_version_level: 25,
                min_version_level: 25,
            }),
            kacrab_wire::message!(FinalizedFeature {
                name: "transaction.version".into(),
                max_version_level: 2,
                min_version_level: 2,
            }),
        ],
    })
}

#[test]
fn from_an_api_versions_response() {
    let v = Versions::from_response(&response(0)).unwrap();
    assert_eq!(v.get(ApiKey::Produce).unwrap(), 11);
    assert_eq!(
        v.broker_range(ApiKey::Produce),
        Some(VersionRange::new(3, 12))
    );
    assert_eq!(v.get(ApiKey::EndTxn).unwrap(), 4);
    assert!(matches!(
        v.get(ApiKey::Metadata),
        Err(WireError::ApiNotAdvertised { .. })
    ));
    assert_eq!(v.finalized_feature("transaction.version"), Some(2));
    assert_eq!(v.finalized_feature("metadata.version"), Some(25));
    assert_eq!(v.finalized_feature("group.version"), None);
    assert_eq!(v.transaction_version(), 2);
    assert_eq!(v.finalized_features_epoch(), 17);
    assert_eq!(v.finalized_features().len(), 2);
    assert_eq!(
        v.supported_feature("transaction.version"),
        Some(VersionRange::new(0, 2))
    );
    let pre_features = Versions::from_response(&kacrab_wire::message!(ApiVersionsResponse {
        finalized_features: vec![],
        ..response(0)
    }))
    .unwrap();
    assert_eq!(pre_features.transaction_version(), 0);
}

#[test]
fn an_error_answer_gives_no_table() {
    assert!(matches!(
        Versions::from_response(&response(35)),
        Err(WireError::ErrorResponse {
            api: ApiKey::ApiVersions,
            error_code: 35
        })
    ));
}

#[test]
fn every_api_has_its_own_slot_in_the_tables() {
    // One distinct range per API: a slot shared by two APIs would mix their versions.
    let ranges = ApiKey::ALL.map(|api| (api, VersionRange::new(0, api.id())));
    let v = Versions::from_broker_ranges(ranges);
    for api in ApiKey::ALL {
        assert_eq!(
            v.broker_range(api),
            Some(VersionRange::new(0, api.id())),
            "{api}"
        );
    }
    assert_eq!(v.get(ApiKey::SaslHandshake).unwrap(), 1);
    assert_eq!(v.get(ApiKey::SaslAuthenticate).unwrap(), 2);
}

#[test]
fn api_key_ids_and_ranges() {
    for api in ApiKey::ALL {
        assert_eq!(ApiKey::from_id(api.id()), Some(api));
        assert!(!api.supported().is_empty());
        assert_eq!(
            api.response_header_version(api.supported().max) == 1,
            // ApiVersions answers in header v0 always, SaslHandshake has no flexible version.
            api != ApiKey::ApiVersions && api != ApiKey::SaslHandshake
        );
    }
    assert_eq!(ApiKey::from_id(1), None);
    assert_eq!(
        VersionRange::new(0, 5).intersect(VersionRange::new(6, 9)),
        None
    );
    assert_eq!(VersionRange::new(0, 5).iter().count(), 6);
    assert_eq!(ApiKey::Produce.to_string(), "Produce");
}
