//! Recovery behind silent connections ([`FaultKind::SilentConnection`]), measured in
//! virtual time: for every silence, from the oldest request the producer still waited
//! on over the silent connection to the last of its batches written again on another
//! connection (or resolved).
//!
//! Java closes a node's connection at its first timed-out request and fails every
//! request on it at once (`NetworkClient.handleTimedOutRequests` →
//! `processTimeoutDisconnection`), so each batch on it is resent after one
//! `request.timeout.ms` plus the retry and reconnect backoffs. The core does the same
//! (`Producer::expire_requests` closes a produce request's connection and fails every
//! produce request on it), and the session closes the connection it timed out on. One
//! departure adds to it: a batch lost with its connection is re-routed by fresh
//! metadata (`lost_in_transit` forgets the partition's leader), and that metadata
//! request can itself land on another silent connection and wait for its timeout. So
//! a silence costs one `request.timeout.ms` plus backoffs, and each silence that
//! overlaps it (on any broker) may add one more.

use std::time::Duration;

use kacrab_sim::{Cluster, DriverKind, FaultKind, FaultRates, Recovery, SimConfig};

/// Kafka's `reconnect.backoff.max.ms` (the session's default; the bare core has none).
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_millis(1_000);
/// Latencies and the producer's timer granularity.
const SLACK: Duration = Duration::from_millis(100);

/// Three brokers, six partitions (the real-Kafka run's shape), a steady workload while
/// connections go silent at `rate` per produce request written (each silence followed
/// by up to two more on the next connections to the same broker), then quiet.
fn run(seed: u64, driver: DriverKind, rate: f64) -> Cluster {
    let mut sim = SimConfig::new(seed);
    sim.brokers = 3;
    sim.partitions = 6;
    sim.driver = driver;
    sim.faults = FaultRates {
        silent_connection: rate,
        response_delay: 0.05,
        ..FaultRates::NONE
    };
    let mut c = Cluster::new(sim);
    c.set_workload(3_000, 4, Duration::from_millis(2));
    c.run_until(Duration::from_secs(600), |c| c.workload_remaining() == 0);
    c.heal();
    c.flush();
    assert!(
        c.run_until_idle(Duration::from_secs(120)),
        "seed {seed} {driver:?}: not idle"
    );
    c.final_check();
    c
}

/// One silence's cost: `request.timeout.ms` plus the retry and reconnect backoffs.
fn one_silence(c: &Cluster) -> Duration {
    let p = c.producer_config();
    p.request_timeout() + p.retry_backoff_max() + RECONNECT_BACKOFF_MAX
}

/// The silences other than `r` whose connection was silent while `r`'s batches
/// waited: each may have held a batch `r`'s next one waited behind (a partition's
/// retries go out one at a time) or the metadata lookup a retry waited for.
fn overlapping(r: &Recovery, all: &[Recovery], end: kacrab_idempotence::Timestamp) -> u32 {
    let (from, to) = (
        r.oldest_request_at.expect("carried batches"),
        r.recovered_at.expect("recovered"),
    );
    all.iter()
        .filter(|o| *o != r)
        .filter(|o| o.silenced_at < to && o.recovered_at.unwrap_or(end) > from)
        .count() as u32
}

/// Every silence, in many seeds and with both drivers, releases every batch it held
/// within one `request.timeout.ms` plus backoffs, plus one such cost per other silence
/// overlapping it. It fails if the requests on a silent connection were timed out one
/// by one without closing it: their retries would go back on the silent connection, and
/// nothing would leave it before the silence ends (`SimConfig::silence_hold`, 40 s).
#[test]
fn every_silence_is_left_within_one_request_timeout_per_overlapping_silence() {
    let seeds: u64 = std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(20, |n| (n / 10).clamp(5, 100));
    for driver in [DriverKind::Core, DriverKind::Session] {
        let (mut silences, mut alone, mut worst_alone) = (0, 0, Duration::ZERO);
        let mut by_overlaps = std::collections::BTreeMap::new();
        let mut session_connections = 0;
        for seed in 0..seeds {
            let c = run(seed, driver, 0.001);
            assert_eq!(
                c.checker().violation_count(),
                0,
                "seed {seed} {driver:?}: {:#?}",
                c.checker().violations()
            );
            let all = c.silence_recoveries();
            assert_eq!(
                all.len() as u64,
                c.faults().get(FaultKind::SilentConnection),
                "every silence is watched"
            );
            let cost = one_silence(&c);
            session_connections += c.stats().session_connections;
            for r in all.iter().filter(|r| r.oldest_request_at.is_some()) {
                let Some(took) = r.took() else {
                    panic!("seed {seed} {driver:?}: batches never left {r:?}");
                };
                let k = overlapping(r, &all, c.now());
                let bound = cost * (1 + k) + SLACK;
                assert!(
                    took <= bound,
                    "seed {seed} {driver:?}: {took:?} > {bound:?} ({k} overlapping): {r:?}"
                );
                silences += 1;
                *by_overlaps.entry(k).or_insert(0) += 1;
                if k == 0 {
                    alone += 1;
                    worst_alone = worst_alone.max(took);
                }
            }
        }
        eprintln!(
            "{driver:?}: silences by overlapping silences {by_overlaps:?}, session \
             connections opened {session_connections}"
        );
        eprintln!(
            "{driver:?}: {silences} silences with batches, {alone} alone, the slowest of \
             those left after {worst_alone:?}"
        );
        assert!(alone > 0, "{driver:?}: no silence alone");
    }
}

/// Back-to-back silences on one broker: each next connection to it goes silent on its
/// first produce request. Each costs about one `request.timeout.ms` plus backoffs, so
/// k of them cost up to k times that against `delivery.timeout.ms`.
#[test]
fn back_to_back_silences_each_cost_one_request_timeout() {
    let mut sim = SimConfig::new(3);
    sim.brokers = 3;
    sim.partitions = 6;
    sim.driver = DriverKind::Session;
    sim.silence_run_max = 3;
    let mut c = Cluster::new(sim);
    c.set_workload(600, 4, Duration::from_millis(2));
    c.run_for(Duration::from_millis(200));
    // One silence drawn with certainty, then the next two connections to the same
    // broker (the run is drawn from `0..silence_run_max`: up to three in all).
    c.set_fault_rates(FaultRates {
        silent_connection: 1.0,
        ..FaultRates::NONE
    });
    c.run_for(Duration::from_millis(5));
    // A rate above zero lets the runs go on (they stop with the faults) while drawing
    // no new silence in practice.
    c.set_fault_rates(FaultRates {
        silent_connection: f64::MIN_POSITIVE,
        ..FaultRates::NONE
    });
    c.run_until(Duration::from_secs(60), |c| c.workload_remaining() == 0);
    c.flush();
    assert!(c.run_until_idle(Duration::from_secs(60)), "not idle");
    c.final_check();
    assert_eq!(
        c.checker().violation_count(),
        0,
        "{:#?}",
        c.checker().violations()
    );
    let all = c.silence_recoveries();
    let most_on_one_broker = (1..=3)
        .map(|n| all.iter().filter(|r| r.node.0 == n).count())
        .max()
        .unwrap_or(0);
    assert!(
        most_on_one_broker >= 2,
        "no back-to-back silences: {all:#?}"
    );
    let cost = one_silence(&c) + SLACK;
    for r in all.iter().filter(|r| r.oldest_request_at.is_some()) {
        let took = r.took().expect("left");
        let k = overlapping(r, &all, c.now());
        eprintln!(
            "node {} connection {}: left after {took:?}, {k} overlapping",
            r.node, r.generation
        );
        assert!(took <= cost * (1 + k), "{took:?} ({k} overlapping): {r:?}");
    }
}
