//! Finished batches handed to the core (`Producer::send_batch`): sequenced, stamped and
//! reported record by record like the core's own, in send order with records given to
//! `send`, and refused with a typed error when they break a rule of `handed`.

mod support;

use bytes::{Bytes, BytesMut};
use kacrab_idempotence::record::{self, BatchBuilder, Record};
use kacrab_idempotence::*;
use support::*;

/// A finished, unstamped, uncompressed batch of `values`, as a client with its own
/// accumulator would build it.
fn batch(values: &[&str]) -> BytesMut {
    let mut b = BatchBuilder::new(Compression::None, 1024);
    for v in values {
        b.append(&Record::new(
            None,
            Some(Bytes::copy_from_slice(v.as_bytes())),
            7,
        ));
    }
    b.finish()
}

fn values(data: &[u8]) -> Vec<String> {
    record::decode_records(data)
        .expect("a readable batch")
        .into_iter()
        .map(|r| String::from_utf8(r.value.expect("a value").to_vec()).expect("utf-8"))
        .collect()
}

#[test]
fn a_handed_batch_is_stamped_in_sequence_between_records_sent_around_it() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let before = h.send(0, "before");
    let handed =
        h.p.send_batch(&tp(0), batch(&["a", "b", "c"]), h.now)
            .expect("accepted");
    let after = h.send(0, "after");
    assert_eq!(handed.count(), 3);
    assert_eq!(handed.first(), RecordId(before.0 + 1));
    assert_eq!(after, RecordId(before.0 + 4));
    let ids: Vec<RecordId> = handed.iter().collect();
    assert!(ids.iter().all(|&id| handed.contains(id)) && !handed.contains(after));
    h.pump();
    // Three batches on the wire, in send order, with consecutive sequences after the
    // warm-up's 0, each with a valid CRC (read_header checks it).
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    let wires: Vec<Wire> = sent.iter().flat_map(wire).collect();
    let seqs: Vec<(i32, i32)> = wires.iter().map(|w| (w.base_sequence, w.count)).collect();
    assert_eq!(seqs, [(1, 1), (2, 3), (5, 1)], "{wires:?}");
    assert!(wires
        .iter()
        .all(|w| w.producer_id == 343_434 && w.epoch == 0));
    let data = &sent[1].batches[0].data;
    assert_eq!(values(data), ["a", "b", "c"]);
    assert!(!record::read_header(data).unwrap().transactional);
    for (r, offset) in sent.iter().zip([1, 2, 5]) {
        h.respond(r.id, &[(0, KafkaError::None, offset)]);
    }
    assert_eq!(h.delivered(before), Some(Some(1)));
    for (k, id) in handed.iter().enumerate() {
        assert_eq!(h.delivered(id), Some(Some(2 + k as i64)), "{id:?}");
        assert_eq!(h.outcomes(id), 1);
    }
    assert_eq!(h.delivered(after), Some(Some(5)));
    assert_eq!(h.p.unreported_records(), 0);
}

#[test]
fn an_epoch_bump_renumbers_a_handed_batch_like_the_cores_own() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let handed =
        h.p.send_batch(&tp(0), batch(&["x", "y"]), h.now)
            .expect("accepted");
    h.pump();
    let r = h.outstanding.back().expect("sent").clone();
    assert_eq!(wire(&r)[0].base_sequence, 1);
    // Refused before the append: not written, and the producer bumps its epoch
    // (OUT_OF_ORDER_SEQUENCE_NUMBER on an idempotent producer is a sequence problem).
    h.respond(r.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    let resent = h.outstanding.back().expect("resent").clone();
    let w = &wire(&resent)[0];
    assert_eq!((w.epoch, w.base_sequence, w.count), (1, 0, 2), "{w:?}");
    assert_eq!(values(&resent.batches[0].data), ["x", "y"]);
    h.respond(resent.id, &[(0, KafkaError::None, 10)]);
    for (k, id) in handed.iter().enumerate() {
        assert_eq!(h.delivered(id), Some(Some(10 + k as i64)));
    }
}

#[test]
fn a_handed_batch_refused_as_too_large_is_split_when_its_records_can_be_read() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let handed =
        h.p.send_batch(&tp(0), batch(&["1", "2", "3", "4"]), h.now)
            .expect("accepted");
    h.pump();
    let r = h.outstanding.back().expect("sent").clone();
    h.respond(r.id, &[(0, KafkaError::MessageTooLarge, -1)]);
    h.advance(100);
    let mut delivered = 0;
    let mut offset = 20;
    while let Some(r) = h.outstanding.front().cloned() {
        let w = &wire(&r)[0];
        assert!(w.count < 4, "split into smaller batches: {w:?}");
        h.respond(r.id, &[(0, KafkaError::None, offset)]);
        offset += i64::from(w.count);
        delivered += w.count;
    }
    assert_eq!(delivered, 4);
    for (k, id) in handed.iter().enumerate() {
        assert_eq!(h.delivered(id), Some(Some(20 + k as i64)));
    }
}

#[test]
fn a_batch_that_breaks_a_rule_is_refused_with_the_reason_and_nothing_is_queued() {
    let mut h = Harness::new(config().build().unwrap());
    let good = batch(&["a", "b"]);
    let with_attributes = |bits: i16| {
        let mut b = good.clone();
        let attributes = i16::from_be_bytes([b[21], b[22]]) | bits;
        b[21..23].copy_from_slice(&attributes.to_be_bytes());
        b
    };
    let mut wrong_delta = good.clone();
    wrong_delta[23..27].copy_from_slice(&5_i32.to_be_bytes());
    let mut wrong_magic = good.clone();
    wrong_magic[16] = 1;
    let mut longer = good.clone();
    longer.extend_from_slice(&[0]);
    let cases: Vec<(&str, BytesMut)> = vec![
        ("transactional bit", with_attributes(1 << 4)),
        ("control batch", with_attributes(1 << 5)),
        ("LogAppendTime", with_attributes(1 << 3)),
        ("lastOffsetDelta", wrong_delta),
        ("magic", wrong_magic),
        ("trailing bytes", longer),
        ("truncated", good.clone().split_to(40)),
        (
            "no records",
            BatchBuilder::new(Compression::None, 64).finish(),
        ),
    ];
    for (what, b) in cases {
        match h.p.send_batch(&tp(0), b, h.now) {
            Err(SendError::InvalidBatch(e)) => {
                assert!(!e.to_string().is_empty(), "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!(h.p.unreported_records(), 0);
    assert_eq!(h.p.queued_batches(&tp(0)), 0);
    // The same bytes, whole, are accepted.
    assert!(h.p.send_batch(&tp(0), good, h.now).is_ok());
}

#[test]
fn a_handed_batch_counts_against_max_request_size_and_buffer_memory() {
    let mut b = config();
    b.max_request_size(200).buffer_memory(300);
    let mut h = Harness::new(b.build().unwrap());
    let big = batch(&[&"v".repeat(300)]);
    let size = big.len();
    assert_eq!(
        h.p.send_batch(&tp(0), big, h.now),
        Err(SendError::RecordTooLarge {
            size,
            max: 200,
            limit: RecordSizeLimit::MaxRequestSize
        })
    );
    let small = batch(&[&"v".repeat(100)]);
    assert!(h.p.send_batch(&tp(0), small.clone(), h.now).is_ok());
    let buffered = small.len();
    assert_eq!(
        h.p.send_batch(&tp(0), small.clone(), h.now),
        Err(SendError::BufferFull { buffered })
    );
}

#[test]
fn without_idempotence_a_handed_batch_goes_out_as_no_producers_with_its_crc_written() {
    let mut b = config();
    b.enable_idempotence(false).acks(Acks::Leader);
    let mut h = Harness::new(b.build().unwrap());
    let mut stale = batch(&["p", "q"]);
    // A stale identity and a wrong CRC from the caller: both are the core's to write.
    stale[43..51].copy_from_slice(&77_i64.to_be_bytes());
    stale[17..21].copy_from_slice(&0_u32.to_be_bytes());
    let handed = h.p.send_batch(&tp(0), stale, h.now).expect("accepted");
    h.advance(1);
    let r = h.outstanding.back().expect("sent").clone();
    let header = record::read_header(&r.batches[0].data).expect("a valid CRC");
    assert_eq!((header.producer_id.0, header.base_sequence), (-1, -1));
    h.respond(r.id, &[(0, KafkaError::None, 3)]);
    assert_eq!(h.delivered(handed.first()), Some(Some(3)));
}

#[test]
fn a_handed_batch_reports_its_largest_record_not_its_whole_size() {
    // `record-size-max` counts records as `send` does (its length prefix included),
    // not the handed batch's whole size.
    let mut h = Harness::new(config().build().unwrap());
    h.p.enable_metric_samples();
    h.warm(0);
    let long = "x".repeat(300);
    h.p.send_batch(&tp(0), batch(&["a", &long, "b"]), h.now)
        .expect("accepted");
    h.pump();
    let mut largest = None;
    while let Some(sample) = h.p.poll_metric_sample() {
        if let MetricSample::BatchDrained {
            records: 3,
            max_record_size,
            bytes,
            ..
        } = sample
        {
            assert!(bytes > 300 + 61, "the whole batch: {bytes}");
            largest = Some(max_record_size);
        }
    }
    // The 300-byte value, its varint length (2 bytes) and the record's fixed fields.
    let largest = largest.expect("the handed batch was drained");
    assert!((300..320).contains(&largest), "{largest}");
}
