//! OpenTelemetry producer spans (feature `opentelemetry`): [`OtelInterceptor`], a
//! [`ProducerInterceptor`] that opens one span per record when the application sends it
//! and ends it with the record's outcome, and writes the span's W3C trace context into
//! the record's headers so that a consumer continues the trace.
//!
//! Rules:
//!
//! * **Semantic conventions v1.45.0, messaging and Kafka.** A span of kind
//!   [`SpanKind::Producer`] named `send {topic}`, with `messaging.system.name=kafka`,
//!   `messaging.operation.type=send`, `messaging.operation.name=send`,
//!   `messaging.destination.name`, `messaging.destination.partition.id` (the record's
//!   own partition at send, else the one it landed in), `messaging.client.id` (when
//!   given), `kafka.message.tombstone=true` for a record without a value, and at the
//!   outcome `kafka.offset`; a failure sets `error.type` (a low-cardinality kind) and the
//!   error status with the error's `Display` (which carries no secret). A delivered
//!   record's status stays unset: the trace API leaves `Ok` to the application.
//!   `kafka.message.key` is not recorded: keys are application data (often a user or
//!   account id), not always text, and a span exporter is not a place to copy them to.
//! * **Parent: the record's trace context, else the current context.** A record that
//!   arrives with a valid `traceparent` header is parented by it; one without is
//!   parented by [`Context::current`] where `on_send` runs. [`Session::send`] runs it on
//!   the caller's thread, but the Tokio and blocking drivers run the session on their own
//!   task or thread, where the application's context is not current: there the
//!   application calls [`inject_current_context`] on the record before `send` (on its
//!   own thread), so that its span becomes the parent. A consumed record forwarded with
//!   its headers is parented by its upstream span, continuing that trace.
//! * **W3C trace context in the headers.** `traceparent` (and `tracestate` when not
//!   empty) as the W3C Trace Context recommendation writes them, replacing those the
//!   record carried (its parent's). Also for a span that is not sampled: the consumer
//!   then continues the trace unsampled, as W3C asks.
//! * **Each span ended exactly once.** The open span waits in a map keyed by its span
//!   id, which [`Acknowledgement::headers`] gives back through the `traceparent` it
//!   injected; the session shows every record sent after installation exactly once
//!   (also a record refused before it was sent), so the map holds the records in
//!   flight. Only recording spans are kept: one that records nothing needs no end. An
//!   interceptor installed after this one that removes or rewrites `traceparent` leaves
//!   the span open until this interceptor is dropped: install this one last.
//!
//! Pinned by `crates/kacrab-driver/tests/session_opentelemetry.rs`.
//!
//! [`Session::send`]: crate::Session::send

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use crate::completion::ProduceError;
use crate::interceptor::{Acknowledgement, InterceptorError, ProducerInterceptor};
use crate::record::ProducerRecord;
use crate::Header;

/// The semantic conventions version the attributes follow (the scope's schema URL).
const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.45.0";
/// The W3C Trace Context headers.
const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";

/// Producer spans for every record (see the [module](self) for the rules): install it
/// with [`Extensions::interceptor`](crate::Extensions::interceptor), last.
///
/// ```
/// use kacrab_driver::{Extensions, OtelInterceptor};
///
/// let mut extensions = Extensions::new();
/// extensions.interceptor(OtelInterceptor::new().with_client_id("billing"));
/// ```
pub struct OtelInterceptor<T: Tracer = BoxedTracer> {
    tracer: T,
    client_id: Option<String>,
    /// The recording spans of the records in flight, by span id.
    open: Mutex<HashMap<SpanId, Context>>,
}

impl<T: Tracer> fmt::Debug for OtelInterceptor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelInterceptor")
            .field("client_id", &self.client_id)
            .field("open", &self.open_spans())
            .finish_non_exhaustive()
    }
}

impl Default for OtelInterceptor<BoxedTracer> {
    fn default() -> Self {
        Self::new()
    }
}

impl OtelInterceptor<BoxedTracer> {
    /// Spans through the global tracer provider ([`opentelemetry::global`]), as it is
    /// when each span starts.
    #[must_use]
    pub fn new() -> Self {
        Self::with_tracer(global::tracer_with_scope(scope()))
    }
}

impl<T: Tracer> OtelInterceptor<T> {
    /// Spans through `provider`'s tracer for this crate (its scope names the conventions'
    /// schema).
    #[must_use]
    pub fn with_tracer_provider<P>(provider: &P) -> Self
    where
        P: TracerProvider<Tracer = T>,
    {
        Self::with_tracer(provider.tracer_with_scope(scope()))
    }

    /// Spans through `tracer`.
    #[must_use]
    pub fn with_tracer(tracer: T) -> Self {
        Self {
            tracer,
            client_id: None,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Sets `messaging.client.id` on every span (the producer's `client.id`: the
    /// interceptor does not see the configuration).
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// How many spans wait for their record's outcome.
    #[must_use]
    pub fn open_spans(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SpanId, Context>> {
        // A panic elsewhere while the lock was held leaves the map consistent (each
        // operation is one insert or remove): go on with it.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// This crate's instrumentation scope, with the conventions' schema.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("kacrab-driver")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url(SCHEMA_URL)
        .build()
}

impl<T> ProducerInterceptor for OtelInterceptor<T>
where
    T: Tracer + Send + Sync + 'static,
    T::Span: Send + Sync + 'static,
{
    fn on_send(&self, record: &mut ProducerRecord) -> Result<(), InterceptorError> {
        let topic = record.topic.as_str();
        let mut attributes = vec![
            KeyValue::new("messaging.system.name", "kafka"),
            KeyValue::new("messaging.operation.type", "send"),
            KeyValue::new("messaging.operation.name", "send"),
            KeyValue::new("messaging.destination.name", topic.to_owned()),
        ];
        if let Some(partition) = record.partition {
            attributes.push(partition_id(partition));
        }
        if let Some(client_id) = &self.client_id {
            attributes.push(KeyValue::new("messaging.client.id", client_id.clone()));
        }
        if record.value.is_none() {
            attributes.push(KeyValue::new("kafka.message.tombstone", true));
        }
        let parent = match extract(&record.headers) {
            Some(upstream) => Context::current().with_remote_span_context(upstream),
            None => Context::current(),
        };
        let span = self
            .tracer
            .span_builder(format!("send {topic}"))
            .with_kind(SpanKind::Producer)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        let cx = Context::current_with_span(span);
        let span_context = cx.span().span_context().clone();
        inject(&span_context, &mut record.headers);
        if cx.span().is_recording() {
            let earlier = self.lock().insert(span_context.span_id(), cx);
            debug_assert!(earlier.is_none(), "span ids are unique");
        }
        Ok(())
    }

    fn on_acknowledgement(&self, ack: &Acknowledgement<'_>) -> Result<(), InterceptorError> {
        let Some(injected) = extract(ack.headers) else {
            return Ok(());
        };
        let Some(cx) = self.lock().remove(&injected.span_id()) else {
            return Ok(());
        };
        let span = cx.span();
        match ack.outcome {
            Ok(metadata) => {
                span.set_attribute(partition_id(metadata.partition));
                if let Some(offset) = metadata.offset {
                    span.set_attribute(KeyValue::new("kafka.offset", offset));
                }
            }
            Err(error) => {
                span.set_attribute(KeyValue::new("error.type", error_type(error)));
                span.set_status(Status::Error {
                    description: Cow::Owned(error.to_string()),
                });
            }
        }
        span.end();
        Ok(())
    }
}

fn partition_id(partition: i32) -> KeyValue {
    KeyValue::new("messaging.destination.partition.id", partition.to_string())
}

/// A low-cardinality name for the failure (semantic conventions' `error.type`): the
/// error's kind, without its details (those go to the status description).
fn error_type(error: &ProduceError) -> &'static str {
    match error {
        ProduceError::Send(_) => "send_refused",
        ProduceError::Delivery { .. } => "delivery_failed",
        ProduceError::Connection { .. } => "connection_failed",
        ProduceError::Topic { .. } => "topic_refused",
        ProduceError::Terminated => "terminated",
        // A kind added later still counts as a failure.
        #[allow(unreachable_patterns)]
        _ => "_OTHER",
    }
}

/// Writes `span`'s W3C `traceparent` and `tracestate` into `headers`, replacing those
/// already there (W3C Trace Context, level 1: `version-traceid-parentid-flags`, lower
/// case hex). An invalid span context (no tracer installed and no parent) writes none.
fn inject(span: &SpanContext, headers: &mut Vec<Header>) {
    headers.retain(|h| &h.key[..] != TRACEPARENT.as_bytes() && &h.key[..] != TRACESTATE.as_bytes());
    if !span.is_valid() {
        return;
    }
    let traceparent = format!(
        "00-{:032x}-{:016x}-{:02x}",
        span.trace_id(),
        span.span_id(),
        // Level 1 defines only the sampled flag.
        span.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8()
    );
    headers.push(Header {
        key: TRACEPARENT.into(),
        value: Some(traceparent.into()),
    });
    let tracestate = span.trace_state().header();
    if !tracestate.is_empty() {
        headers.push(Header {
            key: TRACESTATE.into(),
            value: Some(tracestate.into()),
        });
    }
}

/// Writes the trace context current on the calling thread into `record`'s headers
/// (`traceparent`, `tracestate`), so that [`OtelInterceptor`] parents the record's span
/// with it wherever the session runs: call it on the application's thread, inside its
/// span, before a driver's `send`. Without a current span it writes nothing.
///
/// ```
/// use kacrab_driver::{otel, ProducerRecord};
///
/// let mut record = ProducerRecord::unkeyed("events", "hello");
/// otel::inject_current_context(&mut record);
/// // No span is current here (no tracer is installed): nothing to inject.
/// assert!(record.headers.is_empty());
/// ```
pub fn inject_current_context(record: &mut ProducerRecord) {
    let cx = Context::current();
    let span = cx.span();
    let span_context = span.span_context();
    if span_context.is_valid() {
        inject(span_context, &mut record.headers);
    }
}

/// The trace context of the (last) `traceparent` in `headers` with its `tracestate`,
/// if it is one W3C Trace Context (level 1) accepts: version `00`, the trace and parent
/// ids in lower case hex and not all zero, the flags.
fn extract(headers: &[Header]) -> Option<SpanContext> {
    let value = |key: &str| {
        headers
            .iter()
            .rev()
            .find(|h| &h.key[..] == key.as_bytes())
            .and_then(|h| std::str::from_utf8(h.value.as_deref()?).ok())
    };
    let mut parts = value(TRACEPARENT)?.trim().split('-');
    let (version, trace_id, span_id, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    if version != "00"
        || parts.next().is_some()
        || !lower_hex(trace_id, 32)
        || !lower_hex(span_id, 16)
        || !lower_hex(flags, 2)
    {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()? & TraceFlags::SAMPLED.to_u8();
    let state = value(TRACESTATE)
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let context = SpanContext::new(
        TraceId::from_hex(trace_id).ok()?,
        SpanId::from_hex(span_id).ok()?,
        TraceFlags::new(flags),
        true,
        state,
    );
    context.is_valid().then_some(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header [`inject`] writes parses back to the span id, and replaces an
    /// upstream record's context.
    #[test]
    fn the_injected_traceparent_names_the_span() {
        let span = SpanContext::new(
            TraceId::from(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c),
            SpanId::from(0xb7ad_6b71_6920_3331),
            TraceFlags::SAMPLED,
            false,
            TraceState::from_key_value([("vendor", "x")]).unwrap(),
        );
        let mut headers = vec![Header {
            key: TRACEPARENT.into(),
            value: Some("upstream".into()),
        }];
        inject(&span, &mut headers);
        let text: Vec<(&[u8], &[u8])> = headers
            .iter()
            .map(|h| (&h.key[..], h.value.as_deref().unwrap()))
            .collect();
        assert_eq!(
            text,
            [
                (
                    &b"traceparent"[..],
                    &b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"[..]
                ),
                (&b"tracestate"[..], &b"vendor=x"[..]),
            ]
        );
        let back = extract(&headers).unwrap();
        assert_eq!(
            (back.trace_id(), back.span_id(), back.trace_flags()),
            (span.trace_id(), span.span_id(), TraceFlags::SAMPLED)
        );
        assert_eq!(back.trace_state().header(), "vendor=x");
    }

    /// Headers W3C Trace Context refuses give no parent.
    #[test]
    fn a_malformed_traceparent_is_not_a_parent() {
        for bad in [
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
        ] {
            let headers = [Header {
                key: TRACEPARENT.into(),
                value: Some(bad.into()),
            }];
            assert!(extract(&headers).is_none(), "{bad}");
        }
    }
}
