//! The Foxglove message types the MCAP file carries, as JSON Schemas written here from
//! Foxglove's public schema definitions: `foxglove.Log` (the flight log's messages and PX4's
//! events, in Foxglove's Log panel) and `foxglove.LocationFix` (the vehicle's track, on its Map
//! panel). Foxglove recognises a channel's type by the schema's name, so the names are
//! Foxglove's; the messages are JSON as these schemas describe.

use crate::ulog::json::SCHEMA_DRAFT;
use serde_json::{json, Value};

pub const LOG: &str = "foxglove.Log";
pub const LOCATION_FIX: &str = "foxglove.LocationFix";

/// `foxglove.Log`'s levels.
pub const LEVEL_UNKNOWN: u8 = 0;
pub const LEVEL_DEBUG: u8 = 1;
pub const LEVEL_INFO: u8 = 2;
pub const LEVEL_WARNING: u8 = 3;
pub const LEVEL_ERROR: u8 = 4;
pub const LEVEL_FATAL: u8 = 5;

/// `foxglove.LocationFix`'s covariance types.
pub const COVARIANCE_UNKNOWN: u8 = 0;
pub const COVARIANCE_DIAGONAL_KNOWN: u8 = 2;

/// A Foxglove time: whole seconds and nanoseconds since the Unix epoch.
fn time_schema() -> Value {
    json!({
        "type": "object",
        "title": "time",
        "properties": {
            "sec": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
            "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999},
        },
        "required": ["sec", "nsec"],
        "additionalProperties": false,
    })
}

/// A Foxglove time of UTC nanoseconds (before 1970: 0).
pub fn time(utc_ns: i64) -> Value {
    let ns = utc_ns.max(0);
    json!({"sec": ns / 1_000_000_000, "nsec": ns % 1_000_000_000})
}

pub fn log_schema() -> Value {
    json!({
        "$schema": SCHEMA_DRAFT,
        "title": LOG,
        "description": "A log message",
        "type": "object",
        "properties": {
            "timestamp": time_schema(),
            "level": {
                "type": "integer",
                "description": "0 UNKNOWN, 1 DEBUG, 2 INFO, 3 WARNING, 4 ERROR, 5 FATAL",
                "minimum": LEVEL_UNKNOWN,
                "maximum": LEVEL_FATAL,
            },
            "message": {"type": "string"},
            "name": {"type": "string", "description": "The process or node name"},
            "file": {"type": "string", "description": "The file the message came from"},
            "line": {"type": "integer", "minimum": 0, "maximum": u32::MAX, "description": "The line in the file"},
        },
        "required": ["timestamp", "level", "message", "name", "file", "line"],
    })
}

pub fn location_fix_schema() -> Value {
    json!({
        "$schema": SCHEMA_DRAFT,
        "title": LOCATION_FIX,
        "description": "A navigation satellite fix for any Global Navigation Satellite System",
        "type": "object",
        "properties": {
            "timestamp": time_schema(),
            "frame_id": {"type": "string"},
            "latitude": {"type": "number", "minimum": -90, "maximum": 90},
            "longitude": {"type": "number", "minimum": -180, "maximum": 180},
            "altitude": {"type": "number", "description": "metres above the WGS 84 ellipsoid"},
            "position_covariance": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 9,
                "maxItems": 9,
                "description": "east, north, up (m^2), row-major",
            },
            "position_covariance_type": {
                "type": "integer",
                "description": "0 UNKNOWN, 1 APPROXIMATED, 2 DIAGONAL_KNOWN, 3 KNOWN",
                "minimum": 0,
                "maximum": 3,
            },
        },
        "required": [
            "timestamp", "frame_id", "latitude", "longitude", "altitude",
            "position_covariance", "position_covariance_type"
        ],
    })
}

/// A syslog level name (`EMERGENCY` .. `DEBUG`, as the ULog reader and PX4's events name
/// them) as a `foxglove.Log` level: emergency, alert and critical are FATAL, notice is INFO.
pub fn level_of(name: &str) -> u8 {
    match name {
        "EMERGENCY" | "ALERT" | "CRITICAL" => LEVEL_FATAL,
        "ERROR" => LEVEL_ERROR,
        "WARNING" => LEVEL_WARNING,
        "NOTICE" | "INFO" => LEVEL_INFO,
        "DEBUG" => LEVEL_DEBUG,
        _ => LEVEL_UNKNOWN,
    }
}

/// One `foxglove.Log` message.
pub fn log(utc_ns: i64, level: u8, message: &str, name: &str, file: &str, line: u64) -> Value {
    json!({
        "timestamp": time(utc_ns),
        "level": level,
        "message": message,
        "name": name,
        "file": file,
        "line": line.min(u64::from(u32::MAX)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_times_are_foxglove_s() {
        assert_eq!(level_of("CRITICAL"), LEVEL_FATAL);
        assert_eq!(level_of("NOTICE"), LEVEL_INFO);
        assert_eq!(level_of("WARNING"), LEVEL_WARNING);
        assert_eq!(level_of("DEBUG"), LEVEL_DEBUG);
        assert_eq!(level_of("UNKNOWN"), LEVEL_UNKNOWN);
        assert_eq!(
            time(1_790_260_323_912_000_001),
            json!({"sec": 1_790_260_323u64, "nsec": 912_000_001})
        );
        assert_eq!(time(-5), json!({"sec": 0, "nsec": 0}));
        let m = log(
            1_000_000_000,
            LEVEL_INFO,
            "Landing detected",
            "ulog",
            "a.ulg",
            88,
        );
        assert_eq!(m["line"], 88);
        assert_eq!(log_schema()["title"], LOG);
        assert_eq!(location_fix_schema()["required"][2], "latitude");
    }
}
