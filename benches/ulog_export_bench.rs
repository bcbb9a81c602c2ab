//! `ulog export` benchmark: full decode and export of every corpus log (Parquet and CSV) against
//! pyulog's `ULog(path)` (its full parse into numpy arrays) in one run, and peak memory of a
//! Parquet export of a log of over 1 GB made by the project's writer.
//!
//! Run: `cargo bench --bench ulog_export_bench`. Knobs: `FOXBORNE_BENCH_BYTES` (large log size,
//! default 1.1 GB), `FOXBORNE_BENCH_DIR` (where it is written), `FOXBORNE_PYTHON`; for profiling,
//! `--corpus-loop N` (and `FOXBORNE_BENCH_KEEP=1` to leave its tables); `--table-costs` for the
//! writer's fixed costs per file and per column chunk, and the corpus's count of both.
//!
//! Every timed export goes into a folder of its own and nothing is deleted until all are timed:
//! on ext4 without a journal (this project's CI and bench machine) creating a file scans the
//! inodes deleted in the last minutes (`recently_deleted` in fs/ext4/ialloc.c), so deleting the
//! last run's 1,500 tables before each run made every create of the next up to 0.1 ms slower, a
//! cost of the benchmark's own clean-up that an export into a fresh folder does not pay.

#[path = "ulog_common/mod.rs"]
mod ulog_common;

use foxborne_receiver::ulog::export::{export_file, export_files};
use foxborne_receiver::ulog::table::{Codec, FileFormat};
use std::path::{Path, PathBuf};
use std::time::Instant;
use ulog_common::{
    after_flag, bench_dir, child_report, corpus_logs, measure_child, pyulog_times,
    write_big_log_timed, PYULOG_RUNS, RUNS,
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(paths) = after_flag(&args, "--export-child") {
        return child(Path::new(&paths[0]), Path::new(&paths[1]));
    }
    if let Some(count) = after_flag(&args, "--corpus-loop") {
        // For profiling (`perf record`): export every corpus log to Parquet N times, each pass
        // into a fresh folder; prints each pass's wall time.
        let n: usize = count[0].parse().expect("a count");
        let out = out_dir();
        for pass in 0..n {
            let t = Instant::now();
            for log in corpus_logs() {
                std::hint::black_box(
                    export_file(&log, &fresh(&out), FileFormat::Parquet, Codec::None)
                        .expect("export"),
                );
            }
            println!("pass {pass}: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        }
        // FOXBORNE_BENCH_KEEP=1 leaves the tables, so that runs one after the other delete
        // nothing between them (see the module comment).
        if std::env::var_os("FOXBORNE_BENCH_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&out);
        }
        return;
    }
    if args.iter().any(|a| a == "--table-costs") {
        return table_costs(&out_dir());
    }
    if args.iter().any(|a| a == "--rounds") {
        // Only the headline batch comparison.
        return batch_rounds(&corpus_logs(), &out_dir());
    }
    corpus_comparison();
    big_log();
}

fn out_dir() -> PathBuf {
    bench_dir().join(format!("foxborne-export-bench-{}", std::process::id()))
}

/// A folder under `out` not used before (see the module comment: nothing is deleted while the
/// runs are timed).
fn fresh(out: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    out.join(
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_string(),
    )
}

/// Best wall time of `RUNS` exports of `path` (read, decode every field, write every table),
/// each into a fresh folder.
fn time_export(path: &Path, format: FileFormat, codec: Codec, out: &Path) -> f64 {
    (0..RUNS)
        .map(|_| {
            let dir = fresh(out);
            let t = Instant::now();
            let summary = export_file(path, &dir, format, codec).expect("export");
            std::hint::black_box(&summary);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// This process's CPU time so far (all threads, user and system), in seconds.
fn cpu_seconds() -> f64 {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage");
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    secs(usage.user_time()) + secs(usage.system_time())
}

/// Rounds of the headline comparison (see [`batch_rounds`]).
const ROUNDS: usize = 7;

/// The headline figure, robust to a noisy machine: `ROUNDS` rounds, each pyulog's `ULog(path)`
/// over every log once (one Python process, timed inside it) and then one batch export of every
/// log (one `export_files` call, as `ulog export` runs), back to back, so both see the same
/// neighbours; the ratio of each round, and their median.
fn batch_rounds(logs: &[PathBuf], out: &Path) {
    let mut rows = Vec::new();
    for _ in 0..ROUNDS {
        let Some(py) = pyulog_times(logs, 1) else {
            println!("pyulog unavailable: the batch comparison is skipped");
            return;
        };
        let sum = |key: &str| -> f64 {
            py["files"]
                .as_object()
                .map_or(0.0, |f| f.values().filter_map(|v| v[key].as_f64()).sum())
        };
        let (py_wall, py_cpu) = (sum("seconds"), sum("cpu_seconds"));
        let dir = fresh(out);
        let (t, c) = (Instant::now(), cpu_seconds());
        export_files(logs, &dir, FileFormat::Parquet, Codec::None, |_, r| {
            std::hint::black_box(r.expect("export"));
        })
        .expect("distinct names");
        let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        rows.push((py_wall, py_cpu, wall, cpu));
    }
    println!(
        "### Corpus in one batch: `ulog export` of all {} logs vs pyulog over the same logs, {ROUNDS} rounds back to back",
        logs.len()
    );
    println!();
    println!(
        "| round | pyulog wall | pyulog CPU | export wall | export CPU | ratio wall | ratio CPU |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (i, (pw, pc, w, c)) in rows.iter().enumerate() {
        println!(
            "| {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1}x | {:.1}x |",
            i + 1,
            pw * 1e3,
            pc * 1e3,
            w * 1e3,
            c * 1e3,
            pw / w,
            pc / c
        );
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let wall: Vec<f64> = rows.iter().map(|r| r.0 / r.2).collect();
    let cpu: Vec<f64> = rows.iter().map(|r| r.1 / r.3).collect();
    let (lo, hi) = wall.iter().fold((f64::INFINITY, 0f64), |(lo, hi), r| {
        (lo.min(*r), hi.max(*r))
    });
    println!();
    println!(
        "Median ratio: **{:.1}x** wall ({lo:.1}x to {hi:.1}x), {:.1}x CPU (the export uses both cores: logs of up to {} MiB are exported two at a time, each one's read overlapping the other's writes; pyulog uses one).",
        median(wall),
        median(cpu),
        foxborne_receiver::ulog::export::CONCURRENT_MAX_BYTES >> 20
    );
    println!();
}

fn corpus_comparison() {
    let logs = corpus_logs();
    if logs.is_empty() {
        println!("corpus not found: skipping the pyulog comparison");
        return;
    }
    let pyulog = pyulog_times(&logs, PYULOG_RUNS);
    let out = out_dir();
    println!(
        "### Corpus: full decode + export vs pyulog {} `ULog(path)`",
        pyulog
            .as_ref()
            .map_or("?".into(), |p| p["pyulog"].to_string())
    );
    println!();
    println!(
        "| log | size | export Parquet (best of {RUNS}) | export CSV (best of {RUNS}) | pyulog ULog() (best of {PYULOG_RUNS}) | ratio Parquet | ratio CSV |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut bytes, mut pq_total, mut csv_total, mut py_total) = (0u64, 0f64, 0f64, 0f64);
    // Sums of the logarithms of the per-log Parquet ratios, for their geometric mean.
    let (mut log_ratios, mut n_ratios) = (0f64, 0usize);
    let mut snappy_total = 0f64;
    for log in &logs {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        let size = std::fs::metadata(log).unwrap().len();
        let pq = time_export(log, FileFormat::Parquet, Codec::None, &out);
        let snappy = time_export(log, FileFormat::Parquet, Codec::Snappy, &out);
        let csv = time_export(log, FileFormat::Csv, Codec::None, &out);
        bytes += size;
        pq_total += pq;
        snappy_total += snappy;
        csv_total += csv;
        let theirs = pyulog
            .as_ref()
            .and_then(|p| p["files"][&name]["seconds"].as_f64());
        let (theirs_text, r_pq, r_csv) = match theirs {
            Some(t) => {
                py_total += t;
                log_ratios += (t / pq).ln();
                n_ratios += 1;
                (
                    format!("{:.2} ms", t * 1e3),
                    format!("{:.1}x", t / pq),
                    format!("{:.1}x", t / csv),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {name} | {size} | {:.2} ms | {:.2} ms | {theirs_text} | {r_pq} | {r_csv} |",
            pq * 1e3,
            csv * 1e3
        );
    }
    let mb = bytes as f64 / 1e6;
    let ratio = |ours: f64| {
        if py_total > 0.0 {
            format!("**{:.1}x**", py_total / ours)
        } else {
            "-".into()
        }
    };
    println!(
        "| **all {} logs** | {bytes} | {:.1} ms ({:.0} MB/s) | {:.1} ms ({:.0} MB/s) | {:.1} ms ({:.1} MB/s) | {} | {} |",
        logs.len(),
        pq_total * 1e3,
        mb / pq_total,
        csv_total * 1e3,
        mb / csv_total,
        py_total * 1e3,
        mb / py_total.max(f64::MIN_POSITIVE),
        ratio(pq_total),
        ratio(csv_total),
    );
    println!();
    println!(
        "Parquet with `--compression snappy`: {:.1} ms over the corpus ({})",
        snappy_total * 1e3,
        ratio(snappy_total)
    );
    if n_ratios > 0 {
        println!();
        println!(
            "Geometric mean of the {n_ratios} per-log Parquet ratios: {:.1}x",
            (log_ratios / n_ratios as f64).exp()
        );
    }
    println!();
    batch_rounds(&logs, &out);
    println!(
        "Threads: {} available to this process; the export uses up to {} per log.",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        foxborne_receiver::ulog::export::MAX_THREADS
    );
    println!();
    let _ = std::fs::remove_dir_all(&out);
}

fn big_log() {
    let out = out_dir();
    std::fs::create_dir_all(&out).unwrap();
    let path = out.join("big.ulg");
    let size = write_big_log_timed(&path);
    let report = measure_child([
        "--export-child".as_ref(),
        path.as_os_str(),
        out.join("tables").as_os_str(),
    ]);
    let secs = report.seconds();
    println!("| run | wall time | throughput | peak RSS (VmHWM) | written |");
    println!("| --- | ---: | ---: | ---: | --- |");
    println!(
        "| export to Parquet | {secs:.2} s | {:.0} MB/s | {:.1} MB | {} rows, {} MB of Parquet |",
        size as f64 / 1e6 / secs,
        report.rss_mb(),
        report.field("rows="),
        report.field("parquet_mb=")
    );
    report.say_if_failed();
    println!();
    let _ = std::fs::remove_dir_all(&out);
}

fn child(path: &Path, out: &Path) {
    let t = Instant::now();
    let summary = export_file(path, out, FileFormat::Parquet, Codec::None).expect("export");
    let secs = t.elapsed().as_secs_f64();
    let rows: u64 = summary.topics.iter().map(|(_, n)| n).sum();
    let written: u64 = std::fs::read_dir(&summary.dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    child_report(
        secs,
        &format!("rows={rows} parquet_mb={:.0}", written as f64 / 1e6),
    );
}

/// What a table costs the writer apart from its values: Parquet tables of float columns of a few
/// shapes written with `TableWriter` (best of 3 runs of `files` tables each), the time to create
/// one and to write and close it; then how many tables, column chunks and values the corpus's
/// export writes, which those fixed costs multiply.
fn table_costs(out: &Path) {
    use foxborne_receiver::ulog::table::{Column, Kind, TableWriter};
    println!("| tables | columns | rows | create (per table) | write and close (per table) | per column chunk |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut one_column = f64::NAN;
    for (files, columns, rows) in [
        (2000, 1, 10),
        (2000, 16, 10),
        (2000, 16, 300),
        (500, 64, 100),
    ] {
        let mut best = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            let dir = fresh(out);
            std::fs::create_dir_all(&dir).unwrap();
            let (mut create, mut close) = (0.0, 0.0);
            for f in 0..files {
                let cols = (0..columns)
                    .map(|c| Column::new(format!("c{c}"), Kind::Float))
                    .collect();
                let t = Instant::now();
                let mut table = TableWriter::create(
                    &dir.join(format!("{f}.parquet")),
                    FileFormat::Parquet,
                    Codec::None,
                    cols,
                )
                .expect("create");
                create += t.elapsed().as_secs_f64();
                for c in 0..columns {
                    let values = table.f32s(c).expect("float column");
                    values.extend((0..rows).map(|r| r as f32));
                }
                table.add_rows(rows);
                let t = Instant::now();
                table.finish().expect("finish");
                close += t.elapsed().as_secs_f64();
            }
            let n = files as f64;
            best = (best.0.min(create / n), best.1.min(close / n));
        }
        if columns == 1 {
            one_column = best.1;
        }
        let per_chunk = if columns > 1 && rows == 10 {
            format!(
                "{:.2} us",
                (best.1 - one_column) / (columns - 1) as f64 * 1e6
            )
        } else {
            "".into()
        };
        println!(
            "| {files} | {columns} | {rows} | {:.1} us | {:.1} us | {per_chunk} |",
            best.0 * 1e6,
            best.1 * 1e6
        );
    }
    println!();
    let dir = fresh(out);
    let (mut tables, mut chunks, mut values) = (0u64, 0u64, 0u64);
    for log in corpus_logs() {
        let summary = export_file(&log, &dir, FileFormat::Parquet, Codec::None).expect("export");
        for entry in std::fs::read_dir(&summary.dir).expect("tables") {
            use parquet::file::reader::{FileReader, SerializedFileReader};
            let file = std::fs::File::open(entry.expect("entry").path()).expect("open");
            let meta = SerializedFileReader::new(file)
                .expect("parquet")
                .metadata()
                .clone();
            let columns = meta.file_metadata().schema_descr().num_columns() as u64;
            tables += 1;
            chunks += columns * meta.num_row_groups() as u64;
            values += columns * meta.file_metadata().num_rows() as u64;
        }
    }
    println!(
        "The corpus's export: {tables} tables, {chunks} column chunks, {:.1} M values.",
        values as f64 / 1e6
    );
    let _ = std::fs::remove_dir_all(out);
}
