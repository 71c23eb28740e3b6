use kacrab_sim::*;
use std::time::Duration;
fn scenario(seed: u64) -> (Scenario, f64) {
        let mut rng = Rng::new(seed);
        let mut sim = SimConfig::new(seed);
        sim.strict_first_sequence = std::env::var("STRICT").is_ok();
        let rate = [0.0, 0.05, 0.1, 0.2, 0.4][rng.below(5) as usize];
        sim.faults = FaultRates::uniform(rate);
        sim.brokers = rng.range(3, 5) as u32;
        sim.partitions = rng.range(1, 12) as u32;
        sim.topics = rng.range(1, 3) as u32;
        let mut b = SimConfig::producer_config(seed);
        b.max_in_flight_requests_per_connection(rng.range(1, 5) as u32)
            .linger(Duration::from_millis(rng.range(0, 20)))
            .batch_size(rng.range(40, 2000) as usize);
        if std::env::var("SHORT").is_ok() {
            let rt = [200u64, 500, 1000][rng.below(3) as usize];
            let dt = [1500u64, 3000, 8000][rng.below(3) as usize];
            b.request_timeout(Duration::from_millis(rt)).delivery_timeout(Duration::from_millis(dt.max(rt + 20)));
            sim.faults = FaultRates::uniform([0.05, 0.2, 0.4, 0.6][rng.below(4) as usize]);
            sim.faults.isr_shrink = [0.0, 0.01, 0.03, 0.1][rng.below(4) as usize];
            sim.faults.response_timeout = [0.0, 0.01, 0.03][rng.below(3) as usize];
        }
        sim.producer = b.build().unwrap();
        let mut sc = Scenario::new(sim, rng.range(1, 300));
        sc.burst_max = rng.range(1, 20) as u32;
        sc.interval = Duration::from_micros(rng.range(0, 5000));
        (sc, rate)
}
#[test]
fn scan() {
    let n: u64 = std::env::var("N").ok().map(|s| s.parse().unwrap()).unwrap_or(2000);
    let t = std::time::Instant::now();
    let mut bad = 0;
    let mut steps = 0;
    let mut agg = [0u64; 6];
    for seed in 1..=n {
        let (sc, rate) = scenario(seed);
        let r = sc.run();
        steps += r.sim.steps;
        agg[0] += r.tally.records; agg[1] += r.tally.failed; agg[2] += r.producer.expired_batches; agg[3] += r.producer.epoch_bumps; agg[4] += r.sim.close_connections; agg[5] += r.tally.failed_in_log;
        if !r.is_clean() {
            bad += 1;
            println!("seed {seed} rate {rate} unknown-accepts {}: {}\n   {}", r.sim.unknown_producer_accepts, r.chaos_line(), r.violations[0]);
        }
    }
    println!("bad {bad} steps {steps} in {:?} [records, failed, expired, bumps, closes, failed_in_log] {agg:?}", t.elapsed());
}
#[test]
fn smoke() {
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let (mut sc, _) = scenario(seed);
    sc.sim.trace = true;
    println!("{:?}", sc.sim.producer);
    let r = sc.run();
    let filter = std::env::var("FILTER").unwrap_or_default();
    let upto: u64 = std::env::var("UPTO").ok().map(|s| s.parse().unwrap()).unwrap_or(u64::MAX);
    for l in &r.trace { 
        let step: u64 = l[1..8].trim().parse().unwrap_or(0);
        if step <= upto && l.contains(&filter) { println!("{l}"); }
    }
    println!("{}", r.render());
}
