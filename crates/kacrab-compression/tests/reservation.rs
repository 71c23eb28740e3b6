//! The memory an open compressed batch reserves, measured with a counting allocator: the
//! per-topic compression-ratio estimate decides when a batch is full, never how much
//! memory a new batch reserves up front.
//!
//! Java's `RecordAccumulator.append` allocates `max(batch.size, record upper bound)` from
//! its `BufferPool` for every new batch, whatever `CompressionRatioEstimator` says; the
//! estimate only moves `MemoryRecordsBuilder.isFull`. Very compressible data drives the
//! estimate towards its floor, and a batch sized by `1 / estimate` would reserve up to
//! 10,000 × `batch.size` (160 MB at 16 KiB) for each open batch, which `buffer.memory`
//! (it counts bytes written) never sees.
//!
//! One test in this binary: the allocator's count is process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use kacrab_compression::compression;
use kacrab_idempotence::compression::{Codec, Compression};
use kacrab_idempotence::record;
use kacrab_idempotence::*;

/// Counts the bytes currently allocated (capacity reserved, touched or not).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; the
// counter is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const BATCH_SIZE: usize = 16_384;
const PARTITIONS: i32 = 1_000;

/// A producer of `compression` whose topic `logs` has seen 300 records of 100 KB of
/// one byte each (each a batch of its own, compressing some 5,000-fold under zstd: the
/// estimate falls by Java's 0.005 per batch down to what it observes).
fn taught(compression: Compression) -> Producer {
    let config = ProducerConfig::builder()
        .compression(compression)
        .batch_size(BATCH_SIZE)
        .linger(core::time::Duration::from_secs(3600))
        .buffer_memory(1 << 30)
        .max_request_size(1 << 20)
        .build()
        .unwrap();
    let mut producer = Producer::new(config, Timestamp::ZERO);
    let big = Bytes::from(vec![b'a'; 100_000]);
    let teacher = TopicPartition::new("logs", PARTITIONS);
    for _ in 0..300 {
        producer
            .send(
                &teacher,
                &Record::from_value(big.clone(), 0),
                Timestamp::ZERO,
            )
            .expect("queued");
    }
    producer
}

/// Opens a batch on each of the 1,000 partitions with one small record: the bytes
/// allocated in all, and the most one send allocated.
fn open_batches(producer: &mut Producer, record: &Record) -> (usize, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    let mut largest = 0;
    for partition in 0..PARTITIONS {
        let tp = TopicPartition::new("logs", partition);
        let at = LIVE.load(Ordering::Relaxed);
        producer.send(&tp, record, Timestamp::ZERO).expect("queued");
        let grew = LIVE.load(Ordering::Relaxed).saturating_sub(at);
        largest = largest.max(grew);
        // Stop at the first runaway reservation rather than reserve gigabytes.
        assert!(
            grew <= 16 * BATCH_SIZE,
            "partition {partition}: opening a batch allocated {grew} bytes (batch.size \
             {BATCH_SIZE})"
        );
    }
    (LIVE.load(Ordering::Relaxed).saturating_sub(before), largest)
}

/// At 1,000 partitions of one topic whose estimate zstd drove down with repetitive
/// values, opening a batch on each allocates what it does without compression (one
/// `batch.size` buffer per open batch, as Java's `BufferPool` hands out), not
/// `batch.size / estimate`; and batches still fill by the estimate (a batch holds far
/// more than `batch.size` of uncompressed records before it is full). The figures are
/// in `docs/design.md` ("Sizing").
#[test]
fn an_open_compressed_batch_reserves_batch_size_whatever_the_estimate() {
    let record = Record::from_value(Bytes::from(vec![b'b'; 100]), 0);
    let (plain_total, plain_largest) = {
        let mut producer = taught(Compression::None);
        open_batches(&mut producer, &record)
    };
    let mut producer = taught(compression(Codec::Zstd, None).unwrap());
    let (zstd_total, zstd_largest) = open_batches(&mut producer, &record);
    eprintln!(
        "{PARTITIONS} open batches, batch.size {BATCH_SIZE}: zstd {zstd_total} bytes (at \
         most {zstd_largest} for one send), uncompressed {plain_total} ({plain_largest})"
    );
    assert!(
        zstd_total <= plain_total + PARTITIONS as usize * 1_024,
        "zstd {zstd_total} bytes, uncompressed {plain_total}"
    );
    // The estimate still decides when a batch is full: the first batch of a fresh
    // partition takes far more than batch.size of uncompressed records and stays open.
    let tp = TopicPartition::new("logs", PARTITIONS + 1);
    let mut written = 0;
    while written <= 50 * BATCH_SIZE {
        producer
            .send(&tp, &record, Timestamp::ZERO)
            .expect("queued");
        written += record::BatchBuilder::estimated_record_size(&record);
    }
    assert_eq!(
        producer.queued_batches(&tp),
        1,
        "the batch closed before {written} bytes: the estimate was not learned"
    );
}
