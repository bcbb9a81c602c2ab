"""Replays a .tlog into MAVProxy's master, as a vehicle's stream, for tests/suite/mavproxy.rs.

usage: mavproxy_replay.py TLOG HOST:PORT RATE OUT

Reads TLOG with pymavlink as the corpus oracle does (ardupilotmega, robust parsing, BAD_DATA
skipped) and writes every frame it will send (get_msgbuf, hex, one a line) to OUT. Then, over a
TCP connection to MAVProxy's master (`--master tcpin:HOST:PORT`; TCP, so a busy MAVProxy holds
the replay back instead of losing datagrams):
  1. warm-up: a HEARTBEAT from sysid 251 every 100 ms until a line on stdin (MAVProxy drops the
     first frames its master receives; the test waits until one reaches the receiver);
  2. every frame of the log at RATE frames/s; prints "sent N". Should MAVProxy go away, the
     frames due meanwhile are skipped and the connection made again as soon as it listens;
  3. end marker: a HEARTBEAT from sysid 252 every 100 ms until stdin closes (everything before
     it has been forwarded once the receiver records one).
What MAVProxy sends to its master (its own heartbeats) is read and dropped.
"""
import os
import select
import socket
import sys
import time

os.environ["MAVLINK20"] = "1"
from pymavlink import mavutil  # noqa: E402
from pymavlink.dialects.v20 import ardupilotmega as mavlink2  # noqa: E402

path, addr, rate, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
host, port = addr.rsplit(":", 1)
dest = (host, int(port))

log = mavutil.mavlink_connection(path, dialect="ardupilotmega", robust_parsing=True)
frames = []
while True:
    m = log.recv_match()
    if m is None:
        break
    if m.get_type() == "BAD_DATA":
        continue
    frames.append(bytes(m.get_msgbuf()))
with open(out, "w") as f:
    f.write("".join(frame.hex() + "\n" for frame in frames))

conn = None


def connected():
    """The connection to MAVProxy, made (again) if it listens; None while it does not."""
    global conn
    if conn is None:
        try:
            conn = socket.create_connection(dest, timeout=1)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            conn = None
    return conn


def send(data):
    """Sends `data` whole, or drops it (and the connection) if MAVProxy went away."""
    global conn
    c = connected()
    if c is None:
        return
    try:
        c.sendall(data)
        while select.select([c], [], [], 0)[0]:
            if not c.recv(65536):
                raise OSError("closed")
    except OSError:
        c.close()
        conn = None


def heartbeats_until_stdin(sysid):
    """A heartbeat from `sysid` every 100 ms until stdin has a line (or closes)."""
    mav = mavlink2.MAVLink(None, srcSystem=sysid, srcComponent=1)
    while True:
        send(mav.heartbeat_encode(6, 8, 0, 0, 0).pack(mav))
        ready, _, _ = select.select([sys.stdin], [], [], 0.1)
        if ready:
            return sys.stdin.readline()


while connected() is None:
    time.sleep(0.05)
heartbeats_until_stdin(251)
start = time.monotonic()
for n, frame in enumerate(frames):
    send(frame)
    wait = start + (n + 1) / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)
print("sent", len(frames), flush=True)
while heartbeats_until_stdin(252):
    pass
