"""Compares `ulog export` output with pyulog, value for value (run by tests/suite/ulog_export.rs).

usage: python ulog_export_check.py FORMAT EXPORT_DIR LOG.ulg...

For every topic instance pyulog reads, the exported table <EXPORT_DIR>/<log>/<topic>_<multi_id>.<fmt>
must have pyulog's columns (a char[n] array as one text column), pyulog's types (bool exported
as a boolean where pyulog holds int8) and pyulog's values: integers exactly, floats bit for bit
(NaN equal to NaN). The side tables must hold pyulog's initial parameters, logged messages and
information keys. Prints one JSON line of counts; exits 1 with the differences on any mismatch.
"""
import json
import os
import re
import sys

import numpy as np
import pyarrow.parquet as pq
from pyulog import ULog

FMT, OUT, LOGS = sys.argv[1], sys.argv[2], sys.argv[3:]
problems = []
counts = {"logs": 0, "tables": 0, "columns": 0, "values": 0}


def read_table(path):
    """Column name -> numpy array (or list of str), and name -> type string."""
    if FMT == "parquet":
        t = pq.read_table(path)
        cols = {}
        types = {}
        for name, col in zip(t.column_names, t.columns):
            types[name] = str(col.type)
            cols[name] = col.to_pylist() if str(col.type) == "string" else col.to_numpy()
        return cols, types
    import pandas as pd

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    return {c: list(df[c]) for c in df.columns}, None


def csv_to(values, dtype):
    if dtype.kind == "f":
        return np.array([float(v) for v in values], dtype=np.float64).astype(dtype)
    return np.array([int(v) for v in values], dtype=dtype)


ARROW_TYPE = {
    "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16",
    "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
    "float32": "float", "float64": "double",
}


def char_text(ulog_data, base, n):
    """pyulog keeps char[n] as n int8 columns: join them to text, up to the first NUL."""
    arr = np.stack([ulog_data.data[f"{base}[{i}]"] for i in range(n)], axis=1).astype(np.uint8)
    out = []
    for row in arr:
        raw = bytes(row)
        raw = raw.split(b"\0", 1)[0]
        out.append(raw.decode("utf-8", errors="ignore"))
    return out


for log in LOGS:
    stem = os.path.splitext(os.path.basename(log))[0]
    u = ULog(log)
    counts["logs"] += 1
    fmt_fields = {}
    for d in u.data_list:
        path = os.path.join(OUT, stem, f"{d.name}_{d.multi_id}.{FMT}")
        where = f"{stem}/{d.name}_{d.multi_id}"
        if not os.path.exists(path):
            problems.append(f"{where}: no table")
            continue
        cols, types = read_table(path)
        counts["tables"] += 1
        # Which pyulog fields are char arrays: from the field types.
        char_groups = {}
        for f in d.field_data:
            m = re.match(r"^(.*)\[(\d+)\]$", f.field_name)
            if f.type_str == "char" and m:
                char_groups.setdefault(m.group(1), 0)
                char_groups[m.group(1)] += 1
        expected_names = []
        seen_groups = set()
        for f in d.field_data:
            m = re.match(r"^(.*)\[(\d+)\]$", f.field_name)
            if f.type_str == "char" and m and m.group(1) in char_groups:
                if m.group(1) not in seen_groups:
                    seen_groups.add(m.group(1))
                    expected_names.append(m.group(1))
            else:
                expected_names.append(f.field_name)
        if list(cols.keys()) != expected_names:
            problems.append(f"{where}: columns {list(cols.keys())[:8]}... != pyulog {expected_names[:8]}...")
            continue
        for f in d.field_data:
            name = f.field_name
            m = re.match(r"^(.*)\[(\d+)\]$", name)
            if f.type_str == "char" and m and m.group(1) in char_groups:
                base = m.group(1)
                if m.group(2) != "0":
                    continue
                theirs = char_text(d, base, char_groups[base])
                ours = cols[base]
                counts["columns"] += 1
                counts["values"] += len(theirs)
                if types is not None and types[base] != "string":
                    problems.append(f"{where}.{base}: type {types[base]}, expected string")
                if list(ours) != theirs:
                    problems.append(f"{where}.{base}: text differs: {list(ours)[:3]} vs {theirs[:3]}")
                continue
            theirs = d.data[name]
            ours = cols[name]
            counts["columns"] += 1
            counts["values"] += len(theirs)
            if f.type_str == "bool":
                if types is not None and types[name] != "bool":
                    problems.append(f"{where}.{name}: type {types[name]}, expected bool")
                ours_b = np.array([v in (True, "true", "True") for v in ours]) if types is None else np.asarray(ours, dtype=bool)
                if not np.array_equal(ours_b, theirs != 0):
                    problems.append(f"{where}.{name}: bool values differ")
                continue
            if f.type_str == "char":
                theirs_t = [bytes([int(v) & 0xFF]).split(b"\0")[0].decode("utf-8", errors="ignore") for v in theirs]
                if list(ours) != theirs_t:
                    problems.append(f"{where}.{name}: char values differ")
                continue
            if types is not None:
                want = ARROW_TYPE[theirs.dtype.name]
                if types[name] != want:
                    problems.append(f"{where}.{name}: type {types[name]}, pyulog {theirs.dtype.name}")
                    continue
            else:
                ours = csv_to(ours, theirs.dtype)
            ours = np.asarray(ours)
            if ours.shape != theirs.shape:
                problems.append(f"{where}.{name}: {ours.shape[0]} rows, pyulog {theirs.shape[0]}")
                continue
            if theirs.dtype.kind == "f":
                # Bit for bit, except that any NaN equals any NaN.
                same = (ours.view(np.uint8).reshape(-1, theirs.itemsize) == theirs.astype(theirs.dtype.newbyteorder("=")).view(np.uint8).reshape(-1, theirs.itemsize)).all(axis=1)
                same |= np.isnan(ours) & np.isnan(theirs)
                ok = bool(same.all())
            else:
                ok = np.array_equal(ours.astype(theirs.dtype), theirs)
            if not ok:
                bad = int(np.argmax(~same)) if theirs.dtype.kind == "f" else int(np.argmax(ours.astype(theirs.dtype) != theirs))
                problems.append(f"{where}.{name}: row {bad}: {ours[bad]!r} vs pyulog {theirs[bad]!r}")
    # Side tables.
    params, _ = read_table(os.path.join(OUT, stem, f"parameters.{FMT}"))
    initial = {}
    for kind, name, value in zip(params["kind"], params["name"], params["value"]):
        if kind == "initial":
            initial[name] = float(value)
    for name, value in u.initial_parameters.items():
        if name not in initial:
            problems.append(f"{stem}: parameter {name} missing")
        elif np.float32(initial[name]) != np.float32(value) and not (np.isnan(initial[name]) and np.isnan(value)):
            problems.append(f"{stem}: parameter {name} = {initial[name]} vs pyulog {value}")
    if len(initial) != len(u.initial_parameters):
        problems.append(f"{stem}: {len(initial)} initial parameters, pyulog {len(u.initial_parameters)}")
    logged, _ = read_table(os.path.join(OUT, stem, f"logged_messages.{FMT}"))
    theirs = [(m.timestamp, m.message) for m in u.logged_messages] + [
        (m.timestamp, m.message) for tagged in u.logged_messages_tagged.values() for m in tagged
    ]
    ours = list(zip([int(t) for t in logged["timestamp"]], logged["text"]))
    if sorted(ours) != sorted(theirs):
        problems.append(f"{stem}: logged messages differ ({len(ours)} vs pyulog {len(theirs)})")
    info, _ = read_table(os.path.join(OUT, stem, f"info.{FMT}"))
    keys = {k for k, multi in zip(info["key"], info["multi"]) if multi in (False, "false")}
    if keys != set(u.msg_info_dict.keys()):
        problems.append(f"{stem}: info keys differ: {sorted(keys ^ set(u.msg_info_dict.keys()))[:5]}")

print(json.dumps({"format": FMT, **counts, "problems": len(problems)}))
if problems:
    for p in problems[:60]:
        print(p, file=sys.stderr)
    sys.exit(1)
