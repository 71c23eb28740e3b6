//! Issue 2, item 10d: the steady-state stamp-and-ack path allocates nothing per batch.
//!
//! A counting `#[global_allocator]` wraps the system allocator; counting is switched on
//! per thread around the measured calls only (the test harness runs tests on several
//! threads, and `send`, which builds the batch and its record list, is not measured).
//! After a warm-up that brings every queue to its steady capacity, the measured section
//! is the driver's path for each request: `poll_request` (stamps, builds the request)
//! until `None` → `handle_produce_response` (OK) → `poll_event` until `None`.
//!
//! What may allocate: the containers of each request's output, the `Request`'s
//! `Vec<ProduceBatch>` and the core's own `Vec<BatchId>` for the outstanding request.
//! So at most 2 fresh allocations per request, however many batches it carries; the
//! `Vec<BatchId>` may grow while the drain collects batches, which costs O(log batches)
//! reallocations per request, never one per batch. The `Delivered` event moves the
//! batch's `Vec<RecordId>`, allocated by `send`.
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
    poll_request: Tally,
    handle_response: Tally,
    poll_event: Tally,
}

impl Round {
    fn total(&self) -> Tally {
        let mut t = self.poll_request;
        t += self.handle_response;
        t += self.poll_event;
        t
    }
}

/// One record to each partition (not counted), then the counted driver path.
fn round(p: &mut Producer, tps: &[TopicPartition], ok: &ProduceResponse) -> Round {
    let record = record();
    for tp in tps {
        p.send(tp, &record, NOW).expect("queued");
    }
    let mut r = Round::default();
    loop {
        let (request, t) = counted(|| p.poll_request(NOW));
        r.poll_request += t;
        let Some(request) = request else { break };
        let Request::Produce(request) = request else {
            panic!("unexpected {request:?}")
        };
        let in_request = request.batches.len();
        r.requests += 1;
        r.batches += in_request;
        let (result, t) = counted(|| p.handle_produce_response(request.id, ok, NOW));
        r.handle_response += t;
        result.expect("known request");
        drop(request);
        let (events, t) = counted(|| {
            let mut events = 0usize;
            while let Some(e) = p.poll_event() {
                assert!(
                    matches!(e, kacrab_idempotence::Event::Delivered { .. }),
                    "{e:?}"
                );
                events += 1;
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
/// batch each per round, one request per round. If the core allocated once per batch,
/// the count would be at least 20,000; the budget is 2 per request plus a constant.
#[test]
fn many_batches_in_few_requests_allocate_per_request_not_per_batch() {
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
        let r = round(&mut p, &tps, &ok);
        total.requests += r.requests;
        total.batches += r.batches;
        total.poll_request += r.poll_request;
        total.handle_response += r.handle_response;
        total.poll_event += r.poll_event;
    }
    eprintln!("{PARTITIONS} partitions x {ROUNDS} rounds: {total:#?}");
    assert_eq!(total.batches, PARTITIONS * ROUNDS);
    assert!(
        total.requests * 100 <= total.batches,
        "few requests: {}",
        total.requests
    );

    let t = total.total();
    assert!(
        t.allocs <= 2 * total.requests + 4,
        "{} allocations for {} batches in {} requests (budget {}): poll_request {:?}, \
         handle_produce_response {:?}, poll_event {:?}",
        t.allocs,
        total.batches,
        total.requests,
        2 * total.requests + 4,
        total.poll_request,
        total.handle_response,
        total.poll_event,
    );
    // The request's batch-id list may grow by doubling while the drain fills it.
    let per_request_growth = (PARTITIONS as f64).log2().ceil() as usize + 1;
    assert!(
        t.reallocs <= per_request_growth * total.requests + 4,
        "{} reallocations for {} requests of {} batches: poll_request {:?}, \
         handle_produce_response {:?}, poll_event {:?}",
        t.reallocs,
        total.requests,
        PARTITIONS,
        total.poll_request,
        total.handle_response,
        total.poll_event,
    );
    assert_eq!(
        total.handle_response,
        Tally::default(),
        "acks allocate nothing"
    );
    assert_eq!(
        total.poll_event,
        Tally::default(),
        "events allocate nothing"
    );
}

/// One batch per request (one partition, linger 0): every request costs at most the two
/// output containers, and the ack and the event nothing.
#[test]
fn single_batch_requests_allocate_at_most_two_per_request() {
    const REQUESTS: usize = 1_000;
    let tps = partitions(1);
    let ok = ok_for(&tps);
    let mut p = ready_producer(&tps);
    for _ in 0..16 {
        round(&mut p, &tps, &ok);
    }
    let mut worst = Tally::default();
    let mut total = Round::default();
    for _ in 0..REQUESTS {
        let r = round(&mut p, &tps, &ok);
        assert_eq!((r.requests, r.batches), (1, 1));
        let t = r.total();
        worst.allocs = worst.allocs.max(t.allocs);
        worst.reallocs = worst.reallocs.max(t.reallocs);
        total.requests += r.requests;
        total.batches += r.batches;
        total.poll_request += r.poll_request;
        total.handle_response += r.handle_response;
        total.poll_event += r.poll_event;
    }
    eprintln!("{REQUESTS} single-batch requests: worst {worst:?}, {total:#?}");
    assert!(
        worst.allocs + worst.reallocs <= 2,
        "a single-batch request allocated {worst:?} (at most 2): over {REQUESTS} requests \
         poll_request {:?}, handle_produce_response {:?}, poll_event {:?}",
        total.poll_request,
        total.handle_response,
        total.poll_event,
    );
    assert_eq!(
        total.handle_response,
        Tally::default(),
        "acks allocate nothing"
    );
    assert_eq!(
        total.poll_event,
        Tally::default(),
        "events allocate nothing"
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
