//! The driver reports a request written: its `request.timeout.ms` starts (Java's
//! `NetworkClient` times a request from its send, `InFlightRequest.sendTimeMs`), and an
//! `acks=0` Produce request, which gets no answer, delivers its records (Java completes
//! such a send in `NetworkClient.handleCompletedSends`, after the write).

use crate::config::Acks;
use crate::error::InputError;
use crate::producer::Producer;
use crate::requests::OutstandingKind;
use crate::types::{RequestId, Timestamp};

impl Producer {
    /// Tells the producer that the request with id `request` (from
    /// [`Producer::poll_request_unwritten`]) was written to its connection at `now`.
    /// From now on it may time out, and a lost connection fails it as
    /// [`RequestFailure::Disconnected`](crate::RequestFailure::Disconnected). An `acks=0`
    /// Produce request is complete: its records are delivered.
    ///
    /// # Errors
    /// [`InputError::UnknownRequest`] when `request` is not outstanding or was already
    /// reported written; nothing changes.
    pub fn handle_request_written(
        &mut self,
        request: RequestId,
        now: Timestamp,
    ) -> Result<(), InputError> {
        self.observe(now);
        let deadline = self.now + self.config.request_timeout();
        let kind = self
            .requests
            .written(request, deadline)
            .ok_or(InputError::UnknownRequest(request))?;
        let expects_answer =
            !matches!(kind, OutstandingKind::Produce { .. }) || self.config.acks() != Acks::None;
        if expects_answer {
            return Ok(());
        }
        if let Some((_, batches)) = self.requests.take_produce(request) {
            for &id in &batches {
                self.delivered_unacknowledged(id);
            }
            self.recycled.give_batch_list(batches);
        }
        Ok(())
    }
}
