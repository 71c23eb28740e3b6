// Command franzgo-peer is franz-go's producer (pkg/kgo) with the command line, the load
// and the summary line of kacrab's produce examples (examples/support/produce_cli.rs), so
// scripts/bench_vs_peers.sh reads every client the same way:
//
//	franzgo-peer --bootstrap HOST:PORT --topic T --partitions P --records N --record-size B
//	    [--throughput R] [--property key=value]...
//
// Record i: key i, value i padded with '.' to B bytes, partition i mod P (kgo's
// ManualPartitioner). Everything else is kgo's default (idempotent, acks=all, snappy
// compression preferred) unless a --property maps onto a kgo option: acks,
// enable.idempotence, linger.ms, batch.size (ProducerBatchMaxBytes),
// compression.type. Latency is from the Produce call (before any wait for buffer room)
// to the promise. The last stdout line is
// "produce: records=N acked=A failed=F elapsed_ms=E records_per_s=R p50_ms=X p99_ms=Y".
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type args struct {
	bootstrap, topic string
	partitions       int32
	records          uint64
	recordSize       int
	throughput       uint64 // 0: unpaced
	opts             []kgo.Opt
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	fmt.Fprintln(os.Stderr, "usage: franzgo-peer --bootstrap HOST:PORT --topic T --partitions P "+
		"--records N --record-size B [--throughput R] [--property key=value]...")
	os.Exit(2)
}

func number(flag, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		fail("%s: not a number: %s", flag, v)
	}
	return n
}

// property maps a Kafka producer key onto a kgo option.
func property(k, v string) kgo.Opt {
	switch k {
	case "acks":
		switch v {
		case "all", "-1":
			return kgo.RequiredAcks(kgo.AllISRAcks())
		case "1":
			return kgo.RequiredAcks(kgo.LeaderAck())
		case "0":
			return kgo.RequiredAcks(kgo.NoAck())
		}
	case "enable.idempotence":
		if v == "false" {
			return kgo.DisableIdempotentWrite()
		}
		if v == "true" {
			return nil // kgo's default
		}
	case "linger.ms":
		return kgo.ProducerLinger(time.Duration(number(k, v)) * time.Millisecond)
	case "batch.size":
		return kgo.ProducerBatchMaxBytes(int32(number(k, v)))
	case "compression.type":
		codec := map[string]kgo.CompressionCodec{
			"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
			"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(),
			"zstd": kgo.ZstdCompression(),
		}
		if c, ok := codec[v]; ok {
			return kgo.ProducerBatchCompression(c)
		}
	default:
		fail("--property %s: no kgo option for this key", k)
	}
	fail("--property %s=%s: unsupported value", k, v)
	return nil
}

func parse() args {
	a := args{}
	seen := map[string]bool{}
	argv := os.Args[1:]
	for i := 0; i < len(argv); i += 2 {
		flag := argv[i]
		if i+1 >= len(argv) {
			fail("%s needs a value", flag)
		}
		v := argv[i+1]
		seen[flag] = true
		switch flag {
		case "--bootstrap":
			a.bootstrap = v
		case "--topic":
			a.topic = v
		case "--partitions":
			a.partitions = int32(number(flag, v))
		case "--records":
			a.records = uint64(number(flag, v))
		case "--record-size", "--size":
			a.recordSize = int(number(flag, v))
			seen["--record-size"] = true
		case "--throughput":
			if r := number(flag, v); r > 0 {
				a.throughput = uint64(r)
			}
		case "--property":
			k, val, ok := strings.Cut(v, "=")
			if !ok || k == "" {
				fail("--property %s: expected key=value", v)
			}
			if opt := property(k, val); opt != nil {
				a.opts = append(a.opts, opt)
			}
		default:
			fail("unknown flag %s", flag)
		}
	}
	for _, f := range []string{"--bootstrap", "--topic", "--partitions", "--records", "--record-size"} {
		if !seen[f] {
			fail("%s is required", f)
		}
	}
	if a.partitions < 1 {
		fail("--partitions must be at least 1")
	}
	return a
}

// value is record i's value: i in decimal, padded with '.' to size bytes.
func value(i uint64, size int) []byte {
	v := strconv.AppendUint(make([]byte, 0, size), i, 10)
	for len(v) < size {
		v = append(v, '.')
	}
	return v
}

// percentileMs is the p-th percentile of sorted microseconds in ms (nearest rank).
func percentileMs(sorted []uint32, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return float64(sorted[rank-1]) / 1000
}

func main() {
	a := parse()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(a.bootstrap),
		kgo.ClientID("franzgo-peer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, a.opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail("creating the client: %v", err)
	}
	defer cl.Close()

	var acked, failed atomic.Uint64
	var mu sync.Mutex
	latencies := make([]uint32, 0, a.records)
	var firstErr error

	ctx := context.Background()
	start := time.Now()
	done := make(chan struct{})
	go func() { // progress, as the kacrab examples print it
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastT time.Duration
		var lastA uint64
		for {
			select {
			case <-done:
				return
			case <-t.C:
				el := time.Since(start)
				ak := acked.Load()
				fmt.Fprintf(os.Stderr, "produce: %.0fs acked=%d/%d failed=%d (%.0f records/s now, %.0f records/s overall)\n",
					el.Seconds(), ak, a.records, failed.Load(),
					float64(ak-lastA)/(el-lastT).Seconds(), float64(ak)/el.Seconds())
				lastT, lastA = el, ak
			}
		}
	}()
	for i := uint64(0); i < a.records; i++ {
		if a.throughput > 0 {
			at := start.Add(time.Duration(i * uint64(time.Second) / a.throughput))
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
		}
		rec := &kgo.Record{
			Topic:     a.topic,
			Partition: int32(i % uint64(a.partitions)),
			Key:       strconv.AppendUint(nil, i, 10),
			Value:     value(i, a.recordSize),
		}
		sentAt := time.Now()
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				failed.Add(1)
				return
			}
			us := time.Since(sentAt).Microseconds()
			mu.Lock()
			latencies = append(latencies, uint32(min(us, math.MaxUint32)))
			mu.Unlock()
			acked.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "flush: %v\n", err)
	}
	elapsed := time.Since(start)
	close(done)
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "first failure: %v\n", firstErr)
	}
	mu.Lock()
	sort.Slice(latencies, func(x, y int) bool { return latencies[x] < latencies[y] })
	fmt.Printf("produce: records=%d acked=%d failed=%d elapsed_ms=%d records_per_s=%.0f p50_ms=%.1f p99_ms=%.1f\n",
		a.records, acked.Load(), failed.Load(), elapsed.Milliseconds(),
		float64(a.records)/max(elapsed.Seconds(), 1e-9),
		percentileMs(latencies, 50), percentileMs(latencies, 99))
	mu.Unlock()
	if acked.Load() != a.records {
		os.Exit(1)
	}
}
