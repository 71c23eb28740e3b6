//! An answer of the wrong kind for an outstanding transactional request is input the
//! core refuses, naming the request and what the answer was not, and it leaves the
//! request outstanding: the right answer is still accepted afterwards (the core never
//! trusts its driver's pairing of answers to requests).

use std::time::Duration;

use kacrab_idempotence::*;

#[test]
fn a_mismatched_transactional_answer_is_refused_and_the_request_stays_outstanding() {
    let config = ProducerConfig::builder()
        .transactional_id("tx")
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let now = Timestamp::ZERO;
    let mut p = Producer::new(config, now);
    p.handle_transaction_version(2);
    p.init_transactions().unwrap();
    let Some(Request::FindCoordinator(r)) = p.poll_request(now) else {
        panic!("FindCoordinator expected")
    };
    let refused = p
        .handle_producer_id(r.id, Ok(ProducerIdAndEpoch::new(1, 0)), now)
        .unwrap_err();
    assert_eq!(
        refused,
        InputError::Mismatch {
            request: r.id,
            reason: "not an InitProducerId request",
        }
    );
    assert_eq!(
        refused.to_string(),
        format!(
            "response does not match request {}: not an InitProducerId request",
            r.id
        )
    );
    p.handle_find_coordinator(r.id, Ok(NodeId(7)), now).unwrap();
    let Some(Request::InitProducerId(init)) = p.poll_request(now) else {
        panic!("InitProducerId expected once the coordinator is known")
    };
    assert_eq!(init.node, Some(NodeId(7)));
}
