//! `ulog export` against pyulog, value for value: every column of every topic instance of every
//! corpus log, in Parquet (read back with pyarrow) and CSV (read back with pandas), by
//! `tests/ulog_export_check.py`; the Parquet of a few logs read back with DuckDB and Polars
//! (`tests/ulog_export_readers.py`); plus the export's exit codes on damaged logs, what a
//! rejected file leaves (nothing), the samples a format redefinition keeps out of a table, and a
//! batch of logs (exported two at a time: the same tables as one at a time, reported in order;
//! two logs of one name refused).

use crate::common;

use foxborne_receiver::ulog::writer::UlogWriter;
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

/// Runs the suite's read-back script `script` over `args`, then the export folder `dir`, then
/// `logs`; fails the test, saying `who` disagrees and what the script printed, unless it passes.
/// Its one-line summary, which must count every log, no problem and over a million values.
fn check_export(
    python: &Path,
    script: &str,
    args: &[&str],
    dir: &Path,
    logs: &[PathBuf],
    who: &str,
) -> serde_json::Value {
    let check = common::python_script(python, script)
        .args(args)
        .arg(dir)
        .args(logs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{who} disagrees ({stdout}):\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["logs"], logs.len(), "{summary}");
    assert_eq!(summary["problems"], 0, "{summary}");
    assert!(summary["values"].as_u64().unwrap() > 1_000_000, "{summary}");
    summary
}

fn check_against_pyulog(format: &str) {
    let logs = common::corpus_logs();
    let python = common::python();
    let out = scratch(format);
    common::assert_success(&export(&logs, format, &out), "export");
    check_export(
        &python,
        "ulog_export_check.py",
        &[format],
        &out,
        &logs,
        "pyulog",
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn parquet_export_equals_pyulog_on_every_corpus_log() {
    check_against_pyulog("parquet");
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn csv_export_equals_pyulog_on_every_corpus_log() {
    check_against_pyulog("csv");
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn export_exit_codes_follow_the_log_status() {
    let log = common::corpus_log("pyulog_sample.ulg");
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
    assert!(!out.join("not").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The interpreter for the DuckDB and Polars read-back.
fn python_with_duckdb_and_polars() -> PathBuf {
    common::python_with(&["pyulog", "pyarrow", "pandas", "numpy", "duckdb", "polars"])
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn parquet_reads_back_in_duckdb_and_polars() {
    // Console messages with and without tags (a nullable column), nested arrays of structs, and
    // the longest and most varied logs; uncompressed and Snappy.
    let logs: Vec<PathBuf> = [
        "pyulog_sample.ulg",
        "pyulog_sample_logging_tagged_and_default_params.ulg",
        "px4ulogrs_esc_status_log.ulg",
        "px4ulogrs_quadrotor_local.ulg",
    ]
    .iter()
    .map(|name| common::corpus_file("ulog", name))
    .collect();
    let python = python_with_duckdb_and_polars();
    let out = scratch("readers");
    for compression in ["none", "snappy"] {
        let dir = out.join(compression);
        common::run_ok(
            Command::new(common::binary())
                .args(["ulog", "export", "--compression", compression, "--out"])
                .arg(&dir)
                .args(&logs),
            "export",
        );
        let summary = check_export(
            &python,
            "ulog_export_readers.py",
            &[],
            &dir,
            &logs,
            &format!("DuckDB or Polars ({compression})"),
        );
        assert!(summary["tables"].as_u64().unwrap() > 200, "{summary}");
    }
}

#[test]
fn a_rejected_file_leaves_no_folder() {
    let dir = scratch("rejected");
    let encrypted = dir.join("encrypted.ulg");
    let mut bytes = b"ULogEnc".to_vec();
    bytes.extend_from_slice(&[0x5A; 200]);
    std::fs::write(&encrypted, &bytes).unwrap();
    let not_ulog = dir.join("notes.ulg");
    std::fs::write(&not_ulog, b"%PDF-1.7 not a flight log").unwrap();
    let good = dir.join("good.ulg");
    std::fs::write(&good, small_log(|_| Ok(()))).unwrap();

    // Only rejected files: not even the output folder is made.
    let out = dir.join("out");
    for format in ["parquet", "csv"] {
        let run = export(&[encrypted.clone(), not_ulog.clone()], format, &out);
        assert_eq!(run.status.code(), Some(4), "{format}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains("encrypted.ulg: rejected"), "{stderr}");
        assert!(stderr.contains("notes.ulg: rejected"), "{stderr}");
        assert!(!out.exists(), "{format}: {} was made", out.display());
    }

    // Beside a good log: its folder only.
    let run = export(&[encrypted, good, not_ulog], "parquet", &out);
    assert_eq!(run.status.code(), Some(4));
    let mut made: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert_eq!(made, ["good"]);
}

/// A small valid log: topic `t` (`uint64_t timestamp; float x;`) subscribed as msg_id 0 with
/// three samples, then whatever `more` writes.
fn small_log(more: impl FnOnce(&mut UlogWriter<Vec<u8>>) -> std::io::Result<()>) -> Vec<u8> {
    let mut w = UlogWriter::new(Vec::new(), 1_000).unwrap();
    w.flag_bits([0; 8], [0; 8], [0; 3]).unwrap();
    w.format("t:uint64_t timestamp;float x;").unwrap();
    w.subscribe(0, 0, "t").unwrap();
    for i in 0..3u64 {
        let mut p = (1_000 + i).to_le_bytes().to_vec();
        p.extend_from_slice(&(i as f32).to_le_bytes());
        w.data(0, &p).unwrap();
    }
    more(&mut w).unwrap();
    w.into_inner()
}

#[test]
fn samples_of_a_redefined_format_are_counted_and_reported() {
    // `t` is redefined mid-log (smaller, other types) and subscribed again, same instance: its
    // samples cannot go in the table made for the first format. An `F` message in the data
    // section is read, as PX4 tools read it.
    let bytes = small_log(|w| {
        w.format("t:uint64_t timestamp;uint16_t y;")?;
        w.subscribe(0, 1, "t")?;
        for i in 0..5u64 {
            let mut p = (2_000 + i).to_le_bytes().to_vec();
            p.extend_from_slice(&7u16.to_le_bytes());
            w.data(1, &p)?;
        }
        // Another instance of the same topic gets its own table, with the new format.
        w.subscribe(1, 2, "t")?;
        let mut p = 3_000u64.to_le_bytes().to_vec();
        p.extend_from_slice(&9u16.to_le_bytes());
        w.data(2, &p)
    });
    let dir = scratch("redefined");
    let log = dir.join("redefined.ulg");
    std::fs::write(&log, bytes).unwrap();
    for format in ["parquet", "csv"] {
        let out = dir.join(format);
        let run = export(std::slice::from_ref(&log), format, &out);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        // The log is sound: the exit code follows its status.
        assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
        assert!(
            stdout.contains("2 topic tables (4 rows, 5 samples skipped)"),
            "{stdout}"
        );
        assert!(
            stderr.contains(&format!(
                "redefined.ulg: warning: 5 samples not exported: their topic's format was redefined after its table was made, and a table has one format (t_0.{format}: 5)"
            )),
            "{stderr}"
        );
        if format == "csv" {
            let t0 = std::fs::read_to_string(out.join("redefined/t_0.csv")).unwrap();
            assert_eq!(t0, "timestamp,x\n1000,0\n1001,1\n1002,2\n");
            let t1 = std::fs::read_to_string(out.join("redefined/t_1.csv")).unwrap();
            assert_eq!(t1, "timestamp,y\n3000,9\n");
        }
    }
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_batch_writes_what_each_log_alone_writes_and_reports_in_order() {
    let logs: Vec<PathBuf> = [
        "pyulog_sample.ulg",
        "flightreview_ekf_failure.ulg",
        "pyulog_sample_appended_multiple.ulg",
        "px4ulogrs_esc_status_log.ulg",
    ]
    .iter()
    .map(|name| common::corpus_log(name))
    .collect();
    let dir = scratch("batch");
    // A damaged log in the middle: its status (quarantined) is the batch's exit code, and the
    // logs after it are exported all the same.
    let cut = dir.join("cut.ulg");
    let bytes = std::fs::read(&logs[1]).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let mut batch = logs.clone();
    batch.insert(2, cut);

    let together = dir.join("together");
    let run = export(&batch, "parquet", &together);
    assert_eq!(
        run.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let reported: Vec<&str> = stdout
        .lines()
        .map(|l| l.split(": ").next().unwrap())
        .collect();
    let given: Vec<String> = batch.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(reported, given, "one line per log, in the order given");

    let alone = dir.join("alone");
    for log in &batch {
        let run = export(std::slice::from_ref(log), "parquet", &alone);
        assert!(matches!(run.status.code(), Some(0 | 3)));
    }
    let (a, b) = (tree(&together), tree(&alone));
    assert!(a.len() > 200, "{} files", a.len());
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same tables"
    );
    for (path, bytes) in &a {
        assert!(bytes == &b[path], "{} differs", path.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn two_logs_of_the_same_name_are_refused_before_anything_is_written() {
    let log = common::corpus_log("pyulog_sample_log_small.ulg");
    let dir = scratch("same-name");
    let other = dir
        .join("second-vehicle")
        .join("pyulog_sample_log_small.ulg");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::copy(&log, &other).unwrap();
    let out = dir.join("out");
    let run = export(&[log.clone(), other.clone()], "parquet", &out);
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(&log.display().to_string())
            && stderr.contains(&other.display().to_string())
            && stderr.contains("out/pyulog_sample_log_small"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}
