#!/usr/bin/env bash
# Mutation testing (issue 33, target 3): how many small wrong edits of the core and of the
# session's decisions their own tests catch. cargo-mutants is a dev tool, installed here at
# a pinned version; it is no dependency of any crate.
#
#   bash scripts/mutants.sh core    [--shard k/n] [cargo-mutants args...]
#   bash scripts/mutants.sh session [--shard k/n] [cargo-mutants args...]
#   bash scripts/mutants.sh diff    [BASE]      # CI: the mutants of the lines BASE..HEAD touched
#
# core: every mutant of `src/` (the kacrab-idempotence crate), judged by that crate's tests.
# session: the mutants of the session's decisions (application, network, routing, metadata
# refresh), judged by kacrab-driver's tests.
# diff: both scopes, restricted to the lines the diff BASE..HEAD touched (BASE defaults to
# KACRAB_MUTANTS_BASE, else HEAD^: the change a commit makes), at most
# KACRAB_MUTANTS_MAX (default 4) mutants per scope, a round-robin sample when more are
# touched, so CI stays within its time budget; KACRAB_MUTANTS_SCOPES (default "core
# session") narrows the scopes. Fails on a surviving mutant that docs/mutants.md does not
# list as equivalent.
#
# A full run mutates a copy of the tree under cargo-mutants' own output dir; the diff mode
# mutates in place (CI's checkout is its own) and reuses the test step's build. Results:
# mutants.out/ under KACRAB_MUTANTS_OUT (default target/mutants).
set -euo pipefail
cd "$(dirname "$0")/.."

version=27.1.0
install() {
  if ! cargo mutants --version 2>/dev/null | grep -q "$version"; then
    echo "mutants.sh: installing cargo-mutants $version (cargo install --locked)"
    cargo install cargo-mutants --version "$version" --locked --quiet
  fi
}

out=${KACRAB_MUTANTS_OUT:-target/mutants}
mkdir -p "$out"

core=(--package kacrab-idempotence --test-package kacrab-idempotence)
# The session's decisions: what the session decides for the application (sends, backlog,
# completions), the network (connections, lookups, reconnects), routing and metadata
# refresh. Configuration parsing, metrics, TLS and SASL have their own focused suites and
# are left out of the score.
session_files=(
  'crates/kacrab-driver/src/app*.rs' 'crates/kacrab-driver/src/session.rs'
  'crates/kacrab-driver/src/network.rs' 'crates/kacrab-driver/src/network/*.rs'
  'crates/kacrab-driver/src/routing.rs' 'crates/kacrab-driver/src/refresh.rs'
  'crates/kacrab-driver/src/topics.rs' 'crates/kacrab-driver/src/send_slots.rs'
  'crates/kacrab-driver/src/waiters.rs'
)
# With `tracing` and `metrics`: a decision whose only output is a log line (a warning
# naming a failure's cause) or a published metric (the publish timer) is observable to
# session_tracing's and session_metrics_publish's tests only with them.
session=(--package kacrab-driver --test-package kacrab-driver --features tracing,metrics)
for f in "${session_files[@]}"; do session+=(--file "$f"); done

# Survivors docs/mutants.md lists as equivalent (a line "- `file:line:col: description`"
# without its position is matched on file and description only, so edits elsewhere in the
# file do not stale it).
equivalent() {
  sed -n 's/^- `\([^`]*\)`.*/\1/p' docs/mutants.md | sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /' | sort -u
}
unexplained() {
  local missed="$1/mutants.out/missed.txt"
  [ -s "$missed" ] || return 0
  comm -23 <(sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /' "$missed" | sort -u) <(equivalent)
}

mode=${1:-}
shift || true
case "$mode" in
  core | session)
    install
    if [ "$mode" = core ]; then scope=("${core[@]}"); else scope=("${session[@]}"); fi
    cargo mutants "${scope[@]}" --sharding round-robin --no-shuffle \
      --minimum-test-timeout 60 -o "$out/$mode" "$@" || status=$?
    # 2: some mutants survived; 3: some timed out (caught). Anything else is a failure of the run.
    case "${status:-0}" in 0 | 2 | 3) ;; *) exit "$status" ;; esac
    d="$out/$mode/mutants.out"
    caught=$(wc -l < "$d/caught.txt"); missed=$(wc -l < "$d/missed.txt")
    timeout=$(wc -l < "$d/timeout.txt"); unviable=$(wc -l < "$d/unviable.txt")
    viable=$((caught + missed + timeout))
    echo "mutants.sh $mode: caught=$caught timeout=$timeout missed=$missed unviable=$unviable;" \
      "score $(( viable ? 100 * (caught + timeout) / viable : 100 ))% of $viable viable"
    left=$(unexplained "$out/$mode")
    if [ -n "$left" ]; then echo "survivors docs/mutants.md does not list:"; echo "$left"; fi
    ;;
  diff)
    base=${1:-${KACRAB_MUTANTS_BASE:-HEAD^}}
    max=${KACRAB_MUTANTS_MAX:-4}
    diff_file="$out/change.diff"
    git diff "$base" HEAD -- src crates/kacrab-driver/src > "$diff_file"
    failed=0
    for mode in ${KACRAB_MUTANTS_SCOPES:-core session}; do
      if [ "$mode" = core ]; then dir=src; scope=("${core[@]}"); else dir=crates/kacrab-driver/src; scope=("${session[@]}"); fi
      if git diff --quiet "$base" HEAD -- "$dir"; then
        echo "mutants.sh diff: $base..HEAD changes nothing under $dir: no $mode mutant to test"
        continue
      fi
      install
      n=$(cargo mutants "${scope[@]}" --in-diff "$diff_file" --list | wc -l)
      if [ "$n" = 0 ]; then echo "mutants.sh diff: $base..HEAD touches no $mode mutant"; continue; fi
      shards=$(( (n + max - 1) / max ))
      echo "mutants.sh diff: $base..HEAD touches $n $mode mutants; testing $(( (n + shards - 1) / shards ))"
      rm -rf "$out/diff-$mode"
      status=0
      cargo mutants "${scope[@]}" --in-diff "$diff_file" --in-place --baseline skip \
        --shard "0/$shards" --sharding round-robin --no-shuffle --timeout 300 \
        -o "$out/diff-$mode" || status=$?
      case "$status" in 0 | 2 | 3) ;; *) exit "$status" ;; esac
      left=$(unexplained "$out/diff-$mode")
      if [ -n "$left" ]; then
        echo "mutants.sh diff: survivors in $mode that no test kills and docs/mutants.md does not list:"
        echo "$left"
        failed=1
      fi
    done
    exit "$failed"
    ;;
  *)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
