//! Issue 16, item 1: in steady state the core allocates nothing, per request or per batch.
//!
//! A counting `#[global_allocator]` wraps the system allocator; counting is switched on
//! per thread around the measured calls only (the test harness runs tests on several
//! threads). After a warm-up that brings every queue and pool to its steady size, every
//! call of the path is counted: `send` (opens and fills the batch), `poll_request`
//! (stamps, builds the request) until `None`, `recycle` (the driver hands the written
//! request back), `handle_produce_response` (OK) and `poll_event` until `None`, each
//! event handed back with `recycle_event`.
//!
//! Nothing may allocate: the request's `Vec<ProduceBatch>` and the core's `Vec<BatchId>`
//! come from the core's spare lists, the batch buffer is an acknowledged batch's buffer
//! (freed once the driver dropped its copy), and the batch's `Vec<RecordId>` an event's.
//! Before issue 16 the same path made 2 allocations per request in `poll_request` and
//! 3 per batch in `send`.
//!
//! No timing is asserted here; the benchmarks (`cargo bench --bench core`) time it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use bytes::Bytes;
use kacrab_idempotence::{
    Metadata, NodeId, PartitionMetadata, PartitionResponse, ProduceResponse, Producer,
    ProducerConfig, ProducerIdAndEpoch, Record, Request, Timestamp, Topic, TopicPartition,
};

// ------------------------------------------------------------------ counting allocator

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static REALLOCS: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

fn count(counter: &'static std::thread::LocalKey<Cell<usize>>) {
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = counter.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every call is forwarded unchanged to `System`; the counters are thread-locals
// with const initialisers, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(&ALLOCS);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(&ALLOCS);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(&REALLOCS);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and reallocations made on this thread by `f`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    allocs: usize,
    reallocs: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Self) {
        self.allocs += o.allocs;
        self.reallocs += o.reallocs;
    }
}

fn counted<T>(f: impl FnOnce() -> T) -> (T, Tally) {
    ALLOCS.with(|c| c.set(0));
    REALLOCS.with(|c| c.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (
        out,
        Tally {
            allocs: ALLOCS.with(Cell::get),
            reallocs: REALLOCS.with(Cell::get),
        },
    )
}

// ------------------------------------------------------------------ fixture

const PID: ProducerIdAndEpoch = ProducerIdAndEpoch::new(77, 0);
const NOW: Timestamp = Timestamp::ZERO;

fn partitions(n: usize) -> Vec<TopicPartition> {
    let topic = Topic::new("alloc");
    (0..n)
        .map(|i| TopicPartition {
            topic: topic.clone(),
            partition: i as i32,
        })
        .collect()
}

fn record() -> Record {
    Record::from_value(Bytes::from_static(b"steady state"), 1_700_000_000_000)
}

/// Idempotent, linger 0, every partition led by one node, a max.request.size that fits
/// every partition's batch in one request.
fn ready_producer(tps: &[TopicPartition]) -> Producer {
    let mut b = ProducerConfig::builder();
    b.linger(Duration::ZERO)
        .max_request_size(16 << 20)
        .buffer_memory(256 << 20);
    let mut p = Producer::new(b.build().expect("valid config"), NOW);
    let md = Metadata::new(
        tps.iter()
            .map(|tp| PartitionMetadata::new(tp.clone(), Some(NodeId(1)), 0))
            .collect(),
    );
    p.handle_metadata(None, &md, NOW)
        .expect("bootstrap metadata");
    match p.poll_request(NOW) {
        Some(Request::InitProducerId(r)) => p.handle_producer_id(r.id, Ok(PID), NOW).expect("pid"),
        other => panic!("expected InitProducerId, got {other:?}"),
    }
    while p.poll_event().is_some() {}
    p
}

/// What one round (one record to every partition, then everything drained, answered and
/// reported) allocated, by phase.
#[derive(Debug, Default)]
struct Round {
    requests: usize,
    batches: usize,
    send: Tally,
    poll_request: Tally,
    handle_response: Tally,
    poll_event: Tally,
}

impl Round {
    fn total(&self) -> Tally {
        let mut t = self.send;
        t += self.poll_request;
        t += self.handle_response;
        t += self.poll_event;
        t
    }

    fn add(&mut self, r: &Round) {
        self.requests += r.requests;
        self.batches += r.batches;
        self.send += r.send;
        self.poll_request += r.poll_request;
        self.handle_response += r.handle_response;
        self.poll_event += r.poll_event;
    }
}

/// One record to each partition, then the driver's path for every request: written (the
/// request handed back with `recycle`), answered, its events read and handed back with
/// `recycle_event`. Every call counted.
fn round(p: &mut Producer, tps: &[TopicPartition], ok: &ProduceResponse) -> Round {
    let record = record();
    let mut r = Round::default();
    for tp in tps {
        let (sent, t) = counted(|| p.send(tp, &record, NOW));
        r.send += t;
        sent.expect("queued");
    }
    loop {
        let (request, t) = counted(|| p.poll_request(NOW));
        r.poll_request += t;
        let Some(request) = request else { break };
        let Request::Produce(produce) = &request else {
            panic!("unexpected {request:?}")
        };
        let (id, in_request) = (produce.id, produce.batches.len());
        r.requests += 1;
        r.batches += in_request;
        // The driver wrote the request and hands it back before the answer comes.
        let ((), t) = counted(|| p.recycle(request));
        r.poll_request += t;
        let (result, t) = counted(|| p.handle_produce_response(id, ok, NOW));
        r.handle_response += t;
        result.expect("known request");
        let (events, t) = counted(|| {
            let mut events = 0usize;
            while let Some(e) = p.poll_event() {
                assert!(
                    matches!(e, kacrab_idempotence::Event::Delivered { .. }),
                    "{e:?}"
                );
                events += 1;
                p.recycle_event(e);
            }
            events
        });
        r.poll_event += t;
        assert_eq!(events, in_request, "one Delivered event per batch");
    }
    assert!(p.is_idle());
    r
}

fn ok_for(tps: &[TopicPartition]) -> ProduceResponse {
    ProduceResponse::new(
        tps.iter()
            .map(|tp| PartitionResponse::ok(tp.clone(), 0))
            .collect(),
    )
    .with_throttle(Duration::ZERO)
}

// ------------------------------------------------------------------ tests

/// Many partitions led by one node, drained into few requests: 1,000 partitions, one
/// batch each per round, one request per round: 20,000 batches, no allocation.
#[test]
fn many_batches_in_few_requests_allocate_nothing() {
    const PARTITIONS: usize = 1_000;
    const ROUNDS: usize = 20;
    let tps = partitions(PARTITIONS);
    let ok = ok_for(&tps);
    let mut p = ready_producer(&tps);
    for _ in 0..3 {
        round(&mut p, &tps, &ok); // warm-up: queues, slab, events reach their capacity
    }
    let mut total = Round::default();
    for _ in 0..ROUNDS {
        total.add(&round(&mut p, &tps, &ok));
    }
    eprintln!("{PARTITIONS} partitions x {ROUNDS} rounds: {total:#?}");
    assert_eq!(total.batches, PARTITIONS * ROUNDS);
    assert!(
        total.requests * 100 <= total.batches,
        "few requests: {}",
        total.requests
    );
    assert_eq!(
        total.total(),
        Tally::default(),
        "{} batches in {} requests allocated: send {:?}, poll_request {:?}, \
         handle_produce_response {:?}, poll_event {:?}",
        total.batches,
        total.requests,
        total.send,
        total.poll_request,
        total.handle_response,
        total.poll_event,
    );
}

/// One batch per request (one partition, linger 0): 1,000 requests, no allocation.
#[test]
fn single_batch_requests_allocate_nothing() {
    const REQUESTS: usize = 1_000;
    let tps = partitions(1);
    let ok = ok_for(&tps);
    let mut p = ready_producer(&tps);
    for _ in 0..16 {
        round(&mut p, &tps, &ok);
    }
    let mut total = Round::default();
    for _ in 0..REQUESTS {
        let r = round(&mut p, &tps, &ok);
        assert_eq!((r.requests, r.batches), (1, 1));
        total.add(&r);
    }
    eprintln!("{REQUESTS} single-batch requests: {total:#?}");
    assert_eq!(
        total.total(),
        Tally::default(),
        "{REQUESTS} single-batch requests allocated: send {:?}, poll_request {:?}, \
         handle_produce_response {:?}, poll_event {:?}",
        total.send,
        total.poll_request,
        total.handle_response,
        total.poll_event,
    );
}

/// The counter itself works: a `Vec` allocation inside `counted` is seen, and nothing
/// outside it is.
#[test]
fn the_counter_counts() {
    let (v, t) = counted(|| vec![1u8; 10]);
    assert_eq!(
        t,
        Tally {
            allocs: 1,
            reallocs: 0
        }
    );
    let (_, t) = counted(|| drop(v));
    assert_eq!(t, Tally::default());
}
