//! The `opentelemetry` feature through the Tokio producer: the driver task runs the
//! session (and so `on_send`) away from the application's task, where the application's
//! span is not current. A record carrying the caller's context
//! (`otel::inject_current_context`, on the caller's thread) is parented by the
//! application's span; one sent inside the span without it starts a trace of its own.
//! Against FakeBroker (kacrab-testkit), with the SDK's in-memory span exporter.
//!
//! Run with `cargo test -p kacrab-tokio --features opentelemetry --test otel_spans`.
#![cfg(feature = "opentelemetry")]

use std::sync::Arc;

use kacrab_tokio::{otel, OtelInterceptor, Producer, ProducerRecord};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

/// `inject_current_context` carries the application's span across the driver task
/// boundary; `Context::current()` on the driver task is not the caller's.
#[test]
fn a_span_reaches_the_driver_task_only_through_the_record() {
    let cluster = kacrab_testkit::Cluster::start(1).expect("cluster");
    cluster.create_topic("traced", 1).expect("topic");
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let interceptor = Arc::new(OtelInterceptor::with_tracer_provider(&provider));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let app_cx = Context::current_with_span(provider.tracer("application").start("request"));
    let app_span = app_cx.span().span_context().clone();
    let mut carried = ProducerRecord::new("traced", 0, "carried");
    let plain = ProducerRecord::new("traced", 0, "plain");
    let outcomes = {
        // Current on this (the caller's) thread only, as an application's span is.
        let _current = app_cx.clone().attach();
        otel::inject_current_context(&mut carried);
        rt.block_on(async {
            let mut b = Producer::builder();
            b.set("bootstrap.servers", &cluster.bootstrap()).unwrap();
            b.interceptor(Arc::clone(&interceptor));
            let p = b.build().expect("producer");
            let first = p.send(carried).await.expect("queued");
            let second = p.send(plain).await.expect("queued");
            let outcomes = (first.await, second.await);
            p.close().await;
            outcomes
        })
    };
    app_cx.span().end();
    assert!(outcomes.0.is_ok() && outcomes.1.is_ok(), "{outcomes:?}");
    assert_eq!(interceptor.open_spans(), 0);

    let mut spans = exporter.get_finished_spans().unwrap();
    spans.retain(|s| s.span_kind == SpanKind::Producer);
    assert_eq!(spans.len(), 2);
    let log = cluster.broker().all_records("traced").expect("log");
    assert_eq!(log.len(), 2);
    let span_of = |value: &str| {
        let record = log
            .iter()
            .find(|r| r.value.as_deref() == Some(value.as_bytes()))
            .expect("in the log");
        let headers: std::collections::HashMap<String, String> = record
            .headers
            .iter()
            .map(|(k, v)| {
                let v = v.as_deref().unwrap_or_default();
                (k.clone(), String::from_utf8(v.to_vec()).unwrap())
            })
            .collect();
        let on_wire = TraceContextPropagator::new().extract(&headers);
        let id = on_wire.span().span_context().span_id();
        spans
            .iter()
            .find(|s| s.span_context.span_id() == id)
            .expect("the span the header names")
            .clone()
    };
    let carried = span_of("carried");
    assert_eq!(carried.parent_span_id, app_span.span_id());
    assert_eq!(carried.span_context.trace_id(), app_span.trace_id());
    let plain = span_of("plain");
    assert_ne!(
        plain.span_context.trace_id(),
        app_span.trace_id(),
        "the driver task does not see the caller's current context"
    );
}
