//! The schedule's rules, one test each (Kafka's `ClientTelemetryReporter` and
//! `ClientTelemetryUtils`).

use super::*;

const MS: fn(u64) -> Duration = Duration::from_millis;
const CONN: ConnId = ConnId(7);

fn answer(requested: &[&str], interval_ms: i32) -> GetTelemetrySubscriptionsResponse {
    kacrab_wire::message!(GetTelemetrySubscriptionsResponse {
        client_instance_id: [0x80, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        subscription_id: 5,
        push_interval_ms: interval_ms,
        delta_temporality: true,
        requested_metrics: requested.iter().map(|s| (*s).to_owned()).collect(),
    })
}

fn pushed(code: i16) -> PushTelemetryResponse {
    kacrab_wire::message!(PushTelemetryResponse { error_code: code })
}

/// Subscribed at `t0` to every metric, with a 1 s interval: the first push is due.
fn subscribed(t0: Timestamp) -> Telemetry {
    let mut t = Telemetry::new(true, MS(100), t0, 0);
    assert_eq!(
        t.due(t0),
        Some(Due::Subscription([0; 16])),
        "a zero id first"
    );
    t.sent(Due::Subscription([0; 16]), CONN, 1);
    t.subscribed(1, &answer(&["*"], 1000), t0);
    t.assert_invariants();
    t
}

#[test]
fn the_first_push_is_spread_over_half_to_one_and_a_half_intervals_then_every_interval() {
    let t0 = Timestamp::ZERO;
    let mut t = subscribed(t0);
    // First id byte 0x80: 0.5 + 0.5 = 1.0 interval.
    assert_eq!(t.poll_timeout(), Some(t0 + MS(1000)));
    assert_eq!(t.due(t0 + MS(999)), None);
    let at = t0 + MS(1000);
    assert_eq!(t.due(at), Some(Due::Push { terminating: false }));
    t.sent(Due::Push { terminating: false }, CONN, 2);
    assert_eq!(
        t.poll_timeout(),
        None,
        "nothing waits on the clock while in flight"
    );
    t.pushed(2, &pushed(0), at + MS(5));
    assert_eq!(t.poll_timeout(), Some(at + MS(1005)));
    let low = Subscription {
        client_instance_id: [0; 16],
        subscription_id: 1,
        push_interval: MS(1000),
        delta_temporality: true,
        requested: Some(vec!["*".into()]),
    };
    assert_eq!(first_push_delay(&low), MS(500));
    let high = Subscription {
        client_instance_id: [0xff; 16],
        ..low
    };
    assert_eq!(first_push_delay(&high), MS(1499));
}

#[test]
fn a_subscription_asking_for_nothing_is_fetched_again_after_its_interval_with_the_id_kept() {
    let t0 = Timestamp::ZERO;
    let mut t = Telemetry::new(true, MS(100), t0, 0);
    t.sent(Due::Subscription([0; 16]), CONN, 1);
    t.subscribed(1, &answer(&[], 2000), t0);
    assert_eq!(t.due(t0 + MS(1999)), None);
    let id = answer(&[], 0).client_instance_id;
    assert_eq!(t.due(t0 + MS(2000)), Some(Due::Subscription(id)));
}

#[test]
fn push_errors_refetch_now_later_or_stop_for_good() {
    let t0 = Timestamp::ZERO;
    for (code, next) in [
        (UNKNOWN_SUBSCRIPTION_ID, Some(MS(0))),
        (UNSUPPORTED_COMPRESSION_TYPE, Some(MS(0))),
        (TELEMETRY_TOO_LARGE, Some(MS(1000))),
        (THROTTLING_QUOTA_EXCEEDED, Some(MS(1000))),
        (87, None), // INVALID_RECORD
        (42, None), // INVALID_REQUEST
        (35, None), // UNSUPPORTED_VERSION
        (3, None),
    ] {
        let mut t = subscribed(t0);
        t.sent(Due::Push { terminating: false }, CONN, 2);
        t.pushed(2, &pushed(code), t0);
        match next {
            Some(wait) => {
                assert!(
                    matches!(t.due(t0 + wait), Some(Due::Subscription(_))),
                    "code {code}: the subscription is fetched again after {wait:?}"
                );
                if wait > MS(0) {
                    assert_eq!(t.due(t0 + (wait - MS(1))), None, "code {code}: not before");
                }
                assert!(!t.is_done());
            }
            None => {
                assert!(t.is_done(), "code {code} stops telemetry");
                assert_eq!(t.take_stopped(), Some(Stopped::Refused(code)));
                assert_eq!(t.take_stopped(), None, "the cause is taken once");
            }
        }
        if next.is_some() {
            assert_eq!(
                t.take_stopped(),
                None,
                "code {code} does not stop telemetry"
            );
        }
    }
}

#[test]
fn a_request_lost_with_its_connection_asks_the_subscription_again_after_an_interval() {
    let t0 = Timestamp::ZERO;
    let mut t = subscribed(t0);
    t.sent(Due::Push { terminating: false }, CONN, 2);
    t.conn_gone(ConnId(99), t0);
    assert!(t.owns(2), "another connection's loss changes nothing");
    t.conn_gone(CONN, t0);
    assert_eq!(t.sticky(), None);
    assert_eq!(t.due(t0 + MS(999)), None, "not before an interval");
    assert!(matches!(t.due(t0 + MS(1000)), Some(Due::Subscription(id)) if id != [0; 16]));
    t.pushed(2, &pushed(0), t0);
    assert!(
        matches!(t.due(t0 + MS(1000)), Some(Due::Subscription(_))),
        "a late answer to a lost request is ignored"
    );
}

#[test]
fn three_requests_lost_in_a_row_stop_telemetry_and_an_answer_resets_the_count() {
    let t0 = Timestamp::ZERO;
    let mut t = subscribed(t0);
    let mut tag = 10;
    let mut lose = |t: &mut Telemetry| {
        let due = t.due(Timestamp::from_millis(1_000_000)).expect("due");
        tag += 1;
        t.sent(due, CONN, tag);
        t.lost(tag, t0);
    };
    lose(&mut t);
    lose(&mut t);
    let due = t.due(Timestamp::from_millis(1_000_000)).unwrap();
    t.sent(due, CONN, 50);
    t.subscribed(50, &answer(&["*"], 1000), t0);
    lose(&mut t);
    lose(&mut t);
    assert!(!t.is_done(), "the answer reset the count");
    assert_eq!(t.take_stopped(), None);
    lose(&mut t);
    assert!(t.is_done(), "three in a row");
    assert_eq!(t.take_stopped(), Some(Stopped::Unanswered(3)));
}

#[test]
fn an_answer_with_a_zero_instance_id_stops_telemetry() {
    let t0 = Timestamp::ZERO;
    let mut t = Telemetry::new(true, MS(100), t0, 0);
    t.sent(Due::Subscription([0; 16]), CONN, 1);
    let mut zero = answer(&["*"], 1000);
    zero.client_instance_id = [0; 16];
    t.subscribed(1, &zero, t0);
    assert!(t.is_done());
    assert_eq!(t.take_stopped(), Some(Stopped::NoClientInstanceId));
}

#[test]
fn closing_sends_one_terminating_push_under_a_subscription_and_nothing_without_one() {
    let t0 = Timestamp::ZERO;
    let mut t = subscribed(t0);
    t.sent(Due::Push { terminating: false }, CONN, 2);
    t.close(Closing::Within(None), t0);
    assert_eq!(
        t.due(t0),
        Some(Due::Push { terminating: true }),
        "overtakes the push"
    );
    t.sent(Due::Push { terminating: true }, CONN, 3);
    t.pushed(2, &pushed(0), t0);
    assert!(!t.is_done(), "the overtaken push's answer is ignored");
    t.pushed(3, &pushed(0), t0);
    assert!(t.is_done());

    let mut fresh = Telemetry::new(true, MS(100), t0, 0);
    fresh.close(Closing::Within(None), t0);
    assert!(fresh.is_done(), "no subscription: nothing to push");

    let mut off = Telemetry::new(false, MS(100), t0, 0);
    assert_eq!((off.due(t0), off.poll_timeout()), (None, None));
    off.close(Closing::Within(None), t0);
    assert!(off.is_done());

    let mut waiting = subscribed(t0);
    let due = waiting.due(t0 + MS(1000));
    waiting.no_connection();
    assert_eq!(
        waiting.poll_timeout(),
        None,
        "no timer while no connection can carry it"
    );
    assert_eq!(
        waiting.due(t0 + MS(1000)),
        due,
        "still due at the next input"
    );

    let mut stranded = subscribed(t0);
    stranded.close(Closing::Within(None), t0);
    stranded.no_connection();
    assert!(stranded.is_done(), "no connection at close: given up");

    let mut resubscribing = subscribed(t0);
    resubscribing.sent(Due::Subscription([1; 16]), CONN, 4);
    resubscribing.close(Closing::Within(None), t0);
    assert_eq!(
        resubscribing.due(t0),
        Some(Due::Push { terminating: true }),
        "a subscription request in flight: pushed under the one held"
    );
}

/// A forced close sends nothing; a graceful one waits for its push until the close's
/// timeout or `request.timeout.ms` (here 100 ms), whichever comes first.
#[test]
fn a_forced_close_pushes_nothing_and_a_graceful_one_waits_a_bounded_time() {
    let t0 = Timestamp::ZERO;
    let mut forced = subscribed(t0);
    forced.close(Closing::Forced, t0);
    assert!(forced.is_done());
    assert_eq!(forced.due(t0), None);

    for (deadline, give_up) in [
        (None, MS(100)),
        (Some(MS(40)), MS(40)),
        (Some(MS(500)), MS(100)),
    ] {
        let mut t = subscribed(t0);
        t.close(Closing::Within(deadline.map(|d| t0 + d)), t0);
        t.sent(Due::Push { terminating: true }, CONN, 9);
        assert_eq!(t.poll_timeout(), Some(t0 + give_up), "{deadline:?}");
        t.expire(t0 + (give_up - MS(1)));
        assert!(!t.is_done());
        t.expire(t0 + give_up);
        assert!(t.is_done(), "{deadline:?}: given up at {give_up:?}");
    }
    let mut late = subscribed(t0);
    late.close(Closing::Within(Some(t0)), t0);
    assert!(late.is_done(), "no time left: nothing is sent");
}
