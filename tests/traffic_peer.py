#!/usr/bin/env python3
"""pymavlink peers and the reference geometry for tests/suite/traffic.rs (issue 42).

Our vehicle (sysid 4) holds position and reports it (HEARTBEAT, GLOBAL_POSITION_INT); other
traffic is reported around it. Every distance the receiver is to find is computed here with
geographiclib (Karney's geodesics on the WGS-84 ellipsoid, the reference the receiver is checked
against), from the positions exactly as they go on the wire (degE7 integers for MAVLink, five
decimals for SBS). Each scenario prints one JSON object on standard output.

    traffic_peer.py crossing  --port P    an aircraft crossing 400 m north of the vehicle, by
                                          ADSB_VEHICLE from a ground receiver (sysid 200)
    traffic_peer.py remote-id --port P    a Remote ID drone 250 m east (BASIC_ID + LOCATION
                                          from a Remote ID receiver, sysid 201)
    traffic_peer.py own-relay --port P    vehicle 5 relaying its own ADS-B out at its own
                                          position (its ADS-B-in hears its own transponder)
    traffic_peer.py sbs-lines             the crossing as SBS-1 lines (dump1090's layout),
                                          with the vehicle's position, for the test to serve
"""
import argparse
import datetime
import json
import os
import socket
import sys
import time

os.environ.setdefault("MAVLINK20", "1")
from geographiclib.geodesic import Geodesic  # noqa: E402
from pymavlink.dialects.v20 import ardupilotmega as mavlink2  # noqa: E402

HOST = "127.0.0.1"
WGS84 = Geodesic.WGS84
# Our vehicle: sysid 4, holding 488 m above mean sea level.
VEHICLE = 4
HOME_E7 = (473_977_420, 85_455_940)
HOME_MSL_MM = 488_000
# The crossing: 400 m north abeam, along 090°, from 3 km west to 3 km east, 100 m a step,
# 45 m above the vehicle on QNH.
ABEAM_M = 400.0
STEP_M = 100.0
STEPS = 61
ABOVE_M = 45.0
ICAO = 0xA1B2C3
CALLSIGN = b"N123AB"
# ADSB_FLAGS: coords, altitude, heading, velocity, callsign, vertical velocity valid.
ADSB_FLAGS = 1 | 2 | 4 | 8 | 16 | 128


def deg(e7):
    return e7 / 1e7


def distance(a_e7, b_deg):
    """The geodesic from a degE7 point to a degree point: length (m) and azimuth."""
    g = WGS84.Inverse(deg(a_e7[0]), deg(a_e7[1]), b_deg[0], b_deg[1])
    return g["s12"], g["azi1"] % 360.0


def encode(msg, mav):
    """`msg` as a frame from `mav`'s system and component, with its next sequence number.
    (pymavlink's pack() stamps `mav.seq` but only MAVLink.send() moves it on.)"""
    frame = bytes(msg.pack(mav))
    mav.seq = (mav.seq + 1) % 256
    return frame


def heartbeat():
    return mavlink2.MAVLink_heartbeat_message(2, 3, 81, 0, 4, 3)


def own_position(lat_e7, lon_e7, msl_mm):
    return mavlink2.MAVLink_global_position_int_message(
        0, lat_e7, lon_e7, msl_mm, 30_000, 0, 0, 0, 9000
    )


def crossing_points():
    """Each report's position as degE7, along the crossing."""
    abeam = WGS84.Direct(deg(HOME_E7[0]), deg(HOME_E7[1]), 0.0, ABEAM_M)
    points = []
    for i in range(STEPS):
        x = -3000.0 + STEP_M * i
        p = WGS84.Direct(abeam["lat2"], abeam["lon2"], 90.0 if x >= 0 else 270.0, abs(x))
        points.append((round(p["lat2"] * 1e7), round(p["lon2"] * 1e7)))
    return points


class Peer:
    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.to = (HOST, port)
        self.senders = {}

    def send(self, sysid, msg, compid=1):
        mav = self.senders.get((sysid, compid))
        if mav is None:
            mav = mavlink2.MAVLink(None, srcSystem=sysid, srcComponent=compid)
            self.senders[(sysid, compid)] = mav
        self.sock.sendto(encode(msg, mav), self.to)


def vehicle_reports(peer, sysid=VEHICLE, lat_e7=HOME_E7[0], lon_e7=HOME_E7[1]):
    peer.send(sysid, heartbeat())
    peer.send(sysid, own_position(lat_e7, lon_e7, HOME_MSL_MM))


def crossing(port):
    peer = Peer(port)
    for _ in range(3):
        vehicle_reports(peer)
        time.sleep(0.05)
    points = crossing_points()
    distances, bearings = [], []
    altitude_mm = HOME_MSL_MM + int(ABOVE_M * 1000)
    for i, (lat, lon) in enumerate(points):
        if i % 10 == 0:
            peer.send(VEHICLE, heartbeat())
        peer.send(VEHICLE, own_position(HOME_E7[0], HOME_E7[1], HOME_MSL_MM))
        report = mavlink2.MAVLink_adsb_vehicle_message(
            ICAO, lat, lon, 0, altitude_mm, 9000, 25_000, 0, CALLSIGN, 1, 0, ADSB_FLAGS, 7000
        )
        peer.send(200, report)
        s, azi = distance(HOME_E7, (deg(lat), deg(lon)))
        distances.append(s)
        bearings.append(azi)
        time.sleep(0.05)
    # The vehicle goes on reporting, so nothing ages out while the test reads.
    for _ in range(5):
        vehicle_reports(peer)
        time.sleep(0.1)
    return {
        "icao": "%06X" % ICAO,
        "callsign": CALLSIGN.decode(),
        "distances": distances,
        "bearings": bearings,
        "vertical_m": ABOVE_M,
    }


def remote_id(port):
    peer = Peer(port)
    vehicle_reports(peer)
    uas_id = b"FOX-RID-0042"
    at = WGS84.Direct(deg(HOME_E7[0]), deg(HOME_E7[1]), 90.0, 250.0)
    lat, lon = round(at["lat2"] * 1e7), round(at["lon2"] * 1e7)
    # Geodetic altitude (above the ellipsoid) 30 m over the vehicle's mean-sea-level figure.
    geodetic = HOME_MSL_MM / 1000 + 30.0
    zeros = [0] * 20
    for _ in range(4):
        vehicle_reports(peer)
        peer.send(201, mavlink2.MAVLink_open_drone_id_basic_id_message(
            0, 0, zeros, 1, 2, list(uas_id.ljust(20, b"\0"))))
        peer.send(201, mavlink2.MAVLink_open_drone_id_location_message(
            0, 0, zeros, 2, 9000, 500, 0, lat, lon, -1000.0, geodetic, 1, 30.0,
            10, 4, 3, 2, 0xFFFF, 0))
        time.sleep(0.2)
    s, _ = distance(HOME_E7, (deg(lat), deg(lon)))
    return {"uas_id": uas_id.decode(), "distance": s, "vertical_m": 30.0}


def own_relay(port):
    """Vehicle 5, 20 km from vehicle 4, moves 10 m a report and relays its own ADS-B out at
    its own position, a few metres off (its transponder's GNSS is not the autopilot's)."""
    peer = Peer(port)
    start = WGS84.Direct(deg(HOME_E7[0]), deg(HOME_E7[1]), 180.0, 20_000.0)
    own_icao = 0xC0FFEE
    for i in range(20):
        here = WGS84.Direct(start["lat2"], start["lon2"], 45.0, 10.0 * i)
        lat, lon = round(here["lat2"] * 1e7), round(here["lon2"] * 1e7)
        vehicle_reports(peer)
        vehicle_reports(peer, sysid=5, lat_e7=lat, lon_e7=lon)
        out = WGS84.Direct(here["lat2"], here["lon2"], 300.0, 6.0)
        report = mavlink2.MAVLink_adsb_vehicle_message(
            own_icao, round(out["lat2"] * 1e7), round(out["lon2"] * 1e7), 1,
            HOME_MSL_MM + 50_000, 4500, 1000, 0, b"FOX05", 14, 0, ADSB_FLAGS, 1200)
        peer.send(5, report)
        time.sleep(0.05)
    return {"icao": "%06X" % own_icao, "sysid": 5}


def sbs_time(t):
    """dump1090's date and time fields: `2026/09/24,14:32:03.912`."""
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return d.strftime("%Y/%m/%d,%H:%M:%S.") + "%03d" % (d.microsecond // 1000)


def sbs_lines():
    """The crossing as dump1090 writes it: per step an airborne position (MSG,3: altitude in
    feet, five decimals), with an identification (MSG,1) and a velocity (MSG,4) now and then.
    22 fields each; the fields a type does not carry are empty."""
    icao = "4CA2D6"
    feet = round((HOME_MSL_MM / 1000 + ABOVE_M) / 0.3048)
    now = time.time()
    lines, distances, steps = [], [], []
    abeam = WGS84.Direct(deg(HOME_E7[0]), deg(HOME_E7[1]), 0.0, ABEAM_M)
    for i in range(STEPS):
        x = -3000.0 + STEP_M * i
        p = WGS84.Direct(abeam["lat2"], abeam["lon2"], 90.0 if x >= 0 else 270.0, abs(x))
        lat, lon = "%1.5f" % p["lat2"], "%1.5f" % p["lon2"]
        stamp = sbs_time(now + i * 0.05)
        head = f"1,1,{icao},1,{stamp},{stamp}"
        step = []
        if i % 10 == 0:
            step.append(f"MSG,1,{head},RYR12AB ,,,,,,,,,,,")
            step.append(f"MSG,4,{head},,,485,90,,,0,,,,,0")
        step.append(f"MSG,3,{head},,{feet},,,{lat},{lon},,,0,,0,0")
        steps.append(step)
        s, _ = distance(HOME_E7, (float(lat), float(lon)))
        distances.append(s)
    return {
        "icao": icao,
        "callsign": "RYR12AB",
        "vehicle": {"lat_e7": HOME_E7[0], "lon_e7": HOME_E7[1], "msl_mm": HOME_MSL_MM},
        "steps": steps,
        "distances": distances,
        "vertical_m": feet * 0.3048 - HOME_MSL_MM / 1000,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["crossing", "remote-id", "own-relay", "sbs-lines"])
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    if args.scenario == "crossing":
        out = crossing(args.port)
    elif args.scenario == "remote-id":
        out = remote_id(args.port)
    elif args.scenario == "own-relay":
        out = own_relay(args.port)
    else:
        out = sbs_lines()
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
