//! How many batches one Produce request carries: the drain takes the head batch of each
//! partition the node leads while the request stays within `max.request.size`, and the
//! first batch always goes (Kafka's `RecordAccumulator.drainBatchesForOneNode`).

mod support;

use support::*;

fn packed_request(max_request_size: usize) -> Vec<usize> {
    let mut c = config();
    c.max_request_size(max_request_size);
    let mut h = Harness::new(c.build().unwrap());
    h.warm(0);
    h.warm(1);
    h.warm(2);
    // Three batches queued on three partitions of node 1 before the core drains.
    for p in 0..3 {
        h.p.send(&tp(p), &record("value"), h.now).expect("accepted");
    }
    h.pump().iter().map(|r| wire(r).len()).collect()
}

/// Three small batches fit one request: the sizes add up well below the limit.
#[test]
fn batches_of_one_node_share_a_request_within_max_request_size() {
    assert_eq!(packed_request(1_000), [3]);
}

/// A limit that holds two batches but not three: the third waits for the next request.
#[test]
fn the_batch_that_would_pass_max_request_size_waits() {
    assert_eq!(packed_request(180), [2, 1]);
}
