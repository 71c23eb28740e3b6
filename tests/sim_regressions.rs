//! Named regressions, each a scripted run of the cluster simulator (`kacrab-sim`):
//!
//! * the three correctness defects found in the previous client (kacrab 0.4), which
//!   this core must not have;
//! * the core bugs the simulator found, each minimised to a scripted sequence and
//!   `#[ignore]`d with the reason until the core is fixed; run them with
//!   `cargo test --test sim_regressions -- --ignored`.
//!
//! Every test checks the simulator's properties after every step (exactly once, in
//! order, each record resolved once, gap-free sequences on the wire, offsets as
//! logged, `possibly_written` honest) and prints the step trace when one fails.

use std::time::Duration;

use kacrab_idempotence::{NodeId, ProducerConfigBuilder, RecordId};
use kacrab_sim::{Cluster, FaultKind, Outcome, PartitionFault, Script, SimConfig, WireBatch};

/// A cluster of `brokers` brokers and `partitions` partitions of one topic, no random
/// fault, no jitter, every trace line kept.
fn cluster(
    brokers: u32,
    partitions: u32,
    setup: impl FnOnce(&mut SimConfig, &mut ProducerConfigBuilder),
) -> Cluster {
    let mut sim = SimConfig::new(42);
    sim.brokers = brokers;
    sim.partitions = partitions;
    sim.topics = 1;
    sim.jitter = Duration::ZERO;
    sim.latencies = Some(vec![Duration::from_millis(1); brokers as usize]);
    sim.trace = true;
    let mut producer = SimConfig::producer_config(42);
    producer.linger(Duration::ZERO);
    setup(&mut sim, &mut producer);
    sim.producer = producer.build().expect("valid producer configuration");
    Cluster::new(sim)
}

/// Panics with the violations and the whole trace unless every property held.
fn assert_clean(c: &mut Cluster) {
    c.final_check();
    if c.checker().violation_count() > 0 {
        let mut msg = String::from("properties violated:\n");
        for v in c.checker().violations() {
            msg.push_str(&format!("  {v}\n"));
        }
        msg.push_str("trace:\n");
        for line in c.trace() {
            msg.push_str(&format!("  {line}\n"));
        }
        panic!("{msg}");
    }
}

/// Partition `gp`'s log, as the send-order indexes of its records.
fn log_of(c: &Cluster, gp: usize) -> Vec<u32> {
    c.partition(gp)
        .state
        .records()
        .map(|r| {
            kacrab_sim::checker::decode_value(r.value.as_deref().unwrap_or_default())
                .map_or(u32::MAX, |(_, i)| i)
        })
        .collect()
}

/// The batches of partition `gp` that went on the wire.
fn wire_of(c: &Cluster, gp: usize) -> Vec<WireBatch> {
    c.checker()
        .wire_log()
        .iter()
        .filter(|w| w.partition == gp as u32)
        .cloned()
        .collect()
}

fn outcome(c: &Cluster, id: RecordId) -> Outcome {
    c.checker().record(id).expect("sent").outcome
}

fn send(c: &mut Cluster, gp: usize) -> RecordId {
    c.send(gp).expect("send accepted")
}

// ----------------------------------------------------------- kacrab 0.4's defects

/// kacrab 0.4's defect 1: **multi-broker dispatch ordering**.
/// The previous client released the enqueue turn after the first broker of a
/// multi-broker dispatch, so with one slow broker a later send to the other broker's
/// partition could go out before an earlier one (the p1 log came out [c, b]; on a cold
/// partition the whole group was re-stamped and p0 written twice).
///
/// p0 is led by broker 1 (300 ms away), p1 by broker 2 (1 ms away). a→p0 and b→p1 go
/// out together; 80 ms later c→p1. p1's log must be [b, c], p0's [a], each batch sent
/// once, with sequences in send order. Both cold (first sends of the producer) and
/// warm partitions.
#[test]
fn multi_broker_dispatch_keeps_send_order() {
    for warm in [false, true] {
        let mut c = cluster(2, 2, |sim, _| {
            sim.leaders = Some(vec![1, 2]);
            sim.latencies = Some(vec![Duration::from_millis(300), Duration::from_millis(1)]);
        });
        let base = if warm {
            send(&mut c, 0);
            send(&mut c, 1);
            assert!(c.run_until_idle(Duration::from_secs(10)));
            1
        } else {
            0
        };
        let a = send(&mut c, 0);
        let b = send(&mut c, 1);
        c.run_for(Duration::from_millis(80));
        let cc = send(&mut c, 1);
        assert!(c.run_until_idle(Duration::from_secs(10)), "not idle");
        assert_clean(&mut c);
        for id in [a, b, cc] {
            assert_eq!(outcome(&c, id), Outcome::Delivered);
        }
        let mut p0 = vec![base];
        let mut p1 = vec![base, base + 1];
        if warm {
            p0.insert(0, 0);
            p1.insert(0, 0);
        }
        assert_eq!(log_of(&c, 0), p0, "warm: {warm}");
        assert_eq!(log_of(&c, 1), p1, "warm: {warm}");
        // On the wire: each record sent once, in send order, with contiguous sequences.
        for (gp, log) in [(0, &p0), (1, &p1)] {
            let mut next_sequence = 0;
            let mut sent = Vec::new();
            for w in wire_of(&c, gp) {
                assert_eq!(w.base_sequence, next_sequence, "p{gp} (warm: {warm})");
                next_sequence += w.count;
                sent.extend(w.first_index..w.first_index + w.count as u32);
            }
            assert_eq!(&sent, log, "p{gp} sent once each, in order (warm: {warm})");
        }
    }
}

/// kacrab 0.4's defect 2: **sequence reuse after a batch that may have been
/// appended**. The first attempt is appended, then answered
/// NOT_ENOUGH_REPLICAS_AFTER_APPEND; every retry gets NOT_ENOUGH_REPLICAS until
/// delivery.timeout.ms. The previous client then rewound the sequence, so the next
/// record x reused sequence 0 under the same epoch; the broker took it for a duplicate
/// of a, acknowledged it with a's offset and did not append it: x acknowledged but lost.
///
/// Here a must fail as possibly written (it is in the log once), and x must be
/// appended and acknowledged at its own offset, never sent as (same epoch, sequence 0).
#[test]
fn no_sequence_reuse_after_append_then_timeout() {
    let mut c = cluster(1, 1, |_, p| {
        p.request_timeout(Duration::from_millis(1_000))
            .delivery_timeout(Duration::from_millis(1_500));
    });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicasAfterAppend,
        times: 1,
    });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: u32::MAX,
    });
    let a = send(&mut c, 0);
    assert!(c.run_until(Duration::from_secs(10), |c| outcome(c, a)
        != Outcome::Pending));
    assert_eq!(
        outcome(&c, a),
        Outcome::Failed {
            possibly_written: true
        }
    );
    c.clear_scripts();
    let x = send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(10)), "not idle");
    assert_clean(&mut c);
    assert_eq!(outcome(&c, x), Outcome::Delivered);
    assert_eq!(
        log_of(&c, 0),
        vec![0, 1],
        "a once (it was appended), then x"
    );
    let rec = c.checker().record(x).expect("sent");
    assert_eq!(rec.acked_offset, Some(1));
    assert_eq!(rec.log_offset, Some(1));
    let wire = wire_of(&c, 0);
    let first = &wire[0];
    assert!(
        wire.iter()
            .filter(|w| w.first_index == 1)
            .all(|w| (w.producer_id, w.epoch) != (first.producer_id, first.epoch)),
        "x went out under a's (producer id, epoch): {wire:?}"
    );
    assert!(c.producer().stats().epoch_bumps >= 1);
}

/// kacrab 0.4's defect 3: **one partition's error must not re-send the
/// acknowledged partition**. One request carries p0 and p1; the broker appends p0 and
/// answers NOT_LEADER_OR_FOLLOWER for p1. The previous client retried the whole group,
/// so with idempotence off p0's log became [a, a]. Each partition must complete on its
/// own: p0 is sent once and logged once, p1 is retried alone. With and without
/// idempotence.
#[test]
fn partition_error_does_not_resend_acknowledged_partition() {
    for idempotent in [true, false] {
        let mut c = cluster(1, 2, |_, p| {
            p.enable_idempotence(idempotent);
        });
        c.script(Script::PartitionError {
            partition: 1,
            fault: PartitionFault::NotLeader { hint: false },
            times: 1,
        });
        // Both records wait for metadata (and a producer id), then leave in one request.
        let a = send(&mut c, 0);
        let b = send(&mut c, 1);
        assert!(c.run_until_idle(Duration::from_secs(10)), "not idle");
        assert_clean(&mut c);
        assert_eq!(outcome(&c, a), Outcome::Delivered);
        assert_eq!(outcome(&c, b), Outcome::Delivered);
        let (w0, w1) = (wire_of(&c, 0), wire_of(&c, 1));
        assert_eq!(
            w0.len(),
            1,
            "p0 sent once (idempotent: {idempotent}): {w0:?}"
        );
        assert_eq!(
            w1.len(),
            2,
            "p1 sent twice (idempotent: {idempotent}): {w1:?}"
        );
        assert_eq!(
            w0[0].request, w1[0].request,
            "a and b shared the first request"
        );
        assert_eq!(
            log_of(&c, 0),
            vec![0],
            "p0 logged once (idempotent: {idempotent})"
        );
        assert_eq!(
            log_of(&c, 1),
            vec![0],
            "p1 logged once (idempotent: {idempotent})"
        );
        assert_eq!(c.faults().get(FaultKind::NotLeader), 1);
    }
}

// ------------------------------------------------------------------ core bugs found

/// **Core bug 1a: a later batch overtakes a failed first batch on a partition the
/// broker has no producer state for (KIP-360), then both are written again.**
///
/// Kafka 2.5+ accepts *any* first sequence from a producer it has no state for. The
/// core pipelines up to max.in.flight batches on a fresh partition, so when the first
/// batch (a, seq 0) is refused without being appended (NOT_ENOUGH_REPLICAS here; a
/// NOT_LEADER_OR_FOLLOWER or a request lost before the broker read it does the same)
/// while the second (b, seq 1) gets through, the broker appends b first, at offset 0.
/// Here b's answer is lost too, so nothing is acknowledged yet; a's retry gets
/// OUT_OF_ORDER_SEQUENCE_NUMBER at the next expected sequence, the core bumps the epoch
/// and re-sends a and b under epoch 1 from sequence 0: the log becomes [b, a, b].
///
/// Observed trace (abridged):
/// ```text
/// produce req 3 -> node 1: [t0-0 1000/0 seq 0+1 #0]     (a)
/// produce req 4 -> node 1: [t0-0 1000/0 seq 1+1 #1]     (b, pipelined)
/// FAULT node 1 answers t0-0: NOT_ENOUGH_REPLICAS        (a not appended)
/// node 1 knows no state for the producer on t0-0: sequence 1 accepted (KIP-360)
/// FAULT node 1 applied req 4, response lost, connection drops
/// produce req 5: [t0-0 1000/0 seq 0+1 #0] -> OUT_OF_ORDER_SEQUENCE_NUMBER
/// producer id now 1000/1; [t0-0 1000/1 seq 0+1 #0] -> @1; [t0-0 1000/1 seq 1+1 #1] -> @2
/// log t0-0: [b, a, b]   (acked a@1, b@2)
/// ```
/// Java's client has the same hole; franz-go closes it by keeping one batch in flight
/// per partition until the partition's first success (its "inflight gate", #223). The
/// fix: a partition with no acknowledged batch under its current (producer id, epoch)
/// sends one batch at a time. `kacrab_sim::SimConfig::strict_first_sequence` emulates
/// that gate on the broker side; with it this test passes.
#[test]
fn bug1a_unknown_producer_overtake_then_duplicate() {
    let mut c = cluster(1, 2, |_, _| {});
    send(&mut c, 1); // a producer id and metadata, on another partition
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: 1,
    });
    let a = send(&mut c, 0);
    let b = send(&mut c, 0);
    assert!(c.run_until(Duration::from_secs(1), |c| c
        .faults()
        .get(FaultKind::NotEnoughReplicas)
        == 1));
    c.script(Script::LoseResponseAfterApply { partition: 0 });
    assert!(c.run_until_idle(Duration::from_secs(60)), "not idle");
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert_eq!(outcome(&c, b), Outcome::Delivered);
    assert_eq!(log_of(&c, 0), vec![0, 1], "the log must be [a, b]");
    assert_clean(&mut c);
}

/// **Core bug 1b: the same overtaking, answered normally: the earlier record is retried
/// into OUT_OF_ORDER_SEQUENCE_NUMBER until delivery.timeout.ms and fails, although
/// nothing is wrong any more.**
///
/// As in 1a, a (seq 0) is refused and b (seq 1) is appended first on a partition the
/// broker had no state for; this time b's acknowledgement arrives. a's retry gets
/// OUT_OF_ORDER_SEQUENCE_NUMBER (the broker expects 2), and since a is not the next
/// sequence after the last acknowledged one the core retries it as it is, again and
/// again, for the whole delivery.timeout.ms (30 s here, ~30 attempts), then fails it.
/// The application saw b acknowledged (offset 0) and then a, sent before b, failed:
/// the send order was not kept. With the first-batch gate of 1a, a is delivered first.
#[test]
fn bug1b_unknown_producer_overtake_then_spin() {
    let mut c = cluster(1, 2, |_, _| {});
    send(&mut c, 1);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: 1,
    });
    let a = send(&mut c, 0);
    let b = send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(60)), "not idle");
    assert_clean(&mut c);
    assert_eq!(
        outcome(&c, a),
        Outcome::Delivered,
        "a, sent first, must not fail after b is acknowledged"
    );
    assert_eq!(outcome(&c, b), Outcome::Delivered);
    assert_eq!(log_of(&c, 0), vec![0, 1], "the log must be [a, b]");
}

/// **Core bug 2: a gap in the sequences on the wire after an epoch bump, when the
/// first rewritten batch expires before it is re-sent.**
///
/// An epoch bump renumbers the partition's in-flight batches from 0 under the new
/// epoch (x → seq 0, y → seq 1). If x then reaches delivery.timeout.ms before it is
/// sent again (it waits for its retry backoff), it fails and leaves; y goes out as
/// (epoch 1, seq 1) although nothing was ever sent at (epoch 1, seq 0). The broker
/// answers OUT_OF_ORDER_SEQUENCE_NUMBER ("invalid sequence for new epoch") and the core
/// needs another bump. No duplicate results, but the invariant "sequences on the wire
/// form a gap-free run per (producer id, epoch)" breaks, and each such gap costs a bump
/// and a round of retries.
///
/// Sequence (20 ms links, delivery.timeout.ms 1 s, backoff 100 ms, one record per
/// batch): v (seq 0) is acknowledged. w (seq 1) is lost with its connection, then
/// refused (NOT_ENOUGH_REPLICAS) until it expires, possibly written. x (seq 2) and y
/// (seq 3) went out 100 and 110 ms after w and were refused too. At 1,080 ms x is the
/// first in flight and gets OUT_OF_ORDER_SEQUENCE_NUMBER (the broker never saw w); the
/// core bumps to epoch 1: x → (1, 0), y → (1, 1). x expires at 1,180 ms while it waits
/// for its backoff; y goes out as (1, 1):
/// ```text
/// [1080ms] produce req 14 -> node 1: [t0-0 1000/0 seq 2+1 #2]      (x)
/// [1080ms] failed t0-0 1 records: delivery timeout (possibly written: true)   (w)
/// [1120ms] response req 14: OUT_OF_ORDER_SEQUENCE_NUMBER; producer id now 1000/1
/// [1180ms] produce req 15 -> node 1: [t0-0 1000/1 seq 1+1 #3]      (y: gap, no seq 0)
/// [1180ms] failed t0-0 1 records: delivery timeout (possibly written: false)  (x)
/// WireSequence: t0-0 pid 1000 epoch 1 base 1 count 1: run starts at sequence 1
/// ```
///
/// The fix: when a stamped batch that was never sent under its current stamp fails,
/// renumber the later in-flight batches of that identity (none of them has been sent
/// under it either, since only the first in-flight batch may be sent after a rewrite)
/// — Java's `adjustSequencesDueToFailedBatch` — or bump again before sending them.
#[test]
fn bug2_expired_rewritten_batch_leaves_wire_gap() {
    let mut c = cluster(1, 1, |sim, p| {
        sim.latencies = Some(vec![Duration::from_millis(20)]);
        p.request_timeout(Duration::from_millis(500))
            .delivery_timeout(Duration::from_millis(1_000))
            .retry_backoff(Duration::from_millis(100))
            .retry_backoff_max(Duration::from_millis(100))
            .batch_size(1); // one record per batch
    });
    send(&mut c, 0); // v
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.script(Script::LoseRequest { partition: 0 });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: u32::MAX,
    });
    let w = send(&mut c, 0);
    c.run_for(Duration::from_millis(100));
    let x = send(&mut c, 0);
    c.run_for(Duration::from_millis(10)); // x is on the wire: y is drained behind it
    let y = send(&mut c, 0);
    assert!(c.run_until(Duration::from_secs(5), |c| outcome(c, w)
        != Outcome::Pending));
    c.clear_scripts();
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    let _ = (x, y);
    assert_clean(&mut c);
}

/// **Core bug 3: a batch that expires while a request carrying it is still outstanding
/// is reported `possibly_written: false`, and then the broker appends it.**
///
/// `Event::Failed::possibly_written` is "whether some attempt may have reached the
/// log". A batch that reaches delivery.timeout.ms while on the wire is failed at once
/// (the request stays outstanding), with `possibly_written` taken from the earlier
/// attempts only (here: refused, NOT_ENOUGH_REPLICAS), although the attempt in flight
/// may still be, and here is, appended: the application is told "not written" for a
/// record that is in the log.
///
/// Sequence: a is refused three times (NOT_ENOUGH_REPLICAS, ~700 ms of backoff); the
/// fourth attempt is appended at ~706 ms but its answer is held 2 s; at 1,000 ms
/// (delivery.timeout.ms) a is failed as not written; the request times out at ~1,506 ms.
/// The fix: a batch whose request is outstanding counts as possibly written when it
/// is failed.
#[test]
fn bug3_expired_on_the_wire_reported_not_written() {
    let mut c = cluster(1, 1, |_, p| {
        p.request_timeout(Duration::from_millis(800))
            .delivery_timeout(Duration::from_millis(1_000));
    });
    send(&mut c, 1 - 1); // warm: producer id, metadata, producer state
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: 3,
    });
    let a = send(&mut c, 0);
    assert!(c.run_until(Duration::from_secs(5), |c| c
        .faults()
        .get(FaultKind::NotEnoughReplicas)
        == 3));
    c.script(Script::DelayResponse {
        partition: 0,
        by: Duration::from_secs(2),
    });
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_eq!(log_of(&c, 0), vec![0, 1], "a was appended");
    assert_eq!(
        outcome(&c, a),
        Outcome::Failed {
            possibly_written: true
        }
    );
    assert_clean(&mut c);
}

/// **Core bug 4: a batch that may already be in the log is split after
/// MESSAGE_TOO_LARGE, and its records are written a second time.**
///
/// A four-record batch (seq 1..=4) is appended but its answer is lost with the
/// connection. Before the retry, the topic's `max.message.bytes` is lowered (Kafka
/// checks the batch size before the dedup, so even a duplicate is refused), and the
/// retry gets MESSAGE_TOO_LARGE. The core splits the batch into four single-record
/// batches with the same sequences; the first, (epoch 0, seq 1), is not an exact
/// duplicate of the logged (1..=4), so the broker answers OUT_OF_ORDER_SEQUENCE_NUMBER;
/// it is the next sequence after the last acknowledged one, so the core bumps the
/// epoch and re-sends all four pieces under epoch 1, which the broker appends: every
/// record is in the log twice, and acknowledged at the second offset.
/// ```text
/// produce req 3 -> node 1: [t0-0 1000/0 seq 1+4 #1]
/// FAULT node 1 applied req 3, response lost, connection drops
/// produce req 5 -> node 1: [t0-0 1000/0 seq 1+4 #1] -> MESSAGE_TOO_LARGE
/// produce req 6 -> node 1: [t0-0 1000/0 seq 1+1 #1] -> OUT_OF_ORDER_SEQUENCE_NUMBER
/// producer id now 1000/1
/// [t0-0 1000/1 seq 0+1 #1] -> @5, [seq 1+1 #2] -> @6, [seq 2+1 #3] -> @7, [seq 3+1 #4] -> @8
/// Duplicate: t0-0: record #1 (id 1) logged again at offset 5  (x4)
/// ```
/// Java's client splits the same way (`completeBatch` does not look at earlier
/// attempts). The fix: never split a batch that is possibly written (an attempt was
/// disconnected, timed out or answered after the append); fail it as possibly written
/// instead, which marks its sequence unresolved and bumps safely.
#[test]
fn bug4_split_of_a_possibly_written_batch_duplicates() {
    let mut c = cluster(1, 1, |_, p| {
        p.linger(Duration::from_millis(20));
    });
    send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(5)));
    c.script(Script::LoseResponseAfterApply { partition: 0 });
    let ids: Vec<RecordId> = (0..4).map(|_| send(&mut c, 0)).collect();
    assert!(c.run_until(Duration::from_secs(5), |c| {
        c.faults().get(FaultKind::ResponseLostAfterApply) == 1
    }));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::MessageTooLarge,
        times: 1,
    });
    assert!(c.run_until_idle(Duration::from_secs(60)), "not idle");
    assert_eq!(log_of(&c, 0), vec![0, 1, 2, 3, 4], "each record once");
    for id in ids {
        assert_ne!(outcome(&c, id), Outcome::Pending);
    }
    assert_clean(&mut c);
}

/// **Core bug 5 (in the working-tree fix for bug 2, `release_unsent_sequences`): a
/// split piece that expires before it is sent renumbers a later batch that was already
/// sent.** Debug builds panic on the fix's own `debug_assert!` ("a later batch was sent
/// before an earlier one"); release builds send the later batch again under a lower
/// sequence that does not follow the last one the broker has.
///
/// The fix assumes that when a batch whose current stamp was never sent fails, no
/// batch stamped after it was sent either. A split breaks that: B (seq 1..=4) and C
/// (seq 5), pipelined, are both on the wire when B is refused with MESSAGE_TOO_LARGE
/// and split into pieces that are marked "stamp unsent" (seq 1, 2, 3, 4); C was sent
/// (and refused). When the unsent pieces expire, C is moved down.
/// ```text
/// [220ms] produce req 3 -> node 1: [t0-0 1000/0 seq 1+4 #1]   (B)
/// [245ms] produce req 4 -> node 1: [t0-0 1000/0 seq 5+1 #5]   (C, pipelined)
/// [320ms] response req 3: MESSAGE_TOO_LARGE -> split into seq 1, 2, 3, 4
/// [345ms] response req 4: NOT_ENOUGH_REPLICAS; the piece seq 1 is refused until it expires
/// [1700ms] debug: panicked at src/complete.rs: a later batch was sent before an earlier one
/// [1700ms] release: produce req 9 -> node 1: [t0-0 1000/0 seq 2+1 #5]  (C, renumbered)
/// ```
/// Found by the sim_ops fuzz target (Kafka rules, MESSAGE_TOO_LARGE from a constant
/// `max.message.bytes` below the batch size). A fix: split pieces keep the
/// "sent" status of the batch they come from (their sequences were on the wire), and
/// renumbering stops at the first later batch that was sent.
#[test]
fn bug5_expired_split_piece_renumbers_a_sent_batch() {
    let mut c = cluster(1, 1, |sim, p| {
        sim.latencies = Some(vec![Duration::from_millis(50)]);
        p.linger(Duration::from_millis(20))
            .request_timeout(Duration::from_millis(1_000))
            .delivery_timeout(Duration::from_millis(1_500));
    });
    send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(5)));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::MessageTooLarge,
        times: 1,
    });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: u32::MAX,
    });
    for _ in 0..4 {
        send(&mut c, 0); // B
    }
    c.run_for(Duration::from_millis(25)); // B is on the wire
    let late = send(&mut c, 0); // C, pipelined behind B
    assert!(c.run_until(Duration::from_secs(5), |c| outcome(c, late)
        != Outcome::Pending));
    c.clear_scripts();
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_clean(&mut c);
    let c_on_wire: Vec<i32> = wire_of(&c, 0)
        .iter()
        .filter(|w| w.first_index == 5)
        .map(|w| w.base_sequence)
        .collect();
    // C keeps the sequence it was sent with, or follows the last one appended (0).
    assert!(
        c_on_wire.iter().all(|&s| s == 5 || s == 1),
        "C was renumbered out of line: {c_on_wire:?}"
    );
}

/// The simulator's NodeId type is the core's.
#[test]
fn cluster_nodes_are_core_node_ids() {
    let c = cluster(3, 3, |_, _| {});
    assert_eq!(c.partition(2).leader, NodeId(3));
}

// ------------------------------------------------------------------ issue 9 holes

/// **Issue 9, hole 1: a forced close reports a batch on the wire as not written.**
///
/// p0 is led by a slow broker (300 ms away). a goes out; 20 ms later, while it is on
/// the wire, the application calls `abort()`. The broker still appends a, so a must be
/// reported failed *possibly written*; the checker's `possibly_written` property fails
/// the run otherwise. The late answer produces no second outcome.
#[test]
fn hole1_abort_reports_a_batch_on_the_wire_possibly_written() {
    let mut c = cluster(2, 2, |sim, _| {
        sim.leaders = Some(vec![1, 2]);
        sim.latencies = Some(vec![Duration::from_millis(300), Duration::from_millis(1)]);
    });
    send(&mut c, 0);
    send(&mut c, 1);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    let a = send(&mut c, 0);
    c.run_for(Duration::from_millis(20));
    assert_eq!(outcome(&c, a), Outcome::Pending, "a is on the wire");
    c.abort();
    assert!(c.producer().is_closed());
    c.run_for(Duration::from_secs(1)); // a reaches its broker
    assert_eq!(
        log_of(&c, 0),
        vec![0, 1],
        "the broker appended a after the abort"
    );
    assert_eq!(
        outcome(&c, a),
        Outcome::Failed {
            possibly_written: true
        }
    );
    assert_clean(&mut c);
}

/// **Issue 9, hole 3: after epoch exhaustion the new producer id renumbered a batch
/// on the wire.**
///
/// The producer's epoch is `i16::MAX`. a (p0) is refused MESSAGE_TOO_LARGE: a bump is
/// needed, which at epoch MAX means a new producer id. While the InitProducerId is out,
/// b1 (p1) is refused too, so p1 joins the rewrite set while b2 (p1) is still on the
/// wire (its answer delayed). The new id must not renumber p1 until b2 is answered
/// (a debug assertion fired on broker input; release builds renumbered silently).
#[test]
fn hole3_epoch_exhaustion_never_renumbers_a_batch_on_the_wire() {
    let mut c = cluster(2, 2, |sim, _| {
        sim.leaders = Some(vec![1, 2]);
        sim.latencies = Some(vec![Duration::from_millis(50), Duration::from_millis(50)]);
        sim.initial_producer_epoch = i16::MAX;
    });
    send(&mut c, 0);
    send(&mut c, 1);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    let first_id = c.producer().producer_id();
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::MessageTooLarge,
        times: 1,
    });
    c.script(Script::PartitionError {
        partition: 1,
        fault: PartitionFault::MessageTooLarge,
        times: 1,
    });
    let a = send(&mut c, 0);
    c.run_for(Duration::from_millis(10));
    let b1 = send(&mut c, 1);
    c.run_for(Duration::from_millis(20));
    let b2 = send(&mut c, 1);
    // b1 has reached its broker, b2 not yet: only b2's answer is delayed.
    c.run_for(Duration::from_millis(40));
    c.script(Script::DelayResponse {
        partition: 1,
        by: Duration::from_millis(400),
    });
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_clean(&mut c);
    assert_ne!(
        c.producer().producer_id().id,
        first_id.id,
        "a new producer id"
    );
    for id in [a, b1] {
        assert_eq!(
            outcome(&c, id),
            Outcome::Failed {
                possibly_written: false
            }
        );
    }
    assert_eq!(outcome(&c, b2), Outcome::Delivered);
    assert_eq!(log_of(&c, 1), vec![0, 2]);
}

/// **Issue 9, hole 2: NOT_LEADER_OR_FOLLOWER was taken as proof of absence.**
///
/// a is appended, then its leader loses the leadership while the produce waits for
/// replication and answers NOT_LEADER_OR_FOLLOWER (Kafka's DelayedProduce); every retry
/// on the new leader is refused NOT_ENOUGH_REPLICAS until the delivery timeout. a is in
/// the log, so it must be reported failed *possibly written* (the checker's
/// `possibly_written` property), and the next record must not reuse its sequence.
#[test]
fn hole2_not_leader_after_append_then_rejections_is_reported_possibly_written() {
    let mut c = cluster(2, 1, |_, p| {
        p.request_timeout(Duration::from_millis(800))
            .delivery_timeout(Duration::from_millis(1_000));
    });
    send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotLeaderAfterAppend,
        times: 1,
    });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: u32::MAX,
    });
    let a = send(&mut c, 0);
    assert!(c.run_until(Duration::from_secs(5), |c| outcome(c, a)
        != Outcome::Pending));
    c.clear_scripts();
    let x = send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_clean(&mut c);
    assert_eq!(
        outcome(&c, a),
        Outcome::Failed {
            possibly_written: true
        }
    );
    assert_eq!(outcome(&c, x), Outcome::Delivered);
    assert_eq!(log_of(&c, 0), vec![0, 1, 2]);
}

/// **Issue 9, hole 2: an epoch bump renumbered a batch answered NOT_LEADER_OR_FOLLOWER.**
///
/// a is appended and answered NOT_LEADER_OR_FOLLOWER (the leadership went away while
/// the produce waited in purgatory, and came back: one broker); b, pipelined behind it,
/// is refused MESSAGE_TOO_LARGE (one record), which asks for an epoch bump. The bump
/// must not renumber a, which is in the log: a is resent unchanged (a duplicate's ack)
/// first. Renumbered, it was appended a second time.
#[test]
fn hole2_bump_never_renumbers_a_batch_answered_not_leader_after_append() {
    let mut c = cluster(1, 1, |_, _| {});
    send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(10)));
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotLeaderAfterAppend,
        times: 1,
    });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::MessageTooLarge,
        times: 1,
    });
    let a = send(&mut c, 0);
    let b = send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_clean(&mut c);
    assert_eq!(c.faults().get(FaultKind::NotLeaderAfterAppend), 1);
    assert_eq!(outcome(&c, a), Outcome::Delivered);
    assert_eq!(
        outcome(&c, b),
        Outcome::Failed {
            possibly_written: false
        }
    );
    assert_eq!(log_of(&c, 0), vec![0, 1]);
}

// ------------------------------------------------------- producer-state expiry (hole 5)

/// The brokers' `producer.id.expiration.ms` in the expiry regressions (virtual time).
const EXPIRY: Duration = Duration::from_secs(60);

/// One broker, one partition, the brokers forgetting an idle producer after
/// [`EXPIRY`]. The partition is warmed (record 0 acknowledged), then left idle longer
/// than that, so the broker no longer knows the producer.
fn expired_cluster() -> Cluster {
    let mut c = cluster(1, 1, |sim, p| {
        sim.producer_id_expiration = EXPIRY;
        p.producer_id_expiration(EXPIRY);
    });
    send(&mut c, 0);
    assert!(
        c.run_until_idle(Duration::from_secs(5)),
        "warm-up not acked"
    );
    c.run_for(EXPIRY + Duration::from_secs(10));
    c
}

/// **Hole 5a: after an idle gap past `producer.id.expiration.ms`, a batch pipelined
/// behind a refused one overtakes it.** The broker dropped the producer's state
/// (`ProducerStateManager.removeExpiredProducers`), so it accepts any sequence
/// (KIP-360). b (seq 1) is refused with NOT_ENOUGH_REPLICAS; c (seq 2), sent behind it,
/// is appended first; b's retry then gets OUT_OF_ORDER and, after the bump, lands after
/// c: the log reads [0, 2, 1].
#[test]
fn expired_producer_state_does_not_let_a_later_batch_overtake() {
    let mut c = expired_cluster();
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: 1,
    });
    let b = send(&mut c, 0);
    c.run_for(Duration::from_micros(100)); // b is on the wire
    let cc = send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_clean(&mut c);
    for id in [b, cc] {
        assert_eq!(outcome(&c, id), Outcome::Delivered);
    }
    assert_eq!(log_of(&c, 0), vec![0, 1, 2], "send order kept");
}

/// **Hole 5b: after an idle gap past `producer.id.expiration.ms`, a batch answered
/// REQUEST_TIMED_OUT (appended) is renumbered by the bump and written twice.** b
/// (seq 1) is refused; c (seq 2) is appended by the broker that forgot the producer and
/// answered REQUEST_TIMED_OUT. b's retry gets OUT_OF_ORDER, which the core took as
/// proof that b, and so c behind it, are absent: both were renumbered under a new
/// epoch and c was appended a second time.
#[test]
fn expired_producer_state_does_not_make_a_timed_out_batch_a_duplicate() {
    let mut c = expired_cluster();
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::NotEnoughReplicas,
        times: 1,
    });
    c.script(Script::PartitionError {
        partition: 0,
        fault: PartitionFault::RequestTimedOutAfterAppend,
        times: 1,
    });
    let b = send(&mut c, 0);
    c.run_for(Duration::from_micros(100)); // b is on the wire
    let cc = send(&mut c, 0);
    assert!(c.run_until_idle(Duration::from_secs(30)), "not idle");
    assert_clean(&mut c);
    for id in [b, cc] {
        assert_ne!(outcome(&c, id), Outcome::Pending);
    }
    let log = log_of(&c, 0);
    assert_eq!(
        log.iter().filter(|&&i| i == 2).count(),
        1,
        "c written once: {log:?}"
    );
}
