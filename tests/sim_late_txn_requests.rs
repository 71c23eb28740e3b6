//! Transactional chaos runs (the chaos job's shape: 3 brokers, 6 partitions, fault rate
//! 0.05, through the Session) that once ended with a violation the simulator itself
//! was wrong about, or that Kafka's own rules explain: each names the seed that showed
//! it and checks that the run still shows the case, so the test can not pass
//! vacuously.

use kacrab_sim::{Cluster, DriverKind, FaultRates, SimConfig, TxnOutcome};

/// The chaos job's transactional run for `seed` at `transaction.version` `version`.
fn chaos_run(seed: u64, version: i16) -> Cluster {
    let mut sim = SimConfig::transactional(seed, "chaos-tx", version);
    sim.driver = DriverKind::Session;
    sim.brokers = 3;
    sim.partitions = 6;
    sim.faults = FaultRates::uniform(0.05);
    Cluster::transactional_chaos(sim, 20, 8)
}

/// **A TV1 transaction that a late AddOffsetsToTxn reopened after its commit hangs at
/// the coordinator by Kafka's rules; it is not a transaction the producer left open.**
/// The chaos main job's transactional run, seed 108, TV2 (the finalized
/// `transaction.version` drops to 1 early on), through the Session: the coordinator
/// reads an AddOffsetsToTxn and holds it 1.4 s; the session times it out, closes the
/// connection and retries it on a new one; the retry, TxnOffsetCommit and EndTxn
/// (commit) are answered; then the held request is applied. Under TV1 the epoch is
/// the same, so Kafka's coordinator (`TransactionCoordinator.
/// handleAddPartitionsToTransaction`) takes `CompleteCommit` to `Ongoing`, and the
/// transaction hangs until `abortTimedOutTransactions` aborts it (KIP-890). The
/// end-of-run rule reported "coordinator left transaction in Some(Ongoing)".
#[test]
fn a_transaction_reopened_by_a_late_add_offsets_hangs_by_kafkas_rules() {
    let c = chaos_run(108, 2);
    // The run still shows the case (else this test proves nothing): the coordinator
    // holds a transaction a late request opened, and every workload transaction ended.
    let opened = c.late_opened_transaction("chaos-tx");
    assert!(opened.is_some(), "no late request opened a transaction");
    assert!(
        c.hanging_by_kafkas_rules("chaos-tx"),
        "not the hanging case"
    );
    assert_eq!(c.transactions().count(|o| *o == TxnOutcome::Open), 0);
    let v = c.transactional_chaos_violations();
    assert!(v.is_empty(), "{v:#?}");
}

/// **A transactional operation waiting on the session's timer is not a hang.** Seed
/// 159, TV1: the session closes a connection whose AddPartitionsToTxn timed out, and
/// the abort that follows waits for the session's reconnect backoff, which the core
/// knows nothing of. The simulator's hang check asked the core's `poll_timeout` only
/// and reported "Abort pending with nothing scheduled: the producer would hang" (the
/// same false hang showed in 10 of 1,200 runs, seeds 100 to 699); it now asks the
/// driver's timer, the session's `poll_timeout` when the Session drives.
#[test]
fn an_operation_waiting_for_the_sessions_reconnect_is_not_reported_as_a_hang() {
    let c = chaos_run(159, 1);
    assert_eq!(c.txn_ticks(), 0, "a hang was reported");
    let v = c.transactional_chaos_violations();
    assert!(v.is_empty(), "{v:#?}");
    // The run got past the operation that used to be reported: it ended transactions.
    let ended = c
        .transactions()
        .count(|o| matches!(o, TxnOutcome::Committed | TxnOutcome::Aborted));
    assert!(ended >= 10, "only {ended} transactions ended");
}

/// **An InitProducerId that meets a transaction a late request opened fences the
/// producer by Kafka's rules.** Seed 348, TV1 (the finalized `transaction.version`
/// rises to 2, so the transaction ends with the upgrade's epoch bump): an
/// AddOffsetsToTxn is held by the coordinator, timed out and retried; the
/// transaction is aborted; then the held request is applied and opens a transaction
/// at the same epoch (`handleAddPartitionsToTransaction` from `CompleteAbort`). The
/// producer's bump then finds it `Ongoing`: `handleInitProducerId` fences the epoch
/// and aborts it (CONCURRENT_TRANSACTIONS), and the retried bump names an epoch that
/// is neither the current nor the last one: PRODUCER_FENCED
/// (`TransactionMetadata.prepareIncrementProducerEpoch`). Java's producer meets the
/// same whenever it bumps under TV1 (KIP-360). The fatal error is excused for exactly
/// this case.
#[test]
fn a_bump_meeting_a_transaction_a_late_request_opened_is_fenced_by_kafkas_rules() {
    use kacrab_idempotence::KafkaError;
    let c = chaos_run(348, 1);
    assert!(
        c.late_opened_transaction("chaos-tx").is_some(),
        "no late request opened a transaction"
    );
    assert!(
        c.fenced_through_late_request("chaos-tx"),
        "no InitProducerId fenced a late-opened transaction"
    );
    assert_eq!(c.producer().fatal_error(), Some(KafkaError::ProducerFenced));
    assert!(c.fatal_by_kafkas_rules(), "the fence is not excused");
    let v = c.transactional_chaos_violations();
    assert!(v.is_empty(), "{v:#?}");
}
