//! The fault controller for real-Kafka runs: a schedule of faults drawn from a seed,
//! printed before it runs, and two threads that play it against a three-node cluster
//! started by `scripts/kafka.sh` and the lying [`Proxy`] in front of it.
//!
//! Two independent tracks, each a sequence of "wait, inject, hold, heal" steps:
//!
//! * the *link* track, through the proxy: blackholes (both ways or one way, connections
//!   held open), refused dials (with every open connection cut), slow links, bursts of
//!   Produce responses dropped after the broker applied the request (ambiguous losses),
//!   and Produce frames cut in the middle (requests and responses); those two stay until
//!   they have fired their count;
//! * the *process* track, on the broker JVMs: SIGSTOP/SIGCONT pauses (some longer than
//!   `request.timeout.ms` only, some also longer than the controllers'
//!   `broker.session.timeout.ms`, 9 s, so leadership moves while the old leader is frozen
//!   and it comes back a zombie), and SIGKILL followed by a restart.
//!
//! At most one node is paused or down at a time (the cluster's topics have replication
//! factor 3 and `min.insync.replicas` 2), and every hold is shorter than the liveness
//! budget the caller gives ([`Plan::max_hold`], at most `delivery.timeout.ms` −
//! `request.timeout.ms`), so on a cluster that heals every record must be acknowledged.
//! The same seed draws the same schedule; `KACRAB_JEPSEN_SEED` repeats one.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::cluster::ApiKey;
use crate::proxy::{Blackhole, Link, Proxy, ProxyAction, Target};
use crate::real_kafka::script;
use crate::trigger::{SplitMix64, Trigger};

/// One fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The client's link to `node` passes nothing in `direction` (connections stay open).
    Blackhole {
        /// Node id.
        node: i32,
        /// Which way nothing passes.
        direction: Blackhole,
    },
    /// Every open connection cut; new dials to `node` refused.
    RefuseDials {
        /// Node id.
        node: i32,
    },
    /// Every frame to and from `node` held `latency`.
    SlowLink {
        /// Node id.
        node: i32,
        /// Per frame.
        latency: Duration,
    },
    /// Every `every`-th Produce forwarded and applied, its response dropped with the
    /// connection, `count` times: ambiguous losses.
    DropResponses {
        /// Pick every n-th Produce.
        every: u64,
        /// At most this many.
        count: u64,
    },
    /// Produce requests and responses cut in the middle (the connection closed after
    /// half a frame), `count` of each at most.
    CutFrames {
        /// At most this many of each.
        count: u64,
    },
    /// The node's JVM stopped with SIGSTOP, resumed with SIGCONT after the hold.
    Pause {
        /// Node id (1..=3, `scripts/kafka.sh`'s numbering, which is the node id).
        node: i32,
    },
    /// The node's JVM killed with SIGKILL, restarted after the hold.
    Kill {
        /// Node id.
        node: i32,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Blackhole { node, direction } => write!(f, "blackhole {direction:?} node {node}"),
            Self::RefuseDials { node } => write!(f, "cut connections, refuse dials to node {node}"),
            Self::SlowLink { node, latency } => {
                write!(f, "slow link to node {node} ({latency:?}/frame)")
            }
            Self::DropResponses { every, count } => {
                write!(
                    f,
                    "drop the response of one Produce in {every} after the write, {count}x"
                )
            }
            Self::CutFrames { count } => {
                write!(f, "cut Produce frames mid-frame, {count}x each way")
            }
            Self::Pause { node } => write!(f, "SIGSTOP node {node}"),
            Self::Kill { node } => write!(f, "SIGKILL node {node}"),
        }
    }
}

/// One step of a track: wait `gap` after the previous step healed, inject `fault`,
/// hold it, heal it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Quiet time before the fault.
    pub gap: Duration,
    /// The fault.
    pub fault: Fault,
    /// How long it lasts (for a kill, how long the node stays down before its restart).
    pub hold: Duration,
}

/// What a schedule may contain.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Each track is drawn until its steps add up to this much.
    pub duration: Duration,
    /// The cluster's node ids.
    pub nodes: Vec<i32>,
    /// No hold is longer: the liveness budget (`delivery.timeout.ms` −
    /// `request.timeout.ms`, less a margin for leader elections and restarts).
    pub max_hold: Duration,
    /// `request.timeout.ms`: pauses and blackholes outlast it.
    pub request_timeout: Duration,
    /// Pauses and kills on the process track.
    pub processes: bool,
}

/// A drawn schedule: the link track and the process track.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The seed it was drawn from.
    pub seed: u64,
    /// Faults through the proxy.
    pub links: Vec<Step>,
    /// Pauses and kills.
    pub processes: Vec<Step>,
}

fn between(rng: &mut SplitMix64, lo: Duration, hi: Duration) -> Duration {
    let span = hi.saturating_sub(lo).as_millis() as f64;
    lo + Duration::from_millis((rng.unit() * span) as u64)
}

impl Schedule {
    /// Draws a schedule for `plan` from `seed`.
    pub fn draw(seed: u64, plan: &Plan) -> Self {
        let mut rng = SplitMix64(seed ^ 0x005E_ED0F_FA17);
        let rt = plan.request_timeout;
        let cap = |d: Duration| d.min(plan.max_hold);
        let pick = |rng: &mut SplitMix64| {
            plan.nodes[(rng.next_u64() % plan.nodes.len().max(1) as u64) as usize]
        };
        let s = Duration::from_secs;
        let mut links = Vec::new();
        let mut total = Duration::ZERO;
        while total < plan.duration {
            let gap = between(&mut rng, s(1), s(3));
            // Every other link step drops responses after the write: ambiguous losses are
            // what exactly once is about, so every schedule has many.
            let kind = if links.len() % 2 == 0 {
                0
            } else {
                2 + rng.next_u64() % 6
            };
            let (fault, hold) = match kind {
                0 | 1 => (
                    Fault::DropResponses {
                        every: 2 + rng.next_u64() % 3,
                        count: 20 + rng.next_u64() % 21,
                    },
                    s(4),
                ),
                2 => (
                    Fault::CutFrames {
                        count: 3 + rng.next_u64() % 5,
                    },
                    s(3),
                ),
                3 | 4 => {
                    let direction = match rng.next_u64() % 3 {
                        0 => Blackhole::ToBroker,
                        1 => Blackhole::ToClient,
                        _ => Blackhole::Both,
                    };
                    let node = pick(&mut rng);
                    (
                        Fault::Blackhole { node, direction },
                        cap(between(&mut rng, rt + s(1), rt * 3)),
                    )
                }
                5 => (
                    Fault::RefuseDials {
                        node: pick(&mut rng),
                    },
                    cap(between(&mut rng, s(2), s(6))),
                ),
                _ => (
                    Fault::SlowLink {
                        node: pick(&mut rng),
                        latency: Duration::from_millis(20 + rng.next_u64() % 180),
                    },
                    cap(between(&mut rng, s(3), s(8))),
                ),
            };
            total += gap + hold;
            links.push(Step { gap, fault, hold });
        }
        let mut processes = Vec::new();
        let mut total = Duration::ZERO;
        while plan.processes && total < plan.duration {
            // Room for the previous victim to rejoin the ISR before the next one goes.
            let gap = between(&mut rng, s(6), s(12));
            let node = pick(&mut rng);
            let (fault, hold) = match rng.next_u64() % 3 {
                // Longer than request.timeout.ms only.
                0 => (
                    Fault::Pause { node },
                    cap(between(&mut rng, rt + s(1), rt + s(3))),
                ),
                // Also longer than broker.session.timeout.ms (9 s): a zombie leader.
                1 => (Fault::Pause { node }, cap(between(&mut rng, s(12), s(16)))),
                _ => (Fault::Kill { node }, cap(between(&mut rng, s(2), s(6)))),
            };
            total += gap + hold;
            processes.push(Step { gap, fault, hold });
        }
        Self {
            seed,
            links,
            processes,
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fault schedule, seed {} (repeat with KACRAB_JEPSEN_SEED={}):",
            self.seed, self.seed
        )?;
        for (track, steps) in [("link", &self.links), ("process", &self.processes)] {
            for (i, st) in steps.iter().enumerate() {
                writeln!(
                    f,
                    "  {track} #{i}: after {:.1?}, {} for {:.1?}",
                    st.gap, st.fault, st.hold
                )?;
            }
        }
        Ok(())
    }
}

/// The seed from `KACRAB_JEPSEN_SEED`, else one from the clock.
pub fn seed_from_env() -> u64 {
    std::env::var("KACRAB_JEPSEN_SEED")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// A node left paused or down, for the heal on stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Down {
    Paused(i32),
    Killed(i32),
}

struct Shared {
    stop: AtomicBool,
    start: Instant,
    /// What happened, with the time since the start, for the report.
    log: Mutex<Vec<String>>,
    /// The node the process track has paused or killed and not yet healed.
    down: Mutex<Option<Down>>,
    /// Held by the process track from a pause or kill until its heal, and by a workload
    /// that takes a node down itself ([`Controller::hold_processes`]): one node at most.
    processes: Mutex<()>,
    errors: Mutex<Vec<String>>,
}

impl Shared {
    fn note(&self, what: String) {
        let line = format!("[{:7.1?}] {what}", self.start.elapsed());
        println!("nemesis {line}");
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    fn error(&self, e: String) {
        self.note(format!("error: {e}"));
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e);
    }

    /// Sleeps `d` unless stopped first; `false` if stopped.
    fn sleep(&self, d: Duration) -> bool {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
        }
        !self.stop.load(Ordering::SeqCst)
    }
}

/// Plays a [`Schedule`]; [`Controller::stop`] (or dropping it) ends both tracks and
/// heals everything: links healed, rules cleared, a paused node resumed, a killed node
/// restarted.
pub struct Controller {
    shared: Arc<Shared>,
    proxy: Arc<Proxy>,
    threads: Vec<JoinHandle<()>>,
}

/// What a controller did.
#[derive(Clone, Debug, Default)]
pub struct Played {
    /// Every injection and heal, timed.
    pub log: Vec<String>,
    /// Steps that could not be played (a script that failed).
    pub errors: Vec<String>,
}

impl Controller {
    /// Starts playing `schedule` now.
    pub fn start(schedule: &Schedule, proxy: Arc<Proxy>) -> Result<Self, String> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            start: Instant::now(),
            log: Mutex::default(),
            down: Mutex::default(),
            processes: Mutex::default(),
            errors: Mutex::default(),
        });
        let mut threads = Vec::new();
        let (sh, px, steps) = (
            Arc::clone(&shared),
            Arc::clone(&proxy),
            schedule.links.clone(),
        );
        threads.push(
            std::thread::Builder::new()
                .name("nemesis-links".into())
                .spawn(move || link_track(&sh, &px, &steps))
                .map_err(|e| format!("spawn: {e}"))?,
        );
        let (sh, steps) = (Arc::clone(&shared), schedule.processes.clone());
        threads.push(
            std::thread::Builder::new()
                .name("nemesis-processes".into())
                .spawn(move || process_track(&sh, &steps))
                .map_err(|e| format!("spawn: {e}"))?,
        );
        Ok(Self {
            shared,
            proxy,
            threads,
        })
    }

    /// Waits until no pause or kill of the process track is in effect and keeps the
    /// track from starting one until the guard is dropped: for a node the workload takes
    /// down itself (the transaction coordinator killed mid-commit), so that at most one
    /// node is paused or down at a time. Drop the guard before [`Controller::stop`].
    pub fn hold_processes(&self) -> std::sync::MutexGuard<'_, ()> {
        self.shared
            .processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Whether both tracks have played every step.
    pub fn finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// Stops both tracks, heals everything, and reports what was played.
    pub fn stop(mut self) -> Played {
        self.heal();
        self.played_so_far()
    }

    /// What has been played so far; the tracks go on.
    pub fn played_so_far(&self) -> Played {
        Played {
            log: self
                .shared
                .log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            errors: self
                .shared
                .errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    fn heal(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.proxy.heal_all();
        self.proxy.clear_rules();
        let down = self
            .shared
            .down
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(d) = down {
            heal_node(&self.shared, d);
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.heal();
        }
    }
}

fn link_track(sh: &Shared, proxy: &Proxy, steps: &[Step]) {
    for (i, st) in steps.iter().enumerate() {
        if !sh.sleep(st.gap) {
            return;
        }
        sh.note(format!("link #{i}: {} for {:.1?}", st.fault, st.hold));
        let produce = Some(ApiKey::Produce);
        let applied = match &st.fault {
            Fault::Blackhole { node, direction } => {
                proxy.set_link(Target::Node(*node), Link::blackhole(*direction))
            }
            Fault::RefuseDials { node } => {
                let r = proxy.set_link(Target::Node(*node), Link::refuse());
                proxy.disconnect_all();
                r
            }
            Fault::SlowLink { node, latency } => {
                proxy.set_link(Target::Node(*node), Link::slow(*latency, None))
            }
            Fault::DropResponses { every, count } => {
                proxy.inject(
                    produce,
                    Trigger::every(*every).times(*count),
                    ProxyAction::DropResponse,
                );
                Ok(())
            }
            Fault::CutFrames { count } => {
                proxy.inject(
                    produce,
                    Trigger::every(5).times(*count),
                    ProxyAction::CutResponse,
                );
                proxy.inject(
                    produce,
                    Trigger::every(7).times(*count),
                    ProxyAction::CutRequest,
                );
                Ok(())
            }
            Fault::Pause { .. } | Fault::Kill { .. } => Ok(()),
        };
        if let Err(e) = applied {
            sh.error(format!("link #{i}: {e}"));
        }
        let completed = sh.sleep(st.hold);
        // Links heal; drop and cut rules stay until they have fired their count (a rule
        // added by someone else, e.g. a top-up of drops, is not the track's to remove).
        proxy.heal_all();
        sh.note(format!("link #{i}: healed"));
        if !completed {
            return;
        }
    }
}

fn process_track(sh: &Shared, steps: &[Step]) {
    for (i, st) in steps.iter().enumerate() {
        if !sh.sleep(st.gap) {
            return;
        }
        let (args, down) = match st.fault {
            Fault::Pause { node } => ("pause-node", Down::Paused(node)),
            Fault::Kill { node } => ("kill-node", Down::Killed(node)),
            _ => continue,
        };
        let node = match down {
            Down::Paused(n) | Down::Killed(n) => n,
        };
        // Not while the workload has a node down (it holds the turn until it healed it).
        let _turn = sh.processes.lock().unwrap_or_else(|e| e.into_inner());
        if sh.stop.load(Ordering::SeqCst) {
            return;
        }
        sh.note(format!("process #{i}: {} for {:.1?}", st.fault, st.hold));
        if let Err(e) = script(&[args, &node.to_string()]) {
            sh.error(format!("process #{i}: {e}"));
            continue;
        }
        *sh.down.lock().unwrap_or_else(|e| e.into_inner()) = Some(down);
        if !sh.sleep(st.hold) {
            return; // `Controller::heal` heals it
        }
        let d = sh.down.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(d) = d {
            heal_node(sh, d);
        }
    }
}

fn heal_node(sh: &Shared, d: Down) {
    let (args, node) = match d {
        Down::Paused(n) => ("resume-node", n),
        Down::Killed(n) => ("restart-node", n),
    };
    match script(&[args, &node.to_string()]) {
        Ok(_) => sh.note(format!("node {node}: {args} done")),
        Err(e) => sh.error(format!("node {node}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            duration: Duration::from_secs(60),
            nodes: vec![1, 2, 3],
            max_hold: Duration::from_secs(20),
            request_timeout: Duration::from_secs(5),
            processes: true,
        }
    }

    #[test]
    fn a_seed_draws_one_schedule_within_the_budget() {
        let a = Schedule::draw(7, &plan());
        assert_eq!(a, Schedule::draw(7, &plan()));
        assert_ne!(a, Schedule::draw(8, &plan()));
        for st in a.links.iter().chain(&a.processes) {
            assert!(st.hold <= Duration::from_secs(20), "{st:?}");
        }
        let kinds = |s: &Schedule| -> Vec<&'static str> {
            s.links
                .iter()
                .chain(&s.processes)
                .map(|st| match st.fault {
                    Fault::Blackhole { .. } => "blackhole",
                    Fault::RefuseDials { .. } => "refuse",
                    Fault::SlowLink { .. } => "slow",
                    Fault::DropResponses { .. } => "drop",
                    Fault::CutFrames { .. } => "cut",
                    Fault::Pause { .. } => "pause",
                    Fault::Kill { .. } => "kill",
                })
                .collect()
        };
        // Every other link step drops responses after the write.
        for (i, st) in a.links.iter().enumerate() {
            let drop = matches!(st.fault, Fault::DropResponses { .. });
            assert_eq!(drop, i % 2 == 0, "{st:?}");
        }
        // Over a few seeds, every kind of fault is drawn.
        let mut all: Vec<&str> = (0..20)
            .flat_map(|s| kinds(&Schedule::draw(s, &plan())))
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 7, "{all:?}");
        let text = a.to_string();
        assert!(text.contains("KACRAB_JEPSEN_SEED=7"), "{text}");
    }

    #[test]
    fn pauses_outlast_the_request_timeout() {
        for seed in 0..50 {
            for st in &Schedule::draw(seed, &plan()).processes {
                if let Fault::Pause { .. } = st.fault {
                    assert!(st.hold > Duration::from_secs(5), "{st:?}");
                }
            }
        }
    }
}
