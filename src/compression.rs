//! The compression hook: the core decides *when* a batch's records are compressed and
//! what the batch header says about it; the embedder decides *how*, by registering a
//! [`Compressor`]. The core itself contains no codec.
//!
//! When a batch closes, [`crate::record::BatchBuilder`] hands its records section (every
//! byte after the 61-byte header) to the compressor, sets the codec in attribute bits 0-2
//! and computes the CRC over the compressed form, as Kafka's `MemoryRecordsBuilder` does.
//! [`crate::record::stamp`] then rewrites only header bytes (producer id, epoch, base
//! sequence, transactional bit) and recomputes the CRC over the unchanged compressed
//! bytes, so a restamp never recompresses. A batch split after `MESSAGE_TOO_LARGE` is
//! decompressed with the same compressor, and each piece is compressed again.
//!
//! Batches fill up by their *estimated* compressed size, per topic, with the rules of
//! Java's `CompressionRatioEstimator` (see [`CompressionRatio`]).
//!
//! # Plugging in a codec
//!
//! ```
//! use bytes::{BufMut, BytesMut};
//! use kacrab_idempotence::compression::{Codec, Compression, CompressionError, Compressor};
//! use kacrab_idempotence::{record, ProducerConfig, Record};
//!
//! /// A "codec" that stores the records as they are: enough to show the contract.
//! #[derive(Debug)]
//! struct Identity;
//!
//! impl Compressor for Identity {
//!     fn codec(&self) -> Codec {
//!         Codec::Gzip // a real gzip compressor, in this toy only the label
//!     }
//!     fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError> {
//!         out.put_slice(records);
//!         Ok(())
//!     }
//!     fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
//!         out.extend_from_slice(compressed);
//!         Ok(())
//!     }
//! }
//!
//! let compression = Compression::new(Identity);
//! // Every batch the producer builds goes through the compressor:
//! let config = ProducerConfig::builder().compression(compression.clone()).build().unwrap();
//! assert_eq!(config.compression().codec(), Some(Codec::Gzip));
//!
//! // The same hook, one batch by hand:
//! let mut builder = record::BatchBuilder::new(compression.clone(), 1024);
//! builder.append(&Record::from_value(bytes::Bytes::from_static(b"hello"), 0));
//! let batch = builder.finish();
//! assert_eq!(batch[22] & 0x07, 1, "attribute bits 0-2 name gzip");
//! let records = record::decode_records_with(&batch, &compression).unwrap();
//! assert_eq!(records[0].value.as_deref(), Some(&b"hello"[..]));
//! ```

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use bytes::BytesMut;

use crate::types::Topic;

/// A compression codec Kafka knows, by its value in a batch's attribute bits 0-2
/// (Kafka's `CompressionType` ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Codec {
    /// `gzip` (id 1): RFC 1952 gzip members.
    Gzip,
    /// `snappy` (id 2): the xerial snappy-java stream Kafka's Java client writes.
    Snappy,
    /// `lz4` (id 3): the LZ4 frame format (KIP-57 fixed Kafka's header checksum).
    Lz4,
    /// `zstd` (id 4, KIP-110): a Zstandard frame.
    Zstd,
}

impl Codec {
    /// Every codec, by id.
    pub const ALL: [Self; 4] = [Self::Gzip, Self::Snappy, Self::Lz4, Self::Zstd];

    /// The codec's value in attribute bits 0-2.
    #[must_use]
    pub const fn attribute_bits(self) -> i16 {
        match self {
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }

    /// The codec named by attribute bits 0-2, `None` for 0 (no compression) or an id
    /// Kafka does not define.
    #[must_use]
    pub const fn from_attribute_bits(bits: i16) -> Option<Self> {
        match bits & 0x07 {
            1 => Some(Self::Gzip),
            2 => Some(Self::Snappy),
            3 => Some(Self::Lz4),
            4 => Some(Self::Zstd),
            _ => None,
        }
    }

    /// The codec's name as `compression.type` spells it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }
}

impl core::fmt::Display for Codec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a compressor could not compress or decompress a records section.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{codec} {operation} failed: {reason}")]
#[non_exhaustive]
pub struct CompressionError {
    /// The codec that failed.
    pub codec: Codec,
    /// `"compression"` or `"decompression"`.
    pub operation: &'static str,
    /// The codec library's message.
    pub reason: String,
}

impl CompressionError {
    /// `codec`'s `operation` (`"compression"` or `"decompression"`) failed with the
    /// codec library's message `reason`.
    #[must_use]
    pub fn new(codec: Codec, operation: &'static str, reason: impl Into<String>) -> Self {
        Self {
            codec,
            operation,
            reason: reason.into(),
        }
    }
}

/// A codec the embedder registers with [`Compression::new`].
///
/// Implementations must be deterministic only in the sense that `decompress` inverts
/// `compress`; the core never compares compressed bytes. They must write exactly the
/// stream Kafka's broker expects for [`Compressor::codec`], because the broker validates
/// (and decompresses) every compressed batch and answers `CORRUPT_MESSAGE` otherwise.
pub trait Compressor: core::fmt::Debug + Send + Sync {
    /// The codec this compressor writes; its id goes into the batch attributes.
    fn codec(&self) -> Codec;

    /// The compression level, if the codec has one; with [`Compressor::codec`] it tells
    /// two compressors apart in configuration comparisons.
    fn level(&self) -> Option<i32> {
        None
    }

    /// Appends the compressed form of `records` (a batch's records section) to `out`.
    ///
    /// # Errors
    /// The codec failed. The batch is then sent uncompressed (codec 0), which every
    /// broker accepts, and [`crate::Stats::compression_failures`] counts it.
    fn compress(&self, records: &[u8], out: &mut BytesMut) -> Result<(), CompressionError>;

    /// Appends the records section `compressed` decompresses to to `out`: the inverse of
    /// [`Compressor::compress`], used to split a batch after `MESSAGE_TOO_LARGE`.
    ///
    /// # Errors
    /// The bytes are not a valid stream of this codec.
    fn decompress(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError>;
}

/// How the producer compresses its batches (`compression.type`): not at all, or with a
/// registered [`Compressor`]. Cheap to clone.
#[derive(Clone, Default)]
pub enum Compression {
    /// Records are stored as they are (codec 0). Kafka's default.
    #[default]
    None,
    /// Every batch's records section goes through this compressor.
    Codec(Arc<dyn Compressor>),
}

impl Compression {
    /// Compression with `compressor`.
    #[must_use]
    pub fn new(compressor: impl Compressor + 'static) -> Self {
        Self::Codec(Arc::new(compressor))
    }

    /// The codec, `None` without compression.
    #[must_use]
    pub fn codec(&self) -> Option<Codec> {
        match self {
            Self::None => None,
            Self::Codec(c) => Some(c.codec()),
        }
    }

    /// The compressor, `None` without compression.
    #[must_use]
    pub fn compressor(&self) -> Option<&dyn Compressor> {
        match self {
            Self::None => None,
            Self::Codec(c) => Some(&**c),
        }
    }
}

impl core::fmt::Debug for Compression {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Codec(c) => f.debug_tuple("Codec").field(c).finish(),
        }
    }
}

/// Two compressions are equal when they write the same codec at the same level: the
/// configuration compares what the producer will put on the wire, not which object does it.
impl PartialEq for Compression {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::None, Self::None) => true,
            (Self::Codec(a), Self::Codec(b)) => a.codec() == b.codec() && a.level() == b.level(),
            _ => false,
        }
    }
}

impl Eq for Compression {}

/// An estimate of compressed size / uncompressed size of a records section, in units of
/// 1/10,000 (Java keeps a `float`; fixed point keeps the core exact and `no_std`).
///
/// The rules are Java's `CompressionRatioEstimator` (Kafka 4.x): every topic starts at
/// 1.0; after each batch, a ratio worse than the estimate raises it to
/// `max(estimate + 0.05, observed)` (`COMPRESSION_RATIO_DETERIORATE_STEP`), a better one
/// lowers it to `max(estimate - 0.005, observed)` (`COMPRESSION_RATIO_IMPROVING_STEP`).
/// A batch's estimated size is its header plus the uncompressed records times the
/// estimate times 1.05 (`MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CompressionRatio(u32);

impl CompressionRatio {
    /// The scale: 10,000 is a ratio of 1.0.
    pub const SCALE: u32 = 10_000;
    /// No compression assumed: Java's initial estimate for every topic.
    pub const ONE: Self = Self(Self::SCALE);
    const DETERIORATE_STEP: u32 = 500;
    const IMPROVING_STEP: u32 = 50;
    /// `COMPRESSION_RATE_ESTIMATION_FACTOR` 1.05, in the same scale.
    const ESTIMATION_FACTOR: u64 = 10_500;

    /// The ratio `compressed / uncompressed`, rounded up; 1.0 for an empty input.
    #[must_use]
    pub fn observed(compressed: usize, uncompressed: usize) -> Self {
        if uncompressed == 0 {
            return Self::ONE;
        }
        let scaled = (compressed as u64)
            .saturating_mul(u64::from(Self::SCALE))
            .div_ceil(uncompressed as u64);
        Self(u32::try_from(scaled).unwrap_or(u32::MAX).max(1))
    }

    /// The estimate after a batch compressed with `observed` (Java's `updateEstimation`).
    #[must_use]
    pub fn updated(self, observed: Self) -> Self {
        if observed > self {
            Self(
                self.0
                    .saturating_add(Self::DETERIORATE_STEP)
                    .max(observed.0),
            )
        } else if observed < self {
            Self(self.0.saturating_sub(Self::IMPROVING_STEP).max(observed.0))
        } else {
            self
        }
    }

    /// The estimated compressed size of `uncompressed` bytes of records.
    #[must_use]
    pub fn estimate(self, uncompressed: usize) -> usize {
        let scale = u64::from(Self::SCALE) * u64::from(Self::SCALE);
        let scaled = (uncompressed as u64)
            .saturating_mul(u64::from(self.0))
            .saturating_mul(Self::ESTIMATION_FACTOR)
            / scale;
        usize::try_from(scaled).unwrap_or(usize::MAX)
    }

    /// The uncompressed records that are estimated to compress to `compressed` bytes (a
    /// buffer size hint), never below `compressed`.
    #[must_use]
    pub fn inverse(self, compressed: usize) -> usize {
        let scaled =
            (compressed as u64).saturating_mul(u64::from(Self::SCALE)) / u64::from(self.0.max(1));
        usize::try_from(scaled)
            .unwrap_or(usize::MAX)
            .max(compressed)
    }
}

/// The per-topic compression ratio estimates of one producer (Java keeps them per topic
/// and codec in a static map; one producer has one codec, so per topic suffices here).
/// Invariant: holds an entry only for topics a compressed batch was closed for.
#[derive(Debug, Default)]
pub(crate) struct RatioEstimates {
    per_topic: BTreeMap<Topic, CompressionRatio>,
}

impl RatioEstimates {
    /// The current estimate for `topic`.
    pub(crate) fn get(&self, topic: &Topic) -> CompressionRatio {
        self.per_topic
            .get(topic)
            .copied()
            .unwrap_or(CompressionRatio::ONE)
    }

    /// Feeds one closed batch's observed ratio into `topic`'s estimate.
    pub(crate) fn observe(&mut self, topic: &Topic, observed: CompressionRatio) {
        let current = self.get(topic);
        self.per_topic
            .insert(topic.clone(), current.updated(observed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_moves_by_javas_steps() {
        let start = CompressionRatio::ONE;
        // Better than expected: down by at most 0.005 per batch.
        let better = start.updated(CompressionRatio::observed(2_000, 10_000));
        assert_eq!(better, CompressionRatio(9_950));
        // Worse than expected: up by at least 0.05.
        let worse = better.updated(CompressionRatio::observed(9_960, 10_000));
        assert_eq!(worse, CompressionRatio(10_450));
        // Much worse: straight to the observed ratio.
        let bad = CompressionRatio(3_000).updated(CompressionRatio::observed(9_000, 10_000));
        assert_eq!(bad, CompressionRatio(9_000));
        // Close to the observed ratio, the improving step stops at it.
        let near = CompressionRatio(2_020).updated(CompressionRatio(2_000));
        assert_eq!(near, CompressionRatio(2_000));
    }

    /// Attribute bits 0-2 carry Kafka's codec ids (`CompressionType`), and each codec
    /// reads back from its own bits; names are `compression.type`'s spellings, and a
    /// `Compression`'s Debug names its codec.
    #[test]
    fn codec_ids_and_names_are_kafkas() {
        let ids: Vec<i16> = Codec::ALL.iter().map(|c| c.attribute_bits()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        let names: Vec<&str> = Codec::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["gzip", "snappy", "lz4", "zstd"]);
        for c in Codec::ALL {
            assert_eq!(Codec::from_attribute_bits(c.attribute_bits()), Some(c));
            assert_eq!(
                Codec::from_attribute_bits(c.attribute_bits() | 0x08),
                Some(c)
            );
        }
        assert_eq!(Codec::from_attribute_bits(0), None);
        assert_eq!(Codec::from_attribute_bits(5), None);
        assert_eq!(alloc::format!("{:?}", Compression::None), "None");
    }

    #[test]
    fn estimate_includes_javas_safety_factor() {
        assert_eq!(CompressionRatio::ONE.estimate(10_000), 10_500);
        assert_eq!(CompressionRatio(2_000).estimate(10_000), 2_100);
        assert_eq!(CompressionRatio(2_000).inverse(2_000), 10_000);
        assert_eq!(CompressionRatio::observed(0, 0), CompressionRatio::ONE);
    }

    #[test]
    fn estimates_are_per_topic() {
        let mut e = RatioEstimates::default();
        let a = Topic::new("a");
        e.observe(&a, CompressionRatio(1_000));
        assert_eq!(e.get(&a), CompressionRatio(9_950));
        assert_eq!(e.get(&Topic::new("b")), CompressionRatio::ONE);
    }
}
