//! The session driver under the faults of a request's life before it is written and
//! after it timed out: dials refused (as while a broker restarts), connection setups
//! slower than `request.timeout.ms` with requests queued behind them, and coordinator
//! answers held past `request.timeout.ms`. A request never written costs no attempt
//! and runs no timeout (Java: `Sender.sendProducerData` drains only for nodes
//! `NetworkClient.ready` accepts; `InFlightRequest.sendTimeMs` starts at the send), so
//! with `retries=0` and no fault that loses a written request, every record is
//! delivered; a record failed here is a liveness violation of those rules. And no
//! connection is ever closed as a protocol violation (the checker flags one), which a
//! timed-out request written late would cause.

use std::time::Duration;

use kacrab_sim::{Cluster, DriverKind, FaultKind, FaultRates, SimConfig, TxnOutcome};

const MAX: Duration = Duration::from_secs(600);

fn session_sim(seed: u64, transactional: bool) -> SimConfig {
    let mut sim = SimConfig::new(seed);
    sim.brokers = 3;
    sim.partitions = 3;
    sim.driver = DriverKind::Session;
    let mut producer = SimConfig::producer_config(seed);
    producer.linger(Duration::from_millis(1));
    if transactional {
        producer.transactional_id("connection-faults");
    } else {
        // Nothing here loses a written request: with no retry to spend, a record
        // failed is one a never-written request cost an attempt.
        producer.retries(0);
    }
    sim.producer = producer.build().expect("valid");
    sim
}

fn setup_faults() -> FaultRates {
    FaultRates {
        connect_refused: 0.4,
        slow_connection_setup: 0.3,
        late_coordinator_answer: 0.3,
        ..FaultRates::NONE
    }
}

fn cases() -> u64 {
    std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(8, |n: u64| (n / 25).max(4))
}

/// Refused dials and slow setups, `retries=0`: every record is delivered, once, in
/// order, and both faults were drawn.
#[test]
fn refused_dials_and_slow_setups_cost_no_attempt() {
    let (mut refused, mut slow) = (0, 0);
    for seed in 0..cases() {
        let mut sim = session_sim(seed, false);
        sim.faults = setup_faults();
        let mut c = Cluster::new(sim);
        c.set_workload(300, 4, Duration::from_millis(2));
        while c.workload_remaining() > 0 && c.step() {}
        c.flush();
        assert!(c.run_until_idle(MAX), "seed {seed}: not idle");
        c.final_check();
        let v = c.checker().violations();
        assert!(v.is_empty(), "seed {seed}: {v:#?}");
        let t = c.checker().tally(None);
        assert_eq!(
            (t.acked, t.failed, t.pending),
            (t.records, 0, 0),
            "seed {seed}: a record failed although none was lost written: {:?}",
            c.checker().failure_reasons()
        );
        refused += c.faults().get(FaultKind::ConnectRefused);
        slow += c.faults().get(FaultKind::SlowConnectionSetup);
    }
    assert!(refused > 0 && slow > 0, "refused {refused}, slow {slow}");
}

/// Transactions over slow coordinator setups and coordinator answers held past
/// `request.timeout.ms`: the session closes the connection of a timed-out request and
/// never writes one the core gave up on, so no answer is ever refused (a protocol
/// violation), and the transactions end.
#[test]
fn late_coordinator_answers_close_no_connection_as_a_protocol_violation() {
    let mut late = 0;
    for seed in 0..cases() {
        let mut sim = session_sim(seed, true);
        sim.faults = setup_faults();
        let mut c = Cluster::new(sim);
        c.init_transactions(MAX).expect("init_transactions");
        let outcomes = c.run_transactions(6, 3, 1.0, MAX);
        assert!(
            outcomes.contains(&TxnOutcome::Committed),
            "seed {seed}: {outcomes:?}"
        );
        c.set_fault_rates(FaultRates::NONE);
        c.run_until_idle(MAX);
        c.final_check();
        let v = c.checker().violations();
        assert!(v.is_empty(), "seed {seed}: {v:#?}");
        late += c.faults().get(FaultKind::LateCoordinatorAnswer);
    }
    assert!(late > 0, "no coordinator answer was held");
}
