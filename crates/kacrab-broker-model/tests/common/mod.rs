//! The v2 batch encoder and helpers the rule tests share, written from the format
//! so that the oracle depends on neither the core's writer nor the reader under test.
#![allow(dead_code)]

use kacrab_broker_model::broker::*;
use kacrab_broker_model::log::MarkerKind;

// ---------------------------------------------------------------- encoder

#[derive(Clone, Default)]
pub struct TRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

#[derive(Clone)]
pub struct TBatch {
    pub pid: i64,
    pub epoch: i16,
    pub base_seq: i32,
    pub attributes: i16,
    pub last_offset_delta: Option<i32>,
    pub records: Vec<TRecord>,
    /// The records' (CreateTime) timestamp: base and max timestamp of the batch.
    pub timestamp: i64,
}

pub fn put_varint(out: &mut Vec<u8>, v: i64) {
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

pub fn put_nullable(out: &mut Vec<u8>, b: &Option<Vec<u8>>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

pub fn encode(b: &TBatch) -> Vec<u8> {
    let mut recs = Vec::new();
    for (i, r) in b.records.iter().enumerate() {
        let mut body = vec![0u8]; // attributes
        put_varint(&mut body, 0); // timestamp delta
        put_varint(&mut body, i as i64); // offset delta
        put_nullable(&mut body, &r.key);
        put_nullable(&mut body, &r.value);
        put_varint(&mut body, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_nullable(&mut body, &Some(k.clone()));
            put_nullable(&mut body, v);
        }
        put_varint(&mut recs, body.len() as i64);
        recs.extend_from_slice(&body);
    }
    let n = b.records.len() as i32;
    let mut tail = Vec::new(); // attributes .. end, covered by the CRC
    tail.extend_from_slice(&b.attributes.to_be_bytes());
    tail.extend_from_slice(&b.last_offset_delta.unwrap_or(n - 1).to_be_bytes());
    tail.extend_from_slice(&b.timestamp.to_be_bytes());
    tail.extend_from_slice(&b.timestamp.to_be_bytes());
    tail.extend_from_slice(&b.pid.to_be_bytes());
    tail.extend_from_slice(&b.epoch.to_be_bytes());
    tail.extend_from_slice(&b.base_seq.to_be_bytes());
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

/// Recomputes batchLength and CRC after a test mutated the bytes.
pub fn reseal(buf: &mut [u8]) {
    let len = (buf.len() - 12) as i32;
    buf[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&buf[21..]);
    buf[17..21].copy_from_slice(&crc.to_be_bytes());
}

pub fn tbatch(pid: i64, epoch: i16, seq: i32, n: usize, txn: bool) -> TBatch {
    let records = (0..n)
        .map(|i| TRecord {
            value: Some(format!("{pid}:{epoch}:{seq}:{i}").into_bytes()),
            ..TRecord::default()
        })
        .collect();
    TBatch {
        pid,
        epoch,
        base_seq: seq,
        attributes: if txn { 0x10 } else { 0 },
        last_offset_delta: None,
        records,
        timestamp: 1_000,
    }
}

// ---------------------------------------------------------------- helpers

pub const PID: i64 = 1;
pub const EXP: u64 = 60_000;

pub fn produce_n(
    p: &mut PartitionState,
    epoch: i16,
    seq: i32,
    n: usize,
    txn: bool,
    now: u64,
) -> Result<AppendOutcome, AppendError> {
    let mut b = tbatch(PID, epoch, seq, n, txn);
    b.timestamp = now as i64;
    p.append(&encode(&b), now)
}

pub fn produce(p: &mut PartitionState, epoch: i16, seq: i32) -> Result<AppendOutcome, AppendError> {
    produce_n(p, epoch, seq, 1, false, 0)
}

pub fn produce_txn(
    p: &mut PartitionState,
    epoch: i16,
    seq: i32,
) -> Result<AppendOutcome, AppendError> {
    produce_n(p, epoch, seq, 1, true, 0)
}

pub fn code(r: Result<AppendOutcome, AppendError>) -> i16 {
    r.expect_err("expected a rejection").code
}

pub fn marker(epoch: i16, coord: i32, kind: MarkerKind, tv: TransactionVersion) -> TxnMarker {
    TxnMarker {
        producer_id: PID,
        producer_epoch: epoch,
        coordinator_epoch: coord,
        kind,
        transaction_version: tv,
    }
}

pub fn entry(p: &PartitionState) -> &ProducerStateEntry {
    p.producer(PID).expect("producer state")
}
