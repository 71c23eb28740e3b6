#!/usr/bin/env bash
# Side by side: Java's ProducerPerformance and kacrab's Tokio and blocking producers,
# each sending the same load (default 1,000,000 records of 100 bytes, idempotence on,
# acks=all) to a fresh 6-partition topic on the same single real broker, one after the
# other. Prints records/s, MB/s, p50/p99 send-to-ack latency and peak RSS of each
# process, and the ratios against Java. Not a test: it only measures.
#
#   scripts/bench_vs_java.sh [records] [size] [partitions]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
records=${1:-1000000}
size=${2:-100}
partitions=${3:-6}
kafka() { bash scripts/kafka.sh "$@"; }

command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
cargo build --release -q -p kacrab-tokio --example tokio_produce
cargo build --release -q -p kacrab-blocking --example blocking_produce
cp "$repo/target/release/examples/tokio_produce" /tmp/kacrab-produce-tokio
cp "$repo/target/release/examples/blocking_produce" /tmp/kacrab-produce-blocking

started_here=0
if [ -z "${KACRAB_KAFKA_BOOTSTRAP:-}" ]; then
  eval "$(kafka start-single)"
  started_here=1
fi
bs=$KACRAB_KAFKA_BOOTSTRAP
trap '[ "$started_here" = 1 ] && bash scripts/kafka.sh stop all >/dev/null 2>&1 || true' EXIT

run_id=$(date +%s)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB; $(rustc --version); $(java -version 2>&1 | head -1)"
echo "load: $records records x $size B, $partitions partitions, acks=all, idempotence on, broker $bs"

# Java
kafka create-topic "$bs" "java-$run_id" "$partitions" 1 >/dev/null
java_out=$(kafka perf "$bs" "java-$run_id" "$records" "$size")
java_line=$(echo "$java_out" | grep 'records/sec' | tail -1)
java_rps=$(echo "$java_line" | sed -E 's/.* ([0-9.]+) records\/sec.*/\1/')
java_mbps=$(echo "$java_line" | sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/')
java_p50=$(echo "$java_line" | sed -E 's/.* ([0-9]+) ms 50th.*/\1/')
java_p99=$(echo "$java_line" | sed -E 's/.* ([0-9]+) ms 99th.*/\1/')
java_rss=$(echo "$java_out" | sed -n 's/^KACRAB_PERF_PEAK_RSS_KB=//p')

run_kacrab() { # name binary
  local topic="$1-$run_id" log=/tmp/kacrab-bench-$1.log
  kafka create-topic "$bs" "$topic" "$partitions" 1 >/dev/null
  /usr/bin/time -v "$2" --bootstrap "$bs" --topic "$topic" --partitions "$partitions" \
    --records "$records" --record-size "$size" >"$log.out" 2>"$log.err"
  local line rss
  line=$(grep '^produce:' "$log.out" | tail -1)
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log.err")
  echo "$line rss_kb=$rss"
}
tokio_line=$(run_kacrab tokio /tmp/kacrab-produce-tokio)
blocking_line=$(run_kacrab blocking /tmp/kacrab-produce-blocking)

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
mbps() { awk -v r="$1" -v s="$size" 'BEGIN{printf "%.2f", r*s/1048576}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a"}'; }

printf '\n%-16s %12s %8s %9s %9s %12s\n' producer records/s MB/s p50_ms p99_ms peak_rss_MB
printf '%-16s %12.0f %8.2f %9s %9s %12.1f\n' java "$java_rps" "$java_mbps" "$java_p50" "$java_p99" "$(awk -v k="$java_rss" 'BEGIN{print k/1024}')"
for name in tokio blocking; do
  line=$([ $name = tokio ] && echo "$tokio_line" || echo "$blocking_line")
  rps=$(field "$line" records_per_s); p50=$(field "$line" p50_ms); p99=$(field "$line" p99_ms); rss=$(field "$line" rss_kb)
  acked=$(field "$line" acked); failed=$(field "$line" failed)
  printf '%-16s %12.0f %8s %9s %9s %12.1f   acked=%s failed=%s\n' "kacrab-$name" "$rps" "$(mbps "$rps")" "$p50" "$p99" "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$acked" "$failed"
  echo "  vs java: throughput x$(ratio "$rps" "$java_rps"), p99 x$(ratio "$p99" "$java_p99") (lower is better), rss x$(ratio "$rss" "$java_rss")"
done
