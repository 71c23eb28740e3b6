//! Property tests of the core against the deterministic cluster simulator
//! (`kacrab-sim`): random clusters, workloads, producer configurations and fault
//! rates; every run checks, after every step, that each partition's log holds every
//! acknowledged record exactly once and in send order, that no record is logged twice
//! or out of order, that every record resolves exactly once, that sequences on the
//! wire never skip per (producer id, epoch, partition), that acknowledged offsets are
//! the logged ones, and that the core's invariants hold; and at the end that the
//! producer drained everything once faults stopped (liveness).
//!
//! Cases: `KACRAB_SIM_CASES` (default 2,000 for the main property, a quarter of that
//! for the others); e.g. `KACRAB_SIM_CASES=100000 cargo test --release --test
//! sim_properties` for a long run. The case generator is seeded with
//! `KACRAB_SIM_SEED` (a number, or `random`; default fixed, so CI is reproducible).
//! A failure is shrunk and printed with its minimal input; re-run it with
//! [`run_params`] and `trace: true` to see every step.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kacrab_sim::{DriverKind, FailureBound, FaultCounts, FaultRates, Report, Scenario, SimConfig};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// Everything a case varies. Small and plain so that shrinking works on it.
#[derive(Clone, Debug)]
struct Params {
    seed: u64,
    brokers: u32,
    topics: u32,
    partitions: u32,
    records: u64,
    fault_rate: f64,
    isr_shrink_rate: f64,
    max_in_flight: u32,
    linger_ms: u64,
    batch_size: usize,
    burst: u32,
    interval_us: u64,
    value_size: usize,
    request_timeout_ms: u64,
    delivery_timeout_ms: u64,
    /// The brokers' `max.message.bytes` (small values make the producer split batches).
    max_message_bytes: usize,
    /// The epoch new producer ids start at (near `i16::MAX`: epoch exhaustion).
    initial_epoch: i16,
    /// See `SimConfig::strict_first_sequence`.
    strict_first_sequence: bool,
}

/// The main strategy: any cluster and workload, Kafka's broker rules, timeouts long
/// next to the outages (request 1 s, delivery 30 s, ISR episodes up to 5 s), random
/// MESSAGE_TOO_LARGE. `properties_hold_kafka_rules` adds short timeouts.
fn params() -> impl Strategy<Value = Params> {
    (
        (any::<u64>(), 3u32..=5, 1u32..=3, 1u32..=12, 1u64..=300),
        (
            0.0f64..0.4,
            0.0f64..0.02,
            1u32..=5,
            0u64..=20,
            40usize..=16_384,
        ),
        (1u32..=20, 0u64..=5_000, 8usize..=64),
        (
            prop_oneof![4 => Just(1_048_588usize), 1 => 200usize..3_000],
            prop_oneof![4 => Just(0i16), 1 => 32_760i16..=i16::MAX],
        ),
    )
        .prop_map(|(a, b, c, d)| Params {
            seed: a.0,
            brokers: a.1,
            topics: a.2,
            partitions: a.3,
            records: a.4,
            fault_rate: b.0,
            isr_shrink_rate: b.1,
            max_in_flight: b.2,
            linger_ms: b.3,
            batch_size: b.4,
            burst: c.0,
            interval_us: c.1,
            value_size: c.2,
            request_timeout_ms: 1_000,
            delivery_timeout_ms: 30_000,
            max_message_bytes: d.0,
            initial_epoch: d.1,
            strict_first_sequence: false,
        })
}

/// The full-strength strategy: Kafka's rules exactly, short timeouts (so batches
/// expire while their fate is unknown, on the wire and in retry) and frequent ISR
/// shrink episodes.
fn params_kafka_rules() -> impl Strategy<Value = Params> {
    (params(), 0usize..3, 0usize..4, 0.0f64..0.1).prop_map(|(mut p, rt, dt, isr)| {
        p.request_timeout_ms = [200, 500, 1_000][rt];
        p.delivery_timeout_ms = [1_500, 3_000, 8_000, 30_000][dt];
        p.isr_shrink_rate = isr;
        p.strict_first_sequence = false;
        p
    })
}

/// Builds and runs the scenario `p` describes, on the bare core.
fn run_params(p: &Params, trace: bool) -> Report {
    run_params_with(p, trace, DriverKind::Core)
}

/// Builds and runs the scenario `p` describes, with `driver` running the producer.
fn run_params_with(p: &Params, trace: bool, driver: DriverKind) -> Report {
    let mut sim = SimConfig::new(p.seed);
    sim.driver = driver;
    sim.brokers = p.brokers;
    sim.topics = p.topics;
    sim.partitions = p.partitions;
    sim.faults = FaultRates::uniform(p.fault_rate);
    sim.faults.isr_shrink = p.isr_shrink_rate;
    sim.value_size = p.value_size;
    sim.strict_first_sequence = p.strict_first_sequence;
    sim.max_message_bytes = p.max_message_bytes;
    sim.initial_producer_epoch = p.initial_epoch;
    sim.trace = trace;
    let mut producer = SimConfig::producer_config(p.seed);
    producer
        .max_in_flight_requests_per_connection(p.max_in_flight)
        .linger(Duration::from_millis(p.linger_ms))
        .batch_size(p.batch_size)
        .request_timeout(Duration::from_millis(p.request_timeout_ms))
        .delivery_timeout(Duration::from_millis(
            p.delivery_timeout_ms
                .max(p.request_timeout_ms + p.linger_ms),
        ));
    sim.producer = producer.build().expect("valid producer configuration");
    let mut scenario = Scenario::new(sim, p.records);
    scenario.burst_max = p.burst;
    scenario.interval = Duration::from_micros(p.interval_us);
    // Idle gaps past the brokers' producer-state expiry (on by default): none to three
    // per run, so the brokers forget the producer on the idle partitions.
    scenario.idle_gaps = (p.seed % 4) as u32;
    // The liveness bound (kacrab_sim::failure_bound) is sound when no chain of the
    // short faults it leaves out can reach delivery.timeout.ms: at 10 s and more.
    if p.delivery_timeout_ms >= 10_000 {
        scenario.failure_bound = FailureBound::Checked;
    }
    scenario.run()
}

fn cases(default: u32) -> u32 {
    std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4_096,
        ..Config::default()
    };
    let seed = match std::env::var("KACRAB_SIM_SEED").ok().as_deref() {
        Some("random") => return TestRunner::new(config),
        Some(s) => s
            .parse::<u64>()
            .expect("KACRAB_SIM_SEED is a number or `random`"),
        None => 0x6b61_6372_6162,
    };
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn check(report: &Report) -> Result<(), TestCaseError> {
    if report.is_clean() {
        return Ok(());
    }
    let mut msg = format!(
        "{} violations; {}\n",
        report.violation_count,
        report.chaos_line()
    );
    for v in report.violations.iter().take(8) {
        msg.push_str(&format!("  {v}\n"));
    }
    Err(TestCaseError::fail(msg))
}

fn run_property(name: &str, strategy: impl Strategy<Value = Params>, cases: u32) {
    run_property_with(name, strategy, cases, DriverKind::Core);
}

fn run_property_with(
    name: &str,
    strategy: impl Strategy<Value = Params>,
    cases: u32,
    driver: DriverKind,
) {
    let steps = AtomicU64::new(0);
    let runs = AtomicU64::new(0);
    let late = AtomicU64::new(0);
    let truncated = AtomicU64::new(0);
    let held = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let faults = Mutex::new(FaultCounts::default());
    let started = Instant::now();
    let result = runner(cases).run(&strategy, |p| {
        let report = run_params_with(&p, false, driver);
        steps.fetch_add(report.sim.steps, Ordering::Relaxed);
        runs.fetch_add(1, Ordering::Relaxed);
        late.fetch_add(report.sim.late_applications, Ordering::Relaxed);
        truncated.fetch_add(report.sim.truncated_records, Ordering::Relaxed);
        held.fetch_add(report.sim.delayed_produces, Ordering::Relaxed);
        failed.fetch_add(report.tally.failed, Ordering::Relaxed);
        faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .merge(&report.faults);
        check(&report)
    });
    let faults = faults
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    eprintln!(
        "{name}: {} runs (cases asked: {cases}), {} simulated steps, {} faults injected, \
         {} requests applied after their connection dropped, {} records truncated on \
         failover, {} acks=all produces held for replication, {} records failed, {:.2?}",
        runs.load(Ordering::Relaxed),
        steps.load(Ordering::Relaxed),
        faults.total(),
        late.load(Ordering::Relaxed),
        truncated.load(Ordering::Relaxed),
        held.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        started.elapsed()
    );
    for (kind, n) in faults.iter().filter(|&(_, n)| n > 0) {
        eprintln!("  {name}: {:<40} {n}", kind.name());
    }
    if let Err(e) = result {
        panic!("{name} failed: {e}");
    }
}

#[test]
fn properties_hold() {
    run_property("properties_hold", params(), cases(2_000));
}

/// The main properties with the producer inside a `kacrab_driver::Session`, whose
/// routing, connections, version negotiation and request timeouts meet the lying
/// network on real Kafka frames (a quarter of the cases: a session run is slower).
#[test]
fn properties_hold_through_the_session() {
    run_property_with(
        "properties_hold_through_the_session",
        params(),
        cases(2_000).div_ceil(4),
        DriverKind::Session,
    );
}

/// The same properties with short timeouts (batches expire on the wire and in retry,
/// their fate unknown) and frequent ISR shrink episodes.
#[test]
fn properties_hold_kafka_rules() {
    run_property(
        "properties_hold_kafka_rules",
        params_kafka_rules(),
        cases(2_000),
    );
}

/// Arbitrary operation sequences (the fuzz target's decoder) hold the properties too.
#[test]
fn op_sequences_hold() {
    let steps = AtomicU64::new(0);
    let strategy = proptest::collection::vec(any::<u8>(), 0..600);
    let result = runner(cases(2_000) / 4).run(&strategy, |data| {
        let options = kacrab_sim::ops::Options {
            strict_first_sequence: false,
            delivery_timeout: Duration::from_secs(10),
            message_too_large: true,
            small_max_message_bytes: true,
            trace: false,
            rebuild_snapshots: false,
        };
        let report = kacrab_sim::ops::run_with(&data, options);
        steps.fetch_add(report.sim.steps, Ordering::Relaxed);
        check(&report)
    });
    eprintln!(
        "op_sequences_hold: {} simulated steps",
        steps.load(Ordering::Relaxed)
    );
    if let Err(e) = result {
        panic!("op_sequences_hold failed: {e}");
    }
}

/// A faults-free run is boring and must stay so: everything acknowledged, no retry.
#[test]
fn quiet_cluster_delivers_everything() {
    let p = Params {
        seed: 7,
        brokers: 3,
        topics: 2,
        partitions: 6,
        records: 3_000,
        fault_rate: 0.0,
        isr_shrink_rate: 0.0,
        max_in_flight: 5,
        linger_ms: 5,
        batch_size: 16_384,
        burst: 8,
        interval_us: 1_000,
        value_size: 16,
        request_timeout_ms: 1_000,
        delivery_timeout_ms: 30_000,
        max_message_bytes: 1_048_588,
        initial_epoch: 0,
        strict_first_sequence: false,
    };
    let report = run_params(&p, false);
    assert!(report.is_clean(), "{}", report.render());
    assert_eq!(report.tally.acked, 3_000);
    assert_eq!(report.producer.retries, 0);
    assert_eq!(report.producer.epoch_bumps, 0);
    assert_eq!(report.sim.duplicate_batches, 0);
}

/// The same parameters give the same run, step for step.
#[test]
fn runs_are_deterministic() {
    let mut rng = TestRunner::deterministic();
    for _ in 0..5 {
        let p = params_kafka_rules()
            .new_tree(&mut rng)
            .expect("a case")
            .current();
        let a = run_params(&p, true);
        let b = run_params(&p, true);
        assert_eq!(a.trace, b.trace, "{p:?}");
        assert_eq!(a, b);
    }
}

/// Core bug 6, found by this property: a batch appended but answered
/// REQUEST_TIMED_OUT waits for its retry when a later batch of the partition fails
/// definitively (MESSAGE_TOO_LARGE, one record), which asks for an epoch bump. The bump
/// renumbered the waiting batch under the new epoch and sent it again: written twice.
/// The fix: a bump never renumbers a batch that may be in the log under its current
/// stamp; that batch is resent as it is first (a duplicate's ack, or OUT_OF_ORDER
/// proving it absent).
#[test]
fn bug6_bump_never_renumbers_a_possibly_written_batch() {
    let p = Params {
        seed: 8930136646094773062,
        brokers: 5,
        topics: 2,
        partitions: 9,
        records: 101,
        fault_rate: 0.22823380230176352,
        isr_shrink_rate: 0.016783828733328694,
        max_in_flight: 2,
        linger_ms: 20,
        batch_size: 176,
        burst: 1,
        interval_us: 3240,
        value_size: 8,
        request_timeout_ms: 1000,
        delivery_timeout_ms: 30000,
        max_message_bytes: 1048588,
        initial_epoch: 0,
        strict_first_sequence: false,
    };
    let report = run_params(&p, false);
    assert!(report.is_clean(), "{}", report.render());
}

/// Found with `KACRAB_SIM_SEED=7771`: a request the broker held past its connection's
/// close was applied late, its append moved the leadership (the
/// NOT_LEADER_OR_FOLLOWER-after-append fault), and that completed another produce parked
/// in purgatory on the new connection; the late request's answer then went out on the
/// new connection too, so the producer got an answer to a request it had timed out and
/// failed. Kafka writes a response only to the connection the request came on
/// (`RequestChannel.sendResponse` by the request's connection id); a closed one drops it.
#[test]
fn late_applied_request_is_never_answered_on_a_newer_connection() {
    let p = Params {
        seed: 2777604650834104113,
        brokers: 5,
        topics: 2,
        partitions: 12,
        records: 91,
        fault_rate: 0.1420015997668498,
        isr_shrink_rate: 0.004837017122548717,
        max_in_flight: 2,
        linger_ms: 9,
        batch_size: 601,
        burst: 17,
        interval_us: 348,
        value_size: 8,
        request_timeout_ms: 1000,
        delivery_timeout_ms: 30000,
        max_message_bytes: 1048588,
        initial_epoch: 0,
        strict_first_sequence: false,
    };
    let report = run_params(&p, false);
    assert!(
        report.is_clean(),
        "{}",
        report
            .violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A topic still being created when the faults stop (`TopicCreatedLate`, leaders
/// elected up to 2.5 s in) is created with the heal, like every other fault ends
/// there: before, the probes sent after the quiet phase expired waiting for its leaders
/// (delivery timeout 1.5 s) and failed the liveness check. Found by
/// `properties_hold_kafka_rules` at 20,000 cases.
#[test]
fn a_topic_still_being_created_when_faults_stop_is_created_with_the_heal() {
    let p = Params {
        seed: 2656114436002211196,
        brokers: 5,
        topics: 1,
        partitions: 2,
        records: 36,
        fault_rate: 0.3855646594908146,
        isr_shrink_rate: 0.0,
        max_in_flight: 1,
        linger_ms: 0,
        batch_size: 40,
        burst: 1,
        interval_us: 135,
        value_size: 8,
        request_timeout_ms: 200,
        delivery_timeout_ms: 1500,
        max_message_bytes: 1048588,
        initial_epoch: 0,
        strict_first_sequence: false,
    };
    let report = run_params_with(&p, false, DriverKind::Core);
    assert!(report.is_clean(), "{}", report.render());
}
