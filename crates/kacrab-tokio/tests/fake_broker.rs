//! The testkit's FakeBroker scenarios against the Tokio producer: one `#[test]` each.
//! The producer runs on its own runtime inside the `TestProducer` impl; the scenarios run
//! on plain test threads.

mod support;

// Kacrab acknowledges every record under injected sequence errors (Java's rule), so the
// strict variants run too.
kacrab_testkit::fake_broker_tests!(
    support::factory;
    out_of_order_sequence_all_acked,
    unknown_producer_id_all_acked,
);

// Transactions, version 1 and 2: commit, abort, fencing, read_committed.
kacrab_testkit::fake_broker_txn_tests!(support::factory);

/// The metrics snapshot through the Tokio driver: against FakeBroker, one acknowledged
/// record counts once in `record-send-total`, per topic too, and the snapshot has every
/// metric issue 14 lists (`kacrab_testkit::metric_names::REQUIRED`).
#[test]
fn the_metrics_snapshot_counts_a_delivered_record() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("metrics", 1).expect("topic");
    let bootstrap = cluster.bootstrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let p = kacrab_tokio::Producer::from_properties(&[("bootstrap.servers", &bootstrap)])
            .expect("producer");
        p.send(kacrab_tokio::ProducerRecord::new("metrics", 0, "v"))
            .await
            .expect("queued")
            .await
            .expect("acknowledged");
        let m = p.metrics().await.expect("the driver runs");
        assert_eq!(m.producer.record_send_total, 1.0);
        assert_eq!(m.topics["metrics"].record_send_total, 1.0);
        assert!(m.producer.connection_creation_total >= 1.0);
        let present: Vec<(&str, &str)> = m.metrics().iter().map(|x| (x.group, x.name)).collect();
        let missing = kacrab_testkit::metric_names::missing(&present);
        assert!(
            missing.is_empty(),
            "metrics missing from the snapshot: {missing:?}"
        );
        p.close().await;
    });
}
