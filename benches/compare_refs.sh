#!/usr/bin/env bash
# Side by side with the C and C++ references (issue 44), one command:
#   live:  CPU per frame of our release daemon (`run`, one UDP link, the JSONL receive log; and
#          again with `tlog = true`) beside mavlink-routerd (C++, forwarding the same UDP traffic
#          to one UDP endpoint), at each rate and fleet size, frames lost, peak memory
#          (benches/compare_refs.rs `live`: the numbers and how they are taken);
#   ulog:  parse of each corpus log, a 38 MB and a 400 MB log made by repeating a real one
#          (benches/ulog_common `derive_log`): ours (`ulog ingest`, a whole process) vs ulog_cpp
#          (PX4's C++ reader, a whole process of our driver benches/refs/ulog_cpp_parse.cpp) per
#          MB; our Parquet export (`ulog export --format parquet`, a whole process) vs pyulog's
#          parse (`ULog(FILE)` timed inside Python, interpreter start-up and imports not counted).
# Every row is measured in one go, the tools in turn, RUNS times (default 5): median and spread
# (min to max). The references are built from source under $CARGO_TARGET_DIR/refs (meson for
# mavlink-router, cmake for ulog_cpp and our driver).
#
#   benches/compare_refs.sh [live|ulog|all] [RUNS]
#
# Environment:
#   MAVLINK_ROUTER_SRC  mavlink-router: a source tree or a (bare) git dir
#                       (default /work/.mirror/mavlink-router+mavlink-router/repo)
#   MAVLINK_C_LIBRARY_SRC  its submodule c_library_v2, likewise, unless the tree has it
#                       (default /work/.mirror/mavlink+c_library_v2/repo)
#   ULOG_CPP_SRC        PX4/ulog_cpp, likewise (default /work/.mirror/PX4+ulog_cpp/repo)
#   FOXBORNE_CORPUS     the corpus (default ../shared/corpus beside the crate)
#   FOXBORNE_PYTHON     a Python with pyulog (default .venv/bin/python, else python3)
#   CARGO_LOCK          a file to flock(1) around every build and every measured table
#   FOXBORNE_REFS_RATES, FOXBORNE_REFS_VEHICLES, FOXBORNE_REFS_SECONDS: see compare_refs.rs
#   FOXBORNE_REFS_BIG   the derived logs' sizes in bytes (default "38000000 400000000")
set -euo pipefail

what=${1:-all}
runs=${2:-5}
case $what in live | ulog | all) ;; *) echo "usage: $0 [live|ulog|all] [RUNS]" >&2; exit 2 ;; esac
case $runs in '' | *[!0-9]* | 0) echo "RUNS must be a positive whole number" >&2; exit 2 ;; esac
crate=$(cd "$(dirname "$0")/.." && pwd)
cd "$crate"
target=${CARGO_TARGET_DIR:-$crate/target}
refs=$target/refs
corpus=${FOXBORNE_CORPUS:-$crate/../shared/corpus}
router_src=${MAVLINK_ROUTER_SRC:-/work/.mirror/mavlink-router+mavlink-router/repo}
mavlink_src=${MAVLINK_C_LIBRARY_SRC:-/work/.mirror/mavlink+c_library_v2/repo}
ulog_cpp_src=${ULOG_CPP_SRC:-/work/.mirror/PX4+ulog_cpp/repo}
py=${FOXBORNE_PYTHON:-}
if [ -z "$py" ]; then if [ -x "$crate/.venv/bin/python" ]; then py=$crate/.venv/bin/python; else py=python3; fi; fi

locked() { if [ -n "${CARGO_LOCK:-}" ]; then flock "$CARGO_LOCK" "$@"; else "$@"; fi; }
missing() { echo "compare_refs: $1 not found at $2 (set $3)" >&2; exit 2; }

# extract NAME SRC DEST [COMMIT]: DEST gets the tree of SRC, a source tree (copied) or a git
# dir (its HEAD, or COMMIT, archived).
extract() {
  local name=$1 src=$2 dest=$3 commit=${4:-HEAD}
  rm -rf "$dest"
  mkdir -p "$dest"
  if git --git-dir="$src" rev-parse --verify -q "$commit^{commit}" >/dev/null 2>&1; then
    git --git-dir="$src" archive "$commit" | tar -x -C "$dest"
  elif [ -d "$src" ] && [ "$commit" = HEAD ]; then
    cp -a "$src/." "$dest/"
  else
    echo "compare_refs: $name: no commit $commit in $src" >&2
    exit 2
  fi
}

[ -d "$corpus/ulog" ] || missing "the corpus" "$corpus" FOXBORNE_CORPUS
command -v jq >/dev/null || { echo "compare_refs: needs jq" >&2; exit 2; }
mkdir -p "$refs"

router=$refs/build-router/src/mavlink-routerd
if [ "$what" != ulog ] && [ ! -x "$router" ]; then
  [ -e "$router_src" ] || missing "mavlink-router's sources" "$router_src" MAVLINK_ROUTER_SRC
  command -v meson >/dev/null && command -v ninja >/dev/null || { echo "compare_refs: needs meson and ninja (apt-get install meson ninja-build)" >&2; exit 2; }
  extract mavlink-router "$router_src" "$refs/src/mavlink-router"
  sub=$refs/src/mavlink-router/modules/mavlink_c_library_v2
  if [ ! -e "$sub/common/mavlink.h" ]; then
    [ -e "$mavlink_src" ] || missing "mavlink-router's submodule c_library_v2" "$mavlink_src" MAVLINK_C_LIBRARY_SRC
    pin=HEAD
    if git --git-dir="$router_src" rev-parse -q --verify HEAD >/dev/null 2>&1; then
      pin=$(git --git-dir="$router_src" ls-tree HEAD modules/mavlink_c_library_v2 | awk '{print $3}')
    fi
    extract c_library_v2 "$mavlink_src" "$sub" "$pin"
  fi
  rm -rf "$refs/build-router"
  locked sh -c "meson setup --buildtype=release -Dsystemdsystemunitdir=/tmp '$refs/build-router' '$refs/src/mavlink-router' >'$refs/router-build.log' 2>&1 && ninja -C '$refs/build-router' src/mavlink-routerd >>'$refs/router-build.log' 2>&1" ||
    { echo "compare_refs: mavlink-router did not build; see $refs/router-build.log" >&2; exit 1; }
fi

ulog_cpp=$refs/build-ulog/ulog_cpp_parse
if [ "$what" != live ] && { [ ! -x "$ulog_cpp" ] || [ "$crate/benches/refs/ulog_cpp_parse.cpp" -nt "$ulog_cpp" ]; }; then
  [ -e "$ulog_cpp_src" ] || missing "ulog_cpp's sources" "$ulog_cpp_src" ULOG_CPP_SRC
  command -v cmake >/dev/null || { echo "compare_refs: needs cmake" >&2; exit 2; }
  [ -e "$refs/src/ulog_cpp/ulog_cpp/reader.cpp" ] || extract ulog_cpp "$ulog_cpp_src" "$refs/src/ulog_cpp"
  locked sh -c "cmake -S '$crate/benches/refs' -B '$refs/build-ulog' -DULOG_CPP_SOURCE='$refs/src/ulog_cpp' -DCMAKE_BUILD_TYPE=Release >'$refs/ulog-build.log' 2>&1 && cmake --build '$refs/build-ulog' -j2 >>'$refs/ulog-build.log' 2>&1" ||
    { echo "compare_refs: ulog_cpp did not build; see $refs/ulog-build.log" >&2; exit 1; }
fi

# Our release binary and the bench driver (cargo's bench profile is the release one).
bench=$(locked cargo bench --quiet --bench compare_refs --no-run --message-format=json |
  jq -r 'select(.reason == "compiler-artifact" and .target.name == "compare_refs" and .executable != null) | .executable' | tail -n 1)
bin=$target/release/foxborne-receiver
[ -x "$bench" ] && [ -x "$bin" ] || { echo "compare_refs: the cargo build did not give $bin and the bench" >&2; exit 1; }

# On tmpfs when there is one: written to disk, what the exports cost in system time depends on
# how much the machine has left to write back (BENCHMARKS.md, "The CI check").
tmp=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# benches/compare_refs.sh $what $runs: $(git -C "$crate" rev-parse --short HEAD)$(git -C "$crate" diff --quiet HEAD -- src benches || echo '+changes'), $(date -u +%Y-%m-%d), $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), load at start $(cut -d' ' -f1-3 /proc/loadavg)"
router_rev=$(git --git-dir="$router_src" rev-parse --short HEAD 2>/dev/null || echo "tree")
ulog_cpp_rev=$(git --git-dir="$ulog_cpp_src" rev-parse --short HEAD 2>/dev/null || echo "tree")
echo "# mavlink-router $router_rev (meson, release), ulog_cpp $ulog_cpp_rev (cmake, Release), $("$py" -c 'import importlib.metadata as m; print("pyulog", m.version("pyulog"))' 2>/dev/null || echo 'pyulog missing')"

if [ "$what" != ulog ]; then
  echo
  echo "## Live: CPU per frame, ours vs mavlink-routerd"
  echo
  FOXBORNE_REFS_RUNS=$runs locked "$bench" live "$router"
fi
[ "$what" = live ] && exit 0

"$py" -c 'import pyulog' 2>/dev/null || { echo "compare_refs: $py has no pyulog (set FOXBORNE_PYTHON)" >&2; exit 2; }

# wall_us CMD...: microseconds the whole process took (verdict exits 3 and 4 of `ulog ingest`
# count as done); "-" when it failed.
wall_us() {
  local t0 t1 rc=0
  t0=$(date +%s%N)
  "$@" >/dev/null 2>"$tmp/stderr" || rc=$?
  t1=$(date +%s%N)
  case $rc in 0 | 3 | 4) echo $(((t1 - t0) / 1000)) ;; *) echo - ;; esac
}
pyulog_us() {
  "$py" -c 'import sys, time
from pyulog import ULog
t = time.perf_counter(); ULog(sys.argv[1]); print(int((time.perf_counter() - t) * 1e6))' "$1" 2>/dev/null || echo -
}
# stats US...: "median min max" in µs ("- - -" when any run failed).
stats() {
  case " $* " in *" - "*) echo "- - -"; return ;; esac
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}
cell() { # median min max -> "12.3 (11.9 to 13.0)" ms
  [ "$1" = - ] && { echo failed; return; }
  awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f (%.1f to %.1f)", m / 1000, a / 1000, b / 1000 }'
}
mbps() { [ "$2" = - ] && { echo -; return; }; awk -v b="$1" -v us="$2" 'BEGIN { printf "%.0f", b / us }'; }
ratio() { { [ "$1" = - ] || [ "$2" = - ]; } && { echo -; return; }; awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

logs=("$corpus"/ulog/*.ulg)
source_log=$corpus/ulog/flightreview_ekf_failure.ulg
for size in ${FOXBORNE_REFS_BIG:-38000000 400000000}; do
  out=$tmp/derived-$((size / 1000000))MB.ulg
  made=$(locked "$bench" derive "$source_log" "$out" "$size")
  echo "# $(basename "$out"): $made, from $(basename "$source_log")"
  logs+=("$out")
done

echo
echo "## ULog: parse per MB, ours vs ulog_cpp; Parquet export vs pyulog's parse"
echo
echo "Milliseconds, median of $runs runs (min to max), the four in turn within each run. MB/s = file size / median."
echo "ours = \`ulog ingest FILE\` (whole process); ulog_cpp = its Reader into a full-log DataContainer (whole process, benches/refs/ulog_cpp_parse.cpp);"
echo "export = \`ulog export FILE --format parquet\` (whole process); pyulog = \`ULog(FILE)\` timed inside Python."
echo
echo "| log | MB | ours, ingest | ulog_cpp | MB/s ours / ulog_cpp | ulog_cpp / ours | ours, export to Parquet | pyulog parse | pyulog / export |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
measure_ulog() {
  local f=$1 i
  local -a ing=() cpp=() exp=() pyu=()
  for ((i = 0; i < runs; i++)); do
    rm -rf "$tmp/out"
    ing+=("$(wall_us "$bin" ulog ingest "$f" --out "$tmp/out/ingest")")
    cpp+=("$(wall_us "$ulog_cpp" "$f")")
    exp+=("$(wall_us "$bin" ulog export "$f" --format parquet --out "$tmp/out/export")")
    pyu+=("$(pyulog_us "$f")")
  done
  local bytes s_ing s_cpp s_exp s_pyu
  bytes=$(stat -c %s "$f")
  read -r -a s_ing <<<"$(stats "${ing[@]}")"
  read -r -a s_cpp <<<"$(stats "${cpp[@]}")"
  read -r -a s_exp <<<"$(stats "${exp[@]}")"
  read -r -a s_pyu <<<"$(stats "${pyu[@]}")"
  echo "| $(basename "$f") | $(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }') | $(cell "${s_ing[@]}") | $(cell "${s_cpp[@]}") | $(mbps "$bytes" "${s_ing[0]}") / $(mbps "$bytes" "${s_cpp[0]}") | $(ratio "${s_cpp[0]}" "${s_ing[0]}") | $(cell "${s_exp[@]}") | $(cell "${s_pyu[@]}") | $(ratio "${s_pyu[0]}" "${s_exp[0]}") |"
}
measure_all() { for f in "${logs[@]}"; do measure_ulog "$f"; done; }
if [ -n "${CARGO_LOCK:-}" ]; then
  exec 9>>"$CARGO_LOCK"
  flock 9
fi
measure_all
