// KacrabTelemetryJudge: a broker plugin that records every KIP-714 client telemetry push
// (PushTelemetry) as one JSON line, so kacrab's tests can check what a real Kafka broker
// received and how it decoded it. Loaded by scripts/kafka.sh (KACRAB_KAFKA_TELEMETRY=1),
// which compiles it against the broker's jars; see docs/real-kafka.md.
//
// Kafka finds client telemetry exporters among the broker's metric.reporters: a
// MetricsReporter that also implements ClientTelemetryExporterProvider gets every push
// the broker accepted with a non-empty metrics field (its subscription id, timing and
// size checked, the payload decompressed). ClientTelemetryExporterProvider replaces ClientTelemetry/
// ClientTelemetryReceiver, deprecated in Kafka 4.
//
// Configuration (broker properties, handed to configure()):
//   kacrab.telemetry.file  the JSON-lines file to append to (required)
//
// One line per push; the fields:
//   time_ms, client_instance_id, client_id, software_name, software_version,
//   client_address, listener, principal, request_version, correlation_id,
//   push_interval_ms (the interval the broker told this client), content_type,
//   terminating, payload_bytes (after the broker decompressed it), then either
//   resource_attributes {key: value, merged over all ResourceMetrics},
//   resource_metrics and scope_metrics (how many of each), scope_names (distinct),
//   metrics [{name, kind, temporality, monotonic, points, first_value,
//   first_attributes, first_start_unix_nano, first_time_unix_nano}] (a NaN or infinite
//   first_value is written as a string, "NaN", since JSON has no such numbers), unknown_fields
//   (protobuf fields the OTLP schema does not know, by message type: a sign of a
//   mis-encoding that protobuf itself tolerates), or decode_error and payload_head_hex
//   when MetricsData did not parse.
// Nothing here may throw into the broker: every failure becomes a field of the line
// (or, if even writing fails, a line on stderr).

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryContext;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.shaded.com.google.protobuf.Descriptors.FieldDescriptor;
import org.apache.kafka.shaded.com.google.protobuf.Message;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.AnyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.KeyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

public class KacrabTelemetryJudge implements MetricsReporter, ClientTelemetryExporterProvider, ClientTelemetryExporter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private OutputStream out;   // guarded by this: pushes arrive on several request handler threads

    @Override
    public synchronized void configure(Map<String, ?> configs) {
        Object path = configs.get("kacrab.telemetry.file");
        if (path == null) {
            System.err.println("KacrabTelemetryJudge: kacrab.telemetry.file is not set; pushes are not recorded");
            return;
        }
        try {
            out = new FileOutputStream(path.toString(), true);
        } catch (IOException e) {
            System.err.println("KacrabTelemetryJudge: cannot open " + path + ": " + e);
        }
    }

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return this;
    }

    @Override
    public void exportMetrics(ClientTelemetryContext context, ClientTelemetryPayload payload) {
        ObjectNode line = JSON.createObjectNode();
        try {
            describe(line, context, payload);
        } catch (Throwable t) {   // a bug here must not fail the client's push
            line.put("judge_error", t.toString());
        }
        write(line);
    }

    private static void describe(ObjectNode line, ClientTelemetryContext context, ClientTelemetryPayload payload) {
        line.put("time_ms", System.currentTimeMillis());
        line.put("client_instance_id", String.valueOf(payload.clientInstanceId()));
        AuthorizableRequestContext request = context.authorizableRequestContext();
        line.put("client_id", request.clientId());
        // The software name and version a client sent in ApiVersions (KIP-511) are on the
        // broker's RequestContext only, not on the AuthorizableRequestContext interface.
        if (request instanceof RequestContext) {
            RequestContext full = (RequestContext) request;
            line.put("software_name", full.clientInformation.softwareName());
            line.put("software_version", full.clientInformation.softwareVersion());
        }
        line.put("client_address", request.clientAddress() == null ? null : request.clientAddress().getHostAddress());
        line.put("listener", request.listenerName());
        line.put("principal", request.principal() == null ? null : request.principal().toString());
        line.put("request_version", request.requestVersion());
        line.put("correlation_id", request.correlationId());
        line.put("push_interval_ms", context.pushIntervalMs());
        line.put("content_type", payload.contentType());
        line.put("terminating", payload.isTerminating());
        // data() is the broker's buffer: read a duplicate, leave its position alone.
        ByteBuffer data = payload.data() == null ? ByteBuffer.allocate(0) : payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        line.put("payload_bytes", bytes.length);
        MetricsData metrics;
        try {
            metrics = MetricsData.parseFrom(bytes);
        } catch (Exception e) {
            line.put("decode_error", e.toString());
            line.put("payload_head_hex", hex(bytes, 64));
            return;
        }
        // The metrics flattened in payload order; the resources' attributes merged (a
        // client may repeat its Resource in every ResourceMetrics), scope names distinct.
        ObjectNode resource = line.putObject("resource_attributes");
        Set<String> scopeNames = new TreeSet<>();
        int scopeCount = 0;
        ArrayNode list = JSON.createArrayNode();
        for (ResourceMetrics rm : metrics.getResourceMetricsList()) {
            for (KeyValue kv : rm.getResource().getAttributesList()) resource.put(kv.getKey(), text(kv.getValue()));
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                scopeCount++;
                scopeNames.add(sm.getScope().getName());
                for (Metric m : sm.getMetricsList()) list.add(metric(m));
            }
        }
        line.put("resource_metrics", metrics.getResourceMetricsCount());
        line.put("scope_metrics", scopeCount);
        ArrayNode names = line.putArray("scope_names");
        scopeNames.forEach(names::add);
        line.set("metrics", list);
        ObjectNode unknown = line.putObject("unknown_fields");
        unknownFields(metrics, unknown);
    }

    // name, kind, and (for a sum) temporality and monotonicity; the first point's value
    // and attributes. Histogram kinds report their first point's sum as the value.
    private static ObjectNode metric(Metric m) {
        ObjectNode o = JSON.createObjectNode();
        o.put("name", m.getName());
        List<NumberDataPoint> numbers = null;
        switch (m.getDataCase()) {
            case GAUGE:
                o.put("kind", "gauge");
                numbers = m.getGauge().getDataPointsList();
                break;
            case SUM:
                o.put("kind", "sum");
                o.put("temporality", m.getSum().getAggregationTemporality().name());
                o.put("monotonic", m.getSum().getIsMonotonic());
                numbers = m.getSum().getDataPointsList();
                break;
            case HISTOGRAM:
                o.put("kind", "histogram");
                o.put("points", m.getHistogram().getDataPointsCount());
                if (m.getHistogram().getDataPointsCount() > 0) o.put("first_value", m.getHistogram().getDataPoints(0).getSum());
                break;
            case EXPONENTIAL_HISTOGRAM:
                o.put("kind", "exponential_histogram");
                o.put("points", m.getExponentialHistogram().getDataPointsCount());
                if (m.getExponentialHistogram().getDataPointsCount() > 0) o.put("first_value", m.getExponentialHistogram().getDataPoints(0).getSum());
                break;
            case SUMMARY:
                o.put("kind", "summary");
                o.put("points", m.getSummary().getDataPointsCount());
                if (m.getSummary().getDataPointsCount() > 0) o.put("first_value", m.getSummary().getDataPoints(0).getSum());
                break;
            default:
                o.put("kind", "none");
                o.put("points", 0);
        }
        if (numbers != null) {
            o.put("points", numbers.size());
            if (!numbers.isEmpty()) {
                NumberDataPoint p = numbers.get(0);
                // A point carries either an integer or a double (a oneof); report both as double.
                if (p.getValueCase() == NumberDataPoint.ValueCase.AS_INT) o.put("first_value", (double) p.getAsInt());
                else if (p.getValueCase() == NumberDataPoint.ValueCase.AS_DOUBLE) o.put("first_value", p.getAsDouble());
                else o.putNull("first_value");
                ObjectNode attrs = o.putObject("first_attributes");
                for (KeyValue kv : p.getAttributesList()) attrs.put(kv.getKey(), text(kv.getValue()));
                o.put("first_start_unix_nano", p.getStartTimeUnixNano());
                o.put("first_time_unix_nano", p.getTimeUnixNano());
            }
        }
        return o;
    }

    // protobuf keeps fields it does not know instead of failing; count them per message
    // type, walking every set message field.
    private static void unknownFields(Message msg, ObjectNode into) {
        int n = msg.getUnknownFields().asMap().size();
        if (n > 0) {
            String type = msg.getDescriptorForType().getFullName();
            into.put(type, into.path(type).asInt(0) + n);
        }
        for (Map.Entry<FieldDescriptor, Object> f : msg.getAllFields().entrySet()) {
            if (f.getKey().getJavaType() != FieldDescriptor.JavaType.MESSAGE) continue;
            if (f.getKey().isRepeated()) {
                for (Object o : (List<?>) f.getValue()) unknownFields((Message) o, into);
            } else {
                unknownFields((Message) f.getValue(), into);
            }
        }
    }

    private static String text(AnyValue v) {
        switch (v.getValueCase()) {
            case STRING_VALUE: return v.getStringValue();
            case INT_VALUE: return Long.toString(v.getIntValue());
            case DOUBLE_VALUE: return Double.toString(v.getDoubleValue());
            case BOOL_VALUE: return Boolean.toString(v.getBoolValue());
            default: return v.toString().trim();
        }
    }

    private static String hex(byte[] b, int max) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < Math.min(b.length, max); i++) s.append(String.format("%02x", b[i] & 0xff));
        return s.toString();
    }

    // One line per push, flushed at once so a test reading the file sees whole lines.
    private synchronized void write(ObjectNode line) {
        if (out == null) return;
        try {
            out.write((JSON.writeValueAsString(line) + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            System.err.println("KacrabTelemetryJudge: cannot write: " + e);
        }
    }

    // The broker's own metrics are of no interest here.
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }

    @Override
    public synchronized void close() {
        try {
            if (out != null) out.close();
        } catch (IOException ignored) {
            // closing at broker shutdown: nothing left to record
        }
        out = null;
    }
}
