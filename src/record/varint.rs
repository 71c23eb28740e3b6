//! Kafka's variable-length integers (protobuf's base-128 varints over zigzag-encoded
//! values, `ByteUtils.writeVarint` / `writeVarlong`), their sizes, and [`RecordHead`],
//! which encodes a record's leading fields on the stack so they reach the batch in one
//! fixed-size copy instead of one bounds-checked push per byte.

use bytes::{BufMut, BytesMut};

/// Longest encoding of a zigzag varint (an `i32`).
pub(super) const MAX_VARINT_LEN: usize = 5;
/// Longest encoding of a zigzag varlong (an `i64`).
pub(super) const MAX_VARLONG_LEN: usize = 10;

/// Size of a non-negative length as a zigzag varint. Takes `usize` so estimates never need
/// a fallible conversion; beyond `i32::MAX` it keeps growing, which is still an upper bound.
pub(super) fn len_prefix_len(len: usize) -> usize {
    uvarint_len((len as u64).saturating_mul(2))
}

pub(super) const fn uvarint_len(v: u64) -> usize {
    // 7 payload bits per byte; `| 1` makes 0 take one byte.
    ((70 - (v | 1).leading_zeros()) / 7) as usize
}

pub(super) fn varint_len(v: i32) -> usize {
    uvarint_len(u64::from(zigzag32(v)))
}

pub(super) fn varlong_len(v: i64) -> usize {
    uvarint_len(zigzag64(v))
}

pub(super) const fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

pub(super) const fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends `v` as a base-128 varint, byte by byte (the path of rare fields: headers).
pub(super) fn put_uvarint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

pub(super) fn put_varint(buf: &mut BytesMut, v: i32) {
    put_uvarint(buf, u64::from(zigzag32(v)));
}

#[cfg(test)]
pub(super) fn put_varlong(buf: &mut BytesMut, v: i64) {
    put_uvarint(buf, zigzag64(v));
}

/// Writes `v` as a base-128 varint at `bytes[pos..]` and returns the position after it.
/// A free function over a local position, so the position stays in a register.
///
/// # Panics
///
/// If `bytes` ends first (the callers size their arrays for the longest encodings).
#[inline(always)]
fn write_uvarint(bytes: &mut [u8], mut pos: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        bytes[pos] = (v as u8) | 0x80;
        pos += 1;
        v >>= 7;
    }
    bytes[pos] = v as u8;
    pos + 1
}

/// A record's fields from its length to its key's length, encoded on the stack: the
/// length prefix (written last, once the body's size is known, right before the other
/// fields), attributes, timestamp delta, offset delta and key length; at most
/// 5 + 1 + 10 + 5 + 5 = 26 bytes.
///
/// Why: written into a local array and appended to the batch with one copy of a
/// constant size (a few vector moves, see [`RecordHead::append_to`]), these fields cost
/// a fraction of one `BytesMut::put_u8` per byte, each of which reloads and rechecks the
/// buffer's length and capacity; and their sizes come from where the writes end, so
/// sizing the record does not encode them a second time.
pub(super) struct RecordHead {
    bytes: [u8; HEAD_ARRAY],
    /// Where the length prefix starts. Invariant: `start <= MAX_VARINT_LEN <= end`.
    start: usize,
    /// Where the written fields end. Invariant: `end - start <= HEAD_COPY`.
    end: usize,
}

/// Bytes copied per record head: at least the longest head (26 bytes).
const HEAD_COPY: usize = 32;
/// The array: room for a copy of `HEAD_COPY` bytes from any start up to `MAX_VARINT_LEN`.
const HEAD_ARRAY: usize = MAX_VARINT_LEN + HEAD_COPY;

impl RecordHead {
    /// Attributes (0), the two deltas and the key's length (-1 for none), after room for
    /// the length prefix.
    #[inline]
    pub(super) fn new(timestamp_delta: i64, offset_delta: i32, key_len: i32) -> Self {
        let mut bytes = [0u8; HEAD_ARRAY];
        let mut pos = MAX_VARINT_LEN + 1; // attributes: 0, already zero
        pos = write_uvarint(&mut bytes, pos, zigzag64(timestamp_delta));
        pos = write_uvarint(&mut bytes, pos, u64::from(zigzag32(offset_delta)));
        pos = write_uvarint(&mut bytes, pos, u64::from(zigzag32(key_len)));
        Self {
            bytes,
            start: MAX_VARINT_LEN,
            end: pos,
        }
    }

    /// The size of the fields after the length prefix.
    #[inline]
    pub(super) fn fields_len(&self) -> usize {
        self.end - MAX_VARINT_LEN
    }

    /// Writes the length prefix right before the other fields; once.
    #[inline]
    pub(super) fn prefix_length(&mut self, body_len: i32) {
        debug_assert_eq!(self.start, MAX_VARINT_LEN, "length prefixed twice");
        let start = MAX_VARINT_LEN - varint_len(body_len);
        write_uvarint(&mut self.bytes, start, u64::from(zigzag32(body_len)));
        self.start = start;
    }

    /// The encoded size, the length prefix included.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.end - self.start
    }

    /// Appends the head to `buf`: with `HEAD_COPY` bytes of spare capacity as a copy of
    /// that constant size cut back to the head's length (the bytes past it lie in spare
    /// capacity, which the record's next bytes overwrite); otherwise (the last record of
    /// an exactly sized buffer) as a plain copy, so the buffer never grows for padding.
    #[inline]
    pub(super) fn append_to(&self, buf: &mut BytesMut) {
        debug_assert!(self.start <= MAX_VARINT_LEN && self.len() <= HEAD_COPY);
        let at = buf.len();
        if buf.capacity() - at >= HEAD_COPY {
            let copy: &[u8; HEAD_COPY] = self.bytes[self.start..self.start + HEAD_COPY]
                .try_into()
                .expect("HEAD_ARRAY leaves room for the copy");
            buf.extend_from_slice(copy);
            buf.truncate(at + self.len());
        } else {
            buf.extend_from_slice(&self.bytes[self.start..self.end]);
        }
    }
}

/// A varint of at most [`MAX_VARINT_LEN`] bytes, encoded on the stack (a value's length,
/// appended between the key and the value), appended like [`RecordHead`].
pub(super) struct SmallVarint {
    bytes: [u8; 8],
    /// Invariant: `1 <= len <= MAX_VARINT_LEN`.
    len: usize,
}

impl SmallVarint {
    #[inline]
    pub(super) fn new(v: i32) -> Self {
        let mut bytes = [0u8; 8];
        let len = write_uvarint(&mut bytes, 0, u64::from(zigzag32(v)));
        Self { bytes, len }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn append_to(&self, buf: &mut BytesMut) {
        let at = buf.len();
        if buf.capacity() - at >= self.bytes.len() {
            buf.extend_from_slice(&self.bytes);
            buf.truncate(at + self.len);
        } else {
            buf.extend_from_slice(&self.bytes[..self.len]);
        }
    }
}
