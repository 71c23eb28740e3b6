//! Reading a batch's records back, and splitting a batch after `MESSAGE_TOO_LARGE`: the
//! paths that must see the records inside a batch, compressed or not. Neither is on the
//! hot path; both take arbitrary bytes and never panic.

use alloc::vec::Vec;
use bytes::{Bytes, BytesMut};

use super::{
    check_frame, get_at, read_header, BatchBuilder, BatchHeader, Crc, Reader, Record, RecordError,
    ATTRIBUTES, CODEC_MASK, MIN_RECORD_LEN, RECORD_BATCH_OVERHEAD,
};
use crate::compression::{Codec, Compression, CompressionRatio};

/// Decodes the records of an uncompressed batch this module wrote (used for
/// `MESSAGE_TOO_LARGE` splits and by tests); a compressed one fails with
/// [`RecordError::Compressed`] (see [`decode_records_with`]).
///
/// Checks everything [`read_header`] does, then that every record is well formed, that
/// offset deltas are 0, 1, 2, ... as a producer writes them (the sequences of a split rely on
/// it), that lastOffsetDelta agrees, and that no bytes follow the last record. The returned
/// keys, values and headers are slices of one copy of the records section.
pub fn decode_records(batch: &[u8]) -> Result<Vec<Record>, RecordError> {
    decode(batch, &Compression::None).map(|(_, records)| records)
}

/// [`decode_records`] for a batch that may be compressed with `compression`'s codec: its
/// records section is decompressed first. A batch compressed with another codec fails
/// with [`RecordError::Compressed`].
pub fn decode_records_with(
    batch: &[u8],
    compression: &Compression,
) -> Result<Vec<Record>, RecordError> {
    decode(batch, compression).map(|(_, records)| records)
}

/// Splits an uncompressed batch into batches of at most `target_size` bytes each (at least
/// one record per batch, so a record larger than `target_size` gets a batch of its own),
/// preserving record order, keys, values, headers and timestamps.
///
/// Outputs are unstamped (producer id -1, sequence -1, not transactional) whatever the input
/// was; the caller stamps them with consecutive sequences. A batch with no records splits
/// into none. Control batches are refused: brokers write them, producers never resend them.
pub fn split(batch: &[u8], target_size: usize) -> Result<Vec<BytesMut>, RecordError> {
    split_with(batch, target_size, &Compression::None)
}

/// [`split`] for a batch compressed with `compression`: the records are decompressed,
/// and every piece is compressed again with the same codec. Pieces are sized by their
/// compressed size estimated with the parent's own compression ratio.
pub fn split_with(
    batch: &[u8],
    target_size: usize,
    compression: &Compression,
) -> Result<Vec<BytesMut>, RecordError> {
    Ok(split_pieces(batch, target_size, compression, Crc::Write)?
        .into_iter()
        .map(|p| p.data)
        .collect())
}

/// One piece of a split batch.
#[derive(Debug)]
pub(crate) struct SplitPiece {
    pub(crate) data: BytesMut,
    pub(crate) uncompressed_records_len: usize,
}

/// [`split_with`], keeping each piece's uncompressed size; `crc` as for
/// [`BatchBuilder::close`].
pub(crate) fn split_pieces(
    batch: &[u8],
    target_size: usize,
    compression: &Compression,
    crc: Crc,
) -> Result<Vec<SplitPiece>, RecordError> {
    let (header, records, section_len) = decode_section(batch, compression)?;
    if header.control {
        return Err(RecordError::Malformed("control batches cannot be split"));
    }
    let compressed_len = batch.len().saturating_sub(RECORD_BATCH_OVERHEAD);
    // The ratio the parent achieved is the best guess for its pieces.
    let ratio = CompressionRatio::observed(compressed_len, section_len);
    let codec = codec_of(batch)?;
    // A batch that went out uncompressed (its compressor failed) splits uncompressed.
    let compression = if codec.is_some() {
        compression.clone()
    } else {
        Compression::None
    };
    // No part is larger than the whole plus a header, whatever target_size says; bounding the
    // hint keeps a huge target_size from reserving memory that will never be used.
    let hint = target_size.min(batch.len());
    let new_builder = || BatchBuilder::with_ratio(compression.clone(), ratio, hint);
    let mut parts = Vec::new();
    let mut builder = new_builder();
    let close = |b: BatchBuilder| {
        let closed = b.close(crc);
        SplitPiece {
            data: closed.data,
            uncompressed_records_len: closed.uncompressed_records_len,
        }
    };
    for record in &records {
        if !builder.has_room_for(record, target_size) {
            let full = core::mem::replace(&mut builder, new_builder());
            parts.push(close(full));
        }
        builder.append(record);
    }
    if !builder.is_empty() {
        parts.push(close(builder));
    }
    Ok(parts)
}

/// The codec in a batch's attributes, `None` for an uncompressed batch.
fn codec_of(batch: &[u8]) -> Result<Option<Codec>, RecordError> {
    let attributes = i16::from_be_bytes(get_at(check_frame(batch)?, ATTRIBUTES));
    match attributes & CODEC_MASK {
        0 => Ok(None),
        bits => Codec::from_attribute_bits(bits)
            .map(Some)
            // Codec ids 5-7 are not Kafka's: the records cannot be read either way.
            .ok_or(RecordError::Compressed),
    }
}

/// Header and records of a batch.
pub(super) fn decode(
    batch: &[u8],
    compression: &Compression,
) -> Result<(BatchHeader, Vec<Record>), RecordError> {
    decode_section(batch, compression).map(|(h, r, _)| (h, r))
}

/// Header, records and the uncompressed records section's length.
fn decode_section(
    batch: &[u8],
    compression: &Compression,
) -> Result<(BatchHeader, Vec<Record>, usize), RecordError> {
    let header = read_header(batch)?;
    let stored = batch.get(RECORD_BATCH_OVERHEAD..).unwrap_or_default();
    // One copy of the records section; every key, value and header is a slice of it.
    let section = match codec_of(batch)? {
        None => Bytes::copy_from_slice(stored),
        Some(codec) => {
            let compressor = compression
                .compressor()
                .filter(|c| c.codec() == codec)
                .ok_or(RecordError::Compressed)?;
            let mut out = Vec::new();
            compressor.decompress(stored, &mut out)?;
            Bytes::from(out)
        }
    };
    let expected_last = header.record_count.saturating_sub(1).max(0);
    if header.last_offset_delta != expected_last {
        return Err(RecordError::Malformed(
            "lastOffsetDelta does not match recordCount",
        ));
    }
    let count = usize::try_from(header.record_count).unwrap_or(0);
    let mut records = Vec::with_capacity(count.min(section.len() / MIN_RECORD_LEN));
    let mut reader = Reader {
        data: &section,
        pos: 0,
        end: section.len(),
        eof: RecordError::Truncated,
    };
    for index in 0..header.record_count {
        let len = reader.length()?;
        let end = reader
            .pos
            .checked_add(len)
            .filter(|&e| e <= reader.end)
            .ok_or(RecordError::Truncated)?;
        let mut r = Reader {
            data: &section,
            pos: reader.pos,
            end,
            eof: RecordError::Malformed("record fields run past the record's length"),
        };
        reader.pos = end;
        records.push(r.record(index, header.base_timestamp)?);
        if r.pos != end {
            return Err(RecordError::Malformed("record length exceeds its fields"));
        }
    }
    if reader.pos != reader.end {
        return Err(RecordError::Malformed("bytes after the last record"));
    }
    Ok((header, records, section.len()))
}
