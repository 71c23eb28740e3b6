//! The blocking producer against in-process brokers (krafka's FakeBroker and scripted
//! ones), one binary: each file under `tests/` named below is one module here, so the
//! dependency graph is linked once, not once per file. The files keep their paths:
//! `cargo test -p kacrab-blocking --test producer smoke::` runs one. The real-Kafka
//! suites stay binaries of their own (CI runs them by name).

#[path = "../connection_errors.rs"]
mod connection_errors;
#[path = "../extensions.rs"]
mod extensions;
#[path = "../fake_broker.rs"]
mod fake_broker;
#[path = "../oauthbearer.rs"]
mod oauthbearer;
#[path = "../produce_cli.rs"]
mod produce_cli;
#[path = "../smoke.rs"]
mod smoke;
#[path = "../support/mod.rs"]
mod support;
#[path = "../telemetry.rs"]
mod telemetry;
