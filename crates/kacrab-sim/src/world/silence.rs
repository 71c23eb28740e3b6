//! Silent connections ([`FaultKind::SilentConnection`]): a connection that stops
//! carrying anything, either way, without closing, for
//! [`SimConfig::silence_hold`](crate::SimConfig); the next connections to the same
//! broker may go silent one after another (back-to-back silences), as behind a lying
//! proxy. Drawn per produce request written, so that a silence always holds batches
//! (a handshake the session's own timeouts guard is another fault's business). The
//! [`SilenceWatch`](crate::silence_watch) measures how long each one holds the
//! producer.

use kacrab_idempotence::{NodeId, RequestId, Timestamp};

use super::World;
use crate::failure_bound::FaultScope;
use crate::faults::FaultKind;
use crate::observers::Observers;
use crate::rng::Rng;
use crate::silence_watch::BatchKey;

/// The silences in progress, per broker.
#[derive(Clone, Debug)]
pub(super) struct Silences {
    /// Its own stream, so that runs without silences draw what they drew before.
    rng: Rng,
    /// Per broker (slot `node - 1`): the generation of the connection last silenced.
    silenced: Vec<Option<u64>>,
    /// Per broker: how many more of its next connections go silent (back to back).
    run_left: Vec<u32>,
}

impl Silences {
    pub(super) fn new(seed: u64, brokers: u32) -> Self {
        Self {
            rng: Rng::stream(seed, 0x5113),
            silenced: vec![None; brokers as usize],
            run_left: vec![0; brokers as usize],
        }
    }
}

fn slot(node: NodeId) -> usize {
    usize::try_from(node.0 - 1).expect("node ids start at 1")
}

impl World {
    /// The client writes produce request `id` on the connection of `generation` to
    /// `node` (already open): draws whether the connection goes silent first, then
    /// tells the watch where the request's batches went.
    pub(super) fn silence_on_write(
        &mut self,
        obs: &mut Observers,
        node: NodeId,
        generation: u64,
        id: RequestId,
    ) {
        let s = slot(node);
        let silent = self.silences.silenced[s] == Some(generation);
        let start = !silent
            && self.rates.silent_connection > 0.0
            && if self.silences.run_left[s] > 0 {
                self.silences.run_left[s] -= 1;
                true
            } else if self.silences.rng.chance(self.rates.silent_connection) {
                let max = u64::from(self.config.silence_run_max.max(1));
                self.silences.run_left[s] = self.silences.rng.below(max) as u32;
                true
            } else {
                false
            };
        if start {
            let until = self.now + self.config.silence_hold;
            self.net.silence(node, until);
            self.silences.silenced[s] = Some(generation);
            self.faults.add(FaultKind::SilentConnection);
            self.fault_window(obs, FaultScope::Everywhere, self.config.silence_hold);
            let left = self.silences.run_left[s];
            obs.trace(self.now, || {
                format!("FAULT connection to node {node} goes silent until {until:?} ({left} more after it)")
            });
            let waited = self.net.unanswered_produce(node);
            let batches = wire_batches(obs, &waited);
            obs.silences_mut()
                .silenced(node, generation, self.now, &batches);
        }
        let batches = wire_batches(obs, &[id]);
        obs.silences_mut()
            .written(node, generation, self.now, &batches);
    }
}

/// The batches of these requests as the checker saw them go on the wire, each with
/// the time its request was written.
fn wire_batches(obs: &Observers, ids: &[RequestId]) -> Vec<(Timestamp, BatchKey)> {
    if ids.is_empty() {
        return Vec::new();
    }
    let mut left = ids.len();
    let mut out = Vec::new();
    let mut last = None;
    for w in obs.checker().wire_log().iter().rev() {
        if ids.contains(&w.request) {
            out.push((w.at, (w.partition, w.first_index)));
            if last != Some(w.request) {
                last = Some(w.request);
                left -= 1;
            }
        } else if left == 0 {
            break;
        }
    }
    out
}
