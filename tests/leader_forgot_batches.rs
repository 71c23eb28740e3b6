//! A leader that reloaded its producer state from a snapshot remembers only the
//! producer's newest batch (`ProducerStateManager.writeSnapshot`,
//! `UnifiedLog.rebuildProducerState`), so the retry of an older batch that is in the
//! log is answered OUT_OF_ORDER_SEQUENCE_NUMBER (`ProducerAppendInfo.checkSequence`).
//! Under one (producer id, epoch) a leader appends only the next sequence, so a later
//! batch in the log proves the refused one there: the core resends the highest batch
//! that may be in the log, alone and unchanged, and walks down until one is
//! acknowledged (`src/probe.rs`). Found on a real three-node cluster (the Jepsen suite's
//! mio run: 34 records failed as possibly written after a SIGSTOP, all of them in the
//! log); the simulator's regression is `a_leader_that_forgot_older_batches_acknowledges_
//! them_all` in `kacrab-sim/tests/broker_model_rules.rs`.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Sends `n` records to partition 0 of a warm producer, one batch each, loses every
/// answer, and returns the records with the first batch's retry.
fn lost_window(h: &mut Harness, n: usize) -> (Vec<RecordId>, ProduceRequest) {
    h.warm(0);
    let records: Vec<RecordId> = (0..n).map(|i| h.send(0, &format!("r{i}"))).collect();
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    assert_eq!(sent.len(), n, "one request per batch, pipelined");
    for r in &sent {
        h.fail(r.id, RequestFailure::Disconnected);
    }
    h.advance(100);
    let retry = h
        .outstanding
        .front()
        .expect("the first batch resent")
        .clone();
    assert_eq!(h.outstanding.len(), 1, "only the first batch resent");
    (records, retry)
}

/// The one outstanding request's (epoch, base sequence).
fn only_outstanding(h: &Harness) -> (RequestId, (i16, i32)) {
    assert_eq!(h.outstanding.len(), 1, "{:?}", h.outstanding);
    let r = h.outstanding.front().expect("a request");
    let w = wire(r);
    assert_eq!(w.len(), 1, "one batch: {w:?}");
    (r.id, (w[0].epoch, w[0].base_sequence))
}

#[test]
fn the_probe_walks_down_to_the_leaders_newest_batch_and_acknowledges_everything_below() {
    let mut h = Harness::new(config().build().unwrap());
    let (records, retry) = lost_window(&mut h, 3);
    assert_eq!(wire(&retry)[0].base_sequence, 1);
    // The leader holds sequences 1 and 2, remembers only 2: the first is refused.
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    let (probe, stamp) = only_outstanding(&h);
    assert_eq!(
        stamp,
        (0, 3),
        "the highest batch that may be in the log, unchanged"
    );
    h.respond(probe, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    let (probe, stamp) = only_outstanding(&h);
    assert_eq!(stamp, (0, 2), "one lower");
    h.respond(probe, &[(0, KafkaError::None, 2)]);
    assert_eq!(h.delivered(records[0]), Some(None), "{:?}", h.events);
    assert_eq!(h.delivered(records[1]), Some(Some(2)));
    h.advance(100);
    let (rest, stamp) = only_outstanding(&h);
    assert_eq!(stamp, (0, 3), "the third, next now, resent under its stamp");
    h.respond(rest, &[(0, KafkaError::None, 3)]);
    assert_eq!(h.delivered(records[2]), Some(Some(3)));
    for &r in &records {
        assert_eq!(h.outcomes(r), 1);
    }
    let stats = h.p.stats();
    assert_eq!((stats.epoch_bumps, stats.probes), (0, 1));
    assert_eq!(h.state(0).last_acked_sequence, Some(Sequence(3)));
}

#[test]
fn a_later_first_attempt_acknowledged_during_the_probe_settles_it() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let records: Vec<RecordId> = (0..3).map(|i| h.send(0, &format!("r{i}"))).collect();
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    assert_eq!(sent.len(), 3);
    // The first two answers are lost; the third's attempt is still out.
    h.fail(sent[0].id, RequestFailure::Disconnected);
    h.fail(sent[1].id, RequestFailure::Disconnected);
    h.advance(100);
    let retry = h
        .outstanding
        .iter()
        .find(|r| r.id != sent[2].id)
        .expect("the first batch resent")
        .clone();
    assert_eq!(wire(&retry)[0].base_sequence, 1);
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    assert_eq!(
        h.outstanding.len(),
        1,
        "nothing goes while a batch of the partition is out"
    );
    // The third was appended in order: the first two are in the log.
    h.respond(sent[2].id, &[(0, KafkaError::None, 3)]);
    assert_eq!(h.delivered(records[0]), Some(None), "{:?}", h.events);
    assert_eq!(h.delivered(records[1]), Some(None));
    assert_eq!(h.delivered(records[2]), Some(Some(3)));
    assert_eq!(h.p.stats().epoch_bumps, 0);
    let later = h.send(0, "later");
    let (r, stamp) = only_outstanding(&h);
    assert_eq!(stamp, (0, 4));
    h.respond(r, &[(0, KafkaError::None, 4)]);
    assert_eq!(h.delivered(later), Some(Some(4)));
}

#[test]
fn with_nothing_later_in_the_log_the_first_fails_possibly_written_and_is_never_renumbered() {
    let mut h = Harness::new(config().build().unwrap());
    let (records, retry) = lost_window(&mut h, 2);
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    h.advance(100);
    let (probe, stamp) = only_outstanding(&h);
    assert_eq!(stamp, (0, 2));
    // The leader holds less than was acknowledged (data Kafka lost): nobody knows.
    h.respond(probe, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    let possibly_written = h.events.iter().find_map(|e| match e {
        Event::Failed {
            records: failed,
            possibly_written,
            ..
        } if failed.contains(&records[0]) => Some(*possibly_written),
        _ => None,
    });
    assert_eq!(possibly_written, Some(true), "{:?}", h.events);
    assert_eq!(h.outcomes(records[1]), 0, "the second is still open");
    h.advance(100);
    let (_, stamp) = only_outstanding(&h);
    assert_eq!(stamp, (0, 2), "resent under its stamp, not renumbered");
}

#[test]
fn a_probe_target_split_as_too_large_ends_the_probe() {
    let mut h = Harness::new(config().build().unwrap());
    h.warm(0);
    let first = h.send(0, "r0");
    let second = h.send(0, "r1");
    // The third batch holds two records, so MESSAGE_TOO_LARGE splits it.
    let third: Vec<RecordId> = ["r2", "r3"]
        .iter()
        .map(|v| h.p.send(&tp(0), &record(v), h.now).expect("accepted"))
        .collect();
    h.pump();
    let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(wire(&sent[2])[0].count, 2);
    h.fail(sent[0].id, RequestFailure::Disconnected);
    h.fail(sent[1].id, RequestFailure::Disconnected);
    h.advance(100);
    let retry = h
        .outstanding
        .iter()
        .find(|r| r.id != sent[2].id)
        .expect("the first batch resent")
        .clone();
    h.respond(retry.id, &[(0, KafkaError::OutOfOrderSequenceNumber, -1)]);
    assert_eq!(h.p.stats().probes, 1, "the third, still out, is the target");
    // Refused as too large: never appended, so it proves nothing; the probe ends.
    h.respond(sent[2].id, &[(0, KafkaError::MessageTooLarge, -1)]);
    assert_eq!(h.p.stats().splits, 1);
    for _ in 0..20 {
        h.advance(100);
        let Some(r) = h.outstanding.front().cloned() else {
            break;
        };
        let w = wire(&r)[0].clone();
        // The leader holds sequences 1 and 2 (the second is its newest).
        let answer = match w.base_sequence {
            2 => (0, KafkaError::None, 2),
            3 | 4 => (0, KafkaError::None, i64::from(w.base_sequence)),
            _ => (0, KafkaError::OutOfOrderSequenceNumber, -1),
        };
        h.respond(r.id, &[answer]);
    }
    for r in [first, second].into_iter().chain(third) {
        assert_eq!(h.outcomes(r), 1, "{r:?}: {:?}", h.events);
        assert!(h.delivered(r).is_some(), "{r:?}: {:?}", h.events);
    }
}
