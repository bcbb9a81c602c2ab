//! `analyze`: recorded receipts (receive JSONL or a ground-station `.tlog`) through the same
//! gap detector and latency estimator as the live daemon, clocked by the recorded times.
//! Findings are printed as JSON lines with the same keys as the live events. Before each
//! receipt the watch is polled at that receipt's time, as the live pipeline's timer would have
//! been, and at the end at the last receipt's time, so a gap still open there is reported open.

use crate::config::Config;
use crate::wire::fields::{HEARTBEAT, SYSTEM_TIME};
use crate::wire::signing::SigningKeys;
use crate::wire::{fields, ScanItem};
use crate::monitor::{Event, GapConfig, LatencyConfig, Watch};
use crate::receipt::ReceiptRecord;
use crate::recorder::Observation;
use crate::tlog::TlogReader;
use anyhow::Context;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// One receipt as the monitors need it.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    pub utc_ns: i64,
    pub link: String,
    pub observation: Observation,
}

/// The settings analyze runs with: the daemon's config when given, else the defaults.
pub struct AnalyzeSettings {
    pub gap: GapConfig,
    pub latency: LatencyConfig,
    pub report_interval_s: f64,
}

impl AnalyzeSettings {
    pub fn from_config(config: Option<&Config>) -> Self {
        match config {
            Some(c) => {
                let mut gap = GapConfig::with_threshold_s(c.gap.threshold_s);
                gap.ignore_sysids = c.gap.ignore_sysids.iter().copied().collect();
                gap.vehicles = c.gap.vehicles.clone();
                let latency = LatencyConfig {
                    window_ns: (c.latency.window_s * 1e9) as i64,
                    ..LatencyConfig::default()
                };
                AnalyzeSettings {
                    gap,
                    latency,
                    report_interval_s: c.latency.report_interval_s,
                }
            }
            None => AnalyzeSettings {
                gap: GapConfig::default(),
                latency: LatencyConfig::default(),
                report_interval_s: 10.0,
            },
        }
    }
}

/// Whether a file is receiver JSONL: `"recv_utc"` in its first 4,096 bytes.
pub fn is_receiver_jsonl(head: &[u8]) -> bool {
    head[..head.len().min(4096)]
        .windows(10)
        .any(|w| w == b"\"recv_utc\"")
}

/// Heartbeat and SYSTEM_TIME receipts of a `.tlog`, at the record's µs time.
pub fn tlog_receipts(bytes: &[u8], link: &str) -> Vec<Receipt> {
    let keys = SigningKeys::default();
    let mut out = Vec::new();
    for record in TlogReader::new(bytes, &keys) {
        let ScanItem::Frame(f) = record.item else {
            continue;
        };
        let utc_ns = record.utc_us as i64 * 1000;
        let observation = match f.msgid {
            HEARTBEAT => Observation::Heartbeat {
                link: 0,
                sysid: f.sysid,
                compid: f.compid,
                utc_ns,
            },
            SYSTEM_TIME => {
                let t = fields::system_time(f.payload);
                Observation::SystemTime {
                    link: 0,
                    sysid: f.sysid,
                    utc_ns,
                    time_unix_usec: t.time_unix_usec,
                    time_boot_ms: t.time_boot_ms,
                }
            }
            _ => continue,
        };
        out.push(Receipt {
            utc_ns,
            link: link.to_string(),
            observation,
        });
    }
    out
}

/// Heartbeat and SYSTEM_TIME receipts of a receive log. A line that is not a receipt is reported
/// with its file and line number and skipped. SYSTEM_TIME needs its `fields` (the daemon writes
/// them by default); without them it cannot give latency and is counted.
pub fn jsonl_receipts(
    reader: impl BufRead,
    file: &Path,
    problems: &mut Vec<String>,
) -> anyhow::Result<Vec<Receipt>> {
    let mut out = Vec::new();
    let mut system_time_without_fields = 0u64;
    for (n, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", file.display(), n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: ReceiptRecord = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!(
                    "{}: line {}: not a receipt: {e}",
                    file.display(),
                    n + 1
                ));
                continue;
            }
        };
        let Some(utc_ns) = crate::monitor::parse_utc_ns(&record.recv_utc) else {
            problems.push(format!(
                "{}: line {}: recv_utc {:?} is not RFC 3339",
                file.display(),
                n + 1,
                record.recv_utc
            ));
            continue;
        };
        let observation = match record.msgid {
            HEARTBEAT => Observation::Heartbeat {
                link: 0,
                sysid: record.sysid,
                compid: record.compid,
                utc_ns,
            },
            SYSTEM_TIME => {
                let fields = record.fields.as_ref();
                let get = |k: &str| fields.and_then(|f| f.get(k)).and_then(|v| v.as_u64());
                match (get("time_unix_usec"), get("time_boot_ms")) {
                    (Some(unix), Some(boot)) => Observation::SystemTime {
                        link: 0,
                        sysid: record.sysid,
                        utc_ns,
                        time_unix_usec: unix,
                        time_boot_ms: boot as u32,
                    },
                    _ => {
                        system_time_without_fields += 1;
                        continue;
                    }
                }
            }
            _ => continue,
        };
        out.push(Receipt {
            utc_ns,
            link: record.link,
            observation,
        });
    }
    if system_time_without_fields > 0 {
        problems.push(format!(
            "{}: {system_time_without_fields} SYSTEM_TIME receipts carry no fields: no latency from them (add SYSTEM_TIME to `fields`)",
            file.display()
        ));
    }
    Ok(out)
}

/// Runs the receipts (in order) through the watch; returns the findings in the order the live
/// daemon would have raised them.
pub fn findings(receipts: &[Receipt], settings: &AnalyzeSettings) -> Vec<Event> {
    let Some(first) = receipts.first() else {
        return Vec::new();
    };
    let mut watch = Watch::new(
        settings.gap.clone(),
        settings.latency.clone(),
        settings.report_interval_s,
        first.utc_ns,
    );
    let mut events = Vec::new();
    for r in receipts {
        // The recording's own clock, even where it stepped back: the detector judges spacing in
        // arrival order, as the recording was made.
        events.extend(watch.poll(r.utc_ns, None));
        events.extend(watch.observe(&r.observation, &r.link));
    }
    events.extend(watch.poll(receipts[receipts.len() - 1].utc_ns, None));
    events
}

pub fn run(files: &[PathBuf], config: Option<&Path>, link: Option<&str>) -> anyhow::Result<()> {
    anyhow::ensure!(!files.is_empty(), "no files given");
    let config = config.map(Config::load).transpose()?;
    let settings = AnalyzeSettings::from_config(config.as_ref());
    let mut receipts = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        if is_receiver_jsonl(&bytes) {
            receipts.extend(jsonl_receipts(&bytes[..], file, &mut problems)?);
        } else {
            let name = link.map(str::to_string).unwrap_or_else(|| {
                file.file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default()
            });
            receipts.extend(tlog_receipts(&bytes, &name));
        }
    }
    for p in &problems {
        eprintln!("warning: {p}");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for event in findings(&receipts, &settings) {
        writeln!(out, "{}", event.to_json_line())?;
    }
    out.flush()?;
    Ok(())
}
