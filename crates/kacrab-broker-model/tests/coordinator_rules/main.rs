//! The model transaction coordinator's rules (`TransactionCoordinator`'s
//! handlers, with the markers of `ProducerAppendInfo.appendEndTxnMarker` and
//! the codes of KIP-360, KIP-588 and KIP-890), checked together with the model
//! partitions the markers land on.
//!
//! Batches are built by the rule tests' own v2 encoder (`tests/common`), so the
//! tests depend on neither the core's writer nor the reader under test.

use std::collections::BTreeMap;

use kacrab_broker_model::broker::*;
use kacrab_broker_model::coordinator::*;
use kacrab_broker_model::log::{ControlMarker, LogEntry, MarkerKind};

mod ending;
mod opening;

// ---------------------------------------------------------------- encoder

#[path = "../common/mod.rs"]
mod common;

/// One uncompressed v2 batch of `n` records with values `pid:epoch:seq` (the shared
/// test encoder; the tests read a record's sequence back from its value).
fn encode(pid: i64, epoch: i16, base_seq: i32, n: i32, txn: bool) -> Vec<u8> {
    let mut batch = common::tbatch(pid, epoch, base_seq, 0, txn);
    batch.records = (base_seq..base_seq + n)
        .map(|seq| common::TRecord {
            value: Some(format!("{pid}:{epoch}:{seq}").into_bytes()),
            ..common::TRecord::default()
        })
        .collect();
    common::encode(&batch)
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

    fn values(records: Vec<&kacrab_broker_model::log::LoggedRecord>) -> Vec<String> {
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
