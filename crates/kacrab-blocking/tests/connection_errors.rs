//! Failures that name their cause, through the blocking driver, with no broker: a
//! refused bootstrap address is named with "refused" in the error a send's metadata
//! wait ends with, and a bootstrap list none of whose hosts resolves fails at
//! construction, as Java's producer constructor does.

use kacrab_blocking::{BuildError, ProduceError, Producer, ProducerRecord};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    drop(listener);
    addr
}

/// Every connect to the bootstrap address is refused: the send waits `max.block.ms`
/// for its topic's metadata (Java's `KafkaProducer.waitOnMetadata`) and fails naming
/// the address and the OS's "Connection refused", where it named nothing before.
#[test]
fn a_refused_bootstrap_is_named_in_the_metadata_wait_error() {
    let addr = closed_port();
    let p = Producer::from_properties(&[
        ("bootstrap.servers", addr.as_str()),
        ("max.block.ms", "1000"),
        ("reconnect.backoff.ms", "50"),
        ("reconnect.backoff.max.ms", "100"),
    ])
    .expect("a loopback address resolves");
    let err = p
        .send(ProducerRecord::unkeyed("eco", "x"))
        .expect("queued")
        .wait()
        .expect_err("nothing listens");
    assert!(matches!(err, ProduceError::Topic { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("topic eco: not present in metadata after 1000 ms; "),
        "{text}"
    );
    assert!(text.contains(&format!("{addr}: ")), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
    p.close().expect("close");
}

/// A bootstrap host that does not resolve (`.invalid` never does, RFC 2606) fails the
/// constructor, naming the host: Java's `ClientUtils.parseAndValidateAddresses` ("No
/// resolvable bootstrap urls given in bootstrap.servers").
#[test]
fn an_unresolvable_bootstrap_fails_at_construction() {
    let err = Producer::from_properties(&[("bootstrap.servers", "no-such-host.invalid:9092")])
        .expect_err("no host resolves");
    assert!(
        matches!(err, BuildError::UnresolvableBootstrap(_)),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(
            "No resolvable bootstrap urls given in bootstrap.servers: no-such-host.invalid:9092: "
        ),
        "{text}"
    );
    // One host that resolves is enough: the other is dialled and fails on its own.
    let p = Producer::from_properties(&[(
        "bootstrap.servers",
        "no-such-host.invalid:9092,127.0.0.1:9",
    )])
    .expect("127.0.0.1 resolves");
    p.close().expect("close");
}
