//! Kafka's compression levels (KIP-390): per codec, a range and a default, as Kafka's
//! `CompressionType` (`minLevel`, `maxLevel`, `defaultLevel`) defines them.

use kacrab_idempotence::compression::Codec;

/// The levels Kafka accepts for a codec, and the one it uses when none is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LevelRange {
    /// The codec.
    pub codec: Codec,
    /// The lowest level accepted.
    pub min: i32,
    /// The highest level accepted.
    pub max: i32,
    /// The default level; for gzip it is -1 (`Deflater.DEFAULT_COMPRESSION`, zlib's 6),
    /// accepted although outside `min..=max`.
    pub default: i32,
}

/// A level outside its codec's range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{codec} does not support compression level {level} (accepted: {min}..={max}, or the default {default})")]
#[non_exhaustive]
pub struct LevelError {
    /// The codec.
    pub codec: Codec,
    /// The refused level.
    pub level: i32,
    /// The lowest level accepted.
    pub min: i32,
    /// The highest level accepted.
    pub max: i32,
    /// The default level.
    pub default: i32,
}

impl LevelRange {
    /// gzip: 1..=9 or -1 (`GzipCompression.Builder.level`).
    pub const GZIP: Self = Self {
        codec: Codec::Gzip,
        min: 1,
        max: 9,
        default: -1,
    };
    /// lz4: 1..=17, default 9 (`Lz4Compression.Builder.level`).
    pub const LZ4: Self = Self {
        codec: Codec::Lz4,
        min: 1,
        max: 17,
        default: 9,
    };
    /// zstd: `Zstd.minCompressionLevel()` (-131072) ..= 22, default 3
    /// (`ZstdCompression.Builder.level`).
    pub const ZSTD: Self = Self {
        codec: Codec::Zstd,
        min: -131_072,
        max: 22,
        default: 3,
    };

    /// The range of `codec`'s levels; `None` for snappy, which has none.
    #[must_use]
    pub const fn of(codec: Codec) -> Option<Self> {
        match codec {
            Codec::Gzip => Some(Self::GZIP),
            Codec::Snappy => None,
            Codec::Lz4 => Some(Self::LZ4),
            Codec::Zstd => Some(Self::ZSTD),
        }
    }

    /// `level` if Kafka accepts it for this codec.
    ///
    /// # Errors
    /// [`LevelError`] otherwise.
    pub fn check(self, level: i32) -> Result<i32, LevelError> {
        if (self.min..=self.max).contains(&level) || level == self.default {
            Ok(level)
        } else {
            Err(LevelError {
                codec: self.codec,
                level,
                min: self.min,
                max: self.max,
                default: self.default,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_kafkas() {
        assert_eq!(LevelRange::GZIP.check(-1), Ok(-1));
        assert!(LevelRange::GZIP.check(0).is_err());
        assert!(LevelRange::GZIP.check(10).is_err());
        assert_eq!(LevelRange::LZ4.check(17), Ok(17));
        assert!(LevelRange::LZ4.check(0).is_err());
        assert_eq!(LevelRange::ZSTD.check(-131_072), Ok(-131_072));
        assert!(LevelRange::ZSTD.check(23).is_err());
        assert_eq!(LevelRange::of(Codec::Snappy), None);
    }
}
