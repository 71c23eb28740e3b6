//! A core request queued on a connection that is still negotiating, and timed out by
//! the core (`request.timeout.ms`) before the connection became ready: the session must
//! neither report it failed a second time nor write it later.

use std::time::Duration;

use kacrab_driver::{CloseReason, ConnId, Output, ProducerRecord, Session, SessionConfig};
use kacrab_idempotence::Timestamp;

fn session(request_timeout_ms: &str) -> Session {
    let config = SessionConfig::from_properties([
        ("bootstrap.servers", "broker:9092"),
        ("request.timeout.ms", request_timeout_ms),
        ("linger.ms", "0"),
    ])
    .expect("valid configuration");
    Session::new(config, Timestamp::ZERO, 0)
}

fn at(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

fn outputs(s: &mut Session, now: Timestamp) -> Vec<Output> {
    std::iter::from_fn(|| s.poll_output(now)).collect()
}

fn connect(outputs: &[Output]) -> Option<ConnId> {
    outputs.iter().find_map(|o| match o {
        Output::Connect { conn, .. } => Some(*conn),
        _ => None,
    })
}

/// A broker that accepts the connection but never answers ApiVersions: the core's first
/// request waits queued behind the negotiation, and the core and the session time out
/// at the same instant. The connection is closed for the timeout, once.
#[test]
fn a_broker_silent_during_negotiation_is_given_up_without_a_second_report() {
    let mut s = session("1000");
    let _ = s.send(ProducerRecord::new("t", 0, "v"), at(0));
    let conn = connect(&outputs(&mut s, at(0))).expect("a connection is opened");
    s.handle_connected(conn, at(0));
    let hello = outputs(&mut s, at(0));
    assert!(
        hello
            .iter()
            .any(|o| matches!(o, Output::Transmit { conn: c, .. } if *c == conn)),
        "ApiVersions is written: {hello:?}"
    );
    s.assert_invariants();
    let due = s.poll_timeout().expect("a deadline");
    assert!(due <= at(1000), "{due:?}");
    s.handle_timeout(at(1000));
    let after = outputs(&mut s, at(1000));
    assert!(
        after.iter().any(|o| matches!(
            o,
            Output::Close { conn: c, reason: CloseReason::RequestTimeout } if *c == conn
        )),
        "the mute connection is closed: {after:?}"
    );
    s.assert_invariants();
}
