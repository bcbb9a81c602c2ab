//! Shared by the ULog benchmarks: where the corpus and Python are, pyulog's times, the
//! large-log writer and its knobs, logs made by repeating a corpus log, and the report line of a child process measured alone.
#![allow(dead_code)]

use foxborne_receiver::ulog::format::BasicType;
use foxborne_receiver::ulog::record::Record;
use foxborne_receiver::ulog::writer::UlogWriter;
use foxborne_receiver::ulog::SliceReader;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Timed runs of each corpus log through our code, the best kept.
pub const RUNS: usize = 5;
/// pyulog's runs of each, the best kept.
pub const PYULOG_RUNS: usize = 3;

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn corpus_logs() -> Vec<PathBuf> {
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

pub fn python() -> String {
    if let Ok(p) = std::env::var("FOXBORNE_PYTHON") {
        return p;
    }
    let venv = crate_dir().join(".venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
}

/// What follows `flag` among the arguments, when it is there (a child's arguments, a count).
pub fn after_flag<'a>(args: &'a [String], flag: &str) -> Option<&'a [String]> {
    args.iter().position(|a| a == flag).map(|i| &args[i + 1..])
}

/// pyulog's times for `logs` (`benches/ulog_pyulog_timer.py`, best of `runs`), or `None`, said
/// why, when Python or pyulog is missing.
pub fn pyulog_times(logs: &[PathBuf], runs: usize) -> Option<serde_json::Value> {
    let script = crate_dir().join("benches/ulog_pyulog_timer.py");
    match Command::new(python())
        .arg(&script)
        .arg(runs.to_string())
        .args(logs)
        .output()
    {
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
    }
}

/// The large log's size: `FOXBORNE_BENCH_BYTES`, default 1.1 GB.
pub fn big_log_bytes() -> u64 {
    std::env::var("FOXBORNE_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_100_000_000)
}

/// Where large files go: `FOXBORNE_BENCH_DIR`, default the temp folder.
pub fn bench_dir() -> PathBuf {
    std::env::var_os("FOXBORNE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// Writes the large log (see [`write_big_log`], [`big_log_bytes`]) at `path` and says so, with
/// the time it took; its size.
pub fn write_big_log_timed(path: &Path) -> u64 {
    let t = Instant::now();
    let size = write_big_log(path, big_log_bytes()).expect("writing the big log");
    println!(
        "### Large log: {size} bytes written by the project's writer in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    println!();
    size
}

/// A measured child's report line: the `seconds` its work took, its peak memory, then
/// `summary` (`key=value` words).
pub fn child_report(seconds: f64, summary: &str) {
    println!("seconds={seconds} rss_kb={} {summary}", vm_hwm_kb());
}

/// This benchmark's executable run again with `args` (a `--...-child` mode), measured alone:
/// what its report line says.
pub fn measure_child<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> ChildReport {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .output()
        .expect("child runs");
    ChildReport {
        line: String::from_utf8_lossy(&out.stdout).into_owned(),
        failed: (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// What a child's report line (see [`child_report`]) says: its seconds and peak RSS in MB, and
/// the value of any other key (`?` where missing).
pub struct ChildReport {
    pub line: String,
    /// The child's stderr, when it failed.
    failed: Option<String>,
}

impl ChildReport {
    /// Says so under the table, when the child failed.
    pub fn say_if_failed(&self) {
        if let Some(stderr) = &self.failed {
            println!("(child failed: {stderr})");
        }
    }

    pub fn field(&self, key: &str) -> String {
        self.line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or("?")
            .to_string()
    }

    pub fn seconds(&self) -> f64 {
        self.field("seconds=").parse().unwrap_or(f64::NAN)
    }

    pub fn rss_mb(&self) -> f64 {
        self.field("rss_kb=").parse().unwrap_or(f64::NAN) / 1024.0
    }
}

/// Writes a PX4-like log of at least `target` bytes: attitude at 250 Hz, sensors at 500 Hz,
/// local position at 100 Hz, nested ESC status at 50 Hz, GPS with UTC at 10 Hz, cpuload at 2 Hz,
/// a console message every 10 s, sync every 0.5 s and a 60 ms dropout every 10 minutes.
pub fn write_big_log(path: &Path, target: u64) -> std::io::Result<u64> {
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

/// Peak resident set size of this process, from /proc/self/status.
pub fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The corpus log `source` repeated through the writer until `target` bytes: its definitions
/// once, then its data section over and over (every data sample, logged message, sync and
/// dropout, each pass's timestamps and GPS UTC moved on by the log's span, so time runs on),
/// written message by message through `UlogWriter`: the topics, fields and rates of a real
/// flight, at the size asked. Its size and the passes made (the last cut at the size asked).
pub fn derive_log(source: &Path, path: &Path, target: u64) -> (u64, u64) {
    let bytes = std::fs::read(source).unwrap();
    // The data section's span, so each pass starts after the last one ended.
    let (mut first, mut last) = (u64::MAX, 0u64);
    let mut header_start = 0u64;
    let mut reader = SliceReader::new(&bytes);
    while let Some(item) = reader.next_record() {
        match item.map(|l| l.record) {
            Ok(Record::Data(s)) => {
                if let Some(t) = s.timestamp {
                    first = first.min(t);
                    last = last.max(t);
                }
            }
            Ok(Record::FileHeader(h)) => header_start = h.timestamp,
            _ => {}
        }
    }
    let span = last.saturating_sub(first) + 1_000_000;
    let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut w = UlogWriter::new(file, header_start).unwrap();
    w.flag_bits([0; 8], [0; 8], [0; 3]).unwrap();
    // Where each subscription's GPS UTC is, to move it with the timestamps.
    let mut utc_at: HashMap<u16, Option<usize>> = HashMap::new();
    let mut pass = 0u64;
    'passes: while pass == 0 || w.position() < target {
        let shift = pass * span;
        let mut reader = SliceReader::new(&bytes);
        while let Some(item) = reader.next_record() {
            let Ok(located) = item else { continue };
            // Stopped at the size asked, on a message boundary, once the definitions are in.
            if pass > 0 && w.position() >= target {
                pass += 1; // the pass cut short
                break 'passes;
            }
            // The message's payload after its 3-byte header.
            let mut payload = located.bytes[3..].to_vec();
            let kind = located.msg_type;
            match &located.record {
                Record::FileHeader(_) | Record::FlagBits(_) => continue,
                // The definitions, subscriptions and unsubscriptions once.
                Record::Format { .. }
                | Record::Info(_)
                | Record::MultiInfo { .. }
                | Record::Parameter { initial: true, .. }
                | Record::DefaultParameter { .. }
                | Record::Subscription { .. }
                | Record::Unsubscription { .. }
                    if pass > 0 =>
                {
                    continue
                }
                Record::Subscription {
                    subscription,
                    formats,
                } => {
                    let fields = formats.flatten(&subscription.layout.format_name).unwrap();
                    let utc = fields
                        .iter()
                        .find(|f| f.name == "time_utc_usec" && f.ty == BasicType::UInt64)
                        .map(|f| f.offset);
                    utc_at.insert(subscription.msg_id, utc);
                }
                Record::Data(sample) => {
                    let at = 2; // after msg_id
                    if let (Some(t), Some(off)) = (
                        sample.timestamp,
                        sample.subscription.layout.timestamp_offset,
                    ) {
                        payload[at + off..at + off + 8].copy_from_slice(&(t + shift).to_le_bytes());
                    }
                    if let Some(Some(off)) = utc_at.get(&sample.subscription.msg_id) {
                        let p = &mut payload[at + off..at + off + 8];
                        let utc = u64::from_le_bytes(p.try_into().unwrap());
                        if utc != 0 {
                            p.copy_from_slice(&(utc + shift).to_le_bytes());
                        }
                    }
                }
                Record::Logged(l) => {
                    // L: level, timestamp; C: level, tag, timestamp.
                    let at = if l.tag.is_some() { 3 } else { 1 };
                    payload[at..at + 8].copy_from_slice(&(l.timestamp + shift).to_le_bytes());
                }
                _ => {}
            }
            w.raw(kind, &payload).unwrap();
        }
        pass += 1;
    }

    let size = w.position();
    w.into_inner().flush().unwrap();
    (size, pass)
}
