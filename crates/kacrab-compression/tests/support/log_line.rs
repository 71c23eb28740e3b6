//! A deterministic JSON log line, the input the codec test and bench compress: log-like
//! (repeated keys, a small vocabulary, hex ids), so codec levels and ratios behave as on
//! real logs. Included by `tests/levels.rs` and `benches/codecs.rs` with `#[path]`.

/// Line `i`: a sequence number, a timestamp, a request id and four words, all derived
/// from `i`.
pub fn json_log_line(i: u64) -> String {
    const WORDS: [&str; 8] = [
        "request",
        "completed",
        "user",
        "cart",
        "timeout",
        "cache",
        "miss",
        "order",
    ];
    let w = |k: u64| WORDS[((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (k * 3)) % 8) as usize];
    format!(
        r#"{{"seq":{i},"ts":"2026-12-01T12:00:{:02}.{:03}Z","level":"INFO","service":"checkout","request_id":"{:016x}","msg":"{} {} {} {}"}}"#,
        (i / 1000) % 60,
        i % 1000,
        i.wrapping_mul(0xFF51_AFD7_ED55_8CCD),
        w(1),
        w(2),
        w(3),
        w(4)
    )
}
