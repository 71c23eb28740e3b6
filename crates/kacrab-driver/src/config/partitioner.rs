//! The built-in partitioner's keys (KIP-794; Java's `ProducerConfig`):
//! `partitioner.adaptive.partitioning.enable`, `partitioner.availability.timeout.ms`
//! and `partitioner.ignore.keys`.

use std::time::Duration;

use super::SessionConfigError;
use crate::partitioner::{KeyUse, StickyDraw};

/// `partitioner.adaptive.partitioning.enable`: draw sticky partitions away from longer
/// queues (default true).
pub const PARTITIONER_ADAPTIVE_PARTITIONING_ENABLE: &str =
    "partitioner.adaptive.partitioning.enable";
/// `partitioner.availability.timeout.ms`: with adaptive partitioning, leave out the
/// partitions of a leader that took nothing for this long while batches waited for it
/// (default 0: never).
pub const PARTITIONER_AVAILABILITY_TIMEOUT_MS: &str = "partitioner.availability.timeout.ms";
/// `partitioner.ignore.keys`: partition keyed records as if they had no key (default
/// false).
pub const PARTITIONER_IGNORE_KEYS: &str = "partitioner.ignore.keys";

/// The partitioner's part of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct PartitionerConfig {
    pub(crate) keys: KeyUse,
    pub(crate) draw: StickyDraw,
    pub(crate) availability_timeout: Option<Duration>,
}

impl PartitionerConfig {
    /// Sets `key` if it is one of this module's; `Ok(false)` if it is not.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, SessionConfigError> {
        match key {
            PARTITIONER_ADAPTIVE_PARTITIONING_ENABLE => {
                self.draw = if parse_bool(PARTITIONER_ADAPTIVE_PARTITIONING_ENABLE, value)? {
                    StickyDraw::Adaptive
                } else {
                    StickyDraw::Uniform
                };
            }
            PARTITIONER_AVAILABILITY_TIMEOUT_MS => {
                let t = super::parse_ms(PARTITIONER_AVAILABILITY_TIMEOUT_MS, value)?;
                self.availability_timeout = (!t.is_zero()).then_some(t);
            }
            PARTITIONER_IGNORE_KEYS => {
                self.keys = if parse_bool(PARTITIONER_IGNORE_KEYS, value)? {
                    KeyUse::Ignore
                } else {
                    KeyUse::Hash
                };
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Java's `ConfigDef.Type.BOOLEAN`: `true` or `false`, case-insensitive.
pub(crate) fn parse_bool(key: &'static str, value: &str) -> Result<bool, SessionConfigError> {
    match value.trim() {
        v if v.eq_ignore_ascii_case("true") => Ok(true),
        v if v.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(SessionConfigError::InvalidValue {
            key,
            value: value.to_owned(),
            reason: "expected true or false",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitioner_keys_parse_as_javas() {
        let mut c = PartitionerConfig::default();
        assert_eq!(c.draw, StickyDraw::Adaptive);
        assert!(c
            .set(PARTITIONER_ADAPTIVE_PARTITIONING_ENABLE, "FALSE")
            .unwrap());
        assert!(c.set(PARTITIONER_IGNORE_KEYS, " true").unwrap());
        assert!(c.set(PARTITIONER_AVAILABILITY_TIMEOUT_MS, "250").unwrap());
        assert_eq!(
            c,
            PartitionerConfig {
                keys: KeyUse::Ignore,
                draw: StickyDraw::Uniform,
                availability_timeout: Some(Duration::from_millis(250)),
            }
        );
        assert!(c.set(PARTITIONER_AVAILABILITY_TIMEOUT_MS, "0").unwrap());
        assert_eq!(c.availability_timeout, None);
        assert!(!c.set("linger.ms", "5").unwrap());
        assert!(matches!(
            c.set(PARTITIONER_IGNORE_KEYS, "yes"),
            Err(SessionConfigError::InvalidValue { .. })
        ));
    }
}
