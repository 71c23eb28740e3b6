//! What a Produce frame costs to build, with its record batches as parts of their own
//! (`Connection::encode`, the producer's path) and joined into one buffer (what the
//! encoder did before issue 16 item 3, and what `Frame::to_bytes` still does): the
//! difference is one copy of every record byte. Run with
//! `cargo bench -p kacrab-wire --bench produce_frame`; BENCHMARKS.md has the figures.

use std::hint::black_box;

use bytes::Bytes;
use divan::counter::BytesCount;
use divan::{AllocProfiler, Bencher};
use kacrab_wire::messages::{ProducePartition, ProduceRequest, ProduceTopic};
use kacrab_wire::Connection;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

/// A request of `partitions` full batches of 16 KiB (`batch.size`'s default). `acks = 0`
/// so that the connection does not remember each encoded request as in flight.
fn request(partitions: i32) -> ProduceRequest {
    kacrab_wire::message!(ProduceRequest {
        acks: 0,
        timeout_ms: 30_000,
        topics: vec![kacrab_wire::message!(ProduceTopic {
            name: "events".into(),
            partitions: (0..partitions)
                .map(|index| kacrab_wire::message!(ProducePartition {
                    index,
                    records: Bytes::from(vec![index as u8; 16_384]),
                }))
                .collect(),
        })],
        ..Default::default()
    })
}

const PARTITIONS: &[i32] = &[1, 6, 100];

#[divan::bench(args = PARTITIONS)]
fn batches_as_parts(bencher: Bencher, partitions: i32) {
    let req = request(partitions);
    let mut conn = Connection::new(Some("bench".into()));
    bencher
        .counter(BytesCount::new(16_384 * partitions as usize))
        .bench_local(|| black_box(conn.encode(req.clone(), 9, 0).unwrap()));
}

#[divan::bench(args = PARTITIONS)]
fn batches_joined(bencher: Bencher, partitions: i32) {
    let req = request(partitions);
    let mut conn = Connection::new(Some("bench".into()));
    bencher
        .counter(BytesCount::new(16_384 * partitions as usize))
        .bench_local(|| black_box(conn.encode(req.clone(), 9, 0).unwrap().frame.to_bytes()));
}
