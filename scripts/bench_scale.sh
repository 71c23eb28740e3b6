#!/usr/bin/env bash
# Issue 16 item 6: kacrab-tokio at many partitions over three brokers, against the same
# load over 6 partitions on the same cluster. Not a test: it measures.
#
#   scripts/bench_scale.sh [--partitions N] [--records R] [--size B] [--rounds K] [--port P]
#
# Defaults: 10,000 partitions, 300,000 records of 1,024 B, 1 round, cluster base port
# 41192. Starts a three-node KRaft cluster with scripts/kafka.sh, warms the brokers up
# (3 x 1,000,000 records of 100 B to a 6-partition topic), creates a 6-partition topic
# and the N-partition one (replication 1: leaders spread over the three brokers; KRaft
# refuses to create 10,000 partitions in one call, so the topic is created at 4,000 and
# grown), then per round runs the Tokio produce example (release, at its defaults) on the
# 6-partition topic and on the N-partition one, under /usr/bin/time -v with --stats.
# Prints per run: records/s, the client's CPU seconds and peak RSS, batches (records
# sent over the records a batch held on average, from the batch-size-avg metric) and
# CPU per batch; then every topic's end offsets, which must add up to the records sent.
# Raw output: target/bench-scale/<run>/. The cluster is stopped at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

partitions=10000 records=300000 size=1024 rounds=1 port=41192
while [ $# -gt 0 ]; do
  case "$1" in
    --partitions) partitions=$2; shift 2 ;;
    --records) records=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_scale: unknown option $1" >&2; exit 2 ;;
  esac
done

kafka() { bash scripts/kafka.sh "$@"; }
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
cargo build --release -q -p kacrab-tokio --example tokio_produce
bin=target/release/examples/tokio_produce
out=target/bench-scale/$(date +%s)
mkdir -p "$out"

eval "$(kafka start-cluster "$port")"
bs=$KACRAB_KAFKA_CLUSTER
trap 'bash scripts/kafka.sh stop cluster >/dev/null 2>&1 || true' EXIT

kafka create-topic "$bs" scale-warm 6 1 >/dev/null 2>&1
for _ in 1 2 3; do
  "$bin" --bootstrap "$bs" --topic scale-warm --partitions 6 --records 1000000 \
    --record-size 100 >/dev/null 2>&1
done
kafka create-topic "$bs" scale-6 6 1 >/dev/null 2>&1
if [ "$partitions" -gt 4000 ]; then
  kafka create-topic "$bs" "scale-$partitions" 4000 1 >/dev/null 2>&1
  kafka add-partitions "$bs" "scale-$partitions" "$partitions" >/dev/null 2>&1
else
  kafka create-topic "$bs" "scale-$partitions" "$partitions" 1 >/dev/null 2>&1
fi
kafka wait-leaders "$bs" "scale-$partitions" --timeout 300 >/dev/null 2>&1 || true

# metric <file> <name>: a producer-metrics value from a --stats dump.
metric() { sed -n "s/^producer-metrics:$2 //p" "$1"; }
for ((r = 1; r <= rounds; r++)); do
  for p in 6 "$partitions"; do
    run=$out/r$r-$p
    /usr/bin/time -v -o "$run.time" "$bin" --bootstrap "$bs" --topic "scale-$p" \
      --partitions "$p" --records "$records" --record-size "$size" --stats \
      >"$run.out" 2>"$run.err" || echo "bench_scale: the run on $p partitions failed (see $run.err)" >&2
    cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{print s+0}' "$run.time")
    rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): *//p' "$run.time")
    sent=$(metric "$run.out" record-send-total)
    avg=$(metric "$run.out" batch-size-avg)
    # A record of `size` bytes with its key and varints takes about size + 13 B in a
    # batch; a batch header is 61 B.
    awk -v p="$p" -v r="$r" -v cpu="$cpu" -v rss="$rss" -v sent="$sent" -v avg="$avg" \
      -v size="$size" -v line="$(grep '^produce:' "$run.out" | tail -1)" 'BEGIN {
        per = (avg - 61) / (size + 13); batches = sent / per
        printf "round %d, %d partitions: %s\n  cpu %.2f s, peak RSS %d KiB, records sent (retries included) %d, %.2f records per batch, about %d batches, %.1f us CPU per batch\n",
          r, p, line, cpu, rss, sent, per, batches, cpu * 1e6 / batches }'
  done
done
kafka end-offsets "$bs" 'scale-6|scale-[0-9]+' | tee "$out/offsets"
echo "bench_scale: expected $((records * rounds)) per measured topic; raw output in $out"
