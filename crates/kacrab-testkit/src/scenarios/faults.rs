//! The scenarios themselves: the baseline, then one fault each (leader moves, crashes,
//! the broker's retriable and sequence errors, throttling, timeouts, a silent broker,
//! the lying proxy), all on the harness of the parent module.

use super::*;

/// No faults: the baseline every other scenario is compared with.
pub fn smoke(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 0,
        ..Shape::default()
    };
    run_fake("smoke", factory, shape, no_setup, |_, _| Ok(Step::Continue))
}

/// Leader moves mid-burst: every 8 chunks every partition's leader moves to the next
/// node (epoch bumped, producer state moves with it), and once a leader epoch is bumped
/// in place. Stale-leader Produce requests get NOT_LEADER_OR_FOLLOWER with the new
/// leader named (KIP-951).
pub fn leader_moves(factory: Factory) -> Result<Report, String> {
    run_fake(
        "leader_moves",
        factory,
        Shape::default(),
        no_setup,
        |ctx, k| {
            if k % 8 == 4 {
                let moved = ctx.cluster.rotate_leaders(&ctx.topic, ctx.partitions, &[]);
                ctx.event(moved as u64);
            }
            if k == 30 {
                for p in 0..ctx.partitions {
                    ctx.cluster.bump_leader_epoch(&ctx.topic, p);
                }
                ctx.event(1);
            }
            Ok(Step::Continue)
        },
    )
}

/// Brokers crash mid-burst (their connections drop, new ones are closed at once) and
/// restart ~150 ms later with their log and state: node 1 at chunk 10 (back at 25), then
/// node 0 at chunk 30 (back at 45). Their partitions keep them as leader, so the producer
/// must wait and reconnect; a request being served when the crash hits may be written
/// with its response lost.
pub fn crash_restart(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        pause: Duration::from_millis(10),
        min_faults: 4,
        ..Shape::default()
    };
    run_fake("crash_restart", factory, shape, no_setup, |ctx, k| {
        let c = &ctx.cluster;
        match k {
            10 => c.crash(1),
            25 => c.restart(1),
            30 => c.crash(0),
            45 => c.restart(0),
            _ => return Ok(Step::Continue),
        }
        ctx.event(1);
        Ok(Step::Continue)
    })
}

/// A broker crashes mid-burst and the controller moves its partitions to the survivors
/// shortly after; it then restarts and leadership moves back (preferred-leader election).
pub fn crash_failover(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        pause: Duration::from_millis(10),
        min_faults: 3,
        ..Shape::default()
    };
    let moved = Arc::new(Mutex::new(Vec::new()));
    run_fake("crash_failover", factory, shape, no_setup, move |ctx, k| {
        let c = &ctx.cluster;
        match k {
            15 => {
                c.crash(2);
                ctx.event(1);
            }
            20 => {
                *moved.lock().unwrap() = c.move_leaders_off(&ctx.topic, ctx.partitions, 2, &[]);
                ctx.event(1);
            }
            40 => {
                c.restart(2);
                ctx.event(1);
            }
            45 => {
                for p in moved.lock().unwrap().iter() {
                    c.set_leader(&ctx.topic, *p, 2)?;
                }
                ctx.event(1);
            }
            _ => {}
        }
        Ok(Step::Continue)
    })
}

/// "Apply then disconnect": every 4th Produce from chunk 3 on (60 at most) is written,
/// then the broker drops the connection without answering. Retries must be deduplicated.
pub fn apply_then_disconnect(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    let control = Control::ApplyThen(Box::new(Control::Disconnect));
    produce_fault(
        "apply_then_disconnect",
        factory,
        shape,
        3,
        Trigger::every(4).times(60),
        control,
    )
}

/// Injected NOT_LEADER_OR_FOLLOWER (6) on every 4th Produce (40 at most), not applied,
/// with no leader named: the producer refreshes metadata and retries.
pub fn not_leader_or_follower(factory: Factory) -> Result<Report, String> {
    let c = Control::Error(ErrorCode::NotLeaderForPartition);
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    produce_fault(
        "not_leader_or_follower",
        factory,
        shape,
        3,
        Trigger::every(4).times(40),
        c,
    )
}

/// Injected NOT_ENOUGH_REPLICAS (19) on every 4th Produce (40 at most), not applied.
pub fn not_enough_replicas(factory: Factory) -> Result<Report, String> {
    let c = Control::Error(ErrorCode::NotEnoughReplicas);
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    produce_fault(
        "not_enough_replicas",
        factory,
        shape,
        3,
        Trigger::every(4).times(40),
        c,
    )
}

/// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) on every 4th Produce (40 at most), the way a
/// broker answers it: the batch was appended, then the error. The retry must be
/// deduplicated.
pub fn not_enough_replicas_after_append(factory: Factory) -> Result<Report, String> {
    let c = Control::ApplyThen(Box::new(Control::Error(
        ErrorCode::NotEnoughReplicasAfterAppend,
    )));
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    produce_fault(
        "not_enough_replicas_after_append",
        factory,
        shape,
        3,
        Trigger::every(4).times(40),
        c,
    )
}

/// Injected OUT_OF_ORDER_SEQUENCE_NUMBER (45) on every 6th Produce (20 at most), not
/// applied. A producer may fail the batch that got it and move to a new epoch (krafka
/// does), or retry it with an epoch bump (Java since KIP-360, and the kacrab core: see
/// [`out_of_order_sequence_all_acked`]). Either way: acknowledged records exactly once and
/// in order, and no failed record in the log.
pub fn out_of_order_sequence(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "out_of_order_sequence",
        factory,
        ErrorCode::OutOfOrderSequenceNumber,
        false,
    )
}

/// [`out_of_order_sequence`], and every send must be acknowledged: Java's idempotent
/// producer retries OUT_OF_ORDER_SEQUENCE_NUMBER (bumping the epoch when the batch was the
/// next in sequence) rather than failing records.
pub fn out_of_order_sequence_all_acked(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "out_of_order_sequence_all_acked",
        factory,
        ErrorCode::OutOfOrderSequenceNumber,
        true,
    )
}

/// Injected UNKNOWN_PRODUCER_ID (59) on every 6th Produce (20 at most), not applied, with
/// log_start_offset -1 (as FakeBroker writes it). As [`out_of_order_sequence`], failures
/// are allowed (see [`unknown_producer_id_all_acked`]) but must not be in the log.
pub fn unknown_producer_id(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "unknown_producer_id",
        factory,
        ErrorCode::UnknownProducerId,
        false,
    )
}

/// [`unknown_producer_id`], and every send must be acknowledged: Java retries
/// UNKNOWN_PRODUCER_ID when the response's log_start_offset is -1.
pub fn unknown_producer_id_all_acked(factory: Factory) -> Result<Report, String> {
    sequence_error(
        "unknown_producer_id_all_acked",
        factory,
        ErrorCode::UnknownProducerId,
        true,
    )
}

fn sequence_error(
    name: &'static str,
    factory: Factory,
    code: ErrorCode,
    all_acked: bool,
) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 3,
        all_acked,
        failed_unwritten: true,
        ..Shape::default()
    };
    produce_fault(
        name,
        factory,
        shape,
        3,
        Trigger::every(6).times(20),
        Control::Error(code),
    )
}

/// Throttling: from chunk 5 to chunk 25 every Produce response carries
/// `throttle_time_ms = 100` (KIP-219; the broker still answers at once). Notes how many
/// Produce requests arrived while throttled.
pub fn throttled(factory: Factory) -> Result<Report, String> {
    let during = Arc::new(Mutex::new(0usize));
    run_fake(
        "throttled",
        factory,
        Shape::default(),
        no_setup,
        move |ctx, k| {
            let c = &ctx.cluster;
            if k == 5 {
                c.set_throttle(ApiKey::Produce, Duration::from_millis(100));
                *during.lock().unwrap() = c.request_count(ApiKey::Produce);
                ctx.event(1);
            }
            if k == 25 {
                c.set_throttle(ApiKey::Produce, Duration::ZERO);
                let n = c.request_count(ApiKey::Produce) - *during.lock().unwrap();
                ctx.note(format!(
                    "{n} Produce requests answered with throttle_time_ms=100"
                ));
            }
            Ok(Step::Continue)
        },
    )
}

/// Responses later than `request.timeout.ms` (500 ms here; delivery.timeout.ms 30 s):
/// from chunk 3 on, a few Produce requests (every 10th, 4 at most) are held 800 ms and
/// then applied (the client gave up on them before the write), and a few (4 at most) are
/// applied at once and answered 800 ms later. The late duplicates must be deduplicated.
pub fn request_timeouts(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 2,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "30000"),
        ],
        ..Shape::default()
    };
    let late = Duration::from_millis(800);
    run_fake(
        "request_timeouts",
        factory,
        shape,
        no_setup,
        move |ctx, k| {
            if k == 3 {
                let c = &ctx.cluster;
                ctx.count(c.inject(
                    ApiKey::Produce,
                    Trigger::every(10).times(4),
                    Control::Delay(late),
                ));
                let applied = Control::ApplyThen(Box::new(Control::Delay(late)));
                ctx.count(c.inject(
                    ApiKey::Produce,
                    Trigger::every(10).after(5).times(4),
                    applied,
                ));
            }
            Ok(Step::Continue)
        },
    )
}

/// A broker that never answers (`request.timeout.ms` 500 ms): from chunk 3 on, a few
/// Produce requests (3 at most) are read and never answered nor applied, and a few more
/// (3 at most) are applied and never answered. Only the driver's timer gets the producer
/// past them: the core times the request out, the session closes the connection, the
/// retry goes out on a new one and the applied ones are deduplicated. A driver that never
/// calls `handle_timeout` hangs here until the scenario's deadline.
pub fn silent_broker(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 2,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "30000"),
        ],
        ..Shape::default()
    };
    run_fake("silent_broker", factory, shape, no_setup, move |ctx, k| {
        if k == 3 {
            let c = &ctx.cluster;
            ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::every(10).times(3),
                Control::Silence,
            ));
            ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::every(10).after(5).times(3),
                Control::ApplyThen(Box::new(Control::Silence)),
            ));
        }
        Ok(Step::Continue)
    })
}

/// The lying proxy in front of the cluster, from chunk 3 on: every 5th Produce is
/// forwarded and applied, then its response is dropped with the connection (40 at most).
pub fn proxy_drop_after_write(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    run_proxy("proxy_drop_after_write", factory, shape, |p, k| {
        if k != 3 {
            return Vec::new();
        }
        vec![p.inject(
            Some(ApiKey::Produce),
            Trigger::every(5).times(40),
            ProxyAction::DropResponse,
        )]
    })
}

/// The lying proxy, everything at once from chunk 3 on: Produce responses dropped after
/// the write, Produce responses cut mid-frame, Produce requests cut mid-frame, 5% of the
/// remaining responses of any API delayed 300 ms (seeded draw), and a few Metadata
/// responses dropped.
pub fn proxy_mixed(factory: Factory) -> Result<Report, String> {
    let shape = Shape {
        min_faults: 5,
        ..Shape::default()
    };
    run_proxy("proxy_mixed", factory, shape, |p, k| {
        if k != 3 {
            return Vec::new();
        }
        let produce = Some(ApiKey::Produce);
        let delay = ProxyAction::DelayResponse(Duration::from_millis(300));
        vec![
            p.inject(
                produce,
                Trigger::every(11).times(15),
                ProxyAction::DropResponse,
            ),
            p.inject(
                produce,
                Trigger::every(13).times(10),
                ProxyAction::CutResponse,
            ),
            p.inject(
                produce,
                Trigger::every(17).times(8),
                ProxyAction::CutRequest,
            ),
            p.inject(
                Some(ApiKey::Metadata),
                Trigger::every(2).times(3),
                ProxyAction::DropResponse,
            ),
            p.inject(None, Trigger::chance(0.05, 42).times(8), delay),
        ]
    })
}

/// A scenario through a [`Proxy`] in front of the cluster: `rules(proxy, k)` runs after
/// chunk `k` and returns the counts of the rules it added.
fn run_proxy(
    name: &'static str,
    factory: Factory,
    shape: Shape,
    rules: impl Fn(&Proxy, u64) -> Vec<Fired> + Send + 'static,
) -> Result<Report, String> {
    let setup = |ctx: &Ctx| {
        ctx.set_proxy(Proxy::start(&ctx.cluster.bootstrap())?);
        Ok(())
    };
    run_fake(name, factory, shape, setup, move |ctx, k| {
        if let Some(p) = ctx.proxy() {
            for f in rules(&p, k) {
                ctx.count(f);
            }
        }
        Ok(Step::Continue)
    })
}

/// Failures of both kinds, and the rule that tells them apart: from chunk 3, every 5th
/// Produce (4 at most) is refused with INVALID_RECORD (87, not retriable) before the
/// append, so its records fail *not possibly written*; from chunk 20, every Produce is
/// appended and never answered (the connection held) for 2.5 s, longer than
/// `delivery.timeout.ms` (1.5 s; `request.timeout.ms` 500 ms), so those records fail by
/// delivery timeout *possibly written*. The check then holds each failure to its flag: a
/// record reported not possibly written must be absent from the log. The scenario fails
/// unless both kinds of failure were reported.
pub fn failed_written_or_not(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "failed_written_or_not";
    let shape = Shape {
        all_acked: false,
        min_faults: 2,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "1500"),
        ],
        ..Shape::default()
    };
    let report = run_fake(NAME, factory, shape, no_setup, |ctx, k| {
        let c = &ctx.cluster;
        match k {
            3 => ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::every(5).times(4),
                Control::Error(ErrorCode::InvalidRecord),
            )),
            20 => ctx.count(c.inject(
                ApiKey::Produce,
                Trigger::always(),
                Control::ApplyThen(Box::new(Control::Silence)),
            )),
            21 => {
                std::thread::sleep(Duration::from_millis(2_500));
                c.clear_faults();
            }
            _ => {}
        }
        Ok(Step::Continue)
    })?;
    let s = &report.summary;
    let maybe_written = s.failed - s.failed_not_written;
    if s.failed_not_written == 0 || maybe_written == 0 {
        return Err(format!(
            "scenario {NAME}: {} sends failed not possibly written and {maybe_written} possibly \
             written; both kinds are needed or the scenario proved nothing\n  ({})",
            s.failed_not_written,
            report.notes.join("; ")
        ));
    }
    Ok(report)
}
