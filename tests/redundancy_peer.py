#!/usr/bin/env python3
"""pymavlink peers for tests/suite/redundancy.rs (issue 28), and pymavlink's view of a tlog's radio
reports for tests/suite/corpus_radio.rs.

Frames are built with pymavlink's MAVLink 2 encoder (ardupilotmega dialect) and sent over UDP
sockets by this script, so which frame goes to which link is decided here, exactly: losses come
from a seeded random.Random, never from the network. Each scenario prints one JSON object on
standard output saying what it sent, for the test to compare with what the receiver counted.

    redundancy_peer.py two-links    --ports P1,P2 [--seed N]
    redundancy_peer.py link-cut     --ports P1,P2
    redundancy_peer.py two-senders  --ports P
    redundancy_peer.py radio-fade   --ports P
    redundancy_peer.py stream-stop  --ports P
    redundancy_peer.py radio-status FILE.tlog
"""
import argparse
import datetime
import json
import os
import random
import socket
import sys
import time

os.environ.setdefault("MAVLINK20", "1")
from pymavlink.dialects.v20 import ardupilotmega as mavlink2  # noqa: E402

HOST = "127.0.0.1"
# A multirotor running ArduPilot, armed and flying (what the heartbeat says does not matter).
MAV_TYPE_QUADROTOR, MAV_AUTOPILOT_ARDUPILOTMEGA = 2, 3


def utc_ms(t):
    """`t` (Unix seconds) as the receiver writes times, truncated to the millisecond."""
    whole = datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc)
    return whole.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % int((t - int(t)) * 1000)


def heartbeat():
    return mavlink2.MAVLink_heartbeat_message(
        MAV_TYPE_QUADROTOR, MAV_AUTOPILOT_ARDUPILOTMEGA, 81, 0, 4, 3
    )


def attitude(i):
    return mavlink2.MAVLink_attitude_message(i * 50, 0.01 * i, -0.02, 1.5, 0.0, 0.0, 0.1)


def position(i):
    return mavlink2.MAVLink_global_position_int_message(
        i * 100, 473_977_420 + i, 85_455_940 - i, 500_000, 20_000, 100, -50, 0, 9000
    )


def vfr_hud(i):
    return mavlink2.MAVLink_vfr_hud_message(12.0, 12.5, 90, 40, 500.0, 0.1)


def encode(msg, mav):
    """`msg` as a frame from `mav`'s system and component, with its next sequence number.
    (pymavlink's pack() stamps `mav.seq` but only MAVLink.send() moves it on.)"""
    frame = bytes(msg.pack(mav))
    mav.seq = (mav.seq + 1) % 256
    return frame


class Schedule:
    """Ticks at a fixed period on an absolute schedule: a late tick does not shift the rest."""

    def __init__(self, period_s):
        self.period = period_s
        self.start = time.monotonic()
        self.tick = 0

    def next(self):
        self.tick += 1
        time.sleep(max(0.0, self.start + self.tick * self.period - time.monotonic()))


def socket_to(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((HOST, 0))
    return sock, (HOST, port)


def two_links(ports, seed):
    """Sysid 9 sends HEARTBEAT at 1 Hz and ATTITUDE and GLOBAL_POSITION_INT at 20 Hz each for
    8 s (more than 256 frames, so the sequence wraps), every frame to both links, each link
    losing its own seeded share: 8 % on the first, 12 % on the second."""
    assert len(ports) == 2
    sock, _ = socket_to(ports[0])
    mav = mavlink2.MAVLink(None, srcSystem=9, srcComponent=1)
    loss = [0.08, 0.12]
    rnd = [random.Random(seed), random.Random(seed + 1)]
    got = [[], []]
    index = 0
    schedule = Schedule(0.05)
    for tick in range(160):
        messages = [attitude(tick), position(tick)]
        if tick % 20 == 0:
            messages.insert(0, heartbeat())
        for m in messages:
            frame = encode(m, mav)
            for k in range(2):
                # Every draw is made whatever the outcome: the pattern depends on the seed only.
                if rnd[k].random() >= loss[k]:
                    sock.sendto(frame, (HOST, ports[k]))
                    got[k].append(index)
            index += 1
        schedule.next()
    union = sorted(set(got[0]) | set(got[1]))
    return {
        "sysid": 9,
        "compid": 1,
        "frames": index,
        "links": [len(got[0]), len(got[1])],
        "union": len(union),
        "first": union[0],
        "last": union[-1],
        # What the receiver can know was sent: from the first frame any link brought to the last.
        "sent": union[-1] - union[0] + 1,
        "lost_both": [i for i in range(index) if i not in set(union)],
    }


def link_cut(ports):
    """Sysid 9 sends HEARTBEAT at 2 Hz and ATTITUDE at 10 Hz to two links for 3 s, then to the
    first link only for 7 s, then to both again for 2 s."""
    assert len(ports) == 2
    sock, _ = socket_to(ports[0])
    mav = mavlink2.MAVLink(None, srcSystem=9, srcComponent=1)
    schedule = Schedule(0.1)
    sent = {"both": 0, "first_only": 0}
    cut = {}
    last_heartbeat = None
    for tick in range(120):
        both = not (30 <= tick < 100)
        if tick == 30:
            cut["cut_utc"] = utc_ms(time.time())
        if tick == 100:
            cut["resumed_utc"] = utc_ms(time.time())
        messages = [attitude(tick)]
        if tick % 5 == 0:
            messages.insert(0, heartbeat())
            last_heartbeat = time.time()
        for m in messages:
            frame = encode(m, mav)
            sock.sendto(frame, (HOST, ports[0]))
            if both:
                sock.sendto(frame, (HOST, ports[1]))
            sent["both" if both else "first_only"] += 1
        schedule.next()
    return dict(cut, sent=sent, last_heartbeat_utc=utc_ms(last_heartbeat))


def two_senders(ports):
    """Two independent senders, each its own socket (so its own source port), both sysid 7
    compid 1 with the same HEARTBEAT identity, to one link for 5 s: each HEARTBEAT at 2 Hz and
    ATTITUDE and VFR_HUD at 10 Hz. The second sender's numbers run 100 behind the first's, so
    read as one sequence every switch would be a jump of 100 or 156."""
    assert len(ports) == 1
    senders = []
    for start_seq in (0, 156):
        sock, peer = socket_to(ports[0])
        mav = mavlink2.MAVLink(None, srcSystem=7, srcComponent=1)
        mav.seq = start_seq
        senders.append({"sock": sock, "peer": peer, "mav": mav, "frames": 0})
    schedule = Schedule(0.1)
    for tick in range(50):
        # One sender's frames of the tick, then the other's: the order is this loop's, not the
        # scheduler's.
        for s in senders:
            messages = [attitude(tick), vfr_hud(tick)]
            if tick % 5 == 0:
                messages.insert(0, heartbeat())
            for m in messages:
                s["sock"].sendto(encode(m, s["mav"]), s["peer"])
                s["frames"] += 1
        schedule.next()
    return {
        "sysid": 7,
        "compid": 1,
        "frames": [s["frames"] for s in senders],
        "sources": ["%s:%d" % s["sock"].getsockname() for s in senders],
    }


def radio_status(rssi, remrssi, rxerrors):
    """A SiK radio's report: txbuf 90, noise 40, remnoise 35, fixed 0."""
    return mavlink2.MAVLink_radio_status_message(rssi, remrssi, 90, 40, 35, rxerrors, 0)


def radio_fade(ports):
    """One link. A SiK radio (sysid 51, compid 68) reports RADIO_STATUS at 1 Hz; sysid 9 beats
    at 1 Hz. For 10 s remrssi falls 200, 190, ... 110 (each report just before that second's
    heartbeat); then the heartbeats stop for 5 s while the local radio goes on reporting with
    remrssi 255 (unknown); then both go on for 3 s with remrssi 180."""
    assert len(ports) == 1
    sock, peer = socket_to(ports[0])
    vehicle = mavlink2.MAVLink(None, srcSystem=9, srcComponent=1)
    radio = mavlink2.MAVLink(None, srcSystem=51, srcComponent=68)
    reports = []
    heartbeats = 0
    schedule = Schedule(1.0)
    last_before_cut = None
    for tick in range(18):
        if tick < 10:
            remrssi = 200 - 10 * tick
        elif tick < 15:
            remrssi = 255
        else:
            remrssi = 180
        report = {"rssi": 150 + tick, "remrssi": remrssi, "rxerrors": tick}
        sock.sendto(
            encode(radio_status(report["rssi"], remrssi, tick), radio), peer
        )
        reports.append(report)
        if not 10 <= tick < 15:
            sock.sendto(encode(heartbeat(), vehicle), peer)
            heartbeats += 1
            if tick < 10:
                last_before_cut = report
        schedule.next()
    return {
        "reports": reports,
        "last_before_cut": last_before_cut,
        "heartbeats": heartbeats,
        "txbuf": 90,
        "noise": 40,
        "remnoise": 35,
        "fixed": 0,
    }


def stream_stop(ports):
    """One link. Sysid 9 sends HEARTBEAT at 2 Hz and GLOBAL_POSITION_INT at 10 Hz for 14 s,
    then only the heartbeats for 6 s.

    The positions stop at the first tick at least 0.7 s into a second of UTC, so the second
    it stopped in holds most of its frames: the receiver must still say `stopped` (its last
    two whole seconds empty), not `slowed`, as it once did for such a stop."""
    assert len(ports) == 1
    sock, peer = socket_to(ports[0])
    mav = mavlink2.MAVLink(None, srcSystem=9, srcComponent=1)
    schedule = Schedule(0.1)
    positions = 0
    stopped_utc = None
    last_heartbeat = None
    tick = 0
    stop_tick = None
    while stop_tick is None or tick < stop_tick + 60:
        if tick % 5 == 0:
            sock.sendto(encode(heartbeat(), mav), peer)
            last_heartbeat = time.time()
        if stop_tick is None:
            now = time.time()
            if tick >= 140 and now - int(now) >= 0.7:
                stop_tick = tick
                stopped_utc = utc_ms(now)
            else:
                sock.sendto(encode(position(tick), mav), peer)
                positions += 1
        tick += 1
        schedule.next()
    return {
        "positions": positions,
        "stopped_utc": stopped_utc,
        "last_heartbeat_utc": utc_ms(last_heartbeat),
    }


def radio_reports(path):
    """Every radio report pymavlink reads from a tlog, in file order: RADIO_STATUS (109) and
    ArduPilot's older RADIO (166, what 2013 SiK firmware sent), which carry the same fields."""
    from pymavlink import mavutil

    log = mavutil.mavlink_connection(path, dialect="ardupilotmega")
    out = []
    while True:
        m = log.recv_match(type=["RADIO_STATUS", "RADIO"])
        if m is None:
            break
        out.append(
            {
                "msgid": m.get_msgId(),
                "msg": m.get_type(),
                "sysid": m.get_srcSystem(),
                "compid": m.get_srcComponent(),
                "seq": m.get_seq(),
                "fields": {
                    f: getattr(m, f)
                    for f in ("rxerrors", "fixed", "rssi", "remrssi", "txbuf", "noise", "remnoise")
                },
            }
        )
    return {"file": path, "reports": out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "scenario",
        choices=["two-links", "link-cut", "two-senders", "radio-fade", "stream-stop", "radio-status"],
    )
    ap.add_argument("file", nargs="?")
    ap.add_argument("--ports", default="")
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()
    ports = [int(p) for p in args.ports.split(",") if p]
    if args.scenario == "two-links":
        result = two_links(ports, args.seed)
    elif args.scenario == "link-cut":
        result = link_cut(ports)
    elif args.scenario == "two-senders":
        result = two_senders(ports)
    elif args.scenario == "radio-fade":
        result = radio_fade(ports)
    elif args.scenario == "stream-stop":
        result = stream_stop(ports)
    else:
        if not args.file:
            ap.error("radio-status needs a FILE")
        result = radio_reports(args.file)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
