#!/usr/bin/env bash
# The semver check (issue 17, item 2): the public API of each published crate, as a
# sorted text listing made from rustdoc's JSON output, against the committed baseline
# in api/<crate>.txt. A removed or changed item fails (a breaking change must be a
# decision: update the baseline in the same change); additions are printed.
#
#   scripts/api_check.sh                 # check every published crate (CI)
#   scripts/api_check.sh --update        # the decision: baselines from the working tree
#   scripts/api_check.sh --from-tag TAG  # baselines from a git tag (a release)
#   KACRAB_API_LISTING=<path>            # the listing tool already built (CI: the test step's)
#
# rustdoc's JSON output is unstable (RUSTC_BOOTSTRAP=1 on a stable toolchain); the
# listing depends only on what it says, not on its format version, but a new toolchain
# may render a type differently: then regenerate the baselines from the last release's
# tag with --from-tag and compare again.
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(kacrab-idempotence kacrab-wire kacrab-compression kacrab-driver kacrab-tokio kacrab-blocking)
target="${CARGO_TARGET_DIR:-$PWD/target}"
mode=check; tag=
case "${1:-}" in
  "") ;;
  --update) mode=update ;;
  --from-tag) mode=update; tag="${2:?--from-tag needs a tag}" ;;
  *) echo "usage: $0 [--update | --from-tag TAG]" >&2; exit 2 ;;
esac

# The tool, from this tree (with --workspace the features resolve as the test step's
# build did), or the build KACRAB_API_LISTING names (CI: the test step's).
if [ -n "${KACRAB_API_LISTING:-}" ]; then
  tool=$KACRAB_API_LISTING
else
  cargo build -q --workspace --bin api_listing
  tool="$target/debug/api_listing"
fi

src=$PWD
if [ -n "$tag" ]; then
  src=$(mktemp -d)
  git worktree add -q --detach "$src" "$tag"
  trap 'git worktree remove --force "$src"' EXIT
fi

# rustdoc JSON of every published crate, from $src, in one cargo invocation (the six
# crates build in parallel; their features resolve together, as a user depending on
# kacrab-tokio gets kacrab-driver and kacrab-wire).
packages=(); for crate in "${crates[@]}"; do packages+=(-p "$crate"); done
# RUSTC_BOOTSTRAP=1 reaches rustdoc alone, through a wrapper, not cargo: a build script
# that watches it (proc-macro2's) would run again under it, and the next ordinary build
# would then rebuild every proc macro and all that uses one, nearly the whole graph
# (measured: 8 min of a cold-sized rebuild on a two-core machine).
mkdir -p "$target"; rustdoc_json="$target/rustdoc-json.sh"
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec %s "$@"\n' "$(rustup which rustdoc 2>/dev/null || command -v rustdoc)" > "$rustdoc_json"
chmod +x "$rustdoc_json"
(cd "$src" && CARGO_TARGET_DIR="$target" RUSTDOC="$rustdoc_json" \
  RUSTDOCFLAGS="-Z unstable-options --output-format json" \
  cargo doc -q --no-deps "${packages[@]}")
json() { echo "$target/doc/${1//-/_}.json"; }

mkdir -p api
failed=()
for crate in "${crates[@]}"; do
  doc=$(json "$crate")
  if [ "$mode" = update ]; then
    { echo "# The public API of $crate: scripts/api_check.sh --update writes this file."
      echo "# A line removed or changed here is a breaking change, decided in this commit."
      "$tool" list "$doc"; } > "api/$crate.txt"
    echo "api/$crate.txt: $(grep -vc '^#' "api/$crate.txt") items${tag:+ (from $tag)}"
  else
    echo "-- $crate against api/$crate.txt"
    if [ ! -f "api/$crate.txt" ]; then
      echo "no baseline: run scripts/api_check.sh --update and commit api/"; failed+=("$crate"); continue
    fi
    "$tool" check "api/$crate.txt" "$doc" || failed+=("$crate")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo
  echo "BREAKING change to the public API of: ${failed[*]}"
  echo "If it is the decision, run scripts/api_check.sh --update and commit api/ with the"
  echo "change (and say so in CHANGELOG.md); otherwise keep the item as it was."
  exit 1
fi
