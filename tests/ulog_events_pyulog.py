"""What pyulog 1.3.0's PX4Events().get_logged_events() lists for each log given, as JSON on
stdout: {"<path>": {"definitions": bool, "events": [[timestamp, level, message], ...]}}.

The default-definitions callback returns None, so nothing is fetched: a log without embedded
definitions gets pyulog's "[Unknown event with ID N]" messages, as it would offline."""
import json
import sys

from pyulog import ULog
from pyulog.px4_events import PX4Events

out = {}
for path in sys.argv[1:]:
    try:
        ulog = ULog(path, ["event"])
    except Exception as e:  # pylint: disable=broad-except
        out[path] = {"error": str(e)}
        continue
    events = PX4Events()
    events.set_default_json_definitions_cb(lambda _already: None)
    logged = events.get_logged_events(ulog)
    out[path] = {
        "definitions": "metadata_events" in ulog.msg_info_multiple_dict
        and "metadata_events_sha256" in ulog.msg_info_dict,
        "events": [[int(t), level, message] for t, level, message in logged],
    }
json.dump(out, sys.stdout)
