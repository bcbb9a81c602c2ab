#!/usr/bin/env bash
# Side by side with the reference tools (issue 6): in one run, on every corpus file, times
#   .tlog to JSON:  pymavlink 2.4.50 `mavlogdump.py --format json FILE`
#                   vs `foxborne-receiver tlog convert FILE --out /dev/null`, with the default
#                   `fields` (3 messages decoded) and with `--fields` naming every message the
#                   file holds (every payload decoded, as mavlogdump does);
#   ULog parse:     pyulog 1.3.0 `python -c 'from pyulog import ULog; ULog(FILE)'`
#                   vs `foxborne-receiver ulog ingest FILE --out TMPDIR`.
# Each command is a whole process (interpreter or binary start-up included), run RUNS times
# (default 3) alternating with its counterpart; the best time counts. Ratio = reference / ours.
# A first row per table times start-up alone (the reference imports, `foxborne-receiver --version`).
# Prints markdown tables with totals. The reference tools go in a venv in .venv-compare/.
#
#   benches/compare.sh [RUNS]
#
# Environment: FOXBORNE_CORPUS (default ../shared/corpus beside the crate), CARGO_TARGET_DIR,
# CARGO_LOCK (a file to flock(1) around cargo, for shared build hosts), PYTHON (default python3).
set -euo pipefail

runs=${1:-3}
case $runs in '' | *[!0-9]* | 0) echo "RUNS must be a positive whole number" >&2; exit 2 ;; esac
crate=$(cd "$(dirname "$0")/.." && pwd)
cd "$crate"
corpus=${FOXBORNE_CORPUS:-$crate/../shared/corpus}
[ -d "$corpus/tlog" ] && [ -d "$corpus/ulog" ] || { echo "corpus not found at $corpus" >&2; exit 2; }
venv=$crate/.venv-compare
bin=${CARGO_TARGET_DIR:-$crate/target}/release/foxborne-receiver

if [ ! -x "$venv/bin/mavlogdump.py" ] || ! "$venv/bin/python" -c 'import pyulog' 2>/dev/null; then
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check pymavlink==2.4.50 pyulog==1.3.0
fi
py=$venv/bin/python
versions=$("$py" -c 'import importlib.metadata as m; print("pymavlink", m.version("pymavlink"), "/ pyulog", m.version("pyulog"))')

if [ -n "${CARGO_LOCK:-}" ]; then exec 9>>"$CARGO_LOCK"; flock 9; fi
cargo build --release --quiet --bin foxborne-receiver
if [ -n "${CARGO_LOCK:-}" ]; then flock -u 9; exec 9>&-; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Microseconds one run of the command takes; its output is discarded. An exit status other than
# 0 or those in $verdicts (ulog ingest: 3 quarantined, 4 rejected) stops everything.
verdicts=""
time_once() {
  local t0 t1 rc=0
  t0=$(date +%s%N)
  "$@" >/dev/null 2>"$tmp/stderr" || rc=$?
  t1=$(date +%s%N)
  if [ "$rc" -ne 0 ] && [[ " $verdicts " != *" $rc "* ]]; then
    echo "failed (exit $rc): $*" >&2
    cat "$tmp/stderr" >&2
    exit 1
  fi
  echo $(((t1 - t0) / 1000))
}

# measure NAME...: runs each named command array RUNS times, in turn, keeping the lowest µs in
# best[NAME].
declare -A best
measure() {
  local names=("$@") name ms i
  for name in "${names[@]}"; do best[$name]=; done
  for ((i = 0; i < runs; i++)); do
    for name in "${names[@]}"; do
      unset -n cmd
      local -n cmd=$name
      ms=$(time_once "${cmd[@]}")
      if [ -z "${best[$name]}" ] || [ "$ms" -lt "${best[$name]}" ]; then best[$name]=$ms; fi
    done
  done
}

ms() { awk -v us="$1" 'BEGIN { printf "%.1f ms", us / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'; }
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.2f", b / 1048576 }'; }

echo "# benches/compare.sh $runs on $(nproc) cores ($(uname -m), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $versions, $("$bin" --version 2>/dev/null || echo foxborne-receiver), best of $runs, ratio = reference time / ours"
echo
echo "## .tlog to JSON"
echo
echo "| file | MiB | mavlogdump.py --format json | ours, default fields | ratio | ours, --fields all present | ratio |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
ref=("$py" -c 'from pymavlink import mavutil; from pymavlink.dialects.v20 import ardupilotmega')
ours=("$bin" --version)
measure ref ours
echo "| start-up only (not in the total) | | $(ms "${best[ref]}") | $(ms "${best[ours]}") | | | |"
tot_ref=0 tot_ours=0 tot_all=0
for f in "$corpus"/tlog/*.tlog; do
  # Every message name the file holds, for the like-for-like row.
  "$bin" tlog convert "$f" --out "$tmp/names.jsonl" 2>/dev/null
  names=$("$py" -c 'import json,sys; print(",".join(sorted({json.loads(l)["msg"] for l in open(sys.argv[1])})))' "$tmp/names.jsonl")
  ref=("$venv/bin/mavlogdump.py" --format json "$f")
  ours=("$bin" tlog convert "$f" --out /dev/null)
  all=("$bin" tlog convert "$f" --out /dev/null --fields "$names")
  measure ref ours all
  tot_ref=$((tot_ref + best[ref])) tot_ours=$((tot_ours + best[ours])) tot_all=$((tot_all + best[all]))
  echo "| $(basename "$f") | $(mib "$f") | $(ms "${best[ref]}") | $(ms "${best[ours]}") | $(ratio "${best[ref]}" "${best[ours]}") | $(ms "${best[all]}") | $(ratio "${best[ref]}" "${best[all]}") |"
done
echo "| **total** | | $(ms $tot_ref) | $(ms $tot_ours) | $(ratio $tot_ref $tot_ours) | $(ms $tot_all) | $(ratio $tot_ref $tot_all) |"

echo
echo "## ULog parse"
echo
verdicts="3 4"
echo "| file | MiB | pyulog ULog(FILE) | ours, ulog ingest | ratio |"
echo "| --- | ---: | ---: | ---: | ---: |"
ref=("$py" -c 'from pyulog import ULog')
ours=("$bin" --version)
measure ref ours
echo "| start-up only (not in the total) | | $(ms "${best[ref]}") | $(ms "${best[ours]}") | |"
tot_ref=0 tot_ours=0
for f in "$corpus"/ulog/*.ulg; do
  ref=("$py" -c 'import sys; from pyulog import ULog; ULog(sys.argv[1])' "$f")
  ours=("$bin" ulog ingest "$f" --out "$tmp/reports")
  measure ref ours
  tot_ref=$((tot_ref + best[ref])) tot_ours=$((tot_ours + best[ours]))
  echo "| $(basename "$f") | $(mib "$f") | $(ms "${best[ref]}") | $(ms "${best[ours]}") | $(ratio "${best[ref]}" "${best[ours]}") |"
done
echo "| **total** | | $(ms $tot_ref) | $(ms $tot_ours) | $(ratio $tot_ref $tot_ours) |"
