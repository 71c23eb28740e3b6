//! Backpressure and the ends of a producer under paused Tokio time, against the scripted
//! in-memory broker: `send` waits for `buffer.memory` (its first stage), so a sender that
//! never awaits a delivery still cannot make the producer hold more than a bounded
//! amount; `abort` fails what is left at once.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::scripted::{Action, Broker, ADDR, TOPIC};
use kacrab_tokio::{
    DeliveryError, DeliveryFuture, ProduceError, Producer, ProducerRecord, RecordMetadata,
    SendError,
};
use tokio::time::Instant;

/// A producer on `broker`: no linger, 100 ms backoff, 1 s request timeout, unless
/// `extra` says otherwise.
fn producer(broker: &Broker, extra: &[(&str, &str)]) -> Producer {
    let mut b = Producer::builder();
    let base = [
        ("bootstrap.servers", ADDR),
        ("linger.ms", "0"),
        ("retry.backoff.ms", "100"),
        ("retry.backoff.max.ms", "100"),
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "60000"),
    ];
    for (k, v) in base.iter().chain(extra) {
        b.set(k, v).unwrap();
    }
    b.connector(broker.connector());
    b.build().unwrap()
}

fn record(value: &str) -> ProducerRecord {
    ProducerRecord::new(TOPIC, 0, value.to_owned())
}

/// The outcome of `delivery` if it has one already; never waits.
fn outcome_now(delivery: &mut DeliveryFuture) -> Option<Result<RecordMetadata, ProduceError>> {
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(delivery).poll(&mut cx) {
        Poll::Ready(outcome) => Some(outcome),
        Poll::Pending => None,
    }
}

const BUFFER_MEMORY: usize = 16 * 1024;

/// Ten times `buffer.memory` sent by one task that never awaits a delivery, to a broker
/// that loses the first request (so nothing is freed for a request timeout): the records
/// the producer holds without an outcome stay below three buffers' worth (the core's
/// `buffer.memory`, what was posted before the driver saw it full, and the channel's
/// bytes), the metrics' held bytes never pass `buffer.memory`, and every record is
/// delivered once, in send order. Before `send` had its first stage, the loop handed all
/// of them over at once.
#[tokio::test(start_paused = true)]
async fn sending_ten_times_buffer_memory_without_awaiting_keeps_memory_bounded() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::Silence]);
    let p = producer(
        &broker,
        &[
            ("buffer.memory", &BUFFER_MEMORY.to_string()),
            ("batch.size", "4096"),
            ("max.block.ms", "60000"),
        ],
    );
    let value = "x".repeat(500);
    let records = 10 * BUFFER_MEMORY / value.len();
    let bound = 3 * BUFFER_MEMORY / value.len() + 1;
    let mut pending: VecDeque<DeliveryFuture> = VecDeque::new();
    let mut delivered = 0_i64;
    let mut most_outstanding = 0;
    for _ in 0..records {
        pending.push_back(p.send(record(&value)).await.expect("queued"));
        while let Some(outcome) = pending.front_mut().and_then(outcome_now) {
            let meta = outcome.expect("delivered");
            assert_eq!(meta.offset, Some(delivered), "send order is log order");
            delivered += 1;
            pending.pop_front();
        }
        most_outstanding = most_outstanding.max(pending.len());
        assert!(
            pending.len() <= bound,
            "{} records accepted and without an outcome (bound {bound})",
            pending.len()
        );
        let m = p.metrics().await.expect("the driver runs");
        assert_eq!(m.producer.buffer_total_bytes, BUFFER_MEMORY as f64);
        let held = m.producer.buffer_total_bytes - m.producer.buffer_available_bytes;
        assert!(
            (0.0..=BUFFER_MEMORY as f64).contains(&held),
            "{held} bytes held"
        );
    }
    assert!(
        most_outstanding >= BUFFER_MEMORY / (2 * value.len()),
        "the buffer filled up ({most_outstanding} outstanding at most)"
    );
    for delivery in pending {
        let meta = delivery.await.expect("delivered");
        assert_eq!(meta.offset, Some(delivered));
        delivered += 1;
    }
    assert_eq!(delivered as usize, records);
    assert_eq!(broker.state.lock().unwrap().records(0), records as i64);
    let m = p.metrics().await.expect("the driver runs");
    assert_eq!(m.producer.buffer_available_bytes, BUFFER_MEMORY as f64);
}

/// abort(): every record without an outcome fails at once (the one on the wire possibly
/// written, the one never sent not), the producer stops, later sends fail with Closed.
#[tokio::test(start_paused = true)]
async fn abort_fails_every_record_without_an_outcome_at_once() {
    let broker = Broker::new(1);
    broker.script_produce(&[Action::Silence; 64]);
    let p = producer(&broker, &[("max.in.flight.requests.per.connection", "1")]);
    let on_the_wire = p.send(record("a")).await.expect("queued");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let queued = p.send(record("b")).await.expect("queued");
    let start = Instant::now();
    p.abort().await;
    assert!(
        start.elapsed() < Duration::from_millis(2),
        "{:?}",
        start.elapsed()
    );
    assert!(p.is_closed());
    match on_the_wire.await {
        Err(e @ ProduceError::Delivery { .. }) => assert!(e.possibly_written(), "{e}"),
        other => panic!("unexpected {other:?}"),
    }
    match queued.await {
        Err(ProduceError::Delivery {
            error: DeliveryError::Aborted,
            possibly_written,
        }) => assert!(!possibly_written, "never sent"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        p.send(record("c")).await.unwrap_err(),
        ProduceError::Send(SendError::Closed)
    );
    assert_eq!(broker.state.lock().unwrap().records(0), 0);
}
