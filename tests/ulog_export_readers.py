"""Reads `ulog export` Parquet back with DuckDB and Polars (run by tests/suite/ulog_export.rs).

usage: python ulog_export_readers.py EXPORT_DIR LOG.ulg...

For every table of every log (topic instances and the side tables): DuckDB and Polars must find
the same columns and rows as pyarrow; for every topic instance pyulog reads, the row count must
be pyulog's and every numeric or boolean column must hold pyulog's values as both read it
(floats bit for bit, any NaN equal to any NaN); the side tables must hold the same values in all
three readers (nulls included). Prints one JSON line of counts; exits 1 with the differences on
any mismatch.
"""
import json
import os
import sys

import duckdb
import numpy as np
import polars as pl
import pyarrow.parquet as pq
from pyulog import ULog

OUT, LOGS = sys.argv[1], sys.argv[2:]
problems = []
counts = {"logs": 0, "tables": 0, "columns": 0, "values": 0,
          "duckdb": duckdb.__version__, "polars": pl.__version__}
con = duckdb.connect()


def duck(path):
    """Column name -> numpy array (a masked array where a column has nulls), via DuckDB."""
    cur = con.execute("SELECT * FROM read_parquet(?)", [path])
    names = [d[0] for d in cur.description]
    arrays = cur.fetchnumpy()
    return names, {n: arrays[n] for n in names}


def same_values(ours, theirs):
    """Equal, floats bit for bit with any NaN equal to any NaN; ours is cast to theirs' type."""
    ours = np.asarray(ours)
    if ours.shape != theirs.shape:
        return False
    if theirs.dtype.kind == "f":
        ours = ours.astype(theirs.dtype)
        theirs = theirs.astype(theirs.dtype.newbyteorder("="))
        bits = ours.view(f"u{theirs.itemsize}") == theirs.view(f"u{theirs.itemsize}")
        return bool((bits | (np.isnan(ours) & np.isnan(theirs))).all())
    if theirs.dtype.kind == "b":
        return np.array_equal(ours.astype(bool), theirs)
    return np.array_equal(ours.astype(theirs.dtype), theirs)


def check_readers(path, where):
    """DuckDB and Polars against pyarrow: names and rows; returns the three readings."""
    arrow = pq.read_table(path)
    names, d = duck(path)
    p = pl.read_parquet(path)
    if names != arrow.column_names:
        problems.append(f"{where}: DuckDB columns {names[:5]}... != pyarrow {arrow.column_names[:5]}...")
    if p.columns != arrow.column_names:
        problems.append(f"{where}: Polars columns {p.columns[:5]}... != pyarrow {arrow.column_names[:5]}...")
    rows = arrow.num_rows
    if names and len(d[names[0]]) != rows:
        problems.append(f"{where}: DuckDB reads {len(d[names[0]])} rows, pyarrow {rows}")
    if p.height != rows:
        problems.append(f"{where}: Polars reads {p.height} rows, pyarrow {rows}")
    counts["tables"] += 1
    return arrow, d, p


for log in LOGS:
    stem = os.path.splitext(os.path.basename(log))[0]
    u = ULog(log)
    counts["logs"] += 1
    for data in u.data_list:
        where = f"{stem}/{data.name}_{data.multi_id}"
        path = os.path.join(OUT, stem, f"{data.name}_{data.multi_id}.parquet")
        if not os.path.exists(path):
            problems.append(f"{where}: no table")
            continue
        arrow, d, p = check_readers(path, where)
        n = len(data.data["timestamp"])
        if arrow.num_rows != n:
            problems.append(f"{where}: {arrow.num_rows} rows, pyulog {n}")
            continue
        for f in data.field_data:
            name = f.field_name
            if f.type_str == "char" or name not in arrow.column_names:
                continue  # char arrays are one text column: compared in tests/ulog_export_check.py
            theirs = data.data[name]
            if f.type_str == "bool":
                theirs = theirs != 0
            counts["columns"] += 1
            counts["values"] += 2 * n
            if not same_values(d[name], theirs):
                problems.append(f"{where}.{name}: DuckDB values differ from pyulog")
            if not same_values(p[name].to_numpy(), theirs):
                problems.append(f"{where}.{name}: Polars values differ from pyulog")
    for side in ["parameters", "logged_messages", "info", "dropouts"]:
        where = f"{stem}/{side}"
        arrow, d, p = check_readers(os.path.join(OUT, stem, f"{side}.parquet"), where)
        for name in arrow.column_names:
            want = arrow.column(name).to_pylist()
            got_duck = [None if v is np.ma.masked else v.item() if hasattr(v, "item") else v
                        for v in d[name]]
            got_polars = p[name].to_list()
            counts["columns"] += 1
            counts["values"] += 2 * len(want)
            if got_duck != want:
                problems.append(f"{where}.{name}: DuckDB {got_duck[:3]} vs pyarrow {want[:3]}")
            if got_polars != want:
                problems.append(f"{where}.{name}: Polars {got_polars[:3]} vs pyarrow {want[:3]}")

print(json.dumps({**counts, "problems": len(problems)}))
if problems:
    for line in problems[:60]:
        print(line, file=sys.stderr)
    sys.exit(1)
