//! The snapshot through the `metrics` crate facade (feature `metrics`), so that any of
//! its exporters (Prometheus, StatsD, ...) serves kacrab's metrics.
//!
//! The shape is a push of the whole [`MetricsSnapshot`], not a recorder fed event by
//! event: Kafka's windowed rates and averages are computed in the session with time as
//! an input, and only a snapshot knows them at an instant. The session calls [`publish`]
//! on its own timer (`kacrab.metrics.publish.interval.ms`, see `publish_timer`); an
//! application may also call it with a snapshot of its own.
//!
//! Each metric is named `<group>.<name>` with Kafka's group and name
//! (`producer-metrics.record-send-rate`; an exporter may rewrite the separators, as
//! Prometheus's does to `producer_metrics_record_send_rate`) and labelled with Kafka's
//! tags: `client-id` on every metric, `topic` or `node-id` in the per-topic and
//! per-node groups. A `-total` is an absolute counter (truncated to whole units), every
//! other metric a gauge (NaN when its window recorded nothing, as in Kafka).

use super::MetricsSnapshot;

/// Publishes every metric of `snapshot` through the installed `metrics` recorder
/// (nothing happens if none is installed).
pub fn publish(snapshot: &MetricsSnapshot) {
    for m in snapshot.metrics() {
        let mut labels = Vec::with_capacity(1 + m.tags.len());
        labels.push(metrics::Label::new("client-id", snapshot.client_id.clone()));
        labels.extend(
            m.tags
                .iter()
                .map(|(key, value)| metrics::Label::new(*key, value.clone())),
        );
        let name = format!("{}.{}", m.group, m.name);
        if m.name.ends_with("-total") {
            // Totals never go down and are whole counts (or whole nanoseconds).
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let value = m.value.max(0.0) as u64;
            metrics::counter!(name, labels).absolute(value);
        } else {
            metrics::gauge!(name, labels).set(m.value);
        }
    }
}
