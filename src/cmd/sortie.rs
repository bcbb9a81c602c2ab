//! `sortie FLIGHT.ulg GROUND...`: the flight log and the ground's records of the same sortie on
//! one UTC timeline (see [`crate::sortie`] and `docs/sortie.md`). This is the shell: it reads
//! the files (each ground file judged from its first bytes, as `analyze` judges them), hands
//! their receipts, events and records to the pure core, and prints.
//!
//! Exit codes: 0 the timeline printed; 1 a ground record with no receipts of the vehicle during
//! the flight (naming both system ids), or a file that cannot be read; 2 usage (no system id);
//! 3 the flight log quarantined, 4 a file rejected (as `ulog ingest` and `analyze`).

use super::{Exit, UsageError};
use crate::analyze::WrongKindOfFile;
use crate::config::Config;
use crate::link::LinkId;
use crate::monitor::input::TLOG_RESOLUTION_NS;
use crate::monitor::{format_utc_ms, parse_utc_ns, Event, MonitorInput, WatchSettings};
use crate::receipt::ReceiptRecord;
use crate::sink::{listing, EVENTS, RECEIVE_LOG};
use crate::sniff::{sniff, FileKind, HEAD_LEN};
use crate::sortie::air::{AirFacts, AirObserver};
use crate::sortie::anchor::{boot_time_info_anchor, gps_anchor};
use crate::sortie::entry::{Cite, MS};
use crate::sortie::ground::{GroundFacts, GroundRecord};
use crate::sortie::reported::{from_report, join_failsafes};
use crate::sortie::timeline::{assemble, refusals, Sortie, SortieInput};
use crate::tlog::read_tlog;
use crate::ulog::ingest::{ingest_file, IngestOptions};
use crate::ulog::report::{Report, Status};
use crate::ulog::StreamReader;
use crate::wire::signing::SigningKeys;
use crate::wire::ScanItem;
use anyhow::Context;
use clap::{Args, ValueEnum};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Json,
    Table,
    /// One MCAP file for Foxglove (with --out): the flight log, the ground's receipts and the
    /// timeline on the sortie's UTC
    Mcap,
}

#[derive(Debug, Args)]
pub struct SortieArgs {
    /// The vehicle's flight log (.ulg)
    pub flight: PathBuf,
    /// The ground's records of the same sortie: receive logs (receiver JSONL), the receiver's
    /// events files, ground-station .tlog files, or a receiver's data dir (its receive log and
    /// events over the flight, or over --from/--to)
    #[arg(required = true, value_name = "GROUND")]
    pub ground: Vec<PathBuf>,
    #[command(flatten)]
    pub options: GroundOptions,
    /// Output: one JSON object per line, a table for a terminal, or an MCAP file (--out)
    #[arg(long, value_enum, default_value = "json")]
    pub format: OutputFormat,
    /// The file to write with --format mcap (FILE.mcap)
    #[arg(long, value_name = "FILE.mcap")]
    pub out: Option<PathBuf>,
}

/// How ground records are read (shared with `ulog report --ground`).
#[derive(Debug, Args, Clone, Default)]
pub struct GroundOptions {
    /// The vehicle's MAVLink system id (default: the flight log's MAV_SYS_ID parameter)
    #[arg(long)]
    pub sysid: Option<u8>,
    /// Take the [gap] settings from this daemon config (default: the defaults, as `analyze`)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The ground clocks' error against UTC in ms, in place of what their events say (a .tlog,
    /// or a receive log without its events, is otherwise taken to be good to 16 s)
    #[arg(long)]
    pub clock_error_ms: Option<f64>,
    /// With a data dir as GROUND: its files from this UTC time on (RFC 3339; default: the
    /// flight's start by the log's own GPS or boot_time_utc_us anchor, less 10 minutes)
    #[arg(long, value_parser = utc_argument)]
    pub from: Option<i64>,
    /// With a data dir as GROUND: its files up to this UTC time (RFC 3339; default: the flight's
    /// end by the log's own anchor, plus 10 minutes)
    #[arg(long, value_parser = utc_argument)]
    pub to: Option<i64>,
}

fn utc_argument(text: &str) -> Result<i64, String> {
    parse_utc_ns(text)
        .ok_or_else(|| format!("`{text}` is not an RFC 3339 time (e.g. 2026-12-02T14:00:00Z)"))
}

/// How far before and after the flight a data dir's files are read when no span is given: the
/// vehicle's heartbeats before takeoff and after landing, and room for a receiver clock that is
/// off by more than the anchors' bounds (the cross-check then says so).
const DATA_DIR_MARGIN_NS: i64 = 10 * 60 * 1_000_000_000;

/// The flight log's report and the sortie built from it and the ground records.
pub struct Loaded {
    pub report: Report,
    pub sortie: Sortie,
    /// The ground files read (a data dir's chosen files), in the order read.
    pub ground_files: Vec<PathBuf>,
}

pub fn run(args: SortieArgs) -> anyhow::Result<Exit> {
    let mcap_out = match (args.format, &args.out) {
        (OutputFormat::Mcap, Some(out)) => Some(out),
        (OutputFormat::Mcap, None) => {
            return Err(UsageError("sortie --format mcap: give --out FILE.mcap".into()).into())
        }
        (_, Some(_)) => return Err(UsageError("sortie: --out is for --format mcap".into()).into()),
        (_, None) => None,
    };
    let loaded = match load(&args.flight, &args.ground, &args.options)? {
        Ok(loaded) => loaded,
        Err(exit) => return Ok(exit),
    };
    if let Some(out) = mcap_out {
        return super::mcap::write_sortie(
            &args.flight,
            &loaded.report,
            &loaded.sortie,
            &loaded.ground_files,
            out,
        );
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.format {
        OutputFormat::Json => {
            for line in loaded.sortie.lines() {
                writeln!(out, "{line}")?;
            }
        }
        OutputFormat::Table => write!(out, "{}", crate::sortie::table::render(&loaded.sortie))?,
        OutputFormat::Mcap => unreachable!("written above"),
    }
    out.flush()?;
    Ok(Exit::Success)
}

/// Reads the flight log and the ground records and assembles the sortie. `Err(exit)` when the
/// flight log is not complete (its status said on stderr) or a ground record is refused.
pub fn load(
    flight: &Path,
    ground: &[PathBuf],
    options: &GroundOptions,
) -> anyhow::Result<Result<Loaded, Exit>> {
    let report = ingest_file(
        flight,
        IngestOptions {
            profile: None,
            quarantine_dir: None,
            progress: None,
        },
    )?;
    if report.status != Status::Complete {
        eprintln!(
            "{}: {}: {}",
            flight.display(),
            if report.status == Status::Rejected {
                "rejected"
            } else {
                "quarantined"
            },
            report.reason.as_deref().unwrap_or("")
        );
        return Ok(Err(Exit::from(report.status)));
    }
    let sysid = match options.sysid {
        Some(s) => s,
        None => report
            .parameters
            .initial
            .get("MAV_SYS_ID")
            .and_then(|v| v.as_i64())
            .and_then(|v| u8::try_from(v).ok())
            .ok_or_else(|| {
                UsageError(format!(
                    "{}: the flight log has no MAV_SYS_ID parameter: give --sysid",
                    flight.display()
                ))
            })?,
    };
    let settings = match &options.config {
        Some(path) => Config::load(path)?.watch_settings(),
        None => WatchSettings::default(),
    };
    let air = read_air(flight, &report)?;
    let ground = ground_files(ground, &report, options)?;
    let grounds = read_ground(&ground, sysid, &settings)?;
    let clock_error_override_ns = options.clock_error_ms.map(|ms| (ms * MS as f64) as i64);
    let input = SortieInput {
        sysid,
        gps: report.gps_anchor.as_ref(),
        boot_time_utc_us: report.info.get("boot_time_utc_us"),
        air: &air,
        ground: &grounds,
        clock_error_override_ns,
        dl_loss_s: report
            .parameters
            .initial
            .get("COM_DL_LOSS_T")
            .and_then(|v| v.as_f64()),
    };
    let refused = refusals(&input);
    if !refused.is_empty() {
        for r in &refused {
            eprintln!("error: {r}");
        }
        return Ok(Err(Exit::Failure));
    }
    let sortie = assemble(&input);
    Ok(Ok(Loaded {
        report,
        sortie,
        ground_files: ground,
    }))
}

/// The ground files to read: each GROUND as given, a folder taken as a receiver's data dir
/// (the receive log and events files that hold the span, in time order).
fn ground_files(
    ground: &[PathBuf],
    report: &Report,
    options: &GroundOptions,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in ground {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let sets = [RECEIVE_LOG, EVENTS].map(|set| path.join(set.folder));
        if !sets.iter().any(|folder| folder.is_dir()) {
            return Err(UsageError(format!(
                "{}: a folder, but not a receiver's data dir (no receive/ or events/ in it)",
                path.display()
            ))
            .into());
        }
        let (from_ns, to_ns) = data_dir_span(report, options)?;
        let before = files.len();
        for (set, folder) in [RECEIVE_LOG, EVENTS].iter().zip(&sets) {
            let listed = listing::files(folder, set.ext)
                .with_context(|| format!("cannot list {}", folder.display()))?;
            files.extend(
                listing::covering(&listed, from_ns, to_ns)
                    .into_iter()
                    .map(|f| folder.join(f)),
            );
        }
        if files.len() == before {
            anyhow::bail!(
                "{}: no receive log or events files between {} and {}",
                path.display(),
                format_utc_ms(from_ns),
                format_utc_ms(to_ns)
            );
        }
    }
    Ok(files)
}

/// The span of a data dir to read: `--from`/`--to` as given, the rest from the flight's own
/// UTC span (its first and last sample on the boot clock, placed by the GPS anchor or else
/// `boot_time_utc_us`) widened by [`DATA_DIR_MARGIN_NS`].
fn data_dir_span(report: &Report, options: &GroundOptions) -> anyhow::Result<(i64, i64)> {
    if let (Some(from), Some(to)) = (options.from, options.to) {
        return Ok((from, to));
    }
    let boot_utc_ns = [
        gps_anchor(report.gps_anchor.as_ref()),
        boot_time_info_anchor(report.info.get("boot_time_utc_us")),
    ]
    .iter()
    .find_map(|anchor| anchor.boot_at(0))
    .map(|interval| interval.mid());
    let first_us = report.topics.iter().filter_map(|t| t.first_timestamp).min();
    let last_us = report.topics.iter().filter_map(|t| t.last_timestamp).max();
    let (Some(boot), Some(first_us), Some(last_us)) = (boot_utc_ns, first_us, last_us) else {
        return Err(UsageError(format!(
            "{}: the flight log has no UTC anchor (no GPS time, no boot_time_utc_us), so which of a data dir's files hold the flight cannot be told: give --from and --to",
            report.file
        ))
        .into());
    };
    Ok((
        options
            .from
            .unwrap_or(boot + first_us as i64 * 1000 - DATA_DIR_MARGIN_NS),
        options
            .to
            .unwrap_or(boot + last_us as i64 * 1000 + DATA_DIR_MARGIN_NS),
    ))
}

/// The air side: the flight log read once more, record by record, plus the report's messages,
/// PX4 events and findings (the failsafe ones joined to the failsafes the samples show).
fn read_air(flight: &Path, report: &Report) -> anyhow::Result<AirFacts> {
    let outliers = report.outlier_messages();
    let file =
        std::fs::File::open(flight).with_context(|| format!("cannot read {}", flight.display()))?;
    let mut observer = AirObserver::new(&report.file, &outliers);
    let mut reader = StreamReader::new(file);
    while let Some(item) = reader.next_record() {
        if let Ok(located) = item {
            observer.observe(&located);
        }
    }
    let mut facts = observer.finish();
    facts.happenings = join_failsafes(std::mem::take(&mut facts.happenings), from_report(report));
    facts.happenings.sort_by_key(|h| h.start_ns);
    Ok(facts)
}

/// The ground side: receive logs and events files make one record (the receiver's clock), each
/// `.tlog` its own (a ground station's clock).
fn read_ground(
    files: &[PathBuf],
    sysid: u8,
    settings: &WatchSettings,
) -> anyhow::Result<Vec<GroundFacts>> {
    let mut receiver: Option<GroundRecord> = None;
    let mut tlogs = Vec::new();
    for path in files {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let head = reader.fill_buf()?;
        let kind = sniff(&head[..head.len().min(HEAD_LEN)]);
        let name = path.display().to_string();
        match kind {
            FileKind::ReceiverJsonl | FileKind::EventsJsonl => {
                let record = receiver.get_or_insert_with(|| {
                    GroundRecord::new("receiver", sysid, settings.clone(), MS)
                });
                if kind == FileKind::ReceiverJsonl {
                    read_receipts(reader, &name, record)?;
                } else {
                    read_events(reader, &name, record)?;
                }
            }
            FileKind::Tlog => {
                let mut record =
                    GroundRecord::new(&name, sysid, settings.clone(), TLOG_RESOLUTION_NS);
                let link = super::analyze::file_stem(path);
                read_tlog(reader, &SigningKeys::default(), |r| {
                    let ScanItem::Frame(frame) = r.item else {
                        return Ok(());
                    };
                    let utc_ns = r.utc_us as i64 * 1000;
                    let input = MonitorInput::from_frame(
                        LinkId::FIRST,
                        &frame,
                        None,
                        utc_ns,
                        TLOG_RESOLUTION_NS,
                    );
                    let cite = Cite::TlogRecord {
                        file: name.clone(),
                        offset: r.offset as u64,
                    };
                    record.receipt(frame.sysid, utc_ns, input.as_ref(), &link, cite);
                    Ok(())
                })
                .with_context(|| format!("reading {name}"))?;
                tlogs.push(record.finish());
            }
            FileKind::Empty => {}
            other => {
                return Err(WrongKindOfFile {
                    file: name,
                    wanted: "receiver JSONL, the receiver's events or a .tlog",
                    found: other.describe(),
                }
                .into())
            }
        }
    }
    let mut out: Vec<GroundFacts> = receiver.map(GroundRecord::finish).into_iter().collect();
    out.extend(tlogs);
    Ok(out)
}

/// A receive log, line by line; a line that is not a receipt is reported and skipped.
fn read_receipts(
    reader: impl BufRead,
    file: &str,
    record: &mut GroundRecord,
) -> anyhow::Result<()> {
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{file}: line {}: cannot read", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<ReceiptRecord, _> = serde_json::from_str(&line);
        let (receipt, utc_ns) = match parsed {
            Ok(r) => match parse_utc_ns(&r.recv_utc) {
                Some(t) => (r, t),
                None => {
                    eprintln!("warning: {file}: line {}: recv_utc is not RFC 3339", n + 1);
                    continue;
                }
            },
            Err(e) => {
                eprintln!("warning: {file}: line {}: not a receipt: {e}", n + 1);
                continue;
            }
        };
        let input = MonitorInput::from_record(LinkId::FIRST, &receipt, utc_ns)
            .ok()
            .flatten();
        let cite = Cite::Line {
            file: file.to_string(),
            line: n as u64 + 1,
        };
        record.receipt(receipt.sysid, utc_ns, input.as_ref(), &receipt.link, cite);
    }
    Ok(())
}

/// The receiver's events file, line by line; a line that is not an event is reported and
/// skipped.
fn read_events(reader: impl BufRead, file: &str, record: &mut GroundRecord) -> anyhow::Result<()> {
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{file}: line {}: cannot read", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(&line) {
            Ok(event) => record.event(
                &event,
                Cite::Line {
                    file: file.to_string(),
                    line: n as u64 + 1,
                },
            ),
            Err(e) => eprintln!("warning: {file}: line {}: not an event: {e}", n + 1),
        }
    }
    Ok(())
}
