//! Kafka's variable-length integers (protobuf's base-128 varints over zigzag-encoded
//! values, `ByteUtils.writeVarint` / `writeVarlong`), their sizes, and [`Fields`], which
//! encodes a run of them on the stack so a record's small fields reach the batch in one
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

/// Up to `N` bytes of consecutive small fields, encoded on the stack, then appended with
/// [`Fields::append_to`].
///
/// Why: a record starts with five varints and a byte before its key, and each
/// `BytesMut::put_u8` reloads and rechecks the buffer's length and capacity through
/// `&mut`; here the fields are written into a local array (whose length the compiler
/// knows) and reach the buffer as one copy of `N` bytes, a few vector moves.
pub(super) struct Fields<const N: usize> {
    bytes: [u8; N],
    /// Bytes written. Invariant: `len <= N` (a write past `N` panics on the index).
    len: usize,
}

impl<const N: usize> Fields<N> {
    #[inline]
    pub(super) fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }

    #[inline]
    pub(super) fn u8(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }

    #[inline]
    fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.u8(v as u8);
    }

    #[inline]
    pub(super) fn varint(&mut self, v: i32) {
        self.uvarint(u64::from(zigzag32(v)));
    }

    #[inline]
    pub(super) fn varlong(&mut self, v: i64) {
        self.uvarint(zigzag64(v));
    }

    /// Appends the bytes written to `buf`. With `N` bytes of spare capacity, as a copy of
    /// all `N` (constant size, so no `memcpy` call) cut back to the written length: the
    /// bytes past it lie in spare capacity, which the next write overwrites. Otherwise
    /// (the last record of an exactly sized buffer) as a plain copy, so the buffer never
    /// grows for the padding.
    #[inline]
    pub(super) fn append_to(&self, buf: &mut BytesMut) {
        debug_assert!(self.len <= N);
        let start = buf.len();
        if buf.capacity() - start >= N {
            buf.extend_from_slice(&self.bytes);
            buf.truncate(start + self.len);
        } else {
            buf.extend_from_slice(&self.bytes[..self.len]);
        }
    }
}
