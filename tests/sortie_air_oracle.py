#!/usr/bin/env python3
"""What pyulog reads of the topics `sortie` takes its air side from (tests/suite/sortie.rs).

For each log given: every change of vehicle_status arming_state and nav_state, of
vehicle_land_detected landed, of telemetry_status heartbeat_type_gcs (per instance), the first
sample of each included; and every vehicle_command sample. One JSON object per log on stdout:
{"file", "changes": [[kind, instance, timestamp_us, value]], "commands": [[timestamp_us, command,
source_system]]}.
"""
import json, sys
from pyulog import ULog

WATCHED = [("vehicle_status", "arming_state", "arming"),
           ("vehicle_status", "nav_state", "flight_mode"),
           ("vehicle_land_detected", "landed", "landed"),
           ("telemetry_status", "heartbeat_type_gcs", "gcs_heartbeat")]

for path in sys.argv[1:]:
    ulog = ULog(path, ["vehicle_status", "vehicle_land_detected", "telemetry_status",
                       "vehicle_command"])
    changes, commands = [], []
    for d in ulog.data_list:
        for topic, field, kind in WATCHED:
            if d.name != topic or field not in d.data:
                continue
            previous = None
            for ts, v in zip(d.data["timestamp"], d.data[field]):
                if previous is None or int(v) != previous:
                    changes.append([kind, d.multi_id, int(ts), int(v)])
                previous = int(v)
        if d.name == "vehicle_command":
            for ts, c, s in zip(d.data["timestamp"], d.data["command"], d.data["source_system"]):
                commands.append([int(ts), int(c), int(s)])
    changes.sort()
    commands.sort()
    print(json.dumps({"file": path, "changes": changes, "commands": commands}))
