#!/usr/bin/env bash
# A short fuzzing run of every cargo-fuzz target (issue 6): installs cargo-fuzz if missing, builds
# the targets on the stable toolchain without a sanitizer (`-s none`), then runs each one for
# SECONDS, side by side, from seeds copied at run time out of the corpus into a temporary directory (deleted at
# exit, never committed). Prints one summary line per target; exits non-zero if any target
# crashed, hit a timeout or ran out of memory (the input is kept in fuzz/artifacts/TARGET/).
#
#   fuzz/run_short.sh SECONDS
#   fuzz/run_short.sh --build-only     (the targets built, as a run would build them; no run)
#
# Environment: FOXBORNE_CORPUS (default ../shared/corpus beside the crate), CARGO_TARGET_DIR
# (default fuzz/target), CARGO_LOCK (a file to flock(1) around cargo, for shared build hosts),
# FUZZ_FLAGS (more libFuzzer flags, after the script's own, e.g. `-jobs=2`).
set -euo pipefail

seconds=${1:?usage: fuzz/run_short.sh SECONDS|--build-only}
build_only=false
if [ "$seconds" = --build-only ]; then build_only=true; seconds=0; fi
case $seconds in '' | *[!0-9]*) echo "SECONDS must be a whole number" >&2; exit 2 ;; esac

crate=$(cd "$(dirname "$0")/.." && pwd)
cd "$crate"
corpus=${FOXBORNE_CORPUS:-$crate/../shared/corpus}
[ -d "$corpus/tlog" ] && [ -d "$corpus/ulog" ] || { echo "corpus not found at $corpus" >&2; exit 2; }
target_dir=${CARGO_TARGET_DIR:-$crate/fuzz/target}
host=$(rustc -vV | sed -n 's/^host: //p')

# Hold the build lock only while cargo runs, not while fuzzing.
lock() { if [ -n "${CARGO_LOCK:-}" ]; then exec 9>>"$CARGO_LOCK"; flock 9; fi; }
unlock() { if [ -n "${CARGO_LOCK:-}" ]; then flock -u 9; exec 9>&-; fi; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

started=$SECONDS
lock
locked_at=$SECONDS
if ! cargo fuzz --version >/dev/null 2>&1; then
  # Into FOXBORNE_TOOLS_HOME when CI gives one (its CARGO_HOME is a fresh, empty one per run).
  cargo install ${FOXBORNE_TOOLS_HOME:+--root "$FOXBORNE_TOOLS_HOME"} cargo-fuzz --locked --quiet
  echo "install cargo-fuzz: $((SECONDS - locked_at)) s"
fi
built_from=$SECONDS
cargo fuzz build -s none --fuzz-dir fuzz >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
unlock
echo "build: $((SECONDS - built_from)) s ($(cargo fuzz --version), $(rustc --version))"
if $build_only; then exit 0; fi

# target, max input length, seed files
targets=(
  "scanner 4096 $corpus/tlog/*.raw $corpus/tlog/*.tlog"
  "tlog 16384 $corpus/tlog/*.tlog"
  "ulog 65536 $corpus/ulog/*.ulg"
)

# One target's run: its summary line in $work/NAME.result; non-zero when it found something.
fuzz_one() {
  local name=$1 max_len=$2 seeds=$3 rc=0 ran_from=$SECONDS
  mkdir -p "$work/$name" "fuzz/artifacts/$name"
  # shellcheck disable=SC2086 # the seed globs expand here
  cp $seeds "$work/$name/"
  "$target_dir/$host/release/$name" "$work/$name" \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$name/" ${FUZZ_FLAGS:-} \
    >"$work/$name.log" 2>&1 || rc=$?
  local runs rss inputs result
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/$name.log" | tail -n 1)
  inputs=$(find "$work/$name" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    local artifact
    artifact=$(grep -o "fuzz/artifacts/$name/[^ ]*" "$work/$name.log" | tail -n 1 || true)
    result="FAILED (exit $rc) ${artifact:-no artifact}"
  fi
  echo "fuzz $name: ${runs:-?} runs in $((SECONDS - ran_from)) s, $inputs corpus inputs, peak RSS ${rss:-?} MB: $result" >"$work/$name.result"
  return "$rc"
}

# The targets run side by side: each for SECONDS of wall time, sharing the cores.
pids=()
for spec in "${targets[@]}"; do
  read -r name max_len seeds <<<"$spec"
  fuzz_one "$name" "$max_len" "$seeds" &
  pids+=("$name:$!")
done
failed=0
for entry in "${pids[@]}"; do
  name=${entry%%:*}
  if ! wait "${entry#*:}"; then
    failed=1
    tail -n 40 "$work/$name.log" >&2
  fi
  cat "$work/$name.result"
done
echo "total: $((SECONDS - started)) s"
exit "$failed"
