//! Model-based searches against the probe (`src/probe.rs`): a small leader that follows
//! Kafka's rules (per-epoch sequences, the five-batch dedup window, a clean restart that
//! keeps only the producer's newest batch) answers the core, and every run is checked:
//! one outcome per record, acknowledged means in the log, nothing logged twice, nothing
//! in the log reported as not written. The scripted attacks are in `probe_attacks.rs`.

mod support;

use kacrab_idempotence::*;
use support::*;

/// Which of the named values a batch carries (records are not compressed by default,
/// so a value's bytes appear as they are).
fn values_in(data: &[u8], names: &[&str]) -> Vec<usize> {
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| data.windows(n.len()).any(|w| w == n.as_bytes()))
        .map(|(i, _)| i)
        .collect()
}

/// A small model of one leader under Kafka's rules for one producer id: per epoch the
/// last sequence and the sequences it still deduplicates (after a snapshot reload, only
/// the newest batch), and the log's values.
struct Leader {
    epoch: i16,
    last_seq: i32,
    cached: Vec<(i32, i64)>,
    log: Vec<usize>,
}

impl Leader {
    /// Applies one batch; returns the answer (error, offset).
    fn produce(&mut self, w: &Wire, values: &[usize]) -> (KafkaError, i64) {
        if w.epoch < self.epoch {
            return (KafkaError::InvalidProducerEpoch, -1);
        }
        if w.epoch == self.epoch {
            if let Some(&(_, off)) = self.cached.iter().find(|(s, _)| *s == w.base_sequence) {
                return (KafkaError::None, off);
            }
            if w.base_sequence != self.last_seq + 1 {
                return (KafkaError::OutOfOrderSequenceNumber, -1);
            }
        } else if w.base_sequence != 0 {
            return (KafkaError::OutOfOrderSequenceNumber, -1);
        } else {
            self.epoch = w.epoch;
            self.cached.clear();
        }
        let off = self.log.len() as i64;
        self.log.extend_from_slice(values);
        self.last_seq = w.base_sequence + w.count - 1;
        self.cached.push((w.base_sequence, off));
        if self.cached.len() > 5 {
            self.cached.remove(0);
        }
        (KafkaError::None, off)
    }
}

/// Every answer to the probe's target that Kafka may give, each with the log appended
/// or not where the code allows both, then a broker that follows Kafka's rules: each
/// record gets exactly one outcome, an acknowledged record is in the log, no value is
/// in the log twice, and a record in the log is never reported not written.
#[test]
fn every_answer_to_the_probe_target_against_a_rule_following_leader() {
    let errors = [
        KafkaError::None,
        KafkaError::NotLeaderOrFollower,
        KafkaError::RequestTimedOut,
        KafkaError::NotEnoughReplicas,
        KafkaError::NotEnoughReplicasAfterAppend,
        KafkaError::UnknownProducerId,
        KafkaError::CorruptMessage,
        KafkaError::MessageTooLarge,
        KafkaError::InvalidRecord,
        KafkaError::KafkaStorageError,
        KafkaError::UnknownServerError,
        KafkaError::OutOfOrderSequenceNumber,
        KafkaError::DuplicateSequenceNumber,
        KafkaError::InvalidProducerEpoch,
    ];
    let names = ["VAL-warm", "VAL-r0", "VAL-r1", "VAL-r2"];
    for depth in [2, 3] {
        for error in errors {
            for appended in [false, true] {
                if appended && depth == 3 {
                    continue;
                }
                if appended && (error.rejected_before_append() || error == KafkaError::None) {
                    continue;
                }
                // A duplicate's answer says the batch is in the log.
                if !appended && error == KafkaError::DuplicateSequenceNumber {
                    continue;
                }
                let ctx = format!("depth={depth} {error:?} appended={appended}");
                let mut h = Harness::new(config().build().unwrap());
                h.send(0, names[0]);
                let r = h.outstanding.back().unwrap().id;
                h.respond(r, &[(0, KafkaError::None, 0)]);
                h.events.clear();
                let records: Vec<RecordId> = names[1..].iter().map(|n| h.send(0, n)).collect();
                let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
                assert_eq!(sent.len(), 3);
                for r in &sent {
                    h.fail(r.id, RequestFailure::Disconnected);
                }
                // r0 and r1 (depth 2) or all three (depth 3) were appended; the leader
                // reloaded and keeps only the newest.
                let mut leader = Leader {
                    epoch: 0,
                    last_seq: depth,
                    cached: vec![(depth, i64::from(depth))],
                    log: (0..=depth as usize).collect(),
                };
                let mut first_probe = true;
                for _ in 0..300 {
                    h.advance(100);
                    while let Some(r) = h.outstanding.front().cloned() {
                        let ws = wire(&r);
                        let w = &ws[0];
                        let vals = values_in(&r.batches[0].data, &names);
                        let is_probe =
                            h.p.stats().probes == 1 && w.epoch == 0 && w.base_sequence == 3;
                        let (e, off) = if is_probe && first_probe {
                            first_probe = false;
                            if appended {
                                leader.produce(w, &vals);
                            }
                            if error == KafkaError::None {
                                leader.produce(w, &vals)
                            } else {
                                (error, -1)
                            }
                        } else {
                            leader.produce(w, &vals)
                        };
                        h.respond(r.id, &[(0, e, off)]);
                    }
                }
                assert!(!first_probe, "{ctx}: the probe never went");
                for (i, &r) in records.iter().enumerate() {
                    assert_eq!(h.outcomes(r), 1, "{ctx}: {} {:?}", names[i + 1], h.events);
                    let in_log = leader.log.contains(&(i + 1));
                    if h.delivered(r).is_some() {
                        assert!(
                            in_log,
                            "{ctx}: {} acknowledged, not in the log",
                            names[i + 1]
                        );
                    }
                    if in_log {
                        assert_ne!(
                            h.possibly_written(r),
                            Some(false),
                            "{ctx}: {} in the log, reported not written",
                            names[i + 1]
                        );
                    }
                }
                for (v, name) in names.iter().enumerate() {
                    let n = leader.log.iter().filter(|&&x| x == v).count();
                    assert!(n <= 1, "{ctx}: {name} written {n} times: {:?}", leader.log);
                }
            }
        }
    }
}

/// A seeded search: n one-record batches (2..=5) with every answer lost, of which the
/// first `depth` (2..=n) were appended before the leader reloaded its snapshot (only
/// the newest kept); then a rule-following leader whose answers are lost at random
/// (appended or not), and random MESSAGE_TOO_LARGE-free errors that may follow an
/// append, and clean restarts that leave only the newest batch deduplicated. Same
/// checks as above; max.in.flight from n to 5.
#[test]
fn seeded_probe_search_against_a_rule_following_leader() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rand = move |m: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % m
    };
    let names = ["VAL-warm", "VAL-r0", "VAL-r1", "VAL-r2", "VAL-r3", "VAL-r4"];
    let mut probes = 0;
    for case in 0..3000 {
        let n = 2 + rand(4) as usize;
        let depth = 2 + rand((n - 1) as u64) as i32;
        let ctx = format!("case {case}: n={n} depth={depth}");
        let _ = &ctx;
        let max_in_flight = (n as u32).max(2 + rand(4) as u32).min(5);
        let mut b = config();
        b.max_in_flight_requests_per_connection(max_in_flight);
        let mut h = Harness::new(b.build().unwrap());
        h.send(0, names[0]);
        let r = h.outstanding.back().unwrap().id;
        h.respond(r, &[(0, KafkaError::None, 0)]);
        h.events.clear();
        let records: Vec<RecordId> = names[1..=n].iter().map(|v| h.send(0, v)).collect();
        let sent: Vec<ProduceRequest> = h.outstanding.iter().cloned().collect();
        assert_eq!(sent.len(), n, "{ctx}");
        for r in &sent {
            h.fail(r.id, RequestFailure::Disconnected);
        }
        let mut leader = Leader {
            epoch: 0,
            last_seq: depth,
            cached: vec![(depth, i64::from(depth))],
            log: (0..=depth as usize).collect(),
        };
        let mut log_trace = Vec::new();
        for _ in 0..300 {
            h.advance(100);
            while let Some(r) = h.outstanding.front().cloned() {
                if rand(15) == 0 {
                    // The leader restarts cleanly: only the newest batch is remembered.
                    let keep = leader.cached.len().saturating_sub(1);
                    leader.cached.drain(..keep);
                }
                let ws = wire(&r);
                let w = &ws[0];
                let vals = values_in(&r.batches[0].data, &names);
                let (e, off) = leader.produce(w, &vals);
                log_trace.push((w.epoch, w.base_sequence, e));
                match rand(10) {
                    0 | 1 => {
                        h.fail(r.id, RequestFailure::Disconnected);
                    }
                    2 if e == KafkaError::None => {
                        h.respond(r.id, &[(0, KafkaError::RequestTimedOut, -1)]);
                    }
                    3 if e == KafkaError::None => {
                        h.respond(r.id, &[(0, KafkaError::NotLeaderOrFollower, -1)]);
                    }
                    _ => {
                        h.respond(r.id, &[(0, e, off)]);
                    }
                }
            }
        }
        probes += h.p.stats().probes;
        for (i, &r) in records.iter().enumerate() {
            let name = names[i + 1];
            assert_eq!(
                h.outcomes(r),
                1,
                "{ctx}: {name} {:?} {log_trace:?}",
                h.events
            );
            let in_log = leader.log.contains(&(i + 1));
            if h.delivered(r).is_some() {
                assert!(
                    in_log,
                    "{ctx}: {name} acknowledged, not in the log {log_trace:?}"
                );
            }
            if in_log {
                assert_ne!(
                    h.possibly_written(r),
                    Some(false),
                    "{ctx}: {name} in the log, reported not written"
                );
            }
        }
        for (v, name) in names.iter().enumerate().take(n + 1) {
            let c = leader.log.iter().filter(|&&x| x == v).count();
            assert!(
                c <= 1,
                "{ctx}: {name} written {c} times: {:?} {log_trace:?}",
                leader.log
            );
        }
    }
    assert!(probes > 100, "the search must exercise the probe: {probes}");
}

/// The seeded search with two-record batches that the leader refuses as too large
/// (checked before the sequence), answers in request order, one at a time: does the
/// split of a probe target happen with Kafka's ordering?
#[test]
fn seeded_search_with_batches_too_large_in_request_order() {
    let mut seed: u64 = 0x5151_aaaa_0101_7777;
    let mut rand = move |m: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % m
    };
    let names: Vec<String> = (0..12).map(|i| format!("VAL-x{i:02}")).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut splits = 0;
    let mut probes = 0;
    for case in 0..3000 {
        let mut h = Harness::new(config().build().unwrap());
        h.send(0, "VAL-warm");
        let r = h.outstanding.back().unwrap().id;
        h.respond(r, &[(0, KafkaError::None, 0)]);
        h.events.clear();
        let mut leader = Leader {
            epoch: 0,
            last_seq: 0,
            cached: vec![(0, 0)],
            log: vec![],
        };
        let mut records = Vec::new();
        let mut next_name = 0;
        for _ in 0..300 {
            // The application sends now and then, sometimes two records at once.
            if next_name + 2 <= names.len() && rand(4) == 0 {
                let k = if rand(3) == 0 { 2 } else { 1 };
                for _ in 0..k {
                    records.push((
                        next_name,
                        h.p.send(&tp(0), &record(&names[next_name]), h.now).unwrap(),
                    ));
                    next_name += 1;
                }
                h.pump();
            }
            h.advance(100);
            while let Some(r) = h.outstanding.front().cloned() {
                if rand(15) == 0 {
                    let keep = leader.cached.len().saturating_sub(1);
                    leader.cached.drain(..keep);
                }
                let ws = wire(&r);
                let w = &ws[0];
                let vals = values_in(&r.batches[0].data, &name_refs);
                let (e, off) = if w.count >= 2 && rand(2) == 0 {
                    (KafkaError::MessageTooLarge, -1)
                } else {
                    leader.produce(w, &vals)
                };
                match rand(10) {
                    0 | 1 => {
                        h.fail(r.id, RequestFailure::Disconnected);
                    }
                    2 if e == KafkaError::None => {
                        h.respond(r.id, &[(0, KafkaError::RequestTimedOut, -1)]);
                    }
                    _ => {
                        h.respond(r.id, &[(0, e, off)]);
                    }
                }
            }
        }
        splits += h.p.stats().splits;
        probes += h.p.stats().probes;
        for &(v, r) in &records {
            assert_eq!(h.outcomes(r), 1, "case {case}: {} {:?}", names[v], h.events);
            if h.delivered(r).is_some() {
                assert!(
                    leader.log.contains(&v),
                    "case {case}: {} acked, not logged",
                    names[v]
                );
            }
        }
        for (v, name) in names.iter().enumerate() {
            let c = leader.log.iter().filter(|&&x| x == v).count();
            assert!(c <= 1, "case {case}: {name} written {c} times");
        }
    }
    eprintln!("splits {splits}, probes {probes}");
    assert!(splits > 0 && probes > 0, "splits {splits}, probes {probes}");
}
