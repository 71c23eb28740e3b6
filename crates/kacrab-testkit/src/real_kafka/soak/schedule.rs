//! The soak's *mild* fault schedule: the [`nemesis`](crate::nemesis)'s faults, drawn
//! rarely and short, so the load stays constant and what the soak watches is whether
//! the producer's resources stay flat while faults come and go, not how it survives a
//! storm (that is [`real_jepsen`](crate::real_kafka::real_jepsen)).
//!
//! * Link track: one fault every 20–60 s, drawn from: a few Produce responses dropped
//!   after the broker applied the request (half of the steps: ambiguous losses, each
//!   one a connection closed and reopened), a blackhole of one node (both ways or one
//!   way, connections held open) for 3 s to `request.timeout.ms` + 2 s, and a slow link
//!   (20–100 ms per frame) for 10–30 s.
//! * Process track: one fault every 4–5.5 minutes: a SIGSTOP pause of one node just past
//!   `request.timeout.ms`, or a SIGKILL with a restart 5–15 s later.
//!
//! Every hold is shorter than a minute, so no minute of a healthy soak is silent.

use std::time::Duration;

use crate::nemesis::{Fault, Schedule, Step};
use crate::proxy::Blackhole;
use crate::trigger::SplitMix64;

fn between(rng: &mut SplitMix64, lo: Duration, hi: Duration) -> Duration {
    let span = hi.saturating_sub(lo).as_millis() as f64;
    lo + Duration::from_millis((rng.unit() * span) as u64)
}

/// Draws a mild schedule lasting at least `duration` on both tracks over `nodes`, from
/// `seed` (the same seed draws the same schedule).
pub fn draw_mild(
    seed: u64,
    duration: Duration,
    nodes: &[i32],
    request_timeout: Duration,
) -> Schedule {
    let mut rng = SplitMix64(seed ^ 0x0050_A4ED_0F1D);
    let s = Duration::from_secs;
    let pick = |rng: &mut SplitMix64| nodes[(rng.next_u64() % nodes.len().max(1) as u64) as usize];
    let mut links = Vec::new();
    let mut total = Duration::ZERO;
    while total < duration {
        let gap = between(&mut rng, s(20), s(60));
        let (fault, hold) = match rng.next_u64() % 4 {
            0 | 1 => (
                Fault::DropResponses {
                    every: 3 + rng.next_u64() % 3,
                    count: 5 + rng.next_u64() % 16,
                },
                s(10),
            ),
            2 => {
                let direction = match rng.next_u64() % 3 {
                    0 => Blackhole::ToBroker,
                    1 => Blackhole::ToClient,
                    _ => Blackhole::Both,
                };
                (
                    Fault::Blackhole {
                        node: pick(&mut rng),
                        direction,
                    },
                    between(&mut rng, s(3), request_timeout + s(2)),
                )
            }
            _ => (
                Fault::SlowLink {
                    node: pick(&mut rng),
                    latency: Duration::from_millis(20 + rng.next_u64() % 81),
                },
                between(&mut rng, s(10), s(30)),
            ),
        };
        total += gap + hold;
        links.push(Step { gap, fault, hold });
    }
    let mut processes = Vec::new();
    let mut total = Duration::ZERO;
    while total < duration {
        let gap = between(&mut rng, s(240), s(330));
        let node = pick(&mut rng);
        let (fault, hold) = if rng.next_u64().is_multiple_of(2) {
            (
                Fault::Pause { node },
                between(&mut rng, request_timeout + s(1), request_timeout + s(5)),
            )
        } else {
            (Fault::Kill { node }, between(&mut rng, s(5), s(15)))
        };
        total += gap + hold;
        processes.push(Step { gap, fault, hold });
    }
    Schedule {
        seed,
        links,
        processes,
    }
}

/// A short name for a fault, for a table cell: `drop`, `bh2`, `slow1`, `pause3`, ...
pub fn short_name(fault: &Fault) -> String {
    match fault {
        Fault::Blackhole { node, direction } => match direction {
            Blackhole::Both | Blackhole::Open => format!("bh{node}"),
            Blackhole::ToBroker => format!("bh{node}-req"),
            Blackhole::ToClient => format!("bh{node}-resp"),
        },
        Fault::RefuseDials { node } => format!("refuse{node}"),
        Fault::SlowLink { node, .. } => format!("slow{node}"),
        Fault::DropResponses { count, .. } => format!("drop{count}"),
        Fault::CutFrames { .. } => "cut".into(),
        Fault::Pause { node } => format!("pause{node}"),
        Fault::Kill { node } => format!("kill{node}"),
    }
}

/// The faults a controller's log says were started, as (track, step index) pairs:
/// `link #3: ...` and `process #0: ...` lines, not the heals.
pub fn started(log: &[String]) -> Vec<(&'static str, usize)> {
    log.iter()
        .filter_map(|line| {
            let (track, rest) = if let Some(i) = line.find("] link #") {
                ("link", &line[i + "] link #".len()..])
            } else if let Some(i) = line.find("] process #") {
                ("process", &line[i + "] process #".len()..])
            } else {
                return None;
            };
            let (index, what) = rest.split_once(": ")?;
            if what.starts_with("healed") || what.starts_with("error") {
                return None;
            }
            Some((track, index.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RT: Duration = Duration::from_secs(10);

    #[test]
    fn mild_is_rare_short_and_repeatable() {
        let half_hour = Duration::from_secs(1_800);
        let a = draw_mild(3, half_hour, &[1, 2, 3], RT);
        assert_eq!(a, draw_mild(3, half_hour, &[1, 2, 3], RT));
        assert_ne!(a, draw_mild(4, half_hour, &[1, 2, 3], RT));
        for seed in 0..50 {
            let s = draw_mild(seed, half_hour, &[1, 2, 3], RT);
            // 20–60 s gaps: roughly one link fault a minute, never more than 1,800 / 20.
            assert!((20..=90).contains(&s.links.len()), "{}", s.links.len());
            // One process fault per 4–5.5 minutes.
            assert!(
                (5..=8).contains(&s.processes.len()),
                "{}",
                s.processes.len()
            );
            for st in s.links.iter().chain(&s.processes) {
                assert!(st.hold < Duration::from_secs(60), "{st:?}");
                assert!(
                    !matches!(
                        st.fault,
                        Fault::RefuseDials { .. } | Fault::CutFrames { .. }
                    ),
                    "{st:?}"
                );
                if let Fault::Pause { .. } = st.fault {
                    assert!(st.hold > RT, "{st:?}");
                }
            }
            for st in &s.processes {
                assert!(st.gap >= Duration::from_secs(240), "{st:?}");
            }
        }
    }

    #[test]
    fn reads_the_started_faults_from_a_log() {
        let log: Vec<String> = [
            "[   20.1s] link #0: drop the response of one Produce in 3 after the write, 9x for 10.0s",
            "[   30.1s] link #0: healed",
            "[  250.0s] process #0: SIGSTOP node 2 for 12.0s",
            "[  262.3s] node 2: resume-node done",
            "[  270.0s] error: link #1: no such node",
            "[  271.0s] link #12: blackhole Both node 3 for 4.0s",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            started(&log),
            vec![("link", 0), ("process", 0), ("link", 12)]
        );
        assert_eq!(
            short_name(&Fault::Blackhole {
                node: 2,
                direction: Blackhole::ToClient
            }),
            "bh2-resp"
        );
    }
}
