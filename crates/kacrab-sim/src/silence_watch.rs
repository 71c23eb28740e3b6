//! How long the producer stays behind a silent connection
//! ([`FaultKind::SilentConnection`](crate::FaultKind)): for every silence, the time from
//! the oldest request the client still waited on over that connection being written to
//! the last of the batches it carried being written again on another connection (or
//! getting an outcome without that).
//!
//! Java closes a node's connection at its first timed-out request and fails every
//! request on it at once (`NetworkClient.handleTimedOutRequests`), so every batch on a
//! silent connection is resent within `request.timeout.ms` of the oldest request plus
//! the retry and reconnect backoffs; a client that timed the requests out one by one,
//! or kept the connection, would resend them later or never. The watch only measures;
//! the bound is asserted by the tests (`tests/silent_connections.rs`).

use std::collections::BTreeSet;
use std::time::Duration;

use kacrab_idempotence::{NodeId, Timestamp};

/// A batch as the watch knows it: (global partition, index of its first record).
pub(crate) type BatchKey = (u32, u32);

/// One silence and how the producer got out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The broker the silent connection led to.
    pub node: NodeId,
    /// The silent connection's generation.
    pub generation: u64,
    /// When it went silent.
    pub silenced_at: Timestamp,
    /// When the oldest request the client still waited on over it was written (its
    /// `request.timeout.ms` runs from there); `None` while it carried no batch.
    pub oldest_request_at: Option<Timestamp>,
    /// When the last of its batches was written on another connection or got an
    /// outcome; `None` while one is still waiting.
    pub recovered_at: Option<Timestamp>,
    /// Batches it carried (written before or during the silence).
    pub batches: usize,
    /// Of those, resent on another connection.
    pub resent: usize,
    /// Of those, given an outcome before any resend (failed, or settled by a later
    /// batch's ack).
    pub resolved_unsent: usize,
}

impl Recovery {
    /// From the oldest request written to the last batch out of the silence.
    #[must_use]
    pub fn took(&self) -> Option<Duration> {
        let from = self.oldest_request_at?;
        Some(self.recovered_at?.saturating_duration_since(from))
    }
}

/// The silences of a run. See the module documentation.
#[derive(Clone, Debug, Default)]
pub(crate) struct SilenceWatch {
    /// Silences with batches still on the silent connection, and those batches.
    open: Vec<(Recovery, BTreeSet<BatchKey>)>,
    /// Silences every batch got out of, or that carried none.
    done: Vec<Recovery>,
}

impl SilenceWatch {
    /// The connection of `generation` to `node` went silent at `at`, while the client
    /// waited on these batches over it (each with the time its request was written).
    pub(crate) fn silenced(
        &mut self,
        node: NodeId,
        generation: u64,
        at: Timestamp,
        batches: &[(Timestamp, BatchKey)],
    ) {
        let recovery = Recovery {
            node,
            generation,
            silenced_at: at,
            oldest_request_at: None,
            recovered_at: None,
            batches: 0,
            resent: 0,
            resolved_unsent: 0,
        };
        self.open.push((recovery, BTreeSet::new()));
        self.written(node, generation, at, batches);
    }

    /// Batches were written at `at` on the connection of `generation` to `node`: a
    /// silence of that connection holds them; every other silence holding one of them
    /// is left by it.
    pub(crate) fn written(
        &mut self,
        node: NodeId,
        generation: u64,
        at: Timestamp,
        batches: &[(Timestamp, BatchKey)],
    ) {
        let keys: Vec<BatchKey> = batches.iter().map(|&(_, k)| k).collect();
        if self.is_waiting() {
            self.settle(at, &keys, false, Some((node, generation)));
        }
        let Some((r, waiting)) = self
            .open
            .iter_mut()
            .find(|(r, _)| r.node == node && r.generation == generation)
        else {
            return;
        };
        for &(written, key) in batches {
            if waiting.insert(key) {
                r.batches += 1;
            }
            r.oldest_request_at = Some(r.oldest_request_at.map_or(written, |o| o.min(written)));
        }
    }

    /// Whether a silence still has batches on its connection.
    pub(crate) fn is_waiting(&self) -> bool {
        self.open.iter().any(|(_, waiting)| !waiting.is_empty())
    }

    /// The batch starting at record `index` of `partition` got an outcome at `at`.
    pub(crate) fn resolved(&mut self, at: Timestamp, partition: u32, index: u32) {
        self.settle(at, &[(partition, index)], true, None);
    }

    /// Takes `batches` out of every open silence but the one of connection `except`.
    fn settle(
        &mut self,
        at: Timestamp,
        batches: &[BatchKey],
        resolved: bool,
        except: Option<(NodeId, u64)>,
    ) {
        for (r, waiting) in &mut self.open {
            if except == Some((r.node, r.generation)) {
                continue;
            }
            for key in batches {
                if waiting.remove(key) {
                    if resolved {
                        r.resolved_unsent += 1;
                    } else {
                        r.resent += 1;
                    }
                    if waiting.is_empty() {
                        r.recovered_at = Some(at);
                    }
                }
            }
        }
        let (done, open): (Vec<_>, Vec<_>) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(|(r, waiting)| waiting.is_empty() && r.recovered_at.is_some());
        self.open = open;
        self.done.extend(done.into_iter().map(|(r, _)| r));
    }

    /// Every silence so far, finished ones first; one still waiting has no
    /// `recovered_at`. A silence that never carried a batch has neither
    /// `oldest_request_at` nor `recovered_at`.
    pub(crate) fn recoveries(&self) -> Vec<Recovery> {
        self.done
            .iter()
            .cloned()
            .chain(self.open.iter().map(|(r, _)| r.clone()))
            .collect()
    }
}
