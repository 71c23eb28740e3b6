//! The blocking producer's transactional example, the same run as kacrab-tokio's
//! `transactional` example (flags, records and last line are the shared ones of
//! `examples/support/txn_cli.rs`): each transaction writes a batch of records and commits
//! a simulated consumer group's input offset with them (KIP-98, KIP-447); every third
//! transaction is aborted.
//!
//! ```sh
//! cargo run --release -p kacrab-blocking --example blocking_transactional -- \
//!     --bootstrap 127.0.0.1:9092 --topic out --partitions 3 --transactions 10 \
//!     --records 100 [--property key=value]...
//! ```
//! The last line is `transactional: committed=C aborted=A records_committed=R`; an error
//! is printed (with its cause) and the exit code is 1.

#[path = "../../../examples/support/produce_cli.rs"]
mod produce_cli;
#[path = "../../../examples/support/txn_cli.rs"]
mod txn_cli;

use std::process::ExitCode;

use kacrab_blocking::Producer;
use txn_cli::{Args, Progress};

fn main() -> ExitCode {
    let args = match Args::from_env() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("transactional: {e}\n{}", txn_cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("transactional: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let producer = Producer::from_properties(&args.producer_properties())?;
    producer.init_transactions()?;
    let group = args.group_metadata();
    let mut progress = Progress::default();
    for t in 0..args.transactions {
        producer.begin_transaction()?;
        let mut pending = Vec::with_capacity(args.records as usize);
        for record in args.records(t) {
            pending.push(producer.send(record)?);
        }
        for p in pending {
            p.wait()?;
        }
        if Args::aborts(t) {
            producer.abort_transaction()?;
            progress.aborted(t);
        } else {
            producer.send_offsets_to_transaction(progress.offsets(args), group.clone())?;
            producer.commit_transaction()?;
            progress.committed(t, args);
        }
    }
    producer.close()?;
    println!("{}", progress.summary());
    Ok(())
}
