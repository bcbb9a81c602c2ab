//! The `ulog` verbs through `foxborne_receiver::cmd::ulog::run`, as the binary's `main` will
//! call them: report files and their paths, `--out -`, exit codes (0, 3, 4), the quarantine copy
//! and reason file with the original untouched, `info`, and `record` by message and by offset.

use crate::common;

use clap::Parser;
use foxborne_receiver::cmd::ulog::{run, UlogCommand};
use foxborne_receiver::ulog::writer::UlogWriter;
use std::path::Path;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: UlogCommand,
}

/// The verb's exit code.
fn ulog(args: &[&str]) -> u8 {
    let cli = Cli::try_parse_from(std::iter::once("ulog").chain(args.iter().copied()))
        .expect("arguments parse");
    run(cli.cmd).expect("verb runs").code()
}

fn scratch(name: &str) -> common::Scratch {
    common::scratch(name)
}

/// A small complete log: one topic at 100 Hz with a 1 s stall, a 120 ms dropout, a console
/// message, a GPS topic with UTC, and a failsafe parameter.
fn small_log(path: &Path) {
    let mut w = UlogWriter::new(Vec::new(), 1_000_000).unwrap();
    w.flag_bits([0; 8], [0; 8], [0; 3]).unwrap();
    w.format("att:uint64_t timestamp;float[4] q;uint8_t[4] _padding0;")
        .unwrap();
    w.format("sensor_gps:uint64_t timestamp;uint64_t time_utc_usec;int32_t timestamp_time_relative;uint8_t fix_type;uint8_t[3] _padding0;").unwrap();
    w.info_str("sys_name", "PX4").unwrap();
    w.parameter_i32("NAV_DLL_ACT", 2).unwrap();
    w.parameter_f32("COM_OF_LOSS_T", 1.0).unwrap();
    w.subscribe(0, 0, "att").unwrap();
    w.subscribe(0, 1, "sensor_gps").unwrap();
    w.logged(b'6', 1_000_500, "Takeoff detected").unwrap();
    let boot_utc: u64 = 1_790_000_000_000_000;
    let mut t = 1_000_000u64;
    for i in 0..400u64 {
        t += if i == 200 { 1_000_000 } else { 10_000 };
        let mut p = t.to_le_bytes().to_vec();
        for k in 0..4 {
            p.extend((k as f32).to_le_bytes());
        }
        w.data(0, &p).unwrap();
        if i == 300 {
            w.dropout(120).unwrap();
        }
        if i % 20 == 0 {
            let mut g = t.to_le_bytes().to_vec();
            g.extend((boot_utc + t).to_le_bytes());
            g.extend(0i32.to_le_bytes());
            g.push(3);
            w.data(1, &g).unwrap();
        }
    }
    std::fs::write(path, w.into_inner()).unwrap();
}

#[test]
fn ingest_writes_a_report_per_log_and_prints_its_path() {
    let dir = scratch("ingest");
    let log = dir.join("14_13_19.ulg");
    small_log(&log);
    let out = dir.join("reports");
    let code = ulog(&[
        "ingest",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--profile",
        "Q4",
    ]);
    assert_eq!(code, 0);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("14_13_19.report.json")).unwrap())
            .unwrap();
    for key in [
        "file",
        "status",
        "reason",
        "topics",
        "dropouts",
        "gps_anchor",
        "findings",
    ] {
        assert!(report.get(key).is_some(), "top level has {key}");
    }
    assert_eq!(report["status"], "complete");
    assert_eq!(report["reason"], serde_json::Value::Null);
    assert_eq!(report["validation"][0], "PX4 ULog, version 1");
    assert_eq!(report["validation"][1], "Magic bytes verified");
    assert_eq!(report["topics"][0]["topic"], "att");
    assert_eq!(report["topics"][0]["samples"], 400);
    assert_eq!(
        report["expected_topics"]["summary"],
        "2 of 13 expected topics were logged"
    );
    let dropout = &report["dropouts"][0];
    assert_eq!(dropout["duration_ms"], 120);
    let findings = report["findings"].as_array().unwrap();
    let dropout_finding = findings
        .iter()
        .find(|f| f["kind"] == "log_dropout")
        .expect("dropout finding");
    assert_eq!(
        dropout_finding["title"],
        "Observed: flight log has a dropout"
    );
    assert_eq!(dropout_finding["topic"], "att");
    assert_eq!(dropout_finding["message"], dropout["message"]);
    assert_eq!(dropout_finding["offset"], dropout["offset"]);
    let stall = findings
        .iter()
        .find(|f| f["kind"] == "topic_stall" && f["topic"] == "att")
        .expect("stall finding");
    // The last sample before the 1 s gap: sample 200 (i = 199), at 1 s + 200 x 10 ms.
    assert_eq!(stall["timestamp"], 1_000_000 + 200 * 10_000);
    assert_eq!(stall["duration_ms"], 1000.0);
    let anchor = &report["gps_anchor"];
    assert_eq!(anchor["title"], "GPS time from sensor_gps, 20 fixes");
    assert_eq!(anchor["boot_offset_us"], 1_790_000_000_000_000u64);
    assert_eq!(anchor["boot_utc"], "2026-09-21T14:13:20.000Z");
    let failsafe = report["parameters"]["failsafe"].as_array().unwrap();
    let nav = failsafe
        .iter()
        .find(|p| p["name"] == "NAV_DLL_ACT")
        .unwrap();
    assert_eq!(nav["value"], 2);
    let missing = failsafe
        .iter()
        .find(|p| p["name"] == "COM_DL_LOSS_T")
        .unwrap();
    assert_eq!(missing["status"], "Not logged");
}

#[test]
fn truncated_log_is_quarantined_with_exit_3_and_the_original_untouched() {
    let dir = scratch("quarantine");
    let full = dir.join("full.ulg");
    small_log(&full);
    let bytes = std::fs::read(&full).unwrap();
    let cut = dir.join("R-0933.ulg");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let before = std::fs::read(&cut).unwrap();
    let out = dir.join("out");
    let q = dir.join("q");
    let code = ulog(&[
        "ingest",
        cut.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quarantine",
        q.to_str().unwrap(),
    ]);
    assert_eq!(code, 3);
    assert_eq!(std::fs::read(&cut).unwrap(), before, "original untouched");
    assert_eq!(
        std::fs::read(q.join("R-0933.ulg")).unwrap(),
        before,
        "quarantined copy"
    );
    let reason = std::fs::read_to_string(q.join("R-0933.ulg.reason.txt")).unwrap();
    assert!(
        reason.contains("The flight log ends inside a data message at "),
        "{reason}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("R-0933.report.json")).unwrap())
            .unwrap();
    assert_eq!(report["status"], "quarantined");
    assert_eq!(report["topics"].as_array().unwrap().len(), 0);
    assert_eq!(report["gps_anchor"], serde_json::Value::Null);
    assert!(report["quarantine"]["copy"]
        .as_str()
        .unwrap()
        .ends_with("R-0933.ulg"));
}

#[test]
fn encrypted_log_is_rejected_with_exit_4_and_batch_takes_the_worst() {
    let dir = scratch("reject");
    let enc = dir.join("R-0932.ulg");
    let mut bytes = b"ULogEnc\x01".to_vec();
    bytes.extend([0u8; 14]);
    bytes.extend([0xA5u8; 300]);
    std::fs::write(&enc, &bytes).unwrap();
    let good = dir.join("good.ulg");
    small_log(&good);
    let out = dir.join("out");
    assert_eq!(
        ulog(&[
            "ingest",
            enc.to_str().unwrap(),
            "--out",
            out.to_str().unwrap()
        ]),
        4
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("R-0932.report.json")).unwrap())
            .unwrap();
    assert_eq!(report["status"], "rejected");
    assert_eq!(
        report["reason"],
        "The flight log is encrypted. Foxborne does not decrypt logs. Import the decrypted .ulg exported from your key holder."
    );
    let code = ulog(&[
        "ingest",
        good.to_str().unwrap(),
        enc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 4);
    let missing = dir.join("missing.ulg");
    assert_eq!(
        ulog(&[
            "ingest",
            missing.to_str().unwrap(),
            enc.to_str().unwrap(),
            "--out",
            "-"
        ]),
        1
    );
}

#[test]
fn record_shows_one_message_by_number_and_by_offset() {
    let dir = scratch("record");
    let log = dir.join("r.ulg");
    small_log(&log);
    assert_eq!(
        ulog(&["record", log.to_str().unwrap(), "--message", "9"]),
        0
    );
    assert_eq!(
        ulog(&["record", log.to_str().unwrap(), "--offset", "16"]),
        0
    );
    assert_eq!(
        ulog(&["record", log.to_str().unwrap(), "--message", "99999"]),
        2
    );
    assert_eq!(ulog(&["info", log.to_str().unwrap(), "--profile", "t4"]), 0);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn record_of_a_nested_sample_in_a_corpus_log() {
    let dir = common::corpus_dir();
    let log = dir.join("ulog/px4ulogrs_esc_status_log.ulg");
    let bytes = std::fs::read(&log).unwrap();
    // Find the first esc_status sample with our own reader, then ask the inspector for it.
    let mut reader = foxborne_receiver::ulog::SliceReader::new(&bytes);
    let mut target = None;
    while let Some(Ok(r)) = reader.next_record() {
        if let foxborne_receiver::ulog::Record::Data(s) = &r.record {
            if &*s.subscription.topic == "esc_status" {
                target = Some((r.message, r.offset));
                break;
            }
        }
    }
    let (message, offset) = target.expect("an esc_status sample");
    let by_message = foxborne_receiver::ulog::inspect::inspect(
        &bytes[..],
        foxborne_receiver::ulog::inspect::Target::Message(message),
    )
    .unwrap();
    let by_offset = foxborne_receiver::ulog::inspect::inspect(
        &bytes[..],
        foxborne_receiver::ulog::inspect::Target::Offset(offset + 5),
    )
    .unwrap();
    eprintln!("{by_message}");
    assert!(by_message.starts_with("topic        esc_status (multi_id 0)\ntimestamp    "));
    assert!(by_message.contains(&format!(
        "offset       byte {}",
        foxborne_receiver::ulog::display::grouped(offset)
    )));
    assert!(by_message.contains("esc[0].esc_rpm "));
    assert!(!by_message.contains("_padding"));
    assert!(
        by_offset.ends_with(&by_message),
        "by offset shows the same record, with a note"
    );
    assert!(by_offset.contains("is inside this message"));
}
