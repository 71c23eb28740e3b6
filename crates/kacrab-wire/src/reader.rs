//! Bounded primitives for decoding response bodies.
//!
//! kafka-protocol's decoders size arrays from the wire (`Vec::with_capacity(n)` with `n`
//! up to `u32::MAX`): five hostile bytes make them ask the allocator for hundreds of GB and
//! abort the process. Responses are therefore decoded here, by hand, with every allocation
//! bounded by bytes that actually arrived; kafka-protocol is used for requests only (and,
//! in the tests, as the oracle the decoders are checked against). The broker half
//! (feature `server`) decodes requests with the same primitives.

use bytes::{Buf, Bytes};

use crate::api::ApiKey;
use crate::error::{DecodeError, WireError};

/// Why decoding stopped, before the API and version are attached.
#[derive(Debug)]
pub(crate) enum ReadError {
    Truncated,
    Malformed(DecodeError),
}

impl From<DecodeError> for ReadError {
    fn from(e: DecodeError) -> Self {
        ReadError::Malformed(e)
    }
}

impl ReadError {
    pub(crate) fn into_wire(self, api: ApiKey, version: i16) -> WireError {
        match self {
            ReadError::Truncated => WireError::Truncated { api, version },
            ReadError::Malformed(source) => WireError::Decode {
                api,
                version,
                source,
            },
        }
    }
}

pub(crate) type R<T> = Result<T, ReadError>;

/// Upper bound on capacity reserved up front for a decoded array; larger arrays grow as
/// their elements are actually decoded.
const MAX_PREALLOC: usize = 256;

/// A cursor over one message body, aware of whether the body uses the flexible encoding.
pub(crate) struct Reader {
    buf: Bytes,
    flexible: bool,
}

impl Reader {
    pub(crate) fn new(buf: Bytes, flexible: bool) -> Self {
        Self { buf, flexible }
    }

    fn need(&self, n: usize) -> R<()> {
        if self.buf.remaining() < n {
            Err(ReadError::Truncated)
        } else {
            Ok(())
        }
    }

    pub(crate) fn i8(&mut self) -> R<i8> {
        self.need(1)?;
        Ok(self.buf.get_i8())
    }

    pub(crate) fn bool(&mut self) -> R<bool> {
        Ok(self.i8()? != 0)
    }

    pub(crate) fn i16(&mut self) -> R<i16> {
        self.need(2)?;
        Ok(self.buf.get_i16())
    }

    pub(crate) fn i32(&mut self) -> R<i32> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }

    pub(crate) fn i64(&mut self) -> R<i64> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }

    pub(crate) fn uuid(&mut self) -> R<[u8; 16]> {
        self.need(16)?;
        let mut id = [0; 16];
        self.buf.copy_to_slice(&mut id);
        Ok(id)
    }

    /// An unsigned varint of at most 5 bytes (as Kafka's `ByteUtils.readUnsignedVarint`).
    pub(crate) fn uvarint(&mut self) -> R<u32> {
        let mut value: u32 = 0;
        for i in 0..5 {
            self.need(1)?;
            let b = self.buf.get_u8();
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::InvalidVarint.into())
    }

    /// A length that may be null: classic `i16`/`i32` with -1 for null, or a compact
    /// unsigned varint holding length + 1 with 0 for null. `None` is null.
    fn nullable_len(&mut self, classic_i16: bool) -> R<Option<usize>> {
        let raw: i64 = if self.flexible {
            i64::from(self.uvarint()?) - 1
        } else if classic_i16 {
            i64::from(self.i16()?)
        } else {
            i64::from(self.i32()?)
        };
        match raw {
            -1 => Ok(None),
            n if n < -1 => Err(DecodeError::NegativeLength(n).into()),
            // Nothing shorter than one byte per element: more than what is left cannot be there.
            n => {
                let n = usize::try_from(n).map_err(|_| ReadError::Truncated)?;
                if n > self.buf.remaining() {
                    Err(ReadError::Truncated)
                } else {
                    Ok(Some(n))
                }
            }
        }
    }

    pub(crate) fn nullable_string(&mut self) -> R<Option<String>> {
        let Some(len) = self.nullable_len(true)? else {
            return Ok(None);
        };
        let raw = self.buf.split_to(len);
        match std::str::from_utf8(&raw) {
            Ok(s) => Ok(Some(s.to_owned())),
            Err(_) => Err(DecodeError::InvalidUtf8.into()),
        }
    }

    /// Non-nullable bytes, shared with the buffer: no copy.
    pub(crate) fn bytes(&mut self) -> R<Bytes> {
        self.nullable_bytes()?
            .ok_or(ReadError::Malformed(DecodeError::UnexpectedNull))
    }

    /// Nullable bytes (classic `i32` length, or compact), shared with the buffer: no copy.
    pub(crate) fn nullable_bytes(&mut self) -> R<Option<Bytes>> {
        let Some(len) = self.nullable_len(false)? else {
            return Ok(None);
        };
        Ok(Some(self.buf.split_to(len)))
    }

    pub(crate) fn string(&mut self) -> R<String> {
        self.nullable_string()?
            .ok_or(ReadError::Malformed(DecodeError::UnexpectedNull))
    }

    /// A non-nullable array, each element read by `f`.
    pub(crate) fn array<T>(&mut self, f: impl FnMut(&mut Self) -> R<T>) -> R<Vec<T>> {
        self.nullable_array(f)?
            .ok_or(ReadError::Malformed(DecodeError::UnexpectedNull))
    }

    /// A nullable array, each element read by `f`.
    pub(crate) fn nullable_array<T>(
        &mut self,
        mut f: impl FnMut(&mut Self) -> R<T>,
    ) -> R<Option<Vec<T>>> {
        let Some(n) = self.nullable_len(false)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(n.min(MAX_PREALLOC));
        for _ in 0..n {
            out.push(f(self)?);
        }
        Ok(Some(out))
    }

    /// A struct's or message's tagged-field section (nothing in classic versions). `f` is
    /// called with each tag and a reader over exactly that field's bytes, and returns
    /// whether it knew the tag; a known field must use up its bytes, unknown ones are
    /// skipped.
    pub(crate) fn tagged_fields(&mut self, mut f: impl FnMut(u32, &mut Self) -> R<bool>) -> R<()> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).map_err(|_| ReadError::Truncated)?;
            self.need(size)?;
            let mut field = Reader::new(self.buf.split_to(size), true);
            if f(tag, &mut field)? {
                field.finish()?;
            }
        }
        Ok(())
    }

    /// A tagged-field section with no field this crate reads.
    pub(crate) fn skip_tagged_fields(&mut self) -> R<()> {
        self.tagged_fields(|_, _| Ok(false))
    }

    /// The bytes not read yet.
    pub(crate) fn into_rest(self) -> Bytes {
        self.buf
    }

    /// Checks that the whole body was used.
    pub(crate) fn finish(&self) -> R<()> {
        match self.buf.remaining() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &'static [u8], flexible: bool) -> Reader {
        Reader::new(Bytes::from_static(bytes), flexible)
    }

    #[test]
    fn varints() {
        assert_eq!(reader(&[0x00], true).uvarint().unwrap(), 0);
        assert_eq!(reader(&[0x96, 0x01], true).uvarint().unwrap(), 150);
        assert_eq!(
            reader(&[0xff, 0xff, 0xff, 0xff, 0x0f], true)
                .uvarint()
                .unwrap(),
            u32::MAX
        );
        assert!(matches!(
            reader(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], true).uvarint(),
            Err(ReadError::Malformed(DecodeError::InvalidVarint))
        ));
        assert!(matches!(
            reader(&[0x80], true).uvarint(),
            Err(ReadError::Truncated)
        ));
    }

    #[test]
    fn hostile_array_lengths_fail_before_allocating() {
        // u32::MAX - 1 elements claimed, none present.
        let mut r = reader(&[0xff, 0xff, 0xff, 0xff, 0x0f], true);
        assert!(matches!(r.array(Reader::i64), Err(ReadError::Truncated)));
        let mut r = reader(&[0x7f, 0xff, 0xff, 0xff], false);
        assert!(matches!(r.array(Reader::i64), Err(ReadError::Truncated)));
        let mut r = reader(&[0xff, 0xff, 0xff, 0xfe], false);
        assert!(matches!(
            r.array(Reader::i64),
            Err(ReadError::Malformed(DecodeError::NegativeLength(-2)))
        ));
    }

    #[test]
    fn strings() {
        assert_eq!(reader(&[0, 2, b'h', b'i'], false).string().unwrap(), "hi");
        assert_eq!(reader(&[3, b'h', b'i'], true).string().unwrap(), "hi");
        assert_eq!(
            reader(&[0xff, 0xff], false).nullable_string().unwrap(),
            None
        );
        assert_eq!(reader(&[0], true).nullable_string().unwrap(), None);
        assert!(matches!(
            reader(&[0], true).string(),
            Err(ReadError::Malformed(DecodeError::UnexpectedNull))
        ));
        assert!(matches!(
            reader(&[0, 1, 0xff], false).string(),
            Err(ReadError::Malformed(DecodeError::InvalidUtf8))
        ));
    }

    #[test]
    fn tagged_fields_bounded_and_skipped() {
        // two fields: tag 0 (4 bytes, known), tag 9 (2 bytes, unknown)
        let mut r = reader(&[2, 0, 4, 0, 0, 0, 7, 9, 2, 1, 2], true);
        let mut seen = None;
        r.tagged_fields(|tag, f| {
            if tag == 0 {
                seen = Some(f.i32()?);
                Ok(true)
            } else {
                Ok(false)
            }
        })
        .unwrap();
        assert_eq!(seen, Some(7));
        r.finish().unwrap();
        // a known field that does not use its bytes is malformed
        let mut r = reader(&[1, 0, 5, 0, 0, 0, 7, 1], true);
        let res = r.tagged_fields(|_, f| f.i32().map(|_| true));
        assert!(matches!(
            res,
            Err(ReadError::Malformed(DecodeError::TrailingBytes(1)))
        ));
        // classic bodies have no tagged fields at all
        reader(&[], false).skip_tagged_fields().unwrap();
    }
}
