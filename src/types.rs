//! Newtypes for Kafka's protocol quantities, each carrying Kafka's rules.

use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

/// A producer id assigned by InitProducerId. `-1` means "none".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ProducerId(pub i64);

impl ProducerId {
    /// Kafka's `NO_PRODUCER_ID`.
    pub const NONE: Self = Self(-1);

    /// Whether this is a real id (not [`ProducerId::NONE`]).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.0 >= 0
    }
}

/// A producer epoch. Epochs do not wrap: at `i16::MAX` a new producer id is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ProducerEpoch(pub i16);

impl ProducerEpoch {
    /// Kafka's `NO_PRODUCER_EPOCH`.
    pub const NONE: Self = Self(-1);

    /// The next epoch, or `None` when the epoch is exhausted (Kafka never wraps epochs).
    #[must_use]
    pub fn next(self) -> Option<Self> {
        self.0.checked_add(1).map(Self)
    }
}

/// A producer id together with its epoch: the identity sequences belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ProducerIdAndEpoch {
    /// The producer id.
    pub id: ProducerId,
    /// Its epoch.
    pub epoch: ProducerEpoch,
}

impl ProducerIdAndEpoch {
    /// No identity yet (Kafka's `ProducerIdAndEpoch.NONE`).
    pub const NONE: Self = Self {
        id: ProducerId::NONE,
        epoch: ProducerEpoch::NONE,
    };

    /// Build one from raw parts.
    #[must_use]
    pub const fn new(id: i64, epoch: i16) -> Self {
        Self {
            id: ProducerId(id),
            epoch: ProducerEpoch(epoch),
        }
    }

    /// Whether a producer id has been assigned.
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.id.is_valid()
    }
}

impl fmt::Display for ProducerIdAndEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.id.0, self.epoch.0)
    }
}

/// A record sequence number. Kafka's sequences are non-negative `i32`s that wrap from
/// `i32::MAX` to `0` (`DefaultRecordBatch.incrementSequence`).
///
/// Only [`Sequence::add`] wraps. Comparisons are plain integer comparisons, as in the Java
/// client (`maybeUpdateLastAckedSequence`, `isNextSequence`), which do not handle the wrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Sequence(pub i32);

impl Sequence {
    /// The first sequence of a fresh (producer id, epoch).
    pub const ZERO: Self = Self(0);

    /// `self + n`, wrapping from `i32::MAX` to `0` exactly as Kafka does: if
    /// `self > MAX - n` the result is `n - (MAX - self) - 1`.
    #[must_use]
    pub const fn add(self, n: i32) -> Self {
        debug_assert!(self.0 >= 0 && n >= 0);
        if self.0 > i32::MAX - n {
            Self(n - (i32::MAX - self.0) - 1)
        } else {
            Self(self.0 + n)
        }
    }

    /// `self - n`, the inverse of [`Sequence::add`] (wrapping below 0 to `i32::MAX`).
    #[must_use]
    pub const fn sub(self, n: i32) -> Self {
        debug_assert!(self.0 >= 0 && n >= 0);
        if self.0 >= n {
            Self(self.0 - n)
        } else {
            Self(i32::MAX - (n - self.0) + 1)
        }
    }

    /// The last sequence of a batch of `count` records starting here, computed the way
    /// the Java client's `ProducerBatch.lastSequence` does: without wrapping, as an `i64`
    /// so it never overflows.
    #[must_use]
    pub const fn last_of(self, count: i32) -> i64 {
        self.0 as i64 + count as i64 - 1
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A topic name. Cheap to clone: partitions share one allocation per topic.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Topic(Arc<str>);

impl Topic {
    /// A topic with this name.
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }

    /// The name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Topic {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<&alloc::string::String> for Topic {
    fn from(s: &alloc::string::String) -> Self {
        Self::new(s)
    }
}

/// A topic named by an owned string (a name read from configuration or built at run
/// time), so `TopicPartition::new(name, p)` takes it as it takes `&str`.
impl From<alloc::string::String> for Topic {
    fn from(s: alloc::string::String) -> Self {
        Self(Arc::from(s))
    }
}

/// Shares the name's allocation.
impl From<Arc<str>> for Topic {
    fn from(s: Arc<str>) -> Self {
        Self(s)
    }
}

/// A topic and a partition number.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic.
    pub topic: Topic,
    /// The partition number (non-negative).
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`-`partition`.
    #[must_use]
    pub fn new(topic: impl Into<Topic>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Debug for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// A topic's id (KIP-516): the UUID a broker gives a topic when it is created, from
/// Metadata v10 on. A topic deleted and created again under the same name gets a new
/// one, and its partitions' leader epochs start again at 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicId(pub [u8; 16]);

/// A broker's node id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct NodeId(pub i32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A point in time, as microseconds since an epoch the driver chose.
///
/// The core never reads a clock: every input that depends on time carries one of these.
/// Drivers map `Instant` to `Timestamp` against a start instant. Time must not go
/// backwards between calls (checked with `debug_assert!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The driver's epoch.
    pub const ZERO: Self = Self(0);

    /// From milliseconds since the driver's epoch.
    #[must_use]
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms.saturating_mul(1000))
    }

    /// From microseconds since the driver's epoch.
    #[must_use]
    pub const fn from_micros(us: u64) -> Self {
        Self(us)
    }

    /// Microseconds since the driver's epoch.
    #[must_use]
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Milliseconds since the driver's epoch.
    #[must_use]
    pub const fn as_millis(self) -> u64 {
        self.0 / 1000
    }

    /// `self + d`, saturating.
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> Self {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(us))
    }

    /// `self - earlier`, or zero if `earlier` is later.
    #[must_use]
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl core::ops::Add<Duration> for Timestamp {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        self.saturating_add(d)
    }
}

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// Identifies one record given to [`Producer::send`](crate::Producer::send). Assigned in
    /// send order, starting at 0, and never reused by one producer.
    RecordId
);
id_type!(
    /// Identifies one record batch inside the core. Batches created by a split get new ids.
    BatchId
);
id_type!(
    /// Identifies one request the core handed to its driver; responses are fed back by it.
    RequestId
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids print as their bare numbers (a broker as Kafka's logs name it: `node 7`).
    #[test]
    fn ids_display_as_numbers() {
        assert_eq!(alloc::format!("node {}", NodeId(7)), "node 7");
        assert_eq!(alloc::format!("{}", NodeId(-1)), "-1");
        assert_eq!(alloc::format!("{}", RecordId(12)), "12");
    }

    #[test]
    fn a_topic_is_made_from_every_string_form_alike() {
        let name = alloc::string::String::from("orders");
        let shared: Arc<str> = Arc::from("orders");
        let expected = Topic::new("orders");
        assert_eq!(Topic::from(&name), expected);
        assert_eq!(Topic::from(name.clone()), expected);
        assert_eq!(Topic::from(Arc::clone(&shared)), expected);
        // The Arc's allocation is shared, not copied.
        assert!(Arc::ptr_eq(&Topic::from(Arc::clone(&shared)).0, &shared));
        assert_eq!(
            TopicPartition::new(name, 3),
            TopicPartition::new("orders", 3)
        );
    }

    /// Port of `TransactionManagerTest.testSequenceNumberOverflow`: increment wraps as
    /// Kafka's `DefaultRecordBatch.incrementSequence` does.
    #[test]
    fn sequence_number_overflow() {
        let s = Sequence::ZERO.add(i32::MAX);
        assert_eq!(s, Sequence(i32::MAX));
        let s = s.add(100);
        assert_eq!(s, Sequence(99));
        let s = s.add(i32::MAX);
        assert_eq!(s, Sequence(98));
    }

    #[test]
    fn sub_inverts_add() {
        for (s, n) in [(0, 1), (5, 5), (3, 7), (i32::MAX, 1), (10, i32::MAX)] {
            assert_eq!(Sequence(s).add(n).sub(n), Sequence(s));
        }
        assert_eq!(Sequence(0).sub(1), Sequence(i32::MAX));
    }

    /// Port of `TransactionManagerTest.testDefaultSequenceNumber`.
    #[test]
    fn default_sequence_number() {
        assert_eq!(Sequence::default(), Sequence(0));
        assert_eq!(Sequence::default().add(3), Sequence(3));
    }

    #[test]
    fn epoch_does_not_wrap() {
        assert_eq!(ProducerEpoch(i16::MAX).next(), None);
        assert_eq!(ProducerEpoch(4).next(), Some(ProducerEpoch(5)));
    }

    #[test]
    fn timestamps() {
        let t = Timestamp::from_millis(5);
        assert_eq!(t.as_micros(), 5000);
        assert_eq!((t + Duration::from_millis(2)).as_millis(), 7);
        assert_eq!(
            t.saturating_duration_since(Timestamp::from_millis(9)),
            Duration::ZERO
        );
    }
}
