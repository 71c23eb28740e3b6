//! snappy (codec 2) in the stream snappy-java's `SnappyOutputStream` writes, which is what
//! Kafka's Java client produces and its `SnappyInputStream` reads: not the official
//! snappy framing format (`snap::write::FrameEncoder`), but a 16-byte header (`\x82SNAPPY\0`,
//! then version 1 and minimum compatible version 1 as big-endian i32s) followed by blocks of
//! at most 32 KiB input, each a big-endian i32 length and one raw snappy block.
//! `SnappyInputStream` reads input without the header as one raw snappy block; so does
//! [`Snappy::decompress`].

use bytes::{BufMut, BytesMut};
use kacrab_idempotence::compression::{Codec, CompressionError, Compressor};

use crate::failure;

/// snappy-java's stream header: magic, version 1, minimum compatible version 1.
const HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// `SnappyOutputStream`'s default block size (Kafka passes no other).
const BLOCK_SIZE: usize = 32 * 1024;

/// snappy in snappy-java's stream format. Snappy has no levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snappy;

impl Compressor for Snappy {
    fn codec(&self) -> Codec {
        Codec::Snappy
    }

    fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError> {
        let mut encoder = snap::raw::Encoder::new();
        out.reserve(HEADER.len() + records.len() / 2);
        out.put_slice(HEADER);
        for block in records.chunks(BLOCK_SIZE) {
            let length_at = out.len();
            out.put_u32(0);
            let start = out.len();
            out.resize(start + snap::raw::max_compress_len(block.len()), 0);
            let written = encoder
                .compress(block, &mut out[start..])
                .map_err(|e| failure(Codec::Snappy, "compression", &e))?;
            out.truncate(start + written);
            let len =
                u32::try_from(written).map_err(|e| failure(Codec::Snappy, "compression", &e))?;
            out[length_at..start].copy_from_slice(&len.to_be_bytes());
        }
        Ok(())
    }

    fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
        let err = |e: &dyn std::fmt::Display| failure(Codec::Snappy, "decompression", e);
        let mut decoder = snap::raw::Decoder::new();
        let Some(mut rest) = compressed.strip_prefix(&HEADER[..8]) else {
            // No snappy-java header: one raw block, as SnappyInputStream reads it.
            let block = decoder.decompress_vec(compressed).map_err(|e| err(&e))?;
            out.extend_from_slice(&block);
            return Ok(());
        };
        rest = rest
            .get(8..)
            .ok_or_else(|| err(&"truncated stream header"))?;
        while !rest.is_empty() {
            let (len, tail) = rest
                .split_first_chunk::<4>()
                .ok_or_else(|| err(&"truncated block length"))?;
            let len = usize::try_from(u32::from_be_bytes(*len)).map_err(|e| err(&e))?;
            let block = tail.get(..len).ok_or_else(|| err(&"truncated block"))?;
            let start = out.len();
            let n = snap::raw::decompress_len(block).map_err(|e| err(&e))?;
            out.resize(start + n, 0);
            decoder
                .decompress(block, &mut out[start..])
                .map_err(|e| err(&e))?;
            rest = &tail[len..];
        }
        Ok(())
    }
}
