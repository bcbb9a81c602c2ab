#!/usr/bin/env bash
# Interop with a real peer: pymavlink (../shared/tools/mavlink_peer/send_mix.py) sends v1, v2,
# signed, bad-signature, bad-CRC, junk, unknown-id and truncated frames over UDP to the release
# daemon; check_send_mix.py holds the receive log against pymavlink's own parse of every datagram.
# Run twice: without signing keys, and with the peer's key (bad signature must then be rejected).
# usage: tests/interop/run_interop.sh PYTHON   (a python with pymavlink)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${1:?python with pymavlink}
case $py in /*) ;; *) py=$(pwd)/$py ;; esac
tools=${FOXBORNE_TOOLS:-$root/../shared/tools}
bin=$root/target/release/foxborne-receiver
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

run_case() {
  local name=$1 extra=$2 port=$3
  local dir=$work/$name
  mkdir -p "$dir"
  printf 'data_dir = "%s/data"\nfsync_interval_s = 0.1\ntlog = true\n[http]\nlisten = "127.0.0.1:0"\n[[link]]\nname = "interop"\nudp = "127.0.0.1:%s"\n%b' \
    "$dir" "$port" "$extra" > "$dir/receiver.toml"
  "$bin" run --config "$dir/receiver.toml" 2> "$dir/daemon.log" &
  local pid=$!
  for _ in $(seq 1 100); do grep -q "receiver started" "$dir/daemon.log" && break; sleep 0.1; done
  grep -q "receiver started" "$dir/daemon.log" || { cat "$dir/daemon.log"; exit 1; }
  (cd "$dir" && "$py" "$tools/mavlink_peer/send_mix.py" --port "$port" --stream 2)
  local http
  http=$(grep "http listening" "$dir/daemon.log" | sed 's/.*local=\([^ ]*\).*/\1/')
  "$py" "$here/check_metrics.py" fetch "$http" "$dir/metrics.txt"
  "$root/target/release/foxborne-receiver" status --addr "$http" | tee "$dir/status.txt"
  grep -q "interop" "$dir/status.txt"
  kill -TERM "$pid"
  wait "$pid"
  "$py" "$here/check_metrics.py" check "$dir/metrics.txt" "$dir"/data/receive/*/*.jsonl
  local args=()
  [ -n "$extra" ] && args=(--signing-key "$key")
  for t in "$dir"/data/tlog/*/*.tlog; do [ -f "$t" ] && args+=(--tlog "$t"); done
  "$py" "$here/check_send_mix.py" "$dir/send_mix_manifest.jsonl" "$dir"/data/receive/*/*.jsonl "${args[@]}"
}

run_case nokey "" 14651
run_case withkey "[signing]\nkeys = [\"$key\"]\nreject_bad = true\n" 14652
echo "interop: ok"
