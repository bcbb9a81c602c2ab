"""Times pyulog on the given .ulg files (best of N runs each); prints one JSON object.

usage: python ulog_pyulog_timer.py RUNS FILE.ulg...   (needs pyulog; run from the bench)
"""
import json, os, sys, time
from pyulog import ULog

runs = int(sys.argv[1])
out = {"pyulog": __import__("importlib.metadata").metadata.version("pyulog"), "files": {}}
for path in sys.argv[2:]:
    best = None
    best_cpu = None
    for _ in range(runs):
        c0 = time.process_time()
        t0 = time.perf_counter()
        ULog(path)
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0
        best = dt if best is None else min(best, dt)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    out["files"][os.path.basename(path)] = {
        "bytes": os.path.getsize(path), "seconds": best, "cpu_seconds": best_cpu}
print(json.dumps(out))
