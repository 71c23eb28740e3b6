//! Exactly once on a real three-node Kafka cluster under partitions, pauses and kills
//! (issue 18), for the blocking producer: the testkit's seeded fault schedule, then Kafka's
//! console consumer at both isolation levels. Skips unless `KACRAB_KAFKA_CLUSTER` is set
//! (`scripts/kafka.sh start-cluster`); `KACRAB_JEPSEN_SEED` repeats a schedule.

mod support;

kacrab_testkit::real_kafka_jepsen_tests!(support::factory);
