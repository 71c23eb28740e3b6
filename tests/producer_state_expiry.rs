//! Broker producer-state expiry (KIP-360; `ProducerStateManager.removeExpiredProducers`):
//! after `producer.id.expiration.ms` without a batch from the producer, the leader
//! forgets it and accepts any sequence. The core, told the expiry it may assume
//! (`kacrab.producer.id.expiration.ms`), sends one batch at a time on a partition whose
//! state the leader may have dropped, until an append is acknowledged again.

mod support;

use std::time::Duration;

use kacrab_idempotence::{record, KafkaError};
use support::{config, wire, Harness};

/// The expiry the producer assumes here: above `delivery.timeout.ms` (15 s) +
/// `request.timeout.ms` (5 s) of the support configuration.
const EXPIRY_MS: u64 = 30_000;

fn harness() -> Harness {
    let mut b = config();
    b.producer_id_expiration(Duration::from_millis(EXPIRY_MS));
    Harness::new(b.build().expect("valid config"))
}

/// After an idle gap longer than the expiry, the second batch waits on the wire for the
/// first one's ack: pipelined, it could land first at a broker that accepts any
/// sequence, and be renumbered and written twice if the first were refused.
#[test]
fn after_idle_gap_past_expiry_one_batch_at_a_time_until_acked() {
    let mut h = harness();
    h.warm(0);
    h.advance(EXPIRY_MS + 1_000);
    let first = h.send(0, "a");
    assert_eq!(h.outstanding.len(), 1, "a is sent");
    h.send(0, "b");
    assert_eq!(
        h.outstanding.len(),
        1,
        "nothing is pipelined behind a while the leader may have forgotten the producer"
    );
    let a = h.outstanding.front().expect("a outstanding").clone();
    assert_eq!(wire(&a)[0].base_sequence, 1);
    let next = h.respond(a.id, &[(0, KafkaError::None, 1)]);
    assert_eq!(h.delivered(first), Some(Some(1)));
    assert_eq!(next.len(), 1, "b goes once a is acknowledged");
    assert_eq!(wire(&next[0])[0].base_sequence, 2);
}

/// Within the expiry, less the longest a batch may still be resent, a warm partition
/// pipelines as before; past that margin (but before the expiry itself) it no longer
/// does.
#[test]
fn pipelining_only_while_the_leader_surely_holds_the_state() {
    let mut h = harness();
    h.warm(0);
    h.send(0, "a");
    h.send(0, "b");
    assert_eq!(h.outstanding.len(), 2, "fresh state: pipelined");
    let ids: Vec<_> = h.outstanding.iter().map(|r| r.id).collect();
    for (i, id) in ids.into_iter().enumerate() {
        h.respond(id, &[(0, KafkaError::None, 1 + i as i64)]);
    }
    // 30 s expiry - 20 s of batch lifetime: from 10 s after the last acked batch's
    // creation on, a stamped batch could outlive the leader's state.
    h.advance(10_500);
    h.send(0, "c");
    h.send(0, "d");
    assert_eq!(h.outstanding.len(), 1, "the margin is past: one at a time");
}

/// What the scripted broker of [`timed_out_batch_after_idle_gap_is_written_once`] does
/// with the next attempt of a record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// NOT_ENOUGH_REPLICAS, nothing appended.
    Refuse,
    /// Appended, then REQUEST_TIMED_OUT.
    AppendThenTimeOut,
    /// Kafka's rules.
    Normal,
}

/// Hole 5b with the scripted driver: the leader forgot the producer during an idle gap,
/// a (seq 1) is refused and b (seq 2) appended but answered REQUEST_TIMED_OUT. Kafka's
/// rules (dedup on the exact sequence range, the next sequence, any sequence while the
/// producer is unknown) decide every other attempt. b must be in the log once, after a.
/// Before the fix, a's retry drew OUT_OF_ORDER, the bump renumbered b, and b was
/// appended again.
#[test]
fn timed_out_batch_after_idle_gap_is_written_once() {
    let mut h = harness();
    h.warm(0);
    h.advance(EXPIRY_MS + 1_000);
    h.send(0, "a");
    h.send(0, "b");
    let mut plan = vec![("a", Answer::Refuse), ("b", Answer::AppendThenTimeOut)];
    // The broker: (epoch, first seq, last seq) of the appended batches since it forgot
    // the producer, and the values in its log.
    let mut known: Vec<(i16, i32, i32)> = Vec::new();
    let mut log: Vec<String> = Vec::new();
    for _ in 0..100 {
        let Some(r) = h.outstanding.front().cloned() else {
            h.advance(100);
            if h.outstanding.is_empty() && h.p.is_idle() {
                break;
            }
            continue;
        };
        let w = wire(&r)[0].clone();
        let values: Vec<String> = record::decode_records(&r.batches[0].data)
            .expect("valid batch")
            .iter()
            .map(|rec| String::from_utf8_lossy(rec.value.as_deref().unwrap_or_default()).into())
            .collect();
        let pos = plan.iter().position(|(v, _)| values.iter().any(|x| x == v));
        let answer = pos.map_or(Answer::Normal, |i| plan.remove(i).1);
        let last = w.base_sequence + w.count - 1;
        let (error, offset) = match answer {
            Answer::Refuse => (KafkaError::NotEnoughReplicas, -1),
            _ if known.contains(&(w.epoch, w.base_sequence, last)) => (KafkaError::None, 0),
            _ => {
                let next = match known.last() {
                    None => true,
                    Some(&(e, _, l)) if e == w.epoch => w.base_sequence == l + 1,
                    Some(_) => w.base_sequence == 0,
                };
                if !next {
                    (KafkaError::OutOfOrderSequenceNumber, -1)
                } else {
                    known.push((w.epoch, w.base_sequence, last));
                    let offset = 1 + log.len() as i64;
                    log.extend(values);
                    if answer == Answer::AppendThenTimeOut {
                        (KafkaError::RequestTimedOut, -1)
                    } else {
                        (KafkaError::None, offset)
                    }
                }
            }
        };
        h.respond(r.id, &[(0, error, offset)]);
    }
    assert_eq!(
        log,
        vec!["a".to_string(), "b".to_string()],
        "each once, in order"
    );
}
