//! The shared adapter test suite's real-Kafka scenarios (exactly-once burst, leader
//! kill, lying proxy), run against the blocking producer. Each skips with a message
//! unless KACRAB_KAFKA_BOOTSTRAP (single broker) or KACRAB_KAFKA_CLUSTER (three nodes)
//! names a running Kafka; see docs/real-kafka.md and `scripts/kafka.sh`.

mod support;

kacrab_testkit::real_kafka_tests!(support::factory);

// A 40 s blackhole in the kernel (iptables, root only) under Kafka's default timeouts.
kacrab_testkit::real_kafka_kernel_tests!(support::factory);
