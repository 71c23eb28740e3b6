//! The command line both `transactional` examples share (kacrab-tokio's and
//! kacrab-blocking's), so their runs compare flag for flag. Included by each with
//! `#[path = "../../../examples/support/txn_cli.rs"] mod txn_cli;`.
//!
//! ```text
//! transactional --bootstrap HOST:PORT --topic T [--partitions P] [--transactions N]
//!     [--records R] [--group G] [--input TOPIC] [--transactional-id ID]
//!     [--config producer.properties] [--property key=value]...
//! ```
//!
//! Transaction `t` sends records `t*R .. (t+1)*R` (key and value `n` in decimal ASCII,
//! partition `n mod P`), and then either commits them together with the "consumed" input
//! offset for group `G` (KIP-447), or, every third transaction (`t mod 3 == 2`), aborts.
//! `--property` sets any Kafka key (repeatable; a later one wins), e.g. the
//! `security.protocol`, `ssl.*` and `sasl.*` keys of a secured cluster; `--config FILE`
//! reads them from a Java properties file (the `produce` examples' parser: the including
//! example declares `mod produce_cli` too). The last stdout
//! line is `transactional: committed=C aborted=A records_committed=R`.

#![allow(dead_code)]

// The drivers re-export these same types.
use kacrab_driver::ProducerRecord;
use kacrab_idempotence::{ConsumerGroupMetadata, OffsetToCommit, Topic, TopicPartition};

/// The usage line.
pub const USAGE: &str = "usage: transactional --bootstrap HOST:PORT --topic T [--partitions P] \
    [--transactions N] [--records R] [--group G] [--input TOPIC] [--transactional-id ID] \
    [--config FILE] [--property key=value]...";

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// `--bootstrap`: `bootstrap.servers`.
    pub bootstrap: String,
    /// `--topic`: where the records go.
    pub topic: String,
    /// `--partitions` (default 1).
    pub partitions: i32,
    /// `--transactions` (default 10).
    pub transactions: u32,
    /// `--records` per transaction (default 100).
    pub records: u32,
    /// `--group`: the consumer group whose offsets are committed (default `kacrab-example`).
    pub group: String,
    /// `--input`: the "consumed" topic (must exist; default: `--topic`).
    pub input: String,
    /// `--transactional-id` (default `kacrab-transactional-example`).
    pub transactional_id: String,
    /// `--property key=value`, in order.
    pub properties: Vec<(String, String)>,
}

impl Args {
    /// The process's command line; on `Err`, the message to print before the usage.
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::args().skip(1))
    }

    /// Parses flags (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut a = Self {
            bootstrap: String::new(),
            topic: String::new(),
            partitions: 1,
            transactions: 10,
            records: 100,
            group: "kacrab-example".into(),
            input: String::new(),
            transactional_id: "kacrab-transactional-example".into(),
            properties: Vec::new(),
        };
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let num = |v: &str| v.parse::<u32>().map_err(|e| format!("{flag}: {e}"));
            match flag.as_str() {
                "--bootstrap" => a.bootstrap = value,
                "--topic" => a.topic = value,
                "--partitions" => {
                    a.partitions = i32::try_from(num(&value)?).map_err(|e| e.to_string())?
                }
                "--transactions" => a.transactions = num(&value)?,
                "--records" => a.records = num(&value)?,
                "--group" => a.group = value,
                "--input" => a.input = value,
                "--transactional-id" => a.transactional_id = value,
                "--property" => {
                    let (k, v) = value
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| format!("--property {value}: expected key=value"))?;
                    a.properties.push((k.to_owned(), v.to_owned()));
                }
                "--config" => a
                    .properties
                    .extend(crate::produce_cli::read_properties_file(&value)?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if a.bootstrap.is_empty() || a.topic.is_empty() {
            return Err("--bootstrap and --topic are required".into());
        }
        if a.partitions < 1 {
            return Err("--partitions must be at least 1".into());
        }
        if a.input.is_empty() {
            // The consumed topic must exist (Kafka answers offsets for an unknown one
            // with a retriable error); by default the example "consumes" its own output.
            a.input = a.topic.clone();
        }
        Ok(a)
    }

    /// The producer's properties: `bootstrap.servers`, `transactional.id`, then
    /// `--property`'s.
    pub fn producer_properties(&self) -> Vec<(&str, &str)> {
        let mut props = vec![
            ("bootstrap.servers", self.bootstrap.as_str()),
            ("transactional.id", self.transactional_id.as_str()),
        ];
        props.extend(
            self.properties
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        props
    }

    /// Record `n`'s partition.
    pub fn partition(&self, n: u64) -> i32 {
        (n % self.partitions as u64) as i32
    }

    /// Whether transaction `t` is aborted (every third one).
    pub fn aborts(t: u32) -> bool {
        t % 3 == 2
    }

    /// The simulated consumer's group (a static member of no generation).
    pub fn group_metadata(&self) -> ConsumerGroupMetadata {
        ConsumerGroupMetadata::new(self.group.clone())
    }

    /// Transaction `t`'s records: number `n` has key and value `n` in decimal.
    pub fn records(&self, t: u32) -> impl Iterator<Item = ProducerRecord> + '_ {
        let topic = Topic::new(&self.topic);
        (0..self.records).map(move |i| {
            let n = u64::from(t) * u64::from(self.records) + u64::from(i);
            ProducerRecord::new(topic.clone(), self.partition(n), format!("{n}"))
                .with_key(format!("{n}"))
        })
    }
}

/// The simulated input and what the transactions did: each transaction consumes
/// `--records` input records; an aborted one leaves the input where it was (it is
/// processed again), a committed one commits the offset after them.
#[derive(Debug, Default)]
pub struct Progress {
    input_offset: i64,
    committed: u32,
    aborted: u32,
    records_committed: u64,
}

impl Progress {
    /// The offsets transaction `t` commits with its records (`--input`, partition 0).
    pub fn offsets(&self, args: &Args) -> Vec<OffsetToCommit> {
        vec![OffsetToCommit::new(
            TopicPartition::new(args.input.as_str(), 0),
            self.input_offset + i64::from(args.records),
        )]
    }

    /// Transaction `t` was aborted.
    pub fn aborted(&mut self, t: u32) {
        self.aborted += 1;
        eprintln!("transaction {t}: aborted");
    }

    /// Transaction `t` was committed.
    pub fn committed(&mut self, t: u32, args: &Args) {
        self.input_offset += i64::from(args.records);
        self.committed += 1;
        self.records_committed += u64::from(args.records);
        eprintln!(
            "transaction {t}: committed, input offset {}",
            self.input_offset
        );
    }

    /// The last stdout line.
    pub fn summary(&self) -> String {
        format!(
            "transactional: committed={} aborted={} records_committed={}",
            self.committed, self.aborted, self.records_committed
        )
    }
}
