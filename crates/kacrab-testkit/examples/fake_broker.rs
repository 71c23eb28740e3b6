//! A standing krafka `FakeBroker` for measuring clients against a broker that costs
//! almost nothing (issue 16 item 4: records/s "on FakeBroker" as well as on Kafka).
//!
//! ```text
//! fake_broker --topics T1,T2,... --partitions P
//! ```
//!
//! Starts one FakeBroker node on a fresh loopback port, creates each topic with `P`
//! partitions, prints `BOOTSTRAP=127.0.0.1:PORT` on stdout (one line, flushed) and serves
//! until its standard input closes. Used by `scripts/bench_vs_peers.sh --fake-broker`.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut topics = Vec::new();
    let mut partitions = 6;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        match (flag.as_str(), value) {
            ("--topics", Some(v)) => topics = v.split(',').map(str::to_string).collect(),
            ("--partitions", Some(v)) => match v.parse() {
                Ok(n) => partitions = n,
                Err(_) => return usage(),
            },
            _ => return usage(),
        }
    }
    let cluster = match kacrab_testkit::Cluster::start(1) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fake_broker: {e}");
            return ExitCode::FAILURE;
        }
    };
    for topic in &topics {
        if let Err(e) = cluster.create_topic(topic, partitions) {
            eprintln!("fake_broker: topic {topic}: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!("BOOTSTRAP={}", cluster.bootstrap());
    let _ = io::stdout().flush();
    // Serve until whoever started us closes our standard input.
    for line in io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: fake_broker --topics T1,T2,... --partitions P");
    ExitCode::from(2)
}
