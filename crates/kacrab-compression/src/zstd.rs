//! zstd (codec 4, KIP-110): one Zstandard frame, as zstd-jni's `ZstdOutputStream` writes
//! for Kafka's Java client, at a level of Kafka's range (KIP-390).

use std::io::Write;

use bytes::{BufMut, BytesMut};
use kacrab_idempotence::compression::{Codec, CompressionError, Compressor};

use crate::failure;

/// zstd at a level (-131072..=22, default 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zstd {
    level: i32,
}

impl Zstd {
    /// zstd at `level`.
    #[must_use]
    pub fn new(level: i32) -> Self {
        Self { level }
    }
}

impl Compressor for Zstd {
    fn codec(&self) -> Codec {
        Codec::Zstd
    }

    fn level(&self) -> Option<i32> {
        Some(self.level)
    }

    fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError> {
        let err = |e: std::io::Error| failure(Codec::Zstd, "compression", &e);
        let mut encoder =
            zstd::stream::write::Encoder::new(out.writer(), self.level).map_err(err)?;
        // The size is known: writing it into the frame lets a decoder allocate once.
        encoder
            .set_pledged_src_size(Some(records.len() as u64))
            .map_err(err)?;
        encoder.write_all(records).map_err(err)?;
        encoder.finish().map(drop).map_err(err)
    }

    fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
        zstd::stream::copy_decode(compressed, out)
            .map_err(|e| failure(Codec::Zstd, "decompression", &e))
    }
}
