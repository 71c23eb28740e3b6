#!/usr/bin/env bash
# Compression side by side: kacrab's Tokio produce example and librdkafka (Debian's kcat)
# write the same JSON-log-like records with each codec to one real broker, in one run.
# Per codec and client: records/s, and the bytes the broker stored per record (the
# topic's log segment sizes / records). Not part of the workspace or CI.
#
#   bash benches/peers/compression.sh <bootstrap> <broker-data-dir> [records] [size]
#
# The broker is scripts/kafka.sh's single broker (its data dir is
# .kafka/run/single/data). kcat is `apt-get install kcat` (librdkafka).
# The tokio example must be built: cargo build --release -p kacrab-tokio --example tokio_produce
set -euo pipefail
cd "$(dirname "$0")/../.."
bs=$1; data=$2; n=${3:-200000}; size=${4:-200}
target=${CARGO_TARGET_DIR:-target}
produce=${KACRAB_PRODUCE_BIN:-$target/release/examples/tokio_produce}
[ -x "$produce" ] || { echo "build $produce first" >&2; exit 1; }
command -v kcat >/dev/null || { echo "kcat is not installed" >&2; exit 1; }
run=$$
stored() { # bytes of the topic's log segments, all partitions
  local t=$1; sync; du -cb "$data"/"$t"-*/*.log | tail -n 1 | cut -f1; }
printf '%-7s %-10s %12s %14s\n' codec client records_per_s bytes_per_record
for codec in none gzip snappy lz4 zstd; do
  t1="bench-kacrab-$codec-$run"; t2="bench-rdkafka-$codec-$run"
  bash scripts/kafka.sh create-topic "$bs" "$t1" 3 1 >/dev/null
  bash scripts/kafka.sh create-topic "$bs" "$t2" 3 1 >/dev/null
  line=$("$produce" --bootstrap "$bs" --topic "$t1" --partitions 3 --records "$n" \
    --record-size "$size" --payload json --compression "$codec" 2>/dev/null | tail -n 1)
  rps=$(sed -n 's/.*records_per_s=\([0-9]*\).*/\1/p' <<<"$line")
  printf '%-7s %-10s %12s %14s\n' "$codec" kacrab "$rps" "$(( $(stored "$t1") / n ))"
  # The very same keys and values, read back from kacrab's topic: key<TAB>value lines.
  input=$(mktemp)
  bash scripts/kafka.sh consume "$bs" "$t1" "$n" 2>/dev/null | cut -f3,4 >"$input"
  start=$(date +%s%N)
  kcat -P -b "$bs" -t "$t2" -K $'\t' -z "$codec" -l \
    -X enable.idempotence=true -X acks=all -X linger.ms=5 -X batch.size=16384 "$input"
  end=$(date +%s%N)
  got=$(wc -l <"$input")
  printf '%-7s %-10s %12s %14s\n' "$codec" librdkafka \
    "$(( got * 1000000000 / (end - start) ))" "$(( $(stored "$t2") / got ))"
  rm -f "$input"
done
