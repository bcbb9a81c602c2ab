//! `ulog export` against pyulog, value for value: every column of every topic instance of every
//! corpus log, in Parquet (read back with pyarrow) and CSV (read back with pandas), by
//! `tests/ulog_export_check.py`; plus the export's exit codes on damaged logs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> common::Scratch {
    common::scratch(name)
}

fn export(files: &[PathBuf], format: &str, out: &Path) -> std::process::Output {
    Command::new(common::binary())
        .args(["ulog", "export", "--format", format, "--out"])
        .arg(out)
        .args(files)
        .output()
        .unwrap()
}

fn check_against_pyulog(format: &str) {
    let logs = common::corpus_logs();
    if logs.is_empty() {
        return;
    }
    let Some(python) = common::python() else {
        return;
    };
    let out = scratch(format);
    let run = export(&logs, format, &out);
    assert!(
        run.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ulog_export_check.py");
    let check = Command::new(&python)
        .arg(&script)
        .arg(format)
        .arg(&out)
        .args(&logs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "pyulog disagrees ({stdout}):\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["logs"], logs.len(), "{summary}");
    assert_eq!(summary["problems"], 0, "{summary}");
    assert!(summary["values"].as_u64().unwrap() > 1_000_000, "{summary}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn parquet_export_equals_pyulog_on_every_corpus_log() {
    check_against_pyulog("parquet");
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn csv_export_equals_pyulog_on_every_corpus_log() {
    check_against_pyulog("csv");
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn export_exit_codes_follow_the_log_status() {
    let Some(log) = common::corpus_log("pyulog_sample.ulg") else {
        return;
    };
    let bytes = std::fs::read(&log).unwrap();
    let dir = scratch("status");
    let cut = dir.join("cut.ulg");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).unwrap();
    let not_ulog = dir.join("not.ulg");
    std::fs::write(&not_ulog, b"%PDF-1.7 not a flight log").unwrap();

    let out = dir.join("out");
    let run = export(std::slice::from_ref(&log), "parquet", &out);
    assert_eq!(run.status.code(), Some(0));
    let tables = out.join("pyulog_sample");
    for name in [
        "vehicle_attitude_0.parquet",
        "parameters.parquet",
        "logged_messages.parquet",
        "info.parquet",
        "dropouts.parquet",
    ] {
        assert!(tables.join(name).is_file(), "{name}");
    }
    // Parquet magic at both ends.
    let file = std::fs::read(tables.join("vehicle_attitude_0.parquet")).unwrap();
    assert_eq!(&file[..4], b"PAR1");
    assert_eq!(&file[file.len() - 4..], b"PAR1");

    let run = export(std::slice::from_ref(&cut), "csv", &out);
    assert_eq!(run.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&run.stderr).contains("quarantined"));
    // What was read before the cut is there.
    let att = std::fs::read_to_string(out.join("cut/vehicle_attitude_0.csv")).unwrap();
    assert!(att.lines().count() > 100);

    // A log without a single sample is not complete either.
    let header_only = dir.join("header_only.ulg");
    std::fs::write(&header_only, &bytes[..16]).unwrap();
    let run = export(std::slice::from_ref(&header_only), "parquet", &out);
    assert_eq!(run.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&run.stderr).contains("no data"));

    let run = export(std::slice::from_ref(&not_ulog), "csv", &out);
    assert_eq!(run.status.code(), Some(4));
    assert!(!out.join("not").join("parameters.csv").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
