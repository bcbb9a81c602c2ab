"""A ground station on one of the receiver's forward outputs, as pymavlink is one.

usage: forward_ground_station.py udp|tcp HOST:PORT COUNT OUT

udp: listens on HOST:PORT (the forward sends there); tcp: connects to the forward's listener.
Prints "ready" once listening or connected, reads COUNT messages (BAD_DATA included, as "BAD"),
writes each frame as pymavlink received it (get_msgbuf) as one hex line to OUT, then sends a
HEARTBEAT back to the forward (which must reach no link) and prints "sent". It stays connected
until its stdin closes.
"""
import os
import socket
import sys
import time

os.environ["MAVLINK20"] = "1"  # parse MAVLink 2 as well as 1
from pymavlink import mavutil  # noqa: E402

mode, addr, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
url = ("udpin:" if mode == "udp" else "tcp:") + addr
conn = mavutil.mavlink_connection(url, dialect="ardupilotmega", source_system=200,
                                  source_component=190, robust_parsing=True)
if mode == "udp":
    # Room for a burst: the test sends at a steady pace, but this reader is Python.
    try:
        conn.port.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    except OSError:
        pass
print("ready", flush=True)
got = []
deadline = time.time() + 60
while len(got) < count and time.time() < deadline:
    m = conn.recv_match(blocking=True, timeout=1)
    if m is None:
        continue
    if m.get_type() == "BAD_DATA":
        got.append("BAD " + bytes(m.data).hex())
    else:
        got.append(bytes(m.get_msgbuf()).hex())
with open(out, "w") as f:
    f.write("".join(line + "\n" for line in got))
# A ground station talking back: the receiver must read and discard it.
conn.mav.heartbeat_send(6, 8, 0, 0, 0)
print("sent", len(got), flush=True)
sys.stdin.read()
