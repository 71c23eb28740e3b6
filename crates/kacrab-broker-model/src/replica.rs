//! One replica's side of replication: a follower copying its leader's log, a replica
//! truncating to a new leader, and a restarted broker rebuilding producer state.
//!
//! Kafka's rules modelled here:
//!
//! * A follower appends what it fetches at the leader's offsets and updates producer
//!   state from it without the client checks (`UnifiedLog.appendAsFollower`,
//!   `ProducerAppendInfo` with `AppendOrigin.REPLICATION`: no sequence check, an old
//!   epoch is only logged). So a follower holds the full dedup window of every batch
//!   it replicated, and becomes a leader with it.
//! * A replica that follows a new leader truncates its log to the point where they
//!   diverge (KIP-101/KIP-279, `UnifiedLog.truncateTo`) and reloads producer state
//!   for the shorter log (`ProducerStateManager.truncateAndReload`: the newest snapshot
//!   below the truncation point, then the batches after it replayed).
//! * A restarted broker loads producer state from its newest snapshot and replays the
//!   log after it (`UnifiedLog.loadProducerState`). A snapshot
//!   (`ProducerStateManager.takeSnapshot`, written at a segment roll and at a clean
//!   shutdown) keeps one batch per producer, the newest, so after it only the batches
//!   replayed behind it widen the dedup window again. A crash is an unclean shutdown:
//!   the newest snapshot is the one of the last segment roll, or of the last rebuild.
//! * Every rebuild (a restart, a truncation) ends with a snapshot at the log end
//!   (`UnifiedLog.rebuildProducerState`), and a truncation first deletes the snapshots
//!   above its point (`ProducerStateManager.truncateAndReload`). So a replica that
//!   truncates again reloads from the newest of its segment rolls and earlier rebuilds
//!   at or below the new point: the batches before that snapshot are reduced to the
//!   newest per producer, and a retry of an older one is OUT_OF_ORDER_SEQUENCE_NUMBER
//!   although it is in the log.

use crate::broker::{BatchMetadata, PartitionState, ProducerStates};
use crate::log::{LogEntry, LoggedBatch};

/// Where one replica's producer-state snapshots are, counted in log entries: one at
/// every segment roll (every `roll_every` entries, if the replica rolls) and one at the
/// end of every rebuild. Snapshots are files of the replica: never replicated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshots {
    roll_every: Option<usize>,
    rebuilt_at: Vec<usize>,
    /// Whether rebuild snapshots are kept (`SimConfig::rebuild_snapshots`).
    keep_rebuilt: bool,
}

impl Default for Snapshots {
    /// A replica that never rolls and keeps its rebuild snapshots, as Kafka does.
    fn default() -> Self {
        Snapshots {
            roll_every: None,
            rebuilt_at: Vec::new(),
            keep_rebuilt: true,
        }
    }
}

impl Snapshots {
    /// A replica whose segments roll every `entries` entries, keeping its rebuild
    /// snapshots if `keep_rebuilt`.
    pub(crate) fn rolling_every(entries: usize, keep_rebuilt: bool) -> Self {
        Snapshots {
            roll_every: Some(entries.max(1)),
            rebuilt_at: Vec::new(),
            keep_rebuilt,
        }
    }

    /// The newest snapshot at or below `len` entries (0: none, replay from the start).
    pub(crate) fn newest_at_or_below(&self, len: usize) -> usize {
        let roll = self.roll_every.map_or(0, |every| len / every * every);
        let rebuilt = self.rebuilt_at.iter().copied().filter(|&s| s <= len).max();
        rebuilt.unwrap_or(0).max(roll)
    }

    /// A rebuild of a log of `len` entries: the snapshots above it are deleted and one
    /// is taken at its end.
    fn rebuilt(&mut self, len: usize) {
        self.rebuilt_at.retain(|&s| s < len);
        if self.keep_rebuilt {
            self.rebuilt_at.push(len);
        }
    }
}

/// A logged batch's max timestamp (CreateTime: the producer's clock), the one its
/// producer's state records.
fn max_timestamp_ms(b: &LoggedBatch) -> u64 {
    crate::batch::decode_header(&b.raw)
        .ok()
        .and_then(|h| u64::try_from(h.max_timestamp).ok())
        .unwrap_or(b.append_time_ms)
}

/// Replays `entries` into `states` as a follower or a log reload does.
fn replay<'a>(states: &mut ProducerStates, entries: impl IntoIterator<Item = &'a LogEntry>) {
    for entry in entries {
        match entry {
            LogEntry::Batch(b) if b.producer_id >= 0 => {
                let e = states.entry_mut(b.producer_id);
                e.add_batch(
                    b.producer_epoch,
                    BatchMetadata {
                        first_seq: b.base_sequence,
                        last_seq: b.last_sequence,
                        first_offset: b.base_offset,
                        last_offset: b.last_offset,
                        // The batch's max timestamp, as the leader recorded it
                        // (`appendDataBatch` gets `batch.maxTimestamp()` for every origin).
                        timestamp_ms: max_timestamp_ms(b),
                    },
                );
                if b.transactional && e.current_txn_first_offset().is_none() {
                    e.set_current_txn_first_offset(Some(b.base_offset));
                }
            }
            LogEntry::Batch(_) => {}
            LogEntry::Marker(m) => {
                states.entry_mut(m.producer_id).apply_marker(
                    m.producer_epoch,
                    m.coordinator_epoch,
                    m.append_time_ms,
                );
            }
        }
    }
}

impl PartitionState {
    /// An empty replica of a cluster: its high watermark is tracked and its segments
    /// roll every `segment_entries` entries, each roll taking a producer-state
    /// snapshot; the snapshots a rebuild takes are kept if `keep_rebuilt`.
    pub fn tracked(segment_entries: usize, keep_rebuilt: bool) -> Self {
        let mut s = PartitionState::new();
        s.log.set_high_watermark(0);
        s.snapshots = Snapshots::rolling_every(segment_entries, keep_rebuilt);
        s
    }

    /// A leader change: this in-sync replica, whose log is a prefix of `old`'s, takes
    /// over from the old leader. It carries on the old leader's journal (the audit
    /// trail of the partition's leader log), recording as truncated the entries the
    /// old leader had beyond this log, and its high watermark. Verification state,
    /// the leader's memory only, is gone on both. Returns the truncated entries.
    pub fn take_over_from(&mut self, old: &mut PartitionState) -> Vec<LogEntry> {
        let old_hw = old.high_watermark();
        let journal = old.log.take_journal();
        let keep = old.log.common_prefix(&self.log);
        debug_assert_eq!(
            keep,
            self.log.entries().len(),
            "an in-sync replica's log is a prefix of its leader's"
        );
        let truncated: Vec<LogEntry> = old.log.entries()[keep..].to_vec();
        self.log.set_journal(journal, truncated.clone());
        self.log.set_high_watermark(old_hw);
        self.verifications.clear();
        old.verifications.clear();
        truncated
    }

    /// A follower fetches from `leader`: first truncates to where the two logs
    /// diverge (KIP-279), then copies every entry it lacks. Returns how many entries
    /// it truncated.
    pub fn fetch_from(
        &mut self,
        leader: &PartitionState,
        now_ms: u64,
        expiration_ms: u64,
    ) -> usize {
        // Every replica truncates to each new leader at its election, so a follower's
        // log is a prefix of its leader's: checking its last entry suffices.
        let own = self.log.entries();
        let theirs = leader.log.entries();
        let keep = match own.last() {
            Some(last) if theirs.get(own.len() - 1) == Some(last) => own.len(),
            None => 0,
            Some(_) => self.log.common_prefix(&leader.log),
        };
        debug_assert_eq!(keep, self.log.common_prefix(&leader.log));
        let truncated = self.truncate_to_entries(keep, now_ms, expiration_ms);
        for entry in &leader.log.entries()[keep..] {
            let txn_first = match entry {
                LogEntry::Marker(m) => self
                    .producers
                    .get(m.producer_id)
                    .and_then(|e| e.current_txn_first_offset()),
                LogEntry::Batch(_) => None,
            };
            self.log.replicate(entry, txn_first);
            replay(&mut self.producers, std::iter::once(entry));
        }
        truncated
    }

    /// Truncates the log to its first `keep` entries and reloads producer state for
    /// the shorter log (replayed from the start, then expired as a reload does).
    /// Returns how many entries were dropped.
    pub fn truncate_to_entries(&mut self, keep: usize, now_ms: u64, expiration_ms: u64) -> usize {
        let removed = self.log.truncate_to_entries(keep).len();
        if removed > 0 {
            let at = self.snapshots.newest_at_or_below(self.log.entries().len());
            self.rebuild_producer_state(at, now_ms, expiration_ms);
        }
        removed
    }

    /// Sets the high watermark the cluster computed for this (leader) replica.
    pub fn set_high_watermark(&mut self, hw: i64) {
        self.log.set_high_watermark(hw);
    }

    /// A restart: producer state from a snapshot taken after the first
    /// `snapshot_entries` entries (newest batch per producer), then the rest of the
    /// log replayed; producers idle past `expiration_ms` are not loaded. Verification
    /// state (memory only) is gone.
    pub fn restart_from_snapshot_at(
        &mut self,
        snapshot_entries: usize,
        now_ms: u64,
        expiration_ms: u64,
    ) {
        self.rebuild_producer_state(snapshot_entries, now_ms, expiration_ms);
        self.verifications.clear();
    }

    /// The newest producer-state snapshot at or below this replica's log end, in log
    /// entries (snapshots are taken at every segment roll and at the end of every
    /// rebuild; 0: none, a reload replays the log from the start).
    pub fn newest_snapshot(&self) -> usize {
        self.snapshots.newest_at_or_below(self.log.entries().len())
    }

    /// Kafka's `rebuildProducerState`: the snapshot after the first `snapshot_entries`
    /// entries (newest batch per producer), the log after it replayed, producers idle
    /// past `expiration_ms` not loaded, and a snapshot taken at the log end.
    fn rebuild_producer_state(&mut self, snapshot_entries: usize, now_ms: u64, expiration_ms: u64) {
        let entries = self.log.entries();
        let split = snapshot_entries.min(entries.len());
        let mut states = ProducerStates::default();
        replay(&mut states, &entries[..split]);
        let mut states = states.snapshot(false);
        replay(&mut states, &entries[split..]);
        states.remove_expired(now_ms, expiration_ms);
        self.producers = states;
        self.snapshots.rebuilt(entries.len());
    }
}
