//! The testkit's real-Kafka scenarios against the Tokio producer. Each skips (and passes)
//! unless its environment variable (`KACRAB_KAFKA_BOOTSTRAP`, `KACRAB_KAFKA_CLUSTER`)
//! names a running broker; see docs/real-kafka.md.

mod support;

kacrab_testkit::real_kafka_tests!(support::factory);

// A 40 s blackhole in the kernel (iptables, root only) under Kafka's default timeouts.
kacrab_testkit::real_kafka_kernel_tests!(support::factory);
