#!/usr/bin/env python3
"""Compare receipt `fields` (from `tlog convert --fields all`) with pymavlink's decode of the same .tlog.

usage: pymavlink_fields.py FILE.tlog OURS.jsonl [FILE.tlog OURS.jsonl ...]
Needs pymavlink (2.4.50); dialect ardupilotmega, robust parsing, as the corpus oracle reads them.

Frames are paired in file order by (sysid, compid, msgid, seq), looking a little ahead on either side
for frames one reader returns and the other does not. For each pair, the field names must be the same
and in the same order, and every value equal: integers exactly, floats as the type they are on the wire
(both sides packed to float32 or float64 and compared bit for bit, NaN equal to NaN), strings exactly
(pymavlink reads char[] as ASCII with each other byte replaced by U+FFFD; ours maps each byte to the
character of the same value, so ours is turned back into bytes and read pymavlink's way).
Fields newer than pymavlink's dialect (ours has them after all of pymavlink's) are listed by message in
`ours_extra_fields` for the caller to check against the table (they must be extensions).

Prints one JSON object on stdout: per file the counts and the frames only one side returned, and the
first mismatches found.
"""
import json
import math
import os
import struct
import sys

os.environ.setdefault("MAVLINK20", "1")
from pymavlink import mavutil  # noqa: E402

LOOKAHEAD = 64
MAX_EXAMPLES = 20


def theirs(path):
    m = mavutil.mavlink_connection(path, dialect="ardupilotmega", robust_parsing=True)
    out = []
    while True:
        try:
            msg = m.recv_match()
        except Exception:  # a frame pymavlink cannot decode is bad data for it
            continue
        if msg is None:
            return out
        if msg.get_type() == "BAD_DATA":
            continue
        h = msg.get_header()
        out.append(((h.srcSystem, h.srcComponent, msg.get_msgId(), h.seq), msg))


def ours(path):
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            out.append(((r["sysid"], r["compid"], r["msgid"], r["seq"]), r))
    return out


def same_float(a, b, fmt):
    if isinstance(a, str):
        a = float(a)  # "NaN", "Infinity", "-Infinity"
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return struct.pack(fmt, a) == struct.pack(fmt, b)


def same_value(ours_v, theirs_v, ftype):
    if ftype == "char":
        if not isinstance(ours_v, str):
            return False
        return ours_v.encode("latin-1").decode("ascii", errors="replace") == theirs_v
    if isinstance(theirs_v, (list, tuple)):
        return (
            isinstance(ours_v, list)
            and len(ours_v) == len(theirs_v)
            and all(same_value(a, b, ftype) for a, b in zip(ours_v, theirs_v))
        )
    if ftype == "float":
        return same_float(ours_v, theirs_v, "<f")
    if ftype == "double":
        return same_float(ours_v, theirs_v, "<d")
    return type(ours_v) is int and ours_v == theirs_v


def compare(tlog, jsonl, report):
    a = ours(jsonl)
    b = theirs(tlog)
    name = os.path.splitext(os.path.basename(tlog))[0]
    res = {"ours": len(a), "pymavlink": len(b), "compared": 0, "fields_compared": 0,
           "mismatched_frames": 0, "ours_only": [], "pymavlink_only": []}
    i = j = 0
    while i < len(a) or j < len(b):
        if i < len(a) and j < len(b) and a[i][0] == b[j][0]:
            rec, msg = a[i][1], b[j][1]
            fields = rec.get("fields")
            names = list(msg.fieldnames)
            bad = []
            if fields is None:
                bad.append("no fields")
            elif list(fields.keys())[: len(names)] != names:
                bad.append(f"names {list(fields.keys())} != {names}")
            else:
                extra = list(fields.keys())[len(names):]
                if extra:
                    # Newer than pymavlink's dialect: the caller checks these are extensions.
                    known = report["ours_extra_fields"].setdefault(rec["msg"], [])
                    known.extend(x for x in extra if x not in known)
                for fname, ftype in zip(names, msg.fieldtypes):
                    res["fields_compared"] += 1
                    tv = getattr(msg, fname)
                    if not same_value(fields[fname], tv, ftype):
                        bad.append(f"{fname}: ours {fields[fname]!r} pymavlink {tv!r} ({ftype})")
            res["compared"] += 1
            if bad:
                res["mismatched_frames"] += 1
                if len(report["examples"]) < MAX_EXAMPLES:
                    report["examples"].append({"file": name, "msg": rec["msg"], "line": i + 1, "diff": bad[:5]})
            i += 1
            j += 1
            continue
        # Out of step: the side whose next frame the other holds a little further on has frames
        # the other lacks before it; with neither, both frames are unpaired.
        ahead_a = ahead_b = None
        if i < len(a) and j < len(b):
            ahead_a = next((k - i for k in range(i, min(len(a), i + LOOKAHEAD)) if a[k][0] == b[j][0]), None)
            ahead_b = next((k - j for k in range(j, min(len(b), j + LOOKAHEAD)) if b[k][0] == a[i][0]), None)
        take_a = j >= len(b) or (ahead_a is not None and (ahead_b is None or ahead_a <= ahead_b))
        take_b = i >= len(a) or (ahead_b is not None and not take_a)
        if not take_a and not take_b:
            take_a = take_b = True
        if take_a:
            r = a[i][1]
            res["ours_only"].append({"msg": r["msg"], "src": f'{r["sysid"]}:{r["compid"]}', "line": i + 1})
            i += 1
        if take_b:
            msg = b[j][1]
            h = msg.get_header()
            res["pymavlink_only"].append({"msg": msg.get_type(), "src": f"{h.srcSystem}:{h.srcComponent}", "index": j})
            j += 1
    report["files"][name] = res


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    report = {"files": {}, "examples": [], "ours_extra_fields": {}}
    for tlog, jsonl in zip(args[::2], args[1::2]):
        compare(tlog, jsonl, report)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
