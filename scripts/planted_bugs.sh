#!/usr/bin/env bash
# Planted bugs: measures the test layers on hand-written bugs in the core's sequencing
# and transaction rules (scripts/planted/*.patch, each a small realistic diff with a
# header naming the rule it breaks and its Kafka source).
#
# For each patch: apply it to a scratch `git worktree` of HEAD (never this working
# tree), build, run each layer with a time limit, record caught / not caught, revert.
# Prints a table (also written to $SCRATCH-logs/planted-results.md, next to the logs) and exits non-zero if the
# differential conformance run misses a patch, or a patch no longer applies or builds.
#
#   bash scripts/planted_bugs.sh [--layers L1,L2,...] [--no-baseline] [PATCH ...]
#
# Layers (default: conformance,core,props,sim):
#   conformance  kacrab-conformance check --seed 1 --traces 1000 --mixed --strict, and
#                the same with --txn: CI's two runs (.ci/run), against the Java client
#                (needs java and mvn; conformance/java/build.sh). Caught: either run
#                exits non-zero (an unexplained divergence, or the core panicked).
#   core         the core's unit and integration tests (cargo test -p
#                kacrab-idempotence, every target but the two property suites).
#   props        the core's property tests: tests/core_inputs.rs and
#                tests/sim_properties.rs (the core against the simulator), with
#                KACRAB_SIM_CASES (default here 200; CI runs 20,000).
#   sim          the simulator's suites driving the session (cargo test -p kacrab-sim
#                --test simulator --test sim_transactions), same KACRAB_SIM_CASES.
#   chaos        the chaos main job, `--example chaos`, in the dev profile (debug
#                assertions on, and it reuses the test build) with --records
#                $KACRAB_PLANTED_CHAOS_RECORDS (default 20,000; CI: release, 100,000).
#
# Not wired into .ci/run: a full matrix builds the workspace once per patch and takes
# hours on a small machine (docs/planted-bugs.md).
#
# Environment: CARGO_TARGET_DIR (default: this repository's target/),
# KACRAB_PLANTED_SCRATCH (default /tmp/kacrab-planted-scratch), KACRAB_PLANTED_TIMEOUT
# (seconds per layer run, default 900), KACRAB_SIM_CASES (default 200).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=${KACRAB_PLANTED_SCRATCH:-/tmp/kacrab-planted-scratch}
limit=${KACRAB_PLANTED_TIMEOUT:-900}
export KACRAB_SIM_CASES=${KACRAB_SIM_CASES:-200}
chaos_records=${KACRAB_PLANTED_CHAOS_RECORDS:-20000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
export CARGO_TERM_COLOR=never

layers=conformance,core,props,sim
baseline=1
patches=()
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) layers=$2; shift 2 ;;
    --no-baseline) baseline=0; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) patches+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
  esac
done
if [ ${#patches[@]} -eq 0 ]; then
  patches=("$repo"/scripts/planted/*.patch)
fi
IFS=, read -r -a layer_list <<<"$layers"

# The scratch worktree: created once, reused for every patch (incremental builds stay
# cheap), always reset to this repository's HEAD.
head=$(git -C "$repo" rev-parse HEAD)
if [ ! -e "$scratch/.git" ]; then
  git -C "$repo" worktree add --detach "$scratch" "$head" >/dev/null || exit 2
fi
git -C "$scratch" checkout -q -f --detach "$head" && git -C "$scratch" clean -fdq || exit 2
# Its artifacts must not share names with any other checkout's builds in the shared
# target directory (cargo would rebuild each one's crates back and forth): the
# per-package codegen-units setting that names this repository's artifacts is moved by
# one (233 -> 234), for the release profile too (the chaos job).
mkdir -p "$scratch/.cargo"
if [ -f "$repo/.cargo/config.toml" ]; then
  sed 's/codegen-units = 233/codegen-units = 234/' "$repo/.cargo/config.toml" >"$scratch/.cargo/config.toml"
else
  : >"$scratch/.cargo/config.toml"
fi
for crate in kacrab-idempotence $(ls "$repo/crates"); do
  for profile in dev release; do
    grep -q "^\[profile.$profile.package.$crate\]" "$scratch/.cargo/config.toml" \
      || printf '[profile.%s.package.%s]\ncodegen-units = 234\n' "$profile" "$crate" >>"$scratch/.cargo/config.toml"
  done
done
# Outside the scratch worktree: its reset (git clean) would remove them.
logs="$scratch-logs"
mkdir -p "$logs"
results="$logs/planted-results.md"

cd "$scratch" || exit 2
core_targets=()
for t in tests/*.rs; do
  name=$(basename "$t" .rs)
  case "$name" in core_inputs|sim_properties) ;; *) core_targets+=(--test "$name") ;; esac
done

has_layer() { [[ ",$layers," == *",$1,"* ]]; }

if has_layer conformance; then
  KACRAB_CONFORMANCE_CP="$(bash conformance/java/build.sh)" || { echo "conformance/java/build.sh failed" >&2; exit 2; }
  export KACRAB_CONFORMANCE_CP
fi

# Every artifact a cargo build reported, one per line: target name, first kind,
# whether built as a test, its package's directory (cargo runs a test from there), and
# its executable ("null" for a library).
artifacts() {
  jq -r 'select(.reason == "compiler-artifact")
         | "\(.target.name)\t\(.target.kind[0])\t\(.profile.test)\t\(.manifest_path | sub("/Cargo.toml$"; ""))\t\(.executable)"'
}

# A binary or example is reported at its un-hashed copy (target/debug/NAME, or
# examples/NAME), which the next checkout to build it overwrites: it is replaced by the
# hashed file it was copied from (a hard link), checked by its dep-info to be built from
# this scratch tree.
in_deps() {
  local exe=$1 f
  case "$exe" in */deps/*) echo "$exe"; return 0 ;; esac
  for f in $(find "$(dirname "$exe")" "$(dirname "$exe")/deps" -maxdepth 1 -samefile "$exe" 2>/dev/null); do
    if [ "$f" != "$exe" ] && grep -qF "$scratch/" "$f.d" 2>/dev/null; then echo "$f"; return 0; fi
  done
  echo "no hashed copy of $exe built from $scratch" >&2
  return 1
}

# Builds every target the chosen layers run with one cargo invocation (one wait for the
# shared target directory's lock; the chaos example apart), and lists each layer's
# executables, with the directory to run each from, in $logs/$name.<layer>.exe. The
# conformance binary is built as a dependency of its package's integration test.
# Returns non-zero if the tree does not build.
build() {
  local name=$1 log=$logs/$1.build.log all=$logs/$1.artifacts
  : >"$log"
  local -a pkgs=() targets=()
  has_layer conformance && { pkgs+=(-p kacrab-conformance); targets+=(--test offline); }
  has_layer core && { pkgs+=(-p kacrab-idempotence); targets+=(--lib "${core_targets[@]}"); }
  has_layer props && { pkgs+=(-p kacrab-idempotence); targets+=(--test core_inputs --test sim_properties); }
  has_layer sim && { pkgs+=(-p kacrab-sim); targets+=(--test simulator --test sim_transactions); }
  cargo test --no-run "${pkgs[@]}" "${targets[@]}" --message-format=json 2>>"$log" | artifacts >"$all" \
    || return 1
  if has_layer chaos; then
    cargo build -p kacrab-idempotence --example chaos --message-format=json 2>>"$log" | artifacts >>"$all" \
      || return 1
  fi
  local tname kind test dir exe
  for layer in "${layer_list[@]}"; do : >"$logs/$name.$layer.exe"; done
  while IFS=$'\t' read -r tname kind test dir exe; do
    [ "$exe" != null ] || continue
    local layer=""
    if [ "$kind" = bin ] && [ "$tname" = kacrab-conformance ] && [ "$test" = false ]; then layer=conformance
    elif [ "$kind" = example ] && [ "$tname" = chaos ]; then layer=chaos
    elif [ "$dir" = "$scratch" ] && [ "$test" = true ]; then
      case "$tname" in core_inputs|sim_properties) layer=props ;; *) layer=core ;; esac
    elif [ "$dir" = "$scratch/crates/kacrab-sim" ] && [ "$test" = true ]; then layer=sim
    fi
    if [ -n "$layer" ] && has_layer "$layer"; then
      if [ "$layer" = chaos ]; then
        # An example's dep-info names its sources relative to the package, so in_deps
        # cannot tell whose build it is: copy what cargo reported, right after the build.
        cp "$exe" "$logs/$name.chaos.bin" || return 1
        exe=$logs/$name.chaos.bin
      else
        exe=$(in_deps "$exe") || return 1
      fi
      printf '%s\t%s\n' "$dir" "$exe" >>"$logs/$name.$layer.exe"
    fi
  done <"$all"
  for layer in "${layer_list[@]}"; do [ -s "$logs/$name.$layer.exe" ] || return 1; done
}

# Runs one layer's executables, each from its package's directory as cargo would;
# prints caught / clean / timeout.
run_layer() {
  local name=$1 layer=$2 log=$logs/$1.$2.log rc=0 dir exe
  : >"$log"
  while IFS=$'\t' read -r dir exe; do
    case "$layer" in
      conformance)
        # Both runs, even when the first fails: the detail column reports each.
        local mode_rc
        for mode in "" --txn; do
          mode_rc=0
          (cd "$dir" && timeout "$limit" "$exe" check --seed 1 --traces 1000 --mixed $mode --strict) >>"$log" 2>&1 || mode_rc=$?
          [ "$rc" != 0 ] || rc=$mode_rc
        done ;;
      chaos) (cd "$dir" && timeout "$limit" "$exe" --records "$chaos_records") >>"$log" 2>&1 || rc=$? ;;
      *) (cd "$dir" && timeout "$limit" "$exe" -q) >>"$log" 2>&1 || rc=$? ;;
    esac
    [ "$rc" = 0 ] || break
  done <"$logs/$name.$layer.exe"
  case "$rc" in
    0) echo clean ;;
    124) echo timeout ;;
    *) echo caught ;;
  esac
}

# What a conformance log says, in a few words: the unexplained count of each run (or
# the panic), and whether the count of every verdict class differs from the unpatched
# tree's (the baseline row's log): a bug the known-departure classes absorb still moves
# traces between classes.
conformance_detail() {
  local log=$1 base=$logs/baseline.conformance.log counts
  if grep -q "panicked" "$log"; then
    echo -n "core panicked: $(grep -m1 -o "panicked at [^:]*:[0-9]*" "$log" | sed 's/panicked at //'); "
  fi
  counts=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$log" | sed 's/.*passed, \([0-9]*\) failed/\1/' | paste -sd/ -)
  echo -n "unexplained (idempotent/txn): ${counts:-none}"
  if [ -f "$base" ] && [ "$log" != "$base" ]; then
    if diff -q <(grep -E "^  [A-Za-z]+: [0-9]+$" "$base") <(grep -E "^  [A-Za-z]+: [0-9]+$" "$log") >/dev/null; then
      echo "; verdict counts as unpatched"
    else
      echo "; verdict counts differ from unpatched"
    fi
  else
    echo
  fi
}

header="| patch | $(printf '%s | ' "${layer_list[@]}")"
rule="|---|$(printf -- '---|%.0s' "${layer_list[@]}")"
pad=""
if has_layer conformance; then header+="conformance detail |"; rule+="---|"; pad=" |"; fi
{ echo "Planted bugs at $head (KACRAB_SIM_CASES=$KACRAB_SIM_CASES, $(date -u +%Y-%m-%dT%H:%MZ))"; echo; echo "$header"; echo "$rule"; } >"$results"
echo "$header"; echo "$rule"

missed=0
broken=0
rows=()
[ "$baseline" = 1 ] && rows+=(baseline)
rows+=("${patches[@]}")
for patch in "${rows[@]}"; do
  name=$(basename "$patch" .patch)
  git checkout -q -- . && git clean -fdq
  if [ "$patch" != baseline ] && ! git apply "$patch" 2>"$logs/$name.apply.log"; then
    line="| $name | $(printf 'does not apply | %.0s' "${layer_list[@]}")$pad"
    broken=1
  elif ! build "$name"; then
    line="| $name | $(printf 'does not build | %.0s' "${layer_list[@]}")$pad" # see $name.build.log
    broken=1
  else
    cells=""
    detail=""
    for layer in "${layer_list[@]}"; do
      verdict=$(run_layer "$name" "$layer")
      cells+="$verdict | "
      if [ "$layer" = conformance ]; then
        detail=$(conformance_detail "$logs/$name.$layer.log")
        if [ "$patch" != baseline ] && [ "$verdict" != caught ]; then missed=1; fi
        if [ "$patch" = baseline ] && [ "$verdict" != clean ]; then broken=1; fi
      fi
    done
    line="| $name | $cells${detail:+$detail |}"
  fi
  echo "$line" | tee -a "$results"
done
git checkout -q -- . && git clean -fdq
echo
echo "logs: $logs; table: $results"
if [ "$missed" = 1 ]; then echo "the conformance run missed a planted bug" >&2; exit 1; fi
if [ "$broken" = 1 ]; then echo "a patch does not apply or build, or the baseline is not clean" >&2; exit 1; fi
