//! ULog ingest benchmark: our reader and ingest against pyulog on the corpus logs in one run
//! (throughput ratio), and peak memory on a log of over 1 GB made by the project's writer.
//!
//! Run: `cargo bench --bench ulog_bench` (see BENCHMARKS.md for the environment knobs).
//! pyulog comes from `$FOXBORNE_PYTHON`, else `.venv/bin/python` in the crate, else `python3`;
//! without pyulog the comparison is skipped and said so.

#[path = "ulog_common/mod.rs"]
mod ulog_common;

use foxborne_receiver::ulog::ingest::{ingest_file, IngestOptions};
use foxborne_receiver::ulog::StreamReader;
use std::path::Path;
use std::time::Instant;
use ulog_common::{
    after_flag, bench_dir, child_report, corpus_logs, measure_child, pyulog_times,
    write_big_log_timed, PYULOG_RUNS, RUNS,
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(log) = after_flag(&args, "--ingest-child") {
        return child(Path::new(&log[0]), true);
    }
    if let Some(log) = after_flag(&args, "--read-child") {
        return child(Path::new(&log[0]), false);
    }
    if let Some(count) = after_flag(&args, "--corpus-loop") {
        // For profiling: ingest every corpus log N times.
        let n: usize = count[0].parse().expect("a count");
        for _ in 0..n {
            for log in corpus_logs() {
                std::hint::black_box(ingest_file(&log, IngestOptions::default()).expect("ingest"));
            }
        }
        return;
    }
    corpus_comparison();
    big_log();
}

/// Best wall time of `RUNS` full ingests (read + report) of `path`.
fn time_ours(path: &Path) -> f64 {
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let report = ingest_file(path, IngestOptions::default()).expect("ingest");
            std::hint::black_box(&report);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn corpus_comparison() {
    let logs = corpus_logs();
    if logs.is_empty() {
        println!("corpus not found: skipping the pyulog comparison");
        return;
    }
    let pyulog = pyulog_times(&logs, PYULOG_RUNS);
    println!(
        "### Corpus: full ingest vs pyulog {}",
        pyulog
            .as_ref()
            .map_or("?".into(), |p| p["pyulog"].to_string())
    );
    println!();
    println!("| log | size | ours (best of {RUNS}) | pyulog (best of {PYULOG_RUNS}) | ratio |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let (mut bytes, mut ours_total, mut theirs_total) = (0u64, 0f64, 0f64);
    for log in &logs {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        let size = std::fs::metadata(log).unwrap().len();
        let ours = time_ours(log);
        let theirs = pyulog
            .as_ref()
            .and_then(|p| p["files"][&name]["seconds"].as_f64());
        bytes += size;
        ours_total += ours;
        let (theirs_text, ratio) = match theirs {
            Some(t) => {
                theirs_total += t;
                (format!("{:.2} ms", t * 1e3), format!("{:.0}x", t / ours))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {name} | {size} | {:.2} ms | {theirs_text} | {ratio} |",
            ours * 1e3
        );
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "| **all {} logs** | {bytes} | {:.1} ms ({:.0} MB/s) | {} | {} |",
        logs.len(),
        ours_total * 1e3,
        mb / ours_total,
        if theirs_total > 0.0 {
            format!(
                "{:.1} ms ({:.1} MB/s)",
                theirs_total * 1e3,
                mb / theirs_total
            )
        } else {
            "-".into()
        },
        if theirs_total > 0.0 {
            format!("**{:.0}x**", theirs_total / ours_total)
        } else {
            "-".into()
        },
    );
    println!();
}

fn big_log() {
    let path = bench_dir().join(format!("foxborne-ulog-bench-{}.ulg", std::process::id()));
    let size = write_big_log_timed(&path);
    println!("| run | wall time | throughput | peak RSS (VmHWM) | what it read |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for (flag, label) in [
        ("--read-child", "reader only (StreamReader)"),
        ("--ingest-child", "full ingest (report)"),
    ] {
        let report = measure_child([flag.as_ref(), path.as_os_str()]);
        let secs = report.seconds();
        let read: Vec<&str> = report
            .line
            .split_whitespace()
            .filter(|w| !w.starts_with("seconds=") && !w.starts_with("rss_kb="))
            .collect();
        println!(
            "| {label} | {secs:.2} s | {:.0} MB/s | {:.1} MB | {} |",
            size as f64 / 1e6 / secs,
            report.rss_mb(),
            read.join(" ")
        );
        report.say_if_failed();
    }
    println!();
    let _ = std::fs::remove_file(&path);
}

fn child(path: &Path, full: bool) {
    let t = Instant::now();
    let summary = if full {
        let r = ingest_file(path, IngestOptions::default()).expect("ingest");
        assert_eq!(
            r.status,
            foxborne_receiver::ulog::report::Status::Complete,
            "{:?}",
            r.reason
        );
        format!(
            "messages={} topics={} findings={}",
            r.messages,
            r.topics.len(),
            r.findings.len()
        )
    } else {
        let mut reader = StreamReader::new(std::fs::File::open(path).expect("open"));
        let mut n = 0u64;
        while let Some(item) = reader.next_record() {
            item.expect("record");
            n += 1;
        }
        format!("records={n}")
    };
    child_report(t.elapsed().as_secs_f64(), &summary);
}
