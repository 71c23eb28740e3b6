//! The shared adapter test suite's FakeBroker scenarios (leader moves, crash and restart
//! mid-burst, apply-then-disconnect, injected errors, delays past request.timeout.ms, the
//! lying proxy), run against the blocking producer. FakeBroker runs on the testkit's own
//! Tokio runtime; the producer under test uses none.

mod support;

kacrab_testkit::fake_broker_tests!(support::factory);
