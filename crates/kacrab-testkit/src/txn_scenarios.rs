//! Transactions against FakeBroker, once for every adapter: transaction version 1
//! (AddPartitionsToTxn, EndTxn v4) and 2 (KIP-890: implicit partitions, EndTxn v5
//! bumping the epoch). Commit, abort after every record was written, commit again, then a
//! second producer with the same `transactional.id` fences the first; read_committed must
//! show exactly the committed records, once each.

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::cluster::Cluster;
use crate::scenarios::Report;
use crate::Factory;

const TOPIC: &str = "txn-events";

fn run(name: &'static str, factory: Factory, version: i16) -> Result<Report, String> {
    let cluster = Cluster::start(1)?;
    cluster.broker().set_transaction_version(version);
    cluster.create_topic(TOPIC, 3)?;
    let bootstrap = cluster.bootstrap();
    let props = [
        ("bootstrap.servers", bootstrap.as_str()),
        ("transactional.id", "tx-kacrab"),
        ("linger.ms", "5"),
    ];
    let producer = factory(&props)?;
    producer.init_transactions()?;
    let mut committed = BTreeSet::new();
    for (round, (count, commit)) in [(100, true), (50, false), (30, true)]
        .into_iter()
        .enumerate()
    {
        producer.begin_transaction()?;
        let mut pending = Vec::new();
        for i in 0..count {
            let value = format!("r{round}-{i}");
            if commit {
                committed.insert(value.clone());
            }
            pending.push(producer.send(TOPIC, i % 3, Bytes::new(), Bytes::from(value)));
        }
        // Every record is written before the transaction ends: the aborted ones are in the
        // log too, and must stay invisible to read_committed.
        for p in pending {
            p.wait()?;
        }
        if commit {
            producer.commit_transaction()?;
        } else {
            producer.abort_transaction()?;
        }
    }
    // A second producer with the same transactional id fences the first.
    let second = factory(&props)?;
    second.init_transactions()?;
    producer.begin_transaction()?;
    let zombie = producer
        .send(TOPIC, 0, Bytes::new(), Bytes::from_static(b"zombie"))
        .wait();
    if producer.commit_transaction().is_ok() {
        return Err(format!("{name}: the fenced producer committed"));
    }
    second.close()?;
    let _ = producer.close();
    let read = |committed_only: bool| -> Result<Vec<String>, String> {
        let records = if committed_only {
            cluster.broker().committed_records(TOPIC)
        } else {
            cluster.broker().all_records(TOPIC)
        }
        .map_err(|e| format!("{name}: reading the log: {e}"))?;
        Ok(records
            .iter()
            .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
            .collect())
    };
    let visible = read(true)?;
    let set: BTreeSet<String> = visible.iter().cloned().collect();
    if visible.len() != set.len() {
        return Err(format!("{name}: a committed record is visible twice"));
    }
    if set != committed {
        let extra: Vec<_> = set.difference(&committed).take(8).collect();
        let missing: Vec<_> = committed.difference(&set).take(8).collect();
        return Err(format!(
            "{name}: read_committed differs: extra {extra:?}, missing {missing:?}"
        ));
    }
    let all = read(false)?;
    // A fenced producer's record reported not possibly written must not be in the log
    // (read_uncommitted: not even in an aborted transaction).
    if let Err(f) = &zombie {
        if !f.possibly_written && all.iter().any(|v| v == "zombie") {
            return Err(format!(
                "{name}: the fenced producer's record failed as not possibly written ({f}), \
                 yet it is in the log"
            ));
        }
    }
    let all = all.len();
    if all < 180 {
        return Err(format!(
            "{name}: only {all} records in the log; the aborted ones were not written"
        ));
    }
    Ok(Report {
        scenario: name,
        ..Report::default()
    })
}

/// Transaction version 1.
pub fn transactions_v1(factory: Factory) -> Result<Report, String> {
    run("transactions_v1", factory, 1)
}

/// Transaction version 2 (KIP-890).
pub fn transactions_v2(factory: Factory) -> Result<Report, String> {
    run("transactions_v2", factory, 2)
}
