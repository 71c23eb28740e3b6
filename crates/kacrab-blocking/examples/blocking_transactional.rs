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

use kacrab_blocking::{ConsumerGroupMetadata, OffsetToCommit, Producer, ProducerRecord, Topic};
use kacrab_idempotence::TopicPartition;
use txn_cli::Args;

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
    let topic = Topic::new(&args.topic);
    let group = ConsumerGroupMetadata {
        group_id: args.group.clone(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
    };
    let (mut committed, mut aborted, mut records_committed) = (0u32, 0u32, 0u64);
    let mut input_offset = 0i64;
    for t in 0..args.transactions {
        producer.begin_transaction()?;
        let mut pending = Vec::with_capacity(args.records as usize);
        for i in 0..args.records {
            let n = u64::from(t) * u64::from(args.records) + u64::from(i);
            let record = ProducerRecord::new(topic.clone(), args.partition(n), format!("{n}"))
                .with_key(format!("{n}"));
            pending.push(producer.send(record)?);
        }
        for p in pending {
            p.wait()?;
        }
        input_offset += i64::from(args.records);
        let offsets = vec![OffsetToCommit {
            partition: TopicPartition::new(args.input.as_str(), 0),
            offset: input_offset,
            leader_epoch: None,
            metadata: None,
        }];
        if Args::aborts(t) {
            producer.abort_transaction()?;
            input_offset -= i64::from(args.records); // the input is processed again
            aborted += 1;
            eprintln!("transaction {t}: aborted");
        } else {
            producer.send_offsets_to_transaction(offsets, group.clone())?;
            producer.commit_transaction()?;
            committed += 1;
            records_committed += u64::from(args.records);
            eprintln!("transaction {t}: committed, input offset {input_offset}");
        }
    }
    producer.close()?;
    println!("transactional: committed={committed} aborted={aborted} records_committed={records_committed}");
    Ok(())
}
