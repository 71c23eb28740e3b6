#!/usr/bin/env bash
# scripts/tls_e2e.sh — the produce examples of every driver against the secured
# single broker (KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single, whose
# KEY=VALUE output must be in the environment):
#   * idempotent produce over mutual TLS delivers every record;
#   * each failure case (untrusted CA, no client certificate, TLS offered to
#     the plaintext port) fails within seconds, names the broker and the cause,
#     and writes nothing: the topic holds exactly the successful runs' records.
set -euo pipefail
: "${KACRAB_KAFKA_BOOTSTRAP:?start the broker with KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single}"
: "${KACRAB_KAFKA_SSL_BOOTSTRAP:?}" "${KACRAB_KAFKA_TLS_DIR:?}"
t=$KACRAB_KAFKA_TLS_DIR
plain=$KACRAB_KAFKA_BOOTSTRAP
ssl=$KACRAB_KAFKA_SSL_BOOTSTRAP
topic="kacrab-tls-$$"
records=2000
bash scripts/kafka.sh create-topic "$plain" "$topic" 3 1 >/dev/null

mtls=(security.protocol=SSL ssl.truststore.type=PEM "ssl.truststore.location=$t/ca.pem"
  ssl.keystore.type=PEM "ssl.keystore.location=$t/client.pem")

produce() { # produce <crate> <example> <bootstrap> <property>...
  local crate=$1 ex=$2 bs=$3; shift 3
  local args=() p
  for p in "$@"; do args+=(--property "$p"); done
  timeout 120 "$examples/$ex" --bootstrap "$bs" --topic "$topic" \
    --partitions 3 --records "$records" --record-size 100 "${args[@]}"
}

expect_failure() { # expect_failure <name> <expected text> <crate> <example> <bootstrap> <property>...
  local name=$1 want=$2; shift 2
  local t0 out rc=0
  t0=$(date +%s)
  out=$(produce "$@" 2>&1) || rc=$?
  local secs=$(($(date +%s) - t0))
  if [ "$rc" = 0 ]; then echo "tls_e2e: $name: succeeded, expected a failure" >&2; exit 1; fi
  if ! grep -q "connection to broker $3" <<<"$out" || ! grep -q "$want" <<<"$out"; then
    echo "tls_e2e: $name: the failure does not name the broker and '$want':" >&2
    echo "$out" >&2; exit 1
  fi
  if [ "$secs" -gt 30 ]; then echo "tls_e2e: $name: took ${secs}s" >&2; exit 1; fi
  echo "tls_e2e: $name ($2): failed as expected in ${secs}s: $(grep -m1 'connection to broker' <<<"$out")" >&2
}

# Build first, so the timeouts below time the runs only. `--workspace` resolves features
# as `cargo test --workspace` does, so CI reuses the examples that step already built.
cargo build -q --workspace --examples
examples="${CARGO_TARGET_DIR:-target}/debug/examples"

ok=0
for driver in "kacrab-tokio tokio_produce" "kacrab-blocking blocking_produce"; do
  set -- $driver
  echo "tls_e2e: $2 over mutual TLS" >&2
  produce "$1" "$2" "$ssl" "${mtls[@]}" >&2
  ok=$((ok + 1))
  rogue=(security.protocol=SSL ssl.truststore.type=PEM "ssl.truststore.location=$t/untrusted-ca.pem"
    ssl.keystore.type=PEM "ssl.keystore.location=$t/client.pem")
  expect_failure "untrusted CA" "not trusted" "$1" "$2" "$ssl" "${rogue[@]}"
  nocert=(security.protocol=SSL ssl.truststore.type=PEM "ssl.truststore.location=$t/ca.pem")
  expect_failure "no client certificate" "refused the TLS handshake\|closed the connection during the TLS handshake" "$1" "$2" "$ssl" "${nocert[@]}"
  expect_failure "TLS to the plaintext port" "plaintext listener" "$1" "$2" "$plain" "${mtls[@]}"
done

# Nothing from a failed run is in the log: exactly the successful runs' records.
want=$((ok * records))
got=$(bash scripts/kafka.sh consume "$plain" "$topic" "$((want + 1))" 2>/dev/null | wc -l)
if [ "$got" != "$want" ]; then echo "tls_e2e: topic holds $got records, expected $want" >&2; exit 1; fi
echo "tls_e2e: ok ($ok successful runs, $got records, every failure final)" >&2
