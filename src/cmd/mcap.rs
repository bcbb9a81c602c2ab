//! `--format mcap` of `ulog export` and `sortie` (issue 43): the shell that picks the file,
//! the anchor and the ground files, writes through [`crate::mcap`], says what went in, and maps
//! the outcome to the house exit codes. A file left half written by a failure is removed.
//!
//! - `ulog export FILE... --format mcap --out DIR`: `<DIR>/<log name>.mcap` per log (or the
//!   `--out` file itself for one log and an `--out` ending in `.mcap`), on the log's own UTC
//!   (its GPS anchor, else `boot_time_utc_us`; with neither, the boot clock). Exit codes as the
//!   table export's ([`Exit`]): 0, 3 (truncated or malformed: what came before is written), 4
//!   (rejected: nothing written), 1.
//! - `sortie FLIGHT GROUND... --format mcap --out FILE.mcap`: the sortie on its used anchor.

use super::{Exit, UsageError};
use crate::mcap::flight::write_ulog;
use crate::mcap::ground::GroundFile;
use crate::mcap::sortie::{time_anchor_metadata, write_sortie_file};
use crate::mcap::McapOut;
use crate::sniff::{sniff, FileKind, HEAD_LEN};
use crate::sortie::anchor::{boot_time_info_anchor, choose, cross_check, gps_anchor};
use crate::sortie::axis::BootToUtc;
use crate::sortie::timeline::Sortie;
use crate::ulog::export::ExportSummary;
use crate::ulog::ingest::{ingest_file, IngestOptions};
use crate::ulog::report::{Report, Status};
use crate::ulog::table::FileFormat;
use anyhow::Context;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// `ulog export --format`: the tables, or one MCAP file per log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Parquet,
    Csv,
    Mcap,
}

impl ExportFormat {
    /// The table format, when it is one.
    pub fn tables(self) -> Option<FileFormat> {
        match self {
            ExportFormat::Parquet => Some(FileFormat::Parquet),
            ExportFormat::Csv => Some(FileFormat::Csv),
            ExportFormat::Mcap => None,
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Where log `file`'s MCAP goes.
fn target(file: &Path, out: &Path, logs: usize) -> PathBuf {
    if logs == 1 && out.extension().is_some_and(|e| e == "mcap") {
        return out.to_path_buf();
    }
    let stem = file
        .file_stem()
        .map_or_else(|| "log".into(), |s| s.to_string_lossy().into_owned());
    out.join(format!("{stem}.mcap"))
}

/// `ulog export --format mcap`: each log to its MCAP file; the batch's exit code.
pub fn export_files(files: &[PathBuf], out: &Path) -> anyhow::Result<Exit> {
    let mut exit = Exit::Success;
    for file in files {
        let code = match export_one(file, &target(file, out, files.len())) {
            Ok(code) => code,
            Err(e) => {
                eprintln!(
                    "error: {}: {}",
                    file.display(),
                    super::error_text::chain(&e)
                );
                Exit::Failure
            }
        };
        exit = exit.worst(code);
    }
    Ok(exit)
}

fn export_one(file: &Path, path: &Path) -> anyhow::Result<Exit> {
    let report = ingest_file(
        file,
        IngestOptions {
            profile: None,
            quarantine_dir: None,
            progress: None,
        },
    )?;
    if report.status == Status::Rejected {
        eprintln!(
            "{}: rejected, nothing exported: {}",
            file.display(),
            report.reason.as_deref().unwrap_or("")
        );
        return Ok(Exit::Rejected);
    }
    let anchors = [
        gps_anchor(report.gps_anchor.as_ref()),
        boot_time_info_anchor(report.info.get("boot_time_utc_us")),
    ];
    let used = choose(&anchors, &cross_check(&anchors)).map(|i| &anchors[i]);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let written = (|| -> anyhow::Result<_> {
        let mut out = McapOut::create(path)?;
        let input =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        let summary = write_ulog(
            input,
            &file_name(file),
            &report,
            BootToUtc::new(used),
            &mut out,
        )?;
        let elapsed = "Elapsed time only: the log has no GPS time and no boot_time_utc_us";
        out.metadata(
            "time_anchor",
            time_anchor_metadata(used, Some(elapsed), false),
        )?;
        Ok((summary, out.finish()?))
    })();
    let (summary, written) = match written {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
    };
    let instances = summary.topics.len();
    println!(
        "{}: {} messages on {} channels ({} topic instances, {} samples), {} zstd chunks, in {}{}",
        file.display(),
        written.messages,
        written.channels,
        instances,
        summary.topics.iter().map(|(_, n)| n).sum::<u64>(),
        written.chunks,
        path.display(),
        if used.is_none() {
            " (elapsed time only: no UTC anchor in the log)"
        } else {
            ""
        }
    );
    Ok(read_outcome(file, &summary))
}

/// Says what the walk met on stderr; the exit code it makes (3 for a log not read whole).
fn read_outcome(file: &Path, summary: &ExportSummary) -> Exit {
    let mut exit = Exit::Success;
    let skipped = summary.skipped_samples();
    if skipped > 0 {
        eprintln!(
            "{}: warning: {skipped} samples not exported: their topic's format was redefined after its channel was made, and a channel has one schema",
            file.display()
        );
    }
    let samples: u64 = summary.topics.iter().map(|(_, n)| n).sum();
    if samples == 0 && summary.stopped.is_none() && summary.first_malformed.is_none() {
        eprintln!(
            "{}: quarantined: the log has no data (not one logged sample)",
            file.display()
        );
        exit = Exit::Quarantined;
    }
    if let Some(why) = &summary.stopped {
        eprintln!(
            "{}: quarantined: only the data before the problem was exported: {why}",
            file.display()
        );
        exit = Exit::Quarantined;
    }
    if let Some(first) = &summary.first_malformed {
        eprintln!(
            "{}: quarantined: {} malformed messages were skipped, the first: {first}",
            file.display(),
            summary.malformed
        );
        exit = Exit::Quarantined;
    }
    exit
}

/// The ground files as the sortie read them, each with its record: receive logs and events
/// files are the receiver's record (the first, when there is one), each `.tlog` a record of its
/// own after it, in order (as `cmd::sortie::read_ground` makes them).
fn ground_records(files: &[PathBuf]) -> anyhow::Result<Vec<GroundFile>> {
    let mut kinds = Vec::new();
    for path in files {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut reader = BufReader::new(file);
        let head = reader
            .fill_buf()
            .with_context(|| format!("cannot read {}", path.display()))?;
        kinds.push(sniff(&head[..head.len().min(HEAD_LEN)]));
    }
    let receiver = kinds
        .iter()
        .any(|k| matches!(k, FileKind::ReceiverJsonl | FileKind::EventsJsonl));
    let mut next_tlog = usize::from(receiver);
    let mut out = Vec::new();
    for (path, kind) in files.iter().zip(kinds) {
        match kind {
            FileKind::ReceiverJsonl => out.push(GroundFile::Receipts {
                path: path.clone(),
                record: 0,
            }),
            FileKind::Tlog => {
                out.push(GroundFile::Tlog {
                    path: path.clone(),
                    record: next_tlog,
                    link: super::analyze::file_stem(path),
                });
                next_tlog += 1;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// `sortie ... --format mcap --out FILE.mcap`.
pub fn write_sortie(
    flight: &Path,
    report: &Report,
    sortie: &Sortie,
    ground_files: &[PathBuf],
    path: &Path,
) -> anyhow::Result<Exit> {
    if path.is_dir() {
        return Err(UsageError(format!(
            "--out {}: a folder; give the file to write (FILE.mcap)",
            path.display()
        ))
        .into());
    }
    let ground = ground_records(ground_files)?;
    let written = write_sortie_file(path, flight, report, sortie, &ground);
    let written = match written {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return Err(e).with_context(|| format!("writing {}", path.display()));
        }
    };
    let samples: u64 = written.flight.topics.iter().map(|(_, n)| n).sum();
    println!(
        "{}: {} messages on {} channels: {} samples of {} topic instances, {} ground receipts, {} timeline entries; {} zstd chunks",
        path.display(),
        written.file.messages,
        written.file.channels,
        samples,
        written.flight.topics.len(),
        written.ground.receipts,
        written.entries,
        written.file.chunks,
    );
    if written.ground.outside > 0 {
        eprintln!(
            "{}: {} ground receipts placed further than 60 s from the flight were left out (as the timeline leaves them out)",
            path.display(),
            written.ground.outside
        );
    }
    if written.ground.unreadable > 0 {
        eprintln!(
            "{}: {} lines of the receive logs are no receipt and were left out",
            path.display(),
            written.ground.unreadable
        );
    }
    Ok(read_outcome(flight, &written.flight))
}
