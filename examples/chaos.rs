//! The main job: runs the deterministic cluster simulator on a default scenario (3
//! brokers, 6 partitions, 100,000 records, faults of every kind) and checks every log.
//!
//! ```text
//! cargo run --release --example chaos -- [--seed N] [--records N] [--partitions N]
//!                                        [--brokers N] [--fault-rate F] [--driver D]
//!                                        [--json]
//! ```
//!
//! `--driver session` (the default) runs the producer inside a `kacrab_driver::Session`
//! over the lying network on real Kafka frames; `--driver core` runs the bare core with
//! the simulator's own router (faster, and the simulator's behaviour before the session).
//!
//! With `--json`, every progress line and the result are also printed as one JSON
//! object per line, prefixed `json: ` (`"type":"progress"` and `"type":"result"`), the
//! result just before the last line. The last line is always
//! `chaos: records=N acked=A failed=F duplicates=D reordered=R lost=L epoch_bumps=E retries=T violations=V by_kind=duplicate:0,...`
//! (`kacrab_sim::ChaosSummary::line`): D, R and L count the main run's records, V every
//! violation any checker of any run found (the main run, the fatal runs, the
//! transactional runs), and `by_kind` names each kind of violation with its count. The
//! exit status is non-zero exactly when V is not zero.
//!
//! The main run and the fatal runs also check the liveness bound of
//! `kacrab_sim::failure_bound`: a partition that failed records no injected fault
//! explains is a violation (`unexplained_failures`), named in the report.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kacrab_sim::scenario::Phase;
use kacrab_sim::{
    ChaosSummary, Cluster, DriverKind, FailureBound, FatalPolicy, FaultCounts, FaultRates,
    Scenario, SimConfig, TxnOutcome, ViolationCounts,
};

struct Args {
    seed: u64,
    records: u64,
    partitions: u32,
    brokers: u32,
    fault_rate: f64,
    driver: DriverKind,
    /// `--json`: progress and the final result also as one JSON object per line on
    /// stdout (prefixed `json: `), for machines; the human lines stay.
    json: bool,
}

const USAGE: &str =
    "usage: chaos [--seed N] [--records N] [--partitions N] [--brokers N] [--fault-rate F] [--driver session|core] [--json]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seed: 1,
        records: 100_000,
        partitions: 6,
        brokers: 3,
        fault_rate: 0.05,
        driver: DriverKind::Session,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.to_string());
        }
        if flag == "--json" {
            args.json = true;
            continue;
        }
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (flag.clone(), None),
        };
        let value = match inline.or_else(|| it.next()) {
            Some(v) => v,
            None => return Err(format!("{name} needs a value\n{USAGE}")),
        };
        let bad = |e: &dyn std::fmt::Display| format!("{name} {value}: {e}\n{USAGE}");
        match name.as_str() {
            "--seed" => args.seed = value.parse().map_err(|e| bad(&e))?,
            "--records" => args.records = value.parse().map_err(|e| bad(&e))?,
            "--partitions" => args.partitions = value.parse().map_err(|e| bad(&e))?,
            "--brokers" => args.brokers = value.parse().map_err(|e| bad(&e))?,
            "--fault-rate" => args.fault_rate = value.parse().map_err(|e| bad(&e))?,
            "--driver" => {
                args.driver = match value.as_str() {
                    "session" => DriverKind::Session,
                    "core" => DriverKind::Core,
                    _ => return Err(bad(&"not session or core")),
                }
            }
            _ => return Err(format!("unknown flag {name}\n{USAGE}")),
        }
    }
    if args.partitions == 0 || args.brokers == 0 {
        return Err(format!(
            "--partitions and --brokers must be at least 1\n{USAGE}"
        ));
    }
    if !(0.0..=1.0).contains(&args.fault_rate) {
        return Err(format!("--fault-rate must be within 0..=1\n{USAGE}"));
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut sim = SimConfig::new(args.seed);
    sim.driver = args.driver;
    sim.brokers = args.brokers;
    sim.partitions = args.partitions;
    sim.topics = args.partitions.min(2);
    sim.faults = FaultRates::uniform(args.fault_rate);
    // A few long ISR shrink episodes (up to 15 s) per run: most outages are short and
    // retried through, a long one outlasts delivery.timeout.ms, so records expire with
    // their fate unknown and the producer must bump its epoch to go on safely.
    sim.faults.isr_shrink = args.fault_rate / 100.0;
    sim.isr_shrink_max = Duration::from_secs(15);
    let mut producer = SimConfig::producer_config(args.seed);
    producer.delivery_timeout(Duration::from_secs(10));
    sim.producer = producer.build().expect("valid producer configuration");
    let mut scenario = Scenario::new(sim, args.records);
    scenario.burst_max = 4;
    scenario.interval = Duration::from_micros(500);
    scenario.failure_bound = FailureBound::Checked;

    println!(
        "chaos: seed {} | {} records | {} partitions over {} topics | {} brokers | fault rate {}",
        args.seed,
        args.records,
        args.partitions,
        args.partitions.min(2),
        args.brokers,
        args.fault_rate
    );
    println!(
        "driver: {}",
        match args.driver {
            DriverKind::Session => "kacrab_driver::Session on Kafka frames",
            DriverKind::Core => "bare core, simulator's router",
        }
    );
    println!(
        "producer: acks=all, idempotent, max.in.flight=5, linger=5ms, batch.size=16384, request.timeout=1s, delivery.timeout=10s"
    );
    let started = Instant::now();
    let total = args.records;
    let report = scenario.run_with(&mut |p| {
        let phase = match p.phase {
            Phase::Chaos => "chaos",
            Phase::Quiet => "quiet (faults stopped)",
            Phase::Probe => "liveness probes",
            Phase::Done => "done",
        };
        println!(
            "progress: {:>5.1}% sent | t={:>8.3}s virtual | {:>9} steps | delivered {:>7} failed {:>5} | faults {:>6} | violations {} | {phase} ({:.2}s wall)",
            if total == 0 { 100.0 } else { p.sent as f64 * 100.0 / total as f64 },
            p.now.as_secs_f64(),
            p.steps,
            p.delivered,
            p.failed,
            p.faults,
            p.violations,
            started.elapsed().as_secs_f64()
        );
        if args.json {
            println!(
                "json: {{\"type\":\"progress\",\"sent\":{},\"records\":{total},\"virtual_s\":{:.3},\"steps\":{},\"delivered\":{},\"failed\":{},\"faults\":{},\"violations\":{},\"phase\":\"{phase}\",\"wall_s\":{:.3}}}",
                p.sent,
                p.now.as_secs_f64(),
                p.steps,
                p.delivered,
                p.failed,
                p.faults,
                p.violations,
                started.elapsed().as_secs_f64()
            );
        }
    });
    print!("{}", report.render());
    println!("wall time {:.2} s", started.elapsed().as_secs_f64());
    let mut summary = ChaosSummary::of(&report);
    let fatal = fatal_runs(&args);
    let txn = transactional_runs(&args);
    let fatal_clean = fatal.total() == 0;
    let txn_clean = txn.total() == 0;
    summary.add_violations(&fatal);
    summary.add_violations(&txn);
    if args.json {
        let (t, st) = (&report.tally, &report.producer);
        println!(
            "json: {{\"type\":\"result\",\"seed\":{},\"records\":{},\"acked\":{},\"failed\":{},\"failed_not_written\":{},\"duplicates\":{},\"reordered\":{},\"lost\":{},\"violations\":{},\"violations_by_kind\":{{{}}},\"epoch_bumps\":{},\"retries\":{},\"records_retried\":{},\"possibly_written_failures\":{},\"virtual_s\":{:.3},\"wall_s\":{:.3},\"fatal_runs_clean\":{fatal_clean},\"transactional_runs_clean\":{txn_clean},\"clean\":{}}}",
            report.seed,
            t.records,
            t.acked,
            t.failed,
            t.failed_not_written,
            t.duplicates,
            t.reordered,
            t.lost,
            summary.violations().total(),
            summary
                .violations()
                .iter()
                .map(|(k, n)| format!("\"{}\":{n}", k.short_name()))
                .collect::<Vec<_>>()
                .join(","),
            st.epoch_bumps,
            st.retries,
            st.records_retried,
            st.possibly_written_failures,
            report.virtual_time.as_secs_f64(),
            started.elapsed().as_secs_f64(),
            summary.is_clean()
        );
    }
    println!("{}", summary.line());
    summary.exit_code()
}

/// Fatal errors are not drawn in the main run (a fatal error ends the producer, and the
/// run must deliver its records): a few short runs of their own draw
/// CLUSTER_AUTHORIZATION_FAILED under the same faults, while other requests are on the
/// wire. Every property but "the producer never goes fatal" must hold, the liveness
/// bound included (records failed only by the fatal error or another fault able to fail
/// them). Returns their violations by kind.
fn fatal_runs(args: &Args) -> ViolationCounts {
    const RUNS: u64 = 20;
    let (mut fatal, mut records, mut failed) = (0, 0, 0);
    let mut violations = ViolationCounts::default();
    for i in 0..RUNS {
        let seed = args.seed.wrapping_add(1 + i);
        let mut sim = SimConfig::new(seed);
        sim.driver = args.driver;
        sim.brokers = args.brokers;
        sim.partitions = args.partitions;
        sim.topics = args.partitions.min(2);
        sim.faults = FaultRates::uniform(args.fault_rate).with_fatal(0.005);
        let mut scenario = Scenario::new(sim, 2_000);
        scenario.fatal = FatalPolicy::Expected;
        scenario.failure_bound = FailureBound::Checked;
        let report = scenario.run();
        fatal += u64::from(report.fatal.is_some());
        records += report.tally.records;
        failed += report.tally.failed;
        violations.merge(&report.violations_by_kind);
        if !report.is_clean() {
            print!("fatal run, seed {seed}:\n{}", report.render());
        }
    }
    println!(
        "fatal runs: {RUNS} runs, {fatal} producers went fatal, {records} records, {failed} failed, {} violations",
        violations.total()
    );
    violations
}

/// The transactional producer under the same faults plus the coordinator's (moves and
/// loading, its own aborts, asynchronous markers, rival producers, transactional id
/// expiry, `transaction.version` changes): a few runs per transaction version, each
/// `init_transactions` and then transactions committed or aborted by a seeded choice.
/// Prints the transactions' outcomes and every coordinator fault and answer by kind.
/// Returns the runs' violations by kind.
fn transactional_runs(args: &Args) -> ViolationCounts {
    const RUNS: u64 = 100;
    let mut faults = FaultCounts::default();
    let (mut committed, mut aborted, mut failed, mut fenced) = (0, 0, 0, 0);
    let mut violations = ViolationCounts::default();
    for i in 0..RUNS {
        for version in [1, 2] {
            let seed = args.seed.wrapping_add(100 + i);
            let mut sim = SimConfig::transactional(seed, "chaos-tx", version);
            sim.driver = args.driver;
            sim.brokers = args.brokers;
            sim.partitions = args.partitions;
            sim.faults = FaultRates::uniform(args.fault_rate);
            // One run in four: a transactional id with a long history, whose epoch is
            // exhausted within the run (TV2 bumps it at every transaction) and whose
            // producer id rotates.
            if i % 4 == 3 {
                sim.initial_producer_epoch = i16::MAX - i16::try_from(i / 4 % 8).expect("below 8");
            }
            let c = Cluster::transactional_chaos(sim, 20, 8);
            let txns = c.transactions();
            committed += txns.count(|o| *o == TxnOutcome::Committed);
            aborted += txns.count(|o| *o == TxnOutcome::Aborted);
            failed += txns.count(|o| matches!(o, TxnOutcome::Failed(_)));
            fenced += u64::from(c.fatal_by_kafkas_rules());
            faults.merge(c.faults());
            let v = c.transactional_chaos_violations();
            if !v.is_empty() {
                println!("transactional run, seed {seed}, TV{version}: {v:#?}");
            }
            violations.merge(&c.transactional_chaos_violation_counts());
        }
    }
    println!(
        "transactional runs: {} runs (TV1 and TV2), transactions committed {committed}, aborted {aborted}, failed {failed}; producers fenced by Kafka's rules {fenced}; {} violations",
        RUNS * 2,
        violations.total()
    );
    for (kind, n) in faults.iter().filter(|(k, _)| k.is_transactional()) {
        println!("  {:<44} {n}", kind.name());
    }
    violations
}
