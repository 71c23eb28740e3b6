//! The testkit validates itself against a producer known to be correct: krafka's own
//! idempotent producer (independently tested: exactly once under leader moves, crashes and
//! lost responses). Every FakeBroker scenario must pass with it, and the real-Kafka ones
//! too when their environment variable is set.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kacrab_testkit::{Delivery, DeliveryFailure, DeliveryReport, TestProducer};
use krafka::producer::{Acks, Producer};
use krafka::{Kafka, Record};

struct Krafka {
    rt: Arc<tokio::runtime::Runtime>,
    producer: Producer,
}

fn ms(props: &HashMap<&str, &str>, key: &str) -> Result<Option<Duration>, String> {
    props
        .get(key)
        .map(|v| {
            v.parse()
                .map(Duration::from_millis)
                .map_err(|e| format!("{key}={v}: {e}"))
        })
        .transpose()
}

/// Builds krafka's producer from the Kafka property names the scenarios use.
fn factory(pairs: &[(&str, &str)]) -> Result<Box<dyn TestProducer>, String> {
    let props: HashMap<&str, &str> = pairs.iter().copied().collect();
    let bootstrap = props
        .get("bootstrap.servers")
        .ok_or("bootstrap.servers missing")?
        .to_string();
    let client_id = props
        .get("client.id")
        .unwrap_or(&"krafka-reference")
        .to_string();
    if props
        .get("enable.idempotence")
        .is_some_and(|v| *v != "true")
        || props.get("acks").is_some_and(|v| *v != "all")
    {
        return Err("the reference producer runs idempotent with acks=all only".into());
    }
    let request_timeout = ms(&props, "request.timeout.ms")?.unwrap_or(Duration::from_secs(30));
    let linger = ms(&props, "linger.ms")?;
    let delivery_timeout = ms(&props, "delivery.timeout.ms")?;
    let retry_backoff = ms(&props, "retry.backoff.ms")?;
    let in_flight: Option<usize> = props
        .get("max.in.flight.requests.per.connection")
        .map(|v| v.parse().map_err(|e| format!("max.in.flight: {e}")))
        .transpose()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let producer = rt
        .block_on(async {
            let mut kafka = Kafka::builder(bootstrap)
                .client_id(client_id)
                .request_timeout(request_timeout)
                .connect_timeout(request_timeout.min(Duration::from_secs(10)));
            if let Some(n) = in_flight {
                kafka = kafka.max_in_flight_requests(n);
            }
            let kafka = kafka.connect().await?;
            let mut b = kafka.producer().idempotent(true).acks(Acks::All);
            if let Some(d) = linger {
                b = b.linger(d);
            }
            if let Some(d) = delivery_timeout {
                b = b.delivery_timeout(d);
            }
            if let Some(d) = retry_backoff {
                b = b.retry_backoff(d);
            }
            b.build().await
        })
        .map_err(|e| e.to_string())?;
    Ok(Box::new(Krafka {
        rt: Arc::new(rt),
        producer,
    }))
}

/// What krafka says of a failed record's fate: a delivery timeout carries the flag; a
/// non-retriable broker error answered the attempt that failed the batch without an
/// append; anything else claims nothing (possibly written).
fn reference_possibly_written(e: &krafka::error::KrafkaError) -> bool {
    use krafka::error::KrafkaError;
    match e {
        KrafkaError::DeliveryTimeout {
            possibly_written, ..
        } => *possibly_written,
        KrafkaError::Broker { code, .. } => code.is_retriable(),
        _ => true,
    }
}

impl TestProducer for Krafka {
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery {
        let record = Record::new(topic.to_string(), value)
            .key(key)
            .partition(partition);
        match self.rt.block_on(self.producer.enqueue(record)) {
            Ok(handle) => {
                let rt = Arc::clone(&self.rt);
                Delivery(Box::new(move || {
                    rt.block_on(handle)
                        .map(|m| DeliveryReport {
                            partition: m.partition,
                            offset: (m.offset >= 0).then_some(m.offset),
                        })
                        .map_err(|e| {
                            let possibly_written = reference_possibly_written(&e);
                            DeliveryFailure::new(e, possibly_written)
                        })
                }))
            }
            Err(e) => {
                let f = DeliveryFailure::new(format!("enqueue: {e}"), false);
                Delivery(Box::new(move || Err(f)))
            }
        }
    }

    fn flush(&self) -> Result<(), String> {
        self.rt
            .block_on(self.producer.flush())
            .map_err(|e| e.to_string())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.rt
            .block_on(self.producer.close())
            .map_err(|e| e.to_string())
    }
}

kacrab_testkit::fake_broker_tests!(factory);
kacrab_testkit::real_kafka_tests!(factory);

/// The checker is not vacuous end to end: with FakeBroker's producer-state enforcement
/// off, the broker appends retried batches again, and "apply then disconnect" must then
/// show up as duplicates.
#[test]
fn checker_catches_duplicates_from_a_broker_without_dedup() {
    use kacrab_testkit::scenarios::{run_fake, Shape};
    use kacrab_testkit::{burst::Step, ApiKey, Control, Trigger};
    let shape = Shape {
        records: 3_000,
        min_faults: 5,
        ..Shape::default()
    };
    let r = run_fake(
        "no_dedup",
        &factory,
        shape,
        |ctx| {
            ctx.cluster.broker().set_idempotence(false);
            Ok(())
        },
        |ctx, k| {
            if k == 3 {
                let c = Control::ApplyThen(Box::new(Control::Disconnect));
                ctx.count(
                    ctx.cluster
                        .inject(ApiKey::Produce, Trigger::every(5).times(20), c),
                );
            }
            Ok(Step::Continue)
        },
    );
    let e = r.expect_err("duplicates must be reported");
    assert!(e.contains("duplicated in the log"), "{e}");
    println!("{e}");
}

/// krafka fails the batch that got OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID
/// (and moves to a new epoch) instead of retrying it as Java does: the `_all_acked`
/// variants must report exactly that, and nothing else.
#[test]
fn all_acked_variants_report_krafka_failing_sequence_errors() {
    use kacrab_testkit::scenarios::{
        out_of_order_sequence_all_acked, unknown_producer_id_all_acked,
    };
    for f in [
        out_of_order_sequence_all_acked,
        unknown_producer_id_all_acked,
    ] {
        let e = f(&factory).expect_err("krafka fails these sends");
        assert!(e.contains("failed (all sends must be acknowledged)"), "{e}");
        for other in [
            "lost",
            "duplicated",
            "out of send order",
            "in the log anyway",
            "stuck",
        ] {
            assert!(!e.contains(other), "{e}");
        }
    }
}

/// A producer that reports every failure as not possibly written, whatever happened.
struct ClaimsNotWritten(Box<dyn TestProducer>);

impl TestProducer for ClaimsNotWritten {
    fn send(&self, topic: &str, partition: i32, key: Bytes, value: Bytes) -> Delivery {
        let d = self.0.send(topic, partition, key, value);
        Delivery(Box::new(move || {
            d.wait().map_err(|f| DeliveryFailure {
                possibly_written: false,
                ..f
            })
        }))
    }
    fn flush(&self) -> Result<(), String> {
        self.0.flush()
    }
    fn close(self: Box<Self>) -> Result<(), String> {
        self.0.close()
    }
}

/// The "not possibly written means absent" rule is not vacuous end to end: Produce
/// requests appended and never answered fail by delivery timeout with their records in
/// FakeBroker's log; a producer that reports them *not possibly written* must fail the
/// check.
#[test]
fn checker_catches_a_written_record_reported_not_written() {
    use kacrab_testkit::scenarios::{run_fake, Shape};
    use kacrab_testkit::{burst::Step, ApiKey, Control, Trigger};
    let shape = Shape {
        records: 3_000,
        all_acked: false,
        props: vec![
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "1500"),
        ],
        ..Shape::default()
    };
    let liar = |props: &[(&str, &str)]| -> Result<Box<dyn TestProducer>, String> {
        Ok(Box::new(ClaimsNotWritten(factory(props)?)))
    };
    let r = run_fake(
        "claims_not_written",
        &liar,
        shape,
        |_| Ok(()),
        |ctx, k| {
            let c = &ctx.cluster;
            if k == 3 {
                let silence = Control::ApplyThen(Box::new(Control::Silence));
                ctx.count(c.inject(ApiKey::Produce, Trigger::always(), silence));
            }
            if k == 4 {
                std::thread::sleep(Duration::from_millis(2_500));
                c.clear_faults();
            }
            Ok(Step::Continue)
        },
    );
    let e = r.expect_err("a written record reported not written must be found");
    assert!(
        e.contains("failed as not possibly written, yet in the log (FailedButWritten)"),
        "{e}"
    );
    println!("{e}");
}
