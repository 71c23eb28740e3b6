//! The shared adapter test suite's FakeBroker scenarios (leader moves, crash and restart
//! mid-burst, apply-then-disconnect, injected errors, delays past request.timeout.ms, the
//! lying proxy), run against the blocking producer. FakeBroker runs on the testkit's own
//! Tokio runtime; the producer under test uses none.

mod support;

// Kacrab acknowledges every record under injected sequence errors (Java's rule), so the
// strict variants run too.
kacrab_testkit::fake_broker_tests!(support::factory; out_of_order_sequence_all_acked, unknown_producer_id_all_acked);

// Transactions, version 1 and 2: commit, abort, fencing, read_committed.
kacrab_testkit::fake_broker_txn_tests!(support::factory);

// Link faults (issue 18): blackholes, refused dials, slow links; all acknowledged once healed.
kacrab_testkit::fake_broker_link_tests!(support::factory);
