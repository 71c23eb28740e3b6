//! The testkit's FakeBroker scenarios against the Tokio producer: one `#[test]` each.
//! The producer runs on its own runtime inside the `TestProducer` impl; the scenarios run
//! on plain test threads.

mod support;

// Kacrab acknowledges every record under injected sequence errors (Java's rule), so the
// strict variants run too.
kacrab_testkit::fake_broker_tests!(
    support::factory;
    out_of_order_sequence_all_acked,
    unknown_producer_id_all_acked,
);

// Transactions, version 1 and 2: commit, abort, fencing, read_committed.
kacrab_testkit::fake_broker_txn_tests!(support::factory);
