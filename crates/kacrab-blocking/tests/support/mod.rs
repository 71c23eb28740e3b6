//! The blocking producer behind the shared adapter test suite's [`TestProducer`].

use bytes::Bytes;
use kacrab_blocking::{Producer, ProducerRecord};
use kacrab_testkit::{Delivery, DeliveryFailure, DeliveryReport, TestProducer};

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

    fn init_transactions(&self) -> Result<(), String> {
        self.0
            .init_transactions()
            .map_err(|e| format!("{e} ({e:?})"))
    }

    fn begin_transaction(&self) -> Result<(), String> {
        self.0
            .begin_transaction()
            .map_err(|e| format!("{e} ({e:?})"))
    }

    fn commit_transaction(&self) -> Result<(), String> {
        self.0
            .commit_transaction()
            .map_err(|e| format!("{e} ({e:?})"))
    }

    fn abort_transaction(&self) -> Result<(), String> {
        self.0
            .abort_transaction()
            .map_err(|e| format!("{e} ({e:?})"))
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
