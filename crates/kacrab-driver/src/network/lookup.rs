//! The session's own metadata lookups (for sends waiting for their topic, partition
//! count calls and the `metadata.max.age.ms` refresh), as Java's
//! `NetworkClient.DefaultMetadataUpdater`: at most one is outstanding at a time; the
//! topics asked for meanwhile wait and go in the next one; and the next one is not sent
//! before `retry.backoff.ms` after the last one ended, growing exponentially per
//! consecutive failure up to `retry.backoff.max.ms` (KIP-580; Java's
//! `Metadata.timeToAllowUpdate` with `refreshBackoff`). The connection it goes on is
//! chosen under the per-broker reconnect backoff (`reconnect`), so a refused broker
//! is dialled on that schedule, not once per lookup.

use std::collections::BTreeSet;

use kacrab_idempotence::backoff::Backoff;
use kacrab_idempotence::{Producer, Timestamp};
use kacrab_wire::messages::MetadataRequest;

use super::Network;
use crate::output::ConnId;

/// The one outstanding lookup.
#[derive(Debug)]
struct Outstanding {
    tag: u64,
    conn: ConnId,
    topics: BTreeSet<String>,
}

/// The lookup slot. See the module documentation.
#[derive(Debug)]
pub(super) struct Lookups {
    backoff: Backoff,
    /// Topics asked for since the outstanding lookup was sent (or that a lost lookup
    /// carried): they go in the next one.
    wanted: BTreeSet<String>,
    /// Invariant: at most one session lookup is on the wire or queued on a connection.
    outstanding: Option<Outstanding>,
    /// Consecutive lookups that got no answer.
    failures: u32,
    /// The next lookup is not sent before this.
    next_at: Timestamp,
}

impl Lookups {
    pub(super) fn new(backoff: Backoff, now: Timestamp) -> Self {
        Self {
            backoff,
            wanted: BTreeSet::new(),
            outstanding: None,
            failures: 0,
            next_at: now,
        }
    }

    /// The lookup with this tag ended at `now`: answered, or not (`answered: false`:
    /// its topics are asked again).
    fn ended(&mut self, answered: bool, now: Timestamp) {
        let Some(o) = self.outstanding.take() else {
            return;
        };
        if answered {
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
            self.wanted.extend(o.topics);
        }
        self.next_at = now + self.backoff.delay(self.failures.saturating_add(1));
    }

    /// When the next lookup may go, if one waits.
    pub(super) fn poll_timeout(&self) -> Option<Timestamp> {
        (self.outstanding.is_none() && !self.wanted.is_empty()).then_some(self.next_at)
    }

    /// Whether a lookup is outstanding (for tests and invariants).
    pub(super) fn outstanding_tag(&self) -> Option<u64> {
        self.outstanding.as_ref().map(|o| o.tag)
    }
}

impl Network {
    /// Asks for the metadata of `topics` as the session's own request: now if no
    /// lookup is outstanding and the backoff allows, else in the next lookup.
    pub(crate) fn request_metadata(
        &mut self,
        core: &mut Producer,
        topics: &[&str],
        now: Timestamp,
    ) {
        if self.has_failed() {
            return;
        }
        self.lookups
            .wanted
            .extend(topics.iter().map(|t| (*t).to_owned()));
        self.send_lookup(core, now);
    }

    /// Sends the waiting topics' lookup if none is outstanding and its backoff passed.
    pub(super) fn send_lookup(&mut self, core: &mut Producer, now: Timestamp) {
        if self.has_failed()
            || self.lookups.outstanding.is_some()
            || self.lookups.wanted.is_empty()
            || self.lookups.next_at > now
        {
            return;
        }
        let topics = std::mem::take(&mut self.lookups.wanted);
        let tag = self.session_tag();
        let request = MetadataRequest::topics(topics.iter().cloned());
        let conn = self.any_conn(now);
        self.lookups.outstanding = Some(Outstanding { tag, conn, topics });
        self.send_session_request(
            core,
            conn,
            kacrab_wire::Request::Metadata(request),
            tag,
            now,
        );
    }

    /// A Metadata answer with session tag `tag` arrived.
    pub(super) fn lookup_answered(&mut self, core: &mut Producer, tag: u64, now: Timestamp) {
        if self.lookups.outstanding_tag() == Some(tag) {
            self.lookups.ended(true, now);
            self.send_lookup(core, now);
        }
    }

    /// The session lookup `tag` will get no answer (its connection went, or it could
    /// not be encoded).
    pub(super) fn lookup_lost(&mut self, tag: u64, now: Timestamp) {
        if self.lookups.outstanding_tag() == Some(tag) {
            self.lookups.ended(false, now);
        }
    }

    /// Connection `conn` went: the lookup on it, if any, got no answer.
    pub(super) fn lookup_conn_gone(&mut self, conn: ConnId, now: Timestamp) {
        if self
            .lookups
            .outstanding
            .as_ref()
            .is_some_and(|o| o.conn == conn)
        {
            self.lookups.ended(false, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_lost_lookup_backs_off_exponentially_and_an_answer_resets_it() {
        let ms = Duration::from_millis;
        let t0 = Timestamp::ZERO;
        let mut l = Lookups::new(Backoff::without_jitter(ms(100), ms(1000)), t0);
        l.wanted.insert("t".into());
        assert_eq!(l.poll_timeout(), Some(t0));
        let mut now = t0;
        for expected in [200u64, 400, 800, 1000, 1000] {
            let topics = std::mem::take(&mut l.wanted);
            l.outstanding = Some(Outstanding {
                tag: 1,
                conn: ConnId(0),
                topics,
            });
            assert_eq!(l.poll_timeout(), None, "one outstanding at a time");
            l.ended(false, now);
            assert_eq!(l.poll_timeout(), Some(now + ms(expected)));
            now = now + ms(expected);
        }
        l.outstanding = Some(Outstanding {
            tag: 2,
            conn: ConnId(0),
            topics: std::mem::take(&mut l.wanted),
        });
        l.ended(true, now);
        assert_eq!(l.poll_timeout(), None, "answered: nothing waits");
        l.wanted.insert("u".into());
        assert_eq!(
            l.poll_timeout(),
            Some(now + ms(100)),
            "reset to retry.backoff.ms"
        );
    }
}
