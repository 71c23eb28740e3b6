//! A property of the session over random latencies, jitter, split frames, connection
//! resets, lost and dropped answers, leader moves, sends and flushes: every send gets
//! exactly one completion, every flush and the close complete, the session's
//! invariants and the timer rule hold after every step (checked by the harness), and
//! the logs agree with the outcomes: an acknowledged record is in the log once, at its
//! offset, in send order; one failed and not possibly written is absent.
//!
//! `KACRAB_SIM_CASES` sets the number of cases (default 64).

mod pair;

use std::collections::BTreeMap;
use std::time::Duration;

use kacrab_driver::{Completion, OpId, SendId};
use pair::{Cluster, Pair, Rng, Verdict};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Send { partition: i32 },
    Advance { ms: u64 },
    Reset { pick: usize },
    Flush,
    MoveLeader { partition: i32, to: i32 },
    Crash { node: i32 },
    Restart { node: i32 },
}

fn op(partitions: i32, brokers: i32) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..partitions).prop_map(|partition| Op::Send { partition }),
        3 => prop_oneof![0..40u64, 0..400u64].prop_map(|ms| Op::Advance { ms }),
        1 => any::<usize>().prop_map(|pick| Op::Reset { pick }),
        1 => Just(Op::Flush),
        1 => (0..partitions, 0..brokers).prop_map(|(partition, to)| Op::MoveLeader { partition, to }),
        1 => (0..brokers).prop_map(|node| Op::Crash { node }),
        1 => (0..brokers).prop_map(|node| Op::Restart { node }),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    brokers: i32,
    partitions: i32,
    latency_ms: u64,
    jitter_ms: u64,
    split: bool,
    /// Per mille of requests that meet a fault (answer lost, reset before or after
    /// applying, answer delayed).
    fault_per_mille: u64,
    /// Per mille of connects refused, and left hanging.
    connect_faults: (u64, u64),
    /// How the test ends.
    end: End,
    ops: Vec<Op>,
}

#[derive(Clone, Copy, Debug)]
enum End {
    /// Every broker restarts, every send settles, then `close(None)`.
    Settle,
    /// `close(timeout)` right after the last op.
    CloseWithin(u64),
    /// `abort()` right after the last op.
    Abort,
}

fn case() -> impl Strategy<Value = Case> {
    (1..=3i32, 1..=4i32).prop_flat_map(|(brokers, partitions)| {
        (
            any::<u64>(),
            0..10u64,
            0..10u64,
            any::<bool>(),
            0..150u64,
            (0..100u64, 0..50u64),
            prop_oneof![
                4 => Just(End::Settle),
                1 => (0..3000u64).prop_map(End::CloseWithin),
                1 => Just(End::Abort),
            ],
            prop::collection::vec(op(partitions, brokers), 1..60),
        )
            .prop_map(
                move |(
                    seed,
                    latency_ms,
                    jitter_ms,
                    split,
                    fault_per_mille,
                    connect_faults,
                    end,
                    ops,
                )| Case {
                    seed,
                    brokers,
                    partitions,
                    latency_ms,
                    jitter_ms,
                    split,
                    fault_per_mille,
                    connect_faults,
                    end,
                    ops,
                },
            )
    })
}

fn run(case: &Case) {
    let cluster = Cluster::new(case.brokers).with_topic("t", case.partitions);
    let bootstrap: Vec<String> = cluster.brokers.values().map(|b| b.addr.clone()).collect();
    let bootstrap = bootstrap.join(",");
    let mut p = Pair::new(
        cluster,
        &[
            ("bootstrap.servers", &bootstrap),
            ("request.timeout.ms", "1000"),
            ("delivery.timeout.ms", "20000"),
            ("retry.backoff.ms", "20"),
            ("linger.ms", "2"),
        ],
    );
    p.rng = Rng::new(case.seed);
    p.latency = Duration::from_millis(case.latency_ms);
    p.jitter = Duration::from_millis(case.jitter_ms);
    p.split_responses = case.split;
    p.connect_faults = case.connect_faults;
    let mut faults = Rng::new(case.seed ^ 0x5eed);
    let rate = case.fault_per_mille;
    p.hook(move |_, _| {
        if faults.below(1000) >= rate {
            return None;
        }
        Some(match faults.below(4) {
            0 => Verdict::ApplyAndIgnore,
            1 => Verdict::ApplyThenReset,
            2 => Verdict::Reset,
            _ => Verdict::Delay(Duration::from_millis(faults.below(1500))),
        })
    });

    let mut sent: BTreeMap<SendId, (i32, String)> = BTreeMap::new();
    let mut flushes: Vec<OpId> = Vec::new();
    for (i, op) in case.ops.iter().enumerate() {
        match *op {
            Op::Send { partition } => {
                let value = format!("v{i}");
                let id = p.send("t", partition, &value);
                sent.insert(id, (partition, value));
            }
            Op::Advance { ms } => p.run_for(Duration::from_millis(ms)),
            Op::Reset { pick } => {
                let links = p.links();
                if !links.is_empty() {
                    p.reset(links[pick % links.len()].0);
                }
            }
            Op::Flush => flushes.push(p.flush()),
            Op::MoveLeader { partition, to } => p.cluster.move_leader("t", partition, to),
            Op::Crash { node } => p.crash(node),
            Op::Restart { node } => p.restart(node),
        }
    }
    let close = match case.end {
        End::Settle => {
            for node in 0..case.brokers {
                p.restart(node);
            }
            p.settle(Duration::from_secs(120));
            p.close(None)
        }
        End::CloseWithin(ms) => p.close(Some(Duration::from_millis(ms))),
        End::Abort => {
            p.session.abort(p.now);
            p.pump();
            p.close(None)
        }
    };
    assert!(
        p.run_until(Duration::from_secs(120), |p| p.session.is_finished()),
        "the session did not finish"
    );
    assert!(p.op(close).is_some(), "the close completed");
    p.assert_every_ticket_ended();
    for f in &flushes {
        assert!(
            matches!(p.op(*f), Some((_, Completion::Flushed { .. }))),
            "{f:?} completed"
        );
    }

    // The logs against the outcomes.
    let mut in_log: BTreeMap<String, (i32, i64)> = BTreeMap::new();
    for partition in 0..case.partitions {
        let log = &p.cluster.partition("t", partition).log;
        for r in log {
            let v = String::from_utf8(r.value.clone().unwrap_or_default().to_vec()).unwrap();
            let previous = in_log.insert(v.clone(), (partition, r.offset));
            assert!(previous.is_none(), "{v} is in the log twice");
        }
    }
    let mut acked_by_partition: BTreeMap<i32, Vec<(SendId, i64)>> = BTreeMap::new();
    for (id, (partition, value)) in &sent {
        match p.outcome(*id).expect("an outcome") {
            Ok(meta) => {
                let offset = meta.offset.expect("an offset");
                assert_eq!(meta.partition, *partition);
                assert_eq!(
                    in_log.get(value),
                    Some(&(*partition, offset)),
                    "{value} acknowledged at {offset}"
                );
                acked_by_partition
                    .entry(*partition)
                    .or_default()
                    .push((*id, offset));
            }
            Err(e) if !e.possibly_written() => {
                assert!(
                    !in_log.contains_key(value),
                    "{value} failed unwritten: {e:?}"
                );
            }
            Err(_) => {}
        }
    }
    if std::env::var_os("PAIR_STATS").is_some() {
        let acked: usize = acked_by_partition.values().map(Vec::len).sum();
        eprintln!(
            "sent {} acked {acked} closes {} resets {} requests {} end {:?}",
            sent.len(),
            p.closes.len(),
            p.resets.len(),
            p.cluster.seen.len(),
            case.end
        );
    }
    for (partition, acked) in acked_by_partition {
        assert!(
            acked.windows(2).all(|w| w[0].1 < w[1].1),
            "partition {partition}: acknowledged records in send order: {acked:?}"
        );
    }
    assert_eq!(
        in_log.len(),
        sent.len()
            - (sent
                .keys()
                .filter(|id| p.outcome(**id).unwrap().is_err())
                .count())
            + sent
                .iter()
                .filter(|(id, (_, v))| p.outcome(**id).unwrap().is_err() && in_log.contains_key(v))
                .count(),
        "the log holds exactly the acknowledged records and possibly-written failures"
    );
}

fn cases() -> u32 {
    std::env::var("KACRAB_SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_send_gets_exactly_one_completion_and_the_log_agrees(case in case()) {
        run(&case);
    }
}
