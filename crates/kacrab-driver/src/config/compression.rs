//! The compression keys: `compression.type` and the per-codec levels of KIP-390, parsed
//! here so that every driver gets them; the codec reaches the core through its
//! compression hook ([`kacrab_idempotence::compression`]), which has no codec of its own.

use kacrab_compression::{LevelError, LevelRange};
use kacrab_idempotence::compression::{Codec, Compression};

use super::SessionConfigError;

/// `compression.type`: `none` (default), `gzip`, `snappy`, `lz4` or `zstd`.
pub const COMPRESSION_TYPE: &str = "compression.type";
/// `compression.gzip.level`: -1 (default, zlib's 6) or 1..=9.
pub const COMPRESSION_GZIP_LEVEL: &str = "compression.gzip.level";
/// `compression.lz4.level`: 1..=17, default 9.
pub const COMPRESSION_LZ4_LEVEL: &str = "compression.lz4.level";
/// `compression.zstd.level`: -131072..=22, default 3.
pub const COMPRESSION_ZSTD_LEVEL: &str = "compression.zstd.level";

/// The compression settings as configured; each level is checked against its codec's
/// range when set, as Kafka's `ConfigDef` validators do, whichever codec is chosen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CompressionConfig {
    /// `None` is `compression.type=none`.
    codec: Option<Codec>,
    gzip_level: Option<i32>,
    lz4_level: Option<i32>,
    zstd_level: Option<i32>,
}

impl CompressionConfig {
    /// Whether `key` is one of this module's.
    pub(crate) fn owns(key: &str) -> bool {
        matches!(
            key,
            COMPRESSION_TYPE
                | COMPRESSION_GZIP_LEVEL
                | COMPRESSION_LZ4_LEVEL
                | COMPRESSION_ZSTD_LEVEL
        )
    }

    /// Sets one of the keys [`CompressionConfig::owns`].
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<(), SessionConfigError> {
        match key {
            COMPRESSION_TYPE => self.codec = parse_type(value)?,
            COMPRESSION_GZIP_LEVEL => {
                self.gzip_level = Some(parse_level(
                    COMPRESSION_GZIP_LEVEL,
                    LevelRange::GZIP,
                    value,
                )?);
            }
            COMPRESSION_LZ4_LEVEL => {
                self.lz4_level = Some(parse_level(COMPRESSION_LZ4_LEVEL, LevelRange::LZ4, value)?);
            }
            COMPRESSION_ZSTD_LEVEL => {
                self.zstd_level = Some(parse_level(
                    COMPRESSION_ZSTD_LEVEL,
                    LevelRange::ZSTD,
                    value,
                )?);
            }
            _ => unreachable!("set is called only for keys owns() accepts"),
        }
        Ok(())
    }

    /// Sets the codec (`None`: no compression) and its level (`None`: Kafka's default).
    pub(crate) fn set_codec(&mut self, codec: Option<Codec>, level: Option<i32>) {
        self.codec = codec;
        match codec {
            Some(Codec::Gzip) => self.gzip_level = level,
            Some(Codec::Lz4) => self.lz4_level = level,
            Some(Codec::Zstd) => self.zstd_level = level,
            Some(Codec::Snappy) | None => {}
        }
    }

    /// The compressor the core gets.
    pub(crate) fn build(&self) -> Result<Compression, SessionConfigError> {
        let Some(codec) = self.codec else {
            return Ok(Compression::None);
        };
        let (key, level) = match codec {
            Codec::Gzip => (COMPRESSION_GZIP_LEVEL, self.gzip_level),
            Codec::Lz4 => (COMPRESSION_LZ4_LEVEL, self.lz4_level),
            Codec::Zstd => (COMPRESSION_ZSTD_LEVEL, self.zstd_level),
            Codec::Snappy => (COMPRESSION_TYPE, None),
        };
        kacrab_compression::compression(codec, level).map_err(|e| match e {
            kacrab_compression::CodecError::Level(e) => level_error(key, &e),
            _ => SessionConfigError::InvalidValue {
                key: COMPRESSION_TYPE,
                value: codec.name().to_owned(),
                reason: "this build does not include the codec (a kacrab-driver feature is off)",
            },
        })
    }
}

fn parse_type(value: &str) -> Result<Option<Codec>, SessionConfigError> {
    // Kafka's `CompressionType.forName` matches the lower-case names exactly.
    match value.trim() {
        "none" => Ok(None),
        name => Codec::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .map(Some)
            .ok_or_else(|| SessionConfigError::InvalidValue {
                key: COMPRESSION_TYPE,
                value: value.to_owned(),
                reason: "expected none, gzip, snappy, lz4 or zstd",
            }),
    }
}

fn parse_level(
    key: &'static str,
    range: LevelRange,
    value: &str,
) -> Result<i32, SessionConfigError> {
    let level: i32 = value
        .trim()
        .parse()
        .map_err(|_| SessionConfigError::InvalidValue {
            key,
            value: value.to_owned(),
            reason: "expected an integer compression level",
        })?;
    range.check(level).map_err(|e| level_error(key, &e))
}

fn level_error(key: &'static str, e: &LevelError) -> SessionConfigError {
    SessionConfigError::InvalidValue {
        key,
        value: e.level.to_string(),
        reason: match e.codec {
            Codec::Gzip => "gzip levels are -1 (default) or 1..=9",
            Codec::Lz4 => "lz4 levels are 1..=17",
            Codec::Zstd => "zstd levels are -131072..=22",
            Codec::Snappy => "snappy has no levels",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SessionConfig;

    fn build(props: &[(&str, &str)]) -> Result<SessionConfig, SessionConfigError> {
        let mut all = vec![("bootstrap.servers", "localhost:9092")];
        all.extend_from_slice(props);
        SessionConfig::from_properties(all)
    }

    #[test]
    fn compression_type_reaches_the_core_with_its_level() {
        let none = build(&[]).unwrap();
        assert_eq!(none.core().compression().codec(), None);
        for codec in Codec::ALL {
            let c = build(&[(COMPRESSION_TYPE, codec.name())]).unwrap();
            assert_eq!(c.core().compression().codec(), Some(codec));
        }
        let zstd = build(&[(COMPRESSION_TYPE, "zstd"), (COMPRESSION_ZSTD_LEVEL, "7")]).unwrap();
        let compressor = zstd.core().compression().compressor().unwrap();
        assert_eq!(compressor.level(), Some(7));
        let gzip = build(&[(COMPRESSION_TYPE, "gzip")]).unwrap();
        assert_eq!(
            gzip.core().compression().compressor().unwrap().level(),
            Some(-1)
        );
        let lz4 = build(&[(COMPRESSION_TYPE, "lz4")]).unwrap();
        assert_eq!(
            lz4.core().compression().compressor().unwrap().level(),
            Some(9)
        );
    }

    #[test]
    fn bad_compression_values_are_refused_by_key() {
        let key_of = |props: &[(&str, &str)]| match build(props) {
            Err(SessionConfigError::InvalidValue { key, .. }) => key,
            other => panic!("expected an invalid value, got {other:?}"),
        };
        assert_eq!(key_of(&[(COMPRESSION_TYPE, "brotli")]), COMPRESSION_TYPE);
        assert_eq!(key_of(&[(COMPRESSION_TYPE, "GZIP")]), COMPRESSION_TYPE);
        assert_eq!(
            key_of(&[(COMPRESSION_GZIP_LEVEL, "0")]),
            COMPRESSION_GZIP_LEVEL
        );
        assert_eq!(
            key_of(&[(COMPRESSION_LZ4_LEVEL, "18")]),
            COMPRESSION_LZ4_LEVEL
        );
        assert_eq!(
            key_of(&[(COMPRESSION_ZSTD_LEVEL, "23")]),
            COMPRESSION_ZSTD_LEVEL
        );
        assert_eq!(
            key_of(&[(COMPRESSION_ZSTD_LEVEL, "x")]),
            COMPRESSION_ZSTD_LEVEL
        );
        // A level of another codec is still validated, as Kafka's ConfigDef does.
        assert!(build(&[(COMPRESSION_TYPE, "snappy"), (COMPRESSION_GZIP_LEVEL, "9")]).is_ok());
    }
}
