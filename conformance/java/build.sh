#!/usr/bin/env bash
# Builds the Java side: mvn resolves kafka-clients (and its test jar) into the local Maven
# repository and writes the classpath; javac compiles the one harness class. Prints the
# classpath to run it with. Rebuilds only when the source or the pom changed.
set -euo pipefail
cd "$(dirname "$0")"
out=target
src=src/main/java/org/apache/kafka/clients/producer/internals/ConformanceHarness.java
mkdir -p "$out/classes"
if [ ! -s "$out/classpath.txt" ] || [ pom.xml -nt "$out/classpath.txt" ]; then
  mvn -q -B dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt" >"$out/mvn.log" 2>&1 \
    || { tail -n 40 "$out/mvn.log" >&2; echo "build.sh: mvn could not resolve kafka-clients" >&2; exit 1; }
fi
cls="$out/classes/org/apache/kafka/clients/producer/internals/ConformanceHarness.class"
if [ ! -f "$cls" ] || [ "$src" -nt "$cls" ]; then
  javac -nowarn -d "$out/classes" -cp "$(cat "$out/classpath.txt")" "$src"
fi
echo "$PWD/$out/classes:$(cat "$out/classpath.txt")"
