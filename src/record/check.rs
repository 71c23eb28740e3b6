//! The checks a batch handed in whole must pass before the core queues it
//! ([`Producer::send_batch`](crate::Producer::send_batch)): the frame the core can
//! stamp, and the fields a producer owns rather than the broker.

use super::{
    check_frame, get_at, RecordError, ATTRIBUTES, CODEC_MASK, CONTROL_BIT, LAST_OFFSET_DELTA,
    RECORD_BATCH_OVERHEAD, RECORD_COUNT, TRANSACTIONAL_BIT,
};

/// `timestampType` (attribute bit 3): 1 is `LogAppendTime`, which only a broker sets.
const LOG_APPEND_TIME_BIT: i16 = 1 << 3;

/// Checks a finished batch handed to the core and returns its record count. The CRC is
/// not checked: the core writes it.
pub(crate) fn check_handed(batch: &[u8]) -> Result<u32, RecordError> {
    let h = check_frame(batch)?;
    let count = i32::from_be_bytes(get_at(h, RECORD_COUNT));
    if count == 0 {
        return Err(RecordError::Malformed("a batch without records"));
    }
    if i32::from_be_bytes(get_at(h, LAST_OFFSET_DELTA)) != count - 1 {
        return Err(RecordError::Malformed(
            "lastOffsetDelta does not match recordCount",
        ));
    }
    let attributes = i16::from_be_bytes(get_at(h, ATTRIBUTES));
    if attributes & CONTROL_BIT != 0 {
        return Err(RecordError::Malformed(
            "a control batch is written by the broker",
        ));
    }
    if attributes & TRANSACTIONAL_BIT != 0 {
        return Err(RecordError::Malformed(
            "the transactional bit is the core's to set",
        ));
    }
    if attributes & LOG_APPEND_TIME_BIT != 0 {
        return Err(RecordError::Malformed(
            "LogAppendTime is the broker's to set",
        ));
    }
    u32::try_from(count).map_err(|_| RecordError::Malformed("negative recordCount"))
}

/// The encoded size of the largest record of a handed batch, its length prefix included
/// (what `record-size-max` counts for a record [`Producer::send`](crate::Producer::send)
/// writes). `None` for a compressed batch, whose records cannot be measured without its
/// codec, and for records whose lengths do not add up to the batch.
pub(crate) fn largest_record(batch: &[u8]) -> Option<usize> {
    let h = check_frame(batch).ok()?;
    if i16::from_be_bytes(get_at(h, ATTRIBUTES)) & CODEC_MASK != 0 {
        return None;
    }
    let mut rest = batch.get(RECORD_BATCH_OVERHEAD..)?;
    let mut largest = 0;
    while !rest.is_empty() {
        let (length, prefix) = zigzag_varint(rest)?;
        let size = prefix.checked_add(usize::try_from(length).ok()?)?;
        rest = rest.get(size..)?;
        largest = largest.max(size);
    }
    Some(largest)
}

/// A zigzag varint (a record's length) at the start of `bytes`, and how many bytes it
/// took; `None` past five bytes or the end.
fn zigzag_varint(bytes: &[u8]) -> Option<(i32, usize)> {
    let mut raw = 0u32;
    for (i, &b) in bytes.iter().take(5).enumerate() {
        raw |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            #[allow(clippy::cast_possible_wrap)]
            let value = (raw >> 1) as i32 ^ -((raw & 1) as i32);
            return Some((value, i + 1));
        }
    }
    None
}
