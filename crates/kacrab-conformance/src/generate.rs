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

/// The errors Kafka's transaction coordinator answers AddPartitionsToTxn with, one for
/// every partition of the request, and their weights: `TransactionCoordinator`
/// (`handleAddPartitionsToTransaction`: the coordinator moved or loading, a transition
/// in progress, a fenced epoch) and `KafkaApis.handleAddPartitionsToTxnRequest`
/// (`transactional.id` or topic not authorized, the topic unknown). INVALID_PRODUCER_EPOCH
/// is what a coordinator older than KIP-588 says for PRODUCER_FENCED. A log append the
/// coordinator could not complete it reports as COORDINATOR_NOT_AVAILABLE or
/// NOT_COORDINATOR (`TransactionStateManager.appendTransactionToLog`), never as the
/// append's own error.
pub const ADD_PARTITIONS_ERRORS: &[(&str, u64)] = &[
    ("NONE", 60),
    ("COORDINATOR_NOT_AVAILABLE", 5),
    ("NOT_COORDINATOR", 5),
    ("COORDINATOR_LOAD_IN_PROGRESS", 4),
    ("CONCURRENT_TRANSACTIONS", 5),
    ("UNKNOWN_TOPIC_OR_PARTITION", 1),
    ("INVALID_PRODUCER_EPOCH", 1),
    ("PRODUCER_FENCED", 1),
    ("TOPIC_AUTHORIZATION_FAILED", 1),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 1),
];

/// The errors Kafka answers FindCoordinator for a transactional id with, and their
/// weights (`KafkaApis.getCoordinator`: the transaction state topic or its leader not
/// there yet, the `transactional.id` not authorized).
pub const FIND_COORDINATOR_ERRORS: &[(&str, u64)] = &[
    ("NONE", 80),
    ("COORDINATOR_NOT_AVAILABLE", 12),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 1),
];

/// The errors Kafka's transaction coordinator answers InitProducerId with, and their
/// weights (`TransactionCoordinator.handleInitProducerId`: moved, loading, a transition
/// in progress, a bump at a stale epoch, not authorized).
pub const INIT_PRODUCER_ID_ERRORS: &[(&str, u64)] = &[
    ("NONE", 60),
    ("COORDINATOR_NOT_AVAILABLE", 5),
    ("NOT_COORDINATOR", 5),
    ("COORDINATOR_LOAD_IN_PROGRESS", 4),
    ("CONCURRENT_TRANSACTIONS", 5),
    ("PRODUCER_FENCED", 1),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 1),
];

/// The errors Kafka's transaction coordinator answers EndTxn with, and their weights
/// (`TransactionCoordinator.handleEndTransaction`: moved, loading, a transition in
/// progress, a fenced epoch, an end that does not fit the transaction's state, not
/// authorized).
pub const END_TXN_ERRORS: &[(&str, u64)] = &[
    ("NONE", 60),
    ("COORDINATOR_NOT_AVAILABLE", 5),
    ("NOT_COORDINATOR", 5),
    ("COORDINATOR_LOAD_IN_PROGRESS", 4),
    ("CONCURRENT_TRANSACTIONS", 5),
    ("INVALID_PRODUCER_EPOCH", 1),
    ("PRODUCER_FENCED", 1),
    ("INVALID_TXN_STATE", 1),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 1),
];

/// A coordinator answer that is valid whichever transactional request it meets: an
/// error drawn per API, and now and then an AddPartitionsToTxn answer where one
/// partition does not exist (UNKNOWN_TOPIC_OR_PARTITION) and Kafka leaves the others
/// untried (OPERATION_NOT_ATTEMPTED). Only `NONE` in a clean trace.
fn coord_answer(rng: &mut Rng, partitions: i32, answers: Answers) -> Op {
    if answers == Answers::Clean {
        return Op::Coord {
            error: "NONE".into(),
            p: None,
            apis: ApiAnswers::default(),
        };
    }
    let error = weighted(rng, ADD_PARTITIONS_ERRORS).to_string();
    let mut draw = |table| Some(weighted(rng, table).to_string()).filter(|e| *e != error);
    let find = draw(FIND_COORDINATOR_ERRORS);
    let init = draw(INIT_PRODUCER_ID_ERRORS);
    let end = draw(END_TXN_ERRORS);
    let (p, rest) = if rng.chance(5) {
        let p = rng.below(partitions as u64) as i32;
        (
            Some((p, "UNKNOWN_TOPIC_OR_PARTITION".to_string())),
            Some("OPERATION_NOT_ATTEMPTED".to_string()),
        )
    } else {
        (None, None)
    };
    Op::Coord {
        error,
        p,
        apis: ApiAnswers {
            find,
            init,
            end,
            rest,
        },
    }
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
