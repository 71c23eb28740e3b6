//! A transactional producer: each transaction writes a batch of records and commits the
//! consumer offsets they were derived from for a named group, so a consume-transform-
//! produce loop advances its input and writes its output atomically (KIP-98, KIP-447).
//! The consumer side is simulated: "input offsets" advance by the records processed.
//!
//! ```sh
//! cargo run --release -p kacrab-tokio --example transactional -- \
//!     --bootstrap 127.0.0.1:9092 --topic out --partitions 3 --transactions 10 \
//!     --records 100 --group my-group [--input an-existing-topic]
//! ```
//! Every third transaction is aborted to show that read_committed readers never see it
//! (`scripts/kafka.sh consume <bs> out 100000 --isolation read_committed`). The last line
//! is `transactional: committed=C aborted=A records_committed=R`.

use kacrab_tokio::{
    ConsumerGroupMetadata, OffsetToCommit, Producer, ProducerRecord, Topic, TopicPartition,
};

struct Args {
    bootstrap: String,
    topic: String,
    partitions: i32,
    transactions: u32,
    records: u32,
    group: String,
    input: String,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        bootstrap: String::new(),
        topic: String::new(),
        partitions: 1,
        transactions: 10,
        records: 100,
        group: "kacrab-example".into(),
        input: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u32>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--bootstrap" => a.bootstrap = value,
            "--topic" => a.topic = value,
            "--partitions" => a.partitions = num(&value)? as i32,
            "--transactions" => a.transactions = num(&value)?,
            "--records" => a.records = num(&value)?,
            "--group" => a.group = value,
            "--input" => a.input = value,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if a.input.is_empty() {
        // The consumed topic must exist (Kafka answers offsets for an unknown one with a
        // retriable error); by default the example "consumes" its own output topic.
        a.input = a.topic.clone();
    }
    if a.bootstrap.is_empty() || a.topic.is_empty() {
        return Err("usage: transactional --bootstrap HOST:PORT --topic T [--partitions P] [--transactions N] [--records R] [--group G] [--input TOPIC]".into());
    }
    Ok(a)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse()?;
    let producer = Producer::from_properties(&[
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("transactional.id", "kacrab-transactional-example"),
    ])?;
    producer.init_transactions().await?;
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
        producer.begin_transaction().await?;
        let mut pending = Vec::with_capacity(args.records as usize);
        for i in 0..args.records {
            let n = u64::from(t) * u64::from(args.records) + u64::from(i);
            let partition = (n % args.partitions as u64) as i32;
            let record = ProducerRecord::new(topic.clone(), partition, format!("{n}"))
                .with_key(format!("{n}"));
            pending.push(producer.send(record).await?);
        }
        for p in pending {
            p.await?;
        }
        input_offset += i64::from(args.records);
        let offsets = vec![OffsetToCommit {
            partition: TopicPartition::new(args.input.as_str(), 0),
            offset: input_offset,
            leader_epoch: None,
            metadata: None,
        }];
        if t % 3 == 2 {
            producer.abort_transaction().await?;
            input_offset -= i64::from(args.records); // the input is processed again
            aborted += 1;
            eprintln!("transaction {t}: aborted");
        } else {
            producer
                .send_offsets_to_transaction(offsets, group.clone())
                .await?;
            producer.commit_transaction().await?;
            committed += 1;
            records_committed += u64::from(args.records);
            eprintln!("transaction {t}: committed, input offset {input_offset}");
        }
    }
    producer.close().await;
    println!("transactional: committed={committed} aborted={aborted} records_committed={records_committed}");
    Ok(())
}
