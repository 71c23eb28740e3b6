//! Consume-transform-produce, exactly once: krafka's consumer reads `<input>`, each
//! batch is uppercased into `<output>` by a transactional kacrab producer, and the
//! batch's input offsets are committed *in the same transaction* (KIP-98, KIP-447).
//! Output and input position become visible together or not at all, so a crash at any
//! point followed by a restart with the same `transactional.id` and group loses and
//! duplicates nothing for a `read_committed` reader.
//!
//! ```sh
//! cargo run -p kacrab-tokio --example consume_transform_produce -- \
//!     127.0.0.1:9092 input output my-group my-transactional-id [stop-after-idle-secs]
//! ```
//! Each output value is the input value uppercased, then ` <- <topic>-<partition>@<offset>`
//! of the record it came from. Progress goes to stdout, one line per step (`sent txn K:
//! R records`, `committing txn K`, `committed txn K: R records, next offsets P:O,...`);
//! without `stop-after-idle-secs` it runs until killed.
//! `tests/real_kafka_consume_transform_produce.rs` SIGKILLs it mid-run and restarts it.

use std::collections::BTreeMap;
use std::error::Error;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use kacrab_tokio::{
    ConsumerGroupMetadata, OffsetToCommit, Producer, ProducerRecord, TopicPartition,
};
use krafka::consumer::{AutoOffsetReset, Consumer, ConsumerRecord, IsolationLevel};
use krafka::Kafka;

/// Records per poll, hence per transaction: a bounded batch keeps each transaction short.
const BATCH: i32 = 100;
const POLL: Duration = Duration::from_millis(500);

/// The command line: `<bootstrap> <input> <output> <group> <transactional.id> [idle-secs]`.
pub struct Args {
    pub bootstrap: String,
    pub input: String,
    pub output: String,
    pub group: String,
    pub transactional_id: String,
    /// Stop (cleanly) after this long with partitions assigned and nothing to read.
    pub stop_after_idle: Option<Duration>,
}

impl Args {
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        const USAGE: &str =
            "usage: <bootstrap> <input> <output> <group> <transactional.id> [stop-after-idle-secs]";
        let mut next = || args.next().ok_or(USAGE);
        let parsed = Self {
            bootstrap: next()?,
            input: next()?,
            output: next()?,
            group: next()?,
            transactional_id: next()?,
            stop_after_idle: None,
        };
        let stop_after_idle = match args.next() {
            Some(secs) => Some(Duration::from_secs(secs.parse().map_err(|_| USAGE)?)),
            None => None,
        };
        Ok(Self {
            stop_after_idle,
            ..parsed
        })
    }
}

fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("consume_transform_produce: {usage}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("consume_transform_produce: {e}");
            ExitCode::FAILURE
        }
    }
}

pub async fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    // The producer comes first. init_transactions fences every earlier instance with this
    // transactional.id (a zombie can no longer commit) and completes the transaction a
    // crashed one left open, so the group's offsets are final before the consumer
    // reads them.
    let producer = Producer::from_properties(&[
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("transactional.id", args.transactional_id.as_str()),
    ])?;
    producer.init_transactions().await?;

    let kafka = Kafka::builder(args.bootstrap.as_str())
        .client_id(args.transactional_id.as_str())
        .connect()
        .await?;
    let consumer = kafka
        .consumer(args.group.as_str())
        // Offsets are committed by the transaction only: a commit of its own could move
        // the group past records whose output was then aborted.
        .enable_auto_commit(false)
        // Skips aborted input, and makes the offset fetch wait for a pending
        // transactional offset commit (KIP-447's require_stable).
        .isolation_level(IsolationLevel::ReadCommitted)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        // A static member (KIP-345): a restarted instance takes over its partitions at
        // once, instead of waiting for the crashed one's session to expire.
        .group_instance_id(args.transactional_id.as_str())
        .max_poll_records(BATCH)
        .build()
        .await?;
    consumer.subscribe([args.input.as_str()]).await?;

    let mut txn = 0u64;
    let mut last_input = Instant::now();
    loop {
        let records = consumer.poll(POLL).await?;
        if records.is_empty() {
            if consumer.assignment().await.is_empty() {
                last_input = Instant::now(); // still joining the group: not idle yet
            } else if args
                .stop_after_idle
                .is_some_and(|limit| last_input.elapsed() >= limit)
            {
                break;
            }
            continue;
        }
        last_input = Instant::now();
        txn += 1;
        producer.begin_transaction().await?;
        let committed = async {
            let next = transform(&producer, &consumer, &args.output, &records, txn).await?;
            producer.commit_transaction().await?;
            Ok::<_, Box<dyn Error>>(next)
        };
        match committed.await {
            Ok(next) => println!(
                "committed txn {txn}: {} records, next offsets {next}",
                records.len()
            ),
            Err(e) => {
                // Nothing of this batch becomes visible; read it again. An abort that
                // fails (fenced by a newer instance, or fatal) ends the loop.
                eprintln!("aborting txn {txn}: {e}");
                producer.abort_transaction().await?;
                rewind(&consumer, &records).await?;
            }
        }
    }
    producer.close().await;
    consumer.close().await?;
    Ok(())
}

/// Sends the batch's output and its input offsets in the open transaction; returns the
/// offsets as `partition:next,...`.
async fn transform(
    producer: &Producer,
    consumer: &Consumer,
    output: &str,
    records: &[ConsumerRecord],
    txn: u64,
) -> Result<String, Box<dyn Error>> {
    let mut deliveries = Vec::with_capacity(records.len());
    let mut next: BTreeMap<i32, (i64, Option<i32>)> = BTreeMap::new();
    for r in records {
        let value = r.value.as_deref().unwrap_or_default().to_ascii_uppercase();
        let mut value = String::from_utf8_lossy(&value).into_owned();
        value.push_str(&format!(" <- {}-{}@{}", r.topic, r.partition, r.offset));
        let mut out = ProducerRecord::unkeyed(output, value);
        if let Some(key) = &r.key {
            out = out.with_key(key.clone());
        }
        deliveries.push(producer.send(out).await?);
        // The offset to commit is the next one to read.
        next.insert(r.partition, (r.offset + 1, r.leader_epoch));
    }
    for delivery in deliveries {
        delivery.await?;
    }
    // In the log now, but hidden from read_committed readers until the commit.
    println!("sent txn {txn}: {} records", records.len());
    // The consumer's current identity, read again for every transaction: the group
    // coordinator refuses the offsets of a member that has lost its partitions to a
    // rebalance (generation and member id, KIP-447).
    let group = consumer
        .group_metadata()
        .await
        .ok_or("not a member of the group right now")?;
    let group = ConsumerGroupMetadata::new(group.group_id())
        .with_member(group.generation_id(), group.member_id())
        .with_group_instance_id(group.group_instance_id().map(str::to_owned));
    let input = records[0].topic.as_ref();
    let offsets = next
        .iter()
        .map(|(&p, &(offset, epoch))| {
            OffsetToCommit::new(TopicPartition::new(input, p), offset).with_leader_epoch(epoch)
        })
        .collect();
    producer.send_offsets_to_transaction(offsets, group).await?;
    println!("committing txn {txn}");
    Ok(next
        .iter()
        .map(|(p, (o, _))| format!("{p}:{o}"))
        .collect::<Vec<_>>()
        .join(","))
}

/// Seeks every partition of an aborted batch back to its first record, so the batch is
/// read again. A partition the group has moved to another member since is left alone:
/// its new owner starts from the offset the group committed.
async fn rewind(consumer: &Consumer, records: &[ConsumerRecord]) -> krafka::Result<()> {
    let topic = &records[0].topic;
    let assigned = consumer.assignment().await;
    let assigned = assigned.get(topic.as_ref()).map_or(&[][..], Vec::as_slice);
    let mut first = BTreeMap::new();
    for r in records {
        first.entry(r.partition).or_insert(r.offset);
    }
    for (partition, offset) in first {
        if assigned.contains(&partition) {
            consumer.seek(topic, partition, offset).await?;
        }
    }
    Ok(())
}
