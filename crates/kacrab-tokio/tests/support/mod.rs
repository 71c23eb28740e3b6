//! The Tokio producer behind the testkit's [`TestProducer`] trait.
#![allow(dead_code)]

use bytes::Bytes;
use kacrab_testkit::{Delivery, DeliveryFailure, DeliveryReport, TestProducer, TxnCall};
use kacrab_tokio::{Producer, ProducerRecord, TxnError};

/// The producer with its own runtime: the scenarios run on a plain thread.
pub struct TokioTestProducer {
    runtime: Option<tokio::runtime::Runtime>,
    producer: Producer,
}

impl TestProducer for TokioTestProducer {
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery {
        let record = ProducerRecord::new(topic, partition, value).with_key(key);
        let handle = self.runtime.as_ref().expect("runtime").handle().clone();
        // The first stage (room in `buffer.memory`) blocks the scenario thread, as the
        // blocking producer's send does; the outcome is waited for when asked.
        let queued = handle.block_on(self.producer.send(record));
        Delivery(Box::new(move || {
            let delivery = queued.map_err(|e| DeliveryFailure::new(&e, e.possibly_written()))?;
            handle
                .block_on(delivery)
                .map(|m| DeliveryReport {
                    partition: m.partition,
                    offset: m.offset,
                })
                .map_err(|e| DeliveryFailure::new(&e, e.possibly_written()))
        }))
    }

    fn flush(&self) -> Result<(), String> {
        self.runtime
            .as_ref()
            .expect("runtime")
            .block_on(self.producer.flush());
        Ok(())
    }

    fn transaction(&self, call: TxnCall) -> Result<(), TxnError> {
        let p = &self.producer;
        let block_on = |op| self.runtime.as_ref().expect("runtime").block_on(op);
        match call {
            TxnCall::Init => block_on(Box::pin(p.init_transactions()) as TxnFuture),
            TxnCall::Begin => block_on(Box::pin(p.begin_transaction())),
            TxnCall::SendOffsets(offsets, group) => {
                block_on(Box::pin(p.send_offsets_to_transaction(offsets, group)))
            }
            TxnCall::Commit => block_on(Box::pin(p.commit_transaction())),
            TxnCall::Abort => block_on(Box::pin(p.abort_transaction())),
            // `TxnCall` may grow (it is `#[non_exhaustive]`); this adapter knows these.
            other => panic!("a transactional call this adapter does not know: {other:?}"),
        }
    }

    fn close(mut self: Box<Self>) -> Result<(), String> {
        let runtime = self.runtime.take().expect("runtime");
        runtime.block_on(self.producer.close());
        if !self.producer.is_closed() {
            return Err("the producer's driver task still runs after close".into());
        }
        runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        Ok(())
    }
}

/// A transactional call's future, boxed so that one `block_on` takes every kind.
type TxnFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), TxnError>>>>;

/// The testkit's factory for the Tokio producer.
pub fn factory(props: &[(&str, &str)]) -> Result<Box<dyn TestProducer>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("kacrab-tokio-test")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let producer = {
        let _enter = runtime.enter();
        Producer::from_properties(props).map_err(|e| e.to_string())?
    };
    Ok(Box::new(TokioTestProducer {
        runtime: Some(runtime),
        producer,
    }))
}
