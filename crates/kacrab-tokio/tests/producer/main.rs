//! The Tokio producer against in-process brokers (krafka's FakeBroker, the scripted broker),
//! one binary: each file under `tests/` named below is one module here, so the dependency
//! graph is linked once, not once per file. The files keep their paths: `cargo test -p
//! kacrab-tokio --test producer paused::` runs one. The real-Kafka suites and the ones
//! that need a feature stay binaries of their own (CI runs them by name).

#[path = "../bounded_memory.rs"]
mod bounded_memory;
#[path = "../connection_errors.rs"]
mod connection_errors;
#[path = "../extensions.rs"]
mod extensions;
#[path = "../fake_broker.rs"]
mod fake_broker;
#[path = "../paused.rs"]
mod paused;
#[path = "../scripted/mod.rs"]
mod scripted;
#[path = "../support/mod.rs"]
mod support;
