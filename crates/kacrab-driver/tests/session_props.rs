//! A property of the session over random latencies, jitter, split frames, connection
//! resets, lost and dropped answers, leader moves, sends and flushes: every send gets
//! exactly one completion, every flush and the close complete, the session's
//! invariants and the timer rule hold after every step (checked by the harness), and
//! the logs agree with the outcomes: an acknowledged record is in the log once, at its
//! offset, in send order; one failed and not possibly written is absent.
//!
//! `KACRAB_SIM_CASES` sets the number of cases (default 64).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::pair::{Cluster, Pair, Rng, Verdict};
use kacrab_driver::{Completion, OpId, SendId};
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
    /// The brokers' highest Produce and ApiVersions versions.
    produce_max: i16,
    api_versions_max: i16,
    /// `batch.size`, `max.in.flight.requests.per.connection`, `metadata.max.age.ms`.
    batch_size: u32,
    max_in_flight: u32,
    metadata_max_age_ms: u64,
    /// `buffer.memory` and `max.block.ms`.
    buffer_memory: u64,
    max_block_ms: u64,
    /// Drive it as a driver writing each connection from its own task would: Produce
    /// frames in ticket order.
    ticket_order: bool,
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
            (
                prop_oneof![Just(9i16), Just(11), Just(12)],
                2..=4i16,
                prop_oneof![Just(120u32), Just(16_384)],
                1..=5u32,
                prop_oneof![Just(300u64), Just(300_000)],
                // 100: the smallest buffer that holds one of these short records alone (a
                // larger record is refused as too large, `ensureValidRecordSize`).
                prop_oneof![Just(100u64), Just(300), Just(33_554_432)],
                prop_oneof![Just(0u64), Just(50), Just(60_000)],
            ),
            (
                prop::collection::vec(op(partitions, brokers), 1..60),
                any::<bool>(),
            ),
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
                    (
                        produce_max,
                        api_versions_max,
                        batch_size,
                        max_in_flight,
                        metadata_max_age_ms,
                        buffer_memory,
                        max_block_ms,
                    ),
                    (ops, ticket_order),
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
                    produce_max,
                    api_versions_max,
                    batch_size,
                    max_in_flight,
                    metadata_max_age_ms,
                    buffer_memory,
                    max_block_ms,
                    ticket_order,
                    ops,
                },
            )
    })
}

fn run(case: &Case) {
    let mut cluster = Cluster::new(case.brokers).with_topic("t", case.partitions);
    for b in cluster.brokers.values_mut() {
        for (key, _, max) in &mut b.api_versions {
            match *key {
                0 => *max = case.produce_max,
                18 => *max = case.api_versions_max,
                _ => {}
            }
        }
    }
    let batch_size = case.batch_size.to_string();
    let max_in_flight = case.max_in_flight.to_string();
    let metadata_max_age = case.metadata_max_age_ms.to_string();
    let buffer_memory = case.buffer_memory.to_string();
    let max_block = case.max_block_ms.to_string();
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
            ("batch.size", &batch_size),
            ("max.in.flight.requests.per.connection", &max_in_flight),
            ("metadata.max.age.ms", &metadata_max_age),
            ("buffer.memory", &buffer_memory),
            ("max.block.ms", &max_block),
        ],
    );
    p.rng = Rng::new(case.seed);
    p.latency = Duration::from_millis(case.latency_ms);
    p.jitter = Duration::from_millis(case.jitter_ms);
    p.split_responses = case.split;
    p.connect_faults = case.connect_faults;
    p.ticket_order = case.ticket_order;
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
    // Each flush, with the sends made before it.
    let mut flushes: Vec<(OpId, Vec<SendId>)> = Vec::new();
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
            Op::Flush => {
                let before = sent.keys().copied().collect();
                flushes.push((p.flush(), before));
            }
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
    for (f, before) in &flushes {
        let flushed = p
            .position(|c| matches!(c, Completion::Flushed { op } if op == f))
            .unwrap_or_else(|| panic!("{f:?} completed"));
        for id in before {
            let done = p
                .position(|c| matches!(c, Completion::Record { id: i, .. } if i == id))
                .expect("an outcome");
            assert!(
                done < flushed,
                "{f:?} completed before {id:?}, sent before it"
            );
        }
    }

    // The logs against the outcomes.
    let mut in_log: BTreeMap<String, (i32, i64)> = BTreeMap::new();
    for partition in 0..case.partitions {
        for r in p.cluster.partition("t", partition).log() {
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
            "sent {} acked {acked} closes {} resets {} requests {} end {:?} ticket_order {}",
            sent.len(),
            p.closes.len(),
            p.resets.len(),
            p.cluster.seen.len(),
            case.end,
            case.ticket_order
        );
    }
    // Completions of one partition come in response order, which is send order except
    // when the answer to an earlier batch was lost and its retry is confirmed as a
    // duplicate after a later batch (sent to a new leader) was acknowledged: see
    // docs/design.md, "Completion order within a partition". The log order, checked
    // next, is always send order.
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

#[derive(Clone, Debug)]
struct TxnCase {
    seed: u64,
    brokers: i32,
    tv2: bool,
    latency_ms: u64,
    fault_per_mille: u64,
    /// Per transaction: the partitions of its records, and whether it commits.
    txns: Vec<(Vec<i32>, bool)>,
    /// Stop in the middle of transaction `.0`, after its sends: `abort()` if `.1`, else
    /// `close(.2 ms)`.
    stop: Option<(usize, bool, u64)>,
    /// `buffer.memory` (1: every send but one waits in the backlog).
    buffer_memory: u64,
}

fn txn_case() -> impl Strategy<Value = TxnCase> {
    (
        any::<u64>(),
        1..=3i32,
        any::<bool>(),
        0..10u64,
        0..120u64,
        prop::collection::vec((prop::collection::vec(0..3i32, 0..8), any::<bool>()), 1..6),
        prop::option::weighted(0.3, (0..6usize, any::<bool>(), 0..2000u64)),
        // 100: see `Case`.
        prop_oneof![Just(100u64), Just(33_554_432)],
    )
        .prop_map(
            |(seed, brokers, tv2, latency_ms, fault_per_mille, txns, stop, buffer_memory)| {
                TxnCase {
                    seed,
                    brokers,
                    tv2,
                    latency_ms,
                    fault_per_mille,
                    txns,
                    stop,
                    buffer_memory,
                }
            },
        )
}

/// Transactions through the session under lost answers, resets and delays: every
/// transactional call and every send gets exactly one completion, the session's
/// invariants hold throughout, and acknowledged records are in the log once.
fn run_txn(case: &TxnCase) {
    let mut cluster = Cluster::new(case.brokers).with_topic("t", 3);
    cluster.coordinator = case.brokers - 1;
    if case.tv2 {
        for b in cluster.brokers.values_mut() {
            b.transaction_version = Some(2);
            b.features_epoch = 1;
        }
    }
    let buffer_memory = case.buffer_memory.to_string();
    let mut p = Pair::new(
        cluster,
        &[
            ("transactional.id", "tx"),
            ("buffer.memory", &buffer_memory),
            ("request.timeout.ms", "1000"),
            ("delivery.timeout.ms", "20000"),
            ("retry.backoff.ms", "20"),
        ],
    );
    p.rng = Rng::new(case.seed);
    p.latency = Duration::from_millis(case.latency_ms);
    // Half the cases as a driver that orders Produce frames by ticket.
    p.ticket_order = case.seed % 2 == 0;
    let mut faults = Rng::new(case.seed ^ 0x7e57);
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
    let limit = Duration::from_secs(120);
    let init = p.session.init_transactions(p.now);
    assert!(
        p.run_until(limit, |p| p.op(init).is_some()),
        "init completed"
    );
    let mut sent: BTreeMap<SendId, String> = BTreeMap::new();
    let mut ops = vec![init];
    let mut commits: Vec<(OpId, Vec<SendId>)> = Vec::new();
    for (i, (partitions, commit)) in case.txns.iter().enumerate() {
        let begin = p.session.begin_transaction(p.now);
        p.pump();
        ops.push(begin);
        let mut ids = Vec::new();
        for (j, &partition) in partitions.iter().enumerate() {
            let value = format!("t{i}-{j}");
            let id = p.send("t", partition, &value);
            ids.push(id);
            sent.insert(id, value);
        }
        if let Some((at, abort, ms)) = case.stop {
            if at == i {
                if abort {
                    p.session.abort(p.now);
                    p.pump();
                } else {
                    ops.push(p.close(Some(Duration::from_millis(ms))));
                }
                break;
            }
        }
        let end = if *commit {
            let op = p.session.commit_transaction(p.now);
            commits.push((op, ids));
            op
        } else {
            p.session.abort_transaction(p.now)
        };
        ops.push(end);
        assert!(
            p.run_until(limit, |p| p.op(end).is_some()),
            "{end:?} completed"
        );
    }
    p.settle(limit);
    let close = p.close(None);
    assert!(p.run_until(limit, |p| p.session.is_finished()), "finished");
    ops.push(close);
    for op in ops {
        assert!(p.op(op).is_some(), "{op:?} completed");
    }
    p.assert_every_ticket_ended();
    for (op, ids) in &commits {
        if let Some((_, Completion::Transaction { result: Ok(()), .. })) = p.op(*op) {
            for id in ids {
                assert!(
                    matches!(p.outcome(*id), Some(Ok(_))),
                    "{op:?} committed but {id:?} is {:?}",
                    p.outcome(*id)
                );
            }
        }
    }
    if std::env::var_os("PAIR_STATS").is_some() {
        let txn: Vec<String> = p
            .completions
            .iter()
            .filter_map(|(_, c)| match c {
                Completion::Transaction { kind, result, .. } => Some(format!(
                    "{kind:?}:{}",
                    if result.is_ok() { "ok" } else { "ERR" }
                )),
                _ => None,
            })
            .collect();
        let acked = sent
            .keys()
            .filter(|id| p.outcome(**id).unwrap().is_ok())
            .count();
        eprintln!(
            "tv2 {} sent {} acked {acked} end_txns {:?} {txn:?}",
            case.tv2,
            sent.len(),
            p.cluster.end_txns
        );
    }
    let mut in_log = BTreeMap::new();
    for partition in 0..3 {
        for r in p.cluster.partition("t", partition).log() {
            let v = String::from_utf8(r.value.clone().unwrap_or_default().to_vec()).unwrap();
            assert!(
                in_log.insert(v.clone(), (partition, r.offset)).is_none(),
                "{v} twice"
            );
        }
    }
    for (id, value) in &sent {
        match p.outcome(*id).expect("an outcome") {
            Ok(meta) => assert_eq!(
                in_log.get(value),
                Some(&(meta.partition, meta.offset.expect("an offset")))
            ),
            Err(e) if !e.possibly_written() => assert!(!in_log.contains_key(value), "{e:?}"),
            Err(_) => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn transactions_complete_every_call_once_under_network_faults(case in txn_case()) {
        run_txn(&case);
    }
}

/// A case the property found when the model broker answered later requests on a
/// connection while it sat on an earlier one (a lost answer on a live connection): the
/// later record was acknowledged first. Kafka cannot do that (it reads a connection's
/// next request only after answering the last), and the model now stalls such a
/// connection; the log keeps send order.
#[test]
fn acknowledgements_stay_in_send_order_when_a_broker_sits_on_a_request() {
    use Op::*;
    let ops = vec![
        Send { partition: 0 },
        Advance { ms: 2 },
        Send { partition: 0 },
        Advance { ms: 2 },
        Send { partition: 0 },
        Advance { ms: 2 },
        Send { partition: 0 },
        Advance { ms: 2 },
        Crash { node: 0 },
        Send { partition: 0 },
        Advance { ms: 284 },
        Send { partition: 0 },
        Restart { node: 0 },
        Advance { ms: 298 },
        Reset { pick: 0 },
        Send { partition: 0 },
        Advance { ms: 2 },
        Reset { pick: 0 },
        Send { partition: 0 },
        Advance { ms: 2 },
        Send { partition: 0 },
    ];
    run(&Case {
        seed: 7410033269058561809,
        brokers: 1,
        partitions: 1,
        latency_ms: 0,
        jitter_ms: 0,
        split: false,
        fault_per_mille: 25,
        connect_faults: (8, 0),
        end: End::Settle,
        produce_max: 9,
        api_versions_max: 3,
        batch_size: 120,
        max_in_flight: 2,
        metadata_max_age_ms: 300,
        buffer_memory: 300,
        max_block_ms: 0,
        ticket_order: false,
        ops,
    });
}

/// Found at 20,000 cases: the leader of partition 0 moves while a batch is in flight to
/// the old one, a connection resets, and the earlier batch's retry is confirmed after a
/// later batch was acknowledged. Every record is in the log once, in send order; only the
/// completions of the two batches come in response order.
#[test]
fn a_retried_batch_confirmed_after_a_later_one_keeps_the_log_in_send_order() {
    use Op::*;
    let ops = vec![
        Send { partition: 0 },
        Advance { ms: 32 },
        Send { partition: 0 },
        Advance { ms: 43 },
        MoveLeader {
            partition: 0,
            to: 1,
        },
        Send { partition: 1 },
        Advance { ms: 2 },
        Reset {
            pick: 491704636458010571,
        },
        Advance { ms: 7 },
        Send { partition: 0 },
        Send { partition: 0 },
    ];
    run(&Case {
        seed: 11261082192155310217,
        brokers: 3,
        partitions: 2,
        latency_ms: 3,
        jitter_ms: 5,
        split: false,
        fault_per_mille: 51,
        connect_faults: (0, 0),
        end: End::Settle,
        produce_max: 9,
        api_versions_max: 2,
        batch_size: 120,
        max_in_flight: 2,
        metadata_max_age_ms: 300,
        buffer_memory: 300,
        max_block_ms: 0,
        ticket_order: false,
        ops,
    });
}
