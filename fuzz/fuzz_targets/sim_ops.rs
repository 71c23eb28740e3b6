//! Drives the idempotent producer through the deterministic cluster simulator with an
//! operation sequence decoded from the fuzzer's bytes (`kacrab_sim::ops`): sends,
//! time passing, broker crashes and restarts, leadership moves, dropped connections,
//! lost requests and responses, held responses, partition errors, throttles and
//! random fault rates; then a quiet phase. Nothing may panic (the core's
//! `assert_invariants` runs after every step) and every property of the simulator's
//! checker must hold: exactly once and in order per partition, every record resolved
//! once, gap-free sequences on the wire, offsets as logged, liveness once faults stop.
//!
//! Kafka's broker rules exactly (no workaround for known core bugs), a 10 s
//! delivery.timeout.ms. Build with `cargo fuzz build -s none sim_ops`; replay a crash
//! with `cargo fuzz run sim_ops <file>`, then turn it into a scripted test in
//! tests/sim_regressions.rs.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let report = kacrab_sim::ops::run(data);
    assert!(
        report.is_clean(),
        "{}\n{}",
        report.render(),
        report.chaos_line()
    );
});
