//! The network half's invariants, checked by `Session::assert_invariants` (see the
//! fields of `Conn`).

use super::{ConnState, Network, SESSION_TAG};
use crate::output::ConnId;

impl Network {
    /// Checks the network's invariants (see the fields of `Conn`).
    pub(crate) fn assert_invariants(&self) {
        self.topics.assert_invariants();
        let mut ids: Vec<ConnId> = self.conns.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), self.conns.len(), "connection ids are unique");
        let queued_lookups = self
            .conns
            .iter()
            .flat_map(|c| c.queued.iter())
            .filter(|p| matches!(p, super::Pending::Session(..)))
            .count();
        assert!(
            queued_lookups <= usize::from(self.lookups.outstanding_tag().is_some()),
            "at most one session lookup outstanding"
        );
        for c in &self.conns {
            assert!(c.id.0 < self.next_conn, "connection ids are never reused");
            assert_eq!(
                c.versions.is_some(),
                matches!(
                    c.state,
                    ConnState::Ready | ConnState::Authenticating(_) | ConnState::Draining
                )
            );
            assert_eq!(
                c.sasl.is_some(),
                matches!(c.state, ConnState::Authenticating(_))
            );
            assert!(c.reauth_at.is_none() || c.state == ConnState::Ready);
            if c.state == ConnState::Ready {
                assert!(c.queued.is_empty(), "a ready connection queues nothing");
            }
            let session_in_flight: Vec<u64> = c
                .wire
                .in_flight()
                .map(|f| f.tag)
                .filter(|&t| t >= SESSION_TAG)
                .collect();
            let timed: Vec<u64> = c.deadlines.iter().map(|d| d.0).collect();
            assert_eq!(
                session_in_flight, timed,
                "every session request is timed once"
            );
            c.writes.assert_invariants();
        }
    }
}
