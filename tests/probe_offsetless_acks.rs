//! Batches acknowledged without an offset do not move the partition's last
//! acknowledged offset.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Java's `TransactionManager.updateLastAckedOffset` ignores an answer whose base offset
/// is `ProduceResponse.INVALID_OFFSET` (-1): only offsets a broker returned count. The
/// probe of a leader that forgot older batches (`src/probe.rs`) acknowledges the
/// batches below its target without offsets; when the target itself is answered as a
/// duplicate (no offset either), the partition's last acknowledged offset
/// (`SequenceState::last_acked_offset`) stays the last one a broker named, and every
/// record is delivered once, its offset unknown.
#[test]
fn batches_settled_by_a_probe_report_no_offset_and_leave_the_last_acked_offset() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    assert_eq!(h.state(0).last_acked_offset, Some(0));
    let records: Vec<RecordId> = (0..3).map(|i| h.send(0, &format!("r{i}"))).collect();
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    assert_eq!(sent.len(), 3);
    for r in &sent {
        h.fail(r.id, RequestFailure::Disconnected);
    }
    h.advance(100);
    let retry = h.outstanding.front().expect("the first resent").clone();
    assert_eq!(wire(&retry)[0].base_sequence, 1);
    // The leader forgot sequence 1: the probe resends the highest batch alone.
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    let probe = h.outstanding.front().expect("the probe").clone();
    assert_eq!(wire(&probe)[0].base_sequence, 3);
    // A duplicate: acknowledged without an offset.
    h.respond(probe.id, &[(0, KafkaError::None, -1)]);
    for &r in &records {
        assert_eq!(h.delivered(r), Some(None), "{:?}", h.events);
        assert_eq!(h.outcomes(r), 1);
    }
    let state = h.state(0);
    assert_eq!(state.last_acked_sequence, Some(Sequence(3)));
    assert_eq!(
        state.last_acked_offset,
        Some(0),
        "no offset was learned since the warm-up's"
    );
}
