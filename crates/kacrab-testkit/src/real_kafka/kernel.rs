//! A blackhole in the kernel rather than in the lying proxy: `iptables` drops every
//! packet to and from the broker's loopback port, so the producer's connections stay open
//! while nothing passes (its socket send buffer fills, new dials get no SYN-ACK), and
//! TCP retransmits what was held once the rules go. This is the fault as a new user meets
//! it, with Kafka's default timeouts. Needs root and `iptables`; skips otherwise.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::burst::{Burst, Step};
use crate::scenarios::Report;
use crate::Factory;

use super::{create_topic, env_or_skip, fresh_topic, produce_and_verify_with, records, skipped};

/// `iptables` DROP rules on one loopback port, both ways; removed on drop, so a failing
/// scenario never leaves the broker cut off.
struct KernelBlackhole {
    port: u16,
    on: AtomicBool,
}

impl KernelBlackhole {
    /// The rules: to the port (requests, SYNs) and from it (responses, SYN-ACKs).
    fn rules(&self) -> [Vec<String>; 2] {
        let rule = |dir: &str| {
            [
                "INPUT",
                "-i",
                "lo",
                "-p",
                "tcp",
                dir,
                &self.port.to_string(),
                "-j",
                "DROP",
            ]
            .map(String::from)
            .to_vec()
        };
        [rule("--dport"), rule("--sport")]
    }

    fn iptables(op: &str, rule: &[String]) -> Result<(), String> {
        let out = Command::new("iptables")
            .args(["-w", op])
            .args(rule)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running iptables: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "iptables {op} {}: {}",
                rule.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    fn cut(&self) -> Result<(), String> {
        if !self.on.swap(true, Ordering::SeqCst) {
            for r in self.rules() {
                Self::iptables("-I", &r)?;
            }
        }
        Ok(())
    }

    fn heal(&self) {
        if self.on.swap(false, Ordering::SeqCst) {
            for r in self.rules() {
                if let Err(e) = Self::iptables("-D", &r) {
                    eprintln!("testkit: healing the kernel blackhole: {e}");
                }
            }
        }
    }
}

impl Drop for KernelBlackhole {
    fn drop(&mut self) {
        self.heal();
    }
}

/// Why the kernel blackhole cannot run here, if it cannot: not root, or no `iptables`
/// that can list the filter table.
fn unavailable() -> Option<String> {
    let listed = Command::new("iptables")
        .args(["-w", "-S", "INPUT"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match listed {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!(
            "`iptables -S INPUT` failed ({s}): this needs root (CAP_NET_ADMIN)"
        )),
        Err(e) => Some(format!(
            "no iptables ({e}); install it with `apt-get install -y iptables`"
        )),
    }
}

/// `KACRAB_KAFKA_BOOTSTRAP` (a single broker on loopback), Kafka's default timeouts
/// (`request.timeout.ms` 30 s, `delivery.timeout.ms` 120 s) and 50,000 records of 100
/// bytes sent as fast as the producer takes them (`KACRAB_REAL_RECORDS`); after the 5th
/// of 50 chunks the broker's port is blackholed in the kernel both ways for
/// `KACRAB_KERNEL_BLACKHOLE_S` seconds (40 as the issue has it). The blackhole is shorter than `delivery.timeout.ms` −
/// `request.timeout.ms`: every record must be acknowledged once it heals, exactly once,
/// in order (read back by the console consumer). Skips unless
/// `KACRAB_KERNEL_BLACKHOLE_S` is set and it runs as root with `iptables`.
pub fn real_kernel_blackhole(factory: Factory) -> Result<Report, String> {
    const NAME: &str = "real_kernel_blackhole";
    let Some(bootstrap) = env_or_skip("KACRAB_KAFKA_BOOTSTRAP", NAME, "start-single") else {
        return Ok(skipped(NAME));
    };
    let Some(hold) = std::env::var("KACRAB_KERNEL_BLACKHOLE_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_secs)
    else {
        println!(
            "SKIPPED {NAME}: KACRAB_KERNEL_BLACKHOLE_S is not set (the blackhole's length \
             in seconds, 40 as a new user meets it; about 95 s per driver, so not in CI)"
        );
        return Ok(skipped(NAME));
    };
    if let Some(why) = unavailable() {
        println!("SKIPPED {NAME}: {why}");
        return Ok(skipped(NAME));
    }
    let first = bootstrap.split(',').next().unwrap_or_default().trim();
    let port: u16 = first
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or_else(|| format!("{NAME}: no port in {first:?}"))?;
    let topic = fresh_topic("kacrab-kernel-blackhole");
    create_topic(&bootstrap, &topic, 6, 1)?;
    let total = records(50_000);
    let spec = Burst {
        topic,
        partitions: 6,
        records: total,
        value_size: 100,
        chunk: (total / 50).max(1),
        pause: Duration::ZERO,
        deadline: Duration::from_secs(400),
    };
    let cut = Arc::new(KernelBlackhole {
        port,
        on: AtomicBool::new(false),
    });
    let c_hook = Arc::clone(&cut);
    let hook = move |k: u64, _| {
        if k == 5 {
            c_hook.cut()?;
            let c = Arc::clone(&c_hook);
            std::thread::spawn(move || {
                std::thread::sleep(hold);
                c.heal();
            });
        }
        Ok(Step::Continue)
    };
    let props = [
        ("request.timeout.ms", "30000"),
        ("delivery.timeout.ms", "120000"),
    ];
    let result = produce_and_verify_with(
        NAME,
        factory,
        &bootstrap,
        &bootstrap,
        spec,
        &props,
        hook,
        || Ok(()),
    );
    // Never leave the broker cut off, whatever happened.
    cut.heal();
    let mut report = result?;
    report.faults = 1;
    report.notes.push(format!(
        "a {hold:?} iptables DROP on port {port}, both ways \
         (request.timeout.ms 30000, delivery.timeout.ms 120000)"
    ));
    Ok(report)
}
