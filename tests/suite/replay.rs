//! `replay` (issue 43) into the live daemon: a corpus `.tlog` sent at ten times its recorded
//! pace arrives whole (the daemon's receipts are `tlog convert`'s, its raw capture the file's
//! frames byte for byte), and the file's heartbeat gaps are seen again by the live detector, at
//! a tenth of their length. What the replay refuses is in its unit tests (src/cmd/replay.rs);
//! MAVProxy as the peer is in `mavproxy.rs`.

use crate::common;

use common::Daemon;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// ArduPlane SITL, MAVLink 1, 23,894 frames over 207.6 s with five heartbeat gaps over 3 s
/// (4.423, 6.100, 3.507, 3.235 and 3.369 s, per pymavlink).
const TLOG: &str = "nodemavlink_vtol.tlog";
/// 3 s at a tenth, less 10 ms: the file's heartbeat spacings nearest 3 s are 2.484 s and
/// 3.235 s, so at a tenth this threshold has 41 ms below it and 34 ms above it for the
/// sender's timing.
const THRESHOLD_S: f64 = 0.29;

/// A receipt without what only the daemon writes (arrival stamps, link, source address).
fn comparable(mut receipt: Value) -> Value {
    let object = receipt.as_object_mut().unwrap();
    for key in ["recv_utc", "mono_ns", "link", "src"] {
        object.remove(key);
    }
    receipt
}

/// `lag at most N ms` in the replay's summary, in seconds.
fn max_lag_s(summary: &str) -> f64 {
    let after = summary
        .split("lag at most ")
        .nth(1)
        .unwrap_or_else(|| panic!("no lag in {summary}"));
    after.split(" ms").next().unwrap().parse::<f64>().unwrap() / 1e3
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_tlog_replayed_at_ten_times_arrives_whole_and_its_gaps_come_again_at_a_tenth() {
    let tlog = common::corpus_file("tlog", TLOG);
    let (mut d, udp) = Daemon::start_radio1(
        "replay-daemon",
        &format!(
            "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\ntlog = true\nfields = \"all\"\n[gap]\nthreshold_s = {THRESHOLD_S}\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n"
        ),
    );
    let converted = Command::new(common::binary())
        .args(["tlog", "convert", "--fields", "all"])
        .arg(&tlog)
        .output()
        .unwrap();
    common::assert_success(&converted, "tlog convert");
    let converted: Vec<Value> = String::from_utf8(converted.stdout)
        .unwrap()
        .lines()
        .map(|l| comparable(serde_json::from_str(l).unwrap()))
        .collect();

    let out = common::run_ok(
        Command::new(common::binary())
            .arg("replay")
            .arg(&tlog)
            .arg("--to")
            .arg(format!("udp:{udp}"))
            .args(["--speed", "10"]),
        "replay",
    );
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.starts_with(&format!("replay: sent {} frames", converted.len())),
        "{summary}"
    );
    assert!(summary.contains("rejected records: 0 "), "{summary}");
    let lag_s = max_lag_s(&summary);
    assert!(common::eventually(Duration::from_secs(20), || d
        .receipts()
        .len()
        >= converted.len()));
    assert!(d.stop().success());

    // Every frame arrived once, in order: the same receipts `tlog convert` makes of the file,
    // and the raw capture holds the file's frames byte for byte.
    let receipts: Vec<Value> = d.receipts().into_iter().map(comparable).collect();
    assert_eq!(receipts.len(), converted.len());
    assert!(
        receipts == converted,
        "first difference at {:?}",
        receipts.iter().zip(&converted).position(|(a, b)| a != b)
    );
    let frames = d.recorded_frames();
    let sent = common::tlog_frames(&tlog);
    let bytes = |frames: &[Vec<u8>]| frames.iter().map(Vec::len).sum::<usize>();
    assert_eq!(frames.len(), sent.len());
    assert_eq!(bytes(&frames), bytes(&sent));
    assert!(frames == sent, "byte for byte");
    assert!(summary.contains(&format!("frames ({} bytes)", bytes(&sent))));

    // The recorded gaps, seen live at a tenth of their length: each within the receive log's
    // millisecond stamps and how late the replay sent a frame at most.
    let recorded: Vec<f64> = common::pymavlink_expected(&tlog)["heartbeat_gaps_over_3s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["gap_s"].as_f64().unwrap())
        .collect();
    assert_eq!(recorded.len(), 5);
    let live: Vec<f64> = d
        .events()
        .iter()
        .filter(|e| e["kind"] == "telemetry_gap" && e["state"] == "closed" && e["sysid"] == 1)
        .map(|e| e["gap_s"].as_f64().unwrap())
        .collect();
    assert_eq!(
        live.len(),
        recorded.len(),
        "live gaps {live:?} for recorded {recorded:?} (the replay lagged at most {lag_s} s)"
    );
    for (live, recorded) in live.iter().zip(&recorded) {
        let tenth = recorded / 10.0;
        assert!(
            (live - tenth).abs() <= 0.003 + lag_s,
            "live gap {live} s for a recorded {recorded} s (lag at most {lag_s} s)"
        );
    }
}
