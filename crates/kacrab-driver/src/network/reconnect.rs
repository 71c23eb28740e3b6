//! Per-broker reconnect backoff (`reconnect.backoff.ms`, `reconnect.backoff.max.ms`),
//! as Java's `ClusterConnectionStates`: after a connection to an address fails or
//! closes, that address is not dialled again for `reconnect.backoff.ms * 2^(n-1)`
//! (capped at `reconnect.backoff.max.ms`, ±20 % jitter: `ExponentialBackoff` with
//! multiplier 2 and jitter 0.2), `n` being its consecutive failures since it was last
//! ready (negotiated and authenticated). A connection that became ready resets it.
//! Connections opened to a backed-off address wait (`ConnState::BackingOff`) and are
//! dialled here when it ends; cluster-wide requests pick their broker here, passing
//! over backed-off addresses.
//!
//! The connection setup timeout grows the same way (Java's `ClusterConnectionStates.
//! updateConnectionSetupTimeout`): the first attempt to an address may take
//! `socket.connection.setup.timeout.ms` (±20 %), each consecutive attempt that failed
//! before the connection was up (refused, timed out, lost in the TLS handshake)
//! doubles it, up to `socket.connection.setup.timeout.max.ms`; a connection that
//! becomes ready, or one lost after it was up, resets it (`resetConnectionSetupTimeout`).
//! Each dial to an address also moves to its host's next resolved address
//! (`client.dns.lookup=use_all_dns_ips`: `ClusterConnectionStates.connecting` calls
//! `moveToNextAddress`), which the driver reads as `ConnectOptions::address_index`.
//!
//! The jitter is drawn from a generator the session seeds (it has no randomness of its
//! own): from the driver's entropy when it gave one (the SCRAM nonce seed, hashed so
//! the draws reveal nothing of the nonces), else from `kacrab.jitter.seed`.

use std::collections::BTreeMap;

use kacrab_idempotence::backoff::Backoff;
use kacrab_idempotence::{Producer, Timestamp};
use sha2::{Digest, Sha256};

use super::{ConnState, Network};
use crate::config::SessionConfig;
use crate::output::{ConnId, Output};

/// One address's consecutive failures and until when it is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Failures {
    /// Consecutive failures since the address was last ready. Invariant: at least 1.
    count: u32,
    /// Not dialled before this instant.
    blocked_until: Timestamp,
}

/// Where a connection was when it was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Before it was up (TCP connect or TLS handshake): the setup timeout grows.
    Setup,
    /// After: the setup timeout is reset.
    Established,
}

/// One dial of an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Dial {
    /// How long the attempt may take before it is abandoned.
    pub(super) setup_timeout: std::time::Duration,
    /// Which of the host's resolved addresses it dials (modulo their count).
    pub(super) address_index: usize,
}

/// The reconnect state of every address that failed since it was last ready.
#[derive(Debug)]
pub(super) struct Reconnects {
    backoff: Backoff,
    /// Invariant: holds exactly the addresses whose last connection did not end after
    /// becoming ready.
    failed: BTreeMap<String, Failures>,
    /// `socket.connection.setup.timeout.ms` growing to `.max.ms`.
    setup: Backoff,
    /// Consecutive attempts to each address that failed before the connection was up.
    /// Invariant: no zero count (an address with none is absent).
    setup_failures: BTreeMap<String, u32>,
    /// Dials of each address so far: the next dial's `address_index`.
    dials: BTreeMap<String, usize>,
}

impl Reconnects {
    pub(super) fn new(config: &SessionConfig) -> Self {
        let (initial, max) = config.reconnect_backoff();
        Self {
            backoff: Backoff::new(initial, max, jitter_seed(config)),
            failed: BTreeMap::new(),
            setup: Backoff::new(
                config.connection_setup_timeout(),
                config.connection_setup_timeout_max(),
                jitter_seed(config) ^ 0x7365_7475_7020_746f,
            ),
            setup_failures: BTreeMap::new(),
            dials: BTreeMap::new(),
        }
    }

    /// `addr` is dialled: the attempt's setup timeout (Java's `ExponentialBackoff.
    /// backoff(failedConnectAttempts)`, which the core's `Backoff::delay` numbers from
    /// 1) and which resolved address it uses.
    pub(super) fn dial(&mut self, addr: &str) -> Dial {
        let failures = self.setup_failures.get(addr).copied().unwrap_or(0);
        let setup_timeout = self.setup.delay(failures.saturating_add(1));
        let dials = self.dials.entry(addr.to_owned()).or_insert(0);
        let address_index = *dials;
        *dials = dials.wrapping_add(1);
        Dial {
            setup_timeout,
            address_index,
        }
    }

    /// Until when `addr` must not be dialled, if that is after `now`.
    pub(super) fn blocked_until(&self, addr: &str, now: Timestamp) -> Option<Timestamp> {
        self.failed
            .get(addr)
            .map(|f| f.blocked_until)
            .filter(|&t| t > now)
    }

    /// A connection to `addr` failed or closed at `now`, in `phase`: it is left alone
    /// for the backoff of its consecutive failures, and its next setup timeout grows
    /// (lost while being set up) or is reset (lost after).
    pub(super) fn disconnected(&mut self, addr: &str, phase: Phase, now: Timestamp) {
        match phase {
            Phase::Setup => {
                let n = self.setup_failures.entry(addr.to_owned()).or_insert(0);
                *n = n.saturating_add(1);
            }
            Phase::Established => {
                self.setup_failures.remove(addr);
            }
        }
        let count = self
            .failed
            .get(addr)
            .map_or(1, |f| f.count.saturating_add(1));
        let wait = self.backoff.delay(count);
        self.failed.insert(
            addr.to_owned(),
            Failures {
                count,
                blocked_until: now + wait,
            },
        );
    }

    /// A connection to `addr` became ready: its failures are forgotten.
    pub(super) fn ready(&mut self, addr: &str) {
        self.failed.remove(addr);
        self.setup_failures.remove(addr);
    }
}

impl Network {
    /// Connections whose broker's reconnect backoff ended are dialled (or, after a
    /// security failure, dropped: no connection opens again).
    pub(super) fn dial_backed_off(&mut self, core: &mut Producer, now: Timestamp) {
        if self.has_failed() {
            let waiting: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|c| matches!(c.state, ConnState::BackingOff { .. }))
                .map(|c| c.id)
                .collect();
            for conn in waiting {
                self.drop_conn(core, conn, now, None);
            }
            return;
        }
        for c in &mut self.conns {
            if matches!(c.state, ConnState::BackingOff { until } if until <= now) {
                let dial = self.reconnects.dial(&c.addr);
                c.address_index = dial.address_index;
                c.state = ConnState::Connecting {
                    deadline: now + dial.setup_timeout,
                };
                self.out.push_back(Output::Connect {
                    conn: c.id,
                    addr: c.addr.clone(),
                });
            }
        }
    }

    /// Any connection for cluster-wide requests, as Java's `NetworkClient.
    /// leastLoadedNode` picks one: a ready one with the fewest requests in flight, else
    /// one being set up, else one to an address that may be dialled now (a new
    /// connection to a known broker or bootstrap address), else the one free soonest.
    /// A connection waiting out its reconnect backoff is never preferred to a broker
    /// that can be reached sooner: the request would wait behind the backoff of a
    /// broker that just failed (pinned by `a_lookup_with_no_ready_connection_passes_
    /// over_a_broker_in_reconnect_backoff` in `tests/session_metadata.rs`).
    pub(super) fn any_conn(&mut self, now: Timestamp) -> ConnId {
        if let Some(c) = self
            .conns
            .iter()
            .filter(|c| c.state == ConnState::Ready)
            .min_by_key(|c| c.wire.in_flight_count() + c.queued.len())
        {
            return c.id;
        }
        if let Some(c) = self
            .conns
            .iter()
            .find(|c| !matches!(c.state, ConnState::BackingOff { .. }))
        {
            return c.id;
        }
        // Round robin over every broker Metadata named, then the bootstrap servers: a
        // dead broker (or bootstrap address) must not be the only one ever tried. An
        // address in its reconnect backoff is passed over while another is free (Java's
        // `leastLoadedNode`); if all are, the one free soonest is taken (and dialled
        // when its backoff ends).
        let candidates = self.brokers.len() + self.bootstrap.len();
        let addr_of = |net: &Self, i: usize| -> String {
            match net.brokers.iter().nth(i) {
                Some((_, addr)) => addr.clone(),
                None => net.bootstrap[i - net.brokers.len()].clone(),
            }
        };
        let start = self.next_bootstrap;
        let pick = (0..candidates)
            .map(|k| start.wrapping_add(k) % candidates)
            .min_by_key(|&i| {
                self.reconnects
                    .blocked_until(&addr_of(self, i), now)
                    .unwrap_or(Timestamp::ZERO)
            })
            .unwrap_or(0);
        self.next_bootstrap = pick.wrapping_add(1);
        // Every connection left waits out a backoff: one to the chosen address is
        // reused rather than doubled.
        let addr = addr_of(self, pick);
        if let Some(c) = self.conns.iter().find(|c| c.addr == addr) {
            return c.id;
        }
        match self.brokers.iter().nth(pick) {
            Some((&node, addr)) => {
                let addr = addr.clone();
                self.open(Some(node), addr, now)
            }
            None => {
                let addr = self.bootstrap[pick - self.brokers.len()].clone();
                self.open(None, addr, now)
            }
        }
    }
}

/// The generator's seed: the driver's entropy (hashed: the SCRAM nonces are derived
/// from the same seed) if it gave some, else `kacrab.jitter.seed`.
fn jitter_seed(config: &SessionConfig) -> u64 {
    match config.sasl().nonce_seed_setting() {
        Some(seed) => {
            let mut h = Sha256::new();
            h.update(b"kacrab reconnect jitter");
            h.update(seed.0);
            let digest = h.finalize();
            let mut word = [0u8; 8];
            word.copy_from_slice(&digest[..8]);
            u64::from_be_bytes(word)
        }
        None => config.core().jitter_seed() ^ 0x7265_636f_6e6e_6563,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reconnects(props: &[(&str, &str)]) -> Reconnects {
        let mut all = vec![("bootstrap.servers", "h:1")];
        all.extend_from_slice(props);
        Reconnects::new(&SessionConfig::from_properties(all).unwrap())
    }

    #[test]
    fn backoff_doubles_per_consecutive_failure_within_jitter_and_resets_when_ready() {
        let ms = Duration::from_millis;
        let mut r = reconnects(&[
            ("reconnect.backoff.ms", "100"),
            ("reconnect.backoff.max.ms", "1000"),
        ]);
        let t0 = Timestamp::ZERO;
        assert_eq!(r.blocked_until("a:1", t0), None, "never failed");
        let mut now = t0;
        for expected in [100u64, 200, 400, 800, 1000, 1000] {
            r.disconnected("a:1", Phase::Setup, now);
            let wait = r
                .blocked_until("a:1", now)
                .unwrap()
                .saturating_duration_since(now);
            let low = ms(expected * 8 / 10);
            let high = ms((expected * 12 / 10).min(1000));
            assert!(
                low <= wait && wait <= high,
                "{wait:?} not in [{low:?}, {high:?}]"
            );
            assert_eq!(r.blocked_until("b:1", now), None, "per address");
            now = now + wait;
            assert_eq!(r.blocked_until("a:1", now), None, "free once it passed");
        }
        r.ready("a:1");
        r.disconnected("a:1", Phase::Setup, now);
        let wait = r
            .blocked_until("a:1", now)
            .unwrap()
            .saturating_duration_since(now);
        assert!(wait <= ms(120), "reset by a ready connection: {wait:?}");
    }

    #[test]
    fn jitter_depends_on_the_drivers_entropy() {
        let waits = |seed: u8| {
            let mut c = SessionConfig::from_properties([("bootstrap.servers", "h:1")]).unwrap();
            c.set_sasl_nonce_seed(crate::config::NonceSeed::new([seed; 32]));
            let mut r = Reconnects::new(&c);
            (0..4)
                .map(|_| {
                    r.disconnected("a:1", Phase::Setup, Timestamp::ZERO);
                    r.blocked_until("a:1", Timestamp::ZERO)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(waits(1), waits(1), "deterministic for one seed");
        assert_ne!(waits(1), waits(2), "two producers do not retry in step");
    }
}
