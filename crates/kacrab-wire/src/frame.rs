//! Splitting a byte stream into size-prefixed frames.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::WireError;

/// Kafka's default `socket.request.max.bytes`: 100 MiB.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 100 * 1024 * 1024;

/// How much [`FrameDecoder::read_from`] offers a reader at a time.
const READ_CHUNK: usize = 16 * 1024;

/// Accumulates bytes read from a socket and yields the frames of Kafka's size-prefixed
/// stream (a big-endian `i32` length, then that many bytes).
///
/// The buffer only ever grows by what arrived: a length prefix that claims a huge frame
/// makes the decoder wait for the bytes (or fail, above the maximum), never reserve them.
///
/// After an error the stream is out of step; the decoder keeps reporting the same error and
/// the connection should be closed.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    max_frame_size: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    /// A decoder with the default maximum frame size ([`DEFAULT_MAX_FRAME_SIZE`]).
    #[must_use]
    pub fn new() -> Self {
        Self::with_max_frame_size(DEFAULT_MAX_FRAME_SIZE)
    }

    /// A decoder that rejects frames longer than `max_frame_size` bytes (prefix excluded).
    #[must_use]
    pub fn with_max_frame_size(max_frame_size: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            max_frame_size,
        }
    }

    /// The largest frame accepted.
    #[must_use]
    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// Appends bytes received from the peer.
    pub fn extend(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The buffer, to read into directly (e.g. Tokio's `AsyncReadExt::read_buf`). Append
    /// only: bytes already there must be left alone.
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Reads once from `reader` into the buffer (at most 16 KiB), for blocking drivers.
    /// Returns what `read` returned; `Ok(0)` means end of stream.
    ///
    /// # Errors
    /// Whatever `reader` fails with; the buffer is left as it was.
    pub fn read_from<R: std::io::Read + ?Sized>(
        &mut self,
        reader: &mut R,
    ) -> std::io::Result<usize> {
        let start = self.buf.len();
        self.buf.resize(start + READ_CHUNK, 0);
        match reader.read(&mut self.buf[start..]) {
            Ok(n) => {
                self.buf.truncate(start + n.min(READ_CHUNK));
                Ok(n)
            }
            Err(e) => {
                self.buf.truncate(start);
                Err(e)
            }
        }
    }

    /// Bytes received and not yet returned as a frame.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next complete frame's payload (length prefix removed), or `None` until enough
    /// bytes have arrived. Call it in a loop after each read: one read may hold many frames.
    ///
    /// # Errors
    /// [`WireError::NegativeLength`] or [`WireError::FrameTooLarge`] as soon as a bad
    /// prefix is seen, before its frame's bytes arrive.
    pub fn decode(&mut self) -> Result<Option<Bytes>, WireError> {
        let Some(prefix) = self.buf.get(..4) else {
            return Ok(None);
        };
        let len = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let len = usize::try_from(len).map_err(|_| WireError::NegativeLength(len))?;
        if len > self.max_frame_size {
            return Err(WireError::FrameTooLarge {
                size: len,
                max: self.max_frame_size,
            });
        }
        if self.buf.len() - 4 < len {
            return Ok(None);
        }
        self.buf.advance(4);
        Ok(Some(self.buf.split_to(len).freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_prefix_reserves_nothing() {
        let mut d = FrameDecoder::new();
        // 99 MiB claimed, 3 bytes present: waits, and the buffer stays tiny.
        d.extend(&(99 * 1024 * 1024_i32).to_be_bytes());
        d.extend(b"abc");
        assert!(d.decode().unwrap().is_none());
        assert!(d.buf.capacity() < 1024, "capacity {}", d.buf.capacity());
    }

    #[test]
    fn read_from_appends_and_keeps_buffer_on_error() {
        let mut d = FrameDecoder::new();
        let mut src: &[u8] = &[0, 0, 0, 2, b'h', b'i'];
        assert_eq!(d.read_from(&mut src).unwrap(), 6);
        assert_eq!(d.decode().unwrap().unwrap(), Bytes::from_static(b"hi"));
        struct Failing;
        impl std::io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::ConnectionReset.into())
            }
        }
        d.extend(&[0, 0]);
        assert!(d.read_from(&mut Failing).is_err());
        assert_eq!(d.buffered(), 2);
    }
}
