#!/usr/bin/env bash
# scripts/security_e2e.sh — every driver's examples against the secured listeners of a
# real broker (KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single, whose KEY=VALUE
# output must be in the environment; issue 11):
#   * for the Tokio and the blocking producer: idempotent produce (the `produce`
#     examples) and transactions (the `transactional` examples: commits and aborts)
#     over SASL_SSL with SCRAM-SHA-512, over mutual TLS, over SASL_PLAINTEXT with
#     PLAIN, and over SASL_SSL with OAUTHBEARER (Kafka's unsecured JWT);
#   * each failure case, through a counting TCP relay (counting_proxy): a wrong
#     password, an unknown mechanism (SCRAM-SHA-256 is not enabled on the listener:
#     UNSUPPORTED_SASL_MECHANISM), an untrusted CA, a certificate for another host name,
#     an expired certificate, no client certificate, TLS offered to the plaintext port.
#     Each must fail with an error naming the broker and the cause, within
#     $FAIL_SECS seconds, after at most $MAX_ATTEMPTS connection attempts (no reconnect
#     storm), with every record failed and none reported possibly written;
#   * with KACRAB_KAFKA_REAUTH_MS set (the broker's connections.max.reauth.ms, KIP-368),
#     each driver produces over SASL_SSL for a little over two session lifetimes, paced
#     with --throughput: every record acknowledged, the producer's
#     successful-reauthentication-total at least 2, and no connection closed (the broker
#     closes a connection whose session expired, so a missed re-authentication shows);
#   * Kafka's console consumer (read_committed) then reads exactly the successful
#     produce runs' records and the committed transactions' records.
# KACRAB_E2E_EXAMPLES=<dir> uses already built examples instead of building them.
# With --cluster it runs the successful cases against the secured three-node cluster
# instead (KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-cluster; replication factor 3).
set -euo pipefail
cd "$(dirname "$0")/.."
rf=1 failure_cases=1
if [ "${1:-}" = --cluster ]; then
  : "${KACRAB_KAFKA_CLUSTER:?start the cluster with KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-cluster}"
  KACRAB_KAFKA_BOOTSTRAP=$KACRAB_KAFKA_CLUSTER
  KACRAB_KAFKA_SSL_BOOTSTRAP=${KACRAB_KAFKA_CLUSTER_SSL:?}
  KACRAB_KAFKA_SASL_SSL_BOOTSTRAP=${KACRAB_KAFKA_CLUSTER_SASL_SSL:?}
  KACRAB_KAFKA_SASL_PLAINTEXT_BOOTSTRAP=${KACRAB_KAFKA_CLUSTER_SASL_PLAINTEXT:?}
  KACRAB_KAFKA_SSL_BADHOST_BOOTSTRAP=${KACRAB_KAFKA_CLUSTER_SSL_BADHOST:?}
  KACRAB_KAFKA_SSL_EXPIRED_BOOTSTRAP=${KACRAB_KAFKA_CLUSTER_SSL_EXPIRED:?}
  rf=3
  failure_cases=0   # a failure is one connection's: the single-broker run covers them
fi
: "${KACRAB_KAFKA_BOOTSTRAP:?start the broker with KACRAB_KAFKA_SECURE=1 scripts/kafka.sh start-single}"
: "${KACRAB_KAFKA_SSL_BOOTSTRAP:?}" "${KACRAB_KAFKA_SASL_SSL_BOOTSTRAP:?}"
: "${KACRAB_KAFKA_SASL_PLAINTEXT_BOOTSTRAP:?}" "${KACRAB_KAFKA_SSL_BADHOST_BOOTSTRAP:?}"
: "${KACRAB_KAFKA_SSL_EXPIRED_BOOTSTRAP:?}" "${KACRAB_KAFKA_TLS_DIR:?}"
: "${KACRAB_KAFKA_SASL_PLAIN_USER:?}" "${KACRAB_KAFKA_SASL_PLAIN_PASSWORD:?}"
: "${KACRAB_KAFKA_SASL_SCRAM_USER:?}" "${KACRAB_KAFKA_SASL_SCRAM_PASSWORD:?}"
t=$KACRAB_KAFKA_TLS_DIR
plain=$KACRAB_KAFKA_BOOTSTRAP
records=${KACRAB_E2E_RECORDS:-300}          # per produce run
txns=3 txn_records=20                        # per transactional run: 2 committed, 1 aborted
MAX_ATTEMPTS=${KACRAB_E2E_MAX_ATTEMPTS:-2}   # connection attempts a final failure may take
FAIL_SECS=30
tag="$$-$(date +%s)"
# One topic for every run: read_committed shows the idempotent runs' records and the
# committed transactions', and hides the aborted ones (one consumer JVM, not two).
topic="kacrab-sec-$tag"
log() { printf 'security_e2e: %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
t0=$(date +%s)

if [ -n "${KACRAB_E2E_EXAMPLES:-}" ]; then
  examples=$KACRAB_E2E_EXAMPLES
else
  # Build first, so the timeouts below time the runs only (CI names the test step's
  # builds in KACRAB_E2E_EXAMPLES instead).
  cargo build -q --workspace --examples
  examples="${CARGO_TARGET_DIR:-target}/debug/examples"
fi
bash scripts/kafka.sh create-topic "$plain" "$topic" 3 "$rf" >/dev/null

scram() { # scram <user> <password>
  printf '%s\n' security.protocol=SASL_SSL sasl.mechanism=SCRAM-SHA-512 \
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$1\" password=\"$2\";" \
    ssl.truststore.type=PEM "ssl.truststore.location=$t/ca.pem"
}
plain_sasl() { # plain_sasl <mechanism> <user> <password>: SASL_PLAINTEXT
  local module=plain.PlainLoginModule
  case "$1" in SCRAM*) module=scram.ScramLoginModule ;; esac
  printf '%s\n' security.protocol=SASL_PLAINTEXT "sasl.mechanism=$1" \
    "sasl.jaas.config=org.apache.kafka.common.security.$module required username=\"$2\" password=\"$3\";"
}
oauth() { # oauth <subject>: SASL_SSL with Kafka's unsecured JWT
  printf '%s\n' security.protocol=SASL_SSL sasl.mechanism=OAUTHBEARER \
    "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"$1\";" \
    ssl.truststore.type=PEM "ssl.truststore.location=$t/ca.pem"
}
tls() { # tls <truststore> [<keystore>]
  printf '%s\n' security.protocol=SSL ssl.truststore.type=PEM "ssl.truststore.location=$1"
  if [ -n "${2:-}" ]; then printf '%s\n' ssl.keystore.type=PEM "ssl.keystore.location=$2"; fi
}

# props_args <lines>: one `--property` per line.
props_args() { local p; while IFS= read -r p; do [ -n "$p" ] && printf -- '--property\n%s\n' "$p"; done <<<"$1"; }

produce() { # produce <example> <bootstrap> <properties>
  local -a args; mapfile -t args < <(props_args "$3")
  timeout 120 "$examples/$1" --bootstrap "$2" --topic "$topic" \
    --partitions 3 --records "$records" --record-size 100 "${args[@]}"
}
transact() { # transact <example> <bootstrap> <properties> <transactional id>
  local -a args; mapfile -t args < <(props_args "$3")
  timeout 120 "$examples/$1" --bootstrap "$2" --topic "$topic" --partitions 3 \
    --transactions "$txns" --records "$txn_records" --transactional-id "$4" "${args[@]}"
}

produced=0 committed=0 runs=0 failures=0
succeed() { # succeed <driver> <label> <bootstrap> <properties>
  local d=$1 label=$2 bs=$3 props=$4 out s
  s=$(date +%s)
  out=$(produce "${d}_produce" "$bs" "$props" 2>/dev/null) || die "$d produce over $label failed"
  grep -q "acked=$records failed=0" <<<"$out" || die "$d produce over $label: $(tail -n 1 <<<"$out")"
  produced=$((produced + records))
  local txn_ex=transactional; [ "$d" = blocking ] && txn_ex=blocking_transactional
  out=$(transact "$txn_ex" "$bs" "$props" "kacrab-sec-$d-$label-$tag" 2>&1) \
    || { printf '%s\n' "$out" >&2; die "$d transactions over $label failed"; }
  local c; c=$(sed -n 's/.*records_committed=\([0-9]*\).*/\1/p' <<<"$out")
  [ "$c" = $((txn_records * (txns - 1))) ] || die "$d transactions over $label: $(tail -n 1 <<<"$out")"
  committed=$((committed + c)); runs=$((runs + 2))
  log "$d over $label: $records records acknowledged; $((txns - 1)) transactions committed, 1 aborted ($(($(date +%s) - s))s)"
}

# expect_failure <driver> <case> <cause regex> <target> <properties>: the produce example
# through a counting relay in front of <target>.
expect_failure() {
  [ "$failure_cases" = 1 ] || return 0
  local d=$1 name=$2 want=$3 target=$4 props=$5
  local dir; dir=$(mktemp -d)
  "$examples/counting_proxy" --target "${target%%,*}" --count-file "$dir/count" >"$dir/listen" &
  local relay=$!
  local _ bs=""
  for _ in $(seq 200); do bs=$(sed -n 's/^LISTEN=//p' "$dir/listen" 2>/dev/null || true); [ -n "$bs" ] && break; sleep 0.05; done
  [ -n "$bs" ] || die "counting_proxy did not start"
  local s out rc=0; s=$(date +%s)
  out=$(produce "${d}_produce" "$bs" "$props" 2>&1) || rc=$?
  local secs=$(($(date +%s) - s)) attempts
  kill "$relay" 2>/dev/null || true; wait "$relay" 2>/dev/null || true
  attempts=$(wc -l <"$dir/count" 2>/dev/null || echo 0); rm -rf "$dir"
  local first; first=$(grep -m1 'connection to broker' <<<"$out" || true)
  [ "$rc" != 0 ] || die "$d $name: succeeded, expected a failure"
  { grep -q "connection to broker $bs" <<<"$out" && grep -Eqi "$want" <<<"$first"; } \
    || { printf '%s\n' "$out" >&2; die "$d $name: the failure does not name the broker and /$want/"; }
  grep -q "acked=0 failed=$records" <<<"$out" || die "$d $name: $(tail -n 1 <<<"$out")"
  grep -q 'failed records possibly written: 0$' <<<"$out" \
    || die "$d $name: records reported possibly written: $(grep 'possibly written:' <<<"$out" | tail -n 1)"
  [ "$secs" -le "$FAIL_SECS" ] || die "$d $name: took ${secs}s"
  [ "$attempts" -ge 1 ] && [ "$attempts" -le "$MAX_ATTEMPTS" ] \
    || die "$d $name: $attempts connection attempts (at most $MAX_ATTEMPTS)"
  failures=$((failures + 1))
  log "$d $name: failed in ${secs}s after $attempts connection attempt(s): ${first#*: }"
}

scram_ok=$(scram "$KACRAB_KAFKA_SASL_SCRAM_USER" "$KACRAB_KAFKA_SASL_SCRAM_PASSWORD")
plain_ok=$(plain_sasl PLAIN "$KACRAB_KAFKA_SASL_PLAIN_USER" "$KACRAB_KAFKA_SASL_PLAIN_PASSWORD")
mtls=$(tls "$t/ca.pem" "$t/client.pem")
for d in tokio blocking; do
  succeed "$d" "SASL_SSL/SCRAM-SHA-512" "$KACRAB_KAFKA_SASL_SSL_BOOTSTRAP" "$scram_ok"
  succeed "$d" "mutual-TLS" "$KACRAB_KAFKA_SSL_BOOTSTRAP" "$mtls"
  succeed "$d" "SASL_PLAINTEXT/PLAIN" "$KACRAB_KAFKA_SASL_PLAINTEXT_BOOTSTRAP" "$plain_ok"
  succeed "$d" "SASL_SSL/OAUTHBEARER" "$KACRAB_KAFKA_SASL_SSL_BOOTSTRAP" "$(oauth "kacrab-$d")"

  expect_failure "$d" "wrong password" "authentication failed|invalid (username|credentials)" \
    "$KACRAB_KAFKA_SASL_SSL_BOOTSTRAP" "$(scram "$KACRAB_KAFKA_SASL_SCRAM_USER" not-the-password)"
  expect_failure "$d" "unknown mechanism" "SCRAM-SHA-256.*(not enabled|unsupported|offer)|unsupported.*mechanism" \
    "$KACRAB_KAFKA_SASL_PLAINTEXT_BOOTSTRAP" \
    "$(plain_sasl SCRAM-SHA-256 "$KACRAB_KAFKA_SASL_SCRAM_USER" "$KACRAB_KAFKA_SASL_SCRAM_PASSWORD")"
  expect_failure "$d" "untrusted CA" "not trusted" "$KACRAB_KAFKA_SSL_BOOTSTRAP" \
    "$(tls "$t/untrusted-ca.pem" "$t/client.pem")"
  expect_failure "$d" "host name mismatch" "not valid for host" "$KACRAB_KAFKA_SSL_BADHOST_BOOTSTRAP" \
    "$(tls "$t/ca.pem")"
  expect_failure "$d" "expired certificate" "expired" "$KACRAB_KAFKA_SSL_EXPIRED_BOOTSTRAP" \
    "$(tls "$t/ca.pem")"
  expect_failure "$d" "no client certificate" "refused the TLS handshake|closed the connection during the TLS handshake" \
    "$KACRAB_KAFKA_SSL_BOOTSTRAP" "$(tls "$t/ca.pem")"
  expect_failure "$d" "TLS to the plaintext port" "plaintext listener" "$plain" "$mtls"
done

# KIP-368 against the real broker: both drivers at once, each for ~2.2 lifetimes.
metric() { sed -n "s/^producer-metrics:$1\({[^}]*}\)\{0,1\} \(-\{0,1\}[0-9.]*\)$/\2/p" <<<"$2" | head -n 1; }
if [ -n "${KACRAB_KAFKA_REAUTH_MS:-}" ] && [ "$failure_cases" = 1 ]; then
  rate=1000 n=$((KACRAB_KAFKA_REAUTH_MS * 22 / 10))   # records at 1000/s: 2.2 lifetimes
  s=$(date +%s) dir=$(mktemp -d)
  mapfile -t sargs < <(props_args "$scram_ok")
  for d in tokio blocking; do
    timeout 120 "$examples/${d}_produce" --bootstrap "$KACRAB_KAFKA_SASL_SSL_BOOTSTRAP" \
      --topic "$topic" --partitions 3 --records "$n" --record-size 100 --throughput "$rate" \
      --stats "${sargs[@]}" >"$dir/$d.out" 2>"$dir/$d.err" &
  done
  wait || true
  for d in tokio blocking; do
    out=$(cat "$dir/$d.out")
    grep -q "acked=$n failed=0" <<<"$out" \
      || { tail -n 20 "$dir/$d.err" >&2; die "$d re-authentication run: $(tail -n 1 <<<"$out")"; }
    reauths=$(metric successful-reauthentication-total "$out")
    closes=$(metric connection-close-total "$out")
    [ "${reauths%.*}" -ge 2 ] 2>/dev/null \
      || die "$d: successful-reauthentication-total=${reauths:-missing} after $n records over ~$((n / rate))s with connections.max.reauth.ms=$KACRAB_KAFKA_REAUTH_MS"
    [ "${closes%.*}" = 0 ] || die "$d: connection-close-total=${closes:-missing} (a connection was lost)"
    produced=$((produced + n)); runs=$((runs + 1))
    log "$d re-authenticated $reauths times over $(($(date +%s) - s))s (connections.max.reauth.ms=$KACRAB_KAFKA_REAUTH_MS), $n records acknowledged, no connection closed"
  done
  rm -rf "$dir"
fi

# Nothing from a failed run (nor an aborted transaction) is in the log: exactly the
# successful runs' records and the committed transactions'.
want=$((produced + committed))
got=$(bash scripts/kafka.sh consume "$plain" "$topic" "$((want + 1))" --isolation read_committed 2>/dev/null | wc -l)
[ "$got" = "$want" ] || die "$topic holds $got records read_committed, expected $produced produced + $committed committed"
log "ok: $runs successful runs ($produced produced and $committed committed records read back), $failures failures final, in $(($(date +%s) - t0))s"
