//! lz4 (codec 3): the LZ4 frame format (v1.5.1) as Kafka's `Lz4BlockOutputStream` writes
//! it since KIP-57 fixed the header checksum: 64 KiB blocks, independent, no block
//! checksums, no content size, no content checksum. Kafka's reader refuses dependent
//! blocks ("Dependent block stream is unsupported").
//!
//! The library is liblz4 (the `lz4` crate), the reference C implementation that Java's
//! lz4-java wraps too: it has LZ4-HC, which `compression.lz4.level` selects (KIP-390).

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};
use kacrab_idempotence::compression::{Codec, CompressionError, Compressor};
use lz4::liblz4::BlockChecksum;
use lz4::{BlockMode, BlockSize, ContentChecksum, Decoder, EncoderBuilder};

use crate::failure;
use crate::level::LevelRange;

/// lz4 frames at a level of Kafka's range (1..=17, default 9). As in Kafka's
/// `Lz4BlockOutputStream`, the default level is LZ4's fast compressor and every other
/// level is LZ4-HC at that level (liblz4 caps HC levels at 12, and, through its frame
/// API, runs levels 1 and 2 as the fast compressor too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lz4 {
    level: i32,
}

impl Lz4 {
    /// lz4 at `level` (see the type's documentation for what the level changes).
    #[must_use]
    pub fn new(level: i32) -> Self {
        Self { level }
    }

    /// liblz4's frame preference: 0 is the fast compressor, 3 and above LZ4-HC.
    fn frame_level(self) -> u32 {
        if self.level == LevelRange::LZ4.default {
            0
        } else {
            self.level.clamp(1, 17).unsigned_abs()
        }
    }
}

impl Compressor for Lz4 {
    fn codec(&self) -> Codec {
        Codec::Lz4
    }

    fn level(&self) -> Option<i32> {
        Some(self.level)
    }

    fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError> {
        let err = |e: std::io::Error| failure(Codec::Lz4, "compression", &e);
        let mut encoder = EncoderBuilder::new()
            .block_size(BlockSize::Max64KB)
            .block_mode(BlockMode::Independent)
            .block_checksum(BlockChecksum::NoBlockChecksum)
            .checksum(ContentChecksum::NoChecksum)
            .level(self.frame_level())
            .build(out.writer())
            .map_err(err)?;
        encoder.write_all(records).map_err(err)?;
        let (_, finished) = encoder.finish();
        finished.map_err(err)
    }

    fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
        let err = |e: std::io::Error| failure(Codec::Lz4, "decompression", &e);
        let mut decoder = Decoder::new(compressed).map_err(err)?;
        decoder.read_to_end(out).map(drop).map_err(err)
    }
}
