//! The Rust side and the comparison, against Java output recorded from
//! `conformance/java` (Kafka 4.3.1), so these run without a JVM.

mod common;

use kacrab_conformance::compare::{compare, Verdict};
use kacrab_conformance::core_side;
use kacrab_conformance::generate::{self, Answers};
use kacrab_conformance::trace::Trace;

use common::{lines, recorded, recorded_as, replaced, verdict, without_drain_stops};

const TRIVIAL: &str = r#"{"op":"config","partitions":1,"nodes":1}
{"op":"send","p":0,"size":10}
{"op":"answer","node":0}
{"op":"end"}
"#;

const TRIVIAL_JAVA: &str = r#"{"ev":"init","pid":-1,"epoch":-1}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1","t":0,"s":1}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=NONE"}
{"ev":"outcome","rec":0,"result":"ok:0"}"#;

#[test]
fn generated_traces_round_trip_through_json_lines() {
    for seed in 0..200 {
        let t = generate::idempotent(seed, Answers::Faulty);
        let back = Trace::parse_many(&t.to_jsonl()).unwrap();
        assert_eq!(back, vec![t], "seed {seed}");
    }
}

#[test]
fn the_core_writes_what_java_wrote_for_one_send_and_one_answer() {
    let trace = &Trace::parse_many(TRIVIAL).unwrap()[0];
    let (core, extra) = core_side::run(trace);
    assert_eq!(core, lines(TRIVIAL_JAVA));
    assert_eq!(
        compare(trace, &lines(TRIVIAL_JAVA), &core, &extra).verdict,
        Verdict::Same
    );
}

#[test]
fn a_difference_no_detector_explains_is_unexplained() {
    let trace = &Trace::parse_many(TRIVIAL).unwrap()[0];
    let (core, extra) = core_side::run(trace);
    // Java as if it had sent sequence 1 first: no departure explains that.
    let java = lines(&TRIVIAL_JAVA.replace("0:1000:0:0:1", "0:1000:0:1:1"));
    assert_eq!(
        compare(trace, &java, &core, &extra).verdict,
        Verdict::Unexplained
    );
}

#[test]
fn java_pipelining_before_the_first_ack_is_the_first_batch_gate() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../conformance/traces/first_batch_overtake.jsonl"
    ))
    .unwrap();
    let trace = &Trace::parse_many(&text).unwrap()[0];
    // Recorded from the Java side.
    let java = lines(
        r#"{"ev":"init","pid":-1,"epoch":-1}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"produce","node":0,"batches":"0:1000:0:1:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=NOT_ENOUGH_REPLICAS"}
{"ev":"answered","node":0,"batches":"0:1000:0:1:1=NONE"}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=OUT_OF_ORDER_SEQUENCE_NUMBER"}
{"ev":"produce","node":0,"batches":"0:1000:0:0:1"}
{"ev":"answered","node":0,"batches":"0:1000:0:0:1=NONE"}
{"ev":"outcome","rec":0,"result":"ok:1"}
{"ev":"outcome","rec":1,"result":"ok:0"}"#,
    );
    let (core, extra) = core_side::run(trace);
    // The core keeps send order in the log.
    assert!(core.contains(&r#"{"ev":"outcome","rec":0,"result":"ok:0"}"#.to_string()));
    assert!(core.contains(&r#"{"ev":"outcome","rec":1,"result":"ok:1"}"#.to_string()));
    assert_eq!(
        compare(trace, &java, &core, &extra).verdict,
        Verdict::FirstBatchGate
    );
}

#[test]
fn the_core_sending_a_batch_java_held_behind_a_stopped_drain_is_that_quirk() {
    // Partition 0 has a retry queued behind its first in-flight batch, so Java's drain of
    // node 0 stops there and partition 2's new batch waits; the core sends it.
    let (trace, java) = recorded("java_drain_stop");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::JavaDrainStopsAtWaitingPartition
    );
    // Without Java's own report of the stop nothing explains the difference.
    assert_eq!(
        verdict(&trace, &without_drain_stops(&java)),
        Verdict::Unexplained
    );
}

#[test]
fn an_earlier_send_of_the_same_batch_explains_the_answers_others_got() {
    // After a bump Java's drain stops at a partition with a stale batch in flight, so it
    // sends partition 0's batch a step later than the core: both histories of partition 0
    // are the same, but the scripted answer reaches another batch.
    recorded_as(
        "java_drain_stop_same_history",
        Verdict::JavaDrainStopsAtWaitingPartition,
        without_drain_stops,
    );
}

#[test]
fn java_losing_a_request_sent_on_a_connection_closed_in_that_step_is_that_quirk() {
    let (trace, java) = recorded("java_send_on_timed_out_connection");
    // The request put on the connection in the step its older request timed out.
    assert!(java.contains(
        &r#"{"ev":"produce","node":0,"batches":"0:1000:1:0:1","t":3150,"s":65}"#.to_string()
    ));
    assert_eq!(
        verdict(&trace, &java),
        Verdict::JavaSendsOnTimedOutConnection
    );
    // Closed a step later than it was sent, it would be another story.
    assert_eq!(
        verdict(
            &trace,
            &replaced(
                &java,
                r#""why":"timeout","s":65"#,
                r#""why":"timeout","s":66"#
            )
        ),
        Verdict::Unexplained
    );
}

#[test]
fn another_partitions_new_batch_under_the_old_epoch_while_the_bump_waits_is_departure_2() {
    // Partition 2's sequence 1 is answered OUT_OF_ORDER while sequence 2 is on the wire:
    // Java bumps at once and stamps partition 0's new batch with epoch 1; the core bumps
    // once sequence 2 is answered and stamps it with epoch 0 meanwhile.
    let (trace, java) = recorded("bump_waits_for_possibly_written");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // An identity the core never moves to is not that departure.
    assert_eq!(
        verdict(&trace, &replaced(&java, "0:1000:1:0:1", "0:1000:7:0:1")),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_while_java_retries_old_stamps_before_its_new_identity() {
    // Partition 0's sequence 2 is answered UNKNOWN_PRODUCER_ID while 3 and 4 are on the
    // wire: Java bumps at once, so partition 1 (a stale batch in flight) holds its new
    // batch, retries sequence 1 under epoch 0 after NOT_ENOUGH_REPLICAS, and only then
    // sends the new batch as epoch 1, sequence 0. The core's bump waits for 3 and 4; it
    // stamps partition 1's new batch as epoch 0, sequence 3 meanwhile.
    let (trace, java) = recorded("bump_waits_java_retries_first");
    assert!(java.contains(
        &r#"{"ev":"produce","node":0,"batches":"0:1000:1:0:1,1:1000:0:1:1","t":100,"s":20}"#
            .to_string()
    ));
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    assert_eq!(
        verdict(&trace, &replaced(&java, "1:1000:1:0:1", "1:1000:7:0:1")),
        Verdict::Unexplained
    );
}

#[test]
fn the_trace_may_end_while_the_bump_still_waits() {
    // Partition 1's sequence 1 fails MESSAGE_TOO_LARGE (one record: no split) while
    // sequence 2 is on the wire. The core stamps partition 0's next two batches under
    // epoch 0 while sequence 2 is unanswered; the trace ends before the core stamps
    // anything under epoch 1. Java sends both records as epoch 1, sequence 0.
    let (trace, java) = recorded("bump_waits_trace_ends_waiting");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // Java's new batch must carry at least the records the core stamped meanwhile.
    assert_eq!(
        verdict(&trace, &replaced(&java, "0:1000:1:0:2", "0:1000:1:0:0")),
        Verdict::Unexplained
    );
}

#[test]
fn the_core_resending_a_retry_in_the_step_java_stopped_its_drain_is_that_quirk() {
    // Partition 1's batch moved to node 0 while its attempt on node 1 timed out; the core
    // closes node 1 and resends the batch to node 0 in that step, where Java's drain of
    // node 0 stopped at partition 0 and sends it a step later.
    recorded_as(
        "java_drain_stop_core_retries_first",
        Verdict::JavaDrainStopsAtWaitingPartition,
        without_drain_stops,
    );
}

#[test]
fn java_retries_older_batches_before_the_new_one_its_drain_left() {
    // Java's drain of node 0 stops at partition 2 (a retry behind its first in-flight
    // batch) and leaves partition 0's new sequence 2; after the disconnect Java first
    // retries sequence 1, then sends 2. The core sends 2 in the step Java stopped.
    recorded_as(
        "java_drain_stop_java_retries_first",
        Verdict::JavaDrainStopsAtWaitingPartition,
        without_drain_stops,
    );
}

#[test]
fn a_possibly_written_batch_answered_out_of_order_fails_where_java_renumbers_it() {
    // Partition 2's sequence 0 was on a connection closed for a timeout, so it may be in
    // the log; its retry is answered OUT_OF_ORDER_SEQUENCE_NUMBER. Java bumps and writes
    // it again as epoch 1, sequence 0 (acknowledged at offset 0: a second copy if the
    // first attempt landed); the core fails it as possibly written, and every later
    // request, with the answers scripted on it, differs from there on.
    let (trace, java) = recorded("out_of_order_for_possibly_written");
    assert!(java.contains(&r#"{"ev":"outcome","rec":0,"result":"ok:0"}"#.to_string()));
    let (core, _) = core_side::run(&trace);
    assert!(core.contains(&r#"{"ev":"outcome","rec":0,"result":"err:45"}"#.to_string()));
    assert_eq!(verdict(&trace, &java), Verdict::NoRenumberOfPossiblyWritten);
    // Had Java failed the record too, the differences would need another explanation.
    assert_eq!(
        verdict(
            &trace,
            &replaced(
                &java,
                r#""rec":0,"result":"ok:0""#,
                r#""rec":0,"result":"err:45""#
            )
        ),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_and_java_sends_the_new_batch_to_the_partitions_new_leader() {
    // Partition 0's sequence 1 is answered OUT_OF_ORDER while 2 is on the wire: the core
    // stamps partition 1's new batch under epoch 0 to node 0; Java holds it, and by the
    // time it sends it as epoch 1, sequence 0, partition 1 is led by node 2.
    let (trace, java) = recorded("bump_waits_leader_moved");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // A broker the partition never moved to is not that departure.
    let elsewhere: Vec<String> = java
        .iter()
        .map(|l| {
            l.replace(
                r#""node":2,"batches":"1:1000:1:0:1""#,
                r#""node":1,"batches":"1:1000:1:0:1""#,
            )
        })
        .collect();
    assert_eq!(verdict(&trace, &elsewhere), Verdict::Unexplained);
}

#[test]
fn java_sends_the_batch_its_drain_left_to_the_partitions_new_leader() {
    // Java's drain of node 0 stops at partition 0 and leaves partition 3's first batch,
    // which the core sends to node 0 in that step; leadership then moves, and Java sends
    // the same stamp to node 1 a step later.
    recorded_as(
        "java_drain_stop_leader_moved",
        Verdict::JavaDrainStopsAtWaitingPartition,
        without_drain_stops,
    );
}

#[test]
fn java_retries_a_batch_of_the_timed_out_connection_a_step_after_the_core() {
    // Partition 1's batch is on node 1's connection when leadership moves it to node 0;
    // the request times out at step 26. The core closes node 1 first and resends the
    // batch to node 0 in that step (a new leader: no backoff); Java's drain of step 26
    // still finds it in flight, `poll` closes the connection after, and the retry goes
    // out at step 27.
    let (trace, java) = recorded("java_sends_retry_after_timed_out_connection");
    assert!(java.contains(
        &r#"{"ev":"produce","node":0,"batches":"1:1000:0:0:1","t":1050,"s":27}"#.to_string()
    ));
    assert_eq!(
        verdict(&trace, &java),
        Verdict::JavaSendsOnTimedOutConnection
    );
    // Closed a step earlier than the core closed it, it would be another story.
    assert_eq!(
        verdict(
            &trace,
            &replaced(
                &java,
                r#""node":1,"why":"timeout","s":26"#,
                r#""node":1,"why":"timeout","s":25"#
            )
        ),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_while_java_bumps_twice() {
    // Partition 1's sequence 1 is answered OUT_OF_ORDER while sequence 2 is on the wire.
    // Java bumps at once and stamps partition 0's new batch as epoch 1; the core's bump
    // waits for sequence 2 and stamps it as epoch 0. Both are answered OUT_OF_ORDER in
    // turn, so Java bumps again: its next batches are epoch 2 (partition 0) and epoch 1
    // (partition 1's retry), and so are the core's once its bumps apply.
    let (trace, java) = recorded("bump_waits_java_bumps_twice");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // A later identity Java never stamps is the core's own: not that departure.
    assert_eq!(
        verdict(&trace, &replaced(&java, "0:1000:2:0:1", "0:1000:7:0:1")),
        Verdict::Unexplained
    );
    // The same with the partitions' roles swapped.
    let (trace, java) = recorded("bump_waits_java_bumps_twice_other_partition");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    assert_eq!(
        verdict(&trace, &replaced(&java, "1:1000:2:0:1", "1:1000:7:0:1")),
        Verdict::Unexplained
    );
}

#[test]
fn java_bumps_at_an_expiry_on_the_wire_and_holds_the_partition_behind_its_stale_batch() {
    // Partition 1's retry expires (delivery timeout) while on the wire. Java drops it from
    // its in-flight batches, finds the sequence unresolved and bumps to epoch 1; partition
    // 0's sequence 1 (epoch 0) in flight is then stale, so Java holds partition 0's new
    // batch until it is answered and sends it as epoch 1, sequence 0. The core waits for
    // the expired attempt's answer (NONE: no bump needed) and sends it as sequence 2.
    let (trace, java) = recorded("expiry_java_bumps_core_continues");
    assert_eq!(verdict(&trace, &java), Verdict::UnresolvedSequenceHandling);
    // Without the expiry nothing explains Java's bump.
    assert_eq!(
        verdict(
            &trace,
            &replaced(
                &java,
                r#""rec":1,"result":"err:7""#,
                r#""rec":1,"result":"ok:1""#
            )
        ),
        Verdict::Unexplained
    );
    // Java bumping twice (partition 0's own batch expires on the wire too): its next new
    // batch is epoch 2, sequence 0. The core bumps once, for partition 1 after its expired
    // attempt's connection closed: the bump waited while the core stamped partition 0's
    // new batch under epoch 0, which is departure 2's wait (its detector runs first).
    let (trace, java) = recorded("expiry_java_bumps_twice");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // Not sequence 0 of the new identity: not a bump.
    assert_eq!(
        verdict(&trace, &replaced(&java, "0:1000:2:0:1", "0:1000:2:1:1")),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_and_java_never_sends_the_batch_the_core_stamped() {
    // Partition 2's sequence 1 is answered OUT_OF_ORDER while sequence 2 is on the wire
    // with partition 0's sequence 1. Java bumps at once, so partition 0's new batch is
    // held behind its stale sequence 1 in flight, which times out and is retried until
    // the delivery timeout: the held record expires in Java's accumulator, never sent.
    // The core's bump waits for sequence 2, and it stamps that record as epoch 0,
    // sequence 2 meanwhile.
    let (trace, java) = recorded("bump_waits_java_never_sends_the_batch");
    assert!(java.contains(&r#"{"ev":"outcome","rec":5,"result":"err:7"}"#.to_string()));
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // Had Java failed no record of the partition by delivery timeout, the batch the core
    // stamped would be unaccounted for.
    assert_eq!(
        verdict(
            &trace,
            &replaced(&java, r#""result":"err:7""#, r#""result":"err:1""#)
        ),
        Verdict::Unexplained
    );
}

#[test]
fn the_probe_resending_the_highest_possibly_written_batch_is_departure_2() {
    // Sequences 1 and 2 were on a connection that broke, so both may be in the log; the
    // retry of 1 is answered OUT_OF_ORDER (a leader that forgot older batches). The
    // core resends 2 alone, unchanged (`src/probe.rs`); its ack proves 1 in the log too,
    // acknowledged with its offset unknown. Java bumps and writes both again as epoch 1,
    // sequences 0 and 1: second copies if the first attempts landed.
    let (trace, java) = recorded("probe_resends_highest_possibly_written");
    let (core, _) = core_side::run(&trace);
    assert!(core.contains(
        &r#"{"ev":"produce","node":0,"batches":"0:1000:0:2:1","t":100,"s":8}"#.to_string()
    ));
    assert!(core.contains(&r#"{"ev":"outcome","rec":1,"result":"ok:-1"}"#.to_string()));
    assert_eq!(verdict(&trace, &java), Verdict::NoRenumberOfPossiblyWritten);
    // Without the broken connection nothing may be in the log, and Java's renumbering
    // is no departure.
    let unbroken: Vec<String> = java
        .iter()
        .filter(|l| !l.contains(r#""ev":"disconnected""#))
        .cloned()
        .collect();
    assert_eq!(verdict(&trace, &unbroken), Verdict::Unexplained);
}

#[test]
fn a_possibly_written_batch_java_renumbers_after_out_of_order_fails_in_the_core() {
    // Partition 3's sequence 0 was on a connection closed for a timeout; its retry is
    // answered OUT_OF_ORDER, with nothing later for the probe. The core fails it as
    // possibly written (departure 2); Java bumps and sends it again as epoch 1, sequence
    // 0, which makes node 0 ready and takes partition 0's lingering batch along: the
    // core sends that batch later, after a leader move, and the scripted answers land on
    // other requests (Java's renumbered copy is refused INVALID_RECORD, not acknowledged).
    let (trace, java) = recorded("out_of_order_possibly_written_java_renumbers");
    let (core, _) = core_side::run(&trace);
    assert!(core.contains(&r#"{"ev":"outcome","rec":0,"result":"err:45"}"#.to_string()));
    assert_eq!(verdict(&trace, &java), Verdict::NoRenumberOfPossiblyWritten);
    // Had Java failed the record with OUT_OF_ORDER too, the differences would need
    // another explanation.
    assert_eq!(
        verdict(
            &trace,
            &replaced(
                &java,
                r#""rec":0,"result":"err:87""#,
                r#""rec":0,"result":"err:45""#
            )
        ),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_and_java_bumps_once_per_request_the_core_once_for_both() {
    // Partition 0's retry is answered UNKNOWN_PRODUCER_ID and partition 2's batch
    // OUT_OF_ORDER while partition 1's sequence 1 is on the wire. Java bumps after each
    // answer (epochs 1 and 2) and sends partition 1's new batch as epoch 2, sequence 0;
    // the core stamps it as epoch 0, sequence 2 while its bump waits, and its one bump,
    // when it applies, answers both requests (epoch 1).
    let (trace, java) = recorded("bump_waits_core_bumps_once_java_twice");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // More bumps than Java saw error answers and expiries: not Java's.
    assert_eq!(
        verdict(&trace, &replaced(&java, "1:1000:2:0:1", "1:1000:7:0:1")),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_and_java_bumps_twice_before_it_stamps_anything() {
    // Partition 0's sequence 1 is answered OUT_OF_ORDER and sequence 2, on the wire,
    // RECORD_LIST_TOO_LARGE: Java bumps after each answer and stamps nothing under epoch
    // 1, so its next batches are epoch 2. The core stamps partition 1's new batch as
    // epoch 0, sequence 2 while its bump waits for sequence 2, then bumps once, to
    // epoch 1: an epoch Java passed through.
    let (trace, java) = recorded("bump_waits_java_skips_an_epoch");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // More bumps than Java saw error answers and expiries: epoch 1 is the core's own.
    assert_eq!(
        verdict(&trace, &replaced(&java, ":1000:2:", ":1000:7:")),
        Verdict::Unexplained
    );
}

// Transactional traces (transaction version 1). Each detector's recorded trace is its
// class, and a near miss of Java's output stays unexplained.

#[test]
fn the_bump_waits_and_java_renumbers_a_batch_still_in_flight_first() {
    // Seed 37's long-run trace, shrunk. Partition 0's sequence 1 is answered
    // UNKNOWN_PRODUCER_ID: the core stamps partition 1's next batch as epoch 0, sequence
    // 3 while its bump waits; Java holds it. Partition 1's sequence 1 then fails
    // (INVALID_PRODUCER_EPOCH) while sequence 2 is still on the wire, so Java's bump,
    // asked for by partition 1, renumbers sequence 2 first
    // (`startSequencesAtBeginning`: epoch 2, sequence 0 in its books, its old stamp on
    // the wire) and stamps the held batch epoch 2, sequence 1. Near miss: sequence 2.
    let (trace, java) = recorded("bump_waits_java_renumbers_in_flight");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    assert_eq!(
        verdict(&trace, &replaced(&java, "1:1000:2:1:1", "1:1000:2:2:1")),
        Verdict::Unexplained
    );
}

#[test]
fn the_bump_waits_after_a_first_bump_and_the_core_stamps_the_intermediate_epoch() {
    // Seed 59's idempotent long-run trace, shrunk. Partition 1's sequence 0 and partition
    // 0's sequence 1 are answered OUT_OF_ORDER in one step, partition 0's sequence 2
    // still on the wire. Java bumps for each (epoch 0 to 2) before it stamps anything and
    // stamps partition 2's new batch epoch 2, sequence 0. The core applies the first bump
    // at once (partition 1 has nothing else on the wire) and stamps partition 2 with
    // epoch 1, while its second bump waits for sequence 2; epoch 1 is one Java passed
    // through.
    let (trace, java) = recorded("bump_waits_intermediate_epoch");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::BumpWaitsForPossiblyWrittenBatches
    );
    // Java's new batch to the other broker, not at sequence 0 of its new epoch, or
    // under an epoch more bumps away than Java saw error answers and expiries.
    assert_eq!(
        verdict(
            &trace,
            &replaced(
                &java,
                r#""node":0,"batches":"2:1000:2:0:1","#,
                r#""node":1,"batches":"2:1000:2:0:1","#
            )
        ),
        Verdict::Unexplained
    );
    assert_eq!(
        verdict(&trace, &replaced(&java, "2:1000:2:0:1", "2:1000:2:1:1")),
        Verdict::Unexplained
    );
    assert_eq!(
        verdict(&trace, &replaced(&java, "2:1000:2:0:1", "2:1000:3:0:1")),
        Verdict::Unexplained
    );
}
