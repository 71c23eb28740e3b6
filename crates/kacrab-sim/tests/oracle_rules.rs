//! The shared oracle on hand-made logs: what it finds, and what it allows. The same
//! code checks the simulator's model brokers and, through `kacrab-testkit`, FakeBroker
//! and real Kafka.

use kacrab_sim::oracle::{
    decode_value, encode_key, encode_value, summarize, LogOracle, LogRecord, Outcome, RecordId,
    ViolationKind,
};

fn names(n: usize) -> Vec<String> {
    (0..n).map(|p| format!("p{p}")).collect()
}

/// `n` records to one partition, each logged at offset = index.
fn logged(n: u32) -> (LogOracle, Vec<LogRecord>) {
    let mut o = LogOracle::new(names(1));
    o.set_value_size(Some(12));
    let mut log = Vec::new();
    for i in 0..n {
        o.on_sent(0);
        log.push(LogRecord::of(i64::from(i), 0, i, 12));
    }
    (o, log)
}

fn kinds(o: &mut LogOracle) -> Vec<ViolationKind> {
    o.take_findings().into_iter().map(|f| f.kind).collect()
}

#[test]
fn encoding_round_trips_and_rejects_garbage() {
    let v = encode_value(3, 77, 12);
    assert_eq!(&v[..], b"3:77........");
    assert_eq!(decode_value(&v), Some((3, 77)));
    assert_eq!(decode_value(&encode_key(3, 77)), Some((3, 77)));
    assert_eq!(&encode_value(12, 3456, 2)[..], b"12:3456");
    for bad in [
        &b""[..],
        b"3",
        b":1",
        b"3:",
        b"3:7x",
        b"a:1",
        b"3:7.x",
        b"-1:2",
    ] {
        assert_eq!(
            decode_value(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn the_binary_encoding_it_replaced_had_the_same_length() {
    // The simulator's records keep their sizes (and so its traces) for any tag that
    // fits the configured value size, as the old 8-byte binary tag did.
    assert_eq!(encode_value(9, 999_999, 8).len(), 8);
    assert_eq!(encode_value(0, 0, 16).len(), 16);
}

#[test]
fn a_clean_run_finds_nothing() {
    let (mut o, log) = logged(5);
    o.scan_log(0, &log);
    for i in 0..4u32 {
        o.on_outcome(
            RecordId(u64::from(i)),
            Some(0),
            Outcome::Delivered,
            Some(i64::from(i)),
        );
    }
    o.on_outcome(
        RecordId(4),
        Some(0),
        Outcome::Failed {
            possibly_written: true,
        },
        None,
    );
    o.check_all_resolved();
    assert_eq!(o.take_findings(), vec![]);
    let t = o.tally(None);
    assert_eq!(
        (t.records, t.acked, t.failed, t.failed_in_log),
        (5, 4, 1, 1)
    );
    assert_eq!(t.failed_not_written, 0);
}

/// The rule the oracle exists for, on a hand-made log: a record reported failed with
/// `possibly_written == false` that is in the log is a violation, whether the log is
/// seen before the outcome or after.
#[test]
fn a_record_failed_as_not_written_that_is_in_the_log_is_found() {
    let not_written = Outcome::Failed {
        possibly_written: false,
    };
    // Log first (the adapter suite reads logs after the run).
    let (mut o, log) = logged(3);
    o.scan_log(0, &log);
    o.on_outcome(RecordId(0), Some(0), Outcome::Delivered, Some(0));
    o.on_outcome(RecordId(1), Some(0), not_written, None);
    o.on_outcome(RecordId(2), Some(0), Outcome::Delivered, Some(2));
    let f = o.take_findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind, ViolationKind::FailedButWritten);
    assert!(f[0].detail.contains("record #1 (id 1)"), "{}", f[0].detail);
    assert_eq!(o.tally(None).failed_not_written, 1);
    // Outcome first (the simulator sees a late write after the failure).
    let (mut o, log) = logged(2);
    o.on_outcome(RecordId(1), Some(0), not_written, None);
    o.scan_log(0, &log);
    assert_eq!(kinds(&mut o), vec![ViolationKind::FailedButWritten]);
    // The same record reported possibly written is allowed in the log.
    let (mut o, log) = logged(2);
    o.scan_log(0, &log);
    let maybe = Outcome::Failed {
        possibly_written: true,
    };
    o.on_outcome(RecordId(1), Some(0), maybe, None);
    assert_eq!(kinds(&mut o), vec![]);
}

#[test]
fn lost_duplicated_reordered_and_misreported_records_are_found() {
    let (mut o, mut log) = logged(6);
    log.remove(1); // record 1 lost
    log.push(LogRecord::of(6, 0, 3, 12)); // record 3 again
    log.swap(3, 4); // records 4 and 5 swapped (offsets too)
    o.scan_log(0, &log);
    for i in 0..6 {
        o.on_outcome(RecordId(i), Some(0), Outcome::Delivered, None);
    }
    o.on_outcome(RecordId(0), Some(0), Outcome::Delivered, None);
    o.on_outcome(RecordId(9), Some(0), Outcome::Delivered, None);
    let k = kinds(&mut o);
    for want in [
        ViolationKind::WrongRecord, // offsets not increasing after the swap
        ViolationKind::Reordered,
        ViolationKind::Duplicate,
        ViolationKind::Lost,
        ViolationKind::ResolvedTwice,
    ] {
        assert!(k.contains(&want), "{want:?} not in {k:?}");
    }
    o.check_all_resolved();
    assert_eq!(kinds(&mut o), vec![]);
}

#[test]
fn foreign_corrupt_and_unresolved_records_are_found() {
    let mut o = LogOracle::new(names(2));
    o.set_value_size(Some(12));
    o.on_sent(0);
    o.on_sent(1);
    let mut corrupt = LogRecord::of(1, 0, 0, 12);
    corrupt.value = encode_value(0, 0, 13);
    o.scan_log(0, &[LogRecord::of(0, 1, 0, 12), corrupt]);
    o.scan_log(5, &[LogRecord::of(0, 5, 0, 12)]);
    o.check_all_resolved();
    let f = o.take_findings();
    let k: Vec<_> = f.iter().map(|f| f.kind).collect();
    assert_eq!(
        k,
        vec![
            ViolationKind::WrongRecord,
            ViolationKind::WrongRecord,
            ViolationKind::WrongRecord,
            ViolationKind::Unresolved
        ],
        "{f:?}"
    );
    let report = summarize(&f, 2);
    assert!(report.contains("(WrongRecord): 3 (first:"), "{report}");
    assert!(report.contains("; ...)"), "{report}");
}

#[test]
fn a_late_write_of_a_retired_producer_id_is_allowed_only_unacknowledged() {
    let (mut o, log) = logged(3);
    // Records 0 and 2 by producer 8, then record 1 by the retired producer 7.
    let by = |r: &LogRecord, pid| LogRecord {
        producer_id: pid,
        ..r.clone()
    };
    o.scan_log(0, &[by(&log[0], 8), by(&log[2], 8)]);
    o.on_logged(0, 2, 7, None, Some(&log[1].value));
    assert_eq!(kinds(&mut o), vec![]);
    assert_eq!(o.retired_producer_writes(), 1);
    o.on_outcome(RecordId(1), Some(0), Outcome::Delivered, None);
    assert_eq!(kinds(&mut o), vec![ViolationKind::Reordered]);
}
