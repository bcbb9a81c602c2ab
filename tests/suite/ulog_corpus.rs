//! Agreement with pyulog 1.3.0 on every corpus log: topics, multi_ids, msg_ids, sample counts,
//! first and last timestamps, field names, dropouts, logged and tagged messages, initial, changed
//! and default parameters, info and multi-info keys, and the header timestamp.

use crate::common;

use foxborne_receiver::ulog::ingest::ingest_reader;
use foxborne_receiver::ulog::report::{Report, Status};
use foxborne_receiver::ulog::value::Value;
use serde_json::Value as Json;

fn ingest(path: &std::path::Path) -> Report {
    let bytes = std::fs::read(path).unwrap();
    ingest_reader(
        &bytes[..],
        &path.display().to_string(),
        bytes.len() as u64,
        None,
        None,
    )
    .unwrap()
}

/// Values compare as pyulog holds them: numbers (floats are float32 widened), text, hex bytes.
fn same_value(ours: &Value, theirs: &Json) -> bool {
    match (ours, theirs) {
        (Value::Int(a), Json::Number(b)) => b.as_i64() == Some(*a),
        (Value::UInt(a), Json::Number(b)) => b.as_u64() == Some(*a),
        (Value::Float(a), Json::Number(b)) => b.as_f64().is_some_and(|b| (b as f32) == (*a as f32)),
        (Value::Float(a), Json::String(s)) => {
            !a.is_finite() && s.to_lowercase() == format!("{a}").to_lowercase()
        }
        (Value::Bool(a), Json::Bool(b)) => a == b,
        (Value::Text(a), Json::String(b)) => a == b,
        (Value::Bytes(_), Json::String(b)) => ours.to_string() == *b,
        _ => false,
    }
}

fn check_log(path: &std::path::Path) {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let o = common::oracle(path);
    assert!(
        o.get("error").is_none(),
        "{name}: pyulog failed on it: {}",
        o["error"]
    );
    let r = ingest(path);
    assert_eq!(
        r.status,
        Status::Complete,
        "{name}: {:?} {:?}",
        r.reason,
        r.malformed
    );
    let header = r.header.as_ref().unwrap();
    assert_eq!(
        Json::from(header.start_timestamp),
        o["start_timestamp"],
        "{name}: start timestamp"
    );
    assert_eq!(
        Json::from(header.formats),
        o["formats"],
        "{name}: format count"
    );

    // Topics, in pyulog's order (name, multi_id).
    let theirs = o["topics"].as_array().unwrap();
    let ours: Vec<_> = r
        .topics
        .iter()
        .map(|t| (t.topic.clone(), t.multi_id))
        .collect();
    let expected: Vec<_> = theirs
        .iter()
        .map(|t| {
            (
                t["topic"].as_str().unwrap().to_string(),
                t["multi_id"].as_u64().unwrap() as u8,
            )
        })
        .collect();
    assert_eq!(ours, expected, "{name}: topic list");
    for (t, e) in r.topics.iter().zip(theirs) {
        let what = format!("{name}: {} multi_id {}", t.topic, t.multi_id);
        assert_eq!(Json::from(t.msg_id), e["msg_id"], "{what}: msg_id");
        assert_eq!(Json::from(t.samples), e["samples"], "{what}: samples");
        assert_eq!(
            Json::from(t.first_timestamp),
            e["first_timestamp"],
            "{what}: first timestamp"
        );
        assert_eq!(
            Json::from(t.last_timestamp),
            e["last_timestamp"],
            "{what}: last timestamp"
        );
        // The oracle drops names starting with `_padding` (top-level padding only).
        let fields: Vec<&String> = t
            .fields
            .iter()
            .filter(|f| !f.starts_with("_padding"))
            .collect();
        let expected: Vec<&str> = e["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(fields, expected, "{what}: fields");
    }

    let dropouts: Vec<Json> = r
        .dropouts
        .iter()
        .map(|d| serde_json::json!({"timestamp": d.timestamp, "duration_ms": d.duration_ms}))
        .collect();
    assert_eq!(Json::from(dropouts), o["dropouts"], "{name}: dropouts");

    let logged: Vec<Json> = r
        .logged_messages
        .iter()
        .map(|m| serde_json::json!({"level": m.level, "timestamp": m.timestamp, "text": m.text}))
        .collect();
    assert_eq!(
        Json::from(logged),
        o["logged_messages"],
        "{name}: logged messages"
    );
    // pyulog groups tagged messages by tag (ascending), keeping file order within a tag.
    let mut tagged = r.tagged_logged_messages.clone();
    tagged.sort_by_key(|m| m.tag);
    let tagged: Vec<Json> = tagged
        .iter()
        .map(|m| serde_json::json!({"tag": m.tag, "level": m.level, "timestamp": m.timestamp, "text": m.text}))
        .collect();
    assert_eq!(
        Json::from(tagged),
        o["tagged_logged_messages"],
        "{name}: tagged messages"
    );

    let initial = o["initial_parameters"].as_object().unwrap();
    assert_eq!(
        r.parameters.initial.keys().collect::<Vec<_>>(),
        initial.keys().collect::<Vec<_>>(),
        "{name}: initial parameter names"
    );
    for (k, v) in &r.parameters.initial {
        assert!(
            same_value(v, &initial[k]),
            "{name}: initial {k}: ours {v:?}, pyulog {}",
            initial[k]
        );
    }
    let changed = o["changed_parameters"].as_array().unwrap();
    assert_eq!(
        r.parameters.changes.len(),
        changed.len(),
        "{name}: parameter changes"
    );
    for (c, e) in r.parameters.changes.iter().zip(changed) {
        assert_eq!(
            Json::from(c.timestamp),
            e[0],
            "{name}: change time of {}",
            c.name
        );
        assert_eq!(Json::from(c.name.clone()), e[1], "{name}: changed name");
        assert!(
            same_value(&c.value, &e[2]),
            "{name}: {} changed to {:?}, pyulog {}",
            c.name,
            c.value,
            e[2]
        );
    }
    // pyulog keys its defaults by bit value minus one: "0" (bit 0, system), "1" (bit 1, setup).
    let defaults = o["default_parameters"].as_object().unwrap();
    for (key, ours) in [("0", "system"), ("1", "current_setup")] {
        let theirs = defaults.get(key).and_then(Json::as_object);
        let mine = r.parameters.defaults.get(ours);
        assert_eq!(
            mine.map(|m| m.len()),
            theirs.map(|t| t.len()),
            "{name}: {ours} defaults"
        );
        if let (Some(mine), Some(theirs)) = (mine, theirs) {
            for (k, v) in mine {
                assert!(same_value(v, &theirs[k]), "{name}: default {k}");
            }
        }
    }

    let info = o["info"].as_object().unwrap();
    assert_eq!(
        r.info.keys().collect::<Vec<_>>(),
        info.keys().collect::<Vec<_>>(),
        "{name}: info keys"
    );
    for (k, v) in &r.info {
        assert!(
            same_value(v, &info[k]),
            "{name}: info {k}: ours {v:?}, pyulog {}",
            info[k]
        );
    }
    let multi: Vec<Json> = r.multi_info.keys().map(|k| Json::from(k.clone())).collect();
    assert_eq!(
        Json::from(multi),
        o["multi_info_keys"],
        "{name}: multi-info keys"
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn every_corpus_log_agrees_with_pyulog() {
    let logs = common::corpus_logs();
    for log in &logs {
        check_log(log);
    }
    eprintln!("{} corpus logs agree with pyulog", logs.len());
}

/// The GPS anchor on the corpus, against an independent computation with pyulog and numpy
/// (median of `time_utc_usec - (timestamp + timestamp_time_relative)` over fixes with non-zero
/// UTC, on the instance with most such fixes, `sensor_gps` or `vehicle_gps_position`, the former
/// on a tie):
/// (log, source, fixes used, boot offset in µs, spread in µs). Logs not listed have no fix with
/// UTC and must say `Elapsed time only`.
const GPS_ANCHORS: [(&str, &str, u64, i64, i64); 6] = [
    // sensor_gps has 79 fixes with UTC here, vehicle_gps_position 397: the most fixes win
    // (issue 15; sensor_gps alone gave 1_739_195_742_325_827).
    (
        "flightreview_ekf_failure.ulg",
        "vehicle_gps_position",
        397,
        1_739_195_742_324_620,
        49_789,
    ),
    (
        "px4ulogrs_esc_status_log.ulg",
        "vehicle_gps_position",
        179,
        1_557_751_478_707_849,
        23_098,
    ),
    (
        "pyulog_sample_log_small.ulg",
        "vehicle_gps_position",
        32,
        1_618_986_638_141_670,
        18_009,
    ),
    (
        "pyulog_sample_logging_tagged_and_default_params.ulg",
        "vehicle_gps_position",
        190,
        1_651_221_926_946_000,
        0,
    ),
    // SITL whose boot clock already is UTC: the offset is exactly zero.
    (
        "pyulog_sample_px4_events.ulg",
        "vehicle_gps_position",
        583,
        0,
        0,
    ),
    (
        "roboto_test.ulg",
        "vehicle_gps_position",
        19,
        1_698_738_157_366_935,
        30_149,
    ),
];

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn gps_anchor_matches_an_independent_computation() {
    for log in common::corpus_logs() {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        let anchor = ingest(&log)
            .gps_anchor
            .expect("complete logs have an anchor object");
        match GPS_ANCHORS.iter().find(|a| a.0 == name) {
            Some((_, source, fixes, offset, spread)) => {
                assert_eq!(anchor.source.as_deref(), Some(*source), "{name}");
                assert_eq!(anchor.fixes_used, *fixes, "{name}");
                assert_eq!(anchor.boot_offset_us, Some(*offset), "{name}");
                assert_eq!(anchor.spread_ms, Some(*spread as f64 / 1000.0), "{name}");
                assert_eq!(
                    anchor.title,
                    format!("GPS time from {source}, {fixes} fixes"),
                    "{name}"
                );
            }
            None => {
                assert_eq!(anchor.title, "Elapsed time only", "{name}");
                assert_eq!(
                    (anchor.fixes_used, anchor.boot_offset_us, anchor.boot_utc),
                    (0, None, None),
                    "{name}"
                );
            }
        }
    }
}
