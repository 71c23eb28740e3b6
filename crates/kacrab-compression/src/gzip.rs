//! gzip (codec 1): one gzip member (RFC 1952), what Java's `GZIPOutputStream` writes and
//! its `GZIPInputStream` reads.

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};
use kacrab_idempotence::compression::{Codec, CompressionError, Compressor};

use crate::failure;

/// gzip at a level of Kafka's range; -1 is zlib's default (6), as for Java's `Deflater`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gzip {
    level: i32,
}

impl Gzip {
    /// gzip at `level` (-1 or 1..=9, see [`crate::LevelRange::GZIP`]); other values are
    /// clamped into 1..=9.
    #[must_use]
    pub fn new(level: i32) -> Self {
        Self { level }
    }

    fn flate_level(self) -> flate2::Compression {
        match self.level {
            -1 => flate2::Compression::default(),
            l => flate2::Compression::new(l.clamp(1, 9).unsigned_abs()),
        }
    }
}

impl Compressor for Gzip {
    fn codec(&self) -> Codec {
        Codec::Gzip
    }

    fn level(&self) -> Option<i32> {
        Some(self.level)
    }

    fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError> {
        let mut encoder = flate2::write::GzEncoder::new(out.writer(), self.flate_level());
        encoder
            .write_all(records)
            .and_then(|()| encoder.finish().map(drop))
            .map_err(|e| failure(Codec::Gzip, "compression", &e))
    }

    fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
        // Java's GZIPInputStream reads concatenated members too.
        flate2::read::MultiGzDecoder::new(compressed)
            .read_to_end(out)
            .map(drop)
            .map_err(|e| failure(Codec::Gzip, "decompression", &e))
    }
}
