//! Seeded random valid traces.

use crate::trace::{ApiAnswers, Op, Trace, TraceConfig};

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

/// A broker's answer to a Produce request: `NONE` in a clean trace; otherwise
/// a drawn code, and now and then another code for one partition.
fn produce_answer(rng: &mut Rng, nodes: i32, partitions: i32, answers: Answers) -> Op {
    let node = rng.below(nodes as u64) as i32;
    if answers == Answers::Clean {
        return Op::Answer {
            node,
            error: "NONE".into(),
            p: None,
            log_start: 0,
        };
    }
    let error = weighted(rng, PRODUCE_ERRORS).to_string();
    let p = rng.chance(30).then(|| {
        (
            rng.below(partitions as u64) as i32,
            weighted(rng, PRODUCE_ERRORS).to_string(),
        )
    });
    Op::Answer {
        node,
        error,
        p,
        log_start: 0,
    }
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
        transactional: false,
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
            produce_answer(&mut rng, nodes, partitions, answers)
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

/// The coordinator's condition when an answer comes, with its weight: one answer of
/// the trace says what each transactional API gets in that condition, so that it is
/// valid whichever request it meets (the two sides may have different ones
/// outstanding), and requests of different APIs meeting it get the answers one
/// coordinator would give together. Each is an answer Kafka gives: FindCoordinator
/// from any broker (`KafkaApis.getCoordinator`: NONE, or COORDINATOR_NOT_AVAILABLE
/// while the transaction state topic's partition has no leader), the others from the
/// transaction coordinator (`TransactionCoordinator.handleInitProducerId`,
/// `handleAddPartitionsToTransaction`, `handleEndTransaction`; a log append it could not
/// complete it reports as COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR,
/// `TransactionStateManager.appendTransactionToLog`) or from
/// `KafkaApis.handleAddPartitionsToTxnRequest` (topic not authorized or unknown, for
/// every partition of the trace's one topic; or one partition unknown and the rest of
/// the request not attempted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordinatorCondition {
    /// Everything succeeds.
    Fine,
    /// The coordinator moved: NOT_COORDINATOR from it, NONE from FindCoordinator.
    Moved,
    /// No leader for its partition: COORDINATOR_NOT_AVAILABLE from everything.
    Unavailable,
    /// Loading its partition: COORDINATOR_LOAD_IN_PROGRESS, NONE from FindCoordinator.
    Loading,
    /// A transition in progress: CONCURRENT_TRANSACTIONS, NONE from FindCoordinator.
    Busy,
    /// The producer's epoch is fenced: PRODUCER_FENCED.
    Fenced,
    /// Fenced, as a coordinator older than KIP-588 says it on AddPartitionsToTxn and
    /// EndTxn (INVALID_PRODUCER_EPOCH); its InitProducerId says PRODUCER_FENCED.
    FencedOld,
    /// The `transactional.id` is not authorized: everything fails with
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
    IdUnauthorized,
    /// The topic is not authorized: AddPartitionsToTxn TOPIC_AUTHORIZATION_FAILED.
    TopicUnauthorized,
    /// The topic is unknown: AddPartitionsToTxn UNKNOWN_TOPIC_OR_PARTITION.
    TopicUnknown,
    /// One partition is unknown: it gets UNKNOWN_TOPIC_OR_PARTITION, the rest of an
    /// AddPartitionsToTxn naming it OPERATION_NOT_ATTEMPTED.
    PartitionUnknown,
    /// An end that does not fit the transaction's state: EndTxn INVALID_TXN_STATE.
    EndMisfits,
}

/// The conditions a faulty transactional trace draws from, and their weights.
pub const COORDINATOR_CONDITIONS: &[(CoordinatorCondition, u64)] = &[
    (CoordinatorCondition::Fine, 60),
    (CoordinatorCondition::Moved, 5),
    (CoordinatorCondition::Unavailable, 5),
    (CoordinatorCondition::Loading, 4),
    (CoordinatorCondition::Busy, 5),
    (CoordinatorCondition::Fenced, 1),
    (CoordinatorCondition::FencedOld, 1),
    (CoordinatorCondition::IdUnauthorized, 1),
    (CoordinatorCondition::TopicUnauthorized, 1),
    (CoordinatorCondition::TopicUnknown, 1),
    (CoordinatorCondition::PartitionUnknown, 3),
    (CoordinatorCondition::EndMisfits, 1),
];

impl CoordinatorCondition {
    /// The answer, as a trace's `coord` operation: `error` for AddPartitionsToTxn (and
    /// the default), `find`, `init`, `end` where they differ; `p` a partition the trace
    /// has, for [`CoordinatorCondition::PartitionUnknown`].
    #[must_use]
    pub fn answer(self, p: i32) -> Op {
        use CoordinatorCondition as C;
        let (add, find, init, end) = match self {
            C::Fine | C::PartitionUnknown => ("NONE", "NONE", "NONE", "NONE"),
            C::Moved => (
                "NOT_COORDINATOR",
                "NONE",
                "NOT_COORDINATOR",
                "NOT_COORDINATOR",
            ),
            C::Unavailable => (
                "COORDINATOR_NOT_AVAILABLE",
                "COORDINATOR_NOT_AVAILABLE",
                "COORDINATOR_NOT_AVAILABLE",
                "COORDINATOR_NOT_AVAILABLE",
            ),
            C::Loading => (
                "COORDINATOR_LOAD_IN_PROGRESS",
                "NONE",
                "COORDINATOR_LOAD_IN_PROGRESS",
                "COORDINATOR_LOAD_IN_PROGRESS",
            ),
            C::Busy => (
                "CONCURRENT_TRANSACTIONS",
                "NONE",
                "CONCURRENT_TRANSACTIONS",
                "CONCURRENT_TRANSACTIONS",
            ),
            C::Fenced => (
                "PRODUCER_FENCED",
                "NONE",
                "PRODUCER_FENCED",
                "PRODUCER_FENCED",
            ),
            C::FencedOld => (
                "INVALID_PRODUCER_EPOCH",
                "NONE",
                "PRODUCER_FENCED",
                "INVALID_PRODUCER_EPOCH",
            ),
            C::IdUnauthorized => {
                const A: &str = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
                (A, A, A, A)
            }
            C::TopicUnauthorized => ("TOPIC_AUTHORIZATION_FAILED", "NONE", "NONE", "NONE"),
            C::TopicUnknown => ("UNKNOWN_TOPIC_OR_PARTITION", "NONE", "NONE", "NONE"),
            C::EndMisfits => ("NONE", "NONE", "NONE", "INVALID_TXN_STATE"),
        };
        let other = |e: &str| (e != add).then(|| e.to_string());
        let (p, rest) = if self == C::PartitionUnknown {
            (
                Some((p, "UNKNOWN_TOPIC_OR_PARTITION".to_string())),
                Some("OPERATION_NOT_ATTEMPTED".to_string()),
            )
        } else {
            (None, None)
        };
        Op::Coord {
            error: add.to_string(),
            p,
            apis: ApiAnswers {
                find: other(find),
                init: other(init),
                end: other(end),
                rest,
            },
        }
    }
}

/// A coordinator answer valid whichever transactional request it meets: a drawn
/// [`CoordinatorCondition`]'s. Only `NONE` in a clean trace.
fn coord_answer(rng: &mut Rng, partitions: i32, answers: Answers) -> Op {
    let condition = if answers == Answers::Clean {
        CoordinatorCondition::Fine
    } else {
        let total: u64 = COORDINATOR_CONDITIONS.iter().map(|(_, w)| w).sum();
        let mut x = rng.below(total);
        let mut chosen = CoordinatorCondition::Fine;
        for &(c, w) in COORDINATOR_CONDITIONS {
            if x < w {
                chosen = c;
                break;
            }
            x -= w;
        }
        chosen
    };
    let p = rng.below(partitions as u64) as i32;
    condition.answer(p)
}

/// Whether a coordinator answer names any error.
fn any_error(op: &Op) -> bool {
    match op {
        Op::Coord { error, p, apis } => {
            error != "NONE"
                || p.is_some()
                || [&apis.find, &apis.init, &apis.end]
                    .into_iter()
                    .any(|a| a.as_deref().is_some_and(|e| e != "NONE"))
        }
        _ => false,
    }
}

/// A random valid transactional trace for `seed` (transaction version 1): the
/// coordinator answers the init, then transactions open, send, and commit or abort,
/// among the produce answers, clock steps and faults of [`idempotent`]. Sends happen
/// only while the application believes its transaction open; calls the producer's state
/// refuses (after an error) are part of the trace.
#[must_use]
pub fn transactional(seed: u64, answers: Answers) -> Trace {
    let mut rng = Rng::new(seed ^ 0x7458_6e54_7261_6365);
    let base = idempotent(rng.next_u64(), answers);
    let mut config = base.config;
    config.transactional = true;
    // No retry backoff: Java's Sender sleeps the backoff before a transactional retry
    // (and before any request re-enqueued to wait for a coordinator), blocking produce,
    // where the core waits on a timer and sends the FindCoordinator after it; with the
    // scripted clock those differ in when, not in what. Transactional traces compare
    // what; idempotent traces cover backoffs.
    config.retry_backoff_ms = 0;
    let partitions = config.partitions;
    let nodes = config.nodes;
    let none = || Op::Coord {
        error: "NONE".into(),
        p: None,
        apis: ApiAnswers::default(),
    };
    // The init's FindCoordinator and InitProducerId.
    let mut ops = vec![
        coord_answer(&mut rng, partitions, answers),
        Op::Tick {
            ms: config.retry_backoff_ms + 50,
        },
        none(),
        none(),
    ];
    let mut open = false;
    let steps = 10 + rng.below(50);
    for _ in 0..steps {
        let roll = rng.below(100);
        let op = if !open && roll < 25 {
            open = true;
            Op::Txn {
                call: "begin".into(),
            }
        } else if open && roll < 35 {
            Op::Send {
                p: rng.below(partitions as u64) as i32,
                size: *rng.pick(&[1u32, 10, 50, 100, 300]),
            }
        } else if open && roll < 41 {
            open = false;
            Op::Txn {
                call: if rng.chance(70) { "commit" } else { "abort" }.into(),
            }
        } else if roll < 62 {
            let answer = coord_answer(&mut rng, partitions, answers);
            if any_error(&answer) {
                // An error is retried after retry.backoff.ms: let time pass.
                ops.push(answer);
                Op::Tick {
                    ms: config.retry_backoff_ms + 50,
                }
            } else {
                answer
            }
        } else if roll < 82 || answers == Answers::Clean && roll < 90 {
            produce_answer(&mut rng, nodes, partitions, answers)
        } else if roll < 92 || answers == Answers::Clean {
            Op::Tick {
                ms: *rng.pick(&[10u32, 50, 100, 500]),
            }
        } else if roll < 96 {
            // Any broker, the coordinator's (`nodes`) included.
            Op::Disconnect {
                node: rng.below(nodes as u64 + 1) as i32,
            }
        } else if roll < 98 {
            Op::Leader {
                p: rng.below(partitions as u64) as i32,
                node: rng.below(nodes as u64) as i32,
            }
        } else {
            Op::Tick {
                ms: config.request_timeout_ms + 100,
            }
        };
        ops.push(op);
    }
    Trace { config, ops }
}
