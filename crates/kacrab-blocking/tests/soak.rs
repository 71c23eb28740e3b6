//! The 30-minute soak (issue 18) for the blocking producer: constant load on a real
//! three-node cluster under a mild fault schedule, one row per minute of throughput,
//! latency, resident memory, sockets and descriptors, then a flatness verdict and the
//! exactly-once check by Kafka's console consumer. `#[ignore]`d; see docs/real-kafka.md:
//! `cargo test -p kacrab-blocking --test soak -- --ignored --nocapture` with
//! `KACRAB_KAFKA_CLUSTER` set (`KACRAB_SOAK_MINUTES`, `KACRAB_JEPSEN_SEED`).

mod support;

kacrab_testkit::real_kafka_soak_tests!(support::factory);
