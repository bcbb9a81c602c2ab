//! `--format mcap` benchmark (issue 43): a 38 MB ULog made by the project's own writer from a
//! corpus log, exported to MCAP by `ulog export --format mcap` (its ingest pass for the anchor
//! and events, then the walk that writes every sample as JSON into zstd chunks) and by the
//! Python way (pyulog's `ULog` feeding the `mcap` package's writer,
//! `benches/mcap_pyulog_writer.py`), side by side in one run: wall time of each process (best
//! of a few), its peak memory, and the ratio. Then the peak memory of our export of a log of
//! over 1 GB (the ULog benchmarks' large log).
//!
//! Run: `cargo bench --bench mcap_export_bench`. Knobs: `FOXBORNE_BENCH_MCAP_BYTES` (the
//! derived log's size, default 38 MB), `FOXBORNE_BENCH_MCAP_SOURCE` (the corpus log it is made
//! from, default flightreview_ekf_failure.ulg), `FOXBORNE_BENCH_BYTES` (the large log, default
//! 1.1 GB; 0 leaves it out), `FOXBORNE_BENCH_DIR`, `FOXBORNE_PYTHON`.
//!
//! The derived log is `ulog_common::derive_log`'s: the corpus log's definitions once, then its
//! data section over and over, time running on, at the size asked.

#[path = "ulog_common/mod.rs"]
mod ulog_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use ulog_common::{
    after_flag, bench_dir, child_report, crate_dir, derive_log, measure_child, python,
};

/// Runs of each side; the best is kept.
const RUNS: usize = 3;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(paths) = after_flag(&args, "--export-child") {
        let t = Instant::now();
        let code = foxborne_receiver::cmd::mcap::export_files(
            &[PathBuf::from(&paths[0])],
            Path::new(&paths[1]),
        )
        .expect("export");
        assert_eq!(
            code,
            foxborne_receiver::cmd::exit::Exit::Success,
            "the export's exit code"
        );
        let size = std::fs::metadata(&paths[1]).map_or(0, |m| m.len());
        return child_report(t.elapsed().as_secs_f64(), &format!("mcap_bytes={size}"));
    }
    let dir = bench_dir().join(format!("foxborne-mcap-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    side_by_side(&dir);
    large_log(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn source_log() -> PathBuf {
    let name = std::env::var("FOXBORNE_BENCH_MCAP_SOURCE")
        .unwrap_or_else(|_| "flightreview_ekf_failure.ulg".into());
    let log = ulog_common::corpus_logs()
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == name.as_str()));
    log.unwrap_or_else(|| panic!("{name} not in the corpus (FOXBORNE_CORPUS)"))
}

/// Wall time of `command` as a whole process, and what its report line says.
fn timed(command: &mut Command) -> (f64, String) {
    let t = Instant::now();
    let out = command.output().expect("runs");
    let seconds = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (seconds, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn field(line: &str, key: &str) -> String {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or("?")
        .to_string()
}

fn side_by_side(dir: &Path) {
    let source = source_log();
    let target = env_or("FOXBORNE_BENCH_MCAP_BYTES", 38_000_000u64);
    let log = dir.join("derived.ulg");
    let (size, passes) = derive_log(&source, &log, target);
    println!(
        "### ULog to MCAP: {size} bytes made by the project's writer from {} ({passes} passes of its data, the last cut at the size asked)",
        source.file_name().unwrap().to_string_lossy()
    );
    println!();
    let exe = std::env::current_exe().unwrap();
    let script = crate_dir().join("benches/mcap_pyulog_writer.py");
    let mut ours: Option<(f64, String)> = None;
    let mut theirs: Option<(f64, String)> = None;
    for run in 0..RUNS {
        let out = dir.join(format!("ours-{run}.mcap"));
        let r = timed(Command::new(&exe).arg("--export-child").arg(&log).arg(&out));
        if ours.as_ref().is_none_or(|b| r.0 < b.0) {
            ours = Some(r);
        }
        let out = dir.join(format!("python-{run}.mcap"));
        let r = timed(Command::new(python()).arg(&script).arg(&log).arg(&out));
        if theirs.as_ref().is_none_or(|b| r.0 < b.0) {
            theirs = Some(r);
        }
    }
    let (ours_s, ours_line) = ours.unwrap();
    let (py_s, py_line) = theirs.unwrap();
    let rss = |line: &str| field(line, "rss_kb=").parse::<f64>().unwrap_or(f64::NAN) / 1024.0;
    let mb = |path: &Path| std::fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64 / 1e6);
    println!("| export of the {:.1} MB log (best of {RUNS}, each a whole process) | wall s | peak RSS MB | MCAP MB |", size as f64 / 1e6);
    println!("| --- | --- | --- | --- |");
    println!(
        "| `ulog export --format mcap` (ingest pass + JSON of every sample, zstd chunks, summary) | {ours_s:.2} | {:.1} | {:.1} |",
        rss(&ours_line),
        mb(&dir.join("ours-0.mcap"))
    );
    println!(
        "| pyulog `ULog` + `mcap` writer (Python; {} messages) | {py_s:.2} | {:.1} | {:.1} |",
        field(&py_line, "messages="),
        rss(&py_line),
        mb(&dir.join("python-0.mcap"))
    );
    println!();
    println!(
        "Ours is {:.1}x faster, at {:.0}% of Python's peak memory.",
        py_s / ours_s,
        100.0 * rss(&ours_line) / rss(&py_line)
    );
    println!();
}

fn large_log(dir: &Path) {
    if ulog_common::big_log_bytes() == 0 {
        return;
    }
    let log = dir.join("large.ulg");
    let size = ulog_common::write_big_log_timed(&log);
    let out = dir.join("large.mcap");
    let report = measure_child(["--export-child".as_ref(), log.as_os_str(), out.as_os_str()]);
    report.say_if_failed();
    println!(
        "| export of the {:.2} GB log | s | peak RSS MB | MCAP MB |",
        size as f64 / 1e9
    );
    println!("| --- | --- | --- | --- |");
    println!(
        "| `ulog export --format mcap` | {:.1} | {:.1} | {:.1} |",
        report.seconds(),
        report.rss_mb(),
        report
            .field("mcap_bytes=")
            .parse::<f64>()
            .unwrap_or(f64::NAN)
            / 1e6
    );
    println!();
}
