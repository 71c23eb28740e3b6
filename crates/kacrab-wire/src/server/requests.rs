//! Request bodies, read with the bounded [`Reader`], at every version this crate speaks.
//! Field layouts follow Kafka's request schemas (`clients/src/main/resources/common/message/*Request.json`).

use crate::api::ApiKey;
use crate::error::DecodeError;
use crate::messages::*;
use crate::reader::{ReadError, Reader, R};

pub(super) fn read_body(r: &mut Reader, api: ApiKey, version: i16) -> R<Request> {
    Ok(match api {
        ApiKey::ApiVersions => api_versions(r, version)?.into(),
        ApiKey::Metadata => metadata(r, version)?.into(),
        ApiKey::InitProducerId => init_producer_id(r, version)?.into(),
        ApiKey::Produce => produce(r)?.into(),
        ApiKey::FindCoordinator => find_coordinator(r, version)?.into(),
        ApiKey::AddPartitionsToTxn => add_partitions_to_txn(r)?.into(),
        ApiKey::AddOffsetsToTxn => add_offsets_to_txn(r)?.into(),
        ApiKey::TxnOffsetCommit => txn_offset_commit(r, version)?.into(),
        ApiKey::EndTxn => end_txn(r)?.into(),
        ApiKey::SaslHandshake => SaslHandshakeRequest {
            mechanism: r.string()?,
        }
        .into(),
        ApiKey::SaslAuthenticate => sasl_authenticate(r)?.into(),
        ApiKey::GetTelemetrySubscriptions => {
            let client_instance_id = r.uuid()?;
            r.skip_tagged_fields()?;
            GetTelemetrySubscriptionsRequest { client_instance_id }.into()
        }
        ApiKey::PushTelemetry => push_telemetry(r)?.into(),
    })
}

/// PushTelemetry v0 (flexible): the payload is read as it came, not decompressed.
fn push_telemetry(r: &mut Reader) -> R<PushTelemetryRequest> {
    let req = PushTelemetryRequest {
        client_instance_id: r.uuid()?,
        subscription_id: r.i32()?,
        terminating: r.bool()?,
        compression_type: r.i8()?,
        metrics: r.bytes()?,
    };
    r.skip_tagged_fields()?;
    Ok(req)
}

/// SaslAuthenticate: the mechanism's bytes, tagged fields from v2.
fn sasl_authenticate(r: &mut Reader) -> R<SaslAuthenticateRequest> {
    let auth_bytes = r.bytes()?;
    r.skip_tagged_fields()?;
    Ok(SaslAuthenticateRequest { auth_bytes })
}

fn invalid(what: &'static str) -> ReadError {
    ReadError::Malformed(DecodeError::Invalid(what))
}

/// ApiVersions: empty before v3; the client's software name and version from v3.
fn api_versions(r: &mut Reader, version: i16) -> R<ApiVersionsRequest> {
    let req = if version >= 3 {
        ApiVersionsRequest {
            client_software_name: r.string()?,
            client_software_version: r.string()?,
        }
    } else {
        // Not on the wire: nothing identifies the client.
        ApiVersionsRequest {
            client_software_name: String::new(),
            client_software_version: String::new(),
        }
    };
    r.skip_tagged_fields()?;
    Ok(req)
}

/// Metadata v1+: a nullable topic array (null: every topic), topics by id from v10 (which
/// this crate's type cannot hold), `allow_auto_topic_creation` from v4, the authorized
/// operations flags from v8 (read and dropped: the producer never sets them).
fn metadata(r: &mut Reader, version: i16) -> R<MetadataRequest> {
    let topics = r.nullable_array(|r| {
        if version >= 10 {
            let _topic_id = r.uuid()?;
        }
        let name = if version >= 10 {
            r.nullable_string()?
                .ok_or_else(|| invalid("Metadata topics by id are not supported"))?
        } else {
            r.string()?
        };
        r.skip_tagged_fields()?;
        Ok(name)
    })?;
    let allow_auto_topic_creation = if version >= 4 { r.bool()? } else { true };
    if (8..=10).contains(&version) {
        let _include_cluster_authorized_operations = r.bool()?;
    }
    if version >= 8 {
        let _include_topic_authorized_operations = r.bool()?;
    }
    r.skip_tagged_fields()?;
    Ok(MetadataRequest {
        topics,
        allow_auto_topic_creation,
    })
}

/// InitProducerId: the current producer id and epoch from v3 (-1 before).
fn init_producer_id(r: &mut Reader, version: i16) -> R<InitProducerIdRequest> {
    let transactional_id = r.nullable_string()?;
    let transaction_timeout_ms = r.i32()?;
    let (producer_id, producer_epoch) = if version >= 3 {
        (r.i64()?, r.i16()?)
    } else {
        (-1, -1)
    };
    r.skip_tagged_fields()?;
    Ok(InitProducerIdRequest {
        transactional_id,
        transaction_timeout_ms,
        producer_id,
        producer_epoch,
    })
}

/// Produce v3+: the record batches are slices of the frame. Null records are refused
/// (this crate's type has no null; a producer never sends one).
fn produce(r: &mut Reader) -> R<ProduceRequest> {
    let transactional_id = r.nullable_string()?;
    let acks = r.i16()?;
    let timeout_ms = r.i32()?;
    let topics = r.array(|r| {
        let name = r.string()?;
        let partitions = r.array(|r| {
            let index = r.i32()?;
            let records = r
                .nullable_bytes()?
                .ok_or(ReadError::Malformed(DecodeError::UnexpectedNull))?;
            r.skip_tagged_fields()?;
            Ok(ProducePartition { index, records })
        })?;
        r.skip_tagged_fields()?;
        Ok(ProduceTopic { name, partitions })
    })?;
    r.skip_tagged_fields()?;
    Ok(ProduceRequest {
        transactional_id,
        acks,
        timeout_ms,
        topics,
    })
}

/// FindCoordinator: one key before v4, the batched `coordinator_keys` from v4 (exactly one
/// key, the only form this crate's type holds); the key type from v1 (group before).
fn find_coordinator(r: &mut Reader, version: i16) -> R<FindCoordinatorRequest> {
    let key = if version < 4 { Some(r.string()?) } else { None };
    let key_type = if version >= 1 {
        match r.i8()? {
            0 => CoordinatorType::Group,
            1 => CoordinatorType::Transaction,
            _ => {
                return Err(invalid(
                    "FindCoordinator key type is neither group nor transaction",
                ))
            }
        }
    } else {
        CoordinatorType::Group
    };
    let key = match key {
        Some(key) => key,
        None => {
            let mut keys = r.array(Reader::string)?;
            if keys.len() != 1 {
                return Err(invalid(
                    "FindCoordinator v4+ request must hold exactly one key",
                ));
            }
            keys.swap_remove(0)
        }
    };
    r.skip_tagged_fields()?;
    Ok(FindCoordinatorRequest { key, key_type })
}

/// AddPartitionsToTxn v0-v3 (the client form).
fn add_partitions_to_txn(r: &mut Reader) -> R<AddPartitionsToTxnRequest> {
    let transactional_id = r.string()?;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let topics = r.array(|r| {
        let name = r.string()?;
        let partitions = r.array(Reader::i32)?;
        r.skip_tagged_fields()?;
        Ok(TopicPartitions { name, partitions })
    })?;
    r.skip_tagged_fields()?;
    Ok(AddPartitionsToTxnRequest {
        transactional_id,
        producer_id,
        producer_epoch,
        topics,
    })
}

fn add_offsets_to_txn(r: &mut Reader) -> R<AddOffsetsToTxnRequest> {
    let req = AddOffsetsToTxnRequest {
        transactional_id: r.string()?,
        producer_id: r.i64()?,
        producer_epoch: r.i16()?,
        group_id: r.string()?,
    };
    r.skip_tagged_fields()?;
    Ok(req)
}

fn end_txn(r: &mut Reader) -> R<EndTxnRequest> {
    let req = EndTxnRequest {
        transactional_id: r.string()?,
        producer_id: r.i64()?,
        producer_epoch: r.i16()?,
        committed: r.bool()?,
    };
    r.skip_tagged_fields()?;
    Ok(req)
}

/// TxnOffsetCommit: the group metadata from v3 (KIP-447), the leader epoch from v2.
fn txn_offset_commit(r: &mut Reader, version: i16) -> R<TxnOffsetCommitRequest> {
    let transactional_id = r.string()?;
    let group_id = r.string()?;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let (generation_id, member_id, group_instance_id) = if version >= 3 {
        (r.i32()?, r.string()?, r.nullable_string()?)
    } else {
        (-1, String::new(), None)
    };
    let topics = r.array(|r| {
        let name = r.string()?;
        let partitions = r.array(|r| {
            let partition_index = r.i32()?;
            let committed_offset = r.i64()?;
            let committed_leader_epoch = if version >= 2 { r.i32()? } else { -1 };
            let committed_metadata = r.nullable_string()?;
            r.skip_tagged_fields()?;
            Ok(TxnOffsetCommitPartition {
                partition_index,
                committed_offset,
                committed_leader_epoch,
                committed_metadata,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(TxnOffsetCommitTopic { name, partitions })
    })?;
    r.skip_tagged_fields()?;
    Ok(TxnOffsetCommitRequest {
        transactional_id,
        group_id,
        producer_id,
        producer_epoch,
        generation_id,
        member_id,
        group_instance_id,
        topics,
    })
}
