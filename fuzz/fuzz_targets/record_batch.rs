//! Feeds arbitrary bytes to the RecordBatch readers: nothing may panic, a successful `stamp`
//! must leave a batch `read_header` accepts with the stamped fields, and any batch that
//! decodes must survive re-encoding and, unless it is a control batch, splitting with its
//! records unchanged.

#![no_main]

use kacrab_idempotence::record::{
    decode_records, read_header, split, stamp, BatchBuilder, Compression,
};
use kacrab_idempotence::{ProducerIdAndEpoch, Sequence};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_header(data);
    // The first byte picks a split target, so small and large targets both get explored.
    let target = data.first().map_or(0, |&b| usize::from(b) * 16);
    let _ = split(data, target);

    let mut copy = data.to_vec();
    let id = ProducerIdAndEpoch::new(4242, 7);
    let transactional = data.last().is_some_and(|&b| b & 1 == 1);
    if stamp(&mut copy, id, Sequence(100), transactional).is_ok() {
        let header = read_header(&copy).expect("a stamped batch has a valid header");
        assert_eq!(
            (header.producer_id, header.producer_epoch),
            (id.id, id.epoch)
        );
        assert_eq!(header.base_sequence, 100);
        assert_eq!(header.transactional, transactional);
        // Stamping changes no record byte, so decoding succeeds exactly when it did before
        // stamping (once the CRC is right) and yields the same records.
        let mut unstamped = copy.clone();
        stamp(
            &mut unstamped,
            ProducerIdAndEpoch::NONE,
            Sequence(-1),
            false,
        )
        .expect("restamp");
        assert_eq!(decode_records(&copy), decode_records(&unstamped));
    }

    let Ok(records) = decode_records(data) else {
        return;
    };
    let mut builder = BatchBuilder::new(Compression::None, data.len());
    for record in &records {
        builder.append(record);
    }
    let size = builder.size_in_bytes();
    let rebuilt = builder.finish();
    assert_eq!(rebuilt.len(), size);
    assert_eq!(
        decode_records(&rebuilt).expect("re-encoded batch decodes"),
        records
    );

    // A control batch (a transaction marker the coordinator writes; a producer never
    // sends one) decodes but is never split.
    if read_header(data).is_ok_and(|h| h.control) {
        assert!(split(data, target).is_err(), "a control batch is not split");
        return;
    }
    let mut joined = Vec::with_capacity(records.len());
    for part in split(data, target).expect("a decodable non-control batch splits") {
        let part_records = decode_records(&part).expect("split output decodes");
        assert!(!part_records.is_empty());
        assert!(part_records.len() == 1 || part.len() <= target);
        joined.extend(part_records);
    }
    assert_eq!(joined, records);
});
