//! The checks a batch handed in whole must pass before the core queues it
//! ([`Producer::send_batch`](crate::Producer::send_batch)): the frame the core can
//! stamp, and the fields a producer owns rather than the broker.

use super::{
    check_frame, get_at, RecordError, ATTRIBUTES, CONTROL_BIT, LAST_OFFSET_DELTA, RECORD_COUNT,
    TRANSACTIONAL_BIT,
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
