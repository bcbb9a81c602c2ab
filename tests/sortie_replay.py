#!/usr/bin/env python3
"""Replays a flight log's own telemetry to a receiver over UDP, at the flight's pace (tests/suite/sortie.rs).

The vehicle booted at BOOT_US on this machine's clock (the receiver's clock too, on loopback):
the message for flight time t (seconds on the log's boot clock) is sent when the clock reads
BOOT_US + t. HEARTBEAT once a second carries the log's own arming state and flight mode
(vehicle_status, read with pyulog); SYSTEM_TIME half a second later carries time_boot_ms and
time_unix_usec read from the clock at the moment of sending (so any lateness of the sender shows
in the values, as on a vehicle). Nothing is sent between --cut and --resume: the silence.

Prints one JSON line per message sent: {"msg", "flight_s", "time_boot_ms", "time_unix_usec"}.
Frames are made by pymavlink (MAVLink 2, common dialect), independent of the receiver.
"""
import argparse, json, os, socket, sys, time

os.environ.setdefault("MAVLINK20", "1")
from pymavlink.dialects.v20 import common as mavlink2  # noqa: E402
from pyulog import ULog  # noqa: E402

# PX4's nav_state to its custom mode: main mode in bits 16..23, sub mode in bits 24..31.
PX4_MODE = {0: (1, 0), 1: (2, 0), 2: (3, 0), 3: (4, 4), 4: (4, 3), 5: (4, 5), 10: (5, 0),
            14: (6, 0), 15: (7, 0), 17: (4, 2), 18: (4, 6)}


def vehicle_state(ulog):
    """[(boot_s, armed, nav_state)] from vehicle_status."""
    try:
        d = ulog.get_dataset("vehicle_status").data
    except (KeyError, IndexError, ValueError):
        return []
    return [(int(t) / 1e6, int(a) == 2, int(n))
            for t, a, n in zip(d["timestamp"], d["arming_state"], d["nav_state"])]


def state_at(states, t):
    armed, nav = False, 0
    for ts, a, n in states:
        if ts > t:
            break
        armed, nav = a, n
    return armed, nav


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ulog", required=True)
    ap.add_argument("--sysid", type=int, required=True)
    ap.add_argument("--boot-us", type=int, required=True)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--cut", type=float, required=True)
    ap.add_argument("--resume", type=float, required=True)
    ap.add_argument("--end", type=float, required=True)
    a = ap.parse_args()

    states = vehicle_state(ULog(a.ulog, ["vehicle_status"]))
    mav = mavlink2.MAVLink(None, srcSystem=a.sysid, srcComponent=1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    boot = a.boot_us / 1e6

    plan = []
    t = a.start
    while t <= a.end + 1e-9:
        if t <= a.cut + 1e-9 or t >= a.resume - 1e-9:
            plan.append((t, "HEARTBEAT"))
            if t + 0.5 <= a.cut or t >= a.resume - 1e-9:
                plan.append((t + 0.5, "SYSTEM_TIME"))
        t += 1.0
    plan.sort()

    for flight_s, name in plan:
        due = boot + flight_s
        while True:
            left = due - time.time()
            if left <= 0:
                break
            time.sleep(min(left, 0.05) if left > 0.002 else 0)
        now = time.time()
        boot_ms = int((now - boot) * 1000)
        unix_us = int(now * 1e6)
        if name == "HEARTBEAT":
            armed, nav = state_at(states, flight_s)
            main_mode, sub_mode = PX4_MODE.get(nav, (0, 0))
            base = 1 | (128 if armed else 0)
            msg = mavlink2.MAVLink_heartbeat_message(2, 12, base, (main_mode << 16) | (sub_mode << 24),
                                                     4 if armed else 3, 3)
        else:
            msg = mavlink2.MAVLink_system_time_message(unix_us, boot_ms)
        sock.sendto(bytes(msg.pack(mav)), ("127.0.0.1", a.port))
        print(json.dumps({"msg": name, "flight_s": now - boot, "time_boot_ms": boot_ms,
                          "time_unix_usec": unix_us}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
