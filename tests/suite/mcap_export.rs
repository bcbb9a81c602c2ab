//! `--format mcap` (issue 43). The MCAP of a corpus sortie (`sortie.rs`'s replay: a corpus flight
//! log flown today and the receive log the live daemon made of its telemetry) read back with
//! the `mcap` Python package (`tests/mcap_check.py`): each channel's message count is pyulog's
//! sample count for its topic instance, and the receive log's count for the ground channels;
//! every timeline entry sits at the UTC the JSON timeline gives it (the gap's entry included),
//! the gap's heartbeat receipt where the gap starts; every message validates against its
//! channel's JSON Schema (`jsonschema`); the summary's statistics and chunk index are there.
//! And `ulog export --format mcap` of every corpus log, read back with the `mcap` crate's own
//! reader: every topic instance's count is pyulog's (the corpus oracle).

use crate::common;
use crate::sortie::{grounds, replay, utc_us};

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// What `tests/mcap_check.py` says of an MCAP file (with pyulog's counts of `ulog`).
fn read_back(mcap: &Path, ulog: &Path) -> Value {
    let python = common::python_with(&["mcap", "jsonschema", "pyulog"]);
    let out = common::run_ok(
        common::python_script(&python, "mcap_check.py")
            .arg(mcap)
            .arg("--ulog")
            .arg(ulog),
        "mcap_check.py",
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn count(v: &Value, topic: &str) -> u64 {
    v["counts"][topic].as_u64().unwrap_or(0)
}

/// Channels that are not one topic instance of the flight log.
fn is_instance(topic: &str) -> bool {
    !["/ground/", "/sortie/", "/ulog/", "/track"]
        .iter()
        .any(|p| topic.starts_with(p))
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn the_sortie_s_mcap_holds_every_sample_receipt_and_entry_on_the_timeline_s_utc() {
    let r = replay();
    let scratch = common::scratch("mcap-sortie");
    let mcap = scratch.join("sortie.mcap");
    let out = common::run_ok(
        Command::new(common::binary())
            .arg("sortie")
            .arg(&r.flight)
            .args(grounds(r))
            .args(["--format", "mcap", "--out"])
            .arg(&mcap),
        "sortie --format mcap",
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("timeline entries"), "{said}");
    let (code, timeline, stderr) = crate::sortie::sortie(&r.flight, &grounds(r), &[]);
    assert_eq!(code, 0, "{stderr}");
    let v = read_back(&mcap, &r.flight);

    // The summary section: statistics (each channel's count as read), a zstd chunk index.
    let stats = &v["statistics"];
    assert!(stats.is_object(), "no statistics record: {v}");
    let read: u64 = v["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(stats["message_count"].as_u64(), Some(read));
    for (topic, n) in v["counts"].as_object().unwrap() {
        assert_eq!(&stats["channel_message_counts"][topic], n, "{topic}");
    }
    assert!(v["chunk_indexes"].as_u64().unwrap() > 0);
    assert_eq!(v["compression"], serde_json::json!(["zstd"]));
    assert_eq!(v["out_of_order"], 0);

    // Every message validates against its channel's schema.
    assert_eq!(v["invalid"], serde_json::json!([]), "{}", v["invalid"]);
    assert_eq!(v["validated"].as_u64(), Some(read));
    for (topic, s) in v["schemas"].as_object().unwrap() {
        assert_eq!(s["encoding"], "jsonschema", "{topic}");
        assert_eq!(s["message_encoding"], "json", "{topic}");
    }
    assert_eq!(v["schemas"]["/track"]["name"], "foxglove.LocationFix");
    assert_eq!(v["schemas"]["/ulog/messages"]["name"], "foxglove.Log");
    assert_eq!(v["schemas"]["/ulog/events"]["name"], "foxglove.Log");
    assert!(count(&v, "/track") > 100, "{}", v["counts"]);

    // The flight log: each topic instance's samples, as pyulog counts them, and its messages.
    let pyulog = v["pyulog"]["topics"].as_object().unwrap();
    assert!(pyulog.len() > 50);
    for (topic, n) in pyulog {
        assert_eq!(Some(count(&v, topic)), n.as_u64(), "{topic}");
    }
    for (topic, n) in v["counts"].as_object().unwrap() {
        if is_instance(topic) {
            assert!(
                pyulog.contains_key(topic),
                "{topic}: {n} messages pyulog does not have"
            );
        }
    }
    assert_eq!(
        count(&v, "/ulog/messages"),
        v["pyulog"]["logged"].as_u64().unwrap() + v["pyulog"]["tagged"].as_u64().unwrap()
    );
    assert!(count(&v, "/ulog/events") > 0);

    // The ground: each system's messages, as many as the receive log holds.
    let mut receipts: BTreeMap<String, u64> = BTreeMap::new();
    for file in &r.receive {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let receipt: Value = serde_json::from_str(line).unwrap();
            let topic = format!(
                "/ground/{}/{}",
                receipt["sysid"],
                receipt["msg"].as_str().unwrap()
            );
            *receipts.entry(topic).or_default() += 1;
        }
    }
    assert!(
        receipts.contains_key("/ground/1/HEARTBEAT")
            && receipts.contains_key("/ground/1/SYSTEM_TIME")
    );
    let ground: BTreeMap<String, u64> = v["counts"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(t, _)| t.starts_with("/ground/"))
        .map(|(t, n)| (t.clone(), n.as_u64().unwrap()))
        .collect();
    assert_eq!(ground, receipts);

    // The timeline: every entry, at the UTC the JSON timeline gives it.
    let json_entries: Vec<&Value> = timeline
        .iter()
        .filter(|l| {
            !matches!(
                l["kind"].as_str(),
                Some("anchor" | "anchor_conflict" | "elapsed_time_only")
            )
        })
        .collect();
    let mcap_entries = v["entries"].as_array().unwrap();
    assert_eq!(mcap_entries.len(), json_entries.len());
    let at: BTreeMap<String, i64> = mcap_entries
        .iter()
        .map(|e| (e["entry"].to_string(), e["log_time"].as_i64().unwrap()))
        .collect();
    for entry in &json_entries {
        let log_time = at
            .get(&entry.to_string())
            .unwrap_or_else(|| panic!("not in the MCAP: {entry}"));
        let utc_ns = utc_us(&entry["utc"]) * 1000;
        assert!(
            (log_time - utc_ns).abs() < 1000,
            "{entry}: log time {log_time}"
        );
    }
    let gap = json_entries
        .iter()
        .find(|e| e["kind"] == "telemetry_gap")
        .unwrap();
    assert!(at.contains_key(&gap.to_string()));
    // The heartbeat that opens the gap, on the ground channel, where the gap starts (the
    // receipts are placed once per second of the anchor: within 0.1 ms of the timeline).
    let cited = &gap["cite"];
    let line = std::fs::read_to_string(cited["file"].as_str().unwrap()).unwrap();
    let receipt: Value = serde_json::from_str(
        line.lines()
            .nth(cited["line"].as_u64().unwrap() as usize - 1)
            .unwrap(),
    )
    .unwrap();
    let heartbeat = v["heartbeats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["recv_utc"] == receipt["recv_utc"])
        .unwrap();
    let start_ns = utc_us(&gap["utc_start"]) * 1000;
    let placed = heartbeat["log_time"].as_i64().unwrap();
    assert!(
        (placed - start_ns).abs() <= 101_000,
        "{placed} vs {start_ns}"
    );

    // The anchor and its bound as metadata; information and parameters too.
    let used = timeline
        .iter()
        .find(|l| l["kind"] == "anchor" && l["used"] == true)
        .unwrap();
    let anchor = &v["metadata"]["time_anchor"];
    assert_eq!(anchor["source"], used["source"]);
    assert_eq!(anchor["boot_utc"], used["boot_utc"]);
    assert_eq!(anchor["bound_ms"], used["bound_ms"].to_string());
    assert!(v["metadata"]["sortie_anchors"]["anchor 0"].is_string());
    assert!(v["metadata"]["ulog_parameters"]["MAV_SYS_ID"].is_string());
    assert!(
        v["metadata"]["ulog_info"]["sys_name"].is_string(),
        "{}",
        v["metadata"]["ulog_info"]
    );
    // Log times are today's UTC, as the flight was flown (the replay's boot instant).
    let start = stats["message_start_time"].as_i64().unwrap();
    assert!(
        (start / 1000 - r.boot_us).abs() < 3_600_000_000,
        "{start} vs boot {}",
        r.boot_us
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn ulog_export_to_mcap_counts_every_topic_instance_as_pyulog_on_every_corpus_log() {
    let logs = common::corpus_logs();
    let out = common::scratch("mcap-export");
    common::run_ok(
        Command::new(common::binary())
            .args(["ulog", "export", "--format", "mcap", "--out"])
            .arg(&*out)
            .args(&logs),
        "ulog export --format mcap",
    );
    for log in &logs {
        let name = log.file_stem().unwrap().to_string_lossy();
        let bytes = std::fs::read(out.join(format!("{name}.mcap"))).unwrap();
        let summary = mcap::Summary::read(&bytes)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: no summary section"));
        let stats = summary.stats.as_ref().expect("a statistics record");
        assert!(!summary.chunk_indexes.is_empty(), "{name}");
        let counts: BTreeMap<String, u64> = stats
            .channel_message_counts
            .iter()
            .map(|(id, n)| (summary.channels[id].topic.clone(), *n))
            .collect();
        let oracle = common::oracle(log);
        let mut expected: BTreeMap<String, u64> = BTreeMap::new();
        for t in oracle["topics"].as_array().unwrap() {
            let n = t["samples"].as_u64().unwrap();
            if n > 0 {
                expected.insert(
                    format!("/{}/{}", t["topic"].as_str().unwrap(), t["multi_id"]),
                    n,
                );
            }
        }
        let instances: BTreeMap<String, u64> = counts
            .iter()
            .filter(|(t, n)| is_instance(t) && **n > 0)
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        assert_eq!(instances, expected, "{name}");
        let logged = oracle["logged_messages"].as_array().map_or(0, Vec::len) as u64;
        let tagged: u64 = match &oracle["tagged_logged_messages"] {
            Value::Array(a) => a.len() as u64,
            Value::Object(o) => o
                .values()
                .map(|v| v.as_array().map_or(0, Vec::len) as u64)
                .sum(),
            _ => 0,
        };
        assert_eq!(
            counts.get("/ulog/messages").copied().unwrap_or(0),
            logged + tagged,
            "{name}"
        );
    }
}
