//! A request frame to write: the bytes the encoder wrote, with each record batch's own
//! `Bytes` between them.
//!
//! A Produce request is mostly its record batches. Copying them into one frame buffer
//! costs a pass over every byte sent; instead the frame keeps them as the parts they
//! already are, and a driver writes the parts with one vectored write
//! (`writev`, [`Buf::chunks_vectored`]).

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A whole size-prefixed Kafka frame, as the parts it is made of, in order.
///
/// Write it with [`Buf::chunks_vectored`] and [`Buf::advance`] (Tokio's
/// `AsyncWriteExt::write_all_buf` does both), or write each of [`Frame::parts`] in turn.
/// [`Frame::to_bytes`] joins the parts into one buffer, copying them unless there is only
/// one.
///
/// Equality compares the bytes, not how they are split into parts.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// The frame's bytes, in order. Invariant: no part is empty (so a frame with bytes
    /// left always has a non-empty first chunk).
    parts: VecDeque<Bytes>,
    /// The bytes left to write. Invariant: the sum of the parts' lengths.
    remaining: usize,
}

impl Frame {
    /// A frame of one part.
    #[must_use]
    pub fn new(bytes: Bytes) -> Self {
        let mut frame = Self::default();
        frame.push(bytes);
        frame
    }

    /// Appends a part; an empty one is dropped.
    pub(crate) fn push(&mut self, part: Bytes) {
        if !part.is_empty() {
            self.remaining += part.len();
            self.parts.push_back(part);
        }
        self.debug_assert_invariants();
    }

    /// The bytes left to write.
    #[must_use]
    pub fn len(&self) -> usize {
        self.remaining
    }

    /// Whether every byte has been written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }

    /// The parts left to write, in order; none is empty.
    pub fn parts(&self) -> impl ExactSizeIterator<Item = &Bytes> + '_ {
        self.parts.iter()
    }

    /// The bytes left to write, in one buffer: the part itself when there is one, a copy
    /// of them all otherwise.
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        match self.parts.len() {
            0 => Bytes::new(),
            1 => self.parts[0].clone(),
            _ => {
                let mut joined = BytesMut::with_capacity(self.remaining);
                for part in &self.parts {
                    joined.extend_from_slice(part);
                }
                joined.freeze()
            }
        }
    }

    fn debug_assert_invariants(&self) {
        debug_assert!(self.parts.iter().all(|p| !p.is_empty()), "an empty part");
        debug_assert_eq!(
            self.parts.iter().map(Bytes::len).sum::<usize>(),
            self.remaining,
            "remaining is not the sum of the parts"
        );
    }
}

impl From<Bytes> for Frame {
    fn from(bytes: Bytes) -> Self {
        Self::new(bytes)
    }
}

impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        self.remaining == other.remaining
            && self
                .parts
                .iter()
                .flat_map(|p| p.iter())
                .eq(other.parts.iter().flat_map(|p| p.iter()))
    }
}

impl Eq for Frame {}

impl Buf for Frame {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.parts.front().map_or(&[], |p| p.as_ref())
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut filled = 0;
        for (slot, part) in dst.iter_mut().zip(&self.parts) {
            *slot = IoSlice::new(part);
            filled += 1;
        }
        filled
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(
            cnt <= self.remaining,
            "advance past the end of the frame: {cnt} > {}",
            self.remaining
        );
        self.remaining -= cnt;
        while cnt > 0 {
            let Some(front) = self.parts.front_mut() else {
                break;
            };
            if cnt < front.len() {
                front.advance(cnt);
                cnt = 0;
            } else {
                cnt -= front.len();
                self.parts.pop_front();
            }
        }
        self.debug_assert_invariants();
    }

    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        // The front part alone, when it holds them all: no copy.
        match self.parts.front_mut() {
            Some(front) if len <= front.len() => {
                let taken = front.split_to(len);
                if front.is_empty() {
                    self.parts.pop_front();
                }
                self.remaining -= len;
                self.debug_assert_invariants();
                taken
            }
            _ => {
                assert!(
                    len <= self.remaining,
                    "copy_to_bytes past the end of the frame"
                );
                let mut out = BytesMut::with_capacity(len);
                out.put((&mut *self).take(len));
                out.freeze()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(parts: &[&'static [u8]]) -> Frame {
        let mut f = Frame::default();
        for p in parts {
            f.push(Bytes::from_static(p));
        }
        f
    }

    #[test]
    fn empty_parts_are_dropped_and_lengths_add_up() {
        let f = frame(&[b"ab", b"", b"cde"]);
        assert_eq!(f.len(), 5);
        assert_eq!(f.parts().len(), 2);
        assert_eq!(f.to_bytes(), Bytes::from_static(b"abcde"));
    }

    #[test]
    fn equality_is_by_bytes_not_by_parts() {
        assert_eq!(frame(&[b"ab", b"cde"]), frame(&[b"abcde"]));
        assert_ne!(frame(&[b"ab", b"cdf"]), frame(&[b"abcde"]));
        assert_ne!(frame(&[b"ab"]), frame(&[b"abc"]));
    }

    #[test]
    fn advancing_across_parts_leaves_the_rest() {
        let mut f = frame(&[b"ab", b"cde", b"f"]);
        f.advance(3);
        assert_eq!(f.len(), 3);
        assert_eq!(f.chunk(), b"de");
        let mut io = [IoSlice::new(&[]); 4];
        assert_eq!(f.chunks_vectored(&mut io), 2);
        assert_eq!(&*io[1], b"f");
        f.advance(3);
        assert!(f.is_empty());
        assert_eq!(f.chunk(), b"");
    }

    #[test]
    fn reading_through_buf_yields_every_byte_in_order() {
        let mut f = frame(&[b"ab", b"cde", b"f"]);
        let mut out = Vec::new();
        out.put(&mut f);
        assert_eq!(out, b"abcdef");
        let mut f = frame(&[b"ab", b"cde"]);
        assert_eq!(f.copy_to_bytes(1), Bytes::from_static(b"a"));
        assert_eq!(f.copy_to_bytes(3), Bytes::from_static(b"bcd"));
        assert_eq!(f.to_bytes(), Bytes::from_static(b"e"));
    }

    #[test]
    #[should_panic(expected = "advance past the end")]
    fn advancing_past_the_end_panics_as_buf_requires() {
        frame(&[b"ab"]).advance(3);
    }
}
