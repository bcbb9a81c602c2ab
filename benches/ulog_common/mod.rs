//! Shared by the ULog benchmarks: where the corpus and Python are, the large-log writer, and
//! peak memory.
#![allow(dead_code)]

use foxborne_receiver::ulog::writer::UlogWriter;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
