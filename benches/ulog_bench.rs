//! ULog ingest benchmark: our reader and ingest against pyulog on the corpus logs in one run
//! (throughput ratio), and peak memory on a log of over 1 GB made by the project's writer.
//!
//! Run: `cargo bench --bench ulog_bench` (see BENCHMARKS.md for the environment knobs).
//! pyulog comes from `$FOXBORNE_PYTHON`, else `.venv/bin/python` in the crate, else `python3`;
//! without pyulog the comparison is skipped and said so.

use foxborne_receiver::ulog::ingest::{ingest_file, IngestOptions};
use foxborne_receiver::ulog::writer::UlogWriter;
use foxborne_receiver::ulog::StreamReader;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const RUNS: usize = 5;
const PYULOG_RUNS: usize = 3;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--ingest-child") {
        return child(Path::new(&args[i + 1]), true);
    }
    if let Some(i) = args.iter().position(|a| a == "--read-child") {
        return child(Path::new(&args[i + 1]), false);
    }
    if let Some(i) = args.iter().position(|a| a == "--corpus-loop") {
        // For profiling: ingest every corpus log N times.
        let n: usize = args[i + 1].parse().expect("a count");
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

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_logs() -> Vec<PathBuf> {
    let dir = std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../shared/corpus"))
        .join("ulog");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut logs: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ulg"))
        .collect();
    logs.sort();
    logs
}

fn python() -> String {
    if let Ok(p) = std::env::var("FOXBORNE_PYTHON") {
        return p;
    }
    let venv = crate_dir().join(".venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
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
    let script = crate_dir().join("benches/ulog_pyulog_timer.py");
    let mut cmd = Command::new(python());
    cmd.arg(&script).arg(PYULOG_RUNS.to_string()).args(&logs);
    let pyulog: Option<serde_json::Value> = match cmd.output() {
        Ok(out) if out.status.success() => serde_json::from_slice(&out.stdout).ok(),
        Ok(out) => {
            println!(
                "pyulog unavailable ({}): comparison skipped",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
        Err(e) => {
            println!("python unavailable ({e}): comparison skipped");
            None
        }
    };
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

/// Writes a PX4-like log of at least `target` bytes: attitude at 250 Hz, sensors at 500 Hz,
/// local position at 100 Hz, nested ESC status at 50 Hz, GPS with UTC at 10 Hz, cpuload at 2 Hz,
/// a console message every 10 s, sync every 0.5 s and a 60 ms dropout every 10 minutes.
fn write_big_log(path: &Path, target: u64) -> std::io::Result<u64> {
    let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut w = UlogWriter::new(file, 1_000_000)?;
    w.flag_bits([0; 8], [0; 8], [0; 3])?;
    w.format("vehicle_attitude:uint64_t timestamp;float[4] q;float[3] delta_q_reset;uint8_t quat_reset_counter;uint8_t[7] _padding0;")?;
    w.format("sensor_combined:uint64_t timestamp;float[3] gyro_rad;uint32_t gyro_integral_dt;int32_t accelerometer_timestamp_relative;float[3] accelerometer_m_s2;uint32_t accelerometer_integral_dt;uint8_t accelerometer_clipping;uint8_t[3] _padding0;")?;
    w.format("vehicle_local_position:uint64_t timestamp;float[34] v;uint8_t[4] flags;")?;
    w.format("esc_report:uint64_t timestamp;int32_t esc_rpm;float esc_voltage;float esc_current;float esc_temperature;uint8_t esc_address;uint8_t esc_state;uint8_t[6] _padding0;")?;
    w.format("esc_status:uint64_t timestamp;uint16_t counter;uint8_t esc_count;uint8_t esc_connectiontype;uint8_t[4] _padding0;esc_report[8] esc;")?;
    w.format("sensor_gps:uint64_t timestamp;uint64_t time_utc_usec;int32_t lat;int32_t lon;int32_t timestamp_time_relative;float eph;uint8_t fix_type;uint8_t satellites_used;uint8_t[2] _padding0;")?;
    w.format("cpuload:uint64_t timestamp;float load;float ram_usage;")?;
    w.info_str("sys_name", "PX4")?;
    w.info_str("ver_hw", "FOXBORNE_BENCH")?;
    w.parameter_i32("NAV_DLL_ACT", 2)?;
    w.parameter_f32("COM_DL_LOSS_T", 10.0)?;
    let topics = [
        "vehicle_attitude",
        "sensor_combined",
        "vehicle_local_position",
        "esc_status",
        "sensor_gps",
        "cpuload",
    ];
    for (id, t) in topics.iter().enumerate() {
        w.subscribe(0, id as u16, t)?;
    }
    let sizes = [
        8 + 16 + 12 + 1,
        8 + 12 + 4 + 4 + 12 + 4 + 1,
        8 + 136 + 4,
        16 + 8 * 32,
        8 + 8 + 4 + 4 + 4 + 4 + 2,
        16,
    ];
    let mut payloads: Vec<Vec<u8>> = sizes.iter().map(|s| vec![0x3Cu8; *s]).collect();
    let boot_utc: u64 = 1_790_000_000_000_000;
    let mut t: u64 = 1_000_000;
    let mut tick: u64 = 0;
    while w.position() < target {
        t += 2_000; // 500 Hz base tick
        tick += 1;
        let mut sample = |w: &mut UlogWriter<_>, id: usize| -> std::io::Result<()> {
            let p = &mut payloads[id];
            p[..8].copy_from_slice(&t.to_le_bytes());
            if id == 4 {
                p[8..16].copy_from_slice(&(boot_utc + t).to_le_bytes());
                p[24..28].copy_from_slice(&0i32.to_le_bytes());
            }
            w.data(id as u16, p)
        };
        sample(&mut w, 1)?;
        if tick.is_multiple_of(2) {
            sample(&mut w, 0)?;
        }
        if tick.is_multiple_of(5) {
            sample(&mut w, 2)?;
        }
        if tick.is_multiple_of(10) {
            sample(&mut w, 3)?;
        }
        if tick.is_multiple_of(50) {
            sample(&mut w, 4)?;
        }
        if tick.is_multiple_of(250) {
            sample(&mut w, 5)?;
            w.sync()?;
        }
        if tick.is_multiple_of(5_000) {
            w.logged(b'6', t, "bench: still flying")?;
        }
        if tick.is_multiple_of(300_000) {
            w.dropout(60)?;
        }
    }
    let size = w.position();
    w.into_inner().flush()?;
    Ok(size)
}

fn big_log() {
    let target: u64 = std::env::var("FOXBORNE_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_100_000_000);
    let dir = std::env::var_os("FOXBORNE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let path = dir.join(format!("foxborne-ulog-bench-{}.ulg", std::process::id()));
    let t = Instant::now();
    let size = write_big_log(&path, target).expect("writing the big log");
    println!(
        "### Large log: {size} bytes written by the project's writer in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    println!();
    println!("| run | wall time | throughput | peak RSS (VmHWM) | what it read |");
    println!("| --- | ---: | ---: | ---: | --- |");
    let exe = std::env::current_exe().unwrap();
    for (flag, label) in [
        ("--read-child", "reader only (StreamReader)"),
        ("--ingest-child", "full ingest (report)"),
    ] {
        let out = Command::new(&exe)
            .arg(flag)
            .arg(&path)
            .output()
            .expect("child runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |k: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .unwrap_or("?")
                .to_string()
        };
        let secs: f64 = field("seconds=").parse().unwrap_or(f64::NAN);
        let rss_kb: f64 = field("rss_kb=").parse().unwrap_or(f64::NAN);
        let read: Vec<&str> = text
            .split_whitespace()
            .filter(|w| !w.starts_with("seconds=") && !w.starts_with("rss_kb="))
            .collect();
        println!(
            "| {label} | {secs:.2} s | {:.0} MB/s | {:.1} MB | {} |",
            size as f64 / 1e6 / secs,
            rss_kb / 1024.0,
            read.join(" ")
        );
        if !out.status.success() {
            println!("(child failed: {})", String::from_utf8_lossy(&out.stderr));
        }
    }
    println!();
    let _ = std::fs::remove_file(&path);
}

/// Peak resident set size of this process, from /proc/self/status.
fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
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
    println!(
        "seconds={} rss_kb={} {summary}",
        t.elapsed().as_secs_f64(),
        vm_hwm_kb()
    );
}
