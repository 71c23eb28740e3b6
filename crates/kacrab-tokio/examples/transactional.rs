//! A transactional producer: each transaction writes a batch of records and commits the
//! consumer offsets they were derived from for a named group, so a consume-transform-
//! produce loop advances its input and writes its output atomically (KIP-98, KIP-447).
//! The consumer side is simulated: "input offsets" advance by the records processed.
//!
//! ```sh
//! cargo run --release -p kacrab-tokio --example transactional -- \
//!     --bootstrap 127.0.0.1:9092 --topic out --partitions 3 --transactions 10 \
//!     --records 100 --group my-group [--input an-existing-topic] [--property key=value]...
//! ```
//! Every third transaction is aborted to show that read_committed readers never see it
//! (`scripts/kafka.sh consume <bs> out 100000 --isolation read_committed`). The flags are
//! the shared ones of `examples/support/txn_cli.rs` (kacrab-blocking's `transactional`
//! example takes the same). The last line is
//! `transactional: committed=C aborted=A records_committed=R`; an error is printed
//! (with its cause) and the exit code is 1.

#[path = "../../../examples/support/produce_cli.rs"]
mod produce_cli;
#[path = "../../../examples/support/txn_cli.rs"]
mod txn_cli;

use std::process::ExitCode;

use kacrab_tokio::Producer;
use txn_cli::{Args, Progress};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match Args::from_env() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("transactional: {e}\n{}", txn_cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("transactional: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let producer = Producer::from_properties(&args.producer_properties())?;
    producer.init_transactions().await?;
    let group = args.group_metadata();
    let mut progress = Progress::default();
    for t in 0..args.transactions {
        producer.begin_transaction().await?;
        let mut pending = Vec::with_capacity(args.records as usize);
        for record in args.records(t) {
            pending.push(producer.send(record).await?);
        }
        for p in pending {
            p.await?;
        }
        if Args::aborts(t) {
            producer.abort_transaction().await?;
            progress.aborted(t);
        } else {
            producer
                .send_offsets_to_transaction(progress.offsets(args), group.clone())
                .await?;
            producer.commit_transaction().await?;
            progress.committed(t, args);
        }
    }
    producer.close().await;
    println!("{}", progress.summary());
    Ok(())
}
