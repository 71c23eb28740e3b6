//! The `opentelemetry` feature's [`OtelInterceptor`] in a real session against the model
//! broker, with the SDK's in-memory span exporter: one PRODUCER span per record with the
//! messaging semantic conventions' attributes (v1.45.0, Kafka), ended once with the
//! record's outcome, its W3C trace context in the record's headers on the wire, parented
//! by the application's span.
//!
//! Run with `cargo test -p kacrab-driver --features opentelemetry --test session_opentelemetry`.
#![cfg(feature = "opentelemetry")]

mod pair;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use kacrab_driver::{otel, KafkaError, OtelInterceptor, ProducerRecord, SendId};
use kafka_protocol::records::RecordBatchDecoder;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, Tracer, TracerProvider,
};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};
use pair::broker::Req;
use pair::{Cluster, Pair};

const SECOND: Duration = Duration::from_secs(1);

/// Every record the brokers received: its value and its headers, as text.
type Wire = Rc<RefCell<Vec<(String, HashMap<String, String>)>>>;

/// A session with an [`OtelInterceptor`] exporting to memory, and a hook that keeps the
/// headers of every record the brokers received, by value.
struct Traced {
    p: Pair,
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
    interceptor: Arc<OtelInterceptor<SdkTracer>>,
    wire: Wire,
}

impl Traced {
    fn new(cluster: Cluster) -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let interceptor =
            Arc::new(OtelInterceptor::with_tracer_provider(&provider).with_client_id("harness"));
        let mut p = Pair::new(cluster, &[]);
        p.session.add_interceptor(interceptor.clone());
        let wire: Wire = Rc::default();
        let seen = Rc::clone(&wire);
        p.hook(move |inc, _| {
            if let Req::Produce(r) = &inc.req {
                for pd in r.topic_data.iter().flat_map(|td| &td.partition_data) {
                    let mut bytes = pd.records.clone().unwrap_or_default();
                    for set in RecordBatchDecoder::decode_all(&mut bytes).unwrap() {
                        for record in set.records {
                            let value = record.value.as_deref().unwrap_or_default();
                            let headers = record
                                .headers
                                .iter()
                                .map(|(k, v)| {
                                    let v = v.as_deref().unwrap_or_default();
                                    (k.to_string(), String::from_utf8(v.to_vec()).unwrap())
                                })
                                .collect();
                            let value = String::from_utf8(value.to_vec()).unwrap();
                            seen.borrow_mut().push((value, headers));
                        }
                    }
                }
            }
            None
        });
        Self {
            p,
            provider,
            exporter,
            interceptor,
            wire,
        }
    }

    /// The application's tracer (another scope of the same provider).
    fn app_tracer(&self) -> SdkTracer {
        self.provider.tracer("application")
    }

    /// The ended spans the interceptor made (the application's own left out).
    fn producer_spans(&self) -> Vec<SpanData> {
        let mut spans = self.exporter.get_finished_spans().unwrap();
        spans.retain(|s| s.instrumentation_scope.name() == "kacrab-driver");
        spans
    }

    /// The trace context a W3C propagator reads from the headers the brokers received
    /// with the record whose value is `value`.
    fn wire_context(&self, value: &str) -> SpanContext {
        let wire = self.wire.borrow();
        let (_, headers) = wire
            .iter()
            .find(|(v, _)| v == value)
            .unwrap_or_else(|| panic!("{value} did not reach a broker"));
        let cx = TraceContextPropagator::new().extract(headers);
        cx.span().span_context().clone()
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

fn span_with_id(spans: &[SpanData], id: SpanId) -> &SpanData {
    let found: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.span_context.span_id() == id)
        .collect();
    assert_eq!(found.len(), 1, "exactly one ended span has id {id}");
    found[0]
}

/// Three records sent inside an application span, one to a topic the broker refuses:
/// three PRODUCER spans `send {topic}`, children of the application's span, each ended
/// once (the exporter sees each once, none is left open), with the messaging semantic
/// conventions' attributes (v1.45.0 for Kafka: `messaging.system.name`,
/// `messaging.operation.type`/`.name`, `messaging.destination.name`,
/// `messaging.destination.partition.id`, `messaging.client.id`, `kafka.offset`); the
/// refused one with an error status and `error.type`. The two that reach the broker
/// carry the span's context in `traceparent`, as the SDK's W3C propagator reads it.
/// Java's `ProducerInterceptor.onAcknowledgement(metadata, exception, headers)`
/// (KIP-512) hands the record's headers to the outcome, as the session does here.
#[test]
fn each_record_gets_one_producer_span_ended_with_its_outcome() {
    let mut cluster = Cluster::new(1).with_topic("t", 2);
    cluster.metadata_errors.insert(
        "refused".into(),
        KafkaError::TopicAuthorizationFailed.code(),
    );
    let mut t = Traced::new(cluster);
    let app = t.app_tracer().start("handle request");
    let app_cx = Context::current_with_span(app);
    let app_span = app_cx.span().span_context().clone();
    let ids: Vec<SendId> = {
        let _current = app_cx.clone().attach();
        vec![
            t.p.send_record(ProducerRecord::new("t", 0, "first")),
            t.p.send_record(ProducerRecord::new("t", 1, "second")),
            t.p.send_record(ProducerRecord::unkeyed("refused", "third")),
        ]
    };
    t.p.settle(SECOND);
    app_cx.span().end();

    assert_eq!(t.interceptor.open_spans(), 0, "every span ended");
    let spans = t.producer_spans();
    assert_eq!(spans.len(), 3, "one span per record: {spans:#?}");
    for span in &spans {
        assert_eq!(span.span_kind, SpanKind::Producer);
        assert_eq!(span.span_context.trace_id(), app_span.trace_id());
        assert_eq!(span.parent_span_id, app_span.span_id());
        assert_eq!(
            text(span, "messaging.system.name").as_deref(),
            Some("kafka")
        );
        assert_eq!(
            text(span, "messaging.operation.type").as_deref(),
            Some("send")
        );
        assert_eq!(
            text(span, "messaging.operation.name").as_deref(),
            Some("send")
        );
        assert_eq!(
            text(span, "messaging.client.id").as_deref(),
            Some("harness")
        );
        assert!(attribute(span, "kafka.message.key").is_none());
    }

    for (id, value, partition) in [(ids[0], "first", 0), (ids[1], "second", 1)] {
        let on_wire = t.wire_context(value);
        assert!(on_wire.is_valid() && on_wire.is_sampled());
        let span = span_with_id(&spans, on_wire.span_id());
        assert_eq!(on_wire.trace_id(), span.span_context.trace_id());
        assert_eq!(span.name, "send t");
        assert_eq!(
            text(span, "messaging.destination.name").as_deref(),
            Some("t")
        );
        assert_eq!(
            text(span, "messaging.destination.partition.id"),
            Some(partition.to_string())
        );
        let offset = t.p.acked(id).offset.expect("an offset");
        assert_eq!(attribute(span, "kafka.offset"), Some(&Value::I64(offset)));
        assert_eq!(span.status, Status::Unset, "success is left unset");
        assert!(attribute(span, "error.type").is_none());
    }

    let refused = spans.iter().find(|s| s.name == "send refused").unwrap();
    assert!(t.p.outcome(ids[2]).unwrap().is_err());
    assert_eq!(
        text(refused, "error.type").as_deref(),
        Some("topic_refused")
    );
    let Status::Error { description } = &refused.status else {
        panic!("the refused record's span has an error status: {refused:?}");
    };
    assert!(description.contains("TOPIC_AUTHORIZATION_FAILED") || description.contains("refused"));
    assert!(attribute(refused, "kafka.offset").is_none());
    assert!(
        t.wire.borrow().iter().all(|(v, _)| v != "third"),
        "the refused record was never sent"
    );
}

/// A driver runs the session on its own task or thread, where the application's context
/// is not current: the application writes it into the record with
/// `otel::inject_current_context` on its own thread, and the record's span is its child
/// (and replaces that `traceparent` with its own on the wire). A record carrying no
/// context, sent with no current span, starts a trace of its own.
#[test]
fn a_record_carrying_its_callers_context_is_parented_by_it() {
    let mut t = Traced::new(Cluster::new(1).with_topic("t", 1));
    let app = t.app_tracer().start("handle request");
    let app_cx = Context::current_with_span(app);
    let app_span = app_cx.span().span_context().clone();
    let mut record = ProducerRecord::new("t", 0, "carried");
    {
        let _current = app_cx.clone().attach();
        otel::inject_current_context(&mut record);
    }
    assert_eq!(record.headers.len(), 1, "traceparent only: no tracestate");
    // Sent where no span is current, as a driver's loop does.
    t.p.send_record(record);
    t.p.send_record(ProducerRecord::new("t", 0, "orphan"));
    t.p.settle(SECOND);
    app_cx.span().end();

    let spans = t.producer_spans();
    assert_eq!(spans.len(), 2);
    let carried = span_with_id(&spans, t.wire_context("carried").span_id());
    assert_eq!(carried.parent_span_id, app_span.span_id());
    assert_eq!(carried.span_context.trace_id(), app_span.trace_id());
    let orphan = span_with_id(&spans, t.wire_context("orphan").span_id());
    assert_eq!(orphan.parent_span_id, SpanId::INVALID);
    assert_ne!(orphan.span_context.trace_id(), app_span.trace_id());
    let on_wire = t.wire.borrow();
    for (_, headers) in on_wire.iter() {
        assert_eq!(headers.len(), 1, "one traceparent per record: {headers:?}");
    }
}
