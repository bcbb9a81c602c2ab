#!/usr/bin/env bash
# Side by side with the reference tools (issue 6): in one run, on every corpus file, times
#   .tlog to JSON:  pymavlink 2.4.50 `mavlogdump.py --format json FILE`
#                   vs `foxborne-receiver tlog convert FILE --out /dev/null`, with the default
#                   `fields` (3 messages decoded) and with `--fields all` (every payload
#                   decoded, as mavlogdump does), and our receipts per second;
#   ULog parse:     pyulog 1.3.0 `python -c 'from pyulog import ULog; ULog(FILE)'`
#                   vs `foxborne-receiver ulog ingest FILE --out TMPDIR`.
# Each command is a whole process (interpreter or binary start-up included), run RUNS times
# (default 3) alternating with its counterpart; the best time counts. Ratio = reference / ours.
# A first row per table times start-up alone (the reference imports, `foxborne-receiver --version`).
# Prints markdown tables with totals. The reference tools go in a venv in .venv-compare/.
#
#   benches/compare.sh [RUNS]
#   COMPARE=tlog benches/compare.sh [RUNS]     # the .tlog table only (COMPARE=ulog: ULog only)
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
per_s() { awk -v n="$1" -v us="$2" 'BEGIN { if (us > 0) printf "%.2f M", n / us; else print "-" }'; }
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.2f", b / 1048576 }'; }

echo "# benches/compare.sh $runs on $(nproc) cores ($(uname -m), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $versions, $("$bin" --version 2>/dev/null || echo foxborne-receiver), best of $runs, ratio = reference time / ours"
only=${COMPARE:-all}
if [ "$only" != ulog ]; then
echo
echo "## .tlog to JSON"
echo
echo "| file | MiB | receipts | mavlogdump.py --format json | ours, default fields | ratio | ours, --fields all | ratio | receipts/s, --fields all |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
ref=("$py" -c 'from pymavlink import mavutil; from pymavlink.dialects.v20 import ardupilotmega')
ours=("$bin" --version)
measure ref ours
echo "| start-up only (not in the total) | | | $(ms "${best[ref]}") | $(ms "${best[ours]}") | | | | |"
tot_ref=0 tot_ours=0 tot_all=0 tot_n=0
for f in "$corpus"/tlog/*.tlog; do
  n=$("$bin" tlog convert "$f" 2>/dev/null | wc -l)
  ref=("$venv/bin/mavlogdump.py" --format json "$f")
  ours=("$bin" tlog convert "$f" --out /dev/null)
  all=("$bin" tlog convert "$f" --out /dev/null --fields all)
  measure ref ours all
  tot_ref=$((tot_ref + best[ref])) tot_ours=$((tot_ours + best[ours])) tot_all=$((tot_all + best[all])) tot_n=$((tot_n + n))
  echo "| $(basename "$f") | $(mib "$f") | $n | $(ms "${best[ref]}") | $(ms "${best[ours]}") | $(ratio "${best[ref]}" "${best[ours]}") | $(ms "${best[all]}") | $(ratio "${best[ref]}" "${best[all]}") | $(per_s "$n" "${best[all]}") |"
done
echo "| **total** | | $tot_n | $(ms $tot_ref) | $(ms $tot_ours) | $(ratio $tot_ref $tot_ours) | $(ms $tot_all) | $(ratio $tot_ref $tot_all) | $(per_s $tot_n $tot_all) |"
# Ours with every file in one process (one start-up, as a batch conversion runs); mavlogdump.py
# takes one file per process, so its side is the total above.
all=("$bin" tlog convert "$corpus"/tlog/*.tlog --out /dev/null --fields all)
measure all
echo "| **all files, ours in one process** | | $tot_n | $(ms $tot_ref) | | | $(ms "${best[all]}") | $(ratio $tot_ref "${best[all]}") | $(per_s $tot_n "${best[all]}") |"
fi
[ "$only" = tlog ] && exit 0

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
