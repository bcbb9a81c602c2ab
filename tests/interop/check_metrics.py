#!/usr/bin/env python3
"""Check the daemon's /metrics with a real Prometheus parser, and its counts against the receive log.

usage: check_metrics.py fetch HTTP_ADDR OUT      wait until the receipt counters are settled, save the text
       check_metrics.py check METRICS JSONL...   parse with prometheus_client; receipts by sysid and
                                                 message must equal the receive log's lines
"""
import collections, json, sys, time, urllib.request
from prometheus_client.openmetrics.parser import text_string_to_metric_families


def families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def receipts_total(text):
    f = families(text).get("foxborne_receipts")
    return sum(s.value for s in f.samples if s.name == "foxborne_receipts_total") if f else 0


def fetch(addr, out):
    # Settled: two reads half a second apart (the daemon republishes every 0.5 s) agree.
    last = None
    for _ in range(60):
        text = urllib.request.urlopen(f"http://{addr}/metrics", timeout=5).read().decode()
        total = receipts_total(text)
        if last is not None and total == last and total > 0:
            open(out, "w").write(text)
            print(f"metrics: settled at {int(total)} receipts")
            return
        last = total
        time.sleep(0.6)
    sys.exit("metrics: receipt counters never settled")


def check(metrics, logs):
    text = open(metrics).read()
    fams = families(text)  # raises on anything that is not valid exposition format
    want = {"foxborne_build", "foxborne_receipts", "foxborne_rejects", "foxborne_sequence_lost",
            "foxborne_open_gaps", "foxborne_lines_written", "foxborne_written_bytes", "foxborne_lines_dropped",
            "foxborne_write_lag_seconds", "foxborne_link_up", "foxborne_link_received_bytes",
            "foxborne_latency_seconds", "foxborne_http_connections", "foxborne_event_clients"}
    missing = want - set(fams)
    problems = [f"missing metric family {m}" for m in sorted(missing)]
    by_metrics = collections.Counter()
    latency = fams.get("foxborne_latency_seconds")
    if latency is None or latency.type != "histogram" or latency.unit != "seconds":
        problems.append(f"foxborne_latency_seconds is not a histogram in seconds: {latency}")
    else:
        counts = [s for s in latency.samples if s.name == "foxborne_latency_seconds_count"]
        if not counts or not all(s.value > 0 for s in counts):
            problems.append(f"no latency samples: {counts}")
        for s in latency.samples:
            if s.name == "foxborne_latency_seconds_bucket" and s.labels["le"] != "+Inf" and float(s.labels["le"]) > 60:
                problems.append(f"a latency bucket bound is not in seconds: {s}")
    if fams["foxborne_build"].type != "info":
        problems.append("foxborne_build is not an info metric")
    for s in fams["foxborne_receipts"].samples:
        if s.name == "foxborne_receipts_total":
            by_metrics[(s.labels["link"], int(s.labels["sysid"]), s.labels["msg"])] += int(s.value)
    by_log = collections.Counter()
    for path in logs:
        for line in open(path):
            r = json.loads(line)
            by_log[(r["link"], r["sysid"], r["msg"])] += 1
    if by_metrics != by_log:
        problems.append(f"receipts differ: metrics-only {dict(by_metrics - by_log)}, log-only {dict(by_log - by_metrics)}")
    written = [s.value for s in fams["foxborne_lines_written"].samples
               if s.name == "foxborne_lines_written_total" and s.labels["stream"] == "receive"]
    if written != [sum(by_log.values())]:
        problems.append(f"lines_written {written} vs {sum(by_log.values())} lines in the log")
    print(f"metrics: {len(fams)} families parsed by prometheus_client, {sum(by_log.values())} receipts agree, "
          f"{len(problems)} problems")
    for p in problems:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    if sys.argv[1] == "fetch":
        fetch(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2], sys.argv[3:])
