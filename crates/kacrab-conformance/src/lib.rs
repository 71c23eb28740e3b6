//! Differential conformance between kacrab's core and Java's producer (issue 15).
//!
//! The same trace (configuration, sends, clock steps, scripted broker answers,
//! disconnects, leader moves) runs through Kafka's own `RecordAccumulator`, `Sender` and
//! `TransactionManager` (`conformance/java`, driven by `MockClient` and `MockTime`) and
//! through the core ([`core_side`]). Both write the same lines: every InitProducerId,
//! every Produce request (per partition: producer id, epoch, base sequence, record
//! count), every record's outcome. [`compare`] classifies each difference as one of the
//! core's documented departures from Java (`docs/design.md`) or as unexplained.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api_listing;
pub mod compare;
pub mod core_side;
pub mod generate;
pub mod java;
pub mod shrink;
pub mod trace;
