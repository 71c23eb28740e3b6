//! Decodes an arbitrary byte string into a scripted run (for cargo-fuzz and for
//! replaying byte strings in tests): every byte is an operation on a small cluster,
//! then a quiet phase, then the end-of-run checks. Nothing may panic and no property
//! may be violated.

use std::time::Duration;

use kacrab_idempotence::{NodeId, ProducerConfig};

use crate::cluster::Cluster;
use crate::config::SimConfig;
use crate::faults::{FaultRates, PartitionFault, Script};
use crate::scenario::Report;
use crate::ViolationKind;

/// How [`run_with`] builds its cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// See [`SimConfig::strict_first_sequence`]. Default: off (Kafka's rules).
    pub strict_first_sequence: bool,
    /// The producer's `delivery.timeout.ms`. Default: 10 s, short next to the delays
    /// the operations can script, so batches expire with their fate unknown.
    pub delivery_timeout: Duration,
    /// Whether MESSAGE_TOO_LARGE may be scripted or drawn (as after a lowered
    /// `max.message.bytes`). Default: yes.
    pub message_too_large: bool,
    /// Whether the shape byte may give the brokers a small `max.message.bytes` (so
    /// that batches are refused and split). Default: yes.
    pub small_max_message_bytes: bool,
    /// Keep the step trace in the report, and print it to stderr as it happens.
    pub trace: bool,
    /// See [`SimConfig::rebuild_snapshots`]. Default: on, as in Kafka.
    pub rebuild_snapshots: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            strict_first_sequence: false,
            delivery_timeout: Duration::from_secs(10),
            message_too_large: true,
            small_max_message_bytes: true,
            trace: false,
            rebuild_snapshots: true,
        }
    }
}

/// Runs the operations encoded in `data` under Kafka's broker rules exactly and
/// returns the report. See [`run_with`].
#[must_use]
pub fn run(data: &[u8]) -> Report {
    run_with(data, Options::default())
}

/// Runs the operations encoded in `data` and returns the report.
///
/// The first eight bytes choose the shape (brokers, partitions, `max.in.flight`,
/// linger, batch size, a seed, the brokers' `max.message.bytes` and the first epoch);
/// each following byte is one operation: send records, let time
/// pass, crash or restart a broker, move a leader, drop a connection, script a lost
/// response or request, a delayed response, a partition error or a throttle, turn
/// random faults on or off, or flush.
#[must_use]
pub fn run_with(data: &[u8], options: Options) -> Report {
    let mut bytes = data.iter().copied();
    let mut next = || bytes.next().unwrap_or(0);
    let brokers = 1 + u32::from(next() % 4);
    let partitions = 1 + u32::from(next() % 6);
    let in_flight = 1 + u32::from(next() % 5);
    let linger = Duration::from_millis(u64::from(next() % 20));
    let batch_size = 64 + 64 * usize::from(next() % 32);
    let seed = u64::from(next()) | (u64::from(next()) << 8);
    let shape = next();
    // One run in four: small max.message.bytes (batches split); one in four: producer
    // ids start close to the last epoch (exhaustion, then a new id).
    let max_message_bytes = if options.small_max_message_bytes && shape & 3 == 0 {
        200 + 40 * usize::from(shape >> 2)
    } else {
        1_048_588
    };
    let initial_epoch = if (shape >> 2) & 3 == 0 {
        i16::MAX - i16::from(shape >> 6)
    } else {
        0
    };

    let mut sim = SimConfig::new(seed);
    sim.brokers = brokers;
    sim.partitions = partitions;
    sim.topics = 1 + partitions / 3;
    sim.strict_first_sequence = options.strict_first_sequence;
    sim.rebuild_snapshots = options.rebuild_snapshots;
    sim.max_message_bytes = max_message_bytes;
    sim.trace = options.trace;
    sim.trace_live = options.trace;
    sim.initial_producer_epoch = initial_epoch;
    let mut builder = SimConfig::producer_config(seed);
    builder
        .max_in_flight_requests_per_connection(in_flight)
        .linger(linger)
        .batch_size(batch_size)
        .delivery_timeout(options.delivery_timeout);
    sim.producer = builder
        .build()
        .unwrap_or_else(|_| ProducerConfig::default());
    let mut c = Cluster::new(sim);

    let ops = data.get(8..).unwrap_or_default();
    let mut it = ops.chunks(2);
    for op in it.by_ref().take(512) {
        let (a, b) = (op[0], op.get(1).copied().unwrap_or(0));
        let gp = usize::from(b) % c.partitions().len();
        let node = NodeId(1 + i32::from(b) % brokers as i32);
        match a % 16 {
            0..=3 => {
                for _ in 0..=(b % 8) {
                    let _ = c.send(gp);
                }
            }
            4 | 5 => {
                let d = Duration::from_micros(u64::from(b) * 200);
                c.run_for(d);
            }
            6 => {
                if c.brokers().iter().filter(|x| x.up).count() > 1 {
                    c.crash(node);
                }
            }
            7 => c.restart(node),
            8 => {
                if c.brokers()[(node.0 - 1) as usize].up {
                    c.move_leader(gp, node);
                }
            }
            9 => c.drop_connection(node),
            10 => c.script(Script::LoseResponseAfterApply { partition: gp }),
            11 => c.script(Script::LoseRequest { partition: gp }),
            12 => {
                let by = Duration::from_millis(u64::from(b) * 10);
                c.script(Script::DelayResponse { partition: gp, by });
            }
            13 => {
                let fault = match b % 6 {
                    0 => PartitionFault::NotLeader { hint: b & 8 != 0 },
                    1 => PartitionFault::NotEnoughReplicas,
                    2 => PartitionFault::NotEnoughReplicasAfterAppend,
                    3 if options.message_too_large => PartitionFault::MessageTooLarge,
                    5 => PartitionFault::NotLeaderAfterAppend,
                    _ => PartitionFault::RequestTimedOutAfterAppend,
                };
                c.script(Script::PartitionError {
                    partition: gp,
                    fault,
                    times: 1 + u32::from(b % 3),
                });
            }
            14 => {
                let rate = f64::from(b % 32) / 100.0;
                let mut rates = FaultRates::uniform(rate);
                if !options.message_too_large {
                    rates.message_too_large = 0.0;
                }
                c.set_fault_rates(rates);
            }
            _ => {
                if b % 2 == 0 {
                    c.flush();
                } else {
                    c.script(Script::Throttle {
                        partition: gp,
                        by: Duration::from_millis(u64::from(b)),
                    });
                }
            }
        }
        // A few steps between operations so that faults meet traffic.
        for _ in 0..(b % 4) {
            c.step();
        }
    }

    // Quiet phase: everything must resolve.
    c.heal();
    c.flush();
    let quiet_at = c.now().saturating_duration_since(Default::default());
    let pc = c.producer_config().clone();
    let bound = pc.delivery_timeout() + pc.request_timeout() * 3 + Duration::from_secs(5);
    let idle = c.run_until_idle(bound);
    if !idle {
        let pending = c.producer().unreported_records();
        c.violation(
            ViolationKind::Liveness,
            format!("{pending} records unresolved after quiet"),
        );
    }
    c.final_check();
    let drained = idle.then(|| {
        c.now()
            .saturating_duration_since(Default::default())
            .saturating_sub(quiet_at)
    });
    Report::new(&c, quiet_at, drained, 0)
}
