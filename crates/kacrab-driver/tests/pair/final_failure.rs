//! What every final connection failure (TLS or SASL) must look like from the session,
//! checked in one place for every security test.

use std::time::Duration;

use kacrab_driver::{Completion, ConnectError, ProduceError};

use super::Pair;

const SECOND: Duration = Duration::from_secs(1);

impl Pair {
    /// The session's one `ConnectionFailed` (asserts there is exactly one).
    pub fn the_connection_failure(&self) -> ConnectError {
        let failures: Vec<_> = self
            .completions
            .iter()
            .filter_map(|(_, c)| match c {
                Completion::ConnectionFailed { error } => Some(error.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(failures.len(), 1, "exactly one failure: {failures:?}");
        failures[0].clone()
    }

    /// Sends one record toward a listener that refuses the session (broker `b0:9092`)
    /// and checks the failure is final: one connection attempt in 30 s; the record
    /// failed and certainly not written, and nothing in the log; the session finished,
    /// with one `ConnectionFailed` naming the broker, reported before the record's
    /// outcome and kept for drivers. Returns that failure.
    pub fn fails_finally(&mut self) -> ConnectError {
        let id = self.send("t", 0, "never");
        self.run_for(30 * SECOND);
        assert_eq!(self.connects.len(), 1, "no reconnect: {:?}", self.connects);
        match self.outcome(id) {
            Some(Err(e @ ProduceError::Connection { .. })) => {
                assert!(!e.possibly_written(), "{e}");
            }
            other => panic!("the record failed: {other:?}"),
        }
        assert!(self.cluster.values("t", 0).is_empty());
        assert!(self.session.is_finished());
        let error = self.the_connection_failure();
        assert_eq!(error.broker, "b0:9092");
        assert_eq!(
            self.session.connection_failure(),
            Some(&error),
            "kept for drivers"
        );
        let failed = self.position(|c| matches!(c, Completion::ConnectionFailed { .. }));
        let record = self.position(|c| matches!(c, Completion::Record { .. }));
        assert!(failed.unwrap() < record.unwrap(), "the cause comes first");
        // A send after the failure is refused with the cause, not only "closed" (Java's
        // `KafkaProducer.send` rethrows the AuthenticationException).
        let late = self.send("t", 0, "late");
        match self.outcome(late) {
            Some(Err(ProduceError::Connection {
                error: cause,
                possibly_written: false,
            })) => assert_eq!(cause, &error),
            other => panic!("a send after the failure: {other:?}"),
        }
        error
    }
}
