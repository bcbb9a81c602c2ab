"""The Python way to the same MCAP file, for benches/mcap_export_bench.rs: pyulog reads the log
(`ULog(path)`, its full parse into numpy arrays), and the `mcap` package's writer (zstd chunks,
its default) writes one channel per topic instance (`/<topic>/<multi_id>`) with a JSON Schema of
its fields and every sample as a JSON object, plus the logged messages on `/ulog/messages`.

usage: mcap_pyulog_writer.py LOG.ulg OUT.mcap
Prints one line: `seconds=S rss_kb=K messages=N` (wall time of the whole, peak memory).
"""
import json
import resource
import sys
import time

start = time.monotonic()

from mcap.writer import Writer  # noqa: E402
from pyulog import ULog  # noqa: E402

path, out = sys.argv[1], sys.argv[2]
log = ULog(path)
messages = 0
with open(out, "wb") as f:
    writer = Writer(f)
    writer.start(profile="", library="pyulog+mcap bench")
    for d in log.data_list:
        fields = [f.field_name for f in d.field_data]
        types = {f.field_name: f.type_str for f in d.field_data}
        schema = {
            "type": "object",
            "title": d.name,
            "properties": {
                name: {"type": "string" if types[name] == "char" else "number"}
                for name in fields
            },
        }
        schema_id = writer.register_schema(
            name=d.name, encoding="jsonschema", data=json.dumps(schema).encode()
        )
        channel = writer.register_channel(
            topic=f"/{d.name}/{d.multi_id}", message_encoding="json", schema_id=schema_id
        )
        columns = [d.data[name].tolist() for name in fields]
        for row in zip(*columns):
            sample = dict(zip(fields, row))
            t = int(sample["timestamp"]) * 1000
            writer.add_message(
                channel_id=channel,
                log_time=t,
                publish_time=t,
                data=json.dumps(sample).encode(),
            )
            messages += 1
    log_channel = writer.register_channel(topic="/ulog/messages", message_encoding="json", schema_id=0)
    for m in log.logged_messages:
        t = int(m.timestamp) * 1000
        data = {"level": m.log_level, "message": m.message}
        writer.add_message(
            channel_id=log_channel, log_time=t, publish_time=t, data=json.dumps(data).encode()
        )
        messages += 1
    writer.finish()

seconds = time.monotonic() - start
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"seconds={seconds} rss_kb={rss_kb} messages={messages}")
