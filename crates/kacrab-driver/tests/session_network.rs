//! The session's network half against model brokers, byte for byte: routing and
//! re-routing, version negotiation, reconnects, KIP-951 leader endpoints, malformed
//! answers.

use crate::pair;

use std::time::Duration;

use crate::pair::broker::{self, with_correlation, with_header};
use crate::pair::{Cluster, Pair, Verdict};
use kacrab_driver::{CloseReason, Completion};
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

const SECOND: Duration = Duration::from_secs(1);

fn produce_nodes(p: &Pair) -> Vec<i32> {
    p.cluster
        .seen
        .iter()
        .filter(|s| s.api == ApiKey::Produce)
        .map(|s| s.node)
        .collect()
}

fn versions_of(p: &Pair, api: ApiKey) -> Vec<i16> {
    p.cluster
        .seen
        .iter()
        .filter(|s| s.api == api)
        .map(|s| s.version)
        .collect()
}

/// Every connection negotiated with exactly these ApiVersions versions, in order.
fn assert_api_versions_per_connection(p: &Pair, expected: &[i16]) {
    let mut by_conn = std::collections::BTreeMap::<_, Vec<i16>>::new();
    for s in p
        .cluster
        .seen
        .iter()
        .filter(|s| s.api == ApiKey::ApiVersions)
    {
        by_conn.entry(s.conn).or_default().push(s.version);
    }
    assert!(!by_conn.is_empty());
    for (conn, versions) in by_conn {
        assert_eq!(versions, expected, "{conn:?}");
    }
}

/// Each record goes to its partition's leader; after the leader moves (and the old
/// leader answers NOT_LEADER_OR_FOLLOWER without KIP-951 hints, as before Produce v10),
/// the session learns the new leader from Metadata and the record lands there, once.
#[test]
fn records_go_to_the_leader_and_follow_a_leader_move_through_metadata() {
    let mut cluster = Cluster::new(3).with_topic("t", 3);
    for b in cluster.brokers.values_mut() {
        b.api_versions.retain(|k| k.0 != ApiKey::Produce as i16);
        b.api_versions.push((ApiKey::Produce as i16, 3, 9));
    }
    let mut p = Pair::new(cluster, &[]);
    let a = p.send("t", 1, "a");
    let b = p.send("t", 2, "b");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.acked(b).offset, Some(0));
    assert_eq!(
        produce_nodes(&p),
        vec![1, 2],
        "each record went to its leader"
    );
    assert!(versions_of(&p, ApiKey::Produce).iter().all(|&v| v == 9));

    p.cluster.move_leader("t", 1, 0);
    let metadata_before = p.cluster.count(ApiKey::Metadata);
    let c = p.send("t", 1, "c");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(c).offset, Some(1));
    assert!(p.cluster.count(ApiKey::Metadata) > metadata_before);
    let nodes = produce_nodes(&p);
    assert_eq!(
        nodes[2..],
        [1, 0],
        "refused by the old leader, then sent to the new one"
    );
    assert_eq!(p.cluster.values("t", 1), ["a", "c"]);
    assert!(p.cluster.values("t", 0).is_empty());
}

/// KIP-951: a NOT_LEADER_OR_FOLLOWER answer naming the new leader and its endpoint
/// sends the record there, at an address no Metadata answer ever gave.
#[test]
fn a_not_leader_answer_with_leader_endpoints_reaches_a_broker_metadata_never_named() {
    let mut cluster = Cluster::new(3).with_topic("t", 1);
    cluster.hidden_in_metadata.insert(2);
    let mut p = Pair::new(cluster, &[]);
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert!(!p.connects.iter().any(|c| c.2 == "b2:9092"));

    p.cluster.move_leader("t", 0, 2);
    let b = p.send("t", 0, "b");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(b).offset, Some(1));
    assert_eq!(produce_nodes(&p), vec![0, 0, 2]);
    assert!(p.connects.iter().any(|c| c.2 == "b2:9092"));
    assert_eq!(p.cluster.values("t", 0), ["a", "b"]);
}

/// A broker whose ApiVersions stops at v2 answers the v3 question with a v0
/// UNSUPPORTED_VERSION body naming its range; the session asks again at v2.
#[test]
fn an_unsupported_api_versions_version_is_asked_again_at_the_brokers_version() {
    let mut cluster = Cluster::new(1).with_topic("t", 1);
    let b = cluster.brokers.get_mut(&0).unwrap();
    b.api_versions.retain(|k| k.0 != ApiKey::ApiVersions as i16);
    b.api_versions.push((ApiKey::ApiVersions as i16, 0, 2));
    let mut p = Pair::new(cluster, &[]);
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert_api_versions_per_connection(&p, &[3, 2]);
    assert!(p.closes.is_empty(), "{:?}", p.closes);
}

/// An UNSUPPORTED_VERSION answer that names no ApiVersions range makes the session
/// fall back to v0 (Java's `NetworkClient.handleApiVersionsResponse`).
#[test]
fn an_unsupported_version_answer_without_a_range_forces_the_v0_retry() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    p.hook(|inc, _| {
        (inc.api == ApiKey::ApiVersions && inc.version > 0).then(|| {
            let answer =
                ApiVersionsResponse::default().with_error_code(broker::UNSUPPORTED_VERSION);
            Verdict::Raw(broker::frame(inc, &answer, 0))
        })
    });
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert_api_versions_per_connection(&p, &[3, 0]);
    assert!(p.closes.is_empty(), "{:?}", p.closes);
}

/// A broker that does not list an API the session needs in common: the v0 answer with
/// no Produce entry leaves the record without a version; it fails, and is not written.
#[test]
fn a_broker_without_a_common_produce_version_fails_the_record_unwritten() {
    let mut cluster = Cluster::new(1).with_topic("t", 1);
    let b = cluster.brokers.get_mut(&0).unwrap();
    b.api_versions.retain(|k| k.0 != ApiKey::Produce as i16);
    b.api_versions.push((ApiKey::Produce as i16, 0, 2));
    let mut p = Pair::new(
        cluster,
        &[
            ("delivery.timeout.ms", "3000"),
            ("request.timeout.ms", "1000"),
        ],
    );
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let err = p.outcome(a).unwrap().as_ref().unwrap_err();
    assert!(!err.possibly_written(), "{err:?}");
    assert_eq!(p.cluster.count(ApiKey::Produce), 0);
    assert!(p.cluster.values("t", 0).is_empty());
}

/// A transactional producer against a broker that finalizes no `transaction.version`
/// runs transactions the TV1 way: AddPartitionsToTxn before Produce, Produce at v11 at
/// most, EndTxn at v4 at most; with `transaction.version` 2 finalized, the TV2 way:
/// no AddPartitionsToTxn, Produce v12, EndTxn v5 (KIP-890).
#[test]
fn the_finalized_transaction_version_decides_tv1_or_tv2_requests() {
    for level in [None, Some(2)] {
        let mut cluster = Cluster::new(1).with_topic("t", 1);
        let b = cluster.brokers.get_mut(&0).unwrap();
        if let Some(level) = level {
            b.transaction_version = Some(level);
            b.features_epoch = 1;
        }
        let mut p = Pair::new(cluster, &[("transactional.id", "tx")]);
        let init = p.session.init_transactions(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
        assert!(matches!(
            p.op(init),
            Some((_, Completion::Transaction { result: Ok(()), .. }))
        ));
        let begin = p.session.begin_transaction(p.now);
        p.pump();
        assert!(matches!(
            p.op(begin),
            Some((_, Completion::Transaction { result: Ok(()), .. }))
        ));
        let a = p.send("t", 0, "a");
        let commit = p.session.commit_transaction(p.now);
        assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
        assert!(
            matches!(
                p.op(commit),
                Some((_, Completion::Transaction { result: Ok(()), .. }))
            ),
            "{level:?}: {:?}",
            p.op(commit)
        );
        assert_eq!(p.acked(a).offset, Some(0));
        assert_eq!(p.cluster.end_txns, [true]);
        let produce = versions_of(&p, ApiKey::Produce);
        let end_txn = versions_of(&p, ApiKey::EndTxn);
        if level.is_none() {
            assert_eq!(
                p.cluster.count(ApiKey::AddPartitionsToTxn),
                1,
                "TV1 adds the partition"
            );
            assert!(produce.iter().all(|&v| v <= 11), "{produce:?}");
            assert!(end_txn.iter().all(|&v| v <= 4), "{end_txn:?}");
        } else {
            assert_eq!(
                p.cluster.count(ApiKey::AddPartitionsToTxn),
                0,
                "TV2 adds it implicitly"
            );
            assert_eq!(produce, [12]);
            assert_eq!(end_txn, [5]);
        }
    }
}

/// The first Produce reaches the log, then the connection resets before the answer:
/// the records are retried on a new connection and, as duplicates of what the log
/// holds, acknowledged once at the offsets they first got.
#[test]
fn records_written_before_a_reset_are_retried_and_delivered_once() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    let mut first = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut first))
            .then_some(Verdict::ApplyThenReset)
    });
    let ids: Vec<_> = (0..4).map(|i| p.send("t", 0, &format!("r{i}"))).collect();
    p.settle(10 * SECOND);
    assert_eq!(p.resets.len(), 1);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(p.acked(*id).offset, Some(i as i64), "r{i}");
    }
    assert_eq!(p.cluster.values("t", 0), ["r0", "r1", "r2", "r3"]);
    assert!(
        p.cluster.count(ApiKey::Produce) > 1,
        "something was retried"
    );
}

/// Issue 16 item 3: the record batches reach the driver as the core's own `Bytes`, parts
/// of the frame, never copied into it. A Produce request for three partitions comes in
/// seven parts (the bytes around the batches, and the three batches); every other
/// request in one. Were the session (or its plain transport) to join a frame, it would
/// come in one part.
#[test]
fn produce_frames_carry_the_batches_as_parts_of_their_own() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 3), &[("linger.ms", "50")]);
    let ids: Vec<_> = (0..3).map(|i| p.send("t", i, &format!("r{i}"))).collect();
    p.settle(10 * SECOND);
    for id in &ids {
        assert_eq!(p.acked(*id).offset, Some(0));
    }
    assert_eq!(
        p.cluster.count(ApiKey::Produce),
        1,
        "one request for the three"
    );
    let mut parts: Vec<usize> = p.frame_parts.iter().map(|(_, n)| *n).collect();
    parts.sort_unstable();
    assert_eq!(parts.last(), Some(&7), "{:?}", p.frame_parts);
    assert!(
        parts[..parts.len() - 1].iter().all(|n| *n == 1),
        "{parts:?}"
    );
}

/// Garbage in place of an answer closes the connection as malformed; what was
/// acknowledged before stays acknowledged once, and the record the garbage answered is
/// failed with the connection and retried at once (not after `request.timeout.ms`),
/// then delivered once.
#[test]
fn a_malformed_frame_closes_the_connection_and_loses_nothing_acknowledged() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("request.timeout.ms", "30000")],
    );
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed))
            .then(|| Verdict::Raw(with_header(inc, &[0xff])))
    });
    let b = p.send("t", 0, "b");
    p.settle(SECOND);
    assert!(
        p.closes
            .iter()
            .any(|c| matches!(c.2, CloseReason::Malformed(_))),
        "{:?}",
        p.closes
    );
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.acked(b).offset, Some(1));
    assert_eq!(p.cluster.values("t", 0), ["a", "b"]);
}

/// An answer naming a correlation id nothing was sent with is a broken stream: the
/// connection closes, and the record whose real answer came after it is retried and,
/// the log already holding it, acknowledged once.
#[test]
fn an_answer_to_an_unknown_correlation_id_closes_the_connection() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed)).then(|| {
            let body = broker::encode(
                &kafka_protocol::messages::ProduceResponse::default(),
                inc.version,
            );
            Verdict::AnswerAfter(with_correlation(inc, inc.correlation_id + 1000, &body))
        })
    });
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let closed: Vec<_> = p.closes.iter().map(|c| &c.2).collect();
    assert!(
        closed
            .iter()
            .any(|r| matches!(r, CloseReason::Malformed(m) if m.contains("correlation"))),
        "{closed:?}"
    );
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.cluster.values("t", 0), ["a"]);
    assert_eq!(p.cluster.count(ApiKey::Produce), 2);
}

/// A broker that comes back at another address: its old connection resets and the old
/// address refuses; Metadata from another broker names the new address, the session
/// connects there, and the record is delivered once.
#[test]
fn a_broker_that_moved_is_reached_at_its_new_address() {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.move_leader("t", 0, 1);
    let mut p = Pair::new(cluster, &[("retry.backoff.ms", "10")]);
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));

    p.cluster.brokers.get_mut(&1).unwrap().addr = "b1-moved:9092".into();
    for (conn, addr) in p.links() {
        if addr == "b1:9092" {
            p.reset(conn);
        }
    }
    let b = p.send("t", 0, "b");
    p.settle(30 * SECOND);
    assert_eq!(p.acked(b).offset, Some(1));
    assert!(p.connects.iter().any(|c| c.2 == "b1-moved:9092"));
    assert_eq!(p.cluster.values("t", 0), ["a", "b"]);
}

/// The leader's address accepts no connection (the connect hangs): the session gives
/// up after `socket.connection.setup.timeout.ms` each time; once the leader moves to a
/// reachable broker the record is delivered there.
#[test]
fn a_leader_whose_connect_hangs_is_abandoned_and_the_record_follows_the_new_leader() {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.move_leader("t", 0, 1);
    let mut p = Pair::new(
        cluster,
        &[
            ("socket.connection.setup.timeout.ms", "200"),
            ("retry.backoff.ms", "10"),
        ],
    );
    p.connect
        .insert("b1:9092".into(), pair::ConnectPolicy::Hang);
    let a = p.send("t", 0, "a");
    p.run_for(SECOND);
    assert!(p.outcome(a).is_none());
    assert!(p.closes.iter().any(|c| c.2 == CloseReason::ConnectTimeout));
    p.cluster.move_leader("t", 0, 0);
    p.settle(30 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.cluster.values("t", 0), ["a"]);
}

/// abort() fails every record without an outcome at once (possibly written only if it
/// was on the wire), refuses later sends, and finishes the session.
#[test]
fn abort_fails_every_record_without_an_outcome_and_finishes() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("max.in.flight.requests.per.connection", "1")],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let on_wire = p.send("t", 0, "a");
    assert!(p.run_until(10 * SECOND, |p| p.cluster.count(ApiKey::Produce) == 1));
    let queued = p.send("t", 0, "b");
    let lookup = p.partition_count("unknown-topic");
    p.session.abort(p.now);
    p.pump();
    assert!(p
        .outcome(on_wire)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .possibly_written());
    assert!(!p
        .outcome(queued)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .possibly_written());
    let close = p.close(None);
    assert!(p.run_until(SECOND, |p| p.op(close).is_some() && p.session.is_finished()));
    assert!(matches!(
        p.op(lookup),
        Some((_, Completion::PartitionCount { count: None, .. }))
    ));
    let late = p.send("t", 0, "late");
    assert!(p.outcome(late).unwrap().is_err());
    assert!(p.links().is_empty());
    p.assert_every_ticket_ended();
}

/// An answer that decodes but that the core refuses (InitProducerId without an error
/// and without a producer id): the session closes the connection as a protocol
/// violation, and the request, which the core keeps outstanding, is failed with the
/// connection and asked again at once (not after `request.timeout.ms`).
#[test]
fn an_answer_the_core_refuses_closes_the_connection_and_its_request_is_retried_at_once() {
    use kafka_protocol::messages::{InitProducerIdResponse, ProducerId};
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("request.timeout.ms", "30000")],
    );
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::InitProducerId && std::mem::take(&mut armed)).then(|| {
            let invalid = InitProducerIdResponse::default()
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            Verdict::Raw(broker::frame(inc, &invalid, inc.version))
        })
    });
    let a = p.send("t", 0, "a");
    p.settle(SECOND);
    assert!(
        p.closes
            .iter()
            .any(|c| matches!(c.2, CloseReason::Protocol(_))),
        "{:?}",
        p.closes
    );
    assert_eq!(p.cluster.count(ApiKey::InitProducerId), 2);
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.cluster.values("t", 0), ["a"]);
}

/// With `acks=0` the broker never answers: each record completes once its request is
/// written, without an offset, and the connection stays healthy.
#[test]
fn acks_zero_records_complete_once_written_without_an_offset() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("acks", "0"), ("enable.idempotence", "false")],
    );
    let ids: Vec<_> = (0..3).map(|i| p.send("t", 0, &format!("r{i}"))).collect();
    p.settle(SECOND);
    for id in &ids {
        assert_eq!(p.acked(*id).offset, None);
    }
    p.run_for(SECOND);
    assert_eq!(p.cluster.values("t", 0), ["r0", "r1", "r2"]);
    assert!(p.closes.is_empty(), "{:?}", p.closes);
}

/// A leader whose address no answer ever gave: its requests are never written; the
/// record waits (asking Metadata again with backoff, not in a busy loop) and fails
/// after `delivery.timeout.ms`, certainly not written.
#[test]
fn a_leader_without_a_known_address_fails_the_record_unwritten_at_the_delivery_timeout() {
    let mut cluster = Cluster::new(2).with_topic("t", 1);
    cluster.move_leader("t", 0, 1);
    cluster.hidden_in_metadata.insert(1);
    let mut p = Pair::new(
        cluster,
        &[
            ("delivery.timeout.ms", "2000"),
            ("request.timeout.ms", "1000"),
            ("retry.backoff.ms", "100"),
        ],
    );
    let start = p.now;
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let err = p.outcome(a).unwrap().as_ref().unwrap_err();
    assert!(!err.possibly_written(), "{err:?}");
    let at = p.done_at(a).unwrap().saturating_duration_since(start);
    assert!(at >= 2 * SECOND && at < 3 * SECOND, "{at:?}");
    assert!(
        p.cluster.count(ApiKey::Metadata) < 100,
        "{}",
        p.cluster.count(ApiKey::Metadata)
    );
    assert_eq!(p.cluster.count(ApiKey::Produce), 0);
    p.assert_every_ticket_ended();
}

/// A record for a topic the cluster does not have: Metadata answers
/// UNKNOWN_TOPIC_OR_PARTITION, nothing is ever written, and the record fails at
/// `delivery.timeout.ms`, certainly not written, while a record for a real topic sent
/// beside it is delivered.
#[test]
fn a_record_for_a_missing_topic_fails_unwritten_at_max_block_and_the_next_is_delivered() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("delivery.timeout.ms", "2000"),
            ("request.timeout.ms", "1000"),
            ("retry.backoff.ms", "50"),
            ("max.block.ms", "500"),
        ],
    );
    let missing = p.send("nope", 0, "x");
    let real = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(real).offset, Some(0));
    let err = p.outcome(missing).unwrap().as_ref().unwrap_err();
    assert!(!err.possibly_written(), "{err:?}");
    // Java's `waitOnMetadata`: the send waits for its topic (in call order, so the next
    // one waits behind it) until max.block.ms.
    assert!(p.done_at(missing) < p.done_at(real));
    assert_eq!(p.cluster.values("t", 0), ["a"]);
}

/// Metadata moves a broker to a new address while a Produce sits unanswered on its
/// old connection (applied, answer pending; the Metadata is asked for another topic's
/// record, as the core does no periodic refresh): the session closes the old connection
/// (BrokerMoved), the Produce is retried at the new address and, as a duplicate of
/// what the log holds, acknowledged once at the offset it first got.
#[test]
fn a_broker_moved_by_metadata_closes_its_old_connection_and_the_record_is_delivered_once() {
    let mut cluster = Cluster::new(2).with_topic("t", 1).with_topic("other", 1);
    cluster.move_leader("t", 0, 1);
    let mut p = Pair::new(cluster, &[]);
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));

    p.cluster.brokers.get_mut(&1).unwrap().addr = "b1-moved:9092".into();
    let mut armed = true;
    p.hook(move |inc, _| {
        (inc.api == ApiKey::Produce && std::mem::take(&mut armed))
            .then_some(Verdict::ApplyAndIgnore)
    });
    let b = p.send("t", 0, "b");
    assert!(p.run_until(SECOND, |p| p.cluster.count(ApiKey::Produce) == 2));
    // A record for a partition the producer has no leader for yet: its Metadata answer
    // carries the moved address.
    let c = p.send("other", 0, "c");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(c).offset, Some(0));
    assert!(
        p.closes.iter().any(|c| c.2 == CloseReason::BrokerMoved),
        "{:?}",
        p.closes
    );
    assert_eq!(p.acked(b).offset, Some(1));
    assert_eq!(p.cluster.values("t", 0), ["a", "b"]);
    assert!(p.connects.iter().any(|c| c.2 == "b1-moved:9092"));
}

/// Java's producer refreshes metadata every `metadata.max.age.ms` even when nothing
/// failed (`Metadata.timeToNextUpdate`), so it notices moved brokers and leaders early.
/// The session acts on the key (`refresh.rs`): it asks for every topic in use once the
/// view is `metadata.max.age.ms` old.
#[test]
fn metadata_is_refreshed_every_metadata_max_age() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("metadata.max.age.ms", "200")],
    );
    let a = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    let before = p.cluster.count(ApiKey::Metadata);
    p.run_for(SECOND);
    assert!(
        p.cluster.count(ApiKey::Metadata) >= before + 4,
        "{} Metadata requests in a second of metadata.max.age.ms 200",
        p.cluster.count(ApiKey::Metadata) - before
    );
}

/// A driver ordering Produce frames by ticket: a record whose leader has no known
/// address is released ahead of its turn, while the record before it still waits for
/// its connection's negotiation. The ticket after it must not wait for the released
/// one: both records around it are delivered, and it fails unwritten.
#[test]
fn a_ticket_released_ahead_of_its_turn_does_not_hold_up_the_next() {
    let mut cluster = Cluster::new(2).with_topic("t", 2);
    cluster.hidden_in_metadata.insert(1);
    let mut p = Pair::new(
        cluster,
        &[
            ("delivery.timeout.ms", "2000"),
            ("request.timeout.ms", "1000"),
        ],
    );
    p.ticket_order = true;
    // Learn the leaders first, so the three records are drained one by one.
    let warm = p.send("t", 0, "warm");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(warm).offset, Some(0));
    for (conn, _) in p.links() {
        p.reset(conn);
    }
    let a = p.send("t", 0, "a");
    let b = p.send("t", 1, "b");
    let c = p.send("t", 0, "c");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(1));
    assert_eq!(p.acked(c).offset, Some(2));
    assert!(
        p.done_at(c) < p.done_at(b),
        "c did not wait for b's delivery timeout"
    );
    assert!(!p
        .outcome(b)
        .unwrap()
        .as_ref()
        .unwrap_err()
        .possibly_written());
    p.assert_every_ticket_ended();
}
