//! One adapter test suite, run against every kacrab producer adapter.
//!
//! Each adapter implements [`TestProducer`] for its producer; the scenarios in
//! [`scenarios`] start brokers, inject faults, drive the producer through the trait and
//! check every partition's log: each acknowledged record exactly once, in send order,
//! every send resolved once.
#![warn(missing_docs)]

use bytes::Bytes;

/// The outcome of one send, waited for by the scenario thread.
pub struct Delivery(pub Box<dyn FnOnce() -> Result<DeliveryReport, String> + Send>);

impl Delivery {
    /// Blocks until the record has an outcome.
    pub fn wait(self) -> Result<DeliveryReport, String> {
        (self.0)()
    }
}

/// Where an acknowledged record landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryReport {
    /// The partition.
    pub partition: i32,
    /// The record's offset, when the broker reported one.
    pub offset: Option<i64>,
}

/// What a scenario needs from a producer adapter. Implementations block the calling
/// (scenario) thread where they must; the adapter's own runtime, if any, runs elsewhere.
pub trait TestProducer: Send {
    /// Sends one record to `topic`/`partition`; returns immediately with a waiter.
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery;
    /// Blocks until every record sent so far has an outcome.
    fn flush(&self) -> Result<(), String>;
    /// Flushes and closes the producer.
    fn close(self: Box<Self>) -> Result<(), String>;
}

/// Builds a producer from Kafka property pairs (`bootstrap.servers`, `client.id`,
/// `linger.ms`, `request.timeout.ms`, ...).
pub type Factory<'a> = &'a dyn Fn(&[(&str, &str)]) -> Result<Box<dyn TestProducer>, String>;
