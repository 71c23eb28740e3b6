//! Kafka's RecordBatch format, magic v2, as the broker stores it on disk.
//!
//! The producer builds each batch once with [`BatchBuilder`], leaving the producer fields
//! unset, and [`stamp`]s (producer id, epoch, base sequence, transactional bit) into the
//! finished bytes every time the batch is (re)sent: an epoch bump or a resequence after
//! `OUT_OF_ORDER_SEQUENCE_NUMBER` rewrites 14 header bytes and the CRC, never the records.
//! [`read_header`], [`decode_records`] and [`split`] take arbitrary bytes and never panic:
//! they serve `MESSAGE_TOO_LARGE` splits, tests and fuzzing, not the hot path.
//!
//! Batch header, big-endian, with byte offsets:
//!
//! | offset | field                | type | notes                                         |
//! |-------:|----------------------|------|-----------------------------------------------|
//! |      0 | baseOffset           | i64  | 0 from a producer; the broker assigns offsets |
//! |      8 | batchLength          | i32  | bytes after this field                        |
//! |     12 | partitionLeaderEpoch | i32  | -1 from a producer                            |
//! |     16 | magic                | i8   | 2                                             |
//! |     17 | crc                  | u32  | CRC-32C of bytes 21.. (attributes to the end) |
//! |     21 | attributes           | i16  | bits 0-2 codec, 3 timestamp type, 4 txn, 5 control |
//! |     23 | lastOffsetDelta      | i32  | record count - 1                              |
//! |     27 | baseTimestamp        | i64  | first record's timestamp                      |
//! |     35 | maxTimestamp         | i64  | largest record timestamp                      |
//! |     43 | producerId           | i64  |                                               |
//! |     51 | producerEpoch        | i16  |                                               |
//! |     53 | baseSequence         | i32  |                                               |
//! |     57 | recordCount          | i32  |                                               |
//! |     61 | records              |      |                                               |
//!
//! Each record: length (zigzag varint, bytes after itself), attributes (i8, 0),
//! timestampDelta (zigzag varlong), offsetDelta (zigzag varint), key length (varint, -1 for
//! null) and key, value length and value, header count (varint), and per header: key length
//! and key (never null), value length (-1 for null) and value.

use alloc::vec::Vec;
use bytes::{BufMut, Bytes, BytesMut};

pub use crate::compression::Compression;
use crate::compression::{Codec, CompressionError, CompressionRatio};
use crate::types::{ProducerEpoch, ProducerId, ProducerIdAndEpoch, Sequence};

mod check;
mod checksum;
mod split;
mod varint;
pub(crate) use check::{check_handed, largest_record};
use checksum::crc32c;
pub use split::{decode_records, decode_records_with, split, split_with};
pub(crate) use split::{split_pieces, SplitPiece};
#[cfg(test)]
use varint::put_varlong;
use varint::{
    len_prefix_len, put_varint, varint_len, varlong_len, RecordHead, SmallVarint, MAX_VARINT_LEN,
    MAX_VARLONG_LEN,
};

const BASE_OFFSET: usize = 0;
const BATCH_LENGTH: usize = 8;
const PARTITION_LEADER_EPOCH: usize = 12;
const MAGIC: usize = 16;
const CRC: usize = 17;
const ATTRIBUTES: usize = 21;
const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;
const PRODUCER_ID: usize = 43;
const PRODUCER_EPOCH: usize = 51;
const BASE_SEQUENCE: usize = 53;
const RECORD_COUNT: usize = 57;

/// Size of a v2 batch header: the bytes a batch occupies before its first record.
pub const RECORD_BATCH_OVERHEAD: usize = 61;

/// baseOffset and batchLength, which batchLength does not count.
const LOG_OVERHEAD: usize = 12;
const MAGIC_V2: i8 = 2;
const CODEC_MASK: i16 = 0x07;
const TRANSACTIONAL_BIT: i16 = 1 << 4;
const CONTROL_BIT: i16 = 1 << 5;
const NO_PARTITION_LEADER_EPOCH: i32 = -1;
const NO_SEQUENCE: i32 = -1;
const NO_TIMESTAMP: i64 = -1;
/// Smallest possible record: seven one-byte fields. Bounds pre-allocation from a count read
/// off untrusted bytes, so a forged count cannot make the decoder reserve gigabytes.
const MIN_RECORD_LEN: usize = 7;
/// Smallest possible header: an empty key and a null value.
const MIN_HEADER_LEN: usize = 2;

type HeaderBytes = [u8; RECORD_BATCH_OVERHEAD];

/// One record header.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Header {
    /// The key. UTF-8 by Kafka's convention; not checked here because the broker does not
    /// check it either and the bytes are only copied through.
    pub key: Bytes,
    /// The value; `None` is encoded as length -1, distinct from an empty value.
    pub value: Option<Bytes>,
}

/// One record as the producer sends it: a `ProducerRecord`'s payload, after serialization.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Record {
    /// The key; `None` (length -1) differs from an empty key for compaction and partitioning.
    pub key: Option<Bytes>,
    /// The value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers, in order. Duplicate keys are allowed, as in Kafka.
    pub headers: Vec<Header>,
    /// Milliseconds since the Unix epoch (CreateTime), as given by the application.
    pub timestamp: i64,
}

impl Record {
    /// A record with a value and no key or headers.
    #[must_use]
    pub fn from_value(value: Bytes, timestamp: i64) -> Self {
        Self {
            key: None,
            value: Some(value),
            headers: Vec::new(),
            timestamp,
        }
    }

    /// A record with a key and a value.
    #[must_use]
    pub fn new(key: Option<Bytes>, value: Option<Bytes>, timestamp: i64) -> Self {
        Self {
            key,
            value,
            headers: Vec::new(),
            timestamp,
        }
    }
}

/// Why a byte string is not a batch this module can read.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[non_exhaustive]
pub enum RecordError {
    /// The bytes end before the structure they describe does.
    #[error("record batch is truncated")]
    Truncated,
    /// The magic byte is not 2; v0/v1 message sets are not produced by this crate.
    #[error("unsupported record batch magic {0}, only v2 is supported")]
    BadMagic(i8),
    /// The stored CRC does not match the bytes.
    #[error(
        "record batch CRC mismatch: header has {expected:#010x}, bytes hash to {actual:#010x}"
    )]
    BadCrc {
        /// The CRC stored in the batch header.
        expected: u32,
        /// The CRC-32C computed over the batch's bytes.
        actual: u32,
    },
    /// The bytes are framed correctly but their content is inconsistent.
    #[error("malformed record batch: {0}")]
    Malformed(&'static str),
    /// The batch is compressed and no compressor for its codec was given.
    #[error("record batch is compressed, cannot decode its records")]
    Compressed,
    /// The batch is compressed and its records section does not decompress.
    #[error(transparent)]
    Decompression(#[from] CompressionError),
}

/// Builds one v2 batch into a single [`BytesMut`].
///
/// The header's 61 bytes are reserved up front and written by [`BatchBuilder::finish`], so
/// records are encoded straight into their final place and never moved.
#[derive(Debug)]
pub struct BatchBuilder {
    buf: BytesMut,
    compression: Compression,
    /// The compression ratio [`BatchBuilder::size_in_bytes`] assumes; 1.0 without a codec.
    ratio: CompressionRatio,
    record_count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchBuilder {
    /// An empty builder whose buffer starts with room for `capacity_hint` bytes (at least
    /// the header), so a batch filled up to `batch.size` never reallocates.
    ///
    /// # Panics
    ///
    /// If `capacity_hint` cannot be allocated.
    #[must_use]
    pub fn new(compression: Compression, capacity_hint: usize) -> Self {
        Self::with_ratio(compression, CompressionRatio::ONE, capacity_hint)
    }

    /// A builder whose [`BatchBuilder::size_in_bytes`] assumes the records compress by
    /// `ratio` (ignored without a codec); `capacity_hint` is the estimated *compressed*
    /// size wanted.
    ///
    /// The buffer starts with room for `capacity_hint` bytes whatever `ratio` says, and
    /// grows as records are written: Java's `RecordAccumulator.append` allocates
    /// `max(batch.size, record upper bound)` for every batch and lets the estimate
    /// decide only when the batch is full. Sizing it by `1 / ratio` instead reserved up
    /// to 10,000 times the hint for an open batch of a very compressible topic (see
    /// `crates/kacrab-compression/tests/reservation.rs`).
    ///
    /// # Panics
    ///
    /// If the buffer cannot be allocated.
    #[must_use]
    pub fn with_ratio(
        compression: Compression,
        ratio: CompressionRatio,
        capacity_hint: usize,
    ) -> Self {
        let ratio = match compression {
            Compression::None => CompressionRatio::ONE,
            Compression::Codec(_) => ratio,
        };
        let buf = header_reserved(capacity_hint);
        Self {
            buf,
            compression,
            ratio,
            record_count: 0,
            base_timestamp: NO_TIMESTAMP,
            max_timestamp: NO_TIMESTAMP,
        }
    }

    /// An empty builder without a codec that writes into `buf` (emptied first): a freed
    /// batch's buffer, reused. `buf` should be reference-counted already (one of
    /// [`BatchBuilder`]'s own), or sharing the batch later allocates.
    pub(crate) fn in_buffer(mut buf: BytesMut) -> Self {
        buf.clear();
        buf.put_bytes(0, RECORD_BATCH_OVERHEAD);
        Self {
            buf,
            compression: Compression::None,
            ratio: CompressionRatio::ONE,
            record_count: 0,
            base_timestamp: NO_TIMESTAMP,
            max_timestamp: NO_TIMESTAMP,
        }
    }

    /// An upper bound of `record`'s encoded size, length prefix included, whatever batch it
    /// lands in: the timestamp and offset deltas are assumed to take their longest encodings.
    /// Fit for sizing buffers before a batch exists (Kafka's `estimateSizeInBytesUpperBound`).
    #[must_use]
    pub fn estimated_record_size(record: &Record) -> usize {
        let body = 1 + MAX_VARLONG_LEN + MAX_VARINT_LEN + payload_len(record);
        len_prefix_len(body) + body
    }

    /// The buffer Kafka allocates for a batch whose first record is `record` when that
    /// record is larger than `batch.size`: a v2 batch's header plus the record with every
    /// varint at its longest, the length prefix included (`AbstractRecords.
    /// estimateSizeInBytesUpperBound`, i.e. `DefaultRecordBatch.estimateBatchSizeUpperBound`
    /// with `DefaultRecord.MAX_RECORD_OVERHEAD` = 21). The same whatever the codec: Kafka
    /// sizes the buffer for the uncompressed record.
    #[must_use]
    pub fn batch_size_upper_bound(record: &Record) -> usize {
        RECORD_BATCH_OVERHEAD
            + MAX_VARINT_LEN
            + 1
            + MAX_VARLONG_LEN
            + MAX_VARINT_LEN
            + payload_len(record)
    }

    /// Whether `record` fits without the batch growing past `write_limit` bytes (the
    /// batch's buffer: `batch.size`, or more for a first record larger than that, see
    /// [`BatchBuilder::batch_size_upper_bound`]).
    ///
    /// As in Kafka's `MemoryRecordsBuilder.hasRoomFor`, an empty builder always has room, so
    /// a record larger than `batch.size` still gets a batch of its own, a full builder
    /// ([`BatchBuilder::is_full`]) has none, and the size checked is the exact one the
    /// record would take here (its real deltas), so a batch packs as many records as
    /// Kafka's would.
    #[must_use]
    pub fn has_room_for(&self, record: &Record, write_limit: usize) -> bool {
        if self.is_empty() {
            return true;
        }
        if self.is_full(write_limit) {
            return false;
        }
        let body = self.body_len(record);
        let needed = len_prefix_len(body) + body;
        self.size_in_bytes().saturating_add(needed) <= write_limit
    }

    /// Whether the batch takes no more records and is ready to send whatever its linger:
    /// it holds a record and its (estimated) size reached `write_limit` (Kafka's
    /// `MemoryRecordsBuilder.isFull`).
    #[must_use]
    pub fn is_full(&self, write_limit: usize) -> bool {
        !self.is_empty() && self.size_in_bytes() >= write_limit
    }

    /// Appends `record` with the next offset delta; its timestamp delta is taken from the
    /// first record's timestamp, which becomes the batch's base timestamp.
    ///
    /// Writes only into the builder's buffer: one `reserve` (no-op while the capacity hint
    /// suffices), no other allocation.
    ///
    /// # Panics
    ///
    /// If a key, value, header or the record is longer than `i32::MAX` bytes, or the batch
    /// would hold more than `i32::MAX` records: Kafka cannot represent either, and the
    /// producer's `max.request.size` check rejects such records before they get here.
    pub fn append(&mut self, record: &Record) {
        if self.record_count == 0 {
            self.base_timestamp = record.timestamp;
            self.max_timestamp = record.timestamp;
        } else {
            self.max_timestamp = self.max_timestamp.max(record.timestamp);
        }
        // Kafka computes the delta in wrapping 64-bit arithmetic; the reader adds it back the
        // same way, so every pair of timestamps round trips.
        let timestamp_delta = record.timestamp.wrapping_sub(self.base_timestamp);
        let key = record.key.as_deref();
        let value = record.value.as_deref();
        // The record's size comes from the encoded fields' own lengths: nothing is
        // encoded or walked twice.
        let mut head = RecordHead::new(
            timestamp_delta,
            self.record_count,
            key.map_or(-1, |k| to_i32(k.len())),
        );
        let value_len = SmallVarint::new(value.map_or(-1, |v| to_i32(v.len())));
        let headers_len = if record.headers.is_empty() {
            1
        } else {
            headers_len(&record.headers)
        };
        let body = head.fields_len()
            + key.map_or(0, <[u8]>::len)
            + value_len.len()
            + value.map_or(0, <[u8]>::len)
            + headers_len;
        head.prefix_length(to_i32(body));
        debug_assert_eq!(body, self.body_len(record));

        let buf = &mut self.buf;
        buf.reserve(head.len() - head.fields_len() + body);
        head.append_to(buf);
        if let Some(k) = key {
            buf.extend_from_slice(k);
        }
        value_len.append_to(buf);
        if let Some(v) = value {
            buf.extend_from_slice(v);
        }
        if record.headers.is_empty() {
            buf.put_u8(0);
        } else {
            put_varint(buf, to_i32(record.headers.len()));
            for header in &record.headers {
                put_varint(buf, to_i32(header.key.len()));
                buf.put_slice(&header.key);
                put_nullable(buf, header.value.as_deref());
            }
        }
        self.record_count = self
            .record_count
            .checked_add(1)
            .expect("a batch holds at most i32::MAX records");
    }

    /// Records appended so far.
    #[must_use]
    pub fn record_count(&self) -> i32 {
        self.record_count
    }

    /// The size the finished batch will have, header included: exact without a codec,
    /// else the header plus the records' estimated compressed size (Java's
    /// `MemoryRecordsBuilder.estimatedBytesWritten`).
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        match self.compression {
            Compression::None => self.buf.len(),
            Compression::Codec(_) => {
                RECORD_BATCH_OVERHEAD + self.ratio.estimate(self.uncompressed_records_len())
            }
        }
    }

    /// The records section's size before compression.
    #[must_use]
    pub fn uncompressed_records_len(&self) -> usize {
        self.buf.len() - RECORD_BATCH_OVERHEAD
    }

    /// Whether no record was appended.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.record_count == 0
    }

    /// Writes the header and returns the batch, ready for [`stamp`].
    ///
    /// The header is a fresh producer's: baseOffset 0, partitionLeaderEpoch -1, no producer id,
    /// epoch or sequence (-1), CreateTime, not transactional, not control. The CRC is
    /// computed here, once; [`stamp`] recomputes it after writing the producer fields.
    /// An empty builder yields a valid batch with recordCount 0 and timestamps -1.
    ///
    /// # Panics
    ///
    /// If the batch is longer than `i32::MAX` bytes (see [`BatchBuilder::append`]).
    #[must_use]
    pub fn finish(self) -> BytesMut {
        self.close(Crc::Write).data
    }

    /// Compresses the records (if a codec is set) and writes the header; the CRC only
    /// with [`Crc::Write`]: a batch that will be [`stamp`]ed before anyone reads it gets
    /// its CRC there (the idempotent producer's path), and hashing twice is waste.
    pub(crate) fn close(self, crc: Crc) -> ClosedBatch {
        let Self {
            buf,
            compression,
            ratio: _,
            record_count,
            base_timestamp,
            max_timestamp,
        } = self;
        let uncompressed_records_len = buf.len() - RECORD_BATCH_OVERHEAD;
        let (mut buf, codec, compression_failed) = match compress(&compression, &buf) {
            Compressed::Yes(out, codec) => (out, Some(codec), false),
            Compressed::NotAsked => (buf, None, false),
            Compressed::Failed => (buf, None, true),
        };
        let attributes = codec.map_or(0, Codec::attribute_bits);
        let batch_length = to_i32(buf.len() - LOG_OVERHEAD);
        if let Some(h) = buf.first_chunk_mut::<RECORD_BATCH_OVERHEAD>() {
            put_at(h, BASE_OFFSET, 0i64.to_be_bytes());
            put_at(h, BATCH_LENGTH, batch_length.to_be_bytes());
            put_at(
                h,
                PARTITION_LEADER_EPOCH,
                NO_PARTITION_LEADER_EPOCH.to_be_bytes(),
            );
            put_at(h, MAGIC, MAGIC_V2.to_be_bytes());
            put_at(h, ATTRIBUTES, attributes.to_be_bytes());
            put_at(
                h,
                LAST_OFFSET_DELTA,
                (record_count - 1).max(0).to_be_bytes(),
            );
            put_at(h, BASE_TIMESTAMP, base_timestamp.to_be_bytes());
            put_at(h, MAX_TIMESTAMP, max_timestamp.to_be_bytes());
            put_at(h, PRODUCER_ID, ProducerId::NONE.0.to_be_bytes());
            put_at(h, PRODUCER_EPOCH, ProducerEpoch::NONE.0.to_be_bytes());
            put_at(h, BASE_SEQUENCE, NO_SEQUENCE.to_be_bytes());
            put_at(h, RECORD_COUNT, record_count.to_be_bytes());
        }
        if crc == Crc::Write {
            write_crc(&mut buf);
        }
        ClosedBatch {
            data: buf,
            uncompressed_records_len,
            compression_failed,
        }
    }

    /// Encoded size of `record` after the length prefix, were it appended next.
    fn body_len(&self, record: &Record) -> usize {
        let timestamp_delta = record.timestamp.wrapping_sub(self.base_timestamp);
        1 + varlong_len(timestamp_delta) + varint_len(self.record_count) + payload_len(record)
    }
}

/// Whether [`BatchBuilder::close`] computes the CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Crc {
    /// Now: the batch may be read before it is stamped.
    Write,
    /// Not now: [`stamp`] will write it before the batch leaves the producer.
    LeaveToStamp,
}

/// A finished batch and what a metrics reader wants to know about its compression.
#[derive(Debug)]
pub(crate) struct ClosedBatch {
    /// The encoded batch.
    pub(crate) data: BytesMut,
    /// The records section's size before compression (equal to its size without a codec).
    pub(crate) uncompressed_records_len: usize,
    /// The compressor failed and the batch went out uncompressed.
    pub(crate) compression_failed: bool,
}

/// What compressing a finished records section gave.
enum Compressed {
    /// A new buffer: a zeroed header's room, then the compressed records.
    Yes(BytesMut, Codec),
    /// No codec is configured.
    NotAsked,
    /// The codec failed; the batch stays uncompressed.
    Failed,
}

/// Compresses `buf[RECORD_BATCH_OVERHEAD..]` into a fresh buffer, as Kafka compresses
/// the whole records section as one stream.
fn compress(compression: &Compression, buf: &BytesMut) -> Compressed {
    let Compression::Codec(compressor) = compression else {
        return Compressed::NotAsked;
    };
    let records = buf.get(RECORD_BATCH_OVERHEAD..).unwrap_or_default();
    // Most logs compress to well under half; the buffer grows if not.
    let mut out = header_reserved(RECORD_BATCH_OVERHEAD + records.len() / 2 + 64);
    match compressor.compress(records, &mut out) {
        Ok(()) => Compressed::Yes(out, compressor.codec()),
        Err(_) => Compressed::Failed,
    }
}

/// A reference-counted buffer of `capacity` bytes holding a zeroed batch header.
fn header_reserved(capacity: usize) -> BytesMut {
    let mut buf = BytesMut::with_capacity(capacity.max(RECORD_BATCH_OVERHEAD));
    // Make the buffer reference-counted now, while the batch is being built: a
    // Vec-backed buffer would allocate its shared header on the first clone, which
    // happens when the batch is first drained, on the stamp path.
    drop(buf.split_to(0));
    buf.put_bytes(0, RECORD_BATCH_OVERHEAD);
    buf
}

/// Header fields read back from a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchHeader {
    /// First offset; 0 in a producer's batch.
    pub base_offset: i64,
    /// Bytes after the batchLength field; the batch is `batch_length + 12` bytes long.
    pub batch_length: i32,
    /// Producer id, [`ProducerId::NONE`] if unstamped.
    pub producer_id: ProducerId,
    /// Producer epoch, [`ProducerEpoch::NONE`] if unstamped.
    pub producer_epoch: ProducerEpoch,
    /// Sequence of the first record, -1 if unstamped.
    pub base_sequence: i32,
    /// Number of records.
    pub record_count: i32,
    /// Attribute bit 4: the batch belongs to a transaction.
    pub transactional: bool,
    /// Attribute bit 5: a broker-written commit/abort marker batch.
    pub control: bool,
    /// The stored CRC (verified by [`read_header`]).
    pub crc: u32,
    /// Offset delta of the last record.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// Largest record timestamp.
    pub max_timestamp: i64,
}

/// Reads and checks a batch's header: exact length, magic 2, CRC, non-negative count.
///
/// `batch` must be exactly one batch (no trailing bytes), as the producer hands them around.
pub fn read_header(batch: &[u8]) -> Result<BatchHeader, RecordError> {
    let h = check_frame(batch)?;
    let expected = u32::from_be_bytes(get_at(h, CRC));
    let actual = crc32c(batch.get(ATTRIBUTES..).unwrap_or_default());
    if expected != actual {
        return Err(RecordError::BadCrc { expected, actual });
    }
    let attributes = i16::from_be_bytes(get_at(h, ATTRIBUTES));
    Ok(BatchHeader {
        base_offset: i64::from_be_bytes(get_at(h, BASE_OFFSET)),
        batch_length: i32::from_be_bytes(get_at(h, BATCH_LENGTH)),
        producer_id: ProducerId(i64::from_be_bytes(get_at(h, PRODUCER_ID))),
        producer_epoch: ProducerEpoch(i16::from_be_bytes(get_at(h, PRODUCER_EPOCH))),
        base_sequence: i32::from_be_bytes(get_at(h, BASE_SEQUENCE)),
        record_count: i32::from_be_bytes(get_at(h, RECORD_COUNT)),
        transactional: attributes & TRANSACTIONAL_BIT != 0,
        control: attributes & CONTROL_BIT != 0,
        crc: expected,
        last_offset_delta: i32::from_be_bytes(get_at(h, LAST_OFFSET_DELTA)),
        base_timestamp: i64::from_be_bytes(get_at(h, BASE_TIMESTAMP)),
        max_timestamp: i64::from_be_bytes(get_at(h, MAX_TIMESTAMP)),
    })
}

/// Writes (producer id, epoch, base sequence, transactional bit) into an encoded batch in
/// place and recomputes the CRC. No record bytes are copied or moved, nothing is allocated.
///
/// The frame is checked as [`read_header`] does (length, magic, count) but the old CRC is not
/// verified: it is about to be replaced, and checking it would hash the batch twice on the
/// path every retry takes. Any identity may be stamped, [`ProducerIdAndEpoch::NONE`] and
/// sequence -1 included, which make the batch unstamped again.
pub fn stamp(
    batch: &mut [u8],
    id: ProducerIdAndEpoch,
    base_sequence: Sequence,
    transactional: bool,
) -> Result<(), RecordError> {
    check_frame(batch)?;
    let h = batch
        .first_chunk_mut::<RECORD_BATCH_OVERHEAD>()
        .ok_or(RecordError::Truncated)?;
    put_at(h, PRODUCER_ID, id.id.0.to_be_bytes());
    put_at(h, PRODUCER_EPOCH, id.epoch.0.to_be_bytes());
    put_at(h, BASE_SEQUENCE, base_sequence.0.to_be_bytes());
    let attributes = i16::from_be_bytes(get_at(h, ATTRIBUTES));
    let attributes = if transactional {
        attributes | TRANSACTIONAL_BIT
    } else {
        attributes & !TRANSACTIONAL_BIT
    };
    put_at(h, ATTRIBUTES, attributes.to_be_bytes());
    write_crc(batch);
    Ok(())
}

/// Checks framing (header present, magic 2, batchLength matches the slice exactly,
/// recordCount non-negative) and returns the header bytes.
fn check_frame(batch: &[u8]) -> Result<&HeaderBytes, RecordError> {
    let h = batch
        .first_chunk::<RECORD_BATCH_OVERHEAD>()
        .ok_or(RecordError::Truncated)?;
    let magic = i8::from_be_bytes(get_at(h, MAGIC));
    if magic != MAGIC_V2 {
        return Err(RecordError::BadMagic(magic));
    }
    let batch_length = i32::from_be_bytes(get_at(h, BATCH_LENGTH));
    let total = usize::try_from(batch_length)
        .ok()
        .and_then(|l| l.checked_add(LOG_OVERHEAD))
        .filter(|&t| t >= RECORD_BATCH_OVERHEAD)
        .ok_or(RecordError::Malformed(
            "batchLength is shorter than the batch header",
        ))?;
    if batch.len() < total {
        return Err(RecordError::Truncated);
    }
    if batch.len() > total {
        return Err(RecordError::Malformed("bytes after the end of the batch"));
    }
    if i32::from_be_bytes(get_at(h, RECORD_COUNT)) < 0 {
        return Err(RecordError::Malformed("negative recordCount"));
    }
    Ok(h)
}

/// Recomputes the CRC over attributes..end and stores it.
fn write_crc(batch: &mut [u8]) {
    let crc = crc32c(batch.get(ATTRIBUTES..).unwrap_or_default());
    if let Some(h) = batch.first_chunk_mut::<RECORD_BATCH_OVERHEAD>() {
        put_at(h, CRC, crc.to_be_bytes());
    }
}

/// Copies `N` header bytes at `at` (a constant offset inside the header).
fn get_at<const N: usize>(h: &HeaderBytes, at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&h[at..at + N]);
    out
}

/// Stores `N` bytes at `at` (a constant offset inside the header).
fn put_at<const N: usize>(h: &mut HeaderBytes, at: usize, bytes: [u8; N]) {
    h[at..at + N].copy_from_slice(&bytes);
}

/// Encoded size of a record's key, value and headers: everything but length, attributes
/// and the two deltas.
fn payload_len(record: &Record) -> usize {
    nullable_len(record.key.as_deref())
        + nullable_len(record.value.as_deref())
        + headers_len(&record.headers)
}

/// Encoded size of a record's header count and headers.
fn headers_len(headers: &[Header]) -> usize {
    let each: usize = headers
        .iter()
        .map(|h| len_prefix_len(h.key.len()) + h.key.len() + nullable_len(h.value.as_deref()))
        .sum();
    len_prefix_len(headers.len()) + each
}

fn nullable_len(bytes: Option<&[u8]>) -> usize {
    bytes.map_or(1, |b| len_prefix_len(b.len()) + b.len())
}

fn put_nullable(buf: &mut BytesMut, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => {
            put_varint(buf, to_i32(b.len()));
            buf.put_slice(b);
        }
        None => put_varint(buf, -1),
    }
}

fn to_i32(len: usize) -> i32 {
    i32::try_from(len).expect("Kafka lengths and counts fit in an i32")
}

/// A bounds-checked cursor over `data[pos..end]`; every read fails with `eof` instead of
/// panicking when the bytes run out.
struct Reader<'a> {
    data: &'a Bytes,
    pos: usize,
    end: usize,
    eof: RecordError,
}

impl Reader<'_> {
    fn u8(&mut self) -> Result<u8, RecordError> {
        if self.pos >= self.end {
            return Err(self.eof.clone());
        }
        let b = self
            .data
            .get(self.pos)
            .copied()
            .ok_or(RecordError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn uvarint(&mut self, max_len: usize) -> Result<u64, RecordError> {
        let mut value = 0u64;
        for i in 0..max_len {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                // Only a 10-byte varlong's last byte can carry bits past 64.
                if i == MAX_VARLONG_LEN - 1 && b > 1 {
                    return Err(RecordError::Malformed("varlong overflows 64 bits"));
                }
                return Ok(value);
            }
        }
        Err(RecordError::Malformed(
            "varint longer than its maximum length",
        ))
    }

    fn varint(&mut self) -> Result<i32, RecordError> {
        let raw = u32::try_from(self.uvarint(MAX_VARINT_LEN)?)
            .map_err(|_| RecordError::Malformed("varint overflows 32 bits"))?;
        Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
    }

    fn varlong(&mut self) -> Result<i64, RecordError> {
        let raw = self.uvarint(MAX_VARLONG_LEN)?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    /// A length that must not be negative.
    fn length(&mut self) -> Result<usize, RecordError> {
        usize::try_from(self.varint()?).map_err(|_| RecordError::Malformed("negative length"))
    }

    fn bytes(&mut self, len: usize) -> Result<Bytes, RecordError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&e| e <= self.end)
            .ok_or_else(|| self.eof.clone())?;
        let out = self.data.slice(self.pos..end);
        self.pos = end;
        Ok(out)
    }

    /// Length-prefixed bytes where length -1 means null.
    fn nullable(&mut self) -> Result<Option<Bytes>, RecordError> {
        match self.varint()? {
            -1 => Ok(None),
            len => match usize::try_from(len) {
                Ok(len) => self.bytes(len).map(Some),
                Err(_) => Err(RecordError::Malformed("length below -1")),
            },
        }
    }

    /// One record's fields after its length prefix.
    fn record(&mut self, index: i32, base_timestamp: i64) -> Result<Record, RecordError> {
        let _attributes = self.u8()?; // unused by Kafka in v2
        let timestamp_delta = self.varlong()?;
        if self.varint()? != index {
            return Err(RecordError::Malformed(
                "offset delta does not match the record's position",
            ));
        }
        let key = self.nullable()?;
        let value = self.nullable()?;
        let count = self.length()?;
        let room = self.end.saturating_sub(self.pos) / MIN_HEADER_LEN;
        let mut headers = Vec::with_capacity(count.min(room));
        for _ in 0..count {
            let key = self.length()?;
            let key = self.bytes(key)?;
            let value = self.nullable()?;
            headers.push(Header { key, value });
        }
        Ok(Record {
            key,
            value,
            headers,
            timestamp: base_timestamp.wrapping_add(timestamp_delta),
        })
    }
}

#[cfg(test)]
mod tests;
