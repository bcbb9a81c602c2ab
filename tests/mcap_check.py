"""Reads an MCAP file back with the `mcap` package (PyPI) for tests/suite/mcap_export.rs, and
says what it holds, as one JSON object on stdout; the test makes the comparisons.

usage: mcap_check.py FILE.mcap [--ulog FLIGHT.ulg]

- "statistics": the summary section's Statistics record (message, channel, chunk counts and the
  message count per channel, by topic), "chunk_indexes": how many, "metadata": every metadata
  record by name;
- "counts": messages per topic, counted by reading every message in log-time order, and
  "out_of_order": how many came back with a log time before the one before (must be none);
- "schemas": each topic's schema name and encoding, and "invalid": messages that do not validate
  against their channel's JSON Schema (`jsonschema`, the schema's own draft), the first ten,
  with "validated" the number that were checked (every message);
- "entries": the /sortie/entries messages (log time and the entry), "heartbeats": the log time
  and recv_utc of every /ground/<sysid>/HEARTBEAT message;
- with --ulog: "pyulog", pyulog's sample count per topic instance (as /topic/multi_id), and its
  logged and tagged messages.
"""
import json
import sys

import jsonschema
from mcap.reader import make_reader

path = sys.argv[1]
ulog = sys.argv[sys.argv.index("--ulog") + 1] if "--ulog" in sys.argv else None

out = {}
with open(path, "rb") as f:
    reader = make_reader(f)
    summary = reader.get_summary()
    topics = {cid: ch.topic for cid, ch in summary.channels.items()}
    stats = summary.statistics
    out["statistics"] = None if stats is None else {
        "message_count": stats.message_count,
        "channel_count": stats.channel_count,
        "chunk_count": stats.chunk_count,
        "message_start_time": stats.message_start_time,
        "message_end_time": stats.message_end_time,
        "channel_message_counts": {topics[c]: n for c, n in stats.channel_message_counts.items()},
    }
    out["chunk_indexes"] = len(summary.chunk_indexes)
    out["compression"] = sorted({c.compression for c in summary.chunk_indexes})
    out["metadata"] = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
    validators = {}
    out["schemas"] = {}
    for cid, ch in summary.channels.items():
        schema = summary.schemas[ch.schema_id]
        out["schemas"][ch.topic] = {
            "name": schema.name,
            "encoding": schema.encoding,
            "message_encoding": ch.message_encoding,
        }
        document = json.loads(schema.data)
        cls = jsonschema.validators.validator_for(document)
        cls.check_schema(document)
        validators[cid] = cls(document)
    counts = {}
    invalid = []
    validated = 0
    out_of_order = 0
    last = None
    entries = []
    heartbeats = []
    for schema, channel, message in reader.iter_messages(log_time_order=True):
        if last is not None and message.log_time < last:
            out_of_order += 1
        last = message.log_time
        counts[channel.topic] = counts.get(channel.topic, 0) + 1
        data = json.loads(message.data)
        errors = list(validators[channel.id].iter_errors(data))
        validated += 1
        if errors and len(invalid) < 10:
            invalid.append({"topic": channel.topic, "error": errors[0].message})
        if channel.topic == "/sortie/entries":
            entries.append({"log_time": message.log_time, "entry": data})
        if channel.topic.startswith("/ground/") and channel.topic.endswith("/HEARTBEAT"):
            heartbeats.append({"log_time": message.log_time, "recv_utc": data["recv_utc"]})
    out["counts"] = counts
    out["out_of_order"] = out_of_order
    out["invalid"] = invalid
    out["validated"] = validated
    out["entries"] = entries
    out["heartbeats"] = heartbeats

if ulog is not None:
    from pyulog import ULog

    log = ULog(ulog)
    out["pyulog"] = {
        "topics": {
            f"/{d.name}/{d.multi_id}": len(d.data["timestamp"]) for d in log.data_list
        },
        "logged": len(log.logged_messages),
        "tagged": sum(len(v) for v in log.logged_messages_tagged.values()),
    }

print(json.dumps(out))
