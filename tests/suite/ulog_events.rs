//! PX4 events against pyulog: on every corpus log, the ingest report's `events` are
//! `PX4Events().get_logged_events()` message for message (timestamp, level, text), run through
//! `$FOXBORNE_PYTHON` (`tests/ulog_events_pyulog.py`, nothing fetched); a log without embedded
//! definitions says so; definitions that fail their SHA-256 are not used.

use crate::common;

use foxborne_receiver::ulog::ingest::{ingest_file, IngestOptions};
use foxborne_receiver::ulog::report::Report;
use std::path::Path;
use std::process::Command;

fn ingest(path: &Path) -> Report {
    ingest_file(path, IngestOptions::default()).unwrap()
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn events_equal_pyulog_on_every_corpus_log() {
    let logs = common::corpus_logs();
    let python = common::python();
    let run = common::run_ok(
        common::python_script(&python, "ulog_events_pyulog.py").args(&logs),
        "pyulog",
    );
    let expected: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let mut with_definitions = 0;
    let mut compared = 0;
    for log in &logs {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        let want = &expected[log.to_str().unwrap()];
        assert!(want["error"].is_null(), "{name}: pyulog: {}", want["error"]);
        let report = ingest(log);
        let ours: Vec<(u64, &str, &str)> = report
            .events
            .iter()
            .map(|e| (e.timestamp, e.level.as_str(), e.message.as_str()))
            .collect();
        let theirs: Vec<(u64, &str, &str)> = want["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e[0].as_u64().unwrap(),
                    e[1].as_str().unwrap(),
                    e[2].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{name}: events differ from pyulog's");
        compared += ours.len();
        let definitions = report.event_definitions.as_ref().unwrap();
        if want["definitions"].as_bool().unwrap() {
            with_definitions += 1;
            assert_eq!(
                definitions.status, "embedded",
                "{name}: {}",
                definitions.detail
            );
            assert!(definitions.defined > 300, "{name}: {}", definitions.defined);
        } else {
            assert_eq!(definitions.status, "not_in_log", "{name}");
            assert!(
                definitions.detail.contains("no event definitions"),
                "{name}: {}",
                definitions.detail
            );
        }
        // Each event cites an `event` sample.
        for e in &report.events {
            assert_eq!(e.citation.topic, "event");
            assert!(e.citation.offset > 16 && e.citation.message > 0);
        }
    }
    assert_eq!(with_definitions, 5, "corpus logs that embed definitions");
    assert!(compared >= 35, "events compared: {compared}");
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn the_ekf_failure_log_says_why_it_failed_and_the_report_cites_it() {
    let report = ingest(&common::corpus_file("ulog", "flightreview_ekf_failure.ulg"));
    let find = |text: &str| {
        report
            .events
            .iter()
            .find(|e| e.message == text)
            .unwrap_or_else(|| panic!("no event {text:?}"))
    };
    let warning = find("Failsafe warning:");
    assert_eq!(
        (warning.timestamp, warning.level.as_str()),
        (114_991_098, "WARNING")
    );
    assert_eq!(
        warning.name.as_deref(),
        Some("commander_failsafe_enter_generic_warn")
    );
    // An enum argument (sensor type) and another (failover reason) filled in.
    let accel = find("Accelerometer sensor #0 failure: Timeout");
    assert_eq!(
        (accel.timestamp, accel.level.as_str()),
        (125_836_484, "EMERGENCY")
    );
    // The citation leads to the sample: `ulog record` shows an event there.
    let shown = Command::new(common::binary())
        .args(["ulog", "record"])
        .arg(common::corpus_file("ulog", "flightreview_ekf_failure.ulg"))
        .args(["--message", &accel.citation.message.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("event") && text.contains("29671274"),
        "{text}"
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn definitions_that_fail_their_hash_are_not_used() {
    let path = common::corpus_file("ulog", "pyulog_sample_px4_events.ulg");
    let mut bytes = std::fs::read(&path).unwrap();
    // The first `metadata_events` message: flip a byte of its compressed value.
    let key = b"uint8_t[1169] metadata_events";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    bytes[at + key.len() + 100] ^= 0xff;
    let dir = common::scratch("events-hash");
    let damaged = dir.join("damaged.ulg");
    std::fs::write(&damaged, &bytes).unwrap();
    let report = ingest(&damaged);
    let d = report.event_definitions.as_ref().unwrap();
    assert_eq!(d.status, "unusable");
    assert!(d.detail.contains("SHA-256"), "{}", d.detail);
    assert!(!report.events.is_empty());
    assert!(report
        .events
        .iter()
        .all(|e| e.message.starts_with("[Unknown event with ID ")));
}
