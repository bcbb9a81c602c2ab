#!/usr/bin/env python3
"""CI's speed regression check (issue 44): a short side-by-side run that fails when ours is more
than 30 % slower, relative to a reference measured in the same job, than it was when the
baseline was recorded.

    .venv/bin/python benches/ci_speed_check.py BINARY [CORPUS]      # check against the baseline
    .venv/bin/python benches/ci_speed_check.py --record BINARY [CORPUS]   # write the baseline

CI reaches only the package registries, so the references are the ones it can install:
mavlink-router and ulog_cpp are in neither Debian nor PyPI (benches/compare_refs.sh builds them
from source for the full table), so this check uses pymavlink and pyulog (both in CI's venv).

- live: the release daemon (`run`, one UDP link, the JSONL receive log) and a pymavlink
  receiver (`MAVLink.parse_buffer` on every datagram: CRC and decode) are each sent the same
  frames (HEARTBEAT and ATTITUDE, MAVLink 2, 10 vehicles) at RATE frames/s for SECONDS; CPU
  per frame is the process's CPU clock (user + system, all threads) over the frames sent.
- ulog: `ulog export FILE --format parquet` (a whole process) against pyulog's `ULog(FILE)`
  (timed inside this process) on three corpus logs.

Each figure is the best (lowest) of ROUNDS rounds, the two sides in turn: on a shared 2-core
machine noise only ever adds time, and medians of whole-process wall times moved the ULog ratio
by up to 50 % between runs of one build (0.31 to 0.38 against a recorded 0.25). The ULog side
counts CPU time, not wall time: ours is the child's user + system time (all its threads, taken
from wait4 of a posix_spawn'd child), pyulog's this process's. Files are written to /dev/shm.
The ratio ours / reference is held against benches/refs/ci_speed_baseline.json; more than
1.30 times the recorded ratio fails (exit 1). Takes about 40 s. Standard library, pymavlink and pyulog only."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RATE = 5000
SECONDS = 2.0
ROUNDS = 5
LIMIT = 1.30
LOGS = ["flightreview_ekf_failure.ulg", "pyulog_sample.ulg", "px4ulogrs_quadrotor_local.ulg"]
HERE = Path(__file__).resolve().parent
BASELINE = HERE / "refs" / "ci_speed_baseline.json"

args = sys.argv[1:]
record = "--record" in args
args = [a for a in args if a != "--record"]
if not args:
    print(__doc__)
    sys.exit(2)
BINARY = os.path.abspath(args[0])
CORPUS = Path(args[1] if len(args) > 1 else HERE.parents[1] / "shared" / "corpus")


def cpu_clock(pid):
    """The CPU-time clock of process `pid` (glibc's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED))."""
    return ((~pid) << 3) | 2


def cpu_seconds(pid):
    try:
        return time.clock_gettime(cpu_clock(pid))
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def frames():
    from pymavlink.dialects.v20 import ardupilotmega as mavlink2

    out = []
    for sysid in range(1, 11):
        mav = mavlink2.MAVLink(None, srcSystem=sysid, srcComponent=1)
        for i in range(50):
            for msg in (mavlink2.MAVLink_heartbeat_message(2, 3, 0, 0, 4, 3),
                        mavlink2.MAVLink_attitude_message(i * 10, 0.1, 0.2, 0.3, 0.01, 0.02, 0.03)):
                out.append(msg.pack(mav))
                mav.seq = (mav.seq + 1) % 256  # pack() does not advance it
    return out


def send(to, datagrams):
    """RATE datagrams a second to `to`, in 1 ms bursts, for SECONDS; how many were sent."""
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.connect(to)
    total = int(RATE * SECONDS)
    started = time.perf_counter()
    sent = tick = 0
    while sent < total:
        tick += 1
        due = min(total, RATE * tick // 1000)
        while sent < due:
            tx.send(datagrams[sent % len(datagrams)])
            sent += 1
        wait = started + tick / 1000 - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
    tx.close()
    return sent


def wait_until(what, check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"ci_speed_check: {what} within {timeout} s")
        time.sleep(0.01)


def scratch_dir():
    """tmpfs when there is one: on disk, what the written files cost in system time depends on
    how much the machine has left to write back (up to 0.13 s of system time for one 3 MB log's
    export after the test suite, against 0.01 s on a quiet disk)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def ours_live(datagrams):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        config = Path(tmp) / "receiver.toml"
        config.write_text(f'data_dir = "{tmp}/data"\n[[link]]\nname = "load"\nudp = "127.0.0.1:0"\n'
                          '[http]\nlisten = "127.0.0.1:0"\n')
        daemon = subprocess.Popen([BINARY, "run", "--config", str(config)],
                                  stderr=subprocess.PIPE, text=True)
        addr = None
        for line in daemon.stderr:
            if "link=load" in line and "listening" in line and "local=" in line:
                host, port = line.split("local=")[1].split()[0].rsplit(":", 1)
                addr = (host, int(port))
                break
        if addr is None:
            raise SystemExit("ci_speed_check: the daemon did not start")
        threading.Thread(target=lambda: [None for _ in daemon.stderr], daemon=True).start()
        cpu0 = cpu_seconds(daemon.pid)
        sent = send(addr, datagrams)

        def lines():
            return sum(p.read_bytes().count(b"\n") for p in Path(tmp, "data", "receive").rglob("*.jsonl")
                       if not p.is_symlink())

        try:
            wait_until("the receive log did not get every frame", lambda: lines() >= sent)
        finally:
            cpu = cpu_seconds(daemon.pid) - cpu0
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()
    return cpu * 1e6 / sent


REFERENCE_RECEIVER = """
import signal, socket, sys
from pymavlink.dialects.v20 import ardupilotmega as mavlink2
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
rx.bind(("127.0.0.1", 0))
mav = mavlink2.MAVLink(None)
mav.robust_parsing = True
parsed = 0
def stop(*_):
    print(parsed, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print(rx.getsockname()[1], flush=True)
while True:
    msgs = mav.parse_buffer(rx.recv(65536))
    parsed += len(msgs) if msgs else 0
"""


def reference_live(datagrams):
    ref = subprocess.Popen([sys.executable, "-c", REFERENCE_RECEIVER], stdout=subprocess.PIPE, text=True)
    port = int(ref.stdout.readline())
    cpu0 = cpu_seconds(ref.pid)
    sent = send(("127.0.0.1", port), datagrams)
    time.sleep(0.3)  # it reads what waits in its socket buffer (its count is read after SIGTERM)
    cpu = cpu_seconds(ref.pid) - cpu0
    ref.send_signal(signal.SIGTERM)
    parsed = int(ref.stdout.readline() or 0)
    ref.wait()
    return cpu * 1e6 / sent, sent - parsed


def spawn_cpu_seconds(argv):
    """Runs argv with its output discarded; the CPU time (user + system, all threads) it took.
    posix_spawn(3), not fork: a child forked from this process (pyulog's arrays make it large)
    pays for copying and then dropping its address space, and that cost grew round by round
    (0.45 to 1.1 as the ratio over one build's rounds)."""
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ci_speed_check: {' '.join(argv)} failed")
    return usage.ru_utime + usage.ru_stime


def ulog_round(logs):
    from pyulog import ULog

    ours = reference = 0.0
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        for i, log in enumerate(logs):
            ours += spawn_cpu_seconds([BINARY, "ulog", "export", str(log), "--format", "parquet",
                                       "--out", f"{tmp}/{i}"])
            t = time.process_time()
            ULog(str(log))
            reference += time.process_time() - t
    return ours, reference


def main():
    logs = [CORPUS / "ulog" / name for name in LOGS]
    missing = [str(p) for p in logs if not p.exists()]
    if missing:
        raise SystemExit(f"ci_speed_check: corpus logs missing: {missing}")
    datagrams = frames()
    live_ours, live_ref, ulog_ours, ulog_ref = [], [], [], []
    started = time.monotonic()
    for _ in range(ROUNDS):
        live_ours.append(ours_live(datagrams))
        us, lost = reference_live(datagrams)
        live_ref.append(us)
        if lost:
            print(f"note: the pymavlink receiver missed {lost} frames (its CPU per frame is then low)")
        o, r = ulog_round(logs)
        ulog_ours.append(o)
        ulog_ref.append(r)
    m = min
    measured = {
        "live": m(live_ours) / m(live_ref),
        "ulog": m(ulog_ours) / m(ulog_ref),
    }
    print(f"live at {RATE} frames/s for {SECONDS} s: ours {m(live_ours):.2f} µs/frame "
          f"({', '.join(f'{v:.2f}' for v in live_ours)}), pymavlink {m(live_ref):.2f} µs/frame "
          f"({', '.join(f'{v:.2f}' for v in live_ref)}): ratio {measured['live']:.3f}")
    print(f"ulog, {len(logs)} corpus logs: ours (export to Parquet) {m(ulog_ours) * 1e3:.1f} ms of CPU, "
          f"pyulog (parse) {m(ulog_ref) * 1e3:.1f} ms of CPU: ratio {measured['ulog']:.3f}")
    print(f"({time.monotonic() - started:.0f} s)")
    if record:
        BASELINE.write_text(json.dumps({k: round(v, 4) for k, v in measured.items()}, indent=2) + "\n")
        print(f"baseline written to {BASELINE}")
        return 0
    baseline = json.loads(BASELINE.read_text())
    failed = False
    for key, ratio in measured.items():
        limit = baseline[key] * LIMIT
        verdict = "ok" if ratio <= limit else "SLOWER"
        failed |= ratio > limit
        print(f"{key}: ratio {ratio:.3f}, baseline {baseline[key]:.3f}, limit {limit:.3f}: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
