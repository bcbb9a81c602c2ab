#!/usr/bin/env bash
# The service under a real systemd (issue 14): a bare Debian 12 (mmdebstrap minbase + systemd,
# cached), booted with systemd-nspawn (systemd 252; it shares the host's network, so UDP from
# the host reaches the service), the .deb installed with apt, then the checks below, each timed.
# Both units: the receiver (foxborne-receiver.service) and the range view (foxborne-range.service),
# the latter against the container's own nats-server (Debian's package and unit, JetStream on),
# which the receiver publishes to.
#
#   tests/system/run.sh PYTHON DEB        (as root; PYTHON has pymavlink; DEB from `cargo deb`)
#   tests/system/run.sh --rootfs-only     (only the cached root file system, made if missing:
#                                          CI builds it while it compiles)
#
# Never boots a systemd on this machine's own root (its tmpfiles would empty the host's /tmp):
# only the container's root, a fresh copy of the cached tarball each run. Afterwards the
# container is powered off, its root removed, and the `payload`/`supervisor` cgroup folders
# nspawn leaves are removed.
set -euo pipefail
cd "$(dirname "$0")/../.."
rootfs_only=false
if [ "${1:-}" = --rootfs-only ]; then rootfs_only=true; PY=; DEB=; else
  PY=${1:?python with pymavlink}
  DEB=$(realpath "${2:?the .deb to test}")
fi
# The previous release's .deb for the upgrade check (.ci/run builds the last landing's); without
# it, this package relabelled 0.0.0-1 stands in (the upgrade path of the packaging only).
PREV_DEB=${3:+$(realpath "$3")}
here=$(pwd)
send="$PY $here/tests/system/send.py"
target=${CARGO_TARGET_DIR:-$here/target}
cache=$target/system-test
mkdir -p "$cache"
started=$(date +%s.%N)
elapsed() { printf '%.1f' "$(echo "$(date +%s.%N) - $1" | bc)"; }

# --- the root file system, cached by what it includes -----------------------------------------
include=systemd,systemd-sysv,dbus,socat,nats-server
tarball=$cache/bookworm-minbase-${include//,/-}.tar
if [ ! -s "$tarball" ]; then
  t=$(date +%s.%N)
  mmdebstrap --quiet --format=tar --variant=minbase --include="$include" bookworm "$tarball.part"
  mv "$tarball.part" "$tarball"
  echo "rootfs built in $(elapsed "$t") s: $tarball"
fi
if $rootfs_only; then exit 0; fi
root=$cache/root
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
echo "rootfs ready ($(elapsed "$started") s)"

# --- the previous release, for the upgrade check ------------------------------------------------
mkdir -p "$root/root/pkg"
cp "$DEB" "$root/root/pkg/new.deb"
if [ -n "$PREV_DEB" ]; then
  cp "$PREV_DEB" "$root/root/pkg/prev.deb"
  echo "previous release: $(dpkg-deb -f "$PREV_DEB" Version) ($(basename "$PREV_DEB"))"
else
  # The same package as version 0.0.0-1: the upgrade path of the packaging (conffile kept,
  # service restarted), not of the binary.
  prev=$cache/prev
  rm -rf "$prev" && mkdir -p "$prev/pkg"
  dpkg-deb -R "$DEB" "$prev/pkg"
  sed -i 's/^Version: .*/Version: 0.0.0-1/' "$prev/pkg/DEBIAN/control"
  dpkg-deb --root-owner-group -b "$prev/pkg" "$root/root/pkg/prev.deb" >/dev/null
  echo "previous release: none given, this package relabelled 0.0.0-1"
fi

# --- host side: ports, an HTTPS webhook receiver ------------------------------------------------
base=$((20000 + ($$ % 4000) * 5))
UDP_PORT=$base HTTP_PORT=$((base + 1)) HOOK_PORT=$((base + 2)) NATS_PORT=$((base + 3))
RANGE_HTTP_PORT=$((base + 4))
work=$cache/host
rm -rf "$work" && mkdir -p "$work"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=foxborne-test-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$work/hook.key" \
  -out "$work/hook.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > "$work/ext"
openssl x509 -req -in "$work/hook.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
  -days 1 -extfile "$work/ext" -out "$work/hook.pem" 2>/dev/null
"$PY" - "$HOOK_PORT" "$work" > "$work/hook.log" 2>&1 <<'EOF' &
import http.server, ssl, sys
port, work = int(sys.argv[1]), sys.argv[2]
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(f"{work}/hook.jsonl", "ab") as f:
            f.write(body + b"\n")
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
server = http.server.HTTPServer(("127.0.0.1", port), Hook)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{work}/hook.pem", f"{work}/hook.key")
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
EOF
hook_pid=$!
cp "$work/ca.pem" "$root/root/pkg/test-ca.pem"
# The container's NATS: Debian's nats-server unit (enabled by its package), JetStream on, on
# this run's port rather than 4222 (the network is the host's), its store owned by its user.
printf 'host: 127.0.0.1\nport: %s\njetstream {\n  store_dir: /var/lib/nats-server\n}\n' "$NATS_PORT" \
  > "$root/etc/nats-server.conf"
nats_ids=$(awk -F: '$1 == "nats" { print $3 ":" $4 }' "$root/etc/passwd")
[ -n "$nats_ids" ] || { echo "the root has no nats user (nats-server's package)"; exit 1; }
install -d -m 750 -o "${nats_ids%:*}" -g "${nats_ids#*:}" "$root/var/lib/nats-server"
"$PY" "$here/tests/system/send.py" file "$root/root/pkg/serial.bin" 200 31

# --- boot ---------------------------------------------------------------------------------------
cgroup_leftovers() {
  local v2 v1
  v2=$(sed -n 's/^0:://p' /proc/self/cgroup)
  v1=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup)
  for d in "/sys/fs/cgroup/unified${v2%/}" "/sys/fs/cgroup/systemd${v1%/}" "/sys/fs/cgroup${v2%/}"; do
    for leaf in payload supervisor; do
      if [ -d "$d/$leaf" ]; then echo "$d/$leaf"; fi
    done
  done | sort -u
}
remove_cgroups() {
  local d
  for d in $(cgroup_leftovers); do
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}
remove_cgroups
nspawn_pid=
shutdown() {
  local t; t=$(date +%s.%N)
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    c 'systemctl poweroff' >/dev/null 2>&1 || true
    for _ in $(seq 1 300); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  [ -n "$hook_pid" ] && kill "$hook_pid" 2>/dev/null || true
  remove_cgroups
  left=$(cgroup_leftovers)
  [ -z "$left" ] || echo "cgroup folders left: $left"
  rm -rf "$root"
  echo "powered off and cleaned up in $(elapsed "$t") s"
}
trap shutdown EXIT
# nspawn's own filter denies @clock to a container without CAP_SYS_TIME, reads included; the
# kernel lets anyone read the NTP state (adjtimex with no modes), so allow just those calls (no
# capability: the container still cannot set the clock) and the unit's filter is what is tested.
systemd-nspawn --quiet -D "$root" -b --register=no --keep-unit -M foxborne-test \
  --system-call-filter='adjtimex clock_adjtime' \
  > "$work/console.log" 2>&1 < /dev/null &
nspawn_pid=$!
leader=
for _ in $(seq 1 200); do
  leader=$(pgrep -P "$nspawn_pid" | head -n 1 || true)
  [ -n "$leader" ] && [ "$(cat /proc/"$leader"/comm 2>/dev/null)" = systemd ] && break
  leader=
  sleep 0.1
done
[ -n "$leader" ] || { echo "the container did not boot"; cat "$work/console.log"; exit 1; }
# Run a shell command in the container (its mount, PID, UTS and IPC namespaces).
c() { nsenter -t "$leader" -m -u -i -p -- /bin/sh -c "$*"; }
# The container's manager answers once it has set up its private socket.
state=
for _ in $(seq 1 600); do
  state=$(c 'systemctl is-system-running --wait' 2>/dev/null || true)
  case $state in running|degraded) break ;; esac
  sleep 0.1
done
echo "booted: $state ($(elapsed "$started") s; $(c 'systemctl --version | head -n 1'))"
c 'systemctl is-active -q nats-server' || { c 'systemctl status nats-server; journalctl -u nats-server'; exit 1; }
echo "nats-server: $(c 'nats-server --version'), JetStream on 127.0.0.1:$NATS_PORT"

# --- checks -------------------------------------------------------------------------------------
# Every check runs: what each needs (NATS included) is in the container, so none is skipped.
passed=() failed=()
check() {
  local name=$1; shift
  local t; t=$(date +%s.%N)
  echo; echo "-- $name"
  # Not under `if`: bash ignores `set -e` in anything an `if` tests, subshells included, so
  # only a check's last command would count.
  local status
  set +e
  ( set -eEuo pipefail; trap 'echo "  failed at line $LINENO: $BASH_COMMAND"' ERR; "$@" )
  status=$?
  set -e
  if [ "$status" -eq 0 ]; then
    passed+=("$name"); echo "PASS $name ($(elapsed "$t") s)"
  else
    failed+=("$name"); echo "FAIL $name ($(elapsed "$t") s)"
  fi
}
state_dir=$root/var/lib/private/foxborne-receiver
range_state=$root/var/lib/private/foxborne-range
# One property of foxborne-range.service.
range_show() { c "systemctl show -p $1 --value foxborne-range"; }
receipts() { cat "$state_dir"/data/receive/*/receive-*.jsonl 2>/dev/null || true; }
# Waits up to $1 s for a shell condition on the host.
# A deadline, not a count of tries: a condition that is slow to test (the receive log
# re-read) would otherwise stretch or shrink the wait with the machine's load.
wait_until() {
  local limit=$1; shift
  local deadline=$((SECONDS + limit))
  while [ "$SECONDS" -lt "$deadline" ]; do eval "$*" && return 0; sleep 0.1; done
  eval "$*"
}
# custom_mode numbers of sysid $1's heartbeats in the receive log, sorted.
numbers() { receipts | "$PY" -c '
import json, sys
sysid = int(sys.argv[1])
seen = [json.loads(l)["fields"]["custom_mode"] for l in sys.stdin if json.loads(l).get("sysid") == sysid and json.loads(l).get("msg") == "HEARTBEAT"]
print(" ".join(map(str, sorted(seen))))' "$1"; }
expect_numbers() { # sysid count: exactly 0..count-1, once each
  local got; got=$(numbers "$1")
  [ "$got" = "$(seq -s ' ' 0 $(($2 - 1)))" ] || { echo "sysid $1: want 0..$(($2 - 1)), got $(echo "$got" | wc -w) numbers"; return 1; }
}

config() {
  cat <<EOF
# The system test's config: every feature at once.
data_dir = "./data"
fsync_interval_s = 0.2
tlog = true
[[link]]
name = "udp"
udp = "127.0.0.1:$UDP_PORT"
[[link]]
name = "radio"
serial = "/dev/ttyFOX"
baud = 57600
[signing]
keys = ["000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"]
reject_bad = false
[gap]
threshold_s = 2.0
[http]
listen = "127.0.0.1:$HTTP_PORT"
[[webhook]]
url = "https://127.0.0.1:$HOOK_PORT/hook"
format = "json"
kinds = ["telemetry_gap", "retention"]
ca_file = "/etc/foxborne-receiver/test-ca.pem"
[retention]
max_age_days = 30
EOF
  printf '[publish]\nnats_url = "nats://127.0.0.1:%s"\nsite = "system-test"\n' "$NATS_PORT"
}

# What an operator ran with the previous release: only keys every release knows.
config_previous() {
  cat <<EOF
# The system-test's config, as written for the previous release.
data_dir = "./data"
fsync_interval_s = 0.2
[[link]]
name = "udp"
udp = "127.0.0.1:$UDP_PORT"
[gap]
threshold_s = 2.0
[http]
listen = "127.0.0.1:$HTTP_PORT"
EOF
}

install_previous() {
  c 'apt-get install -y -qq /root/pkg/prev.deb >/dev/null 2>&1'
  # A release whose package had no maintainer scripts was enabled by hand.
  c 'systemctl daemon-reload; systemctl is-enabled -q foxborne-receiver || systemctl enable -q foxborne-receiver'
  c 'systemctl is-enabled foxborne-receiver' | grep -qx enabled
  # The operator's edits: the conffile, the CA, a serial radio (a socat pty pair, kept running).
  config_previous > "$root/etc/foxborne-receiver/receiver.toml"
  cp "$root/root/pkg/test-ca.pem" "$root/etc/foxborne-receiver/test-ca.pem"
  # The radio's end is root:dialout 0660, as a USB serial adapter's node is.
  c 'systemd-run --quiet --unit=radio socat pty,raw,echo=0,link=/dev/ttyFOX,group-late=dialout,perm-late=0660 pty,raw,echo=0,link=/dev/ttyFOXIN'
  # The container's /dev is its own tmpfs: look from inside.
  wait_until 5 "c '[ -e /dev/ttyFOXIN ]'"
  # A package with maintainer scripts started the service on the shipped config already:
  # restart, so that it runs on the operator's.
  c 'systemctl restart foxborne-receiver'
  c 'systemctl is-active foxborne-receiver' | grep -qx active
}

upgrade_keeps_config_and_restarts() {
  local before after
  before=$(c 'systemctl show -p MainPID --value foxborne-receiver')
  # Old day folders, owned as the service's own files are, for retention at the next start.
  local owner; owner=$(stat -c %u:%g "$state_dir/data/receive")
  for stream in receive events tlog; do
    mkdir -p "$state_dir/data/$stream/2020-01-0${#stream}"
    echo '{}' > "$state_dir/data/$stream/2020-01-0${#stream}/old.jsonl"
    # (tlog/ did not exist under the previous config: made here as the service would.)
    chown "$owner" "$state_dir/data/$stream"
    chown -R "$owner" "$state_dir/data/$stream/2020-01-0${#stream}"
  done
  local binary_before; binary_before=$(sha256sum < "$root/usr/bin/foxborne-receiver")
  # As unattended upgrades do: keep the operator's edited conffile, never ask.
  c 'apt-get install -y -qq -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold /root/pkg/new.deb >/dev/null 2>&1'
  c 'dpkg-query -W -f "\${Version}" foxborne-receiver' | grep -qx "$(dpkg-deb -f "$DEB" Version)"
  grep -q "system-test's config, as written for the previous release" "$root/etc/foxborne-receiver/receiver.toml"
  if [ -n "$PREV_DEB" ]; then
    [ "$(sha256sum < "$root/usr/bin/foxborne-receiver")" != "$binary_before" ]
  fi
  wait_until 10 "c 'systemctl is-active foxborne-receiver' | grep -qx active"
  after=$(c 'systemctl show -p MainPID --value foxborne-receiver')
  echo "MainPID $before -> $after (the new binary on the previous release's config)"
  [ "$before" != "$after" ] && [ "$after" != 0 ]
  # The operator then turns on what the new release brings; retention runs at this start.
  config > "$root/etc/foxborne-receiver/receiver.toml"
  c 'systemctl restart foxborne-receiver'
  c 'systemctl is-active foxborne-receiver' | grep -qx active
}

retention_at_start() {
  wait_until 60 '[ ! -d "$state_dir/data/receive/2020-01-07" ]'
  [ ! -d "$state_dir/data/events/2020-01-06" ] && [ ! -d "$state_dir/data/tlog/2020-01-04" ]
  wait_until 10 "c 'journalctl -u foxborne-receiver -o json' | grep -c '\"F_KIND\":\"retention\"' >/dev/null"
  c 'journalctl -u foxborne-receiver -o cat' | grep 'retention: removed 3 day folders'
}

started_ready_with_status() {
  c 'systemctl show -p Type,ActiveState,SubState,StatusText foxborne-receiver'
  c 'systemctl show -p Type --value foxborne-receiver' | grep -qx notify
  c 'systemctl show -p SubState --value foxborne-receiver' | grep -qx running
  local status; status=$(c 'systemctl show -p StatusText --value foxborne-receiver')
  [ -n "$status" ]
}

udp_frames_owned_and_umasked() {
  $send udp "$UDP_PORT" 500 2000 11 >/dev/null
  wait_until 10 'expect_numbers 11 500 >/dev/null'
  expect_numbers 11 500
  local pid uid file
  pid=$(c 'systemctl show -p MainPID --value foxborne-receiver')
  uid=$(c "awk '/^Uid:/ {print \$2}' /proc/$pid/status")
  file=$(ls "$state_dir"/data/receive/*/receive-*.jsonl | tail -n 1)
  echo "service uid $uid; $(stat -c '%u %a %n' "$file" "$(dirname "$file")")"
  [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] # systemd's dynamic user range
  [ "$(stat -c %u "$file")" = "$uid" ]
  # UMask=0027: files 0644 & ~027 = 0640, folders 0750.
  [ "$(stat -c %a "$file")" = 640 ] && [ "$(stat -c %a "$(dirname "$file")")" = 750 ]
}

reload_new_file_nothing_lost() {
  local files_before; files_before=$(ls "$state_dir"/data/receive/*/receive-*.jsonl | wc -l)
  c 'systemctl reload foxborne-receiver'
  $send udp "$UDP_PORT" 500 2000 12 >/dev/null
  wait_until 10 'expect_numbers 12 500 >/dev/null'
  expect_numbers 12 500 && expect_numbers 11 500
  local files_after; files_after=$(ls "$state_dir"/data/receive/*/receive-*.jsonl | wc -l)
  echo "receive files: $files_before -> $files_after"
  [ "$files_after" -gt "$files_before" ]
}

journal_gap_fields() {
  # sysid 11 and 12 went silent above: each gap opened 2 s after its last heartbeat.
  wait_until 15 "c 'journalctl -u foxborne-receiver -o json' | grep -c '\"F_KIND\":\"telemetry_gap\"' >/dev/null"
  c 'journalctl -u foxborne-receiver -o json' | "$PY" -c '
import json, sys
gaps = [e for e in map(json.loads, sys.stdin) if e.get("F_KIND") == "telemetry_gap"]
g = gaps[0]
print({k: v for k, v in g.items() if k.startswith("F_") or k in ("PRIORITY", "SYSLOG_IDENTIFIER")})
for key in ("F_STATE", "F_SYSID", "F_THRESHOLD_S", "F_DUE_UTC", "F_LAST_RECV_UTC", "F_LINKS", "F_OBSERVED"):
    assert key in g, key
assert g["F_STATE"] == "open" and g["PRIORITY"] == "4" and g["SYSLOG_IDENTIFIER"] == "foxborne-receiver"
'
}

webhook_https_delivered() {
  wait_until 15 'grep -q telemetry_gap "$work/hook.jsonl" 2>/dev/null'
  grep -c telemetry_gap "$work/hook.jsonl"
  grep -q '"kind":"retention"' "$work/hook.jsonl"
}

serial_pty_recorded() {
  c 'cat /root/pkg/serial.bin > /dev/ttyFOXIN'
  wait_until 10 'expect_numbers 31 200 >/dev/null' || {
    c 'ls -lL /dev/ttyFOX; journalctl -u foxborne-receiver -o cat | grep -i radio | tail -n 5'
    return 1
  }
  receipts > "$work/receipts"
  [ "$(grep '"sysid":31,' "$work/receipts" | grep -c '"link":"radio"')" = 200 ]
}

nats_published() {
  wait_until 15 "curl -s http://127.0.0.1:$HTTP_PORT/metrics | grep -E '^foxborne_publish_acked_total\\{stream=\"receipts\"\\} [1-9]'"
}

no_denials() {
  # The service's journal (its own lines and systemd's about it): a filtered system call
  # returns EPERM (SystemCallErrorNumber=), a denied path or device EACCES/EPERM.
  if c 'journalctl -u foxborne-receiver -o cat' \
      | grep -Ei 'seccomp|not permitted|permission denied|EPERM|EACCES|os error (1|13)\b'; then
    return 1
  fi
  c 'journalctl -u foxborne-receiver -o cat' | grep -c . | sed 's/^/journal lines checked: /'
  c 'systemctl show -p NRestarts --value foxborne-receiver' | grep -qx 0
  # Every part answered: both links up, the HTTP port, the clock read (a `clock` state at
  # start), the webhook and NATS checked above.
  c 'systemctl show -p StatusText --value foxborne-receiver' | grep 'links up 2/2'
  curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null
  # The NTP read (adjtimex) passed the system call filter: /status has the kernel's clock state
  # (null when the read fails).
  curl -sf "http://127.0.0.1:$HTTP_PORT/status" \
    | $PY -c 'import json, sys; c = json.load(sys.stdin)["clock"]; print("kernel clock read:", c); sys.exit(0 if c and "synchronised" in c else 1)'
}

stop_under_load_loses_nothing() {
  rm -f "$work/stop"
  $send udp "$UDP_PORT" 2000000 20000 13 --until "$work/stop" > "$work/sent" &
  local sender=$!
  wait_until 60 '[ "$(numbers 13 | wc -w)" -gt 20000 ]' || {
    touch "$work/stop"; wait "$sender" || true
    echo "received $(numbers 13 | wc -w) of sysid 13's frames in 60 s"; return 1; }
  c 'systemctl stop foxborne-receiver'
  touch "$work/stop"; wait "$sender"
  local got; got=$(numbers 13)
  local n; n=$(echo "$got" | wc -w)
  echo "sent $(cat "$work/sent") at 20,000 frames/s, stopped after $n"
  # What was received is a prefix of what was sent: no frame missing before the last one.
  [ "$got" = "$(seq -s ' ' 0 $((n - 1)))" ]
  # This process wrote every line in the files (the previous package's received nothing), and
  # says so at exit, with nothing dropped.
  local stopped; stopped=$(c 'journalctl -u foxborne-receiver -o json' | grep '"receiver stopped"' | tail -n 1)
  local written dropped
  written=$(echo "$stopped" | grep -o '"F_LINES_WRITTEN":"[0-9]*"' | grep -o '[0-9]*')
  dropped=$(echo "$stopped" | grep -o '"F_DROPPED":"[0-9]*"' | grep -o '[0-9]*')
  echo "the daemon at stop: $written lines written, $dropped dropped; lines in the receive log: $(receipts | wc -l)"
  [ "$n" -gt 20000 ] && [ "$written" = "$(receipts | wc -l)" ] && [ "$dropped" = 0 ]
  ! c 'journalctl -u foxborne-receiver -o json' | grep -c '"F_KIND":"dropped"' >/dev/null
  c 'systemctl start foxborne-receiver'
}

watchdog_kills_a_stopped_daemon() {
  local before; before=$(c 'systemctl show -p MainPID --value foxborne-receiver')
  local restarts; restarts=$(c 'systemctl show -p NRestarts --value foxborne-receiver')
  $send udp "$UDP_PORT" 300 3000 14 >/dev/null
  c 'systemctl kill -s SIGSTOP foxborne-receiver'
  # WatchdogSec=10s, then SIGABRT (pending on a stopped process), SIGKILL after the abort
  # timeout, RestartSec=2s.
  wait_until 90 "[ \"\$(c 'systemctl show -p NRestarts --value foxborne-receiver')\" -gt $restarts ] && c 'systemctl is-active foxborne-receiver' | grep -qx active"
  c 'journalctl -u foxborne-receiver -o cat' | grep -i 'watchdog timeout'
  local after; after=$(c 'systemctl show -p MainPID --value foxborne-receiver')
  echo "MainPID $before -> $after"
  [ "$before" != "$after" ]
  for f in "$state_dir"/data/receive/*/receive-*.jsonl; do
    [ ! -s "$f" ] || [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" = '\n' ] || { echo "$f ends mid-line"; return 1; }
  done
}

# The operator's edit of the shipped range.toml: the container's NATS, a port of this run's.
range_config() {
  cat <<EOF
# The system test's range config.
data_dir = "./range-data"
fsync_interval_s = 0.2
[range]
nats_url = "nats://127.0.0.1:$NATS_PORT"
name = "system-test"
[gap]
threshold_s = 2.0
[http]
listen = "127.0.0.1:$RANGE_HTTP_PORT"
EOF
}

range_installed_disabled_not_started() {
  # A fresh install has no NATS to point the range at: the package enables and starts nothing.
  local enabled active
  enabled=$(c 'systemctl is-enabled foxborne-range' || true)
  active=$(c 'systemctl is-active foxborne-range' || true)
  echo "foxborne-range.service: $enabled, $active ($(range_show FragmentPath))"
  [ "$enabled" = disabled ] && [ "$active" = inactive ] && [ "$(range_show Result)" = success ]
  # The shipped example config, as a conffile.
  grep -qx 'nats_url = "nats://127.0.0.1:4222"' "$root/etc/foxborne-receiver/range.toml"
  c 'dpkg-query -W -f "\${Conffiles}" foxborne-receiver' | grep -q /etc/foxborne-receiver/range.toml
}

range_started_ready_with_status() {
  range_config > "$root/etc/foxborne-receiver/range.toml"
  # A vehicle the receiver hears now (20 Hz, until the range has heard it), published to the
  # range's NATS.
  rm -f "$work/stop15"
  $send udp "$UDP_PORT" 100000 20 15 --until "$work/stop15" >/dev/null &
  local sender=$!
  # As docs/service.md says, once range.toml points at a NATS server. Type=notify: the start
  # returns once the range said READY=1.
  c 'systemctl enable --now foxborne-range 2>&1'
  c 'systemctl show -p Type,ActiveState,SubState,StatusText foxborne-range'
  [ "$(range_show Type)" = notify ] && [ "$(range_show ActiveState)" = active ]
  [ "$(range_show SubState)" = running ]
  # STATUS= from the judging loop: the receiver's site heard, its vehicles, the open gaps (the
  # backlog's vehicles, silent since the checks above).
  wait_until 60 "range_show StatusText | grep -Eq '^sites heard 1/1, vehicles heard [1-9][0-9]*/[1-9][0-9]*, open gaps [0-9]+\$'" || {
    touch "$work/stop15"; wait "$sender" || true; echo "StatusText: $(range_show StatusText)"; return 1; }
  echo "StatusText: $(range_show StatusText)"
  local status; status=$(curl -sf "http://127.0.0.1:$RANGE_HTTP_PORT/status")
  touch "$work/stop15"; wait "$sender"
  echo "range events written so far: $(c 'cat /var/lib/foxborne-range/range-data/events/*/range-events-*.jsonl' | wc -l)"
  echo "$status" | $PY -c '
import json, sys
s = json.load(sys.stdin)
print("range /status: sites", [x["name"] for x in s["sites"]], "vehicles", [v["sysid"] for v in s["vehicles"]])
assert [x["name"] for x in s["sites"]] == ["system-test"]
assert any(v["sysid"] == 15 and v["links"] == ["system-test"] for v in s["vehicles"])
'
  # The tighter sandbox (PrivateDevices=, ProtectClock=) denied nothing.
  if c 'journalctl -u foxborne-range -o cat' \
      | grep -Ei 'seccomp|not permitted|permission denied|EPERM|EACCES|os error (1|13)\b'; then
    return 1
  fi
  [ "$(range_show NRestarts)" = 0 ]
}

range_reload_new_events_file() {
  range_events() { ls "$range_state"/range-data/events/*/range-events-*.jsonl | wc -l; }
  # The range's current events file's lines about system $1.
  range_events_of() { c 'cat /var/lib/foxborne-range/range-data/events/current.jsonl' | grep "\"sysid\":$1,"; }
  local before; before=$(range_events)
  c 'systemctl reload foxborne-range'
  # The next event opens the new file: sysid 16 heard briefly, then its gap (threshold 2 s).
  $send udp "$UDP_PORT" 10 20 16 >/dev/null
  wait_until 20 '[ "$(range_events)" -gt "$before" ] && range_events_of 16 >/dev/null'
  echo "range events files: $before -> $(range_events)"
  range_events_of 16 | head -n 1 | cut -c 1-160
}

range_watchdog_restarts_a_stopped_range() {
  local before restarts after
  before=$(range_show MainPID)
  restarts=$(range_show NRestarts)
  c 'systemctl kill -s SIGSTOP foxborne-range'
  # WatchdogSec=10s, then SIGABRT (pending on a stopped process), SIGKILL after the abort
  # timeout, RestartSec=2s; active again only after the new process's READY=1.
  wait_until 90 "[ \"\$(range_show NRestarts)\" -gt $restarts ] && [ \"\$(range_show ActiveState)\" = active ]"
  c 'journalctl -u foxborne-range -o cat' | grep -i 'watchdog timeout'
  after=$(range_show MainPID)
  echo "MainPID $before -> $after, NRestarts $restarts -> $(range_show NRestarts)"
  [ "$before" != "$after" ] && [ "$after" != 0 ]
  wait_until 10 "range_show StatusText | grep -q '^sites heard '"
}

range_clean_stop() {
  local t cursor
  cursor=$(c 'journalctl -u foxborne-range -n 0 --show-cursor' | sed -n 's/^-- cursor: //p')
  t=$(date +%s.%N)
  c 'systemctl stop foxborne-range'
  echo "systemctl stop: $(elapsed "$t") s"
  c 'systemctl show -p ActiveState,Result,ExecMainCode,ExecMainStatus foxborne-range'
  [ "$(range_show ActiveState)" = inactive ] && [ "$(range_show Result)" = success ]
  # It exited (CLD_EXITED, 1) with status 0: its own stop, not killed. (Readable after the stop
  # because the unit is enabled: systemd unloads an unreferenced inactive unit at once.)
  [ "$(range_show ExecMainCode)" = 1 ] && [ "$(range_show ExecMainStatus)" = 0 ]
  # What the journal says of this stop (systemd's own lines: the range's may be rate limited by
  # journald after a catch-up that raised many events).
  c "journalctl -u foxborne-range --after-cursor='$cursor' -o cat" > "$work/range-stop.log"
  grep -E 'Deactivated successfully|Stopped foxborne-range' "$work/range-stop.log"
  ! grep -Ei 'Main process exited|Failed with result|Killing process' "$work/range-stop.log"
  # Its events file ends with the stop event.
  c 'tail -n 1 /var/lib/foxborne-range/range-data/events/current.jsonl' | grep '"kind":"receiver","state":"stop"'
}

remove_keeps_data_purge_removes_config() {
  c 'apt-get remove -y -qq foxborne-receiver >/dev/null 2>&1'
  ! c 'systemctl is-active foxborne-receiver' | grep -qx active
  [ -n "$(receipts | head -n 1)" ]
  [ -f "$root/etc/foxborne-receiver/receiver.toml" ]
  c 'apt-get purge -y -qq foxborne-receiver >/dev/null 2>&1'
  [ ! -e "$root/etc/foxborne-receiver/receiver.toml" ] && [ ! -e "$root/etc/foxborne-receiver/range.toml" ]
  [ ! -e "$root/usr/lib/systemd/system/foxborne-range.service" ]
  [ -n "$(receipts | head -n 1)" ] && [ -n "$(ls "$range_state"/range-data/events)" ]
}

check "install the previous package, start it with the test config" install_previous
check "upgrade: conffile kept, service restarted" upgrade_keeps_config_and_restarts
check "range: foxborne-range.service installed disabled and not started, range.toml a conffile" range_installed_disabled_not_started
check "retention: old day folders gone at start, with their event" retention_at_start
check "systemctl start: READY (Type=notify, running), a STATUS line" started_ready_with_status
check "UDP from the host: every frame in the receive log, dynamic user, UMask" udp_frames_owned_and_umasked
check "systemctl reload: a new file, nothing lost" reload_new_file_nothing_lost
check "journalctl -o json: F_KIND=telemetry_gap and its fields" journal_gap_fields
check "HTTPS webhook (ca_file): gap and retention events delivered" webhook_https_delivered
check "serial: a socat pty recorded through DeviceAllow" serial_pty_recorded
check "NATS: receipts published" nats_published
check "everything at once: no seccomp or permission denial in the journal, no restart" no_denials
check "systemctl stop under 20,000 frames/s: every frame received is written" stop_under_load_loses_nothing
check "SIGSTOP: the watchdog kills and restarts; the receive log ends on a whole line" watchdog_kills_a_stopped_daemon
check "range: systemctl enable --now against the container's NATS: READY, STATUS (sites, vehicles, gaps), no denial" range_started_ready_with_status
check "range: systemctl reload: a new events file" range_reload_new_events_file
check "range: SIGSTOP: the watchdog kills and restarts it (a new MainPID, READY again)" range_watchdog_restarts_a_stopped_range
check "range: systemctl stop: exit status 0, the journal says it stopped, the stop event last" range_clean_stop
check "remove keeps the data; purge removes the config" remove_keeps_data_purge_removes_config

echo
echo "system test: ${#passed[@]} passed, ${#failed[@]} failed, $(elapsed "$started") s before power-off"
for f in "${failed[@]}"; do echo "  FAILED: $f"; done
[ ${#failed[@]} -eq 0 ]
