//! The session's tests, one binary: most run it against the byte-level model cluster
//! (`pair`: Kafka's rules from `kacrab-broker-model`, answered over real frames on
//! virtual time). Each file under `tests/` is one module here, so the harness and the
//! dependency graph are compiled and linked once, not once per file (about two minutes
//! of every cold CI build on a two-core machine). The files keep their paths: a test is
//! `cargo test -p kacrab-driver --test session <file>::<test>`.
//!
//! The suites that need a feature (`session_tracing`, `session_metrics_publish`,
//! `session_opentelemetry`) and the mio example driver's adapter suite (`mio_adapter`)
//! stay binaries of their own: CI runs them by name.

#[path = "../pair/mod.rs"]
mod pair;

#[path = "../java_properties.rs"]
mod java_properties;
#[path = "../red_session.rs"]
mod red_session;
#[path = "../session_acks_zero.rs"]
mod session_acks_zero;
#[path = "../session_admission.rs"]
mod session_admission;
#[path = "../session_answers.rs"]
mod session_answers;
#[path = "../session_backoff.rs"]
mod session_backoff;
#[path = "../session_metadata.rs"]
mod session_metadata;
#[path = "../session_metrics.rs"]
mod session_metrics;
#[path = "../session_network.rs"]
mod session_network;
#[path = "../session_partitioner.rs"]
mod session_partitioner;
#[path = "../session_props.rs"]
mod session_props;
#[path = "../session_request_lifecycle.rs"]
mod session_request_lifecycle;
#[path = "../session_sasl.rs"]
mod session_sasl;
#[path = "../session_telemetry.rs"]
mod session_telemetry;
#[path = "../session_timers.rs"]
mod session_timers;
#[path = "../session_tls.rs"]
mod session_tls;
#[path = "../session_tls_stores.rs"]
mod session_tls_stores;
#[path = "../session_topic_recreated.rs"]
mod session_topic_recreated;
#[path = "../session_txn.rs"]
mod session_txn;
#[path = "../timed_out_while_queued.rs"]
mod timed_out_while_queued;
