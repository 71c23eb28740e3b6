//! The simulator's rule and regression tests, one binary: each file under `tests/` named
//! below is one module here, so the dependency graph is linked once, not once per file.
//! The files keep their paths: `cargo test -p kacrab-sim --test rules network_rules::`
//! runs one. `simulator`, `sim_transactions` and `expiry_shorter_than_assumed` stay
//! binaries of their own (docs and scripts run them by name).

#[path = "../broker_model_rules.rs"]
mod broker_model_rules;
#[path = "../chaos_line.rs"]
mod chaos_line;
#[path = "../checker_rules.rs"]
mod checker_rules;
#[path = "../../../kacrab-broker-model/tests/common/mod.rs"]
mod common;
#[path = "../frontend.rs"]
mod frontend;
#[path = "../metadata_rules.rs"]
mod metadata_rules;
#[path = "../network_rules.rs"]
mod network_rules;
#[path = "../opening_partition.rs"]
mod opening_partition;
#[path = "../oracle_rules.rs"]
mod oracle_rules;
#[path = "../replication_rules.rs"]
mod replication_rules;
#[path = "../session_connection_faults.rs"]
mod session_connection_faults;
#[path = "../session_rules.rs"]
mod session_rules;
#[path = "../silent_connections.rs"]
mod silent_connections;
#[path = "../txn_chaos_seed_regressions.rs"]
mod txn_chaos_seed_regressions;
