//! The codec's own cost per batch: compressing (and decompressing) the records section of
//! one full 16 KiB batch (`batch.size`'s default) of JSON-log-like records, per codec at
//! Kafka's default level. `cargo bench -p kacrab-compression --bench codecs`.

use bytes::{Bytes, BytesMut};
use divan::Bencher;
use kacrab_compression::compression;
use kacrab_idempotence::compression::Codec;
use kacrab_idempotence::record::{BatchBuilder, Compression, Record};

#[path = "../tests/support/log_line.rs"]
mod log_line;
use log_line::json_log_line;

fn main() {
    divan::main();
}

/// Kafka's default `batch.size`.
const BATCH_SIZE: usize = 16 * 1024;

/// The records section of an uncompressed batch of JSON log lines (at most 200 bytes
/// each), as many as fit in [`BATCH_SIZE`] with the 61-byte batch header.
fn records_section() -> Vec<u8> {
    let mut b = BatchBuilder::new(Compression::None, BATCH_SIZE);
    let mut i = 0;
    loop {
        let record = Record::from_value(Bytes::from(json(i)), 1_764_000_000_000 + i as i64);
        if !b.has_room_for(&record, BATCH_SIZE) {
            break;
        }
        b.append(&record);
        i += 1;
    }
    b.finish()[61..].to_vec()
}

/// The deterministic JSON log line, cut to 200 bytes.
fn json(i: u64) -> String {
    let mut s = json_log_line(i);
    s.truncate(200);
    s
}

const CODECS: [Codec; 4] = [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd];

/// Compress one batch's records (16 KiB uncompressed, about 80 records).
#[divan::bench(args = CODECS)]
fn compress(bencher: Bencher, codec: Codec) {
    let section = records_section();
    let c = compression(codec, None).unwrap();
    let compressor = c.compressor().unwrap();
    bencher
        .counter(divan::counter::BytesCount::new(section.len()))
        .bench_local(|| {
            let mut out = BytesMut::with_capacity(section.len());
            compressor
                .compress(divan::black_box(&section), &mut out)
                .unwrap();
            out
        });
}

/// Decompress it again (the split path, and what a consumer pays).
#[divan::bench(args = CODECS)]
fn decompress(bencher: Bencher, codec: Codec) {
    let section = records_section();
    let c = compression(codec, None).unwrap();
    let compressor = c.compressor().unwrap();
    let mut compressed = BytesMut::new();
    compressor.compress(&section, &mut compressed).unwrap();
    bencher
        .counter(divan::counter::BytesCount::new(section.len()))
        .bench_local(|| {
            let mut out = Vec::with_capacity(section.len());
            compressor
                .decompress(divan::black_box(&compressed), &mut out)
                .unwrap();
            out
        });
}
