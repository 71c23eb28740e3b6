//! Transactions through the blocking producer against krafka's FakeBroker, with
//! transaction version 1 (AddPartitionsToTxn, EndTxn v4) and 2 (KIP-890: implicit
//! partitions, EndTxn v5 bumping the epoch). What read_committed sees is checked against
//! what was committed.

use std::collections::BTreeSet;

use kacrab_blocking::{Producer, ProducerRecord, TxnError};
use kacrab_testkit::cluster::Cluster;

const TOPIC: &str = "txn-events";

fn values(records: &[krafka::consumer::ConsumerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

fn run(version: i16) {
    let cluster = Cluster::start(1).expect("FakeBroker");
    cluster.broker().set_transaction_version(version);
    cluster.create_topic(TOPIC, 3).expect("topic");
    let bootstrap = cluster.bootstrap();
    {
        let props = [
            ("bootstrap.servers", bootstrap.as_str()),
            ("transactional.id", "tx-kacrab"),
            ("linger.ms", "5"),
        ];
        let producer = Producer::from_properties(&props).expect("producer");
        producer.init_transactions().expect("init");
        let mut committed = BTreeSet::new();
        for (round, (count, commit)) in [(100, true), (50, false), (30, true)]
            .into_iter()
            .enumerate()
        {
            producer.begin_transaction().expect("begin");
            let mut pending = Vec::new();
            for i in 0..count {
                let value = format!("r{round}-{i}");
                if commit {
                    committed.insert(value.clone());
                }
                pending.push(
                    producer
                        .send(ProducerRecord::new(TOPIC, i % 3, value))
                        .expect("queued"),
                );
            }
            // Every record is written before the transaction ends: the aborted ones are
            // in the log too, and must stay invisible to read_committed.
            for p in pending {
                p.wait().expect("delivered");
            }
            if commit {
                producer.commit_transaction().expect("commit");
            } else {
                producer.abort_transaction().expect("abort");
            }
        }
        // A second producer with the same transactional id fences the first.
        let second = Producer::from_properties(&props).expect("second producer");
        second.init_transactions().expect("second init");
        producer
            .begin_transaction()
            .expect("begin before learning it is fenced");
        if let Ok(d) = producer.send(ProducerRecord::new(TOPIC, 0, "zombie")) {
            let _ = d.wait();
        }
        let fenced = producer.commit_transaction();
        assert!(
            matches!(
                fenced,
                Err(TxnError::ProducerFenced | TxnError::Abortable(_) | TxnError::Fatal(_))
            ),
            "the fenced producer must not commit: {fenced:?}"
        );
        second.close().unwrap();
        let _ = producer.close_timeout(std::time::Duration::from_secs(5));
        let visible = values(
            &cluster
                .broker()
                .committed_records(TOPIC)
                .expect("read_committed"),
        );
        let set: BTreeSet<String> = visible.iter().cloned().collect();
        assert_eq!(visible.len(), set.len(), "a committed record appears twice");
        assert_eq!(
            set, committed,
            "read_committed must show exactly the committed records"
        );
        assert!(!visible
            .iter()
            .any(|v| v.starts_with("r1-") || v == "zombie"));
        let all = cluster
            .broker()
            .all_records(TOPIC)
            .expect("read_uncommitted")
            .len();
        eprintln!(
            "transaction.version={version}: {} committed records visible, {all} in the log",
            visible.len()
        );
        assert!(all >= 180, "the aborted records are in the log, invisible");
    }
}

#[test]
fn transactions_v1_commit_abort_fence() {
    run(1);
}

#[test]
fn transactions_v2_commit_abort_fence() {
    run(2);
}
