#!/usr/bin/env bash
# The cost of security for the Tokio produce example (issue 11's "done when"): the same
# load (default 1,000,000 records of 100 B, 6 partitions, idempotence on, acks=all) to
# the same real broker over its PLAINTEXT listener, over SASL_SSL with SCRAM-SHA-512,
# and over mutual TLS, in interleaved rounds (default 3: plain, SASL_SSL, mTLS, plain,
# ...), each to a fresh topic, release build. Prints every run and the medians, and the
# ratio of the medians against plaintext. Not a test: it only measures.
#
#   scripts/bench_security.sh [records] [size] [partitions] [rounds]
#
# KACRAB_BENCH_BIN=<path> measures that tokio_produce binary instead of a release build.
# KACRAB_BENCH_MODES picks the listeners (default "plaintext sasl_ssl mtls").
# Uses the secured single broker whose KEY=VALUE lines are in the environment
# (KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single), or starts one (port 29092, or
# KACRAB_BENCH_PORT) and stops it at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
records=${1:-1000000}
size=${2:-100}
partitions=${3:-6}
rounds=${4:-3}
kafka() { bash scripts/kafka.sh "$@"; }

bin=/tmp/kacrab-bench-security-produce
if [ -n "${KACRAB_BENCH_BIN:-}" ]; then   # another build of tokio_produce (say which in the figures)
  cp "$KACRAB_BENCH_BIN" "$bin"
else
  cargo build --release -q -p kacrab-tokio --example tokio_produce
  cp "${CARGO_TARGET_DIR:-$repo/target}/release/examples/tokio_produce" "$bin"
fi

started_here=0
if [ -z "${KACRAB_KAFKA_SSL_BOOTSTRAP:-}" ]; then
  eval "$(KACRAB_KAFKA_SECURE=1 kafka start-single "${KACRAB_BENCH_PORT:-29092}")"
  started_here=1
fi
trap '[ "$started_here" = 1 ] && bash scripts/kafka.sh stop single >/dev/null 2>&1 || true' EXIT
t=$KACRAB_KAFKA_TLS_DIR
plain_bs=$KACRAB_KAFKA_BOOTSTRAP

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB, load average $(cut -d' ' -f1-3 /proc/loadavg); $(rustc --version)"
echo "commit: $(git rev-parse --short HEAD); load: $records records x $size B, $partitions partitions, acks=all, idempotence on; $rounds rounds interleaved"

props_for() { # props_for <mode>: the example's --property flags
  case "$1" in
    plaintext) ;;
    sasl_ssl) printf '%s\n' --property security.protocol=SASL_SSL --property sasl.mechanism=SCRAM-SHA-512 \
      --property "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$KACRAB_KAFKA_SASL_SCRAM_USER\" password=\"$KACRAB_KAFKA_SASL_SCRAM_PASSWORD\";" \
      --property ssl.truststore.type=PEM --property "ssl.truststore.location=$t/ca.pem" ;;
    mtls) printf '%s\n' --property security.protocol=SSL --property ssl.truststore.type=PEM \
      --property "ssl.truststore.location=$t/ca.pem" --property ssl.keystore.type=PEM \
      --property "ssl.keystore.location=$t/client.pem" ;;
  esac
}
bootstrap_for() {
  case "$1" in plaintext) echo "$plain_bs" ;; sasl_ssl) echo "$KACRAB_KAFKA_SASL_SSL_BOOTSTRAP" ;; mtls) echo "$KACRAB_KAFKA_SSL_BOOTSTRAP" ;; esac
}
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2 }'; }

read -r -a modes <<<"${KACRAB_BENCH_MODES:-plaintext sasl_ssl mtls}"   # plaintext first: the base
declare -A rps p99
run_id=$(date +%s)
for r in $(seq "$rounds"); do
  for m in "${modes[@]}"; do
    topic="bench-sec-$m-$r-$run_id"
    kafka create-topic "$plain_bs" "$topic" "$partitions" 1 >/dev/null
    mapfile -t props < <(props_for "$m")
    line=$("$bin" --bootstrap "$(bootstrap_for "$m")" --topic "$topic" --partitions "$partitions" \
      --records "$records" --record-size "$size" ${props[@]+"${props[@]}"} 2>/dev/null | grep '^produce:' | tail -n 1)
    [ "$(field "$line" acked)" = "$records" ] || { echo "round $r $m: $line" >&2; exit 1; }
    rps[$m]+="$(field "$line" records_per_s) "; p99[$m]+="$(field "$line" p99_ms) "
    printf 'round %d %-10s %s\n' "$r" "$m" "$line"
  done
done
base=$(tr ' ' '\n' <<<"${rps[plaintext]}" | grep . | median)
printf '\n%-10s %14s %10s %16s\n' mode median_rec/s p99_ms ratio_vs_plain
for m in "${modes[@]}"; do
  med=$(tr ' ' '\n' <<<"${rps[$m]}" | grep . | median)
  p=$(tr ' ' '\n' <<<"${p99[$m]}" | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  printf '%-10s %14s %10s %16s\n' "$m" "$med" "$p" "$(awk -v a="$med" -v b="$base" 'BEGIN{printf "%.2f", a/b}')"
done
