#!/usr/bin/env python3
"""Check a receive log against what send_mix.py sent (its manifest).

usage: check_send_mix.py MANIFEST RECEIVE_JSONL... [--signing-key HEX]

The truth is taken from pymavlink, an independent MAVLink implementation: each datagram in the
manifest is parsed on its own (fresh parser, robust mode) and every message it yields with a valid
CRC is a frame the receiver must record. With --signing-key the receiver is expected to verify
signatures: the manifest's bad-signature frame must be absent and signed frames carry sig "ok".
The receive log must hold exactly those frames: none missing, none extra, fields matching.
"""
import collections, json, os, sys

os.environ.setdefault("MAVLINK20", "1")
from pymavlink.dialects.v20 import ardupilotmega as mavlink2  # noqa: E402


def expected_frames(manifest, with_key):
    frames = collections.Counter()
    for line in open(manifest):
        entry = json.loads(line)
        data = bytes.fromhex(entry["hex"])
        parser = mavlink2.MAVLink(None)
        parser.robust_parsing = True
        for m in parser.parse_buffer(data) or []:
            t = m.get_type()
            if t == "BAD_DATA" or t.startswith("UNKNOWN"):
                continue
            if with_key and entry["expect"].startswith("ok_unverified"):
                continue  # bad signature: a receiver with the key rejects it
            buf = m.get_msgbuf()
            signed = buf[0] == 0xFD and bool(buf[2] & 1)
            frames[(m.get_srcSystem(), m.get_srcComponent(), m.get_msgId(), t, m.get_seq(),
                    1 if buf[0] == 0xFE else 2, signed)] += 1
    return frames


def received_frames(paths, with_key):
    frames = collections.Counter()
    problems = []
    for path in paths:
        for n, line in enumerate(open(path), 1):
            r = json.loads(line)
            keys = list(r)[:9]
            if keys != ["recv_utc", "mono_ns", "link", "sysid", "compid", "msgid", "msg", "seq", "len"]:
                problems.append(f"{path}:{n}: keys {keys}")
            signed = bool(r.get("signed", False))
            if signed and with_key and r.get("sig") != "ok":
                problems.append(f"{path}:{n}: signed frame without sig ok: {r}")
            frames[(r["sysid"], r["compid"], r["msgid"], r["msg"], r["seq"], r["ver"], signed)] += 1
    return frames, problems


def main():
    args = sys.argv[1:]
    key = None
    if "--signing-key" in args:
        i = args.index("--signing-key")
        key = args[i + 1]
        del args[i:i + 2]
    tlogs = []
    while "--tlog" in args:
        i = args.index("--tlog")
        tlogs.append(args[i + 1])
        del args[i:i + 2]
    manifest, logs = args[0], args[1:]
    want = expected_frames(manifest, key is not None)
    got, problems = received_frames(logs, key is not None)
    missing = want - got
    extra = got - want
    for f in sorted(missing):
        problems.append(f"missing: {f} x{missing[f]}")
    for f in sorted(extra):
        problems.append(f"extra (not a valid frame sent): {f} x{extra[f]}")
    for tlog in tlogs:
        # The daemon's raw capture, read back by pymavlink's own tlog reader.
        from pymavlink import mavutil
        conn = mavutil.mavlink_connection(tlog, dialect="ardupilotmega")
        n = 0
        while conn.recv_match() is not None:
            n += 1
        if n != sum(got.values()):
            problems.append(f"{tlog}: pymavlink reads {n} messages, the receive log has {sum(got.values())}")
        else:
            print(f"interop: pymavlink reads all {n} frames back from the daemon's .tlog")
    print(f"interop: {sum(want.values())} valid frames sent, {sum(got.values())} receipts, "
          f"{len(problems)} problems ({'signing key configured' if key else 'no signing key'})")
    for p in problems:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
