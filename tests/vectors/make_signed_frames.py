#!/usr/bin/env python3
"""Known-answer vectors for MAVLink 2 signing, made by pymavlink (an independent implementation).

usage: make_signed_frames.py > tests/vectors/signed_frames.txt   (needs pymavlink 2.4.50)

Each line: a label, the secret key in hex, the frame in hex. The frames are a HEARTBEAT and a
SYSTEM_TIME signed with key 00 01 .. 1f, link id 7, at fixed signing timestamps, so the output
is the same on every run. src/wire/signing.rs checks that our verifier accepts each frame and
refuses it with any single byte of the signed part or of the key changed.
"""
import os
os.environ["MAVLINK20"] = "1"
from pymavlink.dialects.v20 import ardupilotmega as apm


class Sink:
    def write(self, data):
        pass


def signed(key, link_id, timestamp, sysid, build):
    mav = apm.MAVLink(Sink(), srcSystem=sysid, srcComponent=1)
    mav.signing.secret_key = key
    mav.signing.link_id = link_id
    mav.signing.timestamp = timestamp
    mav.signing.sign_outgoing = True
    return bytes(build(mav).pack(mav))


key = bytes(range(32))
frames = [
    ("heartbeat", signed(key, 7, 123_456_789_000, 5, lambda m: m.heartbeat_encode(2, 3, 81, 0, 4, 3))),
    ("system_time", signed(key, 7, 123_456_789_001, 5, lambda m: m.system_time_encode(1_790_000_000_123_456, 42))),
    ("heartbeat_link0_other_key", signed(bytes(range(100, 132)), 0, 7, 200, lambda m: m.heartbeat_encode(1, 12, 0, 0, 3, 3))),
]
for label, frame in frames:
    k = key if "other_key" not in label else bytes(range(100, 132))
    print(label, k.hex(), frame.hex())
