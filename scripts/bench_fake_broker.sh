#!/usr/bin/env bash
# Issue 16 item 4, the FakeBroker half: kacrab-tokio against franz-go (and the other
# kacrab-shaped clients of scripts/bench_vs_peers.sh) on krafka's FakeBroker, a broker
# that stores records in memory and costs almost nothing, so the clients' own machinery
# is what is measured. Not a test: it measures.
#
#   scripts/bench_fake_broker.sh [--records N] [--size B] [--partitions P] [--rounds K]
#       [--equal-batching] [--clients "tokio franz-go ..."] [--no-build]
#
# Defaults: 1,000,000 records of 100 B, 6 partitions, 5 rounds, clients "tokio franz-go".
# Clients: tokio, tokio-noidem, blocking, franz-go, rdkafka (as in bench_vs_peers.sh;
# binaries in target/bench-peers/bin, built here unless --no-build). One FakeBroker node
# (crates/kacrab-testkit/examples/fake_broker.rs) serves every run on its own topic;
# each round runs every client once, the order rotated by one per round. A run counts
# only if the client reports every record acknowledged. Prints, per client, the median
# records/s, CPU µs per record (user + system of the client process, /usr/bin/time -v)
# and peak RSS. --equal-batching: batch.size=16384, linger.ms=5, no compression for all.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

records=1000000 size=100 partitions=6 rounds=5 equal=0 build=1 clients="tokio franz-go"
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --equal-batching) equal=1; shift ;;
    --clients) clients=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_fake_broker: unknown option $1" >&2; exit 2 ;;
  esac
done
read -r -a client_list <<<"$clients"
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

bin=$repo/target/bench-peers/bin
mkdir -p "$bin"
cargo build --release -q -p kacrab-testkit --example fake_broker
if [ "$build" = 1 ]; then
  cargo build --release -q -p kacrab-tokio --example tokio_produce \
    -p kacrab-blocking --example blocking_produce
  cp target/release/examples/tokio_produce target/release/examples/blocking_produce "$bin/"
  (cd benches/peers/franz-go && go build -mod=readonly -o "$bin/franzgo-peer" .)
  case " $clients " in *" rdkafka "*)
    (cd benches/peers/rdkafka && CARGO_TARGET_DIR=target cargo build --release -q --locked)
    cp benches/peers/rdkafka/target/release/rdkafka-peer "$bin/" ;;
  esac
fi

out=$repo/target/bench-fake-broker/$(date +%s)
mkdir -p "$out"
topics=$(for ((r = 1; r <= rounds; r++)); do for c in "${client_list[@]}"; do printf 'fb-%s-%s,' "$r" "$c"; done; done)
# The broker serves until its standard input (this fifo's writer) closes.
mkfifo "$out/stdin"
target/release/examples/fake_broker --topics "${topics%,}" --partitions "$partitions" \
  <"$out/stdin" >"$out/broker.out" 2>"$out/broker.err" &
broker=$!
exec 3>"$out/stdin"
trap 'exec 3>&-; wait "$broker" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q '^BOOTSTRAP=' "$out/broker.out" && break; sleep 0.1; done
bs=$(sed -n 's/^BOOTSTRAP=//p' "$out/broker.out")
[ -n "$bs" ] || { echo "bench_fake_broker: the FakeBroker did not start (see $out/broker.err)" >&2; exit 1; }

props=()
[ "$equal" = 1 ] && props=(--property batch.size=16384 --property linger.ms=5 --property compression.type=none)
printf 'round\tclient\trecords_per_s\tcpu_s\trss_kb\tacked\n' >"$out/results.tsv"
n=${#client_list[@]}
for ((r = 1; r <= rounds; r++)); do
  for ((k = 0; k < n; k++)); do
    c=${client_list[$(((k + r - 1) % n))]}
    extra=()
    case "$c" in
      tokio) b=$bin/tokio_produce ;;
      tokio-noidem) b=$bin/tokio_produce; extra=(--property enable.idempotence=false) ;;
      blocking) b=$bin/blocking_produce ;;
      franz-go) b=$bin/franzgo-peer ;;
      rdkafka) b=$bin/rdkafka-peer ;;
      *) echo "bench_fake_broker: unknown client $c" >&2; exit 2 ;;
    esac
    log=$out/$r-$c
    /usr/bin/time -v -o "$log.time" "$b" --bootstrap "$bs" --topic "fb-$r-$c" \
      --partitions "$partitions" --records "$records" --record-size "$size" \
      ${props[@]+"${props[@]}"} ${extra[@]+"${extra[@]}"} >"$log.out" 2>"$log.err" \
      || echo "bench_fake_broker: $c exited non-zero (see $log.err)" >&2
    line=$(grep '^produce:' "$log.out" | tail -1 || true)
    rps=$(tr ' ' '\n' <<<"$line" | sed -n 's/^records_per_s=//p')
    acked=$(tr ' ' '\n' <<<"$line" | sed -n 's/^acked=//p')
    cpu=$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/{s+=$2} END{print s+0}' "$log.time")
    rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): *//p' "$log.time")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$c" "${rps:-0}" "$cpu" "${rss:-0}" "${acked:-0}" >>"$out/results.tsv"
    echo "bench_fake_broker: round $r/$rounds $c: ${rps:-0} records/s, acked ${acked:-0}" >&2
    [ "${acked:-0}" = "$records" ] || echo "bench_fake_broker: $c acknowledged ${acked:-0} of $records" >&2
  done
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -F'\t' -v c="$1" -v k="$2" -v n="$records" 'NR > 1 && $2 == c && $6 == n {print $k}' "$out/results.tsv"; }
echo
echo "FakeBroker, $records x $size B, $partitions partitions, $rounds rounds$([ "$equal" = 1 ] && echo ', equal batching'); medians of the runs that acknowledged every record"
echo
echo "| client | runs | records/s | CPU µs/record | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|"
for c in "${client_list[@]}"; do
  runs=$(col "$c" 3 | wc -l)
  rps=$(col "$c" 3 | median)
  cpu=$(col "$c" 4 | median)
  rss=$(col "$c" 5 | median)
  awk -v c="$c" -v runs="$runs" -v rps="$rps" -v cpu="$cpu" -v rss="$rss" -v n="$records" \
    'BEGIN { printf "| %s | %d | %.0f | %.2f | %.0f |\n", c, runs, rps, cpu * 1e6 / n, rss / 1024 }'
done
echo
echo "raw results: $out/results.tsv"
