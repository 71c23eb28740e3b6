//! The metadata lifecycle the session owns: a periodic refresh every
//! `metadata.max.age.ms` (Java's `Metadata.timeToNextUpdate`: the cluster view expires
//! that long after the last successful update, even when nothing failed, so moved
//! leaders and new partitions are seen), and forgetting topics no send used for
//! `metadata.max.idle.ms` (`ProducerMetadata.retainTopic`), so they are no longer
//! refreshed.
//!
//! The core keeps its own rule, refreshing what it needs when a partition has no
//! leader or a broker said its leadership is stale; every Metadata answer, whoever
//! asked, feeds both.

use std::collections::BTreeMap;
use std::time::Duration;

use kacrab_idempotence::Timestamp;

/// When to refresh, and which topics are still in use.
#[derive(Debug)]
pub(crate) struct MetadataLifecycle {
    max_age: Duration,
    max_idle: Duration,
    /// When the last Metadata answer (any) arrived or the last refresh was asked.
    /// The next refresh is `max_age` after it.
    last: Timestamp,
    /// When each topic was last used by a send. Invariant: every topic the refresh
    /// asks for is here.
    used: BTreeMap<String, Timestamp>,
}

impl MetadataLifecycle {
    pub(crate) fn new(max_age: Duration, max_idle: Duration, now: Timestamp) -> Self {
        Self {
            max_age: max_age.max(Duration::from_millis(1)),
            max_idle,
            last: now,
            used: BTreeMap::new(),
        }
    }

    /// A send used `topic`.
    pub(crate) fn used(&mut self, topic: &str, now: Timestamp) {
        match self.used.get_mut(topic) {
            Some(t) => *t = now,
            None => {
                self.used.insert(topic.to_owned(), now);
            }
        }
    }

    /// A Metadata answer arrived: the view is fresh.
    pub(crate) fn answered(&mut self, now: Timestamp) {
        self.last = now;
    }

    /// When the next refresh is due, if any topic is in use.
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        (!self.used.is_empty()).then(|| self.last + self.max_age)
    }

    /// At `now`: the topics to forget (idle for `metadata.max.idle.ms`) and, if the
    /// refresh is due, the topics to ask for (the view counts as fresh from now, so an
    /// unanswered refresh is asked again `max_age` later).
    pub(crate) fn handle_timeout(&mut self, now: Timestamp) -> (Vec<String>, Vec<String>) {
        let Some(due) = self.poll_timeout() else {
            return (Vec::new(), Vec::new());
        };
        if due > now {
            return (Vec::new(), Vec::new());
        }
        let idle = self.max_idle;
        let forget: Vec<String> = self
            .used
            .iter()
            .filter(|(_, &t)| now.saturating_duration_since(t) >= idle)
            .map(|(name, _)| name.clone())
            .collect();
        for name in &forget {
            self.used.remove(name);
        }
        self.last = now;
        (forget, self.used.keys().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshes_every_max_age_and_forgets_idle_topics() {
        let ms = Duration::from_millis;
        let t0 = Timestamp::ZERO;
        let mut m = MetadataLifecycle::new(ms(100), ms(250), t0);
        assert_eq!(m.poll_timeout(), None, "nothing to refresh before a send");
        m.used("a", t0);
        m.used("b", t0);
        assert_eq!(m.poll_timeout(), Some(t0 + ms(100)));
        m.answered(t0 + ms(50));
        assert_eq!(m.poll_timeout(), Some(t0 + ms(150)));
        assert_eq!(m.handle_timeout(t0 + ms(149)), (vec![], vec![]));
        m.used("a", t0 + ms(150));
        let (forget, ask) = m.handle_timeout(t0 + ms(150));
        assert!(forget.is_empty());
        assert_eq!(ask, ["a", "b"]);
        let (forget, ask) = m.handle_timeout(t0 + ms(250));
        assert_eq!(forget, ["b"], "b idle for 250 ms");
        assert_eq!(ask, ["a"]);
    }
}
