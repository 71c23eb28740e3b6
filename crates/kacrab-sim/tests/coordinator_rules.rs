//! The model transaction coordinator's rules (`TransactionCoordinator`'s
//! handlers, with the markers of `ProducerAppendInfo.appendEndTxnMarker` and
//! the codes of KIP-360, KIP-588 and KIP-890), checked together with the model
//! partitions the markers land on.
//!
//! Batches are built by a small v2 encoder written here, as in
//! `broker_rules.rs`, so the tests depend on neither the core's writer nor the
//! reader under test.

use std::collections::BTreeMap;

use kacrab_sim::broker::*;
use kacrab_sim::coordinator::*;
use kacrab_sim::log::{ControlMarker, LogEntry, MarkerKind};

// ---------------------------------------------------------------- encoder

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        if z < 0x80 {
            out.push(z as u8);
            return;
        }
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
}

/// One uncompressed v2 batch of `n` records with values `pid:epoch:seq`.
fn encode(pid: i64, epoch: i16, base_seq: i32, n: i32, txn: bool) -> Vec<u8> {
    let mut recs = Vec::new();
    for i in 0..n {
        let value = format!("{pid}:{epoch}:{}", base_seq + i).into_bytes();
        let mut body = vec![0u8]; // attributes
        put_varint(&mut body, 0); // timestamp delta
        put_varint(&mut body, i64::from(i)); // offset delta
        put_varint(&mut body, -1); // null key
        put_varint(&mut body, value.len() as i64);
        body.extend_from_slice(&value);
        put_varint(&mut body, 0); // no headers
        put_varint(&mut recs, body.len() as i64);
        recs.extend_from_slice(&body);
    }
    let attributes: i16 = if txn { 0x10 } else { 0 };
    let mut tail = Vec::new(); // attributes .. end, covered by the CRC
    tail.extend_from_slice(&attributes.to_be_bytes());
    tail.extend_from_slice(&(n - 1).to_be_bytes());
    tail.extend_from_slice(&1_000i64.to_be_bytes());
    tail.extend_from_slice(&1_000i64.to_be_bytes());
    tail.extend_from_slice(&pid.to_be_bytes());
    tail.extend_from_slice(&epoch.to_be_bytes());
    tail.extend_from_slice(&base_seq.to_be_bytes());
    tail.extend_from_slice(&n.to_be_bytes());
    tail.extend_from_slice(&recs);
    let mut out = Vec::new();
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&((4 + 1 + 4 + tail.len()) as i32).to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out.push(2);
    out.extend_from_slice(&crc32c::crc32c(&tail).to_be_bytes());
    out.extend_from_slice(&tail);
    out
}

// ---------------------------------------------------------------- harness

const ID: &str = "txn-a";
const FIRST_PID: i64 = 1000;
const TIMEOUT: u64 = 60_000;
const GROUP: &str = "group-1";

fn tp(p: i32) -> Partition {
    ("t".to_owned(), p)
}

/// A coordinator and the model partitions its markers land on.
struct World {
    coord: TransactionCoordinator,
    parts: BTreeMap<Partition, PartitionState>,
    now: u64,
}

impl World {
    fn new() -> Self {
        let parts = (0..2).map(|p| (tp(p), PartitionState::new())).collect();
        World {
            coord: TransactionCoordinator::new(FIRST_PID),
            parts,
            now: 0,
        }
    }

    fn init(&mut self, expected: Option<(i64, i16)>) -> Result<(i64, i16), i16> {
        self.init_id(ID, expected)
    }

    fn init_id(&mut self, id: &str, expected: Option<(i64, i16)>) -> Result<(i64, i16), i16> {
        let mut write = write_markers_to(&mut self.parts, self.now);
        self.coord
            .init_producer_id(id, TIMEOUT, expected, self.now, &mut write)
    }

    fn add(&mut self, pid: i64, epoch: i16, ps: &[i32]) -> i16 {
        let tps: Vec<Partition> = ps.iter().map(|&p| tp(p)).collect();
        let codes = self.coord.add_partitions(ID, pid, epoch, &tps, self.now);
        assert_eq!(codes.len(), tps.len());
        assert!(codes.windows(2).all(|w| w[0].1 == w[1].1), "{codes:?}");
        codes[0].1
    }

    fn end(
        &mut self,
        pid: i64,
        epoch: i16,
        commit: bool,
        tv2: bool,
    ) -> Result<Option<(i64, i16)>, i16> {
        let mut write = write_markers_to(&mut self.parts, self.now);
        self.coord
            .end_txn(ID, pid, epoch, commit, tv2, self.now, &mut write)
    }

    fn release(&mut self) -> usize {
        let mut write = write_markers_to(&mut self.parts, self.now);
        self.coord.release_markers(self.now, &mut write)
    }

    fn coordinator_abort(&mut self) -> bool {
        let mut write = write_markers_to(&mut self.parts, self.now);
        self.coord.abort_open_transaction(ID, self.now, &mut write)
    }

    fn expire(&mut self) -> Vec<String> {
        let mut write = write_markers_to(&mut self.parts, self.now);
        self.coord.expire_transactions(self.now, &mut write)
    }

    /// A transactional Produce of `n` records to partition `p`.
    fn produce(
        &mut self,
        p: i32,
        pid: i64,
        epoch: i16,
        seq: i32,
        n: i32,
    ) -> Result<AppendOutcome, AppendError> {
        let now = self.now;
        self.part_mut(p)
            .append(&encode(pid, epoch, seq, n, true), now)
    }

    fn produce_code(&mut self, p: i32, pid: i64, epoch: i16, seq: i32) -> i16 {
        self.produce(p, pid, epoch, seq, 1)
            .expect_err("expected a rejection")
            .code
    }

    fn part(&self, p: i32) -> &PartitionState {
        &self.parts[&tp(p)]
    }

    fn part_mut(&mut self, p: i32) -> &mut PartitionState {
        self.parts.get_mut(&tp(p)).expect("partition")
    }

    fn markers(&self, p: i32) -> Vec<ControlMarker> {
        self.part(p)
            .entries()
            .iter()
            .filter_map(|e| match e {
                LogEntry::Marker(m) => Some(*m),
                LogEntry::Batch(_) => None,
            })
            .collect()
    }

    fn values(records: Vec<&kacrab_sim::log::LoggedRecord>) -> Vec<String> {
        records
            .iter()
            .map(|r| String::from_utf8(r.value.as_ref().expect("value").to_vec()).expect("utf8"))
            .collect()
    }

    fn committed(&self, p: i32) -> Vec<String> {
        Self::values(self.part(p).read_committed())
    }

    fn uncommitted(&self, p: i32) -> Vec<String> {
        Self::values(self.part(p).read_uncommitted())
    }

    fn meta(&self) -> &TxnMetadata {
        self.coord.metadata(ID).expect("metadata")
    }

    fn state(&self) -> TxnState {
        self.meta().state
    }

    /// Calls InitProducerId until the epoch is `epoch`.
    fn init_to_epoch(&mut self, epoch: i16) -> i64 {
        let (pid, mut e) = self.init(None).unwrap();
        while e < epoch {
            e = self.init(None).unwrap().1;
        }
        assert_eq!(self.meta().producer_epoch, epoch);
        pid
    }
}

fn marker_summary(m: &ControlMarker) -> (i64, i16, i32, MarkerKind) {
    (m.producer_id, m.producer_epoch, m.coordinator_epoch, m.kind)
}

fn never_write() -> impl FnMut(&Partition, &TxnMarker) -> Result<(), i16> {
    |tp, m| panic!("unexpected marker write to {tp:?}: {m:?}")
}

// ---------------------------------------------------------------- InitProducerId

/// `handleInitProducerId`: a new transactional id gets a fresh producer id with
/// epoch 0 (and an idempotent producer a fresh id at epoch 0 too).
#[test]
fn init_new_transactional_id_gets_a_fresh_producer_id_at_epoch_zero() {
    let mut w = World::new();
    assert_eq!(w.init(None), Ok((FIRST_PID, 0)));
    assert_eq!(w.init_id("txn-b", None), Ok((FIRST_PID + 1, 0)));
    assert_eq!(w.coord.init_idempotent(), (FIRST_PID + 2, 0));
    let meta = w.meta();
    assert_eq!(meta.state, TxnState::Empty);
    assert_eq!(meta.timeout_ms, TIMEOUT);
    assert_eq!(meta.last_producer_epoch, NO_PRODUCER_EPOCH);
    // An expected identity the coordinator has never seen is no obstacle.
    assert_eq!(w.init_id("txn-c", Some((77, 3))), Ok((FIRST_PID + 3, 0)));
}

/// `handleInitProducerId`: an existing id in Empty or Complete* is bumped and
/// goes to Empty.
#[test]
fn init_existing_transactional_id_bumps_the_epoch() {
    let mut w = World::new();
    assert_eq!(w.init(None), Ok((FIRST_PID, 0)));
    assert_eq!(w.init(None), Ok((FIRST_PID, 1)));
    assert_eq!(w.add(FIRST_PID, 1, &[0]), NONE);
    assert_eq!(w.end(FIRST_PID, 1, true, false), Ok(None));
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.init(None), Ok((FIRST_PID, 2)));
    assert_eq!(w.state(), TxnState::Empty);
}

/// `handleInitProducerId`, KIP-360: the expected epoch equal to the current one
/// bumps; equal to the last one is a retry that gets the current epoch;
/// anything else, or another producer id, is fenced.
#[test]
fn init_retry_with_the_last_epoch_returns_the_current_epoch() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.init(Some((pid, 0))), Ok((pid, 1)));
    assert_eq!(w.meta().last_producer_epoch, 0);
    // The response was lost: the retry names epoch 0 again.
    assert_eq!(w.init(Some((pid, 0))), Ok((pid, 1)));
    assert_eq!(w.init(Some((pid, 5))), Err(PRODUCER_FENCED));
    assert_eq!(w.init(Some((pid + 50, 1))), Err(PRODUCER_FENCED));
    assert_eq!(w.init(Some((pid, 1))), Ok((pid, 2)));
    // A negative expected identity means "none".
    assert_eq!(w.init(Some((-1, -1))), Ok((pid, 3)));
}

/// An InitProducerId without an expected epoch forgets the last epoch, so the
/// instance it fenced cannot pass its epoch off as a retry.
#[test]
fn init_by_a_new_instance_fences_the_old_instances_kip360_bump() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.init(None), Ok((pid, 1)));
    assert_eq!(w.init(Some((pid, 0))), Err(PRODUCER_FENCED));
}

/// `handleInitProducerId`: InitProducerId on an Ongoing transaction fences
/// (epoch+1), aborts with markers at the fencing epoch and answers
/// CONCURRENT_TRANSACTIONS; the retry is bumped once more.
#[test]
fn init_on_an_ongoing_transaction_fences_aborts_and_is_concurrent() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.meta().producer_epoch, 1);
    for p in 0..2 {
        let markers = w.markers(p);
        assert_eq!(markers.len(), 1);
        assert_eq!(marker_summary(&markers[0]), (pid, 1, 0, MarkerKind::Abort));
    }
    assert!(w.committed(0).is_empty());
    assert_eq!(w.uncommitted(0).len(), 2);
    assert_eq!(w.produce_code(0, pid, 0, 2), INVALID_PRODUCER_EPOCH);
    assert_eq!(w.init(None), Ok((pid, 2)));
    assert_eq!(w.state(), TxnState::Empty);
}

/// `TransactionMetadata`'s pending state: while markers are outstanding
/// (Prepare*, a pending transition) every request answers
/// CONCURRENT_TRANSACTIONS.
#[test]
fn init_while_markers_are_outstanding_is_concurrent() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.state(), TxnState::PrepareCommit);
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.init(Some((pid, 0))), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.add(pid, 0, &[1]), CONCURRENT_TRANSACTIONS);
    assert!(w.markers(0).is_empty());
    assert_eq!(w.release(), 1);
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.init(None), Ok((pid, 1)));
}

/// `handleInitProducerId`, KIP-360: an exhausted epoch (>= i16::MAX - 1)
/// rotates to a new producer id at epoch 0; a retry naming the old id and its
/// last epoch gets the new id.
#[test]
fn init_with_an_exhausted_epoch_rotates_the_producer_id() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let new = FIRST_PID + 1;
    assert_eq!(w.init(Some((old, i16::MAX - 1))), Ok((new, 0)));
    let meta = w.meta();
    assert_eq!(
        (meta.prev_producer_id, meta.last_producer_epoch),
        (old, i16::MAX - 1)
    );
    assert_eq!(w.init(Some((old, i16::MAX - 1))), Ok((new, 0)));
    assert_eq!(w.init(Some((old, 5))), Err(PRODUCER_FENCED));
    assert_eq!(w.init(Some((new, 0))), Ok((new, 1)));

    // Without an expected identity the rotation happens as well.
    let mut w = World::new();
    w.init_to_epoch(i16::MAX - 1);
    assert_eq!(w.init(None), Ok((FIRST_PID + 1, 0)));
}

/// The timeout must be positive and at most `transaction.max.timeout.ms`.
#[test]
fn init_with_an_invalid_timeout_is_rejected() {
    let mut coord = TransactionCoordinator::new(1).with_max_transaction_timeout_ms(1_000);
    let mut write = never_write();
    for timeout in [0, 1_001] {
        assert_eq!(
            coord.init_producer_id(ID, timeout, None, 0, &mut write),
            Err(INVALID_TRANSACTION_TIMEOUT)
        );
    }
    assert_eq!(
        coord.init_producer_id(ID, 1_000, None, 0, &mut write),
        Ok((1, 0))
    );
}

// ---------------------------------------------------------------- AddPartitions, verification

/// `handleAddPartitionsToTransaction`: unknown id or another producer id is
/// INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED; a good add opens
/// the transaction.
#[test]
fn add_partitions_error_codes() {
    let mut w = World::new();
    assert_eq!(w.add(FIRST_PID, 0, &[0]), INVALID_PRODUCER_ID_MAPPING);
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid + 1, 0, &[0, 1]), INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(w.add(pid, 1, &[0, 1]), PRODUCER_FENCED);
    assert_eq!(w.state(), TxnState::Empty);
    w.now = 42;
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    assert_eq!(w.state(), TxnState::Ongoing);
    assert_eq!(w.meta().start_ms, 42);
    assert_eq!(w.meta().version, TransactionVersion::V1);
    w.now = 50;
    assert_eq!(w.add(pid, 0, &[1]), NONE);
    assert_eq!(w.meta().start_ms, 42, "an open transaction keeps its start");
    assert_eq!(w.meta().partitions.len(), 2);
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, false, false), Ok(None));
    assert_eq!(w.add(pid, 0, &[0]), CONCURRENT_TRANSACTIONS);
}

/// KIP-890 (`AddPartitionsToTxnManager`): the implicit add of a TV2 Produce
/// (v12) and the codes the leader answers with: fenced becomes
/// INVALID_PRODUCER_EPOCH, concurrent stays for TV2 (NOT_ENOUGH_REPLICAS below
/// v12), coordinator errors NOT_ENOUGH_REPLICAS.
#[test]
fn implicit_add_partition_for_tv2_produce() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    assert_eq!(w.state(), TxnState::Ongoing);
    assert_eq!(w.meta().version, TransactionVersion::V2);
    let fenced = w.coord.add_partition_implicit(ID, pid, 1, &tp(1), 0);
    assert_eq!(fenced, PRODUCER_FENCED);
    assert_eq!(
        produce_error_from_coordinator(fenced, 12),
        INVALID_PRODUCER_EPOCH
    );
    let wrong_pid = w.coord.add_partition_implicit(ID, pid + 9, 0, &tp(1), 0);
    assert_eq!(wrong_pid, INVALID_PRODUCER_ID_MAPPING);

    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    // The client moves on to epoch 1 while the markers are outstanding.
    let busy = w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0);
    assert_eq!(busy, CONCURRENT_TRANSACTIONS);
    assert_eq!(
        produce_error_from_coordinator(busy, 12),
        CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        produce_error_from_coordinator(busy, 11),
        NOT_ENOUGH_REPLICAS
    );
    w.release();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0), NONE);

    for code in [
        NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS,
    ] {
        w.coord.set_unavailable(Some(code));
        let got = w.coord.add_partition_implicit(ID, pid, 1, &tp(1), 0);
        assert_eq!(got, code);
        assert_eq!(produce_error_from_coordinator(got, 12), NOT_ENOUGH_REPLICAS);
    }
}

/// KIP-890 part 1: a TV1 Produce to a partition not added to the transaction
/// fails verification (TRANSACTION_ABORTABLE, INVALID_TXN_STATE below v11).
#[test]
fn verification_of_a_tv1_produce() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        TRANSACTION_ABORTABLE
    );
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    assert_eq!(w.coord.verify_partition(ID, pid, 0, &tp(0)), NONE);
    let missing = w.coord.verify_partition(ID, pid, 0, &tp(1));
    assert_eq!(missing, TRANSACTION_ABORTABLE);
    assert_eq!(
        produce_error_from_coordinator(missing, 11),
        TRANSACTION_ABORTABLE
    );
    assert_eq!(
        produce_error_from_coordinator(missing, 10),
        INVALID_TXN_STATE
    );
    let stale = w.coord.verify_partition(ID, pid, 1, &tp(0));
    assert_eq!(stale, PRODUCER_FENCED);
    assert_eq!(
        produce_error_from_coordinator(stale, 9),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        w.coord.verify_partition("nobody", pid, 0, &tp(0)),
        INVALID_PRODUCER_ID_MAPPING
    );
}

// ---------------------------------------------------------------- offsets

/// TV1: AddOffsetsToTxn then TxnOffsetCommit; the offsets are committed by a
/// COMMIT only, and a group that was not added fails verification.
#[test]
fn group_offsets_commit_only_when_the_transaction_commits() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    let offsets = [(tp(0), 10), (tp(1), 20)];
    let codes = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, false, 0);
    assert!(
        codes.iter().all(|(_, c)| *c == TRANSACTION_ABORTABLE),
        "{codes:?}"
    );
    assert_eq!(w.coord.add_offsets(ID, pid, 1, GROUP, 0), PRODUCER_FENCED);
    assert_eq!(w.coord.add_offsets(ID, pid, 0, GROUP, 0), NONE);
    assert_eq!(w.state(), TxnState::Ongoing);
    let codes = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, false, 0);
    assert_eq!(codes, vec![(tp(0), NONE), (tp(1), NONE)]);
    assert!(w.coord.committed_offsets(GROUP).is_empty());
    // A transaction with only a group commits under TV1 (no partition marker).
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    let want: BTreeMap<Partition, i64> = offsets.iter().cloned().collect();
    assert_eq!(w.coord.committed_offsets(GROUP), want);

    assert_eq!(w.coord.add_offsets(ID, pid, 0, GROUP, 0), NONE);
    let later = [(tp(0), 99)];
    assert_eq!(
        w.coord
            .txn_offset_commit(ID, GROUP, pid, 0, &later, false, 0),
        vec![(tp(0), NONE)]
    );
    assert_eq!(w.end(pid, 0, false, false), Ok(None));
    assert_eq!(
        w.coord.committed_offsets(GROUP),
        want,
        "an abort discards them"
    );
    assert!(w.coord.committed_offsets("other").is_empty());
}

/// TV2: TxnOffsetCommit v5 adds the group implicitly, and EndTxn commits it.
#[test]
fn tv2_txn_offset_commit_adds_the_group_implicitly() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    let offsets = [(tp(1), 7)];
    let codes = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, true, 0);
    assert_eq!(codes, vec![(tp(1), NONE)]);
    assert_eq!(w.state(), TxnState::Ongoing);
    assert!(w.meta().groups.contains(GROUP));
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(
        w.coord.committed_offsets(GROUP),
        offsets.iter().cloned().collect()
    );
    let stale = w
        .coord
        .txn_offset_commit(ID, GROUP, pid, 0, &offsets, true, 0);
    assert_eq!(stale, vec![(tp(1), PRODUCER_FENCED)]);
}

// ---------------------------------------------------------------- EndTxn

/// `handleEndTransaction` and `appendEndTxnMarker`, TV1: the markers carry the
/// transaction's own epoch, so each partition keeps its sequence history and
/// the next transaction continues the sequences.
#[test]
fn tv1_end_txn_writes_markers_at_the_same_epoch_and_sequences_continue() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    w.produce(1, pid, 0, 0, 1).unwrap();
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(w.meta().producer_epoch, 0);
    for p in 0..2 {
        let m = w.markers(p);
        assert_eq!(m.len(), 1);
        assert_eq!(marker_summary(&m[0]), (pid, 0, 0, MarkerKind::Commit));
    }
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1"]);
    assert_eq!(w.committed(1), ["1000:0:0"]);
    assert_eq!(w.part(0).producer(pid).unwrap().last_seq(), 1);

    assert_eq!(w.add(pid, 0, &[0]), NONE);
    assert_eq!(w.produce_code(0, pid, 0, 0), OUT_OF_ORDER_SEQUENCE_NUMBER);
    w.produce(0, pid, 0, 2, 1).unwrap();
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1", "1000:0:2"]);
}

/// `handleEndTransaction` and `appendEndTxnMarker`, TV2: EndTxn bumps the
/// epoch, the markers carry the new epoch, the response hands it to the client,
/// and the next transaction starts at sequence 0.
#[test]
fn tv2_end_txn_bumps_the_epoch_and_sequences_restart_at_zero() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.produce(0, pid, 0, 0, 3).unwrap();
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(
        (w.meta().producer_epoch, w.meta().last_producer_epoch),
        (1, 0)
    );
    let m = w.markers(0);
    assert_eq!(marker_summary(&m[0]), (pid, 1, 0, MarkerKind::Commit));
    assert!(
        w.markers(1).is_empty(),
        "only partitions in the transaction"
    );
    assert_eq!(w.committed(0).len(), 3);

    assert_eq!(w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0), NONE);
    assert_eq!(w.produce_code(0, pid, 1, 3), OUT_OF_ORDER_SEQUENCE_NUMBER);
    w.produce(0, pid, 1, 0, 1).unwrap();
    assert_eq!(w.produce_code(0, pid, 0, 3), INVALID_PRODUCER_EPOCH);
    assert_eq!(w.end(pid, 1, false, true), Ok(Some((pid, 2))));
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1", "1000:0:2"]);
}

/// `handleEndTransaction`, TV1 retries: the same result in Complete* is NONE,
/// the other result INVALID_TXN_STATE, Prepare* CONCURRENT_TRANSACTIONS, Empty
/// INVALID_TXN_STATE.
#[test]
fn tv1_end_txn_retry_semantics() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.end(pid, 0, true, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.end(pid, 0, false, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    assert_eq!(
        w.end(pid + 1, 0, true, false),
        Err(INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(w.end(pid, 1, true, false), Err(PRODUCER_FENCED));
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.end(pid, 0, true, false), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.end(pid, 0, false, false), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.coord.pending_marker_writes().len(), 1);
    w.release();
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.end(pid, 0, false, false), Err(INVALID_TXN_STATE));
    assert_eq!(w.markers(0).len(), 1, "a retry writes no marker");
    let mut write = never_write();
    let unknown = w
        .coord
        .end_txn("nobody", pid, 0, true, false, 0, &mut write);
    assert_eq!(unknown, Err(INVALID_PRODUCER_ID_MAPPING));
}

/// `handleEndTransaction`, TV2 retries: in Prepare* CONCURRENT_TRANSACTIONS
/// (also for the next EndTxn at the new epoch, KAFKA-18464); in Complete* a
/// retry at the old epoch is NONE with the current identity; a commit of
/// nothing is INVALID_TXN_STATE; an abort of nothing bumps.
#[test]
fn tv2_end_txn_retry_semantics() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(
        w.end(pid, 0, true, true),
        Err(INVALID_TXN_STATE),
        "commit from Empty"
    );
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.coord.set_hold_markers(true);
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(w.end(pid, 0, true, true), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.end(pid, 1, false, true), Err(CONCURRENT_TRANSACTIONS));
    w.release();
    assert_eq!(w.end(pid, 0, true, true), Ok(Some((pid, 1))));
    assert_eq!(w.end(pid, 0, false, true), Err(INVALID_TXN_STATE));
    assert_eq!(
        w.end(pid, 1, true, true),
        Err(INVALID_TXN_STATE),
        "commit of nothing"
    );
    assert_eq!(w.markers(0).len(), 1);

    assert_eq!(w.end(pid, 1, false, true), Ok(Some((pid, 2))));
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.markers(0).len(), 1, "an empty abort writes no marker");
    assert_eq!(w.end(pid, 1, false, true), Ok(Some((pid, 2))));
    assert_eq!(w.end(pid, 0, false, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 3, false, true), Err(PRODUCER_FENCED));
    assert_eq!(
        w.end(pid + 1, 2, false, true),
        Err(INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(w.end(pid, 2, false, true), Ok(Some((pid, 3))));

    assert_eq!(w.init(None), Ok((pid, 4)));
    assert_eq!(
        w.end(pid, 3, false, true),
        Err(PRODUCER_FENCED),
        "Empty needs the current epoch"
    );
    assert_eq!(w.end(pid, 4, false, true), Ok(Some((pid, 5))));
}

/// `handleEndTransaction`, TV2 at an exhausted epoch: the markers close the old
/// producer id at epoch i16::MAX and the client continues with a new producer
/// id at epoch 0; a retry naming the old id gets the new one.
#[test]
fn tv2_end_txn_with_an_exhausted_epoch_rotates_the_producer_id() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let new = FIRST_PID + 1;
    let e = i16::MAX - 1;
    assert_eq!(w.coord.add_partition_implicit(ID, old, e, &tp(0), 0), NONE);
    w.produce(0, old, e, 0, 1).unwrap();
    assert_eq!(w.end(old, e, true, true), Ok(Some((new, 0))));
    let m = w.markers(0);
    assert_eq!(
        marker_summary(&m[0]),
        (old, i16::MAX, 0, MarkerKind::Commit)
    );
    assert_eq!(w.committed(0).len(), 1);
    let meta = w.meta();
    assert_eq!(
        (meta.producer_id, meta.producer_epoch, meta.prev_producer_id),
        (new, 0, old)
    );
    assert_eq!(w.end(old, e, true, true), Ok(Some((new, 0))));
    assert_eq!(
        w.end(old, e - 1, true, true),
        Err(INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(w.coord.add_partition_implicit(ID, new, 0, &tp(0), 0), NONE);
    w.produce(0, new, 0, 0, 1).unwrap();
    assert_eq!(w.end(new, 0, true, true), Ok(Some((new, 1))));
    assert_eq!(w.committed(0).len(), 2);
}

/// Aborted transactions are hidden from read_committed readers, committed
/// ones are visible, and an open one holds the last stable offset back.
#[test]
fn abort_hides_records_from_read_committed() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    assert!(
        w.committed(0).is_empty(),
        "open transaction: LSO at its start"
    );
    assert_eq!(w.end(pid, 0, true, false), Ok(None));
    assert_eq!(w.add(pid, 0, &[0]), NONE);
    w.produce(0, pid, 0, 2, 2).unwrap();
    assert_eq!(w.end(pid, 0, false, false), Ok(None));
    assert_eq!(w.markers(0).len(), 2);
    assert_eq!(w.markers(0)[1].kind, MarkerKind::Abort);
    assert_eq!(w.committed(0), ["1000:0:0", "1000:0:1"]);
    assert_eq!(w.uncommitted(0).len(), 4);
    assert_eq!(w.part(0).log().aborted_transactions().len(), 1);
}

// ---------------------------------------------------------------- fencing, timeout

/// A second InitProducerId for the same transactional id fences the first
/// producer: its coordinator requests get PRODUCER_FENCED and its produces
/// INVALID_PRODUCER_EPOCH once the fencing markers landed.
#[test]
fn a_second_producer_fences_the_first() {
    let mut w = World::new();
    let (pid, a) = w.init(None).unwrap();
    assert_eq!(w.add(pid, a, &[0]), NONE);
    w.produce(0, pid, a, 0, 1).unwrap();
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    let (_, b) = w.init(None).unwrap();
    assert_eq!(b, 2);
    assert_eq!(w.add(pid, a, &[1]), PRODUCER_FENCED);
    assert_eq!(w.end(pid, a, true, false), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, a, false, false), Err(PRODUCER_FENCED));
    assert_eq!(w.coord.add_offsets(ID, pid, a, GROUP, 0), PRODUCER_FENCED);
    assert_eq!(w.produce_code(0, pid, a, 1), INVALID_PRODUCER_EPOCH);
    assert_eq!(w.init(Some((pid, a))), Err(PRODUCER_FENCED));

    assert_eq!(w.add(pid, b, &[0]), NONE);
    w.produce(0, pid, b, 0, 1).unwrap();
    assert_eq!(w.end(pid, b, true, false), Ok(None));
    assert_eq!(w.committed(0), ["1000:2:0"]);
}

/// TV2 fencing: the fenced producer's commit is fenced (KAFKA-20785); its
/// abort may still be answered as a retry of the coordinator's abort, but the
/// second producer's bump leaves it fenced. A producer with no open
/// transaction is fenced through the implicit add of its next Produce.
#[test]
fn tv2_second_producer_fences_the_first() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.produce(0, pid, 0, 0, 1).unwrap();
    assert_eq!(w.init(None), Err(CONCURRENT_TRANSACTIONS));
    assert_eq!(w.end(pid, 0, true, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 0, false, true), Ok(Some((pid, 1))));
    assert_eq!(w.init(None), Ok((pid, 2)));
    let fenced = w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0);
    assert_eq!(
        produce_error_from_coordinator(fenced, 12),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(w.end(pid, 1, false, true), Err(PRODUCER_FENCED));
    assert!(w.committed(0).is_empty());

    // No open transaction: the new instance's bump alone fences the old one.
    assert_eq!(w.init(None), Ok((pid, 3)));
    let fenced = w.coord.add_partition_implicit(ID, pid, 2, &tp(1), 0);
    assert_eq!(
        produce_error_from_coordinator(fenced, 12),
        INVALID_PRODUCER_EPOCH
    );
}

/// The transaction timeout fences (epoch+1) and aborts an Ongoing transaction
/// open longer than its timeout, with ABORT markers at the new epoch.
#[test]
fn transaction_timeout_fences_and_aborts() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    w.now = 100;
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    w.now = 100 + TIMEOUT;
    assert!(w.expire().is_empty());
    w.now += 1;
    assert_eq!(w.expire(), [ID.to_owned()]);
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.meta().producer_epoch, 1);
    for p in 0..2 {
        assert_eq!(
            marker_summary(&w.markers(p)[0]),
            (pid, 1, 0, MarkerKind::Abort)
        );
    }
    assert!(w.committed(0).is_empty());
    assert_eq!(w.add(pid, 0, &[0]), PRODUCER_FENCED);
    assert_eq!(w.end(pid, 0, true, false), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 0, false, false), Err(PRODUCER_FENCED));
    assert_eq!(w.produce_code(0, pid, 0, 2), INVALID_PRODUCER_EPOCH);
    w.now += 10 * TIMEOUT;
    assert!(w.expire().is_empty(), "only Ongoing transactions time out");
}

/// TV2 after a timeout: the client's abort is a retry of the coordinator's
/// abort and hands it the bumped epoch; a commit is fenced.
#[test]
fn tv2_transaction_timeout_lets_the_client_abort() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 0, &tp(0), 0), NONE);
    w.produce(0, pid, 0, 0, 1).unwrap();
    w.now = TIMEOUT + 1;
    assert_eq!(w.expire(), [ID.to_owned()]);
    assert_eq!(w.markers(0)[0].producer_epoch, 1);
    assert_eq!(w.end(pid, 0, true, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(pid, 0, false, true), Ok(Some((pid, 1))));
    assert_eq!(w.coord.add_partition_implicit(ID, pid, 1, &tp(0), 0), NONE);
    w.produce(0, pid, 1, 0, 1).unwrap();
    assert_eq!(w.end(pid, 1, true, true), Ok(Some((pid, 2))));
    assert_eq!(w.committed(0), ["1000:1:0"]);
}

/// TV2 timeout at an exhausted epoch: the fencing abort closes the old
/// producer id at i16::MAX and rotates (KAFKA-20090); the client's delayed
/// abort naming the old id is a retry that hands it the new id.
#[test]
fn tv2_timeout_at_an_exhausted_epoch_rotates_the_producer_id() {
    let mut w = World::new();
    let old = w.init_to_epoch(i16::MAX - 1);
    let e = i16::MAX - 1;
    assert_eq!(w.coord.add_partition_implicit(ID, old, e, &tp(0), 0), NONE);
    w.produce(0, old, e, 0, 1).unwrap();
    w.now = TIMEOUT + 1;
    assert_eq!(w.expire(), [ID.to_owned()]);
    let m = w.markers(0);
    assert_eq!(marker_summary(&m[0]), (old, i16::MAX, 0, MarkerKind::Abort));
    let new = FIRST_PID + 1;
    assert_eq!(w.coord.producer_id_and_epoch(ID), Some((new, 0)));
    assert_eq!(w.end(old, e, true, true), Err(PRODUCER_FENCED));
    assert_eq!(w.end(old, e, false, true), Ok(Some((new, 0))));
    assert!(w.committed(0).is_empty());
}

// ---------------------------------------------------------------- markers, availability

/// A marker that fails to land stays outstanding (the transaction stays in
/// Prepare*) until a later delivery; a failover re-sends it with the new
/// coordinator epoch.
#[test]
fn failed_marker_writes_stay_outstanding() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    let mut flaky = |p: &Partition, m: &TxnMarker| -> Result<(), i16> {
        if p.1 == 1 {
            return Err(NOT_LEADER_OR_FOLLOWER);
        }
        w.parts
            .get_mut(p)
            .unwrap()
            .append_marker(m, 0)
            .map(|_| ())
            .map_err(|e| e.code)
    };
    assert_eq!(
        w.coord.end_txn(ID, pid, 0, true, false, 0, &mut flaky),
        Ok(None)
    );
    assert_eq!(w.state(), TxnState::PrepareCommit);
    let pending = w.coord.pending_marker_writes();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].0, tp(1));
    assert_eq!(w.add(pid, 0, &[0]), CONCURRENT_TRANSACTIONS);
    assert_eq!(w.coord.bump_coordinator_epoch(), 1);
    let delivered = {
        let mut write = write_markers_to(&mut w.parts, 0);
        w.coord.deliver_markers(0, &mut write)
    };
    assert_eq!(delivered, 1);
    assert_eq!(w.state(), TxnState::CompleteCommit);
    assert_eq!(
        marker_summary(&w.markers(0)[0]),
        (pid, 0, 0, MarkerKind::Commit)
    );
    assert_eq!(
        marker_summary(&w.markers(1)[0]),
        (pid, 0, 1, MarkerKind::Commit)
    );
    assert!(w.coord.pending_marker_writes().is_empty());
}

/// Coordinator unavailability and authorization failures answer every request.
#[test]
fn unavailable_and_unauthorized_coordinator() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    w.coord.set_unavailable(Some(COORDINATOR_LOAD_IN_PROGRESS));
    assert_eq!(w.init(None), Err(COORDINATOR_LOAD_IN_PROGRESS));
    assert_eq!(w.add(pid, 0, &[0]), COORDINATOR_LOAD_IN_PROGRESS);
    assert_eq!(
        w.end(pid, 0, true, false),
        Err(COORDINATOR_LOAD_IN_PROGRESS)
    );
    w.coord.set_unavailable(None);
    w.coord.set_authorized(ID, false);
    assert_eq!(w.init(None), Err(TRANSACTIONAL_ID_AUTHORIZATION_FAILED));
    assert_eq!(w.add(pid, 0, &[0]), TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    w.coord.set_authorized(ID, true);
    assert_eq!(w.add(pid, 0, &[0]), NONE);
}

/// `transactional.id.expiration.ms`: an idle id becomes Dead, is unknown to
/// every request, and starts afresh with a new producer id.
#[test]
fn an_expired_transactional_id_starts_afresh() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    w.init(None).unwrap();
    assert!(w.coord.expire_transactional_ids(999, 1_000).is_empty());
    assert_eq!(
        w.coord.expire_transactional_ids(1_000, 1_000),
        [ID.to_owned()]
    );
    assert_eq!(w.state(), TxnState::Dead);
    assert_eq!(w.add(pid, 1, &[0]), INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(w.end(pid, 1, false, true), Err(INVALID_PRODUCER_ID_MAPPING));
    assert_eq!(w.init(Some((pid, 1))), Ok((pid + 1, 0)));
}

// ---------------------------------------------------------------- the coordinator's own abort

/// The coordinator's own abort of an open transaction (what its timeout does,
/// `TransactionCoordinator.abortTimedOutTransactions`), with the markers held as
/// the simulator holds them: while they are outstanding every request for the id
/// is CONCURRENT_TRANSACTIONS (the pending transition comes first; TV1 EndTxn
/// excepted); once they are
/// written the old epoch is PRODUCER_FENCED, and a TV1 verification of the old
/// producer says the same.
#[test]
fn coordinator_abort_is_concurrent_until_its_markers_are_written_then_fenced() {
    let mut w = World::new();
    let (pid, _) = w.init(None).unwrap();
    assert_eq!(w.add(pid, 0, &[0, 1]), NONE);
    w.produce(0, pid, 0, 0, 2).unwrap();
    w.coord.set_hold_markers(true);
    assert!(w.coordinator_abort());
    assert_eq!(w.state(), TxnState::PrepareAbort);
    assert_eq!(w.meta().producer_epoch, 1);
    assert_eq!(w.add(pid, 0, &[0]), CONCURRENT_TRANSACTIONS);
    // TV1 EndTxn checks the epoch before the pending transition
    // (`TransactionCoordinator.handleEndTransaction`).
    assert_eq!(w.end(pid, 0, true, false), Err(PRODUCER_FENCED));
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        CONCURRENT_TRANSACTIONS
    );
    assert_eq!(w.release(), 2);
    assert_eq!(w.state(), TxnState::CompleteAbort);
    assert_eq!(w.add(pid, 0, &[0]), PRODUCER_FENCED);
    assert_eq!(w.end(pid, 0, false, false), Err(PRODUCER_FENCED));
    assert_eq!(
        w.coord.verify_partition(ID, pid, 0, &tp(0)),
        PRODUCER_FENCED
    );
    assert!(w.committed(0).is_empty());
    assert!(
        !w.coordinator_abort(),
        "only an open transaction is aborted"
    );
}
