//! Exactly once on a real three-node cluster under partitions, pauses and kills: an
//! idempotent workload through the lying proxy while the [`nemesis`](crate::nemesis)
//! plays a seeded schedule, then Kafka's own console consumer reads the topic back at
//! both isolation levels and the checker holds every outcome to what it read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::burst::{self, Burst, Step};
use crate::checker::{check, Expect};
use crate::cluster::ApiKey;
use crate::nemesis::{seed_from_env, Controller, Plan, Schedule};
use crate::proxy::{Proxy, ProxyAction};
use crate::scenarios::{build, proxy_line, Report};
use crate::trigger::{Fired, Trigger};
use crate::Factory;

use super::{
    consume_whole, create_topic, env_or_skip, fresh_topic, leaders, real_props, script,
    set_timeouts, skipped,
};

pub(super) fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// `request.timeout.ms` of the workload: every pause and blackhole outlasts it.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// `delivery.timeout.ms`: Kafka's default.
pub(super) const DELIVERY_TIMEOUT: Duration = Duration::from_secs(120);

/// The Jepsen-style run on `KACRAB_KAFKA_CLUSTER` (three nodes started by
/// `scripts/kafka.sh start-cluster`).
///
/// A fresh topic of 6 partitions (replication factor 3, `min.insync.replicas` 2); an
/// idempotent producer (`acks=all`, `request.timeout.ms` 5 s, `delivery.timeout.ms`
/// 120 s) bootstrapped through the lying proxy sends 100,000 records
/// (`KACRAB_JEPSEN_RECORDS`) of 100 bytes, each carrying its id, paced over 45 s
/// (`KACRAB_JEPSEN_SECONDS`), while a schedule drawn from `KACRAB_JEPSEN_SEED` (printed;
/// a clock seed otherwise) mixes blackholes, refused dials, slow links, mid-frame cuts,
/// responses dropped after the write, SIGSTOP pauses (past `request.timeout.ms` and past
/// the controllers' broker session timeout) and SIGKILL + restart. Sending goes on (up
/// to 4× the records) until at least 100 responses (`KACRAB_JEPSEN_MIN_AMBIGUOUS`) were
/// dropped after the broker applied them. Then everything heals (what is left of the
/// schedule is cut short), the producer flushes,
/// and the console consumer reads the topic with `read_uncommitted` and with
/// `read_committed`. Both reads must show every record acknowledged (every fault is
/// shorter than `delivery.timeout.ms` − `request.timeout.ms`: liveness), each exactly
/// once, in send order per partition, at the offset reported, with exactly one outcome
/// per record.
pub fn real_jepsen(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_jepsen";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_CLUSTER", NAME, "start-cluster") else {
        return Ok(skipped(NAME));
    };
    let start = Instant::now();
    let fail = |e: String| format!("scenario {NAME}: {e}");
    let records = env_u64("KACRAB_JEPSEN_RECORDS", 100_000);
    let seconds = env_u64("KACRAB_JEPSEN_SECONDS", 45).max(1);
    let min_ambiguous = env_u64("KACRAB_JEPSEN_MIN_AMBIGUOUS", 100);
    let seed = seed_from_env();
    let plan = Plan {
        duration: Duration::from_secs(seconds),
        nodes: vec![1, 2, 3],
        // Room within the budget for a leader election and a restart on top of a hold.
        max_hold: (DELIVERY_TIMEOUT - REQUEST_TIMEOUT) / 4,
        request_timeout: REQUEST_TIMEOUT,
        processes: true,
    };
    let schedule = Schedule::draw(seed, &plan);
    println!("{NAME}: {schedule}");

    let topic = fresh_topic("kacrab-jepsen");
    create_topic(&bootstrap, &topic, 6, 3).map_err(fail)?;
    script(&["wait-leaders", &bootstrap, &topic, "--timeout", "60"]).map_err(fail)?;
    let before = leaders(&bootstrap, &topic).map_err(fail)?;
    let proxy = Arc::new(Proxy::with_limits(&bootstrap, 256).map_err(fail)?);

    let mut props = real_props(&proxy.bootstrap(), NAME);
    set_timeouts(&mut props, REQUEST_TIMEOUT, DELIVERY_TIMEOUT);
    let producer = build(factory, &props).map_err(fail)?;
    // The producer has learned the brokers through the proxy once it has sent a chunk:
    // the controller starts after the first one (node ids come from Metadata).
    // Small chunks, short pauses: a steady stream of Produce requests, so a drop rule
    // finds its requests within its hold.
    let chunks = 1_000u64;
    let chunk = (records / chunks).max(1);
    let pause = Duration::from_millis(seconds * 1_000 / chunks);
    let spec = Burst {
        topic: topic.clone(),
        partitions: 6,
        records: records * 4,
        value_size: 100,
        chunk,
        pause,
        deadline: DELIVERY_TIMEOUT + Duration::from_secs(120),
    };
    let controller: Arc<std::sync::Mutex<Option<Controller>>> = Arc::default();
    let (c_hook, p_hook, sched) = (
        Arc::clone(&controller),
        Arc::clone(&proxy),
        schedule.clone(),
    );
    let mut top_up: Option<(Fired, u64)> = None;
    let hook = move |k: u64, sent: u64| {
        if k == 1 {
            let started = Controller::start(&sched, Arc::clone(&p_hook))?;
            *c_hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(started);
        }
        // The schedule is drawn for the time the records take; sending stops once they
        // are sent and enough responses were dropped, and what is left of the schedule
        // is cut short by the heal (a resumed or restarted node is one more fault).
        let dropped = p_hook.stats().dropped;
        if sent >= records && dropped >= min_ambiguous {
            return Ok(Step::Stop);
        }
        // Short of ambiguous losses: drop one Produce response in 3 until there are
        // enough (the burst goes on meanwhile). A firing on a connection an earlier drop
        // already closed drops nothing, so a spent rule is followed by another.
        let spent = top_up
            .as_ref()
            .is_none_or(|(f, n): &(Fired, u64)| f.count() >= *n);
        if sent >= records && spent {
            let n = min_ambiguous - dropped;
            let fired = p_hook.inject(
                Some(ApiKey::Produce),
                Trigger::every(3).times(n),
                ProxyAction::DropResponse,
            );
            top_up = Some((fired, n));
        }
        Ok(Step::Continue)
    };
    let result = burst::run(producer, &spec, hook);
    let played = controller
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .map(Controller::stop)
        .unwrap_or_default();
    let result = result.map_err(fail)?;
    let stats = proxy.stats();
    let sent = result.outcomes.len() as u64;
    let acked = result.outcomes.iter().filter(|o| o.is_ok()).count();

    let expect = Expect::strict(6, 100);
    let mut errors: Vec<String> = result.problems.clone();
    let mut tally = None;
    let read_start = Instant::now();
    for isolation in ["read_uncommitted", "read_committed"] {
        // No transaction writes here, so the end offsets bound both reads
        // (`consume_whole`).
        let logs = consume_whole(&bootstrap, &topic, isolation, acked).map_err(fail)?;
        match check(&result.outcomes, &logs, &expect) {
            Ok(t) => tally = Some(t),
            Err(e) => errors.push(format!("{isolation}: {e}")),
        }
    }
    if stats.dropped < min_ambiguous {
        errors.push(format!(
            "only {} responses were dropped after the write (at least {min_ambiguous} required)",
            stats.dropped
        ));
    }
    errors.extend(
        played
            .errors
            .iter()
            .map(|e| format!("fault controller: {e}")),
    );
    let mut notes = vec![
        format!("topic {topic}, leaders before {before:?}, seed {seed}"),
        format!(
            "{sent} records; total {:.1?}: send {:.1?}, flush {:.1?}, both reads {:.1?}",
            start.elapsed(),
            result.send_time,
            result.flush_time,
            read_start.elapsed()
        ),
        format!("proxy: {}", proxy_line(&stats)),
    ];
    notes.extend(played.log.iter().cloned());
    if !errors.is_empty() {
        return Err(format!(
            "scenario {NAME} (seed {seed}, repeat with KACRAB_JEPSEN_SEED={seed}) failed:\n{}\n  {}",
            errors.join("\n"),
            notes.join("\n  ")
        ));
    }
    Ok(Report {
        scenario: NAME,
        skipped: false,
        summary: tally.expect("checked"),
        faults: (schedule.links.len() + schedule.processes.len()) as u64 + stats.injected(),
        send_time: result.send_time,
        flush_time: result.flush_time,
        elapsed: start.elapsed(),
        notes,
    })
}
