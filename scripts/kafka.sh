#!/usr/bin/env bash
# scripts/kafka.sh — run real Apache Kafka (KRaft, no ZooKeeper, no Docker) on
# loopback for kacrab's integration tests and CI. See docs/real-kafka.md.
#
# Kafka comes from Maven Central as jars (mvn dependency:copy-dependencies)
# and runs with plain `java -cp`. Nothing is installed outside the registries;
# a missing Debian package (java, maven, time) is apt-get installed on demand.
#
#   scripts/kafka.sh fetch
#   scripts/kafka.sh start-single [port]          # default 29092
#   scripts/kafka.sh start-cluster [base-port]    # default 29192 (3 nodes)
#     (KACRAB_KAFKA_SECURE=1: also SSL, SASL_SSL, SASL_PLAINTEXT listeners, two
#      broken-certificate ones and an OIDC one validating signed JWTs against a
#      JWKS; see "secured listeners" below)
#     (KACRAB_KAFKA_TELEMETRY=1 on start-single: a KIP-714 telemetry judge plugin
#      records every client metrics push as a JSON line; see "client telemetry")
#   scripts/kafka.sh stop [all|single|cluster|node N]
#   scripts/kafka.sh kill-node N | restart-node N
#   scripts/kafka.sh pause-node N | resume-node N    # SIGSTOP / SIGCONT (a frozen node)
#   scripts/kafka.sh create-topic <bootstrap> <topic> <partitions> <rf>
#   scripts/kafka.sh create-topic-with <bootstrap> <topic> <partitions> <rf> <key=value>
#   scripts/kafka.sh delete-topic <bootstrap> <topic>
#   scripts/kafka.sh describe-topic <bootstrap> <topic>
#   scripts/kafka.sh wait-leaders <bootstrap> <topic> [--not N] [--timeout S]
#   scripts/kafka.sh consume <bootstrap> <topic> <max-records> [--isolation read_committed]
#   scripts/kafka.sh perf <bootstrap> <topic> <records> <size> [--throughput N] [--transactional-id ID] [--property k=v]...
#   scripts/kafka.sh end-offsets <bootstrap> <topic-regex>   # "topic<TAB>sum of end offsets" lines
#   scripts/kafka.sh partition-end-offsets <bootstrap> <topic>   # "partition<TAB>end offset" lines
#   scripts/kafka.sh group-offsets <bootstrap> <group>   # "topic<TAB>partition<TAB>committed offset" lines
#   scripts/kafka.sh txn-coordinator <bootstrap> <transactional-id>   # the coordinator's node id
#   scripts/kafka.sh produce-keyed <bootstrap> <topic>   # stdin: key<TAB>value lines
#   scripts/kafka.sh add-partitions <bootstrap> <topic> <total-partitions>
#   scripts/kafka.sh features <bootstrap>
#   scripts/kafka.sh client-metrics <bootstrap> <name> <metrics> <interval-ms> [match]   # a KIP-714 subscription
#   scripts/kafka.sh status | clean
#
# stdout carries only machine-readable output (KEY=VALUE lines, consumed
# records, the perf summary); progress and diagnostics go to stderr; Kafka's
# own logs go to files under the cache dir.
set -euo pipefail

# ---------------------------------------------------------------- settings
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
HELPER_DIR="$SCRIPT_DIR/kafka"

# Newest 4.x that resolves with its dependencies on Maven Central (checked
# 4.4.0). log4j must match the log4j-core that kafka_2.13 itself pulls in.
KAFKA_VERSION="${KACRAB_KAFKA_VERSION:-4.4.0}"
LOG4J_VERSION="${KACRAB_KAFKA_LOG4J_VERSION:-2.25.5}"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

KHOME="${KACRAB_KAFKA_HOME:-$REPO_DIR/.kafka}"
DIST="$KHOME/kafka-$KAFKA_VERSION"
LIBS="$DIST/libs"
RUN="$KHOME/run"
LOGS="$KHOME/logs"

SINGLE_PORT_DEFAULT=29092      # controller: port+1
CLUSTER_PORT_DEFAULT=29192     # brokers base..base+2, controllers base+100..
START_TIMEOUT="${KACRAB_KAFKA_START_TIMEOUT:-180}"   # seconds
STOP_TIMEOUT="${KACRAB_KAFKA_STOP_TIMEOUT:-30}"      # seconds before SIGKILL
BROKER_HEAP="${KACRAB_KAFKA_HEAP_OPTS:--Xms256m -Xmx1G}"
TOOL_HEAP="${KACRAB_KAFKA_TOOL_HEAP_OPTS:--Xmx512m}"

BROKER_JVM_OPTS=(-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
  -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
  -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true)
# Short-lived admin tools: start fast rather than run fast.
ADMIN_JVM_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m -Djava.awt.headless=true)
# Data-moving tools (perf, consume): full JIT.
DATA_JVM_OPTS=(-XX:+UseG1GC -Djava.awt.headless=true)

# KIP-714 client telemetry (start-single with KACRAB_KAFKA_TELEMETRY=1): the
# subscription it creates; see "client telemetry" below.
TELEMETRY_SUBSCRIPTION=kacrab-test
TELEMETRY_METRICS="${KACRAB_KAFKA_TELEMETRY_METRICS:-*}"
TELEMETRY_INTERVAL_MS="${KACRAB_KAFKA_TELEMETRY_INTERVAL_MS:-1000}"
# Which clients it asks (Kafka's client-metrics match selectors, regular expressions):
# by default only those whose client.id starts with kacrab-telemetry, so the broker's
# other clients (every other test's producers, the Java tools) get an empty
# subscription and push nothing.
TELEMETRY_MATCH="${KACRAB_KAFKA_TELEMETRY_MATCH-client_id=kacrab-telemetry.*}"

# ---------------------------------------------------------------- helpers
log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { printf 'kafka.sh: error: %s\n' "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }
secs_since() { # $1 = start ms -> "12.3"
  local d=$(( $(now_ms) - $1 )); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }

usage() { sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

# ver_ge A B: true if version A >= B (numeric dotted).
ver_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

apt_updated=0
ensure_pkg() { # ensure_pkg <command-or-path> <debian-package>
  if command -v "$1" >/dev/null 2>&1; then return 0; fi
  log "installing Debian package $2 (missing $1)"
  if [ "$apt_updated" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 \
    || die "apt-get install -y $2 failed"
  command -v "$1" >/dev/null 2>&1 || die "$2 installed but $1 still missing"
}

ensure_java() {
  ensure_pkg java openjdk-17-jre-headless
  local v
  v="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  [ "${v%%.*}" -ge 17 ] 2>/dev/null || die "Kafka $KAFKA_VERSION needs Java >= 17 (java here is $v)"
}

fetched() { [ -f "$DIST/.fetched" ] && [ -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]; }

ensure_fetched() {
  ensure_java
  fetched || cmd_fetch >/dev/null
}

# run_tool <admin|data> <main-class> args...  (stdout = the tool's stdout)
run_tool() {
  local kind="$1" main="$2"; shift 2
  local -a opts
  if [ "$kind" = admin ]; then opts=("${ADMIN_JVM_OPTS[@]}"); else
    # shellcheck disable=SC2206
    opts=($TOOL_HEAP "${DATA_JVM_OPTS[@]}"); fi
  java "${opts[@]}" -Dlog4j2.configurationFile="$HELPER_DIR/log4j2-tools.properties" \
    -cp "$LIBS/*" "$main" "$@"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pid_alive <pid>: a live Kafka broker JVM (guards against pid reuse).
pid_alive() {
  [ -n "${1:-}" ] && grep -qa 'kafka\.Kafka' "/proc/$1/cmdline" 2>/dev/null
}
node_pid() { if [ -f "$1/kafka.pid" ]; then cat "$1/kafka.pid" 2>/dev/null || true; fi; }

# ---------------------------------------------------------------- fetch
cmd_fetch() {
  ensure_java
  if fetched; then
    log "Kafka $KAFKA_VERSION already fetched in $LIBS ($(find "$LIBS" -name '*.jar' | wc -l) jars)"
    echo "KACRAB_KAFKA_VERSION=$KAFKA_VERSION"; echo "KACRAB_KAFKA_LIBS=$LIBS"
    return 0
  fi
  ensure_pkg mvn maven
  local t0; t0=$(now_ms)
  mkdir -p "$DIST" "$LOGS"
  cat >"$DIST/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by scripts/kafka.sh: the jars of Apache Kafka $KAFKA_VERSION -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kacrab.local</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId><version>$LOG4J_VERSION</version></dependency>
      <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <!-- broker: kafka.Kafka, kafka.tools.StorageTool -->
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <!-- tools: TopicCommand, ConsoleConsumer, ProducerPerformance, FeatureCommand -->
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <!-- logging: Kafka logs through slf4j 1.7; bind it to log4j2 (as the Kafka distribution does) -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  local -a mvn_args=(-B -q -f "$DIST/pom.xml")
  [ -n "${KACRAB_KAFKA_M2:-}" ] && mvn_args+=("-Dmaven.repo.local=$KACRAB_KAFKA_M2")
  rm -rf "$LIBS.tmp"
  log "fetching Kafka $KAFKA_VERSION jars with mvn (log: $LOGS/fetch.log)"
  if ! mvn "${mvn_args[@]}" "$DEP_PLUGIN:copy-dependencies" \
      -DoutputDirectory="$LIBS.tmp" -DincludeScope=runtime >"$LOGS/fetch.log" 2>&1; then
    tail -n 40 "$LOGS/fetch.log" >&2
    die "mvn could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION"
  fi
  [ -f "$LIBS.tmp/kafka_2.13-$KAFKA_VERSION.jar" ] || die "kafka_2.13-$KAFKA_VERSION.jar missing after mvn"
  rm -rf "$LIBS"; mv "$LIBS.tmp" "$LIBS"
  date -u +%FT%TZ >"$DIST/.fetched"
  log "fetched Kafka $KAFKA_VERSION: $(find "$LIBS" -name '*.jar' | wc -l) jars, $(du -sh "$LIBS" | cut -f1) in $(secs_since "$t0")s"
  echo "KACRAB_KAFKA_VERSION=$KAFKA_VERSION"; echo "KACRAB_KAFKA_LIBS=$LIBS"
}

# ---------------------------------------------------------------- nodes
# write_config <dir> <node-id> <broker-port> <controller-port> <voters> <rf> <min-isr>
write_config() {
  local dir="$1" id="$2" bport="$3" cport="$4" voters="$5" rf="$6" isr="$7"
  mkdir -p "$dir/data" "$dir/logs"
  cat >"$dir/server.properties" <<EOF
# generated by scripts/kafka.sh
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$bport,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$bport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=false
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=24
EOF
  # Extra broker settings from the caller: key=value words separated by
  # spaces or newlines; later keys override the ones above.
  if [ -n "${KACRAB_KAFKA_BROKER_PROPS:-}" ]; then
    local kv
    set -f
    # shellcheck disable=SC2086
    for kv in $KACRAB_KAFKA_BROKER_PROPS; do printf '%s\n' "$kv"; done >>"$dir/server.properties"
    set +f
  fi
}

# ---------------------------------------------------------------- secured listeners
# With KACRAB_KAFKA_SECURE=1 every broker (the single one and each cluster node)
# keeps its PLAINTEXT listener and also listens on loopback with
#   SSL            port+50  TLS, client authentication required (mutual TLS)
#   SASL_SSL       port+53  TLS + SASL PLAIN / SCRAM-SHA-512 / OAUTHBEARER
#   SASL_PLAINTEXT port+56  SASL PLAIN / SCRAM-SHA-512 (SCRAM-SHA-256 and
#                           OAUTHBEARER are NOT enabled: asking for one gets
#                           UNSUPPORTED_SASL_MECHANISM)
#   BADHOST (SSL)  port+59  a CA-signed certificate naming only wrong.invalid
#   EXPIRED (SSL)  port+62  a CA-signed certificate valid in January 2025 only
#   OIDC (SASL_PLAINTEXT) port+65  OAUTHBEARER only, validated by Kafka's
#                           OAuthBearerValidatorCallbackHandler: an RS256 JWT signed
#                           by the key of $RUN/oidc/jwks.json, `aud` naming
#                           $OIDC_AUDIENCE, `iss` $OIDC_ISSUER (Kafka 4.4
#                           refuses to start without an expected issuer),
#                           `exp` not past (no clock skew allowed)
# (port = the node's PLAINTEXT port; the stride of 3 keeps a cluster's three
# nodes apart: the last, port+65..67, stays below the controllers at base+100).
# SASL users: PLAIN alice/alice-pw; SCRAM-SHA-512 bob/bob-pw (a KRaft SCRAM
# credential written at storage format time, KIP-554); OAUTHBEARER on SASL_SSL
# with Kafka's unsecured JWTs (any subject), on OIDC with signed ones only.
# KACRAB_KAFKA_REAUTH_MS sets connections.max.reauth.ms (KIP-368) on the SASL
# listeners. A throwaway CA is made with openssl at start under $RUN/tls:
# ca.pem (the truststore), broker.pem, client.pem (key + chain, mutual TLS),
# untrusted-ca.pem (a CA nobody uses), badhost.pem, expired.pem. The OIDC
# material under $RUN/oidc: signer.pk8 (the RSA-2048 key the JWKS publishes,
# PKCS#8 DER, for a test's token endpoint to sign with), untrusted.pk8 (an
# RSA-2048 key the broker does not know), jwks.json (kid $OIDC_KID, RS256).
# The JWKS is a file:// URL (Kafka's JwksFileVerificationKeyResolver), so the
# broker needs no HTTP server; Kafka 4 refuses a URL not listed in the JVM's
# org.apache.kafka.sasl.oauthbearer.allowed.urls (launch_node passes the
# node's jvm.opts).
SECURE_OFFSET=50
SECURE_STRIDE=3
SECURE_KINDS=(SSL SASL_SSL SASL_PLAINTEXT BADHOST EXPIRED OIDC)
SASL_PLAIN_USER=alice SASL_PLAIN_PASSWORD=alice-pw
SASL_SCRAM_USER=bob SASL_SCRAM_PASSWORD=bob-pw
OIDC_AUDIENCE=kacrab-broker OIDC_ISSUER=https://kacrab-idp.invalid OIDC_KID=kacrab-oidc-1
secure_on() { [ "${KACRAB_KAFKA_SECURE:-0}" = 1 ]; }
# secure_port <plaintext-port> <kind index>
secure_port() { echo $(($1 + SECURE_OFFSET + SECURE_STRIDE * $2)); }

make_tls() {
  local t="$RUN/tls"
  # Reused while the CA has a day left (a cluster's nodes share it).
  if [ -s "$t/expired.pem" ] && openssl x509 -checkend 86400 -noout -in "$t/ca.pem" >/dev/null 2>&1; then
    return 0
  fi
  rm -rf "$t"
  mkdir -p "$t"
  command -v openssl >/dev/null || die "openssl is needed for KACRAB_KAFKA_SECURE=1"
  local k
  for k in ca broker client untrusted-ca badhost expired; do
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$t/$k.key" 2>/dev/null
  done
  openssl req -x509 -new -key "$t/ca.key" -subj "/CN=kacrab throwaway CA" -days 2 -out "$t/ca.pem" 2>/dev/null
  openssl req -x509 -new -key "$t/untrusted-ca.key" -subj "/CN=untrusted CA" -days 2 -out "$t/untrusted-ca.pem" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$t/broker.ext"
  printf 'extendedKeyUsage=clientAuth\n' >"$t/client.ext"
  printf 'subjectAltName=DNS:wrong.invalid\nextendedKeyUsage=serverAuth\n' >"$t/badhost.ext"
  for k in broker client badhost expired; do
    openssl req -new -key "$t/$k.key" -subj "/CN=kacrab-$k" -out "$t/$k.csr" 2>/dev/null
  done
  for k in broker client badhost; do
    openssl x509 -req -in "$t/$k.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
      -days 2 -extfile "$t/$k.ext" -out "$t/$k.crt" 2>/dev/null
  done
  # openssl x509 -req cannot set notBefore (3.0): `openssl ca` can.
  mkdir -p "$t/ca-db"; : >"$t/ca-db/index"; echo 1000 >"$t/ca-db/serial"
  cat >"$t/ca.cnf" <<EOF
[ca]
default_ca = throwaway
[throwaway]
database = $t/ca-db/index
new_certs_dir = $t/ca-db
serial = $t/ca-db/serial
default_md = sha256
policy = any
x509_extensions = ext
[any]
commonName = supplied
[ext]
subjectAltName = IP:127.0.0.1,DNS:localhost
extendedKeyUsage = serverAuth
EOF
  openssl ca -batch -notext -config "$t/ca.cnf" -cert "$t/ca.pem" -keyfile "$t/ca.key" \
    -in "$t/expired.csr" -startdate 20250101000000Z -enddate 20250201000000Z \
    -out "$t/expired.crt" 2>/dev/null || die "openssl ca could not make the expired certificate"
  for k in broker client badhost expired; do cat "$t/$k.key" "$t/$k.crt" >"$t/$k.pem"; done
  log "throwaway TLS material in $t"
}

# hex_b64url: stdin hex digits (either case) -> base64url without padding (RFC 7515
# section 2), with bash's printf only (no xxd or basenc needed).
hex_b64url() {
  local hex; hex="$(tr -d ' \n')"
  # shellcheck disable=SC2059  # the format is the \xHH escapes themselves
  printf "$(sed 's/../\\x&/g' <<<"$hex")" | base64 -w0 | tr '+/' '-_' | tr -d '='
}

# make_oidc: the RSA keys and JWKS of the OIDC listener, under $RUN/oidc.
make_oidc() {
  local o="$RUN/oidc" k n e
  # Reused while complete (a cluster's nodes share it; keys do not expire).
  if [ -s "$o/jwks.json" ] && [ -s "$o/signer.pk8" ] && [ -s "$o/untrusted.pk8" ]; then return 0; fi
  rm -rf "$o"; mkdir -p "$o"
  command -v openssl >/dev/null || die "openssl is needed for KACRAB_KAFKA_SECURE=1"
  for k in signer untrusted; do
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$o/$k.key" 2>/dev/null \
      || die "openssl could not make the OIDC $k key"
    openssl pkcs8 -topk8 -nocrypt -in "$o/$k.key" -outform DER -out "$o/$k.pk8" 2>/dev/null \
      || die "openssl could not write the OIDC $k key as PKCS#8 DER"
  done
  n="$(openssl rsa -in "$o/signer.key" -noout -modulus 2>/dev/null | sed -n 's/^Modulus=//p' | hex_b64url)"
  # The public exponent in hex ("publicExponent: 65537 (0x10001)"), padded to whole bytes.
  e="$(openssl rsa -in "$o/signer.key" -noout -text 2>/dev/null | sed -n 's/^publicExponent: .*(0x\([0-9a-fA-F]*\)).*/\1/p')"
  [ $(( ${#e} % 2 )) = 0 ] || e="0$e"
  e="$(hex_b64url <<<"$e")"
  [ ${#n} = 342 ] && [ -n "$e" ] || die "could not read the OIDC key's modulus and exponent (n is ${#n} characters)"
  printf '{"keys":[{"kty":"RSA","kid":"%s","alg":"RS256","use":"sig","n":"%s","e":"%s"}]}\n' \
    "$OIDC_KID" "$n" "$e" >"$o/jwks.json"
  log "OIDC keys and JWKS in $o"
}

oidc_jwks_url() { echo "file://$RUN/oidc/jwks.json"; }

# secure_config <dir> <broker-port>: adds the secured listeners to server.properties.
secure_config() {
  local dir="$1" port="$2" t="$RUN/tls" i kind lname listeners="" map="" ln
  for i in "${!SECURE_KINDS[@]}"; do
    kind="${SECURE_KINDS[$i]}"
    listeners+=",$kind://127.0.0.1:$(secure_port "$port" "$i")"
    case "$kind" in BADHOST|EXPIRED) map+=",$kind:SSL" ;; OIDC) map+=",$kind:SASL_PLAINTEXT" ;; *) map+=",$kind:$kind" ;; esac
  done
  sed -i -e "s|^listeners=PLAINTEXT://127.0.0.1:$port,|listeners=PLAINTEXT://127.0.0.1:$port${listeners},|" \
    -e "s|^advertised.listeners=PLAINTEXT://127.0.0.1:$port\$|advertised.listeners=PLAINTEXT://127.0.0.1:$port${listeners}|" \
    -e "s|^listener.security.protocol.map=.*|listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${map}|" \
    "$dir/server.properties"
  {
    for kind in SSL SASL_SSL BADHOST EXPIRED; do
      ln="listener.name.$(tr '[:upper:]' '[:lower:]' <<<"$kind")"
      case "$kind" in SSL|SASL_SSL) lname=broker ;; BADHOST) lname=badhost ;; EXPIRED) lname=expired ;; esac
      echo "$ln.ssl.keystore.type=PEM"
      echo "$ln.ssl.keystore.location=$t/$lname.pem"
      echo "$ln.ssl.truststore.type=PEM"
      echo "$ln.ssl.truststore.location=$t/ca.pem"
    done
    echo "listener.name.ssl.ssl.client.auth=required"
    for kind in sasl_ssl sasl_plaintext; do
      ln="listener.name.$kind"
      mechanisms=PLAIN,SCRAM-SHA-512
      [ "$kind" = sasl_ssl ] && mechanisms=$mechanisms,OAUTHBEARER
      echo "$ln.sasl.enabled.mechanisms=$mechanisms"
      echo "$ln.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_PLAIN_USER=\"$SASL_PLAIN_PASSWORD\";"
      echo "$ln.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
      # Kafka's unsecured OAUTHBEARER (the broker's default validator accepts an unsigned
      # JWT; for tests only, never production).
      echo "$ln.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"broker\";"
      if [ -n "${KACRAB_KAFKA_REAUTH_MS:-}" ]; then echo "$ln.connections.max.reauth.ms=$KACRAB_KAFKA_REAUTH_MS"; fi
    done
    # OIDC (KIP-768, broker side): signed JWTs only, checked by Kafka's
    # OAuthBearerValidatorCallbackHandler (its BrokerJwtValidator: the RS256 signature
    # against the JWKS, exp, sub, aud among the expected audience, iss the expected
    # issuer; 4.4's DefaultJwtValidator fails the broker's startup without an expected
    # issuer). The sasl.oauthbearer.* keys are listener-prefixed, so the SASL_SSL
    # listener's unsecured OAUTHBEARER is unaffected.
    ln=listener.name.oidc
    echo "$ln.sasl.enabled.mechanisms=OAUTHBEARER"
    echo "$ln.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"
    echo "$ln.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
    echo "$ln.sasl.oauthbearer.jwks.endpoint.url=$(oidc_jwks_url)"
    echo "$ln.sasl.oauthbearer.expected.audience=$OIDC_AUDIENCE"
    echo "$ln.sasl.oauthbearer.expected.issuer=$OIDC_ISSUER"
    # No clock skew (default 30 s): a token past its exp is refused, so a client that
    # re-authenticates past its first token's exp must have renewed it (the broker and
    # its tests share the machine's clock).
    echo "$ln.sasl.oauthbearer.clock.skew.seconds=0"
    if [ -n "${KACRAB_KAFKA_REAUTH_MS:-}" ]; then echo "$ln.connections.max.reauth.ms=$KACRAB_KAFKA_REAUTH_MS"; fi
  } >>"$dir/server.properties"
  # Kafka 4 refuses an OAuth URL the JVM does not allow (ConfigurationUtils'
  # org.apache.kafka.sasl.oauthbearer.allowed.urls); launch_node adds these, one a line.
  printf '%s\n' "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=$(oidc_jwks_url)" >"$dir/jvm.opts"
  : >"$dir/secure"   # format_node adds the SCRAM credentials; start reports the listeners
}

# secure_report <prefix> <ports...>: the KEY=VALUE lines of the secured listeners
# (<prefix>_SSL_BOOTSTRAP=... for the single broker, <prefix>_SSL=... for a cluster).
secure_report() {
  local prefix="$1" suffix="$2" i p bs; shift 2
  for i in "${!SECURE_KINDS[@]}"; do
    bs=""; for p in "$@"; do bs+="127.0.0.1:$(secure_port "$p" "$i"),"; done
    case "${SECURE_KINDS[$i]}" in
      SSL|SASL_SSL|SASL_PLAINTEXT) echo "${prefix}_${SECURE_KINDS[$i]}${suffix}=${bs%,}" ;;
      OIDC) echo "${prefix}_SASL_OIDC${suffix}=${bs%,}" ;;
      *) echo "${prefix}_SSL_${SECURE_KINDS[$i]}${suffix}=${bs%,}" ;;
    esac
  done
  echo "KACRAB_KAFKA_TLS_DIR=$RUN/tls"
  echo "KACRAB_KAFKA_SASL_PLAIN_USER=$SASL_PLAIN_USER"
  echo "KACRAB_KAFKA_SASL_PLAIN_PASSWORD=$SASL_PLAIN_PASSWORD"
  echo "KACRAB_KAFKA_SASL_SCRAM_USER=$SASL_SCRAM_USER"
  echo "KACRAB_KAFKA_SASL_SCRAM_PASSWORD=$SASL_SCRAM_PASSWORD"
  echo "KACRAB_KAFKA_OIDC_DIR=$RUN/oidc"
  echo "KACRAB_KAFKA_OIDC_AUDIENCE=$OIDC_AUDIENCE"
  echo "KACRAB_KAFKA_OIDC_ISSUER=$OIDC_ISSUER"
  echo "KACRAB_KAFKA_OIDC_KID=$OIDC_KID"
}

# ---------------------------------------------------------------- client telemetry
# With KACRAB_KAFKA_TELEMETRY=1 the single broker (start-single only) loads
# scripts/kafka/telemetry/KacrabTelemetryJudge.java, a KIP-714 telemetry exporter: a
# MetricsReporter listed in metric.reporters that also implements Kafka's
# ClientTelemetryExporterProvider. Every PushTelemetry the broker accepts becomes one
# JSON line in $RUN/single/telemetry.jsonl (printed as KACRAB_KAFKA_TELEMETRY_FILE;
# the fields are listed at the top of the .java file): the client instance id, client
# id and software, content type, terminating flag, payload size, and the payload decoded
# as OTLP MetricsData (metric names, kinds, points, first values, resource attributes)
# or a decode_error. Start-up then also creates the client metrics subscription
# $TELEMETRY_SUBSCRIPTION (metrics KACRAB_KAFKA_TELEMETRY_METRICS, default "*" = all;
# push interval KACRAB_KAFKA_TELEMETRY_INTERVAL_MS, default 1000; Kafka allows
# 100..3600000), without which the broker asks no client for metrics.
# Opt-in because the subscription makes every client of the broker (kacrab's and the
# Java tools) push metrics, which other tests do not expect. The plugin is compiled
# once per source hash and Kafka version into $KHOME/telemetry/<hash>.
telemetry_on() { [ "${KACRAB_KAFKA_TELEMETRY:-0}" = 1 ]; }
TELEMETRY_SRC="$HELPER_DIR/telemetry/KacrabTelemetryJudge.java"

build_telemetry() { # -> the directory of the compiled plugin
  local hash out
  hash="$( { cat "$TELEMETRY_SRC"; echo "$KAFKA_VERSION"; } | sha256sum | cut -c1-16)"
  out="$KHOME/telemetry/$hash"
  if [ ! -f "$out/KacrabTelemetryJudge.class" ]; then
    ensure_pkg javac openjdk-17-jdk-headless
    rm -rf "$out.tmp"; mkdir -p "$out.tmp"
    javac -Xlint:all -Werror -d "$out.tmp" -cp "$LIBS/*" "$TELEMETRY_SRC" >&2 \
      || die "javac could not compile $TELEMETRY_SRC"
    rm -rf "$out"; mv "$out.tmp" "$out"
    log "compiled the telemetry judge into $out"
  fi
  echo "$out"
}

telemetry_config() { # telemetry_config <dir>: the plugin on the node's classpath and in its config
  local dir="$1" classes
  classes="$(build_telemetry)"
  echo "$classes" >"$dir/classpath"
  : >"$dir/telemetry.jsonl"
  # JmxReporter is Kafka's default metric.reporters: kept, so the broker is otherwise unchanged.
  printf '%s\n' "metric.reporters=org.apache.kafka.common.metrics.JmxReporter,KacrabTelemetryJudge" \
    "kacrab.telemetry.file=$dir/telemetry.jsonl" >>"$dir/server.properties"
  : >"$dir/telemetry"
}

format_node() { # format_node <dir> <cluster-id>
  local -a scram=()
  if [ -f "$1/secure" ]; then
    scram=(--add-scram "SCRAM-SHA-512=[name=$SASL_SCRAM_USER,password=$SASL_SCRAM_PASSWORD]")
  fi
  if ! java "${ADMIN_JVM_OPTS[@]}" -Dlog4j2.configurationFile="$HELPER_DIR/log4j2-tools.properties" \
      -cp "$LIBS/*" kafka.tools.StorageTool format -t "$2" -c "$1/server.properties" \
      ${scram[@]+"${scram[@]}"} >"$1/logs/format.log" 2>&1; then
    cat "$1/logs/format.log" >&2
    die "formatting storage of $1 failed"
  fi
}

launch_node() { # launch_node <dir>   (background; pid -> <dir>/kafka.pid)
  local dir="$1"
  # wait_ready looks for "Kafka Server started" in server.log: keep the
  # previous run's log aside (restart-node).
  if [ -f "$dir/logs/server.log" ]; then mv -f "$dir/logs/server.log" "$dir/logs/server.log.prev"; fi
  # The node's own JVM options (secure_config's jvm.opts), one a line.
  local -a extra=()
  if [ -f "$dir/jvm.opts" ]; then mapfile -t extra <"$dir/jvm.opts"; fi
  # Classes of the node's own plugins (telemetry_config's classpath), before Kafka's jars.
  local cp="$LIBS/*"
  if [ -f "$dir/classpath" ]; then cp="$(cat "$dir/classpath"):$cp"; fi
  # shellcheck disable=SC2086
  nohup java $BROKER_HEAP "${BROKER_JVM_OPTS[@]}" ${extra[@]+"${extra[@]}"} \
    -Dkafka.logs.dir="$dir/logs" \
    -Dlog4j2.configurationFile="$HELPER_DIR/log4j2-broker.properties" \
    -cp "$cp" kafka.Kafka "$dir/server.properties" \
    </dev/null >"$dir/logs/stdout.log" 2>&1 &
  local pid=$! _
  echo "$pid" >"$dir/kafka.pid"
  # Until the forked shell has exec'd java, /proc/<pid>/cmdline is this script's, and
  # pid_alive (wait_ready's first check) would call the broker dead: wait for the exec.
  for _ in $(seq 100); do
    pid_alive "$pid" || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.02
  done
}

dump_logs() { # dump_logs <dir>...
  local d
  for d in "$@"; do
    log "---- tail of $d/logs/server.log"
    tail -n 40 "$d/logs/server.log" >&2 2>/dev/null || true
    if [ -s "$d/logs/stdout.log" ]; then
      log "---- tail of $d/logs/stdout.log"; tail -n 20 "$d/logs/stdout.log" >&2 || true
    fi
  done
}

# wait_ready <dirs...> -- <ports...>: every broker listed in the cluster
# metadata and answering ApiVersions (BrokerApiVersionsCommand connects to
# each broker the metadata names).
wait_ready() {
  local -a dirs=() ports=()
  while [ "$1" != -- ]; do dirs+=("$1"); shift; done; shift
  ports=("$@")
  local deadline=$(( $(date +%s) + START_TIMEOUT )) d p ok out bs
  bs="$(printf '127.0.0.1:%s,' "${ports[@]}")"; bs="${bs%,}"
  while :; do
    for d in "${dirs[@]}"; do
      pid_alive "$(node_pid "$d")" || { log "broker in $d exited during startup"; dump_logs "$d"; return 1; }
    done
    ok=1
    # Cheap checks first (every JVM poll costs ~1 s of CPU on 2 cores): the
    # node logged "Kafka Server started" (KRaft: after it was unfenced) and
    # its port accepts connections.
    for d in "${dirs[@]}"; do
      grep -q 'Kafka Server started' "$d/logs/server.log" 2>/dev/null || { ok=0; break; }
    done
    if [ "$ok" = 1 ]; then for p in "${ports[@]}"; do port_open "$p" || { ok=0; break; }; done; fi
    if [ "$ok" = 1 ]; then
      out="$(timeout 30 java "${ADMIN_JVM_OPTS[@]}" -Dlog4j2.configurationFile="$HELPER_DIR/log4j2-tools.properties" \
        -cp "$LIBS/*" org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$bs" 2>/dev/null || true)"
      for p in "${ports[@]}"; do
        grep -q "^127\.0\.0\.1:$p (id: " <<<"$out" || { ok=0; break; }
      done
      [ "$ok" = 1 ] && return 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "brokers not ready after ${START_TIMEOUT}s"; dump_logs "${dirs[@]}"; return 1
    fi
    sleep 0.5
  done
}

check_ports_free() {
  local p
  for p in "$@"; do port_open "$p" && die "port 127.0.0.1:$p is already in use"; done; return 0
}

random_cluster_id() { # a Kafka Uuid: 16 random bytes, base64url, no padding, not starting with '-'
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    case "$id" in -*) continue ;; *) echo "$id"; return ;; esac
  done
}

report_features() { # report_features <bootstrap>: KACRAB_KAFKA_TRANSACTION_VERSION=...
  local out tv
  out="$(run_tool admin org.apache.kafka.tools.FeatureCommand --bootstrap-server "$1" describe 2>/dev/null || true)"
  printf '%s\n' "$out" >"$RUN/features.txt"
  tv="$(printf '%s\n' "$out" | grep -E '^Feature: transaction\.version' | sed -n 's/.*FinalizedVersionLevel: *\([0-9]*\).*/\1/p')"
  log "finalized features: $(printf '%s\n' "$out" | sed -n 's/^Feature: \([^[:space:]]*\).*FinalizedVersionLevel: *\([^[:space:]]*\).*/\1=\2/p' | tr '\n' ' ')"
  echo "KACRAB_KAFKA_TRANSACTION_VERSION=${tv:-unknown}"
}

# ---------------------------------------------------------------- start-single
cmd_start_single() {
  local port="${1:-$SINGLE_PORT_DEFAULT}" dir="$RUN/single"
  local cport=$((port + 1))
  ensure_fetched
  mkdir -p "$RUN"
  if pid_alive "$(node_pid "$dir")"; then
    local old; old="$(cat "$dir/port")"
    [ "$old" = "$port" ] || die "a single broker is already running on port $old (scripts/kafka.sh stop single)"
    log "single broker already running (pid $(node_pid "$dir"))"
    echo "KACRAB_KAFKA_BOOTSTRAP=127.0.0.1:$port"; echo "KACRAB_KAFKA_PIDS=$(node_pid "$dir")"
    if [ -f "$dir/secure" ]; then secure_report KACRAB_KAFKA _BOOTSTRAP "$port"; fi
    if [ -f "$dir/telemetry" ]; then echo "KACRAB_KAFKA_TELEMETRY_FILE=$dir/telemetry.jsonl"
    elif telemetry_on; then log "warning: the running single broker has no telemetry judge (stop single first)"; fi
    report_features "127.0.0.1:$port"
    return 0
  fi
  check_ports_free "$port" "$cport"
  local t0; t0=$(now_ms)
  rm -rf "$dir"; mkdir -p "$dir"
  write_config "$dir" 1 "$port" "$cport" "1@127.0.0.1:$cport" 1 1
  if secure_on; then
    check_ports_free $(for i in "${!SECURE_KINDS[@]}"; do secure_port "$port" "$i"; done)
    make_tls; make_oidc; secure_config "$dir" "$port"
  fi
  if telemetry_on; then telemetry_config "$dir"; fi
  echo "$port" >"$dir/port"
  format_node "$dir" "$(random_cluster_id)"
  launch_node "$dir"
  if ! wait_ready "$dir" -- "$port"; then
    stop_dirs "$dir" >/dev/null 2>&1 || true
    die "single broker failed to start (logs in $dir/logs)"
  fi
  log "single broker up on 127.0.0.1:$port (pid $(node_pid "$dir")) in $(secs_since "$t0")s; logs: $dir/logs"
  # The subscription's JVM runs beside report_features' (2 cores).
  local sub=""
  if [ -f "$dir/telemetry" ]; then
    cmd_client_metrics "127.0.0.1:$port" "$TELEMETRY_SUBSCRIPTION" "$TELEMETRY_METRICS" "$TELEMETRY_INTERVAL_MS" "$TELEMETRY_MATCH" &
    sub=$!
  fi
  echo "KACRAB_KAFKA_BOOTSTRAP=127.0.0.1:$port"
  if [ -f "$dir/secure" ]; then secure_report KACRAB_KAFKA _BOOTSTRAP "$port"; fi
  echo "KACRAB_KAFKA_PIDS=$(node_pid "$dir")"
  report_features "127.0.0.1:$port"
  if [ -n "$sub" ]; then
    if ! wait "$sub"; then
      stop_dirs "$dir" >/dev/null 2>&1 || true
      die "could not create the client metrics subscription (broker stopped)"
    fi
    # The broker applies the committed subscription ~0.1 s after the tool's answer; a
    # client asking before would be told to come back in 5 minutes.
    local n=0
    until grep -q "Updating client metrics $TELEMETRY_SUBSCRIPTION " "$dir/logs/server.log" 2>/dev/null; do
      n=$((n + 1)); [ "$n" -le 100 ] || { log "warning: the broker did not log applying $TELEMETRY_SUBSCRIPTION in 5 s"; break; }
      sleep 0.05
    done
    echo "KACRAB_KAFKA_TELEMETRY_FILE=$dir/telemetry.jsonl"
  fi
}

# ---------------------------------------------------------------- start-cluster
cluster_dir() { echo "$RUN/cluster/node$1"; }
cluster_base() { [ -f "$RUN/cluster/base-port" ] || die "no cluster was started (scripts/kafka.sh start-cluster)"; cat "$RUN/cluster/base-port"; }
cluster_ports() { local b="$1"; echo "$b $((b + 1)) $((b + 2))"; }

cmd_start_cluster() {
  local base="${1:-$CLUSTER_PORT_DEFAULT}" n
  ensure_fetched
  mkdir -p "$RUN"
  local -a dirs=() ports=() pids=()
  for n in 1 2 3; do
    dirs+=("$(cluster_dir $n)"); ports+=($((base + n - 1)))
  done
  local running=0
  for n in 1 2 3; do pid_alive "$(node_pid "${dirs[n-1]}")" && running=$((running + 1)); done
  if [ "$running" -gt 0 ]; then
    [ "$(cluster_base)" = "$base" ] || die "a cluster is already running at base port $(cluster_base) (scripts/kafka.sh stop cluster)"
    [ "$running" = 3 ] || die "cluster partly running ($running/3 nodes); restart-node or stop cluster first"
    log "cluster already running"
  else
    check_ports_free "${ports[@]}" $((base + 100)) $((base + 101)) $((base + 102))
    local t0; t0=$(now_ms)
    rm -rf "$RUN/cluster"; mkdir -p "$RUN/cluster"
    echo "$base" >"$RUN/cluster/base-port"
    local voters="1@127.0.0.1:$((base + 100)),2@127.0.0.1:$((base + 101)),3@127.0.0.1:$((base + 102))"
    local cid; cid="$(random_cluster_id)"; echo "$cid" >"$RUN/cluster/cluster-id"
    if secure_on; then
      check_ports_free $(for p in "${ports[@]}"; do for i in "${!SECURE_KINDS[@]}"; do secure_port "$p" "$i"; done; done)
      make_tls; make_oidc
    fi
    for n in 1 2 3; do
      write_config "${dirs[n-1]}" "$n" "${ports[n-1]}" $((base + 99 + n)) "$voters" 3 2
      if secure_on; then secure_config "${dirs[n-1]}" "${ports[n-1]}"; fi
    done
    # Format all three (same cluster id) in parallel, then launch together:
    # the controllers need a quorum of 2 before any broker can register.
    for n in 1 2 3; do format_node "${dirs[n-1]}" "$cid" & done
    wait_all_bg || die "formatting cluster storage failed"
    for n in 1 2 3; do launch_node "${dirs[n-1]}"; done
    if ! wait_ready "${dirs[@]}" -- "${ports[@]}"; then
      stop_dirs "${dirs[@]}" >/dev/null 2>&1 || true
      die "cluster failed to start (logs in $RUN/cluster/node*/logs)"
    fi
    log "3-node cluster up in $(secs_since "$t0")s; logs: $RUN/cluster/node{1,2,3}/logs"
  fi
  for n in 1 2 3; do pids+=("$(node_pid "${dirs[n-1]}")"); done
  local bs; bs="$(printf '127.0.0.1:%s,' "${ports[@]}")"; bs="${bs%,}"
  echo "KACRAB_KAFKA_CLUSTER=$bs"
  echo "KACRAB_KAFKA_CLUSTER_PIDS=$(IFS=,; echo "${pids[*]}")"
  if [ -f "${dirs[0]}/secure" ]; then secure_report KACRAB_KAFKA_CLUSTER "" "${ports[@]}"; fi
  report_features "$bs"
}

wait_all_bg() { local rc=0 j; for j in $(jobs -p); do wait "$j" || rc=1; done; return $rc; }

# ---------------------------------------------------------------- stop / kill
# stop_dirs <dir>...: SIGTERM all at once, then SIGKILL whatever is left
# after STOP_TIMEOUT seconds. A combined node shuts its broker down first
# (controlled shutdown, which needs an active controller) and its controller
# after; so once fewer than 2 of the 3 cluster nodes are alive the quorum is
# gone and a cluster node still shutting down would wait for nothing: it gets
# QUORUM_GRACE seconds, then SIGKILL.
QUORUM_GRACE=3
cluster_alive() { local n c=0; for n in 1 2 3; do pid_alive "$(node_pid "$(cluster_dir $n)")" && c=$((c + 1)); done; echo $c; }

stop_dirs() {
  local -a live=()
  local d pid
  for d in "$@"; do
    pid="$(node_pid "$d")"
    if pid_alive "$pid"; then kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; live+=("$d"); else rm -f "$d/kafka.pid"; fi
  done
  [ "${#live[@]}" -gt 0 ] || return 0
  local deadline=$(( $(date +%s) + STOP_TIMEOUT )) left cl lost_at="" why _
  while :; do
    left=0 cl=0
    for d in "${live[@]}"; do
      if pid_alive "$(node_pid "$d")"; then left=1; case "$d" in "$RUN/cluster/"*) cl=1 ;; esac; fi
    done
    [ "$left" = 0 ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      why="ignored SIGTERM for ${STOP_TIMEOUT}s"
    elif [ "$cl" = 1 ] && [ "$(cluster_alive)" -lt 2 ]; then
      lost_at="${lost_at:-$(date +%s)}"
      [ $(( $(date +%s) - lost_at )) -ge "$QUORUM_GRACE" ] || { sleep 0.3; continue; }
      why="cannot finish shutting down without a controller quorum"
    else
      sleep 0.3; continue
    fi
    for d in "${live[@]}"; do
      pid="$(node_pid "$d")"
      case "$why" in ignored*) ;; *) case "$d" in "$RUN/cluster/"*) ;; *) continue ;; esac ;; esac
      if pid_alive "$pid"; then log "$(basename "$d") (pid $pid) $why: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    done
    for _ in $(seq 30); do
      left=0; for d in "${live[@]}"; do pid_alive "$(node_pid "$d")" && left=1; done
      [ "$left" = 0 ] && break; sleep 0.1
    done
    case "$why" in ignored*) break ;; esac
  done
  for d in "${live[@]}"; do log "stopped $(basename "$d") (pid $(node_pid "$d"))"; rm -f "$d/kafka.pid"; done
}

cmd_stop() {
  local what="${1:-all}"
  case "$what" in
    all) stop_dirs "$RUN/single" "$(cluster_dir 1)" "$(cluster_dir 2)" "$(cluster_dir 3)" ;;
    single) stop_dirs "$RUN/single" ;;
    cluster) stop_dirs "$(cluster_dir 1)" "$(cluster_dir 2)" "$(cluster_dir 3)" ;;
    node) check_node "${2:-}"; stop_dirs "$(cluster_dir "$2")" ;;
    *) die "stop [all|single|cluster|node N]" ;;
  esac
}

check_node() { case "${1:-}" in 1|2|3) ;; *) die "node must be 1, 2 or 3" ;; esac; }

cmd_kill_node() {
  check_node "${1:-}"
  local d; d="$(cluster_dir "$1")"
  local pid; pid="$(node_pid "$d")"
  pid_alive "$pid" || die "cluster node $1 is not running"
  kill -KILL "$pid"
  local _; for _ in $(seq 50); do pid_alive "$pid" || break; sleep 0.1; done
  rm -f "$d/kafka.pid"
  log "SIGKILLed cluster node $1 (pid $pid)"
}

cmd_restart_node() {
  check_node "${1:-}"
  local base; base="$(cluster_base)"
  local d; d="$(cluster_dir "$1")"
  pid_alive "$(node_pid "$d")" && stop_dirs "$d"
  local t0; t0=$(now_ms)
  launch_node "$d"
  local -a ports; read -r -a ports <<<"$(cluster_ports "$base")"
  wait_ready "$d" -- "${ports[@]}" || die "node $1 failed to rejoin (logs in $d/logs)"
  log "cluster node $1 back (pid $(node_pid "$d")) in $(secs_since "$t0")s"
  echo "KACRAB_KAFKA_NODE${1}_PID=$(node_pid "$d")"
}

# pause-node N: SIGSTOP the node's JVM. It keeps its sockets open and answers nothing
# (a GC pause or a frozen VM); past broker.session.timeout.ms the controllers fence it
# and move its leaderships, and on resume-node it comes back as a zombie that learns it
# lost them. stop resumes a paused node before its SIGTERM.
cmd_pause_node() {
  check_node "${1:-}"
  local pid; pid="$(node_pid "$(cluster_dir "$1")")"
  pid_alive "$pid" || die "cluster node $1 is not running"
  kill -STOP "$pid"
  log "SIGSTOPped cluster node $1 (pid $pid)"
}

cmd_resume_node() {
  check_node "${1:-}"
  local pid; pid="$(node_pid "$(cluster_dir "$1")")"
  pid_alive "$pid" || die "cluster node $1 is not running"
  kill -CONT "$pid"
  log "SIGCONTed cluster node $1 (pid $pid)"
}

cmd_clean() { # stop everything, then drop all broker data and logs (keeps the jars)
  cmd_stop all
  rm -rf "$RUN" "$LOGS"
  log "removed $RUN and $LOGS"
}

cmd_status() {
  local d pid
  for d in "$RUN/single" "$(cluster_dir 1)" "$(cluster_dir 2)" "$(cluster_dir 3)"; do
    [ -d "$d" ] || continue
    pid="$(node_pid "$d")"
    if pid_alive "$pid"; then echo "$(basename "$d") running pid=$pid"; else echo "$(basename "$d") stopped"; fi
  done
}

# ---------------------------------------------------------------- tools
cmd_create_topic() {
  [ $# -eq 4 ] || die "create-topic <bootstrap> <topic> <partitions> <rf>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --create \
    --topic "$2" --partitions "$3" --replication-factor "$4" >&2
}

# create-topic-with: create-topic plus one topic config (e.g.
# message.timestamp.type=LogAppendTime).
cmd_create_topic_with() {
  [ $# -eq 5 ] || die "create-topic-with <bootstrap> <topic> <partitions> <rf> <key=value>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --create \
    --topic "$2" --partitions "$3" --replication-factor "$4" --config "$5" >&2
}

cmd_delete_topic() {
  [ $# -eq 2 ] || die "delete-topic <bootstrap> <topic>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --delete \
    --topic "$2" >&2
}

cmd_describe_topic() {
  [ $# -eq 2 ] || die "describe-topic <bootstrap> <topic>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --describe --topic "$2"
}

# wait-leaders: poll TopicCommand --describe until every partition has a
# leader (and, with --not N, none is led by node N: after kill-node N the
# controller moves leadership only once N's broker session times out,
# broker.session.timeout.ms = 9 s, plus a KRaft election if N was the active
# controller). Prints the final description.
cmd_wait_leaders() {
  [ $# -ge 2 ] || die "wait-leaders <bootstrap> <topic> [--not N] [--timeout S]"
  local bs="$1" topic="$2" not="" tmo=60; shift 2
  while [ $# -gt 0 ]; do
    case "$1" in
      --not) not="${2:?--not needs a node id}"; shift 2 ;;
      --timeout) tmo="${2:?--timeout needs seconds}"; shift 2 ;;
      *) die "unknown wait-leaders option $1" ;;
    esac
  done
  ensure_fetched
  local deadline=$(( $(date +%s) + tmo )) out t0; t0=$(now_ms)
  while :; do
    out="$(run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$bs" --describe --topic "$topic" 2>/dev/null || true)"
    if grep -q 'Partition: ' <<<"$out" \
        && ! grep -Eq 'Leader: (none|-1)([[:space:]]|$)' <<<"$out" \
        && { [ -z "$not" ] || ! grep -Eq "Leader: $not([[:space:]]|\$)" <<<"$out"; }; then
      printf '%s\n' "$out"
      log "leaders of $topic settled in $(secs_since "$t0")s"
      return 0
    fi
    [ "$(date +%s)" -lt "$deadline" ] || { printf '%s\n' "$out" >&2; die "leaders of $topic not settled after ${tmo}s"; }
    sleep 1
  done
}

cmd_features() {
  [ $# -eq 1 ] || die "features <bootstrap>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.FeatureCommand --bootstrap-server "$1" describe
}

# consume: one line per record, "partition<TAB>offset<TAB>key<TAB>value"
# (null key/value print as "null"); the count goes to stderr.
cmd_consume() {
  [ $# -ge 3 ] || die "consume <bootstrap> <topic> <max-records> [--isolation read_committed|read_uncommitted]"
  local bs="$1" topic="$2" max="$3"; shift 3
  local iso=read_uncommitted
  while [ $# -gt 0 ]; do
    case "$1" in
      --isolation) iso="${2:?--isolation needs a value}"; shift 2 ;;
      --isolation=*) iso="${1#*=}"; shift ;;
      *) die "unknown consume option $1" ;;
    esac
  done
  ensure_fetched
  local fp=--formatter-property
  ver_ge "$KAFKA_VERSION" 4.2 || fp=--property
  run_tool data org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bs" \
    --topic "$topic" --from-beginning --max-messages "$max" \
    --timeout-ms "${KACRAB_KAFKA_CONSUME_TIMEOUT_MS:-15000}" --isolation-level "$iso" \
    "$fp" print.partition=true "$fp" print.offset=true "$fp" print.key=true \
    | sed -E 's/^Partition:([0-9]+)\tOffset:([0-9]+)\t/\1\t\2\t/'
}

cmd_perf() {
  [ $# -ge 4 ] || die "perf <bootstrap> <topic> <records> <size> [--throughput N] [--transactional-id ID] [--property k=v]..."
  local bs="$1" topic="$2" n="$3" size="$4" tput=-1; shift 4
  local -a extra=() props=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --throughput) tput="${2:?--throughput needs a value}"; shift 2 ;;
      --transactional-id) extra+=(--transactional-id "${2:?--transactional-id needs a value}"); shift 2 ;;
      # Producer properties after acks=all enable.idempotence=true: a later one wins.
      --property) props+=("${2:?--property needs key=value}"); shift 2 ;;
      *) die "unknown perf option $1" ;;
    esac
  done
  ensure_fetched
  # auto.create.topics.enable=false: a missing topic would make every send()
  # block for max.block.ms (60 s), i.e. forever for a million records.
  run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$bs" --describe \
    --topic "$topic" >/dev/null 2>&1 || die "topic $topic does not exist on $bs (create-topic first)"
  mkdir -p "$LOGS"
  local out="$LOGS/perf-$topic.log" tv="$LOGS/perf-$topic.time" pp=--command-property
  ver_ge "$KAFKA_VERSION" 4.2 || pp=--producer-props
  # shellcheck disable=SC2206  # TOOL_HEAP is a list of JVM flags
  local -a cmd=(java $TOOL_HEAP "${DATA_JVM_OPTS[@]}"
    -Dlog4j2.configurationFile="$HELPER_DIR/log4j2-tools.properties" -cp "$LIBS/*"
    org.apache.kafka.tools.ProducerPerformance --bootstrap-server "$bs" --topic "$topic"
    --num-records "$n" --record-size "$size" --throughput "$tput" ${extra[@]+"${extra[@]}"}
    "$pp" acks=all enable.idempotence=true ${props[@]+"${props[@]}"})
  local t0 rc=0 rss="" cpu=""; t0=$(now_ms)
  if [ -x /usr/bin/time ] || ensure_pkg /usr/bin/time time 2>/dev/null; then
    /usr/bin/time -v -o "$tv" "${cmd[@]}" >"$out" 2>&1 || rc=$?
    rss="$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): *//p' "$tv")"
    cpu="$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/{s+=$2} END{print s}' "$tv")"
  else
    # Fallback: sample the JVM's VmHWM (peak RSS) while it runs.
    "${cmd[@]}" >"$out" 2>&1 & local jp=$!
    while kill -0 "$jp" 2>/dev/null; do
      rss="$(sed -n 's/^VmHWM: *\([0-9]*\) kB/\1/p' "/proc/$jp/status" 2>/dev/null || true)"; sleep 0.2
    done
    wait "$jp" || rc=$?
  fi
  local el; el="$(secs_since "$t0")"
  if [ "$rc" != 0 ]; then tail -n 30 "$out" >&2; die "ProducerPerformance failed (rc=$rc; log $out)"; fi
  grep -E 'records sent.*50th' "$out" | tail -n 1
  echo "KACRAB_PERF_PEAK_RSS_KB=${rss:-unknown}"
  echo "KACRAB_PERF_ELAPSED_S=$el"
  # The JVM's user+system CPU seconds (from /usr/bin/time; absent in the fallback).
  echo "KACRAB_PERF_CPU_S=${cpu:-unknown}"
}

# end-offsets: per topic matching the regex, the sum of its partitions' end offsets
# (Kafka's GetOffsetShell, latest offsets), one "topic<TAB>sum" line each, sorted.
cmd_end_offsets() {
  [ $# -eq 2 ] || die "end-offsets <bootstrap> <topic-regex>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$1" \
    --topic "$2" --time -1 \
    | awk -F: 'NF>=3 {sum[$1]+=$NF} END {for (t in sum) printf "%s\t%d\n", t, sum[t]}' | sort
}

# partition-end-offsets: each partition's end offset of one topic (Kafka's
# GetOffsetShell, latest offsets), one "partition<TAB>offset" line each, sorted.
cmd_partition_end_offsets() {
  [ $# -eq 2 ] || die "partition-end-offsets <bootstrap> <topic>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$1" \
    --topic "$2" --time -1 \
    | awk -F: -v t="$2" 'NF>=3 && $1 == t {printf "%d\t%d\n", $2, $3}' | sort -n
}

# group-offsets: the offsets a consumer group has committed (Kafka's
# ConsumerGroupCommand --describe --offsets), one "topic<TAB>partition<TAB>offset" line
# per partition, sorted; "-" for a partition without a committed offset.
cmd_group_offsets() {
  [ $# -eq 2 ] || die "group-offsets <bootstrap> <group>"
  ensure_fetched
  local out
  # The tool exits 0 when it fails (a group that does not exist included), saying so
  # on its output.
  out="$(run_tool admin org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
    --bootstrap-server "$1" --describe --offsets --group "$2" 2>&1)" \
    || die "group-offsets: ConsumerGroupCommand failed: $out"
  if grep -Eq "does not exist|GroupIdNotFoundException|^Error: " <<<"$out"; then
    die "group-offsets: no offsets for group $2 at $1: $(grep -m1 "^Error: " <<<"$out")"
  fi
  awk -v g="$2" '$1 == g && $3 ~ /^[0-9]+$/ {printf "%s\t%s\t%s\n", $2, $3, $4}' <<<"$out" | sort
}

# txn-coordinator: the node id of the transaction coordinator of a transactional id
# (Kafka's TransactionsCommand describe, which asks FindCoordinator).
cmd_txn_coordinator() {
  [ $# -eq 2 ] || die "txn-coordinator <bootstrap> <transactional-id>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.TransactionsCommand --bootstrap-server "$1" \
    describe --transactional-id "$2" \
    | awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "CoordinatorId") c = i; next}
           c && $c ~ /^[0-9]+$/ {print $c; exit}'
}

# produce-keyed: Java's console producer, one record per stdin line
# "key<TAB>value" (parse.key=true), with Java's default (built-in) partitioner, so a
# test can compare where Java puts a key with where kacrab does.
cmd_produce_keyed() {
  [ $# -eq 2 ] || die "produce-keyed <bootstrap> <topic>"
  ensure_fetched
  local rp=--reader-property cp=--command-property
  ver_ge "$KAFKA_VERSION" 4.2 || { rp=--property; cp=--producer-property; }
  run_tool data org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$1" \
    --topic "$2" "$rp" parse.key=true "$rp" "key.separator=$(printf '\t')" \
    "$cp" acks=all >&2
}

# add-partitions: grows a live topic to <total-partitions> (TopicCommand --alter).
cmd_add_partitions() {
  [ $# -eq 3 ] || die "add-partitions <bootstrap> <topic> <total-partitions>"
  ensure_fetched
  run_tool admin org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --alter \
    --topic "$2" --partitions "$3" >&2
}

# client-metrics: creates or replaces a KIP-714 client metrics subscription (Kafka's
# ClientMetricsCommand --alter): <metrics> a comma-separated list of metric name
# prefixes ("*" = all), <interval-ms> the push interval (100..3600000), [match] the
# clients it asks (e.g. client_id=app.*; none or empty: every client).
cmd_client_metrics() {
  [ $# -eq 4 ] || [ $# -eq 5 ] || die "client-metrics <bootstrap> <name> <metrics> <interval-ms> [match]"
  ensure_fetched
  local -a match=()
  if [ -n "${5:-}" ]; then match=(--match "$5"); fi
  run_tool admin org.apache.kafka.tools.ClientMetricsCommand --bootstrap-server "$1" --alter \
    --name "$2" --metrics "$3" --interval "$4" ${match[@]+"${match[@]}"} >&2 \
    || die "ClientMetricsCommand --alter --name $2 failed"
}

# ---------------------------------------------------------------- main
main() {
  [ $# -ge 1 ] || usage
  local sub="$1"; shift
  case "$sub" in
    fetch) cmd_fetch "$@" ;;
    start-single) cmd_start_single "$@" ;;
    start-cluster) cmd_start_cluster "$@" ;;
    stop) cmd_stop "$@" ;;
    kill-node) cmd_kill_node "$@" ;;
    restart-node) cmd_restart_node "$@" ;;
    pause-node) cmd_pause_node "$@" ;;
    resume-node) cmd_resume_node "$@" ;;
    create-topic) cmd_create_topic "$@" ;;
    create-topic-with) cmd_create_topic_with "$@" ;;
    delete-topic) cmd_delete_topic "$@" ;;
    describe-topic) cmd_describe_topic "$@" ;;
    consume) cmd_consume "$@" ;;
    perf) cmd_perf "$@" ;;
    end-offsets) cmd_end_offsets "$@" ;;
    partition-end-offsets) cmd_partition_end_offsets "$@" ;;
    group-offsets) cmd_group_offsets "$@" ;;
    txn-coordinator) cmd_txn_coordinator "$@" ;;
    produce-keyed) cmd_produce_keyed "$@" ;;
    add-partitions) cmd_add_partitions "$@" ;;
    wait-leaders) cmd_wait_leaders "$@" ;;
    features) cmd_features "$@" ;;
    client-metrics) cmd_client_metrics "$@" ;;
    status) cmd_status ;;
    clean) cmd_clean ;;
    -h|--help|help) usage 0 ;;
    *) log "unknown command: $sub"; usage ;;
  esac
}
main "$@"; exit $?   # on one line: bash never reads past it, even if this file is edited while running
