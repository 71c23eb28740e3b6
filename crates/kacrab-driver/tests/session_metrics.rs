//! Kafka's producer metrics move on the same events as Kafka's do, byte for byte
//! against model brokers: a retry counts in `record-retry-total`, a throttled answer in
//! `produce-throttle-time-*`, an epoch bump in kacrab's own counters, request latency
//! and the transaction timers follow the time inputs, rates cover Kafka's windows.

use std::time::Duration;

use crate::pair::broker::{self, Incoming, Req};
use crate::pair::{Cluster, Pair, Verdict};
use bytes::Bytes;
use kacrab_driver::metrics::{NodeMetrics, ProducerMetrics, TopicMetrics};
use kacrab_driver::{Completion, ProducerRecord, Timestamp};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, ProduceResponse};

const SECOND: Duration = Duration::from_secs(1);
/// Kafka's NOT_ENOUGH_REPLICAS: retriable, nothing appended.
const NOT_ENOUGH_REPLICAS: i16 = 19;

/// A produce answer for `inc` with `error` for every partition and this throttle.
fn produce_answer(inc: &Incoming, error: i16, throttle_ms: i32) -> Verdict {
    let Req::Produce(r) = &inc.req else {
        panic!("not a produce request")
    };
    let responses = r
        .topic_data
        .iter()
        .map(|td| {
            let parts = td
                .partition_data
                .iter()
                .map(|pd| {
                    PartitionProduceResponse::default()
                        .with_index(pd.index)
                        .with_error_code(error)
                        .with_base_offset(-1)
                        .with_log_append_time_ms(-1)
                })
                .collect();
            TopicProduceResponse::default()
                .with_name(td.name.clone())
                .with_partition_responses(parts)
        })
        .collect();
    let answer = ProduceResponse::default()
        .with_responses(responses)
        .with_throttle_time_ms(throttle_ms);
    Verdict::Raw(broker::frame(inc, &answer, inc.version))
}

/// Answers the first Produce with `error` and a throttle, every later one normally.
fn first_produce_fails(p: &mut Pair, error: i16, throttle_ms: i32) {
    let mut first = true;
    p.hook(move |inc, _| {
        if inc.api != ApiKey::Produce || !first {
            return None;
        }
        first = false;
        Some(produce_answer(inc, error, throttle_ms))
    });
}

fn producer(p: &mut Pair) -> ProducerMetrics {
    let now = p.now;
    p.session.metrics(now).producer
}

fn topic(p: &mut Pair, name: &str) -> TopicMetrics {
    let now = p.now;
    p.session.metrics(now).topics[name].clone()
}

/// Kafka's `Sender.reenqueueBatch` records the batch's records in `record-retries`; a
/// produce answer's `throttle_time_ms` goes to `produce-throttle-time`. A record sent
/// twice counts twice in `record-send-total` (recorded at every drain) and never in
/// `record-error-total`.
#[test]
fn a_retry_counts_in_record_retry_total_and_a_throttled_answer_in_produce_throttle_time() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    first_produce_fails(&mut p, NOT_ENOUGH_REPLICAS, 250);
    let before = producer(&mut p);
    assert_eq!(before.record_retry_total, 0.0);
    assert!(
        before.produce_throttle_time_max.is_nan(),
        "nothing recorded yet"
    );
    assert_eq!(p.send_settled("t", 0, "a").map(|m| m.offset), Ok(Some(0)));
    let m = producer(&mut p);
    assert_eq!(m.record_retry_total, 1.0);
    assert!(m.record_retry_rate > 0.0);
    assert_eq!(m.record_send_total, 2.0, "both attempts are sends");
    assert_eq!(m.record_error_total, 0.0);
    assert_eq!(m.produce_throttle_time_max, 250.0);
    assert_eq!(
        m.produce_throttle_time_avg,
        250.0 / m.response_total,
        "250 ms once, 0 ms in every other response"
    );
    let t = topic(&mut p, "t");
    assert_eq!(t.record_retry_total, 1.0);
    assert_eq!(t.record_send_total, 2.0);
    assert_eq!(t.record_error_total, 0.0);
    assert_eq!(t.compression_rate, 1.0, "uncompressed batches");
    assert_eq!(m.compression_rate_avg, 1.0);
    assert_eq!(m.records_per_request_avg, 1.0);
    assert!(m.batch_size_avg > 0.0 && m.batch_size_max >= m.batch_size_avg);
    assert!(m.record_size_max > 0.0);
}

/// An OUT_OF_ORDER_SEQUENCE_NUMBER for the next expected batch makes the idempotent
/// producer bump its epoch and retry (KIP-360; Java's
/// `TransactionManager.canRetry` / `requestIdempotentEpochBumpForPartition`): the bump
/// counts in kacrab's epoch counters, not as a new producer id, and the record as a
/// retry, not an error.
#[test]
fn an_epoch_bump_counts_as_a_bump_and_an_epoch_change() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    first_produce_fails(
        &mut p,
        kacrab_broker_model::broker::OUT_OF_ORDER_SEQUENCE_NUMBER,
        0,
    );
    let before = producer(&mut p);
    assert_eq!(before.epoch_bump_total, 0.0);
    let outcome = p.send_settled("t", 0, "a");
    assert!(outcome.is_ok(), "{outcome:?}");
    let m = producer(&mut p);
    assert_eq!(m.epoch_bump_total, 1.0);
    assert_eq!(m.epoch_change_total, 1.0);
    assert_eq!(m.producer_id_change_total, 1.0, "only the first id");
    assert_eq!(m.record_retry_total, 1.0);
    assert_eq!(m.record_error_total, 0.0);
    assert_eq!(m.unresolved_partitions, 0.0);
}

/// A record failed by a non-retriable error counts in `record-error-total` (Kafka's
/// `Sender.failBatch` records the batch's records in `errors`), globally and for its
/// topic; refused before the append, it is not possibly written.
#[test]
fn a_failed_record_counts_as_an_error_and_not_as_possibly_written() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    // INVALID_RECORD (87): the broker refuses the batch, nothing appended.
    first_produce_fails(&mut p, 87, 0);
    let outcome = p.send_settled("t", 0, "a");
    assert!(outcome.is_err(), "{outcome:?}");
    let m = producer(&mut p);
    assert_eq!(m.record_error_total, 1.0);
    assert!(m.record_error_rate > 0.0);
    assert_eq!(topic(&mut p, "t").record_error_total, 1.0);
    assert_eq!(m.possibly_written_failure_total, 0.0);
    assert_eq!(m.record_retry_total, 0.0);
}

/// A record whose request went unanswered until `delivery.timeout.ms` fails possibly
/// written, and counts so in kacrab's own counter.
#[test]
fn a_possibly_written_failure_counts() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("delivery.timeout.ms", "1500"),
            ("request.timeout.ms", "1000"),
        ],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::ApplyAndIgnore));
    let a = p.send("t", 0, "a");
    assert!(p.run_until(10 * SECOND, |p| p.outcome(a).is_some()));
    let m = producer(&mut p);
    assert_eq!(m.record_error_total, 1.0);
    assert_eq!(m.possibly_written_failure_total, 1.0);
    assert!(m.request_timeout_total >= 1.0);
}

/// `request-latency-*` is the time from the request's hand-out to its answer, from the
/// session's time inputs; the node's own latency is the same.
#[test]
fn request_latency_comes_from_the_time_inputs() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    // The first record opens the connection; the second goes on it, ready.
    assert!(p.send_settled("t", 0, "a").is_ok());
    p.hook(|inc, _| {
        (inc.api == ApiKey::Produce).then_some(Verdict::Delay(Duration::from_millis(500)))
    });
    assert!(p.send_settled("t", 0, "b").is_ok());
    let now = p.now;
    let snapshot = p.session.metrics(now);
    // 1 ms each way, plus the broker's 500 ms for the second.
    assert_eq!(snapshot.producer.request_latency_max, 502.0);
    assert_eq!(snapshot.producer.request_latency_avg, 252.0);
    let node: &NodeMetrics = &snapshot.nodes[&0];
    assert_eq!(node.request_latency_max, 502.0);
    assert!(
        node.request_total >= 3.0,
        "ApiVersions, Metadata, InitProducerId, Produce"
    );
}

/// Rates divide the windowed total by Kafka's `Rate.windowSize`: at least
/// `metrics.num.samples - 1` full windows; samples older than every window are
/// forgotten while the `-total`s keep counting.
#[test]
fn rates_cover_kafkas_windows_on_virtual_time() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    let start = p.now;
    let mut first_done = None;
    for i in 0..10 {
        p.send("t", 0, &format!("r{i}"));
        p.settle(10 * SECOND);
        first_done.get_or_insert(p.now);
    }
    let first_done = first_done.unwrap();
    let m = producer(&mut p);
    assert_eq!(m.record_send_total, 10.0);
    // The first drain began the oldest sample, somewhere in [start, first_done]; with
    // less than one full 30 s window elapsed, Rate.windowSize adds one.
    let bounds = |p: &Pair| {
        let secs = |t: Timestamp| p.now.saturating_duration_since(t).as_secs_f64();
        (
            10.0 / (30.0 + secs(start)),
            10.0 / (30.0 + secs(first_done)),
        )
    };
    let (low, high) = bounds(&p);
    assert!(
        m.record_send_rate >= low - 1e-9 && m.record_send_rate <= high + 1e-9,
        "{low} <= {} <= {high}",
        m.record_send_rate
    );
    p.run_until(15 * SECOND, |_| false);
    let m = producer(&mut p);
    let (low, high) = bounds(&p);
    assert!(
        m.record_send_rate >= low - 1e-9 && m.record_send_rate <= high + 1e-9,
        "{low} <= {} <= {high}",
        m.record_send_rate
    );
    assert!((m.record_send_rate - 10.0 / 45.0).abs() < 0.001);
    p.run_until(60 * SECOND, |_| false);
    let m = producer(&mut p);
    assert_eq!(m.record_send_rate, 0.0, "every sample expired");
    assert_eq!(m.record_send_total, 10.0);
    assert!(m.record_queue_time_avg.is_nan(), "no batch in the windows");
}

/// A smaller window from `metrics.sample.window.ms` forgets sooner.
#[test]
fn metrics_sample_window_ms_sets_the_window() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("metrics.sample.window.ms", "1000"),
            ("metrics.num.samples", "2"),
        ],
    );
    p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let m = producer(&mut p);
    assert!(
        m.record_send_rate > 0.98 && m.record_send_rate <= 1.0,
        "1 record over one 1 s window (and the few ms since): {}",
        m.record_send_rate
    );
    p.run_until(3 * SECOND, |_| false);
    assert_eq!(producer(&mut p).record_send_rate, 0.0);
}

/// Bytes, requests, responses and connections are counted as Kafka's `Selector` counts
/// them: every request written and every response read, globally and per node; a
/// connection established counts in `connection-creation-total`, one reset in
/// `connection-close-total`.
#[test]
fn network_metrics_count_every_request_response_and_connection() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    assert!(p.send_settled("t", 0, "a").is_ok());
    let now = p.now;
    let s = p.session.metrics(now);
    // Nothing closed yet: a rate of 0, never -0 (an empty f64 sum is -0.0).
    assert!(s.producer.connection_close_rate.is_sign_positive());
    assert!(s.to_string().contains("connection-close-rate 0\n"), "{s}");
    let seen = p.cluster.seen.len() as f64;
    assert_eq!(
        s.producer.request_total, seen,
        "every request the broker saw"
    );
    assert_eq!(s.producer.response_total, seen, "every one answered");
    assert_eq!(s.producer.requests_in_flight, 0.0);
    let opened = p.connects.len() as f64;
    assert!(opened >= 1.0);
    assert_eq!(
        s.producer.connection_creation_total, opened,
        "every connect succeeded"
    );
    assert_eq!(
        s.producer.connection_count,
        p.session.connection_count() as f64
    );
    let nodes_out: f64 = s.nodes.values().map(|n| n.outgoing_byte_total).sum();
    let nodes_in: f64 = s.nodes.values().map(|n| n.incoming_byte_total).sum();
    assert_eq!(s.producer.outgoing_byte_total, nodes_out);
    assert_eq!(s.producer.incoming_byte_total, nodes_in);
    assert!(s.producer.outgoing_byte_total > 0.0 && s.producer.incoming_byte_total > 0.0);
    assert!(s.producer.metadata_age < 1.0);
    let conn = p.links()[0].0;
    p.reset(conn);
    p.pump();
    let b = p.send("t", 0, "b");
    p.settle(10 * SECOND);
    assert!(p.outcome(b).is_some_and(Result::is_ok));
    let m = producer(&mut p);
    let closed = (p.closes.len() + p.resets.len()) as f64;
    assert!(closed >= 1.0);
    assert_eq!(m.connection_close_total, closed);
    assert_eq!(m.connection_creation_total, p.connects.len() as f64);
    p.run_until(5 * SECOND, |_| false);
    assert!(
        producer(&mut p).metadata_age >= 5.0,
        "age counts from the last answer"
    );
}

/// `buffer-total-bytes` is `buffer.memory`; `buffer-available-bytes` what records
/// without an outcome leave of it; a send waiting for room adds its wait to
/// `bufferpool-wait-time-ns-total`, and one refused after `max.block.ms` counts in
/// `buffer-exhausted-total`.
#[test]
fn buffer_metrics_follow_buffer_memory_and_blocked_sends() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("buffer.memory", "1024"),
            ("batch.size", "1024"),
            ("max.block.ms", "100"),
        ],
    );
    // The broker never answers: records keep their buffer.memory.
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    // The topic's metadata first, so the sends below wait for buffer.memory only.
    let known = p.partition_count("t");
    assert!(p.run_until(SECOND, |p| p.op(known).is_some()));
    let value = "x".repeat(600);
    p.send("t", 0, &value);
    p.pump();
    let m = producer(&mut p);
    assert_eq!(m.buffer_total_bytes, 1024.0);
    assert!(
        m.buffer_available_bytes < 1024.0 - 600.0,
        "{}",
        m.buffer_available_bytes
    );
    let blocked = p.send("t", 0, &value);
    assert!(p.run_until(SECOND, |p| p.outcome(blocked).is_some()));
    let m = producer(&mut p);
    assert_eq!(m.buffer_exhausted_total, 1.0);
    assert_eq!(
        m.bufferpool_wait_time_ns_total, 100_000_000.0,
        "max.block.ms"
    );
}

/// The session counts the sends waiting for `buffer.memory` after every input (for
/// `bufferpool-wait-time-ns-total`) from a count the backlog keeps as it changes, not by
/// walking it: a driver without backpressure of its own (the mio example) can queue
/// hundreds of thousands of sends there, and a walk per send made a burst quadratic (the
/// mio loop spent 22.9 s taking 89,583 sends in `real_proxy_drops`). The count is checked
/// against a walk by `assert_invariants`; here, behind 100,000 waiting sends, each one's
/// wait is still counted. (The cost itself is a matter for a benchmark, not a timed test.)
#[test]
fn each_send_behind_a_long_backlog_counts_its_wait() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[
            ("buffer.memory", "1024"),
            ("batch.size", "1024"),
            ("max.block.ms", "60000"),
        ],
    );
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then_some(Verdict::Ignore));
    let known = p.partition_count("t");
    assert!(p.run_until(SECOND, |p| p.op(known).is_some()));
    p.send("t", 0, &"x".repeat(600));
    p.pump();
    let now = p.now;
    let mut last = None;
    for _ in 0..100_000 {
        let record = ProducerRecord::new("t", 0, Bytes::from_static(b"v"));
        last = Some(p.session.send(record, now));
    }
    p.session.assert_invariants();
    // The first few small sends fit in what the first record left of buffer.memory.
    let first_blocked = p
        .session
        .oldest_blocked_send()
        .expect("the sends wait for buffer.memory");
    let blocked = last.expect("sent").0 - first_blocked.0 + 1;
    assert!(blocked > 99_000, "{blocked} sends wait");
    p.run_for(Duration::from_millis(10));
    let m = producer(&mut p);
    assert_eq!(
        m.bufferpool_wait_time_ns_total,
        blocked as f64 * 10_000_000.0,
        "each blocked send waited 10 ms"
    );
}

/// The transaction timers (`KafkaProducerMetrics`) sum the time from each call to its
/// completion, in ns, from the time inputs.
#[test]
fn transaction_timers_sum_each_call_to_its_completion() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("transactional.id", "tx")],
    );
    let called = p.now;
    let init = p.session.init_transactions(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(init).is_some()));
    let (done, _) = p.op(init).unwrap();
    let init_ns = done.saturating_duration_since(called).as_nanos() as f64;
    assert!(init_ns > 0.0);
    let m = producer(&mut p);
    assert_eq!(m.txn_init_time_ns_total, init_ns);
    let begin = p.session.begin_transaction(p.now);
    p.pump();
    p.send("t", 0, "a");
    let called = p.now;
    let commit = p.session.commit_transaction(p.now);
    assert!(p.run_until(10 * SECOND, |p| p.op(commit).is_some()));
    assert!(matches!(
        p.op(commit),
        Some((_, Completion::Transaction { result: Ok(()), .. }))
    ));
    let (done, _) = p.op(commit).unwrap();
    let m = producer(&mut p);
    assert_eq!(
        m.txn_commit_time_ns_total,
        done.saturating_duration_since(called).as_nanos() as f64
    );
    assert!(p.op(begin).is_some());
    assert_eq!(m.txn_begin_time_ns_total, 0.0, "begin completes at once");
    assert_eq!(m.txn_abort_time_ns_total, 0.0);
    assert_eq!(m.txn_init_time_ns_total, init_ns);
}

/// The flat list carries Kafka's groups and tags, and every name of every group once.
#[test]
fn the_flat_list_has_kafkas_groups_names_and_tags() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    p.send("t", 0, "a");
    p.settle(10 * SECOND);
    let now = p.now;
    let s = p.session.metrics(now);
    assert_eq!(s.client_id, "harness");
    let all = s.metrics();
    let producer_names: Vec<&str> = all
        .iter()
        .filter(|m| m.group == "producer-metrics")
        .map(|m| m.name)
        .collect();
    assert_eq!(producer_names, ProducerMetrics::NAMES);
    assert!(all
        .iter()
        .any(|m| m.group == "producer-topic-metrics" && m.tags == [("topic", "t".to_owned())]));
    assert!(all.iter().any(
        |m| m.group == "producer-node-metrics" && m.tags == [("node-id", "node-0".to_owned())]
    ));
    let text = s.to_string();
    assert!(
        text.contains("producer-metrics:record-send-total 1\n"),
        "{text}"
    );
}

/// `compression-rate-avg` and the topic's `compression-rate` are Kafka's
/// `ProducerBatch.compressionRatio` (`MemoryRecordsBuilder`'s written records section
/// over the uncompressed one): well below 1 for a compressible gzip batch, not the
/// 1.0 of an uncompressed one.
#[test]
fn compression_rate_is_the_compressed_over_the_uncompressed_records_section() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("compression.type", "gzip")],
    );
    // The model broker does not decompress: every Produce is answered without error
    // from the request alone.
    p.hook(|inc, _| (inc.api == ApiKey::Produce).then(|| produce_answer(inc, 0, 0)));
    let value = "x".repeat(10_000);
    let id = p.send("t", 0, &value);
    p.settle(10 * SECOND);
    assert!(
        p.outcome(id).is_some_and(Result::is_ok),
        "{:?}",
        p.outcome(id)
    );
    let m = producer(&mut p);
    assert!(
        m.compression_rate_avg > 0.0 && m.compression_rate_avg < 0.1,
        "10 000 equal bytes gzip to a few dozen: {}",
        m.compression_rate_avg
    );
    let t = topic(&mut p, "t");
    assert_eq!(t.compression_rate, m.compression_rate_avg);
    assert!(
        m.batch_size_max < 1_000.0,
        "batch-size is the compressed size on the wire: {}",
        m.batch_size_max
    );
}

/// A batch split after MESSAGE_TOO_LARGE counts in `batch-split-rate` and
/// `batch-split-total` (Kafka's `Sender.completeBatch` records `batch-split-rate` when
/// it splits), and its records are sent again without counting as retries or errors.
#[test]
fn a_split_after_message_too_large_counts_in_batch_split_rate() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[("linger.ms", "50")]);
    // MESSAGE_TOO_LARGE (10), once: the two-record batch splits into two.
    first_produce_fails(&mut p, 10, 0);
    let a = p.send("t", 0, "a");
    let b = p.send("t", 0, "b");
    p.settle(10 * SECOND);
    assert_eq!(p.acked(a).offset, Some(0));
    assert_eq!(p.acked(b).offset, Some(1));
    let m = producer(&mut p);
    assert_eq!(m.batch_split_total, 1.0);
    assert!(m.batch_split_rate > 0.0);
    assert_eq!(m.record_error_total, 0.0);
    assert_eq!(m.record_send_total, 4.0, "two records, each sent twice");
}

/// Kafka's `produce-throttle-time` sensor is handed to the producer's `NetworkClient`
/// (`KafkaProducer` passes `Sender.throttleTimeSensor` to it), whose
/// `handleCompletedReceives` records `response.throttleTimeMs()` of EVERY response it
/// reads, not only of Produce answers: ApiVersions, Metadata and InitProducerId answers
/// (0 ms here) count in the average, and a throttled Metadata answer sets the maximum.
#[test]
fn produce_throttle_time_records_the_throttle_of_every_response() {
    let mut p = Pair::new(Cluster::new(1).with_topic("t", 1), &[]);
    // One throttled Produce answer among the ApiVersions, Metadata, InitProducerId and
    // Produce answers of a first record.
    first_produce_fails(&mut p, 0, 400);
    let id = p.send("t", 0, "a");
    p.settle(10 * SECOND);
    assert!(
        p.outcome(id).is_some_and(Result::is_ok),
        "{:?}",
        p.outcome(id)
    );
    let m = producer(&mut p);
    assert!(m.response_total >= 4.0, "{}", m.response_total);
    assert_eq!(m.produce_throttle_time_max, 400.0);
    assert_eq!(
        m.produce_throttle_time_avg,
        400.0 / m.response_total,
        "every response counts, at 0 ms unless throttled"
    );
}

/// Kafka's `bufferpool-wait-time-ns-total` is the time `BufferPool.allocate` blocked for
/// memory; a send waiting for its topic's metadata waits in
/// `KafkaProducer.waitOnMetadata` instead, which counts in
/// `metadata-wait-time-ns-total`. A send to a topic no broker knows, failed after
/// `max.block.ms`, adds its whole wait to the latter and nothing to the former.
#[test]
fn a_send_waiting_for_metadata_counts_in_metadata_wait_not_in_bufferpool_wait() {
    let mut p = Pair::new(
        Cluster::new(1).with_topic("t", 1),
        &[("max.block.ms", "500")],
    );
    // No partition of its own: the partitioner waits for the topic's metadata.
    let id = p.send_record(kacrab_driver::ProducerRecord::unkeyed("missing", "a"));
    p.settle(10 * SECOND);
    assert!(
        p.outcome(id).is_some_and(Result::is_err),
        "{:?}",
        p.outcome(id)
    );
    let m = producer(&mut p);
    assert_eq!(
        m.bufferpool_wait_time_ns_total, 0.0,
        "no memory was waited for"
    );
    assert_eq!(m.metadata_wait_time_ns_total, 500_000_000.0, "max.block.ms");
    assert_eq!(m.buffer_exhausted_total, 0.0);
}
