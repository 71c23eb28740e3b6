//! An independent reader of Kafka's RecordBatch format, magic v2.
//!
//! Written from the wire format, not from the core's writer, so that the model
//! broker is an oracle of its own. It reads exactly one batch, checks its
//! framing and CRC32C, and decodes uncompressed records (key, value, headers).
//! It never panics on malformed input: every read is bounds-checked and every
//! failure is a [`BatchError`] that maps to the Kafka error code a broker would
//! answer with.
//!
//! Layout (big-endian):
//!
//! | offset | field |
//! |---|---|
//! | 0 | baseOffset i64 |
//! | 8 | batchLength i32 (bytes after this field) |
//! | 12 | partitionLeaderEpoch i32 |
//! | 16 | magic i8 |
//! | 17 | crc u32 (CRC32C of everything from attributes to the end) |
//! | 21 | attributes i16 |
//! | 23 | lastOffsetDelta i32 |
//! | 27 | baseTimestamp i64 |
//! | 35 | maxTimestamp i64 |
//! | 43 | producerId i64 |
//! | 51 | producerEpoch i16 |
//! | 53 | baseSequence i32 |
//! | 57 | records count i32 |
//! | 61 | records |
//!
//! A record is: length varint, attributes i8, timestampDelta varlong,
//! offsetDelta varint, keyLength varint + key, valueLength varint + value,
//! header count varint, then per header keyLength varint + key, valueLength
//! varint + value. Lengths of -1 mean null. Varints are zig-zag encoded.

use bytes::Bytes;

/// The only magic value this reader accepts.
pub const MAGIC_V2: i8 = 2;
/// Size of the fixed batch header, records count included.
pub const HEADER_LEN: usize = 61;
/// Bytes before `batchLength` counts: baseOffset and batchLength itself.
pub const LOG_OVERHEAD: usize = 12;
/// Offset of the attributes field, where the CRC coverage starts.
const CRC_START: usize = 21;
/// Smallest encoded record: seven one-byte fields.
const MIN_RECORD_LEN: usize = 7;

/// Attributes bits 0..=2: compression codec (0 = none).
pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// Attributes bit 3: timestamp type is LogAppendTime.
pub const ATTR_LOG_APPEND_TIME: i16 = 0x08;
/// Attributes bit 4: the batch is transactional.
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Attributes bit 5: the batch is a control batch (transaction marker).
pub const ATTR_CONTROL: i16 = 0x20;
/// Attributes bit 6: the batch has a delete horizon (compaction).
pub const ATTR_DELETE_HORIZON: i16 = 0x40;

/// Why a batch could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// Fewer bytes than the fixed header, or than `batchLength` announces.
    Truncated,
    /// `batchLength` is negative, too small, or the buffer holds bytes after
    /// the batch (a produce request carries exactly one batch per partition).
    BadLength,
    /// The magic byte is not 2.
    BadMagic(i8),
    /// The stored CRC does not match the CRC32C of the covered bytes.
    CrcMismatch {
        /// CRC stored in the batch header.
        stored: u32,
        /// CRC computed over the bytes.
        computed: u32,
    },
    /// The records are compressed with the given codec; this reader only
    /// decodes uncompressed batches.
    Compressed(u8),
    /// The records section is malformed; the string says where.
    Malformed(&'static str),
}

impl BatchError {
    /// The Kafka error code a broker answers with for this failure:
    /// CORRUPT_MESSAGE (2) for framing and CRC errors, INVALID_RECORD (87) for
    /// structural errors, UNSUPPORTED_COMPRESSION_TYPE (76) for compressed
    /// batches (a limitation of this model, not a Kafka rule).
    pub fn code(&self) -> i16 {
        match self {
            BatchError::Truncated | BatchError::BadLength | BatchError::CrcMismatch { .. } => 2,
            BatchError::Compressed(_) => 76,
            BatchError::BadMagic(_) | BatchError::Malformed(_) => 87,
        }
    }
}

impl core::fmt::Display for BatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BatchError::Truncated => f.write_str("record batch truncated"),
            BatchError::BadLength => f.write_str("record batch length field is invalid"),
            BatchError::BadMagic(m) => write!(f, "unsupported magic {m}"),
            BatchError::CrcMismatch { stored, computed } => {
                write!(
                    f,
                    "crc mismatch: stored {stored:#010x}, computed {computed:#010x}"
                )
            }
            BatchError::Compressed(c) => write!(f, "compressed batch (codec {c}) not supported"),
            BatchError::Malformed(what) => write!(f, "malformed records: {what}"),
        }
    }
}

impl std::error::Error for BatchError {}

/// The fixed fields of a v2 batch header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    /// First offset of the batch (the broker overwrites it on append).
    pub base_offset: i64,
    /// Bytes following the batchLength field.
    pub batch_length: i32,
    /// Leader epoch stamped by the broker.
    pub partition_leader_epoch: i32,
    /// Format version; always 2 here.
    pub magic: i8,
    /// Stored CRC32C.
    pub crc: u32,
    /// Attribute bits (see the `ATTR_*` constants).
    pub attributes: i16,
    /// Offset delta of the last record.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// Largest timestamp in the batch.
    pub max_timestamp: i64,
    /// Producer id, -1 for a non-idempotent producer.
    pub producer_id: i64,
    /// Producer epoch, -1 for a non-idempotent producer.
    pub producer_epoch: i16,
    /// Sequence of the first record, -1 for a non-idempotent producer.
    pub base_sequence: i32,
    /// Number of records the header announces.
    pub record_count: i32,
}

impl BatchHeader {
    /// Compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn compression(&self) -> u8 {
        (self.attributes & ATTR_COMPRESSION_MASK) as u8
    }

    /// Whether the transactional bit is set.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// Whether the control bit is set.
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Whether the batch carries a producer id (idempotent or transactional).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// Sequence of the last record: the base sequence advanced by
    /// `record_count - 1`, wrapping past `i32::MAX` to 0. For an empty batch
    /// this is the base sequence itself.
    pub fn last_sequence(&self) -> i32 {
        increment_sequence(
            self.base_sequence,
            self.record_count.saturating_sub(1).max(0),
        )
    }
}

/// Kafka's sequence arithmetic: `seq + n`, wrapping past `i32::MAX` to 0
/// (not to `i32::MIN`). `n` must be non-negative.
pub fn increment_sequence(seq: i32, n: i32) -> i32 {
    let (seq, n, max) = (i64::from(seq), i64::from(n), i64::from(i32::MAX));
    let r = if seq > max - n {
        n - (max - seq) - 1
    } else {
        seq + n
    };
    r as i32
}

/// Inverse of [`increment_sequence`]: `seq - n`, wrapping below 0 to
/// `i32::MAX`. `n` must be non-negative.
pub fn decrement_sequence(seq: i32, n: i32) -> i32 {
    let (seq, n, max) = (i64::from(seq), i64::from(n), i64::from(i32::MAX));
    let r = if seq < n {
        max - (n - seq) + 1
    } else {
        seq - n
    };
    r as i32
}

/// One record header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Header key (Kafka requires it to be non-null UTF-8; kept as bytes).
    pub key: Bytes,
    /// Header value, `None` for null.
    pub value: Option<Bytes>,
}

/// One decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Record attributes (unused by Kafka today).
    pub attributes: i8,
    /// Timestamp relative to the batch's base timestamp.
    pub timestamp_delta: i64,
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    /// Key, `None` for null.
    pub key: Option<Bytes>,
    /// Value, `None` for null.
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<Header>,
}

/// A fully decoded uncompressed v2 batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordBatch {
    /// The fixed header.
    pub header: BatchHeader,
    /// The records, exactly `header.record_count` of them.
    pub records: Vec<Record>,
}

/// Bounds-checked big-endian reader.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], BatchError> {
        if n > self.remaining() {
            return Err(BatchError::Malformed(what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BatchError> {
        let s = self.take(N, "short fixed field")?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn i8(&mut self) -> Result<i8, BatchError> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    fn i16(&mut self) -> Result<i16, BatchError> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32, BatchError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, BatchError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, BatchError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// Unsigned LEB128 of at most `max_bytes` bytes.
    fn uvarint(&mut self, max_bytes: u32) -> Result<u64, BatchError> {
        let mut value: u64 = 0;
        for i in 0..max_bytes {
            let b = *self
                .take(1, "truncated varint")?
                .first()
                .ok_or(BatchError::Malformed("truncated varint"))?;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(BatchError::Malformed("varint too long"))
    }

    /// Zig-zag varint (i32).
    fn varint(&mut self) -> Result<i32, BatchError> {
        let raw = self.uvarint(5)?;
        if raw > u64::from(u32::MAX) {
            return Err(BatchError::Malformed("varint overflows i32"));
        }
        let raw = raw as u32;
        Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
    }

    /// Zig-zag varlong (i64).
    fn varlong(&mut self) -> Result<i64, BatchError> {
        let raw = self.uvarint(10)?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    /// A varint length followed by that many bytes; -1 is null.
    fn nullable_bytes(&mut self, what: &'static str) -> Result<Option<Bytes>, BatchError> {
        let len = self.varint()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| BatchError::Malformed(what))?;
        Ok(Some(Bytes::copy_from_slice(self.take(len, what)?)))
    }
}

/// Reads the header of a buffer that must hold exactly one v2 batch, checking
/// its length field, magic and CRC. The records are not decoded.
pub fn decode_header(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    if buf.len() < HEADER_LEN {
        return Err(BatchError::Truncated);
    }
    let mut c = Cursor::new(buf);
    let base_offset = c.i64()?;
    let batch_length = c.i32()?;
    let declared = usize::try_from(batch_length).map_err(|_| BatchError::BadLength)?;
    if declared < HEADER_LEN - LOG_OVERHEAD {
        return Err(BatchError::BadLength);
    }
    let total = declared
        .checked_add(LOG_OVERHEAD)
        .ok_or(BatchError::BadLength)?;
    if total > buf.len() {
        return Err(BatchError::Truncated);
    }
    if total < buf.len() {
        return Err(BatchError::BadLength);
    }
    let partition_leader_epoch = c.i32()?;
    let magic = c.i8()?;
    if magic != MAGIC_V2 {
        return Err(BatchError::BadMagic(magic));
    }
    let crc = c.u32()?;
    let computed = crc32c::crc32c(&buf[CRC_START..]);
    if computed != crc {
        return Err(BatchError::CrcMismatch {
            stored: crc,
            computed,
        });
    }
    Ok(BatchHeader {
        base_offset,
        batch_length,
        partition_leader_epoch,
        magic,
        crc,
        attributes: c.i16()?,
        last_offset_delta: c.i32()?,
        base_timestamp: c.i64()?,
        max_timestamp: c.i64()?,
        producer_id: c.i64()?,
        producer_epoch: c.i16()?,
        base_sequence: c.i32()?,
        record_count: c.i32()?,
    })
}

/// Decodes a buffer that must hold exactly one uncompressed v2 batch.
pub fn decode(buf: &[u8]) -> Result<RecordBatch, BatchError> {
    let header = decode_header(buf)?;
    if header.compression() != 0 {
        return Err(BatchError::Compressed(header.compression()));
    }
    let count = usize::try_from(header.record_count)
        .map_err(|_| BatchError::Malformed("negative count"))?;
    let mut c = Cursor::new(buf.get(HEADER_LEN..).unwrap_or_default());
    let mut records = Vec::with_capacity(count.min(c.remaining() / MIN_RECORD_LEN));
    for _ in 0..count {
        let len = c.varint()?;
        let len =
            usize::try_from(len).map_err(|_| BatchError::Malformed("negative record length"))?;
        let body = c.take(len, "record longer than batch")?;
        records.push(decode_record(body)?);
    }
    if c.remaining() != 0 {
        return Err(BatchError::Malformed("bytes left after the last record"));
    }
    Ok(RecordBatch { header, records })
}

/// Decodes one record body (after its length prefix); it must be consumed
/// exactly.
fn decode_record(body: &[u8]) -> Result<Record, BatchError> {
    let mut c = Cursor::new(body);
    let attributes = c.i8()?;
    let timestamp_delta = c.varlong()?;
    let offset_delta = c.varint()?;
    let key = c.nullable_bytes("bad key length")?;
    let value = c.nullable_bytes("bad value length")?;
    let n_headers = c.varint()?;
    let n_headers =
        usize::try_from(n_headers).map_err(|_| BatchError::Malformed("negative header count"))?;
    // Each header takes at least two bytes.
    let mut headers = Vec::with_capacity(n_headers.min(c.remaining() / 2));
    for _ in 0..n_headers {
        let key = c
            .nullable_bytes("bad header key length")?
            .ok_or(BatchError::Malformed("null header key"))?;
        let value = c.nullable_bytes("bad header value length")?;
        headers.push(Header { key, value });
    }
    if c.remaining() != 0 {
        return Err(BatchError::Malformed(
            "record length disagrees with its fields",
        ));
    }
    Ok(Record {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}
