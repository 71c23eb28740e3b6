//! The blocking producer behind the shared adapter test suite's [`TestProducer`].

use bytes::Bytes;
use kacrab_blocking::{Producer, ProducerRecord, TxnError};
use kacrab_testkit::{Delivery, DeliveryFailure, DeliveryReport, TestProducer, TxnCall};

/// The blocking producer as the testkit drives it.
pub struct Blocking(pub Producer);

impl TestProducer for Blocking {
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery {
        let record = ProducerRecord::new(topic, partition, value).with_key(key);
        match self.0.send(record) {
            Ok(handle) => Delivery(Box::new(move || {
                handle
                    .wait()
                    .map(|md| DeliveryReport {
                        partition: md.partition,
                        offset: md.offset,
                    })
                    .map_err(|e| DeliveryFailure::new(&e, e.possibly_written()))
            })),
            // Refused before it was queued: certainly not written.
            Err(e) => {
                let f = DeliveryFailure::new(e, false);
                Delivery(Box::new(move || Err(f)))
            }
        }
    }

    fn flush(&self) -> Result<(), String> {
        self.0.flush().map_err(|e| e.to_string())
    }

    fn transaction(&self, call: TxnCall) -> Result<(), TxnError> {
        match call {
            TxnCall::Init => self.0.init_transactions(),
            TxnCall::Begin => self.0.begin_transaction(),
            TxnCall::SendOffsets(offsets, group) => {
                self.0.send_offsets_to_transaction(offsets, group)
            }
            TxnCall::Commit => self.0.commit_transaction(),
            TxnCall::Abort => self.0.abort_transaction(),
            // `TxnCall` may grow (it is `#[non_exhaustive]`); this adapter knows these.
            other => panic!("a transactional call this adapter does not know: {other:?}"),
        }
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.0.close().map_err(|e| e.to_string())
    }
}

/// The testkit's [`Factory`](kacrab_testkit::Factory) for the blocking producer.
pub fn factory(properties: &[(&str, &str)]) -> Result<Box<dyn TestProducer>, String> {
    let producer = Producer::from_properties(properties).map_err(|e| e.to_string())?;
    Ok(Box::new(Blocking(producer)))
}
