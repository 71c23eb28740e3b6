#!/usr/bin/env bash
# Side by side with the other producers: kacrab's Tokio and blocking produce examples,
# franz-go (benches/peers/franz-go), librdkafka through the rdkafka crate
# (benches/peers/rdkafka) and Java's ProducerPerformance (scripts/kafka.sh perf), all
# against one real Kafka broker started with scripts/kafka.sh. Not a test: it measures.
#
#   scripts/bench_vs_peers.sh [--records N] [--size B] [--partitions P] [--rounds K]
#       [--rate R] [--no-rate-pass] [--equal-batching] [--clients "tokio blocking ..."]
#       [--port PORT] [--no-build] [--keep-topics] [--timeout S] [--warmup N] [--warmup-runs K]
#
# Defaults: 1,000,000 records of 100 B, 6 partitions, 3 rounds, every client at its own
# defaults except acks=all and idempotence on (librdkafka's default is off: its peer turns
# it on; the others have it on by default). Clients (--clients picks a subset, in order):
#   tokio         kacrab-tokio, examples/tokio_produce (release)
#   tokio-noidem  the same with --property enable.idempotence=false --property acks=all
#                 (the cost of idempotence: its ratio to tokio is printed)
#   blocking      kacrab-blocking, examples/blocking_produce (release)
#   franz-go      benches/peers/franz-go (kgo; compresses with snappy by default)
#   rdkafka       benches/peers/rdkafka (librdkafka built from the rdkafka-sys crate)
#   java          Kafka's ProducerPerformance from the Kafka jars
# Every kacrab-shaped client sends record i (key i, value i padded with '.') to partition
# i mod P and measures send-to-ack latency per record from the send call to its
# acknowledgement; ProducerPerformance sends its own random values without keys through
# Java's default partitioner and measures the same way (send call to callback).
#
# First an untimed warm-up of the broker (its JIT): kacrab-tokio sends --warmup records
# (default 1,000,000; 0: none) to a topic of its own, with the run's batch settings, at
# least three times and then until two runs in a row agree on records/s within 10% (at
# most --warmup-runs, default 8). A broker warmed by 200,000 records once still ran at half
# speed for the first two clients of round 1 (BENCHMARKS.md, "Why kacrab-tokio was
# bimodal"). Pass 1, maximum throughput: every
# round runs every client once on a fresh topic, the order rotated by one client per
# round; then every topic's end offsets (GetOffsetShell) must add up to the records sent. Pass 2, latency at a fixed offered rate: the same with
# every client at --throughput R, R = --rate or half of the slowest client's pass-1
# median. Per client the medians over the rounds: records/s, CPU per record (the client
# process's user+system time from /usr/bin/time -v over the records; the broker is not
# counted), peak RSS (same source) and p50/p99 send-to-ack latency.
#
# --equal-batching: batch.size=16384, linger.ms=5 and compression.type=none for every
# client (franz-go: ProducerBatchMaxBytes 16384, which bounds a batch instead of aiming at
# it, ProducerLinger 5 ms, no compression).
#
# The broker: $KACRAB_KAFKA_BOOTSTRAP if set (used as is), else scripts/kafka.sh
# start-single [--port] (stopped at the end if this script started it). Logs and the raw
# results (results.tsv, one line per run) go to target/bench-peers/<run>/. Builds: the
# two examples with cargo --release, the rdkafka peer with its own Cargo.lock (its own
# target dir, benches/peers/rdkafka/target), franz-go with `go build` (modules pinned by
# its go.sum). Needs cargo, go, java, a C toolchain (cc, make) and /usr/bin/time.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

records=1000000 size=100 partitions=6 rounds=3 rate="" rate_pass=1 equal=0 build=1
keep=0 port="" timeout_s=1800 warmup=1000000 warmup_runs=8
clients="tokio tokio-noidem blocking franz-go rdkafka java"
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --no-rate-pass) rate_pass=0; shift ;;
    --equal-batching) equal=1; shift ;;
    --clients) clients=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --keep-topics) keep=1; shift ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --warmup-runs) warmup_runs=$2; shift 2 ;;
    -h|--help) sed -n '2,48p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_vs_peers: unknown option $1" >&2; exit 2 ;;
  esac
done
read -r -a client_list <<<"$clients"
for c in "${client_list[@]}"; do
  case "$c" in tokio|tokio-noidem|blocking|franz-go|rdkafka|java) ;;
    *) echo "bench_vs_peers: unknown client $c" >&2; exit 2 ;; esac
done

say() { printf 'bench_vs_peers: %s\n' "$*" >&2; }
kafka() { bash scripts/kafka.sh "$@"; }
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

bin=$repo/target/bench-peers/bin
mkdir -p "$bin"
if [ "$build" = 1 ]; then
  say "building the two examples (release)"
  cargo build --release -q -p kacrab-tokio --example tokio_produce \
    -p kacrab-blocking --example blocking_produce
  say "building the rdkafka peer (librdkafka from source: minutes the first time)"
  (cd benches/peers/rdkafka && CARGO_TARGET_DIR=target cargo build --release -q --locked)
  say "building the franz-go peer"
  (cd benches/peers/franz-go && go build -mod=readonly -o "$bin/franzgo-peer" .)
  cp target/release/examples/tokio_produce "$bin/tokio_produce"
  cp target/release/examples/blocking_produce "$bin/blocking_produce"
  cp benches/peers/rdkafka/target/release/rdkafka-peer "$bin/rdkafka-peer"
fi
# The binaries of the clients that run (and tokio_produce, which warms the broker up).
for c in tokio "${client_list[@]}"; do
  case "$c" in
    tokio | tokio-noidem) b=tokio_produce ;; blocking) b=blocking_produce ;;
    franz-go) b=franzgo-peer ;; rdkafka) b=rdkafka-peer ;; *) continue ;;
  esac
  [ -x "$bin/$b" ] || { echo "bench_vs_peers: $bin/$b missing (run without --no-build)" >&2; exit 1; }
done
kafka fetch >/dev/null

started_here=0
if [ -z "${KACRAB_KAFKA_BOOTSTRAP:-}" ]; then
  eval "$(kafka start-single ${port:+"$port"})"
  started_here=1
fi
bs=$KACRAB_KAFKA_BOOTSTRAP
trap '[ "$started_here" = 1 ] && bash scripts/kafka.sh stop single >/dev/null 2>&1 || true' EXIT

run_id=$(date +%s)
out=$repo/target/bench-peers/$run_id
mkdir -p "$out"
results=$out/results.tsv
printf 'pass\tround\tclient\ttopic\toffered\trecords_per_s\tp50_ms\tp99_ms\tcpu_s\trss_kb\tacked\tend_offsets\n' >"$results"

equal_props=()
[ "$equal" = 1 ] && equal_props=(--property batch.size=16384 --property linger.ms=5 --property compression.type=none)

# run_client <client> <topic> <offered rate or empty>: one run; prints
# "records_per_s p50_ms p99_ms cpu_s rss_kb acked" (acked: "?" for Java, whose tool does
# not count failures; the end offsets check it).
run_client() {
  local c=$1 topic=$2 tput=$3 log=$out/$2 b
  local -a extra=()
  case "$c" in
    java)
      local jout
      jout=$(timeout "$timeout_s" bash scripts/kafka.sh perf "$bs" "$topic" "$records" "$size" \
        ${tput:+--throughput "$tput"} ${equal_props[@]+"${equal_props[@]}"} 2>"$log.err") \
        || { echo "bench_vs_peers: java failed on $topic (see $log.err)" >&2; echo "0 0 0 0 0 0"; return; }
      echo "$jout" >"$log.out"
      local line rps p50 p99 cpu rss
      line=$(grep 'records/sec' <<<"$jout" | tail -1)
      rps=$(sed -nE 's/.* ([0-9.]+) records\/sec.*/\1/p' <<<"$line")
      p50=$(sed -nE 's/.* ([0-9]+) ms 50th.*/\1/p' <<<"$line")
      p99=$(sed -nE 's/.* ([0-9]+) ms 99th.*/\1/p' <<<"$line")
      cpu=$(sed -n 's/^KACRAB_PERF_CPU_S=//p' <<<"$jout")
      rss=$(sed -n 's/^KACRAB_PERF_PEAK_RSS_KB=//p' <<<"$jout")
      echo "${rps:-0} ${p50:-0} ${p99:-0} ${cpu:-0} ${rss:-0} ?"
      return ;;
    tokio) b=$bin/tokio_produce ;;
    tokio-noidem) b=$bin/tokio_produce
      extra=(--property enable.idempotence=false --property acks=all) ;;
    blocking) b=$bin/blocking_produce ;;
    franz-go) b=$bin/franzgo-peer ;;
    rdkafka) b=$bin/rdkafka-peer ;;
  esac
  timeout "$timeout_s" /usr/bin/time -v -o "$log.time" "$b" --bootstrap "$bs" --topic "$topic" \
    --partitions "$partitions" --records "$records" --record-size "$size" \
    ${tput:+--throughput "$tput"} ${equal_props[@]+"${equal_props[@]}"} \
    ${extra[@]+"${extra[@]}"} >"$log.out" 2>"$log.err" \
    || echo "bench_vs_peers: $c exited non-zero on $topic (see $log.err)" >&2
  local line; line=$(grep '^produce:' "$log.out" | tail -1 || true)
  field() { local v; v=$(tr ' ' '\n' <<<"$line" | sed -n "s/^$1=//p"); echo "${v:-0}"; }
  local cpu rss
  cpu=$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/{s+=$2} END{print s+0}' "$log.time" 2>/dev/null || echo 0)
  rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): *//p' "$log.time" 2>/dev/null)
  echo "$(field records_per_s) $(field p50_ms) $(field p99_ms) ${cpu:-0} ${rss:-0} $(field acked)"
}

# run_pass <pass> <offered rate or empty>
run_pass() {
  local pass=$1 tput=$2 n=${#client_list[@]} r k c topic row
  for ((r = 1; r <= rounds; r++)); do
    for ((k = 0; k < n; k++)); do
      c=${client_list[$(((k + r - 1) % n))]}
      topic=bvp-$run_id-$pass-$r-$c
      kafka create-topic "$bs" "$topic" "$partitions" 1 >/dev/null 2>&1
      say "pass $pass round $r/$rounds: $c${tput:+ at $tput records/s}"
      row=$(run_client "$c" "$topic" "$tput")
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$pass" "$r" "$c" "$topic" "${tput:--}" \
        "$(tr ' ' '\t' <<<"$row")" >>"$out/pass$pass.rows"
    done
  done
  # End offsets of every topic of the pass, in one call.
  kafka end-offsets "$bs" "bvp-$run_id-$pass-.*" >"$out/pass$pass.offsets"
  awk -F'\t' 'NR==FNR {end[$1]=$2; next} {print $0 "\t" ($4 in end ? end[$4] : "missing")}' \
    "$out/pass$pass.offsets" "$out/pass$pass.rows" >>"$results"
  [ "$keep" = 1 ] || kafka delete-topic "$bs" "bvp-$run_id-$pass-.*" >/dev/null 2>&1 || true
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# med <pass> <client> <column>: the median over the rounds of a results.tsv column.
med() { awk -F'\t' -v p="$1" -v c="$2" -v col="$3" '$1==p && $3==c {print $col}' "$results" | median; }
label() { case "$1" in
  tokio) echo kacrab-tokio ;; tokio-noidem) echo "kacrab-tokio, idempotence off" ;;
  blocking) echo kacrab-blocking ;; franz-go) echo "franz-go $franz_version" ;;
  rdkafka) echo "librdkafka $rdkafka_version" ;; java) echo "Java ProducerPerformance $kafka_version" ;;
esac; }

kafka_version=$(sed -n 's/^KAFKA_VERSION="${KACRAB_KAFKA_VERSION:-\([^}]*\)}"/\1/p' scripts/kafka.sh)
kafka_version=${KACRAB_KAFKA_VERSION:-$kafka_version}
franz_version=$(grep -o 'github.com/twmb/franz-go v[0-9.]*' benches/peers/franz-go/go.mod | head -1 | cut -d' ' -f2)
rdkafka_version=""

say "run $run_id: logs in $out"
if [ "$warmup" -gt 0 ]; then
  kafka create-topic "$bs" "bvp-$run_id-warmup" "$partitions" 1 >/dev/null 2>&1
  # At least three runs, then until two in a row agree within 10%: the broker's JIT is
  # warm once its speed stops changing, which takes longer on a loaded machine than any
  # fixed count.
  last=0
  for ((w = 1; w <= warmup_runs; w++)); do
    "$bin/tokio_produce" --bootstrap "$bs" --topic "bvp-$run_id-warmup" --partitions "$partitions" \
      --records "$warmup" --record-size "$size" ${equal_props[@]+"${equal_props[@]}"} \
      >"$out/warmup.out" 2>"$out/warmup.err" \
      || { say "warm-up failed (see $out/warmup.err); going on"; break; }
    rps=$(tr ' ' '\n' <"$out/warmup.out" | sed -n 's/^records_per_s=//p' | tail -1)
    say "warm-up $w/$warmup_runs: $warmup records at ${rps:-?} records/s (not measured)"
    if awk -v a="${rps:-0}" -v b="$last" 'BEGIN {exit !(b > 0 && a > 0 && a <= 1.1 * b && b <= 1.1 * a)}' \
      && [ "$w" -ge 3 ]; then
      break
    fi
    last=${rps:-0}
  done
  [ "$keep" = 1 ] || kafka delete-topic "$bs" "bvp-$run_id-warmup" >/dev/null 2>&1 || true
fi
run_pass 1 ""
rdkafka_version=$(grep -h -m1 '^librdkafka ' "$out"/bvp-*-rdkafka.err 2>/dev/null | head -1 | cut -d' ' -f2 || true)
if [ "$rate_pass" = 1 ]; then
  if [ -z "$rate" ]; then
    slowest=$(for c in "${client_list[@]}"; do med 1 "$c" 6; done | sort -g | head -1)
    rate=$(awk -v s="$slowest" 'BEGIN {printf "%d", s / 2}')
  fi
  if [ "$rate" -lt 1 ]; then
    say "no rate for pass 2 (a client's pass-1 median is 0: see $results); skipped"
    rate_pass=0
  fi
fi
if [ "$rate_pass" = 1 ]; then
  run_pass 2 "$rate"
fi

# ---------------------------------------------------------------- report
mb() { awk -v r="$1" -v s="$size" 'BEGIN {printf "%.1f", r * s / 1e6}'; }
us_per() { awk -v c="$1" -v n="$records" 'BEGIN {printf "%.2f", c * 1e6 / n}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }
fmt0() { awk -v x="$1" 'BEGIN {printf "%.0f", x}'; }

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "versions: $(rustc --version); $(go version | cut -d' ' -f3); $(java -version 2>&1 | head -1); Kafka $kafka_version broker on $bs; commit $(git rev-parse --short HEAD)"
echo "load: $records records x $size B, $partitions partitions, acks=all, idempotence on, $rounds rounds interleaved, medians$([ "$equal" = 1 ] && echo ', equal batching (batch.size 16384, linger.ms 5, no compression)' || echo ', each client at its defaults')"
echo
echo "Maximum throughput (pass 1)"
echo
echo "| client | records/s | MB/s | CPU µs/record | peak RSS MiB | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for c in "${client_list[@]}"; do
  rps=$(med 1 "$c" 6)
  echo "| $(label "$c") | $(fmt0 "$rps") | $(mb "$rps") | $(us_per "$(med 1 "$c" 9)") | $(mib "$(med 1 "$c" 10)") | $(med 1 "$c" 7) | $(med 1 "$c" 8) |"
done
if [ "$rate_pass" = 1 ]; then
  echo
  echo "Latency at a fixed offered rate of $rate records/s (pass 2)"
  echo
  echo "| client | p50 ms | p99 ms | achieved records/s | CPU µs/record | peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|"
  for c in "${client_list[@]}"; do
    echo "| $(label "$c") | $(med 2 "$c" 7) | $(med 2 "$c" 8) | $(fmt0 "$(med 2 "$c" 6)") | $(us_per "$(med 2 "$c" 9)") | $(mib "$(med 2 "$c" 10)") |"
  done
fi
if [[ " $clients " == *" tokio "* && " $clients " == *" tokio-noidem "* ]]; then
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
  echo
  echo "Idempotence cost, kacrab-tokio (on / off): records/s x$(ratio "$(med 1 tokio 6)" "$(med 1 tokio-noidem 6)"), CPU per record x$(ratio "$(med 1 tokio 9)" "$(med 1 tokio-noidem 9)")$([ "$rate_pass" = 1 ] && echo ", p99 at $rate records/s x$(ratio "$(med 2 tokio 8)" "$(med 2 tokio-noidem 8)")")"
fi

# ---------------------------------------------------------------- checks
bad=$(awk -F'\t' -v n="$records" 'NR > 1 && ($12 != n || ($11 != "?" && $11 != n)) {print $4 ": acked=" $11 " end offsets=" $12}' "$results")
echo
if [ -n "$bad" ]; then
  echo "CHECK FAILED: runs whose records did not all arrive (end offsets or acks != $records):"
  echo "$bad"
  exit 1
fi
echo "check: every topic's end offsets add up to $records ($(($(wc -l <"$results") - 1)) runs); raw results: $results"
