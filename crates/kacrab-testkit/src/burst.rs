//! Drives one producer through a burst of records on a driver thread, with a watchdog.
//!
//! The producer is moved to a driver thread that sends record `i` (see
//! [`crate::checker`] for the format) to partition `i mod P` in chunks, calls the
//! scenario's hook between chunks (to inject faults mid-burst), flushes, waits for every
//! delivery and closes. The calling thread waits with a deadline: a producer that hangs
//! in `flush`, in a delivery wait or in `close` fails the scenario with a message saying
//! where, instead of hanging the test (the stuck thread is left behind).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::checker::{record_key, record_partition, record_value, SendResult};
use crate::TestProducer;

/// A burst of records.
#[derive(Clone, Debug)]
pub struct Burst {
    /// Topic to send to.
    pub topic: String,
    /// Partitions (record `i` goes to `i mod partitions`).
    pub partitions: i32,
    /// Records to send (at most: a hook may stop the burst early).
    pub records: u64,
    /// Value size in bytes.
    pub value_size: usize,
    /// Records sent between hook calls.
    pub chunk: u64,
    /// Pause after each chunk, so that the burst spans time and faults land mid-burst.
    pub pause: Duration,
    /// How long flush + delivery waits + close may take before the scenario fails.
    pub deadline: Duration,
}

/// What a hook tells the driver after a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep sending.
    Continue,
    /// Stop sending now (the records sent so far are flushed and checked).
    Stop,
}

/// What happened to a burst.
#[derive(Debug)]
pub struct BurstResult {
    /// One result per record sent, by record index.
    pub outcomes: Vec<SendResult>,
    /// Time spent sending (hooks and pauses included).
    pub send_time: Duration,
    /// Time `flush` took.
    pub flush_time: Duration,
    /// Send start to close end.
    pub total: Duration,
    /// Problems that are not exactly-once violations: flush or close errors, deliveries
    /// that were still unresolved when flush returned, hook errors.
    pub problems: Vec<String>,
}

const SENDING: u8 = 0;
const FLUSHING: u8 = 1;
const WAITING: u8 = 2;
const CLOSING: u8 = 3;
const DONE: u8 = 4;

#[derive(Default)]
struct Progress {
    phase: AtomicU8,
    sent: AtomicU64,
    outcomes: Mutex<Vec<SendResult>>,
}

/// The default deadline, overridable with `KACRAB_TESTKIT_DEADLINE_S`.
pub fn default_deadline() -> Duration {
    let s = std::env::var("KACRAB_TESTKIT_DEADLINE_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    Duration::from_secs(s)
}

/// Runs `burst` through `producer` on a driver thread. `hook(k, sent)` runs on that
/// thread after chunk `k` (counting from 1) with the number of records sent so far.
pub fn run(
    producer: Box<dyn TestProducer>,
    burst: &Burst,
    mut hook: impl FnMut(u64, u64) -> Result<Step, String> + Send + 'static,
) -> Result<BurstResult, String> {
    let progress = Arc::new(Progress::default());
    let (tx, rx) = mpsc::channel();
    let b = burst.clone();
    let p = Arc::clone(&progress);
    std::thread::Builder::new()
        .name("testkit-driver".into())
        .spawn(move || {
            let r = drive(producer, &b, &mut hook, &p);
            p.phase.store(DONE, Ordering::SeqCst);
            let _ = tx.send(r);
        })
        .map_err(|e| format!("spawn driver: {e}"))?;

    // Sending has no deadline of its own (it is paced by the burst), only the phases after.
    let mut deadline: Option<Instant> = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => return Ok(r),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("the driver thread panicked (see the test output above)".into())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let phase = progress.phase.load(Ordering::SeqCst);
        if phase == SENDING {
            continue;
        }
        let d = *deadline.get_or_insert_with(|| Instant::now() + burst.deadline);
        if Instant::now() < d {
            continue;
        }
        let sent = progress.sent.load(Ordering::SeqCst);
        let outcomes = progress.outcomes.lock().unwrap().clone();
        let where_ = match phase {
            FLUSHING => "flush() did not return".to_string(),
            WAITING => format!(
                "flush() returned, but the delivery of record {} did not resolve",
                outcomes.len()
            ),
            CLOSING => "close() did not return".to_string(),
            _ => "the driver did not finish".to_string(),
        };
        return Err(format!(
            "stuck: {where_} within {:?} ({sent} records sent, {} deliveries resolved)",
            burst.deadline,
            outcomes.len()
        ));
    }
}

fn drive(
    producer: Box<dyn TestProducer>,
    b: &Burst,
    hook: &mut impl FnMut(u64, u64) -> Result<Step, String>,
    progress: &Progress,
) -> BurstResult {
    let start = Instant::now();
    let mut problems = Vec::new();
    let mut deliveries = Vec::with_capacity(b.records as usize);
    let chunk = b.chunk.max(1);
    let mut k = 0;
    let mut i = 0;
    while i < b.records {
        let end = (i + chunk).min(b.records);
        while i < end {
            let p = record_partition(i, b.partitions);
            deliveries.push(producer.send(
                &b.topic,
                p,
                record_key(i, b.partitions),
                record_value(i, b.partitions, b.value_size),
            ));
            i += 1;
        }
        progress.sent.store(i, Ordering::SeqCst);
        k += 1;
        match hook(k, i) {
            Ok(Step::Continue) => {}
            Ok(Step::Stop) => break,
            Err(e) => {
                problems.push(format!("fault hook after chunk {k}: {e}"));
                break;
            }
        }
        if !b.pause.is_zero() && i < b.records {
            std::thread::sleep(b.pause);
        }
    }
    let send_time = start.elapsed();

    progress.phase.store(FLUSHING, Ordering::SeqCst);
    let t = Instant::now();
    if let Err(e) = producer.flush() {
        problems.push(format!("flush() failed: {e}"));
    }
    let flush_time = t.elapsed();

    progress.phase.store(WAITING, Ordering::SeqCst);
    let t = Instant::now();
    let mut late = 0u64;
    for d in deliveries {
        let w = Instant::now();
        let outcome = d.wait();
        if w.elapsed() > Duration::from_secs(2) {
            late += 1;
        }
        progress.outcomes.lock().unwrap().push(outcome);
    }
    if late > 0 {
        problems.push(format!(
            "{late} deliveries took over 2 s to resolve after flush() returned ({:?} in all): \
             flush must wait for every outcome",
            t.elapsed()
        ));
    }

    progress.phase.store(CLOSING, Ordering::SeqCst);
    if let Err(e) = producer.close() {
        problems.push(format!("close() failed: {e}"));
    }
    let outcomes = std::mem::take(&mut *progress.outcomes.lock().unwrap());
    BurstResult {
        outcomes,
        send_time,
        flush_time,
        total: start.elapsed(),
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Delivery, DeliveryReport};
    use bytes::Bytes;

    /// Acks everything at once; or, if `hang`, never resolves a delivery.
    struct Fake {
        hang: bool,
    }

    impl TestProducer for Fake {
        fn send(&self, _: &str, partition: i32, _: Bytes, _: Bytes) -> Delivery {
            if self.hang {
                return Delivery(Box::new(|| loop {
                    std::thread::park();
                }));
            }
            Delivery(Box::new(move || {
                Ok(DeliveryReport {
                    partition,
                    offset: None,
                })
            }))
        }
        fn flush(&self) -> Result<(), String> {
            Ok(())
        }
        fn close(self: Box<Self>) -> Result<(), String> {
            Err("closing failed".into())
        }
    }

    fn spec(records: u64) -> Burst {
        Burst {
            topic: "t".into(),
            partitions: 3,
            records,
            value_size: 10,
            chunk: 10,
            pause: Duration::ZERO,
            deadline: Duration::from_millis(300),
        }
    }

    #[test]
    fn collects_outcomes_hooks_and_problems() {
        let mut chunks = Vec::new();
        let (tx, rx) = mpsc::channel();
        let r = run(Box::new(Fake { hang: false }), &spec(95), move |k, sent| {
            tx.send((k, sent)).unwrap();
            Ok(if sent >= 50 {
                Step::Stop
            } else {
                Step::Continue
            })
        })
        .unwrap();
        chunks.extend(rx.try_iter());
        assert_eq!(chunks, vec![(1, 10), (2, 20), (3, 30), (4, 40), (5, 50)]);
        assert_eq!(r.outcomes.len(), 50);
        assert_eq!(
            r.outcomes[4],
            Ok(DeliveryReport {
                partition: 1,
                offset: None
            })
        );
        assert_eq!(
            r.problems,
            vec!["close() failed: closing failed".to_string()]
        );
    }

    #[test]
    fn a_delivery_that_never_resolves_fails_the_burst() {
        let e = run(Box::new(Fake { hang: true }), &spec(5), |_, _| {
            Ok(Step::Continue)
        })
        .unwrap_err();
        assert!(
            e.contains("flush() returned, but the delivery of record 0 did not resolve"),
            "{e}"
        );
    }
}
