//! Every transactional operation ends, in success or a reported error: for each pending
//! operation, each request it sends, and each error code the core knows (plus a lost
//! answer and a code it does not know), the first answer of that request carries the
//! error; every later request is answered with success. The operation must complete
//! with one `Event::TransactionCompleted` within a bounded number of steps, and while it
//! is pending with nothing on the wire the producer must ask for a timer.

mod support;

use kacrab_idempotence::*;
use support::{config, record, tp, COORDINATOR};

const PID: i64 = 4242;

/// The transactional requests (and Produce, to set up an abortable transaction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rpc {
    FindCoordinator,
    InitProducerId,
    /// The InitProducerId that bumps the epoch after a transaction (`current` set).
    Bump,
    AddPartitions,
    AddOffsets,
    TxnOffsetCommit,
    EndTxn,
    Produce,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Error(KafkaError),
    /// The connection broke after the request was written.
    Lost,
}

/// A driver that answers everything with success, except the first request of one kind
/// after `arm`.
struct Auto {
    p: Producer,
    now: Timestamp,
    epoch: i16,
    inject: Option<(Rpc, Answer)>,
    /// Armed in turn once `inject` is consumed (the last first).
    more: Vec<(Rpc, Answer)>,
    events: Vec<Event>,
}

impl Auto {
    fn new(level: i16) -> Self {
        let mut cfg = config();
        cfg.transactional_id("tx-auto");
        let mut p = Producer::new(cfg.build().unwrap(), Timestamp::ZERO);
        p.handle_transaction_version(level);
        Self {
            p,
            now: Timestamp::ZERO,
            epoch: 0,
            inject: None,
            more: Vec::new(),
            events: Vec::new(),
        }
    }

    fn arm(&mut self, rpc: Rpc, answer: Answer) {
        self.inject = Some((rpc, answer));
    }

    /// The armed answer if `rpc` is the armed kind (consumed).
    fn injected(&mut self, rpc: Rpc) -> Option<Answer> {
        match self.inject {
            Some((r, a)) if r == rpc => {
                self.inject = self.more.pop();
                Some(a)
            }
            _ => None,
        }
    }

    /// Answers every request until the producer has nothing more to send.
    fn pump(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(r) = self.p.poll_request(self.now) {
                progressed = true;
                self.answer(r);
            }
            while let Some(e) = self.p.poll_event() {
                progressed = true;
                self.events.push(e);
            }
            self.p.assert_invariants();
            if !progressed {
                return;
            }
        }
    }

    fn answer(&mut self, r: Request) {
        let now = self.now;
        let (rpc, id) = match &r {
            Request::FindCoordinator(f) => (Rpc::FindCoordinator, f.id),
            Request::InitProducerId(i) if i.current.is_valid() => (Rpc::Bump, i.id),
            Request::InitProducerId(i) => (Rpc::InitProducerId, i.id),
            Request::AddPartitionsToTxn(a) => (Rpc::AddPartitions, a.id),
            Request::AddOffsetsToTxn(a) => (Rpc::AddOffsets, a.id),
            Request::TxnOffsetCommit(c) => (Rpc::TxnOffsetCommit, c.id),
            Request::EndTxn(e) => (Rpc::EndTxn, e.id),
            Request::Produce(p) => (Rpc::Produce, p.id),
            Request::Metadata(m) => {
                let mut md = Metadata::default();
                for topic in &m.topics {
                    for partition in 0..4 {
                        md.partitions.push(PartitionMetadata::new(
                            TopicPartition::new(topic.clone(), partition),
                            Some(NodeId(1)),
                            0,
                        ));
                    }
                }
                self.p.handle_metadata(Some(m.id), &md, now).unwrap();
                return;
            }
            Request::CloseConnection { .. } => return,
        };
        let error = match self.injected(rpc) {
            Some(Answer::Lost) => {
                self.p
                    .handle_request_failed(id, RequestFailure::Disconnected, now)
                    .unwrap();
                return;
            }
            Some(Answer::Error(e)) => e,
            None => KafkaError::None,
        };
        let fail = |e: KafkaError| {
            if e == KafkaError::None {
                Ok(())
            } else {
                Err(e)
            }
        };
        match r {
            Request::FindCoordinator(f) => {
                let result = fail(error).map(|()| NodeId(COORDINATOR));
                self.p.handle_find_coordinator(f.id, result, now).unwrap();
            }
            Request::InitProducerId(i) => {
                let result = fail(error).map(|()| {
                    self.epoch += 1;
                    ProducerIdAndEpoch::new(PID, self.epoch)
                });
                self.p.handle_producer_id(i.id, result, now).unwrap();
            }
            Request::AddPartitionsToTxn(a) => {
                let answers: Vec<_> = a.partitions.iter().map(|tp| (tp.clone(), error)).collect();
                self.p.handle_add_partitions(a.id, &answers, now).unwrap();
            }
            Request::AddOffsetsToTxn(a) => {
                self.p.handle_add_offsets(a.id, error, now).unwrap();
            }
            Request::TxnOffsetCommit(c) => {
                let answers: Vec<_> = c
                    .offsets
                    .iter()
                    .map(|o| (o.partition.clone(), error))
                    .collect();
                self.p
                    .handle_txn_offset_commit(c.id, &answers, now)
                    .unwrap();
            }
            Request::EndTxn(e) => {
                let result = fail(error).map(|()| {
                    e.transaction_v2.then(|| {
                        self.epoch += 1;
                        ProducerIdAndEpoch::new(PID, self.epoch)
                    })
                });
                self.p.handle_end_txn(e.id, result, now).unwrap();
            }
            Request::Produce(p) => {
                let mut response = ProduceResponse::default();
                for b in &p.batches {
                    response.partitions.push(if error == KafkaError::None {
                        PartitionResponse::ok(b.partition.clone(), 0)
                    } else {
                        PartitionResponse::error(b.partition.clone(), error)
                    });
                }
                self.p
                    .handle_produce_response(p.id, &response, now)
                    .unwrap();
            }
            Request::Metadata(_) | Request::CloseConnection { .. } => unreachable!(),
        }
    }

    fn completions(&self, op: TxnOp) -> Vec<Result<(), TxnError>> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::TransactionCompleted { op: o, result } if *o == op => Some(result.clone()),
                _ => None,
            })
            .collect()
    }

    /// Drives (answers, then timers) until `op` completed; panics if it does not within
    /// bounded steps, or if the producer waits with no timer while it is pending.
    fn drive_until_completed(&mut self, op: TxnOp, what: &str) -> Result<(), TxnError> {
        for _ in 0..400 {
            self.pump();
            if let Some(result) = self.completions(op).pop() {
                assert_eq!(self.completions(op).len(), 1, "{what}: one completion");
                return result;
            }
            let Some(at) = self.p.poll_timeout() else {
                panic!(
                    "{what}: {op:?} pending in state {:?} with nothing to send and no timer",
                    self.p.transaction_state()
                );
            };
            self.now = self.now.max(at);
            self.p.handle_timeout(self.now);
        }
        panic!(
            "{what}: {op:?} still pending after 400 steps, state {:?}",
            self.p.transaction_state()
        );
    }

    fn init(&mut self) {
        self.p.init_transactions().unwrap();
        assert_eq!(
            self.drive_until_completed(TxnOp::InitTransactions, "setup"),
            Ok(())
        );
        self.events.clear();
    }

    fn send(&mut self, partition: i32) {
        self.p
            .send(&tp(partition), &record("v"), self.now)
            .expect("send accepted");
    }
}

fn offsets() -> (Vec<OffsetToCommit>, ConsumerGroupMetadata) {
    (
        vec![OffsetToCommit::new(TopicPartition::new("in", 0), 7)],
        ConsumerGroupMetadata::new("g").with_member(1, "m"),
    )
}

/// One pending operation: how to reach it, and the requests it sends.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// `init_transactions` (TV1 and TV2 alike).
    Init,
    /// `send_offsets_to_transaction` with TV1 (AddOffsets, then the group's
    /// FindCoordinator and TxnOffsetCommit).
    OffsetsTv1,
    /// `send_offsets_to_transaction` with TV2 (TxnOffsetCommit only).
    OffsetsTv2,
    /// `commit_transaction` with TV1, called before the partition is added.
    CommitTv1,
    /// `commit_transaction` with TV2.
    CommitTv2,
    /// `commit_transaction` after a TV1 -> TV2 change (TV1 EndTxn, then a bump).
    CommitUpgrade,
    /// `abort_transaction` after an abortable produce error with TV1 (EndTxn, bump).
    AbortTv1,
    /// `abort_transaction` with TV2.
    AbortTv2,
}

impl Scenario {
    const ALL: [Self; 8] = [
        Self::Init,
        Self::OffsetsTv1,
        Self::OffsetsTv2,
        Self::CommitTv1,
        Self::CommitTv2,
        Self::CommitUpgrade,
        Self::AbortTv1,
        Self::AbortTv2,
    ];

    fn rpcs(self) -> &'static [Rpc] {
        match self {
            Self::Init => &[Rpc::FindCoordinator, Rpc::InitProducerId],
            Self::OffsetsTv1 => &[Rpc::AddOffsets, Rpc::FindCoordinator, Rpc::TxnOffsetCommit],
            Self::OffsetsTv2 => &[Rpc::FindCoordinator, Rpc::TxnOffsetCommit],
            Self::CommitTv1 => &[Rpc::AddPartitions, Rpc::EndTxn],
            Self::CommitTv2 => &[Rpc::EndTxn],
            Self::CommitUpgrade | Self::AbortTv1 => &[Rpc::EndTxn, Rpc::Bump],
            Self::AbortTv2 => &[Rpc::EndTxn],
        }
    }

    /// A producer with the operation just called and `(rpc, answer)` armed.
    fn start(self, rpc: Rpc, answer: Answer) -> (Auto, TxnOp) {
        let level = match self {
            Self::OffsetsTv2 | Self::CommitTv2 | Self::AbortTv2 => 2,
            _ => 1,
        };
        let mut a = Auto::new(level);
        if let Self::Init = self {
            a.arm(rpc, answer);
            a.p.init_transactions().unwrap();
            return (a, TxnOp::InitTransactions);
        }
        a.init();
        a.p.begin_transaction().unwrap();
        let op = match self {
            Self::Init => unreachable!(),
            Self::OffsetsTv1 | Self::OffsetsTv2 => {
                a.arm(rpc, answer);
                let (o, g) = offsets();
                a.p.send_offsets_to_transaction(o, g).unwrap();
                TxnOp::SendOffsets
            }
            Self::CommitTv1 => {
                a.send(0);
                a.arm(rpc, answer);
                a.p.commit_transaction().unwrap();
                TxnOp::Commit
            }
            Self::CommitTv2 | Self::CommitUpgrade => {
                a.send(0);
                a.pump();
                if let Self::CommitUpgrade = self {
                    a.p.handle_transaction_version(2);
                }
                a.arm(rpc, answer);
                a.p.commit_transaction().unwrap();
                TxnOp::Commit
            }
            Self::AbortTv1 | Self::AbortTv2 => {
                a.send(0);
                if let Self::AbortTv1 = self {
                    a.arm(
                        Rpc::Produce,
                        Answer::Error(KafkaError::TopicAuthorizationFailed),
                    );
                }
                a.pump();
                a.arm(rpc, answer);
                a.p.abort_transaction().unwrap();
                TxnOp::Abort
            }
        };
        (a, op)
    }
}

fn known_errors() -> Vec<KafkaError> {
    let mut errors: Vec<KafkaError> = (-1..=130)
        .map(KafkaError::from_code)
        .filter(|e| !matches!(e, KafkaError::Unknown(_) | KafkaError::None))
        .collect();
    errors.push(KafkaError::Unknown(9999));
    errors
}

#[test]
fn every_transactional_error_ends_the_pending_operation() {
    let mut answers: Vec<Answer> = known_errors().into_iter().map(Answer::Error).collect();
    answers.push(Answer::Lost);
    let mut cases = 0;
    for scenario in Scenario::ALL {
        for &rpc in scenario.rpcs() {
            for &answer in &answers {
                let what = format!("{scenario:?}, {rpc:?} answered {answer:?}");
                let (mut a, op) = scenario.start(rpc, answer);
                let result = a.drive_until_completed(op, &what);
                assert!(
                    a.inject.is_none(),
                    "{what}: the request was never sent (result {result:?})"
                );
                // The producer is left usable or says why not: never an open operation.
                a.pump();
                assert!(a.p.poll_event().is_none());
                cases += 1;
            }
        }
    }
    assert!(cases > 700, "{cases} cases");
}

/// A TV1 abort whose epoch bump is answered TRANSACTION_ABORTABLE completes with that
/// error (it used to stay pending for ever, and a second `abort_transaction` returned
/// `Ok` doing nothing); the next abort bumps again and succeeds.
#[test]
fn refused_bump_after_tv1_abort_completes_the_abort_and_the_next_abort_bumps() {
    let (mut a, op) =
        Scenario::AbortTv1.start(Rpc::Bump, Answer::Error(KafkaError::TransactionAbortable));
    assert_eq!(
        a.drive_until_completed(op, "refused bump"),
        Err(TxnError::Abortable(KafkaError::TransactionAbortable))
    );
    assert_eq!(
        a.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    a.events.clear();
    let epoch = a.p.producer_id().epoch;
    a.p.abort_transaction().unwrap();
    assert_eq!(
        a.drive_until_completed(TxnOp::Abort, "second abort"),
        Ok(())
    );
    assert_eq!(a.p.transaction_state(), Some(TransactionState::Ready));
    assert_eq!(a.p.producer_id().epoch.0, epoch.0 + 1, "the bump happened");
}

/// TV1: EndTxn(ABORT) answered UNKNOWN_PRODUCER_ID while the abort owes an epoch bump
/// (after an abortable produce error). Java's `EndTxnHandler` takes that code as abortable
/// when the coordinator can bump epochs (`abortableErrorIfPossible`), which changes
/// nothing while aborting (`transitionToAbortableError` skips it), and the abort's result
/// is the bump's (`beginCompletingTransaction` returns `initializeTransactions` when a
/// bump is required): the abort ends with the bump (InitProducerId with the current id
/// and epoch, KIP-360; the coordinator aborts whatever transaction it still holds for
/// the id). The core used to fail the abort and the producer with UNKNOWN_PRODUCER_ID
/// (conformance trace `txn_abort_end_txn_unknown_producer_id_bumps`).
#[test]
fn tv1_abort_answered_unknown_producer_id_ends_with_the_bump() {
    let (mut a, op) =
        Scenario::AbortTv1.start(Rpc::EndTxn, Answer::Error(KafkaError::UnknownProducerId));
    let epoch = a.p.producer_id().epoch;
    assert_eq!(a.drive_until_completed(op, "abort"), Ok(()));
    assert_eq!(a.p.transaction_state(), Some(TransactionState::Ready));
    assert_eq!(a.p.producer_id().epoch.0, epoch.0 + 1, "the bump happened");
}

/// TV1: EndTxn(ABORT) answered UNKNOWN_PRODUCER_ID while the abort owes a bump, the bump
/// answered COORDINATOR_NOT_AVAILABLE, and the lookup before its resend answered
/// TRANSACTION_ABORTABLE. Java is still ABORTING_TRANSACTION there (nothing on that path
/// runs `completeTransaction`), so `FindCoordinatorHandler`'s `abortableError` fails only
/// the lookup's own result and `transitionToAbortableError` skips: Java looks the
/// coordinator up again and the bump completes the abort. The core used to fail the
/// abort with TRANSACTION_ABORTABLE (conformance trace
/// `txn_abort_bump_rides_out_abortable_lookup`, seed 79).
#[test]
fn tv1_abort_after_unknown_producer_id_rides_out_an_abortable_lookup() {
    let (mut a, op) =
        Scenario::AbortTv1.start(Rpc::EndTxn, Answer::Error(KafkaError::UnknownProducerId));
    a.more = vec![
        (
            Rpc::FindCoordinator,
            Answer::Error(KafkaError::TransactionAbortable),
        ),
        (
            Rpc::Bump,
            Answer::Error(KafkaError::CoordinatorNotAvailable),
        ),
    ];
    let epoch = a.p.producer_id().epoch;
    assert_eq!(a.drive_until_completed(op, "abort"), Ok(()));
    assert!(
        a.inject.is_none() && a.more.is_empty(),
        "every answer was given"
    );
    assert_eq!(a.p.transaction_state(), Some(TransactionState::Ready));
    assert_eq!(a.p.producer_id().epoch.0, epoch.0 + 1, "the bump happened");
}

/// The same lookup answer where the EndTxn(ABORT) succeeded: Java has moved to
/// INITIALIZING (`completeTransaction`), so the abortable answer moves it to
/// ABORTABLE_ERROR and the queued bump is failed with it
/// (`maybeTerminateRequestWithError`): the abort fails with TRANSACTION_ABORTABLE.
#[test]
fn tv1_abort_bump_after_a_completed_end_txn_fails_on_an_abortable_lookup() {
    let (mut a, op) = Scenario::AbortTv1.start(
        Rpc::Bump,
        Answer::Error(KafkaError::CoordinatorNotAvailable),
    );
    a.more = vec![(
        Rpc::FindCoordinator,
        Answer::Error(KafkaError::TransactionAbortable),
    )];
    assert_eq!(
        a.drive_until_completed(op, "abort"),
        Err(TxnError::Abortable(KafkaError::TransactionAbortable))
    );
    assert_eq!(
        a.p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
}

/// TV2: EndTxn(ABORT) answered UNKNOWN_PRODUCER_ID used to leave the state Aborting with
/// no timer and no event. Nothing is left to abort with: the producer is fatal, and the
/// abort completes saying so.
#[test]
fn tv2_abort_answered_unknown_producer_id_completes_fatal() {
    let (mut a, op) =
        Scenario::AbortTv2.start(Rpc::EndTxn, Answer::Error(KafkaError::UnknownProducerId));
    assert_eq!(
        a.drive_until_completed(op, "abort"),
        Err(TxnError::Fatal(KafkaError::UnknownProducerId))
    );
    assert_eq!(a.p.transaction_state(), Some(TransactionState::FatalError));
}

/// TV1 at init, TV2 finalized before the commit: the EndTxn still speaks TV1 (the
/// version the transaction began under), the epoch is bumped after it, and the next
/// transaction is TV2. It used to send a TV2 EndTxn and stay Initializing for ever.
#[test]
fn transaction_version_change_before_commit_ends_with_tv1_end_txn_then_bump() {
    let mut a = Auto::new(1);
    a.init();
    a.p.begin_transaction().unwrap();
    a.send(0);
    a.pump();
    a.p.handle_transaction_version(2);
    a.p.commit_transaction().unwrap();
    let Some(Request::EndTxn(e)) = a.p.poll_request(a.now) else {
        panic!("EndTxn expected")
    };
    assert!(!e.transaction_v2, "EndTxn keeps the transaction's version");
    a.p.handle_end_txn(e.id, Ok(None), a.now).unwrap();
    let Some(Request::InitProducerId(b)) = a.p.poll_request(a.now) else {
        panic!("the epoch bump expected")
    };
    assert_eq!(b.current, ProducerIdAndEpoch::new(PID, 1));
    a.p.handle_producer_id(b.id, Ok(ProducerIdAndEpoch::new(PID, 2)), a.now)
        .unwrap();
    a.epoch = 2;
    assert_eq!(a.drive_until_completed(TxnOp::Commit, "commit"), Ok(()));
    assert_eq!(a.p.transaction_state(), Some(TransactionState::Ready));
    a.p.begin_transaction().unwrap();
    a.send(0);
    let Some(Request::Produce(p)) = a.p.poll_request(a.now) else {
        panic!("TV2 produces without AddPartitionsToTxn")
    };
    assert!(p.transaction_v2);
}

/// The same change before committing an empty transaction: no EndTxn, but the bump
/// still goes out and the commit completes (it used to hang in Initializing).
#[test]
fn transaction_version_change_before_empty_commit_bumps_and_completes() {
    let mut a = Auto::new(1);
    a.init();
    a.p.begin_transaction().unwrap();
    a.p.handle_transaction_version(2);
    a.p.commit_transaction().unwrap();
    let Some(Request::InitProducerId(b)) = a.p.poll_request(a.now) else {
        panic!("the epoch bump expected (nothing to end)")
    };
    assert!(b.current.is_valid());
    a.p.handle_producer_id(b.id, Ok(ProducerIdAndEpoch::new(PID, 2)), a.now)
        .unwrap();
    a.epoch = 2;
    assert_eq!(a.drive_until_completed(TxnOp::Commit, "commit"), Ok(()));
    assert_eq!(a.p.transaction_state(), Some(TransactionState::Ready));
}
