//! `compression.<codec>.level` (KIP-390) changes what the codec writes wherever the codec
//! has levels: a higher level gives different, and on log-like records smaller, output;
//! every level's output still decodes, and lz4 keeps Kafka's frame header at every level.

use bytes::BytesMut;
use kacrab_compression::compression;
use kacrab_idempotence::compression::Codec;

#[path = "support/log_line.rs"]
mod log_line;
use log_line::json_log_line;

/// About 16 KiB of JSON log lines: repetitive enough that a harder search pays.
fn json_logs() -> Vec<u8> {
    (0u64..100)
        .flat_map(|i| json_log_line(i).into_bytes())
        .collect()
}

/// `codec` at `level`: the compressed bytes, after checking they decode to `input`.
fn compressed(codec: Codec, level: i32, input: &[u8]) -> Vec<u8> {
    let c = compression(codec, Some(level)).unwrap();
    let compressor = c.compressor().unwrap();
    let mut out = BytesMut::new();
    compressor.compress(input, &mut out).unwrap();
    let mut back = Vec::new();
    compressor.decompress(&out, &mut back).unwrap();
    assert_eq!(back, input, "{codec} level {level} round trip");
    out.to_vec()
}

/// Asserts `low` and `high` give different output and `high` is no larger.
fn levels_differ(codec: Codec, low: i32, high: i32) {
    let input = json_logs();
    let (a, b) = (
        compressed(codec, low, &input),
        compressed(codec, high, &input),
    );
    assert_ne!(
        a, b,
        "{codec}: level {low} and level {high} wrote the same bytes"
    );
    assert!(
        b.len() <= a.len(),
        "{codec}: level {high} ({} bytes) is larger than level {low} ({} bytes)",
        b.len(),
        a.len()
    );
}

#[test]
fn gzip_levels_change_the_output() {
    levels_differ(Codec::Gzip, 1, 9);
    // -1 is zlib's default, level 6.
    let input = json_logs();
    assert_eq!(
        compressed(Codec::Gzip, -1, &input),
        compressed(Codec::Gzip, 6, &input)
    );
}

#[test]
fn lz4_levels_other_than_the_default_use_lz4_hc() {
    // 9 (Kafka's default) is LZ4's fast compressor; 10 and above are LZ4-HC, as in
    // Kafka's Lz4BlockOutputStream.
    levels_differ(Codec::Lz4, 9, 10);
    levels_differ(Codec::Lz4, 3, 12);
    let input = json_logs();
    for level in 1..=17 {
        let frame = compressed(Codec::Lz4, level, &input);
        // Magic, then FLG 0x60 (version 1, independent blocks, no checksums, no content
        // size) and BD 0x40 (64 KiB blocks): what Kafka's KafkaLZ4BlockInputStream reads.
        assert_eq!(
            &frame[..6],
            b"\x04\x22\x4d\x18\x60\x40",
            "lz4 level {level}"
        );
    }
}

#[test]
fn zstd_levels_change_the_output() {
    levels_differ(Codec::Zstd, 1, 19);
    levels_differ(Codec::Zstd, -5, 3);
}
