//! What a soak measures each minute and how it judges flatness: the process's resident
//! memory, file descriptors, TCP sockets and threads read from `/proc/self`, send-to-ack
//! latency percentiles, one [`MinuteRow`] per minute, and the [`flatness`] verdict over
//! the rows.
//!
//! The verdict compares the *median* of the last ten minutes with the median of minutes
//! 5–10 (the first minutes hold start-up: connections, buffers and the allocator's arenas
//! growing to their working size). A median, not a maximum, so that one fault's
//! transient (a buffer filling behind a blackhole, a reconnect caught mid-way by the
//! sample) does not decide; a leak moves every later sample, so it moves the median.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;

/// A snapshot of this process's resources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessSample {
    /// Resident memory (`VmRSS`), KiB.
    pub rss_kib: u64,
    /// Open file descriptors (`/proc/self/fd`).
    pub fds: u64,
    /// Of those, TCP sockets (IPv4 or IPv6), any state.
    pub tcp_sockets: u64,
    /// Of those, client-side sockets connected to a port this process listens on: with a
    /// proxy in the process, the producer's own connections.
    pub client_sockets: u64,
    /// TCP sockets in CLOSE_WAIT: the peer closed and this process never did (a leak in
    /// the making if it grows).
    pub close_wait: u64,
    /// Threads (`Threads:` in `/proc/self/status`).
    pub threads: u64,
}

impl ProcessSample {
    /// Reads `/proc/self`. Fields that cannot be read are 0 (not Linux: all of them).
    pub fn now() -> Self {
        let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mut sample = Self {
            rss_kib: status_field(&status, "VmRSS:"),
            threads: status_field(&status, "Threads:"),
            ..Self::default()
        };
        let mut inodes = HashSet::new();
        if let Ok(dir) = fs::read_dir("/proc/self/fd") {
            for entry in dir.flatten() {
                sample.fds += 1;
                if let Ok(target) = fs::read_link(entry.path()) {
                    if let Some(inode) = socket_inode(&target.to_string_lossy()) {
                        inodes.insert(inode);
                    }
                }
            }
        }
        let mut table = String::new();
        for file in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
            table.push_str(&fs::read_to_string(file).unwrap_or_default());
        }
        let census = tcp_census(&table, &inodes);
        sample.tcp_sockets = census.sockets;
        sample.client_sockets = census.client;
        sample.close_wait = census.close_wait;
        sample
    }
}

fn status_field(status: &str, name: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The inode of a `/proc/self/fd` link to a socket (`socket:[12345]`).
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// This process's TCP sockets, from a `/proc/net/tcp{,6}` table and its socket inodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TcpCensus {
    sockets: u64,
    client: u64,
    close_wait: u64,
}

const LISTEN: &str = "0A";
const CLOSE_WAIT: &str = "08";

fn tcp_census(table: &str, inodes: &HashSet<u64>) -> TcpCensus {
    // (local port, remote port, state) of each of our sockets.
    let mut ours = HashMap::new();
    for line in table.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
        let (Some(local), Some(remote), Some(state), Some(inode)) =
            (f.get(1), f.get(2), f.get(3), f.get(9))
        else {
            continue;
        };
        let Ok(inode) = inode.parse::<u64>() else {
            continue;
        };
        if inode == 0 || !inodes.contains(&inode) {
            continue;
        }
        let port = |addr: &str| {
            addr.rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok())
        };
        if let (Some(l), Some(r)) = (port(local), port(remote)) {
            ours.insert(inode, (l, r, state.to_string()));
        }
    }
    let listening: HashSet<u16> = ours
        .values()
        .filter(|(_, _, st)| st == LISTEN)
        .map(|(l, _, _)| *l)
        .collect();
    let mut census = TcpCensus {
        sockets: ours.len() as u64,
        ..TcpCensus::default()
    };
    for (_, remote, state) in ours.values() {
        if state != LISTEN && listening.contains(remote) {
            census.client += 1;
        }
        if state == CLOSE_WAIT {
            census.close_wait += 1;
        }
    }
    census
}

/// The `q`-quantile (0..=1) of `samples` by nearest rank, sorting them in place; `None`
/// when empty.
pub fn quantile(samples: &mut [u32], q: f64) -> Option<u32> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let rank = (q.clamp(0.0, 1.0) * samples.len() as f64).ceil() as usize;
    Some(samples[rank.clamp(1, samples.len()) - 1])
}

/// One minute of a soak.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MinuteRow {
    /// Minute number, from 1.
    pub minute: u32,
    /// Records handed to the producer this minute (the offered load it took).
    pub sent: u64,
    /// Records acknowledged this minute.
    pub acked: u64,
    /// Sends that failed this minute.
    pub failed: u64,
    /// Send-to-ack latency of the records acknowledged this minute: median, 99th
    /// percentile, maximum, microseconds (`None` without acks).
    pub p50_us: Option<u32>,
    /// 99th percentile.
    pub p99_us: Option<u32>,
    /// Maximum.
    pub max_us: Option<u32>,
    /// The process at the end of the minute.
    pub process: ProcessSample,
    /// Produce responses the proxy dropped after the write this minute.
    pub dropped: u64,
    /// Faults the schedule started this minute, short names.
    pub faults: Vec<String>,
}

impl MinuteRow {
    /// The table header matching [`MinuteRow`]'s `Display`.
    pub const HEADER: &'static str = "| min | sent | acked | failed | p50 ms | p99 ms | max ms | RSS MiB | fds | tcp | client | close_wait | threads | drops | faults |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |";
}

impl fmt::Display for MinuteRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |us: Option<u32>| us.map_or("-".to_string(), |u| format!("{:.1}", u as f64 / 1e3));
        let p = &self.process;
        write!(
            f,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
            self.minute,
            self.sent,
            self.acked,
            self.failed,
            ms(self.p50_us),
            ms(self.p99_us),
            ms(self.max_us),
            p.rss_kib as f64 / 1024.0,
            p.fds,
            p.tcp_sockets,
            p.client_sockets,
            p.close_wait,
            p.threads,
            self.dropped,
            if self.faults.is_empty() {
                "-".to_string()
            } else {
                self.faults.join(", ")
            }
        )
    }
}

/// Minutes 5–10: the baseline, after start-up.
pub const BASELINE: std::ops::RangeInclusive<u32> = 5..=10;
/// The last this many minutes are compared with the baseline.
pub const TAIL_MINUTES: u32 = 10;
/// Resident memory may grow by this much (KiB) or [`RSS_TOLERANCE_FRACTION`] of the
/// baseline, whichever is larger.
pub const RSS_TOLERANCE_KIB: u64 = 16 * 1024;
/// See [`RSS_TOLERANCE_KIB`].
pub const RSS_TOLERANCE_FRACTION: f64 = 0.10;
/// TCP sockets may grow by this many: one proxied connection's three sockets (the
/// producer's end, the proxy's accepted end, its upstream end).
pub const SOCKET_TOLERANCE: u64 = 3;
/// The producer's own connections may grow by one: with three brokers it holds three or
/// four (one per broker, at times one more), whichever a sample catches.
pub const CLIENT_SOCKET_TOLERANCE: u64 = 1;
/// File descriptors may grow by this many: one proxied connection holds seven in this
/// process (the producer's socket, the proxy's two sockets and the duplicates its relay
/// threads hold), eight with a driver that holds two per connection.
pub const FD_TOLERANCE: u64 = 8;
/// Threads may grow by this many: the proxy runs two per connection.
pub const THREAD_TOLERANCE: u64 = 6;

/// The flatness verdict over a soak's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// One line per measure compared (or why there was no comparison).
    pub lines: Vec<String>,
    /// What failed; empty when flat.
    pub failures: Vec<String>,
}

impl Verdict {
    /// Whether nothing failed.
    pub fn is_flat(&self) -> bool {
        self.failures.is_empty()
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    if v.is_empty() {
        0
    } else {
        v[(v.len() - 1) / 2]
    }
}

/// Judges `rows` (minute 1 first): every minute must acknowledge something (every fault
/// of a mild schedule is shorter than a minute, so none excuses a silent one); and, for a
/// run of at least 20 minutes, the median of the last [`TAIL_MINUTES`] of resident
/// memory, descriptors, TCP sockets, client sockets and threads must be within tolerance
/// of the median over [`BASELINE`].
pub fn flatness(rows: &[MinuteRow]) -> Verdict {
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    let silent: Vec<u32> = rows
        .iter()
        .filter(|r| r.acked == 0)
        .map(|r| r.minute)
        .collect();
    if silent.is_empty() {
        lines.push(format!(
            "throughput: every one of {} minutes acknowledged records",
            rows.len()
        ));
    } else {
        failures.push(format!("no record acknowledged in minute(s) {silent:?}"));
    }
    let n = rows.len() as u32;
    if n < BASELINE.end() + TAIL_MINUTES {
        lines.push(format!(
            "resources: {n} minutes is too short for a flatness verdict (needs {})",
            BASELINE.end() + TAIL_MINUTES
        ));
        return Verdict { lines, failures };
    }
    let tail_from = n - TAIL_MINUTES + 1;
    let window = |pick: &dyn Fn(&ProcessSample) -> u64, tail: bool| {
        median(
            rows.iter()
                .filter(|r| {
                    if tail {
                        r.minute >= tail_from
                    } else {
                        BASELINE.contains(&r.minute)
                    }
                })
                .map(|r| pick(&r.process))
                .collect(),
        )
    };
    type Pick = fn(&ProcessSample) -> u64;
    let rss_pick: Pick = |p| p.rss_kib;
    let measures: [(&str, Pick, Option<u64>); 5] = [
        ("resident memory (KiB)", rss_pick, None),
        ("file descriptors", |p| p.fds, Some(FD_TOLERANCE)),
        ("TCP sockets", |p| p.tcp_sockets, Some(SOCKET_TOLERANCE)),
        (
            "client sockets",
            |p| p.client_sockets,
            Some(CLIENT_SOCKET_TOLERANCE),
        ),
        ("threads", |p| p.threads, Some(THREAD_TOLERANCE)),
    ];
    for (name, pick, tolerance) in measures {
        let base = window(&pick, false);
        let tail = window(&pick, true);
        let allowed = tolerance.unwrap_or_else(|| {
            RSS_TOLERANCE_KIB.max((base as f64 * RSS_TOLERANCE_FRACTION) as u64)
        });
        let growth = tail.saturating_sub(base);
        let line = format!(
            "{name}: median of minutes {}–{} {base}, of minutes {tail_from}–{n} {tail} \
             (growth {growth}, allowed {allowed})",
            BASELINE.start(),
            BASELINE.end()
        );
        if growth > allowed {
            failures.push(line.clone());
        }
        lines.push(line);
    }
    Verdict { lines, failures }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: u32, rss: impl Fn(u32) -> u64, fds: impl Fn(u32) -> u64) -> Vec<MinuteRow> {
        (1..=n)
            .map(|m| MinuteRow {
                minute: m,
                acked: 1_000,
                process: ProcessSample {
                    rss_kib: rss(m),
                    fds: fds(m),
                    tcp_sockets: 9,
                    client_sockets: 3,
                    threads: 20,
                    ..ProcessSample::default()
                },
                ..MinuteRow::default()
            })
            .collect()
    }

    #[test]
    fn a_flat_run_passes_and_growth_fails() {
        // Start-up growth in the first minutes and one transient are allowed.
        let flat = rows(
            30,
            |m| if m < 4 || m == 25 { 200_000 } else { 100_000 },
            |_| 20,
        );
        let v = flatness(&flat);
        assert!(v.is_flat(), "{v:?}");
        assert_eq!(v.lines.len(), 6, "{v:?}");
        // 1 MiB a minute: 20 MiB from the baseline's median to the tail's.
        let leak = rows(30, |m| 100_000 + u64::from(m) * 1_024, |_| 20);
        let v = flatness(&leak);
        assert_eq!(v.failures.len(), 1, "{v:?}");
        assert!(v.failures[0].starts_with("resident memory"), "{v:?}");
        // One descriptor a minute.
        let fds = rows(30, |_| 100_000, |m| 20 + u64::from(m));
        let v = flatness(&fds);
        assert_eq!(v.failures.len(), 1, "{v:?}");
        assert!(v.failures[0].starts_with("file descriptors"), "{v:?}");
    }

    #[test]
    fn a_silent_minute_fails_and_a_short_run_has_no_resource_verdict() {
        let mut r = rows(3, |_| 1, |_| 1);
        let v = flatness(&r);
        assert!(v.is_flat(), "{v:?}");
        assert!(v.lines[1].contains("too short"), "{v:?}");
        r[1].acked = 0;
        let v = flatness(&r);
        assert_eq!(v.failures, vec!["no record acknowledged in minute(s) [2]"]);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut v: Vec<u32> = (1..=100).rev().collect();
        assert_eq!(quantile(&mut v, 0.5), Some(50));
        assert_eq!(quantile(&mut v, 0.99), Some(99));
        assert_eq!(quantile(&mut v, 1.0), Some(100));
        assert_eq!(quantile(&mut [7], 0.99), Some(7));
        assert_eq!(quantile(&mut [], 0.5), None);
    }

    #[test]
    fn counts_this_processes_tcp_sockets() {
        // Listener on 0x2328 (9000); a client connected to it (ours); the accepted end;
        // an upstream connection in CLOSE_WAIT; a socket of another process.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 11 1 0\n\
           1: 0100007F:A000 0100007F:2328 01 00000000:00000000 00:00000000 00000000 0 0 12 1 0\n\
           2: 0100007F:2328 0100007F:A000 01 00000000:00000000 00:00000000 00000000 0 0 13 1 0\n\
           3: 0100007F:A001 0100007F:1F90 08 00000000:00000000 00:00000000 00000000 0 0 14 1 0\n\
           4: 0100007F:A002 0100007F:2328 01 00000000:00000000 00:00000000 00000000 0 0 99 1 0\n\
           0: 00000000000000000000000001000000:A003 00000000000000000000000001000000:2328 01 00000000:00000000 00:00000000 00000000 0 0 15 1 0\n";
        let ours: HashSet<u64> = [11, 12, 13, 14, 15].into();
        assert_eq!(
            tcp_census(table, &ours),
            TcpCensus {
                sockets: 5,
                client: 2,
                close_wait: 1
            }
        );
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
        assert_eq!(status_field("VmRSS:\t    2184 kB\n", "VmRSS:"), 2184);
    }

    #[test]
    fn samples_this_process() {
        let _listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = ProcessSample::now();
        assert!(s.rss_kib > 0 && s.fds > 0 && s.threads > 0, "{s:?}");
        assert!(s.tcp_sockets >= 1, "{s:?}");
    }
}
