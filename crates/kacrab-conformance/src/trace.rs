//! A trace: the configuration, then the operations both sides replay, as JSON lines.
//!
//! Every line is one flat JSON object. The Java side
//! (`conformance/java`) reads the same lines with a pattern, so values are only
//! strings and integers, never nested.

use std::fmt::Write as _;

/// The producer and cluster a trace runs against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    /// Partitions of the one topic `t`.
    pub partitions: i32,
    /// Brokers; partition `p` starts led by `p % nodes`.
    pub nodes: i32,
    /// `batch.size`.
    pub batch_size: u32,
    /// `linger.ms`.
    pub linger_ms: u32,
    /// `max.in.flight.requests.per.connection`.
    pub max_in_flight: u32,
    /// `request.timeout.ms`.
    pub request_timeout_ms: u32,
    /// `delivery.timeout.ms`.
    pub delivery_timeout_ms: u32,
    /// `retry.backoff.ms`, also `retry.backoff.max.ms` (no jitter on either side).
    pub retry_backoff_ms: u32,
    /// A transactional producer (`transactional.id` set, transaction version 1): its
    /// `initTransactions` runs at the start, and the coordinator is broker `nodes`, which
    /// leads no partition.
    pub transactional: bool,
}

impl Default for TraceConfig {
    fn default() -> Self {
        Self {
            partitions: 1,
            nodes: 1,
            batch_size: 16_384,
            linger_ms: 0,
            max_in_flight: 5,
            request_timeout_ms: 30_000,
            delivery_timeout_ms: 120_000,
            retry_backoff_ms: 100,
            transactional: false,
        }
    }
}

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// The application sends a record of `size` value bytes (no key) to partition `p`.
    Send {
        /// Partition.
        p: i32,
        /// Value size in bytes.
        size: u32,
    },
    /// Time advances by `ms`, in steps of at most [`STEP_MS`].
    Tick {
        /// Milliseconds.
        ms: u32,
    },
    /// The broker `node` answers its oldest outstanding Produce request: every partition
    /// gets `error`, except partition `p`, which gets `perr`. Nothing if none is outstanding.
    Answer {
        /// The broker.
        node: i32,
        /// The error of every partition (Kafka's name, e.g. `NONE`).
        error: String,
        /// The partition with its own error, if any.
        p: Option<(i32, String)>,
        /// The log start offset reported with an error.
        log_start: i64,
    },
    /// The connection to `node` breaks; every request on it may have been written.
    Disconnect {
        /// The broker.
        node: i32,
    },
    /// Partition `p` moves to leader `node` (leader epoch + 1); both sides learn it at once.
    Leader {
        /// Partition.
        p: i32,
        /// The new leader.
        node: i32,
    },
    /// The application calls `call` (`begin`, `commit` or `abort`) on a transactional
    /// producer.
    Txn {
        /// The call.
        call: String,
    },
    /// The transaction coordinator answers the outstanding transactional request
    /// (FindCoordinator, InitProducerId, AddPartitionsToTxn or EndTxn) with `error`, or
    /// with the error `apis` names for that request's API; an AddPartitionsToTxn answer
    /// gives partition `p` its own error. With none outstanding, the answer waits for
    /// the next transactional request.
    Coord {
        /// Kafka's error name: AddPartitionsToTxn's for every partition, and every other
        /// API's where `apis` names none.
        error: String,
        /// The partition with its own error, if any.
        p: Option<(i32, String)>,
        /// The answers of particular APIs, where they differ from `error`.
        apis: ApiAnswers,
    },
}

/// The errors a [`Op::Coord`] answer gives particular requests, where they are not its
/// `error`. A generated trace draws each from the codes Kafka's coordinator returns for
/// that API, so that one operation answers validly whichever request is outstanding
/// (the two sides may have different ones outstanding).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ApiAnswers {
    /// FindCoordinator's error.
    pub find: Option<String>,
    /// InitProducerId's error.
    pub init: Option<String>,
    /// EndTxn's error.
    pub end: Option<String>,
    /// AddPartitionsToTxn's error for every partition but `p`, where the request names
    /// `p` (Kafka answers the partitions it did not try OPERATION_NOT_ATTEMPTED,
    /// `KafkaApis.handleAddPartitionsToTxnRequest`); where it does not, every partition
    /// gets `error`.
    pub rest: Option<String>,
}

impl ApiAnswers {
    /// The fields as JSON (`,"find":"X"` and so on), empty where none is named.
    fn to_json(&self) -> String {
        let mut s = String::new();
        for (k, v) in [
            ("rest", &self.rest),
            ("find", &self.find),
            ("init", &self.init),
            ("end", &self.end),
        ] {
            if let Some(v) = v {
                let _ = write!(s, r#","{k}":"{v}""#);
            }
        }
        s
    }
}

/// Time advances in steps of at most this many milliseconds on both sides.
pub const STEP_MS: u32 = 50;

/// A whole trace.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Trace {
    /// The configuration.
    pub config: TraceConfig,
    /// The steps, in order.
    pub ops: Vec<Op>,
}

impl Trace {
    /// The trace as JSON lines, ending with the `end` line.
    #[must_use]
    pub fn to_jsonl(&self) -> String {
        let c = &self.config;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"{{"op":"config","partitions":{},"nodes":{},"batch_size":{},"linger_ms":{},"max_in_flight":{},"request_timeout_ms":{},"delivery_timeout_ms":{},"retry_backoff_ms":{}"#,
            c.partitions,
            c.nodes,
            c.batch_size,
            c.linger_ms,
            c.max_in_flight,
            c.request_timeout_ms,
            c.delivery_timeout_ms,
            c.retry_backoff_ms
        );
        if c.transactional {
            s.push_str(r#","transactional":1"#);
        }
        s.push_str("}\n");
        for op in &self.ops {
            let _ = match op {
                Op::Send { p, size } => writeln!(s, r#"{{"op":"send","p":{p},"size":{size}}}"#),
                Op::Tick { ms } => writeln!(s, r#"{{"op":"tick","ms":{ms}}}"#),
                Op::Answer {
                    node,
                    error,
                    p,
                    log_start,
                } => match p {
                    Some((p, perr)) => writeln!(
                        s,
                        r#"{{"op":"answer","node":{node},"error":"{error}","p":{p},"perr":"{perr}","log_start":{log_start}}}"#
                    ),
                    None => writeln!(
                        s,
                        r#"{{"op":"answer","node":{node},"error":"{error}","log_start":{log_start}}}"#
                    ),
                },
                Op::Disconnect { node } => writeln!(s, r#"{{"op":"disconnect","node":{node}}}"#),
                Op::Leader { p, node } => {
                    writeln!(s, r#"{{"op":"leader","p":{p},"node":{node}}}"#)
                }
                Op::Txn { call } => writeln!(s, r#"{{"op":"txn","call":"{call}"}}"#),
                Op::Coord { error, p, apis } => {
                    let apis = apis.to_json();
                    match p {
                        Some((p, perr)) => writeln!(
                            s,
                            r#"{{"op":"coord","error":"{error}","p":{p},"perr":"{perr}"{apis}}}"#
                        ),
                        None => writeln!(s, r#"{{"op":"coord","error":"{error}"{apis}}}"#),
                    }
                }
            };
        }
        s.push_str("{\"op\":\"end\"}\n");
        s
    }

    /// Reads traces from JSON lines (several may follow each other).
    ///
    /// # Errors
    /// A line that is not a known operation.
    pub fn parse_many(text: &str) -> Result<Vec<Trace>, String> {
        let mut traces = Vec::new();
        let mut current: Option<Trace> = None;
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            let int = |k: &str, d: i64| v.get(k).and_then(serde_json::Value::as_i64).unwrap_or(d);
            let num = |k: &str, d: i64| i32::try_from(int(k, d)).unwrap_or(0);
            let unum = |k: &str, d: i64| u32::try_from(int(k, d)).unwrap_or(0);
            let string = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
            let op = string("op").unwrap_or_default();
            if op == "config" {
                let d = TraceConfig::default();
                current = Some(Trace {
                    config: TraceConfig {
                        partitions: num("partitions", 1),
                        nodes: num("nodes", 1),
                        batch_size: unum("batch_size", d.batch_size.into()),
                        linger_ms: unum("linger_ms", d.linger_ms.into()),
                        max_in_flight: unum("max_in_flight", d.max_in_flight.into()),
                        request_timeout_ms: unum("request_timeout_ms", d.request_timeout_ms.into()),
                        delivery_timeout_ms: unum(
                            "delivery_timeout_ms",
                            d.delivery_timeout_ms.into(),
                        ),
                        retry_backoff_ms: unum("retry_backoff_ms", d.retry_backoff_ms.into()),
                        transactional: int("transactional", 0) == 1,
                    },
                    ops: Vec::new(),
                });
                continue;
            }
            let trace = current
                .as_mut()
                .ok_or_else(|| format!("line {}: an op before the config", n + 1))?;
            let parsed = match op.as_str() {
                "end" => {
                    traces.push(current.take().expect("checked above"));
                    continue;
                }
                "send" => Op::Send {
                    p: num("p", 0),
                    size: unum("size", 10),
                },
                "tick" => Op::Tick { ms: unum("ms", 0) },
                "answer" => Op::Answer {
                    node: num("node", 0),
                    error: string("error").unwrap_or_else(|| "NONE".into()),
                    p: string("perr").map(|e| (num("p", -1), e)),
                    log_start: int("log_start", 0),
                },
                "disconnect" => Op::Disconnect {
                    node: num("node", 0),
                },
                "leader" => Op::Leader {
                    p: num("p", 0),
                    node: num("node", 0),
                },
                "txn" => Op::Txn {
                    call: string("call").unwrap_or_default(),
                },
                "coord" => Op::Coord {
                    error: string("error").unwrap_or_else(|| "NONE".into()),
                    p: string("perr").map(|e| (num("p", -1), e)),
                    apis: ApiAnswers {
                        find: string("find"),
                        init: string("init"),
                        end: string("end"),
                        rest: string("rest"),
                    },
                },
                other => return Err(format!("line {}: unknown op {other:?}", n + 1)),
            };
            trace.ops.push(parsed);
        }
        Ok(traces)
    }
}
