//! lz4 (codec 3): the LZ4 frame format (v1.5.1) as Kafka's `Lz4BlockOutputStream` writes
//! it since KIP-57 fixed the header checksum: 64 KiB blocks, independent, no block
//! checksums, no content size, no content checksum. Kafka's reader refuses dependent
//! blocks ("Dependent block stream is unsupported").

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};
use kacrab_idempotence::compression::{Codec, CompressionError, Compressor};
use lz4_flex::frame::{BlockMode, BlockSize, FrameDecoder, FrameEncoder, FrameInfo};

use crate::failure;

/// lz4 frames. The level (Kafka's 1..=17, default 9) is validated and kept, but lz4_flex
/// has only LZ4's fast compressor: that is the one Java uses at the default level 9
/// (`Lz4BlockOutputStream` switches to LZ4-HC only for other levels).
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
}

impl Compressor for Lz4 {
    fn codec(&self) -> Codec {
        Codec::Lz4
    }

    fn level(&self) -> Option<i32> {
        Some(self.level)
    }

    fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError> {
        let info = FrameInfo::new()
            .block_size(BlockSize::Max64KB)
            .block_mode(BlockMode::Independent)
            .block_checksums(false)
            .content_checksum(false);
        let mut encoder = FrameEncoder::with_frame_info(info, out.writer());
        encoder
            .write_all(records)
            .map_err(|e| failure(Codec::Lz4, "compression", &e))?;
        encoder
            .finish()
            .map(drop)
            .map_err(|e| failure(Codec::Lz4, "compression", &e))
    }

    fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
        FrameDecoder::new(compressed)
            .read_to_end(out)
            .map(drop)
            .map_err(|e| failure(Codec::Lz4, "decompression", &e))
    }
}
