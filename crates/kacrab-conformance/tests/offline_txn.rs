//! The transactional half of the offline conformance tests: the Rust side and the
//! comparison against Java output recorded from `conformance/java` (Kafka 4.3.1).

mod common;

use kacrab_conformance::compare::{compare, Verdict};
use kacrab_conformance::core_side;
use kacrab_conformance::generate::{self, Answers};
use kacrab_conformance::trace::Trace;

use common::{recorded, recorded_as, recorded_as_replaced, replaced, verdict};

#[test]
fn generated_transactional_traces_round_trip_through_json_lines() {
    for seed in 0..200 {
        let t = generate::transactional(seed, Answers::Faulty);
        assert!(t.config.transactional);
        let back = Trace::parse_many(&t.to_jsonl()).unwrap();
        assert_eq!(back, vec![t], "seed {seed}");
    }
}

#[test]
fn the_core_writes_what_java_wrote_for_one_committed_transaction() {
    let (trace, java) = recorded("txn_commit_same");
    let (core, extra) = core_side::run(&trace);
    assert_eq!(core, java);
    assert_eq!(compare(&trace, &java, &core, &extra).verdict, Verdict::Same);
    // The same output with another epoch on the EndTxn is a difference nobody explains.
    let other = replaced(&java, r#""epoch":0,"commit":1"#, r#""epoch":1,"commit":1"#);
    assert_ne!(other, java);
    assert_eq!(verdict(&trace, &other), Verdict::Unexplained);
}

#[test]
fn a_retried_add_partitions_taking_new_partitions_is_that_departure() {
    // Near miss: Java never asks for the partition the core's retry added.
    recorded_as_replaced(
        "txn_RetriedAddPartitionsTakesNewPartitions",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#""parts":"0,1""#,
        r#""parts":"1""#,
    );
}

#[test]
fn java_asking_again_for_pending_partitions_is_that_quirk() {
    // Near miss: the partition only Java asks for was never asked for before.
    recorded_as_replaced(
        "txn_JavaReasksPendingPartitions",
        Verdict::JavaReasksPendingPartitions,
        r#""parts":"0,1""#,
        r#""parts":"1,2""#,
    );
}

#[test]
fn the_tv1_abort_after_an_abortable_error_bumps_the_epoch() {
    // Near miss: Java's next step is a bump of another identity, not the abort's end.
    recorded_as_replaced(
        "txn_AbortEndsWithEpochBump",
        Verdict::AbortEndsWithEpochBump,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn","api":"init","pid":1000,"epoch":1}"#,
    );
}

#[test]
fn the_core_failing_a_commit_before_its_batches_settle_is_that_departure() {
    // Near miss: Java's commit succeeds.
    recorded_as_replaced(
        "txn_CommitFailsBeforeBatchesSettle",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#"{"ev":"txn_done","call":"commit","result":"err:18"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"ok"}"#,
    );
}

#[test]
fn an_abort_after_a_failed_init_gets_a_producer_id_first() {
    // Near miss: Java's init had succeeded.
    recorded_as_replaced(
        "txn_AbortAfterFailedInit",
        Verdict::AbortAfterFailedInit,
        r#"{"ev":"txn_done","call":"init","result":"err:120"}"#,
        r#"{"ev":"txn_done","call":"init","result":"ok"}"#,
    );
}

#[test]
fn java_retrying_partitions_both_sides_already_asked_for_is_that_quirk() {
    // Near miss: Java's retry asks for a partition nobody asked for before.
    recorded_as(
        "txn_java_retries_partitions_already_asked",
        Verdict::JavaReasksPendingPartitions,
        |java| {
            let mut java = java.to_vec();
            let last = java
                .iter()
                .rposition(|l| l.contains(r#""parts":"1"}"#))
                .unwrap();
            java[last] = java[last].replace(r#""parts":"1"}"#, r#""parts":"2"}"#);
            java
        },
    );
}

#[test]
fn the_tv1_abort_with_nothing_added_still_bumps_after_an_abortable_error() {
    // Near miss: the abort was not the call just before (Java had called begin again).
    recorded_as_replaced(
        "txn_abort_bump_nothing_added",
        Verdict::AbortEndsWithEpochBump,
        r#"{"ev":"txn_call","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn_call","call":"begin","result":"ok"}"#,
    );
}

#[test]
fn the_tv1_commit_whose_end_txn_timed_out_ends_with_a_bump() {
    // Near miss: what Java completes is not the operation that EndTxn ended.
    recorded_as_replaced(
        "txn_LostEndTxnEndsWithEpochBump",
        Verdict::LostEndTxnEndsWithEpochBump,
        r#"{"ev":"txn_done","call":"commit","result":"ok"}"#,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
    );
}

#[test]
fn java_holding_add_partitions_built_before_a_coordinator_lookup_is_that_departure() {
    // Java built AddPartitionsToTxn(0,2) before the lookup (2 pending, 0 new) and sends
    // it after; the core's, built when sent, also takes partition 1, which Java asks for
    // next. Near miss: Java's request asks again for nothing asked before.
    recorded_as_replaced(
        "txn_add_partitions_held_behind_lookup",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#""parts":"0,2""#,
        r#""parts":"0""#,
    );
}

#[test]
fn java_retrying_an_answered_partition_before_the_new_one_is_that_quirk() {
    // Java's stale retry of partition 2 goes before partition 1's request, which the
    // core sends at once. Near miss: Java's next new request is for another partition.
    recorded_as_replaced(
        "txn_java_stale_retry_before_new_partitions",
        Verdict::JavaReasksPendingPartitions,
        r#""parts":"1"}"#,
        r#""parts":"3"}"#,
    );
}

#[test]
fn a_commit_call_java_accepts_as_a_retry_while_the_core_failed_it_is_that_departure() {
    // The application commits again while Java still holds the failing EndTxn (Java
    // hands back the pending result, the core refuses: its commit failed already).
    // Near miss: what Java accepts there is an abort, which no departure explains.
    recorded_as(
        "txn_commit_fails_early_commit_retried",
        Verdict::CommitFailsBeforeBatchesSettle,
        |java| {
            const RETRY: &str = r#"{"ev":"txn_call","call":"commit","result":"ok"}"#;
            let mut java = java.to_vec();
            let last = java.iter().rposition(|l| l == RETRY).unwrap();
            java[last] = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#.to_string();
            java
        },
    );
}

#[test]
fn unknown_producer_id_on_a_partition_without_acks_aborts_in_the_core() {
    // Partition 1's first batch is answered UNKNOWN_PRODUCER_ID (log start 0): Java
    // restarts its sequences and resends it, and commits; the core fails the commit.
    // Near miss: Java never sends that batch again (nor gets its answer).
    recorded_as(
        "txn_UnknownProducerIdAbortsTransaction",
        Verdict::UnknownProducerIdAbortsTransaction,
        |java| {
            let failed = java
                .iter()
                .position(|l| l.contains("=UNKNOWN_PRODUCER_ID"))
                .unwrap();
            let (before, after) = java.split_at(failed + 1);
            let after = after.iter().filter(|l| !l.contains("1:1000:0:0:1"));
            before.iter().chain(after).cloned().collect()
        },
    );
}

#[test]
fn a_tie_between_a_partition_and_the_conversation_goes_to_the_conversation() {
    // On one output line Java sends its stale AddPartitionsToTxn retry where the core
    // produces: both differences start there, no partition detector names it, and the
    // conversation's does. Near miss: that retry asks for a partition nobody asked for.
    recorded_as(
        "txn_tie_goes_to_conversation",
        Verdict::JavaReasksPendingPartitions,
        |java| {
            let mut java = java.to_vec();
            let answered = java
                .iter()
                .position(|l| l.contains(r#""error":"0=NONE,1=NONE""#))
                .unwrap();
            let retry = &mut java[answered + 1];
            assert!(retry.contains(r#""parts":"1"}"#));
            *retry = retry.replace(r#""parts":"1"}"#, r#""parts":"2"}"#);
            java
        },
    );
}

#[test]
fn a_java_tracking_failure_after_a_named_first_difference_keeps_its_verdict() {
    // Java pipelines sequences 1 and 2 of partition 0 before the first ack (the core
    // waits: FirstBatchGate, the first difference). Sequence 1 is answered
    // UNKNOWN_PRODUCER_ID, so Java's TransactionManager drops the partition's entry;
    // sequence 2 is answered REQUEST_TIMED_OUT, and its re-enqueue throws (the batch is
    // left neither queued nor completed: its record never gets an outcome). The trace
    // keeps the first difference's class.
    let name = "txn_java_tracking_failure_after_first_difference";
    let (trace, java) = recorded(name);
    let exception = java
        .iter()
        .position(|l| l.contains(r#""ev":"java_exception""#))
        .unwrap();
    assert!(java[exception].contains("We are re-enqueueing a batch which is not tracked"));
    assert!(java
        .iter()
        .any(|l| l == r#"{"ev":"outcome","rec":2,"result":"none"}"#));
    assert_eq!(verdict(&trace, &java), Verdict::FirstBatchGate, "{name}");
    // Near misses: the same exception written before the first difference (Java's
    // second batch), and another exception where it was.
    let mut early = java.clone();
    let line = early.remove(exception);
    let second_batch = early
        .iter()
        .position(|l| l.contains(r#""batches":"0:1000:0:1:1","t""#))
        .unwrap();
    early.insert(second_batch, line);
    assert_eq!(
        verdict(&trace, &early),
        Verdict::Unexplained,
        "{name}: early"
    );
    let other = replaced(&java, "We are re-enqueueing", "Something else went wrong");
    assert_eq!(
        verdict(&trace, &other),
        Verdict::Unexplained,
        "{name}: other"
    );
}

#[test]
fn java_losing_track_of_a_batch_with_nothing_different_before_is_that_defect() {
    // Both sides send sequences 1, 2 and 3 of partition 0 alike; sequence 2 is answered
    // UNKNOWN_PRODUCER_ID while 1 and 3 are unsettled, so Java's TransactionManager drops
    // the partition's entry, and the acknowledgement of sequence 1 then throws in Java's
    // bookkeeping. Near misses stay unexplained: the exception naming a partition whose
    // entry Java did not drop, and another exception there.
    recorded_as_replaced(
        "txn_JavaLosesTrackOfBatches",
        Verdict::JavaLosesTrackOfBatches,
        "txnPartitionEntry for t-0",
        "txnPartitionEntry for t-1",
    );
    recorded_as_replaced(
        "txn_JavaLosesTrackOfBatches",
        Verdict::JavaLosesTrackOfBatches,
        "IllegalStateException: Trying",
        "NullPointerException: Trying",
    );
}

#[test]
fn a_retried_add_partitions_taking_a_partition_java_never_asks_for_is_that_departure() {
    // Java retries AddPartitionsToTxn(2) after the lookup; the core's retry also takes
    // partition 0, sent to meanwhile. The answer (UNKNOWN_PRODUCER_ID) makes the
    // transaction abortable, so Java never asks for 0, and nothing else differs. Near
    // miss: Java's answer names another code than the core's for partition 2.
    recorded_as_replaced(
        "txn_retried_add_partitions_never_asked",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#""error":"2=UNKNOWN_PRODUCER_ID""#,
        r#""error":"2=TRANSACTION_ABORTABLE""#,
    );
}

#[test]
fn java_asking_for_partitions_new_at_an_abort_is_that_departure() {
    // Java built AddPartitionsToTxn(0,1) (1 pending, 0 new) before the lookup and the
    // abort, and sends it after; the core dropped partition 0 at the abort and asks
    // again for 1 only. Near miss: Java's request leaves out the pending partition.
    recorded_as_replaced(
        "txn_JavaAsksNewPartitionsWhileAborting",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#""parts":"0,1""#,
        r#""parts":"0""#,
    );
}

#[test]
fn an_abort_java_refuses_while_its_failing_commit_is_held_is_that_departure() {
    // The core fails the commit at the OUT_OF_ORDER_SEQUENCE_NUMBER answer and accepts
    // the application's abort; Java, still holding the EndTxn for partition 1's batch,
    // refuses it (its commit is pending) and fails the commit with the same error once
    // that batch is answered. Near miss: Java sends an EndTxn(ABORT) before its commit
    // fails, which its pending commit forbids.
    recorded_as(
        "txn_commit_fails_early_then_abort",
        Verdict::CommitFailsBeforeBatchesSettle,
        |java| {
            const REFUSED: &str = r#"{"ev":"txn_call","call":"abort","result":"refused"}"#;
            let mut java = java.to_vec();
            let at = java.iter().position(|l| l == REFUSED).unwrap();
            java.insert(
                at + 1,
                r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#.to_string(),
            );
            java
        },
    );
}

#[test]
fn java_naming_an_expired_batch_transaction_abortable_is_that_departure() {
    // Partition 1's batch expires on the wire; both fail the commit at once, the core
    // with the batch's REQUEST_TIMED_OUT, Java with TRANSACTION_ABORTABLE wrapping it.
    // Near miss: Java names an error nothing in the trace explains.
    recorded_as_replaced(
        "txn_CommitFailsWithJavasLastError",
        Verdict::CommitFailsWithJavasLastError,
        r#"{"ev":"txn_done","call":"commit","result":"err:120"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"err:45"}"#,
    );
}

#[test]
fn java_failing_a_held_commit_with_its_last_abortable_error_is_that_departure() {
    // Partition 0's batch fails (TOPIC_AUTHORIZATION_FAILED) and the core fails the
    // commit with it; Java holds the EndTxn until partition 1's batch fails
    // (OUT_OF_ORDER_SEQUENCE_NUMBER) and names that last error. Near miss: Java names
    // an error no batch failed with.
    recorded_as_replaced(
        "txn_commit_error_javas_last",
        Verdict::CommitFailsWithJavasLastError,
        r#"{"ev":"txn_done","call":"commit","result":"err:45"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"err:10"}"#,
    );
}

#[test]
fn the_core_expiring_a_batch_while_java_waits_on_the_coordinator_is_that_departure() {
    // AddPartitionsToTxn times out and the lookup after it is unanswered when the batch
    // reaches delivery.timeout.ms: the core expires it and fails the commit; Java, with
    // a transactional request out, skips sendProducerData (no expiry), adds the
    // partition, then expires the batch and fails the commit. Near miss: Java sends its
    // EndTxn before the commit fails (its commit was not held).
    recorded_as(
        "txn_CoreExpiresWhileCoordinatorRequestOut",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        |java| {
            const FAILED: &str = r#"{"ev":"txn_done","call":"commit","result":"err:120"}"#;
            let mut java = java.to_vec();
            let at = java.iter().position(|l| l == FAILED).unwrap();
            java.insert(
                at,
                r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#.to_string(),
            );
            java
        },
    );
}

#[test]
fn one_produce_answer_failing_two_batches_names_the_first_error_in_the_core() {
    // One Produce answer fails partition 0's batch (TOPIC_AUTHORIZATION_FAILED) and
    // partition 1's (INVALID_PRODUCER_EPOCH): the core fails the commit with the first,
    // Java with the last it handled. Near miss: Java names an error that answer did not
    // carry.
    recorded_as_replaced(
        "txn_commit_error_javas_last_of_one_answer",
        Verdict::CommitFailsWithJavasLastError,
        r#"{"ev":"txn_done","call":"commit","result":"err:47"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"err:45"}"#,
    );
}

#[test]
fn an_abortable_transaction_resends_nothing_but_the_lookup() {
    // Regression (a core bug, fixed): AddPartitionsToTxn(2) is on the wire when
    // partition 0's batch fails (INVALID_RECORD) and the transaction becomes abortable;
    // the request times out and both look the coordinator up again. Java then fails the
    // queued AddPartitionsToTxn without sending it (`maybeTerminateRequestWithError`);
    // the core used to resend it. Now the two outputs are the same, line for line (the
    // timed-out request's connection closed on both sides).
    let (trace, java) = recorded("txn_abortable_sends_only_lookups");
    let (core, extra) = core_side::run(&trace);
    assert_eq!(core, java);
    assert_eq!(compare(&trace, &java, &core, &extra).verdict, Verdict::Same);
}

#[test]
fn unknown_producer_id_with_no_commit_pending_refuses_sends_in_the_core() {
    // Partition 1's first batch is answered UNKNOWN_PRODUCER_ID with no commit pending:
    // the core's transaction becomes abortable and it refuses the next send, where Java
    // restarts the partition's sequences and sends the batch again with the same stamp.
    // Near miss: Java's resend carries another stamp.
    recorded_as_replaced(
        "txn_unknown_producer_id_refuses_sends",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":0,"s":10"#,
        r#""batches":"1:1000:0:1:1","t":0,"s":10"#,
    );
}

#[test]
fn the_tv1_abort_whose_only_add_partitions_is_refused_while_aborting_bumps_the_epoch() {
    // The application aborts while the transaction's first AddPartitionsToTxn is on the
    // wire; its answer refuses the partition (TOPIC_AUTHORIZATION_FAILED): nothing was
    // added, so Java's abort completes at once, and the core bumps the epoch first (every
    // TV1 abort after an abortable error). Near miss: Java sends an EndTxn instead (it had
    // something to end).
    recorded_as_replaced(
        "txn_abort_bump_answer_while_aborting",
        Verdict::AbortEndsWithEpochBump,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
    );
}

#[test]
fn a_tv1_abort_whose_end_txn_is_answered_unknown_producer_id_ends_with_the_bump() {
    // Regression (a core bug, fixed): a batch fails (INVALID_RECORD), the abort's
    // EndTxn(ABORT) is answered UNKNOWN_PRODUCER_ID, and Java's abort goes on with the
    // epoch bump it had queued and completes (`EndTxnHandler.abortableErrorIfPossible`
    // changes nothing while aborting). The core used to fail the abort and the producer
    // (fatal 59). Now the two outputs are the same, line for line.
    let (trace, java) = recorded("txn_abort_end_txn_unknown_producer_id_bumps");
    let (core, extra) = core_side::run(&trace);
    assert_eq!(core, java);
    assert_eq!(compare(&trace, &java, &core, &extra).verdict, Verdict::Same);
}

#[test]
fn the_tv1_abort_after_an_abortable_lookup_with_nothing_added_bumps_the_epoch() {
    // The AddPartitionsToTxn is answered NOT_COORDINATOR and the lookup
    // TRANSACTION_ABORTABLE; nothing was added, so Java's abort completes at once, where
    // the core looks the coordinator up again and bumps. Near miss: Java's abort fails.
    recorded_as_replaced(
        "txn_abort_bump_after_abortable_lookup",
        Verdict::AbortEndsWithEpochBump,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn_done","call":"abort","result":"err:-1"}"#,
    );
    // The core's lookup for that bump answered with a fatal error: its abort fails
    // before any InitProducerId. Near miss: Java sends an EndTxn instead.
    recorded_as_replaced(
        "txn_abort_bump_lookup_fails",
        Verdict::AbortEndsWithEpochBump,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
    );
}

#[test]
fn the_tv1_abort_called_before_the_retried_add_partitions_is_refused_bumps_the_epoch() {
    // The abort is called while the AddPartitionsToTxn waits for a lookup; its retry is
    // refused (TOPIC_AUTHORIZATION_FAILED): nothing was added, Java completes the abort,
    // the core bumps. Near miss: Java sends an EndTxn (it had something to end).
    recorded_as_replaced(
        "txn_abort_bump_retried_add_refused",
        Verdict::AbortEndsWithEpochBump,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
    );
}

#[test]
fn the_next_abort_after_a_refused_bump_sends_the_bump_again_in_the_core() {
    // The abort's bump (after RECORD_LIST_TOO_LARGE) is refused TRANSACTION_ABORTABLE,
    // the abort fails on both sides, and the application aborts again: Java completes at
    // once (its EndTxn had ended the transaction and dropped the bump), the core sends
    // the bump again. Near miss: Java bumps another identity.
    recorded_as_replaced(
        "txn_AbortRetriesRefusedBump",
        Verdict::AbortRetriesRefusedBump,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn","api":"init","pid":1000,"epoch":1}"#,
    );
}

#[test]
fn java_keeps_the_aborted_transaction_after_an_abort_ended_through_its_bump() {
    // EndTxn(ABORT) answered UNKNOWN_PRODUCER_ID, the abort ends with the bump on both
    // sides; Java never resets the transaction. Its next transaction sends to partition
    // 0 without asking to add it (still in `partitionsInTransaction`), where the core
    // asks. Near miss: Java asks for partition 0 later (after the commit call).
    recorded_as(
        "txn_JavaKeepsTransactionAfterBumpedAbort",
        Verdict::JavaKeepsTransactionAfterBumpedAbort,
        |java| {
            const COMMIT: &str = r#"{"ev":"txn_call","call":"commit","result":"ok"}"#;
            let mut java = java.to_vec();
            let at = java.iter().position(|l| l == COMMIT).unwrap();
            java.insert(
                at + 1,
                r#"{"ev":"txn","api":"add_partitions","pid":1000,"epoch":1,"parts":"0"}"#
                    .to_string(),
            );
            java
        },
    );
    // An empty next transaction: Java's commit sends an EndTxn (`transactionStarted`
    // kept), the core completes at once. Near miss: Java's EndTxn aborts.
    recorded_as_replaced(
        "txn_java_keeps_started",
        Verdict::JavaKeepsTransactionAfterBumpedAbort,
        r#""epoch":1,"commit":1"#,
        r#""epoch":1,"commit":0"#,
    );
    // A next transaction on another partition: after its EndTxn Java bumps again (the
    // bump request kept), the core completes. Near miss: Java's bump names the old epoch.
    recorded_as_replaced(
        "txn_java_keeps_bump",
        Verdict::JavaKeepsTransactionAfterBumpedAbort,
        r#"{"ev":"txn","api":"init","pid":1000,"epoch":1}"#,
        r#"{"ev":"txn","api":"init","pid":1000,"epoch":0}"#,
    );
    // Partition 1's AddPartitionsToTxn was answered UNKNOWN_PRODUCER_ID in the aborted
    // transaction: Java asks for it again with the next transaction's partition 2
    // (`pendingPartitionsInTransaction` kept). Near miss: Java's extra partition is one
    // the aborted transaction had added.
    recorded_as_replaced(
        "txn_java_keeps_pending",
        Verdict::JavaKeepsTransactionAfterBumpedAbort,
        r#""epoch":1,"parts":"1,2""#,
        r#""epoch":1,"parts":"0,2""#,
    );
}

#[test]
fn the_core_expiring_a_batch_while_java_waits_on_the_coordinator_refuses_the_next_send() {
    // No commit pending. Partition 0's AddPartitionsToTxn times out, and the lookup after
    // it is unanswered when the batch reaches delivery.timeout.ms: the core expires it,
    // its transaction becomes abortable and it refuses the next send. Java, whose Sender
    // skips sendProducerData (and with it expiry) while a transactional request is out,
    // accepts the send, gets the lookup answered, sends the held AddPartitionsToTxn, and
    // only then expires both records. Near miss: Java sends an EndTxn where it sent the
    // held AddPartitionsToTxn.
    recorded_as(
        "txn_expiry_refuses_sends",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        |java| {
            let mut java = java.to_vec();
            let at = java
                .iter()
                .rposition(|l| l.contains(r#""api":"add_partitions","pid""#))
                .unwrap();
            java[at] = r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#.into();
            java
        },
    );
}

#[test]
fn the_core_expiring_a_batch_during_a_lookup_refuses_the_send_java_makes_after_it() {
    // As above, but the lookup is answered before the send: Java sends the held
    // AddPartitionsToTxn (partitions 0 and 1) at once, before its Sender runs
    // sendProducerData again; the core, abortable since its batch expired during the
    // lookup, sends nothing but refuses the send. Near miss: Java sends an EndTxn
    // instead of the held AddPartitionsToTxn.
    recorded_as_replaced(
        "txn_expiry_refuses_sends_after_lookup",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"txn","api":"add_partitions","pid":1000,"epoch":0,"parts":"0,1"}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
    );
}

#[test]
fn unknown_producer_id_refusing_sends_while_java_never_resends_is_that_simplification() {
    // Partition 3's batch is answered UNKNOWN_PRODUCER_ID while AddPartitionsToTxn(0) is
    // out: the core's transaction becomes abortable and it refuses the next send; Java
    // keeps the batch to retry it, but its Sender is held by the transactional request,
    // whose answer (INVALID_PRODUCER_EPOCH) fails the transaction before the retry goes
    // out, so Java never sends the batch again and fails its records with that error.
    // Near miss: Java fails a record with UNKNOWN_PRODUCER_ID (it did not keep it).
    recorded_as_replaced(
        "txn_unknown_producer_id_java_never_resends",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#"{"ev":"outcome","rec":0,"result":"err:90"}"#,
        r#"{"ev":"outcome","rec":0,"result":"err:59"}"#,
    );
}

#[test]
fn the_core_failing_the_commit_early_while_javas_sender_loses_the_batch_it_waits_for() {
    // The commit is pending with two batches of partition 0 on the wire; the first is
    // answered UNKNOWN_PRODUCER_ID after an acknowledged offset (Java does not retry it
    // either): the core fails the commit at once, Java holds the EndTxn and drops the
    // partition's entry (`handleFailedBatch`), so the second batch's answer makes its
    // Sender throw and that batch never completes: Java's commit never completes (record
    // 2 has no outcome). Near misses: the exception names another partition; Java sends
    // an EndTxn after the refused send (its commit was not held).
    recorded_as_replaced(
        "txn_commit_fails_early_java_never_completes",
        Verdict::CommitFailsBeforeBatchesSettle,
        "txnPartitionEntry for t-0,",
        "txnPartitionEntry for t-1,",
    );
    let (trace, java) = recorded("txn_commit_fails_early_java_never_completes");
    let mut sent = java.clone();
    let at = sent
        .iter()
        .position(|l| l.contains(r#""ev":"send_refused""#))
        .unwrap();
    sent.insert(
        at + 1,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#.to_string(),
    );
    assert_eq!(verdict(&trace, &sent), Verdict::Unexplained);
}

#[test]
fn a_held_add_partitions_retry_the_core_never_answered_is_not_a_stale_retry() {
    // One partition: its AddPartitionsToTxn times out, and the batch expires in the core
    // while the lookup after it is out; the lookup is answered and the core, abortable,
    // refuses the next send, where Java sends the held AddPartitionsToTxn(0) again. The
    // partition was never added, so this is not `JavaReasksPendingPartitions` (a stale
    // retry of partitions already added) but the expiry departure. Near miss: Java sends
    // an EndTxn instead of the held AddPartitionsToTxn.
    recorded_as(
        "txn_expiry_refuses_sends_after_lookup_one_partition",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        |java| {
            let mut java = java.to_vec();
            let at = java
                .iter()
                .rposition(|l| l.contains(r#""api":"add_partitions","pid""#))
                .unwrap();
            java[at] = r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#.into();
            java
        },
    );
}

#[test]
fn the_core_fails_the_commit_early_and_java_loses_track_of_the_batch_it_waits_for() {
    // Partition 0's sequences 1 and 2 are on the wire when the commit is called; 1 is
    // answered UNKNOWN_PRODUCER_ID (an acknowledged offset at the log start: not
    // retried). The core fails the commit at once (CommitFailsBeforeBatchesSettle);
    // Java holds its EndTxn, drops the partition's entry, and throws when 2 is
    // answered, so that batch and Java's commit never complete. Near miss: the
    // exception names a partition the answer did not touch.
    recorded_as_replaced(
        "txn_commit_fails_java_loses_track",
        Verdict::CommitFailsBeforeBatchesSettle,
        "txnPartitionEntry for t-0,",
        "txnPartitionEntry for t-2,",
    );
}

#[test]
fn a_lookup_queued_in_a_sender_loop_that_sends_nothing_goes_out_in_the_same_step() {
    // While aborting, the EndTxn is answered COORDINATOR_NOT_AVAILABLE and the lookup
    // after it TRANSACTION_ABORTABLE (both scripted before the abort, so one step
    // answers them). Java's Sender spends one loop queueing the next lookup for the
    // EndTxn (`maybeFindCoordinatorAndRetry`, nothing sent) and sends it in the next;
    // the harness pumps until two idle loops in a row, so the lookup goes out in that
    // step, before the next send is refused, as the core does. The abort then ends with
    // the core's bump. Near miss: Java's output as the old pump (stopping at the first
    // idle loop) wrote it, the send refused before the lookup.
    recorded_as(
        "txn_lookup_after_abortable_lookup_same_step",
        Verdict::AbortEndsWithEpochBump,
        |java| {
            let mut java = java.to_vec();
            let refused = java
                .iter()
                .position(|l| l.contains(r#""ev":"send_refused""#))
                .unwrap();
            assert!(java[refused - 1].contains(r#""api":"find_coordinator"}"#));
            java.swap(refused - 1, refused);
            java
        },
    );
}

#[test]
fn the_core_expiring_a_batch_during_a_lookup_refuses_the_commit_java_accepts() {
    // As the one-partition form above, but the application commits where it sent: the
    // core, abortable since its batch expired during the lookup, refuses the commit;
    // Java sends the held AddPartitionsToTxn(0), accepts the commit and fails it only
    // after the batch expires. Near miss: Java sends an EndTxn instead of the held
    // AddPartitionsToTxn.
    recorded_as(
        "txn_expiry_refuses_commit_after_lookup",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        |java| {
            let mut java = java.to_vec();
            let at = java
                .iter()
                .rposition(|l| l.contains(r#""api":"add_partitions","pid""#))
                .unwrap();
            java[at] = r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#.into();
            java
        },
    );
}

#[test]
fn java_asking_for_pending_partitions_while_aborting_an_abortable_transaction_is_that_quirk() {
    // Partition 1's batch fails (INVALID_RECORD) while AddPartitionsToTxn(0) is out; its
    // answer (COORDINATOR_NOT_AVAILABLE) sends both to a lookup, and the application
    // aborts. The core, abortable, dropped the request and sends EndTxn(ABORT) after the
    // lookup; Java's request, queued behind the lookup, survives the abort: it asks for
    // partition 0, then sends the same EndTxn. Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_asks_pending_partitions_while_aborting",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#""commit":0}"#,
        r#""commit":1}"#,
    );
}

#[test]
fn a_topic_authorization_failure_yields_to_an_error_java_acts_on_at_once() {
    // Regression (a core bug, fixed): one AddPartitionsToTxn answer refuses partition 2
    // TOPIC_AUTHORIZATION_FAILED and partition 3 NOT_COORDINATOR. Java's
    // `AddPartitionsToTxnHandler` only notes the unauthorized topic and acts on the
    // other error, in whatever order its map yields them: a lookup, and the request
    // again. The core used to act on the first error listed and made the transaction
    // abortable. Now the outputs are the same.
    let (trace, java) = recorded("txn_add_partitions_coordinator_error_wins");
    let (core, extra) = core_side::run(&trace);
    assert_eq!(core, java);
    assert_eq!(compare(&trace, &java, &core, &extra).verdict, Verdict::Same);
    // The same bug under a retry that took a new partition: the core's answer refuses
    // partition 0 TOPIC_AUTHORIZATION_FAILED and partition 1 UNKNOWN_PRODUCER_ID, Java's
    // (to its retry of partition 1 alone) UNKNOWN_PRODUCER_ID. The core used to fail the
    // commit with TOPIC_AUTHORIZATION_FAILED; now with UNKNOWN_PRODUCER_ID as Java, and
    // the only difference is the retry's partitions.
    let (trace, java) = recorded("txn_add_partitions_unknown_producer_id_wins");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::RetriedAddPartitionsTakesNewPartitions
    );
    let (core, _) = core_side::run(&trace);
    assert!(core.contains(&r#"{"ev":"txn_done","call":"commit","result":"err:59"}"#.to_string()));
}

#[test]
fn java_asking_for_partitions_new_at_an_abort_where_the_core_ends_it_is_that_departure() {
    // AddPartitionsToTxn(3) is lost with its connection; partition 2 is sent to while
    // Java looks the coordinator up, so Java builds AddPartitionsToTxn(2,3) (3 pending,
    // 2 new) beside its retry of (3); then the application aborts. Java sends both
    // requests, then its EndTxn(ABORT); the core dropped partition 2 at the abort, asks
    // again for 3 and ends the transaction at once. Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_asks_new_partitions_core_ends_abort",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn unknown_producer_id_before_the_commit_call_refuses_it_in_the_core() {
    // Partition 1's first batch is answered UNKNOWN_PRODUCER_ID just before the
    // application commits: the core's transaction is abortable, so it refuses the
    // commit; Java restarts the partition's sequences, accepts the commit, resends the
    // batch with the same stamp and commits. Near miss: Java's resend carries another
    // stamp.
    recorded_as_replaced(
        "txn_unknown_producer_id_refuses_commit",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1,3:1000:0:0:1""#,
        r#""batches":"1:1000:0:1:1,3:1000:0:0:1""#,
    );
}

#[test]
fn a_stale_retry_where_the_core_asks_for_new_partitions_is_javas_reasking() {
    // AddPartitionsToTxn(0) is lost with its connection; after the lookup Java sends
    // (0,2), built meanwhile, and then its stale retry of (0); the core asks for the new
    // partition 3 there, then for 1, which Java asks for together, (1,3). Near miss:
    // Java never asks for partition 3, with nothing that ended its adding.
    recorded_as_replaced(
        "txn_java_stale_retry_core_asks_new",
        Verdict::JavaReasksPendingPartitions,
        r#""parts":"1,3""#,
        r#""parts":"1""#,
    );
}

#[test]
fn a_batch_the_core_expires_while_a_lookup_is_out_makes_it_refuse_the_commit() {
    // Partition 1's batch waits behind an AddPartitionsToTxn that times out, then a
    // lookup that is out when its delivery timeout passes: the core expires it, so its
    // transaction is abortable and it refuses the commit; Java, expiring nothing while a
    // transactional request is in flight, accepts it and fails it only after its
    // AddPartitionsToTxn is answered. Near miss: Java's commit succeeds.
    recorded_as_replaced(
        "txn_core_expired_refuses_commit",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"txn_done","call":"commit","result":"err:120"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"ok"}"#,
    );
}

#[test]
fn a_retry_taking_new_partitions_java_never_asks_for_after_its_adding_ended() {
    // After a lookup Java sends its retry of AddPartitionsToTxn(2), the core (0,2). Java's
    // answer, UNKNOWN_PRODUCER_ID, makes its transaction abortable (the commit is
    // refused), so it never asks for 0; the core's answer gives partition 0
    // UNKNOWN_TOPIC_OR_PARTITION, which it acts on first (a retry), and the histories
    // part. Near miss: Java's commit is accepted, so nothing ended its adding.
    recorded_as_replaced(
        "txn_retried_add_partitions_adding_ended",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#"{"ev":"txn_call","call":"commit","result":"refused"}"#,
        r#"{"ev":"txn_call","call":"commit","result":"ok"}"#,
    );
}

#[test]
fn the_java_harness_runs_the_sender_until_it_has_nothing_left_to_do() {
    // Harness fix: while the application aborts, the EndTxn is answered
    // COORDINATOR_NOT_AVAILABLE and the lookup that follows TRANSACTION_ABORTABLE, both
    // answers scripted earlier and handed to the requests as they are sent, in one pump.
    // Java's Sender needs one `runOnce` to queue the next lookup (the EndTxn finds no
    // coordinator: `maybeFindCoordinatorAndRetry`) and another to send it; the pump
    // used to stop after the first round that sent nothing, so Java's lookup came only
    // after the next application call (the begin it refuses), the core's before. Now
    // both send the lookup first, and the trace's only difference is the TV1 abort's
    // bump.
    let (trace, java) = recorded("txn_lookup_again_in_the_same_pump");
    let lookup = java
        .iter()
        .rposition(|l| l == r#"{"ev":"txn","api":"find_coordinator"}"#)
        .unwrap();
    let begin = java
        .iter()
        .rposition(|l| l == r#"{"ev":"txn_call","call":"begin","result":"refused"}"#)
        .unwrap();
    assert!(lookup < begin);
    assert_eq!(verdict(&trace, &java), Verdict::AbortEndsWithEpochBump);
}

#[test]
fn a_batch_java_leaves_behind_at_a_drain_stop_and_then_aborts_is_that_quirk() {
    // Java's drain of node 1 stops at partition 1's retry and leaves partition 0's new
    // batch behind, which the core sends in that step; partition 1's batch is then
    // answered MESSAGE_TOO_LARGE (one record: not split), Java's transaction turns
    // abortable and fails partition 0's undrained batch, so Java never sends it (its
    // record fails with MESSAGE_TOO_LARGE; the core's is acknowledged). Near miss:
    // without Java's drain-stop report.
    recorded_as(
        "txn_drain_stop_then_abortable",
        Verdict::JavaDrainStopsAtWaitingPartition,
        common::without_drain_stops,
    );
}

#[test]
fn one_add_partitions_answer_with_two_errors_is_acted_on_in_another_order() {
    // AddPartitionsToTxn(1,2) is answered 1=REQUEST_TIMED_OUT, 2=COORDINATOR_NOT_AVAILABLE:
    // Java's map yields partition 2 first (a lookup), the core acts on the first listed
    // (a retry). Near miss: Java's line after the answer is not the lookup its order
    // gives.
    recorded_as(
        "txn_add_partitions_errors_other_order",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        |java| {
            const ANSWER: &str = r#"{"ev":"coord_answered","api":"add_partitions","error":"1=REQUEST_TIMED_OUT,2=COORDINATOR_NOT_AVAILABLE"}"#;
            let mut java = java.to_vec();
            let at = java.iter().position(|l| l == ANSWER).unwrap();
            java[at + 1] = r#"{"ev":"send_refused","rec":0}"#.to_string();
            java
        },
    );
}

#[test]
fn a_drain_stop_that_moves_the_answers_classifies_the_conversation_it_shifts() {
    // Java's drain of node 0 stops at partition 0's retry and leaves behind partition 1's
    // batch, to be retried on node 0 (its new leader) after NOT_ENOUGH_REPLICAS; the core
    // resends it at once, Java a step later with partition 0's next batch. Every
    // partition's history is the same, but the scripted answers reach other requests, so
    // Java's batches are all answered when the application aborts again and its EndTxn
    // goes out in that step, the core's only after its last answer. The earlier
    // difference, the drain stop, classifies the trace. Near miss: without Java's
    // drain-stop report.
    recorded_as(
        "txn_drain_stop_moves_conversation",
        Verdict::JavaDrainStopsAtWaitingPartition,
        common::without_drain_stops,
    );
}

#[test]
fn a_possibly_written_batch_answered_message_too_large_fails_the_core_commit() {
    // Partition 1's two-record batch is answered NOT_LEADER_OR_FOLLOWER (it may be in
    // the log) and, resent, MESSAGE_TOO_LARGE while the commit waits: the core never
    // splits a batch that may be in the log (departure 2), so it fails it and the
    // commit; Java splits it, sends the piece (the same two records, same stamp) again
    // and commits. Near miss: Java's piece starts at another sequence.
    recorded_as_replaced(
        "txn_never_split_possibly_written",
        Verdict::NoRenumberOfPossiblyWritten,
        r#""batches":"1:1000:0:1:2","t":0,"s":15"#,
        r#""batches":"1:1000:0:2:2","t":0,"s":15"#,
    );
}

#[test]
fn java_asking_for_partitions_new_at_an_abort_where_the_core_bumps_is_that_departure() {
    // AddPartitionsToTxn(0) is lost with its connection; Java builds (0,2) while it
    // looks the coordinator up, and the application aborts. The retry of (0) is answered
    // TRANSACTION_ABORTABLE: nothing was added, so the core ends the abort with its
    // KIP-360 bump; Java sends its pre-built (0,2), which adds both, and ends them with
    // EndTxn(ABORT). Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_asks_new_partitions_core_bumps",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn a_retry_taking_new_partitions_java_asks_for_in_part_before_its_adding_ended() {
    // After the lookup Java sends its held AddPartitionsToTxn(1), the core (0,1,3); Java
    // then asks for (0,1), built before partition 3 was new to it, whose answer,
    // TRANSACTIONAL_ID_AUTHORIZATION_FAILED, is fatal: Java never asks for 3. Near miss:
    // that answer adds both and no send is refused, so nothing ended Java's adding.
    recorded_as(
        "txn_retried_add_partitions_some_asked_adding_ended",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        |java| {
            replaced(
                java,
                "0=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,1=TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "0=NONE,1=NONE",
            )
            .into_iter()
            .filter(|l| !l.contains(r#""ev":"send_refused""#))
            .collect()
        },
    );
}

#[test]
fn an_expiry_during_a_lookup_where_the_core_writes_nothing_more_is_that_departure() {
    // AddPartitionsToTxn(0) waits behind a lookup that times out; the lookup's retry is
    // answered NONE after the batch's delivery timeout: the core expires it there and,
    // its transaction abortable and nothing more called, writes no transactional line
    // again; Java sends the AddPartitionsToTxn that waited for the lookup (no expiry
    // check while a transactional request goes out) and expires the record later. Near
    // miss: Java delivers the record, so it expires nothing.
    recorded_as_replaced(
        "txn_expiry_during_lookup_history_ends",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"outcome","rec":0,"result":"err:7"}"#,
        r#"{"ev":"outcome","rec":0,"result":"ok:0"}"#,
    );
}

#[test]
fn an_expiry_during_a_lookup_before_an_abort_is_that_departure() {
    // As `txn_expiry_during_lookup_history_ends`, with the application's abort accepted
    // while the lookup is out: at the lookup's answer the core, its transaction
    // abortable by the expiry, ends the abort with its KIP-360 bump; Java sends the
    // AddPartitionsToTxn that waited for the lookup, then ends that partition with
    // EndTxn(ABORT) and fails the record unsent. Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_expiry_during_lookup_java_aborts",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn the_core_failing_the_commit_early_then_aborting_while_javas_sender_loses_its_batch() {
    // Partition 0's batch 1 is answered UNKNOWN_PRODUCER_ID while batch 2 is out and the
    // commit waits: the core fails the commit at once; Java fails the batch, drops the
    // partition's entry and holds the EndTxn. The application aborts: Java refuses (its
    // commit is pending), the core accepts. Batch 2's answer then makes Java's Sender
    // throw, and Java's commit never completes. Near miss: Java's exception names
    // another partition.
    recorded_as_replaced(
        "txn_commit_fails_early_java_never_completes_after_abort",
        Verdict::CommitFailsBeforeBatchesSettle,
        "txnPartitionEntry for t-0,",
        "txnPartitionEntry for t-1,",
    );
    // Nor when Java accepts the abort: a pending commit refuses it.
    recorded_as_replaced(
        "txn_commit_fails_early_java_never_completes_after_abort",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#"{"ev":"txn_call","call":"abort","result":"refused"}"#,
        r#"{"ev":"txn_call","call":"abort","result":"ok"}"#,
    );
}

#[test]
fn an_older_queued_request_going_before_the_retry_of_a_mixed_answer_is_that_departure() {
    // (0) is answered COORDINATOR_NOT_AVAILABLE and waits behind the lookup; Java also
    // builds (0,1) when 1 is new. (0,1) goes first and is answered 0=PRODUCER_FENCED,
    // 1=CONCURRENT_TRANSACTIONS: Java's map yields 1 first and retries, the core takes 0
    // and is fenced. Java's first line is its older (0), then the retry of (0,1). Near
    // miss: Java never sends that retry.
    recorded_as(
        "txn_add_partitions_older_request_first",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        |java| {
            let at = java
                .iter()
                .position(|l| l.contains(r#""error":"0=NONE"}"#))
                .unwrap();
            java.iter()
                .enumerate()
                .filter(|&(k, l)| !(k > at && l.contains(r#""parts":"0,1""#)))
                .map(|(_, l)| l.clone())
                .collect()
        },
    );
}

#[test]
fn an_older_request_for_pending_partitions_never_sent_before_is_that_departure() {
    // (3) waits behind a lookup while 0, 1 and 2 become new: Java builds (0,2,3) and
    // (0,1,2,3); (0,1,2,3) goes first and is answered CONCURRENT_TRANSACTIONS. Java
    // then sends its older (0,2,3), never sent before, where the core retries
    // (0,1,2,3); Java asks for 1 again later. Near miss: Java never asks for 1 again.
    recorded_as(
        "txn_java_sends_older_pending_request",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        |java| {
            let at = java
                .iter()
                .position(|l| l.contains(r#""parts":"0,2,3""#))
                .unwrap();
            java.iter()
                .enumerate()
                .map(|(k, l)| {
                    if k > at {
                        l.replace(r#""parts":"0,1,2,3""#, r#""parts":"0,2,3""#)
                    } else {
                        l.clone()
                    }
                })
                .collect()
        },
    );
}

#[test]
fn an_older_request_after_the_answer_that_failed_the_adding_while_aborting_is_that_departure() {
    // (0,1) is answered TRANSACTION_ABORTABLE for both partitions after the application's
    // abort: the core, nothing added, ends the abort with its KIP-360 bump; Java sends
    // its older (1), built when only 1 was pending, which adds it, and ends it with
    // EndTxn(ABORT). Near miss: Java's request names both partitions (the answered
    // request again, not an older one).
    recorded_as(
        "txn_java_older_request_after_failed_adding",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        |java| {
            // Only Java's request after the failing answer (its first (1) is shared).
            let at = java
                .iter()
                .position(|l| l.contains("0=TRANSACTION_ABORTABLE,1=TRANSACTION_ABORTABLE"))
                .unwrap();
            java.iter()
                .enumerate()
                .map(|(k, l)| {
                    if k > at {
                        l.replace(r#""parts":"1"}"#, r#""parts":"0,1"}"#)
                    } else {
                        l.clone()
                    }
                })
                .collect()
        },
    );
}

#[test]
fn unknown_producer_id_during_a_lookup_where_the_core_writes_nothing_more_is_that_departure() {
    // Partition 1's batch is answered UNKNOWN_PRODUCER_ID while AddPartitionsToTxn(0)
    // waits behind a lookup: the core makes its transaction abortable (the documented
    // simplification) and writes no transactional line again; Java keeps the batch,
    // sends the AddPartitionsToTxn that waited for the lookup and the batch again with
    // the same stamp, and delivers it. Near miss: Java fails the record with
    // UNKNOWN_PRODUCER_ID.
    recorded_as_replaced(
        "txn_unknown_producer_id_history_ends",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#"{"ev":"outcome","rec":1,"result":"ok:0"}"#,
        r#"{"ev":"outcome","rec":1,"result":"err:59"}"#,
    );
}

#[test]
fn a_fatal_coordinator_answer_while_java_holds_the_commit_is_javas_last_error() {
    // Partition 1's batch is answered UNKNOWN_PRODUCER_ID while AddPartitionsToTxn(0) is
    // out and the commit waits: the core fails the commit with 59; Java holds the EndTxn,
    // then the AddPartitionsToTxn answer TRANSACTIONAL_ID_AUTHORIZATION_FAILED is fatal
    // in Java's handler and its held commit fails with it (53); the core goes fatal with
    // 53. Near miss: Java's commit fails with another code.
    recorded_as_replaced(
        "txn_commit_fails_then_fatal_coordinator_answer",
        Verdict::CommitFailsWithJavasLastError,
        r#"{"ev":"txn_done","call":"commit","result":"err:53"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"err:90"}"#,
    );
}

#[test]
fn the_core_failing_the_commit_early_then_aborting_with_add_partitions_out() {
    // Partition 1's batch is answered OUT_OF_ORDER_SEQUENCE_NUMBER while
    // AddPartitionsToTxn(0) is out and the commit waits: the core fails the commit; the
    // application aborts, which Java refuses (its commit is pending) and the core
    // accepts; the AddPartitionsToTxn answer comes on both sides, and Java's held commit
    // then fails with the same error. Near miss: Java's AddPartitionsToTxn answer is one
    // the core never got.
    recorded_as_replaced(
        "txn_commit_fails_early_abort_add_partitions_out",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#""api":"add_partitions","error":"0=NONE""#,
        r#""api":"add_partitions","error":"0=COORDINATOR_NOT_AVAILABLE""#,
    );
}

#[test]
fn a_batch_java_leaves_undrained_then_aborts_with_the_transaction_is_the_drain_stop() {
    // Java's drain of node 0 stops before partition 1 in the step where the core sends
    // partition 1's next batch; the application then aborts, which both accept, and Java
    // aborts the batch it never drained (an aborting transaction's undrained batches are
    // failed, never sent). Near miss: Java refuses the abort, so nothing in its output
    // says why it never sends the batch.
    recorded_as_replaced(
        "txn_drain_stop_then_abort",
        Verdict::JavaDrainStopsAtWaitingPartition,
        r#"{"ev":"txn_call","call":"abort","result":"ok"}"#,
        r#"{"ev":"txn_call","call":"abort","result":"refused"}"#,
    );
}

#[test]
fn unknown_producer_id_then_a_clean_answer_refuses_the_core_commit() {
    // Partition 2's first batch is answered UNKNOWN_PRODUCER_ID (nothing acknowledged:
    // Java restarts its sequences and retries), then partition 3's batch is answered
    // NONE; the application commits: the core, whose transaction turned abortable at the
    // first answer, refuses; Java accepts and sends the batch again with the same stamp.
    // Near miss: Java's resend has another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_then_answer_refuses_commit",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"2:1000:0:0:1","t":0,"s":12"#,
        r#""batches":"2:1000:0:1:1","t":0,"s":12"#,
    );
}

#[test]
fn a_held_request_for_pending_partitions_while_the_core_refuses_sends_first_is_that_departure() {
    // Abortable before the abort, both look the coordinator up; after it Java sends
    // its held AddPartitionsToTxn(3) and refuses the sends one line later, where the
    // core refuses them at once and then ends the abort with the EndTxn(ABORT) Java
    // sends next. Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_asks_pending_while_aborting_after_refusals",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn unknown_producer_id_while_java_holds_the_commit_then_a_fatal_answer_in_java() {
    // Partition 2's first batch is answered UNKNOWN_PRODUCER_ID while the commit waits:
    // the core fails the commit with 59; Java keeps the batch to retry, looks the
    // coordinator up after NOT_COORDINATOR and asks to add partition 0 again (the core,
    // abortable, only looks up), which is answered INVALID_TXN_STATE, fatal in Java: its
    // commit fails with 48 before the retry goes out. Near miss: Java's commit fails
    // with a code no answer brought.
    recorded_as_replaced(
        "txn_unknown_producer_id_then_java_fatal",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#"{"ev":"txn_done","call":"commit","result":"err:48"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"err:53"}"#,
    );
}

#[test]
fn the_abort_called_again_before_the_core_ends_it_while_java_asks_new_partitions_is_that_departure()
{
    // The abort is accepted while Java's AddPartitionsToTxn(1) waits behind a lookup, with
    // a request for partitions 0 and 1 built beside it; after the lookup both add 1, then
    // Java sends the request built before the abort, where the core refuses a send, and
    // the application calls abort again (both accept: the same pending abort) before the
    // core sends the EndTxn(ABORT) Java sends next. Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_abort_called_again_before_core_end_txn",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn a_held_request_for_pending_partitions_whose_answer_fails_both_aborts_alike() {
    // Abortable before the abort (a batch answered INVALID_RECORD), AddPartitionsToTxn(3)
    // waits behind a lookup; after it Java sends that request, the core its EndTxn(ABORT);
    // the scripted TRANSACTIONAL_ID_AUTHORIZATION_FAILED answers both, fatal to both
    // requests, so Java never sends its EndTxn and both aborts fail with 53. Near miss:
    // Java's request took an answer the core's EndTxn did not get.
    recorded_as_replaced(
        "txn_java_asks_pending_while_aborting_fails_alike",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#""error":"3=TRANSACTIONAL_ID_AUTHORIZATION_FAILED""#,
        r#""error":"3=INVALID_TXN_STATE""#,
    );
}

#[test]
fn a_request_built_before_the_abort_whose_answer_fails_both_aborts_alike() {
    // Partition 1's AddPartitionsToTxn waits behind a lookup when partition 0 is new and
    // the application aborts; after the lookup both ask again for 1 (answered NONE), then
    // Java sends the request it built with 0 and 1, the core its EndTxn(ABORT); the
    // scripted TRANSACTIONAL_ID_AUTHORIZATION_FAILED fails both aborts with 53. Near
    // miss: Java's abort completes.
    recorded_as_replaced(
        "txn_java_asks_new_partitions_aborts_fail_alike",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn_done","call":"abort","result":"err:53"}"#,
        r#"{"ev":"txn_done","call":"abort","result":"ok"}"#,
    );
}

#[test]
fn an_older_request_after_an_answer_adding_nothing_while_the_core_bumps() {
    // AddPartitionsToTxn(1) is answered NOT_COORDINATOR; after the lookup both ask for 0
    // and 1 (Java's retry of 1 still waits in its queue), the application aborts, and
    // the answer gives 0 NONE and 1 TRANSACTION_ABORTABLE: neither side adds anything.
    // The core ends the abort with its KIP-360 bump (nothing to end); Java sends its
    // older request for 1, then EndTxn(ABORT). Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_older_request_after_partly_failed_adding",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn the_abort_failing_while_the_core_asks_for_pending_partitions_is_that_departure() {
    // Aborted while AddPartitionsToTxn(2) waits behind lookups; Java then sends the request
    // it built before the abort (1,2), the core asks again for 2 only, and the answer's
    // PRODUCER_FENCED fails both aborts alike. Near miss: Java's abort fails with another
    // code.
    recorded_as_replaced(
        "txn_abort_fails_while_core_asks_pending",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn_done","call":"abort","result":"err:90"}"#,
        r#"{"ev":"txn_done","call":"abort","result":"err:53"}"#,
    );
}

#[test]
fn an_older_request_after_the_adding_failed_where_an_answer_named_a_partition_none() {
    // An answer gives 3 NONE beside 1 NOT_COORDINATOR (nothing added on either side:
    // Java's handler returns at the lookup before adding), the retry is answered
    // UNKNOWN_PRODUCER_ID while aborting: the core ends the abort with its KIP-360 bump
    // (nothing to end), Java sends its older AddPartitionsToTxn(1), then EndTxn(ABORT).
    // Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_older_request_core_bumps_nothing_added",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":0}"#,
        r#"{"ev":"txn","api":"end_txn","pid":1000,"epoch":0,"commit":1}"#,
    );
}

#[test]
fn unknown_producer_id_then_java_asks_a_new_partition_before_the_commit_the_core_refuses() {
    // Partition 3's first batch is answered UNKNOWN_PRODUCER_ID (nothing acknowledged:
    // Java retries it); after the answer to AddPartitionsToTxn(1) Java asks for partition
    // 0, new, and accepts the commit; the core, abortable, asks for nothing and refuses
    // the commit. Java resends the batch with the same stamp. Near miss: Java's resend
    // has another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_refuses_commit_after_new_partitions",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:0:1,3:1000:0:0:1","t":0,"s":14"#,
        r#""batches":"0:1000:0:0:1,3:1000:0:1:1","t":0,"s":14"#,
    );
}

#[test]
fn the_abortable_core_draining_nothing_after_unknown_producer_id_is_that_departure() {
    // Partition 1's first batch is answered UNKNOWN_PRODUCER_ID (nothing acknowledged:
    // Java restarts its sequences and retries) in the step partition 3 is added: Java
    // produces partition 3's batch and resends partition 1's, where the core, abortable,
    // drains nothing (its first difference is on partition 3, before the conversation's,
    // the send it refuses). Near miss: Java's resend has another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_core_drains_nothing",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":0,"s":10"#,
        r#""batches":"1:1000:0:1:1","t":0,"s":10"#,
    );
}

#[test]
fn unknown_producer_id_refused_send_java_refuses_after_its_adding_fails() {
    // Partition 2's batch is answered UNKNOWN_PRODUCER_ID while AddPartitionsToTxn(0) is
    // retried: the core, abortable, drops the request and refuses the next send at once;
    // Java asks for partition 0 again, is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    // (fatal in Java) and only then refuses the same send. Near miss: Java's answer adds
    // the partition, so nothing in Java's output fails its transaction.
    recorded_as_replaced(
        "txn_unknown_producer_id_refused_before_java_fails",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""error":"0=TRANSACTIONAL_ID_AUTHORIZATION_FAILED""#,
        r#""error":"0=NONE""#,
    );
}

#[test]
fn a_retry_taking_new_partitions_never_asked_after_a_failed_batch_is_that_departure() {
    // The core's retry of AddPartitionsToTxn(0) takes partition 2, new meanwhile; Java
    // retries only 0. Partition 1's batch is then answered OUT_OF_ORDER_SEQUENCE_NUMBER,
    // which fails Java's transaction before the retry's answer adds 0, so Java never asks
    // for 2 (and the trace ends). Near miss: Java's batch is acknowledged, so nothing
    // ended its adding.
    recorded_as_replaced(
        "txn_retried_add_partitions_never_asked_after_failed_batch",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        "1:1000:0:0:1=OUT_OF_ORDER_SEQUENCE_NUMBER",
        "1:1000:0:0:1=NONE",
    );
}

#[test]
fn a_retry_taking_new_partitions_then_the_core_refusing_after_unknown_producer_id() {
    // The core's retry of AddPartitionsToTxn(2) takes partition 0; partition 1's batch is
    // answered UNKNOWN_PRODUCER_ID, so the core, abortable, refuses the next send, which
    // Java accepts (it keeps the batch to retry); the retry's answer, PRODUCER_FENCED,
    // fails both before Java resends anything or asks for 0. Near miss: Java fails a
    // record with UNKNOWN_PRODUCER_ID (it did not keep the batch).
    recorded_as_replaced(
        "txn_retried_add_partitions_never_asked_unknown_producer_id",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#"{"ev":"outcome","rec":0,"result":"err:90"}"#,
        r#"{"ev":"outcome","rec":0,"result":"err:59"}"#,
    );
}

#[test]
fn an_older_request_sent_again_before_the_retry_of_the_answered_one_is_errors_in_another_order() {
    // AddPartitionsToTxn(0,1) is answered 0=COORDINATOR_NOT_AVAILABLE,1=REQUEST_TIMED_OUT:
    // the core acts on partition 0 (looks up), Java on partition 1 (retries); Java's
    // queue also holds the older request for 0, which goes out first, is lost to a
    // timeout, is sent again after the lookup and adds 0; then Java sends the retry.
    // Near miss: the older request's answer fails the transaction.
    recorded_as_replaced(
        "txn_add_partitions_older_request_again_before_retry",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"0=NONE"}"#,
        r#""error":"0=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn java_failing_at_once_on_the_other_error_of_an_add_partitions_answer_is_that_order() {
    // One AddPartitionsToTxn answer: 0=COORDINATOR_NOT_AVAILABLE, 1=PRODUCER_FENCED.
    // Java's map yields partition 1 first and fails the producer (its history ends, its
    // records fail with PRODUCER_FENCED); the core takes partition 0's and looks the
    // coordinator up. Near miss: Java fails its records with another code.
    recorded_as_replaced(
        "txn_add_partitions_errors_other_order_java_fails",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""result":"err:90""#,
        r#""result":"err:47""#,
    );
}

#[test]
fn unknown_producer_id_then_a_retried_answer_refuses_the_core_send() {
    // Partition 1's batch is answered UNKNOWN_PRODUCER_ID; then partition 2's is answered
    // NOT_ENOUGH_REPLICAS_AFTER_APPEND, which the core retries (it sends the batch again
    // with the same stamp): that later answer failed nothing, so the core's refusal of the
    // next send (Java sends its AddPartitionsToTxn instead) is read from the
    // UNKNOWN_PRODUCER_ID answer. Java resends partition 1's batch with the same stamp.
    // Near miss: Java's resend has another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_refuses_send_after_retried_answer",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":0,"s":14"#,
        r#""batches":"1:1000:0:2:1","t":0,"s":14"#,
    );
}

#[test]
fn an_unsplit_possibly_written_batch_refusing_the_commit_is_no_renumber() {
    // Partition 0's batch of two records was on a connection that timed out, and its
    // resend is answered MESSAGE_TOO_LARGE: the core fails it rather than split it (it
    // may be in the log), its transaction turns abortable and it refuses the commit;
    // Java splits it and commits. Near miss: Java's piece at another sequence.
    recorded_as_replaced(
        "txn_never_split_possibly_written_refuses_commit",
        Verdict::NoRenumberOfPossiblyWritten,
        r#""batches":"0:1000:0:0:2,1:1000:0:0:1""#,
        r#""batches":"0:1000:0:1:2,1:1000:0:0:1""#,
    );
}

#[test]
fn an_unsplit_possibly_written_batch_refusing_a_send_is_no_renumber() {
    // The same with no commit pending (seed 61's trace): the core refuses the next
    // send, which Java accepts. Near miss: Java's piece at another sequence.
    recorded_as_replaced(
        "txn_never_split_possibly_written_refuses_send",
        Verdict::NoRenumberOfPossiblyWritten,
        r#""batches":"0:1000:0:0:3,1:1000:0:0:1""#,
        r#""batches":"0:1000:0:1:3,1:1000:0:0:1""#,
    );
}

#[test]
fn a_pending_partition_kept_after_the_bumped_abort_is_that_java_defect() {
    // The aborted transaction asked for partitions it never added (answered
    // UNKNOWN_PRODUCER_ID); its EndTxn(ABORT) is answered UNKNOWN_PRODUCER_ID and the
    // abort ends through the bump. In the next transaction the core asks to add
    // partition 1 under epoch 1; Java still holds it pending, never asks, and its
    // record expires. Near miss: Java asks for the partition itself.
    recorded_as(
        "txn_java_keeps_pending_partition",
        Verdict::JavaKeepsTransactionAfterBumpedAbort,
        |java| {
            const BEGIN: &str = r#"{"ev":"txn_call","call":"begin","result":"ok"}"#;
            let mut java = java.to_vec();
            let at = java.iter().rposition(|l| l == BEGIN).unwrap();
            java.insert(
                at + 1,
                r#"{"ev":"txn","api":"add_partitions","pid":1000,"epoch":0,"parts":"1"}"#
                    .to_string(),
            );
            java
        },
    );
}

#[test]
fn java_pipelining_a_dropped_partitions_retries_before_losing_track_is_the_held_commit() {
    // The commit waits; the resend of partition 0's sequence 1 is answered
    // UNKNOWN_PRODUCER_ID after an acknowledged offset: the core fails the commit; Java,
    // having dropped the partition's entry, sends sequences 2 and 3 again together
    // (the core one at a time) and throws at sequence 2's answer, so its commit never
    // completes. Near miss: Java's second batch is one never sent before.
    recorded_as_replaced(
        "txn_commit_fails_java_pipelines_then_loses_track",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#""batches":"0:1000:0:3:1","t":0,"s":12"#,
        r#""batches":"0:1000:0:4:1","t":0,"s":12"#,
    );
}

#[test]
fn an_abortable_lookup_during_the_bump_after_an_unknown_producer_id_end_txn_is_ridden_out() {
    // Regression for a core fix (seed 79): the abort's EndTxn is answered
    // UNKNOWN_PRODUCER_ID, the bump COORDINATOR_NOT_AVAILABLE, and the lookup before its
    // resend TRANSACTION_ABORTABLE. Java is still aborting there and looks the
    // coordinator up again; the core used to fail the abort with 120. Now both complete
    // the abort through the bump, and the first difference is Java's documented defect
    // after it (it produces without asking to add the partition under the new epoch).
    let (trace, java) = recorded("txn_abort_bump_rides_out_abortable_lookup");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::JavaKeepsTransactionAfterBumpedAbort
    );
}

#[test]
fn the_core_ending_the_abort_at_once_after_unknown_producer_id_is_that_simplification() {
    // A batch answered UNKNOWN_PRODUCER_ID (nothing acknowledged) in the step that adds
    // another partition; the application aborts. The core, abortable, drains nothing
    // and sends the EndTxn at once; Java resends the batch with the same stamp and
    // holds its EndTxn until its batches complete. Near miss: Java's resend under
    // another stamp.
    recorded_as_replaced(
        "txn_unknown_producer_id_core_ends_abort_at_once",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":200"#,
        r#""batches":"1:1000:0:1:1","t":200"#,
    );
}

#[test]
fn a_fatal_error_the_core_takes_first_while_java_retries_after_its_older_request() {
    // AddPartitionsToTxn(2,3) is answered 2=INVALID_TXN_STATE,3=REQUEST_TIMED_OUT: the
    // core acts on partition 2 and goes fatal (Java's rule too for INVALID_TXN_STATE),
    // Java walks partition 3 first and retries; its older request for 2 goes out first,
    // is answered COORDINATOR_NOT_AVAILABLE (lookup, re-enqueued), goes out again and adds
    // 2, and then Java sends the retry. Near miss: the older request's second answer is
    // INVALID_TXN_STATE.
    recorded_as_replaced(
        "txn_add_partitions_fatal_first_older_request_again",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"2=NONE"}"#,
        r#""error":"2=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn a_commit_refused_while_java_holds_the_unknown_producer_id_batch_is_that_simplification() {
    // The UNKNOWN_PRODUCER_ID answer comes while an AddPartitionsToTxn is out; the core
    // refuses the commit, Java accepts it and never resends the batch (the
    // AddPartitionsToTxn answer, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ends it first).
    // Near miss: Java fails a record with UNKNOWN_PRODUCER_ID (a batch it did not keep).
    recorded_as_replaced(
        "txn_unknown_producer_id_commit_refused_java_holds",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""rec":0,"result":"err:53""#,
        r#""rec":0,"result":"err:59""#,
    );
}

#[test]
fn an_expiry_during_a_lookup_where_java_refuses_a_call_before_ending_the_abort() {
    // The record expires in the core while AddPartitionsToTxn(0) waits behind lookups
    // that time out; the application aborts; after the lookup the core bumps (its abort
    // after an expiry, nothing added), Java sends the waiting request, refuses the
    // application's commit as the core does (aborting), then ends the abort with
    // EndTxn(ABORT). Near miss: Java accepts that commit.
    recorded_as_replaced(
        "txn_expiry_during_lookup_java_aborts_refusing_calls",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"txn_call","call":"commit","result":"refused"}"#,
        r#"{"ev":"txn_call","call":"commit","result":"ok"}"#,
    );
}

#[test]
fn the_core_expiring_while_add_partitions_is_out_seen_on_partitions_only_is_that_departure() {
    // The core expires batches while AddPartitionsToTxn requests are out and drains
    // nothing; Java produces once the last is answered, then expires them too. Both
    // refuse the same sends, so only the partitions differ. Near miss: Java's records
    // fail with another code than REQUEST_TIMED_OUT.
    recorded_as_replaced(
        "txn_core_expired_drains_nothing",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#""result":"err:7""#,
        r#""result":"err:59""#,
    );
}

/// Java's output with `from` replaced by `to` on the last line holding it only.
fn replaced_last(java: &[String], from: &str, to: &str) -> Vec<String> {
    let mut out = java.to_vec();
    if let Some(k) = out.iter().rposition(|l| l.contains(from)) {
        out[k] = out[k].replace(from, to);
    }
    out
}

#[test]
fn an_older_request_after_a_retried_answer_that_listed_some_partitions_none() {
    // AddPartitionsToTxn(0,1,2) is answered 0=NONE,1=NONE,2=UNKNOWN_TOPIC_OR_PARTITION:
    // neither side adds any partition from it (an answer adds its partitions only when
    // every one is NONE), so all three stay pending. The core retries (0,1,2); Java sends
    // first an older request it built for (0,2), then the retry, so it asks for 1 later.
    // Near miss: Java's retry after the difference names (0,2) only, never asking for 1.
    recorded_as(
        "txn_add_partitions_older_request_after_partly_added_retry",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        |java| replaced_last(java, r#""parts":"0,1,2"}"#, r#""parts":"0,2"}"#),
    );
}

#[test]
fn a_retry_whose_answer_fails_java_never_asks_for_what_the_core_added() {
    // AddPartitionsToTxn(0) is answered UNKNOWN_TOPIC_OR_PARTITION; Java retries (0), the
    // core (0,2), with partition 2 new meanwhile. Java's answer is 0=TOPIC_AUTHORIZATION_FAILED:
    // its transaction is abortable, so it never asks for 2; the core's answer names 2
    // NOT_COORDINATOR as well, and it looks up and goes on. Near miss: Java's answer is
    // one its handler retries on, so its adding did not end.
    recorded_as_replaced(
        "txn_retried_add_partitions_never_asked_answer_fails",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#""error":"0=TOPIC_AUTHORIZATION_FAILED"}"#,
        r#""error":"0=CONCURRENT_TRANSACTIONS"}"#,
    );
}

#[test]
fn an_older_request_beside_the_applications_calls_is_errors_in_another_order() {
    // AddPartitionsToTxn(1,2) is answered 1=NOT_COORDINATOR,2=COORDINATOR_LOAD_IN_PROGRESS:
    // the core looks up, Java (partition 2 first) retries, its older request for 1 going
    // out first; meanwhile the application's begin is refused on both sides alike. Near
    // miss: Java accepts that begin.
    recorded_as_replaced(
        "txn_add_partitions_older_request_beside_calls",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#"{"ev":"txn_call","call":"begin","result":"refused"}"#,
        r#"{"ev":"txn_call","call":"begin","result":"ok"}"#,
    );
}

#[test]
fn unknown_producer_id_refuses_the_commit_where_java_retries_its_add_partitions() {
    // Partition 2's batch is answered UNKNOWN_PRODUCER_ID (the core's transaction turns
    // abortable), then AddPartitionsToTxn(0) COORDINATOR_NOT_AVAILABLE; after the lookup
    // Java retries (0) and accepts the commit, the core (abortable) drops the retry and
    // refuses it; Java resends partition 2's batch with the same stamp. Near miss: Java's
    // request at the difference names (0,1), not the retry.
    recorded_as(
        "txn_unknown_producer_id_refuses_commit_after_retry",
        Verdict::UnknownProducerIdAbortsTransaction,
        |java| replaced_last(java, r#""parts":"0"}"#, r#""parts":"0,1"}"#),
    );
}

/// Asserts that the recorded trace `name` stays unexplained where the core's output has
/// `from` replaced by `to` (a near miss on the core's side of a detector's evidence).
fn core_variant_unexplained(name: &str, from: &str, to: &str) {
    let (trace, java) = recorded(name);
    let (core, extra) = core_side::run(&trace);
    assert!(
        core.iter().any(|l| l.contains(from)),
        "{name}: the near miss changes nothing"
    );
    let core = replaced(&core, from, to);
    assert_eq!(
        compare(&trace, &java, &core, &extra).verdict,
        Verdict::Unexplained,
        "{name}: core variant"
    );
}

#[test]
fn java_aborting_after_the_abortable_error_of_an_add_partitions_answer_is_that_order() {
    // The answer `2=COORDINATOR_NOT_AVAILABLE,3=UNKNOWN_PRODUCER_ID`: Java's map yields
    // partition 3 first, its transaction turns abortable and it sends nothing, so its
    // next line is the application's abort (accepted), then its EndTxn(ABORT); the core
    // takes partition 2's error and looks the coordinator up. Near misses: Java's EndTxn
    // commits; Java's records fail with another code.
    recorded_as_replaced(
        "txn_add_partitions_errors_other_order_java_aborts",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""commit":0}"#,
        r#""commit":1}"#,
    );
    let (trace, java) = recorded("txn_add_partitions_errors_other_order_java_aborts");
    assert_eq!(
        verdict(&trace, &replaced(&java, "err:59", "err:47")),
        Verdict::Unexplained
    );
}

#[test]
fn the_abortable_core_resending_only_batches_it_sent_before_drains_nothing() {
    // Partition 1's first batch is answered UNKNOWN_PRODUCER_ID in the step partition 2
    // is added: Java resends it and produces partition 2's batch; the core, abortable,
    // sends no new batch, only partition 0's batch again (answered REQUEST_TIMED_OUT:
    // it has a sequence, so Java's `abortUndrainedBatches` keeps it too). Near misses:
    // Java's resend at another sequence; the core's resend a new batch.
    const NAME: &str = "txn_unknown_producer_id_core_resends_only";
    recorded_as_replaced(
        NAME,
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":0,"s":12"#,
        r#""batches":"1:1000:0:1:1","t":0,"s":12"#,
    );
    core_variant_unexplained(
        NAME,
        r#""batches":"0:1000:0:0:1","t":0,"s":13"#,
        r#""batches":"0:1000:0:1:1","t":0,"s":13"#,
    );
}

#[test]
fn an_expiry_while_a_lookup_is_out_after_a_split_batch_refuses_the_send_in_the_core() {
    // A two-record batch answered MESSAGE_TOO_LARGE is split by both (the core fails no
    // record with 10); the AddPartitionsToTxn after it needs a lookup, which stays out
    // past the delivery timeout: the core expires the batches and refuses the next
    // send; Java, its Sender held by the lookup, has expired nothing and asks for the
    // partition. Near miss: the core fails a record with MESSAGE_TOO_LARGE.
    core_variant_unexplained(
        "txn_expiry_during_lookup_after_split",
        r#"{"ev":"outcome","rec":0,"result":"err:7"}"#,
        r#"{"ev":"outcome","rec":0,"result":"err:10"}"#,
    );
    let (trace, java) = recorded("txn_expiry_during_lookup_after_split");
    assert_eq!(
        verdict(&trace, &java),
        Verdict::CoreExpiresWhileCoordinatorRequestOut
    );
}

#[test]
fn java_losing_track_after_a_drain_stop_the_core_sent_through_keeps_that_verdict() {
    // After partition 0 is added the core sends its batch where Java's drain of the
    // node stopped at partition 2's retry (`JavaDrainStopsAtWaitingPartition`, the first
    // difference: Java never sends partition 0, so it has no line there); partition 2's
    // retry is answered UNKNOWN_PRODUCER_ID after an acknowledged offset, and Java later
    // throws "re-enqueueing a batch which is not tracked": written after the first
    // difference, it keeps the verdict. Near miss: another exception.
    recorded_as_replaced(
        "txn_drain_stop_then_java_loses_track",
        Verdict::JavaDrainStopsAtWaitingPartition,
        "We are re-enqueueing a batch",
        "We are re-enqueueing some batch",
    );
}

#[test]
fn an_older_request_after_an_answer_abortable_in_both_orders_while_the_core_bumps() {
    // Aborting, AddPartitionsToTxn(0,1,2) is answered 0=TRANSACTION_ABORTABLE,
    // 1=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,2=TRANSACTION_ABORTABLE: Java meets partition
    // 2 first, the core partition 0, both an abortable error (nothing added, no state
    // change while aborting). The core, nothing added, ends the abort with its bump; Java
    // sends its older request for partition 1 (built before the lookup) and ends with
    // EndTxn(ABORT). Near miss: Java's EndTxn commits.
    recorded_as_replaced(
        "txn_java_older_request_abortable_in_both_orders",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#""commit":0}"#,
        r#""commit":1}"#,
    );
}

#[test]
fn unknown_producer_id_then_java_retries_the_answered_request_and_commits() {
    // Partition 1's batch is answered UNKNOWN_PRODUCER_ID (nothing acknowledged), then
    // AddPartitionsToTxn(0) COORDINATOR_LOAD_IN_PROGRESS: Java retries that request and
    // accepts the commit; the core, abortable, sends no retry and refuses the commit.
    // Java resends partition 1's batch with the same stamp. Near miss: the resend has
    // another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_refuses_commit_after_answered_retry",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":0,"s":10"#,
        r#""batches":"1:1000:0:2:1","t":0,"s":10"#,
    );
}

#[test]
fn unknown_producer_id_then_java_retries_the_answered_request_where_the_core_history_ends() {
    // As above with no commit call: the core's history ends after the answer Java
    // retries on (UNKNOWN_TOPIC_OR_PARTITION). Near miss: Java's resend of partition 1's
    // batch has another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_history_ends_after_retry",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1,2:1000:0:0:1","t":50"#,
        r#""batches":"1:1000:0:2:1,2:1000:0:0:1","t":50"#,
    );
}

#[test]
fn unknown_producer_id_refused_send_before_java_lookup_fails() {
    // After UNKNOWN_PRODUCER_ID the core refuses the next send; Java retries
    // AddPartitionsToTxn(0) (CONCURRENT_TRANSACTIONS), loses it to a timeout, and its
    // lookup is answered TOPIC_AUTHORIZATION_FAILED (not retriable: fatal in
    // `FindCoordinatorHandler`); then Java refuses the same send. Near miss: the lookup is
    // answered a retriable error.
    recorded_as_replaced(
        "txn_unknown_producer_id_refused_before_java_lookup_fails",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""find_coordinator","error":"TOPIC_AUTHORIZATION_FAILED""#,
        r#""find_coordinator","error":"COORDINATOR_LOAD_IN_PROGRESS""#,
    );
}

#[test]
fn java_stale_request_takes_the_answers_while_the_core_bumps_after_its_end_txn() {
    // Aborting, Java sends AddPartitionsToTxn(2,3) built before the abort, the core its
    // EndTxn(ABORT); UNKNOWN_PRODUCER_ID answers both; the core bumps (InitProducerId),
    // Java sends its older request for 3; PRODUCER_FENCED answers both, and both fail
    // the abort with 90. Near miss: Java's second answer carries another code than the
    // core's bump got.
    recorded_as_replaced(
        "txn_aborts_fail_alike_after_core_bump",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#""error":"3=PRODUCER_FENCED"}"#,
        r#""error":"3=TRANSACTIONAL_ID_AUTHORIZATION_FAILED"}"#,
    );
}

#[test]
fn an_expiry_during_a_lookup_where_java_names_its_aborted_batch_transaction_abortable() {
    // The core expires records while AddPartitionsToTxn(0) waits behind lookups that
    // time out, and ends the application's abort with its bump; Java sends the waiting
    // request, aborts, expires two records itself, and fails the third, aborted unsent,
    // with its last error, an expiry wrapped as TRANSACTION_ABORTABLE (4.3.1). Near
    // miss: Java fails it with INVALID_TXN_STATE.
    recorded_as_replaced(
        "txn_expiry_during_lookup_java_aborts_named_abortable",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#""rec":2,"result":"err:120""#,
        r#""rec":2,"result":"err:48""#,
    );
}

#[test]
fn an_older_request_first_while_java_commits_and_refuses_sends() {
    // Committing, AddPartitionsToTxn(1,2) is answered 1=PRODUCER_FENCED,
    // 2=REQUEST_TIMED_OUT: the core goes fatal on partition 1, Java retries on partition
    // 2; its older request for 1 goes out first, and Java refuses a send (committing)
    // before that request adds 1 and the retry follows. Near miss: the older request's
    // answer is INVALID_TXN_STATE.
    recorded_as_replaced(
        "txn_add_partitions_older_request_first_refusing_sends",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"1=NONE"}"#,
        r#""error":"1=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn a_pending_request_while_aborting_where_both_refuse_a_begin_first() {
    // The batch answered MESSAGE_TOO_LARGE makes the transaction abortable while
    // AddPartitionsToTxn(2) waits behind a lookup; the application aborts and calls
    // begin. After the lookup Java sends the held request, the core refuses the begin
    // and sends EndTxn(ABORT); Java refuses the begin too, then ends with that EndTxn.
    // Near miss: Java accepts the begin.
    recorded_as_replaced(
        "txn_java_asks_pending_while_aborting_begin_refused",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn_call","call":"begin","result":"refused"}"#,
        r#"{"ev":"txn_call","call":"begin","result":"ok"}"#,
    );
}

#[test]
fn unknown_producer_id_while_the_core_drops_the_retry_and_the_application_aborts() {
    // Partition 0's batch is answered UNKNOWN_PRODUCER_ID while AddPartitionsToTxn(1) is
    // out; its answer is COORDINATOR_LOAD_IN_PROGRESS. The core, abortable, drops the
    // retry and accepts the application's abort; Java, which kept the batch to retry,
    // sends the retry first, accepts the abort after it, and resends the batch with the
    // same stamp. Near miss: Java's resend has another sequence.
    recorded_as_replaced(
        "txn_unknown_producer_id_core_drops_retry_aborts",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:0:1","t":0,"s":12"#,
        r#""batches":"0:1000:0:5:1","t":0,"s":12"#,
    );
}

#[test]
fn an_older_request_first_with_a_send_both_refuse_is_errors_in_another_order() {
    // AddPartitionsToTxn(1,2) is answered 1=TRANSACTION_ABORTABLE,2=CONCURRENT_TRANSACTIONS
    // while the commit waits: the core acts on partition 1 and fails the commit, Java on
    // partition 2 (retries); Java's older request for 2 goes out first, and before its
    // answer Java refuses a send (its commit is pending) that the core refuses too (its
    // transaction failed); the older request adds 2, then Java sends the retry. Near
    // miss: the older request's answer is INVALID_TXN_STATE (fatal: no retry follows).
    recorded_as_replaced(
        "txn_add_partitions_older_request_first_refusing_send",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"2=NONE"}"#,
        r#""error":"2=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn an_expiry_during_a_lookup_after_an_aborted_transaction_where_the_core_history_ends() {
    // The first transaction is aborted (its record failed alike, -1, on both sides); in
    // the next, the record expires in the core while AddPartitionsToTxn(0) waits behind
    // a lookup whose request timed out; the core writes nothing more, Java sends the
    // waiting request and expires the record later. Near miss: Java delivers the first
    // transaction's record, which the core failed.
    recorded_as_replaced(
        "txn_expiry_during_lookup_after_an_aborted_transaction",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"outcome","rec":0,"result":"err:-1"}"#,
        r#"{"ev":"outcome","rec":0,"result":"ok:0"}"#,
    );
}

#[test]
fn a_pending_request_while_aborting_fenced_on_its_partition_where_the_end_txn_succeeds() {
    // The batch fails with OUT_OF_ORDER_SEQUENCE_NUMBER while AddPartitionsToTxn(0) waits
    // behind a lookup; the application aborts. After the lookup the core sends
    // EndTxn(ABORT), Java its held request; the coordinator's answer is NONE with
    // partition 0 PRODUCER_FENCED: the core's EndTxn gets NONE (and its abort goes on to
    // the bump), Java's request gets the fenced partition and its abort fails with 90.
    // Near miss: Java's abort fails with a code no answer brought.
    recorded_as_replaced(
        "txn_java_asks_pending_while_aborting_fenced_on_its_partition",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#"{"ev":"txn_done","call":"abort","result":"err:90"}"#,
        r#"{"ev":"txn_done","call":"abort","result":"err:53"}"#,
    );
}

#[test]
fn java_losing_track_after_a_commit_it_fails_without_a_code_is_that_departure() {
    // The commit's batch expires on the wire: Java fails the commit with a wrapped cause
    // (-1), the core with REQUEST_TIMED_OUT (7), the same failure by the history's rule.
    // After the abort's epoch bump the batch's late acknowledgement makes Java's Sender
    // throw (partition 0's entry was dropped). Near miss: Java's commit names another
    // code (48), so the outputs before the exception differ.
    recorded_as_replaced(
        "txn_java_loses_track_after_commit_fails_unnamed",
        Verdict::JavaLosesTrackOfBatches,
        r#""call":"commit","result":"err:-1""#,
        r#""call":"commit","result":"err:48""#,
    );
}

#[test]
fn a_stale_retry_where_the_core_then_stops_adding_is_that_departure() {
    // Java's stale retry of AddPartitionsToTxn(2) goes out where the core asks for 1;
    // the core's transaction then turns abortable (UNKNOWN_PRODUCER_ID on partition 0),
    // so it refuses the send to partition 3 and never asks for it, while Java joins 1
    // and 3 in its next request. Near miss: Java's next request leaves out the core's
    // partition 1.
    recorded_as_replaced(
        "txn_java_stale_retry_core_stops_adding",
        Verdict::JavaReasksPendingPartitions,
        r#""parts":"1,3""#,
        r#""parts":"3""#,
    );
}

#[test]
fn a_stale_request_for_added_partitions_where_the_core_asks_new_is_that_departure() {
    // Java sends AddPartitionsToTxn(0,2), built before the lookup, after (0,1,2) was
    // answered NONE: every partition it names is already added on both sides. It goes
    // out where the core asks for 3 and takes that answer (UNKNOWN_PRODUCER_ID), which
    // fails Java's transaction, so Java never asks for 3. Near miss: the answer adds 2
    // and Java refuses no send, so nothing ends Java's adding and it never asks for 3.
    recorded_as(
        "txn_java_stale_added_request_core_asks_new",
        Verdict::JavaReasksPendingPartitions,
        |java| {
            replaced(java, "2=UNKNOWN_PRODUCER_ID", "2=NONE")
                .into_iter()
                .filter(|l| l != r#"{"ev":"send_refused","rec":3}"#)
                .collect()
        },
    );
}

#[test]
fn the_core_refusing_the_commit_after_an_expiry_java_makes_later_is_that_departure() {
    // Both batches expire while the lookup is out: the core refuses the commit at once;
    // Java first sends the AddPartitionsToTxn(2) it held, then its `sendProducerData`
    // expires the batches in flight and Java refuses the commit too. Near miss: Java
    // fails the records with another code (48), so no expiry of Java's is shown.
    recorded_as_replaced(
        "txn_core_expired_refuses_commit_java_expires_too",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#""result":"err:7""#,
        r#""result":"err:48""#,
    );
}

#[test]
fn a_possibly_written_batch_unsplit_where_the_core_history_ends_is_that_departure() {
    // Partition 2's 2-record batch, possibly in the log (its request timed out), is
    // answered MESSAGE_TOO_LARGE while AddPartitionsToTxn(0) is out; that request is
    // answered COORDINATOR_LOAD_IN_PROGRESS. The core fails the batch (10) and turns
    // abortable, so it drops the request and its history ends; Java splits the batch and
    // sends the request again. Near miss: Java's request there names partitions 0 and 1,
    // which is not the retry.
    recorded_as(
        "txn_never_split_possibly_written_history_ends",
        Verdict::NoRenumberOfPossiblyWritten,
        |java| {
            let retry = java
                .iter()
                .position(|l| l.contains("0=COORDINATOR_LOAD_IN_PROGRESS"))
                .map_or(0, |k| k + 1);
            java.iter()
                .enumerate()
                .map(|(k, l)| {
                    if k == retry {
                        l.replace(r#""parts":"0""#, r#""parts":"0,1""#)
                    } else {
                        l.clone()
                    }
                })
                .collect()
        },
    );
}

#[test]
fn an_expiry_during_a_lookup_where_the_core_history_ends_is_that_departure() {
    // AddPartitionsToTxn(1) waits behind lookups that time out; the core expires the
    // batch meanwhile, turns abortable and drops the held request, so its history ends
    // with the lookup's answer; Java sends the request after the lookup and expires the
    // batch once its `sendProducerData` runs. Near miss: Java fails the record with
    // another code (48), so no expiry of Java's is shown.
    recorded_as_replaced(
        "txn_expiry_during_lookup_core_history_ends",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#""result":"err:7""#,
        r#""result":"err:48""#,
    );
}

#[test]
fn errors_in_another_order_where_the_core_is_fenced_and_java_sends_its_older_request() {
    // The answer 0=INVALID_PRODUCER_EPOCH,1=COORDINATOR_LOAD_IN_PROGRESS: the core acts on
    // partition 0 and is fenced (fatal: it refuses every later call), Java on partition 1
    // and retries, its older request (0) going first; Java accepts the commit the core
    // refuses. Near miss: the older request's answer is INVALID_TXN_STATE (no retry
    // follows).
    recorded_as_replaced(
        "txn_add_partitions_core_fenced_java_older_request_first",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"0=NONE"}"#,
        r#""error":"0=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn an_unknown_producer_id_refusal_where_the_core_resends_a_timed_out_batch_later() {
    // Partition 2's batch is answered UNKNOWN_PRODUCER_ID, partition 0's then
    // REQUEST_TIMED_OUT; the core, abortable, refuses the next send, and sends partition
    // 0's batch again only after that difference (a retry, not a failure). Java resends
    // both. Near miss: Java never resends partition 2's batch.
    recorded_as_replaced(
        "txn_unknown_producer_id_retry_resent_after_difference",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:0:1,2:1000:0:0:1","t":3450"#,
        r#""batches":"0:1000:0:0:1","t":3450"#,
    );
}

#[test]
fn an_unknown_producer_id_answer_where_only_partitions_differ() {
    // Partition 0's batch is answered UNKNOWN_PRODUCER_ID; the script calls nothing more.
    // Java resends it and drains partition 1, the core, abortable, drains nothing and
    // fails the records with 59; the conversations are the same. Near miss: Java's
    // Produce carries another batch of partition 0, not the one answered.
    recorded_as_replaced(
        "txn_unknown_producer_id_only_partitions_differ",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:0:1","t":0,"s":9}"#,
        r#""batches":"0:1000:0:1:1","t":0,"s":9}"#,
    );
}

#[test]
fn a_kept_transaction_started_where_the_core_bumps_its_empty_abort_at_once() {
    // The first abort ends through its bump after EndTxn(ABORT) was answered
    // UNKNOWN_PRODUCER_ID (Java keeps `transactionStarted`). In the next transaction
    // AddPartitionsToTxn is answered UNKNOWN_PRODUCER_ID (abortable, a bump asked for)
    // and the application aborts: the core, having added nothing, sends its
    // InitProducerId at once, Java its EndTxn(ABORT) first. Near miss: Java's EndTxn
    // commits.
    recorded_as_replaced(
        "txn_java_started_kept_core_bumps_empty_abort",
        Verdict::JavaKeepsTransactionAfterBumpedAbort,
        r#""epoch":1,"commit":0}"#,
        r#""epoch":1,"commit":1}"#,
    );
}

#[test]
fn a_drain_stop_whose_undrained_batch_java_fails_with_the_transactions_error() {
    // Partition 3 is added; the core sends its first batch to node 1 in the step where
    // Java's drain of node 1 stopped at partition 1 (a retry). Partition 1's batch then
    // fails with RECORD_LIST_TOO_LARGE on both sides (Java's transaction abortable), the
    // script calls nothing more, and Java fails partition 3's never-sent record with 18,
    // which the core delivered. Near miss: Java fails it with a code no other record
    // failed with.
    recorded_as_replaced(
        "txn_drain_stop_undrained_failed",
        Verdict::JavaDrainStopsAtWaitingPartition,
        r#"{"ev":"outcome","rec":3,"result":"err:18"}"#,
        r#"{"ev":"outcome","rec":3,"result":"err:45"}"#,
    );
}

#[test]
fn a_drain_stop_whose_undrained_batch_java_aborts_after_an_expiry_both_share() {
    // Seed 181 #1, unshrunk. Partition 1's retry waits on node 1 after its leader moved
    // to node 0, so Java's drain of node 0 stops at partition 1 before partition 2's
    // new batch, which the core sends and delivers. Partition 1's records then expire
    // on both sides (REQUEST_TIMED_OUT, which makes Java's transaction abortable), and
    // Java aborts its undrained batch of partition 2 with a `TransactionAbortedException`
    // (-1). Near miss: Java's expired records fail with no code either, so nothing
    // failed alike on both sides shows what ended Java's transaction.
    recorded_as_replaced(
        "txn_drain_stop_undrained_after_expiry",
        Verdict::JavaDrainStopsAtWaitingPartition,
        r#""result":"err:7"}"#,
        r#""result":"err:-1"}"#,
    );
}

#[test]
fn a_drain_stop_then_java_loses_track_of_a_batch_before_draining_it() {
    // Seed 173 #1, unshrunk (a shrunk form is also named by the looser
    // `UnresolvedSequenceHandling` rule, so it would not show this form is needed).
    // Partition 1's batches are retried after NOT_LEADER_OR_FOLLOWER and
    // NOT_ENOUGH_REPLICAS; Java's drain of node 0 stops at partition 1 before partition
    // 0's new batch, which the core sends. Then partition 0's sequence 4 is answered
    // UNKNOWN_PRODUCER_ID: Java drops the partition's entry with sequence 5 on the wire,
    // and throws on its answer in the final drain, before it writes any outcome. Near
    // miss: Java's exception is not that tracking failure.
    recorded_as_replaced(
        "txn_drain_stop_then_java_throws_at_end",
        Verdict::JavaDrainStopsAtWaitingPartition,
        "Trying to get txnPartitionEntry for",
        "Unexpected state for",
    );
}

#[test]
fn commit_failed_early_then_a_begin_both_refuse_then_java_loses_track_of_a_batch() {
    // Seed 193 #1, unshrunk (its shrunk forms are named by other rules, so they would
    // not show this widening is needed). OUT_OF_ORDER_SEQUENCE_NUMBER makes the transaction
    // abortable while the commit waits: the core fails the commit at once, Java holds
    // it. The application's begin is refused on both sides (Java is committing, the
    // core's transaction failed). Partition 2's sequence 1 is then answered
    // UNKNOWN_PRODUCER_ID with sequence 2 on the wire, and Java throws on sequence 2's
    // answer. Near miss: Java takes the begin.
    recorded_as_replaced(
        "txn_commit_fails_early_begin_refused_then_java_loses_track",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#"{"ev":"txn_call","call":"begin","result":"refused"}"#,
        r#"{"ev":"txn_call","call":"begin","result":"ok"}"#,
    );
}

#[test]
fn one_answer_parts_the_two_because_only_the_cores_request_names_its_partition() {
    // Shrunk from seed 163 #2, the per-API fields left over from the generator of the
    // time removed. Partition 3's request is answered COORDINATOR_LOAD_IN_PROGRESS; Java
    // retries the request it built (3), the core asks for (2,3). The answer is Kafka's
    // for a fenced producer with partition 2 unknown: a request naming 2 gets
    // 2=UNKNOWN_TOPIC_OR_PARTITION and OPERATION_NOT_ATTEMPTED for the rest (the
    // partitions are checked before the epoch), one without it PRODUCER_FENCED. Java
    // turns fatal and fails its records with 90; the core retries and delivers. Near
    // miss: Java fails them with another code.
    recorded_as_replaced(
        "txn_one_answer_parts_retried_request",
        Verdict::RetriedAddPartitionsTakesNewPartitions,
        r#""result":"err:90"}"#,
        r#""result":"err:48"}"#,
    );
}

#[test]
fn unknown_producer_id_kept_by_java_where_a_later_answer_only_acknowledged() {
    // Seed 223 #1, unshrunk. Partition 2's batch is answered UNKNOWN_PRODUCER_ID: the
    // core makes its transaction abortable and refuses the next sends, Java restarts
    // the partition's sequences and goes on (`UnknownProducerIdAbortsTransaction`,
    // the state split). The next answer, DUPLICATE_SEQUENCE_NUMBER for partition 3,
    // acknowledges its batch; the split is found from the answer before it, which
    // failed a batch. Near miss: Java does not send partition 2's batch again (its
    // request carries partition 0's alone).
    recorded_as_replaced(
        "txn_unknown_producer_id_before_duplicate_ack",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:0:1,2:1000:0:0:1","t":250"#,
        r#""batches":"0:1000:0:0:1","t":250"#,
    );
}

#[test]
fn java_loses_track_of_a_batch_both_sent_at_one_instant_in_other_steps() {
    // Seed 227 #1 (a mixed run), unshrunk. Both send partition 0's sequence 4 at 10,960
    // ms, Java in its harness's step 251, the core in step 249 (the two loops turn a
    // different number of times at one instant); partition 0's sequence 3 is then
    // answered UNKNOWN_PRODUCER_ID with sequence 4 on the wire, and Java throws on
    // sequence 4's answer. Up to the exception the outputs differ only in that step.
    // Near miss: Java sends it at another time.
    recorded_as_replaced(
        "txn_java_loses_track_send_in_another_step",
        Verdict::JavaLosesTrackOfBatches,
        r#""t":10960,"s":251"#,
        r#""t":10970,"s":251"#,
    );
}

#[test]
fn a_stale_add_partitions_retry_takes_the_answers_and_both_fail_alike() {
    // Shrunk from seed 181 #2. Partition 3's request is answered COORDINATOR_NOT_AVAILABLE;
    // Java re-enqueues it, and after the lookup both send (0,3), answered NONE. Java's
    // re-enqueued request for 3 then goes out where the core asks for the new partition
    // 2; TRANSACTIONAL_ID_AUTHORIZATION_FAILED answers each, both turn fatal and fail
    // every record with 53; partition 2's record was never sent. Near miss: Java
    // delivers partition 2's record.
    recorded_as_replaced(
        "txn_stale_retry_takes_answers_alike",
        Verdict::JavaReasksPendingPartitions,
        r#"{"ev":"outcome","rec":2,"result":"err:53"}"#,
        r#"{"ev":"outcome","rec":2,"result":"ok:0"}"#,
    );
}

#[test]
fn a_drain_stop_before_a_partition_then_java_fenced_on_add_partitions() {
    // Shrunk from seed 97 #0. Partition 0's retry is in flight to node 0 when partition
    // 1's record arrives:
    // Java's drain of node 0 stops at partition 0 (drain_stop, left 1), the core sends
    // partition 1's batch in that step. Java then asks to add partition 2, whose answer
    // INVALID_PRODUCER_EPOCH fences it: it never sends partition 1's batch and fails its
    // record with 90. Near miss: the answer is INVALID_TXN_STATE (not a fencing).
    recorded_as_replaced(
        "txn_drain_stop_then_fenced",
        Verdict::JavaDrainStopsAtWaitingPartition,
        r#""error":"2=INVALID_PRODUCER_EPOCH"}"#,
        r#""error":"2=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn an_unsplit_possibly_written_batch_then_java_asks_to_add_a_partition() {
    // Shrunk from seed 97 #7. Partition 2's two-record batch goes out, its request times
    // out (possibly written); the retry's answer fails it with MESSAGE_TOO_LARGE. After a
    // lookup Java asks to add partition 1 (a record arrived) and sends the split piece
    // again; the core fails the unsplit batch, its transaction abortable, asks for nothing
    // and fails the records with 10. Near miss: Java's next batch of 2 is another piece.
    recorded_as_replaced(
        "txn_unsplit_java_adds_partition",
        Verdict::NoRenumberOfPossiblyWritten,
        r#""batches":"2:1000:0:0:2","t":1100,"s":33}"#,
        r#""batches":"2:1000:0:1:1","t":1100,"s":33}"#,
    );
}

#[test]
fn an_older_request_first_while_both_refuse_the_completing_sends() {
    // After the commit is accepted, the answer to AddPartitionsToTxn(0,1) is
    // 0=COORDINATOR_NOT_AVAILABLE,1=CONCURRENT_TRANSACTIONS: the core looks up, Java
    // retries and sends its older request (1) first. Meanwhile both refuse the same
    // sends of the completing transaction at the same point. Near miss: the older
    // request's answer fails the transaction (INVALID_TXN_STATE).
    recorded_as_replaced(
        "txn_older_request_first_both_refuse",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"1=CONCURRENT_TRANSACTIONS"}"#,
        r#""error":"1=INVALID_TXN_STATE"}"#,
    );
}

#[test]
fn an_unknown_producer_id_then_java_retries_add_partitions_and_looks_up() {
    // The batch is answered UNKNOWN_PRODUCER_ID while AddPartitionsToTxn(1) is retried
    // (COORDINATOR_LOAD_IN_PROGRESS); the core, abortable, drops the retry and refuses
    // the commit; Java sends the retry, loses its connection, looks the coordinator up,
    // accepts the commit and later sends the batch again with the same stamp. Near miss:
    // Java's later batch is another stamp.
    recorded_as_replaced(
        "txn_upid_dropped_retry_then_lookups",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:0:1","t":30510"#,
        r#""batches":"0:1000:0:1:1","t":30510"#,
    );
}

#[test]
fn java_sends_its_held_request_at_the_lookup_answer_before_the_abort() {
    // Shrunk from seed 97 #8. AddPartitionsToTxn(0) loses its connection; the core's
    // transaction turns abortable meanwhile. At the lookup's answer Java sends its
    // request again, then takes the abort; the core, sending only lookups, takes the
    // abort and sends EndTxn(ABORT). Both answers are INVALID_PRODUCER_EPOCH and both
    // aborts fail with 90. Near miss: Java's request is answered NONE.
    recorded_as_replaced(
        "txn_java_request_before_abort",
        Verdict::JavaAsksNewPartitionsWhileAborting,
        r#""error":"0=INVALID_PRODUCER_EPOCH"}"#,
        r#""error":"0=NONE"}"#,
    );
}

#[test]
fn a_stale_add_partitions_against_the_abort_bump_both_fenced() {
    // AddPartitionsToTxn(0) is answered NOT_COORDINATOR and re-enqueued behind the
    // lookup; AddPartitionsToTxn(0,2) is answered TOPIC_AUTHORIZATION_FAILED after the
    // abort call. Nothing added: the core ends the abort with a bump, Java sends its
    // older request (0). Both are answered PRODUCER_FENCED and both aborts fail with 90.
    // Near miss: Java's request is answered NONE.
    recorded_as_replaced(
        "txn_stale_request_against_abort_bump",
        Verdict::AbortEndsWithEpochBump,
        r#""error":"0=PRODUCER_FENCED"}"#,
        r#""error":"0=NONE"}"#,
    );
}

#[test]
fn java_older_request_answered_abortable_where_the_core_looks_up() {
    // Seed 101 #0 (unshrunk). AddPartitionsToTxn(1,2) is answered
    // 1=COORDINATOR_NOT_AVAILABLE,2=COORDINATOR_LOAD_IN_PROGRESS: the core looks up,
    // Java walks partition 2 first and retries, sending its older request (1) first.
    // The next answer, TRANSACTION_ABORTABLE, goes to Java's request and to the core's
    // lookup; both transactions are abortable and the rest is the same. Near miss:
    // Java's older request is answered COORDINATOR_LOAD_IN_PROGRESS.
    recorded_as_replaced(
        "txn_add_partitions_older_request_answered_abortable",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        r#""error":"1=TRANSACTION_ABORTABLE"}"#,
        r#""error":"1=COORDINATOR_LOAD_IN_PROGRESS"}"#,
    );
}

#[test]
fn unknown_producer_id_java_retry_answered_abortable() {
    // Seed 101 #1 (unshrunk). A batch is answered UNKNOWN_PRODUCER_ID while
    // AddPartitionsToTxn(1) is out; its answer is UNKNOWN_TOPIC_OR_PARTITION. The core,
    // abortable, sends no retry; Java retries, is answered TRANSACTION_ABORTABLE, resends
    // the batch with the same stamp, and from then on both histories are the same.
    // Near miss: Java's retry is answered COORDINATOR_LOAD_IN_PROGRESS.
    recorded_as_replaced(
        "txn_unknown_producer_id_retry_answered_abortable",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""error":"1=TRANSACTION_ABORTABLE"}"#,
        r#""error":"1=COORDINATOR_LOAD_IN_PROGRESS"}"#,
    );
}

#[test]
fn add_partitions_errors_other_order_core_aborts() {
    // Seed 101 #3 (unshrunk). AddPartitionsToTxn(0,2) is answered
    // 0=TRANSACTION_ABORTABLE,2=UNKNOWN_TOPIC_OR_PARTITION. The core takes partition 0
    // (abortable), sends nothing and takes the application's abort; Java walks
    // partition 2 first and retries (its older request (2) first), then accepts the
    // abort too. Near miss: Java refuses that abort (its last one).
    recorded_as(
        "txn_add_partitions_errors_other_order_core_aborts",
        Verdict::AddPartitionsErrorsTakenInAnotherOrder,
        |java| {
            let ok = r#"{"ev":"txn_call","call":"abort","result":"ok"}"#;
            let mut v = java.to_vec();
            let last = v.iter().rposition(|l| l == ok).expect("an accepted abort");
            v[last] = r#"{"ev":"txn_call","call":"abort","result":"refused"}"#.to_string();
            v
        },
    );
}

#[test]
fn commit_failed_early_then_java_loses_track_of_a_batch() {
    // Seed 107 #1, shrunk. A one-record batch is answered MESSAGE_TOO_LARGE during the
    // commit: the core fails the commit at once, Java holds it. Then a batch of another
    // partition is answered UNKNOWN_PRODUCER_ID while the next one is on the wire: Java
    // drops the partition's entry and throws on that next answer. Up to the exception
    // the outputs differ only by the core's early failure. Near miss: the exception
    // names a partition whose entry Java never dropped.
    recorded_as_replaced(
        "txn_commit_fails_early_java_loses_track",
        Verdict::CommitFailsBeforeBatchesSettle,
        "txnPartitionEntry for t-1,",
        "txnPartitionEntry for t-2,",
    );
}

#[test]
fn unknown_producer_id_retried_by_java_leaves_the_core_abortable() {
    // Seed 107 #2, shrunk. The first batch of partition 2 is answered
    // UNKNOWN_PRODUCER_ID while an AddPartitionsToTxn(3) is out: Java restarts the
    // partition's sequences and keeps the batch, the core makes the transaction
    // abortable, so only Java retries the AddPartitionsToTxn and later sends the batch
    // again; every later difference follows. Near miss: Java fails the record with
    // UNKNOWN_PRODUCER_ID too.
    recorded_as_replaced(
        "txn_upid_java_retries_core_abortable",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#"{"ev":"outcome","rec":0,"result":"ok:0"}"#,
        r#"{"ev":"outcome","rec":0,"result":"err:59"}"#,
    );
}

#[test]
fn java_drain_stop_then_the_application_aborts() {
    // Seed 103 #3, shrunk. After a disconnect both resend sequence 1 of partitions 0 and
    // 1; in that step Java's drain stops at partition 1 (its sequence 2 waits for the
    // resent 1) before reaching partition 0, whose new batch the core sends. The
    // application then aborts: Java's undrained batch is aborted, never sent, while Java
    // resends only batches it had sent before. Near miss: Java reported its drain stopped
    // before partition 1 only.
    recorded_as_replaced(
        "txn_drain_stop_then_application_abort",
        Verdict::JavaDrainStopsAtWaitingPartition,
        r#""left":"0""#,
        r#""left":"1""#,
    );
}

#[test]
fn unknown_producer_id_then_the_abortable_core_resends_only_an_older_batch() {
    // Seed 109 #2, shrunk. Partition 0's batch is answered LEADER_NOT_AVAILABLE, then
    // partition 1's first batch UNKNOWN_PRODUCER_ID: Java keeps it to retry, the core's
    // transaction turns abortable. Next, Java resends partition 0's batch together with
    // partition 3's new one, and partition 1's again; the core, abortable, resends only
    // partition 0's batch. Near miss: Java sends partition 1 renumbered, not the batch it
    // kept.
    recorded_as_replaced(
        "txn_upid_core_resends_old_batch_only",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"1:1000:0:0:1","t":0,"s":11"#,
        r#""batches":"1:1000:0:1:1","t":0,"s":11"#,
    );
}

#[test]
fn a_possibly_written_batch_too_large_turns_only_the_core_abortable() {
    // Seed 109 #4, shrunk. Partition 2's two-record batch is answered
    // KAFKA_STORAGE_ERROR (it may be in the log), resent, then answered
    // MESSAGE_TOO_LARGE: the core fails it unsplit and its transaction turns abortable,
    // so it never drains partition 0's new batch; Java splits it (one piece, the same
    // two records) and sends both. Near miss: Java's piece has more records than the
    // batch.
    recorded_as_replaced(
        "txn_unsplit_possibly_written_no_commit",
        Verdict::NoRenumberOfPossiblyWritten,
        r#""batches":"2:1000:0:0:2","t":81"#,
        r#""batches":"2:1000:0:0:3","t":81"#,
    );
}

#[test]
fn the_core_expiring_while_add_partitions_is_out_shows_only_in_records() {
    // Seed 113 #1, shrunk. Partition 3's batch waits on the wire (its request timed out
    // and went out again) while AddPartitionsToTxn(1) is out past the delivery timeout:
    // the core expires both records; Java, its Sender held by the transactional request
    // (no `sendProducerData`, so no expiry), has the batch answered and delivers both
    // once the harness answers what is out. Near miss: Java fails a record with a code
    // no answer brought.
    recorded_as_replaced(
        "txn_expiry_while_add_partitions_out_records_only",
        Verdict::CoreExpiresWhileCoordinatorRequestOut,
        r#"{"ev":"outcome","rec":1,"result":"ok:0"}"#,
        r#"{"ev":"outcome","rec":1,"result":"err:48"}"#,
    );
}

#[test]
fn unknown_producer_id_kept_by_java_goes_out_renumbered() {
    // Seed 113 #2, shrunk. Partition 0's sequences 1 and 2 are on the wire; 2 is
    // answered UNKNOWN_PRODUCER_ID (no acknowledged offset at the log start): Java's
    // `startSequencesAtBeginning` renumbers the partition's batches in flight from 0, so
    // the kept batch goes out again as sequence 1; the core turns abortable and refuses
    // the next send. Near miss: Java's resend at a sequence the restart does not give.
    recorded_as_replaced(
        "txn_upid_java_renumbers_kept_batch",
        Verdict::UnknownProducerIdAbortsTransaction,
        r#""batches":"0:1000:0:1:1","t":0,"s":16"#,
        r#""batches":"0:1000:0:3:1","t":0,"s":16"#,
    );
}

#[test]
fn the_core_failing_the_commit_early_takes_the_abort_java_refuses() {
    // Seed 127 #1, shrunk. A batch is answered RECORD_LIST_TOO_LARGE during the commit:
    // the core fails the commit at once and takes the application's abort; Java holds
    // the commit (the AddPartitionsToTxn for the other partition is out), refuses the
    // abort, and fails the commit when that request is answered
    // TOPIC_AUTHORIZATION_FAILED. Near miss: Java's commit fails with a code no answer
    // brought.
    recorded_as_replaced(
        "txn_commit_fails_early_then_abort_refused",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#"{"ev":"txn_done","call":"commit","result":"err:29"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"err:48"}"#,
    );
}

#[test]
fn java_losing_track_of_a_batch_it_kept_to_retry_is_that_defect() {
    // Seed 163 #1, shrunk. Partition 0's sequence 2 is answered OUT_OF_ORDER_SEQUENCE_NUMBER
    // and kept to retry; then sequence 1 is answered UNKNOWN_PRODUCER_ID after an
    // acknowledged offset: Java drops the partition's entry with sequence 2 still kept,
    // and its request timeout's re-enqueue of it throws. A batch answered with an error
    // and sent again is unsettled, whatever the error. Near miss: another exception.
    recorded_as_replaced(
        "txn_java_loses_track_of_retried_batch",
        Verdict::JavaLosesTrackOfBatches,
        "IllegalStateException: We are re-enqueueing",
        "NullPointerException: We are re-enqueueing",
    );
}

#[test]
fn the_core_failing_the_commit_early_retries_its_add_partitions_once_aborting() {
    // Seed 173 #2, shrunk. A batch is answered INVALID_RECORD during the commit: the
    // core fails the commit at once and takes the application's abort; its
    // AddPartitionsToTxn, answered CONCURRENT_TRANSACTIONS, goes out again (aborting is
    // no error state, so the retried request is not failed unsent), while Java still
    // holds its commit. Near miss: Java's held commit succeeds.
    recorded_as_replaced(
        "txn_commit_fails_early_core_retries_add_while_aborting",
        Verdict::CommitFailsBeforeBatchesSettle,
        r#"{"ev":"txn_done","call":"commit","result":"err:87"}"#,
        r#"{"ev":"txn_done","call":"commit","result":"ok"}"#,
    );
}

#[test]
fn the_core_failing_the_commit_early_where_javas_final_drain_throws() {
    // Seed 179 #1, shrunk. The core fails the commit at once after a failed batch; Java
    // holds it, and after UNKNOWN_PRODUCER_ID on another partition its Sender throws in
    // the harness's final drain, which then writes no outcome. Near miss: another
    // exception.
    recorded_as_replaced(
        "txn_commit_fails_early_java_drain_throws",
        Verdict::CommitFailsBeforeBatchesSettle,
        "IllegalStateException: Trying to get",
        "NullPointerException: Trying to get",
    );
}
