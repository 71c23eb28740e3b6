//! Choosing a partition for a record sent without one: Kafka's built-in partitioner
//! (KIP-794, Java's `BuiltInPartitioner` and `RecordAccumulator.partitionReady`), and
//! the [`Partitioner`] trait for an application's own policy.
//!
//! * A keyed record goes to murmur2 of its key, made positive, modulo the partition
//!   count, over every partition whether it has a leader or not
//!   (`BuiltInPartitioner.partitionForKey`), unless `partitioner.ignore.keys`.
//! * A record without a key (or with keys ignored) sticks to the topic's current
//!   partition until `batch.size` bytes were sent there, then a new one is drawn
//!   (`BuiltInPartitioner.updatePartitionInfo`). Uniformly among the partitions with a
//!   leader, or, with `partitioner.adaptive.partitioning.enable` (the default), weighted
//!   away from longer queues: partition `i` weighs `max_queue + 1 - queue[i]`, queues
//!   counted in batches waiting to be sent (`updatePartitionLoadStats`). With
//!   `partitioner.availability.timeout.ms` above zero, adaptive partitioning also leaves
//!   out the partitions of a leader that had batches waiting and took nothing for that
//!   long (`partitionReady`'s `readyTimeMs - drainTimeMs`).
//!
//! Draws come from a generator seeded from the session's configuration, so a session
//! stays deterministic for given inputs.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use kacrab_idempotence::Timestamp;

use crate::topics::PartitionInfo;

/// Java-compatible murmur2 partitioning for keyed records: the partition Kafka's
/// built-in partitioner picks for `key` among `partitions` partitions
/// (`BuiltInPartitioner.partitionForKey`: `Utils.toPositive(Utils.murmur2(key)) %
/// partitions`).
#[must_use]
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    let positive = murmur2(key) & 0x7fff_ffff;
    positive % partitions.max(1)
}

/// Kafka's murmur2 hash (`Utils.murmur2`), seed `0x9747b28c`.
#[must_use]
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = 0x9747_b28c ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// A topic's partitions as the session's latest metadata describes them, for a
/// [`Partitioner`].
#[derive(Clone, Copy, Debug)]
pub struct TopicPartitions<'a> {
    partitions: &'a [PartitionInfo],
}

impl<'a> TopicPartitions<'a> {
    pub(crate) fn new(partitions: &'a [PartitionInfo]) -> Self {
        Self { partitions }
    }

    /// The partition count (partitions are numbered `0..count`).
    #[must_use]
    pub fn count(&self) -> i32 {
        i32::try_from(self.partitions.len()).unwrap_or(i32::MAX)
    }

    /// Every partition, in order.
    #[must_use]
    pub fn all(&self) -> &'a [PartitionInfo] {
        self.partitions
    }

    /// The partitions with a leader (Java's `Cluster.availablePartitionsForTopic`).
    pub fn available(&self) -> impl Iterator<Item = &'a PartitionInfo> + 'a {
        self.partitions.iter().filter(|p| p.leader.is_some())
    }
}

/// An application's partitioning policy (Java's `Partitioner` interface), installed with
/// [`Session::set_partitioner`](crate::Session::set_partitioner). It is asked for every
/// record sent without a partition, once the topic's metadata is known; an explicit
/// partition always wins.
pub trait Partitioner: fmt::Debug + Send {
    /// The partition for a record of `topic`, or `None` to leave it to Kafka's built-in
    /// partitioner (as a Java partitioner returning `RecordMetadata.UNKNOWN_PARTITION`).
    /// A partition outside `0..partitions.count()` fails the record.
    fn partition(
        &mut self,
        topic: &str,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partitions: TopicPartitions<'_>,
    ) -> Option<i32>;
}

/// Whether keyed records are hashed (`partitioner.ignore.keys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeyUse {
    /// Keys decide the partition (Kafka's default).
    #[default]
    Hash,
    /// Keys are ignored: every record without a partition is sticky.
    Ignore,
}

/// How the sticky partition is drawn (`partitioner.adaptive.partitioning.enable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StickyDraw {
    /// Weighted away from longer queues (Kafka's default).
    #[default]
    Adaptive,
    /// Uniformly among the partitions with a leader.
    Uniform,
}

/// The built-in partitioner's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BuiltInSettings {
    pub(crate) keys: KeyUse,
    pub(crate) draw: StickyDraw,
    /// `partitioner.availability.timeout.ms`; `None` (0) disables the exclusion.
    pub(crate) availability_timeout: Option<Duration>,
    /// `batch.size`: bytes sent to the sticky partition before it changes.
    pub(crate) sticky_bytes: usize,
    pub(crate) seed: u64,
}

/// The sticky partition of one topic (Java's `StickyPartitionInfo`).
#[derive(Clone, Copy, Debug)]
struct Sticky {
    partition: i32,
    /// Bytes sent to it since it was drawn. Invariant: below `sticky_bytes` (the draw
    /// that reaches it drops the entry, so the next record draws anew).
    produced: usize,
}

/// When a leader last took batches, and since when it has had some waiting (the
/// `NodeLatencyStats` of `RecordAccumulator`).
#[derive(Clone, Copy, Debug, Default)]
struct LeaderDrain {
    waiting_since: Option<Timestamp>,
    drained: Option<Timestamp>,
}

/// Kafka's built-in partitioner. See the module documentation.
#[derive(Debug)]
pub(crate) struct BuiltIn {
    settings: BuiltInSettings,
    sticky: BTreeMap<String, Sticky>,
    leaders: BTreeMap<i32, LeaderDrain>,
    rng: SplitMix64,
}

/// What the built-in partitioner reads of the producer's queues.
pub(crate) trait Load {
    /// Batches of `partition` of the topic waiting to be sent.
    fn queued(&self, partition: i32) -> usize;
}

impl BuiltIn {
    pub(crate) fn new(settings: BuiltInSettings) -> Self {
        Self {
            settings,
            sticky: BTreeMap::new(),
            leaders: BTreeMap::new(),
            rng: SplitMix64(settings.seed),
        }
    }

    /// A leader took a Produce request: its queue drained.
    pub(crate) fn drained(&mut self, leader: i32, now: Timestamp) {
        let d = self.leaders.entry(leader).or_default();
        d.drained = Some(now);
        d.waiting_since = None;
    }

    /// Forgets a topic's sticky partition (its metadata was forgotten or replaced).
    pub(crate) fn forget(&mut self, topic: &str) {
        self.sticky.remove(topic);
    }

    /// The partition for a record of `topic` of `size` bytes with `key`.
    pub(crate) fn partition(
        &mut self,
        topic: &str,
        key: Option<&[u8]>,
        size: usize,
        partitions: TopicPartitions<'_>,
        load: &dyn Load,
        now: Timestamp,
    ) -> i32 {
        if let (Some(key), KeyUse::Hash) = (key, self.settings.keys) {
            return partition_for_key(key, partitions.count());
        }
        let current = self
            .sticky
            .get(topic)
            .copied()
            .filter(|s| s.partition < partitions.count());
        let mut sticky = match current {
            Some(s) => s,
            None => Sticky {
                partition: self.draw(partitions, load, now),
                produced: 0,
            },
        };
        sticky.produced += size;
        let chosen = sticky.partition;
        if sticky.produced >= self.settings.sticky_bytes {
            self.sticky.remove(topic);
        } else {
            self.sticky.insert(topic.to_owned(), sticky);
        }
        chosen
    }

    /// A new sticky partition (`BuiltInPartitioner.nextPartition`).
    fn draw(&mut self, partitions: TopicPartitions<'_>, load: &dyn Load, now: Timestamp) -> i32 {
        let random = self.rng.next_positive();
        if self.settings.draw == StickyDraw::Adaptive {
            if let Some(p) = self.draw_adaptive(partitions, load, now, random) {
                return p;
            }
        }
        let available: Vec<i32> = partitions.available().map(|p| p.partition).collect();
        if available.is_empty() {
            (random % u64::from(partitions.count().unsigned_abs().max(1))) as i32
        } else {
            available[(random % available.len() as u64) as usize]
        }
    }

    /// The weighted draw; `None` with fewer than two candidates (Java then draws
    /// uniformly: `updatePartitionLoadStats` keeps no statistics for under two).
    fn draw_adaptive(
        &mut self,
        partitions: TopicPartitions<'_>,
        load: &dyn Load,
        now: Timestamp,
        random: u64,
    ) -> Option<i32> {
        let mut candidates: Vec<(i32, usize)> = Vec::new();
        let mut by_leader: BTreeMap<i32, usize> = BTreeMap::new();
        for p in partitions.available() {
            let queued = load.queued(p.partition);
            if let Some(leader) = p.leader {
                *by_leader.entry(leader).or_default() += queued;
            }
            candidates.push((p.partition, queued));
        }
        if let Some(timeout) = self.settings.availability_timeout {
            let mut excluded = Vec::new();
            for (&leader, &queued) in &by_leader {
                let d = self.leaders.entry(leader).or_default();
                if queued == 0 {
                    d.waiting_since = None;
                    continue;
                }
                let since = *d.waiting_since.get_or_insert(now);
                let stuck_from = d.drained.map_or(since, |t| t.max(since));
                if now.saturating_duration_since(stuck_from) > timeout {
                    excluded.push(leader);
                }
            }
            candidates.retain(|(p, _)| {
                let leader = partitions.all()[*p as usize].leader;
                !leader.is_some_and(|l| excluded.contains(&l))
            });
        }
        if candidates.len() < 2 {
            return None;
        }
        let max_plus_one = candidates.iter().map(|c| c.1).max().unwrap_or(0) + 1;
        let total: u64 = candidates.iter().map(|c| (max_plus_one - c.1) as u64).sum();
        let mut pick = random % total;
        for &(p, queued) in &candidates {
            let weight = (max_plus_one - queued) as u64;
            if pick < weight {
                return Some(p);
            }
            pick -= weight;
        }
        candidates.last().map(|c| c.0)
    }
}

/// SplitMix64: a small, well-mixed deterministic generator for the partition draws.
#[derive(Debug, Clone, Copy)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_positive(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) >> 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from Kafka's `UtilsTest.testMurmur2`.
    #[test]
    fn murmur2_matches_kafka() {
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (input, expected) in cases {
            assert_eq!(
                murmur2(input),
                expected,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// Every line of `tests/fixtures/java_partitions.txt`, printed by Java's
    /// `Utils.murmur2` and `BuiltInPartitioner.partitionForKey` (kafka-clients 4.4.0,
    /// `tests/fixtures/JavaPartitions.java`), agrees with ours.
    #[test]
    fn keyed_partitions_match_javas_built_in_partitioner() {
        let fixture = include_str!("../tests/fixtures/java_partitions.txt");
        let mut lines = 0;
        for line in fixture.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let key: Vec<u8> = if f[0] == "-" {
                Vec::new()
            } else {
                (0..f[0].len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&f[0][i..i + 2], 16).unwrap())
                    .collect()
            };
            let count: i32 = f[1].parse().unwrap();
            assert_eq!(murmur2(&key), f[2].parse::<i32>().unwrap(), "{line}");
            assert_eq!(
                partition_for_key(&key, count),
                f[3].parse::<i32>().unwrap(),
                "{line}"
            );
            lines += 1;
        }
        assert!(lines >= 500, "the fixture has {lines} lines");
    }

    struct Queues(Vec<usize>);
    impl Load for Queues {
        fn queued(&self, partition: i32) -> usize {
            self.0[partition as usize]
        }
    }

    fn led(leaders: &[Option<i32>]) -> Vec<PartitionInfo> {
        leaders
            .iter()
            .enumerate()
            .map(|(i, &leader)| PartitionInfo {
                partition: i as i32,
                leader,
            })
            .collect()
    }

    fn built_in(draw: StickyDraw, availability: Option<Duration>) -> BuiltIn {
        BuiltIn::new(BuiltInSettings {
            keys: KeyUse::Hash,
            draw,
            availability_timeout: availability,
            sticky_bytes: 1000,
            seed: 7,
        })
    }

    #[test]
    fn a_record_without_a_key_sticks_until_batch_size_bytes_then_moves() {
        let parts = led(&[Some(1); 6]);
        let view = TopicPartitions::new(&parts);
        let load = Queues(vec![0; 6]);
        let mut b = built_in(StickyDraw::Uniform, None);
        let mut runs = Vec::new();
        let mut last = None;
        for _ in 0..400 {
            let p = b.partition("t", None, 100, view, &load, Timestamp::ZERO);
            match runs.last_mut() {
                Some((q, n)) if Some(p) == last && *n < 10 => {
                    assert_eq!(*q, p);
                    *n += 1;
                }
                _ => runs.push((p, 1)),
            }
            last = Some(p);
        }
        // 1000 bytes per sticky partition, 100 per record: runs of exactly ten records
        // (two adjacent runs may draw the same partition, counted as two here).
        assert!(runs.iter().all(|&(_, n)| n == 10), "{runs:?}");
        let mut seen = [0usize; 6];
        for (p, _) in &runs {
            seen[*p as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n >= 2), "uniform over six: {seen:?}");
    }

    #[test]
    fn a_keyed_record_ignores_stickiness_and_leaders_unless_keys_are_ignored() {
        let parts = led(&[None, Some(1), Some(1)]);
        let view = TopicPartitions::new(&parts);
        let load = Queues(vec![0; 3]);
        let mut b = built_in(StickyDraw::Adaptive, None);
        let key: &[u8] = b"foobar";
        assert_eq!(
            b.partition("t", Some(key), 10, view, &load, Timestamp::ZERO),
            partition_for_key(key, 3)
        );
        b.settings.keys = KeyUse::Ignore;
        for _ in 0..50 {
            let p = b.partition("t", Some(key), 10, view, &load, Timestamp::ZERO);
            assert_ne!(p, 0, "sticky draws skip a partition without a leader");
        }
    }

    #[test]
    fn adaptive_draws_weigh_away_from_longer_queues() {
        let parts = led(&[Some(1), Some(2)]);
        let view = TopicPartitions::new(&parts);
        // Partition 0 has 9 batches waiting, partition 1 none: weights 1 and 10.
        let load = Queues(vec![9, 0]);
        let mut b = built_in(StickyDraw::Adaptive, None);
        let mut to_short = 0;
        for _ in 0..1100 {
            if b.partition("t", None, 1000, view, &load, Timestamp::ZERO) == 1 {
                to_short += 1;
            }
        }
        assert!((900..=1100).contains(&to_short), "{to_short} of 1100");
        let mut u = built_in(StickyDraw::Uniform, None);
        let uniform = (0..1100)
            .filter(|_| u.partition("t", None, 1000, view, &load, Timestamp::ZERO) == 1)
            .count();
        assert!((450..=650).contains(&uniform), "{uniform} of 1100");
    }

    #[test]
    fn a_leader_stuck_past_the_availability_timeout_gets_no_new_sticky_partition() {
        let parts = led(&[Some(1), Some(2), Some(2)]);
        let view = TopicPartitions::new(&parts);
        let load = Queues(vec![1, 1, 1]);
        let mut b = built_in(StickyDraw::Adaptive, Some(Duration::from_millis(100)));
        let t0 = Timestamp::ZERO;
        let later = t0 + Duration::from_millis(150);
        b.partition("t", None, 1000, view, &load, t0);
        // Leader 2 took a request meanwhile; leader 1 did not.
        b.drained(2, t0 + Duration::from_millis(120));
        for _ in 0..100 {
            let p = b.partition("t", None, 1000, view, &load, later);
            assert_ne!(p, 0, "leader 1 has waited 150 ms > 100 ms");
        }
        let mut off = built_in(StickyDraw::Adaptive, None);
        off.partition("t", None, 1000, view, &load, t0);
        assert!(
            (0..100).any(|_| off.partition("t", None, 1000, view, &load, later) == 0),
            "without the timeout every leader stays a candidate"
        );
    }
}
