#!/usr/bin/env bash
# The README as a new user meets it: its first command (the daemon on the shipped config), then
# its "Try it without a vehicle" section, each command taken from README.md itself and run as
# written. Checks what the README says comes out: one receipt per frame in the receive log, the
# quiet vehicle's telemetry_gap open and closed on /events, /healthz, `status`, and `analyze`
# finding the same gap. CI runs it first, under an empty CARGO_HOME, so the daemon's command
# also proves a cold build (nothing downloaded beforehand).
#
#   tests/cold_start.sh            (from the crate; ports 14550 and 9137 must be free)
set -euo pipefail
cd "$(dirname "$0")/.."

# A command of the README: the indented line that starts with $1.
readme_command() {
  local line
  line=$(grep -E "^    $1" README.md | head -n 1 | sed -E 's/^    //; s/ +#.*$//')
  [ -n "$line" ] || { echo "README.md has no command starting with: $1" >&2; exit 1; }
  echo "$line"
}
run_cmd=$(readme_command "cargo run --release -- run ")
simulate_cmd=$(readme_command "cargo run --release -- simulate ")
events_cmd=$(readme_command "curl -N ")
status_cmd=$(readme_command "cargo run --release -- status")
analyze_cmd=$(readme_command "cargo run --release -- analyze ")
echo "README: $run_cmd"

[ ! -e data ] || { echo "./data exists: this check needs a fresh clone's empty data dir" >&2; exit 1; }
work=$(mktemp -d)
daemon_log=$work/daemon.log
cleanup() {
  [ -n "${events_pid:-}" ] && kill "$events_pid" 2>/dev/null || true
  [ -n "${daemon_pid:-}" ] && kill "$daemon_pid" 2>/dev/null || true
  rm -rf data
}
trap cleanup EXIT

# The daemon, built from cold by its own command. Its pid is cargo's; the daemon is its child.
bash -c "$run_cmd" >"$daemon_log" 2>&1 &
daemon_pid=$!
started=$(date +%s)
until curl -sf --max-time 2 http://127.0.0.1:9137/healthz >/dev/null; do
  if ! kill -0 "$daemon_pid" 2>/dev/null; then
    echo "the README's run command stopped:"; tail -n 40 "$daemon_log"; exit 1
  fi
  if [ $(( $(date +%s) - started )) -gt 1500 ]; then
    echo "no /healthz after 25 minutes"; tail -n 40 "$daemon_log"; exit 1
  fi
  sleep 2 # polling a build and a start-up; nothing to wait on but the port
done
echo "daemon answering /healthz after $(( $(date +%s) - started )) s (build included)"
# Building the daemon says nothing about test kits (build.rs prints no warning of its own).
if grep -q "^warning: foxborne-receiver@" "$daemon_log"; then
  echo "the build printed warnings of its own:"; grep "^warning: foxborne-receiver@" "$daemon_log"; exit 1
fi

# The third terminal: /events as the README shows it, recorded while the vehicles fly.
$events_cmd >"$work/events.sse" 2>/dev/null &
events_pid=$!
echo "README: $simulate_cmd"
bash -c "$simulate_cmd" 2> >(tee "$work/simulate.err" >&2)
sent=$(sed -n 's/^simulate: sent \([0-9]*\) frames$/\1/p' "$work/simulate.err")
[ -n "$sent" ] || { echo "simulate did not say how many frames it sent"; exit 1; }
# The last gap closes when the quiet vehicle's next heartbeat arrives, before simulate ends.
curl -sf http://127.0.0.1:9137/healthz | grep -qx ok
bash -c "$status_cmd" | tee "$work/status.txt"
kill "$events_pid"; wait "$events_pid" 2>/dev/null || true; events_pid=

# The receive log may still be taking the last datagrams: wait until it holds all that was sent.
for _ in $(seq 1 50); do
  receipts=$(grep -c '"recv_utc"' data/receive/current.jsonl || true)
  [ "$receipts" -ge "$sent" ] && break
  sleep 0.1 # the writer's fsync interval; nothing to wait on but the file
done
[ "$receipts" -eq "$sent" ] || { echo "receive log: $receipts receipts of the $sent frames simulate sent"; exit 1; }
for sysid in 1 2 3; do
  grep -q "\"sysid\":$sysid,\"compid\":1,\"msgid\":0," data/receive/current.jsonl \
    || { echo "no HEARTBEAT receipt of sysid $sysid"; exit 1; }
done
echo "receive log: $receipts receipts, every frame simulate sent"
gap() { grep '^data: ' "$work/events.sse" | sed 's/^data: //' | grep '"kind":"telemetry_gap"' | grep "\"sysid\":2," | grep "\"state\":\"$1\"" || true; }
[ -n "$(gap open)" ] || { echo "no telemetry_gap open for sysid 2 on /events:"; cat "$work/events.sse"; exit 1; }
closed=$(gap closed)
[ -n "$closed" ] || { echo "no telemetry_gap closed for sysid 2 on /events:"; cat "$work/events.sse"; exit 1; }
echo "/events: $closed"
grep -q "Heartbeat due and not received. Nothing for" <<<"$closed"
grep -q "not necessarily radio failure" <<<"$closed"
grep -q "UDP\|udp14550" "$work/status.txt"

# analyze over the receive log finds the same gap (after the daemon has stopped, so the log is
# whole).
daemon=$(pgrep -f "target/release/foxborne-receiver run --config config/receiver.toml" | head -n 1)
kill -TERM "$daemon"
wait "$daemon_pid" || { echo "the daemon did not stop cleanly on SIGTERM:"; tail -n 20 "$daemon_log"; exit 1; }
daemon_pid=
bash -c "$analyze_cmd" >"$work/analyze.jsonl"
offline=$(grep '"kind":"telemetry_gap"' "$work/analyze.jsonl" | grep '"sysid":2,' | grep '"state":"closed"')
live_gap=$(sed -E 's/.*"gap_s":([0-9.]+).*/\1/' <<<"$closed")
offline_gap=$(sed -E 's/.*"gap_s":([0-9.]+).*/\1/' <<<"$offline")
[ "$live_gap" = "$offline_gap" ] || { echo "analyze says gap_s $offline_gap, the daemon said $live_gap"; exit 1; }
echo "analyze: the same gap, gap_s $offline_gap"
echo "cold start: README commands all ran as written"
