#!/usr/bin/env python3
"""Behaviour before and after a change, side by side: two builds of foxborne-receiver given
the same corpus, offline and live, and every difference listed.

    benches/before_after.py OLD_BINARY NEW_BINARY [CORPUS]

Offline, for every corpus .tlog: `tlog convert` (the receipts) and `analyze` of the .tlog and
of the converted receipts (the events) must be byte for byte the same. Live, each binary runs
the daemon on one UDP link and is sent the same datagrams (every frame of every corpus .tlog
and .raw capture, one frame per datagram, junk between frames as datagrams of its own); the
receive logs must be the same with the two clock keys (`recv_utc`, `mono_ns`) taken out, and
`/status` keys and `/metrics` families are compared (new ones listed, lost ones a failure).
Exits 1 on any difference. Standard library only."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

OLD, NEW = sys.argv[1], sys.argv[2]
CORPUS = Path(sys.argv[3] if len(sys.argv) > 3 else Path(__file__).resolve().parents[1].parent / "shared" / "corpus")
# Datagrams sent per pause; the pause keeps the kernel's receive buffer from overflowing.
BURST = 200
PAUSE_S = 0.01

failures = []


def fail(what):
    failures.append(what)
    print("DIFFERENT:", what)


def lines(data):
    return data.count(b"\n")


def run(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True)
    return out.returncode, out.stdout


def offline():
    for tlog in sorted((CORPUS / "tlog").glob("*.tlog")):
        results = {}
        for name, binary in (("old", OLD), ("new", NEW)):
            with tempfile.TemporaryDirectory() as tmp:
                receipts = Path(tmp) / "r.jsonl"
                rc, _ = run(binary, "tlog", "convert", "--out", str(receipts), str(tlog))
                converted = receipts.read_bytes() if receipts.exists() else b""
                _, from_tlog = run(binary, "analyze", str(tlog))
                _, from_receipts = run(binary, "analyze", str(receipts))
                results[name] = (rc, converted, from_tlog, from_receipts)
        old, new = results["old"], results["new"]
        for i, what in enumerate(["tlog convert exit", "receipts", "analyze of the .tlog", "analyze of the receipts"]):
            if old[i] != new[i]:
                fail(f"{tlog.name}: {what}")
        print(f"offline {tlog.name}: {lines(old[1])} receipts, "
              f"{lines(old[2])} + {lines(old[3])} analyze lines: "
              f"{'same' if old == new else 'DIFFERENT'}")


def frames(data, tlog):
    """One datagram per MAVLink frame (and per run of junk between frames)."""
    out = []
    i = 0
    if tlog:
        # .tlog: an 8-byte big-endian time before each frame.
        while i + 8 < len(data):
            i += 8
            n = frame_len(data, i)
            if n is None:
                break
            out.append(data[i:i + n])
            i += n
        return out
    junk = bytearray()
    while i < len(data):
        n = frame_len(data, i)
        if n is None:
            junk.append(data[i])
            i += 1
            continue
        if junk:
            out.append(bytes(junk))
            junk.clear()
        out.append(data[i:i + n])
        i += n
    if junk:
        out.append(bytes(junk))
    return out


def frame_len(data, i):
    if i + 2 > len(data):
        return None
    if data[i] == 0xFE:
        n = 8 + data[i + 1]
    elif data[i] == 0xFD and i + 3 <= len(data):
        n = 12 + data[i + 1] + (13 if data[i + 2] & 1 else 0)
    else:
        return None
    return n if i + n <= len(data) else None


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read().decode()


def key_paths(value, prefix=""):
    if isinstance(value, dict):
        paths = set()
        for k, v in value.items():
            paths |= {f"{prefix}.{k}"} | key_paths(v, f"{prefix}.{k}")
        return paths
    if isinstance(value, list):
        return set().union(*(key_paths(v, prefix + "[]") for v in value)) if value else set()
    return set()


def live(binary, datagrams, tmp, sender_port):
    udp, http = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    config = Path(tmp) / "receiver.toml"
    config.write_text(
        f'data_dir = "{tmp}/data"\nfsync_interval_s = 0.2\n'
        f'[[link]]\nname = "radio1"\nudp = "127.0.0.1:{udp}"\nrcvbuf_kb = 8192\n'
        f'[http]\nlisten = "127.0.0.1:{http}"\n')
    daemon = subprocess.Popen([binary, "run", "--config", str(config)],
                              stdout=subprocess.DEVNULL, stderr=open(Path(tmp) / "log", "w"))
    deadline = time.monotonic() + 30
    while True:
        try:
            get(http, "/healthz")
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{binary}: no /healthz in 30 s (see {tmp}/log)")
            time.sleep(0.05)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # The same source port for both binaries: it is in every receipt's `src`.
    sock.bind(("127.0.0.1", sender_port))
    for k, d in enumerate(datagrams):
        sock.sendto(d, ("127.0.0.1", udp))
        if k % BURST == BURST - 1:
            time.sleep(PAUSE_S)
    # Done when the link has read every byte sent and the pipeline has counted them all.
    sent = sum(len(d) for d in datagrams)
    deadline = time.monotonic() + 120
    while True:
        status = json.loads(get(http, "/status"))
        link = status["links"][0]
        if link["bytes"] >= sent and link["receipts"] + link["bytes_skipped"] > 0:
            time.sleep(1.0)
            again = json.loads(get(http, "/status"))
            if again["links"][0]["receipts"] == link["receipts"]:
                status = again
                break
        elif time.monotonic() > deadline:
            fail(f"{binary}: read {link['bytes']} of {sent} bytes in 120 s")
            break
        time.sleep(0.2)
    sock.close()
    metrics = get(http, "/metrics")
    daemon.send_signal(signal.SIGTERM)
    rc = daemon.wait(timeout=30)
    receipts = b"".join(p.read_bytes() for p in sorted(Path(tmp, "data", "receive").glob("*/*.jsonl")))
    timeless = re.sub(rb'^\{"recv_utc":"[^"]*","mono_ns":\d+,', b"{", receipts, flags=re.M)
    families = set(re.findall(r"^# TYPE (\S+)", metrics, flags=re.M))
    return rc, timeless, key_paths(status), families, status["links"][0]


def live_both():
    datagrams = []
    for f in sorted((CORPUS / "tlog").iterdir()):
        if f.suffix in (".tlog", ".raw"):
            datagrams += frames(f.read_bytes(), f.suffix == ".tlog")
    print(f"live: {len(datagrams)} datagrams to each binary")
    seen = {}
    sender_port = free_port(socket.SOCK_DGRAM)
    for name, binary in (("old", OLD), ("new", NEW)):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                seen[name] = live(binary, datagrams, tmp, sender_port)
            except SystemExit:
                print(Path(tmp, "log").read_text()[-2000:])
                raise
        rc, receipts, _, families, link = seen[name]
        print(f"live {name}: exit {rc}, {lines(receipts)} receipts, "
              f"{len(families)} metric families, link {json.dumps({k: link.get(k) for k in ('receipts', 'rejects', 'seq_lost')})}")
    old, new = seen["old"], seen["new"]
    if old[0] != new[0]:
        fail(f"live exit {old[0]} against {new[0]}")
    if old[1] != new[1]:
        o, n = old[1].splitlines(), new[1].splitlines()
        first = next((i for i, (a, b) in enumerate(zip(o, n)) if a != b), min(len(o), len(n)))
        fail(f"live receipts: {len(o)} against {len(n)} lines, first difference at line {first + 1}:\n  {o[first][:300]!r}\n  {n[first][:300]!r}")
    else:
        print("live receipts: byte for byte the same, clock keys aside")
    for what, a, b in (("/status keys", old[2], new[2]), ("/metrics families", old[3], new[3])):
        if a - b:
            fail(f"{what} lost: {sorted(a - b)}")
        print(f"{what}: {len(a)} before, {len(b)} after; new: {sorted(b - a) or 'none'}")


offline()
live_both()
print("RESULT:", "same" if not failures else f"{len(failures)} differences")
sys.exit(1 if failures else 0)
