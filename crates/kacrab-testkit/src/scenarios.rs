//! The FakeBroker scenarios every adapter runs, one `pub fn` each.
//!
//! Each scenario starts its own 3-node [`Cluster`] (fresh ports) with a 6-partition
//! topic, builds a producer with the [`Factory`], sends a paced burst (record `i` to
//! partition `i mod 6`, see [`crate::checker`]), injects its fault mid-burst, flushes,
//! waits for every delivery, closes, reads every partition's log from the broker and runs
//! [`check`]. It fails if the fault never fired, so no scenario passes vacuously.
//!
//! The properties a scenario passes to the factory are all Kafka producer keys the core
//! understands, plus `bootstrap.servers` and `client.id` (see [`base_props`]).
//!
//! `KACRAB_TESTKIT_SCALE` (a factor, default 1) scales every burst, for soak runs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::burst::{self, Burst, Step};
use crate::checker::{check, Expect, Tally};
use crate::cluster::{ApiKey, Cluster, Control, ErrorCode};
use crate::proxy::{Proxy, ProxyAction, ProxyStats};
use crate::trigger::{Fired, Trigger};
use crate::{Factory, TestProducer};

/// What a passing scenario measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Scenario name.
    pub scenario: &'static str,
    /// Skipped (real-Kafka scenarios without their environment variable).
    pub skipped: bool,
    /// Counts from the check (the oracle's totals).
    pub summary: Tally,
    /// Faults injected (errors, drops, delays, leader moves, crashes...).
    pub faults: u64,
    /// Time spent sending, hooks and pauses included.
    pub send_time: Duration,
    /// Time `flush` took.
    pub flush_time: Duration,
    /// The whole scenario, broker start and log read included.
    pub elapsed: Duration,
    /// Anything worth printing (proxy stats, request counts, ...).
    pub notes: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.skipped {
            return write!(f, "{}: skipped", self.scenario);
        }
        let s = &self.summary;
        write!(
            f,
            "{}: ok in {:.2?} (send {:.2?}, flush {:.2?}): sent={} acked={} failed={} \
             (not_written={} in_log={}) in_log={} faults={}",
            self.scenario,
            self.elapsed,
            self.send_time,
            self.flush_time,
            s.records,
            s.acked,
            s.failed,
            s.failed_not_written,
            s.failed_in_log,
            s.log_records,
            self.faults
        )?;
        for n in &self.notes {
            write!(f, "\n  {n}")?;
        }
        Ok(())
    }
}

/// The scale factor from `KACRAB_TESTKIT_SCALE`.
fn scale(n: u64) -> u64 {
    let f: f64 = std::env::var("KACRAB_TESTKIT_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|f: &f64| *f > 0.0)
        .unwrap_or(1.0);
    ((n as f64 * f) as u64).max(1)
}

/// The producer properties every scenario starts from: idempotence on, `acks=all`,
/// `linger.ms=5`, 5 in flight, `request.timeout.ms=5000`, `delivery.timeout.ms=30000`,
/// `retry.backoff.ms=10`, `retry.backoff.max.ms=200`.
pub fn base_props(bootstrap: &str, client_id: &str) -> Vec<(String, String)> {
    [
        ("bootstrap.servers", bootstrap),
        ("client.id", client_id),
        ("enable.idempotence", "true"),
        ("acks", "all"),
        ("linger.ms", "5"),
        ("max.in.flight.requests.per.connection", "5"),
        ("request.timeout.ms", "5000"),
        ("delivery.timeout.ms", "30000"),
        ("retry.backoff.ms", "10"),
        ("retry.backoff.max.ms", "200"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Replaces or adds `key`.
pub fn set_prop(props: &mut Vec<(String, String)>, key: &str, value: &str) {
    match props.iter_mut().find(|(k, _)| k == key) {
        Some(kv) => kv.1 = value.to_string(),
        None => props.push((key.to_string(), value.to_string())),
    }
}

/// Builds a producer through the factory.
pub fn build(
    factory: Factory,
    props: &[(String, String)],
) -> Result<Box<dyn TestProducer>, String> {
    let pairs: Vec<(&str, &str)> = props
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    factory(&pairs).map_err(|e| format!("the factory refused {props:?}: {e}"))
}

/// What a running scenario's hook sees: the cluster, and where to count its faults.
pub struct Ctx {
    /// The cluster.
    pub cluster: Arc<Cluster>,
    /// The topic.
    pub topic: String,
    /// Its partition count.
    pub partitions: i32,
    fired: Mutex<Vec<Fired>>,
    events: Mutex<u64>,
    notes: Mutex<Vec<String>>,
    proxy: Mutex<Option<Arc<Proxy>>>,
}

impl Ctx {
    /// Puts a proxy in front of the cluster (call it from a scenario's setup): the
    /// producer bootstraps from the proxy.
    pub fn set_proxy(&self, proxy: Proxy) {
        *self.proxy.lock().unwrap() = Some(Arc::new(proxy));
    }
    /// The proxy, if the setup put one in front of the cluster.
    pub fn proxy(&self) -> Option<Arc<Proxy>> {
        self.proxy.lock().unwrap().clone()
    }
    /// Counts an injected fault's firings in the report.
    pub fn count(&self, fired: Fired) {
        self.fired.lock().unwrap().push(fired);
    }
    /// Counts `n` faults caused by hand (leader moves, crashes, ...).
    pub fn event(&self, n: u64) {
        *self.events.lock().unwrap() += n;
    }
    /// Adds a line to the report.
    pub fn note(&self, s: impl Into<String>) {
        self.notes.lock().unwrap().push(s.into());
    }
    fn faults(&self) -> u64 {
        self.fired
            .lock()
            .unwrap()
            .iter()
            .map(Fired::count)
            .sum::<u64>()
            + *self.events.lock().unwrap()
    }
}

/// How a FakeBroker scenario is shaped.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Nodes.
    pub nodes: usize,
    /// Partitions.
    pub partitions: i32,
    /// Records (before `KACRAB_TESTKIT_SCALE`).
    pub records: u64,
    /// Value size.
    pub value_size: usize,
    /// Records between hook calls.
    pub chunk: u64,
    /// Pause after each chunk.
    pub pause: Duration,
    /// Every send must be acknowledged.
    pub all_acked: bool,
    /// A send that failed must not be in the log (for faults that are never applied).
    pub failed_unwritten: bool,
    /// The scenario fails unless at least this many faults were injected.
    pub min_faults: u64,
    /// Property overrides on top of [`base_props`].
    pub props: Vec<(&'static str, &'static str)>,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            nodes: 3,
            partitions: 6,
            records: 6_000,
            value_size: 100,
            chunk: 100,
            pause: Duration::from_millis(5),
            all_acked: true,
            failed_unwritten: false,
            min_faults: 1,
            props: Vec::new(),
        }
    }
}

/// Runs one FakeBroker scenario: `setup` runs before the producer is built (it may put a
/// [`Proxy`] in front of the cluster with [`Ctx::set_proxy`]), `hook(ctx, k)` after
/// chunk `k` (from 1) on the driver thread.
pub fn run_fake(
    name: &'static str,
    factory: Factory,
    shape: Shape,
    setup: impl FnOnce(&Ctx) -> Result<(), String>,
    mut hook: impl FnMut(&Ctx, u64) -> Result<Step, String> + Send + 'static,
) -> Result<Report, String> {
    let start = Instant::now();
    let fail = |e: String| format!("scenario {name}: {e}");
    let cluster = Arc::new(Cluster::start(shape.nodes).map_err(fail)?);
    let topic = format!("kacrab-{name}");
    cluster
        .create_topic(&topic, shape.partitions)
        .map_err(fail)?;
    let ctx = Arc::new(Ctx {
        cluster: Arc::clone(&cluster),
        topic: topic.clone(),
        partitions: shape.partitions,
        fired: Mutex::default(),
        events: Mutex::default(),
        notes: Mutex::default(),
        proxy: Mutex::default(),
    });
    setup(&ctx).map_err(fail)?;
    let proxy = ctx.proxy();
    let bootstrap = proxy
        .as_ref()
        .map_or_else(|| cluster.bootstrap(), |p| p.bootstrap());
    let mut props = base_props(&bootstrap, &format!("testkit-{name}"));
    for (k, v) in &shape.props {
        set_prop(&mut props, k, v);
    }
    let producer = build(factory, &props).map_err(fail)?;
    let burst_spec = Burst {
        topic: topic.clone(),
        partitions: shape.partitions,
        records: scale(shape.records),
        value_size: shape.value_size,
        chunk: shape.chunk,
        pause: shape.pause,
        deadline: burst::default_deadline(),
    };
    let c2 = Arc::clone(&ctx);
    let result = burst::run(producer, &burst_spec, move |k, _| hook(&c2, k)).map_err(fail)?;
    let logs = cluster.logs(&topic).map_err(fail)?;
    let expect = Expect {
        all_acked: shape.all_acked,
        ..Expect::strict(shape.partitions, shape.value_size)
    };
    let checked = check(&result.outcomes, &logs, &expect);
    let faults = ctx.faults();
    let mut notes = std::mem::take(&mut *ctx.notes.lock().unwrap());
    notes.push(format!(
        "broker served {} Produce, {} Metadata, {} InitProducerId requests",
        cluster.request_count(ApiKey::Produce),
        cluster.request_count(ApiKey::Metadata),
        cluster.request_count(ApiKey::InitProducerId)
    ));
    if let Some(p) = &proxy {
        notes.push(format!("proxy: {}", proxy_line(&p.stats())));
    }
    let mut errors = Vec::new();
    if let Err(e) = &checked {
        errors.push(e.clone());
    }
    errors.extend(result.problems.iter().cloned());
    if let Ok(s) = &checked {
        if shape.failed_unwritten && s.failed_in_log > 0 {
            errors.push(format!(
                "{} failed sends are in the log anyway, though the injected fault was never applied",
                s.failed_in_log
            ));
        }
        if !shape.all_acked && s.failed > 0 {
            notes.insert(
                0,
                format!("{} sends failed (allowed in this scenario)", s.failed),
            );
        }
    }
    if faults < shape.min_faults {
        errors.push(format!(
            "only {faults} faults were injected (at least {} expected): the scenario proved nothing",
            shape.min_faults
        ));
    }
    if !errors.is_empty() {
        return Err(format!(
            "scenario {name} failed:\n{}\n  ({})",
            errors.join("\n"),
            notes.join("; ")
        ));
    }
    Ok(Report {
        scenario: name,
        skipped: false,
        summary: checked.expect("checked"),
        faults,
        send_time: result.send_time,
        flush_time: result.flush_time,
        elapsed: start.elapsed(),
        notes,
    })
}

pub(crate) fn proxy_line(s: &ProxyStats) -> String {
    format!(
        "connections={} refused={} requests={} responses={} dropped={} delayed={} \
         cut_responses={} cut_requests={} rewritten={} rewrite_failures={}",
        s.connections,
        s.refused,
        s.requests,
        s.responses,
        s.dropped,
        s.delayed,
        s.cut_responses,
        s.cut_requests,
        s.rewritten,
        s.rewrite_failures
    )
}

fn no_setup(_: &Ctx) -> Result<(), String> {
    Ok(())
}

/// Injects `control` on Produce from chunk `at` on, picked by `trigger`.
fn produce_fault(
    name: &'static str,
    factory: Factory,
    shape: Shape,
    at: u64,
    trigger: Trigger,
    control: Control,
) -> Result<Report, String> {
    run_fake(name, factory, shape, no_setup, move |ctx, k| {
        if k == at {
            ctx.count(
                ctx.cluster
                    .inject(ApiKey::Produce, trigger.clone(), control.clone()),
            );
        }
        Ok(Step::Continue)
    })
}

/// No faults: the baseline every other scenario is compared with.
pub fn smoke(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 0,
        ..Shape::default()
    };
    run_fake("smoke", factory, shape, no_setup, |_, _| Ok(Step::Continue))
}

/// Leader moves mid-burst: every 8 chunks every partition's leader moves to the next
/// node (epoch bumped, producer state moves with it), and once a leader epoch is bumped
/// in place. Stale-leader Produce requests get NOT_LEADER_OR_FOLLOWER with the new
/// leader named (KIP-951).
pub fn leader_moves(factory: Factory) -> Result<Report, String> {
    run_fake(
        "leader_moves",
        factory,
        Shape::default(),
        no_setup,
        |ctx, k| {
            if k % 8 == 4 {
                let moved = ctx.cluster.rotate_leaders(&ctx.topic, ctx.partitions, &[]);
                ctx.event(moved as u64);
            }
            if k == 30 {
                for p in 0..ctx.partitions {
                    ctx.cluster.bump_leader_epoch(&ctx.topic, p);
                }
                ctx.event(1);
            }
            Ok(Step::Continue)
        },
    )
}

/// Brokers crash mid-burst (their connections drop, new ones are closed at once) and
/// restart ~150 ms later with their log and state: node 1 at chunk 10 (back at 25), then
/// node 0 at chunk 30 (back at 45). Their partitions keep them as leader, so the producer
/// must wait and reconnect; a request being served when the crash hits may be written
/// with its response lost.
pub fn crash_restart(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        pause: Duration::from_millis(10),
        min_faults: 4,
        ..Shape::default()
    };
    run_fake("crash_restart", factory, shape, no_setup, |ctx, k| {
        let c = &ctx.cluster;
        match k {
            10 => c.crash(1),
            25 => c.restart(1),
            30 => c.crash(0),
            45 => c.restart(0),
            _ => return Ok(Step::Continue),
        }
        ctx.event(1);
        Ok(Step::Continue)
    })
}

/// A broker crashes mid-burst and the controller moves its partitions to the survivors
/// shortly after; it then restarts and leadership moves back (preferred-leader election).
pub fn crash_failover(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        pause: Duration::from_millis(10),
        min_faults: 3,
        ..Shape::default()
    };
    let moved = Arc::new(Mutex::new(Vec::new()));
    run_fake("crash_failover", factory, shape, no_setup, move |ctx, k| {
        let c = &ctx.cluster;
        match k {
            15 => {
                c.crash(2);
                ctx.event(1);
            }
            20 => {
                *moved.lock().unwrap() = c.move_leaders_off(&ctx.topic, ctx.partitions, 2, &[]);
                ctx.event(1);
            }
            40 => {
                c.restart(2);
                ctx.event(1);
            }
            45 => {
                for p in moved.lock().unwrap().iter() {
                    c.set_leader(&ctx.topic, *p, 2)?;
                }
                ctx.event(1);
            }
            _ => {}
        }
        Ok(Step::Continue)
    })
}

/// "Apply then disconnect": every 4th Produce from chunk 3 on (60 at most) is written,
/// then the broker drops the connection without answering. Retries must be deduplicated.
pub fn apply_then_disconnect(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    let control = Control::ApplyThen(Box::new(Control::Disconnect));
    produce_fault(
        "apply_then_disconnect",
        factory,
        shape,
        3,
        Trigger::every(4).times(60),
        control,
    )
}

/// Injected NOT_LEADER_OR_FOLLOWER (6) on every 4th Produce (40 at most), not applied,
/// with no leader named: the producer refreshes metadata and retries.
pub fn not_leader_or_follower(factory: Factory) -> Result<Report, String> {
    let c = Control::Error(ErrorCode::NotLeaderForPartition);
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    produce_fault(
        "not_leader_or_follower",
        factory,
        shape,
        3,
        Trigger::every(4).times(40),
        c,
    )
}

/// Injected NOT_ENOUGH_REPLICAS (19) on every 4th Produce (40 at most), not applied.
pub fn not_enough_replicas(factory: Factory) -> Result<Report, String> {
    let c = Control::Error(ErrorCode::NotEnoughReplicas);
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    produce_fault(
        "not_enough_replicas",
        factory,
        shape,
        3,
        Trigger::every(4).times(40),
        c,
    )
}

/// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) on every 4th Produce (40 at most), the way a
/// broker answers it: the batch was appended, then the error. The retry must be
/// deduplicated.
pub fn not_enough_replicas_after_append(factory: Factory) -> Result<Report, String> {
    let c = Control::ApplyThen(Box::new(Control::Error(
        ErrorCode::NotEnoughReplicasAfterAppend,
    )));
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    produce_fault(
        "not_enough_replicas_after_append",
        factory,
        shape,
        3,
        Trigger::every(4).times(40),
        c,
    )
}

/// Injected OUT_OF_ORDER_SEQUENCE_NUMBER (45) on every 6th Produce (20 at most), not
/// applied. A producer may fail the batch that got it and move to a new epoch (krafka
/// does), or retry it with an epoch bump (Java since KIP-360, and the kacrab core: see
/// [`out_of_order_sequence_all_acked`]). Either way: acknowledged records exactly once and
/// in order, and no failed record in the log.
pub fn out_of_order_sequence(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "out_of_order_sequence",
        factory,
        ErrorCode::OutOfOrderSequenceNumber,
        false,
    )
}

/// [`out_of_order_sequence`], and every send must be acknowledged: Java's idempotent
/// producer retries OUT_OF_ORDER_SEQUENCE_NUMBER (bumping the epoch when the batch was the
/// next in sequence) rather than failing records.
pub fn out_of_order_sequence_all_acked(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "out_of_order_sequence_all_acked",
        factory,
        ErrorCode::OutOfOrderSequenceNumber,
        true,
    )
}

/// Injected UNKNOWN_PRODUCER_ID (59) on every 6th Produce (20 at most), not applied, with
/// log_start_offset -1 (as FakeBroker writes it). As [`out_of_order_sequence`], failures
/// are allowed (see [`unknown_producer_id_all_acked`]) but must not be in the log.
pub fn unknown_producer_id(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "unknown_producer_id",
        factory,
        ErrorCode::UnknownProducerId,
        false,
    )
}

/// [`unknown_producer_id`], and every send must be acknowledged: Java retries
/// UNKNOWN_PRODUCER_ID when the response's log_start_offset is -1.
pub fn unknown_producer_id_all_acked(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "unknown_producer_id_all_acked",
        factory,
        ErrorCode::UnknownProducerId,
        true,
    )
}

fn sequence_error(
    name: &'static str,
    factory: Factory,
    code: ErrorCode,
    all_acked: bool,
) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 3,
        all_acked,
        failed_unwritten: true,
        ..Shape::default()
    };
    produce_fault(
        name,
        factory,
        shape,
        3,
        Trigger::every(6).times(20),
        Control::Error(code),
    )
}

/// Throttling: from chunk 5 to chunk 25 every Produce response carries
/// `throttle_time_ms = 100` (KIP-219; the broker still answers at once). Notes how many
/// Produce requests arrived while throttled.
pub fn throttled(factory: Factory) -> Result<Report, String> {
    let during = Arc::new(Mutex::new(0usize));
    run_fake(
        "throttled",
        factory,
        Shape::default(),
        no_setup,
        move |ctx, k| {
            let c = &ctx.cluster;
            if k == 5 {
                c.set_throttle(ApiKey::Produce, Duration::from_millis(100));
                *during.lock().unwrap() = c.request_count(ApiKey::Produce);
                ctx.event(1);
            }
            if k == 25 {
                c.set_throttle(ApiKey::Produce, Duration::ZERO);
                let n = c.request_count(ApiKey::Produce) - *during.lock().unwrap();
                ctx.note(format!(
                    "{n} Produce requests answered with throttle_time_ms=100"
                ));
            }
            Ok(Step::Continue)
        },
    )
}

/// Responses later than `request.timeout.ms` (500 ms here; delivery.timeout.ms 30 s):
/// from chunk 3 on, a few Produce requests (every 10th, 4 at most) are held 800 ms and
/// then applied (the client gave up on them before the write), and a few (4 at most) are
/// applied at once and answered 800 ms later. The late duplicates must be deduplicated.
pub fn request_timeouts(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 2,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "30000"),
        ],
        ..Shape::default()
    };
    let late = Duration::from_millis(800);
    run_fake(
        "request_timeouts",
        factory,
        shape,
        no_setup,
        move |ctx, k| {
            if k == 3 {
                let c = &ctx.cluster;
                ctx.count(c.inject(
                    ApiKey::Produce,
                    Trigger::every(10).times(4),
                    Control::Delay(late),
                ));
                let applied = Control::ApplyThen(Box::new(Control::Delay(late)));
                ctx.count(c.inject(
                    ApiKey::Produce,
                    Trigger::every(10).after(5).times(4),
                    applied,
                ));
            }
            Ok(Step::Continue)
        },
    )
}

/// A broker that never answers (`request.timeout.ms` 500 ms): from chunk 3 on, a few
/// Produce requests (3 at most) are read and never answered nor applied, and a few more
/// (3 at most) are applied and never answered. Only the driver's timer gets the producer
/// past them: the core times the request out, the session closes the connection, the
/// retry goes out on a new one and the applied ones are deduplicated. A driver that never
/// calls `handle_timeout` hangs here until the scenario's deadline.
pub fn silent_broker(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 2,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "30000"),
        ],
        ..Shape::default()
    };
    run_fake("silent_broker", factory, shape, no_setup, move |ctx, k| {
        if k == 3 {
            let c = &ctx.cluster;
            ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::every(10).times(3),
                Control::Silence,
            ));
            ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::every(10).after(5).times(3),
                Control::ApplyThen(Box::new(Control::Silence)),
            ));
        }
        Ok(Step::Continue)
    })
}

/// The lying proxy in front of the cluster, from chunk 3 on: every 5th Produce is
/// forwarded and applied, then its response is dropped with the connection (40 at most).
pub fn proxy_drop_after_write(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    run_proxy("proxy_drop_after_write", factory, shape, |p, k| {
        if k != 3 {
            return Vec::new();
        }
        vec![p.inject(
            Some(ApiKey::Produce),
            Trigger::every(5).times(40),
            ProxyAction::DropResponse,
        )]
    })
}

/// The lying proxy, everything at once from chunk 3 on: Produce responses dropped after
/// the write, Produce responses cut mid-frame, Produce requests cut mid-frame, 5% of the
/// remaining responses of any API delayed 300 ms (seeded draw), and a few Metadata
/// responses dropped.
pub fn proxy_mixed(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    run_proxy("proxy_mixed", factory, shape, |p, k| {
        if k != 3 {
            return Vec::new();
        }
        let produce = Some(ApiKey::Produce);
        let delay = ProxyAction::DelayResponse(Duration::from_millis(300));
        vec![
            p.inject(
                produce,
                Trigger::every(11).times(15),
                ProxyAction::DropResponse,
            ),
            p.inject(
                produce,
                Trigger::every(13).times(10),
                ProxyAction::CutResponse,
            ),
            p.inject(
                produce,
                Trigger::every(17).times(8),
                ProxyAction::CutRequest,
            ),
            p.inject(
                Some(ApiKey::Metadata),
                Trigger::every(2).times(3),
                ProxyAction::DropResponse,
            ),
            p.inject(None, Trigger::chance(0.05, 42).times(8), delay),
        ]
    })
}

/// A scenario through a [`Proxy`] in front of the cluster: `rules(proxy, k)` runs after
/// chunk `k` and returns the counts of the rules it added.
fn run_proxy(
    name: &'static str,
    factory: Factory,
    shape: Shape,
    rules: impl Fn(&Proxy, u64) -> Vec<Fired> + Send + 'static,
) -> Result<Report, String> {
    let setup = |ctx: &Ctx| {
        ctx.set_proxy(Proxy::start(&ctx.cluster.bootstrap())?);
        Ok(())
    };
    run_fake(name, factory, shape, setup, move |ctx, k| {
        if let Some(p) = ctx.proxy() {
            for f in rules(&p, k) {
                ctx.count(f);
            }
        }
        Ok(Step::Continue)
    })
}

/// Failures of both kinds, and the rule that tells them apart: from chunk 3, every 5th
/// Produce (4 at most) is refused with INVALID_RECORD (87, not retriable) before the
/// append, so its records fail *not possibly written*; from chunk 20, every Produce is
/// appended and never answered (the connection held) for 2.5 s, longer than
/// `delivery.timeout.ms` (1.5 s; `request.timeout.ms` 500 ms), so those records fail by
/// delivery timeout *possibly written*. The check then holds each failure to its flag: a
/// record reported not possibly written must be absent from the log. The scenario fails
/// unless both kinds of failure were reported.
pub fn failed_written_or_not(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "failed_written_or_not";
    let shape = Shape {
        all_acked: false,
        min_faults: 2,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "1500"),
        ],
        ..Shape::default()
    };
    let report = run_fake(NAME, factory, shape, no_setup, |ctx, k| {
        let c = &ctx.cluster;
        match k {
            3 => ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::every(5).times(4),
                Control::Error(ErrorCode::InvalidRecord),
            )),
            20 => ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::always(),
                Control::ApplyThen(Box::new(Control::Silence)),
            )),
            21 => {
                std::thread::sleep(Duration::from_millis(2_500));
                c.clear_faults();
            }
            _ => {}
        }
        Ok(Step::Continue)
    })?;
    let s = &report.summary;
    let maybe_written = s.failed - s.failed_not_written;
    if s.failed_not_written == 0 || maybe_written == 0 {
        return Err(format!(
            "scenario {NAME}: {} sends failed not possibly written and {maybe_written} possibly \
             written; both kinds are needed or the scenario proved nothing\n  ({})",
            s.failed_not_written,
            report.notes.join("; ")
        ));
    }
    Ok(report)
}

/// A scenario function.
pub type Scenario = fn(Factory) -> Result<Report, String>;

/// Every FakeBroker scenario, by name (the `_all_acked` variants are not in it: they
/// demand Java's retry rule, which not every correct producer follows).
pub const ALL: &[(&str, Scenario)] = &[
    ("smoke", smoke),
    ("leader_moves", leader_moves),
    ("crash_restart", crash_restart),
    ("crash_failover", crash_failover),
    ("apply_then_disconnect", apply_then_disconnect),
    ("not_leader_or_follower", not_leader_or_follower),
    ("not_enough_replicas", not_enough_replicas),
    (
        "not_enough_replicas_after_append",
        not_enough_replicas_after_append,
    ),
    ("out_of_order_sequence", out_of_order_sequence),
    ("unknown_producer_id", unknown_producer_id),
    ("throttled", throttled),
    ("request_timeouts", request_timeouts),
    ("silent_broker", silent_broker),
    ("proxy_drop_after_write", proxy_drop_after_write),
    ("proxy_mixed", proxy_mixed),
    ("failed_written_or_not", failed_written_or_not),
];

/// Runs every FakeBroker scenario in turn, printing each report; fails with every failure.
pub fn all_fake_broker(factory: Factory) -> Result<Vec<Report>, String> {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for (name, f) in ALL {
        match f(factory) {
            Ok(r) => {
                println!("{r}");
                reports.push(r);
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(reports)
    } else {
        Err(errors.join("\n\n"))
    }
}
