//! Seeded random valid traces.

use crate::trace::{Op, Trace, TraceConfig};

/// A small, seeded generator (SplitMix64): the same seed always gives the same trace.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The per-partition answers a generated trace uses, with their weights: the errors
/// the core handles on Produce (retriable, sequence, fatal-for-the-batch).
pub const PRODUCE_ERRORS: &[(&str, u64)] = &[
    ("NONE", 60),
    ("NOT_LEADER_OR_FOLLOWER", 6),
    ("NOT_ENOUGH_REPLICAS", 5),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 4),
    ("REQUEST_TIMED_OUT", 4),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3),
    ("LEADER_NOT_AVAILABLE", 2),
    ("KAFKA_STORAGE_ERROR", 2),
    ("CORRUPT_MESSAGE", 2),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 3),
    ("DUPLICATE_SEQUENCE_NUMBER", 2),
    ("UNKNOWN_PRODUCER_ID", 2),
    ("INVALID_PRODUCER_EPOCH", 1),
    ("MESSAGE_TOO_LARGE", 1),
    ("RECORD_LIST_TOO_LARGE", 1),
    ("INVALID_RECORD", 1),
    ("TOPIC_AUTHORIZATION_FAILED", 1),
];

/// Which answers a generated trace draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    /// Only `NONE`: every difference is in batching and sequencing.
    Clean,
    /// Every code in [`PRODUCE_ERRORS`], disconnects, request timeouts, leader moves.
    Faulty,
}

fn weighted<'a>(rng: &mut Rng, table: &'a [(&'a str, u64)]) -> &'a str {
    let total: u64 = table.iter().map(|(_, w)| w).sum();
    let mut x = rng.below(total);
    for (name, w) in table {
        if x < *w {
            return name;
        }
        x -= w;
    }
    table[0].0
}

/// A random valid idempotent trace for `seed`.
#[must_use]
pub fn idempotent(seed: u64, answers: Answers) -> Trace {
    let mut rng = Rng::new(seed);
    let partitions = 1 + rng.below(4) as i32;
    let nodes = 1 + rng.below(3) as i32;
    let batch_size = *rng.pick(&[200u32, 500, 1_000, 16_384]);
    let request_timeout_ms = *rng.pick(&[1_000u32, 5_000, 30_000]);
    let config = TraceConfig {
        partitions,
        nodes,
        batch_size,
        linger_ms: *rng.pick(&[0u32, 0, 10]),
        max_in_flight: *rng.pick(&[1u32, 2, 5, 5]),
        request_timeout_ms,
        delivery_timeout_ms: request_timeout_ms + *rng.pick(&[2_000u32, 10_000, 120_000]),
        retry_backoff_ms: *rng.pick(&[50u32, 100]),
    };
    let mut ops = Vec::new();
    let steps = 5 + rng.below(40);
    for _ in 0..steps {
        let roll = rng.below(100);
        let op = if roll < 40 {
            Op::Send {
                p: rng.below(partitions as u64) as i32,
                size: *rng.pick(&[1u32, 10, 50, 100, 300]),
            }
        } else if roll < 55 {
            Op::Tick {
                ms: *rng.pick(&[10u32, 50, 100, 500, 2_000]),
            }
        } else if roll < 88 || answers == Answers::Clean {
            let node = rng.below(nodes as u64) as i32;
            if answers == Answers::Clean {
                Op::Answer {
                    node,
                    error: "NONE".into(),
                    p: None,
                    log_start: 0,
                }
            } else {
                let error = weighted(&mut rng, PRODUCE_ERRORS).to_string();
                let p = rng.chance(30).then(|| {
                    (
                        rng.below(partitions as u64) as i32,
                        weighted(&mut rng, PRODUCE_ERRORS).to_string(),
                    )
                });
                Op::Answer {
                    node,
                    error,
                    p,
                    log_start: 0,
                }
            }
        } else if roll < 94 {
            Op::Disconnect {
                node: rng.below(nodes as u64) as i32,
            }
        } else if roll < 97 {
            Op::Leader {
                p: rng.below(partitions as u64) as i32,
                node: rng.below(nodes as u64) as i32,
            }
        } else {
            // Long enough for a request timeout.
            Op::Tick {
                ms: request_timeout_ms + 100,
            }
        };
        ops.push(op);
    }
    Trace { config, ops }
}
