//! A krafka `FakeBroker` cluster driven from plain threads.
//!
//! FakeBroker is async and needs a Tokio runtime. [`Cluster`] owns one (two worker
//! threads, started from a fresh std thread so that the caller's own context does not
//! matter) and exposes everything a scenario needs synchronously: addresses, topics,
//! leadership, crashes, fault injection with counts, and each partition's log.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use krafka::testing::FakeBroker;

pub use krafka::error::ErrorCode;
pub use krafka::testing::{ApiKey, Control, RecordedRequest};

use crate::checker::LogRecord;
use crate::trigger::{Fired, Trigger, TriggerState};

/// One fault rule on one API: what to answer, and when.
struct Rule {
    make: Box<dyn Fn() -> Control + Send + Sync>,
    trigger: TriggerState,
}

type Rules = Arc<Mutex<HashMap<ApiKey, Vec<Rule>>>>;

/// A FakeBroker cluster on loopback (fresh ports), usable from any thread.
///
/// Dropping it stops the brokers and the runtime.
pub struct Cluster {
    broker: Option<FakeBroker>,
    runtime: Option<tokio::runtime::Runtime>,
    rules: Rules,
    hooked: Mutex<Vec<ApiKey>>,
    throttled: Mutex<Vec<ApiKey>>,
    nodes: usize,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("bootstrap", &self.bootstrap())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Starts `brokers` FakeBroker nodes (ids `0..brokers`) on fresh loopback ports.
    pub fn start(brokers: usize) -> Result<Self, String> {
        let nodes = brokers.max(1);
        // A fresh thread: building and blocking on a runtime must not happen inside the
        // caller's runtime, if it has one.
        let (broker, runtime) = std::thread::Builder::new()
            .name("fakebroker-start".into())
            .spawn(move || -> Result<_, String> {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("fakebroker")
                    .enable_all()
                    .build()
                    .map_err(|e| format!("fakebroker runtime: {e}"))?;
                let broker = runtime
                    .block_on(FakeBroker::start_cluster(nodes))
                    .map_err(|e| format!("fakebroker start: {e}"))?;
                Ok((broker, runtime))
            })
            .map_err(|e| format!("spawn: {e}"))?
            .join()
            .map_err(|_| "fakebroker start thread panicked".to_string())??;
        Ok(Self {
            broker: Some(broker),
            runtime: Some(runtime),
            rules: Arc::default(),
            hooked: Mutex::default(),
            throttled: Mutex::default(),
            nodes,
        })
    }

    /// The FakeBroker itself, for anything this wrapper does not cover. Its async methods
    /// must run on [`Cluster::block_on`].
    pub fn broker(&self) -> &FakeBroker {
        self.broker.as_ref().expect("running")
    }

    /// Runs a future on the cluster's runtime (not from inside another runtime).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.as_ref().expect("running").block_on(f)
    }

    /// `host:port,host:port,...` of every node.
    pub fn bootstrap(&self) -> String {
        self.broker().bootstrap_servers()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// Address of every node, by node id.
    pub fn node_addrs(&self) -> Vec<SocketAddr> {
        (0..self.nodes as i32)
            .filter_map(|n| self.broker().broker_addr(n))
            .collect()
    }

    /// Creates `topic` with `partitions` partitions; partition `p` is led by node
    /// `p % nodes` (FakeBroker spreads leaders round-robin over online nodes).
    pub fn create_topic(&self, topic: &str, partitions: i32) -> Result<(), String> {
        if self.broker().create_topic(topic, partitions) {
            Ok(())
        } else {
            Err(format!("topic {topic} already exists"))
        }
    }

    /// Current leader of a partition.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        self.broker()
            .with_state(|s| s.partition(topic, partition).map(|p| p.leader))
    }

    /// Current leader epoch of a partition.
    pub fn leader_epoch(&self, topic: &str, partition: i32) -> Option<i32> {
        self.broker()
            .with_state(|s| s.partition(topic, partition).map(|p| p.leader_epoch))
    }

    /// Moves a partition's leader to `node` (bumps the leader epoch). Producer state moves
    /// with it, as a replicated producer snapshot does.
    pub fn set_leader(&self, topic: &str, partition: i32, node: i32) -> Result<(), String> {
        if self.broker().set_leader(topic, partition, node) {
            Ok(())
        } else {
            Err(format!("no partition {topic}-{partition}"))
        }
    }

    /// Moves every partition of `topic` to the next node (`leader + 1 mod nodes`),
    /// skipping nodes in `avoid`. Returns how many partitions moved.
    pub fn rotate_leaders(&self, topic: &str, partitions: i32, avoid: &[i32]) -> usize {
        let n = self.nodes as i32;
        let mut moved = 0;
        for p in 0..partitions {
            let Some(old) = self.leader(topic, p) else {
                continue;
            };
            let next = (1..=n).map(|k| (old + k) % n).find(|c| !avoid.contains(c));
            if let Some(next) = next.filter(|&c| c != old) {
                if self.broker().set_leader(topic, p, next) {
                    moved += 1;
                }
            }
        }
        moved
    }

    /// Moves every partition of `topic` led by `from` to the other nodes (round-robin,
    /// skipping `avoid`), as a controller does when a broker dies. Returns the partitions
    /// moved.
    pub fn move_leaders_off(
        &self,
        topic: &str,
        partitions: i32,
        from: i32,
        avoid: &[i32],
    ) -> Vec<i32> {
        let n = self.nodes as i32;
        let targets: Vec<i32> = (0..n)
            .filter(|c| *c != from && !avoid.contains(c))
            .collect();
        let mut moved = Vec::new();
        for p in 0..partitions {
            if self.leader(topic, p) == Some(from) && !targets.is_empty() {
                let to = targets[moved.len() % targets.len()];
                if self.broker().set_leader(topic, p, to) {
                    moved.push(p);
                }
            }
        }
        moved
    }

    /// Bumps a partition's leader epoch without moving it.
    pub fn bump_leader_epoch(&self, topic: &str, partition: i32) -> bool {
        self.broker().bump_leader_epoch(topic, partition)
    }

    /// Crashes a node: its open connections drop and new ones are closed at once, until
    /// [`Cluster::restart`]. Leadership does not move by itself (see
    /// [`Cluster::move_leaders_off`]).
    pub fn crash(&self, node: i32) {
        self.broker().crash(node);
    }

    /// Lets a crashed node accept connections again. Its log and state were kept.
    pub fn restart(&self, node: i32) {
        self.broker().restart(node);
    }

    /// Injects `control` on requests of `api` chosen by `trigger`. Rules on one API are
    /// tried in the order they were added; the first that fires answers. Returns the
    /// fired count.
    pub fn inject(&self, api: ApiKey, trigger: Trigger, control: Control) -> Fired {
        self.inject_with(api, trigger, move || control.clone())
    }

    /// As [`Cluster::inject`], with the control built per fired request.
    pub fn inject_with(
        &self,
        api: ApiKey,
        trigger: Trigger,
        make: impl Fn() -> Control + Send + Sync + 'static,
    ) -> Fired {
        let state = trigger.start();
        let fired = state.fired.clone();
        self.rules
            .lock()
            .unwrap()
            .entry(api)
            .or_default()
            .push(Rule {
                make: Box::new(make),
                trigger: state,
            });
        let mut hooked = self.hooked.lock().unwrap();
        if !hooked.contains(&api) {
            hooked.push(api);
            let rules = Arc::clone(&self.rules);
            self.broker().on(api, move |info| {
                let mut rules = rules.lock().unwrap();
                let Some(list) = rules.get_mut(&info.api_key) else {
                    return Control::Pass;
                };
                for rule in list.iter_mut() {
                    if rule.trigger.fire() {
                        return (rule.make)();
                    }
                }
                Control::Pass
            });
        }
        fired
    }

    /// Removes every injected rule (the counts already returned keep their values) and
    /// every throttle.
    pub fn clear_faults(&self) {
        self.rules.lock().unwrap().clear();
        for api in self.throttled.lock().unwrap().drain(..) {
            self.broker().set_throttle(api, Duration::ZERO);
        }
    }

    /// Whether every rule on `api` has fired as often as it may.
    pub fn faults_exhausted(&self, api: ApiKey) -> bool {
        self.rules
            .lock()
            .unwrap()
            .get(&api)
            .is_none_or(|l| l.iter().all(|r| r.trigger.exhausted()))
    }

    /// Reports `throttle` as `throttle_time_ms` on every response to `api` (zero stops it).
    /// The response itself is not held back: honouring the throttle is the client's job.
    pub fn set_throttle(&self, api: ApiKey, throttle: Duration) {
        let mut throttled = self.throttled.lock().unwrap();
        if !throttled.contains(&api) {
            throttled.push(api);
        }
        self.broker().set_throttle(api, throttle);
    }

    /// Requests of `api` served so far (injected ones included).
    pub fn request_count(&self, api: ApiKey) -> usize {
        self.broker().request_count(api)
    }

    /// Every request served so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.broker().requests()
    }

    /// The data records of one partition's log, in offset order (control batches left
    /// out), read straight from the broker's in-memory log.
    pub fn log(&self, topic: &str, partition: i32) -> Result<Vec<LogRecord>, String> {
        Ok(self.logs(topic)?.remove(&partition).unwrap_or_default())
    }

    /// Every partition's data records, by partition.
    pub fn logs(&self, topic: &str) -> Result<BTreeMap<i32, Vec<LogRecord>>, String> {
        let records = self
            .broker()
            .all_records(topic)
            .map_err(|e| format!("reading the log of {topic}: {e}"))?;
        let mut out: BTreeMap<i32, Vec<LogRecord>> = BTreeMap::new();
        for r in records {
            out.entry(r.partition).or_default().push(LogRecord {
                offset: r.offset,
                key: r.key.unwrap_or_else(Bytes::new),
                value: r.value.unwrap_or_else(Bytes::new),
                producer_id: -1,
            });
        }
        for log in out.values_mut() {
            log.sort_by_key(|r| r.offset);
        }
        Ok(out)
    }

    /// The next offset (= high watermark) of a partition.
    pub fn next_offset(&self, topic: &str, partition: i32) -> Option<i64> {
        self.broker().next_offset(topic, partition)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Abort the listeners and connections first, while the runtime is alive.
        drop(self.broker.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_leaders_and_logs() {
        let c = Cluster::start(3).unwrap();
        assert_eq!(c.node_addrs().len(), 3);
        assert_eq!(c.bootstrap().split(',').count(), 3);
        c.create_topic("t", 6).unwrap();
        assert!(c.create_topic("t", 6).is_err());
        let leaders: Vec<_> = (0..6).map(|p| c.leader("t", p).unwrap()).collect();
        assert_eq!(leaders, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(c.rotate_leaders("t", 6, &[]), 6);
        assert_eq!(c.leader("t", 0), Some(1));
        assert_eq!(c.leader_epoch("t", 0), Some(1));
        assert_eq!(c.move_leaders_off("t", 6, 1, &[]), vec![0, 3]);
        assert!(c.log("t", 0).unwrap().is_empty());
        assert_eq!(c.next_offset("t", 0), Some(0));
    }
}
