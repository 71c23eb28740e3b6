/*
 * kacrab's differential conformance harness, Java side (issue 15).
 *
 * Reads traces (JSON lines, one flat object per line; a trace starts with an "op":"config"
 * line and ends with "op":"end") and drives Kafka's own RecordAccumulator, Sender and
 * TransactionManager with a scripted MockClient and a MockTime. Writes, per trace, what
 * went on the wire and every record's outcome, in the format the Rust side writes
 * (crates/kacrab-conformance), then an "ev":"end" line.
 *
 * It lives in Sender's package because Sender.runOnce() is package-private.
 */
package org.apache.kafka.clients.producer.internals;

import org.apache.kafka.clients.ApiVersions;
import org.apache.kafka.clients.ClientRequest;
import org.apache.kafka.clients.MetadataSnapshot;
import org.apache.kafka.clients.MockClient;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.internals.ClusterResourceListeners;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.EndTxnResponseData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestTestUtils;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.MockTime;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.Consumer;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class ConformanceHarness {
    static final String TOPIC = "t";
    /** Time advances in steps of at most this many ms, on both sides alike. */
    static final long STEP_MS = 50;
    /** MockTime's start (ms); times written are relative to it, as the core's start at 0. */
    static final long T0 = 1_000_000;
    /** The transactional id of a transactional trace. */
    static final String TXN_ID = "txn";

    /**
     * The mock clock. Only the script moves it. Sender sleeps the handler's backoff
     * before sending a transactional retry (maybeSendAndPollTransactionalRequest),
     * blocking its thread: here the sleep is owed instead, and the harness holds the
     * request it then sends (off the wire, unanswerable) until the script's clock has
     * passed the backoff, as the core's timer does. The Sender, seeing it in flight,
     * sends no produce data meanwhile, as a sleeping sender thread would not.
     */
    static final class ScriptClock extends MockTime {
        boolean scripted = false;
        long owed = 0;

        ScriptClock() {
            super(0, T0, 0);
        }

        @Override
        public void sleep(long ms) {
            if (scripted) super.sleep(ms);
            else owed += ms;
        }
    }

    /**
     * MockClient does not enforce max.in.flight.requests.per.connection (NetworkClient's
     * InFlightRequests.canSendMore does); this one does, as a real connection would.
     */
    static final class LimitedClient extends MockClient {
        final int maxInFlight;
        /** Told the node of a connection closed for a timed-out request. */
        Consumer<String> onTimeoutClose = n -> { };
        /** Told every request sent, as it is sent (before a close in the same poll drops it). */
        Consumer<ClientRequest> onSend = r -> { };

        /** The transaction coordinator of a transactional trace (a broker leading no partition), or null. */
        Node coordinator;

        LimitedClient(MockTime time, ProducerMetadata metadata, int maxInFlight) {
            super(time, metadata);
            this.maxInFlight = maxInFlight;
        }

        /**
         * FindCoordinator goes to the least loaded node; in a transactional trace that is
         * the coordinator's broker, which carries only transactional requests (one at a
         * time), so Sender's awaitReady never waits on a full connection (with a mock
         * clock it would spin).
         */
        @Override
        public org.apache.kafka.clients.LeastLoadedNode leastLoadedNode(long now) {
            if (coordinator != null) return new org.apache.kafka.clients.LeastLoadedNode(coordinator, true);
            return super.leastLoadedNode(now);
        }

        @Override
        public boolean isReady(Node node, long now) {
            return super.isReady(node, now) && inFlightRequestCount(node.idString()) < maxInFlight;
        }

        /**
         * NetworkClient.handleTimedOutRequests closes every connection with an expired
         * request. MockClient's own check looks only at the head of its queue and, after
         * disconnecting, drops the next request unanswered; so expire them here first.
         */
        @Override
        public void send(ClientRequest request, long now) {
            super.send(request, now);
            onSend.accept(request);
        }

        @Override
        public List<org.apache.kafka.clients.ClientResponse> poll(long timeoutMs, long now) {
            java.util.Set<String> expired = new java.util.TreeSet<>();
            for (ClientRequest r : requests()) {
                if (now - r.createdTimeMs() >= r.requestTimeoutMs()) expired.add(r.destination());
            }
            for (String node : expired) {
                onTimeoutClose.accept(node);
                disconnect(node);
            }
            return super.poll(timeoutMs, now);
        }

        @Override
        public boolean ready(Node node, long now) {
            return super.ready(node, now) && inFlightRequestCount(node.idString()) < maxInFlight;
        }
    }

    /**
     * Kafka's RecordAccumulator, reporting where its drain of a node stops early.
     * drainBatchesForOneNode leaves a node's loop (break) at the first partition for which
     * shouldStopDrainBatchesForPartition holds, so the partitions after it in that node's
     * drain order wait even when their head batch could go. Before each drain this replays
     * the same loop read-only (same drain index, same private checks, by reflection) and
     * writes, per node, the partitions whose head batch a stop left behind: muted, backing
     * off or stopping partitions are not counted, only ones the loop would have drained.
     */
    static final class DrainWatch extends RecordAccumulator {
        static final java.lang.reflect.Method IS_MUTED, SHOULD_BACKOFF, SHOULD_STOP;
        static final java.lang.reflect.Field DRAIN_INDEX;
        static {
            try {
                IS_MUTED = RecordAccumulator.class.getDeclaredMethod("isMuted", TopicPartition.class);
                SHOULD_BACKOFF = RecordAccumulator.class.getDeclaredMethod("shouldBackoff",
                    boolean.class, ProducerBatch.class, long.class);
                SHOULD_STOP = RecordAccumulator.class.getDeclaredMethod("shouldStopDrainBatchesForPartition",
                    ProducerBatch.class, TopicPartition.class);
                DRAIN_INDEX = RecordAccumulator.class.getDeclaredField("nodesDrainIndex");
                IS_MUTED.setAccessible(true);
                SHOULD_BACKOFF.setAccessible(true);
                SHOULD_STOP.setAccessible(true);
                DRAIN_INDEX.setAccessible(true);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final List<String> lines;
        final java.util.function.LongSupplier step;

        DrainWatch(LogContext log, int batchSize, int linger, int backoff, int deliveryTimeout,
                   Metrics metrics, MockTime time, TransactionManager txn, BufferPool pool, List<String> lines,
                   java.util.function.LongSupplier step) {
            super(log, batchSize, Compression.NONE, linger, backoff, backoff, deliveryTimeout, metrics,
                "producer-metrics", time, txn, pool);
            this.lines = lines;
            this.step = step;
        }

        @Override
        public Map<Integer, List<ProducerBatch>> drain(MetadataSnapshot snapshot, Set<Node> nodes, int maxSize, long now) {
            try {
                for (Node node : nodes) watch(snapshot, node, maxSize, now);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
            return super.drain(snapshot, nodes, maxSize, now);
        }

        /** A partition's head batch the loop would take: present, not muted, not backing off. */
        ProducerBatch head(MetadataSnapshot snapshot, TopicPartition tp, long now) throws ReflectiveOperationException {
            if ((Boolean) IS_MUTED.invoke(this, tp)) return null;
            Deque<ProducerBatch> deque = getDeque(tp);
            if (deque == null) return null;
            ProducerBatch first = deque.peekFirst();
            if (first == null) return null;
            OptionalInt leaderEpoch = snapshot.leaderEpochFor(tp);
            first.maybeUpdateLeaderEpoch(leaderEpoch);
            if ((Boolean) SHOULD_BACKOFF.invoke(this, first.hasLeaderChangedForTheOngoingRetry(), first,
                first.waitedTimeMs(now))) return null;
            return first;
        }

        void watch(MetadataSnapshot snapshot, Node node, int maxSize, long now) throws ReflectiveOperationException {
            List<PartitionInfo> parts = snapshot.cluster().partitionsForNode(node.id());
            if (parts.isEmpty()) return;
            @SuppressWarnings("unchecked")
            Map<String, Integer> index = (Map<String, Integer>) DRAIN_INDEX.get(this);
            int start = index.getOrDefault(node.idString(), 0) % parts.size();
            int size = 0;
            boolean any = false;
            int stoppedAt = -1;
            List<Integer> left = new ArrayList<>();
            for (int k = 0; k < parts.size(); k++) {
                PartitionInfo part = parts.get((start + k) % parts.size());
                TopicPartition tp = new TopicPartition(part.topic(), part.partition());
                ProducerBatch first = head(snapshot, tp, now);
                if (first == null) continue;
                if (stoppedAt >= 0) {
                    if (!(Boolean) SHOULD_STOP.invoke(this, first, tp)) left.add(tp.partition());
                    continue;
                }
                if (size + first.estimatedSizeInBytes() > maxSize && any) return;
                if ((Boolean) SHOULD_STOP.invoke(this, first, tp)) {
                    stoppedAt = tp.partition();
                    continue;
                }
                size += first.estimatedSizeInBytes();
                any = true;
            }
            if (!left.isEmpty()) {
                StringBuilder b = new StringBuilder();
                for (int p : left) b.append(b.length() == 0 ? "" : ",").append(p);
                lines.add("{\"ev\":\"drain_stop\",\"node\":" + node.id() + ",\"at\":" + stoppedAt
                    + ",\"left\":\"" + b + "\",\"t\":" + (now - T0) + ",\"s\":" + step.getAsLong() + "}");
            }
        }
    }

    static Map<String, String> parse(String line) {
        Map<String, String> m = new HashMap<>();
        Matcher x = Pattern.compile("\"(\\w+)\"\\s*:\\s*(\"([^\"]*)\"|-?\\d+|true|false)").matcher(line);
        while (x.find()) m.put(x.group(1), x.group(3) != null ? x.group(3) : x.group(2));
        return m;
    }

    static int num(Map<String, String> m, String k, int dflt) {
        String v = m.get(k);
        return v == null ? dflt : Integer.parseInt(v);
    }

    final PrintStream out;
    final ScriptClock time = new ScriptClock();
    final int partitions, nodes, maxInFlight;
    final int[] leader, leaderEpoch;
    final long[] logEnd;
    final ProducerMetadata metadata;
    final LimitedClient client;
    final RecordAccumulator accumulator;
    final Sender sender;
    final TransactionManager txn;
    final Map<Integer, String> outcomes = new TreeMap<>();
    final IdentityHashMap<ClientRequest, Boolean> seen = new IdentityHashMap<>();
    final List<String> stepLines = new ArrayList<>();
    int records = 0;
    /**
     * Steps so far (a step: one script operation, one 50 ms clock step, or one answer of
     * the closing drain, each followed by flushStep); the core counts alike, so events
     * within one millisecond are ordered too.
     */
    long step = 0;
    /** Whether a Produce request was sent in the current pump round. */
    boolean sentProduce = false;
    int initCount = 0;
    /** Whether the trace's producer is transactional (transactional.id set). */
    final boolean transactional;
    /** The coordinator's broker id (one past the partition leaders). */
    final int coordinatorId;
    /** Pending transactional operations: the result Java completes, and the call's name. */
    final IdentityHashMap<TransactionalRequestResult, String> pendingTxn = new IdentityHashMap<>();
    final List<TransactionalRequestResult> pendingOrder = new ArrayList<>();
    /**
     * Coordinator answers scripted while no transactional request was outstanding: each
     * answers the next transactional request as it is sent, oldest first (so when each
     * side sends a request, and a retry's backoff, does not decide which answer it gets).
     */
    final Deque<String[]> coordQueue = new java.util.ArrayDeque<>();
    /** Transactional retries held until their backoff passed (the time each goes on the wire). */
    final IdentityHashMap<ClientRequest, Long> held = new IdentityHashMap<>();
    /** Records refused by send (their outcome is "refused"). */
    final java.util.Set<Integer> refused = new java.util.HashSet<>();

    ConformanceHarness(Map<String, String> cfg, PrintStream out) {
        this.out = out;
        partitions = num(cfg, "partitions", 1);
        nodes = num(cfg, "nodes", 1);
        maxInFlight = num(cfg, "max_in_flight", 5);
        int batchSize = num(cfg, "batch_size", 16384);
        int linger = num(cfg, "linger_ms", 0);
        int requestTimeout = num(cfg, "request_timeout_ms", 30000);
        int deliveryTimeout = num(cfg, "delivery_timeout_ms", 120000);
        int backoff = num(cfg, "retry_backoff_ms", 100);
        int maxRequestSize = num(cfg, "max_request_size", 1048576);
        leader = new int[partitions];
        leaderEpoch = new int[partitions];
        logEnd = new long[partitions];
        for (int p = 0; p < partitions; p++) leader[p] = p % nodes;

        LogContext log = new LogContext("conformance ");
        Metrics metrics = new Metrics(time);
        ApiVersions apiVersions = new ApiVersions();
        transactional = num(cfg, "transactional", 0) == 1;
        coordinatorId = nodes;
        // No finalized transaction.version in ApiVersions: Java speaks transaction version 1.
        txn = new TransactionManager(log, transactional ? TXN_ID : null, transactional ? 60_000 : 0, backoff,
            apiVersions, false);
        metadata = new ProducerMetadata(backoff, backoff, 300_000, 300_000, log,
            new ClusterResourceListeners(), time);
        metadata.add(TOPIC, time.milliseconds());
        client = new LimitedClient(time, metadata, maxInFlight);
        // A request timeout closes the connection (the step is written, to order it against
        // sends of the same step).
        client.onTimeoutClose = node -> stepLines.add("{\"ev\":\"disconnected\",\"node\":" + node
            + ",\"why\":\"timeout\",\"s\":" + step + "}");
        // A Produce request is written when it is sent: the Sender drains before
        // NetworkClient.poll closes timed-out connections, so a request put on such a
        // connection is dropped in the same runOnce, before pump looks at the queue.
        client.onSend = r -> {
            if (r.apiKey() == ApiKeys.PRODUCE && !seen.containsKey(r)) {
                seen.put(r, Boolean.TRUE);
                stepLines.add(describe(r));
                sentProduce = true;
            }
        };
        client.updateMetadata(metadataResponse());
        if (transactional) {
            client.coordinator = new Node(coordinatorId, "localhost", 9092 + coordinatorId);
            // Every broker advertises every API at its newest version (a current Kafka):
            // InitProducerId v3+ lets the coordinator bump epochs (KIP-360), which
            // TransactionManager reads from ApiVersions (coordinatorSupportsBumpingEpoch;
            // without it UNKNOWN_PRODUCER_ID is fatal). No finalized features: TV1.
            for (int n = 0; n <= coordinatorId; n++) {
                apiVersions.update(String.valueOf(n), org.apache.kafka.clients.NodeApiVersions.create());
            }
        }
        BufferPool pool = new BufferPool(32L * 1024 * 1024, batchSize, metrics, time, "producer-metrics");
        accumulator = new DrainWatch(log, batchSize, linger, backoff, deliveryTimeout, metrics, time, txn, pool,
            stepLines, () -> step);
        sender = new Sender(log, client, metadata, accumulator, maxInFlight == 1, maxRequestSize,
            (short) -1, Integer.MAX_VALUE, new SenderMetricsRegistry(metrics), time, requestTimeout,
            backoff, txn);
    }

    MetadataResponse metadataResponse() {
        List<Node> ns = new ArrayList<>();
        for (int n = 0; n < nodes; n++) ns.add(new Node(n, "localhost", 9092 + n));
        List<MetadataResponse.PartitionMetadata> pms = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            List<Integer> replicas = Collections.singletonList(leader[p]);
            pms.add(new MetadataResponse.PartitionMetadata(Errors.NONE, new TopicPartition(TOPIC, p),
                Optional.of(leader[p]), Optional.of(leaderEpoch[p]), replicas, replicas,
                Collections.emptyList()));
        }
        MetadataResponse.TopicMetadata tm = new MetadataResponse.TopicMetadata(Errors.NONE, TOPIC, false, pms);
        return RequestTestUtils.metadataResponse(ns, "cluster", 0, Collections.singletonList(tm));
    }

    void send(int p, int size) throws InterruptedException {
        final int rec = records++;
        if (transactional) {
            // KafkaProducer.doSend appends, then calls maybeAddPartition, which throws
            // outside an open transaction (or in an error state) and leaves the record in
            // the accumulator; the harness asks first and refuses the record, as the core
            // does (no batch ever carries a refused record).
            try {
                txn.maybeAddPartition(new TopicPartition(TOPIC, p));
            } catch (RuntimeException e) {
                refused.add(rec);
                outcomes.put(rec, "refused");
                stepLines.add("{\"ev\":\"send_refused\",\"rec\":" + rec + "}");
                return;
            }
        }
        byte[] value = new byte[size];
        RecordAccumulator.AppendCallbacks cb = new RecordAccumulator.AppendCallbacks() {
            @Override
            public void setPartition(int partition) { }

            @Override
            public void onCompletion(RecordMetadata md, Exception e) {
                if (refused.contains(rec)) {
                    return;
                } else if (outcomes.containsKey(rec)) {
                    outcomes.put(rec, outcomes.get(rec) + "+twice");
                } else if (e == null) {
                    outcomes.put(rec, "ok:" + md.offset());
                } else {
                    outcomes.put(rec, "err:" + Errors.forException(e).code());
                }
            }
        };
        accumulator.append(TOPIC, p, 0L, null, value, Record.EMPTY_HEADERS, cb, 0, time.milliseconds(),
            metadata.fetch());
    }

    /** A transactional request goes on the wire: written, and answered if an answer waits. */
    void onTheWire(ClientRequest r) {
        stepLines.add(describeTxn(r));
        String[] queued = coordQueue.poll();
        if (queued != null) coord(queued, true);
    }

    /** Releases the held transactional requests whose backoff has passed. */
    boolean release() {
        boolean any = false;
        for (ClientRequest r : new ArrayList<>(held.keySet())) {
            if (held.get(r) <= time.milliseconds()) {
                held.remove(r);
                any = true;
                if (client.requests().contains(r)) onTheWire(r);
            }
        }
        return any;
    }

    /**
     * Runs the Sender until it sends nothing new; answers InitProducerId at once. A round
     * that sends nothing may still have moved the Sender on (queued a coordinator lookup
     * for the request it meant to send: `maybeFindCoordinatorAndRetry`), which the real
     * Sender thread sends in its very next loop, so the pump stops only after two idle
     * rounds in a row. The cap (50 rounds) is the core side's, so a backlog of scripted
     * coordinator answers is consumed within one step on both sides.
     */
    void pump() {
        time.owed = 0;
        boolean idleBefore = false;
        for (int round = 0; round < 50; round++) {
            release();
            sentProduce = false;
            sender.runOnce();
            boolean fresh = sentProduce;
            for (ClientRequest r : new ArrayList<>(client.requests())) {
                if (seen.containsKey(r)) continue;
                seen.put(r, Boolean.TRUE);
                fresh = true;
                if (transactional && r.apiKey() != ApiKeys.PRODUCE) {
                    if (time.owed > 0) {
                        held.put(r, time.milliseconds() + time.owed);
                        time.owed = 0;
                    } else {
                        onTheWire(r);
                    }
                } else if (r.apiKey() == ApiKeys.INIT_PRODUCER_ID) {
                    InitProducerIdRequest ir = (InitProducerIdRequest) r.requestBuilder().build();
                    long cur = ir.data().producerId();
                    short curEpoch = ir.data().producerEpoch();
                    stepLines.add("{\"ev\":\"init\",\"pid\":" + cur + ",\"epoch\":" + curEpoch + "}");
                    long pid = cur >= 0 ? cur : 1000 + initCount;
                    short epoch = cur >= 0 ? (short) (curEpoch + 1) : 0;
                    initCount++;
                    client.respondToRequest(r, new InitProducerIdResponse(new InitProducerIdResponseData()
                        .setProducerId(pid).setProducerEpoch(epoch).setErrorCode(Errors.NONE.code())));
                    deliver();
                } else if (r.apiKey() == ApiKeys.PRODUCE) {
                    stepLines.add(describe(r));
                } else {
                    stepLines.add("{\"ev\":\"unexpected\",\"api\":\"" + r.apiKey() + "\"}");
                }
            }
            boolean idle = !fresh && client.responses().isEmpty();
            if (idle && idleBefore && round > 1) break;
            idleBefore = idle;
        }
    }

    /** A transactional request as written: kind, producer id and epoch, partitions, commit. */
    static String describeTxn(ClientRequest r) {
        switch (r.apiKey()) {
            case FIND_COORDINATOR:
                return "{\"ev\":\"txn\",\"api\":\"find_coordinator\"}";
            case INIT_PRODUCER_ID: {
                org.apache.kafka.common.message.InitProducerIdRequestData d =
                    ((InitProducerIdRequest.Builder) r.requestBuilder()).data;
                return "{\"ev\":\"txn\",\"api\":\"init\",\"pid\":" + d.producerId() + ",\"epoch\":"
                    + d.producerEpoch() + "}";
            }
            case ADD_PARTITIONS_TO_TXN: {
                org.apache.kafka.common.message.AddPartitionsToTxnRequestData d =
                    ((AddPartitionsToTxnRequest.Builder) r.requestBuilder()).data;
                return "{\"ev\":\"txn\",\"api\":\"add_partitions\",\"pid\":" + d.v3AndBelowProducerId()
                    + ",\"epoch\":" + d.v3AndBelowProducerEpoch() + ",\"parts\":\""
                    + partitionList(AddPartitionsToTxnRequest.getPartitions(d.v3AndBelowTopics())) + "\"}";
            }
            case END_TXN: {
                org.apache.kafka.common.message.EndTxnRequestData d = ((EndTxnRequest.Builder) r.requestBuilder()).data;
                return "{\"ev\":\"txn\",\"api\":\"end_txn\",\"pid\":" + d.producerId() + ",\"epoch\":"
                    + d.producerEpoch() + ",\"commit\":" + (d.committed() ? 1 : 0) + "}";
            }
            default:
                return "{\"ev\":\"unexpected\",\"api\":\"" + r.apiKey() + "\"}";
        }
    }

    static String partitionList(List<TopicPartition> tps) {
        java.util.TreeSet<Integer> ps = new java.util.TreeSet<>();
        for (TopicPartition tp : tps) ps.add(tp.partition());
        StringBuilder b = new StringBuilder();
        for (int p : ps) b.append(b.length() == 0 ? "" : ",").append(p);
        return b.toString();
    }

    ClientRequest outstandingTxn() {
        for (ClientRequest r : client.requests()) {
            if (r.apiKey() != ApiKeys.PRODUCE && !held.containsKey(r)) return r;
        }
        return null;
    }

    /**
     * The coordinator answers the outstanding transactional request with `error`; an
     * AddPartitionsToTxn answer gives partition `p` the error `perr` instead.
     */
    /**
     * The coordinator answers the outstanding transactional request, or the next one if
     * none is: {error, p, perr, rest, find, init, end} as the trace's "coord" line names
     * them. FindCoordinator, InitProducerId and EndTxn take find, init and end where
     * named, else error; AddPartitionsToTxn gives partition p perr and, where the request
     * names p, every other partition rest (if named); else every partition error.
     */
    void coord(String[] script, boolean queued) {
        ClientRequest r = outstandingTxn();
        if (r == null) {
            coordQueue.add(script);
            return;
        }
        String error = script[0];
        int p = Integer.parseInt(script[1]);
        String perr = script[2];
        String rest = script[3];
        switch (r.apiKey()) {
            case FIND_COORDINATOR:
                if (script[4] != null) error = script[4];
                break;
            case INIT_PRODUCER_ID:
                if (script[5] != null) error = script[5];
                break;
            case END_TXN:
                if (script[6] != null) error = script[6];
                break;
            default:
                break;
        }
        Errors e = Errors.valueOf(error);
        org.apache.kafka.common.requests.AbstractResponse resp;
        String api;
        String said = error;
        switch (r.apiKey()) {
            case FIND_COORDINATOR:
                api = "find_coordinator";
                resp = FindCoordinatorResponse.prepareResponse(e, TXN_ID, client.coordinator);
                break;
            case INIT_PRODUCER_ID: {
                api = "init";
                org.apache.kafka.common.message.InitProducerIdRequestData d =
                    ((InitProducerIdRequest.Builder) r.requestBuilder()).data;
                long pid = -1;
                short epoch = -1;
                if (e == Errors.NONE) {
                    pid = d.producerId() >= 0 ? d.producerId() : 1000 + initCount;
                    epoch = d.producerId() >= 0 ? (short) (d.producerEpoch() + 1) : 0;
                    initCount++;
                }
                resp = new InitProducerIdResponse(new InitProducerIdResponseData()
                    .setProducerId(pid).setProducerEpoch(epoch).setErrorCode(e.code()));
                break;
            }
            case ADD_PARTITIONS_TO_TXN: {
                api = "add_partitions";
                org.apache.kafka.common.message.AddPartitionsToTxnRequestData d =
                    ((AddPartitionsToTxnRequest.Builder) r.requestBuilder()).data;
                Map<TopicPartition, Errors> errors = new TreeMap<>((a, b) -> Integer.compare(a.partition(), b.partition()));
                StringBuilder b = new StringBuilder();
                List<TopicPartition> asked = AddPartitionsToTxnRequest.getPartitions(d.v3AndBelowTopics());
                boolean named = perr != null && asked.stream().anyMatch(tp -> tp.partition() == p);
                for (TopicPartition tp : asked) {
                    Errors pe = !named ? e
                        : tp.partition() == p ? Errors.valueOf(perr)
                        : rest != null ? Errors.valueOf(rest) : e;
                    errors.put(tp, pe);
                }
                for (Map.Entry<TopicPartition, Errors> x : errors.entrySet()) {
                    b.append(b.length() == 0 ? "" : ",").append(x.getKey().partition()).append("=").append(x.getValue().name());
                }
                said = b.toString();
                resp = new AddPartitionsToTxnResponse(new AddPartitionsToTxnResponseData()
                    .setResultsByTopicV3AndBelow(AddPartitionsToTxnResponse.resultForTransaction(
                        AddPartitionsToTxnResponse.V3_AND_BELOW_TXN_ID, errors).topicResults()));
                break;
            }
            case END_TXN:
                api = "end_txn";
                resp = new EndTxnResponse(new EndTxnResponseData().setErrorCode(e.code()));
                break;
            default:
                return;
        }
        String line = "{\"ev\":\"coord_answered\",\"api\":\"" + api + "\",\"error\":\"" + said + "\"}";
        // An answer that waited for its request is written after the request, in its step.
        if (queued) stepLines.add(line);
        else out.println(line);
        client.respondToRequest(r, resp);
        deliver();
    }

    /** An application's transactional call: begin, commit or abort. */
    void txnCall(String call) {
        try {
            TransactionalRequestResult result = null;
            switch (call) {
                case "begin":
                    txn.beginTransaction();
                    break;
                case "commit":
                    result = txn.beginCommit();
                    break;
                case "abort":
                    result = txn.beginAbort();
                    break;
                default:
                    throw new IllegalArgumentException("unknown call " + call);
            }
            stepLines.add("{\"ev\":\"txn_call\",\"call\":\"" + call + "\",\"result\":\"ok\"}");
            if (result != null) track(result, call);
        } catch (RuntimeException e) {
            stepLines.add("{\"ev\":\"txn_call\",\"call\":\"" + call + "\",\"result\":\"refused\"}");
        }
    }

    void track(TransactionalRequestResult result, String call) {
        if (!pendingTxn.containsKey(result) && !result.isCompleted()) {
            pendingTxn.put(result, call);
            pendingOrder.add(result);
        } else if (result.isCompleted() && !pendingTxn.containsKey(result)) {
            // Completed at once (an empty transaction's commit): written like any completion.
            pendingTxn.put(result, call);
            pendingOrder.add(result);
        }
    }

    /** Writes the completion of every pending operation that completed. */
    void completions() {
        for (TransactionalRequestResult r : new ArrayList<>(pendingOrder)) {
            if (!r.isCompleted()) continue;
            String call = pendingTxn.remove(r);
            pendingOrder.remove(r);
            String how = r.isSuccessful() ? "ok" : "err:" + Errors.forException(r.error()).code();
            // The application's blocking call (KafkaProducer.initTransactions, commit,
            // abort) returns through await, which acknowledges the result: the next
            // call is no longer refused as a retry of a timed-out one.
            try {
                r.await(0, java.util.concurrent.TimeUnit.MILLISECONDS, "completed");
            } catch (RuntimeException ignored) {
                // The error is the one written.
            }
            stepLines.add("{\"ev\":\"txn_done\",\"call\":\"" + call + "\",\"result\":\"" + how + "\"}");
        }
    }

    static ProduceRequest produce(ClientRequest r) {
        ProduceRequest.Builder b = (ProduceRequest.Builder) r.requestBuilder();
        return b.build(b.latestAllowedVersion());
    }

    String describe(ClientRequest r) {
        TreeMap<Integer, String> parts = new TreeMap<>();
        for (ProduceRequestData.TopicProduceData t : produce(r).data().topicData()) {
            for (ProduceRequestData.PartitionProduceData pd : t.partitionData()) {
                RecordBatch b = ((MemoryRecords) pd.records()).batches().iterator().next();
                parts.put(pd.index(), pd.index() + ":" + b.producerId() + ":" + b.producerEpoch() + ":"
                    + b.baseSequence() + ":" + b.countOrNull());
            }
        }
        return "{\"ev\":\"produce\",\"node\":" + r.destination() + ",\"batches\":\""
            + String.join(",", parts.values()) + "\",\"t\":" + (r.createdTimeMs() - T0) + ",\"s\":" + step + "}";
    }

    ClientRequest oldestProduce(int node) {
        for (ClientRequest r : client.requests()) {
            if (r.apiKey() == ApiKeys.PRODUCE && r.destination().equals(String.valueOf(node))) return r;
        }
        return null;
    }

    /** Answers the oldest Produce request to node: every partition gets `error`, except `p`. */
    void answer(int node, String error, int p, String perr, long logStart) {
        ClientRequest r = oldestProduce(node);
        if (r == null) return;
        ProduceResponseData data = new ProduceResponseData();
        TreeMap<Integer, String> said = new TreeMap<>();
        for (ProduceRequestData.TopicProduceData t : produce(r).data().topicData()) {
            ProduceResponseData.TopicProduceResponse tr = new ProduceResponseData.TopicProduceResponse()
                .setName(t.name()).setTopicId(t.topicId());
            for (ProduceRequestData.PartitionProduceData pd : t.partitionData()) {
                RecordBatch b = ((MemoryRecords) pd.records()).batches().iterator().next();
                Errors e = Errors.valueOf(pd.index() == p && perr != null ? perr : error);
                long base = -1;
                said.put(pd.index(), pd.index() + ":" + b.producerId() + ":" + b.producerEpoch() + ":"
                    + b.baseSequence() + ":" + b.countOrNull() + "=" + e.name());
                if (e == Errors.NONE) {
                    base = logEnd[pd.index()];
                    logEnd[pd.index()] += b.countOrNull();
                }
                tr.partitionResponses().add(new ProduceResponseData.PartitionProduceResponse()
                    .setIndex(pd.index()).setErrorCode(e.code()).setBaseOffset(base)
                    .setLogStartOffset(e == Errors.NONE ? 0 : logStart).setLogAppendTimeMs(-1));
            }
            data.responses().add(tr);
        }
        out.println("{\"ev\":\"answered\",\"node\":" + node + ",\"batches\":\""
            + String.join(",", said.values()) + "\"}");
        client.respondToRequest(r, new ProduceResponse(data));
        deliver();
    }

    /**
     * NetworkClient.poll takes an answered request off the connection's in-flight queue and
     * runs its callback in the same call; MockClient.respondToRequest only does the first.
     * Deliver at once, so the Sender never sees a free connection before the answer.
     */
    void deliver() {
        client.poll(0, time.milliseconds());
    }

    void flushStep() {
        completions();
        // Requests of one step to different nodes go out in an order neither side promises:
        // order them by node (stable, so each node's own order is kept).
        List<String> lines = new ArrayList<>(stepLines);
        lines.sort((a, b) -> Integer.compare(nodeOf(a), nodeOf(b)));
        for (String l : lines) out.println(l);
        stepLines.clear();
        step++;
    }

    static int nodeOf(String line) {
        Matcher m = Pattern.compile("\"node\":(-?\\d+)").matcher(line);
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    void tick(long ms) {
        while (ms > 0) {
            long d = Math.min(ms, STEP_MS);
            time.scripted = true;
            time.sleep(d);
            time.scripted = false;
            ms -= d;
            pump();
            flushStep();
        }
    }

    void op(Map<String, String> m) throws InterruptedException {
        switch (m.get("op")) {
            case "send":
                send(num(m, "p", 0), num(m, "size", 10));
                break;
            case "tick":
                tick(num(m, "ms", 0));
                return;
            case "answer":
                answer(num(m, "node", 0), m.getOrDefault("error", "NONE"), num(m, "p", -1), m.get("perr"),
                    num(m, "log_start", 0));
                break;
            case "coord":
                coord(new String[] {m.getOrDefault("error", "NONE"), String.valueOf(num(m, "p", -1)), m.get("perr"),
                    m.get("rest"), m.get("find"), m.get("init"), m.get("end")}, false);
                break;
            case "txn":
                txnCall(m.get("call"));
                break;
            case "disconnect":
                out.println("{\"ev\":\"disconnected\",\"node\":" + num(m, "node", 0) + "}");
                client.disconnect(String.valueOf(num(m, "node", 0)));
                deliver();
                break;
            case "leader": {
                int p = num(m, "p", 0);
                leader[p] = num(m, "node", 0);
                leaderEpoch[p]++;
                client.updateMetadata(metadataResponse());
                break;
            }
            default:
                throw new IllegalArgumentException("unknown op " + m.get("op"));
        }
        pump();
        flushStep();
    }

    /** After the script: the broker answers everything with NONE until every record has an outcome. */
    void drain() {
        for (int round = 0; round < 400
            && (outcomes.size() < records || !pendingOrder.isEmpty() || outstandingTxn() != null); round++) {
            for (int n = 0; n < nodes; n++) {
                while (oldestProduce(n) != null) {
                    answer(n, "NONE", -1, null, 0);
                    pump();
                    flushStep();
                }
            }
            for (int k = 0; k < 20 && outstandingTxn() != null; k++) {
                coord(new String[] {"NONE", "-1", null, null, null, null, null}, false);
                pump();
                flushStep();
            }
            tick(100);
        }
        for (int r = 0; r < records; r++) {
            out.println("{\"ev\":\"outcome\",\"rec\":" + r + ",\"result\":\"" + outcomes.getOrDefault(r, "none") + "\"}");
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        ConformanceHarness h = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, String> m = parse(line);
            String op = m.get("op");
            if ("config".equals(op)) {
                h = new ConformanceHarness(m, out);
                if (h.transactional) h.track(h.txn.initializeTransactions(false), "init");
                h.pump();
                h.flushStep();
            } else if ("end".equals(op)) {
                try {
                    h.drain();
                } catch (RuntimeException e) {
                    out.println("{\"ev\":\"java_exception\",\"what\":\"" + e.getClass().getSimpleName() + ": "
                        + String.valueOf(e.getMessage()).replace('"', '\'') + "\"}");
                }
                out.println("{\"ev\":\"end\"}");
                out.flush();
                h = null;
            } else {
                try {
                    h.op(m);
                } catch (RuntimeException e) {
                    out.println("{\"ev\":\"java_exception\",\"what\":\"" + e.getClass().getSimpleName() + ": "
                        + String.valueOf(e.getMessage()).replace('"', '\'') + "\"}");
                }
            }
        }
        out.flush();
    }
}
