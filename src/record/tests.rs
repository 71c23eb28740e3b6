use super::*;
use alloc::vec;

fn rec(key: Option<&'static [u8]>, value: Option<&'static [u8]>, timestamp: i64) -> Record {
    Record {
        key: key.map(Bytes::from_static),
        value: value.map(Bytes::from_static),
        headers: Vec::new(),
        timestamp,
    }
}

fn build(records: &[Record]) -> BytesMut {
    let mut b = BatchBuilder::new(Compression::None, 1024);
    for r in records {
        b.append(r);
    }
    b.finish()
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn encode_varint(v: i32) -> Vec<u8> {
    let mut b = BytesMut::new();
    put_varint(&mut b, v);
    b.to_vec()
}

fn encode_varlong(v: i64) -> Vec<u8> {
    let mut b = BytesMut::new();
    put_varlong(&mut b, v);
    b.to_vec()
}

fn reader(data: &Bytes) -> Reader<'_> {
    Reader {
        data,
        pos: 0,
        end: data.len(),
        eof: RecordError::Truncated,
    }
}

/// Every header field sits at the offset Kafka's `DefaultRecordBatch` reads it from, and the
/// one record is byte-for-byte what Kafka writes for key "k", value "v".
#[test]
fn header_layout_offsets() {
    let batch = build(&[rec(Some(b"k"), Some(b"v"), 1_000), rec(None, None, 900)]);
    assert_eq!(i64_at(&batch, 0), 0, "baseOffset");
    assert_eq!(i32_at(&batch, 8) as usize, batch.len() - 12, "batchLength");
    assert_eq!(i32_at(&batch, 12), -1, "partitionLeaderEpoch");
    assert_eq!(batch[16], 2, "magic");
    assert_eq!(
        u32::from_be_bytes(batch[17..21].try_into().unwrap()),
        crc32c(&batch[21..])
    );
    assert_eq!(&batch[21..23], &[0, 0], "attributes");
    assert_eq!(i32_at(&batch, 23), 1, "lastOffsetDelta");
    assert_eq!(i64_at(&batch, 27), 1_000, "baseTimestamp");
    assert_eq!(i64_at(&batch, 35), 1_000, "maxTimestamp");
    assert_eq!(i64_at(&batch, 43), -1, "producerId");
    assert_eq!(&batch[51..53], &[0xff, 0xff], "producerEpoch");
    assert_eq!(i32_at(&batch, 53), -1, "baseSequence");
    assert_eq!(i32_at(&batch, 57), 2, "recordCount");
    // length 8, attrs 0, tsDelta 0, offsetDelta 0, key len 1 "k", value len 1 "v", 0 headers
    assert_eq!(&batch[61..70], &[0x10, 0, 0, 0, 0x02, b'k', 0x02, b'v', 0]);
    // length 7, attrs 0, tsDelta -100 (zigzag 199 = c7 01), offsetDelta 1, null, null, 0
    assert_eq!(&batch[70..], &[0x0e, 0, 0xc7, 0x01, 0x02, 0x01, 0x01, 0]);
    assert_eq!(RECORD_BATCH_OVERHEAD, 61);
}

#[test]
fn crc32c_is_castagnoli() {
    assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    assert_eq!(checksum::portable(b"123456789"), 0xe306_9283);
}

proptest::proptest! {
    /// The `no_std` CRC-32C (`crc`'s table) and the accelerated one (`crc32c`, under
    /// `std`) agree on any input, so a batch's CRC is the same bytes whichever the build
    /// uses: on random bytes and on whole batches of random records.
    #[test]
    fn the_portable_and_accelerated_crc32c_agree(
        data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096),
        values in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), 1..20),
    ) {
        proptest::prop_assert_eq!(checksum::portable(&data), crc32c(&data));
        let mut b = BatchBuilder::new(Compression::None, 1 << 20);
        for (i, v) in values.into_iter().enumerate() {
            b.append(&Record {
                key: None,
                value: Some(Bytes::from(v)),
                headers: Vec::new(),
                timestamp: i64::try_from(i).unwrap_or_default(),
            });
        }
        let batch = b.finish();
        let stored = u32::from_be_bytes(batch[17..21].try_into().unwrap());
        proptest::prop_assert_eq!(checksum::portable(&batch[21..]), stored);
    }
}

#[test]
fn empty_and_null_keys_and_values_stay_distinct() {
    let records = vec![
        rec(None, None, 5),
        rec(Some(b""), Some(b""), 5),
        rec(Some(b""), None, 5),
        rec(None, Some(b"x"), 5),
    ];
    assert_eq!(decode_records(&build(&records)).unwrap(), records);
}

#[test]
fn headers_round_trip() {
    let mut r = rec(Some(b"key"), Some(b"value"), 42);
    r.headers = vec![
        Header {
            key: Bytes::from_static(b"a"),
            value: Some(Bytes::from_static(b"1")),
        },
        Header {
            key: Bytes::from_static(b"a"),
            value: None,
        },
        Header {
            key: Bytes::new(),
            value: Some(Bytes::new()),
        },
        Header {
            key: Bytes::from_static(b"\xff not utf-8"),
            value: Some(Bytes::from(vec![7; 300])),
        },
    ];
    let records = vec![r.clone(), rec(None, None, 43), r];
    assert_eq!(decode_records(&build(&records)).unwrap(), records);
}

#[test]
fn timestamps_base_max_and_negative_deltas() {
    let records = vec![
        rec(None, None, 100),
        rec(None, None, 50),
        rec(None, None, 300),
        rec(None, None, i64::MIN),
        rec(None, None, i64::MAX),
    ];
    let batch = build(&records);
    let h = read_header(&batch).unwrap();
    assert_eq!(h.base_timestamp, 100);
    assert_eq!(h.max_timestamp, i64::MAX);
    assert_eq!(h.last_offset_delta, 4);
    assert_eq!(decode_records(&batch).unwrap(), records);
}

#[test]
fn stamp_round_trip_touches_only_the_header() {
    let records = vec![rec(Some(b"k"), Some(b"v"), 7); 3];
    let mut batch = build(&records);
    let before = batch.clone();
    stamp(
        &mut batch,
        ProducerIdAndEpoch::new(4242, 7),
        Sequence(100),
        true,
    )
    .unwrap();
    let h = read_header(&batch).unwrap();
    assert_eq!(h.producer_id, ProducerId(4242));
    assert_eq!(h.producer_epoch, ProducerEpoch(7));
    assert_eq!(h.base_sequence, 100);
    assert!(h.transactional);
    assert!(!h.control);
    assert_eq!(h.record_count, 3);
    assert_eq!(batch.len(), before.len());
    assert_eq!(
        &batch[RECORD_BATCH_OVERHEAD..],
        &before[RECORD_BATCH_OVERHEAD..]
    );
    assert_eq!(&batch[..17], &before[..17]);
    assert_eq!(&batch[23..43], &before[23..43]);
    assert_eq!(decode_records(&batch).unwrap(), records);

    // Restamping after an epoch bump clears the transactional bit and moves the sequence.
    stamp(
        &mut batch,
        ProducerIdAndEpoch::new(4242, 8),
        Sequence(0),
        false,
    )
    .unwrap();
    let h = read_header(&batch).unwrap();
    assert_eq!(
        (h.producer_epoch, h.base_sequence, h.transactional),
        (ProducerEpoch(8), 0, false)
    );

    // Stamping NONE/-1 gives back the unstamped bytes exactly.
    stamp(&mut batch, ProducerIdAndEpoch::NONE, Sequence(-1), false).unwrap();
    assert_eq!(batch, before);
}

#[test]
fn stamp_recomputes_crc() {
    let mut batch = build(&[rec(None, Some(b"v"), 1)]);
    let old = read_header(&batch).unwrap().crc;
    stamp(
        &mut batch,
        ProducerIdAndEpoch::new(1, 0),
        Sequence(5),
        false,
    )
    .unwrap();
    let new = read_header(&batch).unwrap().crc;
    assert_ne!(old, new);
    assert_eq!(new, crc32c(&batch[21..]));

    // A flipped record byte is caught, reporting stored vs computed.
    let last = batch.len() - 2;
    batch[last] ^= 0x40;
    assert_eq!(
        read_header(&batch),
        Err(RecordError::BadCrc {
            expected: new,
            actual: crc32c(&batch[21..])
        })
    );
    // The CRC does not cover baseOffset, batchLength, leader epoch or magic: the broker
    // rewrites the first two, so they must not invalidate it.
    let mut batch = build(&[rec(None, Some(b"v"), 1)]);
    batch[0..8].copy_from_slice(&77i64.to_be_bytes());
    batch[12..16].copy_from_slice(&3i32.to_be_bytes());
    assert!(read_header(&batch).is_ok());
}

#[test]
fn stamp_rejects_what_read_header_rejects() {
    let mut short = [0u8; 60];
    assert_eq!(
        stamp(&mut short, ProducerIdAndEpoch::NONE, Sequence(0), false),
        Err(RecordError::Truncated)
    );
    let mut batch = build(&[rec(None, None, 1)]);
    batch[16] = 1;
    assert_eq!(
        stamp(&mut batch, ProducerIdAndEpoch::NONE, Sequence(0), false),
        Err(RecordError::BadMagic(1))
    );
}

#[test]
fn varint_edge_cases() {
    let cases: [(i32, &[u8]); 9] = [
        (0, &[0x00]),
        (-1, &[0x01]),
        (1, &[0x02]),
        (63, &[0x7e]),
        (-64, &[0x7f]),
        (64, &[0x80, 0x01]),
        (300, &[0xd8, 0x04]),
        (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
        (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
    ];
    for (v, bytes) in cases {
        assert_eq!(encode_varint(v), bytes, "{v}");
        assert_eq!(varint_len(v), bytes.len(), "{v}");
        let data = Bytes::copy_from_slice(bytes);
        let mut r = reader(&data);
        assert_eq!(r.varint(), Ok(v));
        assert_eq!(r.pos, bytes.len());
    }
    for v in [
        0,
        -1,
        1,
        1 << 35,
        -(1 << 35),
        i64::MAX,
        i64::MIN,
        i64::from(i32::MIN) - 1,
    ] {
        let bytes = encode_varlong(v);
        assert_eq!(varlong_len(v), bytes.len(), "{v}");
        assert!(bytes.len() <= MAX_VARLONG_LEN);
        let data = Bytes::from(bytes);
        assert_eq!(reader(&data).varlong(), Ok(v));
    }
    assert_eq!(encode_varlong(i64::MIN).len(), 10);
    for (bad, why) in [
        (&[0x80u8, 0x80, 0x80, 0x80, 0x80, 0x01][..], "6-byte varint"),
        (&[0xff, 0xff, 0xff, 0xff, 0x1f][..], "33-bit varint"),
    ] {
        let data = Bytes::copy_from_slice(bad);
        assert!(
            matches!(reader(&data).varint(), Err(RecordError::Malformed(_))),
            "{why}"
        );
    }
    let data = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
    assert!(matches!(
        reader(&data).varlong(),
        Err(RecordError::Malformed(_))
    ));
    let data = Bytes::from_static(&[0x80, 0x80]);
    assert_eq!(reader(&data).varint(), Err(RecordError::Truncated));
    assert_eq!(len_prefix_len(usize::MAX), MAX_VARLONG_LEN);
}

#[test]
fn size_accounting() {
    let mut b = BatchBuilder::new(Compression::None, 0);
    assert!(b.is_empty());
    assert_eq!(b.size_in_bytes(), RECORD_BATCH_OVERHEAD);
    let big = rec(Some(b"k"), Some(&[9; 200]), 10);
    let mut bound = RECORD_BATCH_OVERHEAD;
    for i in 0..20 {
        let r = Record {
            timestamp: 10 + i * 1_000_000,
            ..big.clone()
        };
        bound += BatchBuilder::estimated_record_size(&r);
        b.append(&r);
        assert!(b.size_in_bytes() <= bound);
    }
    assert_eq!(b.record_count(), 20);
    let size = b.size_in_bytes();
    assert_eq!(b.finish().len(), size);
}

#[test]
fn has_room_for_follows_kafka() {
    let big = rec(None, Some(&[1; 500]), 0);
    let b = BatchBuilder::new(Compression::None, 0);
    assert!(
        b.has_room_for(&big, 10),
        "an empty batch always takes one record"
    );
    let mut b = b;
    b.append(&big);
    assert!(!b.has_room_for(&big, 1000));
    let small = rec(None, Some(b"x"), 0);
    // The exact size: "x" costs length 1 + attrs 1 + 0 + 1 (offset 1) + null + len + 1 + 0.
    let exact = b.size_in_bytes() + 8;
    assert!(b.has_room_for(&small, exact));
    assert!(!b.has_room_for(&small, exact - 1));
    b.append(&small);
    assert_eq!(b.size_in_bytes(), exact);
    // Full (`MemoryRecordsBuilder.isFull`): a record in it and its size at the limit.
    assert!(b.is_full(exact));
    assert!(!b.is_full(exact + 1));
    assert!(
        !BatchBuilder::new(Compression::None, 0).is_full(0),
        "an empty batch is never full"
    );
}

#[test]
fn append_does_not_reallocate_within_the_hint() {
    let mut b = BatchBuilder::new(Compression::None, 4096);
    let start = b.buf.as_ptr();
    let r = rec(Some(b"key"), Some(&[3; 100]), 1);
    while b.has_room_for(&r, 4096) {
        b.append(&r);
    }
    let batch = b.finish();
    assert_eq!(batch.as_ptr(), start);
    assert!(batch.len() <= 4096);
}

#[test]
fn empty_builder_finishes_to_a_valid_empty_batch() {
    let batch = BatchBuilder::new(Compression::None, 0).finish();
    assert_eq!(batch.len(), RECORD_BATCH_OVERHEAD);
    let h = read_header(&batch).unwrap();
    assert_eq!(
        (h.record_count, h.last_offset_delta, h.base_timestamp),
        (0, 0, -1)
    );
    assert_eq!(decode_records(&batch).unwrap(), vec![]);
    assert_eq!(split(&batch, 100).unwrap(), Vec::<BytesMut>::new());
}

#[test]
fn split_preserves_records_and_unstamps() {
    let records: Vec<Record> = (0..40)
        .map(|i| {
            let mut r = rec(Some(b"k"), Some(&[5; 64]), 1_000 + i * 3);
            r.headers = vec![
                Header {
                    key: Bytes::from_static(b"h"),
                    value: None
                };
                (i % 3) as usize
            ];
            r
        })
        .collect();
    let mut batch = build(&records);
    stamp(
        &mut batch,
        ProducerIdAndEpoch::new(9, 9),
        Sequence(900),
        true,
    )
    .unwrap();
    let parts = split(&batch, 400).unwrap();
    assert!(parts.len() > 1);
    let mut joined = Vec::new();
    for part in &parts {
        assert!(part.len() <= 400);
        let h = read_header(part).unwrap();
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (ProducerId::NONE, ProducerEpoch::NONE, -1)
        );
        assert!(!h.transactional);
        assert!(h.record_count >= 1);
        joined.extend(decode_records(part).unwrap());
    }
    assert_eq!(joined, records);

    // A target below one record still makes progress: one record per batch.
    let parts = split(&batch, 1).unwrap();
    assert_eq!(parts.len(), records.len());
    // A huge target returns one batch equal to the unstamped original.
    let parts = split(&batch, usize::MAX).unwrap();
    assert_eq!(parts, vec![build(&records)]);
}

#[test]
fn read_header_rejects_bad_frames() {
    let batch = build(&[rec(Some(b"k"), Some(b"v"), 1), rec(None, None, 2)]);
    for len in 0..batch.len() {
        assert_eq!(
            read_header(&batch[..len]),
            Err(RecordError::Truncated),
            "prefix {len}"
        );
        assert!(decode_records(&batch[..len]).is_err());
    }
    let mut longer = batch.to_vec();
    longer.push(0);
    assert!(matches!(
        read_header(&longer),
        Err(RecordError::Malformed(_))
    ));

    let mut bad = batch.clone();
    bad[16] = 1;
    assert_eq!(read_header(&bad), Err(RecordError::BadMagic(1)));

    for batch_length in [-1, 0, 48] {
        let mut bad = batch.clone();
        bad[8..12].copy_from_slice(&i32::to_be_bytes(batch_length));
        assert!(
            matches!(read_header(&bad), Err(RecordError::Malformed(_))),
            "{batch_length}"
        );
    }
    let mut bad = batch.clone();
    bad[57..61].copy_from_slice(&(-1i32).to_be_bytes());
    write_crc(&mut bad);
    assert!(matches!(read_header(&bad), Err(RecordError::Malformed(_))));

    let mut bad = batch.clone();
    bad[30] ^= 1;
    assert!(matches!(read_header(&bad), Err(RecordError::BadCrc { .. })));
}

#[test]
fn decode_rejects_inconsistent_records() {
    let batch = build(&[rec(Some(b"k"), Some(b"v"), 1), rec(None, None, 2)]);
    let patch = |at: usize, bytes: &[u8]| {
        let mut b = batch.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        write_crc(&mut b);
        decode_records(&b)
    };
    // Compression bits set: decoding refuses rather than misreading compressed bytes.
    assert_eq!(patch(22, &[1]), Err(RecordError::Compressed));
    assert_eq!(
        split(
            &{
                let mut b = batch.clone();
                b[22] = 4;
                write_crc(&mut b);
                b
            },
            10
        ),
        Err(RecordError::Compressed)
    );
    // recordCount larger or smaller than the records present.
    assert!(patch(57, &3i32.to_be_bytes()).is_err());
    assert!(patch(57, &1i32.to_be_bytes()).is_err());
    assert!(patch(57, &i32::MAX.to_be_bytes()).is_err());
    // Offset delta of the second record (at 61 + 9 + 3) not 1.
    assert_eq!(batch[73], 0x02);
    assert!(matches!(patch(73, &[0x04]), Err(RecordError::Malformed(_))));
    // Record length too short and too long for its fields.
    assert!(matches!(patch(61, &[0x0e]), Err(RecordError::Malformed(_))));
    assert!(patch(61, &[0x12]).is_err());
    // Key length below -1.
    assert!(matches!(patch(65, &[0x03]), Err(RecordError::Malformed(_))));
    // Control batches decode but are never split.
    let mut control = batch.clone();
    control[22] = 0x20;
    write_crc(&mut control);
    assert!(read_header(&control).unwrap().control);
    assert!(decode_records(&control).is_ok());
    assert!(matches!(
        split(&control, 1000),
        Err(RecordError::Malformed(_))
    ));
}

#[test]
fn errors_display() {
    use alloc::string::ToString;
    let e = RecordError::BadCrc {
        expected: 1,
        actual: 2,
    };
    assert_eq!(
        e.to_string(),
        "record batch CRC mismatch: header has 0x00000001, bytes hash to 0x00000002"
    );
}
