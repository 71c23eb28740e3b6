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

mod faults;
mod links;
pub use faults::*;
pub use links::*;

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
    required: Mutex<Vec<Required>>,
}

/// Records a scenario requires acknowledged though it allows others to fail: a name for
/// the report, and which record indices.
type Required = (String, Box<dyn Fn(u64) -> bool + Send>);

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
    /// Requires every record whose index `which` picks to be acknowledged (for a
    /// scenario whose [`Shape::all_acked`] is off because its fault may cost some records
    /// but must not cost these); `what` names them in a failure.
    pub fn require_acked(
        &self,
        what: impl Into<String>,
        which: impl Fn(u64) -> bool + Send + 'static,
    ) {
        self.required
            .lock()
            .unwrap()
            .push((what.into(), Box::new(which)));
    }
    /// Failures among the records a scenario required acknowledged.
    fn unacked_required(&self, outcomes: &[crate::checker::SendResult]) -> Vec<String> {
        let required = self.required.lock().unwrap();
        let mut errors = Vec::new();
        for (what, which) in required.iter() {
            let failed: Vec<(usize, &crate::DeliveryFailure)> = outcomes
                .iter()
                .enumerate()
                .filter(|(i, _)| which(*i as u64))
                .filter_map(|(i, o)| o.as_ref().err().map(|e| (i, e)))
                .collect();
            if let Some((i, first)) = failed.first() {
                errors.push(format!(
                    "{} of the records to {what} failed (record {i} first: {})",
                    failed.len(),
                    first.error
                ));
            }
        }
        errors
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
        required: Mutex::default(),
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
    errors.extend(ctx.unacked_required(&result.outcomes));
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
