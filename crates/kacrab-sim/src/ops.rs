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

/// Runs the operations encoded in `data` and returns the report.
///
/// The first bytes choose the shape (brokers, partitions, `max.in.flight`, linger,
/// batch size, a seed); each following byte is one operation: send records, let time
/// pass, crash or restart a broker, move a leader, drop a connection, script a lost
/// response or request, a delayed response, a partition error or a throttle, turn
/// random faults on or off, or flush.
#[must_use]
pub fn run(data: &[u8]) -> Report {
    let mut bytes = data.iter().copied();
    let mut next = || bytes.next().unwrap_or(0);
    let brokers = 1 + u32::from(next() % 4);
    let partitions = 1 + u32::from(next() % 6);
    let in_flight = 1 + u32::from(next() % 5);
    let linger = Duration::from_millis(u64::from(next() % 20));
    let batch_size = 64 + 64 * usize::from(next() % 32);
    let seed = u64::from(next()) | (u64::from(next()) << 8);

    let mut sim = SimConfig::new(seed);
    sim.brokers = brokers;
    sim.partitions = partitions;
    sim.topics = 1 + partitions / 3;
    let mut builder = SimConfig::producer_config(seed);
    builder
        .max_in_flight_requests_per_connection(in_flight)
        .linger(linger)
        .batch_size(batch_size)
        .delivery_timeout(Duration::from_secs(10));
    sim.producer = builder.build().unwrap_or_else(|_| ProducerConfig::default());
    let mut c = Cluster::new(sim);

    let ops = data.get(7..).unwrap_or_default();
    let mut it = ops.chunks(2);
    let mut steps = 0u64;
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
                let fault = match b % 4 {
                    0 => PartitionFault::NotLeader { hint: b & 4 != 0 },
                    1 => PartitionFault::NotEnoughReplicas,
                    2 => PartitionFault::NotEnoughReplicasAfterAppend,
                    _ => PartitionFault::RequestTimedOutAfterAppend,
                };
                c.script(Script::PartitionError { partition: gp, fault, times: 1 + u32::from(b % 3) });
            }
            14 => {
                let rate = f64::from(b % 32) / 100.0;
                c.set_fault_rates(FaultRates::uniform(rate));
            }
            _ => {
                if b % 2 == 0 {
                    c.flush();
                } else {
                    c.script(Script::Throttle { partition: gp, by: Duration::from_millis(u64::from(b)) });
                }
            }
        }
        // A few steps between operations so that faults meet traffic.
        for _ in 0..(b % 4) {
            c.step();
            steps += 1;
        }
    }
    let _ = steps;

    // Quiet phase: everything must resolve.
    c.heal();
    c.flush();
    let quiet_at = c.now().saturating_duration_since(Default::default());
    let pc = c.producer_config().clone();
    let bound = pc.delivery_timeout() + pc.request_timeout() * 3 + Duration::from_secs(5);
    let idle = c.run_until_idle(bound);
    if !idle {
        let pending = c.producer().unreported_records();
        c.violation(crate::ViolationKind::Liveness, format!("{pending} records unresolved after quiet"));
    }
    c.final_check();
    let drained = idle.then(|| c.now().saturating_duration_since(Default::default()).saturating_sub(quiet_at));
    Report::new(&c, quiet_at, drained, 0)
}
