#!/usr/bin/env bash
# How many live `latency` reports show a negative latency, for one or more daemon binaries side
# by side on the same traffic: tests/latency_sender.py (pymavlink, SYSTEM_TIME stamped right
# before it is sent, five vehicles at 2 Hz, junk datagrams on a second link) for DURATION_S
# seconds, reports every 2 s. Prints, per binary: reports, reports with p50_ms < 0 and no
# clock_offset_ms, reports below the resolution, clock offsets.
#
#   benches/latency_sign.sh PYTHON BINARY [BINARY ...]      (DURATION_S=30 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
python=$1; shift
duration=${DURATION_S:-30}
for binary in "$@"; do
  work=$(mktemp -d)
  cat > "$work/receiver.toml" <<EOF
data_dir = "$work/data"
fsync_interval_s = 0.05
[[link]]
name = "radio1"
udp = "127.0.0.1:24550"
[[link]]
name = "junk"
udp = "127.0.0.1:24551"
[gap]
threshold_s = 3.0
[latency]
report_interval_s = 2.0
[http]
listen = "127.0.0.1:0"
EOF
  "$binary" run --config "$work/receiver.toml" 2>"$work/daemon.log" &
  daemon=$!
  # A sender that fails must not leave the daemon holding the ports for the next binary.
  trap 'kill $daemon 2>/dev/null || true' EXIT
  until grep -q "receiver started" "$work/daemon.log"; do
    kill -0 $daemon || { cat "$work/daemon.log"; exit 1; }
    sleep 0.1 # the daemon's start-up line is in a file; nothing else to wait on
  done
  "$python" tests/latency_sender.py --port 24550 --junk-port 24551 --vehicles 5 --rate-hz 2 \
    --duration-s "$duration" >/dev/null
  kill -TERM $daemon; wait $daemon || true
  "$python" - "$binary" "$work/data/events/current.jsonl" <<'EOF'
import json, sys
reports = [e for e in map(json.loads, open(sys.argv[2])) if e.get("kind") == "latency"]
negative = [e for e in reports if (e.get("p50_ms") or 0) < 0 and e.get("clock_offset_ms") is None]
below = [e for e in reports if e.get("below_resolution")]
offset = [e for e in reports if e.get("clock_offset_ms") is not None]
print(f"{sys.argv[1]}: {len(reports)} reports, {len(negative)} negative p50_ms without clock_offset_ms, "
      f"{len(below)} with a figure below the resolution, {len(offset)} clock offsets")
EOF
  rm -rf "$work"
done
