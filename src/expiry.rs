//! Time running out: `delivery.timeout.ms` for batches, `request.timeout.ms` for
//! requests. Both run from `handle_timeout`.

use alloc::vec::Vec;

use crate::complete::Adjust;
use crate::error::DeliveryError;
use crate::io::RequestFailure;
use crate::producer::Producer;
use crate::types::BatchId;

impl Producer {
    /// Expires batches past delivery.timeout.ms: queued ones and ones on the wire (the
    /// request stays outstanding; its late answer only updates sequencing state).
    pub(crate) fn expire_batches(&mut self) {
        let delivery = self.config.delivery_timeout();
        let now = self.now;
        for p in self.acc.ids() {
            let part = &self.acc[p];
            if !part.has_queued() && part.on_wire.is_empty() {
                continue;
            }
            if part
                .open
                .as_ref()
                .is_some_and(|o| o.created + delivery <= now)
            {
                self.close_open(p);
            }
            let part = &self.acc[p];
            let expired: Vec<BatchId> = part
                .queue
                .iter()
                .chain(part.on_wire.iter())
                .copied()
                .filter(|&id| {
                    self.batches
                        .get(id)
                        .is_some_and(|b| !b.done && b.created + delivery <= now)
                })
                .collect();
            for id in expired {
                let part = &mut self.acc[p];
                if let Some(pos) = part.queue.iter().position(|&q| q == id) {
                    part.queue.remove(pos);
                }
                self.stats.expired_batches += 1;
                let tp = self.acc[p].tp.clone();
                let error = DeliveryError::Timeout { partition: tp };
                self.fail_batch(id, error, None, Adjust::Nothing);
            }
        }
    }

    /// Times out written requests past request.timeout.ms (counted from the write). A
    /// produce request's connection must be closed, which fails every request written
    /// on it as possibly written (Java's NetworkClient does the same); one still waiting
    /// to be written fails as never sent when the driver drops the connection.
    pub(crate) fn expire_requests(&mut self) {
        let now = self.now;
        while let Some((id, produce_node)) = self.requests.first_expired(now) {
            self.stats.request_timeouts += 1;
            if let Some(node) = produce_node {
                self.requests.close_connection(node);
                for rid in self.requests.written_produce_on(node) {
                    let _ = self.handle_request_failed(rid, RequestFailure::Disconnected, now);
                }
            } else {
                let _ = self.handle_request_failed(id, RequestFailure::Disconnected, now);
            }
        }
    }
}
