#!/usr/bin/env python3
"""Vehicles that stamp SYSTEM_TIME just before they send it, as a real autopilot does.

pymavlink (an independent MAVLink implementation) sends, over loopback UDP, for each of
--vehicles systems (sysid 11, 12, ...) a HEARTBEAT and a SYSTEM_TIME at --rate-hz, with
time_unix_usec read from the clock right before the datagram goes out; and junk datagrams to
--junk-port. Prints the number of SYSTEM_TIME frames sent.
"""
import argparse, os, random, socket, time

os.environ.setdefault("MAVLINK20", "1")
from pymavlink.dialects.v20 import ardupilotmega as mavlink2  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--junk-port", type=int, required=True)
ap.add_argument("--vehicles", type=int, default=5)
ap.add_argument("--rate-hz", type=float, default=2.0)
ap.add_argument("--duration-s", type=float, default=9.0)
args = ap.parse_args()

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
peers = [mavlink2.MAVLink(None, srcSystem=11 + k, srcComponent=1) for k in range(args.vehicles)]
boot = time.time()
rnd = random.Random(7)
start = time.monotonic()
period = 1.0 / args.rate_hz
sent = 0
tick = 0
while time.monotonic() - start < args.duration_s:
    for mav in peers:
        hb = mavlink2.MAVLink_heartbeat_message(2, 3, 81, 0, 4, 3)
        sock.sendto(bytes(hb.pack(mav)), ("127.0.0.1", args.port))
        now = time.time()
        st = mavlink2.MAVLink_system_time_message(int(now * 1e6), int((now - boot) * 1000))
        sock.sendto(bytes(st.pack(mav)), ("127.0.0.1", args.port))
        sent += 1
    sock.sendto(bytes(rnd.getrandbits(8) for _ in range(64)), ("127.0.0.1", args.junk_port))
    tick += 1
    time.sleep(max(0.0, start + tick * period - time.monotonic()))
print(sent)
