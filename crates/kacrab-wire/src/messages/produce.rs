//! Produce (key 0), v3–v12.

use bytes::{BufMut, Bytes, BytesMut};
#[cfg(test)]
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::api::ApiKey;
#[cfg(test)]
use crate::encode::sb;
use crate::encode::{encode_error, request_header};
use crate::error::WireError;
use crate::outgoing::Frame;
use crate::reader::{Reader, R};

/// Produce request. `acks = 0` gets no response (see
/// [`crate::EncodedRequest::expects_response`]).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceRequest {
    /// The transactional id, `None` outside transactions.
    pub transactional_id: Option<String>,
    /// Required acknowledgements: -1 (all in-sync replicas), 0 (none) or 1 (leader).
    pub acks: i16,
    /// How long the broker may wait for the acknowledgements.
    pub timeout_ms: i32,
    /// Data per topic.
    pub topics: Vec<ProduceTopic>,
}

/// A topic's data in a Produce request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceTopic {
    /// The topic name.
    pub name: String,
    /// Data per partition.
    pub partitions: Vec<ProducePartition>,
}

/// A partition's data in a Produce request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProducePartition {
    /// The partition index.
    pub index: i32,
    /// The record batch(es), already encoded (magic v2). Not copied until the frame is
    /// written.
    pub records: Bytes,
}

impl ProduceRequest {
    /// The whole frame (length prefix, header, body), with each partition's record
    /// batches as their own parts: the encoder writes only the bytes around them, so a
    /// batch is never copied between the core and the socket.
    ///
    /// Field by field the body is Kafka's `ProduceRequest.json` for v3–v12: flexible
    /// (compact lengths, tagged fields) from v9 (KIP-482).
    pub(crate) fn encode_frame(
        self,
        version: i16,
        correlation_id: i32,
        client_id: Option<&StrBytes>,
    ) -> Result<Frame, WireError> {
        let api = ApiKey::Produce;
        let err = encode_error(api, version);
        let flexible = version >= 9;
        let header = request_header(api, version, correlation_id, client_id);
        let header_version = api.request_header_version(version);
        // Everything but the batches: header, fields and length prefixes.
        let fixed = 4 + header
            .compute_size(header_version)
            .map_err(|e| err(e.into()))?;
        let mut head = BytesMut::with_capacity(fixed + 64 + 32 * self.topics.len());
        head.put_i32(0); // the size, written once it is known
        header
            .encode(&mut head, header_version)
            .map_err(|e| err(e.into()))?;
        let mut cuts: Vec<(usize, Bytes)> = Vec::new();
        let mut batch_bytes = 0usize;
        let mut w = Fields {
            buf: &mut head,
            flexible,
        };
        w.nullable_string(self.transactional_id.as_deref())
            .map_err(&err)?;
        w.buf.put_i16(self.acks);
        w.buf.put_i32(self.timeout_ms);
        w.array_len(self.topics.len()).map_err(&err)?;
        for topic in self.topics {
            w.string(&topic.name).map_err(&err)?;
            w.array_len(topic.partitions.len()).map_err(&err)?;
            for partition in topic.partitions {
                w.buf.put_i32(partition.index);
                w.bytes_len(partition.records.len()).map_err(&err)?;
                batch_bytes += partition.records.len();
                cuts.push((w.buf.len(), partition.records));
                w.no_tagged_fields();
            }
            w.no_tagged_fields();
        }
        w.no_tagged_fields();
        let size = head.len() - 4 + batch_bytes;
        let max = i32::MAX as usize;
        if size > max {
            return Err(WireError::FrameTooLarge { size, max });
        }
        head[..4].copy_from_slice(&(size as i32).to_be_bytes());
        let head = head.freeze();
        let mut frame = Frame::default();
        let mut at = 0;
        for (offset, records) in cuts {
            frame.push(head.slice(at..offset));
            frame.push(records);
            at = offset;
        }
        frame.push(head.slice(at..));
        debug_assert_eq!(frame.len(), 4 + size);
        Ok(frame)
    }

    /// The same request in kafka-protocol's type: the oracle the encoder is checked
    /// against.
    #[cfg(test)]
    pub(crate) fn into_kp(self) -> kp::ProduceRequest {
        kp::ProduceRequest::default()
            .with_transactional_id(self.transactional_id.map(|t| kp::TransactionalId(sb(t))))
            .with_acks(self.acks)
            .with_timeout_ms(self.timeout_ms)
            .with_topic_data(
                self.topics
                    .into_iter()
                    .map(|t| {
                        kp::produce_request::TopicProduceData::default()
                            .with_name(kp::TopicName(sb(t.name)))
                            .with_partition_data(
                                t.partitions
                                    .into_iter()
                                    .map(|p| {
                                        kp::produce_request::PartitionProduceData::default()
                                            .with_index(p.index)
                                            .with_records(Some(p.records))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            )
    }
}

type FieldError = Box<dyn std::error::Error + Send + Sync>;

/// Kafka's primitive types, classic or flexible (compact) by the request's version.
struct Fields<'a> {
    buf: &'a mut BytesMut,
    flexible: bool,
}

impl Fields<'_> {
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }

    /// A length as a compact `len + 1` varint, or a classic `int16`/`int32`.
    fn compact_len(&mut self, len: usize) -> Result<(), FieldError> {
        let plus_one = u32::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(1))
            .ok_or("length does not fit a compact length")?;
        self.uvarint(plus_one);
        Ok(())
    }

    fn string(&mut self, s: &str) -> Result<(), FieldError> {
        if self.flexible {
            self.compact_len(s.len())?;
        } else {
            let len = i16::try_from(s.len()).map_err(|_| "string longer than 32,767 bytes")?;
            self.buf.put_i16(len);
        }
        self.buf.put_slice(s.as_bytes());
        Ok(())
    }

    fn nullable_string(&mut self, s: Option<&str>) -> Result<(), FieldError> {
        match s {
            Some(s) => self.string(s),
            None if self.flexible => {
                self.uvarint(0);
                Ok(())
            }
            None => {
                self.buf.put_i16(-1);
                Ok(())
            }
        }
    }

    fn array_len(&mut self, len: usize) -> Result<(), FieldError> {
        if self.flexible {
            self.compact_len(len)
        } else {
            let len = i32::try_from(len).map_err(|_| "array longer than i32::MAX")?;
            self.buf.put_i32(len);
            Ok(())
        }
    }

    /// The length of a non-null `bytes`/`records` field; its bytes are the caller's.
    fn bytes_len(&mut self, len: usize) -> Result<(), FieldError> {
        self.array_len(len)
    }

    fn no_tagged_fields(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }
}

/// Produce response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceResponse {
    /// Results per topic.
    pub topics: Vec<ProduceTopicResponse>,
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Endpoints of the leaders named in `current_leader` fields (v10+, KIP-951).
    pub node_endpoints: Vec<NodeEndpoint>,
}

/// A topic's results in a Produce response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProduceTopicResponse {
    /// The topic name.
    pub name: String,
    /// Results per partition.
    pub partitions: Vec<ProducePartitionResponse>,
}

/// A partition's result in a Produce response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProducePartitionResponse {
    /// The partition index.
    pub index: i32,
    /// Error code.
    pub error_code: i16,
    /// Offset of the first record appended.
    pub base_offset: i64,
    /// Append time set by the broker with LogAppendTime topics, -1 otherwise.
    pub log_append_time_ms: i64,
    /// The partition's log start offset (v5+; -1 before).
    pub log_start_offset: i64,
    /// Records that caused the batch to be dropped (v8+).
    pub record_errors: Vec<RecordError>,
    /// Error message (v8+).
    pub error_message: Option<String>,
    /// The current leader, when the broker tells it (v10+, KIP-951; on
    /// NOT_LEADER_OR_FOLLOWER and the like).
    pub current_leader: Option<LeaderIdAndEpoch>,
}

/// A record that made the broker drop its batch.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RecordError {
    /// Index of the record in the batch.
    pub batch_index: i32,
    /// What was wrong with it.
    pub message: Option<String>,
}

/// A partition leader and its epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LeaderIdAndEpoch {
    /// The leader's node id, -1 when unknown.
    pub leader_id: i32,
    /// The leader epoch, -1 when unknown.
    pub leader_epoch: i32,
}

/// A broker's endpoint in a Produce response (v10+).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct NodeEndpoint {
    /// The node id.
    pub node_id: i32,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: i32,
    /// Its rack.
    pub rack: Option<String>,
}

impl ProduceResponse {
    pub(crate) fn read(r: &mut Reader, version: i16) -> R<Self> {
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| read_partition(r, version))?;
            r.skip_tagged_fields()?;
            Ok(ProduceTopicResponse { name, partitions })
        })?;
        let throttle_time_ms = r.i32()?;
        let mut node_endpoints = Vec::new();
        r.tagged_fields(|tag, f| {
            if tag != 0 || version < 10 {
                return Ok(false);
            }
            node_endpoints = f.array(|r| {
                let e = NodeEndpoint {
                    node_id: r.i32()?,
                    host: r.string()?,
                    port: r.i32()?,
                    rack: r.nullable_string()?,
                };
                r.skip_tagged_fields()?;
                Ok(e)
            })?;
            Ok(true)
        })?;
        Ok(Self {
            topics,
            throttle_time_ms,
            node_endpoints,
        })
    }
}

fn read_partition(r: &mut Reader, version: i16) -> R<ProducePartitionResponse> {
    let index = r.i32()?;
    let error_code = r.i16()?;
    let base_offset = r.i64()?;
    let log_append_time_ms = r.i64()?;
    let log_start_offset = if version >= 5 { r.i64()? } else { -1 };
    let (record_errors, error_message) = if version >= 8 {
        let errors = r.array(|r| {
            let e = RecordError {
                batch_index: r.i32()?,
                message: r.nullable_string()?,
            };
            r.skip_tagged_fields()?;
            Ok(e)
        })?;
        (errors, r.nullable_string()?)
    } else {
        (Vec::new(), None)
    };
    let mut current_leader = None;
    r.tagged_fields(|tag, f| {
        if tag != 0 || version < 10 {
            return Ok(false);
        }
        let leader = LeaderIdAndEpoch {
            leader_id: f.i32()?,
            leader_epoch: f.i32()?,
        };
        f.skip_tagged_fields()?;
        current_leader = Some(leader);
        Ok(true)
    })?;
    Ok(ProducePartitionResponse {
        index,
        error_code,
        base_offset,
        log_append_time_ms,
        log_start_offset,
        record_errors,
        error_message,
        current_leader,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::frame;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Per topic its name, and per partition its index and records.
    type Topics = Vec<(String, Vec<(i32, Vec<u8>)>)>;

    fn request(txn: Option<String>, acks: i16, timeout_ms: i32, topics: Topics) -> ProduceRequest {
        ProduceRequest {
            transactional_id: txn,
            acks,
            timeout_ms,
            topics: topics
                .into_iter()
                .map(|(name, ps)| ProduceTopic {
                    name,
                    partitions: ps
                        .into_iter()
                        .map(|(index, r)| ProducePartition {
                            index,
                            records: Bytes::from(r),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Our Produce encoder writes, byte for byte, what kafka-protocol's writes, at
        /// every version; and every batch is a part of the frame, the caller's own bytes.
        #[test]
        fn produce_frame_is_kafka_protocols_with_batches_uncopied(
            v in 3i16..=12,
            txn in proptest::option::of("[a-zA-Z0-9._ü-]{0,130}"),
            acks in prop_oneof![Just(-1i16), Just(0), Just(1)],
            timeout in any::<i32>(),
            client in proptest::option::of("[a-z0-9-]{0,20}"),
            topics in vec(("[a-zA-Z0-9._-]{0,140}", vec((any::<i32>(), vec(any::<u8>(), 0..200)), 0..4)), 0..4),
        ) {
            let req = request(txn, acks, timeout, topics);
            let client = client.map(StrBytes::from_string);
            let oracle = frame(ApiKey::Produce, v, 77, client.as_ref(), &req.clone().into_kp()).unwrap();
            let batches: Vec<Bytes> = req
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.records.clone()))
                .filter(|b| !b.is_empty())
                .collect();
            let ours = req.encode_frame(v, 77, client.as_ref()).unwrap();
            prop_assert_eq!(ours.to_bytes(), oracle);
            for batch in &batches {
                prop_assert!(
                    ours.parts().any(|p| p.as_ptr() == batch.as_ptr() && p.len() == batch.len()),
                    "a batch was copied into the frame"
                );
            }
        }
    }

    #[test]
    fn a_name_too_long_for_a_classic_string_is_an_encode_error() {
        let req = request(
            None,
            -1,
            1000,
            vec![("t".repeat(40_000), vec![(0, vec![1])])],
        );
        assert!(matches!(
            req.clone().encode_frame(8, 1, None),
            Err(WireError::Encode { .. })
        ));
        // Compact strings (v9+) have room for it, as kafka-protocol's encoder agrees.
        let ours = req.clone().encode_frame(9, 1, None).unwrap();
        let oracle = frame(ApiKey::Produce, 9, 1, None, &req.into_kp()).unwrap();
        assert_eq!(ours.to_bytes(), oracle);
    }
}
