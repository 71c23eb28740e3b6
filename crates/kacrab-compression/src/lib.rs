//! Kafka's four batch codecs as [`Compressor`]s for kacrab's codec-free core.
//!
//! The core (`kacrab-idempotence`) only knows *that* a batch is compressed: it hands the
//! records section to whatever [`Compressor`] the embedder registered. This crate provides
//! the four Kafka defines, each writing exactly the stream Kafka's broker validates and its
//! Java consumer reads:
//!
//! | codec  | id | stream                                               | library            |
//! |--------|---:|------------------------------------------------------|--------------------|
//! | gzip   | 1  | one RFC 1952 gzip member                             | flate2 on zlib-rs  |
//! | snappy | 2  | snappy-java's stream: 16-byte header, 32 KiB blocks  | snap (raw blocks)  |
//! | lz4    | 3  | LZ4 frame, 64 KiB independent blocks, no checksums   | lz4 (liblz4)       |
//! | zstd   | 4  | one Zstandard frame                                  | zstd (libzstd)     |
//!
//! Each codec is a cargo feature (all on by default). [`compression`] builds the
//! [`Compression`] for a codec and level, checking the level against Kafka's range
//! (KIP-390); drivers parse `compression.type` and the level keys into those arguments.
//!
//! ```
//! use kacrab_compression::compression;
//! use kacrab_idempotence::{record, Codec, Record};
//!
//! let zstd = compression(Codec::Zstd, None).unwrap();
//! let mut builder = record::BatchBuilder::new(zstd.clone(), 1024);
//! builder.append(&Record::from_value(bytes::Bytes::from_static(b"{\"level\":\"info\"}"), 0));
//! let batch = builder.finish();
//! let records = record::decode_records_with(&batch, &zstd).unwrap();
//! assert_eq!(records[0].value.as_deref(), Some(&b"{\"level\":\"info\"}"[..]));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(doc)]
use kacrab_idempotence::compression::Compressor;
use kacrab_idempotence::compression::{Codec, Compression, CompressionError};

#[cfg(feature = "gzip")]
mod gzip;
mod level;
#[cfg(feature = "lz4")]
mod lz4;
#[cfg(feature = "snappy")]
mod snappy;
#[cfg(feature = "zstd")]
mod zstd;

#[cfg(feature = "gzip")]
pub use gzip::Gzip;
pub use level::{LevelError, LevelRange};
#[cfg(feature = "lz4")]
pub use lz4::Lz4;
#[cfg(feature = "snappy")]
pub use snappy::Snappy;
#[cfg(feature = "zstd")]
pub use zstd::Zstd;

/// Why [`compression`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The level is outside Kafka's range for the codec.
    #[error(transparent)]
    Level(#[from] LevelError),
    /// The codec's cargo feature is off in this build.
    #[error("compression codec {0} is not compiled in (enable kacrab-compression's feature {0})")]
    NotCompiled(Codec),
}

/// The [`Compression`] for `codec` at `level` (`None`: Kafka's default level; snappy has
/// no level and ignores it).
///
/// # Errors
/// [`CodecError::Level`] if the level is outside Kafka's range for the codec
/// ([`LevelRange::of`]); [`CodecError::NotCompiled`] if the codec's feature is off.
pub fn compression(codec: Codec, level: Option<i32>) -> Result<Compression, CodecError> {
    let range = LevelRange::of(codec);
    let level = match (range, level) {
        (Some(range), Some(level)) => range.check(level)?,
        (Some(range), None) => range.default,
        (None, _) => 0,
    };
    // Unused only in a build without any codec feature.
    let _ = level;
    match codec {
        #[cfg(feature = "gzip")]
        Codec::Gzip => Ok(Compression::new(Gzip::new(level))),
        #[cfg(feature = "snappy")]
        Codec::Snappy => Ok(Compression::new(Snappy)),
        #[cfg(feature = "lz4")]
        Codec::Lz4 => Ok(Compression::new(Lz4::new(level))),
        #[cfg(feature = "zstd")]
        Codec::Zstd => Ok(Compression::new(Zstd::new(level))),
        #[allow(unreachable_patterns)]
        other => Err(CodecError::NotCompiled(other)),
    }
}

/// A [`CompressionError`] from a codec library's I/O error.
#[allow(dead_code)] // unused when every codec feature is off
fn failure(codec: Codec, operation: &'static str, e: &dyn std::fmt::Display) -> CompressionError {
    CompressionError::new(codec, operation, e.to_string())
}

// The README is the crate's page on the registry: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
