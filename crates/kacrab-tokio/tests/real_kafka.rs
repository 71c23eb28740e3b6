//! The testkit's real-Kafka scenarios against the Tokio producer. Each skips (and passes)
//! unless its environment variable (`KACRAB_KAFKA_BOOTSTRAP`, `KACRAB_KAFKA_CLUSTER`)
//! names a running broker; see docs/real-kafka.md.

mod support;

kacrab_testkit::real_kafka_tests!(support::factory);
